//! Binary blktrace files built from the documented `struct blk_io_trace` layout import with
//! the same events `blkparse` prints for them.

mod common;

use std::process::Command;

use forefront_record::trace::TraceRecord;
use forefront_trace::{read_all, InputFormat, ReadOptions};

/// The text form of a block record (what a blkparse line carries).
fn text_view(r: &TraceRecord) -> TraceRecord {
    match r {
        TraceRecord::Block(b) => TraceRecord::Block(forefront_trace::blkparse::text_view(b)),
        other => other.clone(),
    }
}

fn blkparse_available() -> bool {
    Command::new("blkparse").arg("-V").output().is_ok_and(|o| o.status.success())
}

fn ours_as_text(paths: &[std::path::PathBuf]) -> (Vec<TraceRecord>, String) {
    let (fmt, recs) = read_all(paths, &ReadOptions::default()).unwrap();
    assert_eq!(fmt, InputFormat::Blktrace);
    let mut text = Vec::new();
    for r in &recs {
        let TraceRecord::Block(b) = r else { panic!("not a block event: {r:?}") };
        forefront_trace::blkparse::write_event(&mut text, b).unwrap();
    }
    (recs, String::from_utf8(text).unwrap())
}

#[test]
fn golden_binary_matches_checked_in_blkparse_output() {
    // testdata/traces/sample.blktrace.{0,1} and sample.blkparse.txt were produced by
    // common::sample_per_cpu() and `blkparse -i sample -o sample.blkparse.txt` (blkparse 1.3.0).
    let bin = vec![common::testdata("sample.blktrace.0"), common::testdata("sample.blktrace.1")];
    let (ours, _) = ours_as_text(&bin);
    let (fmt, theirs) = read_all(&[common::testdata("sample.blkparse.txt")], &ReadOptions::default()).unwrap();
    assert_eq!(fmt, InputFormat::Blkparse);
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(&text_view(a), b);
    }
    // The base name `sample` finds both per-CPU files.
    let (_, by_base) = read_all(&[common::testdata("sample")], &ReadOptions::default()).unwrap();
    assert_eq!(by_base, ours);
}

#[test]
fn blkparse_prints_what_we_import_in_both_byte_orders() {
    if !blkparse_available() {
        eprintln!("SKIP: blkparse not installed (apt-get install -y blktrace)");
        return;
    }
    let cpus = common::sample_per_cpu();
    for big_endian in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let paths = common::write_blktrace(dir.path(), "sdx", &cpus, big_endian);
        let out = Command::new("blkparse").args(["-q", "-i", "sdx"]).current_dir(dir.path()).output().expect("running blkparse");
        assert!(out.status.success(), "blkparse failed: {}", String::from_utf8_lossy(&out.stderr));
        let theirs = String::from_utf8(out.stdout).unwrap();
        // blkparse's own lines (before its summary), byte for byte.
        let theirs_events: String = theirs
            .lines()
            .filter(|l| !l.starts_with("Input file "))
            .take_while(|l| !l.starts_with("CPU") && !l.is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        let (ours, ours_text) = ours_as_text(&paths);
        assert!(ours.len() > 300, "{}", ours.len());
        assert_eq!(ours_text, theirs_events, "big_endian={big_endian}");
        // And our text importer reads blkparse's whole output (summary included) back to the
        // same events.
        let p = dir.path().join("out.txt");
        std::fs::write(&p, &theirs).unwrap();
        let (_, back) = read_all(&[p], &ReadOptions::default()).unwrap();
        assert_eq!(back, ours.iter().map(text_view).collect::<Vec<_>>());
    }
}

/// Regenerates the golden files: `cargo test -p forefront-trace --test blktrace_vs_blkparse
/// -- --ignored regenerate` (needs blkparse).
#[test]
#[ignore]
fn regenerate_golden_files() {
    let dir = common::testdata("");
    common::write_blktrace(&dir, "sample", &common::sample_per_cpu(), false);
    let out = Command::new("blkparse").args(["-i", "sample", "-o", "sample.blkparse.txt"]).current_dir(&dir).output().unwrap();
    assert!(out.status.success());
}

#[test]
fn blkparse_stdout_with_its_summary_imports_whole() {
    if !blkparse_available() {
        eprintln!("SKIP: blkparse not installed (apt-get install -y blktrace)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::write_blktrace(dir.path(), "sdx", &common::sample_per_cpu(), false);
    let (_, binary) = read_all(&[dir.path().join("sdx")], &ReadOptions::default()).unwrap();
    // Default output, per-process statistics (-s) and elapsed times (-t), on stdout: events,
    // then the summary, then blkparse's `Input file ... added` notes.
    for opts in [&[][..], &["-s"][..], &["-s", "-t"][..]] {
        let out = Command::new("blkparse").current_dir(dir.path()).args(["-i", "sdx"]).args(opts).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = dir.path().join("out.txt");
        std::fs::write(&text, &out.stdout).unwrap();
        let (fmt, recs) =
            read_all(std::slice::from_ref(&text), &ReadOptions::default()).unwrap_or_else(|e| panic!("blkparse {opts:?}: {e}"));
        assert_eq!(fmt, InputFormat::Blkparse);
        assert_eq!(recs.len(), binary.len(), "blkparse {opts:?}");
        // A second blkparse output appended after the first one's summary is refused.
        let mut twice = out.stdout.clone();
        twice.extend_from_slice(&out.stdout);
        std::fs::write(&text, &twice).unwrap();
        let e = read_all(std::slice::from_ref(&text), &ReadOptions::default()).unwrap_err().to_string();
        assert!(e.contains("an event line (a second blkparse output appended?)"), "{e}");
    }
}
