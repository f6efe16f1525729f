//! The agent's TOML configuration. [`Config::default`] is the single source of truth for every
//! default; unknown keys are errors, so a typo fails loudly with its file and line.
//!
//! It lives here, beside the decisions it parameterises, so that the simulator's `agent`
//! policy reads the same file with the same checks as the daemon (`forefront_agent::config`
//! re-exports it) without linking the daemon's Linux-only code.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Bad configuration: what and where.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// toml's message already carries line, column and the offending key.
    #[error("{path}: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("{path}: field `{field}`: {message}")]
    Invalid { path: PathBuf, field: &'static str, message: String },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub agent: AgentSection,
    pub control: ControlSection,
    pub scope: ScopeSection,
    pub cpu: CpuSection,
    pub io: IoSection,
    pub pause: PauseSection,
    pub memory: MemorySection,
    pub prefetch: PrefetchSection,
    pub rules: RulesSection,
    pub focus: FocusSection,
    pub dbus: DbusSection,
    /// Cells (Cells, SOSP'11: virtual phones): name → the cgroup subtree holding the cell's
    /// processes (a path in the hierarchy holding `cpu`, e.g. a systemd slice). Cells are in
    /// scope; `forefront agent cell NAME` makes one cell foreground and every other cell
    /// background.
    pub cells: std::collections::BTreeMap<String, String>,
}

/// Rules that name the foreground without a caller: a matching program becomes the foreground
/// the moment it starts (exec notifications from the kernel's process-events connector; at
/// the next rescan where that is unavailable). Programs already running when the agent starts
/// do not fire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RulesSection {
    /// Program names (`comm`: the executable's name, cut to 15 bytes by the kernel).
    pub fg_commands: Vec<String>,
    /// systemd units (the last component of the process's cgroup, e.g. `firefox.service`); a
    /// trailing `*` matches any suffix (`app-firefox-*` for `app-firefox-1234.scope`).
    pub fg_units: Vec<String>,
    /// Pause the background when a rule fires, as `fg --burst` does.
    pub burst: bool,
}

impl Default for RulesSection {
    fn default() -> Self {
        RulesSection { fg_commands: vec![], fg_units: vec![], burst: true }
    }
}

impl RulesSection {
    pub fn is_empty(&self) -> bool {
        self.fg_commands.is_empty() && self.fg_units.is_empty()
    }

    /// Whether a process named `comm` in group `cgroup` (its path) matches a rule.
    pub fn matches(&self, comm: &str, cgroup: &str) -> bool {
        let unit = cgroup.rsplit('/').next().unwrap_or("");
        self.fg_commands.iter().any(|c| c == comm)
            || self.fg_units.iter().any(|u| match u.strip_suffix('*') {
                Some(prefix) => unit.starts_with(prefix),
                None => unit == u,
            })
    }
}

/// The D-Bus interface ((`forefront_agent::dbus`)): `SetForeground`, `BurstEnd`, `Status`, allowed to
/// the callers `[control]` allows.
///
/// Off unless a config turns it on, like focus following ([`FocusSection`]): the built-in
/// defaults act only on what the agent is told through its socket, so an agent run by hand,
/// by a test or by a benchmark never takes the system bus's name from the service nor follows
/// a session's focus. The package's `/etc/forefront/agent.toml` (a desktop install) sets both
/// to `"auto"` (docs/agent.md, "What acts without being asked").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DbusSection {
    /// `"auto"`: serve it when the bus lets the agent own `org.forefront.Agent1` (the policy
    /// file is installed); `"on"`: the agent does not start without it; `"off"` (the
    /// built-in default; the package's config says `"auto"`).
    pub enabled: Toggle,
    /// The bus address (`unix:path=...`); empty: the system bus.
    pub address: String,
}

impl Default for DbusSection {
    fn default() -> Self {
        DbusSection { enabled: Toggle::Off, address: String::new() }
    }
}

/// A feature that can follow what the system offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Toggle {
    /// On where the system offers it (logged where it does not); the agent starts either way.
    #[default]
    Auto,
    /// On; the agent refuses to start without it.
    On,
    Off,
}

/// Focus follows (`forefront_agent::focus`): the process of the focused window is the foreground.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FocusSection {
    /// Follow the X11 focus (`_NET_ACTIVE_WINDOW`): `"auto"` (when a display is named, here or
    /// by `$DISPLAY`; the agent keeps trying to connect), `"on"` (the agent does not start
    /// without it) or `"off"` (the built-in default; the package's config says `"auto"`: see
    /// [`DbusSection`] for why).
    pub x11: Toggle,
    /// The X display (`":0"`); empty: the agent's `$DISPLAY`. The X authority is read from
    /// `$XAUTHORITY` (a systemd drop-in sets both for the service).
    pub display: String,
    /// Pause the background (as `fg --burst`) when the focus moves to an app that has not had
    /// it for `burst_idle_ms` or more (or never had it since the agent started).
    pub burst: bool,
    /// How long an app must have been without the focus for a switch to it to burst (ms). Not
    /// measured: a switch back within a few seconds finds the app's pages still in memory.
    pub burst_idle_ms: u64,
}

impl Default for FocusSection {
    fn default() -> Self {
        FocusSection { x11: Toggle::Off, display: String::new(), burst: true, burst_idle_ms: 5000 }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSection {
    /// Control socket (Unix stream, one JSON request per connection).
    pub socket: PathBuf,
    /// Crash-safe record of every original value the agent changed.
    pub state: PathBuf,
    /// Name of the agent's group in each hierarchy; `fg` and `bg` are created below it.
    pub group: String,
    /// How often new processes in scope are classified and placed (ms).
    pub rescan_ms: u64,
    /// Expedite the RCU grace periods of the agent's own moves between cgroups
    /// (`/sys/kernel/rcu_expedited` = 1 for the moves, the original value back after them):
    /// each move waits for a grace period, during which no process on the machine can fork or
    /// exit, and that costs a switch to a running app its own time. Off by default: faster
    /// moves by themselves, but no gain measured on the S suite's switch cell (see "The switch"
    /// in docs/agent.md).
    pub expedite_moves: bool,
    /// Keep the launcher's helper (`forefront-exec` beside the agent's executable) in memory:
    /// mapped and locked for the agent's lifetime, so that a launch or switch never waits for
    /// the disk to exec it (after memory pressure or a cache drop, under background I/O). Costs
    /// the helper's size in locked memory (about 0.5 MB). A helper that cannot be found or
    /// locked is logged and the agent runs without it. On: a helper read from the disk is
    /// paid for twice. Its page-ins and the app's first reads (same pid, same BFQ queue after
    /// the `execve`) made BFQ raise the app's queue to soft real-time (weight × 3000), and that
    /// weight, kept in the service tree after the queue is gone, trimmed later start-ups'
    /// threads to one request at a time. Over the S suite's xterm start-ups with no background,
    /// 31 of 60 were trimmed without pinning, 27 of 90 with it, 22 of 90 under BFQ alone
    /// (docs/agent.md, "Soft real-time ghosts").
    #[serde(default = "yes")]
    pub pin_exec: bool,
    /// Lock the agent's and its watchdog's pages in memory (`mlockall`): the code of a pause
    /// first runs at the first launch that finds a background, and reading it then (a page
    /// fault reads the binary's whole read-ahead window around the page, 8 MiB here) made that
    /// launch compete with the agent's own 6.4 MB read. Costs the mapped binary (about 14 MB on
    /// x86-64, shared by the two processes) and the pages they touch, in locked memory. Logged
    /// and skipped when the kernel refuses (no `CAP_IPC_LOCK` and a low `RLIMIT_MEMLOCK`).
    /// See "The agent's own first pause" in docs/agent.md.
    #[serde(default = "yes")]
    pub lock_memory: bool,
    /// Turn the kernel's cgroup `favordynmods` on at start, by mounting a named v1 hierarchy
    /// with it (beside the state journal) and unmounting it at once: a move between cgroups then
    /// no longer waits for an RCU grace period (7–8 ms idle, tens of ms under load, paid by every
    /// switch to a running app). The switch is global: from kernel 6.18 on it stays on until
    /// reboot (before 6.18 it ends with the unmount, so there this does nothing lasting), and its
    /// price is slower forks and exits, which this VM did not show (see "Moves
    /// without a grace period" in docs/agent.md: a switch's call to the agent went from 34 to
    /// about 7 ms). Skipped when a cgroup mount already has it; logged and skipped when the
    /// kernel refuses it.
    #[serde(default = "yes")]
    pub favor_dynmods: bool,
    /// File-system root for /proc and /sys (tests point it at a fake tree).
    pub root: PathBuf,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControlSection {
    /// Peers with these uids may call the socket (root included only if listed).
    pub allow_uids: Vec<u32>,
    /// Peers with these (primary) gids may call the socket.
    pub allow_gids: Vec<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScopeSection {
    /// Processes of these uids are managed.
    pub uids: Vec<u32>,
    /// Processes in these groups (paths in the hierarchy holding `cpu`) are managed.
    pub cgroups: Vec<String>,
    /// These processes and their descendants are managed.
    pub trees: Vec<i32>,
    /// `comm` names of interactive helpers (compositor, launcher): never slowed or paused.
    pub interactive: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpuSection {
    /// Off by default: on the S suite the CPU side cost the background 40–60 % of its
    /// throughput (0.39–0.60× of BFQ's against 0.88–1.13× without it, in three interleaved
    /// cells on this VM, where other users' builds load the CPU) and bought no consistent
    /// start-up gain (docs/agent.md, "Knob study: the CPU side"). On: the foreground and
    /// background groups get the weights below.
    pub enabled: bool,
    /// In v1 `cpu.shares` units (converted for v2). Stock Android: 1024 and 110.
    pub fg_shares: u64,
    pub bg_shares: u64,
    /// Put the background group in the idle CPU class (`cpu.idle=1`, Linux ≥ 5.15) when the
    /// kernel has it: measured here to keep a 60 Hz FG frame task at its alone timing.
    pub bg_idle: bool,
    /// Apply `bg_shares` and `bg_idle` only during a pause (a launch or switch). Between pauses
    /// the background group then weighs 1024 shares per background process that was running or
    /// in I/O wait at the last scan (at least 1024): about what those processes would weigh in
    /// no group, so that processes the agent does not manage (other users' builds) do not take
    /// the background's CPU. Off by default: in two S-suite cells it did not bring the
    /// background's throughput back (0.74× and 0.48× of BFQ's, against 0.77× and 0.49× with the
    /// low weight all the time; only `enabled = false` did), and with it a foreground frame task
    /// loses its protection against background CPU hogs between pauses.
    pub pause_only: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoSection {
    pub enabled: bool,
    /// BFQ weights 1..=1000 (`blkio.bfq.weight` / `io.bfq.weight`).
    pub fg_weight: u64,
    pub bg_weight: u64,
    /// Give background threads the idle I/O class (`ionice -c3`), honoured by BFQ and
    /// mq-deadline: unlike group weights it also applies on v1, where buffered writeback
    /// escapes blkio weights.
    pub bg_ioprio_idle: bool,
    /// Move the foreground into a blkio group of its own (`fg`, weight `fg_weight`): `true`
    /// (always), `false` (never) or `"switch"` (only when the foreground is an app already
    /// running, not one being started). Off, on a v1 `blkio` hierarchy mounted alone, the
    /// foreground stays in the group it started in (an app leaving the background groups goes
    /// back to the group it came from), and only the background is moved (into `bg`, weight
    /// `bg_weight`). With no background at all, BFQ served the S suite's xterm start-up in a
    /// weight-1000 group of its own in 84 ms against 69 ms in the root group (docs/agent.md,
    /// "The no-background cost, the hang, and the foreground's own blkio group"). `"switch"`:
    /// BFQ's `low_latency` raises the weight of a new process's queues, which a start-up left
    /// in its own group keeps competing for, but not those of an app that has been running for
    /// a while; so a launch (a launcher naming itself, an exec `[rules]` rule) stays home, and a
    /// switch (an app named by another process, a focus change) gets the group. The default:
    /// over the S suite's full table it met the bar in the same eight cells of nine as `true`,
    /// at or below `true` in seven (docs/agent.md, "The foreground's blkio group for a switch
    /// only"), and in eight of nine again as the default ("The full table at the new
    /// default"). Ignored where blkio shares its hierarchy with other controllers (v2).
    pub fg_group: FgGroup,
    /// With `fg_group = true`, on a v1 `blkio` hierarchy mounted alone: a launcher naming itself (an
    /// app being started through `forefront-exec` or `agent exec`) is moved into the `fg` group
    /// before the reply, even with nothing in the background, and the group, when empty, is
    /// first removed and made again (its weight set anew). BFQ keeps an idle queue's weight in
    /// its group's service tree until the group has served about as much again, also after
    /// the queue's process has exited, and a queue raised to soft real-time weighs 3,000 times
    /// its base weight. On a quiet disk such weights left by earlier start-ups pile up, and
    /// `bfq_limit_depth` then gives a new start-up's queues one request at a time. A group made
    /// for the launch has none (docs/agent.md, "Soft real-time ghosts"). Costs the launch an
    /// `rmdir`, a `mkdir`, a weight write and a move (0.1–0.3 ms, with `favor_dynmods`). Off:
    /// the helper does not wait for the agent, so the app has started reading when it is moved
    /// and BFQ moves its queues mid-start-up; the S suite's xterm start-up with no background
    /// took 1.13× BFQ's median with it, 1.02× without.
    pub fresh_fg_group: bool,
    /// cgroup v2 only: an `io.latency` target (µs) for the foreground group on the disks whose
    /// scheduler honours no I/O priority (`none`, `kyber`: NVMe drives mostly); background
    /// groups are throttled while the foreground misses it. 0 = off (the default: not measured
    /// here, this VM has no v2 io controller). See `forefront_agent::iosched`.
    pub fg_latency_us: u64,
    /// Set the request queue's `nr_requests` (its scheduler tags) to this many on every disk
    /// BFQ runs, for the agent's lifetime (journaled, put back at its exit, by a restarted agent
    /// and by `agent restore`); 0 = leave the queues alone (the default). A request waits for a
    /// tag before BFQ sees it: with every tag taken by background requests BFQ has queued (the
    /// idle class's, async write-back), a foreground read waits unseen; BFQ gives sync reads
    /// every tag and caps async writes at half of them (`bfq_limit_depth`). The write drains the
    /// queue once, when the agent starts. See docs/agent.md, "Request tags for the agent's
    /// lifetime".
    pub nr_requests: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PauseSection {
    /// Freeze background during a launch/switch burst (the measured best mechanism here).
    pub enabled: bool,
    /// Hard deadline of one pause (ms); the agent and, should it die, its watchdog thaw then.
    pub max_ms: u64,
    /// Minimum time between the end of one pause and the start of the next (ms).
    pub min_gap_ms: u64,
    /// End a pause early once the foreground has done no block I/O (`read_bytes` +
    /// `write_bytes` of `/proc/PID/io`, over every foreground process) for this long (ms),
    /// with none of its threads seen waiting for I/O meanwhile (state `D`, or asleep in
    /// `io_getevents` or `io_uring_enter`): its start-up I/O is over. A read stalled behind the
    /// background's write-back submits nothing new; before the wait counted, such stalls ended
    /// 11 and 14 of 30 LibreOffice start-ups' pauses under 5 writers and 5 + 5 early, and those
    /// took 2.3–2.7× as long (docs/agent.md, "A pause that holds while the start-up waits for
    /// I/O"). 0 = off (a pause ends on `burst_end` or at `max_ms`). 100 by
    /// default: on the S suite's xterm start-ups launched through `agent exec --burst` (no
    /// `burst_end`) it doubled the background's throughput against a pause left to run its
    /// 3,000 ms, at the same start-up median (docs/agent.md, "The S suite: agent against BFQ").
    pub idle_end_ms: u64,
    /// With `idle_end_ms`: end a pause at once when every foreground process has exited (a
    /// launched command that ran to its end), rather than `idle_end_ms` after its last I/O:
    /// nothing is left to protect, and the background waited for nothing. On by default
    /// (docs/agent.md, "The background of xterm/5 + 5, and a pause that ends with its
    /// foreground"). A launcher whose named
    /// process exits after starting the app elsewhere loses the rest of the pause, as it did
    /// already `idle_end_ms` later (the app's own I/O is not counted before it is placed).
    #[serde(default = "yes")]
    pub end_on_exit: bool,
    /// Hold buffered write-back for the pause: the flusher threads, which no v1 group reaches,
    /// do not start writing the background's dirty pages while it is frozen (raised
    /// `/proc/sys/vm` thresholds, journaled and restored; see `forefront_agent::writeback`). On by
    /// default: it halved the start-up under buffered copies and changed nothing measurable
    /// under fsyncing writers (`scripts/writeback-study`, docs/agent.md).
    pub hold_writeback: bool,
    /// Raise the request queue's `nr_requests` (its scheduler tags) to this many on every disk
    /// run by BFQ, for the pause, and put the original back after it (journaled and restored
    /// like the write-back thresholds). Under a reading and writing background every tag is in
    /// use: the background's tasks wait for one in uninterruptible sleep (the freeze cannot take
    /// them), and the foreground's reads wait for one before BFQ ever sees them, so its weights
    /// and I/O classes cannot order them. More tags let both through at once. 0 = off (the
    /// default); the kernel accepts up to 2048 with a scheduler. The simulator models no
    /// scheduler-tag limit for the foreground and does not honour it.
    #[serde(default)]
    pub nr_requests: u64,
    /// Pause only a background that competes for the disk: a burst freezes the background only
    /// when one of its processes did block I/O (`read_bytes` + `write_bytes` of
    /// `/proc/PID/io`) since the agent's last look, one scan interval (`agent.rescan_ms`) or
    /// more before; a background that only computes is left running (freezing a running CPU
    /// loop waits for its next return to user space, on the CPUs the launch needs). Off by
    /// default (docs/agent.md, "A pause only for a background doing I/O"). The simulator
    /// should honour it: its tasks' I/O is known to it.
    #[serde(default)]
    pub io_only: bool,
    /// A burst naming an app that sits in the background groups (a switch to a running app)
    /// restores its I/O class and moves it out of the freezer's group only, then replies; its
    /// moves in the other hierarchies (CPU, blkio: an RCU grace period each) follow the reply.
    /// Off by default (docs/agent.md, "Request tags and a lighter switch"). The simulator does not
    /// model the moves' grace periods and need not honour it.
    #[serde(default)]
    pub move_after_reply: bool,
    /// BFQ's `strict_guarantees` on every disk it runs, for the pause, and the original put back
    /// after it (journaled and restored like the write-back thresholds). With it BFQ idles
    /// whenever the queue in service empties and keeps one request at a time in the device, so
    /// the kernel's write-back (the flusher's, in the root group: no v1 group and no freeze
    /// reaches it) is not dispatched between two of the foreground's reads. The write is a
    /// scheduler attribute: no queue drain (unlike `nr_requests`). Off by default (docs/agent.md,
    /// "Where the switch waits, and BFQ's strict guarantees"). The simulator models no BFQ
    /// idling and does not honour it.
    #[serde(default)]
    pub strict_guarantees: bool,
}

/// A switched-to app's working set read back before it asks (`forefront_agent::prefetch`): when
/// an app named foreground by pid stops being the foreground, the agent records which pages of
/// the files it has open or mapped are cached; when a request names it foreground again, a
/// thread of the agent at the real-time I/O class reads them back (`posix_fadvise(WILLNEED)`).
/// BFQ's `low_latency` helps a new queue (a start-up), not an app that comes back (a switch).
/// The simulator models no page-cache residency per app and does not honour it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrefetchSection {
    pub enabled: bool,
    /// At most this many MiB recorded (and read back) per app.
    pub max_mb: u64,
    /// At most this many files looked at per app (open files first, then mapped ones).
    pub max_files: usize,
    /// Threads that read a working set back, its ranges dealt out among them (1..=64). Each is
    /// a queue of its own to BFQ. See docs/agent.md, "Restore threads".
    pub threads: usize,
    /// cgroup v1 with `io.fg_group`: each restore thread moves itself into the foreground's
    /// blkio group before it reads, so that BFQ counts its reads in the app's group instead of
    /// the agent's. See docs/agent.md, "Request tags for the agent's lifetime, and the
    /// restore's depth".
    pub in_fg_group: bool,
}

impl Default for PrefetchSection {
    fn default() -> Self {
        PrefetchSection { enabled: true, max_mb: 256, max_files: 512, threads: 1, in_fg_group: false }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySection {
    /// Off by default: not measured here, and on v1 it moves processes between memory groups
    /// (which also moves their charge accounting).
    pub enabled: bool,
    /// v2 `memory.low` of the foreground group (bytes).
    pub fg_low_bytes: u64,
    /// v1 `memory.soft_limit_in_bytes` of the background group (bytes; 0 = leave).
    pub bg_soft_limit_bytes: u64,
}

impl Default for AgentSection {
    fn default() -> Self {
        AgentSection {
            socket: forefront_proto::DEFAULT_SOCKET.into(),
            state: default_state_path(),
            group: "forefront".into(),
            rescan_ms: 500,
            expedite_moves: false,
            pin_exec: true,
            lock_memory: true,
            favor_dynmods: true,
            root: "/".into(),
        }
    }
}

/// The state journal's default home: `/run/forefront/state/`, a directory the agent makes with
/// mode 0700 below root's `/run` (systemd's `RuntimeDirectory=forefront` makes `/run/forefront`;
/// the socket lives there, reachable by the clients `control` allows). Never a world-writable
/// place such as `/dev/shm`, where any local user could make the directory first. `/run` is a
/// tmpfs on most systems; where it is not, `agent check` warns (every change is fsynced there
/// first).
fn yes() -> bool {
    true
}

pub fn default_state_path() -> PathBuf {
    "/run/forefront/state/state.json".into()
}

impl Default for CpuSection {
    fn default() -> Self {
        CpuSection { enabled: false, fg_shares: 1024, bg_shares: 110, bg_idle: true, pause_only: false }
    }
}

impl Default for IoSection {
    fn default() -> Self {
        IoSection {
            enabled: true,
            fg_weight: 1000,
            bg_weight: 10,
            bg_ioprio_idle: true,
            fg_group: FgGroup::Switch,
            fresh_fg_group: false,
            fg_latency_us: 0,
            nr_requests: 0,
        }
    }
}

/// `io.fg_group`: when the foreground gets a blkio group of its own. Written `true`, `false` or
/// `"switch"` (also `"always"`, `"never"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FgGroup {
    /// Every foreground (`true`).
    Always,
    /// A foreground that was already running when it was named (a switch), not an app being
    /// started (a launch).
    Switch,
    /// None (`false`).
    Never,
}

impl FgGroup {
    /// Whether a foreground gets the group: `launch` is whether it is an app being started.
    pub fn applies(self, launch: bool) -> bool {
        match self {
            FgGroup::Always => true,
            FgGroup::Switch => !launch,
            FgGroup::Never => false,
        }
    }
}

impl Serialize for FgGroup {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FgGroup::Always => s.serialize_bool(true),
            FgGroup::Never => s.serialize_bool(false),
            FgGroup::Switch => s.serialize_str("switch"),
        }
    }
}

impl<'de> Deserialize<'de> for FgGroup {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = FgGroup;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"true, false or "switch""#)
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<FgGroup, E> {
                Ok(if v { FgGroup::Always } else { FgGroup::Never })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FgGroup, E> {
                match v {
                    "switch" => Ok(FgGroup::Switch),
                    "always" => Ok(FgGroup::Always),
                    "never" => Ok(FgGroup::Never),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for PauseSection {
    fn default() -> Self {
        PauseSection {
            enabled: true,
            max_ms: 3000,
            min_gap_ms: 1000,
            idle_end_ms: 100,
            end_on_exit: true,
            hold_writeback: true,
            nr_requests: 0,
            io_only: false,
            move_after_reply: false,
            strict_guarantees: false,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            agent: AgentSection::default(),
            control: ControlSection { allow_uids: vec![0], allow_gids: vec![] },
            scope: ScopeSection::default(),
            cpu: CpuSection::default(),
            io: IoSection::default(),
            pause: PauseSection::default(),
            memory: MemorySection::default(),
            prefetch: PrefetchSection::default(),
            rules: RulesSection::default(),
            focus: FocusSection::default(),
            dbus: DbusSection::default(),
            cells: Default::default(),
        }
    }
}

/// The largest config file read (the documented default is a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl Config {
    /// Read and check a config file: a regular file of at most [`MAX_CONFIG_BYTES`] (a special
    /// file such as `/dev/zero` is refused before it is read).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        use std::io::Read;
        let read = |source| ConfigError::Read { path: path.into(), source };
        let invalid = |what: String| read(std::io::Error::new(std::io::ErrorKind::InvalidData, what));
        if !std::fs::metadata(path).map_err(read)?.is_file() {
            return Err(invalid("not a regular file".into()));
        }
        let mut text = String::new();
        std::fs::File::open(path).and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text)).map_err(read)?;
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(invalid(format!("larger than {} KiB, not an agent config", MAX_CONFIG_BYTES >> 10)));
        }
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Syntax { path: path.into(), message: e.to_string() })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    pub fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |field, message: String| Err(ConfigError::Invalid { path: path.into(), field, message });
        if !(2..=262_144).contains(&self.cpu.fg_shares) {
            return bad("cpu.fg_shares", format!("{} is outside 2..=262144", self.cpu.fg_shares));
        }
        if !(2..=262_144).contains(&self.cpu.bg_shares) {
            return bad("cpu.bg_shares", format!("{} is outside 2..=262144", self.cpu.bg_shares));
        }
        if !(1..=1000).contains(&self.io.fg_weight) {
            return bad("io.fg_weight", format!("{} is outside 1..=1000", self.io.fg_weight));
        }
        if !(1..=1000).contains(&self.io.bg_weight) {
            return bad("io.bg_weight", format!("{} is outside 1..=1000", self.io.bg_weight));
        }
        if self.io.fg_latency_us > 10_000_000 {
            return bad("io.fg_latency_us", format!("{} is above 10 s (10000000 µs)", self.io.fg_latency_us));
        }
        if self.pause.max_ms == 0 || self.pause.max_ms > 60_000 {
            return bad("pause.max_ms", format!("{} is outside 1..=60000", self.pause.max_ms));
        }
        if self.io.nr_requests != 0 && !(4..=2048).contains(&self.io.nr_requests) {
            return bad(
                "io.nr_requests",
                format!("{} is outside 4..=2048 (the kernel's range with a scheduler), or 0 for off", self.io.nr_requests),
            );
        }
        if self.pause.nr_requests != 0 && !(4..=2048).contains(&self.pause.nr_requests) {
            return bad(
                "pause.nr_requests",
                format!("{} is outside 4..=2048 (the kernel's range with a scheduler), or 0 for off", self.pause.nr_requests),
            );
        }
        if self.prefetch.max_mb > 65_536 {
            return bad("prefetch.max_mb", format!("{} is above 65536 (64 GiB)", self.prefetch.max_mb));
        }
        if !(1..=64).contains(&self.prefetch.threads) {
            return bad("prefetch.threads", format!("{} is outside 1..=64", self.prefetch.threads));
        }
        if self.prefetch.max_files > 65_536 {
            return bad("prefetch.max_files", format!("{} is above 65536", self.prefetch.max_files));
        }
        if self.agent.rescan_ms < 10 {
            return bad("agent.rescan_ms", format!("{} is below 10", self.agent.rescan_ms));
        }
        for (name, path) in &self.cells {
            if name.is_empty()
                || name.len() > 64
                || name.chars().any(char::is_control)
                || !path.starts_with('/')
                || path.split('/').any(|s| s == "..")
            {
                return bad("cells", format!("cell {name:?} = {path:?}: need a name and an absolute group path without '..'"));
            }
        }
        if let Some(c) = self.rules.fg_commands.iter().find(|c| c.is_empty() || c.len() > 15) {
            return bad(
                "rules.fg_commands",
                format!("{c:?}: a command name is what the kernel keeps as `comm`: 1 to 15 bytes (it cuts longer names)"),
            );
        }
        if let Some(u) = self.rules.fg_units.iter().find(|u| u.is_empty() || u.contains('/') || u[..u.len() - 1].contains('*')) {
            return bad("rules.fg_units", format!("{u:?}: a unit name (no '/'), with '*' only at its end"));
        }
        if self.pause.idle_end_ms > self.pause.max_ms {
            return bad(
                "pause.idle_end_ms",
                format!(
                    "{} is longer than pause.max_ms ({}): it could never end a pause",
                    self.pause.idle_end_ms, self.pause.max_ms
                ),
            );
        }
        let d = &self.focus.display;
        if d.len() > 256 || d.chars().any(char::is_control) {
            return bad(
                "focus.display",
                format!("{d:?}: an X display name (\":0\"), at most 256 bytes without control characters"),
            );
        }
        if self.focus.burst_idle_ms > 86_400_000 {
            return bad("focus.burst_idle_ms", format!("{} is above a day (86400000)", self.focus.burst_idle_ms));
        }
        let a = &self.dbus.address;
        if a.len() > 1024 || a.chars().any(char::is_control) {
            return bad("dbus.address", format!("{a:?}: a D-Bus address (unix:path=...), at most 1024 bytes"));
        }
        let g = &self.agent.group;
        if g.is_empty() || g.contains('/') || g == "." || g == ".." || g.len() > 64 || g.chars().any(char::is_control) {
            return bad("agent.group", format!("{g:?} must be one plain directory name (1 to 64 bytes, no control characters)"));
        }
        for (field, p) in
            [("agent.root", &self.agent.root), ("agent.state", &self.agent.state), ("agent.socket", &self.agent.socket)]
        {
            if !p.is_absolute() || p.components().any(|c| c == std::path::Component::ParentDir) {
                return bad(field, format!("{:?} must be an absolute path without '..'", p.display()));
            }
        }
        if self.agent.state.file_name().is_none() || self.agent.socket.file_name().is_none() {
            return bad("agent.state", "the state and socket paths must name files".into());
        }
        if let Some(p) = self.scope.trees.iter().find(|p| **p <= 1) {
            return bad(
                "scope.trees",
                format!("{p}: a tree is a process id above 1 (pid 1's tree is every process on the machine)"),
            );
        }
        for c in &self.scope.cgroups {
            if let Err(why) = forefront_proto::check_cgroup_path(c) {
                return bad("scope.cgroups", why);
            }
        }
        for (name, path) in &self.cells {
            if let Err(why) = forefront_proto::check_cgroup_path(path) {
                return bad("cells", format!("cell {name:?}: {why}"));
            }
        }
        if self.io.fresh_fg_group && self.io.fg_group != FgGroup::Always {
            return bad(
                "io.fresh_fg_group",
                "moves a launch into the blkio `fg` group: it needs `io.fg_group = true` (a launch stays home otherwise)".into(),
            );
        }
        if let Some(c) = self.scope.interactive.iter().find(|c| c.is_empty() || c.len() > 15) {
            return bad("scope.interactive", format!("{c:?}: a command name is 1 to 15 bytes (the kernel's `comm`)"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_commands_and_units_and_bad_ones_are_refused() {
        let r = RulesSection {
            fg_commands: vec!["lowriter".into()],
            fg_units: vec!["app-firefox-*".into(), "gimp.service".into()],
            burst: true,
        };
        assert!(r.matches("lowriter", "/user.slice"));
        assert!(r.matches("firefox-bin", "/user.slice/app-firefox-1234.scope"));
        assert!(r.matches("gimp", "/system.slice/gimp.service"));
        assert!(!r.matches("gimp", "/system.slice/gimp.service/sub"));
        assert!(!r.matches("xterm", "/user.slice/app-xterm-1.scope"));
        let e = Config::parse(Path::new("a.toml"), "[rules]\nfg_commands = [\"a-very-long-program-name\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rules.fg_commands") && e.contains("15 bytes"), "{e}");
        let e = Config::parse(Path::new("a.toml"), "[rules]\nfg_units = [\"a*b\"]\n").unwrap_err().to_string();
        assert!(e.contains("rules.fg_units"), "{e}");
        let e = Config::parse(Path::new("a.toml"), "[pause]\nmax_ms = 100\nidle_end_ms = 500\n").unwrap_err().to_string();
        assert!(e.contains("pause.idle_end_ms"), "{e}");
    }

    #[test]
    fn empty_file_is_the_default() {
        assert_eq!(Config::parse(Path::new("a.toml"), "").unwrap(), Config::default());
    }

    #[test]
    fn partial_sections_keep_other_defaults() {
        let c = Config::parse(Path::new("a.toml"), "[cpu]\nbg_shares = 50\n[scope]\nuids = [1000]\n").unwrap();
        assert_eq!(c.cpu.bg_shares, 50);
        assert_eq!(c.cpu.fg_shares, 1024);
        assert_eq!(c.scope.uids, [1000]);
    }

    #[test]
    fn typo_names_file_line_and_key() {
        let e = Config::parse(Path::new("/etc/forefront.toml"), "[cpu]\nenabled = true\nbg_share = 5\n").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("/etc/forefront.toml: "), "{s}");
        assert!(s.contains("line 3"), "{s}");
        assert!(s.contains("bg_share"), "{s}");
    }

    #[test]
    fn wrong_type_is_an_error() {
        let s = Config::parse(Path::new("c.toml"), "[pause]\nmax_ms = \"long\"\n").unwrap_err().to_string();
        assert!(s.contains("line 2") && s.contains("max_ms"), "{s}");
    }

    #[test]
    fn scope_and_paths_that_would_reach_too_far_are_refused() {
        for (text, field) in [
            ("[scope]\ntrees = [-5, 0, 1]\n", "scope.trees"),
            ("[scope]\ntrees = [1]\n", "scope.trees"),
            ("[scope]\ncgroups = [\"/\"]\n", "scope.cgroups"),
            ("[scope]\ncgroups = [\"user.slice\"]\n", "scope.cgroups"),
            ("[scope]\ncgroups = [\"/a\\u0000b\"]\n", "scope.cgroups"),
            ("[scope]\ninteractive = [\"a-very-long-program-name\"]\n", "scope.interactive"),
            ("[agent]\nroot = \"fake\"\n", "agent.root"),
            ("[agent]\nstate = \"run/state.json\"\n", "agent.state"),
            ("[agent]\nsocket = \"/run/../tmp/s\"\n", "agent.socket"),
            ("[agent]\ngroup = \"a\\nb\"\n", "agent.group"),
            ("[cells]\nw = \"/\"\n", "cells"),
            ("[focus]\ndisplay = \":0\\n\"\n", "focus.display"),
            ("[focus]\nburst_idle_ms = 100000000000\n", "focus.burst_idle_ms"),
        ] {
            let e = Config::parse(Path::new("c.toml"), text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("c.toml: field `{field}`")), "{text:?}: {e}");
        }
        let c = Config::parse(Path::new("c.toml"), "[scope]\ntrees = [2, 4242]\ncgroups = [\"/user.slice\"]\n").unwrap();
        assert_eq!(c.scope.trees, [2, 4242]);
    }

    #[test]
    fn out_of_range_names_the_field() {
        let s = Config::parse(Path::new("c.toml"), "[io]\nbg_weight = 0\n").unwrap_err().to_string();
        assert_eq!(s, "c.toml: field `io.bg_weight`: 0 is outside 1..=1000");
        let s = Config::parse(Path::new("c.toml"), "[agent]\ngroup = \"../x\"\n").unwrap_err().to_string();
        assert!(s.contains("agent.group"), "{s}");
        let s = Config::parse(Path::new("c.toml"), "[pause]\nnr_requests = 4096\n").unwrap_err().to_string();
        assert!(s.starts_with("c.toml: field `pause.nr_requests`: 4096 is outside 4..=2048"), "{s}");
        assert_eq!(Config::parse(Path::new("c.toml"), "[pause]\nnr_requests = 1024\n").unwrap().pause.nr_requests, 1024);
        let s = Config::parse(Path::new("c.toml"), "[io]\nnr_requests = 2\n").unwrap_err().to_string();
        assert!(s.starts_with("c.toml: field `io.nr_requests`: 2 is outside 4..=2048"), "{s}");
        assert_eq!(Config::parse(Path::new("c.toml"), "[io]\nnr_requests = 64\n").unwrap().io.nr_requests, 64);
        let s = Config::parse(Path::new("c.toml"), "[prefetch]\nmax_mb = 100000\n").unwrap_err().to_string();
        assert_eq!(s, "c.toml: field `prefetch.max_mb`: 100000 is above 65536 (64 GiB)");
        let c = Config::parse(Path::new("c.toml"), "[prefetch]\nenabled = false\nmax_mb = 16\n").unwrap();
        assert_eq!((c.prefetch.enabled, c.prefetch.max_mb, c.prefetch.max_files), (false, 16, 512));
    }

    #[test]
    fn the_shipped_config_is_the_default_with_the_desktop_integrations_on() {
        // The package's config is a desktop install: focus following and D-Bus on "auto"
        // (off in the built-in defaults, see DbusSection); every other value the default.
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist/agent.toml");
        let mut want = Config::default();
        assert_eq!((want.focus.x11, want.dbus.enabled), (Toggle::Off, Toggle::Off));
        want.focus.x11 = Toggle::Auto;
        want.dbus.enabled = Toggle::Auto;
        assert_eq!(
            Config::load(&p).unwrap(),
            want,
            "dist/agent.toml differs from Config::default() in more than [focus] x11 and [dbus] enabled"
        );
    }

    #[test]
    fn fg_group_is_true_false_or_switch() {
        let g = |v: &str| Config::parse(Path::new("a.toml"), &format!("[io]\nfg_group = {v}\n")).map(|c| c.io.fg_group);
        assert_eq!(g("true").unwrap(), FgGroup::Always);
        assert_eq!(g("false").unwrap(), FgGroup::Never);
        assert_eq!(g("\"switch\"").unwrap(), FgGroup::Switch);
        assert_eq!(g("\"never\"").unwrap(), FgGroup::Never);
        let e = g("\"sometimes\"").unwrap_err().to_string();
        assert!(e.starts_with("a.toml: ") && e.contains("line 2") && e.contains(r#"true, false or "switch""#), "{e}");
        assert!(FgGroup::Switch.applies(false) && !FgGroup::Switch.applies(true));
        // `fresh_fg_group` acts on a launch's group, which only `true` makes.
        let e = Config::parse(Path::new("a.toml"), "[io]\nfresh_fg_group = true\n").unwrap_err().to_string();
        assert!(e.contains("io.fresh_fg_group") && e.contains("fg_group = true"), "{e}");
        assert!(Config::parse(Path::new("a.toml"), "[io]\nfg_group = true\nfresh_fg_group = true\n").is_ok());
        let mut c = Config::default();
        c.io.fg_group = FgGroup::Switch;
        let text = toml::to_string(&c).unwrap();
        assert!(text.contains("fg_group = \"switch\""), "{text}");
        assert_eq!(Config::parse(Path::new("x"), &text).unwrap(), c);
    }

    #[test]
    fn default_round_trips_through_toml() {
        let text = toml::to_string(&Config::default()).unwrap();
        assert_eq!(Config::parse(Path::new("x"), &text).unwrap(), Config::default());
    }
}
