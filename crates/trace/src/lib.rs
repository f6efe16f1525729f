//! Streaming, strict importers for real I/O and syscall traces, their statistics, live capture
//! of block I/O, and Perfetto export.
//!
//! Every importer yields the shared records of [`forefront_record::trace`] one at a time from a
//! `BufRead` (or, for binary blktrace, from per-CPU files merged by time), so memory stays
//! constant however large the file. Supported formats ([`InputFormat`]): blkparse text, binary
//! blktrace, strace (`-f -tt -T`), MobiGen, IOPro and ftrace / `trace-cmd report` text;
//! [`InputFormat::Auto`] detects the format from the content.
//!
//! Import is strict: a line that does not parse, a missing field, or a file that yields no
//! records is a [`TraceError`] naming file, line and column. With [`ReadOptions::lenient`] those
//! become counted warnings ([`TraceReader::warnings`]). Import is bounded: a line longer than
//! [`MAX_LINE_BYTES`] ends it (also when lenient), and sizes, sectors, offsets and times past
//! what the kernel produces (a request over 4 GiB, a sector past 2^64 bytes, a read over
//! `MAX_RW_COUNT`, an offset past 2^63, a time past 2^64 ns) are errors at their field.
//!
//! ```no_run
//! use forefront_trace::{InputFormat, ReadOptions, TraceReader};
//! use forefront_trace::stats::{StatsBuilder, FgSelector};
//!
//! let opts = ReadOptions { format: InputFormat::Auto, lenient: false };
//! let mut reader = TraceReader::open(&["trace.txt".into()], &opts)?;
//! let mut stats = StatsBuilder::new(FgSelector::default());
//! for record in &mut reader {
//!     stats.add(&record?);
//! }
//! let stats = stats.finish(reader.format());
//! println!("{} records, {} bytes written", stats.records, stats.bytes_written);
//! # Ok::<(), forefront_trace::TraceError>(())
//! ```
//!
//! Main types: [`TraceReader`] (open + iterate), [`stats::TraceStats`] (`forefront trace
//! stats`), [`perfetto`] (`forefront trace convert`), [`capture`] (`forefront trace capture`),
//! [`blkparse::write_event`] and [`blktrace::encode`] (exporters used by capture and tests).

pub mod blkparse;
pub mod blktrace;
pub mod capture;
mod detect;
mod error;
pub mod ftrace;
pub mod iopro;
pub mod mobigen;
pub mod perfetto;
pub mod stats;
pub mod strace;
#[doc(hidden)]
pub mod synth;
mod text;

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use error::LineError;
pub use error::TraceError;
use forefront_record::trace::TraceRecord;

/// The trace formats the importers understand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum InputFormat {
    /// Detect from the file's content.
    #[default]
    Auto,
    /// blkparse default text output.
    Blkparse,
    /// Binary `struct blk_io_trace` records (`DEV.blktrace.N`).
    Blktrace,
    /// `strace -f -tt -T` (also `-ttt`, with or without `-f`).
    Strace,
    /// MobiGen / AndroStep: `tid time_us syscall args...`.
    Mobigen,
    /// IOPro / AIOPro 16-field records.
    Iopro,
    /// ftrace `trace` / `trace_pipe` text or `trace-cmd report` output (including the `blk`
    /// tracer's lines).
    Ftrace,
}

impl InputFormat {
    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Blkparse => "blkparse",
            InputFormat::Blktrace => "blktrace",
            InputFormat::Strace => "strace",
            InputFormat::Mobigen => "mobigen",
            InputFormat::Iopro => "iopro",
            InputFormat::Ftrace => "ftrace",
        }
    }

    /// Parses a format name (as [`InputFormat::name`] prints it).
    pub fn from_name(s: &str) -> Option<InputFormat> {
        [
            InputFormat::Auto,
            InputFormat::Blkparse,
            InputFormat::Blktrace,
            InputFormat::Strace,
            InputFormat::Mobigen,
            InputFormat::Iopro,
            InputFormat::Ftrace,
        ]
        .into_iter()
        .find(|f| f.name() == s)
    }
}

/// How to read a trace.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    pub format: InputFormat,
    /// Turn unparsable lines and empty files into counted warnings instead of errors.
    pub lenient: bool,
}

/// A per-line parser of one text format. `out` receives zero or more records per line.
pub(crate) trait LineParser {
    fn parse_line(&mut self, line: &str, out: &mut VecDeque<TraceRecord>) -> Result<(), LineError>;
    /// Called at end of file (e.g. strace calls still unfinished).
    fn finish(&mut self, _out: &mut VecDeque<TraceRecord>) {}
}

/// Warnings collected in lenient mode: all counted, the first [`Warnings::KEPT`] kept.
#[derive(Debug, Default)]
pub struct Warnings {
    pub count: u64,
    pub first: Vec<TraceError>,
}

impl Warnings {
    pub const KEPT: usize = 20;

    fn push(&mut self, e: TraceError) {
        self.count += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(e);
        }
    }
}

/// Opens one or more trace files and yields their records.
///
/// Text files are read one after the other; binary blktrace files (several `DEV.blktrace.N`, or
/// the base name `DEV`) are merged by time as blkparse does. All files must be of one format.
pub struct TraceReader {
    format: InputFormat,
    sources: VecDeque<Source>,
    lenient: bool,
    warnings: Warnings,
    failed: bool,
}

enum Source {
    Text(Box<TextSource>),
    Binary(Box<blktrace::MergedReader>),
}

struct TextSource {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    parser: Box<dyn LineParser>,
    buf: Vec<u8>,
    line: u64,
    /// Byte offset of the next line's first byte.
    offset: u64,
    pending: VecDeque<TraceRecord>,
    records: u64,
    done: bool,
    format: InputFormat,
}

impl TraceReader {
    /// Opens `paths` (one trace, possibly split over several files).
    pub fn open(paths: &[PathBuf], opts: &ReadOptions) -> Result<TraceReader, TraceError> {
        let mut format = None;
        let mut text = Vec::new();
        let mut binary = Vec::new();
        for path in paths {
            let (f, files) = match detect::resolve(path, opts.format)? {
                detect::Resolved::Text(f, reader) => {
                    text.push((path.clone(), f, reader));
                    (f, 0)
                }
                detect::Resolved::Binary(files) => {
                    let n = files.len();
                    binary.extend(files);
                    (InputFormat::Blktrace, n)
                }
            };
            let _ = files;
            match format {
                None => format = Some(f),
                Some(prev) if prev != f => {
                    return Err(TraceError::MixedFormats { path: path.clone(), expected: prev.name(), found: f.name() })
                }
                _ => {}
            }
        }
        let format = format.ok_or_else(|| TraceError::Io {
            path: PathBuf::from("-"),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no trace files given"),
        })?;
        let mut sources = VecDeque::new();
        for (path, f, reader) in text {
            sources.push_back(Source::Text(Box::new(TextSource {
                path,
                reader,
                parser: new_parser(f),
                buf: Vec::with_capacity(256),
                line: 0,
                offset: 0,
                pending: VecDeque::new(),
                records: 0,
                done: false,
                format: f,
            })));
        }
        if !binary.is_empty() {
            sources.push_back(Source::Binary(Box::new(blktrace::MergedReader::open(&binary)?)));
        }
        Ok(TraceReader { format, sources, lenient: opts.lenient, warnings: Warnings::default(), failed: false })
    }

    /// Reads a text trace of a known format from any reader (`path` only names it in errors).
    pub fn from_reader(path: &Path, reader: Box<dyn BufRead>, format: InputFormat, lenient: bool) -> TraceReader {
        assert!(format != InputFormat::Auto && format != InputFormat::Blktrace, "from_reader takes a text format");
        let mut sources = VecDeque::new();
        sources.push_back(Source::Text(Box::new(TextSource {
            path: path.to_path_buf(),
            reader,
            parser: new_parser(format),
            buf: Vec::new(),
            line: 0,
            offset: 0,
            pending: VecDeque::new(),
            records: 0,
            done: false,
            format,
        })));
        TraceReader { format, sources, lenient, warnings: Warnings::default(), failed: false }
    }

    /// The (detected) format of the trace.
    pub fn format(&self) -> InputFormat {
        self.format
    }

    /// Warnings so far (lenient mode only; strict mode returns errors instead).
    pub fn warnings(&self) -> &Warnings {
        &self.warnings
    }
}

pub(crate) fn new_parser(f: InputFormat) -> Box<dyn LineParser> {
    match f {
        InputFormat::Blkparse => Box::new(blkparse::BlkparseParser::default()),
        InputFormat::Strace => Box::new(strace::StraceParser::default()),
        InputFormat::Mobigen => Box::new(mobigen::MobigenParser::default()),
        InputFormat::Iopro => Box::new(iopro::IoproParser),
        InputFormat::Ftrace => Box::new(ftrace::FtraceParser::default()),
        InputFormat::Auto | InputFormat::Blktrace => unreachable!("not a line format"),
    }
}

impl TextSource {
    fn next_record(&mut self, lenient: bool, warnings: &mut Warnings) -> Option<Result<TraceRecord, TraceError>> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                self.records += 1;
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            self.buf.clear();
            match read_line_bounded(&mut *self.reader, &mut self.buf, MAX_LINE_BYTES) {
                Err(source) => {
                    self.done = true;
                    return Some(Err(TraceError::Io { path: self.path.clone(), source }));
                }
                Ok(LineRead::Eof) => {
                    self.done = true;
                    self.parser.finish(&mut self.pending);
                    if self.pending.is_empty() && self.records == 0 {
                        let e = TraceError::Empty { path: self.path.clone(), format: self.format.name() };
                        if lenient {
                            warnings.push(e);
                            return None;
                        }
                        return Some(Err(e));
                    }
                    continue;
                }
                Ok(LineRead::TooLong) => {
                    // Fatal even when lenient: skipping to the next newline could read forever
                    // (`/dev/zero`), and a text trace has no lines this long.
                    self.done = true;
                    return Some(Err(TraceError::LineTooLong {
                        path: self.path.clone(),
                        line: self.line + 1,
                        offset: self.offset,
                        limit: MAX_LINE_BYTES,
                    }));
                }
                Ok(LineRead::Line) => {}
            }
            self.line += 1;
            let line_offset = self.offset;
            self.offset += self.buf.len() as u64;
            let mut bytes = &self.buf[..];
            if bytes.last() == Some(&b'\n') {
                bytes = &bytes[..bytes.len() - 1];
            }
            if bytes.last() == Some(&b'\r') {
                bytes = &bytes[..bytes.len() - 1];
            }
            let result = match std::str::from_utf8(bytes) {
                Ok(line) => self.parser.parse_line(line, &mut self.pending),
                Err(e) => Err(LineError::new(
                    e.valid_up_to() + 1,
                    format!("invalid UTF-8 at byte offset {} of the file", line_offset + e.valid_up_to() as u64),
                )),
            };
            if let Err(le) = result {
                let e = TraceError::Parse { path: self.path.clone(), line: self.line, column: le.column, message: le.message };
                if lenient {
                    warnings.push(e);
                    continue;
                }
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            let src = self.sources.front_mut()?;
            let item = match src {
                Source::Text(t) => t.next_record(self.lenient, &mut self.warnings),
                Source::Binary(b) => b.next_record(self.lenient, &mut self.warnings),
            };
            match item {
                None => {
                    self.sources.pop_front();
                }
                Some(Err(e)) => {
                    self.failed = true;
                    return Some(Err(e));
                }
                Some(ok) => return Some(ok),
            }
        }
    }
}

/// The longest line a text importer accepts, in bytes (without its line end). Real trace lines
/// are at most a few KiB (a strace line with a long string argument); a longer one means the
/// file is not a text trace (`/dev/zero`, a binary file) and reading on would only grow memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

enum LineRead {
    Eof,
    /// A line (with its `\n`, unless it is the last line of a file without one) is in the buffer.
    Line,
    /// More than the limit before a `\n`; the buffer holds the part read so far.
    TooLong,
}

/// `read_until(b'\n')` with a bound: at most `max` bytes before the `\n` (a `\r` before it
/// counts too). Memory stays bounded whatever the input.
fn read_line_bounded(r: &mut dyn BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<LineRead> {
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(if buf.is_empty() { LineRead::Eof } else { LineRead::Line });
        }
        let (take, found) = match memchr::memchr(b'\n', avail) {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        let content = buf.len() + take - usize::from(found);
        if content > max {
            return Ok(LineRead::TooLong);
        }
        buf.extend_from_slice(&avail[..take]);
        r.consume(take);
        if found {
            return Ok(LineRead::Line);
        }
    }
}

/// Opens a file for reading with a large buffer.
pub(crate) fn open_file(path: &Path) -> Result<BufReader<File>, TraceError> {
    let f = File::open(path).map_err(|source| TraceError::Io { path: path.to_path_buf(), source })?;
    Ok(BufReader::with_capacity(1 << 16, f))
}

/// Reads everything into records (convenience for tests and small files).
pub fn read_all(paths: &[PathBuf], opts: &ReadOptions) -> Result<(InputFormat, Vec<TraceRecord>), TraceError> {
    let mut r = TraceReader::open(paths, opts)?;
    let mut v = Vec::new();
    for rec in &mut r {
        v.push(rec?);
    }
    Ok((r.format(), v))
}

/// Detects a trace's format from its first bytes (what `--input-format auto` does for one
/// file). `None` if no importer recognises it.
pub fn detect_format(head: &[u8]) -> Option<InputFormat> {
    if blktrace::has_magic(head) {
        return Some(InputFormat::Blktrace);
    }
    detect::detect_text(head).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_line_is_refused_at_the_limit_not_read_on() {
        // `/dev/zero` as a MobiGen trace: one line that never ends.
        let zero = Box::new(BufReader::new(std::io::repeat(0)));
        let mut r = TraceReader::from_reader(Path::new("/dev/zero"), zero, InputFormat::Mobigen, true);
        let e = r.next().expect("an item").expect_err("an error");
        let msg = e.to_string();
        assert!(msg.starts_with("/dev/zero:1: line longer than 1048576 bytes"), "{msg}");
        assert!(r.next().is_none());
        // A line of exactly the limit is read; one byte more is refused, at its own line.
        let mut text = b"1 1 close 3 0\n".to_vec();
        text.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES));
        text.extend_from_slice(b"\n1 2 close 3 0\n");
        text.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES + 1));
        text.push(b'\n');
        let mut r = TraceReader::from_reader(Path::new("t"), Box::new(std::io::Cursor::new(text)), InputFormat::Mobigen, false);
        assert!(r.next().unwrap().is_ok());
        assert!(r.next().unwrap().is_ok());
        let e = r.next().unwrap().unwrap_err().to_string();
        assert!(e.starts_with("t:4: line longer than"), "{e}");
        assert!(e.contains(&format!("byte offset {}", 14 + MAX_LINE_BYTES + 1 + 14)), "{e}");
    }

    #[test]
    fn invalid_utf8_names_line_and_byte_offset() {
        let text: &'static [u8] = b"1 1 close 3 0\n1 2 close \xff 0\n";
        let mut r = TraceReader::from_reader(Path::new("t"), Box::new(text), InputFormat::Mobigen, false);
        assert!(r.next().unwrap().is_ok());
        let e = r.next().unwrap().unwrap_err().to_string();
        assert_eq!(e, "t:2:11: invalid UTF-8 at byte offset 24 of the file");
        assert_eq!(text[24], 0xff);
    }
}
