//! The hostile traces of `testdata/bad/traces/` through the importers: each one that
//! `expected.toml` marks `stats` is refused with its error (file and line, column or byte
//! offset) in under a second; each marked `replay` imports (its error is the replay's). Inputs
//! too large to keep in the repository are made here.

use std::collections::BTreeSet;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use forefront_trace::{read_all, InputFormat, ReadOptions, TraceReader, MAX_LINE_BYTES};

const BOUND: Duration = Duration::from_secs(1);

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/bad/traces")
}

struct Case {
    file: String,
    command: String,
    format: InputFormat,
    error: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(corpus().join("expected.toml")).unwrap();
    let v: toml::Value = toml::from_str(&text).unwrap();
    v["case"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c.get(k).and_then(|x| x.as_str()).map(str::to_owned);
            Case {
                file: s("file").unwrap(),
                command: s("command").unwrap(),
                format: s("format").map_or(InputFormat::Auto, |f| InputFormat::from_name(&f).unwrap()),
                error: s("error").unwrap(),
            }
        })
        .collect()
}

#[test]
fn every_file_of_the_corpus_has_its_expected_error() {
    let listed: BTreeSet<String> = cases().into_iter().map(|c| c.file).collect();
    let present: BTreeSet<String> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "expected.toml" && n != "README.md")
        .collect();
    assert_eq!(listed, present, "expected.toml and the files of testdata/bad/traces differ");
}

#[test]
fn importers_refuse_each_hostile_trace_with_its_error() {
    let cases = cases();
    assert!(cases.len() >= 20, "{} cases", cases.len());
    for c in cases {
        let path = corpus().join(&c.file);
        let opts = ReadOptions { format: c.format, lenient: false };
        let t = Instant::now();
        let got = read_all(std::slice::from_ref(&path), &opts);
        let took = t.elapsed();
        assert!(took < BOUND, "{}: {took:?}", c.file);
        match (c.command.as_str(), got) {
            ("stats", Err(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(&c.error), "{}:\n  got:  {msg}\n  want: {}", c.file, c.error);
            }
            ("stats", Ok((_, recs))) => panic!("{}: imported {} records, expected: {}", c.file, recs.len(), c.error),
            ("replay", Ok((_, recs))) => assert!(!recs.is_empty(), "{}", c.file),
            ("replay", Err(e)) => panic!("{}: the importer refused what only the replay should: {e}", c.file),
            (other, _) => panic!("{}: unknown command {other}", c.file),
        }
    }
}

fn first_error(path: &Path, reader: Box<dyn std::io::BufRead>, format: InputFormat, lenient: bool) -> String {
    let t = Instant::now();
    let mut r = TraceReader::from_reader(path, reader, format, lenient);
    let e = r.find_map(Result::err).expect("an error");
    assert!(t.elapsed() < BOUND, "{:?}", t.elapsed());
    e.to_string()
}

#[test]
fn an_endless_line_ends_at_the_limit_in_every_text_format() {
    for format in [InputFormat::Blkparse, InputFormat::Strace, InputFormat::Mobigen, InputFormat::Iopro, InputFormat::Ftrace] {
        for lenient in [false, true] {
            // /dev/zero, and a line of spaces: no newline ever comes.
            for byte in [0u8, b' '] {
                let endless = Box::new(BufReader::new(std::io::repeat(byte)));
                let e = first_error(Path::new("/dev/zero"), endless, format, lenient);
                assert!(e.starts_with("/dev/zero:1: line longer than 1048576 bytes"), "{format:?}: {e}");
            }
        }
    }
}

#[test]
fn a_20_mb_process_name_is_refused_by_the_line_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bigname.txt");
    let mut text = b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n".to_vec();
    text.extend_from_slice(b"  8,0    3        2     0.000000100   697  Q   W 223498 + 8 [");
    text.resize(text.len() + 20_000_000, b'x');
    text.extend_from_slice(b"]\n");
    std::fs::write(&path, &text).unwrap();
    let t = Instant::now();
    let e = read_all(std::slice::from_ref(&path), &ReadOptions::default()).unwrap_err().to_string();
    assert!(t.elapsed() < BOUND, "{:?}", t.elapsed());
    assert!(e.ends_with("bigname.txt:2: line longer than 1048576 bytes (the longest a text trace may have; it starts at byte offset 72): not a text trace?"), "{e}");
    // A name just under the limit imports.
    let mut ok = b"  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [".to_vec();
    ok.resize(MAX_LINE_BYTES - 1, b'x');
    ok.extend_from_slice(b"]\n");
    std::fs::write(&path, &ok).unwrap();
    let (_, recs) = read_all(std::slice::from_ref(&path), &ReadOptions::default()).unwrap();
    assert_eq!(recs.len(), 1);
}
