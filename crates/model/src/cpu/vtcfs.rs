//! VT-CFS (Huh, Yoo, Hong, "Cross-layer resource control and scheduling for improving
//! interactivity in Android", SPE 2015; [VT] in `parameters.md`): the decisions of
//! [`SchedKind::VtCfs`] on CFS's run queues.
//!
//! - **Preemption tick λ.** CFS lets the running task finish its weighted slice and preempts on
//!   wake-up only past a weighted granularity; a waiting task can wait a whole slice. VT-CFS
//!   preempts the running task at every tick while another task waits on its core and picks
//!   the leftmost entity again, so nobody waits more than a tick behind a task it should
//!   precede. There is no weighted slice. VT-CFS extends CFS: its wake-up preemption test
//!   (vruntime lead over the weighted wake-up granularity) stays, so a wake-up CFS would let
//!   preempt still does. Shares still follow the weights, through vruntime
//!   (`delta × 1024 / weight`).
//! - **Interactive placement.** A task the framework marked interactive (FTC) is placed at
//!   `V' = V*curr + ω0 / (ω−20 + 1) · λ` when it wakes (ω0 = 1024, ω−20 = 88761): just right of
//!   the running entity, so it is the leftmost entity at the next tick, after the running one
//!   has advanced by at least `λ × 1024 / 88761`. Never later than CFS would place it, so it
//!   runs at the next tick at the latest, or at once where CFS's wake-up test lets it preempt.
//!   `V*curr` is the running entity's vruntime brought up to date at the wake-up.
//!
//! # Simplifications versus the paper
//!
//! - Ticks fall on one global grid (multiples of λ since boot) and are armed only while tasks
//!   compete on a core: a core running alone has no timer event at all (the kernel's tick
//!   would fire and find nothing to do).
//! - With task groups, the placement applies at the level where the woken task competes: inside
//!   its group against the group's running or leftmost task, and at the top level only when its
//!   group entity becomes runnable with it. A group entity already queued keeps its place.
//! - The paper's aim is that the woken interactive task runs before the other tasks of the run
//!   queue. `V*curr + δ` alone would leave it behind a queued task whose vruntime is below the
//!   running one's (common: the running task was leftmost when picked, then ran); so it is
//!   also placed just left of the leftmost queued entity of its level.
//! - A tick that finds the running task still leftmost lets it continue without a context
//!   switch or its cost.

use forefront_engine::SimTime;

use super::{CpuSched, Ent, SchedKind, State, ROOT_GROUP};
use crate::prov::Tid;

/// ω0 / (ω−20 + 1): the fraction of a tick that puts a woken interactive task just right of the
/// running entity.
const PLACE_NUM: u64 = 1024;
const PLACE_DEN: u64 = 88761 + 1;

impl CpuSched {
    /// The preemption tick λ (ns).
    pub fn tick_ns(&self) -> u64 {
        self.tick
    }

    /// The first tick boundary strictly after `now`.
    pub(super) fn next_tick(&self, now: SimTime) -> SimTime {
        SimTime::from_ns((now.ns() / self.tick + 1) * self.tick)
    }

    /// Whether a task waits on core `core` beside its running task.
    pub(super) fn competes(&self, core: usize) -> bool {
        let c = &self.cores[core];
        if c.curr.is_none() {
            return false;
        }
        !c.top.is_empty() || !self.group_queue_empty(core)
    }

    /// Arm the next tick on a busy core where tasks compete (a deadline, not a periodic event).
    pub(super) fn arm_tick(&mut self, core: usize, now: SimTime) {
        debug_assert_eq!(self.kind, SchedKind::VtCfs);
        if !self.competes(core) {
            return;
        }
        let t = self.next_tick(now);
        if t < self.cores[core].slice_end {
            self.cores[core].slice_end = t;
            self.touch(core);
        }
    }

    /// A tick on core `core`: the running task gives way if another entity is now leftmost.
    pub(super) fn tick(&mut self, core: usize, now: SimTime) {
        if !self.competes(core) {
            self.cores[core].slice_end = SimTime::MAX;
            return;
        }
        if self.stays_leftmost(core) {
            self.cores[core].slice_end = self.next_tick(now);
            return;
        }
        self.tick_preemptions += 1;
        self.cores[core].slice_end = SimTime::MAX;
        self.preempt_current(core, now);
    }

    /// Whether the running task is still leftmost at every level it competes at.
    fn stays_leftmost(&self, core: usize) -> bool {
        let c = &self.cores[core];
        let Some(tid) = c.curr else { return true };
        let t = &self.tasks[tid as usize];
        let (top_v, top_ent) = if t.group == ROOT_GROUP {
            (t.vruntime, Ent::Task(tid))
        } else {
            (c.groups[t.group as usize].vruntime, Ent::Group(t.group))
        };
        if c.top.first().is_some_and(|&first| first < (top_v, top_ent)) {
            return false;
        }
        if t.group != ROOT_GROUP {
            let grq = &c.groups[t.group as usize];
            if grq.tree.first().is_some_and(|&first| first < (t.vruntime, tid)) {
                return false;
            }
        }
        true
    }

    /// V' for an interactive task `tid` waking on `core`: (top-level V', in-group V'). The
    /// running task's vruntime is brought up to date first (the kernel's `update_curr`).
    pub(super) fn interactive_refs(&mut self, core: usize, tid: Tid, now: SimTime) -> (u64, u64) {
        self.account_run(core, now);
        let delta = self.tick * PLACE_NUM / PLACE_DEN;
        let c = &self.cores[core];
        let g = self.tasks[tid as usize].group;
        // Just right of the running entity, and left of every queued one: the paper's aim is
        // that the woken task runs before the other tasks of the run queue, at the next tick.
        let place = |running: Option<u64>, leftmost: Option<u64>, floor: u64| {
            let v = running.map_or(floor, |v| v + delta);
            leftmost.map_or(v, |l| v.min(l.saturating_sub(1)))
        };
        let top_running = c.curr.map(|cur| {
            let ct = &self.tasks[cur as usize];
            if ct.group == ROOT_GROUP {
                ct.vruntime
            } else {
                c.groups[ct.group as usize].vruntime
            }
        });
        let top = place(top_running, c.top.first().map(|&(v, _)| v), c.min_vruntime);
        let inner = if g == ROOT_GROUP {
            top
        } else {
            let grq = &c.groups[g as usize];
            let running = c.curr.filter(|&cur| self.tasks[cur as usize].group == g).map(|cur| self.tasks[cur as usize].vruntime);
            place(running, grq.tree.first().map(|&(v, _)| v), grq.min_vruntime)
        };
        debug_assert!(!matches!(self.tasks[tid as usize].state, State::Running(_)));
        (top, inner)
    }
}
