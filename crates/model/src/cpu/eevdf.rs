//! EEVDF, Linux's fair scheduler since 6.6 (`kernel/sched/fair.c`, "Earliest Eligible Virtual
//! Deadline First"): the decisions of [`SchedKind::Eevdf`](super::SchedKind::Eevdf) on the run
//! queues of [`super`].
//!
//! CFS picks the entity with the least vruntime and lets a wake-up preempt past a granularity.
//! EEVDF keeps vruntime and weights but decides by **lag** and **deadline**:
//!
//! - **Eligible.** At each level the entities' weighted average vruntime `V` (the running one
//!   included) is the fair position; an entity is eligible when `vruntime ≤ V`, i.e. it is owed
//!   service (`entity_eligible`, exact in integers: `Σ w_i (v_i − v) ≥ 0`).
//! - **Deadline.** Each entity has a virtual deadline one slice after the vruntime at which its
//!   current request began: `deadline = vruntime + base_slice × 1024 / weight`. The pick is the
//!   eligible entity with the earliest deadline (`__pick_eevdf`).
//! - **A request runs to its deadline** (`update_curr` → `update_deadline`): when the running
//!   entity's vruntime reaches its deadline it gets a new one and the core is rescheduled if
//!   another entity is queued. That check runs from the tick (`entity_tick`; the
//!   high-resolution slice timer is off by default, `HRTICK`) and at every enqueue on the core:
//!   with [`CpuParams::slice_on_tick`](super::CpuParams::slice_on_tick) the slice's end is
//!   rounded up to the tick grid, and a wake-up on the core checks it at once.
//! - **Run to parity** (`RUN_TO_PARITY`, on by default): the running entity, while eligible, is
//!   protected until its deadline (`set_protect_slice`: `vprot = deadline` when every entity
//!   has the base slice). So a **wake-up preempts** (`check_preempt_wakeup_fair`: "if @p has
//!   become the most eligible task, force preemption") only when the pick, made with the
//!   woken entity queued and the running one protected, returns the woken one: in practice
//!   when the woken task's lag makes the running one ineligible. A task woken with no lag
//!   behind a task that has just begun its request waits for that request's end.
//! - **Lag is kept across a sleep** (`PLACE_LAG`): a task leaving the queue records `vlag =
//!   V − vruntime`, clamped to `± max(2 × slice, tick) × 1024 / weight` (`update_entity_lag`),
//!   and comes back at `V − vlag × (W + w) / W` (`place_entity`; `W` the load already there, so
//!   that `V` itself moves by the entity's own lag), its deadline one slice later (half a
//!   slice for a task that never ran, `PLACE_DEADLINE_INITIAL`).
//! - **Negative lag is served asleep** (`DELAY_DEQUEUE` with `DELAY_ZERO`, on by default since
//!   6.12): a task that sleeps while not eligible stays queued, "delayed", until it is picked,
//!   which happens once it is eligible again; its lag is then 0. A task woken before that comes
//!   back with what is left of its negative lag (`requeue_delayed_entity`).
//!
//! Base slice: `min_granularity_ms` (the kernel renamed `sysctl_sched_min_granularity` to
//! `sysctl_sched_base_slice`; 0.75 ms in 6.6–6.14, 0.70 ms from 6.15), scaled by
//! `1 + log2(ncpus)` like every latency figure of this model.
//!
//! # Simplifications versus the kernel
//!
//! - Every task has the base slice (no `sched_setattr` custom slices), so `PREEMPT_SHORT` and
//!   the shortened protection of `RUN_TO_PARITY` with shorter slices never apply, and `vprot`
//!   is the deadline.
//! - A delayed (sleeping, not yet eligible) task is not kept in the tree: it does not count in
//!   `V` while it sleeps, and its lag at wake-up is `min(0, V − vruntime)` on the level it left
//!   (0 if that level has emptied: an idle core would have picked it and finished the dequeue).
//! - No `PICK_BUDDY` / next-buddy hint, no `sched_delayed` migration rules.
//! - A running task moved to another group or given another weight keeps its vruntime and
//!   deadline (the kernel's `reweight_entity` rescales its lag and deadline).
//! - Deadlines of both levels are checked when the slice timer fires or a wake-up lands on
//!   the core; the kernel updates each level's `curr` at every event on the run queue.
//!
//! # Invariants
//!
//! - The pick is deterministic: ties on deadline go to the entity queued first, as in the
//!   kernel's deadline-ordered tree.
//! - A core never stays idle while it has queued tasks: the pick returns an entity whenever
//!   the level has one (an eligible one always exists, since `V` is their average).

use forefront_engine::SimTime;

use super::{CpuSched, Ent, GroupId, NICE_0_WEIGHT, ROOT_GROUP};
use crate::prov::Tid;

/// The vruntime every core's and group's clock starts from under EEVDF, so that a task placed
/// before the average by its lag never needs a negative vruntime.
pub(super) const V_BASE: u64 = 1 << 50;

/// An entity at one level of a core's run queue: vruntime, deadline, weight, who it is, and
/// when it was last put in the tree (the kernel's tree keeps entities of equal deadline in
/// insertion order).
#[derive(Clone, Copy, Debug)]
pub(super) struct Cand<I> {
    pub v: u64,
    pub d: u64,
    pub w: u64,
    pub id: I,
    pub seq: u64,
}

/// The same entity without its identity (for averages and placement).
fn unit<I>(c: Cand<I>) -> Cand<()> {
    Cand { v: c.v, d: c.d, w: c.w, id: (), seq: c.seq }
}

/// `Σ w_i (v_i − v)` over `all`: ≥ 0 when `v` is eligible (`vruntime_eligible`).
fn owed<I>(all: &[Cand<I>], v: u64) -> i128 {
    all.iter().map(|c| i128::from(c.w) * (i128::from(c.v) - i128::from(v))).sum()
}

/// The weighted average vruntime of `all` (`avg_vruntime`), or `None` for an empty level.
pub(super) fn avg<I>(all: &[Cand<I>]) -> Option<u64> {
    let w: i128 = all.iter().map(|c| i128::from(c.w)).sum();
    let base = all.first()?.v;
    if w == 0 {
        return Some(base);
    }
    let s: i128 = all.iter().map(|c| i128::from(c.w) * (i128::from(c.v) - i128::from(base))).sum();
    Some((i128::from(base) + s.div_euclid(w)).max(0) as u64)
}

/// `__pick_eevdf` at one level: `queued` are the waiting entities, `curr` the running one if it
/// is at this level. With `protect`, an eligible `curr` short of its deadline is kept.
pub(super) fn pick<I: Copy + Ord>(queued: &[Cand<I>], curr: Option<Cand<I>>, protect: bool) -> Option<I> {
    match (queued.len(), curr) {
        (0, None) => return None,
        (0, Some(c)) => return Some(c.id),
        (1, None) => return Some(queued[0].id),
        _ => {}
    }
    let mut all = queued.to_vec();
    all.extend(curr);
    let curr = curr.filter(|c| owed(&all, c.v) >= 0);
    if let Some(c) = curr {
        if protect && c.v < c.d {
            return Some(c.id);
        }
    }
    let best = queued.iter().filter(|c| owed(&all, c.v) >= 0).min_by_key(|c| (c.d, c.seq, c.id));
    match (best, curr) {
        (Some(b), Some(c)) if c.d < b.d => Some(c.id),
        (Some(b), _) => Some(b.id),
        (None, Some(c)) => Some(c.id),
        // Not reachable (the average has an entity at or below it); keep the core busy anyway.
        (None, None) => queued.iter().min_by_key(|c| (c.v, c.id)).map(|c| c.id),
    }
}

/// Where an entity of weight `w` joins a level whose entities are `level` (the running one
/// included) and whose clock reads `base` when it is empty: `V − lag × (W + w) / W`, and its
/// deadline `vslice` later.
pub(super) fn place<I>(level: &[Cand<I>], base: u64, lag: i64, w: u64, vslice: u64) -> (u64, u64) {
    let load: i128 = level.iter().map(|c| i128::from(c.w)).sum();
    let v = match avg(level) {
        Some(v) if load > 0 => {
            let lag = i128::from(lag) * (load + i128::from(w)) / load;
            (i128::from(v) - lag).max(0) as u64
        }
        _ => base,
    };
    (v, v + vslice)
}

impl CpuSched {
    /// The base slice in vruntime for weight `w` (`calc_delta_fair(se->slice, se)`).
    pub(super) fn eevdf_vslice(&self, w: u64) -> u64 {
        self.min_gran * NICE_0_WEIGHT / w.max(1)
    }

    /// The clamp of a saved lag for weight `w`: `max(2 × slice, tick)` in vruntime.
    fn eevdf_lag_limit(&self, w: u64) -> i64 {
        ((2 * self.min_gran).max(self.tick) * NICE_0_WEIGHT / w.max(1)) as i64
    }

    /// The queued top-level entities of `core`.
    pub(super) fn eevdf_top_queued(&self, core: usize) -> Vec<Cand<Ent>> {
        let c = &self.cores[core];
        c.top
            .iter()
            .map(|&(v, e)| {
                let (d, w, seq) = match e {
                    Ent::Task(t) => {
                        let t = &self.tasks[t as usize];
                        (t.deadline, u64::from(t.weight), t.seq)
                    }
                    Ent::Group(g) => {
                        let g2 = &c.groups[g as usize];
                        (g2.deadline, u64::from(self.group_weights[g as usize]), g2.seq)
                    }
                };
                Cand { v, d, w, id: e, seq }
            })
            .collect()
    }

    /// The running top-level entity of `core` (the running task, or its group's entity).
    pub(super) fn eevdf_top_curr(&self, core: usize) -> Option<Cand<Ent>> {
        let c = &self.cores[core];
        let tid = c.curr?;
        let t = &self.tasks[tid as usize];
        Some(if t.group == ROOT_GROUP {
            Cand { v: t.vruntime, d: t.deadline, w: u64::from(t.weight), id: Ent::Task(tid), seq: t.seq }
        } else {
            let g = &c.groups[t.group as usize];
            let w = u64::from(self.group_weights[t.group as usize]);
            Cand { v: g.vruntime, d: g.deadline, w, id: Ent::Group(t.group), seq: g.seq }
        })
    }

    /// The queued tasks of group `g` on `core`.
    pub(super) fn eevdf_group_queued(&self, core: usize, g: GroupId) -> Vec<Cand<Tid>> {
        self.cores[core].groups[g as usize]
            .tree
            .iter()
            .map(|&(v, t)| {
                let te = &self.tasks[t as usize];
                Cand { v, d: te.deadline, w: u64::from(te.weight), id: t, seq: te.seq }
            })
            .collect()
    }

    /// The running task of `core` if it belongs to group `g`.
    pub(super) fn eevdf_group_curr(&self, core: usize, g: GroupId) -> Option<Cand<Tid>> {
        let tid = self.cores[core].curr?;
        let t = &self.tasks[tid as usize];
        (t.group == g).then(|| Cand { v: t.vruntime, d: t.deadline, w: u64::from(t.weight), id: tid, seq: t.seq })
    }

    /// The top level of `core` as plain candidates (for the group entities' lag and placement).
    fn eevdf_top_level(&self, core: usize) -> Vec<Cand<()>> {
        let mut all = self.eevdf_top_queued(core);
        all.extend(self.eevdf_top_curr(core));
        all.into_iter().map(unit).collect()
    }

    /// `tid` (queued or running on `core`) leaves the run queue: record its lag, and its group
    /// entity's if the group empties with it (`update_entity_lag`). Call before the queues or
    /// loads change.
    pub(super) fn eevdf_dequeue(&mut self, core: usize, tid: Tid) {
        let t = &self.tasks[tid as usize];
        let (g, w, v) = (t.group, u64::from(t.weight), t.vruntime);
        let (level, _) = self.eevdf_level(core, g);
        let lim = self.eevdf_lag_limit(w);
        let lag = avg(&level).map_or(0, |a| (i128::from(a) - i128::from(v)).clamp(-i128::from(lim), i128::from(lim)) as i64);
        let t = &mut self.tasks[tid as usize];
        t.vlag = lag;
        t.left_core = core;
        if g != ROOT_GROUP && self.cores[core].groups[g as usize].nr == 1 {
            let top = self.eevdf_top_level(core);
            let gw = u64::from(self.group_weights[g as usize]);
            let glim = self.eevdf_lag_limit(gw);
            let gv = self.cores[core].groups[g as usize].vruntime;
            let glag =
                avg(&top).map_or(0, |a| (i128::from(a) - i128::from(gv)).clamp(-i128::from(glim), i128::from(glim)) as i64);
            self.cores[core].groups[g as usize].vlag = glag;
        }
    }

    /// What is left of a saved negative lag at a wake-up: the task stayed queued, delayed, on
    /// the level it left until it became eligible (see the module doc).
    fn eevdf_lag_now(lag: i64, v: u64, old_level: &[Cand<()>]) -> i64 {
        if lag >= 0 {
            return lag;
        }
        match avg(old_level) {
            Some(a) => ((i128::from(a) - i128::from(v)).clamp(i128::from(lag), 0)) as i64,
            None => 0,
        }
    }

    /// Place `tid` (and its group entity if the group becomes runnable with it) as it joins
    /// `core`'s queues: returns the task's (vruntime, deadline) and, if its group entity joins
    /// the top level too, the group entity's. Call before the queues or loads change.
    pub(super) fn eevdf_place(&mut self, core: usize, tid: Tid) -> ((u64, u64), Option<(u64, u64)>) {
        let t = &self.tasks[tid as usize];
        let (g, w, v_old, lag, placed, from) = (t.group, u64::from(t.weight), t.vruntime, t.vlag, t.placed, t.left_core);
        // The level it left, for what remains of a negative lag.
        let lag = if placed {
            let (old, _) = self.eevdf_level(from, g);
            Self::eevdf_lag_now(lag, v_old, &old)
        } else {
            0
        };
        let vslice = self.eevdf_vslice(w);
        let vslice = if placed { vslice } else { vslice / 2 };
        let (level, base) = self.eevdf_level(core, g);
        let task = place(&level, base, lag, w, vslice);
        let group = (g != ROOT_GROUP && self.cores[core].groups[g as usize].nr == 0).then(|| {
            let gw = u64::from(self.group_weights[g as usize]);
            let grq = &self.cores[core].groups[g as usize];
            let glag = if grq.placed { grq.vlag.min(self.eevdf_lag_limit(gw)) } else { 0 };
            let top = self.eevdf_top_level(core);
            place(&top, self.cores[core].min_vruntime, glag, gw, self.eevdf_vslice(gw))
        });
        self.tasks[tid as usize].placed = true;
        if g != ROOT_GROUP {
            self.cores[core].groups[g as usize].placed = true;
        }
        (task, group)
    }

    /// The entities of the level a task of group `g` competes at on `core` (the running one
    /// included), and the level's clock.
    fn eevdf_level(&self, core: usize, g: GroupId) -> (Vec<Cand<()>>, u64) {
        if g == ROOT_GROUP {
            (self.eevdf_top_level(core), self.cores[core].min_vruntime)
        } else {
            let mut all: Vec<Cand<()>> = self.eevdf_group_queued(core, g).into_iter().map(unit).collect();
            all.extend(self.eevdf_group_curr(core, g).map(unit));
            (all, self.cores[core].groups[g as usize].min_vruntime)
        }
    }

    /// `update_deadline` for the running task of `core` and its group entity: a request whose
    /// vruntime reached its deadline gets the next one. Whether one did.
    pub(super) fn eevdf_refresh(&mut self, core: usize) -> bool {
        let Some(tid) = self.cores[core].curr else { return false };
        let (g, w) = (self.tasks[tid as usize].group, u64::from(self.tasks[tid as usize].weight));
        let mut passed = false;
        let vs = self.eevdf_vslice(w);
        let t = &mut self.tasks[tid as usize];
        if t.vruntime >= t.deadline {
            t.deadline = t.vruntime + vs;
            passed = true;
        }
        if g != ROOT_GROUP {
            let gvs = self.eevdf_vslice(u64::from(self.group_weights[g as usize]));
            let grq = &mut self.cores[core].groups[g as usize];
            if grq.vruntime >= grq.deadline {
                grq.deadline = grq.vruntime + gvs;
                passed = true;
            }
        }
        passed
    }

    /// When the running task `tid`'s request ends on `core`: the first of its own and its group
    /// entity's deadlines, in real time from `now` (on the tick grid with `slice_on_tick`).
    pub(super) fn eevdf_slice_end(&self, core: usize, tid: Tid, now: SimTime) -> SimTime {
        let t = &self.tasks[tid as usize];
        let mut ns = t.deadline.saturating_sub(t.vruntime) * u64::from(t.weight) / NICE_0_WEIGHT;
        if t.group != ROOT_GROUP {
            let grq = &self.cores[core].groups[t.group as usize];
            let gw = u64::from(self.group_weights[t.group as usize]);
            ns = ns.min(grq.deadline.saturating_sub(grq.vruntime) * gw / NICE_0_WEIGHT);
        }
        self.cfs_slice_end(now, ns.max(1))
    }

    /// The entity `pick_next_entity` takes at `core`'s top level, then inside a group.
    pub(super) fn eevdf_pick_next(&self, core: usize) -> Option<(u64, Ent)> {
        let top = self.eevdf_top_queued(core);
        let e = pick(&top, None, true)?;
        let v = top.iter().find(|c| c.id == e).map(|c| c.v)?;
        Some((v, e))
    }

    /// The task `pick_next_entity` takes inside group `g` on `core`.
    pub(super) fn eevdf_pick_in_group(&self, core: usize, g: GroupId) -> Option<(u64, Tid)> {
        let q = self.eevdf_group_queued(core, g);
        let t = pick(&q, None, true)?;
        let v = q.iter().find(|c| c.id == t).map(|c| c.v)?;
        Some((v, t))
    }

    /// `check_preempt_wakeup_fair`: whether the woken `tid`, already queued on `core`, preempts
    /// the running task. Brings the running task's vruntime up to date first (`update_curr`):
    /// a running request past its deadline is rescheduled whoever woke.
    pub(super) fn eevdf_wakeup_preempts(&mut self, core: usize, tid: Tid, now: SimTime) -> bool {
        let Some(curr) = self.cores[core].curr else { return true };
        if curr == tid {
            return false;
        }
        self.account_run(core, now);
        if self.eevdf_refresh(core) {
            return true;
        }
        let (ga, gb) = (self.tasks[tid as usize].group, self.tasks[curr as usize].group);
        if ga == gb && ga != ROOT_GROUP {
            let q = self.eevdf_group_queued(core, ga);
            return pick(&q, self.eevdf_group_curr(core, ga), true) == Some(tid);
        }
        let idle = |g: GroupId| g != ROOT_GROUP && self.group_is_idle(g);
        match (idle(ga), idle(gb)) {
            (false, true) => return true,
            (true, false) => return false,
            _ => {}
        }
        let pse = if ga == ROOT_GROUP { Ent::Task(tid) } else { Ent::Group(ga) };
        let q = self.eevdf_top_queued(core);
        pick(&q, self.eevdf_top_curr(core), true) == Some(pse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: u64, d: u64, id: u32) -> Cand<u32> {
        Cand { v, d, w: 1024, id, seq: u64::from(id) }
    }

    #[test]
    fn the_pick_is_the_eligible_entity_with_the_earliest_deadline() {
        // V = 15: 10 and 15 are eligible, 20 is not although its deadline is the earliest.
        let q = [c(10, 50, 0), c(15, 40, 1), c(20, 30, 2)];
        assert_eq!(pick(&q, None, true), Some(1));
    }

    #[test]
    fn a_protected_running_entity_keeps_the_core_until_its_deadline() {
        // Running at 10 with deadline 30; a woken entity placed at 10 (no lag), deadline 20.
        let curr = c(10, 30, 0);
        let woken = [c(10, 20, 1)];
        assert_eq!(pick(&woken, Some(curr), true), Some(0), "run to parity");
        assert_eq!(pick(&woken, Some(curr), false), Some(1), "unprotected: the earlier deadline");
        // The running entity past its fair share (the woken one has lag): it is not eligible.
        let woken = [c(4, 24, 1)];
        assert_eq!(pick(&woken, Some(curr), true), Some(1));
    }

    #[test]
    fn lag_is_kept_across_placement() {
        // One entity at 100; an entity of equal weight with lag 10 is placed at 100 − 20, so
        // that the new average, 90, is 10 ahead of it.
        let level = [c(100, 200, 0)];
        let (v, d) = place(&level, 0, 10, 1024, 50);
        assert_eq!((v, d), (80, 130));
        let after = [c(100, 200, 0), c(v, d, 1)];
        assert_eq!(avg(&after), Some(90));
        // An empty level: its clock.
        assert_eq!(place::<u32>(&[], 77, 10, 1024, 50), (77, 127));
    }
}
