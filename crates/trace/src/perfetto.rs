//! `forefront trace convert`: Chrome trace-event JSON, which Perfetto and `chrome://tracing`
//! open.
//!
//! Tracks: syscall spans (`X` events) on one Perfetto process per app (process name, e.g.
//! what strace saw `execve`d) with a thread track per thread named `app/tid`; threads of no
//! known name go to a process "syscalls" as `tid N`. Per block device a process with "queue"
//! lanes (`Q`→`D` spans) and "device" lanes (`D`→`C` spans) and a `queue depth` counter
//! (requests dispatched and not completed); a "CPUs" process with a thread per CPU (task
//! slices from `sched_switch`); IOPro spans on their pid/tid. Overlapping request spans are put
//! on the first free lane so every lane nests properly.
//!
//! With a foreground selector (`--fg`), the FG app's syscalls, requests and CPU slices are
//! named `FG ...` and coloured `thread_state_running` (green), the others
//! `thread_state_iowait`; with none, nothing is marked and Perfetto colours by name. Output is
//! streamed (constant memory except for requests in flight) and deterministic.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use forefront_record::trace::{BlockAction, BlockEvent, DevId, SchedEvent, TraceRecord};

use crate::stats::FgSelector;

const SYSCALL_PID: u64 = 1;
const CPU_PID: u64 = 2;
const DEV_PID_BASE: u64 = 1_000_000;

/// Streams trace events as JSON.
pub struct PerfettoWriter<W: Write> {
    out: W,
    first: bool,
    fg: FgSelector,
    threads: BTreeMap<(u64, u64), ()>,
    devices: BTreeMap<DevId, u64>,
    queued: HashMap<(DevId, u64), (u64, u32, Option<String>)>,
    issued: HashMap<(DevId, u64), (u64, u32, Option<String>)>,
    lanes: HashMap<(u64, bool), Lanes>,
    depth: HashMap<DevId, i64>,
    cpu_running: BTreeMap<u32, (u64, String, u32)>,
    /// Named threads ([`PerfettoWriter::name_threads`], or a syscall's process name): tid →
    /// (process id, process, thread). A thread keeps the track of its first name.
    names: HashMap<u32, (u64, String, String)>,
    /// Apps (process names) → their Perfetto process id, in order of appearance.
    apps: BTreeMap<String, u64>,
    pub events: u64,
}

/// The lanes of one queue or device track: when each is busy until. The first lane free at a
/// time is found in O(log lanes) with a tree of minimums over the lanes (a linear scan made a
/// trace of 200,000 overlapping requests take 7.8 s, growing with the square of the count).
#[derive(Default)]
struct Lanes {
    /// Lanes in use.
    len: usize,
    /// Leaves: `tree[cap + i]` is lane `i`'s busy-until (`u64::MAX` past `len`); inner node
    /// `k` holds the minimum of `2k` and `2k + 1`. `cap` is a power of two.
    tree: Vec<u64>,
    cap: usize,
}

impl Lanes {
    /// The lowest lane with busy-until ≤ `start` (a new lane if none), now busy until `end`.
    fn take(&mut self, start: u64, end: u64) -> usize {
        let mut i = self.len;
        if self.len > 0 && self.tree[1] <= start {
            let mut k = 1;
            while k < self.cap {
                k = if self.tree[2 * k] <= start { 2 * k } else { 2 * k + 1 };
            }
            i = i.min(k - self.cap);
        }
        if i == self.len {
            if self.len == self.cap {
                self.grow();
            }
            self.len += 1;
        }
        let mut k = self.cap + i;
        self.tree[k] = end;
        while k > 1 {
            k /= 2;
            self.tree[k] = self.tree[2 * k].min(self.tree[2 * k + 1]);
        }
        i
    }

    fn grow(&mut self) {
        let cap = (self.cap * 2).max(1);
        let mut tree = vec![u64::MAX; 2 * cap];
        tree[cap..cap + self.len].copy_from_slice(&self.tree[self.cap..self.cap + self.len]);
        for k in (1..cap).rev() {
            tree[k] = tree[2 * k].min(tree[2 * k + 1]);
        }
        self.tree = tree;
        self.cap = cap;
    }
}

/// Process ids of named processes (apps) start here, after the fixed ones.
const APP_PID_BASE: u64 = 100;

fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn js(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

/// `,"comm":"name"` for a request's args when the trace named its process.
fn comm_arg(comm: Option<&str>) -> String {
    comm.map(|c| format!(",\"comm\":{}", js(c))).unwrap_or_default()
}

impl<W: Write> PerfettoWriter<W> {
    pub fn new(mut out: W, fg: FgSelector) -> io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let mut w = PerfettoWriter {
            out,
            first: true,
            fg,
            threads: BTreeMap::new(),
            devices: BTreeMap::new(),
            queued: HashMap::new(),
            issued: HashMap::new(),
            lanes: HashMap::new(),
            depth: HashMap::new(),
            cpu_running: BTreeMap::new(),
            names: HashMap::new(),
            apps: BTreeMap::new(),
            events: 0,
        };
        w.meta("process_name", SYSCALL_PID, None, "syscalls")?;
        Ok(w)
    }

    fn raw(&mut self, json: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.events += 1;
        self.out.write_all(json.as_bytes())
    }

    /// The colour of a span: FG or not when there is a selector, Perfetto's default otherwise.
    fn cname(&self, fg: bool) -> &'static str {
        match (self.fg.is_empty(), fg) {
            (true, _) => "",
            (false, true) => ",\"cname\":\"thread_state_running\"",
            (false, false) => ",\"cname\":\"thread_state_iowait\"",
        }
    }

    fn meta(&mut self, what: &str, pid: u64, tid: Option<u64>, name: &str) -> io::Result<()> {
        let tid = tid.map(|t| format!(",\"tid\":{t}")).unwrap_or_default();
        self.raw(&format!("{{\"name\":\"{what}\",\"ph\":\"M\",\"pid\":{pid}{tid},\"args\":{{\"name\":{}}}}}", js(name)))
    }

    fn thread(&mut self, pid: u64, tid: u64, name: &str) -> io::Result<()> {
        if self.threads.insert((pid, tid), ()).is_none() {
            self.meta("thread_name", pid, Some(tid), name)?;
        }
        Ok(())
    }

    fn dev_pid(&mut self, dev: DevId) -> io::Result<u64> {
        if let Some(p) = self.devices.get(&dev) {
            return Ok(*p);
        }
        let pid = DEV_PID_BASE + self.devices.len() as u64;
        self.devices.insert(dev, pid);
        self.meta("process_name", pid, None, &format!("block {dev}"))?;
        Ok(pid)
    }

    /// First lane free at `start`, marked busy until `end`.
    fn lane(&mut self, pid: u64, device: bool, start: u64, end: u64) -> usize {
        self.lanes.entry((pid, device)).or_default().take(start, end)
    }

    #[allow(clippy::too_many_arguments)]
    fn span(&mut self, pid: u64, device: bool, start: u64, end: u64, name: &str, fg: bool, args: &str) -> io::Result<()> {
        let lane = self.lane(pid, device, start, end);
        let tid = if device { 1000 + lane as u64 } else { lane as u64 + 1 };
        let tname = if device { format!("device {lane}") } else { format!("queue {lane}") };
        self.thread(pid, tid, &tname)?;
        let cname = self.cname(fg);
        self.raw(&format!(
            "{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{tid}{cname},\"args\":{args}}}",
            js(name),
            if device { "device" } else { "queue" },
            us(start),
            us(end.saturating_sub(start))
        ))
    }

    fn block(&mut self, b: &BlockEvent) -> io::Result<()> {
        let pid = self.dev_pid(b.dev)?;
        let key = (b.dev, b.sector);
        match b.action {
            BlockAction::Queue => {
                self.queued.entry(key).or_insert((b.time_ns, b.pid, b.comm.clone()));
            }
            BlockAction::BackMerge => {
                self.queued.remove(&key);
            }
            BlockAction::Issue => {
                let (who, comm) = match self.queued.remove(&key) {
                    Some((qt, p, c)) => {
                        let fg = self.fg.matches(p, c.as_deref());
                        let name = format!("{}{} {}", if fg { "FG " } else { "" }, b.rwbs, b.bytes);
                        let args =
                            format!("{{\"sector\":{},\"bytes\":{},\"pid\":{p}{}}}", b.sector, b.bytes, comm_arg(c.as_deref()));
                        self.span(pid, false, qt, b.time_ns, &name, fg, &args)?;
                        (p, c)
                    }
                    None => (b.pid, b.comm.clone()),
                };
                self.issued.insert(key, (b.time_ns, who, comm));
                let d = self.depth.entry(b.dev).or_insert(0);
                *d += 1;
                let d = *d;
                self.raw(&format!(
                    "{{\"name\":\"queue depth\",\"ph\":\"C\",\"ts\":{},\"pid\":{pid},\"args\":{{\"in_flight\":{d}}}}}",
                    us(b.time_ns)
                ))?;
            }
            BlockAction::Complete | BlockAction::Requeue => {
                if let Some((dt, p, c)) = self.issued.remove(&key) {
                    let fg = self.fg.matches(p, c.as_deref());
                    let name = format!("{}{} {}", if fg { "FG " } else { "" }, b.rwbs, b.bytes);
                    let args = format!(
                        "{{\"sector\":{},\"bytes\":{},\"pid\":{p}{},\"error\":{}}}",
                        b.sector,
                        b.bytes,
                        comm_arg(c.as_deref()),
                        b.error
                    );
                    self.span(pid, true, dt, b.time_ns, &name, fg, &args)?;
                    let d = self.depth.entry(b.dev).or_insert(0);
                    *d = (*d - 1).max(0);
                    let d = *d;
                    self.raw(&format!(
                        "{{\"name\":\"queue depth\",\"ph\":\"C\",\"ts\":{},\"pid\":{pid},\"args\":{{\"in_flight\":{d}}}}}",
                        us(b.time_ns)
                    ))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Name the threads of syscall records: each `(tid, process, thread)` puts the thread's
    /// calls on a track "process/thread" inside one Perfetto process per distinct process name
    /// (an app), instead of "tid N" under "syscalls". Threads not named keep that default.
    pub fn name_threads(&mut self, names: impl IntoIterator<Item = (u32, String, String)>) {
        for (tid, process, thread) in names {
            let pid = self.app_pid(&process);
            self.names.insert(tid, (pid, process, thread));
        }
    }

    fn app_pid(&mut self, app: &str) -> u64 {
        if let Some(&p) = self.apps.get(app) {
            return p;
        }
        let p = APP_PID_BASE + self.apps.len() as u64;
        self.apps.insert(app.to_owned(), p);
        p
    }

    pub fn add(&mut self, r: &TraceRecord) -> io::Result<()> {
        match r {
            TraceRecord::Syscall(c) => {
                // A named thread (the simulator's), else the process name an imported trace
                // gives (strace: what was `execve`d; after an exec the thread's calls move to
                // the new app's process), else "syscalls".
                let (pid, process, thread) = match (self.names.get(&c.tid), &c.comm) {
                    (Some((pid, process, thread)), _) => (*pid, process.as_str(), thread.clone()),
                    (None, Some(app)) => (self.app_pid(app), app.as_str(), c.tid.to_string()),
                    (None, None) => (SYSCALL_PID, "", String::new()),
                };
                if !self.threads.contains_key(&(pid, c.tid as u64)) {
                    let (process, track) = if pid == SYSCALL_PID {
                        (None, format!("tid {}", c.tid))
                    } else {
                        (Some(process.to_owned()), format!("{process}/{thread}"))
                    };
                    if let Some(process) = process {
                        if !self.threads.keys().any(|(p, _)| *p == pid) {
                            self.meta("process_name", pid, None, &process)?;
                        }
                    }
                    self.thread(pid, c.tid as u64, &track)?;
                }
                let fg = self.fg.matches(c.tid, c.comm.as_deref());
                let mut args = serde_json::Map::new();
                if let Some(fd) = c.fd {
                    args.insert("fd".into(), fd.into());
                }
                if let Some(p) = &c.path {
                    args.insert("path".into(), p.clone().into());
                }
                if let Some(o) = c.offset {
                    args.insert("offset".into(), o.into());
                }
                if let Some(s) = c.size {
                    args.insert("size".into(), s.into());
                }
                if let Some(v) = c.result {
                    args.insert("result".into(), v.into());
                }
                let name = if fg { format!("FG {}", c.name) } else { c.name.clone() };
                let json = format!(
                    "{{\"name\":{},\"cat\":\"syscall\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{}{},\"args\":{}}}",
                    js(&name),
                    us(c.time_ns),
                    us(c.duration_ns.unwrap_or(0)),
                    c.tid,
                    self.cname(fg),
                    serde_json::Value::Object(args)
                );
                self.raw(&json)
            }
            TraceRecord::Block(b) => self.block(b),
            TraceRecord::Span(s) => {
                self.thread(s.pid as u64, s.tid as u64, &format!("tid {}", s.tid))?;
                let json = format!(
                    "{{\"name\":\"{:?} {}\",\"cat\":\"iopro\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{},\"args\":{{\"size\":{},\"offset\":{},\"path\":{}}}}}",
                    s.layer,
                    if s.write { "write" } else { "read" },
                    us(s.time_ns),
                    us(s.duration_ns),
                    s.pid,
                    s.tid,
                    s.size,
                    s.offset,
                    js(&s.path)
                );
                self.raw(&json)
            }
            TraceRecord::Sched(s) => {
                if let SchedEvent::Switch { prev_comm, prev_pid, next_comm, next_pid, .. } = &s.event {
                    if self.threads.is_empty() || !self.threads.contains_key(&(CPU_PID, s.cpu as u64)) {
                        if !self.threads.keys().any(|(p, _)| *p == CPU_PID) {
                            self.meta("process_name", CPU_PID, None, "CPUs")?;
                        }
                        self.thread(CPU_PID, s.cpu as u64, &format!("CPU {}", s.cpu))?;
                    }
                    let start = self.cpu_running.insert(s.cpu, (s.time_ns, next_comm.clone(), *next_pid));
                    let (t0, comm, pid) = start.unwrap_or((s.time_ns, prev_comm.clone(), *prev_pid));
                    if s.time_ns > t0 && pid != 0 {
                        let fg = self.fg.matches(pid, Some(&comm));
                        let name = if fg { format!("FG {comm}") } else { comm };
                        let json = format!(
                            "{{\"name\":{},\"cat\":\"sched\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{CPU_PID},\"tid\":{}{},\"args\":{{\"pid\":{pid}}}}}",
                            js(&name),
                            us(t0),
                            us(s.time_ns - t0),
                            s.cpu,
                            self.cname(fg)
                        );
                        self.raw(&json)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Closes the JSON document.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_take_the_first_free_lane_like_a_scan() {
        // Against the definition: the lowest lane with busy-until <= start, else a new one.
        let mut lanes = Lanes::default();
        let mut scan: Vec<u64> = Vec::new();
        let mut x = 12345u64;
        for _ in 0..5000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let start = (x >> 33) % 1000;
            let end = start + (x >> 13) % 300;
            let want = scan.iter().position(|&b| b <= start).unwrap_or_else(|| {
                scan.push(0);
                scan.len() - 1
            });
            scan[want] = end;
            assert_eq!(lanes.take(start, end), want);
        }
        assert!(scan.len() > 10, "{} lanes", scan.len());
        // A start of u64::MAX never picks a lane that is not in use.
        let mut l = Lanes::default();
        assert_eq!(l.take(5, 10), 0);
        assert_eq!(l.take(u64::MAX, u64::MAX), 0);
        assert_eq!(l.take(u64::MAX, 1), 0);
        assert_eq!(l.take(0, 1), 1);
    }
}
