//! Bad input gets a clear error naming the file, line or flag, and exit code 2: never a panic.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_forefront");

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn config_typo_names_file_line_and_key() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("agent.toml");
    std::fs::write(&p, "[pause]\nmax_ms = 100\nmax_msec = 5\n").unwrap();
    let (code, err) = run(&["agent", "run", "--config", p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("agent.toml") && err.contains("line 3") && err.contains("max_msec"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn missing_config_file_is_named() {
    let (code, err) = run(&["agent", "check", "--config", "/nonexistent/forefront.toml"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/forefront.toml"), "{err}");
}

#[test]
fn bad_flags_are_refused_by_name() {
    let (code, err) = run(&["bench", "run", "--runs", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--runs"), "{err}");
    let (code, err) = run(&["bench", "run", "--fg", "dance"]);
    assert_eq!(code, 2);
    assert!(err.contains("dance"), "{err}");
    let (code, err) = run(&["agent", "fg", "12", "--uid", "3"]);
    assert_eq!(code, 2);
    assert!(err.contains("--uid"), "{err}");
}

#[test]
fn no_agent_listening_is_a_clear_error() {
    let t = tempfile::tempdir().unwrap();
    let s = t.path().join("none.sock");
    let (code, err) = run(&["agent", "status", "--socket", s.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("none.sock") && err.contains("is `forefront agent run` running?"), "{err}");
}

#[test]
fn default_config_printed_is_valid() {
    let out = Command::new(BIN).args(["agent", "config"]).output().unwrap();
    assert!(out.status.success());
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("a.toml");
    std::fs::write(&p, &out.stdout).unwrap();
    let (code, err) = run(&["agent", "check", "--config", p.to_str().unwrap()]);
    assert!(code == 0 || code == 1, "check runs on the printed config: {err}");
}
