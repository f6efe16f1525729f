//! Golden tests: every sample under testdata/traces imports to the checked-in statistics
//! (`*.stats.json`, and their `trace stats` table, `*.stats.txt`), and bad input fails with
//! file:line:column.
//! Regenerate the goldens with `FOREFRONT_BLESS=1 cargo test -p forefront-trace --test importers`.

mod common;

use std::path::PathBuf;

use forefront_record::trace::{BlockAction, SchedEvent, TraceRecord};
use forefront_trace::stats::{render_table, FgSelector, StatsBuilder, TraceStats};
use forefront_trace::{read_all, InputFormat, ReadOptions, TraceError, TraceReader};

fn stats_of(paths: &[PathBuf], fg: &[&str]) -> TraceStats {
    let mut r = TraceReader::open(paths, &ReadOptions::default()).unwrap();
    let mut b = StatsBuilder::new(FgSelector::parse(&fg.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
    for rec in &mut r {
        b.add(&rec.unwrap());
    }
    b.finish(r.format())
}

fn golden(name: &str, paths: &[PathBuf], fg: &[&str]) -> TraceStats {
    let s = stats_of(paths, fg);
    let json = serde_json::to_string_pretty(&s).unwrap() + "\n";
    let path = common::testdata(&format!("{name}.stats.json"));
    if std::env::var_os("FOREFRONT_BLESS").is_some() {
        std::fs::write(&path, &json).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (run with FOREFRONT_BLESS=1)", path.display()));
    assert_eq!(json, want, "{name}: stats differ from the golden file");
    let text = render_table(&s, 15);
    let path = common::testdata(&format!("{name}.stats.txt"));
    if std::env::var_os("FOREFRONT_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (run with FOREFRONT_BLESS=1)", path.display()));
    assert_eq!(text, want, "{name}: the stats table differs from the golden file");
    s
}

#[test]
fn facebook_mobigen_trace() {
    let p = PathBuf::from("/work/shared/traces/mobigen-facebook.txt");
    let p = if p.exists() { p } else { common::testdata("../../../shared/traces/mobigen-facebook.txt") };
    if !p.exists() {
        eprintln!("SKIP: the Facebook trace is not at /work/shared/traces");
        return;
    }
    let s = golden("mobigen-facebook", &[p], &["1"]);
    assert_eq!(s.format, "mobigen");
    assert_eq!(s.records, 30_819);
    let sc = s.syscalls.as_ref().unwrap();
    assert_eq!((sc["write"], sc["read"], sc["pwrite"], sc["pread"], sc["fsync"]), (7497, 7453, 6932, 2454, 997));
    assert_eq!(s.fsyncs, 997);
    // Checked independently with awk: sum of read results > 0 plus pread sizes, etc.
    assert_eq!((s.bytes_read, s.bytes_written), (5_084_371, 12_307_016));
    let f = s.seq_fraction.unwrap();
    assert!((0.0..=1.0).contains(&f));
    assert_eq!(s.fg.as_ref().unwrap().processes, 1);
}

#[test]
fn blkparse_sample() {
    let s = golden("sample.blkparse", &[common::testdata("sample.blkparse.txt")], &["fio"]);
    let req = s.requests.as_ref().unwrap();
    assert_eq!((req["R"], req["W"]), (14, 26));
    let a = s.actions.as_ref().unwrap();
    for code in ["A", "B", "C", "D", "F", "G", "I", "M", "P", "Q", "R", "S", "UT", "U", "X"] {
        assert!(a.get(code).copied().unwrap_or(0) > 0, "no {code} events");
    }
    assert!(s.latency["d2c"].count == 40 && s.latency["q2d"].count > 0);
    assert!(s.fg.as_ref().unwrap().bytes_read > 0 && s.bg.as_ref().unwrap().bytes_written > 0);
}

#[test]
fn binary_blktrace_sample_equals_its_blkparse_text_stats() {
    let bin = stats_of(&[common::testdata("sample.blktrace.0"), common::testdata("sample.blktrace.1")], &[]);
    let txt = stats_of(&[common::testdata("sample.blkparse.txt")], &[]);
    assert_eq!(bin.format, "blktrace");
    assert_eq!(
        (bin.requests, bin.bytes_read, bin.bytes_written, bin.latency),
        (txt.requests, txt.bytes_read, txt.bytes_written, txt.latency)
    );
}

#[test]
fn strace_sample() {
    let s = golden("strace-f-tt-T", &[common::testdata("strace-f-tt-T.txt")], &[]);
    let sc = s.syscalls.as_ref().unwrap();
    assert!(sc["openat"] > 10 && sc["read"] > 5 && sc["execve"] == 3, "{sc:?}");
    assert!(s.latency.contains_key("syscall:read"));
    // dd copied /etc/passwd to /tmp/yy: its reads and writes carry the paths.
    let (_, recs) = read_all(&[common::testdata("strace-f-tt-T.txt")], &ReadOptions::default()).unwrap();
    let to_yy = recs
        .iter()
        .filter(|r| matches!(r, TraceRecord::Syscall(c) if c.name == "write" && c.path.as_deref() == Some("/tmp/yy")))
        .count();
    let from_passwd = recs
        .iter()
        .filter(|r| matches!(r, TraceRecord::Syscall(c) if c.name == "read" && c.path.as_deref() == Some("/etc/passwd")))
        .count();
    assert!(to_yy >= 1 && from_passwd >= 2, "{to_yy} {from_passwd}");
    // Every `<unfinished ...>` found its `<... resumed>`: the only calls without a result are
    // the exits and the one the trace shows as `= ? ERESTARTNOHAND`.
    let unresolved: Vec<&str> = recs
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Syscall(c) if c.result.is_none() && !c.name.starts_with("exit") => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unresolved, ["rt_sigsuspend"]);
}

#[test]
fn ftrace_samples() {
    let s = golden("ftrace-events", &[common::testdata("ftrace-events.txt")], &["dd"]);
    assert_eq!(s.format, "ftrace");
    assert!(s.sched.as_ref().unwrap()["switch"] > 0);
    let (_, recs) = read_all(&[common::testdata("ftrace-events.txt")], &ReadOptions::default()).unwrap();
    assert!(recs.iter().any(|r| matches!(r, TraceRecord::Sched(x) if matches!(x.event, SchedEvent::Wakeup { .. }))));
    assert!(recs.iter().any(|r| matches!(r, TraceRecord::Block(b) if b.action == BlockAction::Complete)));
    let s = golden("ftrace-blk", &[common::testdata("ftrace-blk.txt")], &[]);
    let req = s.requests.as_ref().unwrap();
    assert_eq!((req["R"], req["W"]), (1, 2));
    assert_eq!(s.seq_fraction, Some(1.0));
}

#[test]
fn iopro_sample() {
    let s = golden("iopro-sample", &[common::testdata("iopro-sample.txt")], &["2001"]);
    assert_eq!(s.format, "iopro");
    assert_eq!(s.records, 8);
    assert_eq!((s.bytes_read, s.bytes_written), (4096, 8192 + 4096 + 65536));
    assert_eq!(s.layers.as_ref().unwrap()["syscall"], 4);
    assert_eq!(s.seq_fraction, Some(1.0));
}

fn first_error(path: PathBuf, format: InputFormat) -> TraceError {
    let opts = ReadOptions { format, lenient: false };
    match TraceReader::open(&[path], &opts) {
        Err(e) => e,
        Ok(mut r) => r.find_map(Result::err).expect("an error"),
    }
}

#[test]
fn errors_name_file_line_and_column() {
    let e = first_error(common::testdata("blkparse-bad.txt"), InputFormat::Auto);
    let msg = e.to_string();
    assert!(msg.ends_with("blkparse-bad.txt:3:59: sector count: expected an unsigned integer, found `x`"), "{msg}");
    assert!(matches!(e, TraceError::Parse { line: 3, column: 59, .. }));
    let e = first_error(common::testdata("mobigen-bad.txt"), InputFormat::Auto).to_string();
    assert!(e.ends_with("mobigen-bad.txt:2:13: missing field: result (bytes)"), "{e}");
    let e = first_error(common::testdata("empty.txt"), InputFormat::Blkparse).to_string();
    assert!(e.ends_with("empty.txt: no trace records in file (blkparse)"), "{e}");
    let e = first_error(common::testdata("empty.txt"), InputFormat::Auto).to_string();
    assert!(e.contains("cannot detect the trace format"), "{e}");
    let e = first_error(common::testdata("no-such-file"), InputFormat::Auto).to_string();
    assert!(e.contains("no-such-file: no such file, and no"), "{e}");
    let e = first_error(common::testdata("iopro-sample.txt"), InputFormat::Blktrace).to_string();
    assert!(e.contains("iopro-sample.txt: at byte 0: bad magic"), "{e}");
}

#[test]
fn lenient_counts_and_continues() {
    let opts = ReadOptions { format: InputFormat::Auto, lenient: true };
    let mut r = TraceReader::open(&[common::testdata("blkparse-bad.txt")], &opts).unwrap();
    let n = r.by_ref().try_fold(0u64, |n, x| x.map(|_| n + 1)).unwrap();
    assert_eq!(n, 3);
    assert_eq!(r.warnings().count, 1);
    assert!(r.warnings().first[0].to_string().contains(":3:59:"));
}

#[test]
fn mixed_formats_are_refused() {
    let e =
        TraceReader::open(&[common::testdata("iopro-sample.txt"), common::testdata("ftrace-blk.txt")], &ReadOptions::default())
            .err()
            .unwrap();
    assert!(e.to_string().contains("format ftrace differs from iopro"), "{e}");
}

#[test]
fn strace_names_processes_by_what_they_exec_and_children_inherit_the_name() {
    // 10314 execs sh; 10315 is its fork (sh until it execs); 10316 execs dd.
    let s = stats_of(&[common::testdata("strace-f-tt-T.txt")], &["dd"]);
    let comm = |pid: u32| s.processes[&pid].comm.clone();
    assert_eq!(comm(10314).as_deref(), Some("sh"));
    assert_eq!(comm(10316).as_deref(), Some("dd"));
    assert!(s.processes[&10316].fg && !s.processes[&10314].fg, "--fg dd selects dd by name");
}
