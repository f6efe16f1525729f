//! The block layer: requests with provenance, back-merging, an [`IoScheduler`] (noop, deadline,
//! CFQ, and the current kernel's mq-deadline and BFQ) and the [`BlockQueue`] that hands requests to the device up to its queue depth.
//!
//! Life of a request (all times in [`Request::times`]):
//! `submit` → (merged into a queued request, or) queued in the scheduler or, when the policy
//! says so, straight in the dispatch queue → dispatched to the device (`dispatched`) → device
//! service starts (`service_start`, set by the device) → `completed`.
//!
//! Merging is generic and done here, not in the schedulers: a new request back-merges into a
//! queued (not yet dispatched) request of the same op, sync-ness, process and blkio group whose
//! last sector it continues, up to `max_sectors`. Schedulers only order requests.

pub mod bfq;
pub mod cfq;
pub mod deadline;
pub mod mq_deadline;
pub mod noop;

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use crate::prov::Provenance;

pub type ReqId = u32;

/// Sector size of request addresses (bytes).
pub const SECTOR: u64 = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReqOp {
    Read,
    Write,
    /// Cache flush (no data): the device drains its write buffer.
    Flush,
    Discard,
}

impl ReqOp {
    pub fn is_read(self) -> bool {
        self == ReqOp::Read
    }
}

/// Timestamps of a request's life; `None` until reached.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReqTimes {
    pub submitted: SimTime,
    pub dispatched: Option<SimTime>,
    pub service_start: Option<SimTime>,
    pub completed: Option<SimTime>,
}

#[derive(Clone, Debug)]
pub struct Request {
    pub id: ReqId,
    pub op: ReqOp,
    /// First sector (512 B).
    pub sector: u64,
    pub sectors: u32,
    /// Sync requests (reads, O_SYNC/fsync writes, journal commits) vs async write-back.
    pub sync: bool,
    /// File-system metadata (journal, inode table, bitmaps).
    pub meta: bool,
    /// Force unit access: complete only once on stable media.
    pub fua: bool,
    /// Flush the device's write cache before this request.
    pub preflush: bool,
    pub prov: Provenance,
    /// I/O priority class as ioprio: 1 RT, 2 best effort, 3 idle.
    pub ioprio_class: u8,
    /// I/O priority level 0..=7 within the class (lower is higher priority).
    pub ioprio_level: u8,
    /// The submitting task's own I/O weight (its cgroup's `io.bfq.weight`, 1..=1000) when a
    /// policy set one, else 0: the scenario's weight of `prov.blkio_group` applies. Read by BFQ.
    pub io_weight: u16,
    /// Set by a policy that boosts a request a task is blocked on (QASIO).
    pub boosted: bool,
    /// Requests merged into this one (they complete with it).
    pub merged: u32,
    pub times: ReqTimes,
    /// Opaque tag of the submitting layer (the simulator uses it to find pages or journal work).
    pub tag: u64,
}

impl Request {
    /// A new request with the common defaults: best-effort priority level 4 (the default of a
    /// nice-0 task), no flags, nothing merged or waiting yet.
    pub fn new(op: ReqOp, sector: u64, sectors: u32, sync: bool, prov: Provenance) -> Request {
        Request {
            id: 0,
            op,
            sector,
            sectors,
            sync,
            meta: false,
            fua: false,
            preflush: false,
            prov,
            ioprio_class: 2,
            ioprio_level: 4,
            io_weight: 0,
            boosted: false,
            merged: 0,
            times: ReqTimes::default(),
            tag: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        u64::from(self.sectors) * SECTOR
    }
    pub fn end_sector(&self) -> u64 {
        self.sector + u64::from(self.sectors)
    }
    /// Whether the request is still in the host's queues (not yet handed to the device).
    pub fn is_queued(&self) -> bool {
        self.times.dispatched.is_none()
    }
}

/// A request's generational key: its id and the serial the slab gave it when it was queued.
/// Ids are reused once a request completes; a key kept past an event names one request, and
/// [`ReqSlab::is_live`] tells whether that request (not a later one in its slot) is still live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReqKey {
    pub id: ReqId,
    pub serial: u64,
}

/// What a request completes besides waking its waiters: one entry per bio merged into it, in
/// submission order (the simulator acts on each when the request completes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completes {
    /// Pages `first..first+n` of `file`: a read fills them, a write ends their write-back.
    Pages { file: u32, first: u32, n: u32, write: bool },
    /// Journal blocks (the commit thread waits for them itself).
    Journal,
    /// The home write of metadata block `block` (a checkpoint).
    Meta { block: u64 },
    /// Nothing else (flushes, discards, raw bios, metadata reads).
    Other,
}

/// Storage for live requests; ids are reused after [`ReqSlab::free`] (or
/// [`ReqSlab::complete`]). Each slot keeps the serial of its request (see [`ReqKey`]) and what
/// the request completes ([`Completes`]): no side tables indexed by a reusable id elsewhere.
#[derive(Default)]
pub struct ReqSlab {
    slots: Vec<Option<Request>>,
    /// Per slot: the serial of the request in it (of the last one, once freed).
    serials: Vec<u64>,
    /// Per slot: what its request completes (kept allocated across reuses).
    completes: Vec<Vec<Completes>>,
    serial: u64,
    free: Vec<ReqId>,
    live: usize,
}

impl ReqSlab {
    pub fn insert(&mut self, mut req: Request) -> ReqId {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.slots.push(None);
                self.serials.push(0);
                self.completes.push(Vec::new());
                (self.slots.len() - 1) as ReqId
            }
        };
        req.id = id;
        self.slots[id as usize] = Some(req);
        self.serial += 1;
        self.serials[id as usize] = self.serial;
        self.completes[id as usize].clear();
        self.live += 1;
        id
    }
    /// The key of live request `id`.
    #[inline]
    pub fn key(&self, id: ReqId) -> ReqKey {
        ReqKey { id, serial: self.serials[id as usize] }
    }
    /// Whether the request `k` names is still live (not completed, its id not reused).
    #[inline]
    pub fn is_live(&self, k: ReqKey) -> bool {
        self.try_get(k.id).is_some() && self.serials[k.id as usize] == k.serial
    }
    /// Record that live request `id` also completes `c` (a bio merged into it, or its first).
    #[inline]
    pub fn completes(&mut self, id: ReqId, c: Completes) {
        self.completes[id as usize].push(c);
    }
    /// Complete live request `id`: `f` sees each thing it completes, in order, then the slot is
    /// freed; returns the request.
    pub fn complete(&mut self, id: ReqId, mut f: impl FnMut(Completes)) -> Request {
        for &c in &self.completes[id as usize] {
            f(c);
        }
        self.free(id)
    }
    /// Live requests, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Request> {
        self.slots.iter().flatten()
    }
    #[inline]
    pub fn get(&self, id: ReqId) -> &Request {
        self.slots[id as usize].as_ref().expect("request id is live")
    }
    #[inline]
    pub fn get_mut(&mut self, id: ReqId) -> &mut Request {
        self.slots[id as usize].as_mut().expect("request id is live")
    }
    #[inline]
    pub fn try_get(&self, id: ReqId) -> Option<&Request> {
        self.slots.get(id as usize).and_then(|s| s.as_ref())
    }
    pub fn free(&mut self, id: ReqId) -> Request {
        let req = self.slots[id as usize].take().expect("request id is live");
        self.free.push(id);
        self.live -= 1;
        req
    }
    pub fn live(&self) -> usize {
        self.live
    }
}

/// What a scheduler answers when the block queue asks for the next request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Hand this request to the device (it has been removed from the scheduler).
    Request(ReqId),
    /// Nothing now, by choice (e.g. CFQ idling on a sync queue); ask again at this time, or
    /// earlier if a request arrives or completes.
    WaitUntil(SimTime),
    /// Nothing queued (or nothing dispatchable until a completion).
    Empty,
}

/// An I/O scheduler orders queued requests; it never merges (the block queue does) and never
/// drops one: every request given to `add` comes back once from `dispatch` (or is removed by
/// `remove_merged` when the block queue merges it away or promotes it).
pub trait IoScheduler {
    fn name(&self) -> &'static str;
    /// A new request is queued.
    fn add(&mut self, id: ReqId, reqs: &ReqSlab, now: SimTime);
    /// The block queue merged queued request `id` into another queued request, or moved it to
    /// the dispatch queue ([`BlockQueue::promote`]), and will not dispatch it through the
    /// scheduler: forget it. (Back-merges grow an existing request in place and do not call
    /// this; only requests that were already added are passed here.)
    fn remove_merged(&mut self, id: ReqId, reqs: &ReqSlab);
    /// The next request for the device. `in_flight` is how many requests the device holds.
    fn dispatch(&mut self, reqs: &ReqSlab, in_flight: usize, now: SimTime) -> Dispatch;
    /// A dispatched request finished on the device.
    fn completed(&mut self, id: ReqId, reqs: &ReqSlab, now: SimTime);
    /// A task is now blocked on queued request `id` (QASIO's hint); schedulers that support
    /// boosting move it ahead of other async requests. Returns whether anything changed.
    fn boost(&mut self, _id: ReqId, _reqs: &ReqSlab) -> bool {
        false
    }
    /// Requests currently held by the scheduler.
    fn queued(&self) -> usize;
}

/// Scheduler choice and tunables, as in a scenario file. Defaults are the kernel's
/// (`block/cfq-iosched.c`, `block/mq-deadline.c`; see parameters.md [K]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerConfig {
    Noop,
    Deadline(deadline::DeadlineParams),
    Cfq(cfq::CfqParams),
    /// Linux 5.14+'s `mq-deadline` with its I/O priority classes (`kind = "mq-deadline"`).
    #[serde(rename = "mq-deadline", alias = "mq_deadline")]
    MqDeadline(mq_deadline::MqDeadlineParams),
    /// Linux 5.x/6.x BFQ (`kind = "bfq"`).
    Bfq(bfq::BfqParams),
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig::Cfq(cfq::CfqParams::default())
    }
}

impl SchedulerConfig {
    /// The configuration for a device that says whether it is rotational (its device file's
    /// `rotational`, the kernel's `queue/rotational`): CFQ and BFQ read the flag
    /// (`blk_queue_nonrot`), so a rotational device sets their `rotational` too.
    pub fn for_device(&self, rotational: bool) -> SchedulerConfig {
        match self {
            SchedulerConfig::Cfq(p) if rotational => SchedulerConfig::Cfq(cfq::CfqParams { rotational: true, ..p.clone() }),
            SchedulerConfig::Bfq(p) if rotational => SchedulerConfig::Bfq(bfq::BfqParams { rotational: true, ..p.clone() }),
            c => c.clone(),
        }
    }

    pub fn build(&self, blkio_weights: &[u32]) -> Box<dyn IoScheduler> {
        match self {
            SchedulerConfig::Noop => Box::new(noop::Noop::default()),
            SchedulerConfig::Deadline(p) => Box::new(deadline::Deadline::new(p.clone())),
            SchedulerConfig::Cfq(p) => Box::new(cfq::Cfq::new(p.clone(), blkio_weights)),
            SchedulerConfig::MqDeadline(p) => Box::new(mq_deadline::MqDeadline::new(p.clone())),
            SchedulerConfig::Bfq(p) => Box::new(bfq::Bfq::new(p.clone(), blkio_weights)),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            SchedulerConfig::Noop => "noop",
            SchedulerConfig::Deadline(_) => "deadline",
            SchedulerConfig::Cfq(_) => "cfq",
            SchedulerConfig::MqDeadline(_) => "mq-deadline",
            SchedulerConfig::Bfq(_) => "bfq",
        }
    }
    /// Every scheduler with its default tunables (for tests and `sim list`).
    pub fn all() -> Vec<SchedulerConfig> {
        vec![
            SchedulerConfig::Noop,
            SchedulerConfig::Deadline(Default::default()),
            SchedulerConfig::Cfq(Default::default()),
            SchedulerConfig::MqDeadline(Default::default()),
            SchedulerConfig::Bfq(Default::default()),
        ]
    }
}

/// Where a submitted request goes: the policy's dispatch-insertion seam.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insert {
    /// Into the I/O scheduler (stock).
    Scheduler,
    /// Straight to the tail of the dispatch queue, ahead of everything the scheduler holds
    /// (FastTrack's I/O Dispatcher).
    DispatchQueue,
}

/// The outcome of [`BlockQueue::submit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    Queued(ReqId),
    /// Back-merged into this queued request; the caller's request was not created.
    Merged(ReqId),
}

/// The host side of one block device: merge index, dispatch queue, scheduler, queue depth.
pub struct BlockQueue {
    pub sched: Box<dyn IoScheduler>,
    /// Requests waiting to go to the device ahead of the scheduler (flushes and PREFLUSH / FUA
    /// writes, policy inserts).
    dispatch_q: VecDeque<ReqId>,
    /// Back-merge index: end sector → queued request ending there (never iterated, so the
    /// hash's order cannot reach the results).
    by_end: FxHashMap<u64, ReqId>,
    pub depth: usize,
    pub max_sectors: u32,
    in_flight: usize,
    pub merges: u64,
}

impl BlockQueue {
    pub fn new(sched: Box<dyn IoScheduler>, depth: usize, max_sectors: u32) -> Self {
        BlockQueue {
            sched,
            dispatch_q: VecDeque::new(),
            by_end: FxHashMap::default(),
            depth: depth.max(1),
            max_sectors,
            in_flight: 0,
            merges: 0,
        }
    }

    /// Queue `req` (or back-merge it). The caller fills provenance and flags.
    pub fn submit(&mut self, reqs: &mut ReqSlab, mut req: Request, insert: Insert, now: SimTime) -> Submitted {
        req.times = ReqTimes { submitted: now, ..Default::default() };
        if matches!(req.op, ReqOp::Read | ReqOp::Write) && !req.fua && !req.preflush {
            if let Some(&target) = self.by_end.get(&req.sector) {
                let t = reqs.get(target);
                let mergeable = t.is_queued()
                    && t.op == req.op
                    && t.sync == req.sync
                    && t.prov.pid == req.prov.pid
                    && t.prov.blkio_group == req.prov.blkio_group
                    && !t.fua
                    && t.sectors + req.sectors <= self.max_sectors;
                if mergeable {
                    self.by_end.remove(&req.sector);
                    let t = reqs.get_mut(target);
                    t.sectors += req.sectors;
                    t.merged += 1;
                    t.meta |= req.meta;
                    t.prov.fg |= req.prov.fg;
                    let end = t.end_sector();
                    self.by_end.insert(end, target);
                    self.merges += 1;
                    return Submitted::Merged(target);
                }
            }
        }
        let end = req.end_sector();
        let mergeable_kind = matches!(req.op, ReqOp::Read | ReqOp::Write) && !req.fua;
        let id = reqs.insert(req);
        if mergeable_kind {
            self.by_end.insert(end, id);
        }
        // Linux 3.10's `blk_insert_flush` keeps every REQ_FLUSH / REQ_FUA request out of the
        // elevator: its flush sequence puts the preflush on the dispatch queue and the data step
        // after it (block/blk-flush.c). One command here stands for the sequence.
        let flush_seq = {
            let r = reqs.get(id);
            r.op == ReqOp::Flush || r.fua || r.preflush
        };
        match insert {
            Insert::Scheduler if !flush_seq => self.sched.add(id, reqs, now),
            _ => self.dispatch_q.push_back(id),
        }
        Submitted::Queued(id)
    }

    /// Move requests to the device while it has free slots. Returns the requests handed over
    /// (in order) and, if the scheduler chose to wait, when to call again.
    pub fn dispatch(&mut self, reqs: &mut ReqSlab, now: SimTime, out: &mut Vec<ReqId>) -> Option<SimTime> {
        let mut wake = None;
        while self.in_flight < self.depth {
            let id = if let Some(id) = self.dispatch_q.pop_front() {
                id
            } else {
                match self.sched.dispatch(reqs, self.in_flight, now) {
                    Dispatch::Request(id) => id,
                    Dispatch::WaitUntil(t) => {
                        wake = Some(t);
                        break;
                    }
                    Dispatch::Empty => break,
                }
            };
            let r = reqs.get_mut(id);
            debug_assert!(r.times.dispatched.is_none(), "request dispatched twice");
            r.times.dispatched = Some(now);
            let end = r.end_sector();
            if self.by_end.get(&end) == Some(&id) {
                self.by_end.remove(&end);
            }
            self.in_flight += 1;
            out.push(id);
        }
        wake
    }

    /// The device finished `id`. The caller frees it after waking its waiters.
    pub fn complete(&mut self, reqs: &mut ReqSlab, id: ReqId, now: SimTime) {
        debug_assert!(self.in_flight > 0);
        self.in_flight -= 1;
        reqs.get_mut(id).times.completed = Some(now);
        self.sched.completed(id, reqs, now);
    }

    /// Ask the scheduler to boost queued request `id` (QASIO). Requests in the dispatch queue
    /// or on the device are already past the scheduler.
    pub fn boost(&mut self, reqs: &mut ReqSlab, id: ReqId) -> bool {
        let r = reqs.get_mut(id);
        if !r.is_queued() || r.boosted {
            return false;
        }
        r.boosted = true;
        self.sched.boost(id, reqs)
    }

    /// Move queued request `id` from the scheduler to the tail of the dispatch queue, ahead of
    /// everything the scheduler holds (a request that became foreground after it was queued,
    /// under a policy that sends FG requests straight to dispatch). Returns whether it moved.
    pub fn promote(&mut self, reqs: &ReqSlab, id: ReqId) -> bool {
        let r = reqs.get(id);
        // Flushes and PREFLUSH / FUA writes are on the dispatch queue from the start.
        if !r.is_queued() || r.op == ReqOp::Flush || self.dispatch_q.contains(&id) {
            return false;
        }
        // The scheduler forgets it exactly as it forgets a request merged away.
        self.sched.remove_merged(id, reqs);
        self.dispatch_q.push_back(id);
        true
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
    /// Requests in the host's queues (scheduler + dispatch queue).
    pub fn queued(&self) -> usize {
        self.sched.queued() + self.dispatch_q.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request {
        Request::new(ReqOp::Write, 0, 8, false, Provenance::KERNEL)
    }

    #[test]
    fn a_key_outlives_its_request_and_a_reused_id_is_another_request() {
        let mut reqs = ReqSlab::default();
        let a = reqs.insert(req());
        let ka = reqs.key(a);
        assert!(reqs.is_live(ka));
        reqs.free(a);
        assert!(!reqs.is_live(ka));
        let b = reqs.insert(req());
        assert_eq!(b, a, "the id is reused");
        assert!(!reqs.is_live(ka), "the old key does not name the new request");
        assert!(reqs.is_live(reqs.key(b)));
    }

    #[test]
    fn completion_reads_what_the_merged_bios_complete_in_order_and_frees_the_slot() {
        let mut reqs = ReqSlab::default();
        let a = reqs.insert(req());
        reqs.completes(a, Completes::Pages { file: 3, first: 0, n: 2, write: true });
        reqs.completes(a, Completes::Pages { file: 3, first: 2, n: 1, write: true });
        let mut seen = Vec::new();
        let r = reqs.complete(a, |c| seen.push(c));
        assert_eq!(r.sectors, 8);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1], Completes::Pages { file: 3, first: 2, n: 1, write: true });
        assert_eq!((reqs.live(), reqs.iter().count()), (0, 0));
        // The slot's next request starts with nothing to complete.
        let b = reqs.insert(req());
        reqs.complete(b, |c| panic!("{c:?} left over from the previous request"));
    }

    /// Linux 3.10's `blk_insert_flush`: a PREFLUSH + FUA write (jbd2's commit record) and a
    /// flush never enter the elevator and never merge; they reach the device before anything
    /// the scheduler holds, in the order they came.
    #[test]
    fn flush_and_fua_writes_go_past_the_scheduler_and_never_merge() {
        let mut reqs = ReqSlab::default();
        let mut bq = BlockQueue::new(Box::new(noop::Noop::default()), 1, 1024);
        let now = SimTime::ZERO;
        let id = |s: Submitted| match s {
            Submitted::Queued(id) => id,
            Submitted::Merged(id) => panic!("merged into {id}"),
        };
        let read = id(bq.submit(&mut reqs, Request::new(ReqOp::Read, 800, 8, true, Provenance::KERNEL), Insert::Scheduler, now));
        let journal =
            id(bq.submit(&mut reqs, Request::new(ReqOp::Write, 0, 8, true, Provenance::KERNEL), Insert::Scheduler, now));
        let mut record = Request::new(ReqOp::Write, 8, 8, true, Provenance::KERNEL);
        (record.fua, record.preflush) = (true, true);
        // It continues the journal block's sectors and would back-merge if it were a plain write.
        let record = id(bq.submit(&mut reqs, record, Insert::Scheduler, now));
        let flush = id(bq.submit(&mut reqs, Request::new(ReqOp::Flush, 0, 0, true, Provenance::KERNEL), Insert::Scheduler, now));
        // Nothing merges into the commit record either.
        let after = id(bq.submit(&mut reqs, Request::new(ReqOp::Write, 16, 8, true, Provenance::KERNEL), Insert::Scheduler, now));
        assert_eq!((bq.sched.queued(), bq.queued()), (3, 5), "the scheduler holds the read and the two plain writes only");
        let mut order = Vec::new();
        for _ in 0..5 {
            let mut out = Vec::new();
            bq.dispatch(&mut reqs, now, &mut out);
            assert_eq!(out.len(), 1, "depth 1: one request at a time");
            bq.complete(&mut reqs, out[0], now);
            order.push(out[0]);
        }
        assert_eq!(order, vec![record, flush, read, journal, after]);
        assert_eq!(bq.merges, 0);
    }
}
