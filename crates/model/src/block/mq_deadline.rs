//! mq-deadline: the blk-mq deadline scheduler of Linux 5.14+ (`block/mq-deadline.c`), the
//! default for SATA/virtio disks on current distributions, with its I/O priority classes.
//!
//! What [`super::deadline`] models is `deadline-iosched.c` of Linux 3.x: per direction a sector
//! order and a FIFO with deadlines (`read_expire` 500 ms, `write_expire` 5 s), batches of
//! `fifo_batch` (16) requests in sector order, reads preferred up to `writes_starved` (2) times.
//! `mq-deadline.c` keeps that algorithm and its defaults (`deadline_check_fifo`,
//! `deadline_fifo_request`, `deadline_next_request`; the batch continues from the last
//! position, `latest_pos`, where 3.x kept `next_rq` — the same sweep), and since 5.14 (commit
//! "block/mq-deadline: Prioritize high-priority requests") it keeps those structures once per
//! priority class (`dd_per_prio`: RT, BE, IDLE, from the request's ioprio class; `NONE` is BE):
//!
//! 1. `dd_dispatch_prio_aged_requests`: when requests of at least two classes are queued, a BE
//!    or IDLE request queued for longer than `prio_aging_expire` (10 s) is dispatched first
//!    (BE before IDLE) — the starvation bound of the lower classes.
//! 2. Otherwise the classes are served strictly in order: the first class with requests queued
//!    dispatches (`if (rq || dd_queued(dd, prio)) break;`), lower classes wait.
//!
//! This module is that: one [`Deadline`] per class behind the class rule.
//!
//! # Simplifications versus the kernel
//!
//! - The batch state (`batching`, `starved`, the batch's direction) is kept per class; the
//!   kernel keeps one for the device. A batch of a class is therefore resumed, not restarted,
//!   when its class is served again after a higher class ran dry.
//! - The aged path dispatches what the class's batch logic picks when the class's oldest
//!   request has aged; the kernel dispatches the batch logic's pick only if that request itself
//!   is older than `prio_aging_expire` (`started_after`).
//! - No `async_depth` limit on the tags async requests may take, no zoned-device write locking.
//! - Everything [`super::deadline`] lists (merging in the block queue; flushes first, ahead of
//!   every class; QASIO's `boost` within the request's class).
//!
//! # Invariants
//!
//! Each request added is held by exactly one class's [`Deadline`] (flushes by the RT one, which
//! dispatches them first) until it is dispatched or removed; `queued()` is the sum of theirs.

use std::collections::BTreeSet;

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use super::deadline::{Deadline, DeadlineParams};
use super::{Dispatch, IoScheduler, ReqId, ReqOp, ReqSlab};

/// mq-deadline tunables, named as in `/sys/block/<dev>/queue/iosched/` (times in ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MqDeadlineParams {
    /// Deadline of a read, ms (kernel 500 = HZ/2, `read_expire`).
    pub read_expire: u64,
    /// Deadline of a write, ms (kernel 5000 = 5*HZ, `write_expire`).
    pub write_expire: u64,
    /// Read batches before a forced write batch (kernel 2, `writes_starved`).
    pub writes_starved: u32,
    /// Requests per batch (kernel 16, `fifo_batch`).
    pub fifo_batch: u32,
    /// Age after which a BE or IDLE request goes ahead of higher classes, ms (kernel 10000 =
    /// 10*HZ, `prio_aging_expire`).
    pub prio_aging_expire: u64,
}

impl Default for MqDeadlineParams {
    fn default() -> Self {
        MqDeadlineParams { read_expire: 500, write_expire: 5000, writes_starved: 2, fifo_batch: 16, prio_aging_expire: 10_000 }
    }
}

const RT: usize = 0;
const BE: usize = 1;
const IDLE: usize = 2;

/// `ioprio_class_to_prio[]`: NONE and BE → BE, RT → RT, IDLE → IDLE.
fn prio_of(ioprio_class: u8) -> usize {
    match ioprio_class {
        1 => RT,
        3 => IDLE,
        _ => BE,
    }
}

pub struct MqDeadline {
    classes: [Deadline; 3],
    aging: u64,
    /// Per class: (submission ns, id) of the requests it holds, oldest first.
    ages: [BTreeSet<(u64, ReqId)>; 3],
    /// Per request id: its class and submission time while held.
    slots: Vec<Option<(usize, u64)>>,
}

impl MqDeadline {
    pub fn new(p: MqDeadlineParams) -> Self {
        let dp = DeadlineParams {
            read_expire: p.read_expire,
            write_expire: p.write_expire,
            writes_starved: p.writes_starved,
            fifo_batch: p.fifo_batch,
        };
        MqDeadline {
            classes: [Deadline::new(dp.clone()), Deadline::new(dp.clone()), Deadline::new(dp)],
            aging: p.prio_aging_expire.saturating_mul(1_000_000),
            ages: Default::default(),
            slots: Vec::new(),
        }
    }

    fn take(&mut self, id: ReqId) {
        if let Some((c, t)) = self.slots.get_mut(id as usize).and_then(Option::take) {
            self.ages[c].remove(&(t, id));
        }
    }

    fn serve_class(&mut self, c: usize, reqs: &ReqSlab, in_flight: usize, now: SimTime) -> Dispatch {
        let d = self.classes[c].dispatch(reqs, in_flight, now);
        if let Dispatch::Request(id) = d {
            self.take(id);
        }
        d
    }
}

impl IoScheduler for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    fn add(&mut self, id: ReqId, reqs: &ReqSlab, now: SimTime) {
        let Some(r) = reqs.try_get(id) else { return };
        // Flushes go first in every class; hold them in the RT one, which is served first.
        let c = if r.op == ReqOp::Flush { RT } else { prio_of(r.ioprio_class) };
        if self.slots.len() <= id as usize {
            self.slots.resize(id as usize + 1, None);
        }
        self.slots[id as usize] = Some((c, now.ns()));
        self.ages[c].insert((now.ns(), id));
        self.classes[c].add(id, reqs, now);
    }

    fn remove_merged(&mut self, id: ReqId, reqs: &ReqSlab) {
        if let Some(&Some((c, _))) = self.slots.get(id as usize) {
            self.classes[c].remove_merged(id, reqs);
            self.take(id);
        }
    }

    fn dispatch(&mut self, reqs: &ReqSlab, in_flight: usize, now: SimTime) -> Dispatch {
        // dd_dispatch_prio_aged_requests
        let busy = self.classes.iter().filter(|c| c.queued() > 0).count();
        if busy >= 2 {
            for c in [BE, IDLE] {
                let aged = self.ages[c].first().is_some_and(|&(t, _)| now.ns().saturating_sub(t) >= self.aging);
                if aged {
                    if let d @ Dispatch::Request(_) = self.serve_class(c, reqs, in_flight, now) {
                        return d;
                    }
                }
            }
        }
        for c in [RT, BE, IDLE] {
            if self.classes[c].queued() > 0 {
                return self.serve_class(c, reqs, in_flight, now);
            }
        }
        Dispatch::Empty
    }

    fn completed(&mut self, _id: ReqId, _reqs: &ReqSlab, _now: SimTime) {}

    fn boost(&mut self, id: ReqId, reqs: &ReqSlab) -> bool {
        match self.slots.get(id as usize).copied().flatten() {
            Some((c, _)) => self.classes[c].boost(id, reqs),
            None => false,
        }
    }

    fn queued(&self) -> usize {
        self.classes.iter().map(|c| c.queued()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::deadline::testkit::*;
    use crate::block::Request;

    fn class(mut r: Request, c: u8) -> Request {
        r.ioprio_class = c;
        r
    }

    #[test]
    fn defaults_are_the_kernels() {
        let p = MqDeadlineParams::default();
        assert_eq!(
            (p.read_expire, p.write_expire, p.writes_starved, p.fifo_batch, p.prio_aging_expire),
            (500, 5000, 2, 16, 10_000)
        );
    }

    /// RT before BE before IDLE, whatever the arrival order and deadlines.
    #[test]
    fn classes_are_served_in_order() {
        let mut arrivals = Vec::new();
        for i in 0..10u64 {
            arrivals.push((ms(0), class(read(i * 8, 3, 300 + i), 3)));
            arrivals.push((ms(0), class(read(10_000 + i * 8, 2, 200 + i), 2)));
            arrivals.push((ms(0), class(read(20_000 + i * 8, 1, 100 + i), 1)));
        }
        let done = run(&mut MqDeadline::new(Default::default()), arrivals, 1, &|_| 1_000_000, None, ms(1000));
        let order: Vec<u8> = done.iter().map(|d| d.class).collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "served by class: {order:?}");
        assert_eq!(done.len(), 30);
    }

    /// An IDLE request waits while BE requests keep coming, but not longer than
    /// `prio_aging_expire`.
    #[test]
    fn a_lower_class_request_is_served_once_it_has_aged() {
        let p = MqDeadlineParams { prio_aging_expire: 100, ..Default::default() };
        let mut arrivals = vec![(ms(0), class(read(1 << 30, 9, 99_999), 3))];
        // Three BE requests every ms for 400 ms, each served in 0.5 ms: BE is never empty.
        for i in 0..400u64 {
            arrivals.push((ms(i), read(i * 8, 1, i)));
            arrivals.push((ms(i), read(i * 8 + 1_000_000, 2, 1000 + i)));
            arrivals.push((ms(i), read(i * 8 + 2_000_000, 3, 2000 + i)));
        }
        let done = run(&mut MqDeadline::new(p), arrivals, 1, &|_| 500_000, None, ms(2000));
        let idle = done.iter().find(|d| d.tag == 99_999).expect("the idle request is served");
        assert!(idle.dispatched >= ms(100) && idle.dispatched <= ms(102), "dispatched at {:?}", idle.dispatched);
        // Without aging it would wait until BE ran dry.
        let p = MqDeadlineParams { prio_aging_expire: 100_000, ..Default::default() };
        let mut arrivals = vec![(ms(0), class(read(1 << 30, 9, 99_999), 3))];
        for i in 0..400u64 {
            arrivals.push((ms(i), read(i * 8, 1, i)));
            arrivals.push((ms(i), read(i * 8 + 1_000_000, 2, 1000 + i)));
            arrivals.push((ms(i), read(i * 8 + 2_000_000, 3, 2000 + i)));
        }
        let done = run(&mut MqDeadline::new(p), arrivals, 1, &|_| 500_000, None, ms(2000));
        let idle = done.iter().find(|d| d.tag == 99_999).expect("served at the end");
        assert!(idle.dispatched >= ms(399), "dispatched at {:?}", idle.dispatched);
    }

    #[test]
    fn flushes_first_and_merged_requests_are_forgotten() {
        let mut s = MqDeadline::new(Default::default());
        let mut slab = ReqSlab::default();
        let a = slab.insert(class(read(0, 1, 1), 3));
        s.add(a, &slab, ms(0));
        let b = slab.insert(read(100, 1, 2));
        s.add(b, &slab, ms(0));
        let f = slab.insert(req(ReqOp::Flush, 0, 0, true, 1, 3));
        s.add(f, &slab, ms(0));
        s.remove_merged(b, &slab);
        assert_eq!(s.queued(), 2);
        assert_eq!(s.dispatch(&slab, 0, ms(0)), Dispatch::Request(f));
        assert_eq!(s.dispatch(&slab, 0, ms(0)), Dispatch::Request(a));
        assert_eq!(s.dispatch(&slab, 0, ms(0)), Dispatch::Empty);
    }
}
