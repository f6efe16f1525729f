//! The `forefront` binary end to end: exit codes, error messages, JSON contract, golden output.

use std::process::Command;
mod cut;

fn forefront(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_forefront")).args(args).output().expect("run forefront")
}

#[test]
fn bad_scenario_file_names_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("forefront-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    let good = include_str!("../../../scenarios/camera-switch.toml");
    let bad = good.replacen("\nbg_apps = ", "\nbogus_field = 3\nbg_apps = ", 1);
    assert_ne!(bad, good);
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
    for k in ["events", "wall_ms", "sim_ms", "sim_s_per_wall_s", "pages_per_s", "requests_per_s"] {
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

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("forefront-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn replay_of_a_syscall_trace_is_slower_on_a_card_with_slow_random_writes() {
    let dir = tempdir("replay");
    let trace = dir.join("app.mobigen");
    // A SQLite-like app: small writes to two files, each followed by fsync (MobiGen format).
    let mut text = String::from("1 0 open /data/data/app/db O_RDWR|O_CREAT 5\n1 10 open /data/data/app/log O_RDWR|O_CREAT 6\n");
    for i in 0..200u64 {
        let t = 100 + i * 50;
        text.push_str(&format!("1 {t} pwrite 5 {} 4096\n1 {} fsync 5 0\n", (i * 7919 % 64) * 4096, t + 10));
        text.push_str(&format!("1 {} write 6 512\n", t + 20));
    }
    std::fs::write(&trace, text).unwrap();
    let out = forefront(&[
        "sim",
        "replay",
        trace.to_str().unwrap(),
        "--timing",
        "afap",
        "--device",
        "galaxy-s5-emmc",
        "--device",
        "sd-kingston-c4",
        "--format",
        "csv",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = String::from_utf8_lossy(&out.stdout);
    let runtime: Vec<f64> = csv.lines().skip(1).map(|l| l.rsplit(',').next().unwrap().parse().unwrap()).collect();
    assert_eq!(runtime.len(), 2, "{csv}");
    assert!(runtime[1] > 10.0 * runtime[0], "eMMC {} s vs Kingston SD {} s", runtime[0], runtime[1]);
}

#[test]
fn replay_of_a_block_trace_keeps_the_json_contract_and_bad_traces_fail_with_location() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/sample.blkparse.txt");
    let out = forefront(&["sim", "replay", sample, "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["metrics"]["fg_ms"].as_f64().unwrap() > 0.0);
    assert!(v["invariants"]["requests_completed"].as_u64().unwrap() > 0);
    let bad = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/mobigen-bad.txt");
    let out = forefront(&["sim", "replay", bad]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mobigen-bad.txt:2:"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn trace_out_writes_perfetto_json_and_refuses_to_overwrite() {
    let dir = tempdir("traceout");
    let path = dir.join("run.json");
    let p = path.to_str().unwrap();
    let out = forefront(&["sim", "run", "camera-switch", "--bg-apps", "1", "--trace-out", p, "--format", "csv"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    for cat in ["syscall", "queue", "device", "sched"] {
        assert!(events.iter().any(|e| e["cat"] == cat), "no {cat} events");
    }
    // One process per app, tracks named app/thread; syscalls sit in their app's process.
    let meta = |what: &str, name: &str| {
        events.iter().find(|e| e["ph"] == "M" && e["name"] == what && e["args"]["name"] == name).cloned()
    };
    let camera = meta("process_name", "camera").expect("a process for the camera app");
    let main = meta("thread_name", "camera/main").expect("a camera/main track");
    assert_eq!(main["pid"], camera["pid"]);
    assert!(
        events.iter().any(|e| e["cat"] == "syscall" && e["pid"] == camera["pid"] && e["tid"] == main["tid"]),
        "camera/main's syscalls on its track"
    );
    let again = forefront(&["sim", "run", "camera-switch", "--bg-apps", "1", "--trace-out", p]);
    assert_eq!(again.status.code(), Some(2));
    let forced = forefront(&["sim", "run", "camera-switch", "--bg-apps", "1", "--trace-out", p, "--force"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(forced.status.success());
}

#[test]
fn interactivity_reports_the_ftc_vtcfs_figures_and_the_report_charts_them() {
    let out = forefront(&["sim", "interactivity", "--bg-apps", "0,3", "--tick-ms", "1,8", "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cells = v["cells"].as_array().unwrap();
    // android, ftc, vt-cfs, ftc+vt-cfs at 0 and 3 BG apps; the sweep: 2 VT-CFS policies x 2 ticks.
    assert_eq!(cells.len(), 8);
    assert_eq!(v["tick_sweep"].as_array().unwrap().len(), 4);
    let cell = |p: &str, bg: u64| cells.iter().find(|c| c["policy"] == p && c["bg_apps"] == bg).unwrap();
    assert_eq!(cell("vt-cfs", 3)["cpu_scheduler"], "vt-cfs");
    assert!(cell("android", 3)["headline_p50_reduction"].is_null(), "android is the baseline");
    assert!(cell("ftc+vt-cfs", 3)["headline_p50_reduction"].as_f64().unwrap() > 0.0);
    let sweep = v["tick_sweep"].as_array().unwrap();
    let sw = |p: &str, t: f64| {
        sweep.iter().find(|x| x["policy"] == p && x["tick_ms"] == t).unwrap()["context_switches_per_s"].as_f64().unwrap()
    };
    assert!(sw("vt-cfs", 1.0) > sw("vt-cfs", 8.0), "a shorter tick switches more");

    // The report renders it: its table and the three λ charts.
    let dir = std::env::temp_dir().join(format!("forefront-ui-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("ui.json");
    std::fs::write(&json, &out.stdout).unwrap();
    let html = dir.join("ui.html");
    let rep = forefront(&["report", json.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(rep.status.success(), "{}", String::from_utf8_lossy(&rep.stderr));
    assert!(page.contains("class=\"interactivity\"") && page.contains("class=\"tick-sweep\""), "tables missing");
    assert_eq!(page.matches("<svg").count(), 4, "headline chart + three λ charts");

    // A scenario without input events is refused with the reason.
    let out = forefront(&["sim", "interactivity", "camera-switch"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no `input` op"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn errors_say_each_cause_once_and_suggest_the_closest_name() {
    let out = forefront(&["sim", "run", "/tmp"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("is a directory").count(), 1, "{err}");
    assert!(err.contains("/tmp: is a directory, not a scenario file"), "{err}");
    let out = forefront(&["sim", "run", "lunch-update"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `launch-update`?"));
    let out = forefront(&["sim", "run", "launch-update", "--policy", "fasttrack+qa-devise"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `+qa-device`?") && err.contains("+vt-cfs"), "{err}");
}

#[test]
fn csv_quotes_names_with_commas_and_quotes() {
    let dir = std::env::temp_dir().join(format!("forefront-csv-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("odd.toml");
    let good = include_str!("../../../scenarios/camera-switch.toml");
    let odd = good.replacen("name = \"camera-switch\"", "name = 'cam, \"odd\" one'", 1);
    assert_ne!(odd, good, "the scenario's name line changed");
    std::fs::write(&path, odd).unwrap();
    let out = forefront(&["sim", "run", path.to_str().unwrap(), "--bg-apps", "0", "--format", "csv"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().nth(1).unwrap();
    assert!(row.starts_with("\"cam, \"\"odd\"\" one\",android,"), "{row}");
    // Same number of fields as the header once quoting is honoured.
    let header_fields = text.lines().next().unwrap().split(',').count();
    assert_eq!(row.replace("\"cam, \"\"odd\"\" one\"", "x").split(',').count(), header_fields);
}

#[test]
fn starved_background_apps_are_warned_about() {
    // 50 updaters share one 10 MB/s link: they mostly wait for their downloads.
    let out = forefront(&["sim", "run", "launch-update", "--bg-apps", "50", "--format", "json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning: the background apps spent") && err.contains("50 apps share one 10 MB/s link"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(1), "the warning is in the report too");
    // Two updaters load the phone: no warning, and no `warnings` key.
    let out = forefront(&["sim", "run", "launch-update", "--bg-apps", "2", "--format", "json"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("warnings").is_none());
}

#[test]
fn a_run_cut_off_before_the_foreground_finished_is_warned_about() {
    // With 2 uploaders, switch-upload's 20 switches do not all fit in 60 s (the scenario's cap
    // is 600 s: cut it).
    let dir = tempfile::tempdir().unwrap();
    let sc = cut::switch_upload(dir.path(), 60.0);
    let out = forefront(&["sim", "run", sc.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: the run ended at the scenario's duration (60 s of simulated time) before the foreground finished"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = v["warnings"].as_array().unwrap();
    assert!(w.iter().any(|w| w.as_str().unwrap().contains("before the foreground finished")), "{w:?}");
    // Alone, the camera app finishes its 20 switches: no warning.
    let out = forefront(&["sim", "run", sc.to_str().unwrap(), "--bg-apps", "0", "--format", "json"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["metrics"]["fg_samples_ms"].as_array().map(Vec::len), Some(20));
    assert!(v.get("warnings").is_none());
}

#[test]
fn trace_convert_keeps_an_existing_output_unless_forced() {
    let dir = std::env::temp_dir().join(format!("forefront-convert-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/sample.blkparse.txt");
    let out_path = dir.join("out.json");
    std::fs::write(&out_path, "keep me").unwrap();
    let o = out_path.to_str().unwrap();
    let refused = forefront(&["trace", "convert", input, o]);
    let kept = std::fs::read_to_string(&out_path).unwrap();
    let forced = forefront(&["trace", "convert", input, o, "--force"]);
    let written = std::fs::read_to_string(&out_path).unwrap();
    let own = forefront(&["trace", "convert", o, o, "--force"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("exists; pass --force"));
    assert_eq!(kept, "keep me");
    assert!(forced.status.success(), "{}", String::from_utf8_lossy(&forced.stderr));
    assert!(written.starts_with('{') || written.starts_with('['), "a Perfetto JSON");
    assert!(String::from_utf8_lossy(&own.stderr).contains("is also an input"), "{}", String::from_utf8_lossy(&own.stderr));
}

#[test]
fn a_sweep_resumes_and_its_shards_merge_into_the_same_bytes() {
    let dir = std::env::temp_dir().join(format!("forefront-sweep-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        "scenario = \"camera-switch\"\npolicies = [\"android\", \"fasttrack\"]\nbg_apps = [0, 1]\nseeds = 2\n[axes]\n\"duration_s\" = [4.0]\n\"device.starvation_ms\" = [250.0, 500.0]\n",
    )
    .unwrap();
    let p = |f: &str| dir.join(f).to_str().unwrap().to_owned();
    let s = spec.to_str().unwrap();
    let local = forefront(&["sim", "sweep", s, "-o", &p("all.jsonl")]);
    assert!(local.status.success(), "{}", String::from_utf8_lossy(&local.stderr));
    let all = std::fs::read_to_string(dir.join("all.jsonl")).unwrap();
    assert_eq!(all.lines().count(), 16, "2 policies x 2 BG counts x 2 bounds x 2 seeds");
    // Resume: drop the last line, re-run: only that point runs again, and the file is whole.
    let cut: String = all.lines().take(15).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("all.jsonl"), cut).unwrap();
    let again = forefront(&["sim", "sweep", s, "-o", &p("all.jsonl")]);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("1 to run, 15 already"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(std::fs::read_to_string(dir.join("all.jsonl")).unwrap(), all);
    // Shards 0/3, 1/3, 2/3 merged: the same bytes as the local sweep.
    for i in 0..3 {
        let o = forefront(&["sim", "sweep", s, "-o", &p(&format!("s{i}.jsonl")), "--shard", &format!("{i}/3")]);
        assert!(o.status.success());
    }
    let m = forefront(&["sim", "merge", &p("s0.jsonl"), &p("s1.jsonl"), &p("s2.jsonl"), "-o", &p("merged.jsonl")]);
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("merged.jsonl")).unwrap(), all);
    // A wrong axis names the file and the axis.
    std::fs::write(
        &spec,
        "scenario = \"camera-switch\"\npolicies = [\"android\"]\nbg_apps = [1]\nseeds = 1\n[axes]\n\"phone.no_such\" = [1]\n",
    )
    .unwrap();
    let bad = forefront(&["sim", "sweep", s, "-o", &p("bad.jsonl")]);
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("spec.toml: axes.\"phone.no_such\": no field `no_such`"), "{err}");
}

#[test]
fn an_fg_that_matches_nothing_is_an_error_in_stats_convert_and_replay() {
    let blk = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/sample.blkparse.txt");
    let strace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/strace-f-tt-T.txt");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let json = json.to_str().unwrap();
    for args in [
        vec!["trace", "stats", blk, "--fg", "fio", "--fg", "fioo"],
        vec!["trace", "convert", blk, json, "--fg", "fioo"],
        vec!["sim", "replay", strace, "--fg", "dd", "--fg", "ddd"],
    ] {
        let out = forefront(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let bad = args.last().unwrap();
        assert!(err.contains(&format!("--fg {bad}: matches no process or thread in the trace")), "{args:?}: {err}");
        assert!(err.contains("did you mean `"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!std::path::Path::new(json).exists(), "convert checks --fg before creating its output");
    // An id that matches nothing lists ids; a name in a trace without names says so.
    let out = forefront(&["trace", "stats", blk, "--fg", "4242424"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--fg 4242424: matches no process or thread") && err.contains("ids in the trace: "), "{err}");
    let mobigen = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/mobigen-facebook-cut.txt");
    let out = forefront(&["trace", "stats", mobigen, "--fg", "facebook"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("this trace names no process; its ids: "), "{err}");
}

#[test]
fn without_fg_trace_stats_shows_no_split() {
    let blk = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/sample.blkparse.txt");
    let out = forefront(&["trace", "stats", blk, "--format", "json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("fg").is_none() && v.get("bg").is_none(), "no --fg, no FG/BG split");
    let out = forefront(&["trace", "stats", blk, "--format", "json", "--fg", "fio"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["fg"]["processes"].as_u64() > Some(0) && v["bg"]["processes"].as_u64() > Some(0), "{v}");
}

#[test]
fn replay_fg_takes_a_process_name_and_refuses_one_that_matches_nothing() {
    let t = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/traces/strace-f-tt-T.txt");
    let ok = forefront(&["sim", "replay", t, "--fg", "dd", "--timing", "afap", "--format", "json"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["metrics"]["fg_samples_ms"].as_array().map(Vec::len), Some(1), "one FG thread: dd");
    let bad = forefront(&["sim", "replay", t, "--fg", "nosuch"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("names in the trace: cat, dd, sh"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn generate_writes_man_pages_and_completions_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let out = forefront(&["generate", "man", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(dir.path().join("forefront-agent.1")).unwrap();
    assert!(page.starts_with(".ie") || page.contains(".TH forefront-agent"), "{page}");
    for sub in ["run", "fg", "exec", "status", "check", "dbus-policy"] {
        assert!(
            page.contains(&format!("forefront\\-agent\\-{}(1)", sub.replace('-', "\\-"))),
            "forefront-agent.1 lists {sub}: {page}"
        );
        assert!(dir.path().join(format!("forefront-agent-{sub}.1")).exists(), "{sub}");
    }
    let bash = forefront(&["generate", "completions", "bash"]);
    assert!(bash.status.success());
    let text = String::from_utf8(bash.stdout).unwrap();
    assert!(text.contains("complete -F _forefront") && text.contains("dbus-policy"), "{text}");
    let bad = forefront(&["generate", "completions", "tcsh"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("tcsh"));
}
