//! The policy seam: every policy-dependent mechanism of the world and the state it keeps, in
//! one [`Priority`] value. Each decision is a pure function of `forefront_policy`; this module
//! gathers the facts it needs, asks, and carries the answer out in the model's layers.
//!
//! | mechanism | state here | decision |
//! |---|---|---|
//! | classification of tasks and new requests | — | [`policy::task_is_fg`], [`policy::request_is_fg`] |
//! | FastTrack's allocation gate | `fg_io_waiting`, `pending_release` | [`policy::counts_fg_io`], [`policy::alloc_gate_pauses`], [`policy::alloc_may_proceed`] |
//! | the I/O dispatcher and the device's order | — | [`policy::inserts_direct`], [`policy::device_class`] |
//! | QASIO's detection and boost | `req_deps` | [`policy::on_block`], [`policy::boosts`] |
//! | QASIO's rule (served first) | `boost_watch`, `overtaken` | — (a check, not a decision) |
//! | forefront's inheritance | `wb_queue` | [`policy::on_block`], [`policy::reclaim_wait_inherits`] |
//! | reclaim order | — | [`policy::reclaims_bg_first`] |
//! | FTC, the App Status Detector, CPU weights | — | [`policy::promotes_chain`], [`policy::announces_fg_uid`], [`policy::cpu_shares`] |
//! | hooks | `hooks` | every counted decision |
//!
//! **The foreground flag's path goes one way:** a task blocks (`tasks::block_on`, in `sim`) →
//! [`Priority::on_block`] walks the model's [`WaitGraph`] from the task (who waits through it,
//! and the requests behind each) → `forefront_policy` decides per request ([`policy::on_block`])
//! → the seam applies the answer to the model's [`Storage`] (boost in the I/O scheduler,
//! promotion to the dispatch queue, reclassing in the device's command queue). Nothing comes
//! back: the model's layers never ask whether a request is foreground, they read the tag the
//! seam set. The other entries are the same shape: submission ([`Priority::on_submit`]),
//! dispatch ([`Priority::on_dispatch`]), reclaim ([`Priority::reclaim`],
//! [`Priority::reclaim_wait`]), the allocation gate ([`Priority::alloc_gate_pauses`]).
//!
//! Invariants: `fg_io_waiting` equals the number of tasks whose `Wait` has `fg_io` set (each
//! counted at [`Priority::on_block`], uncounted at [`Priority::on_wake`]); an entry of
//! `boost_watch` or `wb_queue` names a request by its [`ReqKey`], and a stale one (completed or
//! merged away) is dropped when next met; `req_deps[id]` is reset when `id` is queued anew.

use std::collections::{BTreeMap, VecDeque};

use forefront_model::block::{Insert, ReqId, ReqKey, ReqSlab, Request};
use forefront_model::fs::{Journal, SECTORS_PER_BLOCK};
use forefront_model::mm::{PageCache, ReclaimOrder, Reclaimed};
use forefront_model::prov::{Tid, Uid};
use forefront_model::storage::Storage;
use forefront_model::wait::{Via, WaitGraph, Why};
use forefront_policy::{self as policy, Dependency, FgWait, Hook, Policy};

/// QASIO's dependency type of an async request a task waits on for reason `why`, reached
/// `via` the journal or directly (FAST'15 §3). None: a wait on one's own I/O, which is sync.
fn dependency(why: Why, via: Via) -> Option<Dependency> {
    match via {
        Via::Handle => Some(Dependency::IJHandle),
        Via::Commit => Some(Dependency::IJCommit),
        Via::Direct => match why {
            Why::MetaBuffer => Some(Dependency::DMeta),
            Why::DataPage => Some(Dependency::DData),
            // The commit's data=ordered flush must see the data on flash, as fsync must.
            Why::SyncWriteback | Why::Ordered => Some(Dependency::DSync),
            Why::Discard => Some(Dependency::DDiscard),
            Why::Own | Why::JournalWrite => None,
        },
    }
}

/// What the seam knows of a task when it decides: a user task (not a kernel thread), in the FG
/// CPU group, of the FG app's UID.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TaskFacts {
    pub user: bool,
    pub fg_group: bool,
    pub fg_uid: bool,
}

/// The block layer as the seam reads and changes it: the requests and the devices.
pub(super) struct Io<'a> {
    pub reqs: &'a mut ReqSlab,
    pub st: &'a mut Storage,
}

/// The policy and every piece of state its mechanisms keep (see the module doc).
pub(super) struct Priority {
    policy: Policy,
    hooks: BTreeMap<Hook, u64>,
    /// Foreground tasks waiting where the allocation gate covers right now (FastTrack's Page
    /// Allocator: in the page cache, see [`policy::GateScope`]).
    fg_io_waiting: u32,
    /// Foreground I/O ended while allocations were paused: release them after this event.
    pending_release: bool,
    /// QASIO dependency types already counted per live request (bit per [`Dependency`]).
    req_deps: Vec<u8>,
    /// Boosted requests still in the host's queues: (request, overtaken). The dependency
    /// types found for each are in `req_deps`.
    boost_watch: Vec<(ReqKey, bool)>,
    /// Boosted async requests overtaken by a BG async request that was not boosted (QASIO's
    /// rule broken; the invariant `boosted_async_overtaken`).
    overtaken: u64,
    /// Async page write-back requests in submission order (stale entries dropped lazily).
    wb_queue: VecDeque<ReqKey>,
    scratch_through: Vec<Tid>,
    scratch_behind: Vec<(ReqId, Why, Via)>,
}

impl Priority {
    pub fn new(policy: Policy) -> Priority {
        Priority {
            policy,
            hooks: BTreeMap::new(),
            fg_io_waiting: 0,
            pending_release: false,
            req_deps: Vec::new(),
            boost_watch: Vec::new(),
            overtaken: 0,
            wb_queue: VecDeque::new(),
            scratch_through: Vec::new(),
            scratch_behind: Vec::new(),
        }
    }

    pub fn hook(&mut self, h: Hook) {
        *self.hooks.entry(h).or_insert(0) += 1;
    }

    /// The hooks that fired, by name, and the boosted requests QASIO's rule saw overtaken.
    pub fn finish(self) -> (BTreeMap<String, u64>, u64) {
        (self.hooks.into_iter().map(|(h, n)| (h.name().to_string(), n)).collect(), self.overtaken)
    }

    // ------------------------------------------------------------ classification

    pub fn task_is_fg(&self, t: TaskFacts) -> bool {
        policy::task_is_fg(&self.policy, t.fg_group, t.fg_uid)
    }

    /// Whether a new request counts as foreground (see [`policy::request_is_fg`]).
    pub fn request_is_fg(&self, kernel_thread: bool, task_fg: bool, owner_fg: bool) -> bool {
        policy::request_is_fg(&self.policy, kernel_thread, task_fg, owner_fg)
    }

    /// The foreground app changed: the App Status Detector tells the kernel, if the policy has it.
    pub fn fg_uid_changed(&mut self) {
        if policy::announces_fg_uid(&self.policy) {
            self.hook(Hook::AppStatusFgUid);
        }
    }

    /// FTC: whether the user-interactive chain's weights are promoted.
    pub fn promotes_chain(&self) -> bool {
        policy::promotes_chain(&self.policy)
    }

    /// The device command priority of a request (for the devices' queues).
    pub fn device_class(&self, r: &Request) -> u8 {
        policy::device_class(&self.policy, r.op.is_read(), r.prov.fg, r.boosted)
    }

    // ------------------------------------------------------------ blocking and waking

    /// Task `tid` just blocked (the wait graph has its blocker; `wait`: on I/O in the page cache,
    /// past it, or not on I/O). Counts it for the allocation gate — the return value, kept in the
    /// task's wait — and runs QASIO's detection and forefront's inheritance: every task whose
    /// wait now passes through `tid`'s is walked in the wait graph, and each request behind it
    /// not yet in service gets what [`policy::on_block`] decides. `facts` describes any task.
    #[inline]
    pub fn on_block(
        &mut self,
        tid: Tid,
        wait: FgWait,
        wg: &WaitGraph,
        jn: &Journal,
        rq: &mut Io,
        facts: impl Fn(Tid) -> TaskFacts,
    ) -> bool {
        let me = facts(tid);
        let io = wait != FgWait::NotIo;
        let fg_io = policy::counts_fg_io(&self.policy, me.user, wait, self.task_is_fg(me));
        if fg_io {
            self.fg_io_waiting += 1;
        }
        if policy::walks_on_block(&self.policy, io) {
            self.walk(tid, wg, jn, rq, facts);
        }
        fg_io
    }

    /// [`Priority::on_block`]'s walk of the wait graph (out of line: the common case is no walk).
    #[inline(never)]
    fn walk(&mut self, tid: Tid, wg: &WaitGraph, jn: &Journal, rq: &mut Io, facts: impl Fn(Tid) -> TaskFacts) {
        let mut through = std::mem::take(&mut self.scratch_through);
        let mut behind = std::mem::take(&mut self.scratch_behind);
        wg.waiting_through(tid, &mut through);
        for &w in &through {
            let f = facts(w);
            let waiter_fg = f.user && self.task_is_fg(f);
            wg.io_behind(w, &mut behind);
            for &(id, why, via) in &behind {
                let Some(r) = rq.reqs.try_get(id) else { continue };
                if r.times.service_start.is_some() {
                    continue; // in service: nothing left to reorder
                }
                let (sync, queued, boosted, fg) = (r.sync, r.is_queued(), r.boosted, r.prov.fg);
                let ordered_commit = why == Why::Ordered && via == Via::Commit;
                let d = policy::on_block(&self.policy, waiter_fg, sync, fg, dependency(why, via), ordered_commit);
                if let Some(dep) = d.boost {
                    let bit = 1u8 << dep as u8;
                    if self.req_deps[id as usize] & bit == 0 {
                        self.req_deps[id as usize] |= bit;
                        self.hook(Hook::QasioDetected(dep));
                    }
                    if queued && !boosted {
                        self.boost_watch.push((rq.reqs.key(id), false));
                    }
                    self.boost_request(rq, id);
                }
                if d.inherit {
                    self.inherit_fg(rq, id);
                }
                if d.inherit_ordered {
                    self.inherit_ordered(jn, rq);
                }
            }
        }
        self.scratch_through = through;
        self.scratch_behind = behind;
    }

    /// A task whose wait was counted as foreground I/O woke; `alloc_waiters`: tasks waiting on
    /// an allocation now. The last one's wake-up releases them after the event.
    pub fn on_wake(&mut self, fg_io: bool, alloc_waiters: u32) {
        if fg_io {
            self.fg_io_waiting -= 1;
            if self.fg_io_waiting == 0 && alloc_waiters > 0 {
                // FG I/O served: resume the paused background work.
                self.pending_release = true;
            }
        }
    }

    /// Whether paused allocations are to be released now (once per release).
    pub fn take_release(&mut self) -> bool {
        std::mem::take(&mut self.pending_release)
    }

    /// Whether allocations waiting (for reclaim, or paused) may go on now.
    pub fn alloc_may_proceed(&self) -> bool {
        policy::alloc_may_proceed(&self.policy, self.fg_io_waiting)
    }

    /// FastTrack's Page Allocator: whether task `me` (a BG app's task when `bg_role`) pauses at
    /// this allocation or copy checkpoint; the caller blocks it on `Blocker::Alloc`.
    pub fn alloc_gate_pauses(&mut self, me: TaskFacts, bg_role: bool, holds_handle: bool) -> bool {
        let bg_user = me.user && bg_role && !self.task_is_fg(me);
        let pause = policy::alloc_gate_pauses(&self.policy, self.fg_io_waiting, bg_user, holds_handle);
        if pause {
            self.hook(Hook::PageAllocBgPaused);
        }
        pause
    }

    // ------------------------------------------------------------ requests

    /// Where a new request goes: the dispatch queue or the I/O scheduler.
    pub fn on_submit(&mut self, request_fg: bool) -> Insert {
        if policy::inserts_direct(&self.policy, request_fg) {
            self.hook(Hook::DispatchFgDirect);
            Insert::DispatchQueue
        } else {
            Insert::Scheduler
        }
    }

    /// Request `id` was queued anew (not merged): it has no dependency types yet.
    pub fn on_queued(&mut self, id: ReqId) {
        let i = id as usize;
        if self.req_deps.len() <= i {
            self.req_deps.resize(i + 1, 0);
        }
        self.req_deps[i] = 0;
    }

    /// An async write-back request of pages was submitted (or a bio merged into it).
    pub fn on_async_writeback(&mut self, r: ReqKey) {
        if policy::tracks_reclaim_writeback(&self.policy) && self.wb_queue.back() != Some(&r) {
            self.wb_queue.push_back(r);
        }
    }

    /// Request `id` goes to the device: check QASIO's rule — a boosted request leaves the watch
    /// (served first unless something overtook it); a BG async request that is not boosted
    /// overtakes every boosted request still queued — and count a boosted command.
    #[inline]
    pub fn on_dispatch(&mut self, rq: &Io, id: ReqId) {
        if !self.boost_watch.is_empty() {
            self.watch_boosts(rq, id);
        }
        if rq.reqs.get(id).boosted && policy::boosts_in_device(&self.policy) {
            self.hook(Hook::QasioBoostDevice);
        }
    }

    #[inline(never)]
    fn watch_boosts(&mut self, rq: &Io, id: ReqId) {
        let key = rq.reqs.key(id);
        let r = rq.reqs.get(id);
        let overtakes = !r.sync && !r.boosted && !r.prov.fg;
        let mut i = 0;
        while i < self.boost_watch.len() {
            let (b, overtaken) = self.boost_watch[i];
            if b == key {
                self.boost_watch.swap_remove(i);
                if !overtaken {
                    for dep in Dependency::ALL {
                        if self.req_deps[id as usize] & (1u8 << dep as u8) != 0 {
                            self.hook(Hook::QasioServedFirst(dep));
                        }
                    }
                }
                continue;
            }
            if !rq.reqs.is_live(b) {
                self.boost_watch.swap_remove(i); // merged away
                continue;
            }
            if overtakes && !overtaken {
                self.boost_watch[i].1 = true;
                self.overtaken += 1;
            }
            i += 1;
        }
    }

    /// QASIO's boost: the I/O scheduler moves queued request `id` ahead of the other async
    /// requests; a request already in the device's queue moves ahead of its class there.
    fn boost_request(&mut self, rq: &mut Io, id: ReqId) {
        if rq.reqs.get(id).is_queued() {
            if rq.st.boost(rq.reqs, id) {
                self.hook(Hook::QasioBoostScheduler);
            }
        } else if policy::boosts_in_device(&self.policy) && !rq.reqs.get(id).boosted {
            let r = rq.reqs.get_mut(id);
            r.boosted = true;
            let fg = r.prov.fg;
            let class = self.device_class(r);
            if rq.st.reclass(rq.reqs, id, class, fg) {
                self.hook(Hook::QasioBoostDevice);
            }
        }
    }

    /// forefront: request `id` (queued or in the device queue) serves a foreground task, so it
    /// is foreground from here on: straight to the dispatch queue if the policy sends FG
    /// requests there, and FG priority in the device.
    fn inherit_fg(&mut self, rq: &mut Io, id: ReqId) {
        rq.reqs.get_mut(id).prov.fg = true;
        self.hook(Hook::FgInherited);
        if rq.reqs.get(id).is_queued() {
            if policy::inserts_direct(&self.policy, true) && rq.st.promote(rq.reqs, id) {
                self.hook(Hook::DispatchFgDirect);
            }
        } else {
            let class = self.device_class(rq.reqs.get(id));
            rq.st.reclass(rq.reqs, id, class, true);
        }
    }

    /// forefront: an FG task waits for a commit that waits for its ordered data. The commit
    /// waits for all of it (jbd2 only blocks on one request at a time), so every ordered write
    /// of the committing transaction still queued becomes FG and is boosted, not just the one
    /// jbd2 sleeps on — the wait graph knows the whole set; QASIO's kernel hint does not.
    fn inherit_ordered(&mut self, jn: &Journal, rq: &mut Io) {
        let Some((txn, _)) = &jn.committing else { return };
        for &r in &txn.ordered {
            if !rq.reqs.is_live(r) {
                continue;
            }
            let req = rq.reqs.get(r.id);
            if req.times.service_start.is_some() || req.prov.fg {
                continue;
            }
            if policy::boosts(&self.policy, req.sync) {
                self.boost_request(rq, r.id);
            }
            self.inherit_fg(rq, r.id);
        }
    }

    // ------------------------------------------------------------ reclaim

    /// Reclaim `want` pages in the policy's order, counting hooks.
    pub fn reclaim(&mut self, pc: &mut PageCache, want: u64, fg_uid: Option<Uid>) -> Reclaimed {
        let order = if policy::reclaims_bg_first(&self.policy) { ReclaimOrder::BackgroundFirst } else { ReclaimOrder::Global };
        let r = pc.reclaim(want, order, |u| Some(u) == fg_uid);
        if order == ReclaimOrder::BackgroundFirst && r.freed > 0 {
            self.hook(Hook::ReclaimBgFirst);
        }
        if r.bg_busy {
            self.hook(Hook::ReclaimBgDirtyFirst);
        }
        r
    }

    /// forefront: task `me` waits in direct reclaim for write-back to clean `pages` pages. If
    /// it is foreground, the oldest queued async write-back, enough to cover them, serves it:
    /// FG from here on. (The allocation wait is not an edge of the wait graph — any completion
    /// may let reclaim succeed — so the seam is here, at the reclaim decision.)
    pub fn reclaim_wait(&mut self, me: TaskFacts, pages: u64, rq: &mut Io) {
        if !policy::reclaim_wait_inherits(&self.policy, self.task_is_fg(me)) {
            return;
        }
        let mut covered = 0;
        let mut i = 0;
        while covered < pages && i < self.wb_queue.len() {
            let r = self.wb_queue[i];
            if !rq.reqs.is_live(r) || rq.reqs.get(r.id).times.service_start.is_some() {
                if i == 0 {
                    self.wb_queue.pop_front();
                } else {
                    i += 1;
                }
                continue;
            }
            covered += u64::from(rq.reqs.get(r.id).sectors) / SECTORS_PER_BLOCK;
            if !rq.reqs.get(r.id).prov.fg {
                self.inherit_fg(rq, r.id);
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    //! QASIO's rule, FG inheritance and the allocation gate on a wait graph and a few requests,
    //! without a `World`.
    use super::*;
    use forefront_engine::SimTime;
    use forefront_model::block::{BlockQueue, ReqOp, SchedulerConfig, Submitted};
    use forefront_model::flash::FlashDevice;
    use forefront_model::prov::{Origin, Provenance};
    use forefront_model::wait::Blocker;

    const JBD2: Tid = 0;
    const BG: Tid = 1;
    const FG: Tid = 2;

    /// The block layer of a Galaxy S5 (eMMC, CFQ) and a wait graph of jbd2, a BG and an FG task.
    struct Bench {
        reqs: ReqSlab,
        st: Storage,
        wg: WaitGraph,
        jn: Journal,
    }

    impl Bench {
        fn new() -> Bench {
            let dev = forefront_workload::load_device("galaxy-s5-emmc").expect("built-in device");
            let bq = BlockQueue::new(SchedulerConfig::default().build(&[1000, 1000, 1000]), dev.queue_depth, 1024);
            let mut wg = WaitGraph::new(JBD2);
            for _ in 0..3 {
                wg.add_task();
            }
            Bench { reqs: ReqSlab::default(), st: Storage::single(bq, FlashDevice::new(dev)), wg, jn: Journal::new() }
        }

        /// Queue a 4 KiB request of task `tid` at block `block`.
        fn submit(&mut self, p: &mut Priority, tid: Tid, block: u64, write: bool, sync: bool) -> ReqId {
            let prov = Provenance { uid: 10_000 + tid, pid: tid, tid, fg: tid == FG, origin: Origin::Writeback, blkio_group: 0 };
            let op = if write { ReqOp::Write } else { ReqOp::Read };
            let req = Request::new(op, block * SECTORS_PER_BLOCK, SECTORS_PER_BLOCK as u32, sync, prov);
            let Submitted::Queued(id) = self.st.submit(&mut self.reqs, req, Insert::Scheduler, SimTime::ZERO) else {
                panic!("a request 1 MiB away from the others merges with none")
            };
            p.on_queued(id);
            id
        }

        /// `tid` blocks on `b`; the seam sees it (FG is the FG app's user task, BG another app's).
        fn block(&mut self, p: &mut Priority, tid: Tid, b: Blocker) -> bool {
            self.wg.block(tid, b, SimTime::ZERO);
            let wait = super::super::tasks::gate_wait(b, &self.reqs, tid);
            let mut rq = Io { reqs: &mut self.reqs, st: &mut self.st };
            p.on_block(tid, wait, &self.wg, &self.jn, &mut rq, facts)
        }

        /// Dispatch everything the block layer lets go now, through the seam; returns the order.
        fn dispatch(&mut self, p: &mut Priority) -> Vec<ReqId> {
            let mut ids = Vec::new();
            self.st.dispatch(&mut self.reqs, SimTime::ZERO, |r| p.device_class(r), &mut ids);
            for &id in &ids {
                let rq = Io { reqs: &mut self.reqs, st: &mut self.st };
                p.on_dispatch(&rq, id);
            }
            ids
        }
    }

    fn facts(tid: Tid) -> TaskFacts {
        TaskFacts { user: tid != JBD2, fg_group: tid == FG, fg_uid: tid == FG }
    }

    fn hooks(p: Priority) -> (BTreeMap<String, u64>, u64) {
        p.finish()
    }

    fn policy(name: &str) -> Priority {
        Priority::new(Policy::by_name(name).expect("a built-in policy"))
    }

    #[test]
    fn qasio_boosts_the_async_write_a_task_waits_on_and_it_is_served_first() {
        let mut p = policy("qasio");
        let mut b = Bench::new();
        let ids: Vec<ReqId> = (0..4).map(|i| b.submit(&mut p, BG, 256 * i, true, false)).collect();
        let last = ids[3];
        // The FG task wants to modify a page under write-back (stable pages): D_data.
        assert!(!b.block(&mut p, FG, Blocker::Request { id: last, why: Why::DataPage }), "no allocation gate");
        assert!(b.reqs.get(last).boosted);
        // A second waiter on the same request does not count the dependency again.
        b.block(&mut p, BG, Blocker::Request { id: last, why: Why::DataPage });
        let order = b.dispatch(&mut p);
        assert_eq!(order.first(), Some(&last), "the boosted request goes to the device first: {order:?}");
        let (h, overtaken) = hooks(p);
        assert_eq!(h.get("qasio.detected.d_data"), Some(&1), "{h:?}");
        assert_eq!(h.get("qasio.boost.scheduler"), Some(&1), "{h:?}");
        assert_eq!(h.get("qasio.served_first.d_data"), Some(&1), "{h:?}");
        assert_eq!(overtaken, 0);
        // QASIO is priority-agnostic: the request it boosted stays background.
        assert!(!b.reqs.get(last).prov.fg);
    }

    #[test]
    fn qasio_counts_a_boosted_request_overtaken_and_leaves_sync_io_alone() {
        let mut p = policy("qasio");
        let mut b = Bench::new();
        let first = b.submit(&mut p, BG, 0, true, false);
        let boosted = b.submit(&mut p, BG, 256, true, false);
        b.block(&mut p, FG, Blocker::Request { id: boosted, why: Why::SyncWriteback });
        // Were the device to take another BG async request first, the rule is broken once.
        let rq = Io { reqs: &mut b.reqs, st: &mut b.st };
        p.on_dispatch(&rq, first);
        p.on_dispatch(&rq, boosted);
        // A wait on one's own sync read is no dependency.
        let own = b.submit(&mut p, FG, 512, false, true);
        b.block(&mut p, BG, Blocker::Request { id: own, why: Why::Own });
        assert!(!b.reqs.get(own).boosted);
        let (h, overtaken) = hooks(p);
        assert_eq!(overtaken, 1);
        assert_eq!(h.get("qasio.detected.d_sync"), Some(&1), "{h:?}");
        assert_eq!(h.get("qasio.served_first.d_sync"), None, "overtaken: not served first: {h:?}");
        assert_eq!(h.keys().filter(|k| k.starts_with("qasio.detected")).count(), 1, "{h:?}");
    }

    #[test]
    fn forefront_makes_what_an_fg_task_waits_on_fg_and_a_bg_wait_changes_nothing() {
        let mut p = policy("forefront");
        let mut b = Bench::new();
        let a = b.submit(&mut p, BG, 0, true, true);
        let c = b.submit(&mut p, BG, 256, true, true);
        // A BG task waiting on a BG request: nothing to inherit (and sync I/O is not boosted).
        b.block(&mut p, BG, Blocker::Request { id: a, why: Why::SyncWriteback });
        assert!(!b.reqs.get(a).prov.fg && !b.reqs.get(a).boosted);
        // The FG task waits for a commit; the commit (jbd2) waits on request `c`: it becomes FG
        // and goes straight to the dispatch queue (FastTrack's dispatcher).
        b.wg.block(JBD2, Blocker::Request { id: c, why: Why::JournalWrite }, SimTime::ZERO);
        assert!(!b.block(&mut p, FG, Blocker::Commit { txn: 1 }), "a wait through the journal is past the page cache: no gate");
        assert!(b.reqs.get(c).prov.fg);
        let order = b.dispatch(&mut p);
        assert_eq!(order.first(), Some(&c), "{order:?}");
        let (h, _) = hooks(p);
        assert_eq!(h.get("forefront.fg_inherited"), Some(&1), "{h:?}");
        assert_eq!(h.get("dispatch.fg_direct"), Some(&1), "{h:?}");
    }

    #[test]
    fn stock_android_walks_nothing() {
        let mut p = policy("android");
        let mut b = Bench::new();
        let id = b.submit(&mut p, BG, 0, true, false);
        assert!(!b.block(&mut p, FG, Blocker::Request { id, why: Why::DataPage }));
        let r = b.reqs.get(id);
        assert!(!r.boosted && !r.prov.fg);
        assert!(hooks(p).0.is_empty());
    }

    #[test]
    fn the_allocation_gate_pauses_bg_tasks_while_an_fg_request_is_in_the_page_cache() {
        let mut p = policy("fasttrack");
        let mut b = Bench::new();
        assert!(p.alloc_may_proceed());
        let id = b.submit(&mut p, BG, 0, true, false);
        // Past the page cache: an fsync's write-back wait, an own sync write, the journal.
        assert!(!b.block(&mut p, FG, Blocker::Request { id, why: Why::SyncWriteback }), "write-back: past the page cache");
        b.wg.unblock(FG);
        let own_write = b.submit(&mut p, FG, 1024, true, true);
        assert!(!b.block(&mut p, FG, Blocker::Request { id: own_write, why: Why::Own }), "an own sync write");
        b.wg.unblock(FG);
        assert!(!b.block(&mut p, FG, Blocker::Commit { txn: 1 }), "a commit");
        b.wg.unblock(FG);
        assert!(p.alloc_may_proceed());
        // In the page cache: the fill of a page its read allocated, a page under BG write-back.
        let own_read = b.submit(&mut p, FG, 2048, false, true);
        assert!(b.block(&mut p, FG, Blocker::Request { id: own_read, why: Why::Own }), "an own read fill counts");
        p.on_wake(true, 0);
        b.wg.unblock(FG);
        assert!(b.block(&mut p, FG, Blocker::Request { id, why: Why::DataPage }), "a page under BG I/O counts");
        assert!(!p.alloc_may_proceed());
        assert!(p.alloc_gate_pauses(facts(BG), true, false));
        assert!(!p.alloc_gate_pauses(facts(BG), true, true), "a task holding a journal handle never pauses");
        assert!(!p.alloc_gate_pauses(facts(FG), false, false), "the FG app never pauses");
        p.on_wake(true, 1);
        assert!(p.take_release() && !p.take_release(), "one release when the last FG I/O ends");
        assert!(p.alloc_may_proceed());
        assert_eq!(hooks(p).0.get("page_alloc.bg_paused"), Some(&1));
    }

    #[test]
    fn the_widened_gate_pauses_bg_tasks_for_any_fg_io_wait() {
        let mut p = policy("fasttrack-minus+ft-alloc-wide");
        let mut b = Bench::new();
        let id = b.submit(&mut p, BG, 0, true, false);
        assert!(b.block(&mut p, FG, Blocker::Request { id, why: Why::SyncWriteback }));
        assert!(!p.alloc_may_proceed());
        assert!(!b.block(&mut p, BG, Blocker::Throttle), "a BG task's wait never counts");
    }
}
