//! The kernel knobs a desktop agent turns, on the simulated phone: per task its ioprio class
//! and level and its cgroup's BFQ weight (carried on every request it submits), the cgroup
//! freezer; for a CPU group its weight and `cpu.idle`; and the write-back hold. They are one
//! trait, [`KernelKnobs`], which [`World`] implements over its models: the simulator's side of
//! the daemon's cgroupfs, `ioprio_set` and `/proc/sys/vm` writes. The agent policy
//! (`super::agent`) turns them through it at run time, and a scenario by time with `[[knob]]`
//! ([`forefront_workload::knobs`]); there is no other freezer or write-back hold.
//!
//! What each does here (the models that honour them):
//!
//! - **ioprio, `io_weight`**: stamped on each request the task submits itself
//!   ([`Request::ioprio_class`], [`Request::io_weight`]) — read by BFQ (queue weight and class,
//!   group weight), mq-deadline (its priority classes) and CFQ (classes). Requests the kernel's
//!   threads submit for the task (write-back of its dirty pages, journal commits) carry none,
//!   as on cgroup v1 where the flusher and jbd2 belong to the root group.
//! - **frozen** (cgroup freezer, `cgroup.freeze` / `freezer.state`): a frozen task stops before
//!   its next system call — before its next op, or between the `read()`/`write()` calls of a
//!   chunked read or write op — while a call in progress (waiting for the device, throttled)
//!   finishes: the kernel freezes a task at a signal-delivery point, the return to user space
//!   (simplification: a call's interruptible sleeps, e.g. a throttling pause, are not freezing
//!   points here). Thawing wakes it there. Time frozen is charged as sleep.
//! - **group CPU weight, `cpu.idle`** ([`KernelKnobs::set_group_cpu`]): the group's weight in
//!   `cpu.shares` units (`[[knob]] bg_cpu_weight` is cgroup v2's `cpu.weight`, mapped as the
//!   kernel maps it, `× 1024 / 100`) and `cpu.idle`
//!   ([`forefront_model::cpu::CpuSched::set_group_idle`]: the idle weight and the wake-up
//!   preemption rule).
//! - **write-back hold** (`forefront_agent`'s `writeback` module): `dirty_background_bytes` =
//!   the throttling limit less one page (background write-back waits until dirty data reaches
//!   the limit), and no periodic write-back pass (the agent sets `dirty_expire_centisecs` to a
//!   day, so the flusher's periodic wake-ups find nothing expired; here they are skipped).
//!   Release restores the thresholds and wakes the flusher for its usual checks (what has
//!   expired, the background threshold), as the kernel's next periodic wake-up does within
//!   `dirty_writeback_centisecs` (simplification: at once). It is not a full write-back pass:
//!   the agent leaves `dirty_writeback_centisecs` alone because writing it starts one.
//!
//! Invariants: a user task waits on `Blocker::Idle` only where the freezer stopped it (its
//! knob `frozen` set) or where it died (`super::life`: the freezer's stopping points are a
//! kill's too); `saved` holds the thresholds exactly while write-back is held.

use forefront_engine::SimTime;
use forefront_model::block::Request;
use forefront_model::cpu::GroupId;
use forefront_model::kernel::After;
use forefront_model::mm::writeback::Thresholds;
use forefront_model::prov::Tid;
use forefront_model::wait::Blocker;

use forefront_model::fs::ext4::{self, FileOp};

use super::life::AtStop;
use super::tasks::{Exec, Kind};
use super::{World, BG_GROUP};
use crate::Cat;

/// One task's knobs; `None` leaves the kernel's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskKnobs {
    /// ioprio (class 0 none, 1 RT, 2 BE, 3 idle; level 0..=7).
    pub ioprio: Option<(u8, u8)>,
    /// `io.bfq.weight` of the task's cgroup (1..=1000).
    pub io_weight: Option<u16>,
    /// In a frozen cgroup.
    pub frozen: bool,
}

/// The knobs' state in a run.
#[derive(Debug, Default)]
pub(super) struct Knobs {
    /// Per task (grown on first use: empty when no knob was ever set).
    tasks: Vec<TaskKnobs>,
    /// The dirty thresholds before the write-back hold, while it holds.
    saved: Option<Thresholds>,
    /// Frozen tasks inside a chunked read or write op whose next step starts a new call.
    at_call: Vec<Tid>,
}

impl Knobs {
    #[inline]
    pub(super) fn of(&self, tid: Tid) -> Option<&TaskKnobs> {
        self.tasks.get(tid as usize)
    }

    /// Whether task `tid` is frozen.
    #[inline]
    pub(super) fn frozen(&self, tid: Tid) -> bool {
        self.of(tid).is_some_and(|k| k.frozen)
    }

    /// Stamp a request `tid` submits with its ioprio and I/O weight.
    #[inline]
    pub(super) fn stamp(&self, req: &mut Request) {
        if let Some(k) = self.of(req.prov.tid) {
            if let Some((class, level)) = k.ioprio {
                req.ioprio_class = class;
                req.ioprio_level = level;
            }
            if let Some(w) = k.io_weight {
                req.io_weight = w;
            }
        }
    }

    pub(super) fn held(&self) -> bool {
        self.saved.is_some()
    }

    /// `tid` is no longer inside a chunked op (its op was abandoned: `super::life`).
    pub(super) fn forget_call(&mut self, tid: Tid) {
        self.at_call.retain(|&t| t != tid);
    }
}

/// The kernel's knobs as a policy turns them at run time: one call per write the daemon makes
/// to cgroupfs, `ioprio_set` or `/proc/sys/vm`.
pub trait KernelKnobs {
    /// Task `tid`'s knobs.
    fn task_knobs(&self, tid: Tid) -> TaskKnobs;
    /// Set task `tid`'s knobs: ioprio and I/O weight apply to its next requests; freezing stops
    /// it before its next system call, thawing lets a task the freezer stopped go on now.
    /// Kernel threads' knobs are not a policy's to set (ignored).
    fn set_task_knobs(&mut self, tid: Tid, k: TaskKnobs);
    /// CPU group `group`'s weight (`cpu.shares` units, ≥ 2) and `cpu.idle`; `None` leaves one
    /// as it is. The weight set while `cpu.idle` holds is the one cleared `cpu.idle` restores.
    fn set_group_cpu(&mut self, group: GroupId, shares: Option<u32>, idle: Option<bool>);
    /// Hold buffered write-back (`true`: no dirty page expires while held) or release it.
    fn hold_writeback(&mut self, hold: bool);
}

impl KernelKnobs for World {
    fn task_knobs(&self, tid: Tid) -> TaskKnobs {
        self.knobs.of(tid).copied().unwrap_or_default()
    }

    fn set_task_knobs(&mut self, tid: Tid, k: TaskKnobs) {
        if self.tasks[tid as usize].kind != Kind::User {
            return; // the freezer and ioprio of kernel threads are not the agent's to set
        }
        if self.knobs.tasks.len() <= tid as usize {
            self.knobs.tasks.resize(self.tasks.len().max(tid as usize + 1), TaskKnobs::default());
        }
        let was = std::mem::replace(&mut self.knobs.tasks[tid as usize], k);
        if was.frozen && !k.frozen {
            self.knobs.at_call.retain(|&t| t != tid);
            self.wake_if(tid, Blocker::Idle);
        }
    }

    fn set_group_cpu(&mut self, group: GroupId, shares: Option<u32>, idle: Option<bool>) {
        let now = self.now();
        if let Some(s) = shares {
            self.cpu.set_group_shares(group, s.max(2), now);
        }
        if let Some(idle) = idle {
            self.cpu.set_group_idle(group, idle, now);
        }
    }

    fn hold_writeback(&mut self, hold: bool) {
        match (hold, self.knobs.saved) {
            (true, None) => {
                let t = self.wb.thresholds;
                self.knobs.saved = Some(t);
                self.wb.thresholds.background_pages = t.limit_pages.saturating_sub(1).max(t.background_pages);
            }
            (false, Some(t)) => {
                self.knobs.saved = None;
                self.wb.thresholds = t;
                self.wake_flusher();
            }
            _ => {}
        }
    }
}

impl World {
    /// Whether write-back is held now (no periodic wake-ups of the flusher).
    pub(super) fn writeback_held(&self) -> bool {
        self.knobs.held()
    }

    /// The dirty pages' expiry (ns) the flusher uses now: the scenario's, or none while
    /// write-back is held (see the module doc).
    pub(super) fn dirty_expire_ns(&self) -> u64 {
        if self.knobs.held() {
            u64::MAX
        } else {
            (self.phone.dirty_expire_s * 1e9) as u64
        }
    }

    /// The freezer's check before task `tid` starts its next op: true if it is frozen (it is
    /// now blocked; the caller returns `After::Block`).
    #[inline]
    pub(super) fn frozen_before_op(&mut self, tid: Tid) -> bool {
        if self.life_pending(tid) && self.stop_point(tid) == AtStop::Parked {
            return true; // killed (`super::life`); a restart goes on to its first op
        }
        if !self.knobs.frozen(tid) {
            return false;
        }
        self.block_on(tid, Blocker::Idle, Cat::Sleep);
        true
    }

    /// A frozen task's step inside an op: it stops if the step would start a new `read()` or
    /// `write()` call of a chunked op; otherwise the call goes on (and if it ends there, the
    /// next step starts a new one).
    pub(super) fn continue_frozen(&mut self, tid: Tid) -> (u64, After) {
        if let Some(i) = self.knobs.at_call.iter().position(|&t| t == tid) {
            self.knobs.at_call.swap_remove(i);
            match self.stop_point(tid) {
                AtStop::Parked => return (0, After::Block),
                AtStop::Restarted => return (0, After::Step),
                AtStop::Go => {}
            }
            if !self.knobs.frozen(tid) {
                return self.continue_op(tid); // the call starts: nothing holds it
            }
            self.block_on(tid, Blocker::Idle, Cat::Sleep);
            return (0, After::Block);
        }
        let call_end = |e: &Exec| match e {
            Exec::File(FileOp::Read { call_end, .. } | FileOp::Write { call_end, .. }) => Some(*call_end),
            _ => None,
        };
        if matches!(self.tasks[tid as usize].exec, Exec::File(FileOp::Read { .. } | FileOp::Write { .. }))
            && self.alloc_gate_pauses(tid)
        {
            return (0, After::Block); // FastTrack's copy-loop checkpoint, as in `continue_op`
        }
        let before = call_end(&self.tasks[tid as usize].exec);
        let Exec::File(op) = self.tasks[tid as usize].exec.clone() else {
            self.tasks[tid as usize].exec = Exec::None;
            return (0, After::Step);
        };
        let k = self.ext4_params();
        let out = ext4::step(self, &k, tid, op);
        let after = call_end(&self.tasks[tid as usize].exec);
        if before.is_some() && after.is_some() && after != before {
            self.knobs.at_call.push(tid);
        }
        out
    }

    /// `[[knob]]` number `i` of the scenario takes effect.
    pub(super) fn apply_knob(&mut self, i: usize) {
        let Some(spec) = self.knob_specs.get(i).cloned() else { return };
        if let Some(app) = &spec.app {
            let tids: Vec<Tid> = (0..self.tasks.len() as Tid)
                .filter(|&t| self.tasks[t as usize].kind == Kind::User && self.apps[self.tasks[t as usize].app].spec == *app)
                .collect();
            for tid in tids {
                let mut k = self.task_knobs(tid);
                if let Some(c) = spec.ioprio_class {
                    let level = spec.ioprio_level.or(k.ioprio.map(|p| p.1)).unwrap_or(4);
                    k.ioprio = Some((c.number(), level));
                } else if let Some(l) = spec.ioprio_level {
                    k.ioprio = Some((k.ioprio.map_or(2, |p| p.0), l));
                }
                if let Some(w) = spec.io_weight {
                    k.io_weight = Some(w);
                }
                if let Some(f) = spec.frozen {
                    k.frozen = f;
                }
                self.set_task_knobs(tid, k);
            }
        }
        if spec.bg_cpu_weight.is_some() || spec.bg_cpu_idle.is_some() {
            // cgroup v2 `cpu.weight` (1..=10000) to shares, as the kernel maps it.
            let shares = spec.bg_cpu_weight.map(|w| w.clamp(1, 10_000) * 1024 / 100);
            self.set_group_cpu(BG_GROUP, shares, spec.bg_cpu_idle);
        }
        if let Some(h) = spec.hold_writeback {
            self.hold_writeback(h);
        }
    }

    /// Schedule the scenario's `[[knob]]`s (build time).
    pub(super) fn schedule_knobs(&mut self) {
        for i in 0..self.knob_specs.len() {
            let at = SimTime::from_secs_f64(self.knob_specs[i].at_s);
            self.q.schedule(at, super::Ev::Knob(i as u32));
        }
    }
}
