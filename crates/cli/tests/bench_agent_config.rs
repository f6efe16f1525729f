//! `forefront bench run --agent-config FILE` checks the file before anything runs: a TOML
//! error names the file and line, and the sections the bench writes itself are refused.

use std::process::Command;

fn bench(cfg: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("knob.toml");
    std::fs::write(&f, cfg).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "run", "--runs", "1", "--mode", "agent", "--agent-config"])
        .arg(&f)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_agent_configs_are_refused_before_anything_runs() {
    let (ok, err) = bench("[pause]\nenabled = flase\n");
    assert!(!ok);
    assert!(err.contains("knob.toml") && err.contains("line 2"), "{err}");
    let (ok, err) = bench("[agent]\nrescan_ms = 50\n");
    assert!(!ok);
    assert!(err.contains("sets [agent] or [scope]"), "{err}");
    let (ok, err) = bench("[scope]\nuids = [0]\n");
    assert!(!ok && err.contains("sets [agent] or [scope]"), "{err}");
}
