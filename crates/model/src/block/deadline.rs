//! deadline: the Linux 3.x `block/deadline-iosched.c` elevator.
//!
//! Each direction (reads; writes) keeps its queued requests twice: sorted by start sector
//! (`BTreeMap` keyed `(sector, id)`) and in arrival order with a deadline
//! (`arrival + read_expire` / `arrival + write_expire`). Dispatch works in *batches*:
//!
//! 1. While a batch is running (`batching < fifo_batch`) and the sort order has a next request
//!    in the batch's direction (`next_rq`, the request after the last dispatched one), dispatch
//!    it. The batch does not look at deadlines (as in the kernel).
//! 2. Otherwise start a batch. Reads are preferred, but if writes are queued and reads have been
//!    preferred over them `writes_starved` times in a row, serve writes.
//! 3. In the chosen direction, start from the oldest request if its deadline has passed (or
//!    there is no `next_rq` in that direction), else continue the one-way sweep at `next_rq`.
//!
//! Dispatching a request clears `next_rq` of the *other* direction, so a batch never spans both.
//!
//! Choices and simplifications versus the kernel:
//! - Merging is done by [`super::BlockQueue`], so `front_merges` does not exist here.
//! - `ReqOp::Flush` requests are dispatched first, in arrival order, ahead of everything: the
//!   kernel's flush machinery (`blk-flush.c`) inserts them straight into the dispatch queue and
//!   they never reach the elevator. `ReqOp::Discard` is an ordinary write (the kernel issues
//!   discards as `REQ_WRITE | REQ_DISCARD` through the elevator).
//! - Times are exact nanoseconds (no jiffies); a deadline has passed when `now >= deadline`.
//! - `boost` (QASIO) moves a queued request to the front of its direction's FIFO and makes it
//!   the direction's `next_rq`, so it is dispatched at the start of the next batch in its
//!   direction (or next in the running batch). deadline has no notion of sync vs async, so this
//!   is the closest equivalent of "ahead of other async I/O". Boosts keep their order: while an
//!   earlier boosted request of a direction is queued, neither a later boost nor the batch's
//!   sector sweep goes before it.

use std::collections::{BTreeMap, VecDeque};

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use super::{Dispatch, IoScheduler, ReqId, ReqOp, ReqSlab};

/// deadline tunables, named as in `/sys/block/<dev>/queue/iosched/`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeadlineParams {
    /// Deadline of a read after it is queued, ms (kernel default 500 = HZ/2,
    /// block/deadline-iosched.c `read_expire`).
    pub read_expire: u64,
    /// Deadline of a write after it is queued, ms (kernel default 5000 = 5*HZ,
    /// block/deadline-iosched.c `write_expire`).
    pub write_expire: u64,
    /// Times reads may be preferred over queued writes before a write batch is forced, count
    /// (kernel default 2, block/deadline-iosched.c `writes_starved`).
    pub writes_starved: u32,
    /// Requests dispatched in sector order per batch before deadlines are checked again, count
    /// (kernel default 16, block/deadline-iosched.c `fifo_batch`).
    pub fifo_batch: u32,
}

impl Default for DeadlineParams {
    fn default() -> Self {
        DeadlineParams { read_expire: 500, write_expire: 5000, writes_starved: 2, fifo_batch: 16 }
    }
}

const READ: usize = 0;
const WRITE: usize = 1;

#[derive(Clone, Copy, Debug)]
enum Slot {
    /// A flush waiting in `flushes`.
    Flush,
    /// A read or write in the sort and FIFO structures of direction `dir`.
    Queued { dir: usize, sector: u64, seq: u64 },
}

/// One direction's queued requests.
#[derive(Default)]
struct Dir {
    /// Sector order: `(sector, id)`.
    sort: BTreeMap<(u64, ReqId), ()>,
    /// Arrival order: `seq → (deadline, id)`. Deadlines are monotone in `seq` within a
    /// direction (constant expire), except for boosted entries, which get negative-ish seqs at the
    /// front (see `boost`), so the first entry is always the most urgent.
    fifo: BTreeMap<u64, (SimTime, ReqId)>,
}

pub struct Deadline {
    p: DeadlineParams,
    expire: [u64; 2],
    dirs: [Dir; 2],
    flushes: VecDeque<ReqId>,
    /// Per request id: where it is (None when not held).
    slots: Vec<Option<Slot>>,
    /// Next request in sector order after the last dispatched one, per direction.
    next_rq: [Option<ReqId>; 2],
    /// Requests dispatched in the current batch.
    batching: u32,
    /// Times reads were chosen while writes were queued.
    starved: u32,
    /// FIFO sequence for new requests; boosted requests take `front_seq` (decreasing).
    seq: u64,
    front_seq: u64,
    queued: usize,
    /// Boosted requests in boost order (stale entries dropped lazily): while one is queued, no
    /// other request of its direction is dispatched before it.
    boosted: VecDeque<ReqId>,
}

impl Deadline {
    pub fn new(p: DeadlineParams) -> Self {
        let ms = 1_000_000u64;
        Deadline {
            expire: [p.read_expire.saturating_mul(ms), p.write_expire.saturating_mul(ms)],
            p,
            dirs: Default::default(),
            flushes: VecDeque::new(),
            slots: Vec::new(),
            next_rq: [None, None],
            batching: 0,
            starved: 0,
            // Leave room below for boosted entries, which go to the front of a FIFO.
            seq: 1 << 62,
            front_seq: (1 << 62) - 1,
            queued: 0,
            boosted: VecDeque::new(),
        }
    }

    fn slot(&self, id: ReqId) -> Option<Slot> {
        self.slots.get(id as usize).copied().flatten()
    }

    /// The request after `(sector, id)` in sector order of `dir` (the kernel's
    /// `deadline_latter_request`).
    fn latter(&self, dir: usize, sector: u64, id: ReqId) -> Option<ReqId> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.dirs[dir].sort.range((Excluded((sector, id)), Unbounded)).next().map(|(&(_, r), _)| r)
    }

    /// Take `id` out of every structure (`deadline_remove_request`).
    fn remove(&mut self, id: ReqId) -> bool {
        match self.slot(id) {
            None => false,
            Some(Slot::Flush) => {
                self.flushes.retain(|&r| r != id);
                self.slots[id as usize] = None;
                self.queued -= 1;
                true
            }
            Some(Slot::Queued { dir, sector, seq }) => {
                if self.next_rq[dir] == Some(id) {
                    self.next_rq[dir] = self.latter(dir, sector, id);
                }
                self.dirs[dir].sort.remove(&(sector, id));
                self.dirs[dir].fifo.remove(&seq);
                self.slots[id as usize] = None;
                self.queued -= 1;
                true
            }
        }
    }

    /// Dispatch `id` of direction `dir` (`deadline_move_request`).
    fn move_request(&mut self, dir: usize, id: ReqId) -> Dispatch {
        let Some(Slot::Queued { sector, .. }) = self.slot(id) else {
            // Unreachable by construction; never panic in the simulator.
            return Dispatch::Empty;
        };
        self.next_rq = [None, None];
        self.next_rq[dir] = self.latter(dir, sector, id);
        self.remove(id);
        self.batching += 1;
        Dispatch::Request(id)
    }

    /// Dispatch `id` of direction `dir`, unless an older boost of that direction is still
    /// queued: then that one goes first (a later boost or the batch's sector sweep never
    /// passes an earlier boost).
    fn move_boosted_first(&mut self, dir: usize, id: ReqId) -> Dispatch {
        while let Some(&b) = self.boosted.front() {
            match self.slot(b) {
                Some(Slot::Queued { dir: d, .. }) => {
                    if b == id {
                        self.boosted.pop_front();
                    } else if d == dir {
                        self.boosted.pop_front();
                        return self.move_request(dir, b);
                    }
                    break;
                }
                _ => {
                    self.boosted.pop_front();
                }
            }
        }
        self.move_request(dir, id)
    }

    /// Whether the oldest request of `dir` has passed its deadline (`deadline_check_fifo`).
    fn fifo_expired(&self, dir: usize, now: SimTime) -> bool {
        self.dirs[dir].fifo.values().next().is_some_and(|&(deadline, _)| now >= deadline)
    }
}

impl IoScheduler for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
    }

    fn add(&mut self, id: ReqId, reqs: &ReqSlab, now: SimTime) {
        let Some(r) = reqs.try_get(id) else { return };
        if self.slot(id).is_some() {
            debug_assert!(false, "request {id} added twice");
            return;
        }
        if self.slots.len() <= id as usize {
            self.slots.resize(id as usize + 1, None);
        }
        if r.op == ReqOp::Flush {
            self.flushes.push_back(id);
            self.slots[id as usize] = Some(Slot::Flush);
        } else {
            let dir = if r.op.is_read() { READ } else { WRITE };
            let seq = self.seq;
            self.seq += 1;
            self.dirs[dir].sort.insert((r.sector, id), ());
            self.dirs[dir].fifo.insert(seq, (now.after(self.expire[dir]), id));
            self.slots[id as usize] = Some(Slot::Queued { dir, sector: r.sector, seq });
        }
        self.queued += 1;
        if r.boosted {
            self.boost(id, reqs);
        }
    }

    fn remove_merged(&mut self, id: ReqId, _reqs: &ReqSlab) {
        self.remove(id);
    }

    fn dispatch(&mut self, _reqs: &ReqSlab, _in_flight: usize, now: SimTime) -> Dispatch {
        if let Some(id) = self.flushes.pop_front() {
            self.slots[id as usize] = None;
            self.queued -= 1;
            return Dispatch::Request(id);
        }
        // Continue the running batch in sector order.
        let cont = self.next_rq[WRITE].map(|r| (WRITE, r)).or(self.next_rq[READ].map(|r| (READ, r)));
        if let Some((dir, id)) = cont {
            if self.batching < self.p.fifo_batch {
                return self.move_boosted_first(dir, id);
            }
        }
        let reads = !self.dirs[READ].fifo.is_empty();
        let writes = !self.dirs[WRITE].fifo.is_empty();
        let dir = if reads {
            let starve = writes && {
                let s = self.starved;
                self.starved += 1;
                s >= self.p.writes_starved
            };
            if starve {
                self.starved = 0;
                WRITE
            } else {
                READ
            }
        } else if writes {
            self.starved = 0;
            WRITE
        } else {
            return Dispatch::Empty;
        };
        let id = match self.next_rq[dir] {
            Some(next) if !self.fifo_expired(dir, now) => next,
            _ => match self.dirs[dir].fifo.values().next() {
                Some(&(_, id)) => id,
                None => return Dispatch::Empty,
            },
        };
        self.batching = 0;
        self.move_boosted_first(dir, id)
    }

    fn completed(&mut self, _id: ReqId, _reqs: &ReqSlab, _now: SimTime) {}

    fn boost(&mut self, id: ReqId, _reqs: &ReqSlab) -> bool {
        let Some(Slot::Queued { dir, sector, seq }) = self.slot(id) else {
            return false;
        };
        if !self.boosted.contains(&id) {
            self.boosted.push_back(id);
        }
        let front = self.dirs[dir].fifo.keys().next().copied();
        let sweep_changes = self.next_rq[1 - dir].is_none() && self.next_rq[dir] != Some(id);
        if front == Some(seq) && !sweep_changes {
            return false;
        }
        // Front of the FIFO, keeping its original deadline (it only gets more urgent).
        if front != Some(seq) {
            if let Some(entry) = self.dirs[dir].fifo.remove(&seq) {
                let new_seq = self.front_seq;
                self.front_seq = self.front_seq.saturating_sub(1);
                self.dirs[dir].fifo.insert(new_seq, entry);
                self.slots[id as usize] = Some(Slot::Queued { dir, sector, seq: new_seq });
            }
        }
        // Only one direction has a sweep position at a time (a batch never spans both): if the
        // other direction's batch is running, the boosted request starts this direction's next
        // batch from the FIFO head instead.
        if self.next_rq[1 - dir].is_none() {
            self.next_rq[dir] = Some(id);
        }
        true
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

/// A fake device and arrival driver shared by the block scheduler tests.
#[cfg(test)]
#[allow(dead_code)] // shared with the CFQ tests
pub(crate) mod testkit {
    use std::collections::BTreeMap;

    use forefront_engine::SimTime;

    use crate::block::{Dispatch, IoScheduler, ReqOp, ReqSlab, Request};
    use crate::prov::{Origin, Provenance};

    /// A template with `merged == MERGE_AWAY` is removed with `remove_merged` right after `add`.
    pub const MERGE_AWAY: u32 = u32::MAX;

    /// A request template; `tag` identifies it across id reuse.
    pub fn req(op: ReqOp, sector: u64, sectors: u32, sync: bool, pid: u32, tag: u64) -> Request {
        let origin = if sync { Origin::Read } else { Origin::Writeback };
        let prov = Provenance { uid: pid, pid, tid: pid, fg: false, origin, blkio_group: 0 };
        let mut r = Request::new(op, sector, sectors, sync, prov);
        r.tag = tag;
        r
    }

    pub fn read(sector: u64, pid: u32, tag: u64) -> Request {
        req(ReqOp::Read, sector, 8, true, pid, tag)
    }
    pub fn write(sector: u64, pid: u32, tag: u64) -> Request {
        req(ReqOp::Write, sector, 8, false, pid, tag)
    }

    pub fn ms(x: u64) -> SimTime {
        SimTime::from_ms(x)
    }

    /// What happened to one request.
    #[derive(Clone, Debug)]
    pub struct Done {
        pub tag: u64,
        pub pid: u32,
        pub group: u16,
        pub sync: bool,
        pub class: u8,
        pub submitted: SimTime,
        pub dispatched: SimTime,
        /// When the device started serving it (it serves one request at a time, in order).
        pub started: SimTime,
        pub completed: SimTime,
    }

    /// A source of requests that reacts to completions: called with (completed tag, now)
    /// and returns new requests to add at `now`.
    pub type Closed<'a> = dyn FnMut(&Done, SimTime) -> Vec<Request> + 'a;

    /// Drive `sched` with open arrivals `(time, request)` and an optional closed-loop source,
    /// over a device that holds up to `depth` requests and serves them one at a time in arrival
    /// order, each for `service(request)` ns. Stops when nothing is left or at `until`.
    /// Checks at every step that `queued()` equals the requests added and not yet dispatched,
    /// that `WaitUntil` lies in the future and that no request is dispatched twice.
    pub fn run(
        sched: &mut dyn IoScheduler,
        mut arrivals: Vec<(SimTime, Request)>,
        depth: usize,
        service: &dyn Fn(&Request) -> u64,
        closed: Option<&mut Closed<'_>>,
        until: SimTime,
    ) -> Vec<Done> {
        let mut closed = closed;
        arrivals.sort_by_key(|(t, r)| (*t, r.tag));
        let mut arrivals: std::collections::VecDeque<_> = arrivals.into();
        let mut slab = ReqSlab::default();
        let mut completions: BTreeMap<(SimTime, u64), (u32, SimTime, SimTime)> = BTreeMap::new();
        let mut wake: Option<SimTime> = None;
        let mut device_free = SimTime::ZERO;
        let mut in_flight = 0usize;
        let mut held = 0usize;
        let mut seq = 0u64;
        let mut done = Vec::new();
        let mut dispatched_tags = std::collections::BTreeSet::new();
        let mut steps = 0u64;
        loop {
            steps += 1;
            assert!(steps < 10_000_000, "driver does not terminate");
            let next =
                [arrivals.front().map(|(t, _)| *t), completions.keys().next().map(|k| k.0), wake].into_iter().flatten().min();
            let Some(t) = next else { break };
            if t > until {
                break;
            }
            let now = t;
            if wake.is_some_and(|w| w <= now) {
                wake = None;
            }
            let mut new: Vec<Request> = Vec::new();
            while completions.keys().next().is_some_and(|k| k.0 == now) {
                let (_, (id, dispatched, started)) = completions.pop_first().unwrap();
                in_flight -= 1;
                slab.get_mut(id).times.completed = Some(now);
                sched.completed(id, &slab, now);
                let r = slab.free(id);
                let d = Done {
                    tag: r.tag,
                    pid: r.prov.pid,
                    group: r.prov.blkio_group,
                    sync: r.sync,
                    class: r.ioprio_class,
                    submitted: r.times.submitted,
                    dispatched,
                    started,
                    completed: now,
                };
                if let Some(c) = closed.as_mut() {
                    new.extend(c(&d, now));
                }
                done.push(d);
            }
            while arrivals.front().is_some_and(|(t, _)| *t == now) {
                new.push(arrivals.pop_front().unwrap().1);
            }
            for mut r in new {
                r.times.submitted = now;
                let boost = r.boosted;
                r.boosted = false;
                let merge_away = r.merged == MERGE_AWAY;
                r.merged = 0;
                let id = slab.insert(r);
                sched.add(id, &slab, now);
                if merge_away {
                    // As if the block queue merged it into another queued request.
                    sched.remove_merged(id, &slab);
                    slab.free(id);
                    continue;
                }
                held += 1;
                if boost {
                    slab.get_mut(id).boosted = true;
                    sched.boost(id, &slab);
                }
            }
            assert_eq!(sched.queued(), held, "queued() at {now}");
            while in_flight < depth {
                match sched.dispatch(&slab, in_flight, now) {
                    Dispatch::Request(id) => {
                        let r = slab.get_mut(id);
                        assert!(r.times.dispatched.is_none(), "dispatched twice");
                        assert!(dispatched_tags.insert(r.tag), "tag {} dispatched twice", r.tag);
                        r.times.dispatched = Some(now);
                        let start = if device_free > now { device_free } else { now };
                        let end = start.after(service(r).max(1));
                        device_free = end;
                        seq += 1;
                        completions.insert((end, seq), (id, now, start));
                        in_flight += 1;
                        held -= 1;
                    }
                    Dispatch::WaitUntil(t) => {
                        assert!(t > now, "WaitUntil({t}) not after now {now}");
                        wake = Some(t);
                        break;
                    }
                    Dispatch::Empty => break,
                }
            }
            assert_eq!(sched.queued(), held, "queued() after dispatch at {now}");
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;
    use crate::block::Request;

    fn add_all(s: &mut Deadline, slab: &mut ReqSlab, reqs: Vec<Request>, now: SimTime) -> Vec<ReqId> {
        reqs.into_iter()
            .map(|r| {
                let id = slab.insert(r);
                s.add(id, slab, now);
                id
            })
            .collect()
    }

    fn next(s: &mut Deadline, slab: &ReqSlab, now: SimTime) -> Option<u64> {
        match s.dispatch(slab, 0, now) {
            Dispatch::Request(id) => Some(slab.get(id).tag),
            _ => None,
        }
    }

    #[test]
    fn defaults_are_the_kernels() {
        let p = DeadlineParams::default();
        assert_eq!((p.read_expire, p.write_expire, p.writes_starved, p.fifo_batch), (500, 5000, 2, 16));
    }

    #[test]
    fn batch_is_in_sector_order() {
        let mut s = Deadline::new(DeadlineParams::default());
        let mut slab = ReqSlab::default();
        let sectors = [800u64, 100, 500, 300, 900];
        let reqs = sectors.iter().enumerate().map(|(i, &sec)| read(sec, 1, i as u64)).collect();
        add_all(&mut s, &mut slab, reqs, ms(0));
        // The first batch starts at the oldest request (no next_rq yet), then sweeps upward;
        // the one-way sweep does not wrap inside a batch, a new batch starts at the FIFO head.
        let order: Vec<u64> = std::iter::from_fn(|| next(&mut s, &slab, ms(1))).collect();
        let got: Vec<u64> = order.iter().map(|&t| sectors[t as usize]).collect();
        assert_eq!(got, vec![800, 900, 100, 300, 500]);
        assert_eq!(s.queued(), 0);
    }

    /// fifo_batch 1: every dispatch is a batch decision. After A (1000) and B (2000) the sweep
    /// points at D (3000); C (10, queued at 10 ms) is behind it. Before C's deadline the sweep
    /// goes on to D; once C has expired (510 ms) C is served first.
    #[test]
    fn expired_read_preempts_sort_order() {
        for (t, want) in [(ms(13), [3u64, 4, 2]), (ms(600), [2, 3, 4])] {
            let p = DeadlineParams { fifo_batch: 1, ..Default::default() };
            let mut s = Deadline::new(p);
            let mut slab = ReqSlab::default();
            add_all(&mut s, &mut slab, vec![read(1000, 1, 0), read(2000, 1, 1)], ms(0));
            add_all(&mut s, &mut slab, vec![read(10, 1, 2), read(3000, 1, 3), read(4000, 1, 4)], ms(10));
            assert_eq!(next(&mut s, &slab, ms(11)), Some(0)); // FIFO head: no sweep yet
            assert_eq!(next(&mut s, &slab, ms(12)), Some(1)); // sweep
            let rest: Vec<u64> = (0..3).filter_map(|_| next(&mut s, &slab, t)).collect();
            assert_eq!(rest, want, "dispatching at {t}");
        }
    }

    #[test]
    fn write_batches_start_at_fifo_head() {
        let p = DeadlineParams { fifo_batch: 1, ..Default::default() };
        let mut s = Deadline::new(p);
        let mut slab = ReqSlab::default();
        add_all(&mut s, &mut slab, vec![write(50, 9, 100), write(10, 9, 101)], ms(0));
        add_all(&mut s, &mut slab, (0..6).map(|i| read(i * 8, 1, i)).collect(), ms(0));
        // writes_starved forces a write batch on every third decision; the write batch starts at
        // the FIFO head (tag 100, sector 50) as there is no write sweep yet.
        let order: Vec<u64> = (0..8).filter_map(|_| next(&mut s, &slab, ms(1))).collect();
        assert_eq!(order, vec![0, 1, 100, 2, 3, 101, 4, 5]);
    }

    #[test]
    fn writes_starved_bounds_read_preference() {
        let p = DeadlineParams { fifo_batch: 1, ..Default::default() };
        let mut s = Deadline::new(p);
        let mut slab = ReqSlab::default();
        add_all(&mut s, &mut slab, vec![write(1_000_000, 9, 1000)], ms(0));
        let reads = (0..10).map(|i| read(i * 8, 1, i)).collect();
        add_all(&mut s, &mut slab, reads, ms(0));
        let order: Vec<u64> = (0..4).filter_map(|_| next(&mut s, &slab, ms(1))).collect();
        // Reads win twice (writes_starved = 2), the third batch decision serves the write.
        assert_eq!(order, vec![0, 1, 1000, 2]);
    }

    #[test]
    fn later_boosts_and_the_sweep_never_pass_an_earlier_boost() {
        let mut s = Deadline::new(DeadlineParams::default());
        let mut slab = ReqSlab::default();
        let ids = add_all(&mut s, &mut slab, (0..6).map(|i| write(i * 8, 0, i)).collect(), ms(0));
        for &b in &[ids[4], ids[2]] {
            slab.get_mut(b).boosted = true;
            assert!(s.boost(b, &slab));
        }
        // Boost order (4, then 2), then the sweep from there.
        assert_eq!(next(&mut s, &slab, ms(1)), Some(4));
        assert_eq!(next(&mut s, &slab, ms(1)), Some(2));
    }

    #[test]
    fn flush_first_and_remove_merged_and_boost() {
        let mut s = Deadline::new(DeadlineParams::default());
        let mut slab = ReqSlab::default();
        let ids = add_all(
            &mut s,
            &mut slab,
            vec![write(100, 1, 0), write(200, 1, 1), write(300, 1, 2), req(ReqOp::Flush, 0, 0, true, 1, 3)],
            ms(0),
        );
        assert_eq!(s.queued(), 4);
        s.remove_merged(ids[1], &slab);
        s.remove_merged(ids[1], &slab); // unknown now: ignored
        assert_eq!(s.queued(), 3);
        assert!(s.boost(ids[2], &slab));
        assert!(!s.boost(ids[2], &slab), "second boost changes nothing");
        assert_eq!(next(&mut s, &slab, ms(1)), Some(3)); // flush
        assert_eq!(next(&mut s, &slab, ms(1)), Some(2)); // boosted
        assert_eq!(next(&mut s, &slab, ms(1)), Some(0));
        assert_eq!(next(&mut s, &slab, ms(1)), None);
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn fake_device_dispatches_everything_once() {
        let mut s = Deadline::new(DeadlineParams::default());
        let arrivals: Vec<_> = (0..200u64)
            .map(|i| {
                let r = if i % 3 == 0 { write(i * 7919 % 5000, 2, i) } else { read(i * 104_729 % 9000, 1, i) };
                (ms(i / 4), r)
            })
            .collect();
        let done = run(&mut s, arrivals, 4, &|_| 1_000_000, None, SimTime::MAX);
        assert_eq!(done.len(), 200);
    }
}
