//! Format detection (`--input-format auto`) and resolution of blktrace base names.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::{blkparse, blktrace, ftrace, iopro, mobigen, open_file, strace, InputFormat, TraceError};

pub(crate) enum Resolved {
    Text(InputFormat, Box<dyn BufRead>),
    Binary(Vec<PathBuf>),
}

/// Opens `path` as a trace of `format` (detecting it if `Auto`). A path that does not exist but
/// has `path.blktrace.N` siblings is a blktrace base name.
pub(crate) fn resolve(path: &Path, format: InputFormat) -> Result<Resolved, TraceError> {
    if !path.exists() && matches!(format, InputFormat::Auto | InputFormat::Blktrace) {
        let files = blktrace::per_cpu_files(path)?;
        if files.is_empty() {
            return Err(TraceError::NoBlktraceFiles { path: path.to_path_buf() });
        }
        return Ok(Resolved::Binary(files));
    }
    let mut reader = open_file(path)?;
    if format == InputFormat::Blktrace {
        return Ok(Resolved::Binary(vec![path.to_path_buf()]));
    }
    if format != InputFormat::Auto {
        return Ok(Resolved::Text(format, Box::new(reader)));
    }
    let head = reader.fill_buf().map_err(|source| TraceError::Io { path: path.to_path_buf(), source })?;
    if blktrace::has_magic(head) {
        return Ok(Resolved::Binary(vec![path.to_path_buf()]));
    }
    let detected = detect_text(head).map_err(|line| TraceError::UnknownFormat { path: path.to_path_buf(), line })?;
    Ok(Resolved::Text(detected, Box::new(reader)))
}

/// Detects the format of a text trace from its first bytes; `Err(line)` names the first line
/// that was not recognised.
pub(crate) fn detect_text(head: &[u8]) -> Result<InputFormat, u64> {
    // Drop a possibly cut last line.
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) if head.len() == (1 << 16) => &head[..i],
        _ => head,
    };
    let text = String::from_utf8_lossy(complete);
    let mut first_content = None;
    for (i, line) in text.lines().enumerate().take(200) {
        let n = i as u64 + 1;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with("# tracer:") || t.starts_with("cpus=") || t.starts_with("version = ") {
            return Ok(InputFormat::Ftrace);
        }
        if t.starts_with('#') {
            continue;
        }
        first_content.get_or_insert(n);
        if blkparse::looks_like(line) {
            return Ok(InputFormat::Blkparse);
        }
        if ftrace::looks_like(line) {
            return Ok(InputFormat::Ftrace);
        }
        if iopro::looks_like(line) {
            return Ok(InputFormat::Iopro);
        }
        if strace::looks_like(line) {
            return Ok(InputFormat::Strace);
        }
        if mobigen::looks_like(line) {
            return Ok(InputFormat::Mobigen);
        }
        // Only the first few content lines decide; later ones could be anything.
        if n > first_content.unwrap_or(n) + 5 {
            break;
        }
    }
    Err(first_content.unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format() {
        let cases: [(&str, InputFormat); 7] = [
            ("  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n", InputFormat::Blkparse),
            ("1 1378 open /data/data O_WRONLY|O_CREAT 43\n", InputFormat::Mobigen),
            ("1234  12:00:00.000001 read(3, \"\", 10) = 0 <0.000010>\n", InputFormat::Strace),
            ("12:00:00.000001 read(3, \"\", 10) = 0 <0.000010>\n", InputFormat::Strace),
            ("1 2 3 1000 10 11 4 0 1 0 3 0 4096 123 456 /data/x\n", InputFormat::Iopro),
            ("  bash-123 [001] d..1. 12.000001: sched_wakeup: comm=a pid=1 prio=120 target_cpu=001\n", InputFormat::Ftrace),
            ("# tracer: blk\n", InputFormat::Ftrace),
        ];
        for (text, want) in cases {
            assert_eq!(detect_text(text.as_bytes()), Ok(want), "{text}");
        }
        assert_eq!(detect_text(b"\nhello world\n"), Err(2));
    }
}
