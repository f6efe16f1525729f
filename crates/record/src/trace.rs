//! Records imported from real traces (owned by the trace importers).
