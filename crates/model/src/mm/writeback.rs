//! Write-back: the flusher thread, driven through the [`Writeback`] context.
//!
//! Each step of the flusher writes back one file — the one dirtied longest ago among those that
//! qualify: every dirty file while dirty memory is over the background threshold or reclaim asked
//! for write-back, otherwise only files dirty for longer than `dirty_expire` — at most 1,024
//! pages per pass (`MAX_WRITEBACK_PAGES`), skipping pages already under I/O. Block allocation of
//! delayed-allocation pages happens under a journal handle (the ext4 path in the context). With
//! nothing to write, it checkpoints committed metadata older than `dirty_expire` to its home
//! location (async, 64 blocks per pass), then sleeps until woken (the periodic timer, dirty
//! thresholds, reclaim).
//!
//! # Simplifications versus the kernel (fs/fs-writeback.c, mm/page-writeback.c, fs/jbd2/checkpoint.c)
//! - One flusher for the one device; one file per step, oldest `dirtied_at` first (the kernel
//!   walks `b_io` lists of inodes in dirtying order, which this approximates).
//! - Congestion: the flusher waits while the host's async requests reach `nr_requests`, and is
//!   woken when they fall below 7/8 of it (`blk_queue_congested` hysteresis).
//! - Checkpointing is the flusher's work here (the kernel does it from jbd2 and on journal
//!   space pressure); there is no journal space limit.
//!
//! # Invariants
//! - The flusher holds a journal handle only within one step, never while it blocks.
//! - A checkpoint write is issued at most once per block at a time (`meta_io` holds the live one).

use std::collections::HashMap;

use forefront_engine::SimTime;

use crate::block::{ReqId, ReqKey, ReqOp};
use crate::kernel::{After, Cat, Kernel, Step};
use crate::mm::{FileId, PageCache};
use crate::prov::{Origin, Tid};
use crate::wait::{Blocker, Why};

/// Pages written back per file per pass (`MAX_WRITEBACK_PAGES`).
pub const MAX_WRITEBACK_PAGES: usize = 1024;
/// Checkpoint blocks written per pass.
const CHECKPOINT_BATCH: usize = 64;
/// Choosing a file and starting a pass (ns).
const PASS_NS: u64 = 20_000;

/// Write-back tunables (`vm.dirty_*`, `nr_requests`).
#[derive(Clone, Copy, Debug)]
pub struct WritebackParams {
    /// `dirty_expire_centisecs`, in ns.
    pub expire_ns: u64,
    /// Dirty pages above which everything dirty is written back (`dirty_background_ratio`).
    pub background_pages: u64,
    /// The request queue's `nr_requests`: the flusher waits at this many async requests.
    pub nr_requests: usize,
    /// CPU cost of submitting one request (ns).
    pub submit_ns: u64,
}

/// The dirty thresholds (`vm.dirty_background_ratio`, `vm.dirty_ratio` of the page cache).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Thresholds {
    /// Dirty pages above which the flusher writes back everything dirty.
    pub background_pages: u64,
    /// Dirty and write-back pages above which writers wait (balance_dirty_pages).
    pub limit_pages: u64,
}

impl Thresholds {
    /// The thresholds of a page cache of `capacity` pages, the ratios in percent.
    pub fn of(capacity: u64, background_ratio: f64, ratio: f64) -> Thresholds {
        Thresholds {
            background_pages: (capacity as f64 * background_ratio / 100.0) as u64,
            limit_pages: (capacity as f64 * ratio / 100.0) as u64,
        }
    }

    /// A completion rule: dirty throttling ends once dirty and write-back pages are below the
    /// limit (writers over it wait: see `fs::ext4`).
    pub fn throttle_lifted(&self, pc: &PageCache) -> bool {
        pc.nr_dirty + pc.nr_writeback < self.limit_pages
    }
}

/// The write-back state kept between the flusher's steps.
#[derive(Clone, Debug, Default)]
pub struct WritebackState {
    /// Metadata block → the live checkpoint write holding it.
    pub meta_io: HashMap<u64, ReqKey>,
    /// Reclaim asked for write-back regardless of the thresholds (cleared when all is written).
    pub for_reclaim: bool,
    pub thresholds: Thresholds,
}

impl WritebackState {
    pub fn new(thresholds: Thresholds) -> WritebackState {
        WritebackState { thresholds, ..Default::default() }
    }

    /// A completion rule: checkpoint write `id` of metadata block `block` is done (a later
    /// write of the block, if any, keeps it).
    pub fn meta_written(&mut self, block: u64, id: ReqId) {
        if self.meta_io.get(&block).is_some_and(|k| k.id == id) {
            self.meta_io.remove(&block);
        }
    }
}

/// What the flusher needs beyond [`Kernel`]: the ext4 write-back path and shared state.
pub trait Writeback: Kernel {
    /// Async requests in the host's queues.
    fn async_queued(&self) -> usize;
    /// Start (or keep) a journal handle for `tid`; false if it must wait (registered).
    fn ensure_handle(&mut self, tid: Tid) -> bool;
    /// Stop the handle `tid` holds.
    fn stop_handle_of(&mut self, tid: Tid);
    /// Write back pages `idxs` of `file` under `tid`'s handle (delayed allocation, requests);
    /// returns the CPU cost.
    fn writeback_pages(&mut self, tid: Tid, file: FileId, idxs: &[u32], origin: Origin) -> u64;
    /// The write-back state (checkpoint writes in flight, reclaim's request, thresholds).
    fn writeback_state(&mut self) -> &mut WritebackState;
}

/// One step of the flusher (`tid`).
pub fn flusher_step<K: Writeback + ?Sized>(cx: &mut K, tid: Tid, p: &WritebackParams) -> Step {
    let now = cx.now();
    if cx.async_queued() >= p.nr_requests {
        cx.block(tid, Blocker::Congestion, Cat::Throttle);
        return (0, After::Block);
    }
    let for_reclaim = cx.writeback_state().for_reclaim;
    let pc = cx.page_cache();
    let over = pc.nr_dirty > p.background_pages;
    // The file to write: oldest dirty first (if the oldest has not expired, none has).
    let best = pc.oldest_dirty_file().filter(|&(at, _)| over || now.since(at) >= p.expire_ns || for_reclaim);
    if let Some((_, file)) = best {
        if !cx.ensure_handle(tid) {
            return (0, After::Block);
        }
        // Skip pages still under I/O.
        let pc = cx.page_cache();
        let idxs: Vec<u32> = pc.files[file as usize]
            .dirty
            .iter()
            .filter(|&i| {
                pc.lookup(file, i).is_some_and(|pg| {
                    let st = pc.page(pg);
                    !st.writeback && !st.locked
                })
            })
            .take(MAX_WRITEBACK_PAGES)
            .collect();
        let mut cost = PASS_NS;
        if idxs.is_empty() {
            // All dirty pages of this file are being written: wait for one of them.
            cx.stop_handle_of(tid);
            let pc = cx.page_cache();
            let pg = pc.files[file as usize].dirty.iter().find_map(|i| pc.lookup(file, i)).expect("dirty");
            let id = pc.page(pg).io.expect("under I/O");
            cx.wait_request(tid, id, Why::DataPage, Cat::PageWait);
            return (cost, After::Block);
        }
        cost += cx.writeback_pages(tid, file, &idxs, Origin::Writeback);
        cx.stop_handle_of(tid);
        return (cost, After::Step);
    }
    // Checkpoint: committed metadata older than dirty_expire goes home (async, meta).
    let due: Vec<(u64, u64)> = cx
        .journal()
        .checkpoint
        .iter()
        .copied()
        .filter(|&(at, _)| now.since(SimTime(at)) >= p.expire_ns)
        .take(CHECKPOINT_BATCH)
        .collect();
    if !due.is_empty() {
        let mut cost = 0;
        for (at, block) in due {
            cx.journal().checkpoint.remove(&(at, block));
            let current = cx.writeback_state().meta_io.get(&block).copied();
            if current.is_some_and(|r| cx.live(r)) {
                continue;
            }
            let r = cx.submit_control(tid, ReqOp::Write, block, 1, Origin::Checkpoint);
            cx.writeback_state().meta_io.insert(block, r);
            cost += p.submit_ns;
        }
        return (cost.max(1), After::Step);
    }
    cx.writeback_state().for_reclaim = false;
    cx.block(tid, Blocker::Idle, Cat::Sleep);
    (0, After::Block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Fake;

    /// The fake machine at 40 s.
    fn fake() -> Fake {
        let mut cx = Fake::new();
        cx.now = SimTime::from_secs_f64(40.0);
        cx
    }

    const P: WritebackParams =
        WritebackParams { expire_ns: 30_000_000_000, background_pages: 10_000, nr_requests: 128, submit_ns: 1_000 };

    #[test]
    fn the_oldest_expired_file_goes_first_in_batches_of_max_writeback_pages() {
        let mut cx = fake();
        let young = cx.dirty_file(10, 35.0);
        let old = cx.dirty_file(1500, 5.0);
        assert_eq!(flusher_step(&mut cx, 0, &P).1, After::Step);
        assert_eq!(cx.written[0].0, old);
        assert_eq!(cx.written[0].1.len(), MAX_WRITEBACK_PAGES);
        // The rest of the old file next; the young one is not expired and stays dirty.
        flusher_step(&mut cx, 0, &P);
        assert_eq!((cx.written[1].0, cx.written[1].1.len()), (old, 1500 - MAX_WRITEBACK_PAGES));
        assert!(!cx.handle);
        assert_eq!(flusher_step(&mut cx, 0, &P).1, After::Block);
        assert!(cx.written.iter().all(|w| w.0 != young));
        assert_eq!(cx.blockers(), vec![Blocker::Idle]);
    }

    #[test]
    fn over_the_background_threshold_or_for_reclaim_young_files_go_too() {
        let mut cx = fake();
        let young = cx.dirty_file(10, 39.0);
        cx.wb.for_reclaim = true;
        flusher_step(&mut cx, 0, &P);
        assert_eq!(cx.written[0].0, young);
        // Nothing left to write and no checkpoint work: the reclaim request is done.
        assert_eq!(flusher_step(&mut cx, 0, &P).1, After::Block);
    }

    #[test]
    fn a_congested_queue_makes_it_wait() {
        let mut cx = fake();
        cx.dirty_file(10, 0.0);
        cx.async_queued = P.nr_requests;
        assert_eq!(flusher_step(&mut cx, 0, &P), (0, After::Block));
        assert_eq!(cx.blockers(), vec![Blocker::Congestion]);
    }

    #[test]
    fn expired_checkpoints_are_written_once_then_it_sleeps() {
        let mut cx = fake();
        cx.jn.checkpoint.insert((SimTime::from_secs_f64(1.0).ns(), 77));
        cx.jn.checkpoint.insert((SimTime::from_secs_f64(39.0).ns(), 78)); // not expired
        assert_eq!(flusher_step(&mut cx, 0, &P), (P.submit_ns, After::Step));
        assert_eq!(cx.control(), vec![(ReqOp::Write, 77, Origin::Checkpoint)]);
        assert!(cx.wb.meta_io.contains_key(&77));
        assert_eq!(flusher_step(&mut cx, 0, &P).1, After::Block);
        assert_eq!(cx.blockers(), vec![Blocker::Idle]);
        assert_eq!(cx.jn.checkpoint.len(), 1);
    }
}
