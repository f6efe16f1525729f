//! `forefront bench predict`: a saved bench report (made up here, in the bench's JSON
//! contract) predicted on a built-in device with this machine's settings. Skips where the
//! machine has no block device with a `queue/` in sysfs.

use std::process::Command;

fn a_disk() -> Option<String> {
    let mut names: Vec<String> =
        std::fs::read_dir("/sys/block").ok()?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
        .into_iter()
        .find(|n| std::path::Path::new(&format!("/sys/block/{n}/queue/read_ahead_kb")).exists() && !n.starts_with("zram"))
}

/// A saved `bench run --format json` report of `fg` under `bg` on `disk` with an `alone` and a
/// `baseline` mode (p10, p50, p90 of the baseline in ms), written as `dir/name`.
fn saved_report(dir: &std::path::Path, name: &str, fg: &str, bg: &str, disk: &str, baseline: [f64; 3]) -> std::path::PathBuf {
    let mode = |ms: [f64; 3], bg: Option<f64>| serde_json::json!({ "median_ms": ms[1], "samples_ms": ms, "bg_window_mb_s": bg });
    let report = serde_json::json!({
        "fg": fg, "bg": bg, "runs": 3, "device": disk, "scheduler": "mq-deadline",
        "app": { "code_files": 8, "code_bytes": 8 << 20, "db_rows": 500, "row_bytes": 4096 },
        "bg_procs": 2, "bg_file_bytes": 64 << 20, "ramp_ms": 500,
        "modes": { "alone": mode([40.0, 50.0, 60.0], None), "baseline": mode(baseline, Some(100.0)) }
    });
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&report).unwrap()).unwrap();
    path
}

#[test]
fn predict_prints_measured_beside_predicted_and_says_what_it_cannot() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED predict_prints_measured_beside_predicted_and_says_what_it_cannot: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = t.path().join("run.json");
    let mode = |ms: [f64; 3], bg: Option<f64>| serde_json::json!({ "median_ms": ms[1], "samples_ms": ms, "bg_window_mb_s": bg });
    let report = serde_json::json!({
        "fg": "launch", "bg": "update", "runs": 3, "device": disk, "scheduler": "mq-deadline",
        "app": { "code_files": 8, "code_bytes": 8 << 20, "db_rows": 500, "row_bytes": 4096 },
        "bg_procs": 2, "bg_file_bytes": 64 << 20, "ramp_ms": 500,
        "modes": {
            "alone": mode([40.0, 50.0, 60.0], None),
            "baseline": mode([400.0, 500.0, 600.0], Some(100.0)),
            "ionice-idle": mode([100.0, 120.0, 130.0], Some(90.0)),
        }
    });
    std::fs::write(&saved, serde_json::to_string(&report).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&saved)
        .args(["--device", "galaxy-s6-ufs", "--launches", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{text}", String::from_utf8_lossy(&out.stderr));
    let row = |m: &str| text.lines().find(|l| l.starts_with(m)).unwrap_or_else(|| panic!("no {m} row:\n{text}")).to_owned();
    // Measured medians as given; predicted ones are numbers for the modes the simulator has.
    let base_row = row("baseline");
    let base: Vec<&str> = base_row.split_whitespace().collect();
    assert_eq!(base[1], "500.0", "{text}");
    assert!(base[2].parse::<f64>().is_ok_and(|v| v > 0.0), "{text}");
    assert!(row("alone").split_whitespace().nth(2).unwrap().parse::<f64>().is_ok(), "{text}");
    assert!(text.contains("ionice-idle: not yet in the simulator"), "{text}");

    // A file that is not a bench report says which field is missing.
    std::fs::write(&saved, "{\"fg\": \"launch\"}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&saved)
        .args(["--device", "galaxy-s6-ufs"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no `bg`") && err.contains("run.json"), "{err}");
}

/// The app's CPU work in the simulated operation: the `alone` mode's measured user time, the
/// assumption for a report without it, or `--app-cpu-ms`; the prediction follows it.
#[test]
fn the_apps_measured_cpu_time_is_the_simulated_apps_work() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_apps_measured_cpu_time_is_the_simulated_apps_work: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let old = saved_report(t.path(), "old.json", "launch", "update", &disk, [400.0, 500.0, 600.0]);
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&old).unwrap()).unwrap();
    v["modes"]["alone"]["op_cpu_ms"] = serde_json::json!({ "total_ms": 20.0, "user_ms": 2.5, "sys_ms": 17.5 });
    let new = t.path().join("new.json");
    std::fs::write(&new, serde_json::to_string(&v).unwrap()).unwrap();
    let predict = |file: &std::path::Path, extra: &[&str]| -> (String, f64) {
        let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
            .args(["bench", "predict"])
            .arg(file)
            .args(["--device", "galaxy-s6-ufs", "--launches", "3"])
            .args(extra)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}\n{text}", String::from_utf8_lossy(&out.stderr));
        let alone = text.lines().find(|l| l.starts_with("alone")).unwrap_or_else(|| panic!("{text}"));
        let p50: f64 = alone.split_whitespace().nth(2).unwrap().parse().unwrap();
        (text, p50)
    };
    let (text, measured) = predict(&new, &[]);
    assert!(text.contains("app CPU 2.50 ms measured (alone, user time)"), "{text}");
    assert!(text.contains("alone 20.0 (2.5 user + 17.5 sys) -> "), "{text}");
    let (text, assumed) = predict(&old, &[]);
    assert!(text.contains("app CPU 10 ms assumed"), "{text}");
    let (text, given) = predict(&new, &["--app-cpu-ms", "30"]);
    assert!(text.contains("app CPU 30.00 ms (--app-cpu-ms)"), "{text}");
    // With perf's task clock recorded (twin18): the user share of the time on a CPU, 2.5 of 20
    // ticks' worth of 12 ms on a CPU, not the CPU clock's user time.
    v["modes"]["alone"]["op_cpu_ms"]["on_cpu_ms"] = serde_json::json!(12.0);
    let on = t.path().join("on.json");
    std::fs::write(&on, serde_json::to_string(&v).unwrap()).unwrap();
    let (text, _) = predict(&on, &[]);
    assert!(text.contains("app CPU 1.50 ms measured (alone, user share of its time on a CPU)"), "{text}");
    assert!(text.contains("alone 20.0 (2.5 user + 17.5 sys, on a CPU 12.0) -> "), "{text}");
    // One launch, no background: its compute op is on the critical path.
    assert!(measured + 5.0 < assumed && assumed + 15.0 < given, "2.5 ms: {measured}, 10 ms: {assumed}, 30 ms: {given}");
}

#[test]
fn a_switch_is_predicted_and_the_report_charts_the_prediction() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED a_switch_is_predicted_and_the_report_charts_the_prediction: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "switch.json", "switch", "update", &disk, [400.0, 500.0, 600.0]);
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&saved)
        .args(["--device", "galaxy-s6-ufs", "--launches", "2", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((doc["fg"].as_str(), doc["bg"].as_str()), (Some("switch"), Some("update")), "{doc}");
    for m in doc["modes"].as_array().unwrap() {
        assert_eq!(m["predicted"]["status"], "ran", "the switch runs in the simulator: {m}");
        assert!(m["predicted"]["fg_p50_ms"].as_f64().is_some_and(|v| v > 0.0), "{m}");
    }
    let predicted = t.path().join("predict.json");
    std::fs::write(&predicted, &out.stdout).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_forefront")).arg("report").arg(&predicted).args(["-o", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains("Predicted vs measured: switch under update"), "{page}");
    assert!(page.contains("baseline · measured: 500.0 – "), "the measured p50–p90 range: {page}");
}

/// `sim run bench:FG/BG`: the bench's workload by name, as `sim sweep` names it, on --device.
#[test]
fn sim_run_names_the_bench_workload() {
    let dev = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results/twin/quiet/this-vm-quiet-bw.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["sim", "run", "bench:launch/update", "--bg-apps", "0", "--device", dev, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["scenario"], "bench-launch-update", "{doc}");
    assert!(doc["metrics"]["fg_p50_ms"].as_f64().is_some_and(|v| v > 0.0), "{}", doc["metrics"]);
    let out = Command::new(env!("CARGO_BIN_EXE_forefront")).args(["sim", "run", "bench:launch/update"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--device"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `--preempt` chooses the kernel's preemption model; the header names it and the table ends
/// with the simulated launch's wait for a CPU per mode (docs/twin.md, twin12). A bad value is
/// refused by name.
#[test]
fn the_preemption_model_is_named_and_can_be_chosen() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_preemption_model_is_named_and_can_be_chosen: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "copy.json", "launch", "copy", &disk, [90.0, 100.0, 110.0]);
    let run_with = |preempt: &str, more: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
            .args(["bench", "predict"])
            .arg(&saved)
            .args(["--device", "galaxy-s6-ufs", "--launches", "3", "--preempt", preempt])
            .args(more)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let run = |preempt: &str| run_with(preempt, &[]);
    for p in ["none", "full"] {
        let (ok, text, err) = run(p);
        assert!(ok, "{err}");
        assert!(text.lines().next().unwrap().contains(&format!("kernel preemption {p}")), "{text}");
        let wait =
            text.lines().find(|l| l.starts_with("predicted wait for a CPU per launch (ms):")).unwrap_or_else(|| panic!("{text}"));
        assert!(wait.contains("alone ") && wait.contains("baseline "), "{wait}");
        // The same wait wake-up by wake-up, as `scripts/sched-probe` reports the real launch's.
        let wakeups = text.lines().find(|l| l.starts_with("predicted wake-ups per launch")).unwrap_or_else(|| panic!("{text}"));
        assert!(wakeups.contains("baseline ") && wakeups.contains(" ms; p50 ") && wakeups.contains(", max "), "{wakeups}");
    }
    let (ok, _, err) = run("sometimes");
    assert!(!ok && err.contains("--preempt") && err.contains("sometimes"), "{err}");
    // The fair scheduler: this kernel's unless asked (`auto`: EEVDF with its base slice and
    // tick on Linux 6.6+, CFS before or where it cannot be read); `--fair cfs` forces CFS,
    // `--fair eevdf` names its base slice and tick.
    let header = |text: &str| text.lines().next().unwrap().to_owned();
    let (_, default, _) = run("none");
    let (ok, auto, err) = run_with("none", &["--fair", "auto"]);
    assert!(ok, "{err}");
    assert_eq!(header(&default), header(&auto));
    assert!(header(&default).contains("fair scheduler cfs") || header(&default).contains("fair scheduler eevdf (base slice"));
    let (ok, text, err) = run_with("none", &["--fair", "cfs"]);
    assert!(ok, "{err}");
    assert!(header(&text).contains("fair scheduler cfs"), "{text}");
    let (ok, text, err) = run_with("none", &["--fair", "eevdf"]);
    assert!(ok, "{err}");
    assert!(text.lines().next().unwrap().contains("fair scheduler eevdf (base slice"), "{text}");
    let (ok, _, err) = run_with("none", &["--fair", "sometimes"]);
    assert!(!ok && err.contains("--fair") && err.contains("sometimes"), "{err}");
    // The CPU groups: this machine's unless asked, named in the header; a bad one refused.
    for g in ["root", "autogroup", "android"] {
        let (ok, text, err) = run_with("none", &["--cpu-groups", g]);
        assert!(ok, "{err}");
        assert!(text.lines().next().unwrap().contains(&format!("cpu groups {g})")), "{text}");
    }
    let (_, text, _) = run("none");
    assert!(text.lines().next().unwrap().contains("cpu groups "), "{text}");
    let (ok, _, err) = run_with("none", &["--cpu-groups", "sometimes"]);
    assert!(!ok && err.contains("--cpu-groups") && err.contains("sometimes"), "{err}");
}

/// The tw15 calibration of this VM (a `bench calibrate` file with its provenance), as text.
fn tw15_calibration() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results/twin/tw15/this-vm-tw15-batch.toml")).unwrap()
}

/// A calibrated device's two page-copy figures go to their own sides (twin17): the header names
/// both, and writers that copy at the write side's dearer cost move less data than with one
/// cost for both directions.
#[test]
fn the_calibrated_copy_costs_reach_reads_and_writes_apart() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_calibrated_copy_costs_reach_reads_and_writes_apart: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "copy.json", "launch", "copy", &disk, [100.0, 120.0, 140.0]);
    let calibrated = tw15_calibration();
    let split = t.path().join("split.toml");
    std::fs::write(&split, &calibrated).unwrap();
    // The same file with the write side's figure replaced by the read side's: one cost.
    let one = t.path().join("one.toml");
    assert!(calibrated.contains("value = 0.528892578125"), "the calibration's write figure");
    std::fs::write(&one, calibrated.replace("value = 0.528892578125", "value = 0.3791875")).unwrap();
    let predict = |device: &std::path::Path| -> (String, f64) {
        let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
            .args(["bench", "predict"])
            .arg(&saved)
            .arg("--device")
            .arg(device)
            .args(["--launches", "2", "--format", "json"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}\n{text}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let base = v["modes"].as_array().unwrap().iter().find(|m| m["mode"] == "baseline").expect("a baseline row").clone();
        (text, base["predicted"]["bg_mb_s"].as_f64().expect("a predicted background throughput"))
    };
    let (text, split_mb_s) = predict(&split);
    assert!(text.contains("\"copy_page_us\": 0.3791875") && text.contains("\"copy_write_page_us\": 0.528892578125"), "{text}");
    let (_, one_mb_s) = predict(&one);
    // The workers' time is mostly page copies: 0.53 against 0.38 us a page.
    assert!(split_mb_s < 0.85 * one_mb_s, "write-side copy {split_mb_s:.0} MB/s, one cost {one_mb_s:.0} MB/s");
    // The text header names both figures.
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&saved)
        .arg("--device")
        .arg(&split)
        .args(["--launches", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("page copy 0.379 us read / 0.529 us write, from the calibration"), "{text}");
}

/// A run that probed the page copy beside its samples (twin27) is predicted with the probes'
/// medians, which the header names; `--calibrated-copy` keeps the device file's; the probes'
/// dearer copy moves the copy workers less data; a probe that is not a positive figure is an
/// error naming it.
#[test]
fn the_runs_copy_probes_are_its_copy_costs_unless_the_calibrations_are_asked_for() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_runs_copy_probes_are_its_copy_costs_unless_the_calibrations_are_asked_for: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let plain = saved_report(t.path(), "copy.json", "launch", "copy", &disk, [100.0, 120.0, 140.0]);
    let with_probes = |name: &str, probes: serde_json::Value| {
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plain).unwrap()).unwrap();
        v["copy_probes"] = probes;
        let path = t.path().join(name);
        std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
        path
    };
    let probe = |w: f64, r: f64| serde_json::json!({ "write_page_us": w, "read_page_us": r });
    let saved = with_probes("probed.json", serde_json::json!([probe(0.7, 0.6), probe(0.9, 0.8), probe(0.8, 0.5)]));
    let device = t.path().join("tw15.toml");
    std::fs::write(&device, tw15_calibration()).unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&predict_on(&saved, &device, &[&["--format", "json"], args].concat())).unwrap()
    };
    let probed = json(&[]);
    assert_eq!((probed["copy_write_page_us"].as_f64(), probed["copy_page_us"].as_f64()), (Some(0.8), Some(0.6)), "{probed}");
    assert_eq!((probed["copy_source"].as_str(), probed["copy_probes"].as_u64()), (Some("probes"), Some(3)));
    let calibrated = json(&["--calibrated-copy"]);
    assert_eq!(calibrated["copy_write_page_us"].as_f64(), Some(0.528892578125), "{calibrated}");
    assert_eq!(calibrated["copy_source"].as_str(), Some("calibration"));
    let bg = |v: &serde_json::Value| {
        let base = v["modes"].as_array().unwrap().iter().find(|m| m["mode"] == "baseline").unwrap().clone();
        base["predicted"]["bg_mb_s"].as_f64().expect("a predicted background throughput")
    };
    // The copy workers' time is mostly page copies: 0.8 against 0.53 us a written page.
    assert!(bg(&probed) < 0.85 * bg(&calibrated), "probed {:.0} MB/s, calibrated {:.0} MB/s", bg(&probed), bg(&calibrated));
    assert!(predict_on(&saved, &device, &[])
        .contains("page copy 0.600 us read / 0.800 us write, from the run's probes (median of 3)"));
    // A probe that is no figure is refused, by its place.
    let bad = with_probes("bad.json", serde_json::json!([probe(0.7, 0.6), probe(-1.0, 0.8)]));
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&bad)
        .arg("--device")
        .arg(&device)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("copy_probes[1]") && err.contains("write_page_us -1"), "{err}");
}

/// `calibrated` with one more `[provenance.fields]` figure, `name` = `us`, written into `dir`.
fn with_calibrated(dir: &std::path::Path, calibrated: &str, name: &str, us: f64) -> std::path::PathBuf {
    let path = dir.join(format!("{name}-{us}.toml"));
    let field = format!(
        "\n[provenance.fields.{name}]\nsource = \"derived\"\nvalue = {us:?}\nmin = {us:?}\nmax = {us:?}\nhow = \"test\"\n"
    );
    std::fs::write(&path, format!("{calibrated}{field}")).unwrap();
    path
}

/// `forefront bench predict SAVED --device DEVICE --launches 2 ARGS...`'s output (it must succeed).
fn predict_on(saved: &std::path::Path, device: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(saved)
        .arg("--device")
        .arg(device)
        .args(["--launches", "2"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}\n{text}", String::from_utf8_lossy(&out.stderr));
    text
}

/// The baseline row's predicted figure at `pointer` (a JSON pointer into `predicted`).
fn baseline_predicted(json: &str, pointer: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let base = v["modes"].as_array().unwrap().iter().find(|m| m["mode"] == "baseline").expect("a baseline row").clone();
    base["predicted"].pointer(pointer).and_then(|x| x.as_f64()).unwrap_or_else(|| panic!("no {pointer} in {base}"))
}

/// A calibrated page allocation (twin21: a cold page's `write()` beyond a cached one's) reaches
/// the simulator: the header and the JSON name it, a calibration without it keeps the default,
/// and updaters whose pages cost more to allocate move less data.
#[test]
fn the_calibrated_page_allocation_reaches_the_writers() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_calibrated_page_allocation_reaches_the_writers: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    // The updaters' pages are clean after each `fdatasync`, so each sample's drop makes them
    // cold again and their next pass allocates them (the device bounds the rest of their time).
    let saved = saved_report(t.path(), "update.json", "launch", "update", &disk, [300.0, 400.0, 500.0]);
    let calibrated = tw15_calibration();
    assert!(!calibrated.contains("alloc_page_us"), "tw15 predates the figure");
    let predict = |device: &std::path::Path, format: &str| predict_on(&saved, device, &["--format", format]);
    let (cheap, dear) = (
        with_calibrated(t.path(), &calibrated, "alloc_page_us", 0.1),
        with_calibrated(t.path(), &calibrated, "alloc_page_us", 2.0),
    );
    let cheap_json = predict(&cheap, "json");
    assert!(cheap_json.contains("\"alloc_page_us\": 0.1"), "{cheap_json}");
    let (cheap_mb_s, dear_mb_s) =
        (baseline_predicted(&cheap_json, "/bg_mb_s"), baseline_predicted(&predict(&dear, "json"), "/bg_mb_s"));
    assert!(dear_mb_s < cheap_mb_s, "2.0 us a page {dear_mb_s:.0} MB/s, 0.1 us {cheap_mb_s:.0} MB/s");
    assert!(predict(&dear, "table").contains("page allocation 2.000 us measured"));
    let plain = t.path().join("plain.toml");
    std::fs::write(&plain, &calibrated).unwrap();
    assert!(predict(&plain, "json").contains("\"alloc_page_us\": null"));
    assert!(predict(&plain, "table").contains("page allocation: the simulator's default"));
}

/// A dirty page's write-back cost where the calibration measured it (twin23) reaches the
/// simulator: the header and the JSON name it, a calibration without it keeps the default, and
/// updaters whose `fdatasync`s cost more CPU keep the launch waiting longer for a CPU.
#[test]
fn the_calibrated_write_back_cost_reaches_the_updaters() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_calibrated_write_back_cost_reaches_the_updaters: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "update.json", "launch", "update", &disk, [300.0, 400.0, 500.0]);
    let calibrated = tw15_calibration();
    assert!(!calibrated.contains("writeback_page_us"), "tw15 predates the figure");
    let predict = |device: &std::path::Path, format: &str| predict_on(&saved, device, &["--preempt", "none", "--format", format]);
    let (cheap, dear) = (
        with_calibrated(t.path(), &calibrated, "writeback_page_us", 0.05),
        with_calibrated(t.path(), &calibrated, "writeback_page_us", 2.0),
    );
    let cheap_json = predict(&cheap, "json");
    assert!(cheap_json.contains("\"writeback_page_us\": 0.05"), "{cheap_json}");
    // The baseline launch's wait for a CPU (ms per launch): the updaters hold both CPUs while
    // their write-back is submitted, a system call that the kernel without preemption runs
    // to its end.
    let wait = "/cpu_waits/sum_ms_per_launch";
    let (cheap_ms, dear_ms) = (baseline_predicted(&cheap_json, wait), baseline_predicted(&predict(&dear, "json"), wait));
    assert!(dear_ms > cheap_ms, "2.0 us a page: {dear_ms:.1} ms, 0.05 us: {cheap_ms:.1} ms");
    assert!(predict(&dear, "table").contains("write-back 2.000 us/page measured"));
    let plain = t.path().join("plain.toml");
    std::fs::write(&plain, &calibrated).unwrap();
    let plain_json = predict(&plain, "json");
    assert!(plain_json.contains("\"writeback_page_us\": null"));
    let plain_table = predict(&plain, "table");
    assert!(plain_table.contains("write-back: the simulator's default"));
    // A host that takes freed memory back (twin23) is said, as this machine's sysfs tells it.
    let reporting = forefront_sysfs::vm::free_page_reporting(std::path::Path::new("/"));
    let v: serde_json::Value = serde_json::from_str(&plain_json).unwrap();
    assert_eq!(v["host_free_page_reporting"], serde_json::json!(reporting), "{plain_json}");
    assert_eq!(
        plain_table.contains("host: this machine's balloon reports free memory"),
        reporting == Some(true),
        "{plain_table}"
    );
}

/// The host's reclaim of free memory where the calibration measured it (twin24) reaches the
/// simulator: the table says it is modelled and with what figures, the JSON carries them, and
/// updaters whose re-allocations after each sample's drop meet memory the host took back move
/// less data than with the host's fault free. A calibration without the figures models none.
#[test]
fn the_calibrated_host_reclaim_reaches_the_updaters() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_calibrated_host_reclaim_reaches_the_updaters: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "update.json", "launch", "update", &disk, [300.0, 400.0, 500.0]);
    let calibrated = tw15_calibration();
    assert!(!calibrated.contains("host_reclaim"), "tw15 predates the figures");
    // A pass 10 ms after each drop that hands everything freed to the host, nothing kept back:
    // the updaters' 64 MiB files are taken again from the host after every drop.
    let with_host = |page_us: f64| {
        let mut text = calibrated.clone();
        for (name, v) in [
            ("host_reclaim_interval_ms", 10.0),
            ("host_reclaim_pass_mib", 4096.0),
            ("host_reclaim_reserve_mib", 0.0),
            ("host_reclaim_page_us", page_us),
        ] {
            text += &format!(
                "\n[provenance.fields.{name}]\nsource = \"measured\"\nvalue = {v:?}\nmin = {v:?}\nmax = {v:?}\nhow = \"test\"\n"
            );
        }
        let path = t.path().join(format!("host-{page_us}.toml"));
        std::fs::write(&path, text).unwrap();
        path
    };
    let predict = |device: &std::path::Path, format: &str| predict_on(&saved, device, &["--format", format]);
    // A dear fault (the disk-bound updaters hide a cheap one behind each other's syncs).
    let (free, dear) = (predict(&with_host(0.0), "json"), predict(&with_host(300.0), "json"));
    let v: serde_json::Value = serde_json::from_str(&dear).unwrap();
    assert_eq!(v["host_reclaim"]["page_us"], 300.0, "{dear}");
    assert_eq!(v["host_reclaim"]["interval_ms"], 10.0, "{dear}");
    let (free_mb_s, dear_mb_s) = (baseline_predicted(&free, "/bg_mb_s"), baseline_predicted(&dear, "/bg_mb_s"));
    assert!(dear_mb_s < 0.9 * free_mb_s, "300 us a page {dear_mb_s:.0} MB/s, free {free_mb_s:.0} MB/s: {dear}");
    let base = v["modes"].as_array().unwrap().iter().find(|m| m["mode"] == "baseline").unwrap().clone();
    assert!(base["predicted"]["host_reclaim"]["refaulted_pages"].as_u64().unwrap() > 0, "{base}");
    let table = predict(&with_host(300.0), "table");
    assert!(table.contains("host: free memory the host takes back, modelled from the calibration"), "{table}");
    assert!(table.contains("costs 300.00 us more"), "{table}");
    let plain = t.path().join("plain.toml");
    std::fs::write(&plain, &calibrated).unwrap();
    let v: serde_json::Value = serde_json::from_str(&predict(&plain, "json")).unwrap();
    assert!(v["host_reclaim"].is_null(), "{v}");
}

/// The file system of the bench's work directory (the saved report's `dir`, looked up on this
/// machine) is reported, and an ext4 without a journal, which the simulator's ext4 is not
/// (twin21), is said in the table.
#[test]
fn the_bench_directorys_file_system_and_its_journal_are_reported() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_bench_directorys_file_system_and_its_journal_are_reported: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "update.json", "launch", "update", &disk, [300.0, 400.0, 500.0]);
    let mut report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    report["dir"] = serde_json::json!(t.path());
    std::fs::write(&saved, report.to_string()).unwrap();
    let expected = forefront_sysfs::fs::fs_of(std::path::Path::new("/"), t.path()).expect("the temporary directory's mount");
    let run = |format: &str| -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
            .args(["bench", "predict"])
            .arg(&saved)
            .args(["--device", "galaxy-s6-ufs", "--launches", "1", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let v: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(v["fs"]["type"], expected.fs_type.as_str());
    assert_eq!(v["fs"]["device"], expected.device.as_str());
    assert_eq!(v["fs"]["journal"], serde_json::json!(expected.journal));
    let text = run("table");
    assert_eq!(text.contains("ext4 without a journal"), expected.journal == Some(false), "{expected:?}\n{text}");
}

/// `--band`: each mode predicted again with the calibration's figures at the slow and at the
/// fast edge of their repetitions; the edges move the prediction where the spread is wide, not
/// where it is nil; a device file without a calibration's provenance is refused by name.
#[test]
fn the_band_predicts_at_the_edges_of_the_calibrations_spread() {
    let Some(disk) = a_disk() else {
        eprintln!("SKIPPED the_band_predicts_at_the_edges_of_the_calibrations_spread: no block device in /sys/block");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "update.json", "launch", "update", &disk, [300.0, 400.0, 500.0]);
    let calibrated = tw15_calibration();
    let wide = t.path().join("wide.toml");
    std::fs::write(&wide, &calibrated).unwrap();
    // The same calibration with no spread: every min and max at the value.
    let mut nil = String::new();
    let mut value = String::new();
    for line in calibrated.lines() {
        if let Some(v) = line.strip_prefix("value = ") {
            value = v.to_string();
        }
        if line.starts_with("min = ") || line.starts_with("max = ") {
            nil.push_str(&format!("{} = {value}\n", &line[..3]));
        } else {
            nil.push_str(line);
            nil.push('\n');
        }
    }
    let nil_path = t.path().join("nil.toml");
    std::fs::write(&nil_path, &nil).unwrap();
    let band = |device: &std::path::Path| -> Vec<(f64, f64, f64)> {
        let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
            .args(["bench", "predict"])
            .arg(&saved)
            .arg("--device")
            .arg(device)
            .args(["--launches", "2", "--format", "json", "--band"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}\n{text}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let modes = v["modes"].as_array().unwrap();
        v["band"]
            .as_array()
            .expect("a band per mode")
            .iter()
            .map(|b| {
                let p50 = modes.iter().find(|m| m["mode"] == b["mode"]).unwrap()["predicted"]["fg_p50_ms"].as_f64().unwrap();
                (b["slow_p50_ms"].as_f64().unwrap(), p50, b["fast_p50_ms"].as_f64().unwrap())
            })
            .collect()
    };
    let nil_band = band(&nil_path);
    assert_eq!(nil_band.len(), 2, "{nil_band:?}");
    for (slow, p50, fast) in &nil_band {
        assert_eq!((slow, fast), (p50, p50), "no spread, no band");
    }
    let wide_band = band(&wide);
    assert!(wide_band.iter().any(|(slow, p50, fast)| slow != p50 || fast != p50), "{wide_band:?}");
    // The text names the band; a built-in device has no calibration to take edges of.
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&saved)
        .arg("--device")
        .arg(&wide)
        .args(["--launches", "2", "--band"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("slowest / fastest (--band): alone "), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&saved)
        .args(["--device", "galaxy-s6-ufs", "--band"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--band: galaxy-s6-ufs is not a `bench calibrate` file"), "{err}");
}

/// `--measured-passes` (twin27) needs what it replays: a report without reporting passes, a
/// timeline or a device without the host's figures is refused, saying which is missing.
#[test]
fn measured_passes_need_the_runs_passes_its_timeline_and_the_hosts_figures() {
    let Some(disk) = a_disk() else {
        eprintln!(
            "SKIPPED measured_passes_need_the_runs_passes_its_timeline_and_the_hosts_figures: no block device in /sys/block"
        );
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let saved = saved_report(t.path(), "update.json", "launch", "update", &disk, [100.0, 120.0, 140.0]);
    let device = t.path().join("tw15.toml");
    std::fs::write(&device, tw15_calibration()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "predict"])
        .arg(&saved)
        .arg("--device")
        .arg(&device)
        .arg("--measured-passes")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused");
    assert!(
        err.contains("--measured-passes needs")
            && err.contains("reporting passes (none in the report)")
            && err.contains("timeline (none followed)")
            && err.contains("host's reclaim figures (none)"),
        "{err}"
    );
}
