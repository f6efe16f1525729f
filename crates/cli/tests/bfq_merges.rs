//! `scripts/bfq-merges OUTDIR --analyse` on a made-up trace in the ftrace `blk` tracer's text
//! format and a bench report: each operation process is matched to its sample in order (a
//! warm-up first), and a sample counts as merged when BFQ logged `merging with queue` for the
//! process's sync queue. Skips without python3.

use std::fmt::Write as _;
use std::process::Command;

/// Three launch processes (pids 300, 303, 306: the warm-up and two samples), each with `reads`
/// queued reads its own raised queue takes; BFQ merges the queues of those in `merged` into a
/// shared one, and a worker's queue into those of `into`.
fn trace(reads: usize, merged: &[u32], into: &[u32]) -> String {
    let mut t = String::from("# tracer: blk\n");
    let mut at = 5_000_000u64; // µs
    let mut line = |who: String, rest: String| {
        let _ = writeln!(t, "{who:>22} [001] d..1. {}.{:06}: 254,0   {rest}", at / 1_000_000, at % 1_000_000);
        at += 50;
    };
    for pid in [300u32, 303, 306] {
        let who = format!("ff-op-launch-{pid}");
        line(who.clone(), format!("1,0  m   N bfq{pid}S allocated"));
        for i in 0..reads {
            line(who.clone(), format!(" Q  RS {} + 8 [ff-op-launch]", 1000 + 8 * i));
            line(who.clone(), format!("1,0  m   N bfq{pid}S add_request 1"));
            line(who.clone(), format!("1,0  m   N bfq{pid}S raising period dur 0/10500 msec, old coeff 30, w 1200(40)"));
            if i == 0 && merged.contains(&pid) {
                line(who.clone(), format!("1,0  m   N bfq{pid}S scheduling merge with queue -1"));
                line(who.clone(), format!("1,0  m   N bfq{pid}S merging with queue 18446744073709551615"));
            }
        }
        // A background worker's queue, never counted as an operation; in `into` it merges
        // into the operation's queue, which is then shared too.
        line("ff-bg-update-400".into(), " Q  WS 50000 + 2048 [ff-bg-update]".into());
        if into.contains(&pid) {
            line("ff-bg-update-400".into(), format!("1,0  m   N bfq400S merging with queue {pid}"));
        }
    }
    t
}

const REPORT: &str = r#"{"modes": {"bfq": {"samples_ms": [610.0, 70.0]}}}"#;

#[test]
fn merged_launches_are_found_and_matched_to_their_samples() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED merged_launches_are_found_and_matched_to_their_samples: no python3");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/bfq-merges");
    let analyse = |merged: &[u32], into: &[u32]| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("trace.txt"), trace(4, merged, into)).unwrap();
        std::fs::write(d.path().join("run.json"), REPORT).unwrap();
        let out = Command::new("python3").arg(script).arg(d.path()).arg("--analyse").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = analyse(&[303], &[]);
    assert!(text.contains("operation processes: 3; samples in run.json: 2 (the first 1 a warm-up)"), "{text}");
    assert!(text.contains("300        warm-up"), "{text}");
    assert!(text.contains("merged: 1 samples, median 610.0 ms"), "{text}");
    assert!(text.contains("not merged: 1 samples, median 70.0 ms"), "{text}");
    let row = text.lines().find(|l| l.starts_with("303")).expect("the first sample's row");
    assert!(row.contains("610.0") && row.contains("4") && row.contains("30") && row.contains("yes"), "{row}");
    // A worker's queue merged into the second sample's: that sample is merged too.
    let text = analyse(&[303], &[306]);
    assert!(text.contains("merged: 2 samples, median 340.0 ms"), "{text}");
    // Bad input: a clear error naming the file, not a traceback.
    let d = tempfile::tempdir().unwrap();
    let run = |d: &std::path::Path| Command::new("python3").arg(script).arg(d).arg("--analyse").output().unwrap();
    let out = run(d.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("trace.txt (made by --run"), "{out:?}");
    std::fs::write(d.path().join("trace.txt"), trace(1, &[], &[])).unwrap();
    std::fs::write(d.path().join("run.json"), "{\"modes\": 3}").unwrap();
    let err = String::from_utf8_lossy(&run(d.path()).stderr).into_owned();
    assert!(err.contains("run.json: no `modes` with `samples_ms`") && !err.contains("Traceback"), "{err}");
    std::fs::write(d.path().join("run.json"), "{\n oops").unwrap();
    let err = String::from_utf8_lossy(&run(d.path()).stderr).into_owned();
    assert!(err.contains("run.json: line 2: not JSON"), "{err}");
    // Without BFQ's merge message no sample counts as merged.
    let text = analyse(&[], &[]);
    assert!(text.contains("merged: 0 samples"), "{text}");
    assert!(text.contains("not merged: 2 samples, median 340.0 ms"), "{text}");
}
