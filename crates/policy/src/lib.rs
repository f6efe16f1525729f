//! Foreground-first policies as plain values: which seam of which layer a policy changes.
//!
//! A [`Policy`] is a set of decisions, one per seam the simulator exposes:
//!
//! | seam | layer | stock Android |
//! |---|---|---|
//! | [`Policy::classify_io`] | every layer: FG/BG tag on tasks, pages and requests | tasks by cgroup only |
//! | [`Policy::alloc_gate`] | page cache: pause BG page allocation while an FG request is in the page cache ([`GateScope`]) | off |
//! | [`Policy::reclaim`] | page cache: victim order | one global LRU |
//! | [`Policy::dispatch`] | block layer: where a new request is inserted | the I/O scheduler |
//! | [`Policy::device_order`] | device firmware: command priority | reads before writes |
//! | [`Policy::cpu`] | CPU: group weights of FG and BG | 1024 / 110 |
//! | [`Policy::boost`] | block layer and device: boost async I/O a task is blocked on (QASIO) | off |
//! | [`Policy::fg_inherit`] | every layer: I/O an FG task waits on, even through the journal, is FG | off |
//! | [`Policy::ftc`] | framework → CPU: promote the weights of a user-interactive task chain (FTC) | off |
//! | [`Policy::vt_cfs`] | CPU: VT-CFS instead of the scenario's CPU scheduler | the scenario's (CFS) |
//! | [`Policy::agent`] | every layer, as the real agent acts: its classes, weights, idle I/O class, pause and write-back hold ([`agent`]) | off |
//!
//! Every decision is a pure function here, applied by one module of the simulator (its policy
//! seam, `world::priority`): [`device_class`] (the device's command priority),
//! [`request_is_fg`] and [`task_is_fg`] (FastTrack's classification), [`on_block`] (QASIO's
//! boost and forefront's inheritance for a request a task waits on), [`alloc_gate_pauses`]
//! (FastTrack's Page Allocator), and the others below them. [`Hook`] names every counted
//! decision.
//!
//! The simulator counts every time a seam changes a decision (`hooks` in run reports), so a
//! policy that silently does nothing shows up.
//!
//! ```
//! let p = forefront_policy::Policy::by_name("android").unwrap();
//! assert_eq!(p.device_order, forefront_policy::DeviceOrder::ReadFirst);
//! ```
//!
//! [`classify`] holds the agent's pure FG/interactive/BG classification of real processes (who
//! is foreground, who serves it, who is background; membership follows forks):
//!
//! ```
//! use forefront_policy::classify::{classify, Class, Foreground, Process, Rules};
//! let procs = [
//!     Process { pid: 10, ppid: 1, uid: 1000, comm: "browser".into(), cgroup: "/".into() },
//!     Process { pid: 11, ppid: 10, uid: 1000, comm: "renderer".into(), cgroup: "/".into() },
//!     Process { pid: 20, ppid: 1, uid: 1000, comm: "updater".into(), cgroup: "/".into() },
//! ];
//! let rules = Rules { scope_uids: vec![1000], ..Rules::default() };
//! let classes = classify(&procs, &Foreground::Pids(vec![10]), &rules);
//! assert_eq!(classes[&11], Class::Foreground); // membership follows forks
//! assert_eq!(classes[&20], Class::Background);
//! ```

pub mod agent;
pub mod classify;

pub use classify::Class;

use serde::Serialize;

/// Reclaim victim order (page cache seam).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reclaim {
    Global,
    BackgroundFirst,
}

/// Where the block layer inserts a new request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dispatch {
    /// Everything through the I/O scheduler.
    Scheduler,
    /// Foreground requests straight to the dispatch queue.
    ForegroundDirect,
}

/// Device command priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceOrder {
    /// Reads before writes, FIFO within each (stock eMMC/UFS firmware).
    ReadFirst,
    /// FG read > FG write > BG read > BG write.
    ForegroundFirst,
}

/// QASIO's boost of asynchronous I/O that a task is blocked on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Boost {
    Off,
    /// The I/O scheduler moves the request ahead of other async requests (QASIO, FAST'15).
    Scheduler,
    /// As `Scheduler`, and a request already in the device's command queue moves ahead of the
    /// other commands of its class there (where the device queues more than one command).
    SchedulerAndDevice,
}

/// Which foreground waits close FastTrack's allocation gate ([`Policy::alloc_gate`]).
///
/// FastTrack (ATC'18, the Page Allocator): when an FG request arrives, BG page allocations
/// in progress are checkpointed and paused; the FG request is served in the page cache; then BG
/// allocation resumes. The gate is a page-cache mechanism: the block layer and the device have
/// FastTrack's own components (the I/O Dispatcher, the Device I/O Scheduler).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateScope {
    /// As the paper describes it: while an FG task waits *in the page cache* — for the fill of a
    /// page its own read allocated and locked (`filemap_read` → `wait_on_page_locked` on a
    /// miss), or for a page or metadata buffer someone else's I/O holds (`lock_page`,
    /// `wait_on_page_writeback` on a stable page, `lock_buffer`). A wait in write-back or sync
    /// paths (fsync's `filemap_write_and_wait`, an own sync write) or in the journal (a handle,
    /// a commit) is past the page cache: the gate stays open.
    PageCache,
    /// Widened (for ablations and the failure tests): while an FG task waits for any I/O,
    /// directly or through the journal — the model before issue 25, which pauses BG reads for
    /// the whole of an FG fsync and so hides the device-internal inversion from FastTrack--.
    AnyIo,
}

/// What a foreground task's new wait is, for the allocation gate's trigger ([`counts_fg_io`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FgWait {
    /// Not a wait for I/O (CPU, timer, throttling, allocation, IPC, …).
    NotIo,
    /// A wait inside the page cache (see [`GateScope::PageCache`]).
    PageCache,
    /// A wait for I/O past the page cache: write-back, an own sync write, the journal.
    PastPageCache,
}

/// CPU weights of the foreground and background groups; `None` keeps the scenario's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuWeights {
    pub fg_shares: Option<u32>,
    pub bg_shares: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Policy {
    pub name: String,
    pub description: &'static str,
    /// Tag pages and requests FG/BG by the foreground UID (App Status Detector) instead of
    /// only by the submitting task's cgroup.
    pub classify_io: bool,
    pub alloc_gate: bool,
    /// Which FG waits close the allocation gate.
    pub alloc_gate_scope: GateScope,
    pub reclaim: Reclaim,
    pub dispatch: Dispatch,
    pub device_order: DeviceOrder,
    pub cpu: CpuWeights,
    pub boost: Boost,
    /// Requests an FG task waits on — directly, or through a journal handle or commit — are
    /// foreground in every layer from then on (dispatch queue, device priority), and so is the
    /// journal I/O of a commit an FG task waits for. Needs `classify_io`.
    pub fg_inherit: bool,
    /// FTC (SPE'15): at an input event the framework marks the tasks of the user-interactive
    /// chain (input dispatch, the app's main thread, the workers it hands work to — even in the
    /// BG group —, binder servers it calls, the compositor) and promotes their weights so
    /// their slice reaches the target slice (10 ms instant, 20 ms continuous interactions);
    /// restored when the chain's last interaction is displayed. Under VT-CFS the marked tasks
    /// are also placed to run at the next tick when they wake.
    pub ftc: bool,
    /// VT-CFS (SPE'15) replaces CFS: preemption at every tick λ, no weighted slice.
    pub vt_cfs: bool,
    /// The agent (`forefront agent`) as a simulator policy, driven by its own configuration:
    /// it classifies the apps as the daemon classifies processes ([`agent::rules`],
    /// [`classify::classify`]), sets the knobs of each class ([`agent::knobs`]) and pauses the
    /// background around foreground bursts through the daemon's [`agent::pause::PauseGate`].
    /// `None` for every other policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Box<agent::config::Config>>,
}

#[derive(Debug, thiserror::Error)]
#[error(
    "unknown policy `{0}`{hint} (known: {known}, agent (the agent's TOML, `--agent-config`); or any of them plus components: +{components})",
    hint = UnknownPolicy::hint(&self.0),
    known = Policy::names().join(", "),
    components = Policy::components().join(", +")
)]
pub struct UnknownPolicy(pub String);

impl UnknownPolicy {
    /// "; did you mean …?" for the first part of `name` that is not a policy (the base) or a
    /// component (after a `+`), suggesting the closest valid name for that part.
    fn hint(name: &str) -> String {
        let closest = |part: &str, candidates: Vec<&'static str>| {
            candidates
                .into_iter()
                .map(|c| (strsim::jaro_winkler(part, c), c))
                .filter(|(score, _)| *score >= 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, c)| c)
        };
        let mut parts = name.split('+');
        let base = parts.next().unwrap_or_default();
        if !Policy::names().contains(&base) {
            return closest(base, Policy::names())
                .map_or_else(String::new, |c| format!("; did you mean `{}`?", name.replacen(base, c, 1)));
        }
        for part in parts {
            if Component::parse(part).is_none() {
                return closest(part, Policy::components())
                    .map_or_else(|| format!("; `{part}` is not a component"), |c| format!("; did you mean `+{c}`?"));
            }
        }
        String::new()
    }
}

impl Policy {
    /// Stock Android: FG/BG CPU groups, CFQ, read-first devices, global LRU.
    pub fn android() -> Policy {
        Policy {
            name: "android".into(),
            description:
                "stock Android: cpu.shares FG/BG groups, the scenario's I/O scheduler, global LRU, read-first device queue",
            classify_io: false,
            alloc_gate: false,
            alloc_gate_scope: GateScope::PageCache,
            reclaim: Reclaim::Global,
            dispatch: Dispatch::Scheduler,
            device_order: DeviceOrder::ReadFirst,
            cpu: CpuWeights { fg_shares: None, bg_shares: None },
            boost: Boost::Off,
            fg_inherit: false,
            ftc: false,
            vt_cfs: false,
            agent: None,
        }
    }

    /// The agent as a simulator policy with `cfg` (the agent's TOML; `Config::default()` is
    /// the shipped `dist/agent.toml`): stock Android's layers, and the agent's classification,
    /// weights, I/O classes, pause and write-back hold on top (see [`Policy::agent`]).
    pub fn agent(cfg: agent::config::Config) -> Policy {
        let mut p = Policy::android();
        p.name = "agent".into();
        p.description = "the forefront agent driven by its TOML: FG/BG/interactive by its rules, BFQ/CPU weights, idle I/O class, a bounded pause (freezer) with write-back held";
        p.agent = Some(Box::new(cfg));
        p
    }

    /// FTC (SPE'15): stock Android plus the framework-assisted promotion of the user-interactive
    /// task chain's weights. `ftc+vt-cfs` is the paper's full system.
    pub fn ftc() -> Policy {
        let mut p = Policy::android();
        p.name = "ftc".into();
        p.description = "FTC: stock Android plus weight promotion of the user-interactive task chain (input → main → workers → binder → compositor)";
        Component::Ftc.apply(&mut p);
        p
    }

    /// VT-CFS (SPE'15): stock Android on VT-CFS (preemption at every tick λ, no weighted slice).
    pub fn vt_cfs() -> Policy {
        let mut p = Policy::android();
        p.name = "vt-cfs".into();
        p.description = "VT-CFS: stock Android with CFS replaced by VT-CFS (preempt at every tick, no weighted slice)";
        Component::VtCfs.apply(&mut p);
        p
    }

    /// QASIO (FAST'15): stock Android plus the boost of asynchronous I/O that any task is
    /// blocked on, directly or through the journal (its six dependency types), in the I/O
    /// scheduler — as on its eMMC phone, which queues one command. `qasio+qa-device` also
    /// reorders the device's command queue.
    pub fn qasio() -> Policy {
        let mut p = Policy::android();
        p.name = "qasio".into();
        p.description = "QASIO: stock Android plus boosting, in the I/O scheduler, async I/O a task waits on (directly or through the journal)";
        Component::QaBoost.apply(&mut p);
        p
    }

    /// forefront: FastTrack + QASIO + FTC on VT-CFS. The journal and write-back I/O an FG task
    /// waits on is boosted and treated as FG in every layer, including the device's command
    /// order; the CPU side promotes the user-interactive chain and preempts at every tick.
    pub fn forefront() -> Policy {
        let mut p = Policy::fasttrack();
        p.name = "forefront".into();
        p.description = "FastTrack + QASIO + FTC/VT-CFS: what an FG task or its interactive chain waits on is FG in every layer, the CPU included";
        Component::QaDevice.apply(&mut p);
        Component::FgInherit.apply(&mut p);
        Component::Ftc.apply(&mut p);
        Component::VtCfs.apply(&mut p);
        p
    }

    /// FastTrack-- (ATC'18): App Status Detector, Page Allocator, Page Reclaimer, I/O
    /// Dispatcher — everything but the device scheduler (what ran on real phones).
    pub fn fasttrack_minus() -> Policy {
        let mut p = Policy::android();
        p.name = "fasttrack-minus".into();
        p.description = "FastTrack--: FG by UID, BG allocation pause, BG-first reclaim, FG requests straight to dispatch";
        for c in [Component::Alloc, Component::Reclaim, Component::Dispatch] {
            c.apply(&mut p);
        }
        p
    }

    /// Full FastTrack: FastTrack-- plus the device I/O scheduler (FG read > FG write > BG read > BG write).
    pub fn fasttrack() -> Policy {
        let mut p = Policy::fasttrack_minus();
        p.name = "fasttrack".into();
        p.description = "FastTrack: FastTrack-- plus device command priority FG read > FG write > BG read > BG write";
        Component::Device.apply(&mut p);
        p
    }

    /// Every named policy; `base+component` combinations are accepted too (components:
    /// ft-alloc, ft-alloc-wide, ft-reclaim, ft-dispatch, ft-device, qa-boost, qa-device, fg-inherit, ftc,
    /// vt-cfs).
    pub fn names() -> Vec<&'static str> {
        vec!["android", "fasttrack-minus", "fasttrack", "qasio", "ftc", "vt-cfs", "forefront"]
    }

    /// The CPU-side policies of the FTC + VT-CFS paper, stock first.
    pub fn cpu_policies() -> Vec<&'static str> {
        vec!["android", "ftc", "vt-cfs", "ftc+vt-cfs"]
    }

    /// The single-component ablations of FastTrack.
    pub fn ablations() -> Vec<&'static str> {
        vec!["android+ft-alloc", "android+ft-reclaim", "android+ft-dispatch", "android+ft-device"]
    }

    /// The ablations of QASIO and forefront: QASIO whose boost also reaches the device queue,
    /// and FastTrack with each of forefront's two additions alone.
    pub fn qasio_ablations() -> Vec<&'static str> {
        vec!["qasio+qa-device", "fasttrack+qa-device", "fasttrack+fg-inherit"]
    }

    /// Every component name accepted after a `+`.
    pub fn components() -> Vec<&'static str> {
        vec![
            "ft-alloc",
            "ft-alloc-wide",
            "ft-reclaim",
            "ft-dispatch",
            "ft-device",
            "qa-boost",
            "qa-device",
            "fg-inherit",
            "ftc",
            "vt-cfs",
        ]
    }

    pub fn by_name(name: &str) -> Result<Policy, UnknownPolicy> {
        let mut parts = name.split('+');
        let base = parts.next().unwrap_or_default();
        let mut p = match base {
            "android" => Policy::android(),
            "fasttrack-minus" => Policy::fasttrack_minus(),
            "fasttrack" => Policy::fasttrack(),
            "qasio" => Policy::qasio(),
            "ftc" => Policy::ftc(),
            "vt-cfs" => Policy::vt_cfs(),
            "forefront" => Policy::forefront(),
            // Not in `names()`: it is the twin of a real machine's agent, not one of the
            // papers' policies that every comparison table lists.
            "agent" => Policy::agent(agent::config::Config::default()),
            _ => return Err(UnknownPolicy(name.to_string())),
        };
        for part in parts {
            let c = Component::parse(part).ok_or_else(|| UnknownPolicy(name.to_string()))?;
            c.apply(&mut p);
        }
        if name.contains('+') {
            p.name = name.to_string();
            p.description = "a combination of components (see the name)";
        }
        Ok(p)
    }
}

/// One component of FastTrack, QASIO or forefront, for ablations. Every FastTrack component and
/// `fg-inherit` need the App Status Detector (FG/BG classification by UID), so applying any of
/// them turns it on; QASIO's boost does not (it is priority-agnostic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Alloc,
    /// The allocation gate widened to every FG I/O wait ([`GateScope::AnyIo`]; turns the gate
    /// on): an ablation, not FastTrack.
    AllocWide,
    Reclaim,
    Dispatch,
    Device,
    /// QASIO's boost in the I/O scheduler.
    QaBoost,
    /// QASIO's boost in the I/O scheduler and the device queue.
    QaDevice,
    /// forefront: what an FG task waits on is FG.
    FgInherit,
    /// FTC: promote the user-interactive task chain.
    Ftc,
    /// VT-CFS instead of CFS.
    VtCfs,
}

impl Component {
    pub fn parse(s: &str) -> Option<Component> {
        Some(match s {
            "ft-alloc" => Component::Alloc,
            "ft-alloc-wide" => Component::AllocWide,
            "ft-reclaim" => Component::Reclaim,
            "ft-dispatch" => Component::Dispatch,
            "ft-device" => Component::Device,
            "qa-boost" => Component::QaBoost,
            "qa-device" => Component::QaDevice,
            "fg-inherit" => Component::FgInherit,
            "ftc" => Component::Ftc,
            "vt-cfs" => Component::VtCfs,
            _ => return None,
        })
    }

    pub fn apply(self, p: &mut Policy) {
        if !matches!(self, Component::QaBoost | Component::QaDevice | Component::Ftc | Component::VtCfs) {
            p.classify_io = true;
        }
        match self {
            Component::Alloc => p.alloc_gate = true,
            Component::AllocWide => {
                p.alloc_gate = true;
                p.alloc_gate_scope = GateScope::AnyIo;
            }
            Component::Reclaim => p.reclaim = Reclaim::BackgroundFirst,
            Component::Dispatch => p.dispatch = Dispatch::ForegroundDirect,
            Component::Device => p.device_order = DeviceOrder::ForegroundFirst,
            Component::QaBoost => {
                if p.boost == Boost::Off {
                    p.boost = Boost::Scheduler;
                }
            }
            Component::QaDevice => p.boost = Boost::SchedulerAndDevice,
            Component::FgInherit => p.fg_inherit = true,
            Component::Ftc => p.ftc = true,
            Component::VtCfs => p.vt_cfs = true,
        }
    }
}

/// The device command priority of a request (lower is served first; FIFO within a class).
/// `boosted` applies only under [`Boost::SchedulerAndDevice`]: a boosted request goes ahead of
/// the other requests of its class, never ahead of a better class.
pub fn device_class(p: &Policy, read: bool, fg: bool, boosted: bool) -> u8 {
    let base = match p.device_order {
        // Reads before writes (stock eMMC/UFS firmware, FastTrack §3).
        DeviceOrder::ReadFirst => u8::from(!read),
        // FG read > FG write > BG read > BG write.
        DeviceOrder::ForegroundFirst => (if fg { 0 } else { 2 }) + u8::from(!read),
    };
    2 * base + u8::from(!(boosted && p.boost == Boost::SchedulerAndDevice))
}

/// Whether a new request counts as foreground (the classification every later layer sees).
/// Stock Android knows only the submitter's cgroup, and kernel threads are never foreground;
/// FastTrack classifies sync I/O by the submitting task and async write-back by the pages'
/// owner (the App Status Detector's UID).
pub fn request_is_fg(p: &Policy, kernel_thread: bool, task_fg: bool, owner_fg: bool) -> bool {
    if p.classify_io && kernel_thread {
        owner_fg
    } else {
        !kernel_thread && task_fg
    }
}

// ---------------------------------------------------------------- the simulator's decisions
//
// Every decision the simulator's policy seam (`forefront_sim`'s `world::priority`) applies is
// one of these pure functions: the seam gathers the facts (who waits, on what request, in which
// state), asks here, and carries the answer out in the model's layers.

/// Whether a task counts as foreground. Stock Android knows only cgroups (the FG CPU group); a
/// classifying policy uses the FG app's UID (FastTrack's App Status Detector).
pub fn task_is_fg(p: &Policy, in_fg_group: bool, uid_is_fg: bool) -> bool {
    if p.classify_io {
        uid_is_fg
    } else {
        in_fg_group
    }
}

/// Whether the framework tells the kernel the new FG UID when the foreground app changes
/// (counted as [`Hook::AppStatusFgUid`]).
pub fn announces_fg_uid(p: &Policy) -> bool {
    p.classify_io
}

/// The CPU weights (FG group, BG group) given the scenario's.
pub fn cpu_shares(p: &Policy, fg: u32, bg: u32) -> (u32, u32) {
    (p.cpu.fg_shares.unwrap_or(fg), p.cpu.bg_shares.unwrap_or(bg))
}

/// Whether the run's CPU scheduler is VT-CFS whatever the scenario's.
pub fn runs_vt_cfs(p: &Policy) -> bool {
    p.vt_cfs
}

/// Whether FTC promotes the weights of the user-interactive chain's tasks.
pub fn promotes_chain(p: &Policy) -> bool {
    p.ftc
}

/// FastTrack's Page Allocator, its trigger: a task that starts waiting `wait` counts as a
/// foreground request in the page cache — a foreground user task waiting in the page cache, or
/// for any I/O when the gate is widened ([`GateScope`]).
pub fn counts_fg_io(p: &Policy, user_task: bool, wait: FgWait, task_fg: bool) -> bool {
    let covered = match p.alloc_gate_scope {
        GateScope::PageCache => wait == FgWait::PageCache,
        GateScope::AnyIo => wait != FgWait::NotIo,
    };
    p.alloc_gate && user_task && covered && task_fg
}

/// FastTrack's Page Allocator, its gate: a background user task that holds no journal handle
/// (a pause there would stall the foreground's commit) pauses at its next allocation or copy
/// checkpoint while `fg_io_waiting` foreground tasks wait where the gate covers ([`counts_fg_io`]).
pub fn alloc_gate_pauses(p: &Policy, fg_io_waiting: u32, bg_user_task: bool, holds_handle: bool) -> bool {
    p.alloc_gate && fg_io_waiting > 0 && bg_user_task && !holds_handle
}

/// Whether paused allocations (and allocations waiting for reclaim) may go on now.
pub fn alloc_may_proceed(p: &Policy, fg_io_waiting: u32) -> bool {
    !(p.alloc_gate && fg_io_waiting > 0)
}

/// Whether a new request goes straight to the dispatch queue (FastTrack's I/O Dispatcher),
/// bypassing the I/O scheduler.
pub fn inserts_direct(p: &Policy, request_fg: bool) -> bool {
    p.dispatch == Dispatch::ForegroundDirect && request_fg
}

/// Whether a task that starts waiting for I/O (directly or through the journal) sets off the
/// walk of the wait graph behind it: QASIO's detection or forefront's inheritance.
pub fn walks_on_block(p: &Policy, io: bool) -> bool {
    io && (p.boost != Boost::Off || p.fg_inherit)
}

/// Whether QASIO boosts a request a task waits on: an asynchronous one (a sync request is
/// already served as such).
pub fn boosts(p: &Policy, request_sync: bool) -> bool {
    p.boost != Boost::Off && !request_sync
}

/// Whether a boost also reaches the device's command queue.
pub fn boosts_in_device(p: &Policy) -> bool {
    p.boost == Boost::SchedulerAndDevice
}

/// What one request found behind a blocked task (not yet in service) gets, by the rules of
/// QASIO and forefront ([`on_block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct OnBlock {
    /// QASIO: the dependency type found (counted once per request and type), and the request is
    /// boosted.
    pub boost: Option<Dependency>,
    /// forefront: the request becomes foreground in every layer.
    pub inherit: bool,
    /// forefront: the wait reaches the committing transaction's ordered data, all of which the
    /// commit waits for: every ordered write still queued becomes foreground.
    pub inherit_ordered: bool,
}

/// QASIO's rule and forefront's inheritance for one request behind a task that just blocked:
/// `waiter_fg` — the task whose wait passes through it is a foreground user task; `dep` — the
/// dependency type of the wait (None for a wait on one's own, sync I/O);
/// `ordered_commit` — the wait reaches the request through a commit's data=ordered flush.
pub fn on_block(
    p: &Policy,
    waiter_fg: bool,
    request_sync: bool,
    request_fg: bool,
    dep: Option<Dependency>,
    ordered_commit: bool,
) -> OnBlock {
    let inherits = p.fg_inherit && waiter_fg;
    OnBlock {
        boost: dep.filter(|_| boosts(p, request_sync)),
        inherit: inherits && !request_fg,
        inherit_ordered: inherits && ordered_commit,
    }
}

/// forefront: a foreground task waits in direct reclaim, so the write-back that cleans pages for
/// it inherits its priority.
pub fn reclaim_wait_inherits(p: &Policy, task_fg: bool) -> bool {
    p.fg_inherit && task_fg
}

/// Whether async write-back requests are tracked for [`reclaim_wait_inherits`].
pub fn tracks_reclaim_writeback(p: &Policy) -> bool {
    p.fg_inherit
}

/// Whether reclaim takes background pages first (FastTrack's Page Reclaimer).
pub fn reclaims_bg_first(p: &Policy) -> bool {
    p.reclaim == Reclaim::BackgroundFirst
}

/// The device's reorderings as reported hooks: overtakes by reads under the stock order (0
/// under FastTrack's), and by foreground commands under FastTrack's.
pub fn device_overtake_hooks(p: &Policy, reorders: u64) -> Vec<(&'static str, u64)> {
    match p.device_order {
        DeviceOrder::ReadFirst => vec![("device.read_first_overtakes", reorders)],
        DeviceOrder::ForegroundFirst => {
            vec![("device.read_first_overtakes", 0), ("device.fg_first_overtakes", reorders)]
        }
    }
}

/// QASIO's dependency types (FAST'15 §3): why a task ends up blocked on asynchronous I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Dependency {
    /// Modifying a metadata buffer under async (checkpoint) write-back.
    DMeta,
    /// Modifying a data page under async write-back (stable pages).
    DData,
    /// fsync/truncate (or the commit's data=ordered flush) waiting for async write-back.
    DSync,
    /// Waiting for discards issued at the end of a commit.
    DDiscard,
    /// Cannot start a journal handle: the locked transaction waits on a QASIO.
    IJHandle,
    /// fsync waits for a commit that waits on a QASIO.
    IJCommit,
}

impl Dependency {
    pub const ALL: [Dependency; 6] = [
        Dependency::DMeta,
        Dependency::DData,
        Dependency::DSync,
        Dependency::DDiscard,
        Dependency::IJHandle,
        Dependency::IJCommit,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Dependency::DMeta => "d_meta",
            Dependency::DData => "d_data",
            Dependency::DSync => "d_sync",
            Dependency::DDiscard => "d_discard",
            Dependency::IJHandle => "i_jhandle",
            Dependency::IJCommit => "i_jcommit",
        }
    }
}

/// Every decision a policy makes that changes the stock outcome, counted per run (`hooks` in
/// reports). Names are the JSON contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hook {
    /// App Status Detector: the framework wrote the FG UID.
    AppStatusFgUid,
    /// A task moved between the FG and BG CPU groups.
    CpuGroupMove,
    /// FastTrack's Page Allocator paused a BG allocation.
    PageAllocBgPaused,
    /// BG-first reclaim freed pages.
    ReclaimBgFirst,
    /// BG-first reclaim found only dirty or busy BG pages first.
    ReclaimBgDirtyFirst,
    /// An FG request went straight to the dispatch queue.
    DispatchFgDirect,
    /// A task was found blocked on a queued async request through this dependency (counted
    /// once per request and type).
    QasioDetected(Dependency),
    /// The I/O scheduler moved a request ahead of other async requests.
    QasioBoostScheduler,
    /// A request boosted for this dependency went to the device with no other async request
    /// dispatched between its boost and its dispatch (the rule the tests check).
    QasioServedFirst(Dependency),
    /// A boosted command went ahead of the others of its class in the device: entering the
    /// device queue boosted, or boosted while it waited there.
    QasioBoostDevice,
    /// A request an FG task waits on became FG.
    FgInherited,
    /// FTC raised the weight of a task of the user-interactive chain (at its join or wake-up).
    FtcPromoted,
    /// FTC restored a chain task's weight when the chain's last interaction was displayed.
    FtcRestored,
    /// Cells: a virtual phone was put on the screen.
    CellSwitch,
    /// Cells: a `switch_cell` named a cell this run does not have (fewer busy cells, or the
    /// plain phone): nothing happened.
    CellSwitchMissing,
    /// Cells: an app of a background cell asked for the foreground; it becomes the phone's
    /// foreground app only when its cell is switched to.
    CellForegroundDeferred,
    /// The agent: a foreground burst began a pause (its gate granted one).
    AgentPause,
    /// The agent: a burst got no pause (within `min_gap_ms` of the last one).
    AgentPauseRefused,
    /// The agent: a pause ended because the foreground did no block I/O for `idle_end_ms`.
    AgentPauseIdleEnd,
    /// The agent: a pause ended at its `max_ms` deadline.
    AgentPauseDeadline,
    /// The agent: a background task stopped at its next op (the freezer).
    AgentFrozen,
    /// The agent: a pause held buffered write-back.
    AgentWritebackHeld,
    /// The agent: a request of a task in the idle I/O class.
    AgentIoprioIdle,
}

impl Hook {
    pub fn name(self) -> &'static str {
        match self {
            Hook::AppStatusFgUid => "app_status.fg_uid_set",
            Hook::CpuGroupMove => "cpu.group_move",
            Hook::PageAllocBgPaused => "page_alloc.bg_paused",
            Hook::ReclaimBgFirst => "reclaim.bg_first",
            Hook::ReclaimBgDirtyFirst => "reclaim.bg_dirty_first",
            Hook::DispatchFgDirect => "dispatch.fg_direct",
            Hook::QasioDetected(Dependency::DMeta) => "qasio.detected.d_meta",
            Hook::QasioDetected(Dependency::DData) => "qasio.detected.d_data",
            Hook::QasioDetected(Dependency::DSync) => "qasio.detected.d_sync",
            Hook::QasioDetected(Dependency::DDiscard) => "qasio.detected.d_discard",
            Hook::QasioDetected(Dependency::IJHandle) => "qasio.detected.i_jhandle",
            Hook::QasioDetected(Dependency::IJCommit) => "qasio.detected.i_jcommit",
            Hook::QasioBoostScheduler => "qasio.boost.scheduler",
            Hook::QasioServedFirst(Dependency::DMeta) => "qasio.served_first.d_meta",
            Hook::QasioServedFirst(Dependency::DData) => "qasio.served_first.d_data",
            Hook::QasioServedFirst(Dependency::DSync) => "qasio.served_first.d_sync",
            Hook::QasioServedFirst(Dependency::DDiscard) => "qasio.served_first.d_discard",
            Hook::QasioServedFirst(Dependency::IJHandle) => "qasio.served_first.i_jhandle",
            Hook::QasioServedFirst(Dependency::IJCommit) => "qasio.served_first.i_jcommit",
            Hook::QasioBoostDevice => "qasio.boost.device",
            Hook::FgInherited => "forefront.fg_inherited",
            Hook::FtcPromoted => "ftc.promoted",
            Hook::FtcRestored => "ftc.restored",
            Hook::CellSwitch => "cells.switch",
            Hook::CellSwitchMissing => "cells.switch_missing",
            Hook::CellForegroundDeferred => "cells.foreground_deferred",
            Hook::AgentPause => "agent.pause",
            Hook::AgentPauseRefused => "agent.pause_refused",
            Hook::AgentPauseIdleEnd => "agent.pause_idle_end",
            Hook::AgentPauseDeadline => "agent.pause_deadline",
            Hook::AgentFrozen => "agent.frozen",
            Hook::AgentWritebackHeld => "agent.writeback_held",
            Hook::AgentIoprioIdle => "agent.ioprio_idle_requests",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fasttrack_minus_is_fasttrack_without_the_device_scheduler() {
        let mut minus = Policy::by_name("fasttrack-minus").unwrap();
        let full = Policy::by_name("fasttrack").unwrap();
        assert_eq!(minus.device_order, DeviceOrder::ReadFirst);
        assert_eq!(full.device_order, DeviceOrder::ForegroundFirst);
        minus.device_order = DeviceOrder::ForegroundFirst;
        minus.name = full.name.clone();
        minus.description = full.description;
        assert_eq!(minus, full);
    }

    #[test]
    fn ablations_change_one_seam_each() {
        let base = Policy::android();
        for name in Policy::ablations() {
            let p = Policy::by_name(name).unwrap();
            let changed = [
                p.alloc_gate != base.alloc_gate,
                p.reclaim != base.reclaim,
                p.dispatch != base.dispatch,
                p.device_order != base.device_order,
            ];
            assert_eq!(changed.iter().filter(|&&c| c).count(), 1, "{name}");
            assert!(p.classify_io);
        }
        assert!(Policy::by_name("android+ft-bogus").is_err());
        assert!(Policy::by_name("qasio2").is_err());
        let msg = |n: &str| Policy::by_name(n).unwrap_err().to_string();
        assert!(msg("fasttrak").contains("did you mean `fasttrack`?"), "{}", msg("fasttrak"));
        assert!(msg("android+ft-devic").contains("did you mean `+ft-device`?"), "{}", msg("android+ft-devic"));
        assert!(msg("android+zzz").contains("`zzz` is not a component") && msg("zzz").contains("+vt-cfs"), "{}", msg("zzz"));
    }

    #[test]
    fn qasio_is_priority_agnostic_and_forefront_is_fasttrack_plus_qasio_plus_ftc_vtcfs() {
        let q = Policy::by_name("qasio").unwrap();
        assert_eq!(q.boost, Boost::Scheduler);
        assert!(!q.classify_io && !q.fg_inherit && !q.alloc_gate);
        let f = Policy::by_name("forefront").unwrap();
        let mut ft = Policy::by_name("fasttrack+qa-device+fg-inherit+ftc+vt-cfs").unwrap();
        ft.name = f.name.clone();
        ft.description = f.description;
        assert_eq!(ft, f);
        for a in Policy::qasio_ablations() {
            assert!(Policy::by_name(a).is_ok(), "{a}");
        }
        // The CPU policies change only the CPU seams and need no FG/BG classification.
        for name in Policy::cpu_policies() {
            let p = Policy::by_name(name).unwrap();
            let mut stock = Policy::android();
            stock.ftc = p.ftc;
            stock.vt_cfs = p.vt_cfs;
            stock.name = p.name.clone();
            stock.description = p.description;
            assert_eq!(stock, p, "{name}");
        }
        assert!(Policy::by_name("ftc+vt-cfs").map(|p| p.ftc && p.vt_cfs).unwrap());
    }

    #[test]
    fn device_class_orders_and_boosts_within_a_class() {
        let stock = Policy::android();
        let ft = Policy::fasttrack();
        let q = Policy::by_name("qasio+qa-device").unwrap();
        // Stock: reads before writes whatever FG/BG; a boost is ignored without the device boost.
        assert!(device_class(&stock, true, false, false) < device_class(&stock, false, true, false));
        assert_eq!(device_class(&stock, false, false, true), device_class(&stock, false, false, false));
        // QASIO: a boosted write goes ahead of other writes but not ahead of reads.
        assert!(device_class(&q, false, false, true) < device_class(&q, false, false, false));
        assert!(device_class(&q, true, false, false) < device_class(&q, false, false, true));
        // FastTrack: FG read > FG write > BG read > BG write.
        let order = [(true, true), (false, true), (true, false), (false, false)];
        for w in order.windows(2) {
            assert!(device_class(&ft, w[0].0, w[0].1, false) < device_class(&ft, w[1].0, w[1].1, false));
        }
    }

    #[test]
    fn on_block_boosts_async_io_and_inherits_only_for_fg_waiters() {
        let q = Policy::qasio();
        let f = Policy::forefront();
        let stock = Policy::android();
        let dep = Some(Dependency::DData);
        // QASIO: async I/O with a dependency type is boosted, whoever waits; sync I/O is not.
        assert_eq!(on_block(&q, false, false, false, dep, false).boost, dep);
        assert_eq!(on_block(&q, true, true, false, dep, false).boost, None);
        assert_eq!(on_block(&q, true, false, false, None, false).boost, None);
        assert!(!on_block(&q, true, false, false, dep, true).inherit, "QASIO is priority-agnostic");
        // forefront: an FG waiter makes a BG request FG (once), and reaches the ordered data.
        let d = on_block(&f, true, true, false, None, true);
        assert!(d.inherit && d.inherit_ordered && d.boost.is_none());
        assert!(!on_block(&f, true, false, true, dep, false).inherit, "already FG");
        assert_eq!(on_block(&f, false, false, false, dep, true), OnBlock { boost: dep, inherit: false, inherit_ordered: false });
        // Stock Android does nothing and does not even walk.
        assert_eq!(on_block(&stock, true, false, false, dep, true), OnBlock::default());
        assert!(!walks_on_block(&stock, true) && walks_on_block(&q, true) && !walks_on_block(&f, false));
    }

    #[test]
    fn the_allocation_gate_closes_only_for_bg_user_tasks_without_a_handle() {
        let ft = Policy::fasttrack();
        assert!(counts_fg_io(&ft, true, FgWait::PageCache, true) && !counts_fg_io(&ft, false, FgWait::PageCache, true));
        assert!(!counts_fg_io(&Policy::qasio(), true, FgWait::PageCache, true));
        // The paper's gate covers the page cache, not an fsync's write-back or the journal; the
        // widened ablation covers every I/O wait; neither covers a wait that is not for I/O.
        assert!(!counts_fg_io(&ft, true, FgWait::PastPageCache, true) && !counts_fg_io(&ft, true, FgWait::PageCache, false));
        let wide = Policy::by_name("fasttrack-minus+ft-alloc-wide").unwrap();
        assert_eq!(wide.alloc_gate_scope, GateScope::AnyIo);
        assert!(counts_fg_io(&wide, true, FgWait::PastPageCache, true) && !counts_fg_io(&wide, true, FgWait::NotIo, true));
        assert!(alloc_gate_pauses(&ft, 1, true, false));
        assert!(!alloc_gate_pauses(&ft, 0, true, false) && !alloc_gate_pauses(&ft, 1, true, true));
        assert!(!alloc_gate_pauses(&ft, 1, false, false) && !alloc_gate_pauses(&Policy::android(), 1, true, false));
        assert!(!alloc_may_proceed(&ft, 1) && alloc_may_proceed(&ft, 0) && alloc_may_proceed(&Policy::android(), 3));
        // Classification: stock Android by cgroup, FastTrack by UID.
        assert!(task_is_fg(&Policy::android(), true, false) && !task_is_fg(&ft, true, false));
        assert_eq!(device_overtake_hooks(&Policy::android(), 7), vec![("device.read_first_overtakes", 7)]);
        assert_eq!(device_overtake_hooks(&ft, 7)[1], ("device.fg_first_overtakes", 7));
    }

    #[test]
    fn hook_names_are_distinct() {
        let mut hooks = vec![
            Hook::AppStatusFgUid,
            Hook::CpuGroupMove,
            Hook::PageAllocBgPaused,
            Hook::ReclaimBgFirst,
            Hook::ReclaimBgDirtyFirst,
            Hook::DispatchFgDirect,
            Hook::QasioBoostScheduler,
            Hook::QasioBoostDevice,
            Hook::FgInherited,
        ];
        hooks.extend(Dependency::ALL.map(Hook::QasioDetected));
        hooks.extend(Dependency::ALL.map(Hook::QasioServedFirst));
        let names: std::collections::BTreeSet<_> = hooks.iter().map(|h| h.name()).collect();
        assert_eq!(names.len(), hooks.len());
    }
}
