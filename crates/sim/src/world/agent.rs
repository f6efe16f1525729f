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
//! **What it sets** ([`forefront_policy::agent::knobs`] per class), through the kernel's knobs
//! ([`KernelKnobs`], the one interface a `[[knob]]` of a scenario also uses — there is no
//! freezer or write-back hold of the agent's own):
//!
//! | knob | the daemon | here |
//! |---|---|---|
//! | group | `fg`/`bg` groups in each hierarchy | the CPU and blkio groups `FG_GROUP`/`BG_GROUP` (interactive and unmanaged tasks keep stock Android's placement) |
//! | I/O weight | `blkio.bfq.weight` / `io.bfq.weight` of the groups | the blkio weights of the block layer's groups (CFQ and BFQ take them), and the task's `io_weight` on each request it submits (BFQ's group weight) |
//! | idle I/O class | `ioprio_set(IOPRIO_CLASS_IDLE)` per thread | the task's ioprio (`IDLE`, level 4) on each request it submits (BFQ, mq-deadline and CFQ honour it; noop/deadline ignore it, as their kernel versions do) |
//! | CPU weight, `cpu.idle` | `cpu.shares`/`cpu.weight`, `cpu.idle` | the CPU groups' weights and the CPU model's `cpu.idle` (the idle weight, 3, and the wake-up preemption rule) |
//! | pause | freezer of the `bg` group, bounded by [`PauseGate`] | the task's `frozen` knob: it stops before its next system call (its next op, or the next `read()`/`write()` call of a chunked op) and goes on at the thaw |
//! | write-back hold | `/proc/sys/vm` thresholds raised (`forefront_agent::writeback`) | the kernel knobs' hold: the flusher's background threshold raised to the throttling limit, its periodic wake-ups skipped, the expiry extended by `max_ms` |
//!
//! **When it pauses.** At the start of every foreground headline phase (`fg PID --burst`, as
//! `forefront bench` sends it before each launch); the pause ends at the phase's end
//! (`--burst-end`), after `idle_end_ms` without foreground block I/O (read bytes submitted to
//! the block layer plus bytes written by its syscalls: `/proc/PID/io`'s `read_bytes` and
//! `write_bytes`, looked at every 20 ms as the daemon looks) in which no foreground task was
//! seen waiting for I/O at a look (blocked where the kernel shows `D`: its own requests, a page
//! under I/O, the journal, dirty throttling, reclaim — the daemon reads the threads' states),
//! or at `max_ms` — whichever comes
//! first; the gate refuses a pause within `min_gap_ms` of the last one, and a pause with
//! nothing in the background.
//!
//! # Simplifications versus the daemon and the kernel
//!
//! - Classification is instant at every foreground change (the daemon places a burst's app at
//!   the thaw and new processes at its next scan, `rescan_ms`); apps are single processes.
//! - The freezer's simplifications are the kernel knobs' (`super::knobs`): a call in progress
//!   finishes first; frozen time is charged to `sleep`.
//! - Where the scenario's I/O scheduler has no groups or classes (noop, deadline) the weights and
//!   the idle class change nothing, as on a kernel without BFQ.
//! - `memory`, `focus`, `dbus`, `rules` (exec-triggered foregrounds) and `cells` are not
//!   simulated: the foreground is the scenario's; `io.fg_latency_us` (v2 `io.latency`) is not.
//!
//! Invariants: a pause never lasts longer than `max_ms` and two pauses are at least
//! `min_gap_ms` apart (the gate's); every task frozen by a pause is thawed by its end; only
//! tasks of a pausable (background) class are frozen; the agent changes only the knob fields
//! it set itself (a scenario's `[[knob]]` keeps the others); nothing here runs for policies
//! other than `agent`.

use forefront_engine::SimTime;
use forefront_model::block::Request;
use forefront_model::cpu::GroupId;
use forefront_model::kernel::Cat;
use forefront_model::prov::Tid;
use forefront_policy::Hook;
use forefront_workload::Role;

use super::knobs::{KernelKnobs, TaskKnobs as Set};
use super::tasks::TState;
use super::{Ev, Kind, World, BG_GROUP, FG_GROUP};
use forefront_policy::agent::config::{Config, ScopeSection};
use forefront_policy::agent::pause::{PauseGate, Refusal};
use forefront_policy::agent::{self as decide, TaskKnobs};
use forefront_policy::classify::{self, Class, Foreground, Process};

/// The pid an app has in the agent's process list: this plus the app's index.
pub const SIM_PID_BASE: i32 = 1000;
/// How often the daemon looks at the foreground's I/O during a pause (`Agent::next_wake`).
pub const IDLE_POLL_MS: u64 = 20;
/// `IOPRIO_CLASS_IDLE` (include/uapi/linux/ioprio.h), as requests carry it.
pub const IOPRIO_CLASS_IDLE: u8 = 3;
/// The level `ionice -c3` leaves (the kernel's default, `IOPRIO_NORM`); the idle class has no
/// levels.
const IOPRIO_NORM: u8 = 4;

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
    /// Per task, the knobs the agent last set (what it changes when its decisions change).
    applied: Vec<Set>,
    /// During a pause with `idle_end_ms`: (foreground I/O bytes when last changed, since).
    fg_io: Option<(u64, SimTime)>,
    /// Block read bytes submitted plus syscall bytes written, per app (`/proc/PID/io`).
    io_bytes: Vec<u64>,
    /// Generation of the idle-end poll (a stale tick is ignored).
    pub(super) tick_gen: u64,
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
            applied: Vec::new(),
            fg_io: None,
            io_bytes: vec![0; apps.len()],
            tick_gen: 0,
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

    /// The kernel knobs the agent wants on a task of app `app` now: its class's I/O class and
    /// weight, frozen while a pause holds a pausable class.
    pub fn wanted(&self, app: usize) -> Set {
        let k = self.knobs(app);
        Set {
            ioprio: k.ioprio_idle.then_some((IOPRIO_CLASS_IDLE, IOPRIO_NORM)),
            io_weight: k.io_weight.map(|w| w.clamp(1, 1000) as u16),
            frozen: self.paused() && k.pausable,
        }
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

    /// Whether app `app` is in the foreground class now.
    pub fn is_fg(&self, app: usize) -> bool {
        self.classes.get(app).copied().flatten() == Some(Class::Foreground)
    }

    /// The daemon's tick during a pause: whether it ends now (idle foreground I/O, or the
    /// deadline). `fg_waits`: a foreground task waits for I/O now (the daemon's
    /// `procfs::waits_for_io`): the pause holds as if it had submitted some.
    pub fn tick(&mut self, now: SimTime, fg_waits: bool) -> bool {
        if let Some((last, since)) = self.fg_io {
            let bytes = self.fg_bytes();
            if bytes != last || fg_waits {
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

    /// End the pause in progress (`--burst-end`, idle, deadline): whether one was in progress.
    pub fn end(&mut self, now: SimTime) -> bool {
        self.fg_io = None;
        self.tick_gen += 1;
        self.gate.end(now.ns() / 1_000_000)
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
        let bg = agent.knobs_of(Class::Background);
        self.agent = Some(agent);
        if bg.cpu_idle && !bg.cpu_pause_only {
            self.set_group_cpu(BG_GROUP, None, Some(true));
        }
        self.agent_apply();
    }

    /// Carry the agent's decisions to the kernel knobs of every user task, changing only the
    /// fields whose decision changed since it last set them (a `[[knob]]` keeps the others).
    fn agent_apply(&mut self) {
        let Some(a) = &mut self.agent else { return };
        let mut applied = std::mem::take(&mut a.applied);
        applied.resize(self.tasks.len(), Set::default());
        let mut froze = 0;
        for tid in 0..self.tasks.len() as Tid {
            let t = &self.tasks[tid as usize];
            if t.kind != Kind::User {
                continue;
            }
            let want = self.agent.as_ref().expect("agent").wanted(t.app);
            let was = applied[tid as usize];
            if want == was {
                continue;
            }
            let mut k = self.task_knobs(tid);
            if want.ioprio != was.ioprio {
                k.ioprio = want.ioprio;
            }
            if want.io_weight != was.io_weight {
                k.io_weight = want.io_weight;
            }
            if want.frozen != was.frozen {
                k.frozen = want.frozen;
                if want.frozen {
                    froze += 1;
                    self.prio.hook(Hook::AgentFrozen);
                }
            }
            self.set_task_knobs(tid, k);
            applied[tid as usize] = want;
        }
        let a = self.agent.as_mut().expect("agent");
        a.applied = applied;
        a.froze += froze;
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
            if a.classify(&fg) {
                self.agent_apply();
            }
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

    /// A request a task submits (stamped with its knobs): its read bytes count to the agent's
    /// view of `/proc/PID/io`, and one in the idle class the agent set is counted.
    pub(super) fn agent_saw_request(&mut self, req: &Request) {
        let Some(a) = self.agent.as_mut() else { return };
        let t = &self.tasks[req.prov.tid as usize];
        if t.kind != Kind::User {
            return;
        }
        if req.op.is_read() {
            a.count_io(t.app, req.bytes());
        }
        if req.ioprio_class == IOPRIO_CLASS_IDLE && a.knobs(t.app).ioprio_idle {
            self.prio.hook(Hook::AgentIoprioIdle);
        }
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
                    // The daemon sets `dirty_expire_centisecs` to a day for the pause: nothing
                    // expires until it ends.
                    self.hold_writeback(true);
                }
                let a = self.agent.as_ref().expect("agent");
                let bg = a.knobs_of(Class::Background);
                if bg.cpu_pause_only {
                    let (_, shares) = cpu_weights(a.config(), (self.phone.fg_cpu_shares, self.phone.bg_cpu_shares), true);
                    self.set_group_cpu(BG_GROUP, Some(shares), Some(bg.cpu_idle));
                }
                self.agent_apply();
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
        // A foreground task blocked where the kernel puts it in `D` (its own requests, a page
        // under I/O, the journal, dirty throttling, reclaim) waits for I/O.
        let fg_waits = self.tasks.iter().any(|t| {
            t.state == TState::Blocked
                && a.is_fg(t.app)
                && t.wait.is_some_and(|w| {
                    matches!(
                        w.cat,
                        Cat::PageWait
                            | Cat::Journal
                            | Cat::BlockQueue
                            | Cat::DeviceQueue
                            | Cat::DeviceService
                            | Cat::Throttle
                            | Cat::Alloc
                    )
                })
        });
        if a.tick(now, fg_waits) {
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
        if !a.paused() || !a.end(now) {
            return;
        }
        let pause_only = a.knobs_of(Class::Background).cpu_pause_only;
        let held = a.config().pause.hold_writeback;
        let (_, bg) = cpu_weights(a.config(), (self.phone.fg_cpu_shares, self.phone.bg_cpu_shares), false);
        if pause_only {
            self.set_group_cpu(BG_GROUP, Some(bg), Some(false));
        }
        if held {
            self.hold_writeback(false);
        }
        self.agent_apply();
    }
}

/// The blkio weights of the root, foreground and background groups under `cfg`, the
/// scenario's (`[phone] blkio_*_weight`) where the agent sets none.
pub fn blkio_weights(cfg: &Config, stock: [u32; 3]) -> [u32; 3] {
    let fg = decide::knobs(cfg, Some(Class::Foreground)).io_weight.unwrap_or(stock[1]);
    let bg = decide::knobs(cfg, Some(Class::Background)).io_weight.unwrap_or(stock[2]);
    [stock[0], fg, bg]
}

/// The CPU weights (`cpu.shares` units) of the foreground and background groups under `cfg`,
/// outside a pause or during one (`paused`); the scenario's (`stock`) where the agent sets
/// none. `cpu.idle` is apart ([`KernelKnobs::set_group_cpu`]): this is the weight it keeps.
pub fn cpu_weights(cfg: &Config, stock: (u32, u32), paused: bool) -> (u32, u32) {
    let fg = decide::knobs(cfg, Some(Class::Foreground)).cpu_shares.unwrap_or(stock.0);
    let k = decide::knobs(cfg, Some(Class::Background));
    let bg = match k.cpu_shares {
        Some(_) if k.cpu_pause_only && !paused => stock.1,
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
        a.count_io(1, 4096);
        assert!(!a.tick(t(60), false), "the foreground did I/O");
        assert!(!a.tick(t(120), false));
        // A read stalled behind the background submits nothing new, yet the start-up is not
        // over: the pause holds while a foreground task waits for I/O.
        assert!(!a.tick(t(160), true), "waiting for I/O at 160");
        assert!(!a.tick(t(240), false), "idle for 80 ms since 160");
        assert!(a.tick(t(260), false), "idle for 100 ms since 160");
        assert!(a.wanted(2).frozen && !a.wanted(1).frozen, "the background is frozen, not the foreground");
        assert!(a.end(t(260)));
        assert!(!a.wanted(2).frozen, "thawed");
        assert_eq!(a.burst(t(1200)), None, "within min_gap_ms");
        assert_eq!(a.refused, 1);
        assert_eq!(a.burst(t(1300)), Some(t(1800)));
        a.count_io(1, 4096);
        assert!(!a.tick(t(1750), false), "the foreground did I/O");
        assert!(a.tick(t(1800), true), "the deadline, 50 ms after the last I/O, even while it waits");
        assert_eq!((a.idle_ends, a.deadline_ends), (1, 1));
    }

    #[test]
    fn no_pause_without_background_and_cpu_idle_keeps_the_weight() {
        let mut cfg = Config::default();
        cfg.scope.interactive = vec!["updater".into()];
        cfg.cpu.enabled = true;
        let mut a = Agent::new(cfg, &apps(), "launch");
        a.classify(&[1]);
        assert_eq!(a.burst(SimTime::from_ms(0)), None);
        assert_eq!(cpu_weights(a.config(), (1024, 110), false), (1024, 110));
        assert!(a.knobs_of(Class::Background).cpu_idle, "set apart, as `cpu.idle`");
        assert_eq!(comm_of("a-very-long-app-name"), "a-very-long-app");
    }
}
