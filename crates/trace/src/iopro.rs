//! IOPro / AIOPro records (FastTrack's profiler): 16 whitespace-separated fields
//! `start_sec start_nsec exec_time_ns uid pid tid layer rw func_id flag fd offset size inode lba
//! filename`; layer 4 syscall, 5 page cache, 6 file system, 7 block, 8 SCSI, 9 UFS driver. The
//! filename is the rest of the line (it may contain spaces). `rw` 0 is a read and 1 a write
//! (the raw value is kept). `flag` may be decimal or `0x` hex.

use std::collections::VecDeque;

use forefront_record::trace::{IoLayer, IoSpan, TraceRecord};

use crate::error::LineError;
use crate::text::{parse_i64, shown, Fields};
use crate::LineParser;

#[derive(Default)]
pub struct IoproParser;

pub(crate) fn looks_like(line: &str) -> bool {
    let mut f = Fields::new(line);
    let mut n = 0;
    while let Some(x) = f.next_field() {
        n += 1;
        if n <= 15 && parse_i64(x.text).is_none() && !(n == 10 && x.text.starts_with("0x")) {
            return false;
        }
    }
    n >= 16
}

impl LineParser for IoproParser {
    fn parse_line(&mut self, line: &str, out: &mut VecDeque<TraceRecord>) -> Result<(), LineError> {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            return Ok(());
        }
        let mut f = Fields::new(line);
        let secf = f.expect("start_sec")?;
        let sec = secf.u64("start_sec")?;
        let nsec_f = f.expect("start_nsec")?;
        let nsec = nsec_f.u64("start_nsec")?;
        if nsec >= 1_000_000_000 {
            return Err(nsec_f.err("start_nsec must be below 1000000000"));
        }
        let duration_ns = f.expect("exec_time_ns")?.u64("exec_time_ns")?;
        let uid = f.expect("uid")?.u32("uid")?;
        let pid = f.expect("pid")?.u32("pid")?;
        let tid = f.expect("tid")?.u32("tid")?;
        let lf = f.expect("layer")?;
        let layer = IoLayer::from_iopro(lf.u32("layer")?)
            .ok_or_else(|| lf.err(format!("layer must be 4..=9, found {}", shown(lf.text))))?;
        let rw_raw = f.expect("rw")?.u32("rw")?;
        let func_id = f.expect("func_id")?.u32("func_id")?;
        let ff = f.expect("flag")?;
        let flag = match ff.text.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).map_err(|_| ff.err(format!("flag: bad hex `{}`", shown(ff.text))))?,
            None => ff.u64("flag")?,
        };
        let fd = f.expect("fd")?.i32("fd")?;
        let offset = f.expect("offset")?.u64("offset")?;
        let sf = f.expect("size")?;
        let size = sf.u64("size")?;
        if offset.checked_add(size).is_none() {
            return Err(sf.err(format!("offset {offset} + size {size}: ends past 2^64 bytes")));
        }
        let inode = f.expect("inode")?.u64("inode")?;
        let lba = f.expect("lba")?.u64("lba")?;
        let name = f.rest();
        if name.text.is_empty() {
            return Err(name.err("missing field: filename"));
        }
        let time_ns = sec.checked_mul(1_000_000_000).and_then(|t| t.checked_add(nsec)).ok_or_else(|| {
            secf.err(format!(
                "start_sec {sec} + start_nsec {nsec} is out of range (at most {} ns: times are 64-bit nanoseconds)",
                u64::MAX
            ))
        })?;
        out.push_back(TraceRecord::Span(IoSpan {
            time_ns,
            duration_ns,
            uid,
            pid,
            tid,
            layer,
            write: rw_raw == 1,
            rw_raw,
            func_id,
            flag,
            fd,
            offset,
            size,
            inode,
            lba,
            path: name.text.trim_end().to_string(),
        }));
        Ok(())
    }
}

/// Writes an IOPro record line.
pub fn write_record<W: std::io::Write>(w: &mut W, s: &IoSpan) -> std::io::Result<()> {
    writeln!(
        w,
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
        s.time_ns / 1_000_000_000,
        s.time_ns % 1_000_000_000,
        s.duration_ns,
        s.uid,
        s.pid,
        s.tid,
        s.layer.iopro_number(),
        s.rw_raw,
        s.func_id,
        s.flag,
        s.fd,
        s.offset,
        s.size,
        s.inode,
        s.lba,
        s.path
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let mut p = IoproParser;
        let mut out = VecDeque::new();
        p.parse_line("12 500 2000 10001 321 322 4 1 7 0x8 5 4096 8192 77 0 /data/my file.db", &mut out).unwrap();
        let Some(TraceRecord::Span(s)) = out.pop_front() else { panic!() };
        assert_eq!(
            (s.time_ns, s.layer, s.write, s.flag, s.path.as_str()),
            (12_000_000_500, IoLayer::Syscall, true, 8, "/data/my file.db")
        );
        let e = p.parse_line("12 500 2000 10001 321 322 3 1 7 0 5 4096 8192 77 0 /x", &mut out).unwrap_err();
        assert_eq!(e.column, 27);
        let e = p.parse_line("12 500 2000 10001 321 322 4 1 7 0 5 4096 8192 77 0", &mut out).unwrap_err();
        assert!(e.message.contains("filename"));
    }
}
