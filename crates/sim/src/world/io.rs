//! Requests: submission (page runs, control and journal requests), dispatch to the devices,
//! and completion (pages, metadata buffers, waiters, the conditions completions can end).
//!
//! Invariants: a request id is live from its submission (not merged) to its completion; a
//! request kept past an event is kept by its [`ReqKey`] (id and serial), which the slab checks
//! (`ReqSlab::is_live`), so a later request reusing the id is never taken for it; what a
//! request completes ([`Completes`], one per bio merged into it) is carried by the request's
//! slot and read once, top-down, when it completes; `async_queued` counts async requests
//! not yet dispatched (request-queue congestion). The requests' FG/BG tag is decided at
//! submission by the policy ([`forefront_policy::request_is_fg`]) and changed later only by
//! the policy seam ([`super::priority`]).

use forefront_model::block::{Completes, ReqId, ReqKey, ReqOp, Request, Submitted};
use forefront_model::cpu::ROOT_GROUP;
use forefront_model::fs::ext4::Ext4Params;
use forefront_model::fs::SECTORS_PER_BLOCK;
use forefront_model::mm::reclaim::ReclaimCosts;
use forefront_model::mm::FileId;
use forefront_model::prov::{Origin, Provenance, Tid};
use forefront_model::wait::{Blocker, Why};
use forefront_record::trace::BlockAction;

use super::priority::Io;
use super::{Ev, Kind, World};
use crate::Cat;

impl World {
    pub(super) fn ext4_params(&self) -> Ext4Params {
        Ext4Params {
            copy_page: self.ns.copy_page,
            copy_write_page: self.ns.copy_write_page,
            syscall: self.ns.syscall,
            metadata: self.ns.metadata,
            writeback_page: self.ns.writeback_page,
            submit_request: self.ns.submit_request,
            read_ahead_kib: self.phone.read_ahead_kib,
            async_read_ahead: self.phone.async_read_ahead,
            max_sectors: self.max_sectors,
            readahead_folio_pages: (self.phone.readahead_folio_kib / 4).max(1) as u32,
            dirty_background_pages: self.wb.thresholds.background_pages,
            dirty_limit_pages: self.wb.thresholds.limit_pages,
            throttle: self.phone.dirty_throttle,
            reclaim: self.reclaim_costs(),
        }
    }

    pub(super) fn reclaim_costs(&self) -> ReclaimCosts {
        ReclaimCosts { alloc_page: self.ns.alloc_page, reclaim_page: self.ns.reclaim_page }
    }

    /// Reclaim `want` pages in the policy's order, counting hooks; returns (freed, bg_busy).
    pub(super) fn shrink(&mut self, want: u64) -> forefront_model::mm::Reclaimed {
        self.prio.reclaim(&mut self.pc, want, self.fg_uid)
    }

    /// Wait for request `id` (must be live) for reason `why`. Time waiting for an own request
    /// is split by its stage; for someone else's it goes to `cat_other`.
    pub(super) fn wait_request(&mut self, tid: Tid, id: ReqId, why: Why, cat_other: Cat) {
        let own = self.reqs.get(id).prov.tid == tid;
        let cat = if own { Cat::BlockQueue } else { cat_other };
        self.block_on(tid, Blocker::Request { id, why }, cat);
    }

    /// The blkio group of user task `tid`'s requests: its CPU group's (Android's cgroups), or the
    /// root group on a machine without blkio cgroups (`phone.blkio_root_only`).
    pub(super) fn blkio_group_of(&self, tid: Tid) -> u16 {
        if self.phone.blkio_root_only {
            ROOT_GROUP
        } else {
            self.cpu.group_of(tid)
        }
    }

    /// Submit one request for a run of pages (read fill or write-back); sets `io` on the pages.
    pub(super) fn submit_pages(
        &mut self,
        tid: Tid,
        file: FileId,
        (first, lba, n): (u32, u64, u32),
        write: bool,
        origin: Origin,
    ) -> u64 {
        let owner = self.fs.inodes[file as usize].owner;
        let kernel = self.tasks[tid as usize].kind != Kind::User;
        let sync = !write || !kernel || origin == Origin::Fsync;
        let fg = self.prio.request_is_fg(kernel, self.task_is_fg(tid), self.is_fg_uid(owner));
        let group = if kernel { ROOT_GROUP } else { self.blkio_group_of(tid) };
        let prov = Provenance { uid: owner, pid: self.tasks[tid as usize].pid, tid, fg, origin, blkio_group: group };
        let op = if write { ReqOp::Write } else { ReqOp::Read };
        let req = Request::new(op, lba * SECTORS_PER_BLOCK, n * SECTORS_PER_BLOCK as u32, sync, prov);
        let key = self.submit(req, Completes::Pages { file, first, n, write });
        let id = key.id;
        if write && !sync {
            self.prio.on_async_writeback(key);
        }
        if write {
            self.pc.start_writeback_range(file, first, n, id);
        } else {
            self.pc.lock_range(file, first, n, id);
        }
        self.ns.submit_request
    }

    /// Submit a request through the policy's dispatch seam; `what` it completes goes with it
    /// (merged or not). Returns the key of the request it is part of.
    pub(super) fn submit(&mut self, mut req: Request, what: Completes) -> ReqKey {
        let now = self.now();
        self.knobs.stamp(&mut req);
        if self.agent.is_some() {
            self.agent_saw_request(&req);
        }
        self.inv.requests_submitted += 1;
        self.inv.bytes_submitted += req.bytes();
        let is_async = !req.sync;
        let insert = self.prio.on_submit(req.prov.fg);
        let out = self.st.submit(&mut self.reqs, req, insert, now);
        if self.rec.is_some() {
            match out {
                Submitted::Queued(id) => self.rec_block(id, BlockAction::Queue),
                Submitted::Merged(id) => self.rec_block(id, BlockAction::BackMerge),
            }
        }
        let id = match out {
            Submitted::Queued(id) => {
                self.prio.on_queued(id);
                if is_async {
                    self.async_queued += 1;
                }
                id
            }
            Submitted::Merged(id) => {
                self.inv.requests_merged += 1;
                id
            }
        };
        self.reqs.completes(id, what);
        if !self.kick_pending {
            self.kick_pending = true;
            self.q.schedule(now, Ev::Kick);
        }
        self.reqs.key(id)
    }

    pub(super) fn dispatch(&mut self) {
        let now = self.now();
        let mut ids = std::mem::take(&mut self.scratch_ids);
        ids.clear();
        let prio = &self.prio;
        let wake = self.st.dispatch(&mut self.reqs, now, |r| prio.device_class(r), &mut ids);
        for &id in &ids {
            let rq = Io { reqs: &mut self.reqs, st: &mut self.st };
            self.prio.on_dispatch(&rq, id);
            if !self.reqs.get(id).sync {
                self.async_queued -= 1;
            }
            if self.rec.is_some() {
                self.rec_block(id, BlockAction::Issue);
            }
        }
        self.scratch_ids = ids;
        let mut started = std::mem::take(&mut self.scratch_started);
        started.clear();
        self.st.start(&mut self.reqs, now, &mut started);
        for s in &started {
            self.q.schedule(s.done_at, Ev::DevDone(s.id));
        }
        self.scratch_started = started;
        if let Some(t) = wake {
            self.q.schedule(t, Ev::Kick);
        }
        if self.wg.count(Blocker::Congestion) > 0 && self.async_queued < self.phone.nr_requests * 7 / 8 {
            self.wake_all(Blocker::Congestion);
        }
    }

    /// Device request `id` finished: complete the top requests it ends (one, on a single
    /// device; none or several, on RAID-0).
    pub(super) fn device_done(&mut self, id: ReqId) {
        let now = self.now();
        if let Some(at) = self.st.hold_completion(&self.reqs, id, now) {
            // The device's batch completion: asked again when its shared stage drains; the
            // channel it freed may start a queued command.
            self.q.schedule(at, Ev::DevDone(id));
            self.dispatch();
            return;
        }
        let mut done = std::mem::take(&mut self.scratch_done);
        done.clear();
        self.st.complete(&mut self.reqs, id, now, &mut done);
        for &t in &done {
            self.request_done(t);
        }
        self.scratch_done = done;
        self.dispatch();
    }

    /// Top request `id` is complete: pages, metadata buffers and waiters.
    pub(super) fn request_done(&mut self, id: ReqId) {
        if self.rec.is_some() {
            self.rec_block(id, BlockAction::Complete);
        }
        self.inv.requests_completed += 1;
        self.inv.bytes_completed += self.reqs.get(id).bytes();
        let (pc, wb) = (&mut self.pc, &mut self.wb);
        let req = self.reqs.complete(id, |what| match what {
            Completes::Pages { file, first, n, write: true } => pc.end_writeback_range(file, first, n, id),
            Completes::Pages { file, first, n, write: false } => pc.fill_range(file, first, n, id),
            Completes::Meta { block } => wb.meta_written(block, id),
            Completes::Journal | Completes::Other => {}
        });
        let mut waiters = std::mem::take(&mut self.scratch_waiters);
        self.wg.take_waiters_into(id, &mut waiters);
        for &(tid, _) in &waiters {
            self.wake_split(tid, Some(req.times));
        }
        self.scratch_waiters = waiters;
        // Conditions that completions can end.
        if self.wb.thresholds.throttle_lifted(&self.pc) {
            self.wake_all(Blocker::Throttle);
        }
        if self.prio.alloc_may_proceed() {
            self.wake_all(Blocker::Alloc);
        }
    }

    /// A data-less or journal request (flush, discard, journal blocks, metadata).
    pub(super) fn submit_control(&mut self, tid: Tid, op: ReqOp, block: u64, blocks: u64, origin: Origin) -> ReqKey {
        self.submit_control_flagged(tid, op, block, blocks, origin, false)
    }

    /// [`World::submit_control`], with PREFLUSH + FUA when `flush_fua` (a commit record): such
    /// a request bypasses the I/O scheduler (`BlockQueue::submit`).
    pub(super) fn submit_control_flagged(
        &mut self,
        tid: Tid,
        op: ReqOp,
        block: u64,
        blocks: u64,
        origin: Origin,
        flush_fua: bool,
    ) -> ReqKey {
        let t = &self.tasks[tid as usize];
        let kernel = t.kind != Kind::User;
        // FastTrack matches sync requests to the FG app by PID: the jbd2 thread's journal
        // writes are not the FG app's, even when an FG fsync forced the commit (no owner).
        let fg = self.prio.request_is_fg(kernel, self.task_is_fg(tid), false);
        let prov = Provenance {
            uid: t.uid,
            pid: t.pid,
            tid,
            fg,
            origin,
            blkio_group: if kernel { ROOT_GROUP } else { self.blkio_group_of(tid) },
        };
        // Checkpoint writes are write-back; discards are async too: 3.10's blkdev_issue_discard
        // submits REQ_WRITE | REQ_DISCARD without REQ_SYNC (and waits for it) — QASIO's D_discard.
        let sync = !matches!(origin, Origin::Checkpoint | Origin::Discard);
        let mut req = Request::new(op, block * SECTORS_PER_BLOCK, (blocks * SECTORS_PER_BLOCK) as u32, sync, prov);
        req.meta = matches!(origin, Origin::JournalCommit | Origin::Checkpoint | Origin::Metadata);
        req.preflush = op == ReqOp::Flush || flush_fua;
        req.fua = flush_fua;
        let what = match origin {
            Origin::Checkpoint => Completes::Meta { block },
            Origin::JournalCommit => Completes::Journal,
            _ => Completes::Other,
        };
        self.submit(req, what)
    }
}
