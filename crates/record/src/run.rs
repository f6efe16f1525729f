//! Run results (owned by the simulator).
