//! Typed import errors; every variant names the file, and parse errors the line and column.

use std::path::PathBuf;

/// An error while opening or importing a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A text line that does not parse (`line` and `column` are 1-based).
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse { path: PathBuf, line: u64, column: usize, message: String },
    /// A binary blktrace record that does not decode (`offset` in bytes from the file start).
    #[error("{}: at byte {offset}: {message}", path.display())]
    Binary { path: PathBuf, offset: u64, message: String },
    /// A text line longer than [`crate::MAX_LINE_BYTES`] (not a text trace, e.g. `/dev/zero`).
    #[error("{}:{line}: line longer than {limit} bytes (the longest a text trace may have; it starts at byte offset {offset}): not a text trace?", path.display())]
    LineTooLong { path: PathBuf, line: u64, offset: u64, limit: usize },
    /// The file parsed but produced no records.
    #[error("{}: no trace records in file ({format})", path.display())]
    Empty { path: PathBuf, format: &'static str },
    /// `--input-format auto` could not recognise the file.
    #[error("{}:{line}:1: cannot detect the trace format (expected blkparse text, binary blktrace, strace -f -tt -T, MobiGen, IOPro or ftrace/trace-cmd text); pass --input-format", path.display())]
    UnknownFormat { path: PathBuf, line: u64 },
    /// Several files of different formats were given together.
    #[error("{}: format {found} differs from {expected} of the other files", path.display())]
    MixedFormats { path: PathBuf, expected: &'static str, found: &'static str },
    /// `DEV` base name with no `DEV.blktrace.N` file next to it.
    #[error("{}: no such file, and no {}.blktrace.N files either", path.display(), path.display())]
    NoBlktraceFiles { path: PathBuf },
}

impl TraceError {
    /// True for errors about the content of one record (the ones `--lenient` turns into
    /// warnings), false for I/O and setup errors.
    pub fn is_content_error(&self) -> bool {
        matches!(self, TraceError::Parse { .. } | TraceError::Binary { .. } | TraceError::Empty { .. })
    }
}

/// A parse error inside one line, before the driver adds file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    /// 1-based byte column.
    pub column: usize,
    pub message: String,
}

impl LineError {
    pub(crate) fn new(column: usize, message: impl Into<String>) -> LineError {
        LineError { column, message: message.into() }
    }
}
