//! ext4's file paths — read, write, fsync/fdatasync, creat/truncate/unlink — and its journal
//! handles, driven through the [`Ext4`] context.
//!
//! Each path is a resumable [`FileOp`]: a step does as much as it can without waiting, records
//! where it is with [`Ext4::set_file_op`], and either continues (`After::Step`) or registers a
//! wait and returns `After::Block`; the task runs the next step when woken.
//!
//! - **read** (`generic_file_read`): copy cached, uptodate pages; a missing page starts a
//!   readahead of up to `read_ahead_kib` (contiguous runs become one request each) when the read
//!   looks sequential — it starts the file, or more pages than it asks for are cached just before
//!   it (`page_cache_sync_ra`'s history test) — and otherwise reads only the pages asked for (a
//!   random read). A locked page is waited for. One `read()` call per `chunk`.
//!   Simplification: the kernel also calls a read sequential when it continues the previous
//!   read on the same open file (`ra->prev_pos`); here a read that continues its own op is
//!   recognised by the pages it just cached, so only a continuation whose pages were evicted
//!   in between reads without readahead. The initial window is always the whole
//!   `read_ahead_kib` (the kernel starts smaller and ramps up).
//!   With `async_read_ahead` (a scenario's `phone.async_read_ahead`) a sequential miss opens
//!   the kernel's ramping window instead and the next window starts, without waiting, when a
//!   read reaches its marker page ([`super::readahead`]).
//! - **drop-behind** (a read's `drop_behind`: `POSIX_FADV_DONTNEED` over each call's range, as
//!   `forefront bench`'s uploaders do): the call's clean pages leave the cache, but only whole
//!   folios of `readahead_folio_pages` (`mapping_try_invalidate` in `mm/truncate.c` evicts a
//!   folio only when the range covers all of it). Kernels whose file system caches read-ahead
//!   in large folios (ext4 since 6.11: 2 MiB ones under a large read-ahead window, measured by
//!   `bench calibrate`, docs/twin.md twin25) keep nearly every page of a file dropped in 1 MiB
//!   calls. Simplification: every folio is that size and aligned to it; the kernel's first
//!   read-ahead windows of a file use smaller ones (their order ramps up by two a window).
//! - **cold inodes** ([`crate::fs::Inode::cold`], after a `drop_caches` op with `inodes`, as
//!   `echo 3 > drop_caches` drops the inodes of files nobody holds open): the first read or
//!   write of the file first reads its inode-table block, a synchronous one-block `REQ_META`
//!   read (`__ext4_get_inode_loc` at the open), once for the 16 inodes the block holds.
//!   Simplification: ext4 also reads ahead up to `inode_readahead_blks` (32) further blocks of
//!   the group's used inode table, which here stay unread until an inode in them is opened.
//! - **write** (`generic_perform_write` + `ext4_da_write_end`): pages are dirtied in the page
//!   cache (delayed allocation: no block yet); a page under write-back is waited for when stable
//!   pages are on (QASIO's D_data); a partial page that exists on flash is read first. Each call
//!   ends by updating i_size/mtime under a journal handle ([`journal_update`]), then
//!   balance_dirty_pages: wake the flusher over the background threshold, wait over the limit.
//! - **write-back** ([`writeback_pages`]): delayed allocation of unmapped pages under the
//!   writer's handle (the transaction records the allocation's metadata and its data writes as
//!   ordered data), then one request per contiguous run.
//! - **fsync** (`ext4_sync_file`): write the file's dirty pages as sync writes, wait for every
//!   page of the file under write-back (own or the flusher's: D_sync), then wait for the commit
//!   of the transaction that holds its metadata (or data, for fdatasync) — or, with nothing to
//!   commit, flush the device cache.
//! - **log files** (`fs = "lfs"` mounts, [`crate::fs::log`]): write-back puts every page at
//!   the log's head (no delayed allocation into ext4, no ordered data); fsync ends with the
//!   log's summary block (preflush + FUA) instead of a journal commit.
//! - **FAT files** (`fs = "vfat"` mounts on another device, [`crate::fs::Region`]): clusters
//!   allocated at write-back from the region's cursor; fsync writes the file's FAT block and
//!   directory entry in place and flushes that device. Neither log nor FAT files journal their
//!   inode: write(), creat, truncate and unlink only change the inode (written at fsync).
//! - **creat / truncate / unlink**: drop cached pages past the new size (waiting for pages under
//!   I/O), then update inode, directory and bitmap blocks under a handle and free the extents
//!   (discarded after the commit with `-o discard`).
//!
//! # Simplifications versus the kernel (fs/ext4, mm/filemap.c, fs/jbd2/transaction.c)
//! - Journal handles are taken per call and never nest; credits and the journal's space are not
//!   modelled. A handle that finds a metadata block under checkpoint write waits holding the
//!   handle (`lock_buffer`, QASIO's D_meta), so a commit locked meanwhile waits for it.
//! - No inline data, no extent-tree blocks (metadata is the inode-table block, the directory block
//!   and the block bitmaps), no mballoc preallocation; allocation is [`Fs::allocate`]'s.
//! - Request building, FG/BG classification and the block layer are the context's
//!   ([`Ext4::submit_pages`]).
//!
//! # Invariants
//! - A handle is held only inside one step, except while waiting for a metadata buffer (D_meta).
//! - Pages under I/O always name their request (`io`), so a waiter can find what to wait for.

use crate::block::{ReqId, ReqKey, ReqOp};
use crate::fs::{CommitPhase, Fs, MapCursor, BLOCK};
use crate::kernel::{After, Cat};
use crate::mm::reclaim::{self, ReclaimCosts};
use crate::mm::throttle::{Balance, DirtyState, DirtyThrottle, ThrottleMode};
use crate::mm::writeback::Writeback;
use crate::mm::{FileId, PAGE_SIZE};
use crate::prov::{Origin, Tid};
use crate::wait::{Blocker, WaitGraph, Why};

/// What a metadata operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaKind {
    Creat,
    Unlink,
    Truncate(u64),
}

/// Progress inside a multi-step file operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    Read {
        file: FileId,
        pos: u64,
        end: u64,
        chunk: u64,
        call_end: u64,
        /// After each call, its pages leave the page cache (`POSIX_FADV_DONTNEED` over the
        /// call's range, as `forefront bench`'s uploaders do).
        drop_behind: bool,
    },
    Write {
        file: FileId,
        pos: u64,
        end: u64,
        chunk: u64,
        call_end: u64,
        meta_done: bool,
    },
    /// `from..to`: the page indexes stage 1 still has to check for write-back (one pass, as
    /// `__filemap_fdatawait_range`); set when stage 0 ends.
    Fsync {
        file: FileId,
        stage: u8,
        datasync: bool,
        from: u32,
        to: u32,
    },
    Meta {
        file: FileId,
        kind: MetaKind,
        stage: u8,
    },
}

/// Scenario parameters and CPU costs (ns) of the file paths.
#[derive(Clone, Copy, Debug)]
pub struct Ext4Params {
    /// A `read()`'s copy of one page to user memory.
    pub copy_page: u64,
    /// A `write()`'s copy of one page into the page cache (with its lookup and dirtying).
    pub copy_write_page: u64,
    pub syscall: u64,
    pub metadata: u64,
    pub writeback_page: u64,
    pub submit_request: u64,
    pub read_ahead_kib: u64,
    /// The kernel's on-demand read-ahead ([`super::readahead`]): ramping windows, the next one
    /// submitted asynchronously at the marker page. Off: the synchronous model above.
    pub async_read_ahead: bool,
    /// Largest request (sectors).
    pub max_sectors: u32,
    /// The folio a sequential read's pages are cached in, in pages (1: every page its own):
    /// `POSIX_FADV_DONTNEED` drops whole folios only, so a read's `drop_behind` over a range
    /// that does not cover a folio leaves it cached (the drop-behind bullet of the module doc).
    pub readahead_folio_pages: u32,
    pub dirty_background_pages: u64,
    pub dirty_limit_pages: u64,
    /// How writers are throttled over the dirty thresholds ([`crate::mm::throttle`]).
    pub throttle: ThrottleMode,
    pub reclaim: ReclaimCosts,
}

/// What the file paths need beyond reclaim and write-back: the task's op state, byte
/// accounting, the block layer's request building and a few wake-ups.
pub trait Ext4: reclaim::Reclaim + Writeback {
    fn fs_mut(&mut self) -> &mut Fs;
    fn wait_graph(&mut self) -> &mut WaitGraph;
    /// Record where `tid` is in its file operation (`None`: done).
    fn set_file_op(&mut self, tid: Tid, op: Option<FileOp>);
    /// Account `bytes` read or written by `tid`'s system calls.
    fn count_bytes(&mut self, tid: Tid, bytes: u64, write: bool);
    /// Submit one request for a run of pages `(first index, first LBA block, count)` of `file`
    /// (read fill or write-back) and mark the pages; returns the CPU cost.
    fn submit_pages(&mut self, tid: Tid, file: FileId, run: (u32, u64, u32), write: bool, origin: Origin) -> u64;
    /// The key of live request `id` (ids are reused; the key tells them apart).
    fn key(&self, id: ReqId) -> ReqKey;
    /// Whether `tid`'s work counts as foreground (for the commit it forces).
    fn task_is_fg(&self, tid: Tid) -> bool;
    fn wake_flusher(&mut self);
    fn wake_jbd2(&mut self);
    /// Wake the jbd2 thread if it waits for the handles of locked transaction `txn`.
    fn wake_jbd2_holders(&mut self, txn: u64);
    /// The dirty-throttling state (`balance_dirty_pages`).
    fn dirty_throttle(&mut self) -> &mut DirtyThrottle;
}

/// Continue `tid`'s file operation `op`.
pub fn step<K: Ext4 + ?Sized>(cx: &mut K, k: &Ext4Params, tid: Tid, op: FileOp) -> (u64, After) {
    match op {
        FileOp::Read { file, pos, end, chunk, call_end, drop_behind } => {
            read(cx, k, tid, file, pos, end, Call { chunk, call_end, drop_behind })
        }
        FileOp::Write { file, pos, end, chunk, call_end, meta_done } => {
            write(cx, k, tid, file, pos, end, chunk, call_end, meta_done)
        }
        FileOp::Fsync { file, stage, datasync, from, to } => fsync(cx, k, tid, file, stage, datasync, from, to),
        FileOp::Meta { file, kind, stage } => meta(cx, k, tid, file, kind, stage),
    }
}

#[allow(clippy::too_many_arguments)] // the read state is these fields; a struct would only rename them
pub fn read<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    mut pos: u64,
    end: u64,
    call: Call,
) -> (u64, After) {
    let Call { chunk, call_end, drop_behind } = call;
    let mut cost = 0;
    if cx.fs().inodes[file as usize].cold {
        if let Some(c) = load_inode(cx, k, tid, file) {
            set_read(cx, tid, file, pos, end, call);
            return (c, After::Block);
        }
    }
    let copy = k.copy_page;
    while pos < call_end {
        let idx = (pos / PAGE_SIZE) as u32;
        // Every page from here to the call's end that is cached and ready is copied at once.
        let last = ((call_end - 1) / PAGE_SIZE) as u32;
        if k.async_read_ahead {
            // The call reaches the window's marker page: the next window, without waiting.
            let ra = cx.fs_mut().inodes[file as usize].ra;
            if ra.marker().is_some_and(|m| (idx..=last).contains(&m)) {
                let mut next = ra;
                let window = next.on_marker(ra_max(k));
                let (c, done) = read_window(cx, k, tid, file, window, 0, next.order);
                cost += c;
                if !done {
                    set_read(cx, tid, file, pos, end, call);
                    return (cost, After::Block);
                }
                cx.fs_mut().inodes[file as usize].ra = next;
            }
        }
        let ready = cx.page_cache().ready_pages(file, idx, last - idx + 1);
        if ready > 0 {
            cx.page_cache().mark_accessed_range(file, idx, ready);
            cost += copy * u64::from(ready);
            let next = ((u64::from(idx) + u64::from(ready)) * PAGE_SIZE).min(call_end);
            cx.count_bytes(tid, next - pos, false);
            pos = next;
            continue;
        }
        match cx.page_cache().lookup(file, idx) {
            Some(p) => {
                let id = cx.page_cache().io_of(p).expect("a locked page has its request");
                cx.wait_request(tid, id, Why::DataPage, Cat::PageWait);
                set_read(cx, tid, file, pos, end, call);
                return (cost, After::Block);
            }
            None => {
                let last_page = ((end - 1) / PAGE_SIZE) as u32;
                let asked = (call_end - pos).div_ceil(PAGE_SIZE) as u32;
                // Sequential: the file's start, or more cached pages right before than asked for.
                let sequential =
                    idx == 0 || (idx > asked && cx.page_cache().cached_count(file, idx - asked - 1, idx) == asked + 1);
                let mut ra_state = cx.fs_mut().inodes[file as usize].ra;
                let continues = ra_state.size > 0 && idx == ra_state.start.saturating_add(ra_state.size);
                if k.async_read_ahead && (sequential || continues) {
                    let window = ra_state.on_sync_miss(idx, asked, ra_max(k));
                    let (c, done) = read_window(cx, k, tid, file, window, 1, ra_state.order);
                    cost += c;
                    if !done {
                        set_read(cx, tid, file, pos, end, call);
                        return (cost, After::Block);
                    }
                    cx.fs_mut().inodes[file as usize].ra = ra_state;
                    // Loop again: the page is now locked (wait) or a hole (uptodate).
                    continue;
                }
                let ra = if sequential { (k.read_ahead_kib / 4).max(1) as u32 } else { 1 };
                let want_end = last_page.min(idx + ra.max(asked) - 1);
                // Up to the next cached page, the end wanted, or 256 pages.
                let next_cached = cx.page_cache().next_cached(file, idx).unwrap_or(u32::MAX);
                let n = (next_cached.min(want_end + 1) - idx).min(256);
                // The synchronous model's pages: single-page folios.
                if !reclaim::alloc(cx, tid, u64::from(n), (true, 0), &k.reclaim, &mut cost) {
                    set_read(cx, tid, file, pos, end, call);
                    return (cost, After::Block);
                }
                cost += read_pages(cx, k, tid, file, idx, n, Origin::Read);
                // Loop again: the page is now locked (wait) or a hole (uptodate).
            }
        }
    }
    if drop_behind {
        // fadvise(DONTNEED) over the call's range: its pages, read and copied, are clean; only
        // the folios wholly inside it go.
        let folio = k.readahead_folio_pages.max(1);
        let lo = (call_end.saturating_sub(chunk) / PAGE_SIZE) as u32;
        let hi = call_end.div_ceil(PAGE_SIZE) as u32;
        let (lo, hi) = (lo.div_ceil(folio).saturating_mul(folio), hi / folio * folio);
        if lo < hi {
            cx.page_cache().remove_clean_range(file, lo, hi);
        }
        cost += k.syscall;
    }
    if call_end >= end {
        cx.set_file_op(tid, None);
        return (cost.max(1), After::Step);
    }
    let next_end = end.min(call_end + chunk);
    cx.set_file_op(tid, Some(FileOp::Read { file, pos: call_end, end, chunk, call_end: next_end, drop_behind }));
    (cost + k.syscall, After::Step)
}

/// One `read()` call of a [`FileOp::Read`]: the calls' size, where this one ends, and whether
/// its pages are dropped after it.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub chunk: u64,
    pub call_end: u64,
    pub drop_behind: bool,
}

/// A cold inode ([`crate::fs::Inode::cold`]): its inode-table block is read before its data
/// (`__ext4_get_inode_loc` when the file is opened, a synchronous `REQ_META` read of the whole
/// block), once for all the inodes it holds; a reader of another of them waits for that read.
/// Returns the CPU cost when the reader must block (`None`: the inode is in memory now).
fn load_inode<K: Ext4 + ?Sized>(cx: &mut K, k: &Ext4Params, tid: Tid, file: FileId) -> Option<u64> {
    let b = cx.fs().inodes[file as usize].itable_block;
    if cx.fs().itable_cold.contains(&b) {
        match cx.fs().itable_reads.get(&b).copied() {
            Some(key) if cx.live(key) => {
                cx.wait_request(tid, key.id, Why::MetaBuffer, Cat::PageWait);
                return Some(0);
            }
            Some(_) => {
                let fs = cx.fs_mut();
                fs.itable_reads.remove(&b);
                fs.itable_cold.remove(&b);
            }
            None => {
                let key = cx.submit_control(tid, ReqOp::Read, b, 1, Origin::Metadata);
                cx.fs_mut().itable_reads.insert(b, key);
                cx.wait_request(tid, key.id, Why::Own, Cat::PageWait);
                return Some(k.submit_request + k.metadata);
            }
        }
    }
    cx.fs_mut().inodes[file as usize].cold = false;
    None
}

/// The order of the folio that page `idx` is cached in by a `write()` of bytes `start..end`:
/// `generic_perform_write` asks `write_begin` for the rest of the call up to the largest folio
/// (2 MiB) from the folio-aligned position, and `__filemap_get_folio` gives the largest
/// power of two that fits that length and the page's alignment (`fgf_set_order`). Measured on
/// this VM: a file written in 1 MiB calls sits in 1 MiB folios (docs/twin.md, twin29).
pub fn write_folio_order(start: u64, end: u64, idx: u32) -> u32 {
    let (mut q, last) = (start / PAGE_SIZE, end.div_ceil(PAGE_SIZE).max(start / PAGE_SIZE + 1));
    loop {
        let fit = (last - q).max(1).ilog2();
        let order = fit.min(if q == 0 { super::readahead::MAX_FOLIO_ORDER } else { q.trailing_zeros() });
        let order = order.min(super::readahead::MAX_FOLIO_ORDER);
        if u64::from(idx) < q + (1 << order) || q + (1 << order) >= last {
            return order;
        }
        q += 1 << order;
    }
}

/// `read_ahead_kib` in pages (at least one).
fn ra_max(k: &Ext4Params) -> u32 {
    (k.read_ahead_kib / 4).clamp(1, u64::from(u32::MAX)) as u32
}

/// Submit the uncached pages of read-ahead window `(first, pages)`, clipped to the file's size
/// (but at least `at_least` pages: the reader's own missing page past the end is read as a
/// hole), as requests cut where the blocks stop being consecutive or at `max_sectors`; pages
/// already cached are skipped; they are allocated in folios of `order` (the window's). Returns
/// the CPU cost, and `false` when the reader must first wait for reclaim (nothing submitted;
/// the caller blocks and retries).
#[allow(clippy::too_many_arguments)]
fn read_window<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    window: (u32, u32),
    at_least: u32,
    order: u32,
) -> (u64, bool) {
    let pages = cx.fs_mut().inodes[file as usize].size.div_ceil(PAGE_SIZE);
    let (first, n) = window;
    let end = (u64::from(first) + u64::from(n)).min(pages.max(u64::from(first) + u64::from(at_least))) as u32;
    if first >= end {
        return (0, true);
    }
    let missing = (end - first) - cx.page_cache().cached_count(file, first, end);
    let mut cost = 0;
    if missing > 0 && !reclaim::alloc(cx, tid, u64::from(missing), (true, order), &k.reclaim, &mut cost) {
        return (cost, false);
    }
    let mut i = first;
    while i < end {
        match cx.page_cache().next_cached(file, i) {
            Some(c) if c == i => i += 1,
            c => {
                let stop = c.unwrap_or(u32::MAX).min(end);
                cost += read_pages(cx, k, tid, file, i, stop - i, Origin::Read);
                i = stop;
            }
        }
    }
    (cost, true)
}

fn set_read<K: Ext4 + ?Sized>(cx: &mut K, tid: Tid, file: FileId, pos: u64, end: u64, call: Call) {
    let Call { chunk, call_end, drop_behind } = call;
    cx.set_file_op(tid, Some(FileOp::Read { file, pos, end, chunk, call_end, drop_behind }));
}

/// Insert `n` pages from `first` locked and submit reads for them (holes become uptodate).
/// Returns the CPU cost.
pub fn read_pages<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    first: u32,
    n: u32,
    origin: Origin,
) -> u64 {
    let owner = cx.fs_mut().inodes[file as usize].owner;
    let mut cost = 0;
    let mut run: Option<(u32, u64, u32)> = None; // (first idx, first lba, count)
    let mut cursor = MapCursor::default();
    cx.page_cache().insert_run(file, first, n, owner);
    let max_run = k.max_sectors / 8;
    // A stretch of pages mapped alike (consecutive blocks, or holes) at a time; requests are
    // cut where the blocks stop being consecutive or a request is full, as page by page.
    let mut j = 0;
    while j < n {
        let idx = first + j;
        let (lba, c) = cursor.map_run(&cx.fs_mut().inodes[file as usize], u64::from(idx), u64::from(n - j));
        let c = c as u32;
        match lba {
            None => {
                cx.page_cache().set_uptodate_range(file, idx, c);
                if let Some(r) = run.take() {
                    cost += cx.submit_pages(tid, file, r, false, origin);
                }
            }
            Some(lba) => {
                // Locked by the request that `submit_pages` makes for its run.
                let mut t = 0;
                while t < c {
                    let (pidx, plba) = (idx + t, lba + u64::from(t));
                    match run {
                        Some((f, l, cnt)) if l + u64::from(cnt) == plba && cnt < max_run => {
                            let add = (c - t).min(max_run - cnt);
                            run = Some((f, l, cnt + add));
                            t += add;
                        }
                        Some(r) => {
                            cost += cx.submit_pages(tid, file, r, false, origin);
                            run = Some((pidx, plba, 1));
                            t += 1;
                        }
                        None => {
                            run = Some((pidx, plba, 1));
                            t += 1;
                        }
                    }
                }
            }
        }
        j += c;
    }
    if let Some(r) = run {
        cost += cx.submit_pages(tid, file, r, false, origin);
    }
    cost
}

#[allow(clippy::too_many_arguments)]
pub fn write<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    mut pos: u64,
    end: u64,
    chunk: u64,
    call_end: u64,
    meta_done: bool,
) -> (u64, After) {
    let now = cx.now();
    let mut cost = 0;
    let copy = k.copy_write_page;
    let dirtied_before = cx.page_cache().dirtied;
    // Every way out of this step counts the pages it dirtied for balance_dirty_pages.
    let account = |cx: &mut K| {
        let pages = cx.page_cache().dirtied - dirtied_before;
        cx.dirty_throttle().account(tid, pages);
    };
    let set = |cx: &mut K, pos: u64, meta_done: bool| {
        account(cx);
        cx.set_file_op(tid, Some(FileOp::Write { file, pos, end, chunk, call_end, meta_done }));
    };
    // A cold inode is read in first (its file was opened again after a drop).
    if cx.fs().inodes[file as usize].cold {
        if let Some(c) = load_inode(cx, k, tid, file) {
            set(cx, pos, meta_done);
            return (c, After::Block);
        }
    }
    if cx.fs().inodes[file as usize].truncating.is_some_and(|t| t != tid) {
        // A truncate holds the inode lock: the write waits for it (as ext4_file_write_iter
        // waits for i_rwsem).
        cx.block(tid, Blocker::Inode { file }, Cat::PageWait);
        set(cx, pos, meta_done);
        return (0, After::Block);
    }
    while pos < call_end {
        let idx = (pos / PAGE_SIZE) as u32;
        let page_end = ((idx as u64 + 1) * PAGE_SIZE).min(call_end);
        match cx.page_cache().lookup(file, idx) {
            Some(p) => {
                let stable = cx.fs().params.stable_pages;
                let pg = cx.page_cache().page(p);
                if pg.locked || (pg.writeback && stable) {
                    let id = pg.io.expect("page under I/O has its request");
                    cx.wait_request(tid, id, Why::DataPage, Cat::PageWait);
                    set(cx, pos, meta_done);
                    return (cost, After::Block);
                }
                cx.page_cache().set_uptodate(p);
                cx.page_cache().set_dirty(p, now);
                cx.page_cache().mark_accessed(p);
            }
            None => {
                // The call's folios are cut from its start (a step resumed mid-call keeps the
                // folio its page belongs to); the last call of an op, shorter than `chunk`, is
                // cut as if it started a chunk before its end.
                let order = write_folio_order(call_end.saturating_sub(chunk), call_end, idx);
                if !reclaim::alloc(cx, tid, 1, (false, order), &k.reclaim, &mut cost) {
                    set(cx, pos, meta_done);
                    return (cost, After::Block);
                }
                let partial =
                    pos % PAGE_SIZE != 0 || (page_end % PAGE_SIZE != 0 && page_end < cx.fs_mut().inodes[file as usize].size);
                if partial && cx.fs_mut().inodes[file as usize].map(u64::from(idx)).is_some() {
                    // Read-modify-write of a partial page that exists on flash.
                    cost += read_pages(cx, k, tid, file, idx, 1, Origin::Write);
                    set(cx, pos, meta_done);
                    return (cost, After::Step);
                }
                let owner = cx.fs_mut().inodes[file as usize].owner;
                let p = cx.page_cache().insert(file, idx, owner);
                cx.page_cache().set_uptodate(p);
                cx.page_cache().set_dirty(p, now);
            }
        }
        cost += copy;
        cx.count_bytes(tid, page_end - pos, true);
        pos = page_end;
    }
    // End of one write() call: i_size/mtime under a journal handle (ext4_dirty_inode); a log
    // or FAT file's inode is written with its data instead.
    if !meta_done && !cx.fs().inodes[file as usize].journaled() {
        let ino = &mut cx.fs_mut().inodes[file as usize];
        ino.size = ino.size.max(call_end);
        // Without a journal the inode (size, times) is written by the next fsync.
        ino.inode_dirty |= ino.nojournal;
    } else if !meta_done {
        let blk = cx.fs_mut().inodes[file as usize].itable_block;
        match journal_update(cx, k, tid, &[blk], &mut cost) {
            Some(txn) => {
                let ino = &mut cx.fs_mut().inodes[file as usize];
                ino.size = ino.size.max(call_end);
                ino.meta_txn = Some(txn);
            }
            None => {
                set(cx, pos, false);
                return (cost, After::Block);
            }
        }
    }
    // balance_dirty_pages.
    let dirty = cx.page_cache().nr_dirty + cx.page_cache().nr_writeback;
    if dirty > k.dirty_background_pages {
        cx.wake_flusher();
    }
    let last = call_end >= end;
    let next_end = end.min(call_end + chunk);
    let next =
        if last { None } else { Some(FileOp::Write { file, pos: call_end, end, chunk, call_end: next_end, meta_done: false }) };
    match k.throttle {
        ThrottleMode::PerCall => {
            // Writers over the dirty limit wait for write-back to bring it under.
            cx.set_file_op(tid, next);
            if dirty > k.dirty_limit_pages {
                cx.block(tid, Blocker::Throttle, Cat::Throttle);
                return (cost.max(1), After::Block);
            }
        }
        ThrottleMode::PerPage => {
            let pc = cx.page_cache();
            let g = DirtyState {
                dirty,
                bg_thresh: k.dirty_background_pages,
                thresh: k.dirty_limit_pages,
                dirtied: pc.dirtied,
                written: pc.written,
            };
            account(cx);
            // Only the empty call made after a pause over the limit starts with its i_size
            // update done: it is that pause's recheck.
            let recheck = meta_done;
            match cx.dirty_throttle().balance(tid, now, g, recheck) {
                Balance::Go => cx.set_file_op(tid, next),
                Balance::Pause { ns, recheck } => {
                    // Over the limit the task balances again, dirtying nothing, before its
                    // next call (an empty call: no pages, no i_size update).
                    let again = FileOp::Write { file, pos: call_end, end, chunk, call_end, meta_done: true };
                    cx.set_file_op(tid, if recheck { Some(again) } else { next });
                    cx.block(tid, Blocker::Timer, Cat::Throttle);
                    let cpu = cost.max(1);
                    return (cpu, After::Sleep(now.after(cpu + ns)));
                }
            }
        }
    }
    (cost.max(1) + if last { 0 } else { k.syscall }, After::Step)
}

/// Make sure `tid` holds a journal handle; false if it must wait (registered) because the
/// committing transaction is locked (jbd2's T_LOCKED: I_jhandle in QASIO's terms).
pub fn ensure_handle<K: Ext4 + ?Sized>(cx: &mut K, tid: Tid) -> bool {
    if cx.wait_graph().handle_of(tid).is_some() {
        return true;
    }
    let now = cx.now();
    if cx.journal().handles_blocked() {
        cx.block(tid, Blocker::Handle, Cat::Journal);
        return false;
    }
    let txn = cx.journal().start_handle(now);
    cx.wait_graph().hold_handle(tid, txn);
    true
}

/// Start a handle, dirty `blocks` in the running transaction, stop the handle. Returns the
/// transaction, or None when the task must wait (registered): for the handle (commit
/// locked) or for a block under checkpoint write (D_meta).
pub fn journal_update<K: Ext4 + ?Sized>(cx: &mut K, k: &Ext4Params, tid: Tid, blocks: &[u64], cost: &mut u64) -> Option<u64> {
    if !ensure_handle(cx, tid) {
        return None;
    }
    for b in blocks {
        if let Some(&k) = cx.writeback_state().meta_io.get(b) {
            if cx.live(k) {
                // Holding the handle while waiting: the commit waits for us (QASIO's chain).
                cx.wait_request(tid, k.id, Why::MetaBuffer, Cat::PageWait);
                return None;
            }
        }
    }
    let txn = cx.wait_graph().release_handle(tid).expect("handle started");
    let target = if cx.journal().running.id == txn {
        &mut cx.journal().running
    } else {
        &mut cx.journal().committing.as_mut().expect("txn").0
    };
    target.meta.extend(blocks.iter().copied());
    stop_handle(cx, txn);
    *cost += k.metadata;
    Some(txn)
}

pub fn stop_handle<K: Ext4 + ?Sized>(cx: &mut K, txn: u64) {
    if cx.journal().running.id == txn {
        cx.journal().running.handles -= 1;
    } else if let Some((t, phase)) = &mut cx.journal().committing {
        debug_assert_eq!(t.id, txn);
        t.handles -= 1;
        if t.handles == 0 && *phase == CommitPhase::Locked {
            cx.wake_jbd2_holders(txn);
        }
    }
}

/// Write back `idxs` (dirty pages of `file`, ascending): delayed allocation under the
/// writer's handle (which must be held), then requests over contiguous LBA runs.
pub fn writeback_pages<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    idxs: &[u32],
    origin: Origin,
) -> u64 {
    if cx.fs().inodes[file as usize].log {
        return log_writeback_pages(cx, k, tid, file, idxs, origin);
    }
    if cx.fs().inodes[file as usize].region > 0 {
        return fat_writeback_pages(cx, k, tid, file, idxs, origin);
    }
    if cx.fs().inodes[file as usize].nojournal {
        return nojournal_writeback_pages(cx, k, tid, file, idxs, origin);
    }
    let mut cost = 0;
    let txn = cx.wait_graph().handle_of(tid).expect("write-back allocates under a handle");
    // Delayed allocation of unmapped pages.
    let mut touched = Vec::new();
    let allocated = allocate_unmapped(cx, file, idxs, |fs, fb, n| fs.allocate(file, fb, n, &mut touched)) > 0;
    if allocated {
        touched.push(cx.fs_mut().inodes[file as usize].itable_block);
        let t = if cx.journal().running.id == txn {
            &mut cx.journal().running
        } else {
            &mut cx.journal().committing.as_mut().expect("txn").0
        };
        t.meta.extend(touched.iter().copied());
        let ino = &mut cx.fs_mut().inodes[file as usize];
        ino.meta_txn = Some(txn);
        ino.datasync_txn = Some(txn);
        cost += k.metadata;
    }
    let mut ordered = Vec::new();
    cost += submit_runs(cx, k, tid, file, idxs, origin, |cx, first| ordered.push(last_submitted(cx, file, first)));
    if allocated {
        // data=ordered: this transaction's commit waits for these writes.
        let t = if cx.journal().running.id == txn {
            &mut cx.journal().running
        } else {
            &mut cx.journal().committing.as_mut().expect("txn").0
        };
        t.ordered.extend(ordered);
        if !t.ordered_files.contains(&file) {
            t.ordered_files.push(file);
        }
    }
    cost + idxs.len() as u64 * k.writeback_page
}

/// Write-back of the pages of an ext4 file without a journal: unmapped pages allocated (the
/// bitmaps and the inode changed in place: the inode goes with the next fsync), then one
/// request per contiguous run; nothing is filed in a transaction.
fn nojournal_writeback_pages<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    idxs: &[u32],
    origin: Origin,
) -> u64 {
    let mut touched = Vec::new();
    let allocated = allocate_unmapped(cx, file, idxs, |fs, fb, n| fs.allocate(file, fb, n, &mut touched)) > 0;
    let mut cost = 0;
    if allocated {
        cx.fs_mut().inodes[file as usize].inode_dirty = true;
        cost += k.metadata;
    }
    cost + submit_runs(cx, k, tid, file, idxs, origin, |_, _| {}) + idxs.len() as u64 * k.writeback_page
}

/// Write-back of a log file's pages: each run of consecutive pages is written at the log's
/// head (new blocks; the old copies die), one request per contiguous run. Nothing goes to the
/// ext4 journal: the log's own summary block makes an fsync durable.
fn log_writeback_pages<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    idxs: &[u32],
    origin: Origin,
) -> u64 {
    let mut cost = 0;
    let mut i = 0;
    while i < idxs.len() {
        let mut j = i + 1;
        while j < idxs.len() && idxs[j] == idxs[j - 1] + 1 && j - i < (k.max_sectors / 8) as usize {
            j += 1;
        }
        cx.fs_mut().log_write(file, u64::from(idxs[i]), (j - i) as u64);
        // One request, unless the head crossed into another segment.
        cost += submit_runs(cx, k, tid, file, &idxs[i..j], origin, |_, _| {});
        i = j;
    }
    cost + k.metadata + idxs.len() as u64 * k.writeback_page
}

/// Write-back of a FAT file's pages: unmapped pages get clusters from the region's cursor,
/// then one request per contiguous run; no journal.
fn fat_writeback_pages<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    idxs: &[u32],
    origin: Origin,
) -> u64 {
    let allocations = allocate_unmapped(cx, file, idxs, |fs, fb, n| fs.region_allocate(file, fb, n));
    let cost = allocations * k.metadata + submit_runs(cx, k, tid, file, idxs, origin, |_, _| {});
    cost + idxs.len() as u64 * k.writeback_page
}

/// Allocate every run of consecutive unmapped pages among `idxs` with `alloc(fs, first file
/// block, count)`; returns how many runs were allocated.
fn allocate_unmapped<K: Ext4 + ?Sized>(cx: &mut K, file: FileId, idxs: &[u32], mut alloc: impl FnMut(&mut Fs, u64, u64)) -> u64 {
    let mut runs = 0;
    let mut i = 0;
    let mut cursor = MapCursor::default();
    while i < idxs.len() {
        if cursor.map(&cx.fs_mut().inodes[file as usize], u64::from(idxs[i])).is_some() {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < idxs.len()
            && idxs[j] == idxs[j - 1] + 1
            && cursor.map(&cx.fs_mut().inodes[file as usize], u64::from(idxs[j])).is_none()
        {
            j += 1;
        }
        alloc(cx.fs_mut(), u64::from(idxs[i]), (j - i) as u64);
        cursor = MapCursor::default(); // the map changed
        runs += 1;
        i = j;
    }
    runs
}

/// Submit the (mapped) pages `idxs` as write-back, one request per run contiguous in the file
/// and on the device (up to `max_sectors`); `submitted(cx, first page)` after each request.
/// Returns the CPU cost.
fn submit_runs<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    idxs: &[u32],
    origin: Origin,
    mut submitted: impl FnMut(&mut K, u32),
) -> u64 {
    let mut cost = 0;
    let mut cursor = MapCursor::default();
    let mut run: Option<(u32, u64, u32)> = None;
    for &idx in idxs {
        let lba = cursor.map(&cx.fs_mut().inodes[file as usize], u64::from(idx)).expect("allocated above");
        run = match run {
            Some((f, l, c)) if f + c == idx && l + u64::from(c) == lba && c < k.max_sectors / 8 => Some((f, l, c + 1)),
            Some(r) => {
                cost += cx.submit_pages(tid, file, r, true, origin);
                submitted(cx, r.0);
                Some((idx, lba, 1))
            }
            None => Some((idx, lba, 1)),
        };
    }
    if let Some(r) = run {
        cost += cx.submit_pages(tid, file, r, true, origin);
        submitted(cx, r.0);
    }
    cost
}

fn last_submitted<K: Ext4 + ?Sized>(cx: &mut K, file: FileId, idx: u32) -> ReqKey {
    let p = cx.page_cache().lookup(file, idx).expect("page under write-back");
    let id = cx.page_cache().page(p).io.expect("request set");
    cx.key(id)
}

#[allow(clippy::too_many_arguments)]
pub fn fsync<K: Ext4 + ?Sized>(
    cx: &mut K,
    k: &Ext4Params,
    tid: Tid,
    file: FileId,
    stage: u8,
    datasync: bool,
    from: u32,
    to: u32,
) -> (u64, After) {
    let set = |cx: &mut K, stage: u8| cx.set_file_op(tid, Some(FileOp::Fsync { file, stage, datasync, from, to }));
    let mut cost = 0;
    match stage {
        0 => {
            // Write out the file's dirty pages as sync writes.
            let idxs: Vec<u32> = cx.page_cache().files[file as usize].dirty.iter().collect();
            if !idxs.is_empty() {
                if !ensure_handle(cx, tid) {
                    return (0, After::Block);
                }
                // Pages under write-back must finish before they are written again.
                let busy = idxs.iter().find_map(|&i| {
                    let p = cx.page_cache().lookup(file, i)?;
                    let pg = cx.page_cache().page(p);
                    (pg.writeback || pg.locked).then_some(pg.io).flatten()
                });
                if let Some(id) = busy {
                    let txn = cx.wait_graph().release_handle(tid).expect("held");
                    stop_handle(cx, txn);
                    cx.wait_request(tid, id, Why::SyncWriteback, Cat::PageWait);
                    return (0, After::Block);
                }
                cost += writeback_pages(cx, k, tid, file, &idxs, Origin::Fsync);
                let txn = cx.wait_graph().release_handle(tid).expect("held");
                stop_handle(cx, txn);
            }
            // Stage 1 checks the file's pages as they are now, once.
            let to = cx.fs().inodes[file as usize].size.div_ceil(PAGE_SIZE).min(u64::from(u32::MAX)) as u32;
            cx.set_file_op(tid, Some(FileOp::Fsync { file, stage: 1, datasync, from: 0, to }));
            (cost.max(1), After::Step)
        }
        1 => {
            // Wait for the file's pages under write-back (own or the flusher's: D_sync) in one
            // pass over the indexes, as __filemap_fdatawait_range does: a page whose write-back
            // starts behind the pass, or beyond the size the file had, is not waited for (else
            // a busy writer of the file could starve the fsync).
            let pc = cx.page_cache();
            let next = pc.files[file as usize].writeback.iter_from(from).next().filter(|&i| i < to);
            if let Some(i) = next {
                let id = pc.lookup(file, i).and_then(|p| pc.page(p).io).expect("a page under write-back has its request");
                cx.set_file_op(tid, Some(FileOp::Fsync { file, stage: 1, datasync, from: i + 1, to }));
                cx.wait_request(tid, id, Why::SyncWriteback, Cat::PageWait);
                return (0, After::Block);
            }
            set(cx, 2);
            (0, After::Step)
        }
        2 if cx.fs().inodes[file as usize].region > 0 => {
            // FAT (fat_file_fsync): the file's FAT block and directory entry in place, then a
            // cache flush of its device.
            let fs = cx.fs();
            let ino = &fs.inodes[file as usize];
            let r = &fs.regions[usize::from(ino.region) - 1];
            let fat = r.fat_block(ino.extents.first().map_or(r.start + r.fat_blocks, |e| e.1));
            let dir = r.dir_block(file);
            cx.submit_control(tid, ReqOp::Write, fat, 1, Origin::Metadata);
            let id = cx.submit_control(tid, ReqOp::Write, dir, 1, Origin::Metadata);
            cx.wait_request(tid, id.id, Why::Own, Cat::PageWait);
            set(cx, 10);
            (2 * k.submit_request + k.metadata, After::Block)
        }
        10 => {
            let start = cx.fs().regions[usize::from(cx.fs().inodes[file as usize].region) - 1].start;
            let id = cx.submit_control(tid, ReqOp::Flush, start, 0, Origin::Fsync);
            cx.wait_request(tid, id.id, Why::Own, Cat::PageWait);
            set(cx, 3);
            (k.submit_request, After::Block)
        }
        2 if cx.fs().inodes[file as usize].nojournal && cx.fs().inodes[file as usize].ext4() => {
            // An ext4 without a journal (ext4_fsync_nojournal): the inode block
            // (sync_inode_metadata) and, for a file created or removed since, its directory
            // block (ext4_sync_parent), written in place and waited for; then a cache flush.
            let ino = &mut cx.fs_mut().inodes[file as usize];
            let mut blocks = vec![];
            if std::mem::take(&mut ino.inode_dirty) {
                blocks.push(ino.itable_block);
            }
            if std::mem::take(&mut ino.dir_dirty) {
                blocks.push(ino.dir_block);
            }
            set(cx, 11);
            let Some(&last) = blocks.last() else {
                return (0, After::Step);
            };
            for &b in &blocks[..blocks.len() - 1] {
                cx.submit_control(tid, ReqOp::Write, b, 1, Origin::Metadata);
            }
            let id = cx.submit_control(tid, ReqOp::Write, last, 1, Origin::Metadata);
            cx.wait_request(tid, id.id, Why::Own, Cat::PageWait);
            (blocks.len() as u64 * k.submit_request + k.metadata, After::Block)
        }
        11 => {
            let id = cx.submit_control(tid, ReqOp::Flush, 0, 0, Origin::Fsync);
            cx.wait_request(tid, id.id, Why::Own, Cat::PageWait);
            set(cx, 3);
            (k.submit_request, After::Block)
        }
        2 if cx.fs().inodes[file as usize].log => {
            // A log file: its blocks are at the head; the segment summary and super root make
            // them durable (written with preflush + FUA, as NILFS2 with barriers on).
            let block = cx.fs_mut().log.as_mut().expect("log area").summary_block();
            let id = cx.submit_flush_fua(tid, block, 1, Origin::Fsync);
            cx.wait_request(tid, id.id, Why::Own, Cat::PageWait);
            set(cx, 3);
            (k.submit_request + k.metadata, After::Block)
        }
        2 => {
            let ino = &cx.fs_mut().inodes[file as usize];
            let need = if datasync { ino.datasync_txn } else { ino.meta_txn };
            match need {
                Some(txn) if txn > cx.journal().committed => {
                    cx.journal().commit_requested = cx.journal().commit_requested.max(txn);
                    if cx.task_is_fg(tid) && cx.journal().running.id == txn {
                        cx.journal().running.fg_forced = true;
                    }
                    cx.wake_jbd2();
                    // The transaction is chosen once, as ext4_sync_file takes i_sync_tid once:
                    // when it has committed the fsync is done, even if the inode changed again
                    // meanwhile (re-reading it would let a busy writer of the same file starve
                    // the fsync forever).
                    set(cx, 3);
                    cx.block(tid, Blocker::Commit { txn }, Cat::Journal);
                    (0, After::Block)
                }
                _ => {
                    // Nothing to commit (ext4_sync_file): a cache flush makes the data durable.
                    let id = cx.submit_control(tid, ReqOp::Flush, 0, 0, Origin::Fsync);
                    cx.wait_request(tid, id.id, Why::Own, Cat::PageWait);
                    set(cx, 3);
                    (k.submit_request, After::Block)
                }
            }
        }
        _ => {
            cx.set_file_op(tid, None);
            (1, After::Step)
        }
    }
}

pub fn meta<K: Ext4 + ?Sized>(cx: &mut K, k: &Ext4Params, tid: Tid, file: FileId, kind: MetaKind, stage: u8) -> (u64, After) {
    let set = |cx: &mut K, stage: u8| cx.set_file_op(tid, Some(FileOp::Meta { file, kind, stage }));
    let new_size = match kind {
        MetaKind::Creat | MetaKind::Unlink => 0,
        MetaKind::Truncate(s) => s,
    };
    if stage == 0 {
        // Take the inode lock (another truncate holds it: wait), so that no write adds pages
        // while they are dropped (without it, a busy writer of the file could starve this loop).
        match cx.fs().inodes[file as usize].truncating {
            Some(t) if t != tid => {
                cx.block(tid, Blocker::Inode { file }, Cat::PageWait);
                return (0, After::Block);
            }
            _ => cx.fs_mut().inodes[file as usize].truncating = Some(tid),
        }
        // Drop cached pages past the new size; pages under I/O must finish first (D_data).
        let first = new_size.div_ceil(PAGE_SIZE) as u32;
        let busy = cx.page_cache().first_in_io_from(file, first);
        let removed = cx.page_cache().remove_range(file, first, busy.map_or(u32::MAX, |p| p.index));
        let cost = 200 * u64::from(removed);
        if let Some(p) = busy {
            let id = cx.page_cache().page(p).io.expect("under I/O");
            cx.wait_request(tid, id, Why::SyncWriteback, Cat::PageWait);
            return (cost, After::Block);
        }
        // The pages are gone: release the inode lock and let its waiters go.
        cx.fs_mut().inodes[file as usize].truncating = None;
        cx.wake_all(Blocker::Inode { file });
        set(cx, 1);
        return (cost.max(1), After::Step);
    }
    if !cx.fs().inodes[file as usize].journaled() {
        // A log or FAT file: its directory and allocation changes are written with the next
        // fsync's summary or FAT blocks (not journaled by ext4).
        let mut freed = Vec::new();
        cx.fs_mut().free_from(file, new_size.div_ceil(BLOCK), &mut freed);
        let ino = &mut cx.fs_mut().inodes[file as usize];
        ino.size = new_size;
        ino.unlinked |= matches!(kind, MetaKind::Unlink);
        // An ext4 without a journal: inode and directory block in place, at the next fsync.
        ino.inode_dirty |= ino.nojournal;
        ino.dir_dirty |= ino.nojournal && matches!(kind, MetaKind::Creat | MetaKind::Unlink);
        cx.set_file_op(tid, None);
        return (k.metadata.max(1), After::Step);
    }
    let fs = cx.fs_mut();
    let ino = &fs.inodes[file as usize];
    let mut blocks = vec![ino.itable_block];
    if matches!(kind, MetaKind::Creat | MetaKind::Unlink) {
        blocks.push(ino.dir_block);
    }
    let from_fb = new_size.div_ceil(BLOCK);
    for &(start, lba, len) in &ino.extents {
        if start + len > from_fb {
            let b = fs.bitmap_block(lba);
            if !blocks.contains(&b) {
                blocks.push(b);
            }
        }
    }
    let mut cost = 0;
    match journal_update(cx, k, tid, &blocks, &mut cost) {
        None => {
            set(cx, 1);
            (cost, After::Block)
        }
        Some(txn) => {
            let mut freed = Vec::new();
            cx.fs_mut().free_from(file, from_fb, &mut freed);
            let discard = cx.fs().params.discard;
            let t = if cx.journal().running.id == txn {
                &mut cx.journal().running
            } else {
                &mut cx.journal().committing.as_mut().expect("txn").0
            };
            if discard {
                t.freed.extend(freed);
            }
            let ino = &mut cx.fs_mut().inodes[file as usize];
            ino.size = new_size;
            ino.meta_txn = Some(txn);
            ino.datasync_txn = Some(txn);
            if matches!(kind, MetaKind::Unlink) {
                ino.unlinked = true;
            }
            cx.set_file_op(tid, None);
            (cost.max(1), After::Step)
        }
    }
}

#[cfg(test)]
mod tests {
    use forefront_engine::SimTime;

    use super::*;

    #[test]
    fn a_write_caches_its_pages_in_the_largest_aligned_folios_that_fit() {
        const M: u64 = 1 << 20;
        assert!((0..256).all(|i| write_folio_order(M, 2 * M, 256 + i) == 8), "a 1 MiB call: one 1 MiB folio");
        assert_eq!(write_folio_order(0, 4 * M, 700), 9, "2 MiB folios at most");
        // Pages 1..4: page 1 alone (odd), pages 2 and 3 in one 8 KiB folio.
        let orders: Vec<u32> = (1..4).map(|i| write_folio_order(4096, 4 * 4096, i)).collect();
        assert_eq!(orders, vec![0, 1, 1]);
        assert_eq!(write_folio_order(100, 200, 0), 0, "a partial page");
    }
    use crate::testkit::{ext4_params, Fake};

    /// The fake machine at 5 ms, its write-back through ext4's own path.
    fn fake() -> Fake {
        let mut cx = Fake::new();
        cx.now = SimTime::from_ms(5);
        cx.real_writeback = true;
        cx
    }

    /// Run `op` for task 1 until it blocks or finishes; returns the last outcome.
    fn run(cx: &mut Fake, op: FileOp) -> After {
        let k = ext4_params();
        cx.op = Some(op);
        for _ in 0..1_000 {
            let Some(op) = cx.op.clone() else { return After::Step };
            let (_, after) = step(cx, &k, 1, op);
            if after == After::Block {
                return after;
            }
        }
        panic!("the operation never finished")
    }

    fn write_op(file: FileId, len: u64) -> FileOp {
        FileOp::Write { file, pos: 0, end: len, chunk: len, call_end: len, meta_done: false }
    }

    #[test]
    fn a_cold_inode_reads_its_table_block_once_before_the_files_data() {
        let mut cx = fake();
        let (f, g) = (cx.file("/data/a"), cx.file("/data/b"));
        let itable = cx.fs.inodes[f as usize].itable_block;
        assert_eq!(cx.fs.inodes[g as usize].itable_block, itable, "16 inodes a block");
        let read =
            |file| FileOp::Read { file, pos: 0, end: PAGE_SIZE, chunk: PAGE_SIZE, call_end: PAGE_SIZE, drop_behind: false };
        // In memory: no metadata read.
        run(&mut cx, read(f));
        assert!(cx.control().is_empty(), "{:?}", cx.control());
        cx.pc.remove_range(f, 0, u32::MAX);
        cx.fs.drop_inode(f);
        cx.fs.drop_inode(g);
        // The first reader reads the block (sync, metadata) and waits; its op is kept.
        assert_eq!(run(&mut cx, read(f)), After::Block);
        assert_eq!(cx.control(), vec![(ReqOp::Read, itable, Origin::Metadata)]);
        assert!(cx.reqs[0].0.sync);
        assert!(matches!(cx.op, Some(FileOp::Read { pos: 0, .. })));
        // A reader of another inode of the block waits for that read, submitting nothing.
        assert_eq!(run(&mut cx, read(g)), After::Block);
        assert_eq!(cx.control().len(), 1);
        assert!(matches!(cx.blocked.last(), Some((1, Blocker::Request { id: 0, why: Why::MetaBuffer }))));
        // Once it is done both read their data without reading the block again.
        cx.complete_all();
        run(&mut cx, read(f));
        run(&mut cx, read(g));
        assert!(!cx.fs.inodes[f as usize].cold && !cx.fs.inodes[g as usize].cold);
        assert!(cx.fs.itable_cold.is_empty() && cx.fs.itable_reads.is_empty());
        assert_eq!(cx.control().len(), 1);
        // A write of a cold inode reads it first too.
        cx.fs.drop_inode(g);
        assert_eq!(run(&mut cx, write_op(g, PAGE_SIZE)), After::Block);
        assert_eq!(cx.control().last(), Some(&(ReqOp::Read, itable, Origin::Metadata)));
    }

    #[test]
    fn a_write_dirties_pages_and_updates_the_inode_under_a_handle() {
        let mut cx = fake();
        let f = cx.file("/data/a");
        assert_eq!(run(&mut cx, write_op(f, 3 * PAGE_SIZE)), After::Step);
        assert_eq!(cx.pc.nr_dirty, 3);
        let ino = &cx.fs.inodes[f as usize];
        assert_eq!(ino.size, 3 * PAGE_SIZE);
        assert_eq!(ino.meta_txn, Some(cx.jn.running.id));
        assert!(cx.jn.running.meta.contains(&ino.itable_block));
        assert_eq!(cx.wg.handle_of(1), None, "the handle is stopped");
        assert_eq!(cx.jn.running.handles, 0);
        assert_eq!(ino.allocated(), 0, "delayed allocation: no block yet");
    }

    /// The CPU work of `op` for task 1 with costs `k`, summed over its steps until it ends.
    fn work(cx: &mut Fake, k: &Ext4Params, op: FileOp) -> u64 {
        cx.op = Some(op);
        let mut total = 0;
        while let Some(op) = cx.op.clone() {
            let (ns, after) = step(cx, k, 1, op);
            assert_ne!(after, After::Block, "a cached call does not block");
            total += ns;
        }
        total
    }

    #[test]
    fn a_write_copies_at_the_write_cost_and_a_read_at_the_read_cost() {
        let mut cx = fake();
        let f = cx.file("/data/a");
        let pages = 16;
        // The pages cached and dirty first, so the calls below only look them up and copy.
        assert_eq!(run(&mut cx, write_op(f, pages * PAGE_SIZE)), After::Step);
        let read = FileOp::Read {
            file: f,
            pos: 0,
            end: pages * PAGE_SIZE,
            chunk: pages * PAGE_SIZE,
            call_end: pages * PAGE_SIZE,
            drop_behind: false,
        };
        let one = ext4_params();
        let split = Ext4Params { copy_write_page: one.copy_write_page + 900, ..one };
        let (w1, w2) =
            (work(&mut cx, &one, write_op(f, pages * PAGE_SIZE)), work(&mut cx, &split, write_op(f, pages * PAGE_SIZE)));
        assert_eq!(w2 - w1, pages * 900, "each page written costs the write side's copy");
        assert_eq!(work(&mut cx, &split, read.clone()), work(&mut cx, &one, read), "a read is not charged the write side's copy");
    }

    #[test]
    fn a_write_over_the_dirty_limit_pauses_as_dirty_throttling_and_rechecks() {
        let mut cx = fake();
        let f = cx.file("/data/a");
        let k = ext4_params();
        // Pretend the machine is over the limit (20,000 pages in ext4_params).
        cx.pc.nr_writeback = 25_000;
        let (_, after) = step(&mut cx, &k, 1, write_op(f, 64 * PAGE_SIZE));
        // Over the limit: a MAX_PAUSE sleep (200 ms) after the call's CPU work.
        let until = after_of(after).since(cx.now);
        assert!((200_000_000..201_000_000).contains(&until), "{after:?}");
        assert_eq!(cx.blockers(), vec![Blocker::Timer]);
        // The next step is the recheck: an empty call with the i_size update done.
        let again = cx.op.clone().expect("recheck");
        assert_eq!(
            again,
            FileOp::Write {
                file: f,
                pos: 64 * PAGE_SIZE,
                end: 64 * PAGE_SIZE,
                chunk: 64 * PAGE_SIZE,
                call_end: 64 * PAGE_SIZE,
                meta_done: true
            }
        );
        // Under the freerun ceiling the recheck lets it go, and the write is over.
        cx.pc.nr_writeback = 0;
        assert_eq!(step(&mut cx, &k, 1, again).1, After::Step);
        assert_eq!(cx.op, None);
        assert_eq!(cx.throttle.pauses, 1);
        // With the earlier per-call model the writer waits on the shared throttle queue.
        let k = Ext4Params { throttle: ThrottleMode::PerCall, ..k };
        cx.pc.nr_writeback = 25_000;
        let g = cx.file("/data/b");
        assert_eq!(step(&mut cx, &k, 1, write_op(g, PAGE_SIZE)).1, After::Block);
        assert_eq!(cx.blockers().last(), Some(&Blocker::Throttle));
    }

    /// The wake-up time of a sleep.
    fn after_of(a: After) -> SimTime {
        match a {
            After::Sleep(t) => t,
            other => panic!("not a sleep: {other:?}"),
        }
    }

    #[test]
    fn writing_a_page_under_write_back_waits_for_it_with_stable_pages() {
        let mut cx = fake();
        let f = cx.file("/data/a");
        run(&mut cx, write_op(f, PAGE_SIZE));
        let p = cx.pc.lookup(f, 0).unwrap();
        cx.pc.start_writeback(p, 42);
        assert_eq!(run(&mut cx, write_op(f, PAGE_SIZE)), After::Block);
        assert_eq!(cx.blockers(), vec![Blocker::Request { id: 42, why: Why::DataPage }]);
    }

    #[test]
    fn fsync_writes_back_allocates_and_waits_for_its_pages_then_the_commit() {
        let mut cx = fake();
        let f = cx.file("/data/a");
        run(&mut cx, write_op(f, 2 * PAGE_SIZE));
        // Stage 0: the dirty pages go out as one run after delayed allocation; stage 1 waits
        // for them (D_sync).
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 0, datasync: false, from: 0, to: 0 }), After::Block);
        assert_eq!(cx.runs.len(), 1);
        assert!(cx.runs[0].2, "a write run");
        assert_eq!(cx.fs.inodes[f as usize].allocated(), 2);
        assert!(matches!(cx.blockers()[0], Blocker::Request { why: Why::SyncWriteback, .. }));
        // Pages written: stage 2 waits for the commit of the transaction holding the inode.
        for i in 0..2 {
            let p = cx.pc.lookup(f, i).unwrap();
            cx.pc.end_writeback(p);
        }
        let txn = cx.fs.inodes[f as usize].meta_txn.unwrap();
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 1, datasync: false, from: 0, to: u32::MAX }), After::Block);
        assert_eq!(cx.blockers()[1], Blocker::Commit { txn });
        assert!(cx.jn.running.fg_forced, "an FG fsync marks the transaction");
        assert_eq!(cx.jn.commit_requested, txn);
    }

    #[test]
    fn a_truncate_holds_the_inode_lock_and_writers_wait_for_it() {
        // Regression: without the lock, a writer appending to the file kept adding pages
        // while a creat(O_TRUNC) dropped them, and the truncate never finished.
        let mut cx = fake();
        let f = cx.file("/data/a");
        run(&mut cx, write_op(f, 2 * PAGE_SIZE));
        cx.fs.inodes[f as usize].truncating = Some(7); // another task truncates
        assert_eq!(run(&mut cx, write_op(f, PAGE_SIZE)), After::Block);
        assert_eq!(cx.blockers().last(), Some(&Blocker::Inode { file: f }));
        // Our own truncate takes the lock when free, drops the pages and releases it.
        cx.fs.inodes[f as usize].truncating = None;
        run(&mut cx, FileOp::Meta { file: f, kind: MetaKind::Truncate(0), stage: 0 });
        assert_eq!(cx.fs.inodes[f as usize].truncating, None, "released");
        assert!(cx.pc.lookup(f, 0).is_none(), "pages dropped");
    }

    #[test]
    fn fsync_waits_for_the_commit_it_chose_even_if_the_inode_changes_again() {
        // ext4_sync_file reads i_sync_tid once: a writer re-dirtying the inode during the wait
        // must not make the fsync wait for the next commit, and the next (regression: a busy
        // writer of the same file starved an fsync for the whole run).
        let mut cx = fake();
        let f = cx.file("/data/a");
        run(&mut cx, write_op(f, PAGE_SIZE));
        let txn = 5;
        cx.fs.inodes[f as usize].meta_txn = Some(txn);
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 2, datasync: false, from: 0, to: 0 }), After::Block);
        assert_eq!(cx.blockers().last(), Some(&Blocker::Commit { txn }));
        // The commit of `txn` completes while another task put the inode in a later one.
        cx.jn.committed = txn;
        cx.fs.inodes[f as usize].meta_txn = Some(txn + 1);
        let blocked = cx.blocked.len();
        let op = cx.op.clone().expect("the fsync is still in progress");
        assert_eq!(run(&mut cx, op), After::Step, "done after its commit");
        assert_eq!(cx.blocked.len(), blocked, "no second wait");
    }

    #[test]
    fn fsync_with_nothing_to_commit_flushes_the_device_cache() {
        let mut cx = fake();
        let f = cx.file("/data/a");
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 0, datasync: true, from: 0, to: 0 }), After::Block);
        assert_eq!(cx.control().iter().map(|c| c.0).collect::<Vec<_>>(), vec![ReqOp::Flush]);
    }

    /// An ext4 without a journal (`FsParams::journal = false`, twin21): the fsync writes the
    /// file's pages, then its inode and (new file) directory block in place and waits for them,
    /// then flushes; nothing goes to the journal. An fdatasync after an overwrite writes the
    /// inode again, as the twin's trace shows; one with nothing changed only flushes.
    #[test]
    fn without_a_journal_fsync_writes_the_inode_and_directory_in_place_then_flushes() {
        let mut cx = fake();
        cx.fs.params.journal = false;
        let f = cx.file("/data/a");
        let (itable, dir) = (cx.fs.inodes[f as usize].itable_block, cx.fs.inodes[f as usize].dir_block);
        assert!(!cx.fs.inodes[f as usize].journaled() && cx.fs.inodes[f as usize].ext4());
        assert_eq!(run(&mut cx, FileOp::Meta { file: f, kind: MetaKind::Creat, stage: 0 }), After::Step);
        run(&mut cx, write_op(f, 2 * PAGE_SIZE));
        assert!(cx.jn.running.is_empty(), "nothing filed in the journal: {:?}", cx.jn.running.meta);
        assert_eq!(cx.fs.inodes[f as usize].size, 2 * PAGE_SIZE);
        // Stage 0: the pages (allocated without a transaction), waited for in stage 1.
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 0, datasync: false, from: 0, to: 0 }), After::Block);
        assert_eq!(cx.fs.inodes[f as usize].allocated(), 2);
        assert!(cx.jn.running.is_empty(), "write-back filed nothing either");
        for i in 0..2 {
            let p = cx.pc.lookup(f, i).unwrap();
            cx.pc.end_writeback(p);
        }
        // Stage 2: the inode and directory blocks, waited for; then the flush.
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 1, datasync: false, from: 0, to: u32::MAX }), After::Block);
        let writes: Vec<_> = cx.control().iter().filter(|c| c.0 == ReqOp::Write).map(|c| c.1).collect();
        assert_eq!(writes, vec![itable, dir]);
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 11, datasync: false, from: 0, to: 0 }), After::Block);
        assert_eq!(cx.control().last().map(|c| c.0), Some(ReqOp::Flush));
        assert_eq!(cx.jn.commit_requested, 0, "no commit asked for");
        // An overwrite marks the inode again: the fdatasync writes it (and not the directory).
        cx.complete_all();
        let before = cx.control().len();
        run(&mut cx, write_op(f, PAGE_SIZE));
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 2, datasync: true, from: 0, to: 0 }), After::Block);
        assert_eq!(cx.control()[before..].iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), vec![(ReqOp::Write, itable)]);
        // Nothing changed since: only the flush.
        let before = cx.control().len();
        assert_eq!(run(&mut cx, FileOp::Fsync { file: f, stage: 2, datasync: true, from: 0, to: 0 }), After::Block);
        assert_eq!(cx.control()[before..].iter().map(|c| c.0).collect::<Vec<_>>(), vec![ReqOp::Flush]);
    }

    #[test]
    fn truncate_drops_pages_and_frees_the_extents_for_discard() {
        let mut cx = fake();
        let f = cx.file("/data/a");
        cx.fs.allocate(f, 0, 16, &mut Vec::new());
        cx.fs.inodes[f as usize].size = 16 * BLOCK;
        run(&mut cx, write_op(f, PAGE_SIZE));
        assert_eq!(run(&mut cx, FileOp::Meta { file: f, kind: MetaKind::Truncate(0), stage: 0 }), After::Step);
        assert_eq!(cx.pc.nr_dirty, 0, "the dirty page was dropped");
        let ino = &cx.fs.inodes[f as usize];
        assert_eq!((ino.size, ino.allocated()), (0, 0));
        let freed: u64 = cx.jn.running.freed.iter().map(|e| e.1).sum();
        assert_eq!(freed, 16, "discarded after the commit");
    }
}
