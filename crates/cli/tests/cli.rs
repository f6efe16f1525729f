//! The `forefront` binary end to end: exit codes, error messages, JSON contract, golden output.

use std::process::Command;

fn forefront(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_forefront")).args(args).output().expect("run forefront")
}

#[test]
fn bad_scenario_file_names_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("forefront-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    let good = include_str!("../../../scenarios/camera-switch.toml");
    let bad = good.replacen("duration_s = 60.0", "duration_s = 60.0\nbogus_field = 3", 1);
    std::fs::write(&path, &bad).unwrap();
    let out = forefront(&["sim", "run", path.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = bad.lines().position(|l| l.starts_with("bogus_field")).unwrap() + 1;
    assert!(err.contains(&format!("bad.toml:{line}:")), "{err}");
    assert!(err.contains("bogus_field"), "{err}");
}

#[test]
fn unknown_policy_and_scenario_are_errors() {
    let out = forefront(&["sim", "run", "launch-update", "--policy", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown policy `nope`"));
    let out = forefront(&["sim", "run", "no-such-scenario"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scenario"));
}

#[test]
fn json_contract_has_the_stable_keys() {
    let out = forefront(&["sim", "run", "camera-switch", "--bg-apps", "1", "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in ["scenario", "policy", "seed", "bg_apps", "hooks"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for k in ["fg_ms", "fg_p50_ms", "fg_p99_ms", "bg_mb_per_s"] {
        assert!(v["metrics"][k].is_number(), "missing metrics.{k}");
    }
    let stats = v["stats"].as_object().unwrap();
    for k in ["events", "wall_ms", "sim_ms"] {
        assert!(stats.contains_key(k), "missing stats.{k}");
    }
    assert_eq!(v["bg_apps"], 1);
    assert!(v["metrics"]["fg_ms"].as_f64().unwrap() > 0.0);
}

/// Golden output: `sim list` and a CSV row. Regenerate with `UPDATE_GOLDEN=1 cargo test`.
#[test]
fn golden_outputs() {
    let cases: [(&str, &[&str]); 2] = [
        ("sim-list.txt", &["sim", "list"]),
        ("camera-switch-bg1.csv", &["sim", "run", "camera-switch", "--bg-apps", "1", "--format", "csv"]),
    ];
    for (file, args) in cases {
        let out = forefront(args);
        assert!(out.status.success());
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/golden").join(file);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &out.stdout).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{file} differs from the golden file");
    }
}
