//! CPU: per-core run queues with CFS and task groups, tickless.
//!
//! [`CpuSched`] holds every task's scheduling entity and every core's run queue. The simulator
//! gives a runnable task a *burst* of work (nanoseconds at speed 1.0) with [`CpuSched::wake`];
//! the scheduler decides who runs where and exposes, per core, the one instant at which it must
//! be called back ([`CpuSched::deadline`]: the earlier of the running burst's end and its slice's
//! end). No tick: nothing happens between those instants. A kernel whose CFS checks slices
//! only from its tick ([`CpuParams::slice_on_tick`], e.g. the Galaxy Nexus's HZ = 128 kernel of
//! the FTC/VT-CFS paper) is modelled by rounding each slice's end up to the tick grid, still
//! without tick events.
//!
//! CFS as in `kernel/sched/fair.c` (3.x–4.x), two levels deep: tasks of the root group and the
//! group entities of the other task groups compete at the top level by vruntime; tasks inside a
//! group compete inside it. `vruntime += delta_exec × 1024 / weight` at each level. A slice is
//! `period × Π(weight / load)` along the path with `period = max(latency, n × min_granularity)`,
//! floored at `min_granularity`; a woken entity is placed at `max(vruntime, min_vruntime −
//! latency/2)` (GENTLE_FAIR_SLEEPERS) and preempts the current one when their vruntimes at the
//! first common level differ by more than `wakeup_granularity × 1024 / weight`. Latency
//! figures scale with `1 + log2(ncpus)` (`sysctl_sched_tunable_scaling` = log).
//!
//! Placement: a woken task goes to its previous core if idle, else to the lowest idle core,
//! else to the previous core. A core that goes idle pulls a queued task from the busiest core
//! (new-idle balancing). Not modelled: periodic load balancing between busy cores, PELT load
//! tracking, SMT, frequency scaling within a run (speed factors are fixed per core).
//!
//! # Three disciplines on one run queue
//!
//! The run queues, vruntime accounting and placement above are shared. The decisions that
//! differ between schedulers go through one seam, [`SchedKind`], consulted in four places:
//! how long the picked task may run (its slice), whether a wake-up preempts the running task,
//! where a woken task is placed, and which queued entity is picked.
//!
//! - [`SchedKind::Cfs`]: weighted slices, wake-up preemption (above).
//! - [`SchedKind::VtCfs`]: VT-CFS (Huh, Yoo, Hong, SPE 2015; [`vtcfs`]): no weighted slice; a
//!   running task is preempted at every preemption tick λ while another task waits on its core;
//!   a task the framework marked interactive ([`CpuSched::set_interactive`], FTC) is placed at
//!   `V*curr + ω0/(ω−20+1)·λ` when it wakes so it runs at the next tick at the latest. CFS's
//!   wake-up preemption test stays. Tickless like CFS: the next tick is a deadline armed only
//!   while tasks compete.
//! - [`SchedKind::Eevdf`]: Linux's fair scheduler since 6.6 ([`eevdf`]): the eligible entity
//!   with the earliest virtual deadline is picked, a request runs to its deadline, lag is kept
//!   across sleeps and a wake-up preempts only when it makes the running entity ineligible.
//!
//! # Where the running task can be preempted ([`Preempt`])
//!
//! With [`Preempt::Full`] (`CONFIG_PREEMPT`) a decision to preempt takes effect at once,
//! wherever the running task is. It is the default, and what every phone scenario ran with
//! before this model existed (whether each paper's phone kernel was built preemptible is not
//! checked here). With [`Preempt::None`]
//! (`CONFIG_PREEMPT_NONE` or `preempt=none`, a server or VM kernel such as the one `bench
//! predict` models) a task running kernel code is preempted only where it gives the CPU up
//! itself: on its return to user space or at a `cond_resched()`. The simulator marks each burst
//! as kernel or user code ([`CpuSched::set_kernel`]); a kernel burst is one system call's work
//! (a `write()`'s page copies: the copy loop, `generic_perform_write`, works a folio at a time
//! and a large folio can hold the whole call; on the VM of docs/twin.md, twin12, a woken task
//! waited about one 1 MiB call behind a writer). While a kernel burst runs, a wake-up that would
//! preempt it and the end of its slice are both deferred to the burst's end (the kernel's
//! `TIF_NEED_RESCHED`, checked on the way out). Voluntary preemption (`preempt=voluntary`) adds
//! `might_resched()` points that a page-copy loop does not reach, so it is modelled as `None`.
//!
//! **Who is charged for a deferred preemption's wait** (`kernel/sched/core.c`,
//! `wakeup_preempt`): a wake-up that sets `TIF_NEED_RESCHED` also asks the next `__schedule`
//! to skip its clock update (`rq_clock_skip_update`, "we're going to schedule, save a useless
//! back to back clock update"). When the switch follows at once that costs nothing; when it is
//! deferred to the end of a kernel burst, `__schedule` runs on the clock of the core's last
//! update, so the preempted task is charged only up to it and the task switched in is charged
//! from it: the time between is runtime (vruntime, `sum_exec_runtime`) of the task that waited.
//! The clock is updated at every wake-up onto the core and at every tick, so the stretch moved
//! is from the later of the two to the switch. This model moves it the same way (the outgoing
//! task's vruntime gives it back, the incoming task's takes it, in their groups too) and leaves
//! the time each task really ran (`run_ns`) alone. On the VM of docs/twin.md the launch's CPU
//! clock beside copy writers was 2.5× its time on a CPU for this reason (twin18), and under
//! EEVDF the charge costs the woken launch its lag, so that it sometimes finds a writer's
//! request protected and waits to the tick (twin19).
//!
//! Every runnable wait ends in a recorded *episode* when [`CpuSched::record_latencies`] is on:
//! dispatch latency (woken → first instruction) or preemption latency (preempted → running
//! again), the two latencies of the FTC/VT-CFS paper. A task preempted during a burst also ends
//! a [`WaitKind::PreemptedToDone`] episode when it stops: from its first preemption to the end of
//! its run (the SPE'15 journal's reading of preemption latency, "from the time an interactive
//! task is preempted until it finishes").

use sorted_vec::SortedSet;

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use crate::prov::Tid;

pub mod eevdf;
pub mod vtcfs;

pub type GroupId = u16;
/// The root task group (kernel threads, system tasks not placed elsewhere).
pub const ROOT_GROUP: GroupId = 0;
pub const NICE_0_WEIGHT: u64 = 1024;
/// `WEIGHT_IDLEPRIO`: the weight of a `SCHED_IDLE` entity (and of a `cpu.idle` group).
pub const WEIGHT_IDLEPRIO: u32 = 3;

/// CFS's weight for a nice level (`sched_prio_to_weight`).
pub fn nice_to_weight(nice: i32) -> u32 {
    const W: [u32; 40] = [
        88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991,
        1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
    ];
    W[(nice.clamp(-20, 19) + 20) as usize]
}

/// CPU tunables, defaults from the kernel ([K] in parameters.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuParams {
    /// Relative speed of each core (1.0 = the speed in which compute work is expressed).
    pub cores: Vec<f64>,
    /// Base `sched_latency` (ms) before scaling by 1 + log2(ncpus). Kernel default 6 ms.
    pub sched_latency_ms: f64,
    /// Base `sched_min_granularity` (ms). Kernel default 0.75 ms.
    pub min_granularity_ms: f64,
    /// Base `sched_wakeup_granularity` (ms). Kernel default 1 ms.
    pub wakeup_granularity_ms: f64,
    /// Cost of a context switch (µs of work charged to the incoming task).
    pub context_switch_us: f64,
    /// The scheduling discipline: `"cfs"` (stock), `"vt-cfs"` [VT] or `"eevdf"` (Linux 6.6+;
    /// `min_granularity_ms` is then its base slice).
    pub scheduler: SchedKind,
    /// The scheduler tick (ms, 1000 / CONFIG_HZ): VT-CFS's preemption tick λ, and the period
    /// at which CFS checks slice expiry when [`CpuParams::slice_on_tick`] is on.
    pub tick_ms: f64,
    /// CFS ends a slice only at a scheduler tick, as Linux does: `check_preempt_tick` runs from
    /// the tick (`entity_tick`), and the high-resolution slice timer is off by default
    /// (`SCHED_FEAT(HRTICK, 0)`, `kernel/sched_features.h`, 2.6.25 on), so a task runs until the
    /// first tick at or after its slice's end. Off (the default): slices end exactly, tickless.
    pub slice_on_tick: bool,
    /// The kernel's preemption model: `"full"` (a kernel burst is preempted at once, the
    /// default) or `"none"` (deferred to the burst's end; see the module doc).
    pub preempt: Preempt,
    /// Spread of `compute` work: each burst is its nominal time times a log-normal factor of
    /// mean 1 and this coefficient of variation (frequency scaling, cache and memory state);
    /// 0 = exactly nominal.
    pub compute_cv: f64,
}

/// Which CFS-family discipline decides slices, wake-up preemption and interactive placement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SchedKind {
    /// Stock CFS: weighted slices and wake-up preemption.
    #[default]
    #[serde(rename = "cfs")]
    Cfs,
    /// VT-CFS [VT]: preemption at every tick λ while tasks compete, no weighted slice, no
    /// wake-up preemption, interactive tasks placed to run at the next tick.
    #[serde(rename = "vt-cfs")]
    VtCfs,
    /// EEVDF, Linux's fair scheduler since 6.6 ([`eevdf`]): the eligible entity with the
    /// earliest virtual deadline runs; lag is kept across sleeps; a request runs to its deadline.
    #[serde(rename = "eevdf")]
    Eevdf,
}

impl SchedKind {
    pub fn name(self) -> &'static str {
        match self {
            SchedKind::Cfs => "cfs",
            SchedKind::VtCfs => "vt-cfs",
            SchedKind::Eevdf => "eevdf",
        }
    }
}

/// The kernel's preemption model (`CONFIG_PREEMPT*`, or the boot's `preempt=` with
/// `PREEMPT_DYNAMIC`): where a task running kernel code can be preempted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preempt {
    /// Anywhere (`CONFIG_PREEMPT`, `preempt=full`).
    #[default]
    #[serde(rename = "full")]
    Full,
    /// Only where the task leaves the kernel or calls `cond_resched()`: at the end of its
    /// kernel burst (`CONFIG_PREEMPT_NONE` / `_VOLUNTARY`, `preempt=none` / `voluntary`).
    #[serde(rename = "none")]
    None,
}

impl Preempt {
    /// The scenario's (and the kernel's `preempt=`) name.
    pub fn name(self) -> &'static str {
        match self {
            Preempt::Full => "full",
            Preempt::None => "none",
        }
    }
}

/// Why a task waited in a run queue (an episode of [`CpuSched::record_latencies`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// Woken (or newly runnable) until its first instruction: dispatch latency.
    Dispatch,
    /// Preempted until it runs again: preemption latency.
    Preempted,
    /// From the first preemption of a run on the CPU (wake-up to stop) until the task stops:
    /// the time a preemption keeps an interactive task from finishing its work, including the
    /// rest of its own run after it (one episode per preempted run, at the stop).
    PreemptedToDone,
    /// Not a wait for the CPU: the part of a deferred preemption's wait that the task was
    /// charged as runtime when it was switched in (the stretch after the core's last clock
    /// update; module doc). What the kernel's CPU clock reports beyond the task's time on a CPU.
    SkippedClock,
}

impl Default for CpuParams {
    fn default() -> Self {
        CpuParams {
            cores: vec![1.0; 4],
            sched_latency_ms: 6.0,
            min_granularity_ms: 0.75,
            wakeup_granularity_ms: 1.0,
            context_switch_us: 5.0,
            scheduler: SchedKind::Cfs,
            tick_ms: 4.0,
            slice_on_tick: false,
            preempt: Preempt::Full,
            compute_cv: 0.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not runnable (blocked, sleeping, done, or never woken).
    Off,
    Queued(usize),
    Running(usize),
}

#[derive(Clone, Debug)]
struct TaskEnt {
    group: GroupId,
    weight: u32,
    vruntime: u64,
    state: State,
    /// Work left in the current burst (ns at speed 1.0).
    remaining: u64,
    last_core: usize,
    /// Start of the current stint on a core, or of the current wait in a queue.
    since: SimTime,
    /// Real ns spent running / runnable-but-waiting, over the whole run.
    run_ns: u64,
    wait_ns: u64,
    switches: u64,
    /// Marked interactive by the framework (FTC): VT-CFS places it to run at the next tick.
    interactive: bool,
    /// The runnable wait in progress, for latency episodes: why and since when.
    episode: Option<(WaitKind, SimTime)>,
    /// The first preemption of the current run (wake-up to stop), for [`WaitKind::PreemptedToDone`].
    preempted_at: Option<SimTime>,
    /// Its current (or next) burst is kernel code ([`CpuSched::set_kernel`]).
    kernel: bool,
    /// EEVDF: the virtual deadline of its current request, the lag it left with, whether it
    /// was ever placed (a first placement has no lag and half a slice), and the core it left.
    deadline: u64,
    vlag: i64,
    placed: bool,
    left_core: usize,
    /// When it was last put in a queue ([`CpuSched::next_seq`]): EEVDF's order among equal
    /// deadlines.
    seq: u64,
}

#[derive(Clone, Debug, Default)]
struct GroupRq {
    vruntime: u64,
    /// Queued tasks by (vruntime, tid); the running task is not in it.
    tree: SortedSet<(u64, Tid)>,
    /// Runnable tasks including a running one.
    nr: u32,
    load: u64,
    min_vruntime: u64,
    /// EEVDF: the group entity's deadline, the lag it left the top level with, and whether it
    /// was ever placed.
    deadline: u64,
    vlag: i64,
    placed: bool,
    seq: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ent {
    Group(GroupId),
    Task(Tid),
}

/// A core's speed factor, with the integer arithmetic that gives the same results as the float
/// formulas when the factor is a power of two (1.0 and 0.5 in every built-in phone).
#[derive(Clone, Copy, Debug)]
struct Speed {
    factor: f64,
    /// `log2(factor)` when the factor is an exact power of two between 2^-8 and 2^8.
    pow2: Option<i32>,
}

impl Speed {
    /// Beyond this, `u64 → f64` conversions stop being exact; the float formulas are used.
    const EXACT: u64 = 1 << 53;

    fn new(factor: f64) -> Speed {
        let e = factor.log2().round() as i32;
        let pow2 = (factor > 0.0 && (-8..=8).contains(&e) && factor == 2f64.powi(e)).then_some(e);
        Speed { factor, pow2 }
    }

    /// Work done in `elapsed` ns: `round(elapsed × factor)`.
    #[inline]
    fn work_in(self, elapsed: u64) -> u64 {
        match self.pow2 {
            Some(e) if elapsed < Self::EXACT && e >= 0 => elapsed << e,
            // Round half away from zero, as f64::round does.
            Some(e) if elapsed < Self::EXACT => (elapsed + (1 << (-e - 1))) >> -e,
            _ => ((elapsed as f64) * self.factor).round() as u64,
        }
    }

    /// Time to do `work`: `ceil(work / factor)`.
    #[inline]
    fn time_for(self, work: u64) -> u64 {
        match self.pow2 {
            Some(e) if work < Self::EXACT && e >= 0 => (work + (1 << e) - 1) >> e,
            Some(e) if work < Self::EXACT => work << -e,
            _ => (work as f64 / self.factor).ceil() as u64,
        }
    }
}

#[derive(Clone, Debug)]
struct Core {
    speed: Speed,
    curr: Option<Tid>,
    /// Top-level queued entities by (vruntime, entity); the running entity is not in it.
    top: SortedSet<(u64, Ent)>,
    top_load: u64,
    top_nr: u32,
    min_vruntime: u64,
    groups: Vec<GroupRq>,
    slice_end: SimTime,
    /// The task that ran last on this core (context switches are counted against it).
    last: Option<Tid>,
    gen: u64,
    /// Set when a completed burst awaits the simulator's decision (continue or stop).
    burst_done: bool,
    /// Tasks queued here (not running): load balancing's measure, kept as tasks come and go.
    queued: u32,
    busy_ns: u64,
    /// EEVDF: a wake-up decided to preempt while the running task could not be (its kernel
    /// burst, or the simulator deciding its next burst): reschedule when it continues.
    resched: bool,
    /// A wake-up preempted a kernel burst that cannot be preempted at once: the next switch
    /// here skips its clock update (`rq_clock_skip_update`; see the module doc).
    clock_skip: bool,
    /// The core's last clock update other than a tick: the last wake-up onto it.
    clock_at: SimTime,
}

/// What a core's timer means when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    /// The running task finished its burst; call [`CpuSched::continue_burst`] or
    /// [`CpuSched::stop`] for it.
    BurstDone(Tid),
    /// Slice handling only (preemption or extension); nothing for the simulator to do.
    Nothing,
}

pub struct CpuSched {
    pub params: CpuParams,
    latency: u64,
    min_gran: u64,
    wakeup_gran: u64,
    switch_ns: u64,
    tasks: Vec<TaskEnt>,
    group_weights: Vec<u32>,
    /// Cores each group may run on (cpuset), as a bit mask; all cores by default.
    group_cpus: Vec<u64>,
    cores: Vec<Core>,
    /// Cores whose deadline changed since the last [`CpuSched::take_changed`], as a bit set
    /// (bit `c % 64` of word `c / 64`).
    changed: Vec<u64>,
    pub preemptions: u64,
    pub migrations: u64,
    /// The discipline (CFS or VT-CFS) and VT-CFS's tick λ in ns.
    kind: SchedKind,
    tick: u64,
    /// VT-CFS: ticks at which the running task gave its core to another task.
    pub tick_preemptions: u64,
    /// Context switches: a core started running a different task than before.
    pub context_switches: u64,
    /// Finished runnable waits (task, kind, ns), when recording.
    latencies: Option<Vec<(Tid, WaitKind, u64)>>,
    /// Groups with cgroup `cpu.idle` set, and the weight each had before ([`CpuSched::set_group_idle`]).
    idle_groups: Vec<Option<u32>>,
    /// Insertions into the queues so far (each entity's `seq`).
    next_seq: u64,
}

impl CpuSched {
    pub fn new(params: CpuParams, group_weights: Vec<u32>) -> Self {
        let n = params.cores.len().max(1);
        let (kind, tick) = (params.scheduler, ((params.tick_ms * 1e6) as u64).max(1_000));
        let scale = 1.0 + (n as f64).log2();
        let ms = |v: f64| (v * scale * 1e6) as u64;
        let mut cores: Vec<Core> = params
            .cores
            .iter()
            .map(|&speed| Core {
                speed: Speed::new(speed),
                curr: None,
                top: SortedSet::new(),
                top_load: 0,
                top_nr: 0,
                min_vruntime: 0,
                groups: vec![GroupRq::default(); group_weights.len()],
                slice_end: SimTime::ZERO,
                last: None,
                gen: 0,
                burst_done: false,
                queued: 0,
                busy_ns: 0,
                resched: false,
                clock_skip: false,
                clock_at: SimTime::ZERO,
            })
            .collect();
        if kind == SchedKind::Eevdf {
            // Start the clocks high enough that lag never asks for a negative vruntime.
            for c in &mut cores {
                c.min_vruntime = eevdf::V_BASE;
                for g in &mut c.groups {
                    (g.vruntime, g.min_vruntime) = (eevdf::V_BASE, eevdf::V_BASE);
                }
            }
        }
        CpuSched {
            latency: ms(params.sched_latency_ms),
            min_gran: ms(params.min_granularity_ms),
            wakeup_gran: ms(params.wakeup_granularity_ms),
            switch_ns: (params.context_switch_us * 1e3) as u64,
            params,
            tasks: Vec::new(),
            group_cpus: vec![u64::MAX; group_weights.len()],
            idle_groups: vec![None; group_weights.len()],
            group_weights,
            changed: vec![0; n.div_ceil(64)],
            cores,
            preemptions: 0,
            migrations: 0,
            kind,
            tick,
            tick_preemptions: 0,
            context_switches: 0,
            latencies: None,
            next_seq: 0,
        }
    }

    /// The discipline in use.
    pub fn kind(&self) -> SchedKind {
        self.kind
    }

    /// Record every runnable wait as a dispatch or preemption latency episode; drain them with
    /// [`CpuSched::take_latencies`].
    pub fn record_latencies(&mut self) {
        self.latencies.get_or_insert_with(Vec::new);
    }

    /// Episodes finished since the last call: (task, kind, ns waited).
    pub fn take_latencies(&mut self, out: &mut Vec<(Tid, WaitKind, u64)>) {
        out.clear();
        if let Some(l) = &mut self.latencies {
            out.append(l);
        }
    }

    /// Mark or unmark `tid` as a task of a user-interactive chain (FTC). Only VT-CFS uses the
    /// mark (its wake-up placement); weights are changed with [`CpuSched::set_weight`].
    pub fn set_interactive(&mut self, tid: Tid, on: bool) {
        self.tasks[tid as usize].interactive = on;
    }

    pub fn is_interactive(&self, tid: Tid) -> bool {
        self.tasks[tid as usize].interactive
    }

    /// The load `tid` competes with at its own level on the core it last ran on (or runs on):
    /// the weights of the runnable tasks of its group there (the root level's entities for
    /// root tasks), counting `tid` itself if it is not runnable. FTC's ΣW.
    pub fn level_load(&self, tid: Tid) -> u64 {
        let t = &self.tasks[tid as usize];
        let core = match t.state {
            State::Queued(c) | State::Running(c) => c,
            State::Off => t.last_core,
        };
        let c = &self.cores[core];
        let own = if t.state == State::Off { u64::from(t.weight) } else { 0 };
        let load = if t.group == ROOT_GROUP { c.top_load } else { c.groups[t.group as usize].load };
        load + own
    }

    /// CFS's scheduling period for `n` runnable tasks (`sched_period`), ns.
    pub fn period(&self, n: u64) -> u64 {
        self.latency.max(n * self.min_gran)
    }

    /// Runnable tasks on the core `tid` last ran on (or runs on), counting `tid` once.
    pub fn nr_on_core_of(&self, tid: Tid) -> u64 {
        let t = &self.tasks[tid as usize];
        let core = match t.state {
            State::Queued(c) | State::Running(c) => c,
            State::Off => t.last_core,
        };
        let n = self.tasks.iter().filter(|x| matches!(x.state, State::Queued(c) | State::Running(c) if c == core)).count();
        n as u64 + u64::from(t.state == State::Off)
    }

    pub fn ncores(&self) -> usize {
        self.cores.len()
    }

    /// Register task `tid` (tids must be added in order 0, 1, 2, …).
    pub fn add_task(&mut self, tid: Tid, group: GroupId, weight: u32) {
        assert_eq!(tid as usize, self.tasks.len(), "tasks are added in tid order");
        self.tasks.push(TaskEnt {
            group,
            weight: weight.max(1),
            vruntime: 0,
            state: State::Off,
            remaining: 0,
            last_core: tid as usize % self.cores.len(),
            since: SimTime::ZERO,
            run_ns: 0,
            wait_ns: 0,
            switches: 0,
            interactive: false,
            episode: None,
            preempted_at: None,
            kernel: false,
            deadline: 0,
            vlag: 0,
            placed: false,
            left_core: tid as usize % self.cores.len(),
            seq: 0,
        });
    }

    pub fn group_of(&self, tid: Tid) -> GroupId {
        self.tasks[tid as usize].group
    }
    pub fn weight_of(&self, tid: Tid) -> u32 {
        self.tasks[tid as usize].weight
    }
    pub fn group_weight(&self, g: GroupId) -> u32 {
        self.group_weights[g as usize]
    }
    /// (running ns, runnable-waiting ns) of a task so far, including the current stint.
    pub fn times(&self, tid: Tid, now: SimTime) -> (u64, u64) {
        let t = &self.tasks[tid as usize];
        match t.state {
            State::Running(_) => (t.run_ns + now.since(t.since), t.wait_ns),
            State::Queued(_) => (t.run_ns, t.wait_ns + now.since(t.since)),
            State::Off => (t.run_ns, t.wait_ns),
        }
    }
    pub fn core_busy_ns(&self, core: usize) -> u64 {
        self.cores[core].busy_ns
    }
    pub fn is_runnable(&self, tid: Tid) -> bool {
        self.tasks[tid as usize].state != State::Off
    }
    pub fn running_on(&self, core: usize) -> Option<Tid> {
        self.cores[core].curr
    }

    /// The instant core `core` must be called back with [`CpuSched::expire`], and the generation
    /// that call must quote (stale timers are ignored).
    pub fn deadline(&self, core: usize) -> Option<(SimTime, u64)> {
        let c = &self.cores[core];
        let tid = c.curr?;
        if c.burst_done {
            return None;
        }
        let t = &self.tasks[tid as usize];
        let burst_end = t.since.after(c.speed.time_for(t.remaining));
        if self.params.preempt == Preempt::None && t.kernel {
            // Not preemptible: a slice's end waits for the burst's (continue_burst checks it).
            return Some((burst_end, c.gen));
        }
        Some((burst_end.min(c.slice_end), c.gen))
    }

    /// Cores whose deadline changed, in ascending order, each once; the caller re-arms their
    /// timers.
    pub fn take_changed(&mut self, out: &mut Vec<usize>) {
        out.clear();
        out.extend(std::iter::from_fn(|| self.next_changed()));
    }

    /// The lowest core whose deadline changed, taken out of the set (what
    /// [`CpuSched::take_changed`] returns, one at a time).
    #[inline]
    pub fn next_changed(&mut self) -> Option<usize> {
        let i = self.changed.iter().position(|&w| w != 0)?;
        let w = &mut self.changed[i];
        let b = w.trailing_zeros() as usize;
        *w &= *w - 1;
        Some(i * 64 + b)
    }

    fn touch(&mut self, core: usize) {
        self.cores[core].gen += 1;
        self.changed[core / 64] |= 1 << (core % 64);
    }

    /// Move a task to another group (cgroup migration on a foreground change).
    pub fn set_group(&mut self, tid: Tid, group: GroupId, now: SimTime) {
        if self.tasks[tid as usize].group == group {
            return;
        }
        self.requeue_with(tid, now, |t| t.group = group);
    }

    /// Change a task's weight (e.g. a nice change or FTC's promotion).
    pub fn set_weight(&mut self, tid: Tid, weight: u32, now: SimTime) {
        if self.tasks[tid as usize].weight == weight {
            return;
        }
        self.requeue_with(tid, now, |t| t.weight = weight.max(1));
    }

    /// Change a group's weight (its cpu.shares).
    pub fn set_group_weight(&mut self, g: GroupId, weight: u32, now: SimTime) {
        // Weights enter load sums: take every queued member out and back in.
        let members: Vec<Tid> = (0..self.tasks.len() as Tid)
            .filter(|&t| self.tasks[t as usize].group == g && self.tasks[t as usize].state != State::Off)
            .collect();
        for &t in &members {
            self.dequeue_any(t, now);
        }
        self.group_weights[g as usize] = weight.max(1);
        for &t in &members {
            let rem = self.tasks[t as usize].remaining;
            self.wake_inner(t, rem, now);
        }
    }

    /// cgroup v2 `cpu.idle` of group `g` (Linux 5.15, `sched_group_set_idle`): while set, the
    /// group's entity has the weight of `SCHED_IDLE` (`WEIGHT_IDLEPRIO`, 3), and at the first
    /// level where they differ a waking non-idle entity always preempts an idle one while an
    /// idle one never preempts a non-idle one (`check_preempt_wakeup`: `cse_is_idle &&
    /// !pse_is_idle`). Clearing it restores the group's weight. Simplification: the kernel also
    /// prefers CPUs running only idle entities when placing a wake-up (`sched_idle_cpu`); the
    /// placement here is unchanged.
    pub fn set_group_idle(&mut self, g: GroupId, idle: bool, now: SimTime) {
        let Some(slot) = self.idle_groups.get(g as usize).copied() else { return };
        match (slot, idle) {
            (None, true) => {
                self.idle_groups[g as usize] = Some(self.group_weights[g as usize]);
                self.set_group_weight(g, WEIGHT_IDLEPRIO, now);
            }
            (Some(w), false) => {
                self.idle_groups[g as usize] = None;
                self.set_group_weight(g, w, now);
            }
            _ => {}
        }
    }

    /// Set group `g`'s weight (cpu.shares, or cgroup v2 `cpu.weight × 1024 / 100`); while its
    /// `cpu.idle` is set the weight is kept for when it is cleared.
    pub fn set_group_shares(&mut self, g: GroupId, weight: u32, now: SimTime) {
        match self.idle_groups.get_mut(g as usize) {
            Some(Some(saved)) => *saved = weight.max(1),
            Some(None) => self.set_group_weight(g, weight, now),
            None => {}
        }
    }

    /// Whether group `g` has `cpu.idle` set.
    pub fn group_is_idle(&self, g: GroupId) -> bool {
        self.idle_groups.get(g as usize).is_some_and(Option::is_some)
    }

    fn requeue_with(&mut self, tid: Tid, now: SimTime, f: impl FnOnce(&mut TaskEnt)) {
        let state = self.tasks[tid as usize].state;
        if state == State::Off {
            f(&mut self.tasks[tid as usize]);
            return;
        }
        if let State::Running(core) = state {
            // Stays on its core: move its weight from the old group's loads to the new one's.
            self.account_run(core, now);
            self.leave(core, tid);
            f(&mut self.tasks[tid as usize]);
            self.rejoin_running(core, tid);
            self.touch(core);
            return;
        }
        self.dequeue_any(tid, now);
        f(&mut self.tasks[tid as usize]);
        let rem = self.tasks[tid as usize].remaining;
        self.wake_inner(tid, rem, now);
    }

    /// Take a runnable task off its core entirely, keeping its remaining burst.
    fn dequeue_any(&mut self, tid: Tid, now: SimTime) {
        match self.tasks[tid as usize].state {
            State::Off => {}
            State::Queued(core) => {
                self.account_wait(tid, now);
                if self.kind == SchedKind::Eevdf {
                    self.eevdf_dequeue(core, tid);
                }
                self.remove_queued(core, tid);
                self.tasks[tid as usize].state = State::Off;
            }
            State::Running(core) => {
                self.account_run(core, now);
                if self.kind == SchedKind::Eevdf {
                    self.eevdf_dequeue(core, tid);
                }
                self.cores[core].curr = None;
                self.cores[core].burst_done = false;
                self.cores[core].clock_skip = false;
                self.leave(core, tid);
                self.tasks[tid as usize].state = State::Off;
                self.pick_next(core, now);
            }
        }
    }

    /// Make `tid` runnable with a burst of `work` ns (at speed 1.0).
    pub fn wake(&mut self, tid: Tid, work: u64, now: SimTime) {
        debug_assert_eq!(self.tasks[tid as usize].state, State::Off, "woken twice");
        self.wake_inner(tid, work, now);
    }

    fn wake_inner(&mut self, tid: Tid, work: u64, now: SimTime) {
        let core = self.select_core(tid);
        let t = &mut self.tasks[tid as usize];
        t.remaining = work.max(1);
        if t.episode.is_none() {
            t.episode = Some((WaitKind::Dispatch, now));
        }
        if t.last_core != core {
            self.migrations += 1;
        }
        t.last_core = core;
        // ttwu updates the target core's clock.
        self.cores[core].clock_at = now;
        self.enqueue(core, tid, now, true);
        if self.cores[core].curr.is_none() {
            self.pick_next(core, now);
            return;
        }
        if self.kind == SchedKind::VtCfs {
            // The woken task competes from the next tick on, if it does not preempt now.
            self.arm_tick(core, now);
        }
        let preempts = match self.kind {
            SchedKind::Eevdf => self.eevdf_wakeup_preempts(core, tid, now),
            _ => self.should_preempt(core, tid),
        };
        if preempts {
            self.preemptions += 1;
            if self.cores[core].burst_done || self.in_kernel(core) {
                self.cores[core].resched = true;
                // The switch waits for the burst's end and runs on this wake-up's clock.
                self.cores[core].clock_skip |= self.in_kernel(core);
                // The simulator is deciding what the current task does next, or the task runs
                // kernel code that cannot be preempted: preempt it as soon as it continues (its
                // slice ends now; `deadline` holds a kernel burst's timer to the burst's end, so
                // the core's timer does not move).
                self.cores[core].slice_end = now;
            } else {
                self.preempt_current(core, now);
            }
        }
    }

    /// Restrict a group to the cores in `mask` (bit i = core i), like a cpuset. Queued tasks
    /// move at their next wake-up.
    pub fn set_group_cpus(&mut self, g: GroupId, mask: u64) {
        let all = if self.cores.len() >= 64 { u64::MAX } else { (1u64 << self.cores.len()) - 1 };
        self.group_cpus[g as usize] = if mask & all == 0 { all } else { mask & all };
    }

    fn allowed(&self, tid: Tid, core: usize) -> bool {
        self.group_cpus[self.tasks[tid as usize].group as usize] & (1u64 << core) != 0
    }

    /// Wake-up placement: the fastest idle allowed core (the previous one when it is among
    /// them), else the previous core if allowed, else the allowed core with the fewest queued
    /// tasks. Preferring fast idle cores is what HMP/EAS boosting does for the demanding
    /// foreground threads of a big.LITTLE phone; with equal cores it is plain CFS idle-sibling
    /// selection.
    fn select_core(&self, tid: Tid) -> usize {
        let prev = self.tasks[tid as usize].last_core;
        let idle = |c: usize| self.cores[c].curr.is_none() && self.cores[c].top.is_empty();
        let mut best: Option<usize> = None;
        for c in 0..self.cores.len() {
            if !self.allowed(tid, c) || !idle(c) {
                continue;
            }
            let better = match best {
                None => true,
                Some(b) => {
                    let (sc, sb) = (self.cores[c].speed.factor, self.cores[b].speed.factor);
                    sc > sb || (sc == sb && c == prev)
                }
            };
            if better {
                best = Some(c);
            }
        }
        if let Some(c) = best {
            return c;
        }
        if self.allowed(tid, prev) {
            return prev;
        }
        (0..self.cores.len())
            .filter(|&c| self.allowed(tid, c))
            .min_by_key(|&c| (self.queued_tasks(c) + usize::from(self.cores[c].curr.is_some()), c))
            .unwrap_or(prev)
    }

    /// Whether `tid`'s current (or next) burst is kernel code: with [`Preempt::None`] a
    /// running kernel burst is not preempted before it ends (see the module doc). Call it
    /// before [`CpuSched::wake`] or [`CpuSched::continue_burst`] starts the burst; it does not
    /// change a burst already running.
    pub fn set_kernel(&mut self, tid: Tid, kernel: bool) {
        self.tasks[tid as usize].kernel = kernel;
    }

    /// The task running on `core` runs kernel code that cannot be preempted now.
    fn in_kernel(&self, core: usize) -> bool {
        self.params.preempt == Preempt::None && self.cores[core].curr.is_some_and(|t| self.tasks[t as usize].kernel)
    }

    /// The running task `tid` continues with a new burst without leaving the core.
    pub fn continue_burst(&mut self, tid: Tid, work: u64, now: SimTime) {
        let State::Running(core) = self.tasks[tid as usize].state else {
            panic!("continue_burst on a task that is not running");
        };
        debug_assert!(self.cores[core].burst_done);
        self.cores[core].burst_done = false;
        self.tasks[tid as usize].remaining = work.max(1);
        self.tasks[tid as usize].since = now;
        if self.cores[core].slice_end <= now {
            self.slice_expired(core, now);
        }
        self.touch(core);
    }

    /// The running task `tid` stops (blocked, sleeping or done) after its burst.
    pub fn stop(&mut self, tid: Tid, now: SimTime) {
        let State::Running(core) = self.tasks[tid as usize].state else {
            panic!("stop on a task that is not running");
        };
        if self.kind == SchedKind::Eevdf {
            self.account_run(core, now);
        }
        let stretch = self.skipped_clock(core, tid, now);
        if self.kind == SchedKind::Eevdf {
            self.eevdf_dequeue(core, tid);
        }
        self.cores[core].curr = None;
        self.cores[core].burst_done = false;
        self.leave(core, tid);
        self.tasks[tid as usize].state = State::Off;
        self.tasks[tid as usize].remaining = 0;
        if let Some(since) = self.tasks[tid as usize].preempted_at.take() {
            if let Some(l) = &mut self.latencies {
                l.push((tid, WaitKind::PreemptedToDone, now.since(since)));
            }
        }
        self.pick_next(core, now);
        self.charge_skipped_clock(core, stretch, now);
        if self.cores[core].curr.is_none() {
            self.newidle_balance(core, now);
        }
        self.touch(core);
    }

    /// Core `core`'s timer fired (with the generation [`CpuSched::deadline`] gave).
    pub fn expire(&mut self, core: usize, gen: u64, now: SimTime) -> Option<Expired> {
        if self.cores[core].gen != gen || self.cores[core].burst_done {
            return None;
        }
        let tid = self.cores[core].curr?;
        self.account_run(core, now);
        if self.tasks[tid as usize].remaining == 0 {
            self.cores[core].burst_done = true;
            self.touch(core);
            return Some(Expired::BurstDone(tid));
        }
        self.slice_expired(core, now);
        self.touch(core);
        Some(Expired::Nothing)
    }

    fn slice_expired(&mut self, core: usize, now: SimTime) {
        if self.kind == SchedKind::VtCfs {
            self.tick(core, now);
            return;
        }
        if self.kind == SchedKind::Eevdf {
            // update_deadline: a request that reached its deadline gets the next one, and the
            // core is rescheduled if anyone waits (or a deferred wake-up asked for it).
            let passed = self.eevdf_refresh(core);
            let resched = std::mem::take(&mut self.cores[core].resched);
            let waiting = !(self.cores[core].top.is_empty() && self.group_queue_empty(core));
            if (passed || resched) && waiting {
                self.preempt_current(core, now);
            } else {
                let tid = self.cores[core].curr.expect("running");
                self.cores[core].slice_end = self.eevdf_slice_end(core, tid, now);
            }
            return;
        }
        if self.cores[core].top.is_empty() && self.group_queue_empty(core) {
            let slice = self.slice_of(core, self.cores[core].curr.expect("running"));
            self.cores[core].slice_end = self.cfs_slice_end(now, slice);
            return;
        }
        self.preempt_current(core, now);
    }

    fn group_queue_empty(&self, core: usize) -> bool {
        let Some(tid) = self.cores[core].curr else { return true };
        let g = self.tasks[tid as usize].group;
        g == ROOT_GROUP || self.cores[core].groups[g as usize].tree.is_empty()
    }

    fn preempt_current(&mut self, core: usize, now: SimTime) {
        // Charge the stint first: `account_run` charges the core's current task.
        self.account_run(core, now);
        let Some(tid) = self.cores[core].curr else { return };
        let stretch = self.skipped_clock(core, tid, now);
        self.cores[core].curr = None;
        self.cores[core].burst_done = false;
        self.put_back(core, tid, now);
        self.pick_next(core, now);
        self.charge_skipped_clock(core, stretch, now);
        self.touch(core);
    }

    /// A switch away from `prev` (running on `core`, charged up to `now`) that runs on a
    /// skipped clock update: `prev` gives back the stretch since the core's last clock update
    /// (a wake-up onto it or a tick), which the task switched in is charged instead
    /// ([`CpuSched::charge_skipped_clock`]; module doc). Returns the stretch (ns).
    fn skipped_clock(&mut self, core: usize, prev: Tid, now: SimTime) -> u64 {
        if !std::mem::take(&mut self.cores[core].clock_skip) {
            return 0;
        }
        let tick = now.ns() / self.tick * self.tick;
        let stretch = now.ns().saturating_sub(self.cores[core].clock_at.ns().max(tick));
        self.shift_vruntime(core, prev, stretch, false);
        stretch
    }

    /// The task just switched in on `core` (if any) is charged a skipped clock update's
    /// `stretch` as if it had run it.
    fn charge_skipped_clock(&mut self, core: usize, stretch: u64, now: SimTime) {
        let Some(next) = self.cores[core].curr else { return };
        if stretch == 0 {
            return;
        }
        self.shift_vruntime(core, next, stretch, true);
        if let Some(l) = &mut self.latencies {
            l.push((next, WaitKind::SkippedClock, stretch));
        }
        if self.kind == SchedKind::Eevdf {
            self.cores[core].slice_end = self.eevdf_slice_end(core, next, now);
        }
    }

    /// Move `tid`'s vruntime (and its group entity's on `core`) by `ns` of runtime, up or
    /// down, without touching the time it ran. `tid` must not be in a queue's tree.
    fn shift_vruntime(&mut self, core: usize, tid: Tid, ns: u64, up: bool) {
        let shift = |v: u64, w: u64| {
            let d = ns * NICE_0_WEIGHT / w.max(1);
            if up {
                v + d
            } else {
                v.saturating_sub(d)
            }
        };
        let t = &mut self.tasks[tid as usize];
        t.vruntime = shift(t.vruntime, u64::from(t.weight));
        let g = t.group;
        if g != ROOT_GROUP {
            let gw = u64::from(self.group_weights[g as usize]);
            let grq = &mut self.cores[core].groups[g as usize];
            grq.vruntime = shift(grq.vruntime, gw);
        }
    }

    /// Charge the running task for the time since it (re)started; progress its burst.
    fn account_run(&mut self, core: usize, now: SimTime) {
        let Some(tid) = self.cores[core].curr else { return };
        let speed = self.cores[core].speed;
        let t = &mut self.tasks[tid as usize];
        let elapsed = now.since(t.since);
        if elapsed == 0 {
            return;
        }
        t.since = now;
        t.run_ns += elapsed;
        let work = speed.work_in(elapsed);
        t.remaining = t.remaining.saturating_sub(work.max(1));
        let w = u64::from(t.weight);
        t.vruntime += elapsed * NICE_0_WEIGHT / w;
        let g = t.group;
        let c = &mut self.cores[core];
        c.busy_ns += elapsed;
        if g != ROOT_GROUP {
            let gw = u64::from(self.group_weights[g as usize]);
            c.groups[g as usize].vruntime += elapsed * NICE_0_WEIGHT / gw;
            let grq = &mut c.groups[g as usize];
            let left = grq.tree.first().map(|&(v, _)| v).unwrap_or(u64::MAX);
            grq.min_vruntime = grq.min_vruntime.max(left.min(t.vruntime));
        }
        let top_v = if g == ROOT_GROUP { t.vruntime } else { c.groups[g as usize].vruntime };
        let left = c.top.first().map(|&(v, _)| v).unwrap_or(u64::MAX);
        c.min_vruntime = c.min_vruntime.max(left.min(top_v));
    }

    fn account_wait(&mut self, tid: Tid, now: SimTime) {
        let t = &mut self.tasks[tid as usize];
        t.wait_ns += now.since(t.since);
        t.since = now;
    }

    /// Add a runnable task to core `core`'s queues (not running), with sleeper placement (and,
    /// under VT-CFS, the placement of an interactive task that `wake`s up).
    fn enqueue(&mut self, core: usize, tid: Tid, now: SimTime, wake: bool) {
        let vt = if wake && self.kind == SchedKind::VtCfs && self.tasks[tid as usize].interactive {
            Some(self.interactive_refs(core, tid, now))
        } else {
            None
        };
        let half = self.latency / 2;
        let eevdf = (self.kind == SchedKind::Eevdf).then(|| {
            // enqueue_entity brings the running task up to date before placing (update_curr).
            self.account_run(core, now);
            self.eevdf_place(core, tid)
        });
        let (g, w) = {
            let t = &self.tasks[tid as usize];
            (t.group, u64::from(t.weight))
        };
        self.next_seq += 1;
        let seq = self.next_seq;
        let c = &mut self.cores[core];
        c.queued += 1;
        let t = &mut self.tasks[tid as usize];
        t.state = State::Queued(core);
        t.since = now;
        t.seq = seq;
        if let Some(((v, d), _)) = eevdf {
            (t.vruntime, t.deadline) = (v, d);
        }
        if g == ROOT_GROUP {
            if eevdf.is_none() {
                t.vruntime = t.vruntime.max(c.min_vruntime.saturating_sub(half));
            }
            if let Some((top, _)) = vt {
                t.vruntime = t.vruntime.min(top);
            }
            c.top.find_or_insert((t.vruntime, Ent::Task(tid)));
            c.top_load += w;
            c.top_nr += 1;
        } else {
            let gw = u64::from(self.group_weights[g as usize]);
            let grq = &mut c.groups[g as usize];
            if eevdf.is_none() {
                t.vruntime = t.vruntime.max(grq.min_vruntime.saturating_sub(half));
            }
            if let Some((_, inner)) = vt {
                t.vruntime = t.vruntime.min(inner);
            }
            grq.tree.find_or_insert((t.vruntime, tid));
            grq.load += w;
            grq.nr += 1;
            if grq.nr == 1 {
                // The group entity becomes runnable on this core.
                if let Some((_, Some((gv, gd)))) = eevdf {
                    (grq.vruntime, grq.deadline) = (gv, gd);
                } else {
                    grq.vruntime = grq.vruntime.max(c.min_vruntime.saturating_sub(half));
                }
                if let Some((top, _)) = vt {
                    // A group entity already queued keeps its place (moving it would move
                    // the group's other tasks too).
                    grq.vruntime = grq.vruntime.min(top);
                }
                grq.seq = seq;
                c.top.find_or_insert((grq.vruntime, Ent::Group(g)));
                c.top_load += gw;
                c.top_nr += 1;
            }
        }
    }

    /// Remove a queued (not running) task from core `core`.
    fn remove_queued(&mut self, core: usize, tid: Tid) {
        let t = &self.tasks[tid as usize];
        let (g, v, w) = (t.group, t.vruntime, u64::from(t.weight));
        let c = &mut self.cores[core];
        c.queued -= 1;
        if g == ROOT_GROUP {
            c.top.remove_item(&(v, Ent::Task(tid)));
            c.top_load -= w;
            c.top_nr -= 1;
        } else {
            let gw = u64::from(self.group_weights[g as usize]);
            let grq = &mut c.groups[g as usize];
            grq.tree.remove_item(&(v, tid));
            grq.load -= w;
            grq.nr -= 1;
            if grq.nr == 0 {
                let gv = grq.vruntime;
                c.top.remove_item(&(gv, Ent::Group(g)));
                c.top_load -= gw;
                c.top_nr -= 1;
            }
        }
    }

    /// The running task `tid` leaves core `core` for good (not runnable any more).
    fn leave(&mut self, core: usize, tid: Tid) {
        let t = &self.tasks[tid as usize];
        let (g, w) = (t.group, u64::from(t.weight));
        let c = &mut self.cores[core];
        if g == ROOT_GROUP {
            c.top_load -= w;
            c.top_nr -= 1;
        } else {
            let gw = u64::from(self.group_weights[g as usize]);
            let grq = &mut c.groups[g as usize];
            grq.load -= w;
            grq.nr -= 1;
            if grq.nr == 0 {
                c.top_load -= gw;
                c.top_nr -= 1;
            } else {
                // The group entity stays runnable: it was running (not in the tree); put it back.
                let gv = grq.vruntime;
                c.top.find_or_insert((gv, Ent::Group(g)));
            }
        }
    }

    /// Count the running task `tid` in its (new) group's loads without queueing it.
    fn rejoin_running(&mut self, core: usize, tid: Tid) {
        let t = &self.tasks[tid as usize];
        let (g, w) = (t.group, u64::from(t.weight));
        let c = &mut self.cores[core];
        if g == ROOT_GROUP {
            c.top_load += w;
            c.top_nr += 1;
        } else {
            let gw = u64::from(self.group_weights[g as usize]);
            let grq = &mut c.groups[g as usize];
            grq.load += w;
            grq.nr += 1;
            if grq.nr == 1 {
                c.top_load += gw;
                c.top_nr += 1;
            } else {
                // The group entity was queued; it is the running entity now.
                let gv = grq.vruntime;
                c.top.remove_item(&(gv, Ent::Group(g)));
            }
        }
    }

    /// The running task goes back into the queue (preempted), still runnable.
    fn put_back(&mut self, core: usize, tid: Tid, now: SimTime) {
        self.next_seq += 1;
        let seq = self.next_seq;
        let t = &mut self.tasks[tid as usize];
        t.seq = seq;
        t.state = State::Queued(core);
        t.since = now;
        t.episode = Some((WaitKind::Preempted, now));
        t.preempted_at.get_or_insert(now);
        let (g, v) = (t.group, t.vruntime);
        let c = &mut self.cores[core];
        c.queued += 1;
        if g == ROOT_GROUP {
            c.top.find_or_insert((v, Ent::Task(tid)));
        } else {
            c.groups[g as usize].tree.find_or_insert((v, tid));
            c.groups[g as usize].seq = seq;
            let gv = c.groups[g as usize].vruntime;
            c.top.find_or_insert((gv, Ent::Group(g)));
        }
    }

    /// Choose the next task for an idle core: the leftmost top-level entity, then inside it.
    fn pick_next(&mut self, core: usize, now: SimTime) {
        debug_assert!(self.cores[core].curr.is_none());
        let first = match self.kind {
            SchedKind::Eevdf => self.eevdf_pick_next(core),
            _ => self.cores[core].top.first().copied(),
        };
        let Some((v, ent)) = first else {
            return;
        };
        let inner = match ent {
            Ent::Group(g) if self.kind == SchedKind::Eevdf => self.eevdf_pick_in_group(core, g),
            Ent::Group(g) => self.cores[core].groups[g as usize].tree.first().copied(),
            Ent::Task(_) => None,
        };
        let c = &mut self.cores[core];
        c.top.remove_item(&(v, ent));
        c.queued -= 1;
        c.resched = false;
        let tid = match ent {
            Ent::Task(t) => t,
            Ent::Group(g) => {
                let grq = &mut c.groups[g as usize];
                let (tv, t) = inner.expect("a runnable group has a queued task");
                grq.tree.remove_item(&(tv, t));
                t
            }
        };
        self.account_wait(tid, now);
        let slice_end = match self.kind {
            SchedKind::Cfs => self.cfs_slice_end(now, self.slice_of(core, tid)),
            SchedKind::VtCfs => SimTime::MAX,
            SchedKind::Eevdf => self.eevdf_slice_end(core, tid, now),
        };
        let c = &mut self.cores[core];
        c.curr = Some(tid);
        c.slice_end = slice_end;
        let switched = c.last != Some(tid);
        if switched {
            c.last = Some(tid);
            self.context_switches += 1;
        }
        let t = &mut self.tasks[tid as usize];
        t.state = State::Running(core);
        t.since = now;
        t.switches += 1;
        // EEVDF re-picks the running task at each request's end; only a real switch costs.
        if switched || self.kind != SchedKind::Eevdf {
            t.remaining += self.switch_ns;
        }
        if let Some((kind, since)) = t.episode.take() {
            if let Some(l) = &mut self.latencies {
                l.push((tid, kind, now.since(since)));
            }
        }
        if self.kind == SchedKind::VtCfs {
            self.arm_tick(core, now);
        }
        self.touch(core);
    }

    /// When a CFS slice of `slice` ns started at `now` ends: exactly, or at the first tick at or
    /// after that instant with [`CpuParams::slice_on_tick`] (ticks on one global grid).
    fn cfs_slice_end(&self, now: SimTime, slice: u64) -> SimTime {
        let end = now.after(slice);
        if self.params.slice_on_tick {
            SimTime::from_ns(end.ns().div_ceil(self.tick) * self.tick)
        } else {
            end
        }
    }

    /// CFS's sched_slice for a task that is (about to be) running on `core`.
    fn slice_of(&self, core: usize, tid: Tid) -> u64 {
        let c = &self.cores[core];
        let t = &self.tasks[tid as usize];
        let nr_total: u64 = u64::from(c.top_nr.max(1))
            + if t.group == ROOT_GROUP { 0 } else { u64::from(c.groups[t.group as usize].nr.saturating_sub(1)) };
        let period = self.latency.max(nr_total * self.min_gran);
        let mut share = u64::from(t.weight) as f64;
        if t.group == ROOT_GROUP {
            share /= c.top_load.max(1) as f64;
        } else {
            let grq = &c.groups[t.group as usize];
            share = share / grq.load.max(1) as f64 * f64::from(self.group_weights[t.group as usize]) / c.top_load.max(1) as f64;
        }
        ((period as f64 * share) as u64).max(self.min_gran)
    }

    /// Wake-up preemption test between the woken `tid` and core `core`'s current task.
    fn should_preempt(&self, core: usize, tid: Tid) -> bool {
        let Some(curr) = self.cores[core].curr else { return true };
        let c = &self.cores[core];
        let (a, b) = (&self.tasks[tid as usize], &self.tasks[curr as usize]);
        let (va, vb, w) = if a.group == b.group && a.group != ROOT_GROUP {
            (a.vruntime, b.vruntime, a.weight)
        } else {
            let top = |t: &TaskEnt| {
                if t.group == ROOT_GROUP {
                    (t.vruntime, t.weight)
                } else {
                    (c.groups[t.group as usize].vruntime, self.group_weights[t.group as usize])
                }
            };
            let ((va, wa), (vb, _)) = (top(a), top(b));
            // cpu.idle: idle and non-idle entities at the top level (see `set_group_idle`).
            let idle = |t: &TaskEnt| t.group != ROOT_GROUP && self.group_is_idle(t.group);
            match (idle(a), idle(b)) {
                (false, true) => return true,
                (true, false) => return false,
                _ => {}
            }
            (va, vb, wa)
        };
        let gran = self.wakeup_gran * NICE_0_WEIGHT / u64::from(w.max(1));
        vb > va && vb - va > gran
    }

    /// An idle core pulls a queued task from the core with the most queued tasks.
    fn newidle_balance(&mut self, core: usize, now: SimTime) {
        let queued = |c: usize| self.cores[c].queued;
        let busiest = (0..self.cores.len()).filter(|&c| c != core).max_by_key(|&c| (queued(c), std::cmp::Reverse(c)));
        let src_queued = busiest.map_or(0, queued);
        let Some(src) = busiest else { return };
        if src_queued == 0 {
            return;
        }
        // The highest-vruntime queued task allowed here (it would wait longest where it is).
        let victim = (0..self.tasks.len() as Tid)
            .filter(|&t| self.tasks[t as usize].state == State::Queued(src) && self.allowed(t, core))
            .max_by_key(|&t| (self.tasks[t as usize].vruntime, std::cmp::Reverse(t)));
        let Some(tid) = victim else { return };
        self.account_wait(tid, now);
        if self.kind == SchedKind::Eevdf {
            self.eevdf_dequeue(src, tid);
        }
        self.remove_queued(src, tid);
        // Keep the vruntime relative to the new core's clock (EEVDF places it by its lag, taken
        // against the level it left).
        if self.kind != SchedKind::Eevdf {
            let rel = self.tasks[tid as usize].vruntime.saturating_sub(self.cores[src].min_vruntime);
            self.tasks[tid as usize].vruntime = self.cores[core].min_vruntime + rel;
        }
        self.tasks[tid as usize].last_core = core;
        self.migrations += 1;
        self.enqueue(core, tid, now, false);
        self.pick_next(core, now);
    }

    fn queued_tasks(&self, core: usize) -> usize {
        self.cores[core].queued as usize
    }

    /// Whether every core's queued count is the number of tasks queued there (test support).
    #[cfg(test)]
    fn queued_counts_agree(&self) -> bool {
        (0..self.cores.len())
            .all(|c| self.cores[c].queued as usize == self.tasks.iter().filter(|t| t.state == State::Queued(c)).count())
    }
}

#[cfg(test)]
mod tests;
