//! The Android framework's interactive path (FTC + VT-CFS, SPE'15): input events, binder
//! transactions, frames and the compositor, and FTC's user-interactive task chain.
//!
//! - **Interactions.** An `input` op opens one (a headline sample named by its phase); a
//!   `post_frame` with a result assigns the oldest open interaction that has no frame yet to
//!   the queued frame; the compositor's `compose` at a vsync takes the queued frames and, when
//!   its work is done, flips them to the screen at the next vsync edge: their interactions end
//!   there. Response time = input → on screen. A composition that ran late (the compositor
//!   waited for a CPU) misses its flip and shows a refresh later.
//! - **The chain.** The thread that executes `input` joins the user-interactive chain; so does
//!   every task a chain task hands work to while an interaction is open: the task its `signal`
//!   wakes (or that later consumes the signal), the binder server thread that takes its
//!   transaction, the compositor that composes its frame. The chain is tracked under every
//!   policy (it defines whose latencies are measured); only FTC acts on it. When the last open
//!   interaction is displayed the chain dissolves.
//! - **FTC.** A task joining the chain, and a chain task waking up, gets the weight
//!   `W' = target_slice × ΣW / P` (ΣW: the runnable load at its level of its core, counting it
//!   at its own weight; P: CFS's period for the tasks on that core; target 10 ms, 20 ms while a
//!   continuous interaction is open), never below its own weight nor above nice −20's 88761.
//!   It is marked interactive for VT-CFS's wake-up placement. Both are undone when the chain
//!   dissolves.
//! - **Binder.** A call queues a transaction on the service; an idle server thread of the
//!   service takes it (else the first server to finish its current one). The caller waits on
//!   `Blocker::Binder`, pointing at the server once one runs it: the wait graph's
//!   caller → server edge.
//!
//! Simplifications: binder does not transfer the caller's nice to the server thread (Android
//! does, for nice only; the servers here run at nice 0 in the root group like system_server's
//! binder threads); the display shows a composed frame at the first vsync edge after its
//! composition ends (no further pipeline stage); a frame is one buffer (no triple-buffering
//! limit on `post_frame`).

use std::collections::{BTreeSet, VecDeque};

use forefront_engine::SimTime;
use forefront_model::cpu::{nice_to_weight, WaitKind};
use forefront_model::kernel::After;
use forefront_model::prov::Tid;
use forefront_model::wait::Blocker;
use forefront_policy::Hook;

use super::{Exec, Sample, World};
use crate::Cat;

/// FTC's target slices [VT].
const TARGET_INSTANT_NS: u64 = 10_000_000;
const TARGET_CONTINUOUS_NS: u64 = 20_000_000;
/// nice −20's weight: the most FTC gives.
const MAX_WEIGHT: u32 = 88761;

/// Where a binder server thread is in a transaction.
#[derive(Clone, Copy, Debug)]
pub(super) enum BinderStage {
    /// Waiting for (or about to run) a transaction of service `svc`.
    Serve { svc: u32 },
    /// Ran the transaction of `caller`: reply next.
    Reply { caller: Tid },
}

struct Interaction {
    phase: String,
    start: SimTime,
    continuous: bool,
    /// A frame showing its result is queued or being composed.
    framed: bool,
    /// The chain's time per category ([`Ui::cats`]) at the start.
    cats0: [u64; Cat::COUNT],
}

struct Service {
    name: String,
    /// The channel id idle server threads wait on.
    chan: u32,
    queue: VecDeque<(Tid, u64)>,
}

/// The framework's interactivity state.
#[derive(Default)]
pub(super) struct Ui {
    /// The scenario has input events: latencies are recorded.
    pub enabled: bool,
    chain: Vec<bool>,
    members: Vec<Tid>,
    ever: BTreeSet<Tid>,
    /// Each task's own weight (from its nice), restored when the chain dissolves.
    weight0: Vec<u32>,
    open: VecDeque<Interaction>,
    queued_frames: u32,
    queued_results: u32,
    /// A chain task queued one of the frames waiting for the compositor.
    chain_frame: bool,
    services: Vec<Service>,
    /// Per task: the transaction it serves (caller, work ns).
    serving: Vec<Option<(Tid, u64)>>,
    pub dispatch_ns: Vec<u64>,
    pub preempt_ns: Vec<u64>,
    pub preempt_done_ns: Vec<u64>,
    pub frames: u64,
    pub frame_misses: u64,
    pub responses_ns: Vec<u64>,
    scratch: Vec<(Tid, WaitKind, u64)>,
    /// Time while an interaction was open, by what the chain was doing (see [`World::ui_account`]).
    cats: [u64; Cat::COUNT],
    last: SimTime,
    /// The display's refresh rate, from the compositor's `vsync` op.
    vsync_hz: f64,
}

/// What a run's report needs from the framework.
pub struct UiOutcome {
    pub responses_ns: Vec<u64>,
    pub dispatch_ns: Vec<u64>,
    pub preempt_ns: Vec<u64>,
    pub preempt_done_ns: Vec<u64>,
    pub frames: u64,
    pub frame_misses: u64,
    pub context_switches: u64,
    pub tick_preemptions: u64,
    pub chain_tasks: Vec<String>,
    /// Running time of background apps' tasks (ns) and the cores' total time (ns).
    pub bg_run_ns: u64,
    pub cores_ns: u64,
    /// Tasks whose weight differs from their own (nice) weight at the end of the run, or that
    /// are still marked interactive, with no interaction open (FTC must restore them all).
    pub left_promoted: u64,
}

impl Ui {
    pub(super) fn new(enabled: bool) -> Ui {
        Ui { enabled, vsync_hz: 60.0, ..Default::default() }
    }

    pub(super) fn add_task(&mut self, nice: i32) {
        self.chain.push(false);
        self.weight0.push(nice_to_weight(nice));
        self.serving.push(None);
    }

    /// No interaction is waiting for its frame.
    pub(super) fn idle(&self) -> bool {
        self.open.is_empty()
    }

    pub(super) fn in_chain(&self, tid: Tid) -> bool {
        self.chain[tid as usize]
    }
}

impl World {
    /// `input`: open an interaction; the dispatching thread starts the chain.
    pub(super) fn ui_input(&mut self, tid: Tid, phase: String, continuous: bool) -> (u64, After) {
        let now = self.now();
        let cats0 = self.ui.cats;
        self.ui.open.push_back(Interaction { phase, start: now, continuous, framed: false, cats0 });
        self.ui_join(tid);
        (self.us(self.costs.syscall_us), After::Step)
    }

    /// `tid` joins the open chain (no-op without an open interaction or if already in it).
    pub(super) fn ui_join(&mut self, tid: Tid) {
        if self.ui.open.is_empty() || self.ui.chain[tid as usize] {
            return;
        }
        self.ui.chain[tid as usize] = true;
        self.ui.members.push(tid);
        self.ui.ever.insert(tid);
        if self.prio.promotes_chain() {
            self.cpu.set_interactive(tid, true);
            self.ftc_promote(tid);
        }
    }

    /// FTC's weight for chain task `tid` given its core's run queue now.
    pub(super) fn ftc_promote(&mut self, tid: Tid) {
        let target = if self.ui.open.iter().any(|i| i.continuous) { TARGET_CONTINUOUS_NS } else { TARGET_INSTANT_NS };
        let w0 = self.ui.weight0[tid as usize];
        let cur = self.cpu.weight_of(tid);
        let sum = self.cpu.level_load(tid) - u64::from(cur) + u64::from(w0);
        let period = self.cpu.period(self.cpu.nr_on_core_of(tid));
        let w = (target as f64 * sum as f64 / period as f64).round() as u64;
        let w = w.clamp(u64::from(w0), u64::from(MAX_WEIGHT)) as u32;
        if w != cur {
            let now = self.now();
            self.cpu.set_weight(tid, w, now);
            if w > w0 {
                self.hook(Hook::FtcPromoted);
            }
        }
    }

    /// The last open interaction was displayed: the chain dissolves, FTC's changes are undone.
    fn ui_dissolve(&mut self) {
        let now = self.now();
        for t in std::mem::take(&mut self.ui.members) {
            self.ui.chain[t as usize] = false;
            if self.prio.promotes_chain() {
                self.cpu.set_interactive(t, false);
                let w0 = self.ui.weight0[t as usize];
                if self.cpu.weight_of(t) != w0 {
                    self.cpu.set_weight(t, w0, now);
                    self.hook(Hook::FtcRestored);
                }
            }
        }
    }

    /// The service named `name` (created on first use).
    fn service(&mut self, name: &str) -> u32 {
        if let Some(i) = self.ui.services.iter().position(|s| s.name == name) {
            return i as u32;
        }
        let chan = self.chan(format!("binder:{name}")).id;
        self.ui.services.push(Service { name: name.to_string(), chan, queue: VecDeque::new() });
        (self.ui.services.len() - 1) as u32
    }

    /// `binder_call`: hand the transaction to an idle server thread or queue it; block.
    pub(super) fn binder_call(&mut self, tid: Tid, service: &str, ms: f64) -> (u64, After) {
        let svc = self.service(service);
        let work = ((ms * 1e6) as u64).max(1);
        let chan = self.ui.services[svc as usize].chan;
        let server = self.wg.first_blocked_on(Blocker::Ipc { chan });
        if let Some(s) = server {
            self.ui.serving[s as usize] = Some((tid, work));
            if self.ui.chain[tid as usize] {
                self.ui_join(s);
            }
            self.wake(s);
        } else {
            self.ui.services[svc as usize].queue.push_back((tid, work));
        }
        self.block_on(tid, Blocker::Binder { service: svc, server }, Cat::Ipc);
        (self.us(self.costs.syscall_us), After::Block)
    }

    /// `binder_serve`: the server thread enters its transaction loop body.
    pub(super) fn binder_serve(&mut self, tid: Tid, service: &str) -> (u64, After) {
        let svc = self.service(service);
        self.tasks[tid as usize].exec = Exec::Binder(BinderStage::Serve { svc });
        (self.us(self.costs.syscall_us), After::Step)
    }

    /// One step of a server thread inside `binder_serve`.
    pub(super) fn binder_step(&mut self, tid: Tid, stage: BinderStage) -> (u64, After) {
        match stage {
            BinderStage::Serve { svc } => {
                let txn = self.ui.serving[tid as usize].or_else(|| {
                    let (caller, work) = self.ui.services[svc as usize].queue.pop_front()?;
                    self.ui.serving[tid as usize] = Some((caller, work));
                    self.wg.repoint(caller, Blocker::Binder { service: svc, server: Some(tid) });
                    Some((caller, work))
                });
                match txn {
                    Some((caller, work)) => {
                        if self.ui.chain[caller as usize] {
                            self.ui_join(tid);
                        }
                        self.tasks[tid as usize].exec = Exec::Binder(BinderStage::Reply { caller });
                        (work, After::Step)
                    }
                    None => {
                        let chan = self.ui.services[svc as usize].chan;
                        self.block_on(tid, Blocker::Ipc { chan }, Cat::Ipc);
                        (0, After::Block)
                    }
                }
            }
            BinderStage::Reply { caller } => {
                self.ui.serving[tid as usize] = None;
                self.tasks[tid as usize].exec = Exec::None;
                self.wake(caller);
                (self.us(self.costs.syscall_us), After::Step)
            }
        }
    }

    /// `post_frame`: queue a buffer for the compositor.
    pub(super) fn post_frame(&mut self, tid: Tid, result: bool) -> (u64, After) {
        self.ui.queued_frames += 1;
        if result {
            if let Some(i) = self.ui.open.iter_mut().find(|i| !i.framed) {
                i.framed = true;
                self.ui.queued_results += 1;
            }
        }
        self.ui.chain_frame |= self.ui.chain[tid as usize];
        (self.us(self.costs.syscall_us), After::Step)
    }

    /// `vsync`: sleep to the next edge of a `hz` display.
    pub(super) fn vsync(&mut self, hz: f64) -> (u64, After) {
        self.ui.vsync_hz = hz;
        (0, After::Sleep(next_edge(self.now(), hz)))
    }

    /// `compose`: take the queued frames (or count a missed frame deadline).
    pub(super) fn compose(&mut self, tid: Tid, ms: f64) -> (u64, After) {
        if self.ui.queued_frames == 0 {
            if self.ui.open.iter().any(|i| i.continuous) {
                self.ui.frame_misses += 1;
            }
            return (self.us(self.costs.syscall_us), After::Step);
        }
        let results = self.ui.queued_results;
        self.ui.queued_frames = 0;
        self.ui.queued_results = 0;
        if std::mem::take(&mut self.ui.chain_frame) {
            self.ui_join(tid);
        }
        self.tasks[tid as usize].exec = Exec::Present(results);
        (((ms * 1e6) as u64).max(1), After::Step)
    }

    /// Composition done: the frame goes on screen at the next vsync edge (the page flip); the
    /// interactions it shows end there.
    pub(super) fn present(&mut self, tid: Tid, results: u32) -> (u64, After) {
        self.tasks[tid as usize].exec = Exec::None;
        self.ui.frames += 1;
        let now = self.now();
        let shown = next_edge(now, self.ui.vsync_hz);
        let (app, cell) = self.apps.iter().find(|a| a.headline).map_or((String::new(), None), |a| (a.name.clone(), a.cell));
        let on_screen = cell.is_none() || cell == self.fg_cell;
        for _ in 0..results {
            let Some(i) = self.ui.open.pop_front() else { break };
            debug_assert!(i.framed);
            let mut cats = [0u64; Cat::COUNT];
            for (k, c) in cats.iter_mut().enumerate() {
                *c = self.ui.cats[k] - i.cats0[k];
            }
            // Composed, waiting for the flip.
            cats[Cat::Sleep as usize] += shown.since(now);
            let ns = shown.since(i.start);
            self.ui.responses_ns.push(ns);
            self.samples.push(Sample {
                app: app.clone(),
                cell,
                on_screen,
                phase: i.phase,
                start: i.start,
                ns,
                cats,
                bg_bytes: 0,
            });
        }
        if self.ui.open.is_empty() {
            self.ui_dissolve();
            if self.fg_tasks_left == 0 && self.fg_done_at.is_none() {
                self.fg_done_at = Some(now);
            }
        }
        (0, After::Step)
    }

    /// Charge the time since the last event, while an interaction is open, to what the chain
    /// was doing: a chain task running (`cpu_running`), else one waiting for a CPU
    /// (`cpu_runnable`), else the most telling wait among its blocked tasks: I/O and memory
    /// first, then the network, then sleeping (the compositor waiting for vsync, the input
    /// thread's next event), then IPC (tasks idle between their parts). An interaction's
    /// breakdown therefore sums to its response time.
    pub(super) fn ui_account(&mut self, now: SimTime) {
        let dt = now.since(self.ui.last);
        self.ui.last = now;
        if dt == 0 || self.ui.open.is_empty() {
            return;
        }
        let running = (0..self.cpu.ncores()).any(|c| self.cpu.running_on(c).is_some_and(|t| self.ui.chain[t as usize]));
        let cat = if running {
            Cat::CpuRunning
        } else if self.ui.members.iter().any(|&t| self.cpu.is_runnable(t)) {
            Cat::CpuRunnable
        } else {
            let rank = |c: Cat| match c {
                Cat::Ipc => 0,
                Cat::Sleep => 1,
                Cat::Net => 2,
                _ => 3,
            };
            self.ui
                .members
                .iter()
                .filter_map(|&t| self.tasks[t as usize].wait.map(|w| w.cat))
                .max_by_key(|&c| rank(c))
                .unwrap_or(Cat::Sleep)
        };
        self.ui.cats[cat as usize] += dt;
    }

    /// A `signal` by `tid` woke `woken` (or was stored, `None`): the chain follows it.
    pub(super) fn ui_signal(&mut self, tid: Tid, woken: Option<Tid>, chan: &str) {
        if !self.ui.chain[tid as usize] || self.ui.open.is_empty() {
            return;
        }
        match woken {
            Some(w) => self.ui_join(w),
            None => {
                if let Some(c) = self.chans.get_mut(chan) {
                    c.from_chain += 1;
                }
            }
        }
    }

    /// Record the run-queue waits that ended, for chain tasks while an interaction is open, and
    /// the headline app's dispatch waits when [`World::record_fg_cpu_waits`] asked for them.
    pub(super) fn ui_latencies(&mut self) {
        let mut eps = std::mem::take(&mut self.ui.scratch);
        self.cpu.take_latencies(&mut eps);
        if let Some(waits) = &mut self.fg_cpu_waits {
            let now = self.q.now();
            for &(t, kind, ns) in &eps {
                let wanted = matches!(kind, WaitKind::Dispatch | WaitKind::SkippedClock);
                if wanted && self.apps[self.tasks[t as usize].app].headline {
                    waits.push((now, kind, ns));
                }
            }
        }
        if !self.ui.open.is_empty() {
            for &(t, kind, ns) in &eps {
                if self.ui.chain[t as usize] {
                    match kind {
                        WaitKind::Dispatch => self.ui.dispatch_ns.push(ns),
                        WaitKind::Preempted => self.ui.preempt_ns.push(ns),
                        WaitKind::PreemptedToDone => self.ui.preempt_done_ns.push(ns),
                        WaitKind::SkippedClock => {}
                    }
                }
            }
        }
        self.ui.scratch = eps;
    }

    pub(super) fn ui_outcome(&mut self) -> Option<UiOutcome> {
        if !self.ui.enabled {
            return None;
        }
        let left_promoted = if self.ui.open.is_empty() {
            (0..self.tasks.len() as Tid)
                .filter(|&t| self.cpu.weight_of(t) != self.ui.weight0[t as usize] || self.cpu.is_interactive(t))
                .count() as u64
        } else {
            0
        };
        let now = self.fg_done_at.unwrap_or(self.now().min(self.end));
        let bg_run_ns = (0..self.tasks.len() as Tid)
            .filter(|&t| self.role_now(self.tasks[t as usize].app) == forefront_workload::Role::Bg)
            .map(|t| self.cpu.times(t, now).0)
            .sum();
        let cores_ns = now.ns() * self.cpu.ncores() as u64;
        let ui = std::mem::take(&mut self.ui);
        Some(UiOutcome {
            left_promoted,
            bg_run_ns,
            cores_ns,
            responses_ns: ui.responses_ns,
            dispatch_ns: ui.dispatch_ns,
            preempt_ns: ui.preempt_ns,
            preempt_done_ns: ui.preempt_done_ns,
            frames: ui.frames,
            frame_misses: ui.frame_misses,
            context_switches: self.cpu.context_switches,
            tick_preemptions: self.cpu.tick_preemptions,
            chain_tasks: ui.ever.iter().map(|&t| self.tasks[t as usize].name.clone()).collect(),
        })
    }
}

/// The first edge of a `hz` display strictly after `now` (edges at multiples of 1/hz s).
fn next_edge(now: SimTime, hz: f64) -> SimTime {
    let period = 1e9 / hz;
    let next = ((now.ns() as f64 / period).floor() + 1.0) * period;
    SimTime::from_ns(next.round() as u64)
}
