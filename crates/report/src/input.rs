//! Loading saved results: a [`RunReport`] (`forefront sim run --format json`), a
//! [`CompareSummary`] (`forefront sim compare --format json`, with `cells`) or an
//! [`InteractivitySummary`] (`forefront sim interactivity --format json`, with `tick_sweep`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use forefront_record::run::{InteractivitySummary, RunReport};
use serde::Deserialize;

/// One loaded input file.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Run(Box<RunReport>),
    Compare(CompareSummary),
    Interactivity(InteractivitySummary),
}

/// An input with the name it was given on the command line (shown in the page).
#[derive(Clone, Debug, PartialEq)]
pub struct Named<T> {
    pub name: String,
    pub value: T,
}

/// The output of `forefront sim compare --format json`: means over seeds, no samples or timelines.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CompareSummary {
    pub scenario: String,
    pub device: String,
    pub scheduler: String,
    pub headline: String,
    pub seed: u64,
    pub seeds: u64,
    /// Mean FG latency with no background apps (ms).
    pub fg_only_ms: f64,
    pub cells: Vec<CompareCell>,
}

/// One policy at one background-app count in a [`CompareSummary`].
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CompareCell {
    pub policy: String,
    pub bg_apps: u32,
    pub fg_ms: f64,
    pub fg_p50_ms: f64,
    pub fg_p99_ms: f64,
    pub delay_ms: f64,
    pub delay_reduction: Option<f64>,
    pub bg_mb_per_s: f64,
    pub bg_loss: Option<f64>,
    #[serde(default)]
    pub hooks: BTreeMap<String, u64>,
}

/// Why an input could not be used. Every variant names the file; parse errors carry serde's
/// line and column. The cause is part of the message (not a `source()`), so an error chain
/// printer does not repeat it.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{}: not JSON: {error}", path.display())]
    Syntax { path: PathBuf, error: serde_json::Error },
    #[error("{}: not a `forefront sim run --format json` run report: {error}", path.display())]
    NotRunReport { path: PathBuf, error: serde_json::Error },
    #[error("{}: looks like `forefront sim compare --format json` output (has `cells`) but does not match it: {error}", path.display())]
    NotCompare { path: PathBuf, error: serde_json::Error },
    #[error("{}: looks like `forefront sim interactivity --format json` output (has `tick_sweep`) but does not match it: {error}", path.display())]
    NotInteractivity { path: PathBuf, error: serde_json::Error },
}

/// Parse `text` (the contents of `path`) as a run report or a comparison.
pub fn parse(path: &Path, text: &str) -> Result<Input, LoadError> {
    // A syntax pass first, so "not JSON at all" and "JSON of the wrong shape" read differently.
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| LoadError::Syntax { path: path.to_path_buf(), error })?;
    // Typed errors come from re-parsing the text (not the Value) so they keep line/column.
    if value.get("tick_sweep").is_some() {
        serde_json::from_str::<InteractivitySummary>(text)
            .map(Input::Interactivity)
            .map_err(|error| LoadError::NotInteractivity { path: path.to_path_buf(), error })
    } else if value.get("cells").is_some() {
        serde_json::from_str::<CompareSummary>(text)
            .map(Input::Compare)
            .map_err(|error| LoadError::NotCompare { path: path.to_path_buf(), error })
    } else {
        serde_json::from_str::<RunReport>(text)
            .map(|r| Input::Run(Box::new(r)))
            .map_err(|error| LoadError::NotRunReport { path: path.to_path_buf(), error })
    }
}

/// Read and parse one file.
pub fn load(path: &Path) -> Result<Input, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::Io { path: path.to_path_buf(), error })?;
    parse(path, &text)
}
