//! MobiGen (AndroStep / Mobibench) syscall traces: `tid time_us syscall args...`.
//!
//! Argument layouts (as in the public Facebook trace): `open PATH FLAGS FD`, `read FD RESULT`,
//! `write FD RESULT` (bytes transferred or -1), `pread FD OFFSET SIZE`, `pwrite FD OFFSET SIZE`, `lseek FD OFFSET WHENCE`,
//! `close|fsync|fdatasync|fstat64 FD RESULT`, `stat64|access|unlink "PATH" RESULT`. Other
//! syscall names are kept with their name only. Reads and writes without an explicit offset get
//! the descriptor's tracked offset (open → 0, advanced by each read/write).

use std::collections::{HashMap, VecDeque};

use forefront_record::trace::{SyscallRecord, TraceRecord};

use crate::error::LineError;
use crate::text::{check_rw, parse_u64, shown, Field, Fields};
use crate::LineParser;

#[derive(Default)]
pub struct MobigenParser {
    files: HashMap<i32, (Option<String>, u64)>,
}

pub(crate) fn looks_like(line: &str) -> bool {
    let mut f = Fields::new(line);
    let (Some(a), Some(b), Some(c)) = (f.next_field(), f.next_field(), f.next_field()) else {
        return false;
    };
    parse_u64(a.text).is_some()
        && parse_u64(b.text).is_some()
        && c.text.bytes().all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == b'_')
        && c.text.as_bytes()[0].is_ascii_lowercase()
}

/// A path argument: `"quoted with spaces"` or a bare word.
fn path_arg<'a>(f: &mut Fields<'a>) -> Result<Field<'a>, LineError> {
    let rest = f.rest();
    if let Some(q) = rest.text.strip_prefix('"') {
        let end = q.find('"').ok_or_else(|| rest.err("unterminated quoted path"))?;
        *f = Fields::at(f.line(), rest.column - 1 + end + 2);
        Ok(Field { text: &q[..end], column: rest.column + 1 })
    } else {
        f.expect("path")
    }
}

impl LineParser for MobigenParser {
    fn parse_line(&mut self, line: &str, out: &mut VecDeque<TraceRecord>) -> Result<(), LineError> {
        if line.trim().is_empty() {
            return Ok(());
        }
        let mut f = Fields::new(line);
        let tid = f.expect("tid")?.u32("tid")?;
        let t = f.expect("time (us)")?;
        let time_ns = t.u64("time (us)")?.checked_mul(1000).ok_or_else(|| {
            t.err(format!(
                "time (us) `{}` is out of range (at most {} us: times are 64-bit nanoseconds)",
                shown(t.text),
                u64::MAX / 1000
            ))
        })?;
        let name = f.expect("syscall")?;
        if !name.text.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            return Err(name.err(format!("bad syscall name `{}`", shown(name.text))));
        }
        let mut r = SyscallRecord { time_ns, tid, name: name.text.to_string(), ..Default::default() };
        match name.text {
            "open" | "open64" | "creat" => {
                let p = path_arg(&mut f)?;
                let _flags = f.expect("flags")?;
                let fd = f.expect("fd")?.i32("fd")?;
                r.path = Some(p.text.to_string());
                r.result = Some(fd as i64);
                if fd >= 0 {
                    r.fd = Some(fd);
                    self.files.insert(fd, (r.path.clone(), 0));
                }
            }
            "read" | "write" => {
                // The last field is the call's result: bytes transferred, or -1.
                let fd = f.expect("fd")?.i32("fd")?;
                let rf = f.expect("result (bytes)")?;
                let result = rf.i64("result (bytes)")?;
                r.fd = Some(fd);
                r.result = Some(result);
                let done = result.max(0) as u64;
                r.size = (result >= 0).then_some(done);
                let entry = self.files.entry(fd).or_insert((None, 0));
                check_rw(entry.1, done).map_err(|m| rf.err(format!("{m} (the descriptor's offset is {})", entry.1)))?;
                r.path = entry.0.clone();
                r.offset = Some(entry.1);
                entry.1 = entry.1.saturating_add(done);
            }
            "pread" | "pwrite" | "pread64" | "pwrite64" => {
                let fd = f.expect("fd")?.i32("fd")?;
                let off = f.expect("offset")?.u64("offset")?;
                let sf = f.expect("size")?;
                let size = sf.u64("size")?;
                check_rw(off, size).map_err(|m| sf.err(m))?;
                r.fd = Some(fd);
                r.offset = Some(off);
                r.size = Some(size);
                r.path = self.files.get(&fd).and_then(|e| e.0.clone());
            }
            "lseek" | "llseek" | "_llseek" => {
                let fd = f.expect("fd")?.i32("fd")?;
                let off = f.expect("offset")?.i64("offset")?;
                let whence = f.next_field();
                r.fd = Some(fd);
                let entry = self.files.entry(fd).or_insert((None, 0));
                r.path = entry.0.clone();
                match whence.map(|w| w.text) {
                    None | Some("0") | Some("SEEK_SET") => entry.1 = off.max(0) as u64,
                    Some("1") | Some("SEEK_CUR") => entry.1 = entry.1.saturating_add_signed(off),
                    _ => {}
                }
                r.offset = Some(entry.1);
            }
            "close" | "fsync" | "fdatasync" | "fstat" | "fstat64" | "ftruncate" | "ftruncate64" => {
                let fd = f.expect("fd")?.i32("fd")?;
                r.fd = Some(fd);
                r.path = self.files.get(&fd).and_then(|e| e.0.clone());
                if let Some(res) = f.next_field() {
                    r.result = Some(res.i64("result")?);
                }
                if name.text == "close" {
                    self.files.remove(&fd);
                }
            }
            "stat" | "stat64" | "lstat" | "lstat64" | "access" | "unlink" | "mkdir" | "rmdir" => {
                let p = path_arg(&mut f)?;
                r.path = Some(p.text.to_string());
                if let Some(res) = f.next_field() {
                    r.result = Some(res.i64("result")?);
                }
            }
            _ => {
                // Unknown syscall: keep the name; its arguments are not interpreted.
                out.push_back(TraceRecord::Syscall(r));
                return Ok(());
            }
        }
        f.expect_end()?;
        out.push_back(TraceRecord::Syscall(r));
        Ok(())
    }
}

/// Writes a syscall as a MobiGen line (the inverse of the parser for the layouts above).
pub fn write_record<W: std::io::Write>(w: &mut W, r: &SyscallRecord) -> std::io::Result<()> {
    let us = r.time_ns / 1000;
    let fd = r.fd.unwrap_or(-1);
    let res = r.result.unwrap_or(0);
    match r.name.as_str() {
        "open" | "open64" | "creat" => writeln!(w, "{} {} open {} O_RDONLY {}", r.tid, us, r.path.as_deref().unwrap_or("?"), res),
        "read" | "write" => writeln!(w, "{} {} {} {} {}", r.tid, us, r.name, fd, res),
        "pread" | "pwrite" | "pread64" | "pwrite64" => {
            writeln!(w, "{} {} {} {} {} {}", r.tid, us, r.name, fd, r.offset.unwrap_or(0), r.size.unwrap_or(0))
        }
        "close" | "fsync" | "fdatasync" | "fstat" | "fstat64" => {
            writeln!(w, "{} {} {} {} {}", r.tid, us, r.name, fd, res)
        }
        "stat" | "stat64" | "lstat" | "lstat64" | "access" | "unlink" => {
            writeln!(w, "{} {} {} \"{}\" {}", r.tid, us, r.name, r.path.as_deref().unwrap_or(""), res)
        }
        other => writeln!(w, "{} {} {}", r.tid, us, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> Vec<SyscallRecord> {
        let mut p = MobigenParser::default();
        let mut out = VecDeque::new();
        for l in lines {
            p.parse_line(l, &mut out).unwrap();
        }
        out.into_iter()
            .map(|r| match r {
                TraceRecord::Syscall(s) => s,
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn tracks_paths_and_offsets() {
        let v = parse(&[
            "1 1378 open /data/data O_WRONLY|O_CREAT|O_TRUNC|O_LARGEFILE 43",
            "1 1400 write 43 4",
            "1 1500 write 43 4",
            "1 1550 read 43 -1",
            "9 377033 pwrite 43 0 4096",
            "2 2360 stat64 \"/system/framework/a b.apk\" 0",
            "1 1600 close 43 0",
        ]);
        assert_eq!(v[0].fd, Some(43));
        assert_eq!((v[1].offset, v[2].offset), (Some(0), Some(4)));
        assert_eq!(v[2].path.as_deref(), Some("/data/data"));
        assert_eq!((v[3].offset, v[3].size, v[3].result), (Some(8), None, Some(-1)));
        assert_eq!((v[4].offset, v[4].size, v[4].time_ns), (Some(0), Some(4096), 377_033_000));
        assert_eq!(v[5].path.as_deref(), Some("/system/framework/a b.apk"));
        assert_eq!(v[6].result, Some(0));
    }

    #[test]
    fn errors_have_columns() {
        let mut p = MobigenParser::default();
        let mut out = VecDeque::new();
        let e = p.parse_line("1 1378 pwrite 43 x 4096", &mut out).unwrap_err();
        assert_eq!(e.column, 18);
        let e = p.parse_line("1 1378 read 43", &mut out).unwrap_err();
        assert!(e.message.contains("missing field: result"), "{}", e.message);
        let e = p.parse_line("1 1378 read 43 1 9", &mut out).unwrap_err();
        assert_eq!(e.column, 18);
        // Sizes one call cannot move, and ends past the largest file offset.
        let e = p.parse_line("1 1378 pread 43 0 1152921504606846976", &mut out).unwrap_err();
        assert!(e.message.contains("size 1152921504606846976: more than one read or write transfers"), "{}", e.message);
        assert_eq!(e.column, 19);
        let e = p.parse_line("1 1378 pwrite 43 9223372036854775807 1", &mut out).unwrap_err();
        assert!(e.message.contains("past the largest file offset"), "{}", e.message);
        let e = p.parse_line("1 1378 write 43 4294967296", &mut out).unwrap_err();
        assert!(e.message.contains("more than one read or write transfers"), "{}", e.message);
        // A pread far into a file (1 EiB) is a valid offset: the replay checks it against the
        // device.
        p.parse_line("1 1378 pread 43 1152921504606846976 4096", &mut out).unwrap();
    }
}
