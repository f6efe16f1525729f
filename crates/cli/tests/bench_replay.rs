//! `forefront bench run --fg replay`: a start-up trace in the S suite's format replayed under the
//! S suite's fio-style background. A bad trace is refused naming its file, line and field (any
//! user); a tiny real run (root only; elsewhere `SKIP: ...`) emits the median's interval and the
//! disk's throughput and leaves nothing behind; the background is kept running across a round's
//! start-ups (one writer per round and mode; `--bg-restart`: one per sample); SIGTERM mid-run
//! stops every worker (the sync loop too) and removes the work directory. Uses a small trace written here, not the suite's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_forefront");

/// Two processes, sequential and random reads, read-ahead and synchronous ones (the S suite's
/// field layout: process, delta, sectors, position, Seq|Rand, two unused, action, then ignored).
const TRACE: &str = "\
app-100   0        8   2048  Rand  -1  0   RM  0.10 START
app-100   .000040  64  2056  Seq   0   8   RA  0.11 C
app-100   .000040  64  2120  Seq   0   72  RA  0.12 C
app-100   .000100  8   2184  Seq   0   136 RM  0.13 C
lib-101   .002000  32  9000  Rand  99  0   RM  0.15 C
lib-101   .000040  128 9032  Seq   0   32  RA  0.16 C
app-100   .000040  16  2192  Seq   0   144 RM  0.17 C
";

/// The tests that run `bench run` on the real disk, one at a time: each bench switches the
/// disk's I/O scheduler for its `bfq` mode and puts back the one it found, so two at once can
/// leave the second's "original" (the first's `bfq`) in place, and each test checks that the
/// scheduler it saw is back (twin29's CI caught the race).
static REAL_DISK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`REAL_DISK`], whether or not an earlier test panicked while holding it.
fn real_disk() -> std::sync::MutexGuard<'static, ()> {
    REAL_DISK.lock().unwrap_or_else(|e| e.into_inner())
}

fn skip_unless_root(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() && Path::new("/proc/sys/vm/drop_caches").exists() {
        return false;
    }
    use std::io::Write; // fd 2 directly: the harness captures eprintln! of passing tests
    let _ = writeln!(std::io::stderr().lock(), "SKIP: {test} needs root (drop_caches, I/O scheduler)");
    true
}

/// Processes whose command line mentions `needle`.
fn procs_mentioning(needle: &str) -> Vec<(i32, String)> {
    let mut v = vec![];
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmd = String::from_utf8_lossy(&std::fs::read(e.path().join("cmdline")).unwrap_or_default()).replace('\0', " ");
        if cmd.contains(needle) && pid != std::process::id() as i32 {
            v.push((pid, cmd));
        }
    }
    v
}

#[test]
fn a_bad_trace_is_refused_with_file_line_and_field() {
    let t = tempfile::tempdir().unwrap();
    let trace = t.path().join("bad.trace");
    std::fs::write(&trace, "app 0 8 1 Seq 0 0 RA\napp 0 eight 1 Seq 0 0 RA\n").unwrap();
    let out = Command::new(BIN).args(["bench", "run", "--fg", "replay", "--trace"]).arg(&trace).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2: field 3 (sectors): \"eight\" is not a whole number", trace.display())), "{err}");
    let out = Command::new(BIN).args(["bench", "run", "--fg", "replay"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fg replay needs --trace FILE"));
    let out = Command::new(BIN).args(["bench", "run", "--fg", "launch", "--trace"]).arg(&trace).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--trace is for --fg replay"));
}

#[test]
fn tiny_replay_under_fio_background_reports_the_interval_and_cleans_up() {
    if skip_unless_root("tiny_replay_under_fio_background_reports_the_interval_and_cleans_up") {
        return;
    }
    let parent = tempfile::Builder::new().prefix("ff-replay-test").tempdir_in("/var/tmp").unwrap();
    let trace = parent.path().join("small.trace");
    std::fs::write(&trace, TRACE).unwrap();
    let work = parent.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let _disk = real_disk();
    let sched = std::fs::read_to_string("/sys/block/vda/queue/scheduler").ok();
    let out = Command::new(BIN)
        .args(["bench", "run", "--fg", "replay", "--trace"])
        .arg(&trace)
        .args(["--bg", "fio-rw", "--bg-procs", "1", "--bg-file-mib", "16", "--runs", "6"])
        .args(["--mode", "alone", "--mode", "bfq", "--ramp-ms", "300", "--format", "json", "--dir"])
        .arg(&work)
        .args(["--per-round", "3", "--gap-ms", "200"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fg"], "replay");
    assert_eq!(v["bg"], "fio-rw");
    assert_eq!(v["trace"], trace.display().to_string());
    for m in ["alone", "bfq"] {
        let r = &v["modes"][m];
        let samples: Vec<f64> = r["samples_ms"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(samples.len(), 6, "{m}: two rounds of 3 start-ups, no warm-up (as the S suite)");
        assert!(samples.iter().all(|&x| x > 0.0 && x < 60_000.0), "{m}: {samples:?}");
        // n = 6: the 95 % interval is [min, max] (coverage 1 − 2/64).
        let ci = &r["median_ci95"];
        assert_eq!(ci["rank"], 1, "{m}: {r}");
        assert_eq!(ci["lo_ms"], r["min_ms"]);
        assert_eq!(ci["hi_ms"], r["max_ms"]);
        assert!((ci["coverage"].as_f64().unwrap() - 0.96875).abs() < 1e-9);
        assert!(r["disk_window_mb_s"].as_f64().unwrap() > 0.0, "{m}: the replay's own reads reach the disk");
    }
    assert!(v["modes"]["bfq"]["bg_mb_s"].as_f64().unwrap() > 0.0, "the readers and writers ran");
    assert_eq!(v["bg_life"], serde_json::json!({"kind": "kept", "per_round": 3, "gap_ms": 200}));
    assert_eq!(v["rounds"], 2);
    let per_round = v["modes"]["bfq"]["run_disk_mb_s"].as_array().unwrap();
    assert_eq!(per_round.len(), 2, "one steady-state figure per round");
    assert!(per_round.iter().all(|x| x.as_f64().unwrap() > 0.0), "{per_round:?}");
    assert!(v["modes"]["alone"].get("run_disk_mb_s").is_none(), "no background, no run throughput");
    assert!(v["modes"]["alone"]["bg_mb_s"].is_null());
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "work directory removed");
    assert_eq!(std::fs::read_to_string("/sys/block/vda/queue/scheduler").ok(), sched, "scheduler put back");
    assert!(procs_mentioning(&work.display().to_string()).is_empty(), "a worker survived");
}

struct Kill(Option<Child>);
impl Drop for Kill {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn sigterm_mid_replay_run_stops_the_workers_and_the_sync_loop() {
    if skip_unless_root("sigterm_mid_replay_run_stops_the_workers_and_the_sync_loop") {
        return;
    }
    let parent = tempfile::Builder::new().prefix("ff-replay-sig").tempdir_in("/var/tmp").unwrap();
    let trace = parent.path().join("small.trace");
    std::fs::write(&trace, TRACE).unwrap();
    let work: PathBuf = parent.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let log = parent.path().join("bench.log");
    // Its `bfq` mode switches the disk's scheduler too.
    let _disk = real_disk();
    let mut bench = Kill(Some(
        Command::new(BIN)
            .args(["bench", "run", "--fg", "replay", "--trace"])
            .arg(&trace)
            .args(["--bg", "fio-write", "--bg-procs", "2", "--bg-file-mib", "16", "--runs", "50"])
            .args(["--mode", "bfq", "--ramp-ms", "4000", "--dir"])
            .arg(&work)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    ));
    let needle = work.display().to_string();
    let t0 = Instant::now();
    // In full swing: both writers and the sync loop running.
    loop {
        let p = procs_mentioning(&needle);
        let writers = p.iter().filter(|(_, c)| c.contains("seq-write")).count();
        if writers == 2 && p.iter().any(|(_, c)| c.contains("sync-loop")) {
            break;
        }
        if let Some(st) = bench.0.as_mut().unwrap().try_wait().unwrap() {
            panic!("bench exited early ({st}): {}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "no workers after 120 s: {}", std::fs::read_to_string(&log).unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = nix::unistd::Pid::from_raw(bench.0.as_ref().unwrap().id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let t1 = Instant::now();
    let status = loop {
        if let Some(st) = bench.0.as_mut().unwrap().try_wait().unwrap() {
            break st;
        }
        assert!(t1.elapsed() < Duration::from_secs(60), "bench still running 60 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    bench.0 = None;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("interrupted"), "{text}");
    let t2 = Instant::now();
    while !procs_mentioning(&needle).is_empty() && t2.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(procs_mentioning(&needle), vec![], "a worker survived");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "work directory removed");
}

/// The bench child: SIGTERM on drop (its own clean-up runs: workers, agent, scheduler, work
/// directory), SIGKILL if it has not exited in 30 s, then any process still naming the test's
/// own work directory (only this bench's workers can) is killed by pid.
struct Bench(Option<Child>, String);
impl Drop for Bench {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(c.id() as i32), nix::sys::signal::Signal::SIGTERM);
            let t0 = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for (pid, _) in procs_mentioning(&self.1) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Runs a replay under one fio-style writer (`extra` added) while watching the processes:
/// the distinct pids of the writer seen over the run, and the JSON report.
fn writer_pids_over_a_run(test: &str, extra: &[&str]) -> (usize, serde_json::Value) {
    let parent = tempfile::Builder::new().prefix(test).tempdir_in("/var/tmp").unwrap();
    let trace = parent.path().join("small.trace");
    std::fs::write(&trace, TRACE).unwrap();
    let work = parent.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = parent.path().join("report.json");
    let log = parent.path().join("bench.log");
    let needle = work.display().to_string();
    let mut bench = Bench(
        Some(
            Command::new(BIN)
                .args(["bench", "run", "--fg", "replay", "--trace"])
                .arg(&trace)
                .args(["--bg", "fio-write", "--bg-procs", "1", "--bg-file-mib", "8", "--runs", "3"])
                .args(["--mode", "bfq", "--ramp-ms", "300", "--format", "json", "--dir"])
                .arg(&work)
                .args(extra)
                .stdout(std::fs::File::create(&out).unwrap())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap(),
        ),
        needle.clone(),
    );
    let mut seen = std::collections::BTreeSet::new();
    let t0 = Instant::now();
    let status = loop {
        for (pid, cmd) in procs_mentioning(&needle) {
            if cmd.contains("seq-write") {
                seen.insert(pid);
            }
        }
        if let Some(st) = bench.0.as_mut().unwrap().try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(300), "bench still running after 300 s");
        std::thread::sleep(Duration::from_millis(10));
    };
    bench.0 = None;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(procs_mentioning(&needle), vec![], "a worker survived");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "work directory removed");
    (seen.len(), v)
}

#[test]
fn a_kept_background_starts_once_per_round_and_mode_a_restarted_one_once_per_sample() {
    let test = "a_kept_background_starts_once_per_round_and_mode_a_restarted_one_once_per_sample";
    if skip_unless_root(test) {
        return;
    }
    let _disk = real_disk();
    let sched = std::fs::read_to_string("/sys/block/vda/queue/scheduler").ok();
    // 3 start-ups in rounds of 2: two starts of the writer (rounds of 2 and 1), its three
    // start-ups timed in its steady state.
    let (starts, v) = writer_pids_over_a_run("ff-kept-bg", &["--per-round", "2", "--gap-ms", "300"]);
    assert_eq!(starts, 2, "kept: one writer per (round, mode)");
    assert_eq!(v["bg_life"]["kind"], "kept");
    assert_eq!(v["rounds"], 2);
    assert_eq!(v["modes"]["bfq"]["samples_ms"].as_array().unwrap().len(), 3);
    assert_eq!(v["modes"]["bfq"]["run_bg_mb_s"].as_array().unwrap().len(), 2);
    // --bg-restart: the old structure, one writer per sample and one for the warm-up.
    let (starts, v) = writer_pids_over_a_run("ff-restart-bg", &["--bg-restart"]);
    assert_eq!(starts, 4, "restarted: 3 samples + 1 warm-up, each with its own writer");
    assert_eq!(v["bg_life"]["kind"], "per-sample");
    assert_eq!(v["rounds"], 3);
    assert!(v["modes"]["bfq"].get("run_bg_mb_s").is_none());
    assert_eq!(std::fs::read_to_string("/sys/block/vda/queue/scheduler").ok(), sched, "scheduler put back");
}
