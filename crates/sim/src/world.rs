//! The simulated phone: every layer, the tasks, and the event loop that connects them.
//!
//! This file holds the [`World`] struct, the event loop ([`World::run`]) and the contexts the
//! layer modules of `forefront_model` step in ([`Kernel`], the reclaim, write-back and ext4
//! contexts). The rest is split by responsibility, each file with its invariants:
//!
//! | file | holds |
//! |---|---|
//! | `build` | [`World::new`]: the phone, its devices, tasks and initial files from a scenario |
//! | `tasks` | tasks, their waits and wake-ups, CPU groups |
//! | `ops` | the tasks' programs: each op's start, mounts other than the phone's ext4 |
//! | `io` | requests: submission, dispatch, completion |
//! | `priority` | the policy seam: QASIO, FG inheritance, the allocation gate, reclaim order |
//! | `knobs` | the agent's kernel knobs: ioprio and BFQ weight, freezer, CPU weight and idle, write-back hold |
//! | `life` | apps whose processes live in windows (`alive_s`): started anew, killed |
//! | `record` | `--trace-out` records, the timeline, byte counts |
//! | `outcome` | what a run produces |
//! | `ui`, `cells` | the framework's interactive path, Cells |

use std::collections::BTreeMap;

use forefront_engine::{EventQueue, SimTime};
use forefront_model::block::{ReqId, ReqKey, ReqOp, ReqSlab, Request};
use forefront_model::cpu::{CpuSched, Expired, GroupId};
use forefront_model::flash::Started;
use forefront_model::fs::ext4::{self, Ext4, FileOp};
use forefront_model::fs::jbd2;
use forefront_model::fs::vfs::Vfs;
use forefront_model::fs::{Fs, Journal};
use forefront_model::kernel::Kernel;
use forefront_model::mm::reclaim::Reclaim as ReclaimCtx;
use forefront_model::mm::writeback::{Writeback, WritebackState};
use forefront_model::mm::{FileId, PageCache};
use forefront_model::prov::{Origin, Tid, Uid};
use forefront_model::storage::Storage;
use forefront_model::wait::{Blocker, WaitGraph, Why};
use forefront_policy::Hook;
use forefront_record::trace::TraceRecord;
use forefront_workload::{Costs, Phone};

use crate::Cat;

mod agent;
mod build;
mod cells;
mod io;
mod knobs;
mod life;
mod ops;
mod outcome;
mod priority;
mod record;
mod tasks;
mod ui;
pub use agent::AgentView;
use build::CostsNs;
pub use cells::CellOutcome;
pub use knobs::{KernelKnobs, TaskKnobs};
use ops::Chan;
pub use outcome::{LfsOutcome, Outcome, Sample};
use priority::Io;
use tasks::{App, Exec, Kind, TState, Task, Wait};
pub use ui::UiOutcome;

pub const FG_GROUP: GroupId = 1;
pub const BG_GROUP: GroupId = 2;
/// The one CPU group of every user task under `[phone] cpu_groups = "autogroup"` (the session's
/// autogroup).
pub const SESSION_GROUP: GroupId = 3;

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    Core(u8, u64),
    DevDone(ReqId),
    Kick,
    Wake(Tid, u32),
    FlusherTimer,
    CommitTimer,
    /// A `net_recv`'s round trip is over: its bytes start to flow.
    NetJoin(Tid),
    /// The link's next transfer completion (generation: stale ones are ignored).
    NetDone(u64),
    /// Close a timeline bucket.
    Sample,
    /// The scenario's `[[knob]]` of this index takes effect.
    Knob(u32),
    /// A window of life of this app starts (`true`) or ends (`alive_s`).
    Life(u32, bool),
    /// The agent looks at its pause (`agent` policy; generation: stale ones are ignored).
    AgentTick(u64),
    /// The guest's free page reporting pass (`[phone.host_reclaim]`).
    HostReport,
}

pub struct World {
    q: EventQueue<Ev>,
    cpu: CpuSched,
    pc: PageCache,
    fs: Fs,
    jn: Journal,
    reqs: ReqSlab,
    /// The block devices: one flash device or a RAID-0 array, then the devices of FAT mounts,
    /// each with its own block queue.
    st: Storage,
    scratch_done: Vec<ReqId>,
    tasks: Vec<Task>,
    apps: Vec<App>,
    /// The policy and the state of its mechanisms: the one place policy decisions are applied.
    prio: priority::Priority,
    costs: Costs,
    /// `costs` in ns, converted once (the file paths ask for them on every step).
    ns: CostsNs,
    phone: Phone,
    fg_uid: Option<Uid>,
    flusher: Tid,
    jbd2: Tid,
    kswapd: Tid,
    kick_pending: bool,
    /// Who waits for what: every blocked task, journal handles, request wake lists.
    wg: WaitGraph,
    chans: BTreeMap<String, Chan>,
    /// Checkpoint writes in flight, reclaim's request for write-back, the dirty thresholds.
    wb: WritebackState,
    /// balance_dirty_pages: the device's rate estimates and each writer's counters.
    throttle: forefront_model::mm::throttle::DirtyThrottle,
    /// The network link every `net_recv` shares.
    link: forefront_model::net::Link,
    async_queued: usize,
    timeline: forefront_record::run::Timeline,
    bucket_fg: u64,
    bucket_bg: u64,
    /// Records for `--trace-out`, when asked for.
    rec: Option<Vec<TraceRecord>>,
    core_curr: Vec<Option<Tid>>,
    /// The headline app's waits for a CPU after a wake-up ([`forefront_model::cpu::WaitKind::Dispatch`]) and the
    /// runtime it was charged for such waits ([`forefront_model::cpu::WaitKind::SkippedClock`]), (end, kind, ns),
    /// when [`World::record_fg_cpu_waits`] was called.
    fg_cpu_waits: Option<Vec<(SimTime, forefront_model::cpu::WaitKind, u64)>>,
    scratch_ids: Vec<ReqId>,
    /// A completed request's waiters (reused: completions do not allocate).
    scratch_waiters: Vec<(Tid, SimTime)>,
    scratch_started: Vec<Started>,
    samples: Vec<Sample>,
    fg_tasks_left: usize,
    /// When the last foreground thread finished (the run ends there).
    fg_done_at: Option<SimTime>,
    end: SimTime,
    bg_read: u64,
    bg_written: u64,
    inv: forefront_record::run::Invariants,
    max_sectors: u32,
    /// The framework's interactive path: interactions, frames, binder, FTC's chain.
    ui: ui::Ui,
    /// Users' think times (`think` ops).
    think_rng: forefront_engine::SimRng,
    /// `[phone.cpu] compute_cv` and its stream.
    compute_spread: forefront_engine::Spread,
    compute_rng: forefront_engine::SimRng,
    /// `[phone] net_rtt_cv` and its stream.
    rtt_spread: forefront_engine::Spread,
    rtt_rng: forefront_engine::SimRng,
    /// Virtual phones (empty outside Cells scenarios) and the one on the screen.
    cells: Vec<cells::Cell>,
    fg_cell: Option<usize>,
    cells_params: forefront_workload::CellsParams,
    /// The scenario's mounts ([`forefront_workload::Mount`]), which new files are created on.
    mounts: Vec<forefront_workload::Mount>,
    /// Per mount, its FAT region in the file system (index + 1), 0 for none.
    mount_region: Vec<u8>,
    /// The namespace, each file's mount, tmpfs.
    vfs: Vfs,
    /// The agent's kernel knobs ([`knobs`]) and the scenario's `[[knob]]`s.
    knobs: knobs::Knobs,
    knob_specs: Vec<forefront_workload::KnobSpec>,
    /// The agent as a policy (`agent`), with its classes and its pause; `None` otherwise.
    agent: Option<agent::Agent>,
    /// The VM host's reclaim of free memory (`[phone.host_reclaim]`); `None` otherwise.
    host: Option<forefront_model::mm::host::FreeLedger>,
}

/// Timeline bucket (ms of simulated time).
pub const BUCKET_MS: u64 = 100;

impl World {
    fn hook(&mut self, h: Hook) {
        self.prio.hook(h);
    }

    pub fn run(mut self) -> Outcome {
        while let Some((now, ev)) = self.q.pop() {
            // The run ends when the FG app's threads are done and what they showed is on screen.
            if now > self.end || (self.fg_tasks_left == 0 && self.ui.idle()) {
                break;
            }
            if self.ui.enabled {
                self.ui_account(now);
            }
            match ev {
                Ev::Core(core, gen) => {
                    if let Some(Expired::BurstDone(tid)) = self.cpu.expire(core as usize, gen, now) {
                        self.after_burst(tid);
                    }
                }
                Ev::DevDone(id) => self.device_done(id),
                Ev::Kick => {
                    self.kick_pending = false;
                    self.dispatch();
                }
                Ev::Wake(tid, token) => {
                    if self.tasks[tid as usize].token == token {
                        self.wake(tid);
                    }
                }
                Ev::NetJoin(tid) => {
                    if let Some((t, gen)) = self.link.join(now, tid) {
                        self.q.schedule(t, Ev::NetDone(gen));
                    }
                }
                Ev::NetDone(gen) => {
                    let (done, next) = self.link.complete(now, gen);
                    if let Some((t, gen)) = next {
                        self.q.schedule(t, Ev::NetDone(gen));
                    }
                    for tid in done {
                        self.wake(tid);
                    }
                }
                Ev::FlusherTimer => {
                    // No periodic wake-up while write-back is held (a `[[knob]]`, or the
                    // agent's hold during a pause).
                    if !self.writeback_held() {
                        self.wake_flusher();
                    }
                    let t = now.after((self.phone.writeback_interval_s * 1e9) as u64);
                    self.q.schedule(t, Ev::FlusherTimer);
                }
                Ev::Knob(i) => self.apply_knob(i as usize),
                Ev::Life(app, start) => self.life_event(app as usize, start),
                Ev::Sample => {
                    self.close_bucket();
                    self.q.schedule(now.after(BUCKET_MS * 1_000_000), Ev::Sample);
                }
                Ev::AgentTick(gen) => self.agent_tick(gen),
                Ev::HostReport => {
                    if let Some(t) = self.host.as_mut().and_then(|h| h.pass(now)) {
                        self.q.schedule(t, Ev::HostReport);
                    }
                }
                Ev::CommitTimer => {
                    let interval = (self.phone.fs.commit_interval_s * 1e9) as u64;
                    if jbd2::commit_timer(&mut self.jn, now, interval) {
                        self.wake_jbd2();
                    }
                    self.q.schedule(now.after(interval / 5), Ev::CommitTimer);
                }
            }
            if self.prio.take_release() {
                self.wake_all(Blocker::Alloc);
            }
            if self.host.is_some() {
                self.host_observe();
            }
            if self.ui.enabled || self.fg_cpu_waits.is_some() {
                self.ui_latencies();
            }
            self.rearm();
        }
        self.finish()
    }

    fn now(&self) -> SimTime {
        self.q.now()
    }

    /// Pages the page cache freed since the last look become backed free memory; a reporting
    /// pass is scheduled if one must be.
    fn host_observe(&mut self) {
        let removed = self.pc.inserted - self.pc.nr_pages;
        let now = self.now();
        if let Some(t) = self.host.as_mut().and_then(|h| h.observe(now, removed)) {
            self.q.schedule(t, Ev::HostReport);
        }
    }

    fn rearm(&mut self) {
        while let Some(c) = self.cpu.next_changed() {
            if let Some((t, gen)) = self.cpu.deadline(c) {
                self.q.schedule(t, Ev::Core(c as u8, gen));
            }
            if self.rec.is_some() {
                self.rec_switch(c);
            }
        }
    }

    fn us(&self, us: f64) -> u64 {
        (us * 1e3) as u64
    }
}

/// The machine as the layer modules see it (`forefront_model::kernel`).
impl Kernel for World {
    fn now(&self) -> SimTime {
        self.q.now()
    }
    fn block(&mut self, tid: Tid, b: Blocker, cat: Cat) {
        self.block_on(tid, b, cat);
    }
    fn wait_request(&mut self, tid: Tid, id: ReqId, why: Why, cat_other: Cat) {
        World::wait_request(self, tid, id, why, cat_other);
    }
    fn wake_all(&mut self, b: Blocker) {
        World::wake_all(self, b);
    }
    fn wake_where(&mut self, pred: &dyn Fn(Blocker) -> bool) {
        for t in self.wg.blocked_on(pred) {
            self.wake(t);
        }
    }
    fn submit_control(&mut self, tid: Tid, op: ReqOp, block: u64, blocks: u64, origin: Origin) -> ReqKey {
        World::submit_control(self, tid, op, block, blocks, origin)
    }
    fn live(&self, k: ReqKey) -> bool {
        self.reqs.is_live(k)
    }
    fn submit_flush_fua(&mut self, tid: Tid, block: u64, blocks: u64, origin: Origin) -> ReqKey {
        World::submit_control_flagged(self, tid, ReqOp::Write, block, blocks, origin, true)
    }
    fn request_mut(&mut self, id: ReqId) -> &mut Request {
        self.reqs.get_mut(id)
    }
    fn journal(&mut self) -> &mut Journal {
        &mut self.jn
    }
    fn fs(&self) -> &Fs {
        &self.fs
    }
    fn page_cache(&mut self) -> &mut PageCache {
        &mut self.pc
    }
}

/// Reclaim's seams (`forefront_model::mm::reclaim`): the victim order, the FastTrack allocation
/// gate and forefront's reclaim-wait inheritance are the policy's.
impl ReclaimCtx for World {
    fn shrink(&mut self, want: u64) -> forefront_model::mm::Reclaimed {
        World::shrink(self, want)
    }
    fn alloc_gate_pauses(&mut self, tid: Tid) -> bool {
        World::alloc_gate_pauses(self, tid)
    }
    fn wake_kswapd(&mut self) {
        self.wake_if(self.kswapd, Blocker::Idle);
    }
    fn writeback_for_reclaim(&mut self) {
        // wakeup_flusher_threads from reclaim: write back regardless of the thresholds.
        self.wb.for_reclaim = true;
        self.wake_flusher();
    }
    fn release_alloc_waiters(&mut self) {
        if self.prio.alloc_may_proceed() {
            World::wake_all(self, Blocker::Alloc);
        }
    }
    fn reclaim_wait(&mut self, tid: Tid, short: u64) {
        let me = self.facts(tid);
        let mut rq = Io { reqs: &mut self.reqs, st: &mut self.st };
        self.prio.reclaim_wait(me, short, &mut rq);
    }
    fn host_refault_ns(&mut self, n: u64, read: bool, order: u32) -> u64 {
        if self.host.is_none() {
            return 0;
        }
        // What this step freed (reclaim for this very allocation) is backed already.
        self.host_observe();
        let h = self.host.as_mut().expect("checked");
        h.take(n, order) * if read { h.cfg.read_page_ns } else { h.cfg.page_ns }
    }
}

/// The flusher's context (`forefront_model::mm::writeback`): ext4's write-back path.
impl Writeback for World {
    fn async_queued(&self) -> usize {
        self.async_queued
    }
    fn ensure_handle(&mut self, tid: Tid) -> bool {
        ext4::ensure_handle(self, tid)
    }
    fn stop_handle_of(&mut self, tid: Tid) {
        let txn = self.wg.release_handle(tid).expect("held");
        ext4::stop_handle(self, txn);
    }
    fn writeback_pages(&mut self, tid: Tid, file: FileId, idxs: &[u32], origin: Origin) -> u64 {
        let k = self.ext4_params();
        ext4::writeback_pages(self, &k, tid, file, idxs, origin)
    }
    fn writeback_state(&mut self) -> &mut WritebackState {
        &mut self.wb
    }
}

/// The file paths' context (`forefront_model::fs::ext4`).
impl Ext4 for World {
    fn dirty_throttle(&mut self) -> &mut forefront_model::mm::throttle::DirtyThrottle {
        &mut self.throttle
    }
    fn fs_mut(&mut self) -> &mut Fs {
        &mut self.fs
    }
    fn wait_graph(&mut self) -> &mut WaitGraph {
        &mut self.wg
    }
    fn set_file_op(&mut self, tid: Tid, op: Option<FileOp>) {
        self.tasks[tid as usize].exec = op.map_or(Exec::None, Exec::File);
    }
    fn count_bytes(&mut self, tid: Tid, bytes: u64, write: bool) {
        World::count_bytes(self, tid, bytes, write);
    }
    fn submit_pages(&mut self, tid: Tid, file: FileId, run: (u32, u64, u32), write: bool, origin: Origin) -> u64 {
        World::submit_pages(self, tid, file, run, write, origin)
    }
    fn key(&self, id: ReqId) -> ReqKey {
        self.reqs.key(id)
    }
    fn task_is_fg(&self, tid: Tid) -> bool {
        World::task_is_fg(self, tid)
    }
    fn wake_flusher(&mut self) {
        World::wake_flusher(self);
    }
    fn wake_jbd2(&mut self) {
        World::wake_jbd2(self);
    }
    fn wake_jbd2_holders(&mut self, txn: u64) {
        self.wake_if(self.jbd2, Blocker::Holders { txn });
    }
}
