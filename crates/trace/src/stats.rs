//! `forefront trace stats`: counts, bytes, sequentiality, request sizes, per-process and FG/BG
//! split, and per-layer latencies of an imported trace, computed in one streaming pass.
//!
//! Definitions (also in `docs/trace.md`):
//! - **Block traces.** `requests` counts completed (`C`) reads and writes; `bytes_read` /
//!   `bytes_written` sum their sizes. The request stream used for the size histogram and
//!   `seq_fraction` is the dispatch (`D`) stream when the trace has `D` events, else the `C`
//!   stream; a request is sequential when it starts at the sector where the previous request of
//!   the same device and direction ended. Latencies pair events by (device, start sector):
//!   `Q`→`D` (queue→dispatch), `D`→`C` (dispatch→complete) and `Q`→`C`.
//! - **Syscall traces.** `bytes_read` / `bytes_written` sum read/write sizes (the result when
//!   it is known and non-negative, else the requested size); `fsyncs` counts `fsync` and
//!   `fdatasync`; an access is sequential when it starts where the previous access to the same
//!   file (by path, else by thread and fd) ended.
//! - `seq_fraction` = sequential / classified accesses; the first access of each stream is not
//!   classified. `null` when nothing was classified.
//! - Percentiles come from a log-linear histogram (64 sub-buckets per power of two: within
//!   1.6 % of the exact value, reported as the bucket's upper bound); `max_ns` is exact.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use forefront_record::trace::{BlockAction, BlockEvent, BlockOp, DevId, IoLayer, IoSpan, SchedEvent, SyscallRecord, TraceRecord};
use serde::Serialize;

use crate::InputFormat;

/// Which processes are foreground: by pid/tid, or by process name.
#[derive(Clone, Debug, Default)]
pub struct FgSelector {
    pub pids: Vec<u32>,
    pub comms: Vec<String>,
}

impl FgSelector {
    /// Parses `--fg` values: numbers are pids/tids, anything else a process name.
    pub fn parse(values: &[String]) -> FgSelector {
        let mut s = FgSelector::default();
        for v in values {
            match v.parse::<u32>() {
                Ok(p) => s.pids.push(p),
                Err(_) => s.comms.push(v.clone()),
            }
        }
        s
    }

    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.comms.is_empty()
    }

    pub fn matches(&self, pid: u32, comm: Option<&str>) -> bool {
        self.pids.contains(&pid) || comm.is_some_and(|c| self.comms.iter().any(|x| x == c))
    }

    /// The `--fg` rule of `trace stats`, `trace convert` and `sim replay`: every value must
    /// match something in the trace. The first value that matches nothing is an error naming
    /// it, with the closest name present and a few of the names (or ids) the trace has.
    pub fn check(&self, present: &TraceNames) -> Result<(), FgError> {
        for c in &self.comms {
            if present.comms.contains(c) {
                continue;
            }
            let suggestion = present
                .comms
                .iter()
                .map(|n| (strsim::jaro_winkler(c, n), n))
                .filter(|(score, _)| *score >= 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, n)| n.clone());
            let present = if present.comms.is_empty() {
                format!("this trace names no process; its ids: {}", few(present.ids.iter()))
            } else {
                format!("names in the trace: {}", few(present.comms.iter()))
            };
            return Err(FgError { value: c.clone(), suggestion, present });
        }
        for p in &self.pids {
            if !present.ids.contains(p) {
                let present = if present.ids.is_empty() {
                    "this trace has no process or thread ids".to_owned()
                } else {
                    format!("ids in the trace: {}", few(present.ids.iter()))
                };
                return Err(FgError { value: p.to_string(), suggestion: None, present });
            }
        }
        Ok(())
    }
}

/// Up to 8 items, then how many there are in all.
fn few<T: std::fmt::Display>(items: impl ExactSizeIterator<Item = T>) -> String {
    let n = items.len();
    let mut s = items.take(8).map(|x| crate::text::shown(&x.to_string()).into_owned()).collect::<Vec<_>>().join(", ");
    if n > 8 {
        let _ = write!(s, ", … ({n} in all)");
    }
    s
}

/// An `--fg` value that matches no process or thread of the trace.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--fg {value}: matches no process or thread in the trace{}; {present}", suggestion.as_ref().map_or_else(String::new, |s| format!(" (did you mean `{s}`?)")))]
pub struct FgError {
    /// The value as given.
    pub value: String,
    /// The closest process name present, if one is close.
    pub suggestion: Option<String>,
    /// A few of the names or ids the trace has.
    pub present: String,
}

/// The process ids, thread ids and process names a trace mentions, which `--fg` values are
/// checked against ([`FgSelector::check`]).
#[derive(Clone, Debug, Default)]
pub struct TraceNames {
    pub ids: std::collections::BTreeSet<u32>,
    pub comms: std::collections::BTreeSet<String>,
}

impl TraceNames {
    /// Adds the ids and names one record carries (those `--fg` can select it by).
    pub fn add(&mut self, r: &TraceRecord) {
        let mut name = |c: Option<&str>| {
            if let Some(c) = c {
                if !self.comms.contains(c) {
                    self.comms.insert(c.to_owned());
                }
            }
        };
        match r {
            TraceRecord::Block(b) => {
                name(b.comm.as_deref());
                self.ids.insert(b.pid);
            }
            TraceRecord::Syscall(c) => {
                name(c.comm.as_deref());
                self.ids.insert(c.tid);
            }
            TraceRecord::Span(s) => {
                self.ids.insert(s.pid);
            }
            TraceRecord::Sched(s) => match &s.event {
                SchedEvent::Switch { prev_pid, prev_comm, .. } => {
                    name(Some(prev_comm));
                    self.ids.insert(*prev_pid);
                }
                SchedEvent::Wakeup { pid, comm, .. } => {
                    name(Some(comm));
                    self.ids.insert(*pid);
                }
            },
        }
    }

    /// The names and ids of a finished statistics pass.
    pub fn of_stats(s: &TraceStats) -> TraceNames {
        TraceNames {
            ids: s.processes.keys().copied().collect(),
            comms: s.processes.values().filter_map(|p| p.comm.clone()).collect(),
        }
    }
}

/// A latency distribution summary, nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// Log-linear histogram (64 sub-buckets per power of two).
#[derive(Clone, Debug)]
pub struct LatencyHist {
    buckets: Vec<u64>,
    count: u64,
    max: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist { buckets: vec![0; 64 + 58 * 64], count: 0, max: 0 }
    }
}

impl LatencyHist {
    fn index(v: u64) -> usize {
        if v < 64 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as usize;
        let mant = (v >> (e - 6)) as usize; // 64..=127
        64 + (e - 6) * 64 + (mant - 64)
    }

    fn upper(idx: usize) -> u64 {
        if idx < 64 {
            return idx as u64;
        }
        let e = (idx - 64) / 64 + 6;
        let mant = ((idx - 64) % 64 + 64) as u64;
        (((mant + 1) as u128) << (e - 6)).saturating_sub(1).min(u64::MAX as u128) as u64
    }

    pub fn record(&mut self, v: u64) {
        self.buckets[Self::index(v)] += 1;
        self.count += 1;
        self.max = self.max.max(v);
    }

    /// Value at quantile `q` (0..=1): the upper bound of the bucket holding rank ⌈q·n⌉,
    /// capped at the exact maximum.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::upper(i).min(self.max);
            }
        }
        self.max
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.count,
            p50_ns: self.quantile(0.50),
            p90_ns: self.quantile(0.90),
            p99_ns: self.quantile(0.99),
            max_ns: self.max,
        }
    }
}

/// Per-process totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProcessStats {
    pub comm: Option<String>,
    pub fg: bool,
    pub records: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// Totals of one side of the FG/BG split.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SplitStats {
    pub processes: u64,
    pub records: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// One request-size histogram bucket: sizes in `(previous le, le]` bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeBucket {
    pub le: u64,
    pub count: u64,
}

/// Everything `forefront trace stats` reports. Field names are the JSON contract.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceStats {
    pub format: String,
    pub records: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<BTreeMap<String, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched: Option<BTreeMap<String, u64>>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub fsyncs: u64,
    /// Block traces: completed requests with a preflush or FUA, or flush requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flushes: Option<u64>,
    pub seq_fraction: Option<f64>,
    pub seq_accesses: u64,
    pub classified_accesses: u64,
    pub request_sizes: Vec<SizeBucket>,
    /// `q2d`, `d2c`, `q2c` (block), `<layer>` (IOPro), `syscall:<name>` (strace `-T`).
    pub latency: BTreeMap<String, LatencySummary>,
    pub duration_ns: u64,
    pub processes: BTreeMap<u32, ProcessStats>,
    /// The FG/BG split: present only when `--fg` selected something (no `--fg`, no split).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fg: Option<SplitStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bg: Option<SplitStats>,
    pub fg_selector: Vec<String>,
}

#[derive(Default)]
struct SeqTracker {
    last_end: HashMap<(DevId, bool), u64>,
    seq: u64,
    classified: u64,
    sizes: BTreeMap<u64, u64>,
    n: u64,
}

impl SeqTracker {
    /// `start` and `len` in one unit (sectors or bytes); `bytes` for the size histogram.
    fn add(&mut self, key: (DevId, bool), start: u64, len: u64, bytes: u64) {
        self.n += 1;
        if bytes > 0 {
            *self.sizes.entry(bytes.checked_next_power_of_two().unwrap_or(u64::MAX)).or_insert(0) += 1;
        }
        if let Some(prev) = self.last_end.insert(key, start.saturating_add(len)) {
            self.classified += 1;
            if prev == start {
                self.seq += 1;
            }
        }
    }
}

/// Accumulates [`TraceStats`] record by record.
pub struct StatsBuilder {
    fg: FgSelector,
    s: TraceStats,
    syscalls: BTreeMap<String, u64>,
    actions: BTreeMap<String, u64>,
    requests: BTreeMap<String, u64>,
    layers: BTreeMap<String, u64>,
    sched: BTreeMap<String, u64>,
    flushes: u64,
    has_block: bool,
    has_sys: bool,
    has_span: bool,
    has_sched: bool,
    d_stream: SeqTracker,
    c_stream: SeqTracker,
    file_seq: SeqTracker,
    file_keys: HashMap<String, u32>,
    /// (dev, sector) → (queue time, pid, comm) of requests not yet dispatched.
    queued: HashMap<(DevId, u64), (u64, u32, Option<String>)>,
    /// (dev, sector) → (dispatch time, queue time, pid, comm) of requests in flight.
    issued: HashMap<(DevId, u64), InFlight>,
    hists: BTreeMap<String, LatencyHist>,
    first_time: Option<u64>,
    last_time: u64,
}

/// A dispatched request: (dispatch time, queue time, pid and comm it is attributed to).
type InFlight = (u64, Option<u64>, u32, Option<String>);

/// Bound on requests waiting to be paired (a trace cut mid-flight must not grow memory).
const MAX_PENDING: usize = 1 << 20;

impl StatsBuilder {
    pub fn new(fg: FgSelector) -> StatsBuilder {
        StatsBuilder {
            s: TraceStats {
                fg_selector: fg.pids.iter().map(|p| p.to_string()).chain(fg.comms.iter().cloned()).collect(),
                ..Default::default()
            },
            fg,
            syscalls: BTreeMap::new(),
            actions: BTreeMap::new(),
            requests: BTreeMap::new(),
            layers: BTreeMap::new(),
            sched: BTreeMap::new(),
            flushes: 0,
            has_block: false,
            has_sys: false,
            has_span: false,
            has_sched: false,
            d_stream: SeqTracker::default(),
            c_stream: SeqTracker::default(),
            file_seq: SeqTracker::default(),
            file_keys: HashMap::new(),
            queued: HashMap::new(),
            issued: HashMap::new(),
            hists: BTreeMap::new(),
            first_time: None,
            last_time: 0,
        }
    }

    fn proc(&mut self, pid: u32, comm: Option<&str>) -> &mut ProcessStats {
        let fg = self.fg.matches(pid, comm);
        let p = self.s.processes.entry(pid).or_default();
        if p.comm.is_none() {
            if let Some(c) = comm {
                p.comm = Some(c.to_string());
            }
        }
        p.fg |= fg;
        p
    }

    fn lat(&mut self, key: &str, v: u64) {
        if let Some(h) = self.hists.get_mut(key) {
            h.record(v);
        } else {
            let mut h = LatencyHist::default();
            h.record(v);
            self.hists.insert(key.to_string(), h);
        }
    }

    pub fn add(&mut self, r: &TraceRecord) {
        self.s.records += 1;
        let t = r.time_ns();
        self.first_time = Some(self.first_time.map_or(t, |f| f.min(t)));
        self.last_time = self.last_time.max(t);
        match r {
            TraceRecord::Block(b) => self.add_block(b),
            TraceRecord::Syscall(c) => self.add_syscall(c),
            TraceRecord::Span(s) => self.add_span(s),
            TraceRecord::Sched(s) => {
                self.has_sched = true;
                let (k, pid, comm) = match &s.event {
                    SchedEvent::Switch { prev_pid, prev_comm, .. } => ("switch", *prev_pid, prev_comm.as_str()),
                    SchedEvent::Wakeup { pid, comm, .. } => ("wakeup", *pid, comm.as_str()),
                };
                *self.sched.entry(k.to_string()).or_insert(0) += 1;
                self.proc(pid, Some(comm)).records += 1;
            }
        }
    }

    fn add_block(&mut self, b: &BlockEvent) {
        self.has_block = true;
        *self.actions.entry(b.action.code().to_string()).or_insert(0) += 1;
        self.proc(b.pid, b.comm.as_deref()).records += 1;
        let key = (b.dev, b.sector);
        let dir = (b.dev, b.rwbs.is_write());
        let data = matches!(b.rwbs.op, BlockOp::Read | BlockOp::Write);
        match b.action {
            BlockAction::Queue => {
                if self.queued.len() >= MAX_PENDING {
                    self.queued.clear();
                }
                self.queued.entry(key).or_insert((b.time_ns, b.pid, b.comm.clone()));
            }
            BlockAction::BackMerge => {
                self.queued.remove(&key);
            }
            BlockAction::Issue => {
                if data {
                    self.d_stream.add(dir, b.sector, b.nsectors(), b.bytes);
                }
                let q = self.queued.remove(&key);
                if let Some((qt, _, _)) = &q {
                    self.lat("q2d", b.time_ns.saturating_sub(*qt));
                }
                let qt = q.as_ref().map(|x| x.0);
                let (pid, comm) = match q {
                    Some((_, p, c)) => (p, c),
                    None => (b.pid, b.comm.clone()),
                };
                if self.issued.len() >= MAX_PENDING {
                    self.issued.clear();
                }
                self.issued.insert(key, (b.time_ns, qt, pid, comm));
            }
            BlockAction::Requeue => {
                self.issued.remove(&key);
            }
            BlockAction::Complete => {
                if data {
                    self.c_stream.add(dir, b.sector, b.nsectors(), b.bytes);
                }
                if b.rwbs.preflush || b.rwbs.fua || b.rwbs.op == BlockOp::Flush {
                    self.flushes += 1;
                }
                let (pid, comm) = match self.issued.remove(&key) {
                    Some((dt, qt, pid, comm)) => {
                        self.lat("d2c", b.time_ns.saturating_sub(dt));
                        if let Some(qt) = qt {
                            self.lat("q2c", b.time_ns.saturating_sub(qt));
                        }
                        (pid, comm)
                    }
                    None => match self.queued.remove(&key) {
                        Some((qt, pid, comm)) => {
                            self.lat("q2c", b.time_ns.saturating_sub(qt));
                            (pid, comm)
                        }
                        None => (b.pid, b.comm.clone()),
                    },
                };
                if data {
                    let w = b.rwbs.is_write();
                    *self.requests.entry(if w { "W" } else { "R" }.to_string()).or_insert(0) += 1;
                    let p = self.proc(pid, comm.as_deref());
                    if w {
                        p.writes += 1;
                        p.bytes_written = p.bytes_written.saturating_add(b.bytes);
                        self.s.bytes_written = self.s.bytes_written.saturating_add(b.bytes);
                    } else {
                        p.reads += 1;
                        p.bytes_read = p.bytes_read.saturating_add(b.bytes);
                        self.s.bytes_read = self.s.bytes_read.saturating_add(b.bytes);
                    }
                }
            }
            _ => {}
        }
    }

    fn file_key(&mut self, tid: u32, fd: Option<i32>, path: Option<&str>) -> DevId {
        // Streams are keyed through a small interner so the sequential tracker can share
        // the block code path: (DevId { major: id, minor: 0 }, direction-less).
        let k = match path {
            Some(p) => p.to_string(),
            None => format!("\0{tid}:{}", fd.unwrap_or(-1)),
        };
        let n = self.file_keys.len() as u32;
        let id = *self.file_keys.entry(k).or_insert(n);
        DevId { major: id, minor: 0 }
    }

    fn add_syscall(&mut self, c: &SyscallRecord) {
        self.has_sys = true;
        *self.syscalls.entry(c.name.clone()).or_insert(0) += 1;
        self.proc(c.tid, c.comm.as_deref()).records += 1;
        if let Some(d) = c.duration_ns {
            let key = format!("syscall:{}", c.name);
            self.lat(&key, d);
        }
        let base = c.name.trim_end_matches("64");
        let is_read = matches!(base, "read" | "pread" | "readv" | "preadv" | "preadv2");
        let is_write = matches!(base, "write" | "pwrite" | "writev" | "pwritev" | "pwritev2");
        if matches!(c.name.as_str(), "fsync" | "fdatasync") {
            self.s.fsyncs += 1;
        }
        if !(is_read || is_write) {
            return;
        }
        let done = match c.result {
            Some(v) if v >= 0 => v as u64,
            Some(_) => 0,
            None => c.size.unwrap_or(0),
        };
        if let Some(off) = c.offset {
            if done > 0 {
                let dev = self.file_key(c.tid, c.fd, c.path.as_deref());
                self.file_seq.add((dev, false), off, done, done);
            }
        } else if done > 0 {
            *self.file_seq.sizes.entry(done.checked_next_power_of_two().unwrap_or(u64::MAX)).or_insert(0) += 1;
        }
        let p = self.proc(c.tid, None);
        if is_write {
            p.writes += 1;
            p.bytes_written = p.bytes_written.saturating_add(done);
            self.s.bytes_written = self.s.bytes_written.saturating_add(done);
        } else {
            p.reads += 1;
            p.bytes_read = p.bytes_read.saturating_add(done);
            self.s.bytes_read = self.s.bytes_read.saturating_add(done);
        }
    }

    fn add_span(&mut self, s: &IoSpan) {
        self.has_span = true;
        let name = format!("{:?}", s.layer).to_lowercase();
        *self.layers.entry(name.clone()).or_insert(0) += 1;
        self.lat(&name, s.duration_ns);
        self.proc(s.pid, None).records += 1;
        if s.layer != IoLayer::Syscall || s.rw_raw > 1 {
            return;
        }
        if s.size > 0 {
            let dev = DevId { major: u32::try_from(s.inode & 0xffff_ffff).unwrap_or(0), minor: (s.inode >> 32) as u32 };
            self.file_seq.add((dev, false), s.offset, s.size, s.size);
        }
        let p = self.proc(s.pid, None);
        if s.write {
            p.writes += 1;
            p.bytes_written = p.bytes_written.saturating_add(s.size);
            self.s.bytes_written = self.s.bytes_written.saturating_add(s.size);
        } else {
            p.reads += 1;
            p.bytes_read = p.bytes_read.saturating_add(s.size);
            self.s.bytes_read = self.s.bytes_read.saturating_add(s.size);
        }
    }

    pub fn finish(mut self, format: InputFormat) -> TraceStats {
        let mut s = std::mem::take(&mut self.s);
        s.format = format.name().to_string();
        s.duration_ns = self.last_time - self.first_time.unwrap_or(0);
        let stream = if self.has_block {
            s.actions = Some(std::mem::take(&mut self.actions));
            let mut req = std::mem::take(&mut self.requests);
            req.entry("R".into()).or_insert(0);
            req.entry("W".into()).or_insert(0);
            s.requests = Some(req);
            s.flushes = Some(self.flushes);
            if self.d_stream.n > 0 {
                &self.d_stream
            } else {
                &self.c_stream
            }
        } else {
            &self.file_seq
        };
        s.seq_accesses = stream.seq;
        s.classified_accesses = stream.classified;
        s.seq_fraction = (stream.classified > 0).then(|| stream.seq as f64 / stream.classified as f64);
        s.request_sizes = stream.sizes.iter().map(|(&le, &count)| SizeBucket { le, count }).collect();
        if self.has_sys {
            s.syscalls = Some(std::mem::take(&mut self.syscalls));
        }
        if self.has_span {
            s.layers = Some(std::mem::take(&mut self.layers));
        }
        if self.has_sched {
            s.sched = Some(std::mem::take(&mut self.sched));
        }
        s.latency = self.hists.iter().map(|(k, h)| (k.clone(), h.summary())).collect();
        if !self.fg.is_empty() {
            s.fg = Some(SplitStats::default());
            s.bg = Some(SplitStats::default());
        }
        for p in s.processes.values() {
            let side = if p.fg { &mut s.fg } else { &mut s.bg };
            let Some(side) = side else { continue };
            side.processes += 1;
            side.records += p.records;
            side.reads += p.reads;
            side.writes += p.writes;
            side.bytes_read += p.bytes_read;
            side.bytes_written += p.bytes_written;
        }
        s
    }
}

fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

fn human_ns(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.3} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1} us", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// The longest name a table cell shows, in characters; longer ones are cut with `…` (JSON keeps
/// them whole). Laying out a table costs more than linear time in a cell's width, so a
/// megabyte-long process name must not reach it.
pub const MAX_CELL_CHARS: usize = 48;

fn cell(name: &str) -> String {
    match name.char_indices().nth(MAX_CELL_CHARS - 1) {
        Some((i, _)) if name.chars().nth(MAX_CELL_CHARS).is_some() => format!("{}…", &name[..i]),
        _ => name.to_owned(),
    }
}

/// A table in the style of the other `forefront` tables (Markdown pipes, so it pastes into an
/// issue), numbers right-aligned. `right` lists the right-aligned columns.
fn table(header: &[&str], right: &[usize], rows: impl IntoIterator<Item = Vec<String>>) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN).set_header(header.iter().copied());
    for r in rows {
        t.add_row(r);
    }
    for &i in right {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    t
}

/// Renders the human-readable table (`--format table`).
pub fn render_table(s: &TraceStats, max_processes: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "format          {}", s.format);
    let _ = writeln!(o, "records         {}", s.records);
    let _ = writeln!(o, "duration        {}", human_ns(s.duration_ns));
    let _ = writeln!(o, "bytes read      {} ({})", s.bytes_read, human_bytes(s.bytes_read));
    let _ = writeln!(o, "bytes written   {} ({})", s.bytes_written, human_bytes(s.bytes_written));
    let _ = writeln!(o, "fsync+fdatasync {}", s.fsyncs);
    if let Some(f) = s.flushes {
        let _ = writeln!(o, "flush/FUA reqs  {f}");
    }
    match s.seq_fraction {
        Some(f) => {
            let _ = writeln!(o, "sequential      {:.1}% ({} of {} classified)", f * 100.0, s.seq_accesses, s.classified_accesses);
        }
        None => {
            let _ = writeln!(o, "sequential      n/a (no classified accesses)");
        }
    }
    type Counts<'a> = (&'a str, &'a str, &'a Option<BTreeMap<String, u64>>);
    let counts: [Counts; 5] = [
        ("completed requests", "op", &s.requests),
        ("actions", "action", &s.actions),
        ("syscalls", "syscall", &s.syscalls),
        ("layers", "layer", &s.layers),
        ("scheduler events", "event", &s.sched),
    ];
    for (title, what, map) in counts {
        if let Some(m) = map {
            let mut v: Vec<_> = m.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let t = table(&[what, "count"], &[1], v.into_iter().map(|(k, n)| vec![cell(k), n.to_string()]));
            let _ = writeln!(o, "\n{title}:\n{t}");
        }
    }
    if !s.request_sizes.is_empty() {
        let total: u64 = s.request_sizes.iter().map(|b| b.count).sum();
        let rows = s.request_sizes.iter().map(|b| {
            let bar = "#".repeat(((b.count * 40) / total.max(1)) as usize);
            vec![format!("<= {}", b.le), b.count.to_string(), bar]
        });
        let t = table(&["bytes", "count", "share"], &[1], rows);
        let _ = writeln!(o, "\nrequest sizes:\n{t}");
    }
    if !s.latency.is_empty() {
        let rows = s.latency.iter().map(|(k, l)| {
            vec![cell(k), l.count.to_string(), human_ns(l.p50_ns), human_ns(l.p90_ns), human_ns(l.p99_ns), human_ns(l.max_ns)]
        });
        let t = table(&["latency", "count", "p50", "p90", "p99", "max"], &[1, 2, 3, 4, 5], rows);
        let _ = writeln!(o, "\n{t}");
    }
    let split = s.fg.is_some();
    if let (Some(fg), Some(bg)) = (&s.fg, &s.bg) {
        let rows = [("FG", fg), ("BG", bg)].into_iter().map(|(name, side)| {
            vec![
                name.to_owned(),
                side.processes.to_string(),
                side.records.to_string(),
                side.reads.to_string(),
                side.writes.to_string(),
                human_bytes(side.bytes_read),
                human_bytes(side.bytes_written),
            ]
        });
        let t = table(&["side", "processes", "records", "reads", "writes", "read", "written"], &[1, 2, 3, 4, 5, 6], rows);
        let _ = writeln!(o, "\nFG/BG split (--fg {}):\n{t}", s.fg_selector.join(", --fg "));
    } else {
        let _ = writeln!(o, "\n(no --fg given: no FG/BG split)");
    }
    let mut procs: Vec<_> = s.processes.iter().collect();
    procs.sort_by(|a, b| {
        (b.1.bytes_read + b.1.bytes_written, b.1.records)
            .cmp(&(a.1.bytes_read + a.1.bytes_written, a.1.records))
            .then(a.0.cmp(b.0))
    });
    let rows = procs.iter().take(max_processes).map(|(pid, p)| {
        let mut row = vec![pid.to_string(), p.comm.as_deref().map_or_else(|| "-".into(), cell)];
        if split {
            row.push(if p.fg { "*" } else { "" }.to_owned());
        }
        row.extend([
            p.records.to_string(),
            p.reads.to_string(),
            p.writes.to_string(),
            human_bytes(p.bytes_read),
            human_bytes(p.bytes_written),
        ]);
        row
    });
    let t = if split {
        table(&["pid", "comm", "fg", "records", "reads", "writes", "read", "written"], &[0, 3, 4, 5, 6, 7], rows)
    } else {
        table(&["pid", "comm", "records", "reads", "writes", "read", "written"], &[0, 2, 3, 4, 5, 6], rows)
    };
    let _ = writeln!(o, "\nprocesses:\n{t}");
    if procs.len() > max_processes {
        let _ = writeln!(o, "  ... {} more processes (see --format json)", procs.len() - max_processes);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_in_cells() {
        assert_eq!(cell("fio"), "fio");
        let exact = "é".repeat(MAX_CELL_CHARS);
        assert_eq!(cell(&exact), exact);
        let long = "é".repeat(MAX_CELL_CHARS + 1);
        let c = cell(&long);
        assert_eq!(c.chars().count(), MAX_CELL_CHARS);
        assert!(c.ends_with("é…"), "{c}");
    }

    #[test]
    fn histogram_is_within_its_bucket_width() {
        let mut h = LatencyHist::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5);
        assert!((50_000_000..=50_000_000 * 102 / 100).contains(&p50), "{p50}");
        assert_eq!(h.quantile(1.0), 100_000_000);
        assert_eq!(h.summary().count, 100_000);
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1 << 40, u64::MAX] {
            let i = LatencyHist::index(v);
            assert!(LatencyHist::upper(i) >= v, "{v}");
            if i > 0 {
                assert!(LatencyHist::upper(i - 1) < v, "{v}");
            }
        }
    }

    #[test]
    fn fg_selector_parses_pids_and_names() {
        let s = FgSelector::parse(&["12".into(), "dd".into()]);
        assert!(s.matches(12, None) && s.matches(5, Some("dd")) && !s.matches(5, Some("cat")));
    }
}
