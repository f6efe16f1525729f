//! blkparse's default text output: import and export.
//!
//! Line: `maj,min cpu seq sec.nsec pid action rwbs <tail>` where the tail depends on the action
//! exactly as blkparse's `process_default` prints it:
//!
//! | action            | tail                                              |
//! |-------------------|---------------------------------------------------|
//! | `C`, `R`          | `sector [+ n] [(elapsed)] [error]`, `(pdu) [error]` |
//! | `D` `I` `Q` `B`   | `sector + n [(elapsed)] [comm]`, `[comm]`, `bytes (pdu) [comm]` |
//! | `M` `F` `G` `S`   | `sector + n [comm]` or `[comm]`                    |
//! | `P`               | `[comm]`                                           |
//! | `U` `UT`/`T`      | `[comm] depth`                                     |
//! | `A`               | `sector + n <- (maj,min) from_sector`              |
//! | `X`               | `sector / new_sector [comm]`                       |
//! | `m`               | free text                                          |
//!
//! blkparse ends its output with a summary (`CPU0 (8,0):`, `Total (8,0):`, `Throughput`,
//! `Events (8,0): N entries`, `Skips: ...`; with `-s`, per-process blocks `NAME (PID)` first).
//! The importer recognises the first summary line and skips the summary explicitly (counted in
//! [`BlkparseParser::trailer_lines`]); anything after it that a summary does not contain — an
//! event line of a second `cat`-ed blkparse output, lines of another format — is an error, so
//! nothing is skipped silently.

use std::collections::VecDeque;
use std::io::{self, Write};

use forefront_record::trace::{BlockAction, BlockDetail, BlockEvent, DevId, Rwbs, TraceRecord, SECTOR_BYTES};

use crate::error::LineError;
use crate::text::{check_extent, parse_dev, parse_u64, sectors_to_bytes, shown, Field, Fields, MAX_REQUEST_BYTES};
use crate::LineParser;

/// Parses blkparse default-format lines.
#[derive(Default)]
pub struct BlkparseParser {
    /// Line number (1-based) where the closing summary began, once it has.
    trailer_from: Option<u64>,
    /// Lines seen so far (the parser sees every line, blank ones too).
    lines: u64,
    /// Lines of blkparse's closing summary (and `Input file X added` notes) that were skipped.
    pub trailer_lines: u64,
}

/// True for a line blkparse's summary may hold after its first line: another block's header,
/// an indented statistic (` Reads Queued:   8,  28KiB`), `Skips: ...`, a per-process header
/// (`kjournald (697)`, with `-s`), or a blank line.
fn is_summary_line(line: &str) -> bool {
    if line.trim().is_empty() || is_summary_start(line) || line.starts_with("Skips: ") || is_input_note(line) {
        return true;
    }
    let t = line.trim_start();
    if t.len() < line.len() {
        // ` Label words: values`: the label is letters, spaces and dots.
        return match t.split_once(':') {
            Some((label, _)) => {
                label.starts_with(|c: char| c.is_ascii_alphabetic())
                    && label.bytes().all(|c| c.is_ascii_alphabetic() || c == b' ' || c == b'.')
            }
            None => false,
        };
    }
    is_process_header(line)
}

/// `Input file sdb.blktrace.0 added`: blkparse's note per input file, which lands after the
/// summary when events and notes share stdout.
fn is_input_note(line: &str) -> bool {
    line.starts_with("Input file ") && line.ends_with(" added")
}

/// `NAME (PID)`, the header of a per-process block of `blkparse -s`.
fn is_process_header(line: &str) -> bool {
    // Cheap tests first: this runs on every event line.
    if !line.ends_with(')') || line.starts_with(' ') {
        return false;
    }
    let Some(open) = line.rfind(" (") else {
        return false;
    };
    let Some(pid) = line[open + 2..].strip_suffix(')') else {
        return false;
    };
    let first = Fields::new(line).next_field();
    open > 0 && parse_u64(pid).is_some() && !line.starts_with(' ') && first.is_some_and(|f| parse_dev(&f).is_err())
}

/// True if `line` starts blkparse's closing summary.
pub(crate) fn is_summary_start(line: &str) -> bool {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix("CPU") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        return digits > 0 && rest[digits..].starts_with(" (");
    }
    t.starts_with("Total (") || t.starts_with("Throughput (R/W):") || t.starts_with("Events (") || is_process_header(line)
}

/// True if the line looks like a blkparse default-format event (used by format detection).
pub(crate) fn looks_like(line: &str) -> bool {
    let mut f = Fields::new(line);
    let Some(dev) = f.next_field() else {
        return false;
    };
    if parse_dev(&dev).is_err() {
        return false;
    }
    let (Some(cpu), Some(seq), Some(time), Some(pid), Some(act)) =
        (f.next_field(), f.next_field(), f.next_field(), f.next_field(), f.next_field())
    else {
        return false;
    };
    parse_u64(cpu.text).is_some()
        && parse_u64(seq.text).is_some()
        && time.text.contains('.')
        && time.time_ns("time").is_ok()
        && parse_u64(pid.text).is_some()
        && BlockAction::from_code(act.text).is_some()
}

impl LineParser for BlkparseParser {
    fn parse_line(&mut self, line: &str, out: &mut VecDeque<TraceRecord>) -> Result<(), LineError> {
        self.lines += 1;
        if let Some(from) = self.trailer_from {
            if is_summary_line(line) {
                self.trailer_lines += 1;
                return Ok(());
            }
            let what = if looks_like(line) { "an event line (a second blkparse output appended?)" } else { "a line" };
            return Err(LineError::new(
                1,
                format!(
                    "{what} after blkparse's closing summary (which began at line {from}); a summary holds only statistics, and blkparse prints it last"
                ),
            ));
        }
        if line.trim().is_empty() {
            return Ok(());
        }
        // blkparse announces each per-CPU input file on stdout.
        if is_input_note(line) {
            self.trailer_lines += 1;
            return Ok(());
        }
        if is_summary_start(line) {
            self.trailer_from = Some(self.lines);
            self.trailer_lines += 1;
            return Ok(());
        }
        let mut f = Fields::new(line);
        let dev = parse_dev(&f.expect("device (maj,min)")?)?;
        let cpu = f.expect("cpu")?.u32("cpu")?;
        let seq = f.expect("sequence")?.u64("sequence")?;
        let time_ns = f.expect("time")?.time_ns("time")?;
        let pid = f.expect("pid")?.u32("pid")?;
        let ev = parse_event_tail(&mut f, dev, cpu, seq, time_ns, pid)?;
        out.push_back(TraceRecord::Block(ev));
        Ok(())
    }
}

/// Parses `action rwbs <tail>` (shared with the ftrace `blk` tracer's output).
pub(crate) fn parse_event_tail(
    f: &mut Fields<'_>,
    dev: DevId,
    cpu: u32,
    seq: u64,
    time_ns: u64,
    pid: u32,
) -> Result<BlockEvent, LineError> {
    let act = f.expect("action")?;
    let action = BlockAction::from_code(act.text).ok_or_else(|| {
        act.err(format!("unknown action `{}` (expected one of A B C D F G I M P Q R S T U X m)", shown(act.text)))
    })?;
    let rw = f.expect("RWBS")?;
    let rwbs = Rwbs::parse(rw.text).ok_or_else(|| rw.err(format!("bad RWBS flags `{}`", shown(rw.text))))?;
    let mut ev = BlockEvent {
        time_ns,
        dev,
        cpu,
        seq,
        pid,
        comm: None,
        action,
        rwbs,
        sector: 0,
        bytes: 0,
        error: 0,
        detail: BlockDetail::None,
    };
    // Column of the sector field, for the extent check at the end.
    let mut sector_col = rw.column;
    use BlockAction::*;
    match action {
        Complete | Requeue => {
            let first = f.expect("sector or [error]")?;
            if first.text.starts_with('(') || first.text.starts_with('[') {
                // Passthrough: `(pdu) [error]`.
                ev.detail = BlockDetail::Passthrough;
                let mut fs = Fields::at(f.line(), first.column - 1);
                skip_paren(&mut fs)?;
                ev.error = bracket_int(&fs.expect("[error]")?)?;
            } else {
                ev.sector = first.u64("sector")?;
                sector_col = first.column;
                let mut next = f.expect("[error]")?;
                if next.text == "+" {
                    ev.bytes = sectors_to_bytes(&f.expect("sector count")?)?;
                    next = f.expect("[error]")?;
                }
                if next.text.starts_with('(') {
                    next = elapsed_then(f, next)?;
                }
                ev.error = bracket_int(&next)?;
            }
            f.expect_end()?;
        }
        Issue | Insert | Queue | Bounce | BackMerge | FrontMerge | GetRq | SleepRq => {
            let rest = f.rest();
            if rest.text.starts_with('[') {
                ev.comm = Some(bracket_comm(&rest)?.to_string());
            } else if rest.text.starts_with('(') {
                // `(elapsed) [comm]` with no sectors.
                let mut next = f.expect("[comm]")?;
                next = elapsed_then(f, next)?;
                ev.comm = Some(bracket_comm(&f.rest_from(next))?.to_string());
            } else {
                let first = f.expect("sector")?;
                let n = first.u64("sector")?;
                let next = f.expect("+ or [comm]")?;
                if next.text == "+" {
                    ev.sector = n;
                    sector_col = first.column;
                    ev.bytes = sectors_to_bytes(&f.expect("sector count")?)?;
                    let mut next = f.expect("[comm]")?;
                    if next.text.starts_with('(') {
                        next = elapsed_then(f, next)?;
                    }
                    ev.comm = Some(bracket_comm(&f.rest_from(next))?.to_string());
                } else if matches!(action, Issue | Insert | Queue | Bounce) {
                    // Passthrough: `bytes [(pdu)] [comm]`.
                    ev.detail = BlockDetail::Passthrough;
                    if n > MAX_REQUEST_BYTES {
                        return Err(first.err(format!(
                            "passthrough bytes {n}: more than a block trace can record ({MAX_REQUEST_BYTES}, a 32-bit count)"
                        )));
                    }
                    ev.bytes = n;
                    let mut fs = Fields::at(f.line(), next.column - 1);
                    if next.text.starts_with('(') {
                        skip_paren(&mut fs)?;
                    }
                    ev.comm = Some(bracket_comm(&fs.rest())?.to_string());
                } else {
                    return Err(next.err(format!("expected `+` after the sector, found `{}`", shown(next.text))));
                }
            }
        }
        Plug => {
            ev.comm = Some(bracket_comm(&f.rest())?.to_string());
        }
        Unplug | UnplugTimer => {
            let rest = f.rest();
            let close = rest.text.rfind(']').ok_or_else(|| rest.err("expected `[comm] depth`"))?;
            ev.comm = Some(bracket_comm(&Field { text: &rest.text[..=close], column: rest.column })?.to_string());
            let mut fs = Fields::at(f.line(), rest.column - 1 + close + 1);
            let depth = fs.expect("unplug depth")?;
            ev.detail = BlockDetail::Unplug { depth: depth.u32("unplug depth")? };
            fs.expect_end()?;
        }
        Remap => {
            let sf = f.expect("sector")?;
            ev.sector = sf.u64("sector")?;
            sector_col = sf.column;
            let plus = f.expect("+")?;
            if plus.text != "+" {
                return Err(plus.err(format!("expected `+`, found `{}`", shown(plus.text))));
            }
            ev.bytes = sectors_to_bytes(&f.expect("sector count")?)?;
            let arrow = f.expect("<-")?;
            if arrow.text != "<-" {
                return Err(arrow.err(format!("expected `<-`, found `{}`", shown(arrow.text))));
            }
            let from = f.expect("(maj,min)")?;
            let inner = from
                .text
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(|| from.err(format!("expected (maj,min), found `{}`", shown(from.text))))?;
            let from_dev = parse_dev(&Field { text: inner, column: from.column + 1 })?;
            let ff = f.expect("source sector")?;
            let from_sector = ff.u64("source sector")?;
            check_extent(from_sector, 0).map_err(|m| ff.err(format!("source {m}")))?;
            ev.detail = BlockDetail::Remap { from: from_dev, from_sector };
            f.expect_end()?;
        }
        Split => {
            let sf = f.expect("sector")?;
            ev.sector = sf.u64("sector")?;
            sector_col = sf.column;
            let slash = f.expect("/")?;
            if slash.text != "/" {
                return Err(slash.err(format!("expected `/`, found `{}`", shown(slash.text))));
            }
            let nf = f.expect("new sector")?;
            let new_sector = nf.u64("new sector")?;
            check_extent(new_sector, 0).map_err(|m| nf.err(format!("new {m}")))?;
            ev.detail = BlockDetail::Split { new_sector };
            ev.comm = Some(bracket_comm(&f.rest())?.to_string());
        }
        Message => {
            ev.detail = BlockDetail::Message { text: f.rest().text.trim_end().to_string() };
        }
    }
    check_extent(ev.sector, ev.bytes).map_err(|m| LineError::new(sector_col, m))?;
    Ok(ev)
}

impl<'a> Fields<'a> {
    /// The rest of the line starting at field `from`.
    fn rest_from(&mut self, from: Field<'a>) -> Field<'a> {
        let mut fs = Fields::at(self.line(), from.column - 1);
        let r = fs.rest();
        *self = Fields::at(self.line(), self.line().len());
        r
    }
}

/// `(elapsed)`, possibly `( 123)` split over fields: consumes through `)` and returns the
/// field after it.
fn elapsed_then<'a>(f: &mut Fields<'a>, first: Field<'a>) -> Result<Field<'a>, LineError> {
    let mut cur = first;
    loop {
        if cur.text.ends_with(')') {
            return f.expect("field after (elapsed)");
        }
        cur = f.expect("closing `)`")?;
    }
}

fn skip_paren(f: &mut Fields<'_>) -> Result<(), LineError> {
    let first = f.expect("(pdu)")?;
    if !first.text.starts_with('(') {
        // No pdu: leave the position on this field.
        *f = Fields::at(f.line(), first.column - 1);
        return Ok(());
    }
    let mut cur = first;
    while !cur.text.ends_with(')') {
        cur = f.expect("closing `)`")?;
    }
    Ok(())
}

/// `[comm]`: everything between the first `[` and the last `]` of the field (names may contain
/// spaces).
fn bracket_comm<'a>(f: &Field<'a>) -> Result<&'a str, LineError> {
    let t = f.text.trim_end();
    t.strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| f.err(format!("expected [process name], found `{}`", shown(f.text))))
}

fn bracket_int(f: &Field<'_>) -> Result<i32, LineError> {
    let inner = f
        .text
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| f.err(format!("expected [error], found `{}`", shown(f.text))))?;
    Field { text: inner, column: f.column + 1 }.i32("error")
}

/// What blkparse's default text keeps of an event: `parse(write_event(ev)) == text_view(ev)`.
/// Drops what the line for that action does not print (the size of a split, the process of a
/// completion, the sector of a plug, ...).
pub fn text_view(ev: &BlockEvent) -> BlockEvent {
    use BlockAction::*;
    let mut e = ev.clone();
    let pc = e.detail == BlockDetail::Passthrough;
    if !matches!(e.action, Complete | Requeue) {
        e.error = 0;
    }
    if !pc {
        e.bytes = e.bytes / SECTOR_BYTES * SECTOR_BYTES;
    }
    match e.action {
        Complete | Requeue => {
            e.comm = None;
            if pc {
                e.sector = 0;
                e.bytes = 0;
            }
        }
        Issue | Insert | Queue | Bounce | BackMerge | FrontMerge | GetRq | SleepRq => {
            e.comm.get_or_insert_with(String::new);
            // Passthrough lines and data-less lines print no sector.
            if pc || e.bytes == 0 {
                e.sector = 0;
            }
        }
        Plug | Unplug | UnplugTimer => {
            e.comm.get_or_insert_with(String::new);
            e.sector = 0;
            e.bytes = 0;
        }
        Remap => e.comm = None,
        Split => {
            e.comm.get_or_insert_with(String::new);
            e.bytes = 0;
        }
        Message => {
            e.comm = None;
            e.sector = 0;
            e.bytes = 0;
        }
    }
    e
}

/// Writes `ev` exactly as blkparse's default output would print it.
///
/// Fields the format does not carry for that action are dropped (e.g. `comm` of a `C`), so
/// `parse(write(ev))` equals `ev` with those fields at their defaults.
pub fn write_event<W: Write>(w: &mut W, ev: &BlockEvent) -> io::Result<()> {
    write!(
        w,
        "{:>3},{:<3} {:>2} {:>8} {:>5}.{:09} {:>5} {:>2} {:>3} ",
        ev.dev.major,
        ev.dev.minor,
        ev.cpu,
        ev.seq,
        ev.time_ns / 1_000_000_000,
        ev.time_ns % 1_000_000_000,
        ev.pid,
        ev.action.code(),
        ev.rwbs
    )?;
    let name = ev.comm.as_deref().unwrap_or("");
    let nsec = ev.nsectors();
    let pc = ev.detail == BlockDetail::Passthrough;
    use BlockAction::*;
    match ev.action {
        Complete | Requeue => {
            if pc {
                writeln!(w, "[{}]", ev.error)
            } else if nsec > 0 {
                writeln!(w, "{} + {} [{}]", ev.sector, nsec, ev.error)
            } else {
                writeln!(w, "{} [{}]", ev.sector, ev.error)
            }
        }
        Issue | Insert | Queue | Bounce if pc => writeln!(w, "{} [{}]", ev.bytes, name),
        Issue | Insert | Queue | Bounce | BackMerge | FrontMerge | GetRq | SleepRq => {
            if nsec > 0 {
                writeln!(w, "{} + {} [{}]", ev.sector, nsec, name)
            } else {
                writeln!(w, "[{}]", name)
            }
        }
        Plug => writeln!(w, "[{}]", name),
        Unplug | UnplugTimer => {
            let depth = match ev.detail {
                BlockDetail::Unplug { depth } => depth,
                _ => 0,
            };
            writeln!(w, "[{}] {}", name, depth)
        }
        Remap => {
            let (from, from_sector) = match ev.detail {
                BlockDetail::Remap { from, from_sector } => (from, from_sector),
                _ => (DevId::default(), 0),
            };
            writeln!(w, "{} + {} <- ({},{}) {}", ev.sector, nsec, from.major, from.minor, from_sector)
        }
        Split => {
            let new_sector = match ev.detail {
                BlockDetail::Split { new_sector } => new_sector,
                _ => 0,
            };
            writeln!(w, "{} / {} [{}]", ev.sector, new_sector, name)
        }
        Message => {
            let text = match &ev.detail {
                BlockDetail::Message { text } => text.as_str(),
                _ => "",
            };
            writeln!(w, "{}", text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<BlockEvent, LineError> {
        let mut p = BlkparseParser::default();
        let mut out = VecDeque::new();
        p.parse_line(line, &mut out)?;
        match out.pop_front() {
            Some(TraceRecord::Block(ev)) => Ok(ev),
            other => panic!("expected a block event, got {other:?}"),
        }
    }

    #[test]
    fn every_action_parses() {
        let q = one("  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]").unwrap();
        assert_eq!((q.action, q.sector, q.bytes, q.pid, q.cpu, q.seq), (BlockAction::Queue, 223490, 4096, 697, 3, 1));
        assert_eq!(q.comm.as_deref(), Some("kjournald"));
        let c = one("  8,0    3       10     0.000123456     0  C  WS 223490 + 8 [0]").unwrap();
        assert_eq!((c.action, c.time_ns, c.error, c.comm.clone()), (BlockAction::Complete, 123_456, 0, None));
        assert!(c.rwbs.sync && c.rwbs.is_write());
        let c = one("  8,0    3       10     0.000123456     0  C  FN 0 [-5]").unwrap();
        assert_eq!((c.bytes, c.error, c.rwbs.preflush), (0, -5, true));
        let p = one("  8,0    3        3     0.000001000   697  P   N [kjournald]").unwrap();
        assert_eq!(p.action, BlockAction::Plug);
        let u = one("  8,0    3        4     0.000001000   697  U   N [kjournald] 3").unwrap();
        assert_eq!(u.detail, BlockDetail::Unplug { depth: 3 });
        let t = one("  8,0    3        4     0.000001000   697 UT   N [kworker/0:1 x] 1").unwrap();
        assert_eq!((t.action, t.comm.as_deref()), (BlockAction::UnplugTimer, Some("kworker/0:1 x")));
        let a = one("  8,0    0        1     0.000000000  4561  A   R 2048 + 8 <- (8,1) 0").unwrap();
        assert_eq!(a.detail, BlockDetail::Remap { from: DevId { major: 8, minor: 1 }, from_sector: 0 });
        let x = one("  8,0    0        1     0.000000000  4561  X   R 2048 / 2056 [fio]").unwrap();
        assert_eq!(x.detail, BlockDetail::Split { new_sector: 2056 });
        let d = one("  8,0    0        1     0.000000000  4561  D   N 36 [scsi_id]").unwrap();
        assert_eq!((d.detail.clone(), d.bytes), (BlockDetail::Passthrough, 36));
        let d = one("  8,0    0        1     0.000000000  4561  D   N 36 (12 00 00 00 24 00 ..) [scsi_id]").unwrap();
        assert_eq!(d.bytes, 36);
        let g = one("  8,0    0        1     0.000000000  4561  G  RA 2048 + 256 [cat]").unwrap();
        assert!(g.rwbs.ahead);
        for code in ["M", "F", "S", "I", "B", "D"] {
            let e = one(&format!("  8,0    0        1     0.000000000  4561  {code}   R 2048 + 8 [cat]")).unwrap();
            assert_eq!(e.action.code(), code);
        }
        let m = one("  8,0    0        0     0.000000000     0  m   N cfq1234 insert_request").unwrap();
        assert_eq!(m.detail, BlockDetail::Message { text: "cfq1234 insert_request".into() });
        let e = one("  8,0    0        1     0.000000000  4561  C   R 2048 + 8 (    1234) [0]").unwrap();
        assert_eq!(e.bytes, 4096);
    }

    #[test]
    fn errors_point_at_the_field() {
        let e = one("  8,0    3        1     0.000000000   697  Z   W 223490 + 8 [kjournald]").unwrap_err();
        assert_eq!(e.column, 44);
        assert!(e.message.contains("unknown action `Z`"), "{}", e.message);
        let e = one("  8,0    3        1     0.000000000   697  Q   W 22349x + 8 [kjournald]").unwrap_err();
        assert_eq!(e.column, 50);
        let e = one("  8,0    3        1     0.000000000   697  Q   W 223490 + 8").unwrap_err();
        assert!(e.message.contains("missing field: [comm]"), "{}", e.message);
        let e = one("  8,0    3        1     0.000000000   697  Q   WX 1 + 8 [a]").unwrap_err();
        assert!(e.message.contains("bad RWBS"), "{}", e.message);
        let e = one("  8,0    3").unwrap_err();
        assert!(e.message.contains("missing field: sequence"));
    }

    #[test]
    fn sizes_and_sectors_past_their_range_are_refused() {
        // 2^32 sectors: a 2 TiB "request", more than blktrace's 32-bit byte count holds.
        let e = one("  8,0    3        1     0.000000000   697  C   R 0 + 4294967296 [0]").unwrap_err();
        assert_eq!(e.column, 54, "{}", e.message);
        assert!(e.message.contains("sector count 4294967296: more than a block trace can record"), "{}", e.message);
        // The largest request that fits is accepted.
        let ok = one("  8,0    3        1     0.000000000   697  C   R 0 + 8388607 [0]").unwrap();
        assert_eq!(ok.bytes, 8_388_607 * 512);
        // A sector whose byte address passes 2^64.
        let e = one("  8,0    3        1     0.000000000   697  Q   R 18446744073709551615 + 8 [dd]").unwrap_err();
        assert_eq!(e.column, 50, "{}", e.message);
        assert!(e.message.contains("ends past byte 2^64"), "{}", e.message);
        let e = one("  8,0    0        1     0.000000000  4561  A   R 2048 + 8 <- (8,1) 36028797018963968").unwrap_err();
        assert!(e.message.contains("source sector 36028797018963968"), "{}", e.message);
        let e = one("  8,0    0        1     0.000000000  4561  D   N 4294967296 [scsi_id]").unwrap_err();
        assert!(e.message.contains("passthrough bytes 4294967296"), "{}", e.message);
        // A time of 2^64 s is out of range, not "not a time".
        let e = one("  8,0    3        1 18446744073709551616.000000000   697  Q   R 0 + 8 [dd]").unwrap_err();
        assert!(e.message.contains("time: `18446744073709551616.000000000` s is out of range"), "{}", e.message);
    }

    #[test]
    fn summary_is_skipped_explicitly() {
        let mut p = BlkparseParser::default();
        let mut out = VecDeque::new();
        let summary = [
            "CPU0 (8,0):",
            " Reads Queued:           0,        0KiB\t Writes Queued:          15,     1084KiB",
            " PC Read Disp.:          0,        0KiB",
            "",
            "Total (8,0):",
            " IO unplugs:            34        \t Timer unplugs:           6",
            "Throughput (R/W): 0KiB/s / 0KiB/s",
            "Events (8,0): 2 entries",
            "Skips: 0 forward (0 -   0.0%)",
            "Input file sdb.blktrace.0 added",
        ];
        for l in summary {
            p.parse_line(l, &mut out).unwrap();
        }
        assert!(out.is_empty());
        assert_eq!(p.trailer_lines, 10);
        // What follows a summary must be summary: an appended blkparse output or another
        // format's lines are errors, not skipped.
        let e = p.parse_line("  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]", &mut out).unwrap_err();
        assert!(
            e.message.contains(
                "an event line (a second blkparse output appended?) after blkparse's closing summary (which began at line 1)"
            ),
            "{}",
            e.message
        );
        let e = p.parse_line("53 377033 pwrite 43 0 4096", &mut out).unwrap_err();
        assert!(e.message.starts_with("a line after blkparse's closing summary"), "{}", e.message);
        // blkparse -s prints per-process blocks before the device summary.
        let mut p = BlkparseParser::default();
        for l in ["kjournald (697)", " Reads Queued:           0,        0KiB", "CPU0 (8,0):"] {
            p.parse_line(l, &mut out).unwrap_or_else(|e| panic!("{l}: {}", e.message));
        }
        assert!(!is_summary_start("  8,0    3        1     0.000000000   697  Q   W 1 + 8 [a]"));
    }

    #[test]
    fn export_matches_blkparse_layout() {
        let line = "  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n";
        let ev = one(line.trim_end()).unwrap();
        let mut buf = Vec::new();
        write_event(&mut buf, &ev).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), line);
    }
}
