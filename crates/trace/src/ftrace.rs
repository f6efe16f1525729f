//! ftrace text (`/sys/kernel/tracing/trace`, `trace_pipe`) and `trace-cmd report` output.
//!
//! Event lines: `TASK-PID [(TGID)] [CPU] [FLAGS] SECONDS: EVENT: BODY`. Imported events:
//! `sched_switch`, `sched_wakeup`, `sched_wakeup_new` (ftrace `key=value` bodies and
//! trace-cmd's `comm:pid [prio] ...` bodies), `block_rq_issue` (→ `D`), `block_rq_insert`
//! (→ `I`), `block_rq_complete` (→ `C`), and the `blk` tracer's own lines, both the default
//! (`TASK-PID [CPU] FLAGS SECONDS:   7,0    Q  WS 0 + 8 [dd]`) and `blk_classic`
//! (`  7,0    1   274.460020026  5767  Q  WS 0 + 8 [dd]`) layouts. Other events are skipped
//! and counted ([`FtraceParser::other_events`]); `#` comment lines and trace-cmd's header
//! (`cpus=N`, `version = N`) are skipped.

use std::collections::{BTreeMap, VecDeque};

use forefront_record::trace::{BlockAction, BlockEvent, DevId, Rwbs, SchedEvent, SchedRecord, TraceRecord};

use crate::blkparse;
use crate::error::LineError;
use crate::text::{check_extent, parse_dev, parse_secs_ns, parse_u64, sectors_to_bytes, shown, Field, Fields, MAX_REQUEST_BYTES};
use crate::LineParser;

#[derive(Default)]
pub struct FtraceParser {
    /// Events of other types, by name (skipped).
    pub other_events: BTreeMap<String, u64>,
    /// Per-CPU sequence numbers synthesised for block events (ftrace has none).
    seq: BTreeMap<u32, u64>,
}

pub(crate) fn looks_like(line: &str) -> bool {
    split_header(line).is_ok() || looks_like_classic(line)
}

fn looks_like_classic(line: &str) -> bool {
    let mut f = Fields::new(line);
    let (Some(dev), Some(cpu), Some(time), Some(pid), Some(act)) =
        (f.next_field(), f.next_field(), f.next_field(), f.next_field(), f.next_field())
    else {
        return false;
    };
    parse_dev(&dev).is_ok()
        && parse_u64(cpu.text).is_some()
        && time.text.contains('.')
        && parse_secs_ns(time.text).is_some()
        && parse_u64(pid.text).is_some()
        && BlockAction::from_code(act.text).is_some()
}

struct Header<'a> {
    comm: &'a str,
    pid: u32,
    cpu: u32,
    time_ns: u64,
    /// Byte offset just after `SECONDS:`.
    body: usize,
}

/// Parses `TASK-PID [(TGID)] [CPU] [FLAGS] SECONDS:`.
fn split_header(line: &str) -> Result<Header<'_>, LineError> {
    let b = line.as_bytes();
    // The CPU field: `[` digits `]` preceded by a space.
    let mut i = 0;
    let cpu_open = loop {
        let Some(j) = memchr::memchr(b'[', &b[i..]) else {
            return Err(LineError::new(1, "expected `TASK-PID [CPU] ... SECONDS:`"));
        };
        let k = i + j;
        let digits = b[k + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if k > 0 && b[k - 1] == b' ' && digits > 0 && b.get(k + 1 + digits) == Some(&b']') {
            break k;
        }
        i = k + 1;
    };
    let cpu_close = cpu_open + 1 + b[cpu_open + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
    let cpu = parse_u64(&line[cpu_open + 1..cpu_close])
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| LineError::new(cpu_open + 2, "bad CPU number"))?;
    let mut task = line[..cpu_open].trim();
    // `(  tgid)` with the record-tgid option.
    if task.ends_with(')') {
        if let Some(p) = task.rfind('(') {
            task = task[..p].trim_end();
        }
    }
    let dash = task.rfind('-').ok_or_else(|| LineError::new(1, "expected TASK-PID before the CPU field"))?;
    let comm = &task[..dash];
    let pid_s = &task[dash + 1..];
    let pid_col = line.find(task).unwrap_or(0) + dash + 2;
    let pid = parse_u64(pid_s)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| LineError::new(pid_col, format!("bad pid `{pid_s}`")))?;
    let mut f = Fields::at(line, cpu_close + 1);
    // Optional flags field, then `SECONDS:`.
    for _ in 0..2 {
        let tok = f.expect("timestamp")?;
        if let Some(t) = tok.text.strip_suffix(':') {
            let time_ns = Field { text: t, column: tok.column }.time_ns("timestamp")?;
            return Ok(Header { comm, pid, cpu, time_ns, body: tok.column - 1 + tok.text.len() });
        }
    }
    Err(LineError::new(cpu_close + 2, "expected `SECONDS:` after the CPU field"))
}

/// `key=value` lookup in an ftrace body; values end at the next ` key=` (comms may contain
/// spaces).
fn kv<'a>(body: &'a str, key: &str, col: usize) -> Result<(&'a str, usize), LineError> {
    let pat = format!("{key}=");
    let mut from = 0;
    let start = loop {
        let Some(i) = body[from..].find(&pat) else {
            return Err(LineError::new(col + body.len(), format!("missing field: {key}")));
        };
        let at = from + i;
        if at == 0 || body.as_bytes()[at - 1] == b' ' {
            break at + pat.len();
        }
        from = at + 1;
    };
    let rest = &body[start..];
    // The value runs to the next ` word=` or ` ==>`.
    let mut end = rest.len();
    let mut search = 0;
    while let Some(sp) = rest[search..].find(' ') {
        let s = search + sp;
        let after = &rest[s + 1..];
        let word: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if after.starts_with("==>") || (!word.is_empty() && after[word.len()..].starts_with('=')) {
            end = s;
            break;
        }
        search = s + 1;
    }
    Ok((rest[..end].trim_end(), col + start))
}

fn kv_num<T: TryFrom<i64>>(body: &str, key: &str, col: usize) -> Result<T, LineError> {
    let (v, c) = kv(body, key, col)?;
    crate::text::parse_i64(v)
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| LineError::new(c, format!("{key}: expected a number, found `{v}`")))
}

/// trace-cmd's `comm:pid [prio]`.
fn comm_pid_prio(s: &str, col: usize) -> Result<(String, u32, i32, &str), LineError> {
    let s = s.trim_start();
    let open = s.find(" [").ok_or_else(|| LineError::new(col, "expected `comm:pid [prio]`"))?;
    let cp = &s[..open];
    let colon = cp.rfind(':').ok_or_else(|| LineError::new(col, "expected `comm:pid`"))?;
    let pid = parse_u64(&cp[colon + 1..])
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| LineError::new(col + colon + 1, "bad pid"))?;
    let close = s[open..].find(']').ok_or_else(|| LineError::new(col + open, "missing `]`"))? + open;
    let prio = crate::text::parse_i64(&s[open + 2..close])
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| LineError::new(col + open + 2, "bad priority"))?;
    Ok((cp[..colon].to_string(), pid, prio, &s[close + 1..]))
}

fn parse_switch(body: &str, col: usize) -> Result<SchedEvent, LineError> {
    if body.contains("prev_comm=") {
        Ok(SchedEvent::Switch {
            prev_comm: kv(body, "prev_comm", col)?.0.to_string(),
            prev_pid: kv_num(body, "prev_pid", col)?,
            prev_prio: kv_num(body, "prev_prio", col)?,
            prev_state: kv(body, "prev_state", col)?.0.to_string(),
            next_comm: kv(body, "next_comm", col)?.0.to_string(),
            next_pid: kv_num(body, "next_pid", col)?,
            next_prio: kv_num(body, "next_prio", col)?,
        })
    } else {
        let (arrow_l, arrow_r) = body.split_once(" ==> ").ok_or_else(|| LineError::new(col, "expected `==>` in sched_switch"))?;
        let (prev_comm, prev_pid, prev_prio, state) = comm_pid_prio(arrow_l, col)?;
        let (next_comm, next_pid, next_prio, _) = comm_pid_prio(arrow_r, col + arrow_l.len() + 5)?;
        Ok(SchedEvent::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state: state.trim().to_string(),
            next_comm,
            next_pid,
            next_prio,
        })
    }
}

fn parse_wakeup(body: &str, col: usize) -> Result<SchedEvent, LineError> {
    if body.contains("comm=") {
        Ok(SchedEvent::Wakeup {
            comm: kv(body, "comm", col)?.0.to_string(),
            pid: kv_num(body, "pid", col)?,
            prio: kv_num(body, "prio", col)?,
            target_cpu: kv_num(body, "target_cpu", col)?,
        })
    } else {
        let (comm, pid, prio, rest) = comm_pid_prio(body, col)?;
        let cpu = rest
            .split_whitespace()
            .find_map(|t| t.strip_prefix("CPU:"))
            .ok_or_else(|| LineError::new(col + body.len(), "missing field: CPU:"))?;
        let target_cpu = parse_u64(cpu).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| LineError::new(col, "bad CPU"))?;
        Ok(SchedEvent::Wakeup { comm, pid, prio, target_cpu })
    }
}

/// `block_rq_issue`/`block_rq_insert`: `DEV RWBS BYTES (CMD) SECTOR + N [IOPRIO] [COMM]`;
/// `block_rq_complete`: `DEV RWBS (CMD) SECTOR + N [IOPRIO] [ERROR]`.
fn parse_block_rq(line: &str, at: usize, action: BlockAction, h: &Header<'_>) -> Result<BlockEvent, LineError> {
    let mut f = Fields::at(line, at);
    let dev = parse_dev(&f.expect("device")?)?;
    let rw = f.expect("RWBS")?;
    let rwbs = Rwbs::parse(rw.text).ok_or_else(|| rw.err(format!("bad RWBS flags `{}`", shown(rw.text))))?;
    let mut tok = f.expect("(cmd)")?;
    let mut bytes_field = None;
    if !tok.text.starts_with('(') {
        let b = tok.u64("bytes")?;
        if b > MAX_REQUEST_BYTES {
            return Err(tok.err(format!("bytes {b}: more than a block trace can record ({MAX_REQUEST_BYTES}, a 32-bit count)")));
        }
        bytes_field = Some(b);
        tok = f.expect("(cmd)")?;
    }
    if !tok.text.starts_with('(') {
        return Err(tok.err(format!("expected `(cmd)`, found `{}`", shown(tok.text))));
    }
    while !tok.text.ends_with(')') {
        tok = f.expect("closing `)`")?;
    }
    let sf = f.expect("sector")?;
    let sector = sf.u64("sector")?;
    let plus = f.expect("+")?;
    if plus.text != "+" {
        return Err(plus.err(format!("expected `+`, found `{}`", shown(plus.text))));
    }
    let nf = f.expect("sector count")?;
    let nr_bytes = sectors_to_bytes(&nf)?;
    check_extent(sector, nr_bytes).map_err(|m| sf.err(m))?;
    let mut last = f.expect("[comm]")?;
    if !last.text.starts_with('[') {
        // ioprio `be,0,4` (kernels ≥ 6.x).
        last = f.expect("[comm]")?;
    }
    let last = Field { text: f.line()[last.column - 1..].trim_end(), column: last.column };
    let inner = last
        .text
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| last.err(format!("expected `[...]`, found `{}`", shown(last.text))))?;
    let mut ev = BlockEvent {
        time_ns: h.time_ns,
        dev,
        cpu: h.cpu,
        seq: 0,
        pid: h.pid,
        comm: None,
        action,
        rwbs,
        sector,
        bytes: nr_bytes,
        error: 0,
        detail: Default::default(),
    };
    if action == BlockAction::Complete {
        ev.error = Field { text: inner, column: last.column + 1 }.i32("error")?;
    } else {
        ev.comm = Some(inner.to_string());
        if nr_bytes == 0 {
            ev.bytes = bytes_field.unwrap_or(0);
        }
    }
    Ok(ev)
}

impl FtraceParser {
    fn next_seq(&mut self, cpu: u32) -> u64 {
        let s = self.seq.entry(cpu).or_insert(0);
        *s += 1;
        *s
    }
}

impl LineParser for FtraceParser {
    fn parse_line(&mut self, line: &str, out: &mut VecDeque<TraceRecord>) -> Result<(), LineError> {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') || t.starts_with("cpus=") || t.starts_with("version = ") || t.starts_with("CPU ") {
            return Ok(());
        }
        if looks_like_classic(line) {
            let mut f = Fields::new(line);
            let dev = parse_dev(&f.expect("device")?)?;
            let cpu = f.expect("cpu")?.u32("cpu")?;
            let time_ns = f.expect("time")?.time_ns("time")?;
            let pid = f.expect("pid")?.u32("pid")?;
            let seq = self.next_seq(cpu);
            let ev = blkparse::parse_event_tail(&mut f, dev, cpu, seq, time_ns, pid)?;
            out.push_back(TraceRecord::Block(ev));
            return Ok(());
        }
        let h = split_header(line)?;
        let mut f = Fields::at(line, h.body);
        let first = f.expect("event name or block device")?;
        if let Some(name) = first.text.strip_suffix(':') {
            let body_at = first.column - 1 + first.text.len();
            let body = line[body_at..].trim_start();
            let col = line.len() - body.len() + 1;
            let rec = match name {
                "sched_switch" => {
                    TraceRecord::Sched(SchedRecord { time_ns: h.time_ns, cpu: h.cpu, event: parse_switch(body, col)? })
                }
                "sched_wakeup" | "sched_wakeup_new" => {
                    TraceRecord::Sched(SchedRecord { time_ns: h.time_ns, cpu: h.cpu, event: parse_wakeup(body, col)? })
                }
                "block_rq_issue" | "block_rq_insert" | "block_rq_complete" => {
                    let action = match name {
                        "block_rq_issue" => BlockAction::Issue,
                        "block_rq_insert" => BlockAction::Insert,
                        _ => BlockAction::Complete,
                    };
                    let mut ev = parse_block_rq(line, body_at, action, &h)?;
                    ev.seq = self.next_seq(h.cpu);
                    TraceRecord::Block(ev)
                }
                other => {
                    *self.other_events.entry(other.to_string()).or_insert(0) += 1;
                    return Ok(());
                }
            };
            out.push_back(rec);
            return Ok(());
        }
        // The blk tracer's default layout: `DEV ACTION RWBS ...` after the timestamp.
        let dev: DevId = parse_dev(&first)?;
        let seq = self.next_seq(h.cpu);
        let mut ev = blkparse::parse_event_tail(&mut f, dev, h.cpu, seq, h.time_ns, h.pid)?;
        if ev.comm.is_none() && ev.action != BlockAction::Complete {
            ev.comm = Some(h.comm.to_string());
        }
        out.push_back(TraceRecord::Block(ev));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<TraceRecord>, LineError> {
        let mut p = FtraceParser::default();
        let mut out = VecDeque::new();
        for l in text.lines() {
            p.parse_line(l, &mut out)?;
        }
        Ok(out.into())
    }

    #[test]
    fn kernel_event_lines() {
        let v = parse(
            "# tracer: nop\n\
            bash-11008   [000] d..2.   504.532317: sched_switch: prev_comm=bash x prev_pid=11008 prev_prio=120 prev_state=S ==> next_comm=bash next_pid=11010 next_prio=120\n\
            dd-11010   [000] dN.4.   504.532540: sched_wakeup: comm=migration/0 pid=18 prio=0 target_cpu=000\n\
            dd-11010   [001] .....   504.532838: block_rq_issue: 254,0 RA 4096 () 12580672 + 8 be,0,4 [dd]\n\
            <idle>-0       [001] ..s1.   504.533112: block_rq_complete: 254,0 RA () 12580672 + 8 be,0,4 [0]\n\
            dd-11010   [001] .....   504.534027: block_rq_issue: 7,0 WS 4096 () 0 + 8 [dd]\n\
            dd-11010   [001] .....   504.534027: writeback_dirty_page: bdi 7:0\n",
        )
        .unwrap();
        assert_eq!(v.len(), 5);
        let TraceRecord::Sched(SchedRecord { event: SchedEvent::Switch { prev_comm, next_pid, prev_state, .. }, .. }) = &v[0]
        else {
            panic!()
        };
        assert_eq!((prev_comm.as_str(), *next_pid, prev_state.as_str()), ("bash x", 11010, "S"));
        let TraceRecord::Block(d) = &v[2] else { panic!() };
        assert_eq!(
            (d.action, d.sector, d.bytes, d.comm.as_deref(), d.time_ns),
            (BlockAction::Issue, 12580672, 4096, Some("dd"), 504_532_838_000)
        );
        let TraceRecord::Block(c) = &v[3] else { panic!() };
        assert_eq!((c.action, c.pid, c.cpu), (BlockAction::Complete, 0, 1));
    }

    #[test]
    fn trace_cmd_and_blk_tracer_lines() {
        let v = parse(
            "cpus=2\n\
            bash-2047  [002] 12345.678901: sched_switch:         bash:2047 [120] S ==> swapper/2:0 [120]\n\
            bash-2047  [002] 12345.678902: sched_wakeup:         kworker/2:1:99 [120] success=1 CPU:002\n\
            dd-5681    [001] d..1.   269.461225:   7,0    Q  WS 0 + 8 [dd]\n\
            ksoftirqd/1-22      [001] d.s1.   269.462398:   7,0    C  WS 0 + 8 [0]\n\
              7,0    1   274.460077301    22  C  WS 0 + 8 [0]\n",
        )
        .unwrap();
        assert_eq!(v.len(), 5);
        let TraceRecord::Sched(SchedRecord { event: SchedEvent::Wakeup { comm, pid, target_cpu, .. }, .. }) = &v[1] else {
            panic!()
        };
        assert_eq!((comm.as_str(), *pid, *target_cpu), ("kworker/2:1", 99, 2));
        let TraceRecord::Block(q) = &v[2] else { panic!() };
        assert_eq!((q.action, q.pid, q.comm.as_deref(), q.seq), (BlockAction::Queue, 5681, Some("dd"), 1));
        let TraceRecord::Block(c) = &v[4] else { panic!() };
        assert_eq!((c.time_ns, c.pid, c.cpu), (274_460_077_301, 22, 1));
    }

    #[test]
    fn errors() {
        let e = parse("dd-11010   [001] .....   504.534027: block_rq_issue: 7,0 WS 4096 () 0 x 8 [dd]\n").unwrap_err();
        assert_eq!(e.column, 71);
        let e = parse("dd-11010   [001] .....   504.5x: sched_switch: a\n").unwrap_err();
        assert!(e.message.contains("timestamp: expected seconds like 12.345678, found `504.5x`"), "{}", e.message);
        let e = parse("dd-11010   [001] .....   18446744073709551616.000001: sched_switch: a\n").unwrap_err();
        assert!(e.message.contains("timestamp: `18446744073709551616.000001` s is out of range"), "{}", e.message);
        let e = parse("dd-1 [001] 1.0: sched_wakeup: comm=a pid=1 prio=120\n").unwrap_err();
        assert!(e.message.contains("missing field: target_cpu"), "{}", e.message);
    }
}
