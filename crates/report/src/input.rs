//! Loading saved results — every JSON `forefront sim` writes, told apart by their keys:
//!
//! | command (`--format json`) | shape | loaded as |
//! |---|---|---|
//! | `sim run` | one run report | [`Input::Run`] |
//! | `sim replay` | an array of run reports (one per device) | [`Input::Runs`] |
//! | `sim` (no subcommand) | `{seeds, fg_only: [...], runs: [...]}` | [`Input::Runs`] (FG-only runs first) |
//! | `sim compare` | `{…, cells: [...]}` | [`Input::Compare`] |
//! | `sim interactivity` | `{…, tick_sweep: [...]}` | [`Input::Interactivity`] |
//!
//! `forefront bench --format json` is recognised and refused with a message: its results are
//! medians of real-kernel samples, not simulator runs, and `bench` prints their table itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use forefront_record::run::{InteractivitySummary, RunReport};
use serde::Deserialize;

/// One loaded input file.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Run(Box<RunReport>),
    /// Several runs from one file (`sim replay`, the default `sim` job).
    Runs(Vec<RunReport>),
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
    #[error("{}: looks like the output of `forefront sim --format json` or `forefront sim replay --format json` (runs) but does not match it: {error}", path.display())]
    NotRuns { path: PathBuf, error: serde_json::Error },
    #[error("{}: a `forefront bench` report (real-kernel medians, not simulator runs): `forefront report` renders simulator output; `forefront bench run --format table` prints the benchmark's table", path.display())]
    BenchReport { path: PathBuf },
}

/// Parse `text` (the contents of `path`) as a run report or a comparison.
pub fn parse(path: &Path, text: &str) -> Result<Input, LoadError> {
    // A syntax pass first, so "not JSON at all" and "JSON of the wrong shape" read differently.
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| LoadError::Syntax { path: path.to_path_buf(), error })?;
    // Typed errors come from re-parsing the text (not the Value) so they keep line/column.
    #[derive(Deserialize)]
    struct DefaultJob {
        fg_only: Vec<RunReport>,
        runs: Vec<RunReport>,
    }
    if value.is_array() {
        serde_json::from_str::<Vec<RunReport>>(text)
            .map(Input::Runs)
            .map_err(|error| LoadError::NotRuns { path: path.to_path_buf(), error })
    } else if value.get("fg_only").is_some() && value.get("runs").is_some() {
        serde_json::from_str::<DefaultJob>(text)
            .map(|d| Input::Runs(d.fg_only.into_iter().chain(d.runs).collect()))
            .map_err(|error| LoadError::NotRuns { path: path.to_path_buf(), error })
    } else if value.get("modes").is_some() && value.get("launcher").is_some() {
        Err(LoadError::BenchReport { path: path.to_path_buf() })
    } else if value.get("tick_sweep").is_some() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    #[test]
    fn every_simulator_json_loads_and_a_bench_report_is_refused_by_name() {
        let p = Path::new("x.json");
        let one = serde_json::to_string(&run("android", 2, 100.0)).unwrap();
        assert!(matches!(parse(p, &one), Ok(Input::Run(_))));
        // `sim replay`: an array of runs.
        let many = serde_json::to_string(&vec![run("android", 0, 50.0), run("android", 0, 70.0)]).unwrap();
        assert!(matches!(parse(p, &many), Ok(Input::Runs(v)) if v.len() == 2));
        // The default `sim` job: FG-only runs, then the runs.
        let job = serde_json::json!({ "seeds": [1], "fg_only": [run("android", 0, 50.0)], "runs": [run("fasttrack", 2, 60.0), run("android", 2, 90.0)] });
        match parse(p, &job.to_string()) {
            Ok(Input::Runs(v)) => assert_eq!(v.iter().map(|r| r.bg_apps).collect::<Vec<_>>(), vec![0, 2, 2]),
            other => panic!("{other:?}"),
        }
        // A broken array names what it looked like.
        let err = parse(p, "[{\"scenario\": 1}]").unwrap_err().to_string();
        assert!(err.contains("sim replay --format json"), "{err}");
        // `forefront bench --format json` is named and refused.
        let bench = r#"{"fg":"launch","bg":"update","runs":3,"modes":{},"launcher":"socket"}"#;
        let err = parse(p, bench).unwrap_err().to_string();
        assert!(err.contains("a `forefront bench` report"), "{err}");
    }
}
