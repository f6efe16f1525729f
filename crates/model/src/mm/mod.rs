//! The page cache: pages per file with their states, per-app active/inactive LRU lists of page
//! runs, dirty bookkeeping for write-back, and the reclaim victim choice.
//!
//! A page is named by its file and index ([`PageRef`]). It is *uptodate* once read (or fully
//! written), *dirty* after a buffered write, under *writeback* while a write request holds it,
//! and *locked* while a read request fills it; `io` names that request so waiters can find it.
//!
//! LRU: each app (uid) has its own active and inactive list, stamped with a global access
//! counter, so the stock global order (oldest inactive page first, whatever its app) and
//! FastTrack's order (background apps' pages first) are both cheap: a victim search looks only at
//! the tails of a few lists. A page's first access marks it referenced; an access to a
//! referenced inactive page moves it to the active list; no other access moves a page. The
//! active list is aged into the inactive one when it outgrows it (`inactive_is_low`). Reclaim
//! takes inactive tails: a clean one is evicted, referenced or not; a dirty, locked or
//! under-writeback one rotates to the head and waits for write-back.
//!
//! # Runs (how the bookkeeping is kept)
//! The lists hold *runs*, not pages: consecutive pages of one file that lie next to each other
//! in one list with consecutive stamps (page `first + k` has stamp `stamp + k`, `k` places
//! nearer the head), as a read's pages are after it inserts them in index order. A run is split
//! only where the per-page order says its pages part: a page activated, rotated or removed from
//! its middle. Pages put at a list's head that continue its head run (the next index, the next
//! stamp) join it, so a streamed file stays one run however many reads fill it. The pages'
//! states are bitmaps per file ([`PageSet`]: cached, uptodate, locked, dirty, under write-back,
//! referenced), and a dense array per file maps an index to its run and its request.
//!
//! This is the old per-page model's behaviour exactly, not an approximation of it: every run
//! operation does what the per-page operations in index order did, and reclaim evicts in one go
//! the clean pages at an inactive tail that the following passes would have taken one by one
//! (those older than every other app's candidate). The per-page cache is kept as a test-only
//! reference (`reference.rs`), and a proptest runs random operation sequences, range operations
//! included, on both and compares every page's state, every eviction and every counter.
//!
//! # Costs
//! - Lookup and state tests: a slot and a bit per page, on dense arrays (no per-page struct).
//! - Insert, lock, fill, write-back start: one run or list operation per call plus a bit (or a
//!   word, for write-back and the cached set) per page. Eviction of a streamed run: one list
//!   operation and a few words of bitmap per pass, however many pages it frees.
//! - Victim choice: a min-heap of `(tail stamp, app)` per class for the call, so each pass costs
//!   O(log apps), not a visit to every app's tail.
//!
//! # Simplifications
//! - The LRU follows the kernel's two-list rules for unmapped file pages:
//!   `folio_mark_accessed` (`mark_page_accessed` on the phones' kernels) for accesses,
//!   `folio_check_references` (`page_check_references`) at the inactive tail, where a clean
//!   page whose only reference is `PG_referenced` is reclaimed (`FOLIOREF_RECLAIM_CLEAN`), and
//!   `shrink_active_list` for aging, which leaves `PG_referenced` alone. Not modelled: mapped
//!   pages and their PTE young bits (the kernel keeps a referenced executable mapping active,
//!   `VM_EXEC`), refault detection (workingset shadow entries), the multi-generational LRU, and
//!   the per-CPU batches that delay LRU moves: a move here takes effect at once.
//! - Runs are a bookkeeping device, not the kernel's large folios: a run's pages keep their own
//!   states and are aged, rotated and evicted one by one exactly as 4 KiB pages are.
//! - A file's `dirtied_at` is that of its first dirty page, kept until the file has no dirty
//!   page left (the kernel's inode `dirtied_when` behaves the same way).
//!
//! # Speed (read before optimising)
//! - Runs (2026-11-25). With the per-page cache, `switch-upload --bg-apps 6` (six uploaders
//!   streaming ~80,000 pages per simulated second) cost 80–90 ns per page, three quarters of it
//!   here: per-page slab entries missed in cache when reclaim reached them, list surgery on
//!   neighbour pages, one bitmap update per page and state change. Runs and bitmaps made that
//!   whole process 4.2× faster (7 paired whole-process runs, median wall 0.239×: 77 ms against 331 ms
//!   for 60 simulated seconds, about 780× real time; the speed bench printed 520–810× over
//!   its runs on this noisy VM, 15 ns per page), with 10 instead of 17 MB peak RSS; 4.4× (0.227×,
//!   81 against 360 ms) once the switch's code reads became page faults. The last
//!   steps that mattered were batch ones at the callers: a read's pages inserted as one run,
//!   locked and filled per request, copied per stretch of ready pages, mapped a stretch of
//!   consecutive blocks at a time, and truncate and drop_caches removing ranges. Outputs are
//!   byte-identical: `scripts/sim-golden` (47 runs and a Perfetto trace), the Revisiting
//!   Storage sweep and the Cells, WebBench, RLBench, install, launch and trace-replay runs.
//! - Per event (2026-11-25, later). What was left then was per event, not per page: the event
//!   queue's pop, the CPU scheduler, the block layer and device, reclaim's per-call set-up.
//!   Here: reclaim's first pass takes its victim from one scan of the apps (heaps only when a
//!   second pass follows: kswapd's batches of 32 mostly end after one), `forget` clears the
//!   three state sets in one pass over the range and the slots only where cached pages are,
//!   range masks and bit counts are computed per range (baseline x86-64 counts bits in
//!   software). With the other crates' share (sorted-Vec run queues and CFQ sets, the event
//!   queue's front slot, integer core speeds, Fx-hashed merges), `switch-upload --bg-apps 6`
//!   went from 819 to 608 M instructions (cachegrind) and 0.77× the wall time. What remains is
//!   spread thin: reclaim's scan of the apps (~7 % of instructions, growing with the number
//!   of apps: 8 BG apps cost 1.7–1.8× per page what 1 does), the run loop, CFQ's add and
//!   dispatch, the CPU scheduler's accounting, the device's service-time draw; under `perf`
//!   the frontend (instruction-cache misses across the layers' code) weighs as much as any
//!   one function.
//! - Tried and dropped (per event): fat LTO with one codegen unit (0.99× wall, slower
//!   builds), one codegen unit alone (1.07×), `opt-level = "s"` (1.36×), a quaternary heap
//!   for the event queue (0.2 % fewer instructions: not worth a dependency), cold-path
//!   attributes on the run loop's rare arms (no change).
//! - The kernel's rules (2026-11-24). Before, every access moved a page to its list's head and
//!   a referenced inactive tail got a second chance on the active list, so a streamed page was
//!   linked once, moved three times (the access, the second chance, the aging) and unlinked
//!   once; now it is linked and unlinked only. That made the per-page cache 1.6× faster. Of the
//!   48 runs of `scripts/sim-golden`, the 11 under memory pressure changed; launch-update and
//!   camera-switch under `android`/`fasttrack` did not.
//! - Tried and dropped (per-page cache): LRU lists as queues with holes (`VecDeque` of page
//!   ids), so that a move writes one queue entry instead of two neighbour pages. Outputs stayed
//!   byte-identical, but it ran 16 % slower and with 28 MiB instead of 17 MiB peak RSS.

pub mod host;
pub mod pageset;
pub mod reclaim;
#[cfg(test)]
mod reference;
pub mod throttle;
pub mod writeback;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use forefront_engine::SimTime;

pub use self::pageset::PageSet;
use crate::block::ReqId;
use crate::prov::Uid;

pub type FileId = u32;
pub const PAGE_SIZE: u64 = 4096;
/// A run's slot in [`PageCache`]'s run slab.
type RunId = u32;
const NIL: RunId = RunId::MAX;

/// A cached page, named by its file and index (what the kernel's `(mapping, index)` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageRef {
    pub file: FileId,
    pub index: u32,
}

/// A cached page's state (read from the file's bitmaps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageState {
    /// Read, or fully written.
    pub uptodate: bool,
    /// A read request is filling it.
    pub locked: bool,
    /// Written by a buffered write, not yet under write-back.
    pub dirty: bool,
    /// A write request holds it.
    pub writeback: bool,
    /// The request that locked it or writes it back.
    pub io: Option<ReqId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    Active,
    Inactive,
}

/// Consecutive pages of one file, adjacent in one LRU list with consecutive stamps: page
/// `first + k` has stamp `stamp + k` and lies `k` places nearer the list's head than `first`.
#[derive(Clone, Copy, Debug)]
struct Run {
    file: FileId,
    first: u32,
    len: u32,
    /// The stamp of page `first`, the run's tail-most page.
    stamp: u64,
    /// Neighbour runs: `prev` towards the list's head (newer), `next` towards its tail.
    prev: RunId,
    next: RunId,
    /// Slot of the owner's LRU lists.
    app: u16,
    list: List,
}

#[derive(Clone, Copy, Debug, Default)]
struct Lru {
    head: RunId,
    tail: RunId,
    /// Pages (not runs) on the list.
    len: u32,
}

impl Lru {
    const EMPTY: Lru = Lru { head: NIL, tail: NIL, len: 0 };
}

#[derive(Clone, Copy, Debug)]
struct AppLru {
    uid: Uid,
    active: Lru,
    inactive: Lru,
    /// Pages that cannot be evicted now (dirty, under write-back or locked for a read).
    busy: u32,
}

impl AppLru {
    fn clean(&self) -> u32 {
        self.active.len + self.inactive.len - self.busy
    }
}

/// What [`PageCache::reclaim`] achieved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    pub freed: u64,
    /// Background-first order stopped because the only background pages left are dirty or
    /// under I/O: the caller writes them back and waits rather than evicting foreground pages.
    pub bg_busy: bool,
}

/// One file's cached pages: which run holds each index, and the pages' states as bitmaps.
#[derive(Default, Clone, Debug)]
pub struct FileCache {
    /// Page index → the run holding it, `NIL` where not cached (a dense map: lookups are the
    /// hot path).
    slots: Vec<RunId>,
    /// Page index → the request that locked it or writes it back (meaningful only where
    /// `locked` or `writeback` holds the index).
    io: Vec<ReqId>,
    pub nr_pages: u32,
    /// Indices of cached pages (truncate and drop_caches walk these, not every slot).
    cached: PageSet,
    uptodate: PageSet,
    locked: PageSet,
    /// Indices of dirty pages, for write-back in file order.
    pub dirty: PageSet,
    /// Indices of pages under write-back (fsync waits for the first one).
    pub writeback: PageSet,
    /// `PG_referenced`.
    referenced: PageSet,
    /// When the oldest dirty page of this file was dirtied (for dirty_expire); mirrored in
    /// [`PageCache::oldest_dirty_file`]'s index.
    dirtied_at: Option<SimTime>,
}

impl FileCache {
    fn busy(&self, i: u32) -> bool {
        self.dirty.contains(i) || self.writeback.contains(i) || self.locked.contains(i)
    }
    /// Busy pages among `lo..hi`.
    fn busy_count(&self, lo: u32, hi: u32) -> u32 {
        PageSet::union_count_range(&[&self.dirty, &self.writeback, &self.locked], lo, hi)
    }
    /// The first busy page in `lo..hi`, a word at a time.
    fn first_busy_in(&self, lo: u32, hi: u32) -> Option<u32> {
        let mut i = lo;
        while i < hi {
            let (w, b) = ((i / 64) as usize, i % 64);
            let busy = (self.dirty.word(w) | self.writeback.word(w) | self.locked.word(w)) >> b;
            if busy != 0 {
                let at = i + busy.trailing_zeros();
                return (at < hi).then_some(at);
            }
            i += 64 - b;
        }
        None
    }
    fn run_of(&self, i: u32) -> RunId {
        self.slots[i as usize]
    }
}

/// Whether every id of `ids` is `id`: without `all`'s early exit, so the compiler compares
/// several at a time (a request's pages are checked on every completion).
fn all_eq(ids: &[ReqId], id: ReqId) -> bool {
    ids.iter().fold(true, |acc, &r| acc & (r == id))
}

/// Per-call candidates of [`PageCache::reclaim`]: a min-heap of `(tail stamp, app)` per class,
/// so that choosing the next victim list costs O(log apps), not a scan of every app.
type Candidates = BinaryHeap<Reverse<(u64, u16)>>;

/// Which pages reclaim looks at first: the policy's reclaim-order seam.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimOrder {
    /// One global LRU order, whatever the app (stock).
    Global,
    /// Background apps' pages first; foreground pages only when no background page is
    /// reclaimable (FastTrack's Page Reclaimer: BG clean → BG dirty → FG clean → FG dirty).
    BackgroundFirst,
}

pub struct PageCache {
    runs: Vec<Run>,
    free_runs: Vec<RunId>,
    pub files: Vec<FileCache>,
    /// `(dirtied_at, file)` of every file with dirty pages: the flusher's oldest-first choice
    /// without a scan of every file.
    dirty_files: BTreeSet<(SimTime, FileId)>,
    /// Per-app lists, indexed by [`Run::app`]; `app_index` maps a uid to its slot.
    lrus: Vec<AppLru>,
    app_index: BTreeMap<Uid, u16>,
    /// The last uid looked up in `app_index` and its slot (inserts come in runs of one owner).
    last_app: Option<(Uid, u16)>,
    /// The access clock: a page's stamp is the clock when it was last put at a list's head
    /// (inserted, activated, rotated); aging keeps it.
    clock: u64,
    /// Reused by [`PageCache::reclaim`] (no allocation per call): candidates per class, and
    /// whether each app is foreground.
    scratch: [Candidates; 2],
    scratch_fg: Vec<bool>,
    /// Pages the cache may hold (memory available to it).
    pub capacity: u64,
    pub nr_pages: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    /// Pages inserted over the run (a measure of page-cache work, for speed figures).
    pub inserted: u64,
    pub evicted: u64,
    /// Evictions of pages owned by an app that was foreground at the time.
    pub evicted_fg: u64,
    /// Of those, evictions made while a background app still had an evictable page.
    pub evicted_fg_while_bg_clean: u64,
    /// Pages that became dirty, and pages whose write-back completed, over the run (the
    /// kernel's `BDI_DIRTIED` and `BDI_WRITTEN`, read by dirty throttling).
    pub dirtied: u64,
    pub written: u64,
}

impl PageCache {
    pub fn new(capacity_pages: u64) -> Self {
        PageCache {
            runs: Vec::new(),
            free_runs: Vec::new(),
            files: Vec::new(),
            dirty_files: BTreeSet::new(),
            lrus: Vec::new(),
            app_index: BTreeMap::new(),
            last_app: None,
            clock: 0,
            scratch: [Candidates::new(), Candidates::new()],
            scratch_fg: Vec::new(),
            capacity: capacity_pages.max(64),
            nr_pages: 0,
            nr_dirty: 0,
            nr_writeback: 0,
            inserted: 0,
            evicted: 0,
            evicted_fg: 0,
            evicted_fg_while_bg_clean: 0,
            dirtied: 0,
            written: 0,
        }
    }

    pub fn add_file(&mut self) -> FileId {
        self.files.push(FileCache::default());
        (self.files.len() - 1) as FileId
    }

    // ------------------------------------------------------------------ queries

    pub fn lookup(&self, file: FileId, index: u32) -> Option<PageRef> {
        match self.files[file as usize].slots.get(index as usize) {
            Some(&r) if r != NIL => Some(PageRef { file, index }),
            _ => None,
        }
    }
    /// The request that locked cached page `p` or writes it back, if any (`page(p).io`
    /// without the rest of the state).
    pub fn io_of(&self, p: PageRef) -> Option<ReqId> {
        let f = &self.files[p.file as usize];
        (f.locked.contains(p.index) || f.writeback.contains(p.index)).then(|| f.io[p.index as usize])
    }
    /// The state of cached page `p`.
    pub fn page(&self, p: PageRef) -> PageState {
        let f = &self.files[p.file as usize];
        debug_assert!(f.cached.contains(p.index), "page {p:?} is not cached");
        let (locked, writeback) = (f.locked.contains(p.index), f.writeback.contains(p.index));
        PageState {
            uptodate: f.uptodate.contains(p.index),
            locked,
            dirty: f.dirty.contains(p.index),
            writeback,
            io: (locked || writeback).then(|| f.io[p.index as usize]),
        }
    }
    /// How many pages from `index` on (at most `max`) are cached, uptodate and not locked: what
    /// a read copies without waiting.
    pub fn ready_pages(&self, file: FileId, index: u32, max: u32) -> u32 {
        let f = &self.files[file as usize];
        let mut n = 0;
        while n < max {
            let i = index + n;
            let (w, b) = ((i / 64) as usize, i % 64);
            let ready = (f.cached.word(w) & f.uptodate.word(w) & !f.locked.word(w)) >> b;
            let ones = (!ready).trailing_zeros();
            n += ones;
            if ones < 64 - b {
                break;
            }
        }
        n.min(max)
    }
    /// The first cached page of `file` from index `first` on.
    pub fn next_cached(&self, file: FileId, first: u32) -> Option<u32> {
        self.files[file as usize].cached.iter_from(first).next()
    }
    /// How many pages of `lo..hi` of `file` are cached.
    pub fn cached_count(&self, file: FileId, lo: u32, hi: u32) -> u32 {
        self.files[file as usize].cached.count_range(lo, hi)
    }
    /// The uid owning page `p`.
    pub fn owner(&self, p: PageRef) -> Uid {
        let r = self.files[p.file as usize].run_of(p.index);
        self.lrus[self.runs[r as usize].app as usize].uid
    }
    /// Cached pages of `file` from page index `first` on, in index order (at the cost of the
    /// cached pages, not of the file's size).
    pub fn file_pages_from(&self, file: FileId, first: u32) -> impl Iterator<Item = PageRef> + '_ {
        self.files[file as usize].cached.iter_from(first).map(move |index| PageRef { file, index })
    }
    /// When the oldest dirty page of `file` was dirtied, if it has dirty pages.
    pub fn dirtied_at(&self, file: FileId) -> Option<SimTime> {
        self.files[file as usize].dirtied_at
    }
    /// The file dirtied longest ago (lowest id among equals), with that time.
    pub fn oldest_dirty_file(&self) -> Option<(SimTime, FileId)> {
        self.dirty_files.first().copied()
    }
    /// The first page of `file` (in index order) under write-back.
    pub fn first_writeback(&self, file: FileId) -> Option<PageRef> {
        self.files[file as usize].writeback.first().map(|index| PageRef { file, index })
    }

    pub fn free_pages(&self) -> u64 {
        self.capacity.saturating_sub(self.nr_pages)
    }

    /// Whether any background app has a page that could be evicted now.
    pub fn bg_clean_pages(&self, is_fg: &impl Fn(Uid) -> bool) -> u64 {
        self.lrus.iter().filter(|l| !is_fg(l.uid)).map(|l| u64::from(l.clean())).sum()
    }

    // ------------------------------------------------------------------ insertion and access

    fn app_slot(&mut self, owner: Uid) -> u16 {
        if let Some((uid, a)) = self.last_app {
            if uid == owner {
                return a;
            }
        }
        let a = match self.app_index.get(&owner) {
            Some(&a) => a,
            None => {
                let a = self.lrus.len() as u16;
                self.lrus.push(AppLru { uid: owner, active: Lru::EMPTY, inactive: Lru::EMPTY, busy: 0 });
                self.app_index.insert(owner, a);
                a
            }
        };
        self.last_app = Some((owner, a));
        a
    }

    /// Insert a new (not uptodate) page; the caller made room first.
    pub fn insert(&mut self, file: FileId, index: u32, owner: Uid) -> PageRef {
        self.insert_run(file, index, 1, owner);
        PageRef { file, index }
    }

    /// Insert `n` new (not uptodate) pages from `first`, as `n` calls of [`PageCache::insert`]
    /// in index order would; the caller made room first.
    pub fn insert_run(&mut self, file: FileId, first: u32, n: u32, owner: Uid) {
        if n == 0 {
            return;
        }
        let app = self.app_slot(owner);
        let stamp = self.clock + 1;
        self.clock += u64::from(n);
        let end = first + n;
        let f = &mut self.files[file as usize];
        if f.slots.len() < end as usize {
            f.slots.resize(end as usize, NIL);
            f.io.resize(end as usize, 0);
        }
        debug_assert!(f.slots[first as usize..end as usize].iter().all(|&r| r == NIL), "page inserted twice");
        let added = f.cached.insert_range(first, end);
        debug_assert_eq!(added, n);
        f.nr_pages += n;
        self.nr_pages += u64::from(n);
        self.inserted += u64::from(n);
        self.link_new(file, first, n, stamp, app, List::Inactive);
    }

    /// A read or write touched the page (`folio_mark_accessed`): a first touch only marks it
    /// referenced; a touch of a referenced inactive page activates it (to the active list's
    /// head). Nothing else moves: a page's place in its list is where it was last put.
    pub fn mark_accessed(&mut self, p: PageRef) {
        self.mark_accessed_range(p.file, p.index, 1);
    }

    /// [`PageCache::mark_accessed`] on pages `first..first + n` (all cached), in index order.
    pub fn mark_accessed_range(&mut self, file: FileId, first: u32, n: u32) {
        let f = &mut self.files[file as usize];
        if f.referenced.count_range(first, first + n) == 0 {
            // None referenced yet (a first read): each only gets its mark.
            f.referenced.insert_range(first, first + n);
            return;
        }
        for i in first..first + n {
            let f = &mut self.files[file as usize];
            if !f.referenced.insert(i) {
                let r = f.run_of(i);
                if self.runs[r as usize].list == List::Inactive {
                    f.referenced.remove(i);
                    self.clock += 1;
                    let app = self.detach(file, i);
                    self.link_new(file, i, 1, self.clock, app, List::Active);
                }
            }
        }
    }

    pub fn set_uptodate(&mut self, p: PageRef) {
        self.files[p.file as usize].uptodate.insert(p.index);
    }

    /// [`PageCache::set_uptodate`] on pages `first..first + n`.
    pub fn set_uptodate_range(&mut self, file: FileId, first: u32, n: u32) {
        self.files[file as usize].uptodate.insert_range(first, first + n);
    }

    // ------------------------------------------------------------------ I/O states

    /// Count `file`'s page `i` as busy (`became_busy`) or idle again in its owner's lists.
    fn busy_add(&mut self, file: FileId, i: u32, became_busy: bool) {
        let r = self.files[file as usize].run_of(i);
        let l = &mut self.lrus[self.runs[r as usize].app as usize];
        if became_busy {
            l.busy += 1;
        } else {
            l.busy -= 1;
        }
    }

    /// Add to each owner's busy count, for the cached pages of `lo..hi` of `file`, what
    /// `delta(segment)` says for each stretch of them that one run holds.
    fn busy_add_range(&mut self, file: FileId, lo: u32, hi: u32, delta: impl Fn(&FileCache, u32, u32) -> i64) {
        let mut i = lo;
        while i < hi {
            let f = &self.files[file as usize];
            let id = f.slots.get(i as usize).copied().unwrap_or(NIL);
            if id == NIL {
                match f.cached.iter_from(i).next() {
                    Some(a) if a < hi => {
                        i = a;
                        continue;
                    }
                    _ => break,
                }
            }
            let run = self.runs[id as usize];
            let end = hi.min(run.first + run.len);
            let d = delta(f, i, end);
            let l = &mut self.lrus[run.app as usize];
            l.busy = (i64::from(l.busy) + d) as u32;
            i = end;
        }
    }

    /// A read request `req` will fill the page: it is locked until [`PageCache::fill_done`].
    pub fn lock_for_read(&mut self, p: PageRef, req: ReqId) {
        self.lock_range(p.file, p.index, 1, req);
    }

    /// [`PageCache::lock_for_read`] on pages `first..first + n`.
    pub fn lock_range(&mut self, file: FileId, first: u32, n: u32, req: ReqId) {
        let end = first + n;
        // Pages that were not busy become so.
        self.busy_add_range(file, first, end, |f, lo, hi| i64::from(hi - lo) - i64::from(f.busy_count(lo, hi)));
        let f = &mut self.files[file as usize];
        f.locked.insert_range(first, end);
        f.io[first as usize..end as usize].fill(req);
    }

    /// The page's read completed: uptodate and unlocked.
    pub fn fill_done(&mut self, p: PageRef) {
        let f = &mut self.files[p.file as usize];
        let was = f.busy(p.index);
        f.locked.remove(p.index);
        f.uptodate.insert(p.index);
        if was && !f.busy(p.index) {
            self.busy_add(p.file, p.index, false);
        }
    }

    /// Read request `req` completed: [`PageCache::fill_done`] on those of pages
    /// `first..first + n` still cached and locked by it.
    pub fn fill_range(&mut self, file: FileId, first: u32, n: u32, req: ReqId) {
        let end = first + n;
        let f = &self.files[file as usize];
        if f.locked.count_range(first, end) == n && all_eq(&f.io[first as usize..end as usize], req) {
            // All of them (the usual case): busy pages that only the lock made busy become idle.
            self.busy_add_range(file, first, end, |f, lo, hi| {
                -(i64::from(hi - lo) - i64::from(PageSet::union_count_range(&[&f.dirty, &f.writeback], lo, hi)))
            });
            let f = &mut self.files[file as usize];
            f.locked.remove_range(first, end);
            f.uptodate.insert_range(first, end);
            return;
        }
        for i in first..end {
            let f = &self.files[file as usize];
            if f.locked.contains(i) && f.io[i as usize] == req {
                self.fill_done(PageRef { file, index: i });
            }
        }
    }

    pub fn set_dirty(&mut self, p: PageRef, now: SimTime) {
        let (file, index) = (p.file, p.index);
        let f = &mut self.files[file as usize];
        let was = f.busy(index);
        if !f.dirty.insert(index) {
            return;
        }
        self.nr_dirty += 1;
        self.dirtied += 1;
        if f.dirtied_at.is_none() {
            f.dirtied_at = Some(now);
            self.dirty_files.insert((now, file));
        }
        if !was {
            self.busy_add(file, index, true);
        }
    }

    /// Write-back starts: dirty → writeback under request `req`.
    pub fn start_writeback(&mut self, p: PageRef, req: ReqId) {
        self.start_writeback_range(p.file, p.index, 1, req);
    }

    /// [`PageCache::start_writeback`] on pages `first..first + n` (all dirty, none under
    /// write-back).
    pub fn start_writeback_range(&mut self, file: FileId, first: u32, n: u32, req: ReqId) {
        if n == 0 {
            return;
        }
        let f = &mut self.files[file as usize];
        debug_assert_eq!(f.dirty.count_range(first, first + n), n);
        debug_assert_eq!(f.writeback.count_range(first, first + n), 0);
        f.dirty.remove_range(first, first + n);
        f.writeback.insert_range(first, first + n);
        f.io[first as usize..(first + n) as usize].fill(req);
        self.nr_dirty -= u64::from(n);
        self.nr_writeback += u64::from(n);
        if f.dirty.is_empty() {
            let at = f.dirtied_at.take().expect("a dirty file has its time");
            self.dirty_files.remove(&(at, file));
        }
    }

    pub fn end_writeback(&mut self, p: PageRef) {
        let f = &mut self.files[p.file as usize];
        let was = f.writeback.remove(p.index);
        debug_assert!(was, "page {p:?} is not under write-back");
        self.nr_writeback -= 1;
        self.written += 1;
        if !f.busy(p.index) {
            self.busy_add(p.file, p.index, false);
        }
    }

    /// Write request `req` completed: [`PageCache::end_writeback`] on those of pages
    /// `first..first + n` still cached and written by it.
    pub fn end_writeback_range(&mut self, file: FileId, first: u32, n: u32, req: ReqId) {
        let end = first + n;
        let f = &self.files[file as usize];
        if f.writeback.count_range(first, end) == n && all_eq(&f.io[first as usize..end as usize], req) {
            // All of them (the usual case): pages neither re-dirtied nor locked become idle.
            self.busy_add_range(file, first, end, |f, lo, hi| {
                -(i64::from(hi - lo) - i64::from(PageSet::union_count_range(&[&f.dirty, &f.locked], lo, hi)))
            });
            self.files[file as usize].writeback.remove_range(first, end);
            self.nr_writeback -= u64::from(n);
            self.written += u64::from(n);
            return;
        }
        for i in first..end {
            let f = &self.files[file as usize];
            if f.writeback.contains(i) && f.io[i as usize] == req {
                self.end_writeback(PageRef { file, index: i });
            }
        }
    }

    /// Remove a page (truncate, unlink, eviction). It must be unlocked and not under writeback.
    pub fn remove(&mut self, p: PageRef) {
        let (file, index) = (p.file, p.index);
        let f = &self.files[file as usize];
        debug_assert!(!f.locked.contains(index) && !f.writeback.contains(index));
        if f.dirty.contains(index) {
            self.busy_add(file, index, false);
            self.nr_dirty -= 1;
            let f = &mut self.files[file as usize];
            f.dirty.remove(index);
            if f.dirty.is_empty() {
                let at = f.dirtied_at.take().expect("a dirty file has its time");
                self.dirty_files.remove(&(at, file));
            }
        }
        self.detach(file, index);
        self.forget(file, index, index + 1);
    }

    /// Remove every cached page of `file` in `lo..hi` (as [`PageCache::remove`] on each; none
    /// may be locked or under write-back); returns how many there were.
    pub fn remove_range(&mut self, file: FileId, lo: u32, hi: u32) -> u32 {
        let f = &self.files[file as usize];
        let hi = hi.min(f.slots.len() as u32);
        if lo >= hi {
            return 0;
        }
        debug_assert_eq!(PageSet::union_count_range(&[&f.locked, &f.writeback], lo, hi), 0);
        let dirty = f.dirty.count_range(lo, hi);
        if dirty > 0 {
            self.busy_add_range(file, lo, hi, |f, a, b| -i64::from(f.dirty.count_range(a, b)));
            self.nr_dirty -= u64::from(dirty);
            let f = &mut self.files[file as usize];
            f.dirty.remove_range(lo, hi);
            if f.dirty.is_empty() {
                let at = f.dirtied_at.take().expect("a dirty file has its time");
                self.dirty_files.remove(&(at, file));
            }
        }
        // Out of their runs, a run's worth at a time.
        let mut i = lo;
        while let Some(a) = self.files[file as usize].cached.iter_from(i).next().filter(|&a| a < hi) {
            let id = self.files[file as usize].run_of(a);
            let r = self.runs[id as usize];
            let b = hi.min(r.first + r.len);
            if a == r.first {
                self.detach_front(id, b - a);
            } else if b == r.first + r.len {
                self.runs[id as usize].len -= b - a;
                self.lru_mut(r.app, r.list).len -= b - a;
            } else {
                self.detach(file, a); // splits the run after `a`
                if b > a + 1 {
                    let right = self.files[file as usize].run_of(a + 1);
                    self.detach_front(right, b - a - 1);
                }
            }
            i = b;
        }
        let before = self.files[file as usize].nr_pages;
        self.forget(file, lo, hi);
        before - self.files[file as usize].nr_pages
    }

    /// The first page of `file` from index `first` on that is dirty, locked or under
    /// write-back.
    pub fn first_busy_from(&self, file: FileId, first: u32) -> Option<PageRef> {
        let f = &self.files[file as usize];
        [&f.dirty, &f.locked, &f.writeback]
            .iter()
            .filter_map(|s| s.iter_from(first).next())
            .min()
            .map(|index| PageRef { file, index })
    }

    /// Remove the clean, idle pages of `file` in `lo..hi`, leaving the dirty, locked and
    /// under-write-back ones (`drop_caches`, `POSIX_FADV_DONTNEED`); returns how many went.
    pub fn remove_clean_range(&mut self, file: FileId, lo: u32, hi: u32) -> u32 {
        let (mut lo, mut n) = (lo, 0);
        while let Some(busy) = self.first_busy_from(file, lo).filter(|b| b.index < hi) {
            n += self.remove_range(file, lo, busy.index);
            lo = busy.index + 1;
        }
        n + self.remove_range(file, lo, hi)
    }

    /// The first page of `file` from index `first` on that is locked or under write-back.
    pub fn first_in_io_from(&self, file: FileId, first: u32) -> Option<PageRef> {
        let f = &self.files[file as usize];
        let a = f.locked.iter_from(first).next();
        let b = f.writeback.iter_from(first).next();
        a.into_iter().chain(b).min().map(|index| PageRef { file, index })
    }

    /// Drop pages `lo..hi` (detached from their runs, clean, unlocked) from the file's maps.
    fn forget(&mut self, file: FileId, lo: u32, hi: u32) {
        let f = &mut self.files[file as usize];
        // Slots of pages not cached are NIL already: only the stretch the cached pages span
        // needs clearing (drop_caches and truncate pass a whole file's range).
        if let Some((a, b)) = f.cached.span() {
            let (a, b) = (lo.max(a), hi.min(b).min(f.slots.len() as u32));
            if a < b {
                f.slots[a as usize..b as usize].fill(NIL);
            }
        }
        let [n, _, _] = PageSet::remove_range_each([&mut f.cached, &mut f.uptodate, &mut f.referenced], lo, hi);
        f.nr_pages -= n;
        self.nr_pages -= u64::from(n);
    }

    // ------------------------------------------------------------------ reclaim

    /// Evict up to `want` clean pages in the policy's order; `is_fg(uid)` classifies owners.
    ///
    /// The list to take the next page from: an app's inactive tail, or its active tail when its
    /// inactive list is empty; only apps with evictable pages count. Stock: the oldest tail
    /// overall. Background-first: the oldest among background apps; when background apps have
    /// only dirty or in-flight pages, stop (they must be written back first); foreground apps
    /// only when no background page is left at all. Each pass changes only the chosen app's
    /// lists. The first pass needs each class's oldest and second-oldest candidate (one scan of
    /// the apps); when more passes follow, the candidates become a heap per class, updated for
    /// the one app each pass changes. A pass that finds clean pages at an inactive tail evicts,
    /// in one go, every page the following passes would take from there: those older than
    /// every other candidate.
    pub fn reclaim(&mut self, want: u64, order: ReclaimOrder, is_fg: impl Fn(Uid) -> bool) -> Reclaimed {
        let mut out = Reclaimed::default();
        // Age the active lists a little on every call (shrink_active_list): apps whose active
        // list outgrew the inactive one move up to 32 pages down, keeping their `referenced`
        // mark (the kernel leaves PG_referenced alone there: one more touch re-activates).
        for app in 0..self.lrus.len() {
            let l = self.lrus[app];
            if l.active.len > l.inactive.len {
                self.deactivate(app, (l.active.len - l.inactive.len).div_ceil(2).min(32));
            }
        }
        if want == 0 {
            return out;
        }
        let bf = order == ReclaimOrder::BackgroundFirst;
        // Classes: 0 = background (or everyone, stock), 1 = foreground.
        let class = |app_fg: bool| usize::from(bf && app_fg);
        // The first pass needs only each class's oldest and second-oldest candidate: one scan.
        // Most calls (kswapd's batches of 32) end after it; the heaps are built only for more.
        let mut oldest: [Option<(u64, usize)>; 2] = [None; 2];
        let mut second = [u64::MAX; 2];
        let mut bg_clean: u64 = 0;
        for app in 0..self.lrus.len() {
            let app_fg = is_fg(self.lrus[app].uid);
            if !app_fg {
                bg_clean += u64::from(self.lrus[app].clean());
            }
            if let Some(stamp) = self.candidate(app) {
                let c = class(app_fg);
                match oldest[c] {
                    Some((s, _)) if s < stamp => second[c] = second[c].min(stamp),
                    o => {
                        second[c] = o.map_or(second[c], |(s, _)| s);
                        oldest[c] = Some((stamp, app));
                    }
                }
            }
        }
        // Each pass evicts, rotates or deactivates at least one page; a page is touched a
        // bounded number of times, so this terminates having freed what could be freed.
        let mut budget = self.nr_pages * 3 + 256;
        let mut bg_idle = false;
        // Which class the next pass takes from (None: stop).
        let next_class = |pc: &Self, bg_left: bool, bg_idle: &mut bool, out: &mut Reclaimed, fg: &dyn Fn(usize) -> bool| {
            if bg_left {
                Some(0)
            } else if bf {
                // No background page is evictable now (and none becomes so while only
                // foreground lists change): busy background pages are written back first.
                if !*bg_idle && (0..pc.lrus.len()).any(|a| !fg(a) && pc.lrus[a].busy > 0) {
                    out.bg_busy = true;
                    return None;
                }
                *bg_idle = true;
                Some(1)
            } else {
                None
            }
        };
        let app_is_fg = |pc: &Self, a: usize| is_fg(pc.lrus[a].uid);
        let Some(c) = next_class(self, oldest[0].is_some(), &mut bg_idle, &mut out, &|a| app_is_fg(self, a)) else {
            return out;
        };
        let Some((_, app)) = oldest[c] else { return out };
        let app_fg = app_is_fg(self, app);
        let clean_before = self.lrus[app].clean();
        budget -= self.reclaim_pass(app, app_fg, &mut out, bg_clean, want, budget, second[c]);
        if out.freed >= want || budget == 0 {
            return out;
        }
        if !app_fg {
            bg_clean = bg_clean + u64::from(self.lrus[app].clean()) - u64::from(clean_before);
        }
        // More passes: a heap of candidates per class, from the lists as they are now.
        let mut fg = std::mem::take(&mut self.scratch_fg);
        fg.clear();
        fg.extend(self.lrus.iter().map(|l| is_fg(l.uid)));
        let mut heaps = std::mem::take(&mut self.scratch);
        for h in &mut heaps {
            h.clear();
        }
        for app in 0..self.lrus.len() {
            if let Some(stamp) = self.candidate(app) {
                heaps[class(fg[app])].push(Reverse((stamp, app as u16)));
            }
        }
        while out.freed < want && budget > 0 {
            let Some(heap) = next_class(self, !heaps[0].is_empty(), &mut bg_idle, &mut out, &|a| fg[a]) else {
                break;
            };
            let Some(&Reverse((_, app))) = heaps[heap].peek() else { break };
            // The next candidate in line (the smaller of the root's children): pages older than
            // it go before it is looked at. Stamps are unique, so the stamp alone orders them.
            let h = heaps[heap].as_slice();
            let runner_up = h[1..h.len().min(3)].iter().map(|r| r.0 .0).min().unwrap_or(u64::MAX);
            let app = app as usize;
            let clean_before = self.lrus[app].clean();
            let left = want - out.freed;
            budget -= self.reclaim_pass(app, fg[app], &mut out, bg_clean, left, budget, runner_up);
            if !fg[app] {
                bg_clean = bg_clean + u64::from(self.lrus[app].clean()) - u64::from(clean_before);
            }
            match self.candidate(app) {
                Some(stamp) => {
                    heaps[heap].peek_mut().expect("peeked").0 = (stamp, app as u16);
                }
                None => {
                    heaps[heap].pop();
                }
            }
        }
        self.scratch = heaps;
        self.scratch_fg = fg;
        out
    }

    /// The app's candidate for the next reclaim pass, if it has an evictable page: the stamp of
    /// the tail it would take from (the inactive list's, or the active one's when the inactive
    /// list is empty).
    fn candidate(&self, app: usize) -> Option<u64> {
        let l = &self.lrus[app];
        if l.clean() == 0 {
            None
        } else if l.inactive.len > 0 {
            Some(self.runs[l.inactive.tail as usize].stamp)
        } else {
            Some(self.runs[l.active.tail as usize].stamp)
        }
    }

    /// Reclaim passes on `app`'s lists (it has an evictable page): one page deactivated or
    /// rotated, or the clean pages at its inactive tail that come before `runner_up` (and
    /// within `want` and `budget`) evicted. Returns the passes made.
    #[allow(clippy::too_many_arguments)] // the reclaim loop's state, passed down
    fn reclaim_pass(
        &mut self,
        app: usize,
        app_fg: bool,
        out: &mut Reclaimed,
        bg_clean: u64,
        want: u64,
        budget: u64,
        runner_up: u64,
    ) -> u64 {
        let lru = self.lrus[app];
        if lru.inactive.len == 0 {
            self.deactivate(app, 1);
            return 1;
        }
        let r = self.runs[lru.inactive.tail as usize];
        let (file, first) = (r.file, r.first);
        if self.files[file as usize].busy(first) {
            // Not reclaimable now: rotate to the head (write-back will clean it).
            // `folio_check_references` clears the referenced mark whatever it decides.
            self.files[file as usize].referenced.remove(first);
            self.clock += 1;
            self.detach(file, first);
            self.link_new(file, first, 1, self.clock, app as u16, List::Inactive);
            return 1;
        }
        // Clean: evicted even if referenced. No page is mapped here, and an unmapped file page
        // whose only reference is its referenced mark is reclaimed (`FOLIOREF_RECLAIM_CLEAN`):
        // a page read once by a streaming reader leaves from the inactive list.
        // The pages that come before the runner-up, within the run, `want` and `budget`, up to
        // the next busy page.
        let before_runner_up = runner_up.saturating_sub(r.stamp).max(1);
        let limit = u64::from(r.len).min(want).min(budget).min(before_runner_up) as u32;
        let k = u64::from(self.files[file as usize].first_busy_in(first + 1, first + limit).map_or(limit, |b| b - first));
        let k32 = k as u32;
        if app_fg {
            self.evicted_fg += k;
            if bg_clean > 0 {
                self.evicted_fg_while_bg_clean += k;
            }
        }
        self.detach_front(lru.inactive.tail, k32);
        self.forget(file, first, first + k32);
        self.evicted += k;
        out.freed += k;
        k
    }

    /// Move `n` pages from the tail of `app`'s active list to the head of its inactive list,
    /// one by one as `shrink_active_list` does (their stamps and marks kept).
    fn deactivate(&mut self, app: usize, mut n: u32) {
        while n > 0 {
            let tail = self.lrus[app].active.tail;
            let r = self.runs[tail as usize];
            if r.len <= n {
                n -= r.len;
                self.unlink(tail);
                self.link(tail, List::Inactive);
            } else {
                let front = self.split_front(tail, n);
                self.link(front, List::Inactive);
                n = 0;
            }
        }
    }

    // ------------------------------------------------------------------ runs and lists

    fn alloc_run(&mut self, run: Run) -> RunId {
        match self.free_runs.pop() {
            Some(id) => {
                self.runs[id as usize] = run;
                id
            }
            None => {
                self.runs.push(run);
                (self.runs.len() - 1) as RunId
            }
        }
    }

    fn lru_mut(&mut self, app: u16, list: List) -> &mut Lru {
        let l = &mut self.lrus[app as usize];
        match list {
            List::Active => &mut l.active,
            List::Inactive => &mut l.inactive,
        }
    }

    /// Put pages `first..first + n` of `file` (in no run) at the head of `app`'s `list` with
    /// stamps from `stamp`: into the head run when they continue it, else as a new run.
    fn link_new(&mut self, file: FileId, first: u32, n: u32, stamp: u64, app: u16, list: List) {
        let head = self.lru_mut(app, list).head;
        let id = if head != NIL && {
            let h = &self.runs[head as usize];
            h.file == file && h.first + h.len == first && h.stamp + u64::from(h.len) == stamp
        } {
            self.runs[head as usize].len += n;
            self.lru_mut(app, list).len += n;
            head
        } else {
            let id = self.alloc_run(Run { file, first, len: n, stamp, prev: NIL, next: NIL, app, list });
            self.link(id, list);
            id
        };
        self.files[file as usize].slots[first as usize..(first + n) as usize].fill(id);
    }

    /// Put run `id` (in no list) at the head of `list` of its app.
    fn link(&mut self, id: RunId, list: List) {
        let (app, len) = {
            let r = &mut self.runs[id as usize];
            r.list = list;
            (r.app, r.len)
        };
        let lru = self.lru_mut(app, list);
        let old_head = lru.head;
        lru.head = id;
        if lru.tail == NIL {
            lru.tail = id;
        }
        lru.len += len;
        if old_head != NIL {
            self.runs[old_head as usize].prev = id;
        }
        let r = &mut self.runs[id as usize];
        r.prev = NIL;
        r.next = old_head;
    }

    /// Take run `id` out of its list (the run itself is kept).
    fn unlink(&mut self, id: RunId) {
        let Run { app, list, prev, next, len, .. } = self.runs[id as usize];
        if prev != NIL {
            self.runs[prev as usize].next = next;
        }
        if next != NIL {
            self.runs[next as usize].prev = prev;
        }
        let lru = self.lru_mut(app, list);
        if lru.head == id {
            lru.head = next;
        }
        if lru.tail == id {
            lru.tail = prev;
        }
        lru.len -= len;
        let r = &mut self.runs[id as usize];
        r.prev = NIL;
        r.next = NIL;
    }

    /// Split run `id`: its first `n` pages (`n < len`) become a new run just tail-wards of it in
    /// the same list (relabelled), which is returned unlinked.
    fn split_front(&mut self, id: RunId, n: u32) -> RunId {
        let r = self.runs[id as usize];
        debug_assert!(n > 0 && n < r.len);
        let front = self.alloc_run(Run { first: r.first, len: n, prev: NIL, next: NIL, ..r });
        let rm = &mut self.runs[id as usize];
        rm.first += n;
        rm.len -= n;
        rm.stamp += u64::from(n);
        self.lru_mut(r.app, r.list).len -= n;
        self.files[r.file as usize].slots[r.first as usize..(r.first + n) as usize].fill(front);
        front
    }

    /// Remove the first `n` pages of run `id` from it (and from its list); frees the run when
    /// that leaves it empty. The pages' slots are left to the caller.
    fn detach_front(&mut self, id: RunId, n: u32) {
        let Run { app, list, len, .. } = self.runs[id as usize];
        if n == len {
            self.unlink(id);
            self.free_runs.push(id);
        } else {
            let r = &mut self.runs[id as usize];
            r.first += n;
            r.len -= n;
            r.stamp += u64::from(n);
            self.lru_mut(app, list).len -= n;
        }
    }

    /// Take page `i` of `file` out of its run and list (splitting the run if the page is inside
    /// it); returns the owner's app slot. The page's slot is left to the caller.
    fn detach(&mut self, file: FileId, i: u32) -> u16 {
        let id = self.files[file as usize].run_of(i);
        let r = self.runs[id as usize];
        if i == r.first {
            self.detach_front(id, 1);
        } else if i == r.first + r.len - 1 {
            self.runs[id as usize].len -= 1;
            self.lru_mut(r.app, r.list).len -= 1;
        } else {
            // Pages after `i` become a run of their own, head-wards of `id`.
            let off = i + 1 - r.first;
            let right = self.alloc_run(Run {
                first: i + 1,
                len: r.len - off,
                stamp: r.stamp + u64::from(off),
                prev: r.prev,
                next: id,
                ..r
            });
            if r.prev != NIL {
                self.runs[r.prev as usize].next = right;
            } else {
                self.lru_mut(r.app, r.list).head = right;
            }
            let rm = &mut self.runs[id as usize];
            rm.prev = right;
            rm.len = i - r.first;
            self.lru_mut(r.app, r.list).len -= 1;
            self.files[file as usize].slots[(i + 1) as usize..(r.first + r.len) as usize].fill(right);
        }
        r.app
    }
}

#[cfg(test)]
mod tests {
    use super::reference::PageCache as Reference;
    use super::*;
    use proptest::prelude::*;

    fn list_of(pc: &PageCache, p: PageRef) -> List {
        pc.runs[pc.files[p.file as usize].run_of(p.index) as usize].list
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert {
            file: u32,
            index: u32,
            n: u32,
            owner: Uid,
        },
        Access(usize, u32),
        Dirty(usize),
        StartWb(usize, u32),
        EndWb(usize, u32),
        Lock(usize, u32),
        Fill(usize, u32),
        Remove(usize),
        /// Truncate-like: drop the cached pages from one on, up to the first one under I/O.
        RemoveFrom(usize, u32),
        Reclaim {
            want: u64,
            bg_first: bool,
            fg: Uid,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..3, 0u32..200, 1u32..40, 1u32..5).prop_map(|(file, index, n, owner)| Op::Insert { file, index, n, owner }),
            3 => (any::<usize>(), 1u32..20).prop_map(|(k, n)| Op::Access(k, n)),
            2 => any::<usize>().prop_map(Op::Dirty),
            1 => (any::<usize>(), 1u32..20).prop_map(|(k, n)| Op::StartWb(k, n)),
            1 => (any::<usize>(), 1u32..20).prop_map(|(k, n)| Op::EndWb(k, n)),
            1 => (any::<usize>(), 1u32..20).prop_map(|(k, n)| Op::Lock(k, n)),
            1 => (any::<usize>(), 1u32..20).prop_map(|(k, n)| Op::Fill(k, n)),
            1 => any::<usize>().prop_map(Op::Remove),
            1 => (any::<usize>(), 1u32..60).prop_map(|(k, n)| Op::RemoveFrom(k, n)),
            2 => (0u64..60, any::<bool>(), 0u32..5).prop_map(|(want, bg_first, fg)| Op::Reclaim { want, bg_first, fg }),
        ]
    }

    /// Live pages as (file, index) with their states, in file and index order.
    fn snapshot(pc: &PageCache) -> Vec<(u32, u32, PageState)> {
        let mut v = Vec::new();
        for f in 0..pc.files.len() as u32 {
            v.extend(pc.file_pages_from(f, 0).map(|p| (p.file, p.index, pc.page(p))));
        }
        v
    }

    fn snapshot_ref(pc: &Reference) -> Vec<(u32, u32, PageState)> {
        let mut v = Vec::new();
        for f in 0..pc.files.len() as u32 {
            for id in pc.file_pages_from(f, 0) {
                let pg = pc.page(id);
                let st =
                    PageState { uptodate: pg.uptodate, locked: pg.locked, dirty: pg.dirty, writeback: pg.writeback, io: pg.io };
                v.push((pg.file, pg.index, st));
            }
        }
        v
    }

    /// The runs agree with the lists and the maps: every cached page in exactly one run of its
    /// slot, list lengths and busy counts as the pages say, stamps consecutive within a run.
    fn check_runs(pc: &PageCache) -> Result<(), TestCaseError> {
        let mut seen = 0u64;
        for (a, l) in pc.lrus.iter().enumerate() {
            let mut busy = 0;
            for (list, lru) in [(List::Active, l.active), (List::Inactive, l.inactive)] {
                let (mut id, mut prev, mut pages) = (lru.head, NIL, 0);
                while id != NIL {
                    let r = pc.runs[id as usize];
                    prop_assert_eq!((r.prev, r.list, r.app as usize), (prev, list, a));
                    prop_assert!(r.len > 0);
                    let f = &pc.files[r.file as usize];
                    for i in r.first..r.first + r.len {
                        prop_assert_eq!(f.slots[i as usize], id);
                        prop_assert!(f.cached.contains(i));
                        busy += u32::from(f.busy(i));
                    }
                    pages += r.len;
                    (prev, id) = (id, r.next);
                }
                prop_assert_eq!(lru.tail, prev);
                prop_assert_eq!(lru.len, pages);
                seen += u64::from(pages);
            }
            prop_assert_eq!(l.busy, busy);
        }
        prop_assert_eq!(seen, pc.nr_pages);
        for (f, fc) in pc.files.iter().enumerate() {
            prop_assert_eq!(fc.nr_pages, fc.cached.len());
            prop_assert_eq!(fc.dirtied_at.is_some(), !fc.dirty.is_empty());
            if let Some(at) = fc.dirtied_at {
                prop_assert!(pc.dirty_files.contains(&(at, f as FileId)));
            }
        }
        prop_assert_eq!(pc.dirty_files.len(), pc.files.iter().filter(|f| f.dirtied_at.is_some()).count());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The run-based cache does what the per-page cache it replaced did, operation for
        /// operation, range operations included: same pages cached with the same states, same
        /// pages evicted (so the same LRU order and stamps), same counters.
        #[test]
        fn runs_behave_as_the_per_page_cache(ops in proptest::collection::vec(op(), 1..300)) {
            let mut a = PageCache::new(64);
            let mut b = Reference::new(64);
            for _ in 0..3 {
                a.add_file();
                b.add_file();
            }
            for o in ops {
                let live: Vec<PageRef> = (0..3).flat_map(|f| a.file_pages_from(f, 0).collect::<Vec<_>>()).collect();
                let pick = |k: usize| (!live.is_empty()).then(|| live[k % live.len()]);
                // The cached pages from `p` on, up to `n`, that pass `ok`, as one contiguous range.
                let span = |a: &PageCache, p: PageRef, n: u32, ok: &dyn Fn(PageState) -> bool| {
                    (0..n).take_while(|&d| a.lookup(p.file, p.index + d).is_some_and(|q| ok(a.page(q)))).count() as u32
                };
                match o {
                    Op::Insert { file, index, n, owner } => {
                        let n = (0..n).take_while(|&d| a.lookup(file, index + d).is_none()).count() as u32;
                        a.insert_run(file, index, n, owner);
                        for d in 0..n {
                            b.insert(file, index + d, owner);
                        }
                    }
                    Op::Reclaim { want, bg_first, fg } => {
                        let order = if bg_first { ReclaimOrder::BackgroundFirst } else { ReclaimOrder::Global };
                        let ra = a.reclaim(want, order, |u| u == fg);
                        let rb = b.reclaim(want, order, |u| u == fg);
                        prop_assert_eq!(ra, rb);
                    }
                    Op::Access(k, n) => if let Some(p) = pick(k) {
                        let n = span(&a, p, n, &|_| true);
                        a.mark_accessed_range(p.file, p.index, n);
                        for d in 0..n {
                            let id = b.lookup(p.file, p.index + d).unwrap();
                            b.mark_accessed(id);
                        }
                    },
                    Op::Dirty(k) => if let Some(p) = pick(k) {
                        if !a.page(p).locked {
                            a.set_uptodate(p);
                            a.set_dirty(p, SimTime(7));
                            let id = b.lookup(p.file, p.index).unwrap();
                            b.page_mut(id).uptodate = true;
                            b.set_dirty(id, SimTime(7));
                        }
                    },
                    Op::StartWb(k, n) => if let Some(p) = pick(k) {
                        let n = span(&a, p, n, &|s| s.dirty && !s.writeback);
                        a.start_writeback_range(p.file, p.index, n, 3);
                        for d in 0..n {
                            b.start_writeback(b.lookup(p.file, p.index + d).unwrap(), 3);
                        }
                    },
                    Op::EndWb(k, n) => if let Some(p) = pick(k) {
                        let n = span(&a, p, n, &|_| true);
                        a.end_writeback_range(p.file, p.index, n, 3);
                        for d in 0..n {
                            let id = b.lookup(p.file, p.index + d).unwrap();
                            if b.page(id).io == Some(3) && b.page(id).writeback {
                                b.end_writeback(id);
                            }
                        }
                    },
                    Op::Lock(k, n) => if let Some(p) = pick(k) {
                        let n = span(&a, p, n, &|s| !s.locked && !s.uptodate && !s.writeback);
                        a.lock_range(p.file, p.index, n, 5);
                        for d in 0..n {
                            b.lock_for_read(b.lookup(p.file, p.index + d).unwrap(), 5);
                        }
                    },
                    Op::Fill(k, n) => if let Some(p) = pick(k) {
                        let n = span(&a, p, n, &|_| true);
                        a.fill_range(p.file, p.index, n, 5);
                        for d in 0..n {
                            let id = b.lookup(p.file, p.index + d).unwrap();
                            if b.page(id).io == Some(5) && b.page(id).locked {
                                b.fill_done(id);
                            }
                        }
                    },
                    Op::RemoveFrom(k, n) => if let Some(p) = pick(k) {
                        let stop = a.first_in_io_from(p.file, p.index).map_or(u32::MAX, |q| q.index).min(p.index + n);
                        let removed = a.remove_range(p.file, p.index, stop);
                        let mut count = 0;
                        for id in b.file_pages_from(p.file, p.index).collect::<Vec<_>>() {
                            if b.page(id).index >= stop {
                                break;
                            }
                            b.remove(id);
                            count += 1;
                        }
                        prop_assert_eq!(removed, count);
                    },
                    Op::Remove(k) => if let Some(p) = pick(k) {
                        if !a.page(p).locked && !a.page(p).writeback {
                            a.remove(p);
                            b.remove(b.lookup(p.file, p.index).unwrap());
                        }
                    },
                }
                prop_assert_eq!(snapshot(&a), snapshot_ref(&b));
                prop_assert_eq!((a.evicted, a.evicted_fg, a.evicted_fg_while_bg_clean), (b.evicted, b.evicted_fg, b.evicted_fg_while_bg_clean));
                prop_assert_eq!((a.nr_pages, a.nr_dirty, a.nr_writeback, a.inserted), (b.nr_pages, b.nr_dirty, b.nr_writeback, b.inserted));
                prop_assert_eq!(a.oldest_dirty_file(), b.oldest_dirty_file());
                check_runs(&a)?;
            }
        }
    }

    #[test]
    fn a_streamed_read_is_one_run_and_leaves_in_one_pass() {
        let mut pc = PageCache::new(1000);
        let f = pc.add_file();
        pc.insert_run(f, 0, 64, 1);
        pc.insert_run(f, 64, 64, 1);
        pc.lock_range(f, 0, 128, 9);
        pc.fill_range(f, 0, 128, 9);
        pc.mark_accessed_range(f, 0, 128);
        assert_eq!(pc.runs.len(), 1, "consecutive inserts continue the head run");
        assert_eq!(pc.reclaim(100, ReclaimOrder::Global, |_| false).freed, 100);
        assert_eq!(pc.file_pages_from(f, 0).next(), Some(PageRef { file: f, index: 100 }));
    }

    #[test]
    fn global_order_evicts_oldest_first_and_skips_dirty() {
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        let ids: Vec<PageRef> = (0..10).map(|i| pc.insert(f, i, 10 + i % 2)).collect();
        for &id in &ids {
            pc.set_uptodate(id);
        }
        pc.set_dirty(ids[0], SimTime::ZERO);
        let n = pc.reclaim(3, ReclaimOrder::Global, |_| false);
        assert_eq!(n.freed, 3);
        assert!(pc.lookup(f, 0).is_some(), "dirty page kept");
        assert!(pc.lookup(f, 1).is_none() && pc.lookup(f, 2).is_none() && pc.lookup(f, 3).is_none());
        assert_eq!(pc.nr_pages, 7);
    }

    #[test]
    fn background_first_spares_foreground_pages() {
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        // Foreground (uid 1) pages are the oldest.
        for i in 0..5 {
            pc.insert(f, i, 1);
        }
        for i in 5..10 {
            pc.insert(f, i, 2);
        }
        let fg = |u: Uid| u == 1;
        assert_eq!(pc.reclaim(5, ReclaimOrder::BackgroundFirst, fg).freed, 5);
        assert_eq!(pc.evicted_fg, 0);
        assert!((0..5).all(|i| pc.lookup(f, i).is_some()));
        // Stock order would have taken the foreground pages first.
        let mut pc2 = PageCache::new(100);
        let f2 = pc2.add_file();
        for i in 0..10 {
            pc2.insert(f2, i, if i < 5 { 1 } else { 2 });
        }
        pc2.reclaim(5, ReclaimOrder::Global, fg);
        assert_eq!(pc2.evicted_fg, 5);
        assert_eq!(pc2.evicted_fg_while_bg_clean, 5);
        assert_eq!(pc.evicted_fg_while_bg_clean, 0);
    }

    #[test]
    fn twice_accessed_pages_are_activated_and_survive() {
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        let hot = pc.insert(f, 0, 1);
        pc.mark_accessed(hot);
        pc.mark_accessed(hot);
        for i in 1..6 {
            pc.insert(f, i, 1);
        }
        pc.reclaim(3, ReclaimOrder::Global, |_| false);
        assert!(pc.lookup(f, 0).is_some(), "the active page survives");
    }

    #[test]
    fn a_page_read_once_leaves_from_the_inactive_list() {
        // folio_check_references: a clean, unmapped page whose only reference is its
        // referenced mark is reclaimed, not given a second chance.
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        let once = pc.insert(f, 0, 1);
        pc.mark_accessed(once);
        let twice = pc.insert(f, 1, 1);
        pc.mark_accessed(twice);
        pc.mark_accessed(twice);
        for i in 2..4 {
            pc.insert(f, i, 1);
        }
        assert_eq!(pc.reclaim(1, ReclaimOrder::Global, |_| false).freed, 1);
        assert!(pc.lookup(f, 0).is_none(), "the once-read page, the oldest, goes first though referenced");
        assert!(pc.lookup(f, 1).is_some() && pc.lookup(f, 2).is_some() && pc.lookup(f, 3).is_some());
    }

    #[test]
    fn aging_keeps_the_referenced_mark() {
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        let hot = pc.insert(f, 0, 1);
        pc.mark_accessed(hot);
        pc.mark_accessed(hot);
        assert_eq!(list_of(&pc, hot), List::Active);
        pc.mark_accessed(hot); // referenced on the active list
        pc.reclaim(0, ReclaimOrder::Global, |_| false); // ages the outgrown active list
        assert_eq!(list_of(&pc, hot), List::Inactive);
        pc.mark_accessed(hot);
        assert_eq!(list_of(&pc, hot), List::Active, "one touch re-activates a page deactivated while referenced");
    }

    #[test]
    fn background_first_waits_for_dirty_background_pages_before_taking_foreground_ones() {
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        for i in 0..4 {
            pc.insert(f, i, 1); // foreground, clean
        }
        for i in 4..8 {
            let p = pc.insert(f, i, 2);
            pc.set_dirty(p, SimTime::ZERO); // background, dirty
        }
        let fg = |u: Uid| u == 1;
        let r = pc.reclaim(2, ReclaimOrder::BackgroundFirst, fg);
        assert_eq!(r, Reclaimed { freed: 0, bg_busy: true });
        assert_eq!(pc.evicted_fg, 0);
        // Once the background pages are clean they go first.
        for i in 4..8 {
            let p = pc.lookup(f, i).unwrap();
            pc.start_writeback(p, 0);
            pc.end_writeback(p);
        }
        assert_eq!(pc.bg_clean_pages(&fg), 4);
        let r = pc.reclaim(2, ReclaimOrder::BackgroundFirst, fg);
        assert_eq!(r.freed, 2);
        assert_eq!(pc.evicted_fg, 0);
        // Stock order takes the oldest pages: the foreground ones.
        assert_eq!(pc.reclaim(1, ReclaimOrder::Global, fg).freed, 1);
        assert_eq!(pc.evicted_fg, 1);
    }

    #[test]
    fn busy_counts_follow_page_states() {
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        let p = pc.insert(f, 0, 3);
        pc.lock_for_read(p, 9);
        assert_eq!(pc.reclaim(1, ReclaimOrder::Global, |_| false).freed, 0);
        pc.fill_done(p);
        pc.set_dirty(p, SimTime::ZERO);
        pc.start_writeback(p, 1);
        assert_eq!(pc.reclaim(1, ReclaimOrder::Global, |_| false).freed, 0);
        pc.end_writeback(p);
        assert_eq!(pc.reclaim(1, ReclaimOrder::Global, |_| false).freed, 1);
        assert_eq!(pc.nr_pages, 0);
    }
}
