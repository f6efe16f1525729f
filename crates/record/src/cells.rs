//! The JSON contract of `forefront sim cells --format json` (Cells' virtual phones: the overhead,
//! the foreground cell's delay under busy cells, the cell switch), defined once: the CLI writes
//! it, `forefront report` reads it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::run::nan_as_null;

/// What `sim cells --format json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellsSummary {
    pub scenario: String,
    pub switch_scenario: String,
    pub device: String,
    /// The first seed, and how many; figures are means over them.
    pub seed: u64,
    pub seeds: u64,
    pub overhead: Vec<OverheadRow>,
    pub delay: Vec<DelayRow>,
    pub switch: Vec<SwitchRow>,
}

/// The FG launch on the plain phone, in one cell, in five (android, no busy cell).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverheadRow {
    pub setup: String,
    pub cells: u32,
    pub page_cache_mib: u64,
    #[serde(with = "nan_as_null")]
    pub mean_ms: f64,
    #[serde(with = "nan_as_null")]
    pub p50_ms: f64,
    #[serde(with = "nan_as_null")]
    pub p99_ms: f64,
    /// Mean headline latency against the plain phone's (%).
    #[serde(with = "nan_as_null")]
    pub overhead_pct: f64,
    /// Mean headline sample per layer (ms), and its change against the plain phone: the cause.
    pub layers_ms: BTreeMap<String, f64>,
    pub change_ms: BTreeMap<String, f64>,
}

/// The foreground cell's launch with `bg_cells` busy cells under `policy`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayRow {
    pub policy: String,
    pub bg_cells: u32,
    #[serde(with = "nan_as_null")]
    pub mean_ms: f64,
    #[serde(with = "nan_as_null")]
    pub p50_ms: f64,
    #[serde(with = "nan_as_null")]
    pub p99_ms: f64,
    /// Mean against the same policy with no busy cell (ms), and as a factor.
    #[serde(with = "nan_as_null")]
    pub delay_ms: f64,
    #[serde(with = "nan_as_null")]
    pub slowdown: f64,
    pub bg_mb_per_s: f64,
}

/// A cell switch (request → the new cell's screen redrawn) with `bg_cells` busy cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchRow {
    pub policy: String,
    pub bg_cells: u32,
    #[serde(with = "nan_as_null")]
    pub mean_ms: f64,
    #[serde(with = "nan_as_null")]
    pub p50_ms: f64,
    #[serde(with = "nan_as_null")]
    pub p99_ms: f64,
    #[serde(with = "nan_as_null")]
    pub max_ms: f64,
}
