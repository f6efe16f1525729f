//! Page reclaim: the watermarks, kswapd, and direct reclaim on the allocation path, driven
//! through the [`Reclaim`] context.
//!
//! An allocation of `n` pages wakes kswapd when free memory would fall below the `low`
//! watermark, and succeeds at once while it stays above `min`. Below `min` the allocating task
//! reclaims directly (the victim order is the policy's: [`super::ReclaimOrder`]); if that cannot
//! free enough because what is left is dirty or under I/O, it asks for reclaim-driven write-back
//! (`wakeup_flusher_threads`) and waits for write-back completions ([`Blocker::Alloc`]).
//! kswapd reclaims in batches of 32 until the `high` watermark, or hands over to write-back
//! when only dirty pages are left.
//!
//! # Simplifications versus the kernel (mm/vmscan.c, mm/page_alloc.c)
//! - One zone; watermarks are 1 MiB, 1 % and 2 % of the page cache (the kernel derives them from
//!   `min_free_kbytes`; these are an assumption of the same order). Memory is the page cache only
//!   (no anonymous memory, no swap).
//! - Direct reclaim asks for the shortfall plus 32 pages (`SWAP_CLUSTER_MAX`) in one pass; it
//!   never sleeps in congestion_wait, it waits for the next completion instead.
//! - Policy seams are the context's: the victim order and its hooks ([`Reclaim::shrink`]), the
//!   FastTrack allocation gate ([`Reclaim::alloc_gate_pauses`]) and what a task waiting in
//!   reclaim makes of the write-back it waits for ([`Reclaim::reclaim_wait`]). So is a VM
//!   host's reclaim of free memory ([`Reclaim::host_refault_ns`], [`super::host`]): charged
//!   once an allocation succeeds, so a task that waits and retries pays it once.
//!
//! # Invariants
//! - An allocation either succeeds (true) or registers its task's wait and returns false; a
//!   task waiting on `Alloc` is woken by a completion or by kswapd freeing pages.
//! - kswapd blocks only when free memory is at or above `high`, or nothing is reclaimable now.

use crate::kernel::{After, Cat, Kernel, Step};
use crate::mm::Reclaimed;
use crate::prov::Tid;
use crate::wait::Blocker;

/// kswapd's own work per batch (ns), besides the per-page cost.
const KSWAPD_BATCH_NS: u64 = 2_000;
/// Pages kswapd reclaims per batch (`SWAP_CLUSTER_MAX`).
const KSWAPD_BATCH: u64 = 32;

/// Free-page watermarks (pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    /// Below it, allocations reclaim directly.
    pub min: u64,
    /// Below it, kswapd is woken.
    pub low: u64,
    /// kswapd reclaims up to it.
    pub high: u64,
}

/// The watermarks of a page cache of `capacity` pages.
pub fn watermarks(capacity: u64) -> Watermarks {
    let min = 256;
    Watermarks { min, low: (capacity / 100).max(min + 64), high: (capacity / 50).max(min + 128) }
}

/// Per-page CPU costs from the scenario (ns).
#[derive(Clone, Copy, Debug)]
pub struct ReclaimCosts {
    pub alloc_page: u64,
    pub reclaim_page: u64,
}

/// What reclaim needs beyond [`Kernel`]: the page cache and the policy's seams.
pub trait Reclaim: Kernel {
    /// Reclaim up to `want` pages in the policy's victim order (counting its hooks).
    fn shrink(&mut self, want: u64) -> Reclaimed;
    /// FastTrack's Page Allocator: true if `tid` must pause here (its wait is registered).
    fn alloc_gate_pauses(&mut self, tid: Tid) -> bool;
    /// Wake kswapd if it is idle.
    fn wake_kswapd(&mut self);
    /// Reclaim found only dirty or in-flight pages: the flusher writes back regardless of the
    /// background threshold until allocations succeed.
    fn writeback_for_reclaim(&mut self);
    /// Pages were freed: wake the tasks waiting in allocation, unless the policy holds them.
    fn release_alloc_waiters(&mut self);
    /// `tid` now waits in reclaim for write-back to free `short` pages.
    fn reclaim_wait(&mut self, tid: Tid, short: u64);
    /// `n` pages are being allocated in folios of `order`, for a read (`read`: the device fills
    /// them) or a write: the CPU time (ns) the host adds for those it had taken back
    /// ([`super::host`]; none where no host model is on, the default).
    fn host_refault_ns(&mut self, _n: u64, _read: bool, _order: u32) -> u64 {
        0
    }
}

/// Make room for `n` pages for `tid`, in folios of `order`, for a read (`read`) or a write,
/// adding the CPU cost to `cost`. False if the task must wait (it is then registered).
pub fn alloc<K: Reclaim + ?Sized>(
    cx: &mut K,
    tid: Tid,
    n: u64,
    (read, order): (bool, u32),
    costs: &ReclaimCosts,
    cost: &mut u64,
) -> bool {
    if cx.alloc_gate_pauses(tid) {
        return false;
    }
    *cost += n * costs.alloc_page;
    let wm = watermarks(cx.page_cache().capacity);
    let free = cx.page_cache().free_pages();
    if free < n + wm.low {
        cx.wake_kswapd();
    }
    if free >= n + wm.min {
        *cost += cx.host_refault_ns(n, read, order);
        return true;
    }
    // Direct reclaim.
    let r = cx.shrink(n + wm.min - free + 32);
    *cost += r.freed * costs.reclaim_page;
    if cx.page_cache().free_pages() >= n {
        *cost += cx.host_refault_ns(n, read, order);
        return true;
    }
    // Everything left is dirty or under I/O: wait for write-back to clean some.
    cx.writeback_for_reclaim();
    cx.block(tid, Blocker::Alloc, Cat::Alloc);
    let short = (n + wm.min).saturating_sub(cx.page_cache().free_pages());
    cx.reclaim_wait(tid, short);
    false
}

/// One step of kswapd (`tid`).
pub fn kswapd_step<K: Reclaim + ?Sized>(cx: &mut K, tid: Tid, costs: &ReclaimCosts) -> Step {
    let wm = watermarks(cx.page_cache().capacity);
    if cx.page_cache().free_pages() < wm.high {
        let r = cx.shrink(KSWAPD_BATCH);
        if r.freed > 0 {
            cx.release_alloc_waiters();
            return (r.freed * costs.reclaim_page + KSWAPD_BATCH_NS, After::Step);
        }
        // Only dirty or in-flight pages left: write-back must clean some first.
        cx.writeback_for_reclaim();
    }
    cx.block(tid, Blocker::Idle, Cat::Sleep);
    (0, After::Block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Fake;

    const COSTS: ReclaimCosts = ReclaimCosts { alloc_page: 100, reclaim_page: 10 };

    #[test]
    fn watermarks_are_ordered_and_scale_with_the_cache() {
        let w = watermarks(256 * 512);
        assert!(w.min < w.low && w.low < w.high);
        assert_eq!(w, Watermarks { min: 256, low: 1310, high: 2621 });
        let small = watermarks(1024);
        assert_eq!((small.low, small.high), (320, 384));
    }

    #[test]
    fn plenty_of_free_memory_allocates_without_reclaim() {
        let mut cx = Fake::with_pages(100_000, 10, 0);
        let mut cost = 0;
        assert!(alloc(&mut cx, 7, 4, (false, 0), &COSTS, &mut cost));
        assert_eq!(cost, 4 * COSTS.alloc_page);
        assert!(cx.events.is_empty() && cx.blocked.is_empty());
    }

    #[test]
    fn below_min_direct_reclaim_frees_clean_pages() {
        // 10,000-page cache, full of clean pages: reclaim frees what the allocation needs.
        let mut cx = Fake::with_pages(10_000, 10_000, 0);
        let mut cost = 0;
        assert!(alloc(&mut cx, 7, 8, (false, 0), &COSTS, &mut cost));
        assert!(cx.pc.free_pages() >= 8);
        assert!(cost > 8 * COSTS.alloc_page, "reclaim work is charged");
        assert_eq!(cx.events, vec!["kswapd"]);
    }

    #[test]
    fn only_dirty_pages_left_waits_for_write_back() {
        let mut cx = Fake::with_pages(10_000, 0, 10_000);
        let mut cost = 0;
        assert!(!alloc(&mut cx, 7, 8, (false, 0), &COSTS, &mut cost));
        assert_eq!(cx.blocked, vec![(7, Blocker::Alloc)]);
        assert_eq!(cx.events, vec!["kswapd", "writeback", "reclaim_wait"]);
    }

    #[test]
    fn the_gate_pauses_before_anything_else() {
        let mut cx = Fake::with_pages(10_000, 10_000, 0);
        cx.gate = true;
        let mut cost = 0;
        assert!(!alloc(&mut cx, 7, 8, (false, 0), &COSTS, &mut cost));
        assert_eq!(cost, 0);
        assert!(cx.events.is_empty());
    }

    #[test]
    fn kswapd_reclaims_to_the_high_watermark_then_sleeps() {
        let mut cx = Fake::with_pages(10_000, 10_000, 0);
        let high = watermarks(10_000).high;
        let mut batches = 0;
        loop {
            let (ns, after) = kswapd_step(&mut cx, 2, &COSTS);
            if after == After::Block {
                break;
            }
            assert_eq!(ns, KSWAPD_BATCH * COSTS.reclaim_page + KSWAPD_BATCH_NS);
            batches += 1;
            assert!(batches < 1_000);
        }
        assert!(cx.pc.free_pages() >= high);
        assert_eq!(cx.blocked, vec![(2, Blocker::Idle)]);
        assert_eq!(cx.events.iter().filter(|e| **e == "release").count(), batches);
    }

    #[test]
    fn kswapd_hands_over_to_write_back_when_all_is_dirty() {
        let mut cx = Fake::with_pages(10_000, 0, 10_000);
        assert_eq!(kswapd_step(&mut cx, 2, &COSTS).1, After::Block);
        assert_eq!(cx.events, vec!["writeback"]);
    }
}
