//! A reader that goes away (`forefront ... | head -c 10`) ends the command quietly: exit status
//! 0 and nothing on stderr, for the JSON/CSV/table writers and the agent's one-line outputs.
//! The pipe's read end is closed before the command starts, so its first write fails with EPIPE
//! deterministically (no race with how fast `head` exits).

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_forefront");

/// Runs `args` with stdout on a pipe nobody reads; returns (status, stderr).
fn run_into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN).args(args).stdout(Stdio::from(writer)).stderr(Stdio::piped()).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn json_csv_and_table_output_into_a_closed_pipe_exit_quietly() {
    for format in ["json", "csv", "table"] {
        let (code, err) = run_into_closed_pipe(&["sim", "run", "switch-upload", "--bg-apps", "0", "--format", format]);
        assert_eq!(code, Some(0), "--format {format}: {err}");
        assert!(!err.contains("error") && !err.contains("panicked"), "--format {format}: {err}");
    }
}

#[test]
fn trace_stats_json_into_a_closed_pipe_exits_quietly() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/strace-f-tt-T.txt");
    for format in ["json", "table"] {
        let (code, err) = run_into_closed_pipe(&["trace", "stats", trace, "--format", format]);
        assert_eq!((code, err.as_str()), (Some(0), ""), "--format {format}");
    }
}

#[test]
fn agent_config_and_restore_into_a_closed_pipe_exit_quietly() {
    let (code, err) = run_into_closed_pipe(&["agent", "config"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("agent.toml");
    let state = t.path().join("absent-state.json");
    std::fs::write(&cfg, format!("[agent]\nstate = {:?}\nroot = {:?}\n", state, t.path())).unwrap();
    let (code, err) = run_into_closed_pipe(&["agent", "restore", "--config", cfg.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
}
