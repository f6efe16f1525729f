//! The shared vocabulary of forefront's three faces (simulator, agent, traces): plain serde
//! types, no behaviour.
//!
//! - [`run`]: what a simulation run reports ([`run::RunReport`]), the stable JSON contract.
//! - [`compare`]: what `sim compare` writes ([`compare::CompareSummary`]).
//! - [`cells`]: what `sim cells` writes ([`cells::CellsSummary`]).
//! - [`trace`]: records imported from real traces (block requests, syscalls, scheduler events).
//! - [`stats`]: the percentile every run's latency figures use.

pub mod cells;
pub mod compare;
pub mod run;
pub mod stats;
pub mod trace;
