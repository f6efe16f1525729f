//! The agent: one [`Event`] enum, one loop, every kernel write through `forefront-sysfs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use forefront_policy::classify::{classify, Class, Foreground, Process, Rules};
use forefront_sysfs::{ioprio, ioprio::IoPrio, procfs, Cgroup, CgroupMounts, Controller, Knob, Version};
use serde_json::json;

use crate::config::Config;
use crate::pause::{PauseGate, Refusal};
use crate::proto::{Request, Response};
use crate::state::{Entry, Journal, JournalLock, StateError};

/// Everything the loop reacts to.
#[derive(Debug)]
pub enum Event {
    /// A request from the control socket, already parsed and authorised.
    Request { req: Request, peer: Peer, reply: mpsc::Sender<Response> },
    /// SIGTERM, SIGINT or SIGHUP: restore everything and exit.
    Signal(i32),
    /// A process exec'd (the kernel's process-events connector): a `[rules]` candidate.
    Exec(i32),
    /// The focused window changed ([`crate::focus`]).
    Focus(crate::focus::FocusChange),
}

/// Credentials of the process at the other end of the socket (`SO_PEERCRED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Sysfs(#[from] forefront_sysfs::Error),
    #[error("control socket {path}: {source}")]
    Socket {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the watchdog {exe}: {source}")]
    Watchdog {
        exe: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("nothing to manage: {0}")]
    Nothing(String),
}

/// The agent's groups in one hierarchy (v1: one per controller; v2: one for all).
#[derive(Clone, Debug)]
pub struct Placement {
    pub mount: PathBuf,
    pub version: Version,
    pub controllers: Vec<Controller>,
    pub top: Cgroup,
    pub fg: Cgroup,
    pub bg: Cgroup,
}

impl Placement {
    fn group_for(&self, class: Class) -> &Cgroup {
        match class {
            Class::Background => &self.bg,
            Class::Foreground | Class::Interactive => &self.fg,
        }
    }
    fn has(&self, c: Controller) -> bool {
        self.controllers.contains(&c)
    }
}

#[derive(Clone, Debug)]
struct Member {
    start_time: u64,
    class: Class,
    comm: String,
}

/// How the agent reaches its watchdog process.
pub struct WatchdogLink {
    pub child: std::process::Child,
    pub input: std::process::ChildStdin,
    /// The binary it runs (to start another if it dies).
    pub exe: PathBuf,
}

/// `cpu.pause_only`: a background group's CPU shares between pauses, per background process
/// that is running or in I/O wait (the weight of one process in no group).
pub const SHARES_PER_PROCESS: u64 = 1024;
/// The largest v1 `cpu.shares` (the kernel's MAX_SHARES).
const MAX_SHARES: u64 = 262_144;

/// The agent's state between events.
pub struct Agent {
    cfg: Config,
    root: PathBuf,
    placements: Vec<Placement>,
    journal: Journal,
    /// Held while the agent runs: one agent per journal (declared after `journal`: dropped
    /// after it).
    _lock: JournalLock,
    fg: Foreground,
    /// Whether `fg` is an app being started (a launcher named itself, or an exec rule fired)
    /// rather than one already running (a switch): `io.fg_group = "switch"` leaves a launch in
    /// its own blkio group.
    fg_is_launch: bool,
    gate: PauseGate,
    members: BTreeMap<i32, Member>,
    /// The group path each managed process had before the agent moved it (names apps).
    name_cgroup: BTreeMap<i32, String>,
    /// Never managed: the agent, its ancestors, its watchdog.
    exclude: BTreeSet<i32>,
    /// During a pause with `pause.idle_end_ms`: the foreground's block I/O bytes when last
    /// seen changing, and when (ms).
    fg_io: Option<(u64, u64)>,
    /// A foreground thread's I/O wait could not be read (said once in the log).
    io_wait_unknown: bool,
    /// Processes (pid, start time) a `[rules]` rule matched already, or that matched when the
    /// agent started: a rule fires once per process start.
    rule_seen: BTreeSet<(i32, u64)>,
    /// The first scan has recorded the matching processes already running.
    rules_primed: bool,
    /// A full scan owed after the reply (the `fg PID` fast path placed only the named process
    /// and the caller): the caller's pid, kept out of that scan's pause.
    rescan_after_reply: Option<Option<i32>>,
    /// The same, owed when the pause in progress ends (a burst's placement waits for it).
    rescan_at_thaw: Option<Option<i32>>,
    /// Scope added at run time (`scope` requests), on top of the config's `[scope]`.
    runtime_scope: crate::config::ScopeSection,
    watchdog: Option<WatchdogLink>,
    epoch: Instant,
    last_scan: Option<Instant>,
    /// What each action did at start (shown by `status`).
    notes: Vec<String>,
    /// Every knob file the agent wrote at start and the value it wrote (shown by `status`).
    applied: Vec<(PathBuf, String)>,
    /// A freeze just requested, not yet confirmed by the kernel: (when, groups).
    settling: Option<(Instant, Vec<forefront_sysfs::Cgroup>)>,
    /// The write-back settings held by the pause in progress (`pause.hold_writeback`).
    held: Vec<crate::writeback::Held>,
    /// `pause.io_only`: each background process's block I/O bytes at the agent's last sample,
    /// and when that sample was taken.
    bg_io: (BTreeMap<i32, u64>, Option<Instant>),
    /// `pause.move_after_reply`: processes moved in the freezer's hierarchy only, before the
    /// reply; their other moves are owed by [`Agent::after_reply`].
    finish_moves: Vec<(i32, u64, Class)>,
    /// `pause.nr_requests`: the request tags the pause in progress raises after the reply.
    tags_pending: Vec<crate::writeback::Held>,
    /// Focus follows: the pure decision, and the last focus change with when it came (ms).
    focus: crate::focus::FocusTracker,
    focus_seen: Option<(crate::focus::FocusChange, u64, String)>,
    /// With `cpu.pause_only`: the background groups' CPU shares between pauses, as last written.
    cpu_between: u64,
    /// `[prefetch]`: the working sets of apps that left the foreground, by (pid, start time),
    /// at most [`MAX_WORKING_SETS`]; and the app that just left, recorded after the reply.
    working_sets: std::collections::VecDeque<((i32, u64), crate::prefetch::WorkingSet)>,
    record_pending: Option<i32>,
    restore_pending: Option<(i32, crate::prefetch::WorkingSet)>,
    log: fn(&str),
}

/// `[prefetch]`: apps whose working sets are kept (the oldest recorded goes first).
const MAX_WORKING_SETS: usize = 32;

/// The CLI's log ([`crate::log::stderr_log`]: on stderr, written by a thread of its own).
pub use crate::log::stderr_log;

impl Agent {
    /// Restores what an earlier crashed run left, creates the groups, sets their knobs and
    /// starts the watchdog (`watchdog_exe`: the `forefront` binary; `None`: no watchdog).
    pub fn start(cfg: Config, watchdog_exe: Option<&Path>, log: fn(&str)) -> Result<Self, AgentError> {
        let root = cfg.agent.root.clone();
        // First: a journal another live agent writes is neither restored nor replaced. One that
        // is being restored (by the watchdog of an agent that just died, or `agent restore`) is
        // waited for: restarted at once, the new agent must not fail on its predecessor's cleanup.
        let lock = JournalLock::acquire_waiting(&cfg.agent.state, true, false, crate::watchdog::LOCK_WAIT, |_| false)?
            .ok_or_else(|| AgentError::Nothing(format!("no directory for {}", cfg.agent.state.display())))?;
        if let Some(old) = Journal::open_existing(&cfg.agent.state, &root, &cfg.agent.group)? {
            log(&format!("restoring {} change(s) left by agent pid {} (unclean exit)", old.entries().len(), old.writer_pid()));
            for p in old.restore() {
                log(&format!("restore: {p}"));
            }
        }
        let journal = Journal::create(&cfg.agent.state, &root)?;
        let mounts = CgroupMounts::read(&root)?;
        let mut wanted = vec![];
        if cfg.cpu.enabled {
            wanted.push(Controller::Cpu);
        }
        if cfg.io.enabled {
            wanted.push(Controller::Io);
        }
        if cfg.pause.enabled {
            wanted.push(Controller::Freezer);
        }
        if cfg.memory.enabled {
            wanted.push(Controller::Memory);
        }
        let mut notes = vec![];
        if cfg.scope.uids.is_empty() && cfg.scope.cgroups.is_empty() && cfg.scope.trees.is_empty() {
            notes.push("scope is empty: only the foreground app is managed (set scope.uids, cgroups or trees)".into());
        }
        let mut placements: Vec<Placement> = vec![];
        for c in wanted {
            let Some(h) = mounts.hierarchy(c) else {
                notes.push(format!("{c}: controller not available, action off"));
                continue;
            };
            if h.read_only {
                // as `agent check` says: no group can be made there (a container's view)
                notes.push(format!("{c}: {} is mounted read-only, action off", h.mount.display()));
                continue;
            }
            if let Some(p) = placements.iter_mut().find(|p| p.mount == h.mount) {
                p.controllers.push(c);
                continue;
            }
            let top = Cgroup::new(h.mount.join(&cfg.agent.group), h.version);
            placements.push(Placement {
                mount: h.mount.clone(),
                version: h.version,
                controllers: vec![c],
                fg: Cgroup::new(top.dir.join("fg"), h.version),
                bg: Cgroup::new(top.dir.join("bg"), h.version),
                top,
            });
        }
        let me = std::process::id() as i32;
        let mut exclude: BTreeSet<i32> = [me].into();
        let mut cur = me;
        while let Ok(s) = procfs::stat(&root, cur) {
            if s.ppid <= 0 || !exclude.insert(s.ppid) {
                break;
            }
            cur = s.ppid;
        }
        let mut agent = Agent {
            gate: PauseGate::new(cfg.pause.enabled, cfg.pause.max_ms, cfg.pause.min_gap_ms),
            settling: None,
            held: vec![],
            bg_io: (BTreeMap::new(), None),
            finish_moves: vec![],
            tags_pending: vec![],
            focus: crate::focus::FocusTracker::new(cfg.focus.burst, cfg.focus.burst_idle_ms),
            focus_seen: None,
            cpu_between: 0,
            cfg,
            root,
            placements,
            journal,
            _lock: lock,
            fg: Foreground::None,
            fg_is_launch: false,
            members: BTreeMap::new(),
            name_cgroup: BTreeMap::new(),
            exclude,
            runtime_scope: Default::default(),
            fg_io: None,
            io_wait_unknown: false,
            rescan_after_reply: None,
            working_sets: Default::default(),
            record_pending: None,
            restore_pending: None,
            rescan_at_thaw: None,
            rule_seen: BTreeSet::new(),
            rules_primed: false,
            watchdog: None,
            epoch: Instant::now(),
            last_scan: None,
            notes,
            applied: vec![],
            log,
        };
        if let Err(e) = agent.setup_groups() {
            agent.shutdown();
            return Err(e);
        }
        if let Err(e) = agent.set_tags() {
            agent.shutdown();
            return Err(e);
        }
        if let Some(exe) = watchdog_exe {
            if let Err(e) = agent.spawn_watchdog(exe) {
                agent.shutdown();
                return Err(e);
            }
        }
        for n in &agent.notes {
            log(n);
        }
        agent.rescan(None);
        Ok(agent)
    }

    fn setup_groups(&mut self) -> Result<(), AgentError> {
        let placements = self.placements.clone();
        for p in &placements {
            if p.version == Version::V2 {
                let ctl = p.mount.join("cgroup.subtree_control");
                let enabled = std::fs::read_to_string(&ctl).unwrap_or_default();
                let added: Vec<String> = p
                    .controllers
                    .iter()
                    .filter_map(|c| c.v2_name())
                    .filter(|n| !enabled.split_whitespace().any(|e| e == *n))
                    .map(str::to_owned)
                    .collect();
                if !added.is_empty() {
                    self.journal.record([Entry::Subtree { path: ctl, added }])?;
                    Cgroup::new(&p.mount, Version::V2).enable_subtree(&p.controllers)?;
                }
            }
            for g in [&p.top, &p.fg, &p.bg] {
                if !g.exists() {
                    self.journal.record([Entry::Created { dir: g.dir.clone(), version: p.version, mount: p.mount.clone() }])?;
                    g.create()?;
                }
                if g == &p.top {
                    g.enable_subtree(&p.controllers)?;
                }
            }
            let cpu = self.cfg.cpu.clone();
            let io = self.cfg.io.clone();
            let mem = self.cfg.memory.clone();
            if p.has(Controller::Cpu) && cpu.pause_only {
                self.set_knob(&p.fg, Knob::CpuWeight, cpu.fg_shares)?;
                self.set_knob(&p.bg, Knob::CpuWeight, SHARES_PER_PROCESS)?;
                self.cpu_between = SHARES_PER_PROCESS;
                self.notes.push(format!(
                    "cpu: shares {} for foreground; during a pause shares {}{} for background, between pauses {SHARES_PER_PROCESS} per running background process",
                    cpu.fg_shares,
                    cpu.bg_shares,
                    if cpu.bg_idle && p.bg.knob_path(Knob::CpuIdle).is_some() { " and cpu.idle=1" } else { "" }
                ));
            } else if p.has(Controller::Cpu) {
                self.set_knob(&p.fg, Knob::CpuWeight, cpu.fg_shares)?;
                self.set_knob(&p.bg, Knob::CpuWeight, cpu.bg_shares)?;
                if cpu.bg_idle {
                    if p.bg.knob_path(Knob::CpuIdle).is_some() {
                        self.set_knob(&p.bg, Knob::CpuIdle, 1)?;
                        self.notes.push(format!(
                            "cpu: shares {} for foreground; cpu.idle=1 for background (the kernel then gives it the minimum weight, shares {} unused)",
                            cpu.fg_shares, cpu.bg_shares
                        ));
                    } else {
                        self.notes.push(format!("cpu: shares {}/{}; no cpu.idle in this kernel", cpu.fg_shares, cpu.bg_shares));
                    }
                } else {
                    self.notes.push(format!("cpu: shares {}/{}", cpu.fg_shares, cpu.bg_shares));
                }
            }
            if p.has(Controller::Io) {
                if p.bg.knob_path(Knob::IoWeight).is_some() {
                    self.set_knob(&p.fg, Knob::IoWeight, io.fg_weight)?;
                    self.set_knob(&p.bg, Knob::IoWeight, io.bg_weight)?;
                    let file = p.bg.knob_path(Knob::IoWeight).unwrap();
                    self.notes.push(format!(
                        "io: weights {}/{} via {}",
                        io.fg_weight,
                        io.bg_weight,
                        file.file_name().unwrap_or_default().to_string_lossy()
                    ));
                } else {
                    self.notes.push("io: no BFQ/io weight knob (BFQ not loaded?): weights off".into());
                }
                // Where BFQ is absent: the group-wide idle class (blk-ioprio, honoured by
                // mq-deadline too), and on v2 a latency target on the disks that honour no
                // priority at all (crate::iosched).
                if io.bg_ioprio_idle && p.bg.knob_path(Knob::IoPrioClass).is_some() {
                    self.set_knob(&p.bg, Knob::IoPrioClass, 3)?;
                    self.notes.push("io: background group's I/O in the idle class (prio.class = idle)".into());
                }
                if io.fg_latency_us > 0 && p.version == Version::V2 && p.fg.knob_path(Knob::IoLatency).is_some() {
                    let deaf: Vec<crate::iosched::Disk> =
                        crate::iosched::disks(&self.root).into_iter().filter(|d| !d.honours_ioprio()).collect();
                    for d in &deaf {
                        self.set_device_knob(&p.fg, Knob::IoLatency, &d.dev, io.fg_latency_us)?;
                    }
                    if !deaf.is_empty() {
                        let names: Vec<&str> = deaf.iter().map(|d| d.name.as_str()).collect();
                        self.notes.push(format!(
                            "io: foreground io.latency target {} µs on {}",
                            io.fg_latency_us,
                            names.join(", ")
                        ));
                    }
                }
            }
            if p.has(Controller::Memory) {
                match p.version {
                    Version::V2 if mem.fg_low_bytes > 0 => self.set_knob(&p.fg, Knob::MemoryLow, mem.fg_low_bytes)?,
                    Version::V1 if mem.bg_soft_limit_bytes > 0 => {
                        self.set_knob(&p.bg, Knob::MemoryLow, mem.bg_soft_limit_bytes)?
                    }
                    _ => {}
                }
                self.notes.push(format!("memory: {:?} protection set", p.version));
            }
            if p.has(Controller::Freezer) {
                self.notes.push(format!(
                    "pause: background frozen during bursts, at most {} ms, {} ms apart",
                    self.cfg.pause.max_ms, self.cfg.pause.min_gap_ms
                ));
            }
        }
        if self.cfg.io.enabled && self.cfg.io.bg_ioprio_idle {
            self.notes.push("io: idle I/O class for background threads".into());
        }
        Ok(())
    }

    /// `io.nr_requests`: sets the request tags of every BFQ disk for the agent's lifetime, each
    /// original journaled before its write (put back by [`Agent::shutdown`], a restarted agent
    /// or `agent restore`). A write the kernel refuses is a note, not a failure: the agent runs
    /// without it. The write drains the queue (tens of ms under load), once, here.
    fn set_tags(&mut self) -> Result<(), AgentError> {
        if !self.cfg.io.enabled {
            return Ok(());
        }
        let plan = crate::iosched::plan_nr_requests_lifetime(&self.root, self.cfg.io.nr_requests);
        for h in plan {
            self.journal.record([Entry::Knob { path: h.path.clone(), original: h.original.clone() }])?;
            let t0 = Instant::now();
            match forefront_sysfs::write_value(&h.set, &h.value) {
                Ok(_) => {
                    self.applied.push((h.set.clone(), h.value.clone()));
                    self.notes.push(format!(
                        "io: {} = {} (was {}; the queue drained in {:.1} ms)",
                        h.set.strip_prefix(&self.root).unwrap_or(&h.set).display(),
                        h.value,
                        h.original,
                        t0.elapsed().as_secs_f64() * 1000.0
                    ));
                }
                Err(e) => self.notes.push(format!("io: nr_requests not set: {e}")),
            }
        }
        Ok(())
    }

    /// Sets a knob of one of the agent's groups; a group the agent did not create gets its
    /// original value journaled first.
    fn set_knob(&mut self, g: &Cgroup, knob: Knob, value: u64) -> Result<(), AgentError> {
        let ours = self.journal.entries().iter().any(|e| matches!(e, Entry::Created { dir, .. } if *dir == g.dir));
        if !ours {
            let (path, original) = g.read_knob(knob)?;
            self.journal.record([Entry::Knob { path, original }])?;
        }
        let path = g.set_knob(knob, value)?;
        self.applied.push((path, knob.encode(g.version, value)));
        Ok(())
    }

    /// [`Agent::set_knob`] for a per-device knob (`io.latency`): in a group the agent did not
    /// create, the device's original line is journaled first — `MAJ:MIN target=max` (no
    /// target) where the file has none for it, which is what writing it back restores.
    fn set_device_knob(&mut self, g: &Cgroup, knob: Knob, dev: &str, value: u64) -> Result<(), AgentError> {
        let ours = self.journal.entries().iter().any(|e| matches!(e, Entry::Created { dir, .. } if *dir == g.dir));
        if !ours {
            let (path, text) = g.read_knob(knob)?;
            let original = text
                .lines()
                .find(|l| l.split_whitespace().next() == Some(dev))
                .map(str::to_owned)
                .unwrap_or_else(|| format!("{dev} target=max"));
            self.journal.record([Entry::Knob { path, original }])?;
        }
        let path = g.set_device_knob(knob, dev, value)?;
        self.applied.push((path, format!("{dev} target={value}")));
        Ok(())
    }

    fn freezer_groups(&self) -> Vec<Cgroup> {
        self.placements.iter().filter(|p| p.has(Controller::Freezer)).map(|p| p.bg.clone()).collect()
    }

    /// Starts the watchdog: the `forefront` binary, run again (`agent watchdog`), in a session
    /// and process group of its own, so that a kill of the agent's process group (`kill -9
    /// -PGID`, a terminal's hangup) does not take it along, and with `oom_score_adj` -1000, so
    /// that the OOM killer never picks it (with or after the agent). A pause in progress is
    /// handed to it at once (held settings, then the time left). It is started whatever the
    /// config turns on: without a pause it has nothing to thaw, but a dead agent's journal
    /// (groups, I/O classes, knobs) to restore.
    fn spawn_watchdog(&mut self, exe: &Path) -> Result<(), AgentError> {
        let groups = self.freezer_groups();
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["agent", "watchdog"]);
        for g in &groups {
            cmd.arg("--group").arg(format!("{}:{}", if g.version == Version::V1 { "v1" } else { "v2" }, g.dir.display()));
        }
        cmd.arg("--journal").arg(&self.cfg.agent.state);
        cmd.arg("--root").arg(&self.root);
        cmd.args(["--agent-group", &self.cfg.agent.group]);
        cmd.args(["--agent-pid", &std::process::id().to_string()]);
        if self.cfg.agent.lock_memory {
            cmd.arg("--lock-memory");
        }
        cmd.stdin(std::process::Stdio::piped());
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
            unsafe {
                cmd.pre_exec(|| nix::unistd::setsid().map(drop).map_err(std::io::Error::from));
            }
        }
        let mut child = cmd.spawn().map_err(|source| AgentError::Watchdog { exe: exe.into(), source })?;
        let input = child.stdin.take().expect("piped stdin");
        let pid = child.id() as i32;
        if let Err(e) = procfs::set_oom_score_adj(&self.root, pid, -1000) {
            (self.log)(&format!("watchdog pid {pid}: not protected from the OOM killer: {e}"));
        }
        self.exclude.insert(pid);
        self.watchdog = Some(WatchdogLink { child, input, exe: exe.into() });
        if let Some(d) = self.gate.deadline() {
            let held: Vec<(PathBuf, String)> = self.held.iter().rev().map(|h| (h.path.clone(), h.original.clone())).collect();
            for (path, original) in held {
                self.tell_watchdog(&format!("K {} {}", path.display(), original));
            }
            self.tell_watchdog(&format!("F {}", d.saturating_sub(self.now_ms())));
        }
        Ok(())
    }

    /// Starts a new watchdog if the last one died (killed on its own): the agent is never
    /// without one for longer than a loop turn.
    fn keep_watchdog(&mut self) {
        let Some(w) = &mut self.watchdog else { return };
        let Ok(Some(status)) = w.child.try_wait() else { return };
        let (old, exe) = (w.child.id(), w.exe.clone());
        self.exclude.remove(&(old as i32));
        self.watchdog = None;
        (self.log)(&format!("watchdog pid {old} died ({status}): starting another"));
        if let Err(e) = self.spawn_watchdog(&exe) {
            (self.log)(&format!("{e}: pauses are bounded by the agent alone"));
        }
    }

    fn tell_watchdog(&mut self, msg: &str) {
        use std::io::Write;
        if let Some(w) = &mut self.watchdog {
            if let Err(e) = writeln!(w.input, "{msg}") {
                (self.log)(&format!("watchdog unreachable ({e}); pauses are still bounded by the agent"));
            }
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// When the loop must wake up next.
    pub fn next_wake(&self) -> Duration {
        let rescan = Duration::from_millis(self.cfg.agent.rescan_ms);
        let mut wait = match self.last_scan {
            Some(t) => rescan.saturating_sub(t.elapsed()),
            None => Duration::ZERO,
        };
        if let Some(d) = self.gate.deadline() {
            wait = wait.min(Duration::from_millis(d.saturating_sub(self.now_ms())));
            if self.fg_io.is_some() {
                // Watching the foreground's I/O: look every 20 ms.
                wait = wait.min(Duration::from_millis(20));
            }
        }
        wait
    }

    /// Block I/O bytes of every foreground process so far; `None` when no foreground process
    /// is alive any more (all exited, or zombies): a start-up that is over.
    fn fg_io_bytes(&self) -> Option<u64> {
        let alive = self.fg_alive();
        (!alive.is_empty())
            .then(|| alive.iter().filter_map(|pid| procfs::io(&self.root, *pid).ok()).map(|c| c.read_bytes + c.write_bytes).sum())
    }

    /// Whether a foreground thread waits for I/O now ([`procfs::waits_for_io`]): a
    /// read stalled behind the background's write-back submits nothing new, so the bytes alone
    /// would call the start-up over exactly when it needs the pause most. A process that
    /// cannot be looked at counts as not waiting (the bytes still decide), and says why once.
    fn fg_waits_for_io(&mut self) -> bool {
        for pid in self.fg_alive() {
            match procfs::waits_for_io(&self.root, pid) {
                Ok(true) => return true,
                Ok(false) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) if !self.io_wait_unknown => {
                    self.io_wait_unknown = true;
                    (self.log)(&format!("{e}: the pause ends on the foreground's I/O bytes alone"));
                }
                Err(_) => {}
            }
        }
        false
    }

    /// The foreground processes alive now (a zombie counts as gone).
    fn fg_alive(&self) -> Vec<i32> {
        // The named app counts before it is placed (a burst places it when the pause ends).
        let mut pids: BTreeSet<i32> =
            self.members.iter().filter(|(_, m)| m.class == Class::Foreground).map(|(p, _)| *p).collect();
        if let Foreground::Pids(p) = &self.fg {
            pids.extend(p);
        }
        // Alive by its stat (a kernel without I/O accounting has no `io` file, and that must
        // not read as an exit).
        pids.into_iter().filter(|pid| procfs::stat(&self.root, *pid).is_ok_and(|s| s.state != 'Z')).collect()
    }

    /// Periodic work: replace a dead watchdog, end an overdue pause, place new processes.
    pub fn tick(&mut self) {
        self.keep_watchdog();
        self.start_restore();
        self.raise_tags();
        if let Some((last, since)) = self.fg_io {
            let now = self.now_ms();
            let bytes = self.fg_io_bytes();
            let Some(bytes) = bytes.or((!self.cfg.pause.end_on_exit).then_some(0)) else {
                // Every foreground process has exited: nothing is left to protect, so the
                // background gets its time back now rather than idle_end_ms later.
                (self.log)("foreground exited: resuming background");
                self.thaw();
                return self.tick_rest();
            };
            if bytes != last || self.fg_waits_for_io() {
                self.fg_io = Some((bytes, now));
            } else if now.saturating_sub(since) >= self.cfg.pause.idle_end_ms {
                (self.log)(&format!(
                    "foreground idle on I/O for {} ms (none submitted, none waited for): resuming background",
                    self.cfg.pause.idle_end_ms
                ));
                self.thaw();
            }
        }
        self.tick_rest();
    }

    /// The part of [`Agent::tick`] after the foreground's I/O is looked at.
    fn tick_rest(&mut self) {
        if self.gate.expired(self.now_ms()) {
            (self.log)("pause deadline reached: resuming background");
            self.thaw();
        }
        if self.last_scan.is_none_or(|t| t.elapsed() >= Duration::from_millis(self.cfg.agent.rescan_ms)) {
            self.rescan(None);
        }
    }

    fn rules(&self, peer: Option<i32>) -> Rules {
        let mut exclude = self.exclude.clone();
        exclude.extend(peer);
        // The same rules the simulator's `agent` policy classifies with.
        forefront_policy::agent::rules(&self.cfg, &self.runtime_scope, exclude)
    }

    /// The hierarchy that names apps (the one holding `cpu`, else v2, else any).
    fn naming_controller(&self) -> Option<&'static str> {
        match CgroupMounts::read(&self.root).ok().and_then(|m| m.hierarchy(Controller::Cpu)) {
            Some(h) if h.version == Version::V1 => Some("cpu"),
            _ => None,
        }
    }

    /// Classifies all processes and moves those whose class changed. `peer`: the process
    /// talking to the agent now; it is never paused by the request it makes.
    fn rescan(&mut self, peer: Option<i32>) {
        self.last_scan = Some(Instant::now());
        let snap = match procfs::snapshot(&self.root) {
            Ok(s) => s,
            Err(e) => return (self.log)(&format!("scan: {e}")),
        };
        let need_names = !self.rules(None).scope_cgroups.is_empty()
            || matches!(self.fg, Foreground::Cgroup(_))
            || !self.cfg.rules.fg_units.is_empty();
        let naming = if need_names { self.naming_controller() } else { None };
        let mut procs = Vec::with_capacity(snap.len());
        let mut starts = BTreeMap::new();
        for s in snap.iter().filter(|s| !s.kernel_thread) {
            let cgroup = match self.name_cgroup.get(&s.pid) {
                Some(c) => c.clone(),
                None if need_names => {
                    procfs::cgroups(&self.root, s.pid).ok().and_then(|l| procfs::cgroup_of(&l, naming)).unwrap_or_default()
                }
                None => String::new(),
            };
            starts.insert(s.pid, (s.start_time, s.comm.clone()));
            procs.push(Process { pid: s.pid, ppid: s.ppid, uid: s.uid, comm: s.comm.clone(), cgroup });
        }
        let mut rule_fired = false;
        if !self.cfg.rules.is_empty() {
            // Rules at rescan time: where exec notifications are missing (or were missed).
            // Processes already running at the first scan never fire.
            let fire = self.rules_primed;
            self.rules_primed = true;
            let mut newest = None;
            for p in &procs {
                let key = (p.pid, starts[&p.pid].0);
                if self.cfg.rules.matches(&p.comm, &p.cgroup)
                    && !self.exclude.contains(&p.pid)
                    && self.rule_seen.insert(key)
                    && fire
                {
                    newest = newest.max(Some((key.1, p.pid, p.comm.clone())));
                }
            }
            self.rule_seen.retain(|(pid, st)| starts.get(pid).is_some_and(|(s, _)| s == st));
            if let Some((_, pid, comm)) = newest {
                (self.log)(&format!("rule: {comm} (pid {pid}) started: foreground (found by a scan)"));
                self.fg = Foreground::Pids(vec![pid]);
                self.fg_is_launch = true;
                rule_fired = true;
            }
        }
        let mut classes = classify(&procs, &self.fg, &self.rules(peer));
        if let Some(p) = peer {
            if self.members.get(&p).is_some_and(|m| m.class == Class::Background) {
                classes.insert(p, Class::Interactive);
            }
        }
        // Forget the dead and processes whose pid was reused.
        self.members.retain(|pid, m| starts.get(pid).is_some_and(|(st, _)| *st == m.start_time));
        self.name_cgroup.retain(|pid, _| starts.contains_key(pid));
        let root = self.root.clone();
        let _ = self.journal.forget(|e| match e {
            Entry::Moved { pid, start_time, .. } => starts.get(pid).is_some_and(|(st, _)| st == start_time),
            Entry::Ioprio { tid, start_time, .. } => {
                procfs::stat(&root, *tid).map(|s| s.start_time == *start_time).unwrap_or(false)
            }
            _ => true,
        });
        // Nothing in the background: the foreground has nothing to be protected from, so a
        // process not placed yet is left where it is (moving it costs a start-up its own time:
        // see [`Agent::worth_placing`]); the scan that finds a background places it.
        let any_bg = classes.values().any(|c| *c == Class::Background);
        let changed: Vec<(i32, Class)> = classes
            .iter()
            .filter(|(pid, class)| self.members.get(pid).is_none_or(|m| m.class != **class))
            .filter(|(pid, _)| any_bg || self.members.contains_key(pid))
            .map(|(p, c)| (*p, *c))
            .collect();
        let left: Vec<i32> = self.members.keys().filter(|p| !classes.contains_key(p)).copied().collect();
        for pid in left {
            self.release(pid);
        }
        for (pid, class) in changed {
            let (start_time, comm) = starts[&pid].clone();
            if let Err(e) = self.place(pid, start_time, class) {
                if !e_is_gone(&e) {
                    (self.log)(&format!("place pid {pid} ({comm}) as {class:?}: {e}"));
                }
                continue;
            }
            self.members.insert(pid, Member { start_time, class, comm });
        }
        let busy = snap
            .iter()
            .filter(|s| matches!(s.state, 'R' | 'D'))
            .filter(|s| self.members.get(&s.pid).is_some_and(|m| m.class == Class::Background))
            .count() as u64;
        self.update_cpu_between(busy);
        if self.cfg.pause.io_only && self.bg_io.1.is_none_or(|t| t.elapsed() >= Duration::from_millis(self.cfg.agent.rescan_ms)) {
            self.bg_io = (self.background_io(), Some(Instant::now()));
        }
        if rule_fired && self.cfg.rules.burst {
            if let Err(why) = self.freeze() {
                (self.log)(&format!("rule: background not paused: {why}"));
            }
        }
    }

    /// `pause.move_after_reply`: moves `pid` into the groups of `class` in the hierarchies
    /// holding `only` now, and owes the rest to [`Agent::after_reply`].
    fn place_now_in(&mut self, pid: i32, class: Class, only: Option<Controller>) {
        if self.exclude.contains(&pid) {
            return;
        }
        let Ok(st) = procfs::stat(&self.root, pid) else { return };
        match self.place_in(pid, st.start_time, class, only) {
            Ok(()) => {
                self.members.insert(pid, Member { start_time: st.start_time, class, comm: st.comm });
                self.finish_moves.push((pid, st.start_time, class));
            }
            Err(e) if !e_is_gone(&e) => (self.log)(&format!("place pid {pid} as {class:?}: {e}")),
            Err(_) => {}
        }
    }

    /// Classifies one process as `class` and moves it now, without a full scan (the launcher's
    /// fast path; the next scan confirms or corrects it).
    fn place_now(&mut self, pid: i32, class: Class) {
        if self.exclude.contains(&pid) || self.members.get(&pid).is_some_and(|m| m.class == class) {
            return;
        }
        if !self.worth_placing(pid, class) {
            return;
        }
        let Ok(st) = procfs::stat(&self.root, pid) else { return };
        match self.place(pid, st.start_time, class) {
            Ok(()) => {
                self.members.insert(pid, Member { start_time: st.start_time, class, comm: st.comm });
            }
            Err(e) if !e_is_gone(&e) => (self.log)(&format!("place pid {pid} as {class:?}: {e}")),
            Err(_) => {}
        }
    }

    /// Whether moving `pid` into the groups of `class` can buy it anything: a process not placed
    /// yet gains nothing from the foreground groups while nothing is in the background (there is
    /// nothing its weights act against), and the move costs a launch its own time. A move
    /// between cgroups waits for RCU grace periods (tens of ms on a loaded machine) and BFQ
    /// moves the app's queues into a group of their own in mid-start-up: the S suite's xterm
    /// start-up with no background took 222 ms with the move, 177 ms without, 165 ms with no
    /// agent at all (interleaved, load average 10; "The no-background start-up" in
    /// docs/agent.md). Processes already placed always move (one leaving the background groups
    /// must not stay in the idle class).
    fn worth_placing(&self, pid: i32, class: Class) -> bool {
        class == Class::Background
            || self.members.contains_key(&pid)
            || self.members.values().any(|m| m.class == Class::Background)
    }

    /// The descendants of `pid` that are background members now (walking
    /// `/proc/PID/task/*/children`; at most 4096 processes visited).
    fn background_descendants(&self, pid: i32) -> Vec<i32> {
        if !self.members.values().any(|m| m.class == Class::Background) {
            return vec![];
        }
        let (mut todo, mut seen, mut found) = (vec![pid], BTreeSet::from([pid]), vec![]);
        while let Some(p) = todo.pop() {
            for kid in procfs::children(&self.root, p).unwrap_or_default() {
                if seen.len() >= 4096 || !seen.insert(kid) {
                    continue;
                }
                if self.members.get(&kid).is_some_and(|m| m.class == Class::Background) {
                    found.push(kid);
                }
                todo.push(kid);
            }
        }
        found
    }

    /// `io.fresh_fg_group`: moves a launcher naming itself into the blkio `fg` group now, before
    /// the reply (its app's first I/O comes right after its exec), and first removes and makes
    /// that group again when it is empty: a new BFQ group, whose service tree holds no weights
    /// of queues gone idle or gone (soft real-time ones weigh 3,000 times their base weight, and
    /// left there by earlier start-ups they cut a new start-up's queues to one request each:
    /// docs/agent.md, "Soft real-time ghosts"). Only on a v1 `blkio` hierarchy mounted alone;
    /// the pid is not made a member (its other groups are left to the usual placement, which
    /// with nothing in the background moves nothing). Returns whether it moved the pid.
    fn launch_in_fresh_fg(&mut self, pid: i32) -> bool {
        let io = &self.cfg.io;
        if !(io.enabled && io.fg_group.applies(true) && io.fresh_fg_group) || self.exclude.contains(&pid) {
            return false;
        }
        let groups: Vec<Cgroup> = self
            .placements
            .iter()
            .filter(|p| p.version == Version::V1 && p.controllers == [Controller::Io])
            .map(|p| p.fg.clone())
            .collect();
        if groups.is_empty() {
            return false;
        }
        for g in &groups {
            if g.procs().is_ok_and(|v| v.is_empty()) {
                let renewed = g.remove().and_then(|()| g.create()).and_then(|_| g.set_knob(Knob::IoWeight, io.fg_weight));
                if let Err(e) = renewed {
                    (self.log)(&format!("fresh_fg_group: {}: {e}", g.dir.display()));
                }
            }
        }
        let Ok(st) = procfs::stat(&self.root, pid) else { return false };
        match self.place_in(pid, st.start_time, Class::Foreground, Some(Controller::Io)) {
            Ok(()) => true,
            Err(e) => {
                if !e_is_gone(&e) {
                    (self.log)(&format!("place pid {pid} in a fresh fg group: {e}"));
                }
                false
            }
        }
    }

    /// Whether the foreground stays out of this placement's `fg` group (`io.fg_group` off, or
    /// `"switch"` while the foreground is a launch, on a v1 `blkio` hierarchy of its own).
    fn stays_home(&self, p: &Placement) -> bool {
        !self.cfg.io.fg_group.applies(self.fg_is_launch) && p.version == Version::V1 && p.controllers == [Controller::Io]
    }

    /// The group `pid` was in before the agent moved it, in `p`'s hierarchy (the journal's record).
    fn original_group(&self, pid: i32, start_time: u64, p: &Placement) -> Option<PathBuf> {
        self.journal.entries().iter().find_map(|e| match e {
            Entry::Moved { pid: q, start_time: t, original, .. }
                if *q == pid && *t == start_time && original.starts_with(&p.mount) =>
            {
                Some(original.clone())
            }
            _ => None,
        })
    }

    /// Moves one process into the groups of `class` and sets its threads' I/O priority.
    fn place(&mut self, pid: i32, start_time: u64, class: Class) -> Result<(), AgentError> {
        self.place_in(pid, start_time, class, None)
    }

    /// [`Agent::place`], in the hierarchies holding `only` alone when given (the rest is left
    /// for a later `place`); then the I/O priority is set before the moves, not after them.
    fn place_in(&mut self, pid: i32, start_time: u64, class: Class, only: Option<Controller>) -> Result<(), AgentError> {
        let lines = procfs::cgroups(&self.root, pid)?;
        let mut moves = vec![];
        let mut entries = vec![];
        for p in self.placements.iter().filter(|p| only.is_none_or(|c| p.has(c))) {
            let v1name = p.controllers.first().map(|c| c.v1_name());
            let cur = match p.version {
                Version::V1 => procfs::cgroup_of(&lines, v1name),
                Version::V2 => procfs::cgroup_of(&lines, None),
            }
            .unwrap_or_else(|| "/".into());
            let cur_dir = p.mount.join(cur.trim_start_matches('/'));
            let ours = [&p.fg.dir, &p.bg.dir].contains(&&cur_dir);
            let target = if class != Class::Background && self.stays_home(p) {
                // `io.fg_group` off (or "switch" during a launch): the foreground keeps its own
                // blkio group; one leaving ours goes back to where it came from (the root when
                // that is not known)
                if !ours {
                    continue;
                }
                Cgroup::new(self.original_group(pid, start_time, p).unwrap_or_else(|| p.mount.clone()), p.version)
            } else {
                p.group_for(class).clone()
            };
            if cur_dir == target.dir {
                continue;
            }
            if !ours && self.original_group(pid, start_time, p).is_none() {
                entries.push(Entry::Moved { pid, start_time, original: cur_dir, version: p.version });
            }
            moves.push(target);
        }
        if !self.name_cgroup.contains_key(&pid) {
            let naming = self.naming_controller();
            if let Some(c) = procfs::cgroup_of(&lines, naming) {
                self.name_cgroup.insert(pid, c);
            }
        }
        let want_idle = forefront_policy::agent::knobs(&self.cfg, Some(class)).ioprio_idle;
        let mut prio_changes = vec![];
        if self.root == Path::new("/") {
            for tid in procfs::tasks(&self.root, pid).unwrap_or_default() {
                let recorded = self.journal.entries().iter().find_map(|e| match e {
                    Entry::Ioprio { tid: t, original, .. } if *t == tid => Some(*original),
                    _ => None,
                });
                match (want_idle, recorded) {
                    (true, None) => {
                        let Ok(mut original) = ioprio::get(tid) else { continue };
                        let Ok(st) = procfs::stat(&self.root, tid) else { continue };
                        // Born from a process the agent made idle: it inherited the idle
                        // class, so its own original is its parent's.
                        if original == IoPrio::IDLE {
                            if let Some(p) = self.journal.entries().iter().find_map(|e| match e {
                                Entry::Ioprio { tid, original, .. } if *tid == st.ppid => Some(*original),
                                _ => None,
                            }) {
                                original = p;
                            }
                        }
                        entries.push(Entry::Ioprio { tid, start_time: st.start_time, original });
                        prio_changes.push((tid, IoPrio::IDLE));
                    }
                    (false, Some(original)) => prio_changes.push((tid, original)),
                    _ => {}
                }
            }
        }
        self.journal.record(entries)?;
        if only.is_some() {
            for (tid, prio) in prio_changes.drain(..) {
                if let Err(e) = ioprio::set(tid, prio) {
                    if !e.is_not_found() {
                        (self.log)(&e.to_string());
                    }
                }
            }
        }
        let expedited = if moves.is_empty() { None } else { self.expedite() };
        let moved = moves.iter().try_for_each(|g| g.add_proc(pid));
        if let Some(original) = expedited {
            self.expedite_back(&original);
        }
        moved?;
        for (tid, prio) in prio_changes {
            if let Err(e) = ioprio::set(tid, prio) {
                if !e.is_not_found() {
                    (self.log)(&e.to_string());
                }
            }
        }
        if !want_idle {
            let _ = self.journal.forget(|e| !matches!(e, Entry::Ioprio { .. }) || !is_thread_of(&self.root, e, pid));
        }
        Ok(())
    }

    /// `agent.expedite_moves`: sets `/sys/kernel/rcu_expedited` to 1 for the moves that follow
    /// and returns the value to put back, or `None` (off, already 1, not there, or refused:
    /// the moves then wait for normal grace periods). The original is journaled first, so a
    /// crash between the two writes is restored like any knob.
    fn expedite(&mut self) -> Option<String> {
        if !self.cfg.agent.expedite_moves {
            return None;
        }
        let path = self.root.join(crate::state::RCU_EXPEDITED);
        let original = std::fs::read_to_string(&path).ok()?.trim().to_owned();
        if original != "0" {
            return None;
        }
        if self.journal.record([Entry::Knob { path: path.clone(), original: original.clone() }]).is_err() {
            return None;
        }
        std::fs::write(&path, "1").ok()?;
        Some(original)
    }

    fn expedite_back(&mut self, original: &str) {
        let path = self.root.join(crate::state::RCU_EXPEDITED);
        if let Err(e) = std::fs::write(&path, original) {
            (self.log)(&format!("{}: cannot write {original:?} back: {e}", path.display()));
        }
    }

    /// Gives a process back its original groups and I/O priorities (it left the scope).
    fn release(&mut self, pid: i32) {
        self.members.remove(&pid);
        let mut undo = vec![];
        for e in self.journal.entries() {
            match e {
                Entry::Moved { pid: p, original, version, .. } if *p == pid => {
                    undo.push((Some(Cgroup::new(original, *version)), None))
                }
                Entry::Ioprio { tid, original, .. } if is_thread_of(&self.root, e, pid) => {
                    undo.push((None, Some((*tid, *original))))
                }
                _ => {}
            }
        }
        for (g, prio) in undo {
            if let Some(g) = g {
                let _ = g.add_proc(pid);
            }
            if let Some((tid, p)) = prio {
                let _ = ioprio::set(tid, p);
            }
        }
        let root = self.root.clone();
        let _ = self.journal.forget(|e| match e {
            Entry::Moved { pid: p, .. } => *p != pid,
            Entry::Ioprio { .. } => !is_thread_of(&root, e, pid),
            _ => true,
        });
    }

    /// Handles one request from the control socket.
    pub fn handle(&mut self, req: Request, peer: Peer) -> Response {
        match req {
            Request::Status {} => Response { ok: true, status: Some(self.status()), ..Default::default() },
            Request::BurstEnd {} => {
                if self.thaw() {
                    Response::ok("background resumed")
                } else {
                    Response::ok("no pause in progress")
                }
            }
            Request::Scope { pid, uid, cgroup, remove } => self.scope(pid, uid, cgroup, remove, peer),
            Request::Cell { name, burst } => {
                let Some(path) = self.cfg.cells.get(&name).cloned() else {
                    let known: Vec<&str> = self.cfg.cells.keys().map(String::as_str).collect();
                    return Response::err(format!(
                        "no cell {name:?} (cells: {})",
                        if known.is_empty() { "none configured: add a [cells] section".to_owned() } else { known.join(", ") }
                    ));
                };
                (self.log)(&format!(
                    "foreground cell: {name} ({path}){} (from pid {})",
                    if burst { ", burst" } else { "" },
                    peer.pid
                ));
                self.fg = Foreground::Cgroup(path.clone());
                self.fg_is_launch = false;
                self.rescan(Some(peer.pid));
                self.foreground_reply(&format!("cell {name} ({path})"), burst)
            }
            Request::Fg { pid, uid, cgroup, burst } => {
                let t0 = Instant::now();
                let (fg, what) = if let Some(pid) = pid {
                    if let Err(why) = self.check_pid(pid) {
                        return Response::err(why);
                    }
                    (Foreground::Pids(vec![pid]), format!("pid {pid}"))
                } else if let Some(uid) = uid {
                    (Foreground::Uid(uid), format!("uid {uid}"))
                } else {
                    let c = cgroup.unwrap_or_default();
                    if let Err(why) = self.check_group(&c) {
                        return Response::err(why);
                    }
                    (Foreground::Cgroup(c.clone()), format!("cgroup {c}"))
                };
                (self.log)(&format!("foreground: {what}{} (from pid {})", if burst { ", burst" } else { "" }, peer.pid));
                // The peer is kept out of this scan (it must not freeze itself waiting for the
                // reply), unless it named itself foreground (`agent exec`): then it is classified
                // now, before it execs its app.
                let names_itself = pid == Some(peer.pid);
                // `[prefetch]`: an app named by pid that stops being the foreground has its
                // working set recorded after the reply (it is still cached now).
                if let Foreground::Pids(old) = &self.fg {
                    if self.cfg.prefetch.enabled && fg != self.fg {
                        self.record_pending = old.first().copied();
                    }
                }
                self.fg = fg;
                self.fg_is_launch = names_itself;
                let keep_out = (!names_itself).then_some(peer.pid);
                match pid {
                    // The launcher's fast path: reply first, place after. Moving a process
                    // between cgroups waits for an RCU grace period per hierarchy (~8 ms for
                    // three here), so only what the pause would otherwise catch moves now: the
                    // named process if it sits in the background groups, a launcher naming
                    // itself (`agent exec`: foreground from the exec's first instruction), and
                    // a background caller. Everything else is placed by the scan after the reply.
                    // A launcher naming itself with a burst is not moved before the reply
                    // either: the background it competes with is about to be frozen, and the
                    // moves' grace periods (tens of ms on a loaded machine) would be paid by
                    // the launch itself; it is placed when the pause ends. (Measured on the S
                    // suite: the start-up under CPU contention and with no background at all
                    // was slower than BFQ's by about that much.)
                    Some(pid) => {
                        if names_itself {
                            self.launch_in_fresh_fg(pid);
                        }
                        let pausing = burst && self.cfg.pause.enabled && !self.freezer_groups().is_empty();
                        let in_bg = self.members.get(&pid).is_some_and(|m| m.class == Class::Background);
                        if in_bg && pausing && self.cfg.pause.move_after_reply && !names_itself {
                            // Only out of the freezer's group (it must not be frozen with the
                            // rest), its I/O class restored first; its other groups after the reply.
                            self.place_now_in(pid, Class::Foreground, Some(Controller::Freezer));
                        } else if in_bg || (names_itself && !pausing) {
                            self.place_now(pid, Class::Foreground);
                        }
                        // Its descendants in the background groups too: the process that owns
                        // a window is often not the one doing the work (a terminal's program, a
                        // browser's renderers), and left there it would be frozen by this burst
                        // and its I/O not counted as the foreground's (measured: switch-x11).
                        for kid in self.background_descendants(pid) {
                            self.place_now(kid, Class::Foreground);
                        }
                        if let Some(p) = keep_out {
                            if self.members.get(&p).is_some_and(|m| m.class == Class::Background) {
                                self.place_now(p, Class::Interactive);
                            }
                        }
                        // The scan after the reply places the app and the one it replaces. While
                        // the agent manages nobody (no background since it started, or since what
                        // it placed exited: see [`Agent::worth_placing`]) it would place nothing
                        // and only read all of /proc, from cold caches after a drop, on the CPUs
                        // of the launch it has just let go; the periodic scan finds a background
                        // that appears. (Before the first scan nothing is known: scan.)
                        if self.last_scan.is_none() || !self.members.is_empty() {
                            self.rescan_after_reply = Some(keep_out);
                        }
                    }
                    None => self.rescan(keep_out),
                }
                let placed = t0.elapsed();
                let reply = self.foreground_reply(&what, burst);
                // The launcher waits for this much of the agent (its own exec and the socket's
                // round trip aside): the moves before the reply and the pause's start.
                (self.log)(&format!(
                    "foreground: replied in {:.1} ms ({:.1} ms placing)",
                    t0.elapsed().as_secs_f64() * 1000.0,
                    placed.as_secs_f64() * 1000.0
                ));
                if let Some(pid) = pid {
                    // The app's recorded pages are read back from the moment the reply is sent.
                    self.prefetch(pid);
                }
                if pid.is_some() && self.gate.deadline().is_some() {
                    // The background is paused: placing the app (and the scan) can wait for
                    // the pause to end, so none of the agent's work competes with the launch.
                    self.rescan_at_thaw = self.rescan_after_reply.take().or(self.rescan_at_thaw);
                }
                reply
            }
        }
    }

    /// A process exec'd: if it matches a `[rules]` rule, it is the foreground now (with
    /// `rules.burst`, the background pauses as for `fg --burst`).
    pub fn on_exec(&mut self, pid: i32) {
        if self.cfg.rules.is_empty() || self.exclude.contains(&pid) {
            return;
        }
        let Ok(st) = procfs::stat(&self.root, pid) else { return };
        let cgroup = if self.cfg.rules.fg_units.is_empty() {
            String::new()
        } else {
            let naming = self.naming_controller();
            procfs::cgroups(&self.root, pid).ok().and_then(|l| procfs::cgroup_of(&l, naming)).unwrap_or_default()
        };
        if !self.cfg.rules.matches(&st.comm, &cgroup) || !self.rule_seen.insert((pid, st.start_time)) {
            return;
        }
        (self.log)(&format!(
            "rule: {} (pid {pid}) started: foreground{}",
            st.comm,
            if self.cfg.rules.burst { ", burst" } else { "" }
        ));
        self.fg = Foreground::Pids(vec![pid]);
        self.fg_is_launch = true;
        self.rescan(None);
        if self.cfg.rules.burst {
            if let Err(why) = self.freeze() {
                (self.log)(&format!("rule: background not paused: {why}"));
            }
        }
    }

    /// The focused window changed: its process becomes the foreground through the same request
    /// `forefront agent fg PID [--burst]` sends (the policy is not duplicated here).
    pub fn on_focus(&mut self, change: crate::focus::FocusChange) {
        use crate::focus::Decision;
        let now = self.now_ms();
        let outcome = match self.focus.on_focus(change.pid, now) {
            Decision::Same => "already the foreground".to_owned(),
            Decision::Unknown => {
                (self.log)(&format!("focus: window {:#x}: owner unknown ({}): foreground unchanged", change.window, change.via));
                "owner unknown: foreground unchanged".to_owned()
            }
            Decision::Foreground { pid, burst } => {
                let burst = burst && !change.initial;
                let me = Peer { pid: std::process::id() as i32, uid: nix::unistd::geteuid().as_raw(), gid: 0 };
                let r = self.handle(Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst }, me);
                let what = r.message.or(r.error.clone()).unwrap_or_default();
                (self.log)(&format!("focus: window {:#x} of pid {pid} (via {}): {what}", change.window, change.via));
                if !r.ok {
                    self.focus.forget(pid);
                }
                what
            }
        };
        self.focus_seen = Some((change, now, outcome));
    }

    /// `scope`: add a process tree, uid or cgroup to the managed processes (or take it out).
    fn scope(&mut self, pid: Option<i32>, uid: Option<u32>, cgroup: Option<String>, remove: bool, peer: Peer) -> Response {
        fn toggle<T: PartialEq>(v: &mut Vec<T>, x: T, remove: bool) -> bool {
            match (v.iter().position(|y| *y == x), remove) {
                (Some(i), true) => {
                    v.remove(i);
                    true
                }
                (None, false) => {
                    v.push(x);
                    true
                }
                _ => false,
            }
        }
        if !remove {
            let checked = match (pid, &cgroup) {
                (Some(pid), _) => self.check_pid(pid),
                (None, Some(c)) => self.check_group(c),
                _ => Ok(()),
            };
            if let Err(why) = checked {
                return Response::err(why);
            }
        }
        let rt = &mut self.runtime_scope;
        let (what, changed) = if let Some(pid) = pid {
            (format!("pid {pid} and its descendants"), toggle(&mut rt.trees, pid, remove))
        } else if let Some(uid) = uid {
            (format!("uid {uid}"), toggle(&mut rt.uids, uid, remove))
        } else {
            let c = cgroup.unwrap_or_default();
            (format!("cgroup {c}"), toggle(&mut rt.cgroups, c.clone(), remove))
        };
        if !changed {
            return Response::err(if remove {
                format!("{what} is not in the run-time scope (the config's [scope] cannot be removed at run time)")
            } else {
                format!("{what} is already in the run-time scope")
            });
        }
        (self.log)(&format!("scope: {what} {} (from pid {})", if remove { "removed" } else { "added" }, peer.pid));
        self.rescan(Some(peer.pid));
        // `[prefetch]`: an app sent to the background by pid has its working set recorded
        // after the reply, as one that leaves the foreground does: a switch to it is then
        // restored even if the agent never saw it in the foreground.
        if let (Some(pid), false, true) = (pid, remove, self.cfg.prefetch.enabled) {
            if self.members.get(&pid).is_some_and(|m| m.class == Class::Background) {
                self.record_pending = Some(pid);
            }
        }
        Response::ok(format!(
            "{what} {} the managed processes ({} managed now)",
            if remove { "left" } else { "joined" },
            self.members.len()
        ))
    }

    /// A pid a client may name: above 1 (the parser checks that too), not the agent, an
    /// ancestor of it or its watchdog, and an existing process.
    fn check_pid(&self, pid: i32) -> Result<(), String> {
        if pid <= 1 {
            return Err(format!("pid {pid}: a pid must be above 1"));
        }
        if self.exclude.contains(&pid) {
            return Err(format!("pid {pid} is the agent, an ancestor of it or its watchdog: never managed"));
        }
        if procfs::stat(&self.root, pid).is_err() {
            return Err(format!("no process {pid}"));
        }
        Ok(())
    }

    /// A group path a client may name (already checked for form by [`crate::proto::parse`]):
    /// not inside the agent's own group, and a group of the hierarchy that names apps (the one
    /// holding `cpu`), or the original group of a process the agent moved (systemd may have
    /// removed the emptied group since).
    fn check_group(&self, c: &str) -> Result<(), String> {
        crate::proto::check_cgroup_path(c)?;
        let own = format!("/{}", self.cfg.agent.group);
        if c == own || c.starts_with(&format!("{own}/")) {
            return Err(format!("cgroup {c:?} is inside the agent's own group {own}"));
        }
        let Some(naming) = CgroupMounts::read(&self.root).ok().and_then(|m| m.hierarchy(Controller::Cpu)) else {
            return Ok(()); // no hierarchy names apps here: nothing to look the path up in
        };
        let dir = naming.mount.join(c.trim_start_matches('/'));
        let known = self.name_cgroup.values().any(|n| n == c || n.starts_with(&format!("{}/", c.trim_end_matches('/'))));
        if !dir.is_dir() && !known {
            return Err(format!("no cgroup {c:?} in the hierarchy at {}", naming.mount.display()));
        }
        Ok(())
    }

    /// The reply to a foreground change (`fg`, `cell`); with `burst`, the pause starts first.
    fn foreground_reply(&mut self, what: &str, burst: bool) -> Response {
        if !burst {
            return Response::ok(format!("foreground is {what}"));
        }
        match self.freeze() {
            Ok(ms) => Response::ok(format!(
                "foreground is {what}; background paused for at most {} ms (freeze requested in {ms:.1} ms; it takes hold while you launch)",
                self.cfg.pause.max_ms
            )),
            Err(why) => Response::ok(format!("foreground is {what}; background not paused: {why}")),
        }
    }

    /// `pause.nr_requests`: raises the request tags owed by the pause just begun (after the
    /// reply; see [`Agent::freeze`]).
    fn raise_tags(&mut self) {
        if self.tags_pending.is_empty() {
            return;
        }
        let tags = std::mem::take(&mut self.tags_pending);
        let t0 = Instant::now();
        for e in crate::writeback::apply(&tags) {
            (self.log)(&format!("pause: {e}"));
        }
        (self.log)(&format!(
            "pause: nr_requests {} on {} BFQ disk(s) in {:.1} ms",
            self.cfg.pause.nr_requests,
            tags.len(),
            t0.elapsed().as_secs_f64() * 1000.0
        ));
    }

    /// Block I/O bytes of each background process (those whose counters can be read).
    fn background_io(&self) -> BTreeMap<i32, u64> {
        self.members
            .iter()
            .filter(|(_, m)| m.class == Class::Background)
            .filter_map(|(pid, _)| procfs::io(&self.root, *pid).ok().map(|c| (*pid, c.read_bytes + c.write_bytes)))
            .collect()
    }

    /// `pause.io_only`: whether a background process did block I/O since the last sample. A
    /// process not sampled yet, or whose counters cannot be read, counts as one that did (the
    /// pause then acts as without the option).
    fn background_did_io(&self) -> bool {
        let (then, at) = &self.bg_io;
        if at.is_none() {
            return true;
        }
        self.members.iter().filter(|(_, m)| m.class == Class::Background).any(|(pid, _)| {
            match (then.get(pid), procfs::io(&self.root, *pid)) {
                (Some(before), Ok(c)) => c.read_bytes + c.write_bytes != *before,
                _ => true,
            }
        })
    }

    /// Starts a pause; returns how long freezing took (ms) or why there is none.
    fn freeze(&mut self) -> Result<f64, String> {
        let groups = self.freezer_groups();
        if groups.is_empty() {
            return Err("no freezer".into());
        }
        // Nothing in the background: a pause would act on nothing and still hold the machine's
        // write-back settings (and its min_gap would delay the next, useful one).
        if self.gate.deadline().is_none() && !self.members.values().any(|m| m.class == Class::Background) {
            return Err("nothing in the background".into());
        }
        if self.cfg.pause.io_only && self.gate.deadline().is_none() && !self.background_did_io() {
            return Err(format!(
                "the background did no block I/O in the last {} ms or more (pause.io_only)",
                self.cfg.agent.rescan_ms
            ));
        }
        let now = self.now_ms();
        let already = self.gate.deadline().is_some();
        let deadline = self.gate.begin(now).map_err(|r| match r {
            Refusal::Disabled => "pause disabled in the config".to_owned(),
            Refusal::TooSoon { retry_in_ms } => format!("too soon after the last pause (retry in {retry_in_ms} ms)"),
        })?;
        if already {
            return Ok(0.0);
        }
        self.keep_watchdog();
        let t0 = Instant::now();
        let held = if self.cfg.pause.hold_writeback {
            crate::writeback::plan_now(&self.root).unwrap_or_else(|e| {
                (self.log)(&format!("write-back not held: {e}"));
                vec![]
            })
        } else {
            vec![]
        };
        // More request tags last: applied after the write-back hold, released before it.
        let mut held = held;
        held.extend(crate::iosched::plan_nr_requests(&self.root, self.cfg.pause.nr_requests));
        // BFQ's strict guarantees with them (a scheduler attribute: no queue drain, so before
        // the reply like the write-back thresholds).
        held.extend(crate::iosched::plan_strict_guarantees(&self.root, self.cfg.pause.strict_guarantees));
        let mut entries: Vec<Entry> = groups.iter().map(|g| Entry::Frozen { dir: g.dir.clone(), version: g.version }).collect();
        entries.extend(held.iter().map(|h| Entry::Knob { path: h.path.clone(), original: h.original.clone() }));
        if let Err(e) = self.journal.record(entries) {
            self.gate.end(now);
            return Err(e.to_string());
        }
        for h in held.iter().rev() {
            // In release order: the watchdog restores them as listed.
            self.tell_watchdog(&format!("K {} {}", h.path.display(), h.original));
        }
        self.tell_watchdog(&format!("F {}", deadline - now));
        for g in &groups {
            if let Err(e) = g.set_knob(Knob::Freeze, 1) {
                (self.log)(&e.to_string());
                self.held = held;
                self.thaw();
                return Err(e.to_string());
            }
        }
        // After the freeze requests: the launch waits for those, not for these. The request
        // tags wait for the reply: a write to `nr_requests` waits for the queue to drain its
        // requests in flight (27–79 ms measured under the S suite's 5 + 5), which the launcher
        // paid when it came first ([`Agent::raise_tags`]).
        let (tags, vm): (Vec<_>, Vec<_>) = held.iter().cloned().partition(|h| h.set.ends_with("queue/nr_requests"));
        for e in crate::writeback::apply(&vm) {
            (self.log)(&format!("write-back: {e}"));
        }
        self.tags_pending = tags;
        self.pause_cpu(true);
        self.held = held;
        // The kernel stops the tasks asynchronously (v1 FREEZING, v2 `frozen 0` in
        // cgroup.events). The reply does not wait for it: the launch it unblocks runs while the
        // background freezes, not after ([`Agent::after_reply`] waits, off the launcher's path).
        self.settling = Some((t0, groups));
        if self.cfg.pause.idle_end_ms > 0 {
            self.fg_io = Some((self.fg_io_bytes().unwrap_or(0), now));
        }
        Ok(t0.elapsed().as_secs_f64() * 1000.0)
    }

    /// `[prefetch]`: starts reading back `pid`'s working set, if one was recorded when it last
    /// left the foreground (the same process: pid and start time).
    fn prefetch(&mut self, pid: i32) {
        if !self.cfg.prefetch.enabled || self.working_sets.is_empty() {
            return;
        }
        let Ok(st) = procfs::stat(&self.root, pid) else { return };
        let Some(i) = self.working_sets.iter().position(|(k, _)| *k == (pid, st.start_time)) else { return };
        self.restore_pending = self.working_sets.remove(i).map(|(_, ws)| (pid, ws));
    }

    /// `[prefetch]`: starts the restore [`Agent::prefetch`] owes, after the reply: its thread's
    /// start and its first submissions would otherwise take CPU time from the reply's path.
    fn start_restore(&mut self) {
        if let Some((pid, ws)) = self.restore_pending.take() {
            // `prefetch.in_fg_group`: the foreground's own blkio group (v1, `io.fg_group`).
            let join = (self.cfg.prefetch.in_fg_group && self.cfg.io.fg_group.applies(false))
                .then(|| self.placements.iter().find(|p| p.has(Controller::Io) && p.version == Version::V1))
                .flatten()
                .map(|p| p.fg.dir.join("tasks"));
            let threads = self.cfg.prefetch.threads;
            if let Err(e) = crate::prefetch::spawn_restore(self.root.clone(), pid, ws, threads, join, self.log) {
                (self.log)(&format!("prefetch: pid {pid}: no thread: {e}"));
            }
        }
    }

    /// `[prefetch]`: records the working set of the app that has just left the foreground (or
    /// been scoped into the background by pid).
    fn record_working_set(&mut self, pid: i32) {
        if self.exclude.contains(&pid) {
            return;
        }
        let Ok(st) = procfs::stat(&self.root, pid) else { return };
        let t0 = Instant::now();
        let limits =
            crate::prefetch::Limits { max_bytes: self.cfg.prefetch.max_mb << 20, max_files: self.cfg.prefetch.max_files };
        let ws = crate::prefetch::record(&self.root, &crate::prefetch::app_pids(&self.root, pid), limits);
        (self.log)(&format!(
            "prefetch: pid {pid} ({}) went to the background: {:.1} MiB cached in {} range(s) of {} of {} file(s), recorded in {:.1} ms",
            st.comm,
            ws.bytes() as f64 / (1 << 20) as f64,
            ws.ranges(),
            ws.files.len(),
            ws.files_seen,
            t0.elapsed().as_secs_f64() * 1000.0
        ));
        self.working_sets.retain(|(k, _)| *k != (pid, st.start_time));
        if ws.files.is_empty() {
            return;
        }
        if self.working_sets.len() >= MAX_WORKING_SETS {
            self.working_sets.pop_front();
        }
        self.working_sets.push_back(((pid, st.start_time), ws));
    }

    /// Work the last reply did not wait for: wait (at most 100 ms) until a pause that was just
    /// requested has taken hold, and log how long freezing took. It polls once a millisecond:
    /// this runs while the launch does, on the same CPUs, so it must cost the launch nothing
    /// measurable (every 200 µs it was up to 500 reads of the freezer state per pause, and the
    /// v1 read walks the group's tasks).
    pub fn after_reply(&mut self) {
        self.start_restore();
        self.raise_tags();
        for (pid, start_time, class) in std::mem::take(&mut self.finish_moves) {
            if let Err(e) = self.place(pid, start_time, class) {
                if !e_is_gone(&e) {
                    (self.log)(&format!("place pid {pid} as {class:?}: {e}"));
                }
            }
        }
        if let Some(peer) = self.rescan_after_reply.take() {
            self.rescan(peer);
        }
        if let Some(pid) = self.record_pending.take() {
            self.record_working_set(pid);
        }
        let Some((t0, groups)) = self.settling.take() else { return };
        let mut settled = false;
        while t0.elapsed() < Duration::from_millis(100) {
            settled = groups.iter().all(|g| g.freeze_settled().unwrap_or(true));
            if settled {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        if settled {
            (self.log)(&format!("background frozen {ms:.1} ms after the request"));
        } else {
            // Tasks in uninterruptible sleep (a read in flight, a dirty-page throttle) stop
            // only when that wait ends; the pause holds meanwhile.
            (self.log)(&format!("background not yet all frozen {ms:.1} ms after the request"));
        }
    }

    /// `cpu.pause_only`: the background's low CPU weight and idle class for a pause (`on`), or
    /// its between-pauses weight after one. Our own groups: nothing to journal (they are
    /// removed on restore).
    fn pause_cpu(&mut self, on: bool) {
        let cpu = self.cfg.cpu.clone();
        if !cpu.enabled || !cpu.pause_only {
            return;
        }
        for g in self.placements.iter().filter(|p| p.has(Controller::Cpu)).map(|p| p.bg.clone()) {
            let idle = cpu.bg_idle && g.knob_path(Knob::CpuIdle).is_some();
            let writes: Vec<(Knob, u64)> = match (on, idle) {
                (true, true) => vec![(Knob::CpuWeight, cpu.bg_shares), (Knob::CpuIdle, 1)],
                (true, false) => vec![(Knob::CpuWeight, cpu.bg_shares)],
                // cpu.idle off first: while it is on, the kernel keeps the group's minimum weight.
                (false, true) => vec![(Knob::CpuIdle, 0), (Knob::CpuWeight, self.cpu_between)],
                (false, false) => vec![(Knob::CpuWeight, self.cpu_between)],
            };
            for (k, v) in writes {
                if let Err(e) = g.set_knob(k, v) {
                    (self.log)(&format!("cpu: {e}"));
                }
            }
        }
    }

    /// `cpu.pause_only`, between pauses: the background groups weigh [`SHARES_PER_PROCESS`] per
    /// background process running or in I/O wait (`busy`, at least one).
    fn update_cpu_between(&mut self, busy: u64) {
        if !self.cfg.cpu.enabled || !self.cfg.cpu.pause_only {
            return;
        }
        let shares = (busy.max(1) * SHARES_PER_PROCESS).min(MAX_SHARES);
        if shares == self.cpu_between {
            return;
        }
        self.cpu_between = shares;
        if self.gate.deadline().is_some() {
            return; // paused: the thaw writes it
        }
        for g in self.placements.iter().filter(|p| p.has(Controller::Cpu)).map(|p| p.bg.clone()) {
            if let Err(e) = g.set_knob(Knob::CpuWeight, shares) {
                (self.log)(&format!("cpu: {e}"));
            }
        }
    }

    /// Ends the pause in progress; returns whether there was one.
    fn thaw(&mut self) -> bool {
        self.fg_io = None;
        self.tags_pending.clear();
        let was = self.gate.end(self.now_ms());
        if !was {
            return false;
        }
        // The background's CPU weight between pauses first: while its group is in the idle
        // class the kernel refuses a weight, which the scan below may write.
        self.pause_cpu(false);
        // The burst's placement, owed since the pause began: the app joins its groups before
        // the background runs again.
        if let Some(peer) = self.rescan_at_thaw.take() {
            self.rescan(peer);
        }
        for g in self.freezer_groups() {
            if let Err(e) = g.set_knob(Knob::Freeze, 0) {
                (self.log)(&e.to_string());
            }
        }
        let held = std::mem::take(&mut self.held);
        for e in crate::writeback::release(&held) {
            (self.log)(&format!("write-back: {e}"));
        }
        self.tell_watchdog("T");
        let _ = self.journal.forget(|e| match e {
            Entry::Frozen { .. } => false,
            // The pause's own entries: a setting the agent holds for its lifetime on the same
            // file (`io.nr_requests` under `pause.nr_requests`) keeps its entry and original.
            Entry::Knob { path, original } => !held.iter().any(|h| &h.path == path && &h.original == original),
            _ => true,
        });
        true
    }

    pub fn status(&self) -> serde_json::Value {
        let mut classes: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
        for (pid, m) in &self.members {
            let k = match m.class {
                Class::Foreground => "foreground",
                Class::Interactive => "interactive",
                Class::Background => "background",
            };
            classes.entry(k).or_default().push(json!({"pid": pid, "comm": m.comm}));
        }
        let groups: Vec<serde_json::Value> = self
            .placements
            .iter()
            .map(|p| json!({"controllers": p.controllers, "version": p.version, "fg": p.fg.dir, "bg": p.bg.dir}))
            .collect();
        json!({
            "pid": std::process::id(),
            "foreground": self.fg,
            "runtime_scope": {"trees": self.runtime_scope.trees, "uids": self.runtime_scope.uids, "cgroups": self.runtime_scope.cgroups},
            "paused": self.gate.deadline().map(|d| json!({
                "ms_left": d.saturating_sub(self.now_ms()),
                "writeback_held": self.held.iter().map(|h| json!({"path": h.set, "value": h.value})).collect::<Vec<_>>(),
            })),
            "classes": classes,
            "groups": groups,
            "actions": self.notes,
            "knobs": self.applied.iter().map(|(p, v)| json!({"path": p, "value": v})).collect::<Vec<_>>(),
            "changes": self.journal.entries(),
            "watchdog_pid": self.watchdog.as_ref().map(|w| w.child.id()),
            "focus": self.focus_seen.as_ref().map(|(c, at, outcome)| json!({
                "window": c.window, "pid": c.pid, "via": c.via, "ms_ago": self.now_ms().saturating_sub(*at), "outcome": outcome,
            })),
        })
    }

    /// Restores everything and stops the watchdog. Safe to call more than once.
    pub fn shutdown(&mut self) {
        self.gate.end(self.now_ms());
        self.held.clear(); // journaled: restored below
        let journal = std::mem::replace(&mut self.journal, Journal::detached(&self.cfg.agent.state, &self.root));
        let problems = journal.restore();
        for p in &problems {
            (self.log)(&format!("restore: {p}"));
        }
        self.members.clear();
        if let Some(mut w) = self.watchdog.take() {
            // `X`, then EOF: the watchdog thaws (a no-op now) and exits without restoring (the
            // journal, if a problem kept it, is this agent's to report, not to redo).
            let _ = std::io::Write::write_all(&mut w.input, b"X\n");
            drop(w.input);
            let _ = w.child.wait();
        }
        (self.log)(if problems.is_empty() { "restored all original values" } else { "restore finished with problems" });
    }

    /// Stops as if killed: nothing restored, the journal left as it is, the lock dropped by
    /// the kernel.
    #[cfg(test)]
    fn die(self) {
        let Agent { _lock, journal, .. } = self;
        std::mem::forget(journal);
        _lock.abandon();
    }

    pub fn placements(&self) -> &[Placement] {
        &self.placements
    }
}

fn e_is_gone(e: &AgentError) -> bool {
    matches!(e, AgentError::Sysfs(s) if s.is_not_found()) || matches!(e, AgentError::Sysfs(forefront_sysfs::Error::Read { .. }))
}

/// Whether a journal Ioprio entry is about a thread of `pid` (threads list their tgid in
/// /proc/TID/status; reading /proc/PID/task is simpler and as exact).
fn is_thread_of(root: &Path, e: &Entry, pid: i32) -> bool {
    match e {
        Entry::Ioprio { tid, .. } => *tid == pid || root.join(format!("proc/{pid}/task/{tid}")).exists(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AgentSection, FgGroup, ScopeSection};

    /// A fake cgroup v2 system: two apps of uid 1000 and a system daemon; the agent's groups
    /// exist already (a fake tree has no kernel to create knob files), so every knob it sets
    /// must be journaled and restored.
    fn fake_v2() -> (tempfile::TempDir, Config) {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let cg = r.join("sys/fs/cgroup");
        std::fs::create_dir_all(&cg).unwrap();
        std::fs::write(cg.join("cgroup.controllers"), "cpuset cpu io memory pids").unwrap();
        std::fs::write(cg.join("cgroup.subtree_control"), "memory pids").unwrap();
        for g in ["forefront", "forefront/fg", "forefront/bg"] {
            let d = cg.join(g);
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [
                ("memory.low", "0"),
                ("cpu.weight", "100"),
                ("cpu.idle", "0"),
                ("io.bfq.weight", "default 100"),
                ("io.prio.class", "no-change"),
                ("io.latency", ""),
                ("cgroup.freeze", "0"),
                ("cgroup.procs", ""),
                ("cgroup.subtree_control", ""),
            ] {
                std::fs::write(d.join(f), v).unwrap();
            }
        }
        for g in ["user.slice/app-camera", "user.slice/app-updater", "system.slice/sshd", "init.scope"] {
            std::fs::create_dir_all(cg.join(g)).unwrap();
        }
        crate::writeback::fake_vm(r, 1_000_000);
        std::fs::create_dir_all(r.join("proc/self")).unwrap();
        std::fs::write(r.join("proc/self/mountinfo"), "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n").unwrap();
        // (the state letters: camera-enc in I/O wait and updater running count as busy for
        // `cpu.pause_only`'s between-pauses weight)
        for (pid, ppid, uid, comm, cgroup, state) in [
            (1, 0, 0, "init", "/init.scope", 'S'),
            (100, 1, 1000, "camera", "/user.slice/app-camera", 'S'),
            (101, 100, 1000, "camera-enc", "/user.slice/app-camera", 'D'),
            (200, 1, 1000, "updater", "/user.slice/app-updater", 'R'),
            (300, 1, 0, "sshd", "/system.slice/sshd", 'R'),
        ] {
            let d = r.join(format!("proc/{pid}"));
            std::fs::create_dir_all(d.join(format!("task/{pid}"))).unwrap();
            std::fs::write(
                d.join("stat"),
                format!("{pid} ({comm}) {state} {ppid} 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {} 0 0\n", 1000 + pid),
            )
            .unwrap();
            std::fs::write(d.join("status"), format!("Uid:\t{uid}\t{uid}\t{uid}\t{uid}\n")).unwrap();
            std::fs::write(d.join("cgroup"), format!("0::{cgroup}\n")).unwrap();
        }
        let cfg = Config {
            agent: AgentSection {
                root: r.into(),
                state: r.join("run/state.json"),
                socket: r.join("run/s"),
                ..Default::default()
            },
            scope: ScopeSection { cgroups: vec!["/user.slice".into()], ..Default::default() },
            // the CPU side is off by default; these tests check its knobs too
            cpu: crate::config::CpuSection { enabled: true, ..Default::default() },
            ..Default::default()
        };
        (t, cfg)
    }

    fn read(t: &tempfile::TempDir, p: &str) -> String {
        std::fs::read_to_string(t.path().join("sys/fs/cgroup").join(p)).unwrap()
    }

    fn peer() -> Peer {
        Peer { pid: 999_999, uid: 0, gid: 0 }
    }

    /// The foreground has just gone quiet: the pause (idle_end_ms = 60) ends at a tick 55 ms or
    /// more later, well before max_ms, and the background is thawed.
    fn the_pause_ends_idle_end_ms_later(a: &mut Agent, t: &tempfile::TempDir) {
        let stopped = Instant::now();
        while a.gate.deadline().is_some() {
            assert!(stopped.elapsed() < Duration::from_millis(1000), "the pause did not end");
            std::thread::sleep(Duration::from_millis(5));
            a.tick();
        }
        assert!(stopped.elapsed() >= Duration::from_millis(55), "{:?}", stopped.elapsed());
        assert_eq!(read(t, "forefront/bg/cgroup.freeze"), "0");
        a.shutdown();
    }

    #[test]
    fn a_pause_ends_when_the_foreground_stops_doing_io() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.idle_end_ms = 60;
        let io = |bytes: u64| {
            for pid in [100, 101] {
                std::fs::write(
                    t.path().join(format!("proc/{pid}/io")),
                    format!("rchar: {bytes}\nwchar: 0\nread_bytes: {bytes}\nwrite_bytes: 0\n"),
                )
                .unwrap();
            }
        };
        io(0);
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        let r = a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        assert!(r.ok && r.message.unwrap().contains("paused"));
        assert!(a.next_wake() <= Duration::from_millis(20), "the loop watches the foreground's I/O");
        // The launch keeps reading: the pause holds past idle_end_ms.
        for k in 1..=5 {
            std::thread::sleep(Duration::from_millis(25));
            io(k * 4096);
            a.tick();
            assert!(a.gate.deadline().is_some(), "paused while the foreground reads ({k})");
        }
        // Then it stops: the pause ends idle_end_ms later, long before max_ms.
        the_pause_ends_idle_end_ms_later(&mut a, &t);
    }

    #[test]
    fn a_pause_holds_while_a_foreground_thread_waits_for_io() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.idle_end_ms = 60;
        for pid in [100, 101] {
            std::fs::write(t.path().join(format!("proc/{pid}/io")), "read_bytes: 4096\nwrite_bytes: 0\n").unwrap();
        }
        // The app's reader thread: blocked in a read (D), then in libaio's io_getevents (S with
        // that system call), then done waiting (S in clock_nanosleep).
        let thread = |state: char, nr: libc::c_long| {
            let d = t.path().join("proc/100/task/100");
            std::fs::write(d.join("stat"), format!("100 (camera) {state} 1 1 1 0 -1 0\n")).unwrap();
            std::fs::write(d.join("syscall"), format!("{nr} 0x0 0x0 0x0 0x0 0x0 0x0 0x7ff0 0x7ef0\n")).unwrap();
        };
        thread('D', libc::SYS_pread64);
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        let r = a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        assert!(r.ok && r.message.unwrap().contains("paused"));
        // No new bytes for 150 ms, but the read is stalled, not over: the pause holds.
        for (k, (state, nr)) in [('D', libc::SYS_pread64), ('S', libc::SYS_io_getevents)].into_iter().enumerate() {
            thread(state, nr);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(150) {
                std::thread::sleep(Duration::from_millis(10));
                a.tick();
                assert!(a.gate.deadline().is_some(), "paused while the foreground waits for I/O ({k})");
            }
        }
        // It stops waiting: the pause ends idle_end_ms later.
        thread('S', libc::SYS_clock_nanosleep);
        the_pause_ends_idle_end_ms_later(&mut a, &t);
    }

    #[test]
    fn a_pause_ends_at_once_when_the_foreground_exits() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.idle_end_ms = 10_000;
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        let r = a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        assert!(r.ok && r.message.unwrap().contains("paused"));
        a.tick();
        assert!(a.gate.deadline().is_some(), "paused while the foreground lives");
        // The start-up is over: the app (and its child) exit; a zombie counts as gone.
        for (pid, ppid) in [(100, 1), (101, 100)] {
            std::fs::write(
                t.path().join(format!("proc/{pid}/stat")),
                format!("{pid} (camera) Z {ppid} 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {} 0 0\n", 1000 + pid),
            )
            .unwrap();
        }
        a.tick();
        assert!(a.gate.deadline().is_none(), "the pause ended at the first tick after the exit, not idle_end_ms later");
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0");
        a.shutdown();
    }

    #[test]
    fn a_rule_fires_once_for_a_new_start_found_by_a_scan() {
        let (t, mut cfg) = fake_v2();
        cfg.agent.rescan_ms = 10;
        cfg.rules.fg_commands = vec!["camera".into()];
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        a.tick();
        assert_eq!(a.fg, Foreground::None, "the camera running at start does not fire");
        // A new camera process appears (no exec notification in a fake tree): the next scan fires.
        let d = t.path().join("proc/400");
        std::fs::create_dir_all(d.join("task/400")).unwrap();
        std::fs::write(d.join("stat"), "400 (camera) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9999 0 0\n").unwrap();
        std::fs::write(d.join("status"), "Uid:\t1000\t1000\t1000\t1000\n").unwrap();
        std::fs::write(d.join("cgroup"), "0::/user.slice/app-camera\n").unwrap();
        std::thread::sleep(Duration::from_millis(15));
        a.tick();
        assert_eq!(a.fg, Foreground::Pids(vec![400]));
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1", "rules.burst pauses the background");
        // It does not fire again for the same process.
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: false }, peer());
        std::thread::sleep(Duration::from_millis(15));
        a.tick();
        assert_eq!(a.fg, Foreground::Pids(vec![100]));
        a.shutdown();
    }

    #[test]
    fn focus_changes_name_the_foreground_through_the_fg_request() {
        use crate::focus::FocusChange;
        let (t, mut cfg) = fake_v2();
        cfg.focus.burst_idle_ms = 60_000;
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        let focus = |pid: Option<i32>| FocusChange { window: 0x40_0001, pid, via: "_NET_WM_PID".into(), initial: false };
        // The focus found at connection names the foreground but does not burst.
        a.on_focus(FocusChange { initial: true, ..focus(Some(200)) });
        a.after_reply();
        assert_eq!(a.fg, Foreground::Pids(vec![200]));
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0", "no burst for the focus found at start");
        // First focus of the camera: never focused, so a burst; its tree is the foreground.
        a.on_focus(focus(Some(100)));
        a.after_reply();
        assert_eq!(a.fg, Foreground::Pids(vec![100]));
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1", "a switch to a cold app bursts");
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        assert_eq!(a.members[&101].class, Class::Foreground, "its child follows");
        assert_eq!(a.members[&200].class, Class::Background);
        // An unknown owner keeps the foreground; a gone process is refused and forgotten.
        a.on_focus(focus(None));
        assert_eq!(a.fg, Foreground::Pids(vec![100]));
        assert_eq!(a.status()["focus"]["outcome"], "owner unknown: foreground unchanged");
        a.on_focus(focus(Some(4242)));
        assert_eq!(a.fg, Foreground::Pids(vec![100]));
        assert_eq!(a.status()["focus"]["outcome"], "no process 4242");
        // To the updater (idle since it lost the focus at start, 0 s ago: no burst; and the pause
        // gate's min_gap_ms would refuse one this soon): the foreground moves, and back.
        a.on_focus(focus(Some(200)));
        a.after_reply();
        assert_eq!(a.fg, Foreground::Pids(vec![200]));
        assert_eq!((a.members[&200].class, a.members[&100].class), (Class::Foreground, Class::Background));
        assert_eq!(a.status()["focus"]["outcome"], "foreground is pid 200", "{}", a.status()["focus"]);
        a.on_focus(focus(Some(100)));
        a.after_reply();
        assert_eq!(a.members[&100].class, Class::Foreground);
        assert_eq!(a.status()["focus"]["outcome"], "foreground is pid 100", "idle 0 s < 60 s: no burst");
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0");
        a.shutdown();
    }

    #[test]
    fn a_second_agent_on_the_same_journal_is_refused_and_changes_nothing() {
        let (t, cfg) = fake_v2();
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert!(a.handle(Request::Fg { pid: Some(200), uid: None, cgroup: None, burst: true }, peer()).ok);
        a.after_reply();
        let journal = std::fs::read_to_string(&cfg.agent.state).unwrap();
        assert!(journal.contains("frozen"), "{journal}");
        let err = Agent::start(cfg.clone(), None, |_| {}).err().expect("a second agent on a live journal must be refused");
        let msg = err.to_string();
        assert!(msg.contains("in use by a running agent") && msg.contains(&format!("agent pid {}", std::process::id())), "{msg}");
        // The first agent's journal and pause are untouched by the refused start.
        assert_eq!(std::fs::read_to_string(&cfg.agent.state).unwrap(), journal);
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1");
        a.shutdown();
        drop(a);
        assert!(!JournalLock::path_for(&cfg.agent.state).exists(), "the lock file goes with its agent");
        // Its holder gone, the next agent starts.
        let mut b = Agent::start(cfg, None, |_| {}).unwrap();
        b.shutdown();
    }

    #[test]
    fn moves_are_expedited_only_from_an_rcu_expedited_of_0_and_it_is_put_back() {
        for (original, journaled) in [("0", true), ("1", false)] {
            let (t, mut cfg) = fake_v2();
            cfg.agent.expedite_moves = true;
            let knob = t.path().join(crate::state::RCU_EXPEDITED);
            std::fs::create_dir_all(knob.parent().unwrap()).unwrap();
            std::fs::write(&knob, format!("{original}\n")).unwrap();
            let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
            assert_eq!(a.members[&100].class, Class::Background, "the start placed the apps");
            assert_eq!(std::fs::read_to_string(&knob).unwrap().trim(), original, "put back after the moves");
            let recorded = a.journal.entries().iter().any(|e| matches!(e, Entry::Knob { path, .. } if *path == knob));
            assert_eq!(recorded, journaled, "original {original}");
            a.shutdown();
            drop(a);
            assert_eq!(std::fs::read_to_string(&knob).unwrap().trim(), original);
            // Off: never touched, never journaled.
            cfg.agent.expedite_moves = false;
            std::fs::write(&knob, "0").unwrap();
            let mut b = Agent::start(cfg, None, |_| {}).unwrap();
            assert!(!b.journal.entries().iter().any(|e| matches!(e, Entry::Knob { path, .. } if *path == knob)));
            b.shutdown();
        }
    }

    #[test]
    fn with_nothing_in_the_background_the_foreground_is_not_moved() {
        let (t, mut cfg) = fake_v2();
        cfg.scope.cgroups.clear();
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        let in_fg = |t: &tempfile::TempDir| read(t, "forefront/fg/cgroup.procs").lines().any(|l| l == "100");
        a.rescan(None); // (what the loop's first tick does: the agent knows its processes)
        for burst in [false, true] {
            let scanned = a.last_scan;
            let r = a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst }, Peer { pid: 100, ..peer() });
            assert!(r.ok, "{r:?}");
            a.after_reply();
            // nor is /proc read again beside the launch: the periodic scan is enough
            assert_eq!(a.last_scan, scanned, "scanned after the reply with nothing in the background (burst {burst})");
            a.rescan(None);
            assert!(!in_fg(&t), "moved with nothing in the background (burst {burst})");
            assert!(a.members.is_empty(), "{:?}", a.members);
        }
        assert!(a.gate.deadline().is_none(), "nothing to pause");
        // A background appears: the same scan places the foreground too.
        let r = a.handle(
            Request::Scope { pid: None, uid: None, cgroup: Some("/user.slice/app-updater".into()), remove: false },
            peer(),
        );
        assert!(r.ok, "{r:?}");
        assert!(in_fg(&t), "the foreground is placed once there is a background");
        assert_eq!(
            (a.members[&100].class, a.members[&101].class, a.members[&200].class),
            (Class::Foreground, Class::Foreground, Class::Background)
        );
        // The background leaves again: what was placed stays placed (the foreground keeps its
        // group; the updater is released).
        assert!(
            a.handle(
                Request::Scope { pid: None, uid: None, cgroup: Some("/user.slice/app-updater".into()), remove: true },
                peer()
            )
            .ok
        );
        assert!(in_fg(&t));
        assert!(!a.members.contains_key(&200));
        a.shutdown();
    }

    #[test]
    fn a_burst_moves_the_named_apps_background_children_before_the_reply() {
        // A window's owner (a terminal, a browser) and its child doing the work, both background
        // when the switch to them comes: the child must not stay in the groups the burst freezes.
        let (t, cfg) = fake_v2();
        std::fs::write(t.path().join("proc/100/task/100/children"), "101 ").unwrap();
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        // (the foreground first outside the scope: every app in it is background)
        a.handle(Request::Fg { pid: Some(300), uid: None, cgroup: None, burst: false }, peer());
        a.after_reply();
        assert_eq!((a.members[&100].class, a.members[&101].class), (Class::Background, Class::Background));
        let r = a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        assert!(r.ok && r.message.as_deref().unwrap_or_default().contains("background paused for"), "{r:?}");
        // before after_reply (the scan after the reply waits for the pause's end)
        assert_eq!(a.members[&100].class, Class::Foreground);
        assert_eq!(a.members[&101].class, Class::Foreground, "the child was left in the frozen groups");
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1");
        a.shutdown();
    }

    #[test]
    fn scope_grows_and_shrinks_at_run_time() {
        let (t, cfg) = fake_v2();
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        let managed = |a: &Agent| a.members.keys().copied().collect::<Vec<_>>();
        assert_eq!(managed(&a), [100, 101, 200], "sshd is outside the config's scope");
        let scope = |pid, remove| Request::Scope { pid: Some(pid), uid: None, cgroup: None, remove };
        let r = a.handle(scope(300, false), peer());
        assert!(r.ok && r.message.as_deref().unwrap().contains("joined"), "{r:?}");
        assert_eq!(managed(&a), [100, 101, 200, 300]);
        assert_eq!(a.members[&300].class, Class::Background);
        assert!(read(&t, "forefront/bg/cgroup.procs").lines().any(|l| l == "300"));
        assert_eq!(a.status()["runtime_scope"]["trees"], json!([300]));
        // Twice, an unknown process, the agent itself, removing what is not there: refused.
        assert!(a.handle(scope(300, false), peer()).error.unwrap().contains("already"));
        assert!(a.handle(scope(4242, false), peer()).error.unwrap().contains("no process 4242"));
        let me = std::process::id() as i32;
        assert!(a.handle(scope(me, false), peer()).error.unwrap().contains("never managed"));
        assert!(a.handle(scope(1, true), peer()).error.unwrap().contains("not in the run-time scope"));
        // By uid: root's processes (init is excluded as the agent's ancestor only in a real
        // tree; here pid 1 is an ordinary process of uid 0).
        assert!(a.handle(Request::Scope { pid: None, uid: Some(0), cgroup: None, remove: false }, peer()).ok);
        assert!(managed(&a).contains(&1));
        assert!(a.handle(Request::Scope { pid: None, uid: Some(0), cgroup: None, remove: true }, peer()).ok);
        // Out again: released.
        assert!(a.handle(scope(300, true), peer()).ok);
        assert_eq!(managed(&a), [100, 101, 200]);
        a.shutdown();
    }

    #[test]
    fn v2_knobs_classes_burst_and_restore_on_a_fake_tree() {
        let (t, mut cfg) = fake_v2();
        cfg.cpu.pause_only = true;
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert_eq!(a.placements().len(), 1, "v2: one hierarchy for all controllers");
        // cpu.pause_only: between pauses the background weighs one process's weight per busy
        // background process (camera-enc and updater: 2 × 1024 shares → weight 200).
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "200");
        assert_eq!(read(&t, "forefront/fg/cpu.weight"), "100");
        assert_eq!(read(&t, "forefront/bg/cpu.idle"), "0");
        assert_eq!(read(&t, "forefront/bg/io.bfq.weight"), "10");
        assert_eq!(read(&t, "forefront/fg/io.bfq.weight"), "1000");
        assert_eq!(read(&t, "cgroup.subtree_control"), "+cpu +io");
        // With no foreground yet, both apps in scope are background; sshd and init are not.
        assert_eq!(read(&t, "forefront/bg/cgroup.procs"), "100\n101\n200\n");

        let r =
            a.handle(Request::Fg { pid: None, uid: None, cgroup: Some("/user.slice/app-camera".into()), burst: true }, peer());
        assert!(r.ok, "{r:?}");
        assert!(r.message.unwrap().contains("paused for at most"));
        assert_eq!(read(&t, "forefront/fg/cgroup.procs"), "100\n101\n", "named by its original group");
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1");
        // During the pause: the low weight and the idle class.
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "10", "110 shares → weight 10");
        assert_eq!(read(&t, "forefront/bg/cpu.idle"), "1");
        let st = a.status();
        assert_eq!(st["classes"]["foreground"].as_array().unwrap().len(), 2);
        assert_eq!(st["classes"]["background"][0]["comm"], "updater");
        assert!(st["paused"]["ms_left"].as_u64().unwrap() <= cfg.pause.max_ms);

        // A second burst right after the first one ends is refused (min_gap_ms).
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0");
        // After it: one busy background process left (updater; camera-enc is foreground now).
        assert_eq!(read(&t, "forefront/bg/cpu.idle"), "0");
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "100");
        let r =
            a.handle(Request::Fg { pid: None, uid: None, cgroup: Some("/user.slice/app-camera".into()), burst: true }, peer());
        assert!(r.message.unwrap().contains("too soon"));
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0");
        // Naming the last background process leaves nothing to pause: no pause, nothing held.
        let r = a.handle(Request::Fg { pid: Some(200), uid: None, cgroup: None, burst: true }, peer());
        assert!(r.message.unwrap().contains("nothing in the background"));
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0");

        let bad = a.handle(Request::Fg { pid: Some(4242), uid: None, cgroup: None, burst: false }, peer());
        assert_eq!(bad.error.as_deref(), Some("no process 4242"));

        a.shutdown();
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "100");
        assert_eq!(read(&t, "forefront/bg/cpu.idle"), "0");
        assert_eq!(read(&t, "forefront/bg/io.bfq.weight"), "default 100");
        assert_eq!(read(&t, "cgroup.subtree_control"), "-cpu -io");
        assert!(!cfg.agent.state.exists());
    }

    #[test]
    fn without_pause_only_the_low_cpu_weight_and_idle_class_hold_all_the_time() {
        let (t, mut cfg) = fake_v2();
        cfg.cpu.pause_only = false;
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "10", "110 shares → weight 10");
        assert_eq!(read(&t, "forefront/bg/cpu.idle"), "1");
        let r =
            a.handle(Request::Fg { pid: None, uid: None, cgroup: Some("/user.slice/app-camera".into()), burst: true }, peer());
        assert!(r.ok, "{r:?}");
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "10");
        assert_eq!(read(&t, "forefront/bg/cpu.idle"), "1");
        a.shutdown();
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "100");
        assert_eq!(read(&t, "forefront/bg/cpu.idle"), "0");
    }

    #[test]
    fn requests_naming_the_agent_or_what_is_not_there_are_refused() {
        let (t, cfg) = fake_v2();
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        let me = std::process::id() as i32;
        let fg =
            |pid: Option<i32>, cgroup: Option<&str>| Request::Fg { pid, uid: None, cgroup: cgroup.map(Into::into), burst: true };
        for (req, want) in [
            (fg(Some(me), None), "never managed"),
            (fg(Some(1), None), "above 1"),
            (fg(Some(4242), None), "no process 4242"),
            (fg(None, Some("/user.slice/app-nope")), "no cgroup \"/user.slice/app-nope\""),
            (fg(None, Some("/forefront/bg")), "inside the agent's own group"),
            (fg(None, Some("/a\nb")), "control character"),
            (Request::Scope { pid: None, uid: None, cgroup: Some("/nope".into()), remove: false }, "no cgroup"),
        ] {
            let r = a.handle(req.clone(), peer());
            assert!(r.error.as_deref().is_some_and(|e| e.contains(want)), "{req:?}: {r:?}");
        }
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0", "no refused burst paused anything");
        assert_eq!(a.fg, Foreground::None);
        assert!(a.handle(fg(None, Some("/user.slice/app-camera")), peer()).ok);
        a.shutdown();
    }

    #[test]
    fn without_bfq_the_idle_class_and_a_latency_target_are_set_and_restored() {
        let (t, mut cfg) = fake_v2();
        for (name, sched, dev) in [("nvme0n1", "[none] mq-deadline", "259:0"), ("sda", "[mq-deadline] bfq", "8:0")] {
            let q = t.path().join("sys/block").join(name).join("queue");
            std::fs::create_dir_all(&q).unwrap();
            std::fs::write(q.join("scheduler"), sched).unwrap();
            std::fs::write(q.parent().unwrap().join("size"), "1000").unwrap();
            std::fs::write(q.parent().unwrap().join("dev"), dev).unwrap();
        }
        cfg.io.fg_latency_us = 2500;
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        assert_eq!(read(&t, "forefront/bg/io.prio.class"), "idle");
        assert_eq!(read(&t, "forefront/fg/io.prio.class"), "no-change", "the foreground keeps its classes");
        // Only the disk whose scheduler ignores priorities gets a target (a fake file keeps the
        // last line written; the kernel's keeps one line per device).
        assert_eq!(read(&t, "forefront/fg/io.latency"), "259:0 target=2500");
        let notes = a.status()["actions"].to_string();
        assert!(notes.contains("io.latency target 2500 µs on nvme0n1") && !notes.contains("sda"), "{notes}");
        a.shutdown();
        assert_eq!(read(&t, "forefront/bg/io.prio.class"), "no-change");
        assert_eq!(read(&t, "forefront/fg/io.latency"), "259:0 target=max", "the device's target removed");
    }

    #[test]
    fn v2_memory_protection_when_enabled() {
        let (t, mut cfg) = fake_v2();
        cfg.memory.enabled = true;
        cfg.memory.fg_low_bytes = 256 << 20;
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        assert_eq!(read(&t, "forefront/fg/memory.low"), (256u64 << 20).to_string());
        assert_eq!(read(&t, "forefront/bg/memory.low"), "0");
        a.shutdown();
        assert_eq!(read(&t, "forefront/fg/memory.low"), "0");
    }

    #[test]
    fn pause_deadline_is_enforced_by_the_loop() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.max_ms = 50;
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        // The reply did not wait for the freeze to take hold; the wait runs after it, once.
        assert!(a.settling.is_some(), "a requested freeze awaits its settling");
        a.after_reply();
        assert!(a.settling.is_none());
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1");
        assert!(a.next_wake() <= Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(60));
        a.tick();
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0");
        a.shutdown();
    }

    #[test]
    fn crash_then_restart_restores_first() {
        let (t, mut cfg) = fake_v2();
        cfg.cpu.bg_shares = 50;
        cfg.cpu.pause_only = false; // the low weight from the start
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1");
        a.die(); // as if SIGKILLed: no shutdown
        assert!(cfg.agent.state.exists());
        // The next start restores the journal before doing anything else, then applies anew.
        static LOG: std::sync::OnceLock<std::sync::Mutex<Vec<String>>> = std::sync::OnceLock::new();
        fn log(l: &str) {
            LOG.get_or_init(Default::default).lock().unwrap().push(l.to_owned());
        }
        cfg.pause.enabled = false;
        let mut b = Agent::start(cfg.clone(), None, log).unwrap();
        let logged = LOG.get().unwrap().lock().unwrap().clone();
        assert!(logged.iter().any(|l| l.contains("unclean exit")), "{logged:?}");
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0", "thawed by the restore");
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "4", "applied again: 50 shares");
        b.shutdown();
        assert_eq!(read(&t, "forefront/bg/cpu.weight"), "100", "original, not the crashed run's value");
    }

    #[test]
    fn a_pause_holds_write_back_and_restores_it_at_its_end_and_after_a_crash() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.hold_writeback = true;
        cfg.pause.min_gap_ms = 0;
        let vm = |f: &str| std::fs::read_to_string(t.path().join("proc/sys/vm").join(f)).unwrap();
        let limit = (1_000_000u64 * 1024 / 100 * 20).to_string();
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert_eq!(vm("dirty_writeback_centisecs"), "500", "nothing held outside a pause");
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        assert_eq!(vm("dirty_bytes"), limit);
        assert_eq!(vm("dirty_background_bytes"), (1_000_000u64 * 1024 / 100 * 20 - 4096).to_string());
        assert_eq!(vm("dirty_writeback_centisecs"), "500", "never written: its handler writes back everything");
        assert_eq!(vm("dirty_expire_centisecs"), "8640000", "a day: nothing expires in the pause");
        assert_eq!(a.status()["paused"]["writeback_held"].as_array().unwrap().len(), 3);
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        assert_eq!(vm("dirty_background_ratio"), "10", "restored through the file in use");
        assert_eq!(vm("dirty_ratio"), "20");
        assert_eq!(vm("dirty_writeback_centisecs"), "500");
        assert_eq!(vm("dirty_expire_centisecs"), "3000");
        assert!(a
            .journal
            .entries()
            .iter()
            .all(|e| !matches!(e, Entry::Knob { path, .. } if path.starts_with(t.path().join("proc")))));
        // A crash mid-pause: the next start restores the journal first.
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        assert_eq!(vm("dirty_expire_centisecs"), "8640000");
        a.die();
        cfg.pause.enabled = false;
        let mut b = Agent::start(cfg, None, |_| {}).unwrap();
        assert_eq!(vm("dirty_writeback_centisecs"), "500");
        assert_eq!(vm("dirty_expire_centisecs"), "3000");
        assert_eq!(vm("dirty_background_ratio"), "10");
        b.shutdown();
    }

    /// `[prefetch]` through the requests: the camera (pid 100) is the foreground, the updater is
    /// named instead (the camera's cached pages are recorded after the reply), the camera's
    /// pages are evicted, and naming the camera again reads them back; with `[prefetch]` off
    /// nothing brings them back. The camera's open file is a real file on the disk the test
    /// runs on, reached through the fake `/proc/100/fd/3`.
    #[test]
    fn a_switch_back_reads_the_apps_recorded_working_set_back() {
        use std::io::{Read, Seek, SeekFrom, Write};
        use std::os::unix::io::AsRawFd;
        for enabled in [true, false] {
            let (t, mut cfg) = fake_v2();
            cfg.prefetch.enabled = enabled;
            let r = t.path();
            let size: u64 = 4 << 20;
            let path = r.join("ws");
            let mut f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
            f.write_all(&vec![1u8; size as usize]).unwrap();
            f.sync_all().unwrap();
            let evict = |f: &std::fs::File| {
                // SAFETY: plain syscall on an open descriptor.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, size as libc::off_t, libc::POSIX_FADV_DONTNEED) };
            };
            let touched = [(8 * 4096u64, 4096u64), (512 * 4096, 8192)];
            let cached = |f: &std::fs::File| {
                let res = crate::prefetch::resident_ranges(f, size, u64::MAX).unwrap();
                touched.iter().all(|&(o, l)| res.iter().any(|&(ro, rl)| ro <= o && o + l <= ro + rl))
            };
            evict(&f);
            if !crate::prefetch::resident_ranges(&f, size, u64::MAX).unwrap().is_empty() {
                eprintln!("SKIP: the pages of {} cannot be evicted here (tmpfs?)", path.display());
                return;
            }
            for &(o, l) in &touched {
                f.seek(SeekFrom::Start(o)).unwrap();
                f.read_exact(&mut vec![0u8; l as usize]).unwrap();
            }
            std::fs::create_dir_all(r.join("proc/100/fd")).unwrap();
            std::os::unix::fs::symlink(&path, r.join("proc/100/fd/3")).unwrap();
            let mut a = Agent::start(cfg, None, |_| {}).unwrap();
            let fg = |pid| Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst: false };
            assert!(a.handle(fg(100), peer()).ok);
            a.after_reply();
            assert!(a.working_sets.is_empty(), "nothing recorded while the camera is the foreground");
            assert!(a.handle(fg(200), peer()).ok);
            a.after_reply();
            assert_eq!(a.working_sets.len(), usize::from(enabled), "the camera's working set, recorded on leaving");
            evict(&f);
            assert!(!cached(&f), "evicted");
            assert!(a.handle(fg(100), peer()).ok);
            a.after_reply();
            let t0 = Instant::now();
            while !cached(&f) && t0.elapsed() < Duration::from_secs(if enabled { 5 } else { 1 }) {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(cached(&f), enabled, "prefetch {enabled}: the camera's pages read back");
            assert!(a.working_sets.is_empty(), "a record is used once");
            // An app sent to the background by `scope`, never seen leaving the foreground, is
            // recorded too.
            assert!(a.handle(fg(200), peer()).ok);
            a.after_reply();
            a.working_sets.clear();
            let scope = Request::Scope { pid: Some(100), uid: None, cgroup: None, remove: false };
            assert!(a.handle(scope, peer()).ok);
            a.after_reply();
            assert_eq!(a.working_sets.len(), usize::from(enabled), "recorded when scoped into the background");
            a.shutdown();
        }
    }

    /// A fake disk `name` under the root with scheduler `sched` and `nr_requests`.
    fn fake_disk(r: &Path, name: &str, sched: &str, nr: u64) -> PathBuf {
        let d = r.join("sys/block").join(name);
        std::fs::create_dir_all(d.join("queue")).unwrap();
        std::fs::write(d.join("queue/scheduler"), format!("none mq-deadline [{sched}]\n")).unwrap();
        std::fs::write(d.join("queue/nr_requests"), format!("{nr}\n")).unwrap();
        std::fs::write(d.join("size"), "2097152\n").unwrap();
        std::fs::write(d.join("dev"), "253:0\n").unwrap();
        d.join("queue/nr_requests")
    }

    #[test]
    fn a_pause_raises_nr_requests_on_bfq_disks_and_puts_it_back_at_its_end_after_a_crash_and_on_restore() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.nr_requests = 1024;
        cfg.pause.min_gap_ms = 0;
        let vda = fake_disk(t.path(), "vda", "bfq", 256);
        let vdb = fake_disk(t.path(), "vdb", "mq-deadline", 64);
        let big = fake_disk(t.path(), "vdc", "bfq", 2048);
        let nr = |p: &Path| std::fs::read_to_string(p).unwrap().trim().to_owned();
        let burst = Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true };
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert_eq!(nr(&vda), "256", "nothing raised outside a pause");
        assert!(a.handle(burst.clone(), peer()).message.unwrap().contains("paused"));
        assert_eq!(nr(&vda), "256", "raised after the reply, not before it");
        a.after_reply();
        assert_eq!(nr(&vda), "1024");
        assert_eq!((nr(&vdb), nr(&big)), ("64".into(), "2048".into()), "not BFQ, or already as deep: left alone");
        assert!(a
            .journal
            .entries()
            .iter()
            .any(|e| matches!(e, Entry::Knob { path, original } if *path == vda && original == "256")));
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        assert_eq!(nr(&vda), "256");
        assert!(
            !a.journal.entries().iter().any(|e| matches!(e, Entry::Knob { path, .. } if *path == vda)),
            "forgotten after the pause"
        );
        // A crash mid-pause: the next start restores the journal first.
        a.handle(burst.clone(), peer());
        a.after_reply();
        assert_eq!(nr(&vda), "1024");
        a.die();
        let mut off = cfg.clone();
        off.pause.nr_requests = 0;
        let mut b = Agent::start(off.clone(), None, |_| {}).unwrap();
        assert_eq!(nr(&vda), "256", "restored by the restarted agent");
        b.handle(burst, peer());
        b.after_reply();
        assert_eq!(nr(&vda), "256", "off: not raised");
        b.shutdown();
        drop(b);
        // And `agent restore` after a crash (the journal read back from disk).
        let mut c = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        c.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        c.tick();
        assert_eq!(nr(&vda), "1024", "raised by the next tick too");
        c.die();
        let j = Journal::open_existing(&cfg.agent.state, t.path(), &cfg.agent.group).unwrap().unwrap();
        let problems = j.restore();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(nr(&vda), "256", "restored by agent restore");
    }

    #[test]
    fn io_nr_requests_sets_bfq_disks_tags_for_the_agents_lifetime_and_puts_them_back() {
        let (t, mut cfg) = fake_v2();
        cfg.io.nr_requests = 64;
        let vda = fake_disk(t.path(), "vda", "bfq", 256);
        let vdb = fake_disk(t.path(), "vdb", "mq-deadline", 256);
        let small = fake_disk(t.path(), "vdc", "bfq", 32);
        let same = fake_disk(t.path(), "vdd", "bfq", 64);
        let nr = |p: &Path| std::fs::read_to_string(p).unwrap().trim().to_owned();
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert_eq!((nr(&vda), nr(&small)), ("64".into(), "64".into()), "set at the start, lowered or raised");
        assert_eq!((nr(&vdb), nr(&same)), ("256".into(), "64".into()), "not BFQ, or already at the value: left alone");
        assert!(!a.journal.entries().iter().any(|e| matches!(e, Entry::Knob { path, .. } if *path == same)));
        assert!(a
            .journal
            .entries()
            .iter()
            .any(|e| matches!(e, Entry::Knob { path, original } if *path == vda && original == "256")));
        // A pause that raises the tags puts back the lowered value, not the original.
        a.cfg.pause.nr_requests = 1024;
        a.cfg.pause.min_gap_ms = 0;
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer());
        a.after_reply();
        assert_eq!(nr(&vda), "1024");
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        assert_eq!(nr(&vda), "64", "the pause gives back the agent's lifetime value");
        a.shutdown();
        assert_eq!(nr(&vda), "256", "put back when the agent stops");
        drop(a);
        // A crash: the restarted agent (here with the knob off) puts it back first.
        let a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert_eq!(nr(&vda), "64");
        a.die();
        let mut off = cfg.clone();
        off.io.nr_requests = 0;
        let mut b = Agent::start(off, None, |_| {}).unwrap();
        assert_eq!(nr(&vda), "256", "restored by the restarted agent; off: left alone");
        b.shutdown();
        drop(b);
        // And `agent restore` after a crash; with `[io]` off the knob does nothing.
        let c = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert_eq!(nr(&vda), "64");
        c.die();
        let j = Journal::open_existing(&cfg.agent.state, t.path(), &cfg.agent.group).unwrap().unwrap();
        assert!(j.restore().is_empty());
        assert_eq!(nr(&vda), "256", "restored by agent restore");
        let mut io_off = cfg.clone();
        io_off.io.enabled = false;
        let mut d = Agent::start(io_off, None, |_| {}).unwrap();
        assert_eq!(nr(&vda), "256", "[io] off: the queues are left alone");
        d.shutdown();
    }

    #[test]
    fn a_pause_turns_bfqs_strict_guarantees_on_and_puts_it_back_at_its_end_after_a_crash_and_on_restore() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.strict_guarantees = true;
        cfg.pause.min_gap_ms = 0;
        let strict = |name: &str, sched: &str, v: &str| {
            let d = fake_disk(t.path(), name, sched, 256).parent().unwrap().join("iosched");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("strict_guarantees"), format!("{v}\n")).unwrap();
            d.join("strict_guarantees")
        };
        let vda = strict("vda", "bfq", "0");
        let vdb = strict("vdb", "mq-deadline", "0"); // (a file BFQ would not have: left alone)
        let vdc = strict("vdc", "bfq", "1"); // already on: an administrator's, left alone
        let get = |p: &Path| std::fs::read_to_string(p).unwrap().trim().to_owned();
        let burst = Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true };
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        assert_eq!(get(&vda), "0", "nothing changed outside a pause");
        assert!(a.handle(burst.clone(), peer()).message.unwrap().contains("paused"));
        assert_eq!(get(&vda), "1", "on before the reply (no queue drain to wait for)");
        assert_eq!((get(&vdb), get(&vdc)), ("0".into(), "1".into()), "not BFQ, or on already: left alone");
        assert!(a
            .journal
            .entries()
            .iter()
            .any(|e| matches!(e, Entry::Knob { path, original } if *path == vda && original == "0")));
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        assert_eq!(get(&vda), "0", "put back at the pause's end");
        assert_eq!(get(&vdc), "1");
        assert!(
            !a.journal.entries().iter().any(|e| matches!(e, Entry::Knob { path, .. } if *path == vda)),
            "forgotten after the pause"
        );
        // A crash mid-pause: the next start restores the journal first.
        a.handle(burst.clone(), peer());
        assert_eq!(get(&vda), "1");
        a.die();
        let mut off = cfg.clone();
        off.pause.strict_guarantees = false;
        let mut b = Agent::start(off.clone(), None, |_| {}).unwrap();
        assert_eq!(get(&vda), "0", "restored by the restarted agent");
        b.handle(burst.clone(), peer());
        assert_eq!(get(&vda), "0", "off: left alone");
        b.shutdown();
        drop(b);
        // And `agent restore` after a crash (the journal read back from disk).
        let mut c = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        c.handle(burst, peer());
        assert_eq!(get(&vda), "1");
        c.die();
        let j = Journal::open_existing(&cfg.agent.state, t.path(), &cfg.agent.group).unwrap().unwrap();
        let problems = j.restore();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(get(&vda), "0", "restored by agent restore");
        assert_eq!(get(&vdc), "1");
    }

    #[test]
    fn with_io_only_a_burst_pauses_only_a_background_that_did_block_io() {
        let (t, mut cfg) = fake_v2();
        cfg.pause.io_only = true;
        cfg.pause.min_gap_ms = 0;
        let io = |pid: i32, bytes: u64| {
            let text = format!(
                "rchar: 9\nwchar: 9\nsyscr: 1\nsyscw: 1\nread_bytes: {bytes}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
            );
            std::fs::write(t.path().join(format!("proc/{pid}/io")), text).unwrap();
        };
        for pid in [100, 101, 200] {
            io(pid, 4096);
        }
        let burst = Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true };
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        // The updater (the background once the camera is foreground) only computed since the
        // start's sample: not paused.
        let m = a.handle(burst.clone(), peer()).message.unwrap();
        assert!(m.contains("not paused") && m.contains("no block I/O"), "{m}");
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "0");
        // It reads: the next burst pauses it.
        io(200, 8192);
        let m = a.handle(burst.clone(), peer()).message.unwrap();
        assert!(m.contains("background paused"), "{m}");
        assert_eq!(read(&t, "forefront/bg/cgroup.freeze"), "1");
        assert!(a.handle(Request::BurstEnd {}, peer()).ok);
        // A background process whose counters cannot be read counts as one doing I/O.
        std::fs::remove_file(t.path().join("proc/200/io")).unwrap();
        let m = a.handle(burst, peer()).message.unwrap();
        assert!(m.contains("background paused"), "{m}");
        a.shutdown();
    }

    #[test]
    fn without_fg_group_the_foreground_keeps_its_blkio_group_and_returns_to_it_from_the_background() {
        let (t, mut cfg) = fake_v1();
        cfg.io.fg_group = FgGroup::Never;
        let procs = |h: &str, g: &str| {
            std::fs::read_to_string(t.path().join("sys/fs/cgroup").join(h).join(g).join("cgroup.procs")).unwrap()
        };
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        // The updater is foreground: the camera's processes go to the background groups, the
        // updater to the foreground ones except blkio, where it stays in its own group.
        a.handle(Request::Fg { pid: Some(200), uid: None, cgroup: None, burst: false }, peer());
        a.after_reply();
        assert!(procs("blkio", "forefront/bg").lines().any(|l| l == "100"));
        assert!(procs("cpu", "forefront/fg").lines().any(|l| l == "200"));
        assert_eq!(procs("blkio", "forefront/fg"), "", "the foreground is not moved in blkio");
        assert_eq!(procs("blkio", "user.slice/app-updater"), "");
        // (the fake kernel: the camera is where the agent put it)
        std::fs::write(t.path().join("proc/100/cgroup"), "4:cpu:/forefront/bg\n3:blkio:/forefront/bg\n2:freezer:/forefront/bg\n")
            .unwrap();
        // The switch to the camera: out of the background's blkio group, back to its own.
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: false }, peer());
        a.after_reply();
        assert!(procs("blkio", "user.slice/app-camera").lines().any(|l| l == "100"));
        assert_eq!(procs("blkio", "forefront/fg"), "");
        assert!(procs("cpu", "forefront/fg").lines().any(|l| l == "100"));
        a.shutdown();
        // With the group (`true`, or the default "switch": this is a switch), the same switch
        // moves it into the foreground's.
        let (t, cfg) = fake_v1();
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        a.handle(Request::Fg { pid: Some(200), uid: None, cgroup: None, burst: false }, peer());
        a.after_reply();
        let procs = std::fs::read_to_string(t.path().join("sys/fs/cgroup/blkio/forefront/fg/cgroup.procs")).unwrap();
        assert!(procs.lines().any(|l| l == "200"), "{procs}");
        a.shutdown();
    }

    #[test]
    fn with_fg_group_switch_a_launch_stays_home_and_a_switch_gets_the_group() {
        let (t, mut cfg) = fake_v1();
        cfg.io.fg_group = FgGroup::Switch;
        let procs = |h: &str, g: &str| {
            std::fs::read_to_string(t.path().join("sys/fs/cgroup").join(h).join(g).join("cgroup.procs")).unwrap()
        };
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        // A launch: the updater's launcher names itself (`agent exec`); in blkio it stays home.
        a.handle(Request::Fg { pid: Some(200), uid: None, cgroup: None, burst: false }, Peer { pid: 200, uid: 0, gid: 0 });
        a.after_reply();
        assert!(procs("cpu", "forefront/fg").lines().any(|l| l == "200"));
        assert_eq!(procs("blkio", "forefront/fg"), "", "a launch is not moved in blkio");
        assert!(procs("blkio", "forefront/bg").lines().any(|l| l == "100"));
        // (the fake kernel: the camera is where the agent put it)
        std::fs::write(t.path().join("proc/100/cgroup"), "4:cpu:/forefront/bg\n3:blkio:/forefront/bg\n2:freezer:/forefront/bg\n")
            .unwrap();
        // A switch to the running camera, named by another process: into the foreground's group.
        a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: false }, peer());
        a.after_reply();
        assert!(procs("blkio", "forefront/fg").lines().any(|l| l == "100"), "{}", procs("blkio", "forefront/fg"));
        assert!(procs("blkio", "forefront/bg").lines().any(|l| l == "200"), "the updater is background now");
        a.shutdown();
    }

    #[test]
    fn with_fresh_fg_group_a_launch_starts_in_a_blkio_group_made_anew_even_with_no_background() {
        let (t, mut cfg) = fake_v1();
        // nothing in scope: no background at all (the quiet disk where BFQ's leftover weights pile up)
        cfg.scope = ScopeSection::default();
        cfg.io.fg_group = FgGroup::Always;
        cfg.io.fresh_fg_group = true;
        let blkio_fg = t.path().join("sys/fs/cgroup/blkio/forefront/fg");
        let procs = |h: &str| {
            std::fs::read_to_string(t.path().join("sys/fs/cgroup").join(h).join("forefront/fg/cgroup.procs")).unwrap_or_default()
        };
        let launcher = Peer { pid: 200, uid: 0, gid: 0 };
        let launch = Request::Fg { pid: Some(200), uid: None, cgroup: None, burst: true };
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        // An empty fg group: removed and made again (the marker goes with the old directory),
        // and the launcher moved into it before the reply, in blkio only.
        std::fs::write(blkio_fg.join("marker"), "").unwrap();
        a.handle(launch.clone(), launcher);
        assert!(!blkio_fg.join("marker").exists(), "the empty group was not made anew");
        assert!(procs("blkio").lines().any(|l| l == "200"), "{}", procs("blkio"));
        assert!(!procs("cpu").lines().any(|l| l == "200"), "moved in blkio only");
        a.after_reply();
        assert!(!procs("cpu").lines().any(|l| l == "200"), "no background: nothing else moves");
        // A group still holding a process is kept; the launcher joins it.
        std::fs::write(blkio_fg.join("marker"), "").unwrap();
        std::fs::write(t.path().join("proc/200/cgroup"), "4:cpu:/user.slice/app-updater\n3:blkio:/\n2:freezer:/\n").unwrap();
        a.handle(launch.clone(), launcher);
        assert!(blkio_fg.join("marker").exists(), "a group with a member was removed");
        assert_eq!(procs("blkio").lines().filter(|l| *l == "200").count(), 2);
        a.shutdown();
        // Off (the default): with no background the launcher is not moved at all.
        let (t, mut cfg) = fake_v1();
        cfg.scope = ScopeSection::default();
        let mut a = Agent::start(cfg, None, |_| {}).unwrap();
        a.handle(launch, launcher);
        a.after_reply();
        let procs = std::fs::read_to_string(t.path().join("sys/fs/cgroup/blkio/forefront/fg/cgroup.procs")).unwrap();
        assert_eq!(procs, "");
        a.shutdown();
    }

    /// `fake_v2`'s processes in three v1 hierarchies (cpu, blkio, freezer) instead.
    fn fake_v1() -> (tempfile::TempDir, Config) {
        let (t, cfg) = fake_v2();
        let r = t.path();
        let mut mi = String::new();
        for (i, (c, knobs)) in
            [("cpu", &["cpu.shares"][..]), ("blkio", &["blkio.bfq.weight"][..]), ("freezer", &["freezer.state"][..])]
                .into_iter()
                .enumerate()
        {
            mi += &format!("{} 24 0:{} / /sys/fs/cgroup/{c} rw - cgroup cgroup rw,{c}\n", 40 + i, 40 + i);
            for g in ["", "forefront", "forefront/fg", "forefront/bg", "user.slice/app-camera", "user.slice/app-updater"] {
                let d = r.join("sys/fs/cgroup").join(c).join(g);
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join("cgroup.procs"), "").unwrap();
                for k in knobs {
                    std::fs::write(d.join(k), if *k == "freezer.state" { "THAWED" } else { "100" }).unwrap();
                }
            }
        }
        std::fs::write(r.join("proc/self/mountinfo"), mi).unwrap();
        for (pid, cg) in
            [(1, "/"), (100, "/user.slice/app-camera"), (101, "/user.slice/app-camera"), (200, "/user.slice/app-updater")]
        {
            let lines = format!("4:cpu:{cg}\n3:blkio:{cg}\n2:freezer:{cg}\n");
            std::fs::write(r.join(format!("proc/{pid}/cgroup")), lines).unwrap();
        }
        std::fs::write(r.join("proc/300/cgroup"), "4:cpu:/system.slice/sshd\n3:blkio:/\n2:freezer:/\n").unwrap();
        (t, cfg)
    }

    #[test]
    fn with_move_after_reply_a_switch_leaves_the_freezer_group_before_the_reply_and_the_rest_after() {
        let (t, mut cfg) = fake_v1();
        cfg.pause.move_after_reply = true;
        // camera-enc a child of init: it stays background (and gives the burst something to pause)
        std::fs::write(
            t.path().join("proc/101/stat"),
            "101 (camera-enc) D 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1101 0 0\n",
        )
        .unwrap();
        // (a fake cgroup.procs lists every pid written to it: the last one is the latest move)
        let last = |h: &str, g: &str| {
            let text =
                std::fs::read_to_string(t.path().join("sys/fs/cgroup").join(h).join("forefront").join(g).join("cgroup.procs"));
            text.unwrap().lines().last().unwrap_or_default().to_owned()
        };
        let mut a = Agent::start(cfg.clone(), None, |_| {}).unwrap();
        // The updater is foreground (no burst): the camera is background.
        a.handle(Request::Fg { pid: Some(200), uid: None, cgroup: None, burst: false }, peer());
        a.after_reply();
        assert_eq!((last("freezer", "fg"), last("cpu", "fg"), last("blkio", "fg")), ("200".into(), "200".into(), "200".into()));
        // The switch back to the camera, with a burst: out of the freezer's group before the
        // reply, its CPU and blkio groups unchanged...
        let m = a.handle(Request::Fg { pid: Some(100), uid: None, cgroup: None, burst: true }, peer()).message.unwrap();
        assert!(m.contains("background paused"), "{m}");
        assert_eq!(last("freezer", "fg"), "100");
        assert_eq!((last("cpu", "fg"), last("blkio", "fg")), ("200".into(), "200".into()), "moved after the reply");
        // ...then, after the reply, into those foreground groups too.
        a.after_reply();
        assert_eq!((last("cpu", "fg"), last("blkio", "fg")), ("100".into(), "100".into()));
        a.shutdown();
    }
}
