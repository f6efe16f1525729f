//! A bounded property run over the text importers: real lines of every format, garbled
//! (bytes replaced, hostile tokens inserted — numbers at 2^32, 2^63 and 2^64, quotes,
//! brackets, summary headers, `<unfinished ...>` — ranges deleted, lines cut or repeated).
//! Strict import either accepts or refuses with `file:line[:column]: message` (a short message);
//! lenient import yields no error; the records survive statistics and Perfetto export; each
//! case takes well under a second. Never a panic, a hang or an allocation past the input's size.
//! The same for binary blktrace files with bytes overwritten, cut out or truncated: events, or
//! an error at a byte offset.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use forefront_trace::perfetto::PerfettoWriter;
use forefront_trace::stats::{FgSelector, StatsBuilder};
use forefront_trace::{detect_format, InputFormat, TraceError, TraceReader};
use proptest::prelude::*;

const FORMATS: [(InputFormat, &[&str]); 5] = [
    (InputFormat::Blkparse, &["sample.blkparse.txt"]),
    (InputFormat::Strace, &["strace-f-tt-T.txt"]),
    (InputFormat::Mobigen, &["mobigen-facebook-cut.txt"]),
    (InputFormat::Iopro, &["iopro-sample.txt"]),
    (InputFormat::Ftrace, &["ftrace-events.txt", "ftrace-blk.txt"]),
];

const TOKENS: &[&str] = &[
    "18446744073709551616",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775809",
    "4294967296",
    "4294967295",
    "2147479553",
    "-1",
    "0",
    "\"",
    "\\",
    "[",
    "]",
    "(",
    ")",
    "{",
    "+",
    ",",
    ":",
    "=",
    " = ",
    " <unfinished ...>",
    "<... read resumed>",
    "CPU0 (8,0):",
    "Total (8,0):",
    " Reads Queued: 1, 4KiB",
    "Skips: 0 forward",
    "0x",
    "nan",
    "1e999",
    ".",
    "99999999999.999999999",
    "\t",
    "\u{e9}",
    "\u{fffd}",
];

fn lines_of(format: usize) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/traces");
    FORMATS[format]
        .1
        .iter()
        .flat_map(|f| std::fs::read_to_string(dir.join(f)).unwrap().lines().take(400).map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

#[derive(Clone, Debug)]
enum Garble {
    Byte(usize, u8),
    Token(usize, usize),
    Delete(usize, usize),
    Cut(usize),
    Repeat,
}

fn garble() -> impl Strategy<Value = Garble> {
    prop_oneof![
        (any::<usize>(), prop::sample::select(b"0123456789 \t\"[](){}+-,.:=<>xX\\\xff\n".to_vec()))
            .prop_map(|(p, b)| Garble::Byte(p, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Garble::Token(p, t)),
        (any::<usize>(), 1usize..12).prop_map(|(p, n)| Garble::Delete(p, n)),
        any::<usize>().prop_map(Garble::Cut),
        Just(Garble::Repeat),
    ]
}

fn apply(line: &mut Vec<u8>, g: &Garble, out: &mut Vec<Vec<u8>>) {
    let at = |p: usize, len: usize| if len == 0 { 0 } else { p % (len + 1) };
    match g {
        Garble::Byte(p, b) if !line.is_empty() => {
            let i = p % line.len();
            line[i] = *b;
        }
        Garble::Byte(..) => {}
        Garble::Token(p, t) => {
            let i = at(*p, line.len());
            line.splice(i..i, TOKENS[*t].bytes());
        }
        Garble::Delete(p, n) => {
            let i = at(*p, line.len());
            let j = (i + n).min(line.len());
            line.drain(i..j);
        }
        Garble::Cut(p) => {
            let i = at(*p, line.len());
            line.truncate(i);
        }
        Garble::Repeat => out.push(line.clone()),
    }
}

/// `prop:LINE[:COLUMN]: ...`, `prop: at byte N: ...` or `prop: no trace records ...`.
fn names_file_and_line(msg: &str) -> bool {
    let Some(rest) = msg.strip_prefix("prop:") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && rest[digits..].starts_with(':')) || rest.starts_with(" no trace records")
}

/// Imports `text` strictly and leniently; returns whether strict import refused it.
fn check(text: &[u8], format: InputFormat) -> Result<bool, TestCaseError> {
    let mut refused = false;
    for lenient in [false, true] {
        let t = Instant::now();
        let r = TraceReader::from_reader(Path::new("prop"), Box::new(Cursor::new(text.to_vec())), format, lenient);
        let mut stats = StatsBuilder::new(FgSelector::default());
        let mut perfetto = PerfettoWriter::new(Vec::new(), FgSelector::default()).unwrap();
        let mut records = 0usize;
        for item in r {
            match item {
                Ok(rec) => {
                    records += 1;
                    stats.add(&rec);
                    perfetto.add(&rec).unwrap();
                }
                Err(e) => {
                    prop_assert!(!lenient, "lenient import yielded {e}");
                    prop_assert!(matches!(e, TraceError::Parse { .. } | TraceError::Empty { .. }), "{e:?}");
                    let msg = e.to_string();
                    prop_assert!(names_file_and_line(&msg), "{msg}");
                    prop_assert!(msg.len() < 600, "a {}-byte message: {msg}", msg.len());
                    refused = true;
                }
            }
        }
        // No record out of nothing: a line yields at most a few records.
        prop_assert!(records <= 4 * (text.iter().filter(|&&b| b == b'\n').count() + 1));
        let _ = stats.finish(format);
        let _ = perfetto.finish().unwrap();
        prop_assert!(t.elapsed() < Duration::from_secs(1), "{format:?} took {:?}", t.elapsed());
    }
    Ok(refused)
}

/// `cases` random cases (a new seed each run; a failure prints its minimal input).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(cases) }
}

type Case = (usize, Vec<prop::sample::Index>, Vec<(prop::sample::Index, Garble)>);

fn case() -> impl Strategy<Value = Case> {
    (
        0..FORMATS.len(),
        prop::collection::vec(any::<prop::sample::Index>(), 1..24),
        prop::collection::vec((any::<prop::sample::Index>(), garble()), 0..12),
    )
}

#[test]
fn garbled_lines_are_accepted_or_refused_with_file_and_line() {
    let sources: Vec<Vec<String>> = (0..FORMATS.len()).map(lines_of).collect();
    let (refused, accepted) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let mut runner = proptest::test_runner::TestRunner::new(config(512));
    runner
        .run(&case(), |(format, picks, garbles)| {
            let source = &sources[format];
            let mut lines: Vec<Vec<u8>> = picks.iter().map(|i| source[i.index(source.len())].clone().into_bytes()).collect();
            for (i, g) in &garbles {
                let k = i.index(lines.len());
                let mut extra = Vec::new();
                apply(&mut lines[k], g, &mut extra);
                lines.extend(extra);
            }
            let mut text = lines.join(&b'\n');
            text.push(b'\n');
            let r = check(&text, FORMATS[format].0)?;
            let cell = if r { &refused } else { &accepted };
            cell.set(cell.get() + 1);
            // Detection on the same bytes, then that format's importer.
            if let Some(f) = detect_format(&text) {
                if f != InputFormat::Blktrace {
                    check(&text, f)?;
                }
            }
            Ok(())
        })
        .unwrap();
    // Both outcomes occur, so the run exercises the error paths and the accepting ones.
    eprintln!("refused {}, accepted {}", refused.get(), accepted.get());
    assert!(refused.get() > 10 && accepted.get() > 10, "refused {}, accepted {}", refused.get(), accepted.get());
}

/// Binary blktrace: a real two-CPU trace with bytes overwritten, ranges cut out or the file
/// truncated. Import yields events or stops with an error at a byte offset; never a panic, and
/// a record's payload (at most 65,535 bytes by its 16-bit length) bounds what one read allocates.
#[test]
fn garbled_blktrace_files_decode_or_fail_at_a_byte_offset() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/traces");
    let originals =
        [std::fs::read(dir.join("sample.blktrace.0")).unwrap(), std::fs::read(dir.join("sample.blktrace.1")).unwrap()];
    let tmp = tempfile::tempdir().unwrap();
    let (refused, accepted) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    // 0 to 5 edits: unedited files (and edits of fields the decoder does not check) import.
    let strategy = prop::collection::vec((any::<bool>(), any::<prop::sample::Index>(), any::<u8>(), 0usize..3), 0..6);
    let mut runner = proptest::test_runner::TestRunner::new(config(256));
    runner
        .run(&strategy, |edits| {
            let mut files = originals.clone();
            for (second, at, byte, kind) in &edits {
                let f = &mut files[usize::from(*second)];
                if f.is_empty() {
                    continue;
                }
                let i = at.index(f.len());
                match kind {
                    0 => f[i] = *byte,
                    1 => {
                        f.drain(i..(i + usize::from(*byte)).min(f.len()));
                    }
                    _ => f.truncate(i),
                }
            }
            let paths: Vec<PathBuf> = files
                .iter()
                .enumerate()
                .map(|(n, bytes)| {
                    let p = tmp.path().join(format!("g.blktrace.{n}"));
                    std::fs::write(&p, bytes).unwrap();
                    p
                })
                .collect();
            let t = Instant::now();
            let opts = forefront_trace::ReadOptions { format: InputFormat::Blktrace, lenient: false };
            let mut stats = StatsBuilder::new(FgSelector::default());
            let mut failed = false;
            for item in TraceReader::open(&paths, &opts).unwrap() {
                match item {
                    Ok(rec) => stats.add(&rec),
                    Err(e) => {
                        let msg = e.to_string();
                        prop_assert!(matches!(e, TraceError::Binary { .. } | TraceError::Empty { .. }), "{msg}");
                        prop_assert!(msg.contains(": at byte ") || msg.contains("no trace records"), "{msg}");
                        failed = true;
                    }
                }
            }
            let _ = stats.finish(InputFormat::Blktrace);
            prop_assert!(t.elapsed() < Duration::from_secs(1), "took {:?}", t.elapsed());
            let cell = if failed { &refused } else { &accepted };
            cell.set(cell.get() + 1);
            Ok(())
        })
        .unwrap();
    eprintln!("blktrace: refused {}, accepted {}", refused.get(), accepted.get());
    assert!(refused.get() > 5 && accepted.get() > 5, "refused {}, accepted {}", refused.get(), accepted.get());
}
