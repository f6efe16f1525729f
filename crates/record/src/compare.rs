//! The JSON contract of `forefront sim compare --format json`, defined once: the CLI writes it,
//! `forefront report` reads it.
//!
//! A cell whose runs have no headline sample (the FG app finished no headline phase within the
//! scenario's duration) has `null` latency figures, and so has every figure derived from them.
//! Fields are declared in alphabetical order, the order the JSON has always had.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A comparison: means over seeds, no samples or timelines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareSummary {
    pub cells: Vec<CompareCell>,
    pub device: String,
    /// Mean FG latency with no background apps (ms); null if those runs have no sample.
    pub fg_only_ms: Option<f64>,
    pub headline: String,
    pub scenario: String,
    pub scheduler: String,
    /// The first seed, and how many.
    pub seed: u64,
    pub seeds: u64,
}

/// One policy at one background-app count, averaged over seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareCell {
    pub bg_apps: u32,
    /// 1 − BG MB/s ÷ android's at the same count; null where android moved nothing.
    pub bg_loss: Option<f64>,
    pub bg_mb_per_s: f64,
    /// T_policy − T_fg_only (ms).
    pub delay_ms: Option<f64>,
    /// 1 − (T_policy − T_fg_only) / (T_android − T_fg_only); null where android shows no delay.
    pub delay_reduction: Option<f64>,
    pub fg_ms: Option<f64>,
    pub fg_p50_ms: Option<f64>,
    pub fg_p99_ms: Option<f64>,
    /// Hooks fired, summed over the seeds.
    #[serde(default)]
    pub hooks: BTreeMap<String, u64>,
    pub policy: String,
    /// Headline samples over all seeds.
    pub samples: usize,
}
