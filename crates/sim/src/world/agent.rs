//! The agent (`forefront agent`) as a simulator policy: the daemon's decisions, taken by the
//! daemon's code in `forefront_policy::agent`, carried out through the simulator's models.
//!
//! **What it sees.** Each app of the scenario is one process to the agent's classifier
//! ([`forefront_policy::classify::classify`], the function the daemon calls at every scan):
//! pid [`SIM_PID_BASE`] + the app's index, parent pid 1, the app's uid, `comm` its spec's name
//! cut to 15 bytes as the kernel cuts it, and cgroup `/<spec name>`. The rules are the
//! configuration's ([`forefront_policy::agent::rules`]), with every background app added at
//! run time as `forefront bench` adds its workers (`scope` requests: each a tree). System
//! services are processes no scope names (unless the configuration's does); kernel threads are
//! never classified, as the daemon skips them. The foreground is pushed as a launcher pushes it: the app the framework made
//! foreground (the `foreground` op; before one, the scenario's foreground app), by pid.
//!
//! **What it sets** ([`forefront_policy::agent::knobs`] per class), through [`AgentKnobs`]:
//!
//! | knob | the daemon | here |
//! |---|---|---|
//! | group | `fg`/`bg` groups in each hierarchy | the CPU and blkio groups `FG_GROUP`/`BG_GROUP` (interactive and unmanaged tasks keep stock Android's placement) |
//! | I/O weight | `blkio.bfq.weight` / `io.bfq.weight` of the groups | the blkio weights of the block layer's groups, honoured by the scenario's scheduler where it has groups (CFQ and BFQ, whose models both take the blkio groups' weights) |
//! | idle I/O class | `ioprio_set(IOPRIO_CLASS_IDLE)` per thread | `ioprio_class = 3` on the requests the task submits (CFQ honours it; noop/deadline ignore it, as their kernel versions do) |
//! | CPU weight, `cpu.idle` | `cpu.shares`/`cpu.weight`, `cpu.idle` | the CPU groups' weights; `cpu.idle` as the weight the kernel gives an idle group (3, `WEIGHT_IDLEPRIO`) |
//! | pause | freezer of the `bg` group, bounded by [`PauseGate`] | a frozen task stops at its next op (its current op runs to its end) and is woken at the thaw |
//! | write-back hold | `/proc/sys/vm` thresholds raised (`forefront_agent::writeback`) | the flusher's background threshold raised to the throttling limit and its periodic wake-ups skipped |
//!
//! **When it pauses.** At the start of every foreground headline phase (`fg PID --burst`, as
//! `forefront bench` sends it before each launch); the pause ends at the phase's end
//! (`--burst-end`), after `idle_end_ms` without foreground block I/O (read bytes submitted to
//! the block layer plus bytes written by its syscalls: `/proc/PID/io`'s `read_bytes` and
//! `write_bytes`, looked at every 20 ms as the daemon looks), or at `max_ms` — whichever comes
//! first; the gate refuses a pause within `min_gap_ms` of the last one, and a pause with
//! nothing in the background.
//!
//! # Simplifications versus the daemon and the kernel
//!
//! - Classification is instant at every foreground change (the daemon places a burst's app at
//!   the thaw and new processes at its next scan, `rescan_ms`); apps are single processes.
//! - The freezer stops a task at an op boundary, not at the kernel's next freezable point (a
//!   task inside a long write or read finishes that op first). Its frozen time is charged to
//!   `sleep`.
//! - `cpu.idle` is only its weight: the kernel also lets a non-idle task preempt an idle
//!   group's at wake-up (`check_preempt_wakeup_fair`); the CPU model has no such rule yet.
//! - Where the scenario's I/O scheduler has no groups or classes (noop, deadline) the weights and
//!   the idle class change nothing, as on a kernel without BFQ; the BFQ and mq-deadline models
//!   (issue 29, another branch) honour them through the same request fields.
//! - `memory`, `focus`, `dbus`, `rules` (exec-triggered foregrounds) and `cells` are not
//!   simulated: the foreground is the scenario's; `io.fg_latency_us` (v2 `io.latency`) is not.
//!
//! Invariants: a pause never lasts longer than `max_ms` and two pauses are at least
//! `min_gap_ms` apart (the gate's); every task frozen by a pause is woken by its end; only
//! tasks of background class are frozen; nothing here runs for policies other than `agent`.

use forefront_engine::SimTime;
use forefront_model::cpu::GroupId;
use forefront_model::prov::Tid;
use forefront_model::wait::Blocker;
use forefront_policy::Hook;
use forefront_workload::Role;

use super::{Ev, Kind, World, BG_GROUP, FG_GROUP};
use crate::Cat;
use forefront_policy::agent::config::{Config, ScopeSection};
use forefront_policy::agent::pause::{PauseGate, Refusal};
use forefront_policy::agent::{self as decide, TaskKnobs};
use forefront_policy::classify::{self, Class, Foreground, Process};

/// The pid an app has in the agent's process list: this plus the app's index.
pub const SIM_PID_BASE: i32 = 1000;
/// How often the daemon looks at the foreground's I/O during a pause (`Agent::next_wake`).
pub const IDLE_POLL_MS: u64 = 20;
/// The weight the kernel gives a group in the idle CPU class: `sched_group_set_idle`
/// (kernel/sched/fair.c, Linux ≥ 5.15, "idle groups have minimum weight") sets its shares to
/// `WEIGHT_IDLEPRIO` (3).
pub const IDLE_GROUP_SHARES: u32 = 3;
/// `IOPRIO_CLASS_IDLE` (include/uapi/linux/ioprio.h), as requests carry it.
pub const IOPRIO_CLASS_IDLE: u8 = 3;

/// The knobs the agent acts through, one call per decision (the world implements it over its
/// models). The per-task ones are applied where the task's work meets the model: its CPU and
/// blkio group in `group_for` ([`World::agent_group`]), its I/O class on each request it
/// submits ([`World::agent_ioprio_class`]).
pub(super) trait AgentKnobs {
    /// The CPU weight of a group (`cpu.shares` units).
    fn set_cpu_weight(&mut self, group: GroupId, shares: u32);
    /// Stop (`true`) or resume task `tid` (the freezer).
    fn set_frozen(&mut self, tid: Tid, frozen: bool);
    /// Hold (`true`) or release buffered write-back.
    fn agent_hold_writeback(&mut self, held: bool);
}

/// One app as the agent's classifier sees it.
#[derive(Clone, Debug)]
pub struct AgentApp {
    pub uid: u32,
    pub spec: String,
    /// A background app (added to the scope at run time, as `bench` adds its workers).
    pub background: bool,
    /// The kernel's threads (flusher, jbd2, kswapd): never classified, as the daemon skips
    /// kernel threads.
    pub kernel: bool,
}

/// The agent's state in a run: its configuration, gate, the class of every app, the pause.
pub(super) struct Agent {
    cfg: Config,
    /// The scenario's headline phase: a burst of the foreground.
    headline: String,
    gate: PauseGate,
    procs: Vec<Process>,
    runtime: ScopeSection,
    exclude: std::collections::BTreeSet<i32>,
    /// Class per app (index), from the last classification.
    classes: Vec<Option<Class>>,
    /// Tasks the pause in progress stopped (frozen at their next op), in stop order.
    frozen: Vec<Tid>,
    /// During a pause with `idle_end_ms`: (foreground I/O bytes when last changed, since).
    fg_io: Option<(u64, SimTime)>,
    /// Block read bytes submitted plus syscall bytes written, per app (`/proc/PID/io`).
    io_bytes: Vec<u64>,
    /// Generation of the idle-end poll (a stale tick is ignored).
    pub(super) tick_gen: u64,
    pub(super) wb_held: bool,
    /// Counted decisions, for the run's `hooks`.
    pub(super) pauses: u64,
    pub(super) refused: u64,
    pub(super) idle_ends: u64,
    pub(super) deadline_ends: u64,
    pub(super) froze: u64,
}

impl Agent {
    pub fn new(cfg: Config, apps: &[AgentApp], headline: &str) -> Agent {
        let procs = processes(apps);
        let runtime = ScopeSection {
            trees: apps.iter().enumerate().filter(|(_, a)| a.background).map(|(i, _)| pid_of(i)).collect(),
            ..ScopeSection::default()
        };
        Agent {
            gate: PauseGate::new(cfg.pause.enabled, cfg.pause.max_ms, cfg.pause.min_gap_ms),
            cfg,
            headline: headline.to_string(),
            procs,
            runtime,
            exclude: apps.iter().enumerate().filter(|(_, a)| a.kernel).map(|(i, _)| pid_of(i)).collect(),
            classes: vec![None; apps.len()],
            frozen: Vec::new(),
            fg_io: None,
            io_bytes: vec![0; apps.len()],
            tick_gen: 0,
            wb_held: false,
            pauses: 0,
            refused: 0,
            idle_ends: 0,
            deadline_ends: 0,
            froze: 0,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Classify every app with the foreground apps `fg` (indices); returns whether a class
    /// changed.
    pub fn classify(&mut self, fg: &[usize]) -> bool {
        let fg = Foreground::Pids(fg.iter().map(|&i| pid_of(i)).collect());
        let rules = decide::rules(&self.cfg, &self.runtime, self.exclude.clone());
        let classes = classify::classify(&self.procs, &fg, &rules);
        let new: Vec<Option<Class>> = (0..self.classes.len()).map(|i| classes.get(&pid_of(i)).copied()).collect();
        let changed = new != self.classes;
        self.classes = new;
        changed
    }

    pub fn class(&self, app: usize) -> Option<Class> {
        self.classes[app]
    }

    pub fn knobs(&self, app: usize) -> TaskKnobs {
        decide::knobs(&self.cfg, self.classes[app])
    }

    pub fn knobs_of(&self, class: Class) -> TaskKnobs {
        decide::knobs(&self.cfg, Some(class))
    }

    pub fn paused(&self) -> bool {
        self.gate.deadline().is_some()
    }

    /// Whether a task of app `app` stops at its next op now.
    pub fn stops(&self, app: usize) -> bool {
        self.paused() && self.knobs(app).pausable
    }

    pub fn note_frozen(&mut self, tid: Tid) {
        self.froze += 1;
        self.frozen.push(tid);
    }

    pub fn count_io(&mut self, app: usize, bytes: u64) {
        self.io_bytes[app] += bytes;
    }

    fn fg_bytes(&self) -> u64 {
        (0..self.classes.len()).filter(|&i| self.classes[i] == Some(Class::Foreground)).map(|i| self.io_bytes[i]).sum()
    }

    /// A foreground burst begins at `now` (`fg PID --burst`): the pause's deadline, if the gate
    /// grants one (`None`: refused, already paused, or nothing in the background).
    pub fn burst(&mut self, now: SimTime) -> Option<SimTime> {
        if self.paused() {
            return None;
        }
        if !self.classes.contains(&Some(Class::Background)) {
            return None;
        }
        match self.gate.begin(now.ns() / 1_000_000) {
            Ok(until) => {
                self.pauses += 1;
                if self.cfg.pause.idle_end_ms > 0 {
                    self.fg_io = Some((self.fg_bytes(), now));
                }
                Some(SimTime::from_ms(until))
            }
            Err(Refusal::TooSoon { .. }) => {
                self.refused += 1;
                None
            }
            Err(Refusal::Disabled) => None,
        }
    }

    /// The daemon's tick during a pause: whether it ends now (idle foreground I/O, or the
    /// deadline).
    pub fn tick(&mut self, now: SimTime) -> bool {
        if let Some((last, since)) = self.fg_io {
            let bytes = self.fg_bytes();
            if bytes != last {
                self.fg_io = Some((bytes, now));
            } else if now.since(since) / 1_000_000 >= self.cfg.pause.idle_end_ms {
                self.idle_ends += 1;
                return true;
            }
        }
        if self.gate.expired(now.ns() / 1_000_000) {
            self.deadline_ends += 1;
            return true;
        }
        false
    }

    /// End the pause in progress (`--burst-end`, idle, deadline): the tasks to wake.
    pub fn end(&mut self, now: SimTime) -> Vec<Tid> {
        self.fg_io = None;
        self.tick_gen += 1;
        if !self.gate.end(now.ns() / 1_000_000) {
            return Vec::new();
        }
        std::mem::take(&mut self.frozen)
    }

    /// The next time the daemon looks (a pause in progress): the earlier of its I/O poll and
    /// its deadline.
    pub fn next_look(&self, now: SimTime) -> Option<SimTime> {
        let until = SimTime::from_ms(self.gate.deadline()?);
        let poll = if self.fg_io.is_some() { now.after(IDLE_POLL_MS * 1_000_000) } else { until };
        Some(poll.min(until).max(now))
    }
}

/// What the agent sees and decides when a run starts: its process list, the scope the run
/// adds (the background apps' trees), the foreground it is told, and the class of each process
/// (absent: unmanaged). For comparing with the daemon, which gets the same tree.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentView {
    pub processes: Vec<Process>,
    pub runtime_trees: Vec<i32>,
    pub foreground: Vec<i32>,
    pub classes: std::collections::BTreeMap<i32, Class>,
}

impl World {
    /// The agent's view at the start of the run (`None`: the policy is not `agent`).
    pub fn agent_view(&self) -> Option<AgentView> {
        let a = self.agent.as_ref()?;
        let live: Vec<&Process> = a.procs.iter().filter(|p| !a.exclude.contains(&p.pid)).collect();
        Some(AgentView {
            processes: live.iter().map(|p| (*p).clone()).collect(),
            runtime_trees: a.runtime.trees.clone(),
            foreground: self.agent_fg().into_iter().map(pid_of).collect(),
            classes: (0..a.classes.len()).filter_map(|i| a.classes[i].map(|c| (pid_of(i), c))).collect(),
        })
    }

    /// The agent starts with the run: its process list and its first classification (the
    /// scenario's foreground app, as a launcher pushes it before the first launch).
    pub(super) fn agent_start(&mut self, cfg: Config, headline: &str) {
        let apps: Vec<AgentApp> = self
            .apps
            .iter()
            .enumerate()
            .map(|(i, a)| AgentApp { uid: a.uid, spec: a.spec.clone(), background: a.role == Role::Bg, kernel: i == 0 })
            .collect();
        let mut agent = Agent::new(cfg, &apps, headline);
        agent.classify(&self.agent_fg());
        self.agent = Some(agent);
    }

    /// The foreground apps as pushed to the agent: those of the framework's foreground UID, or
    /// before a `foreground` op the scenario's foreground app.
    fn agent_fg(&self) -> Vec<usize> {
        let fg: Vec<usize> = (0..self.apps.len()).filter(|&i| Some(self.apps[i].uid) == self.fg_uid).collect();
        if fg.is_empty() {
            (0..self.apps.len()).filter(|&i| self.apps[i].headline).collect()
        } else {
            fg
        }
    }

    /// The framework changed the foreground: the agent classifies again (the caller regroups).
    pub(super) fn agent_foreground(&mut self) {
        let fg = self.agent_fg();
        if let Some(a) = &mut self.agent {
            a.classify(&fg);
        }
    }

    /// The CPU and blkio group of a user task the agent manages (`None`: stock placement).
    pub(super) fn agent_group(&self, tid: Tid) -> Option<GroupId> {
        let a = self.agent.as_ref()?;
        let t = &self.tasks[tid as usize];
        match (t.kind, a.class(t.app)) {
            (Kind::User, Some(Class::Foreground)) => Some(FG_GROUP),
            (Kind::User, Some(Class::Background)) => Some(BG_GROUP),
            _ => None,
        }
    }

    /// The I/O priority class of a request task `tid` submits: idle for the agent's background
    /// tasks when `io.bg_ioprio_idle` (`None`: the request's own).
    pub(super) fn agent_ioprio_class(&mut self, tid: Tid, bytes: u64, read: bool) -> Option<u8> {
        let a = self.agent.as_mut()?;
        let t = &self.tasks[tid as usize];
        if t.kind != Kind::User {
            return None;
        }
        if read {
            a.count_io(t.app, bytes);
        }
        if a.knobs(t.app).ioprio_idle {
            self.prio.hook(Hook::AgentIoprioIdle);
            return Some(IOPRIO_CLASS_IDLE);
        }
        None
    }

    /// Bytes written by a syscall of task `tid` (the agent's view of `write_bytes`).
    pub(super) fn agent_written(&mut self, tid: Tid, bytes: u64) {
        if let Some(a) = &mut self.agent {
            a.count_io(self.tasks[tid as usize].app, bytes);
        }
    }

    /// A phase begins (`begin`) or ends in task `tid`: a headline phase of a foreground task is
    /// a burst (`fg PID --burst` before it, `--burst-end` after it).
    pub(super) fn agent_phase(&mut self, tid: Tid, name: &str, begin: bool) {
        let now = self.now();
        let app = self.tasks[tid as usize].app;
        let Some(a) = &mut self.agent else { return };
        if name != a.headline || a.class(app) != Some(Class::Foreground) {
            return;
        }
        if !begin {
            self.agent_thaw();
            return;
        }
        let refused = a.refused;
        match a.burst(now) {
            Some(_) => {
                self.prio.hook(Hook::AgentPause);
                if a.config().pause.hold_writeback {
                    self.prio.hook(Hook::AgentWritebackHeld);
                    self.agent_hold_writeback(true);
                }
                let cpu = (self.phone.fg_cpu_shares, self.phone.bg_cpu_shares);
                let a = self.agent.as_ref().expect("agent");
                if a.knobs_of(Class::Background).cpu_pause_only {
                    let (_, bg) = cpu_weights(a.config(), cpu, true);
                    self.set_cpu_weight(BG_GROUP, bg);
                }
                self.agent_arm(now);
            }
            None if a.refused > refused => self.prio.hook(Hook::AgentPauseRefused),
            None => {}
        }
    }

    /// Schedule the agent's next look at its pause.
    fn agent_arm(&mut self, now: SimTime) {
        let Some(a) = &self.agent else { return };
        if let Some(t) = a.next_look(now) {
            self.q.schedule(t, Ev::AgentTick(a.tick_gen));
        }
    }

    pub(super) fn agent_tick(&mut self, gen: u64) {
        let now = self.now();
        let Some(a) = &mut self.agent else { return };
        if gen != a.tick_gen || !a.paused() {
            return;
        }
        let (idle, deadline) = (a.idle_ends, a.deadline_ends);
        if a.tick(now) {
            if a.idle_ends > idle {
                self.prio.hook(Hook::AgentPauseIdleEnd);
            }
            if a.deadline_ends > deadline {
                self.prio.hook(Hook::AgentPauseDeadline);
            }
            self.agent_thaw();
        } else {
            self.agent_arm(now);
        }
    }

    /// End the pause in progress: wake what it stopped, release write-back, the between-pauses
    /// CPU weight.
    fn agent_thaw(&mut self) {
        let now = self.now();
        let Some(a) = &mut self.agent else { return };
        let was = a.paused();
        let woken = a.end(now);
        if !was {
            return;
        }
        let pause_only = a.knobs_of(Class::Background).cpu_pause_only;
        let (_, bg) = cpu_weights(a.config(), (self.phone.fg_cpu_shares, self.phone.bg_cpu_shares), false);
        if pause_only {
            self.set_cpu_weight(BG_GROUP, bg);
        }
        if self.agent.as_ref().is_some_and(|a| a.wb_held) {
            self.agent_hold_writeback(false);
        }
        for tid in woken {
            self.set_frozen(tid, false);
        }
    }

    /// The flusher's background threshold (pages) and expiry (ns): while write-back is held,
    /// the throttling limit less one page and the expiry plus the pause's length, as the
    /// daemon sets `dirty_background_bytes` and `dirty_expire_centisecs`
    /// (`forefront_agent::writeback::plan`).
    pub(super) fn agent_writeback(&self, background_pages: u64, expire_ns: u64) -> (u64, u64) {
        match &self.agent {
            Some(a) if a.wb_held => (
                background_pages.max(self.wb.thresholds.limit_pages.saturating_sub(1)),
                expire_ns.saturating_add(a.config().pause.max_ms * 1_000_000),
            ),
            _ => (background_pages, expire_ns),
        }
    }

    /// At the fetch of its next op: whether user task `tid` stops there (frozen by a pause).
    pub(super) fn agent_stops(&mut self, tid: Tid) -> bool {
        let t = &self.tasks[tid as usize];
        if t.kind != Kind::User || !self.agent.as_ref().is_some_and(|a| a.stops(t.app)) {
            return false;
        }
        self.set_frozen(tid, true);
        true
    }
}

impl AgentKnobs for World {
    fn set_cpu_weight(&mut self, group: GroupId, shares: u32) {
        let now = self.now();
        self.cpu.set_group_weight(group, shares, now);
    }

    fn set_frozen(&mut self, tid: Tid, frozen: bool) {
        if frozen {
            // Stopped at an op boundary: it waits on nothing but the thaw, which wakes it.
            self.block_on(tid, Blocker::Timer, Cat::Sleep);
            self.prio.hook(Hook::AgentFrozen);
            if let Some(a) = &mut self.agent {
                a.note_frozen(tid);
            }
        } else if self.wg.is_blocked_on(tid, Blocker::Timer) {
            self.wake(tid);
        }
    }

    fn agent_hold_writeback(&mut self, held: bool) {
        if let Some(a) = &mut self.agent {
            a.wb_held = held;
        }
        if !held {
            // Released: the flusher sees the thresholds in force again.
            self.wake_flusher();
        }
    }
}

/// The blkio weights of the root, foreground and background groups under `cfg`, the
/// scenario's (`[phone] blkio_*_weight`) where the agent sets none.
pub fn blkio_weights(cfg: &Config, stock: [u32; 3]) -> [u32; 3] {
    let fg = decide::knobs(cfg, Some(Class::Foreground)).io_weight.unwrap_or(stock[1]);
    let bg = decide::knobs(cfg, Some(Class::Background)).io_weight.unwrap_or(stock[2]);
    [stock[0], fg, bg]
}

/// The CPU weights of the foreground and background groups under `cfg`, outside a pause or
/// during one (`paused`); the scenario's (`stock`) where the agent sets none.
pub fn cpu_weights(cfg: &Config, stock: (u32, u32), paused: bool) -> (u32, u32) {
    let fg = decide::knobs(cfg, Some(Class::Foreground)).cpu_shares.unwrap_or(stock.0);
    let k = decide::knobs(cfg, Some(Class::Background));
    let bg = match k.cpu_shares {
        Some(_) if k.cpu_pause_only && !paused => stock.1,
        Some(_) if k.cpu_idle => IDLE_GROUP_SHARES,
        Some(s) => s,
        None => stock.1,
    };
    (fg, bg)
}

/// The agent's pid of app `i`.
pub fn pid_of(i: usize) -> i32 {
    SIM_PID_BASE + i as i32
}

/// The process list the agent's classifier sees for these apps (system services included:
/// they are processes too, which no scope names unless the configuration's does).
pub fn processes(apps: &[AgentApp]) -> Vec<Process> {
    apps.iter()
        .enumerate()
        .map(|(i, a)| Process { pid: pid_of(i), ppid: 1, uid: a.uid, comm: comm_of(&a.spec), cgroup: format!("/{}", a.spec) })
        .collect()
}

/// A program name as the kernel keeps it (`comm`: 15 bytes, cut at a character boundary).
pub fn comm_of(name: &str) -> String {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apps() -> Vec<AgentApp> {
        let a = |spec: &str, uid, background, kernel| AgentApp { uid, spec: spec.into(), background, kernel };
        vec![
            a("kernel", 0, false, true),
            a("gallery", 10_000, false, false),
            a("updater", 10_001, true, false),
            a("launcher", 10_002, false, false),
        ]
    }

    #[test]
    fn background_apps_are_background_and_the_foreground_follows_the_push() {
        let mut a = Agent::new(Config::default(), &apps(), "launch");
        assert!(a.classify(&[1]));
        assert_eq!(
            (a.class(0), a.class(1), a.class(2), a.class(3)),
            (None, Some(Class::Foreground), Some(Class::Background), None)
        );
        assert!(!a.classify(&[1]), "nothing changed");
        // Interactive helpers by comm.
        let mut cfg = Config::default();
        cfg.scope.interactive = vec!["updater".into()];
        let mut a = Agent::new(cfg, &apps(), "launch");
        a.classify(&[1]);
        assert_eq!(a.class(2), Some(Class::Interactive));
        assert!(!a.knobs(2).pausable);
    }

    #[test]
    fn a_pause_ends_at_idle_io_or_its_deadline_and_keeps_its_gap() {
        let mut cfg = Config::default();
        cfg.pause.max_ms = 500;
        cfg.pause.min_gap_ms = 1000;
        cfg.pause.idle_end_ms = 100;
        let mut a = Agent::new(cfg, &apps(), "launch");
        a.classify(&[1]);
        let t = SimTime::from_ms;
        assert_eq!(a.burst(t(0)), Some(t(500)));
        assert!(a.stops(2) && !a.stops(1));
        a.count_io(1, 4096);
        assert!(!a.tick(t(60)), "the foreground did I/O");
        assert!(!a.tick(t(120)));
        assert!(a.tick(t(160)), "idle for 100 ms since 60");
        a.note_frozen(7);
        assert_eq!(a.end(t(160)), vec![7]);
        assert_eq!(a.burst(t(900)), None, "within min_gap_ms");
        assert_eq!(a.refused, 1);
        assert_eq!(a.burst(t(1200)), Some(t(1700)));
        a.count_io(1, 4096);
        assert!(!a.tick(t(1650)), "the foreground did I/O");
        assert!(a.tick(t(1700)), "the deadline, 50 ms after the last I/O");
        assert_eq!((a.idle_ends, a.deadline_ends), (1, 1));
    }

    #[test]
    fn no_pause_without_background_and_cpu_idle_is_the_minimum_weight() {
        let mut cfg = Config::default();
        cfg.scope.interactive = vec!["updater".into()];
        cfg.cpu.enabled = true;
        let mut a = Agent::new(cfg, &apps(), "launch");
        a.classify(&[1]);
        assert_eq!(a.burst(SimTime::from_ms(0)), None);
        assert_eq!(cpu_weights(a.config(), (1024, 110), false), (1024, IDLE_GROUP_SHARES));
        assert_eq!(comm_of("a-very-long-app-name"), "a-very-long-app");
    }
}
