//! When background work may be paused: [`PauseGate`], the pure rule bounding pauses, lives in
//! [`forefront_policy::agent::pause`] (the simulator's `agent` policy pauses through the same
//! gate); re-exported here.

pub use forefront_policy::agent::pause::*;
