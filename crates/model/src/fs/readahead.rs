//! The kernel's on-demand read-ahead window (`mm/readahead.c`, `ondemand_readahead` /
//! `page_cache_sync_ra` / `page_cache_async_ra` of Linux 4.x–6.x): the state each open file
//! keeps (`struct file_ra_state`: `start`, `size`, `async_size`) and the windows a sequential
//! reader gets. Used by the ext4 read path ([`super::ext4::read`]) when the scenario's
//! `phone.async_read_ahead` is on; off, the read path keeps its synchronous model (a miss reads
//! up to `read_ahead_kib`, at most 256 pages, and waits for it).
//!
//! - **A sequential miss** (the file's start, or the reader continuing its own pages) opens a
//!   window at the missing page of `get_init_ra_size(req, max)` pages: the request rounded up
//!   to a power of two, ×4 while at most `max / 32`, ×2 while at most `max / 4`, else `max`
//!   (`max` = `read_ahead_kb` / 4). Its last `size - req` pages are the *async* part, and the
//!   first of them carries the `PG_readahead` marker: when a read reaches it, the next window
//!   is submitted without waiting for it.
//! - **The marker reached** (`page_cache_async_ra`): the next window starts where the last
//!   ended, of `get_next_ra_size(size, max)` pages: ×4 below `max / 16`, ×2 up to `max / 2`,
//!   else `max`; the whole window is async, so its marker is its first page. So with 128 KiB
//!   `read()`s and `read_ahead_kb` = 8192 the windows are 512 KiB, 1, 2, 4, then 8 MiB, each
//!   started while the reader copies the one before.
//! - **A miss where the window should continue** (the reader overtook the async window, or its
//!   marker page was evicted): the next window from the missing page, as if the marker had
//!   been hit (`index == ra->start + ra->size`).
//! - A random miss reads only the pages asked for and leaves the state alone.
//! - **Folios** (twin29): a window's pages are cached in folios of one order, `order` (Linux's
//!   large folios, `page_cache_ra_order` in `mm/readahead.c`): a new window's of order 0, each
//!   next one's two orders larger (`new_order += 2`), at most `ilog2` of the window and
//!   [`MAX_FOLIO_ORDER`] (2 MiB). Measured on this VM's ext4 (docs/twin.md, twin29): the launch's
//!   code files read in 128 KiB calls sit in 4, 16 and 64 KiB folios, a file read in 1 MiB calls
//!   in 4 KiB … 1 MiB and then 2 MiB ones. Only the host's reclaim model uses the order
//!   ([`crate::mm::host`]: small folios are cut from the free blocks reporting leaves alone).
//!
//! The ext4 path submits a window's uncached pages as requests cut at `max_sectors_kb` (the
//! block layer's split) and only the reader's own missing page waits.
//!
//! Simplifications versus the kernel: the state is per inode, not per open file (two readers
//! of one file share a window); `ra->prev_pos` is not kept (a continuation is recognised by the
//! pages cached just before, as in the synchronous model, or by the window's end); the
//! "readit" step that merges the next window into a fully async one on a sync miss, the
//! `mmap_miss` heuristics, large folios and `bdi->io_pages` raising `max` for large requests
//! are left out; the async window is allocated like a sync one (the kernel's `__GFP_NORETRY`
//! allocation gives up under memory pressure; here the reader waits for reclaim).

/// The largest page-cache folio: a PMD's 2 MiB (`MAX_PAGECACHE_ORDER` on x86-64).
pub const MAX_FOLIO_ORDER: u32 = 9;

/// `struct file_ra_state`: the current window and its async part (pages), and the order of the
/// folios its pages are cached in (`ra->order`). `size` = 0: none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RaState {
    pub start: u32,
    pub size: u32,
    pub async_size: u32,
    pub order: u32,
}

impl RaState {
    /// The page carrying `PG_readahead`, if the window has one.
    pub fn marker(&self) -> Option<u32> {
        (self.size > 0 && self.async_size > 0).then(|| self.start + self.size - self.async_size)
    }

    /// A sequential miss at `index` for a read of `req` pages: the window to read. When the
    /// miss is where the current window ends, the window ramps as at the marker; otherwise a
    /// new window opens at `index`.
    pub fn on_sync_miss(&mut self, index: u32, req: u32, max: u32) -> (u32, u32) {
        let max = max.max(1);
        let req = req.max(1);
        if self.size > 0 && index == self.start.saturating_add(self.size) {
            return self.on_marker(max);
        }
        let size = init_size(req, max);
        *self = RaState { start: index, size, async_size: if size > req { size - req } else { size }, order: 0 };
        (self.start, self.size)
    }

    /// The reader reached the marker: the next window, all of it async (its first page the next
    /// marker). Returns `(first page, pages)`.
    pub fn on_marker(&mut self, max: u32) -> (u32, u32) {
        let max = max.max(1);
        let size = next_size(self.size, max);
        let order = (self.order + 2).min(MAX_FOLIO_ORDER).min(size.max(1).ilog2());
        *self = RaState { start: self.start.saturating_add(self.size), size, async_size: size, order };
        (self.start, self.size)
    }
}

/// `get_init_ra_size`: the first window for a request of `req` pages, at most `max`.
pub fn init_size(req: u32, max: u32) -> u32 {
    let new = req.max(1).checked_next_power_of_two().unwrap_or(u32::MAX);
    if new <= max / 32 {
        new * 4
    } else if new <= max / 4 {
        new * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: the window after one of `cur` pages, at most `max` (a window already
/// larger than `max` keeps its size, as the kernel's 6.x check does).
pub fn next_size(cur: u32, max: u32) -> u32 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else if cur > max {
        cur
    } else {
        max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `read_ahead_kb` = 8192 (this VM's vda): 2048 pages.
    const MAX: u32 = 2048;

    #[test]
    fn the_window_ramps_from_the_initial_size_to_read_ahead_kb() {
        // 128 KiB read()s (32 pages) from the file's start.
        let mut ra = RaState::default();
        assert_eq!(ra.on_sync_miss(0, 32, MAX), (0, 128), "512 KiB: 32 pages x 4 (32 <= 2048/32)");
        assert_eq!(ra.marker(), Some(32), "the marker is the first page past the request");
        let mut windows = vec![];
        for _ in 0..6 {
            windows.push(ra.on_marker(MAX));
            assert_eq!(ra.marker(), Some(ra.start), "an async window's marker is its first page");
        }
        assert_eq!(windows, [(128, 256), (384, 512), (896, 1024), (1920, 2048), (3968, 2048), (6016, 2048)]);
    }

    #[test]
    fn init_and_next_sizes_follow_readahead_c() {
        assert_eq!(init_size(1, 32), 4, "a 4 KiB read with the default 128 KiB: 16 KiB");
        assert_eq!(init_size(4, 32), 8, "4 > 32/32, <= 32/4: x2");
        assert_eq!(init_size(8, 32), 16, "8 pages > 32/32: x2");
        assert_eq!(init_size(9, 32), 32, "rounded up to 16 > 32/4: max");
        assert_eq!(init_size(3000, MAX), MAX);
        assert_eq!(next_size(4, 32), 8, "4 >= 32/16: x2");
        assert_eq!(next_size(1, 32), 4, "1 < 32/16 = 2: x4");
        assert_eq!(next_size(16, 32), 32);
        assert_eq!(next_size(17, 32), 32);
        assert_eq!(next_size(64, 32), 64, "larger than max: kept");
    }

    #[test]
    fn a_miss_at_the_window_end_continues_it_and_elsewhere_restarts_it() {
        let mut ra = RaState::default();
        ra.on_sync_miss(0, 32, MAX);
        // The reader ran past the window (its marker page evicted): the next window, ramped.
        assert_eq!(ra.on_sync_miss(128, 32, MAX), (128, 256));
        // A sequential miss elsewhere (another stretch of the file): a new initial window.
        assert_eq!(ra.on_sync_miss(10_000, 32, MAX), (10_000, 128));
        assert_eq!(ra.marker(), Some(10_032));
        // A request as large as the window: no async part beyond it, the whole window async.
        let mut big = RaState::default();
        assert_eq!(big.on_sync_miss(0, MAX, MAX), (0, MAX));
        assert_eq!(big.marker(), Some(0));
    }

    #[test]
    fn each_window_caches_its_pages_in_folios_two_orders_larger_up_to_2_mib() {
        // 128 KiB reads with read_ahead_kb = 8192: 4 KiB folios, then 16, 64, 256 KiB, 1 MiB, 2 MiB.
        let mut ra = RaState::default();
        ra.on_sync_miss(0, 32, MAX);
        let mut orders = vec![ra.order];
        for _ in 0..6 {
            ra.on_marker(MAX);
            orders.push(ra.order);
        }
        assert_eq!(orders, vec![0, 2, 4, 6, 8, 9, 9]);
        // A window of 4 pages holds no folio above order 2.
        let mut small = RaState { start: 0, size: 2, async_size: 2, order: 4 };
        small.on_marker(8);
        assert_eq!((small.size, small.order), (4, 2));
        // A new window starts again at order 0.
        ra.on_sync_miss(100_000, 32, MAX);
        assert_eq!(ra.order, 0);
    }
}
