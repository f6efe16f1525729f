//! The shared vocabulary of forefront's three faces (simulator, agent, traces): plain serde
//! types, no behaviour.
//!
//! - [`run`]: what a simulation run reports ([`run::RunReport`]), the stable JSON contract.
//! - [`trace`]: records imported from real traces (block requests, syscalls, scheduler events).

pub mod run;
pub mod trace;
