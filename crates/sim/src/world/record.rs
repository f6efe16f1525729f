//! Recording: `--trace-out`'s block, scheduler and syscall records, the timeline's 100 ms
//! buckets and the per-app byte counts. Nothing here changes the simulation: a run records the
//! same records whether or not a trace is asked for, and the same outcome either way.

use super::{World, BUCKET_MS};
use forefront_engine::SimTime;
use forefront_model::block::{ReqId, ReqOp};
use forefront_model::mm::PAGE_SIZE;
use forefront_model::prov::Tid;
use forefront_record::trace::{
    BlockAction, BlockDetail, BlockEvent, BlockOp, DevId, Rwbs, SchedEvent, SchedRecord, SyscallRecord, TraceRecord,
};
use forefront_workload::{Op, Role};

pub(super) fn span_of(op: &Op, now: SimTime) -> Option<(&'static str, Option<String>, Option<u64>, SimTime)> {
    let (name, path, size) = match op {
        Op::Open { path } => ("open", Some(path), None),
        Op::Creat { path } => ("creat", Some(path), None),
        Op::Close { path } => ("close", Some(path), None),
        Op::Read { path, len, .. } => ("read", Some(path), Some(len.0)),
        Op::Write { path, len, .. } => ("write", Some(path), Some(len.0)),
        Op::Fsync { path } => ("fsync", Some(path), None),
        Op::Fdatasync { path } => ("fdatasync", Some(path), None),
        Op::Truncate { path, size } => ("truncate", Some(path), Some(size.0)),
        Op::Unlink { path } => ("unlink", Some(path), None),
        Op::Stat { path } => ("stat", Some(path), None),
        Op::Compute { .. } => ("compute", None, None),
        Op::Sleep { .. } | Op::SleepUntil { .. } | Op::Think { .. } => ("sleep", None, None),
        Op::NetRecv { bytes } => ("net_recv", None, Some(bytes.0)),
        Op::Wait { .. } => ("wait", None, None),
        Op::Signal { .. } => ("signal", None, None),
        Op::BinderCall { .. } => ("binder_call", None, None),
        Op::Compose { .. } => ("compose", None, None),
        _ => return None,
    };
    Some((name, path.cloned(), size, now))
}

impl World {
    /// Record block, syscall and scheduler events for a Perfetto export.
    pub fn record_trace(&mut self) {
        self.rec = Some(Vec::new());
        self.core_curr = vec![None; self.cpu.ncores()];
    }

    /// Record every wait of the headline app's threads for a CPU, from a wake-up to their first
    /// instruction (the dispatch latency a `sched_wakeup` → `sched_switch` trace of a real
    /// process gives): [`Outcome::fg_cpu_waits`].
    pub fn record_fg_cpu_waits(&mut self) {
        self.fg_cpu_waits = Some(Vec::new());
        self.cpu.record_latencies();
    }

    /// Every task as (tid, app, thread), for naming exported trace tracks.
    pub fn thread_names(&self) -> Vec<(u32, String, String)> {
        self.tasks
            .iter()
            .enumerate()
            .map(|(tid, t)| {
                let app = self.apps[t.app].name.clone();
                let thread = t.name.strip_prefix(&format!("{app}:")).unwrap_or(&t.name).to_string();
                (tid as u32, app, thread)
            })
            .collect()
    }

    /// The FG app's task ids (for colouring exported traces).
    pub fn fg_tids(&self) -> Vec<u32> {
        (0..self.tasks.len() as Tid).filter(|&t| self.apps[self.tasks[t as usize].app].headline).collect()
    }

    pub(super) fn rec_block(&mut self, id: ReqId, action: BlockAction) {
        let Some(rec) = &mut self.rec else { return };
        let r = self.reqs.get(id);
        let time_ns = match action {
            BlockAction::Issue => r.times.dispatched,
            BlockAction::Complete => r.times.completed,
            _ => None,
        }
        .unwrap_or(self.q.now())
        .ns();
        let op = match r.op {
            ReqOp::Read => BlockOp::Read,
            ReqOp::Write => BlockOp::Write,
            ReqOp::Flush => BlockOp::Flush,
            ReqOp::Discard => BlockOp::Discard,
        };
        let t = &self.tasks[r.prov.tid as usize];
        rec.push(TraceRecord::Block(BlockEvent {
            time_ns,
            dev: DevId { major: 8, minor: 0 },
            cpu: 0,
            seq: rec.len() as u64,
            pid: r.prov.tid,
            comm: Some(t.name.clone()),
            action,
            rwbs: Rwbs { op, preflush: r.preflush, fua: r.fua, ahead: false, sync: r.sync, meta: r.meta },
            sector: r.sector,
            bytes: r.bytes(),
            error: 0,
            detail: BlockDetail::None,
        }));
    }

    /// Record a context switch on core `c` if its running task changed (`--trace-out`).
    pub(super) fn rec_switch(&mut self, c: usize) {
        let Some(rec) = &mut self.rec else { return };
        let now = self.q.now().ns();
        let next = self.cpu.running_on(c);
        let prev = self.core_curr[c];
        if next == prev {
            return;
        }
        self.core_curr[c] = next;
        let who = |t: Option<Tid>| match t {
            Some(t) => (self.tasks[t as usize].name.clone(), t),
            None => ("swapper".to_string(), 0),
        };
        let ((pc, pp), (nc, np)) = (who(prev), who(next));
        let prev_state = match prev {
            Some(t) if self.cpu.is_runnable(t) => "R",
            Some(_) => "S",
            None => "R",
        };
        rec.push(TraceRecord::Sched(SchedRecord {
            time_ns: now,
            cpu: c as u32,
            event: SchedEvent::Switch {
                prev_comm: pc,
                prev_pid: pp,
                prev_prio: 120,
                prev_state: prev_state.to_string(),
                next_comm: nc,
                next_pid: np,
                next_prio: 120,
            },
        }));
    }

    /// Close the syscall span of the op `tid` just finished.
    pub(super) fn rec_span_end(&mut self, tid: Tid) {
        let now = self.q.now();
        let Some((name, path, size, start)) = self.tasks[tid as usize].span.take() else { return };
        if let Some(rec) = &mut self.rec {
            rec.push(TraceRecord::Syscall(SyscallRecord {
                time_ns: start.ns(),
                tid,
                name: name.to_string(),
                fd: None,
                path,
                offset: None,
                size,
                duration_ns: Some(now.since(start)),
                result: None,
                comm: None,
            }));
        }
    }

    pub(super) fn close_bucket(&mut self) {
        let mb_s = |b: u64| (b as f64 / 1e6 / (BUCKET_MS as f64 / 1e3) * 1000.0).round() / 1000.0;
        let tl = &mut self.timeline;
        tl.fg_mb_per_s.push(mb_s(self.bucket_fg));
        tl.bg_mb_per_s.push(mb_s(self.bucket_bg));
        tl.dirty_mb.push(((self.pc.nr_dirty * PAGE_SIZE) as f64 / 1e4).round() / 100.0);
        tl.queue_depth.push(self.st.depth() as u32);
        self.bucket_fg = 0;
        self.bucket_bg = 0;
    }

    /// Account syscall bytes of `tid` (totals and the current timeline bucket).
    pub(super) fn count_bytes(&mut self, tid: Tid, bytes: u64, write: bool) {
        if write && self.agent.is_some() {
            self.agent_written(tid, bytes);
        }
        let app = self.tasks[tid as usize].app;
        let a = &mut self.apps[app];
        if write {
            a.written += bytes;
        } else {
            a.read += bytes;
        }
        match self.role_now(app) {
            Role::Bg => {
                if write {
                    self.bg_written += bytes;
                } else {
                    self.bg_read += bytes;
                }
                self.bucket_bg += bytes;
            }
            Role::Fg => self.bucket_fg += bytes,
            Role::System => {}
        }
    }
}
