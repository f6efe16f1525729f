//! The policy seam: every policy-dependent mechanism of the world and the state it keeps —
//! QASIO's detection and boost, the boost watch that checks QASIO's rule, forefront's FG
//! inheritance (through the wait graph, the committing transaction's ordered data and direct
//! reclaim's write-back), the reclaim order and FastTrack's allocation gate.

use forefront_model::block::ReqId;
use forefront_model::fs::SECTORS_PER_BLOCK;
use forefront_model::mm::ReclaimOrder;
use forefront_model::prov::Tid;
use forefront_model::wait::{Blocker, Via, Why};
use forefront_policy::{device_class, Boost, Dependency, Dispatch as DispatchPolicy, Hook, Reclaim};
use forefront_workload::Role;

use super::{Kind, World};
use crate::Cat;

/// QASIO's dependency type of an async request a task waits on for reason `why`, reached
/// `via` the journal or directly (FAST'15 §3). None: a wait on one's own I/O, which is sync.
pub(super) fn dependency(why: Why, via: Via) -> Option<Dependency> {
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

impl World {
    pub(super) fn reclaim_order(&self) -> ReclaimOrder {
        match self.policy.reclaim {
            Reclaim::Global => ReclaimOrder::Global,
            Reclaim::BackgroundFirst => ReclaimOrder::BackgroundFirst,
        }
    }

    /// FastTrack's Page Allocator: a background user task (not a kernel thread, not one holding a
    /// journal handle) pauses at its next allocation or copy checkpoint while foreground I/O is
    /// in flight. True if the task was paused (registered).
    pub(super) fn alloc_gate_pauses(&mut self, tid: Tid) -> bool {
        let t = &self.tasks[tid as usize];
        if !self.policy.alloc_gate || self.fg_io_waiting == 0 || t.kind != Kind::User || self.wg.handle_of(tid).is_some() {
            return false;
        }
        if self.role_now(t.app) != Role::Bg || self.task_is_fg(tid) {
            return false;
        }
        self.hook(Hook::PageAllocBgPaused);
        self.block_on(tid, Blocker::Alloc, Cat::Alloc);
        true
    }

    /// QASIO's detection and forefront's FG inheritance, at the one moment they can change:
    /// a task blocks on I/O (directly or through the journal). Every task whose wait now
    /// passes through `tid`'s is walked in the wait graph; each queued request found is
    /// - boosted (policy `boost`) if it is asynchronous — the paper's QASIO — and counted once
    ///   per dependency type;
    /// - made foreground (policy `fg_inherit`) if the walking task is foreground, whether the
    ///   request is async write-back or the jbd2 thread's own journal writes.
    pub(super) fn qasio_on_block(&mut self, tid: Tid) {
        let mut through = std::mem::take(&mut self.scratch_through);
        let mut behind = std::mem::take(&mut self.scratch_behind);
        self.wg.waiting_through(tid, &mut through);
        for &w in &through {
            let fg = self.policy.fg_inherit && self.tasks[w as usize].kind == Kind::User && self.task_is_fg(w);
            self.wg.io_behind(w, &mut behind);
            for &(id, why, via) in &behind {
                let Some(r) = self.reqs.try_get(id) else { continue };
                if r.times.service_start.is_some() {
                    continue; // in service: nothing left to reorder
                }
                let (sync, queued, boosted) = (r.sync, r.is_queued(), r.boosted);
                if self.policy.boost != Boost::Off && !sync {
                    if let Some(dep) = dependency(why, via) {
                        let bit = 1u8 << dep as u8;
                        if self.req_deps[id as usize] & bit == 0 {
                            self.req_deps[id as usize] |= bit;
                            self.hook(Hook::QasioDetected(dep));
                        }
                        if queued && !boosted {
                            self.boost_watch.push((id, self.req_serial[id as usize], false));
                        }
                        self.boost_request(id);
                    }
                }
                if fg && !self.reqs.get(id).prov.fg {
                    self.inherit_fg(id);
                }
                if fg && why == Why::Ordered && via == Via::Commit {
                    self.inherit_ordered();
                }
            }
        }
        self.scratch_through = through;
        self.scratch_behind = behind;
    }

    /// Check QASIO's rule as request `id` goes to the device: a boosted request leaves the watch
    /// (served first unless something overtook it); a BG async request that is not boosted
    /// overtakes every boosted request still queued.
    pub(super) fn watch_boosts(&mut self, id: ReqId) {
        let serial = self.req_serial[id as usize];
        let r = self.reqs.get(id);
        let overtakes = !r.sync && !r.boosted && !r.prov.fg;
        let mut i = 0;
        while i < self.boost_watch.len() {
            let (b, bs, overtaken) = self.boost_watch[i];
            if (b, bs) == (id, serial) {
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
            if !self.live((b, bs)) {
                self.boost_watch.swap_remove(i); // merged away
                continue;
            }
            if overtakes && !overtaken {
                self.boost_watch[i].2 = true;
                self.inv.boosted_async_overtaken += 1;
            }
            i += 1;
        }
    }

    /// forefront: an FG task waits for a commit that waits for its ordered data. The commit
    /// waits for all of it (jbd2 only blocks on one request at a time), so every ordered write
    /// of the committing transaction still queued becomes FG and is boosted, not just the one
    /// jbd2 sleeps on — the wait graph knows the whole set; QASIO's kernel hint does not.
    pub(super) fn inherit_ordered(&mut self) {
        let Some((txn, _)) = &self.jn.committing else { return };
        let ordered: Vec<(ReqId, u64)> = txn.ordered.iter().copied().zip(txn.ordered_serials.iter().copied()).collect();
        for r in ordered {
            if !self.live(r) {
                continue;
            }
            let req = self.reqs.get(r.0);
            if req.times.service_start.is_some() || req.prov.fg {
                continue;
            }
            if !req.sync && self.policy.boost != Boost::Off {
                self.boost_request(r.0);
            }
            self.inherit_fg(r.0);
        }
    }

    /// forefront: an FG task waits in direct reclaim for write-back to clean pages. The oldest
    /// queued async write-back, enough to cover the `pages` it lacks, serves it: FG from here on.
    /// (The allocation wait is not an edge of the wait graph — any completion may let reclaim
    /// succeed — so the seam is here, at the reclaim decision.)
    pub(super) fn inherit_reclaim_writeback(&mut self, pages: u64) {
        let mut covered = 0;
        let mut i = 0;
        while covered < pages && i < self.wb_queue.len() {
            let r = self.wb_queue[i];
            if !self.live(r) || self.reqs.get(r.0).times.service_start.is_some() {
                if i == 0 {
                    self.wb_queue.pop_front();
                } else {
                    i += 1;
                }
                continue;
            }
            covered += u64::from(self.reqs.get(r.0).sectors) / SECTORS_PER_BLOCK;
            if !self.reqs.get(r.0).prov.fg {
                self.inherit_fg(r.0);
            }
            i += 1;
        }
    }

    /// QASIO's boost: the I/O scheduler moves queued request `id` ahead of the other async
    /// requests; a request already in the device's queue moves ahead of its class there.
    pub(super) fn boost_request(&mut self, id: ReqId) {
        if self.reqs.get(id).is_queued() {
            if self.st.boost(&mut self.reqs, id) {
                self.hook(Hook::QasioBoostScheduler);
            }
        } else if self.policy.boost == Boost::SchedulerAndDevice && !self.reqs.get(id).boosted {
            let r = self.reqs.get_mut(id);
            r.boosted = true;
            let (read, fg) = (r.op.is_read(), r.prov.fg);
            if self.st.reclass(&self.reqs, id, device_class(&self.policy, read, fg, true), fg) {
                self.hook(Hook::QasioBoostDevice);
            }
        }
    }

    /// forefront: request `id` (queued or in the device queue) serves a foreground task, so it
    /// is foreground from here on: straight to the dispatch queue if the policy sends FG
    /// requests there, and FG priority in the device.
    pub(super) fn inherit_fg(&mut self, id: ReqId) {
        self.reqs.get_mut(id).prov.fg = true;
        self.hook(Hook::FgInherited);
        if self.reqs.get(id).is_queued() {
            if self.policy.dispatch == DispatchPolicy::ForegroundDirect && self.st.promote(&self.reqs, id) {
                self.hook(Hook::DispatchFgDirect);
            }
        } else {
            let r = self.reqs.get(id);
            let class = device_class(&self.policy, r.op.is_read(), true, r.boosted);
            self.st.reclass(&self.reqs, id, class, true);
        }
    }
}
