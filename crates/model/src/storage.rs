//! The storage stack below the file system: one block device, or software RAID-0 (Linux `md`
//! `raid0`) striping one address space over member devices, each member with its own
//! [`BlockQueue`] (merging, I/O scheduler, queue depth) and its own device model.
//!
//! The simulator talks to [`Storage`] as to one block device: it submits *top* requests (the
//! file system's bios) with ids from its own [`ReqSlab`], learns which of them reached a device
//! ([`Storage::dispatch`]), schedules device completions ([`Storage::start`]) and hands them
//! back ([`Storage::complete`]), which tells it the top requests that finished.
//!
//! With one device a top request *is* the device request: every call passes straight through
//! to the member's queue and device, so a single-device phone behaves exactly as a bare
//! [`BlockQueue`] + [`FlashDevice`].
//!
//! With RAID-0 a top request is split at chunk boundaries (`chunk_kib`, md's `--chunk`): array
//! chunk `c` lives on member `c mod n` at member chunk `c div n`. Each piece becomes a *member
//! request* (a copy of the top request's flags and provenance, in a slab of the storage's own)
//! submitted to that member's block queue, where it may back-merge like any request — also into
//! a piece of another top request, which then waits for it too. A flush goes to every member
//! (md forwards `REQ_PREFLUSH` to each). A top request's times are its pieces': dispatched and
//! in service when its first piece is, completed when its last piece is.
//!
//! Invariants (tested below): every byte of a top request is in exactly one piece; a piece as
//! split lies inside one chunk (merging may then join pieces that are contiguous on their
//! member); a top request completes exactly once, after all of its pieces; member requests
//! never leak (the slab is empty when nothing is in flight).
//!
//! A phone with a second device (a mount's, e.g. `/sdcard` on a card) is the same stack: the
//! other device's sectors follow the main device's ([`Storage::stack`]), a request goes to the
//! device its sectors are on, and a flush to the device it names (its first sector).
//!
//! One difference from a single device is visible in results: on one device a request that
//! back-merges into a queued one becomes part of it and all its waiters wake together when it
//! completes; in a stack the merged piece completes each top request it serves in turn (md's
//! per-bio completion), so waiters of merged requests may wake in another order.
//!
//! Simplifications versus md: members of different sizes are used up to the smallest one's
//! size (`n ×` the smallest; md builds zones of unequal members); a preflush write flushes only the member
//! its piece goes to; the md thread's CPU cost is not charged; no resync, no failure.

use forefront_engine::{SimRng, SimTime};
use serde::{Deserialize, Serialize};

use crate::block::{BlockQueue, Insert, ReqId, ReqOp, ReqSlab, Request, SchedulerConfig, Submitted};
use crate::flash::{FlashDevice, FlashParams, Started};

/// How a phone's devices make its block device, as in a scenario's `[phone.storage]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageSpec {
    /// Devices (built-in names or device files) striped with the run's device in a RAID-0
    /// array, after it; empty = the run's device alone.
    pub raid0_with: Vec<String>,
    /// RAID-0 chunk (KiB): md's default since mdadm 3.1 is 512 KiB; 2.6-era arrays used 64.
    pub chunk_kib: u64,
}

impl Default for StorageSpec {
    fn default() -> Self {
        StorageSpec { raid0_with: Vec::new(), chunk_kib: 64 }
    }
}

impl StorageSpec {
    pub fn validate(&self) -> Result<(), String> {
        if !self.raid0_with.is_empty() && (self.chunk_kib < 4 || !self.chunk_kib.is_power_of_two()) {
            return Err(format!("phone.storage.chunk_kib: {} is not a power of two of at least 4 KiB", self.chunk_kib));
        }
        Ok(())
    }
}

/// One device of the stack with its host queue.
pub struct Member {
    pub bq: BlockQueue,
    pub dev: FlashDevice,
}

/// The phone's block device (see the module docs).
pub struct Storage {
    pub members: Vec<Member>,
    /// Members striped as the main device (RAID-0 when more than one).
    stripe: usize,
    /// RAID-0 chunk in sectors; 0 = a single main device.
    chunk_sectors: u64,
    /// Devices of other mounts after the main device's sectors: (first, end) sector of each,
    /// in member order from `members[stripe]`.
    extra: Vec<(u64, u64)>,
    /// RAID-0 member requests.
    kids: ReqSlab,
    /// Per member request: its member and the top requests waiting for it.
    kid_member: Vec<u8>,
    kid_tops: Vec<Vec<ReqId>>,
    /// Per top request: its member requests still in flight.
    top_kids: Vec<Vec<ReqId>>,
    /// Pieces created by splitting (RAID-0), for the run's counters.
    pub pieces: u64,
    scratch: Vec<Started>,
}

impl Storage {
    pub fn single(bq: BlockQueue, dev: FlashDevice) -> Storage {
        Storage::stack(vec![Member { bq, dev }], 1, 64, u64::MAX)
    }

    /// The phone's block devices from their parameters: `devs[..stripe]` are the main device
    /// (RAID-0 with `chunk_kib` chunks when more than one, each member used up to the smallest
    /// one's capacity), every further device is a mount's device of its own. Each device gets
    /// its own block queue with scheduler `sched` (`blkio_weights` per group) and requests of at
    /// most `max_sectors`; device `i`'s service times draw from `rng(i)`.
    pub fn build(
        devs: Vec<FlashParams>,
        layout: (usize, u64),
        sched: &SchedulerConfig,
        blkio_weights: &[u32],
        max_sectors: u32,
        rng: impl Fn(usize) -> SimRng,
    ) -> Storage {
        let (stripe, chunk_kib) = layout;
        let main_sectors = devs[..stripe].iter().map(|d| d.capacity_gib).min().unwrap_or(0) * stripe as u64 * (1 << 21);
        let mut members: Vec<Member> = devs
            .into_iter()
            .enumerate()
            .map(|(i, d)| Member {
                bq: BlockQueue::new(sched.for_device(d.rotational).build(blkio_weights), d.queue_depth, max_sectors),
                dev: FlashDevice::new(d).seeded(rng(i)),
            })
            .collect();
        if members.len() == 1 {
            let m = members.pop().expect("one member");
            Storage::single(m.bq, m.dev)
        } else {
            Storage::stack(members, stripe, chunk_kib, main_sectors)
        }
    }

    /// RAID-0 over `members` (at least two) with a chunk of `chunk_kib`.
    pub fn raid0(members: Vec<Member>, chunk_kib: u64) -> Storage {
        let n = members.len();
        Storage::stack(members, n, chunk_kib, u64::MAX)
    }

    /// The main device — `members[..stripe]`, RAID-0 with `chunk_kib` chunks when `stripe` > 1 —
    /// covering sectors `0..main_sectors`, then every further member as a device of its own
    /// whose sectors follow (each its capacity long): a phone's second device for a mount.
    pub fn stack(members: Vec<Member>, stripe: usize, chunk_kib: u64, main_sectors: u64) -> Storage {
        assert!(stripe >= 1 && stripe <= members.len() && members.len() <= usize::from(u8::MAX), "1..=255 members");
        assert!(stripe == 1 || (chunk_kib >= 4 && chunk_kib.is_power_of_two()), "chunk must be a power of two >= 4 KiB");
        let mut extra = Vec::new();
        let mut at = main_sectors;
        for m in &members[stripe..] {
            let len = m.dev.params.capacity_gib << 21;
            extra.push((at, at + len));
            at += len;
        }
        Storage {
            members,
            stripe,
            chunk_sectors: if stripe > 1 { chunk_kib * 2 } else { 0 },
            extra,
            kids: ReqSlab::default(),
            kid_member: Vec::new(),
            kid_tops: Vec::new(),
            top_kids: Vec::new(),
            pieces: 0,
            scratch: Vec::new(),
        }
    }

    /// Whether top requests are mapped onto pieces (RAID-0 or more than one device); false:
    /// they pass straight to the one device.
    pub fn is_raid(&self) -> bool {
        self.members.len() > 1
    }

    /// Where sector `s` lives: (member, its sector there, sectors left before the piece ends).
    fn map(&self, s: u64) -> (usize, u64, u64) {
        if let Some(i) = self.extra.iter().position(|&(a, b)| (a..b).contains(&s)) {
            let (a, b) = self.extra[i];
            return (self.stripe + i, s - a, b - s);
        }
        if self.stripe == 1 {
            let end = self.extra.first().map_or(u64::MAX, |e| e.0);
            return (0, s, end.saturating_sub(s).max(1));
        }
        let (n, cs) = (self.stripe as u64, self.chunk_sectors);
        let chunk = s / cs;
        ((chunk % n) as usize, (chunk / n) * cs + s % cs, (chunk + 1) * cs - s)
    }

    /// Queue top request `req` (or back-merge it, single device only).
    pub fn submit(&mut self, reqs: &mut ReqSlab, req: Request, insert: Insert, now: SimTime) -> Submitted {
        if !self.is_raid() {
            return self.members[0].bq.submit(reqs, req, insert, now);
        }
        let mut top = req.clone();
        top.times.submitted = now;
        let t = reqs.insert(top);
        if self.top_kids.len() <= t as usize {
            self.top_kids.resize_with(t as usize + 1, Vec::new);
        }
        self.top_kids[t as usize].clear();
        if req.op == ReqOp::Flush {
            // A flush of another mount's device goes to it; of the main device, to its members.
            let (m, _, _) = self.map(req.sector);
            let targets = if m >= self.stripe { m..m + 1 } else { 0..self.stripe };
            for m in targets {
                let piece = Request { sector: 0, sectors: 0, ..req.clone() };
                self.submit_piece(t, m, piece, insert, now);
            }
        } else {
            let (mut s, end) = (req.sector, req.end_sector());
            while s < end {
                let (m, at, left) = self.map(s);
                let len = (end - s).min(left) as u32;
                let piece = Request { sector: at, sectors: len, ..req.clone() };
                self.submit_piece(t, m, piece, insert, now);
                s += u64::from(len);
            }
        }
        Submitted::Queued(t)
    }

    fn submit_piece(&mut self, top: ReqId, m: usize, piece: Request, insert: Insert, now: SimTime) {
        self.pieces += 1;
        let k = match self.members[m].bq.submit(&mut self.kids, piece, insert, now) {
            Submitted::Queued(k) => {
                if self.kid_tops.len() <= k as usize {
                    self.kid_tops.resize_with(k as usize + 1, Vec::new);
                    self.kid_member.resize(k as usize + 1, 0);
                }
                self.kid_member[k as usize] = m as u8;
                self.kid_tops[k as usize].clear();
                k
            }
            Submitted::Merged(k) => k,
        };
        // Pieces of one top request on one member continue each other: they merge into one.
        if !self.kid_tops[k as usize].contains(&top) {
            self.kid_tops[k as usize].push(top);
            self.top_kids[top as usize].push(k);
        }
    }

    /// Move requests to the devices while they have room, each with the command class
    /// `class` gives it. Pushes the top requests that reached a device for the first time
    /// (in order); returns when to call again if a scheduler chose to wait.
    pub fn dispatch(
        &mut self,
        reqs: &mut ReqSlab,
        now: SimTime,
        mut class: impl FnMut(&Request) -> u8,
        out: &mut Vec<ReqId>,
    ) -> Option<SimTime> {
        if !self.is_raid() {
            let start = out.len();
            let m = &mut self.members[0];
            let wake = m.bq.dispatch(reqs, now, out);
            for &id in &out[start..] {
                let r = reqs.get(id);
                m.dev.submit(id, class(r), r.prov.fg, now);
            }
            return wake;
        }
        let mut wake: Option<SimTime> = None;
        let mut ids = Vec::new();
        for m in 0..self.members.len() {
            ids.clear();
            let member = &mut self.members[m];
            if let Some(t) = member.bq.dispatch(&mut self.kids, now, &mut ids) {
                wake = Some(wake.map_or(t, |w| w.min(t)));
            }
            for &k in &ids {
                let r = self.kids.get(k);
                member.dev.submit(k, class(r), r.prov.fg, now);
                for &t in &self.kid_tops[k as usize] {
                    let top = reqs.get_mut(t);
                    if top.times.dispatched.is_none() {
                        top.times.dispatched = Some(now);
                        out.push(t);
                    }
                }
            }
        }
        wake
    }

    /// Start what the devices can; pushes (device request, completion time) for the caller to
    /// schedule and hand back to [`Storage::complete`].
    pub fn start(&mut self, reqs: &mut ReqSlab, now: SimTime, out: &mut Vec<Started>) {
        if !self.is_raid() {
            self.members[0].dev.start(now, reqs, out);
            return;
        }
        let mut started = std::mem::take(&mut self.scratch);
        for m in &mut self.members {
            started.clear();
            m.dev.start(now, &mut self.kids, &mut started);
            for s in &started {
                for &t in &self.kid_tops[s.id as usize] {
                    let top = reqs.get_mut(t);
                    top.times.service_start.get_or_insert(now);
                }
            }
            out.extend_from_slice(&started);
        }
        self.scratch = started;
    }

    /// `batch_completion` (single device only): whether device request `id`'s completion waits
    /// for the shared stage to drain; returns when to ask again ([`crate::flash::FlashDevice::hold`]).
    pub fn hold_completion(&mut self, reqs: &ReqSlab, id: ReqId, now: SimTime) -> Option<SimTime> {
        if self.is_raid() {
            return None;
        }
        self.members[0].dev.hold(id, reqs.get(id), now)
    }

    /// Device request `id` finished at `now`; pushes the top requests that are now complete
    /// (their `completed` time set). The caller frees them after waking their waiters.
    pub fn complete(&mut self, reqs: &mut ReqSlab, id: ReqId, now: SimTime, done: &mut Vec<ReqId>) {
        if !self.is_raid() {
            let m = &mut self.members[0];
            m.dev.finish_held(id, now);
            m.bq.complete(reqs, id, now);
            done.push(id);
            return;
        }
        let m = &mut self.members[self.kid_member[id as usize] as usize];
        m.dev.finish(now);
        m.bq.complete(&mut self.kids, id, now);
        self.kids.free(id);
        for t in std::mem::take(&mut self.kid_tops[id as usize]) {
            let left = &mut self.top_kids[t as usize];
            left.retain(|&k| k != id);
            if left.is_empty() {
                reqs.get_mut(t).times.completed = Some(now);
                done.push(t);
            }
        }
    }

    /// Copy the top request's priority flags (FG, boosted, FUA/preflush) to its pieces.
    fn sync_flags(&mut self, reqs: &ReqSlab, t: ReqId) {
        let top = reqs.get(t);
        for &k in &self.top_kids[t as usize] {
            let r = self.kids.get_mut(k);
            r.prov.fg |= top.prov.fg;
            if r.is_queued() {
                r.fua |= top.fua;
                r.preflush |= top.preflush;
            }
        }
    }

    /// Ask the scheduler(s) to boost queued top request `id` (QASIO). Returns whether any
    /// scheduler changed its order.
    pub fn boost(&mut self, reqs: &mut ReqSlab, id: ReqId) -> bool {
        if !self.is_raid() {
            return self.members[0].bq.boost(reqs, id);
        }
        let r = reqs.get_mut(id);
        if r.boosted {
            return false;
        }
        r.boosted = true;
        self.sync_flags(reqs, id);
        let mut any = false;
        for &k in &self.top_kids[id as usize] {
            let m = self.kid_member[k as usize] as usize;
            any |= self.members[m].bq.boost(&mut self.kids, k);
        }
        any
    }

    /// Move queued top request `id` to the dispatch queue(s) ([`BlockQueue::promote`]).
    pub fn promote(&mut self, reqs: &ReqSlab, id: ReqId) -> bool {
        if !self.is_raid() {
            return self.members[0].bq.promote(reqs, id);
        }
        self.sync_flags(reqs, id);
        let mut any = false;
        for &k in &self.top_kids[id as usize] {
            let m = self.kid_member[k as usize] as usize;
            any |= self.members[m].bq.promote(&self.kids, k);
        }
        any
    }

    /// Change the command class of top request `id`'s commands waiting in a device queue.
    pub fn reclass(&mut self, reqs: &ReqSlab, id: ReqId, class: u8, fg: bool) -> bool {
        if !self.is_raid() {
            return self.members[0].dev.reclass(id, class, fg);
        }
        self.sync_flags(reqs, id);
        let mut any = false;
        for &k in &self.top_kids[id as usize] {
            let m = self.kid_member[k as usize] as usize;
            any |= self.members[m].dev.reclass(k, class, fg);
        }
        any
    }

    /// Requests in the host queues plus commands in the devices (in device requests).
    pub fn depth(&self) -> usize {
        self.members.iter().map(|m| m.bq.queued() + m.dev.outstanding()).sum()
    }
    pub fn served_bytes_read(&self) -> u64 {
        self.members.iter().map(|m| m.dev.served_bytes_read).sum()
    }
    pub fn served_bytes_written(&self) -> u64 {
        self.members.iter().map(|m| m.dev.served_bytes_written).sum()
    }
    pub fn reorders(&self) -> u64 {
        self.members.iter().map(|m| m.dev.reorders).sum()
    }
    pub fn fg_behind_bg(&self) -> u64 {
        self.members.iter().map(|m| m.dev.fg_behind_bg).sum()
    }
    /// Member requests alive (RAID-0); 0 whenever nothing is in flight.
    pub fn live_pieces(&self) -> usize {
        self.kids.live()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::SchedulerConfig;
    use crate::flash::FlashParams;
    use crate::prov::Provenance;
    use proptest::prelude::*;

    fn member(name: &str, wr_mb_s: f64) -> Member {
        let mut p: FlashParams = crate::flash::tests::params();
        p.name = name.into();
        p.write_seq_mb_s = wr_mb_s;
        Member { bq: BlockQueue::new(SchedulerConfig::Noop.build(&[1000]), p.queue_depth, 1024), dev: FlashDevice::new(p) }
    }

    #[test]
    fn build_stripes_the_main_devices_up_to_the_smallest_and_stacks_a_mounts_device_after() {
        let dev = |gib: u64| FlashParams { capacity_gib: gib, ..crate::flash::tests::params() };
        let sched = SchedulerConfig::Noop;
        let rng = |i: usize| forefront_engine::RngStreams::new(1).stream(&format!("flash.{i}"));
        let st = Storage::build(vec![dev(32), dev(16), dev(8)], (2, 64), &sched, &[1000], 1024, rng);
        assert_eq!((st.members.len(), st.stripe, st.chunk_sectors), (3, 2, 128));
        // The RAID-0 pair covers 2 × 16 GiB; the mount's 8 GiB device follows it.
        let main = (2 * 16) << 21;
        assert_eq!(st.extra, vec![(main, main + (8 << 21))]);
        // One device alone passes requests straight through.
        assert!(!Storage::build(vec![dev(32)], (1, 64), &sched, &[1000], 1024, rng).is_raid());
    }

    fn raid(n: usize, chunk_kib: u64) -> Storage {
        Storage::raid0((0..n).map(|i| member(&format!("m{i}"), 50.0 * (i + 1) as f64)).collect(), chunk_kib)
    }

    fn req(op: ReqOp, sector: u64, sectors: u32, pid: u32) -> Request {
        Request::new(op, sector, sectors, true, Provenance { pid, ..Provenance::KERNEL })
    }

    /// Run the stack until idle; returns top completions in order with their time.
    fn drain(st: &mut Storage, reqs: &mut ReqSlab) -> Vec<(ReqId, SimTime)> {
        let mut events: Vec<Started> = Vec::new();
        let mut done = Vec::new();
        let mut now = SimTime::ZERO;
        loop {
            let mut out = Vec::new();
            st.dispatch(reqs, now, |_| 0, &mut out);
            st.start(reqs, now, &mut events);
            events.sort_by_key(|s| (s.done_at, s.id));
            if events.is_empty() {
                break;
            }
            let s = events.remove(0);
            now = s.done_at;
            let mut d = Vec::new();
            st.complete(reqs, s.id, now, &mut d);
            done.extend(d.into_iter().map(|t| (t, now)));
        }
        done
    }

    #[test]
    fn a_request_is_split_at_chunk_boundaries_onto_alternating_members() {
        let mut st = raid(2, 64); // 128 sectors per chunk
        let mut reqs = ReqSlab::default();
        // Sectors 100..420: chunk 0 (100..128) → m0, chunk 1 (128..256) → m1, chunk 2 (256..384)
        // → m0 (member chunk 1, contiguous with the first piece: merged), chunk 3 (384..420) → m1.
        let Submitted::Queued(t) = st.submit(&mut reqs, req(ReqOp::Write, 100, 320, 1), Insert::Scheduler, SimTime::ZERO) else {
            panic!("a RAID-0 top request is always queued")
        };
        assert_eq!(st.pieces, 4);
        let mut by_member: Vec<Vec<(u64, u32)>> = vec![Vec::new(); 2];
        for &k in &st.top_kids[t as usize] {
            let r = st.kids.get(k);
            by_member[st.kid_member[k as usize] as usize].push((r.sector, r.sectors));
        }
        assert_eq!(by_member[0], vec![(100, 28 + 128)], "chunks 0 and 2 are contiguous on member 0 and merge");
        assert_eq!(by_member[1], vec![(0, 128 + 36)]);
        let done = drain(&mut st, &mut reqs);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, t);
        assert_eq!(st.served_bytes_written(), 320 * 512);
        assert_eq!(st.live_pieces(), 0);
        let times = reqs.get(t).times;
        assert!(times.dispatched.is_some() && times.service_start.is_some() && times.completed == Some(done[0].1));
    }

    #[test]
    fn a_flush_reaches_every_member() {
        let mut st = raid(3, 64);
        let mut reqs = ReqSlab::default();
        st.submit(&mut reqs, req(ReqOp::Flush, 0, 0, 1), Insert::Scheduler, SimTime::ZERO);
        assert_eq!(st.pieces, 3);
        assert_eq!(drain(&mut st, &mut reqs).len(), 1);
        assert_eq!(st.live_pieces(), 0);
    }

    #[test]
    fn a_piece_merged_into_another_top_request_completes_both() {
        let mut st = raid(2, 64);
        let mut reqs = ReqSlab::default();
        let a = st.submit(&mut reqs, req(ReqOp::Write, 0, 8, 1), Insert::Scheduler, SimTime::ZERO);
        let b = st.submit(&mut reqs, req(ReqOp::Write, 8, 8, 1), Insert::Scheduler, SimTime::ZERO);
        assert_eq!(st.members[0].bq.merges, 1, "b's piece back-merges into a's in member 0's queue");
        let done = drain(&mut st, &mut reqs);
        let ids: Vec<ReqId> = done.iter().map(|d| d.0).collect();
        let (Submitted::Queued(a), Submitted::Queued(b)) = (a, b) else { panic!() };
        assert_eq!(ids, vec![a, b]);
        assert_eq!(done[0].1, done[1].1, "one device command served both");
    }

    #[test]
    fn a_single_device_passes_requests_through() {
        let m = member("m", 50.0);
        let mut st = Storage::single(m.bq, m.dev);
        let mut reqs = ReqSlab::default();
        let Submitted::Queued(t) = st.submit(&mut reqs, req(ReqOp::Write, 10, 30, 1), Insert::Scheduler, SimTime::ZERO) else {
            panic!()
        };
        assert_eq!(st.pieces, 0);
        let done = drain(&mut st, &mut reqs);
        assert_eq!(done.iter().map(|d| d.0).collect::<Vec<_>>(), vec![t]);
    }

    #[test]
    fn a_second_device_gets_the_sectors_after_the_main_one_and_its_own_flushes() {
        let a = member("main", 50.0);
        let b = member("card", 5.0);
        let main_sectors = 1 << 20;
        let mut st = Storage::stack(vec![a, b], 1, 64, main_sectors);
        let mut reqs = ReqSlab::default();
        st.submit(&mut reqs, req(ReqOp::Write, main_sectors + 80, 16, 1), Insert::Scheduler, SimTime::ZERO);
        st.submit(&mut reqs, req(ReqOp::Flush, main_sectors, 0, 1), Insert::Scheduler, SimTime::ZERO);
        st.submit(&mut reqs, req(ReqOp::Write, 8, 8, 2), Insert::Scheduler, SimTime::ZERO);
        let on = |st: &Storage, m: usize| {
            (0..st.kid_tops.len()).filter(|&k| st.kids.try_get(k as ReqId).is_some() && st.kid_member[k] == m as u8).count()
        };
        assert_eq!((on(&st, 0), on(&st, 1)), (1, 2), "the card's write and flush go to the card only");
        let card_write = (0..st.kid_tops.len())
            .find_map(|k| st.kids.try_get(k as ReqId).filter(|r| r.op == ReqOp::Write && st.kid_member[k] == 1));
        assert_eq!(card_write.map(|r| r.sector), Some(80));
        assert_eq!(drain(&mut st, &mut reqs).len(), 3);
        assert_eq!(st.members[1].dev.served_bytes_written, 16 * 512);
    }

    proptest! {
        /// Bytes are conserved, no piece crosses a chunk, every top request completes once.
        #[test]
        fn raid0_conserves_bytes(members in 2usize..5, chunk_pow in 2u32..8, reqs_in in prop::collection::vec((0u64..4096, 1u32..600, any::<bool>(), 0u32..3), 1..40)) {
            let chunk_kib = 1u64 << chunk_pow;
            let mut st = raid(members, chunk_kib);
            let mut reqs = ReqSlab::default();
            let mut tops = Vec::new();
            let (mut rd, mut wr) = (0u64, 0u64);
            for &(sector, sectors, write, pid) in &reqs_in {
                let op = if write { ReqOp::Write } else { ReqOp::Read };
                if write { wr += u64::from(sectors) * 512 } else { rd += u64::from(sectors) * 512 }
                let Submitted::Queued(t) = st.submit(&mut reqs, req(op, sector, sectors, pid), Insert::Scheduler, SimTime::ZERO) else { panic!() };
                tops.push(t);
            }
            let done = drain(&mut st, &mut reqs);
            let mut ids: Vec<ReqId> = done.iter().map(|d| d.0).collect();
            ids.sort_unstable();
            let mut want = tops.clone();
            want.sort_unstable();
            prop_assert_eq!(ids, want);
            prop_assert_eq!(st.served_bytes_read(), rd);
            prop_assert_eq!(st.served_bytes_written(), wr);
            prop_assert_eq!(st.live_pieces(), 0);
        }

        /// Before merging, every piece covers exactly the part of one chunk its top request
        /// overlaps, on the member and at the offset the layout says.
        #[test]
        fn pieces_follow_the_layout(members in 2usize..5, chunk_pow in 2u32..8, sector in 0u64..100_000, sectors in 1u32..2000) {
            let chunk_kib = 1u64 << chunk_pow;
            let cs = chunk_kib * 2;
            let mut st = raid(members, chunk_kib);
            let mut reqs = ReqSlab::default();
            st.submit(&mut reqs, req(ReqOp::Read, sector, sectors, 1), Insert::Scheduler, SimTime::ZERO);
            let end = sector + u64::from(sectors);
            let chunks = (end - 1) / cs - sector / cs + 1;
            prop_assert_eq!(st.pieces, chunks);
            // Reconstruct the array sectors each member request covers and check they tile the
            // request exactly.
            let mut covered = 0u64;
            for k in 0..st.kid_tops.len() {
                let Some(r) = st.kids.try_get(k as ReqId) else { continue };
                let m = st.kid_member[k] as u64;
                let mut s = r.sector;
                while s < r.end_sector() {
                    let mchunk = s / cs;
                    let len = r.end_sector().min((mchunk + 1) * cs) - s;
                    let array = (mchunk * members as u64 + m) * cs + s % cs;
                    prop_assert!(array >= sector && array + len <= end, "piece outside its request");
                    covered += len;
                    s += len;
                }
            }
            prop_assert_eq!(covered, u64::from(sectors));
        }
    }
}
