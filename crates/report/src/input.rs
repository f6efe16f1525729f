//! Loading saved results — every JSON `forefront sim` writes, told apart by their keys:
//!
//! | command (`--format json`) | shape | loaded as |
//! |---|---|---|
//! | `sim run` | one run report | [`Input::Run`] |
//! | `sim replay` | an array of run reports (one per device) | [`Input::Runs`] |
//! | `sim` (no subcommand) | `{seeds, fg_only: [...], runs: [...]}` | [`Input::Runs`] (FG-only runs first) |
//! | `sim compare` | `{…, cells: [...]}` | [`Input::Compare`] |
//! | `sim interactivity` | `{…, tick_sweep: [...]}` | [`Input::Interactivity`] |
//! | `sim cells` | `{…, overhead: [...], delay: [...], switch: [...]}` | [`Input::Cells`] |
//! | `sim sweep` / `sim merge` | JSON Lines, one `{index, point, report}` per line | [`Input::Runs`] |
//! | `bench predict` (`bench run --predict DEV`) | `{device, launches, seed, modes: [...]}` | [`Input::Prediction`] |
//!
//! The JSON of other commands — `bench`, `trace stats`, `agent check`, `agent status`, `sim
//! validate` — is recognised and refused with a message naming the command that wrote it and
//! the commands whose output is accepted ([`ACCEPTED`]).

use std::path::{Path, PathBuf};

pub use forefront_record::cells::CellsSummary;
pub use forefront_record::compare::{CompareCell, CompareSummary};
use forefront_record::run::{InteractivitySummary, RunReport};
use serde::Deserialize;

pub use crate::prediction::Prediction;

/// One loaded input file.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Run(Box<RunReport>),
    /// Several runs from one file (`sim replay`, the default `sim` job).
    Runs(Vec<RunReport>),
    Compare(CompareSummary),
    /// `sim cells` output: Cells' overhead, delay and switch tables.
    Cells(CellsSummary),
    Interactivity(InteractivitySummary),
    /// `bench predict` output: measured against predicted, per bench mode.
    Prediction(Prediction),
}

/// An input with the name it was given on the command line (shown in the page).
#[derive(Clone, Debug, PartialEq)]
pub struct Named<T> {
    pub name: String,
    pub value: T,
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
    #[error("{}: looks like `forefront sim cells --format json` output (has `overhead` and `switch`) but does not match it: {error}", path.display())]
    NotCells { path: PathBuf, error: serde_json::Error },
    #[error("{}: looks like `forefront sim interactivity --format json` output (has `tick_sweep`) but does not match it: {error}", path.display())]
    NotInteractivity { path: PathBuf, error: serde_json::Error },
    #[error("{}: looks like `forefront bench predict --format json` output (has `modes` and `launches`) but does not match it: {error}", path.display())]
    NotPrediction { path: PathBuf, error: serde_json::Error },
    #[error("{}: looks like the output of `forefront sim --format json` or `forefront sim replay --format json` (runs) but does not match it: {error}", path.display())]
    NotRuns { path: PathBuf, error: serde_json::Error },
    #[error("{}:{line}: not a `forefront sim sweep` line (`{{index, point, report}}` with a run report): {error}", path.display())]
    NotSweepLine { path: PathBuf, line: usize, error: serde_json::Error },
    #[error("{}: a NUL byte at byte {offset}: not JSON (a binary file?)", path.display())]
    Binary { path: PathBuf, offset: usize },
    #[error("{}: not UTF-8 at byte {offset}: not JSON", path.display())]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("{}: more than {limit_mib} MiB: not a saved result", path.display())]
    TooLarge { path: PathBuf, limit_mib: u64 },
    /// JSON another command wrote: `writer` names it and what it holds.
    #[error("{}: {writer}, which `forefront report` does not render; it reads {ACCEPTED}", path.display())]
    OtherCommand { path: PathBuf, writer: &'static str },
}

/// The outputs `forefront report` reads (for error messages).
pub const ACCEPTED: &str = "the `--format json` output of `forefront sim run`, `sim replay`, `sim` (no subcommand), `sim compare`, `sim cells`, `sim interactivity` and `bench predict`, and the JSON Lines of `sim sweep` / `sim merge`";

/// The command that wrote JSON `forefront report` does not render, recognised by its keys.
fn other_command(value: &serde_json::Value) -> Option<&'static str> {
    let has = |k: &str| value.get(k).is_some();
    let first = value.as_array().and_then(|a| a.first());
    if has("modes") && has("launcher") {
        Some("the output of `forefront bench --format json` (real-kernel medians, not simulator runs; `forefront bench run --format table` prints its table)")
    } else if has("format") && has("records") && has("fg_selector") {
        Some("the output of `forefront trace stats --format json` (statistics of a trace; `forefront sim replay` runs a trace in the simulator)")
    } else if has("checks") && has("failed") {
        Some("the output of `forefront sim validate --format json` (pass/fail checks)")
    } else if has("watchdog_pid") || (has("foreground") && has("paused")) {
        Some("the output of `forefront agent status --format json`")
    } else if first.is_some_and(|f| f.get("name").is_some() && f.get("ok").is_some() && f.get("detail").is_some()) {
        Some("the output of `forefront agent check --format json`")
    } else {
        None
    }
}

/// A `sim sweep` line: the point and its run report (without `stats`), or the error that
/// ended the point's run (such lines have no run to show and are skipped).
#[derive(Deserialize)]
struct SweepLine {
    #[allow(dead_code)]
    index: usize,
    #[serde(default)]
    report: Option<RunReport>,
    #[serde(default)]
    error: Option<String>,
}

/// The largest input read (a sweep of ten thousand points is a few hundred MiB); a larger one,
/// or an endless one such as `/dev/zero`, is refused after this many bytes.
pub const MAX_BYTES: u64 = 1 << 30;

/// `sim sweep` / `sim merge` output: one `{index, point, report}` object per line.
fn parse_sweep(path: &Path, text: &str) -> Result<Input, LoadError> {
    let mut runs = vec![];
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let l: SweepLine = serde_json::from_str(line).map_err(|error| LoadError::NotSweepLine {
            path: path.to_path_buf(),
            line: i + 1,
            error,
        })?;
        match (l.report, l.error) {
            (Some(r), None) => runs.push(r),
            (None, Some(_)) => {}
            _ => {
                let error = <serde_json::Error as serde::de::Error>::custom("it needs a `report` or an `error`, not both");
                return Err(LoadError::NotSweepLine { path: path.to_path_buf(), line: i + 1, error });
            }
        }
    }
    Ok(Input::Runs(runs))
}

/// Whether `text` holds more than one JSON value (JSON Lines), and the first parses.
fn several_values(text: &str) -> bool {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    matches!((values.next(), values.next()), (Some(Ok(_)), Some(_)))
}

/// Parse `text` (the contents of `path`) as a run report or a comparison.
pub fn parse(path: &Path, text: &str) -> Result<Input, LoadError> {
    if several_values(text) {
        return parse_sweep(path, text);
    }
    // A syntax pass first, so "not JSON at all" and "JSON of the wrong shape" read differently.
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| LoadError::Syntax { path: path.to_path_buf(), error })?;
    if let Some(writer) = other_command(&value) {
        return Err(LoadError::OtherCommand { path: path.to_path_buf(), writer });
    }
    // Typed errors come from re-parsing the text (not the Value) so they keep line/column.
    #[derive(Deserialize)]
    struct DefaultJob {
        fg_only: Vec<RunReport>,
        runs: Vec<RunReport>,
    }
    if value.get("index").is_some()
        && value.get("point").is_some()
        && (value.get("report").is_some() || value.get("error").is_some())
    {
        // A sweep of one point: one line.
        parse_sweep(path, text)
    } else if value.is_array() {
        serde_json::from_str::<Vec<RunReport>>(text)
            .map(Input::Runs)
            .map_err(|error| LoadError::NotRuns { path: path.to_path_buf(), error })
    } else if value.get("fg_only").is_some() && value.get("runs").is_some() {
        serde_json::from_str::<DefaultJob>(text)
            .map(|d| Input::Runs(d.fg_only.into_iter().chain(d.runs).collect()))
            .map_err(|error| LoadError::NotRuns { path: path.to_path_buf(), error })
    } else if value.get("overhead").is_some() && value.get("switch").is_some() {
        serde_json::from_str::<CellsSummary>(text)
            .map(Input::Cells)
            .map_err(|error| LoadError::NotCells { path: path.to_path_buf(), error })
    } else if value.get("modes").is_some_and(|m| m.is_array()) && value.get("launches").is_some() {
        serde_json::from_str::<Prediction>(text)
            .map(Input::Prediction)
            .map_err(|error| LoadError::NotPrediction { path: path.to_path_buf(), error })
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
    use std::io::Read;
    let io = |error| LoadError::Io { path: path.to_path_buf(), error };
    let mut f = std::fs::File::open(path).map_err(io)?;
    // Read in chunks: a NUL byte (never in JSON text: `/dev/zero`, an image, a binary trace) or
    // more than MAX_BYTES ends the read at once, before the file is held in memory.
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if let Some(i) = chunk[..n].iter().position(|&b| b == 0) {
            return Err(LoadError::Binary { path: path.to_path_buf(), offset: bytes.len() + i });
        }
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() as u64 > MAX_BYTES {
            return Err(LoadError::TooLarge { path: path.to_path_buf(), limit_mib: MAX_BYTES >> 20 });
        }
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| LoadError::NotUtf8 { path: path.to_path_buf(), offset: e.utf8_error().valid_up_to() })?;
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
        assert!(
            err.contains("`forefront bench --format json`") && err.contains("it reads the `--format json` output of"),
            "{err}"
        );
        // `trace stats --format json` too, naming its command and what is accepted.
        let stats = r#"{"format":"strace","records":3,"bytes_read":0,"fg_selector":[]}"#;
        let err = parse(p, stats).unwrap_err().to_string();
        assert!(err.contains("`forefront trace stats --format json`") && err.contains("`sim sweep`"), "{err}");
    }

    #[test]
    fn sim_sweep_json_lines_load_as_runs_and_a_bad_line_is_named() {
        let p = Path::new("sweep.jsonl");
        let line = |i: usize, policy: &str| {
            let mut report = serde_json::to_value(run(policy, 2, 80.0)).unwrap();
            report.as_object_mut().unwrap().remove("stats");
            serde_json::json!({ "index": i, "point": { "policy": policy, "bg_apps": 2, "seed": 1 }, "report": report })
                .to_string()
        };
        let text = format!("{}\n{}\n", line(0, "android"), line(1, "fasttrack"));
        match parse(p, &text) {
            Ok(Input::Runs(v)) => assert_eq!(v.iter().map(|r| r.policy.as_str()).collect::<Vec<_>>(), ["android", "fasttrack"]),
            other => panic!("{other:?}"),
        }
        // One point: one line, still a sweep.
        assert!(matches!(parse(p, &line(0, "android")), Ok(Input::Runs(v)) if v.len() == 1));
        let bad = format!("{}\n{{\"index\": 1, \"point\": {{}}, \"report\": {{\"scenario\": 1}}}}\n", line(0, "android"));
        let err = parse(p, &bad).unwrap_err().to_string();
        assert!(err.starts_with("sweep.jsonl:2: not a `forefront sim sweep` line"), "{err}");
    }
}
