//! The page cache: pages per file with their states, per-app active/inactive LRU lists, dirty
//! bookkeeping for write-back, and the reclaim victim choice.
//!
//! Pages are 4 KiB and live in a slab ([`PageId`]). A page is *uptodate* once read (or fully
//! written), *dirty* after a buffered write, under *writeback* while a write request holds it, and
//! *locked* while a read request fills it; `io` names that request so waiters can find it.
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
//! # Costs (what the bookkeeping does per page)
//! - Lookup: a dense slot array per file (index → page). Insert, access, state changes and
//!   removal are O(1): list surgery on the page and its two neighbours.
//! - Victim choice: each list caches its tail's stamp (stamps live in a compact array of their
//!   own), and [`PageCache::reclaim`] keeps a min-heap of `(tail stamp, app)` per class for the
//!   call, so each page it looks at costs O(log apps), not a visit to every app's tail page.
//! - Per file, cached, dirty and under-write-back pages are also [`PageSet`] bitmaps: write-back
//!   walks dirty pages in file order, fsync finds a page under write-back, and truncate and
//!   drop_caches find cached pages at one word per 64 indices of the span they occupy, not one
//!   slot per page of the file.
//!
//! # Simplifications
//! - Bookkeeping is per 4 KiB page, as the kernel's was before folios: a 512 KiB read inserts,
//!   locks, fills, accesses and later evicts 128 pages one by one. That is what bounds the
//!   simulator's speed on streaming scenarios (`cargo bench -p forefront-sim --bench speed`);
//!   runs of pages (folio- or extent-like, split where their pages' states or LRU places
//!   diverge) are the way past it, not done yet. See "Speed" below.
//! - The LRU follows the kernel's two-list rules for unmapped file pages:
//!   `folio_mark_accessed` (`mark_page_accessed` on the phones' kernels) for accesses,
//!   `folio_check_references` (`page_check_references`) at the inactive tail, where a clean
//!   page whose only reference is `PG_referenced` is reclaimed (`FOLIOREF_RECLAIM_CLEAN`), and
//!   `shrink_active_list` for aging, which leaves `PG_referenced` alone. Not modelled: mapped
//!   pages and their PTE young bits (the kernel keeps a referenced executable mapping active,
//!   `VM_EXEC`), refault detection (workingset shadow entries), the multi-generational LRU, and
//!   the per-CPU batches that delay LRU moves: a move here takes effect at once.
//! - A file's `dirtied_at` is that of its first dirty page, kept until the file has no dirty
//!   page left (the kernel's inode `dirtied_when` behaves the same way).
//!
//! # Speed (measured 2026-11-24; read before optimising)
//! - Cost follows the work: `switch-upload --bg-apps 6` ran at 131–136 ns per inserted page in
//!   single runs of 15, 30, 45, 60 and 90 s (about 80,000 pages per simulated second: 60–100×
//!   real time on this 2-core VM, against a target of 1,000×, which needs about 12 ns per
//!   page). The speed bench's in-process medians put 60 s at 1.2–1.3× the cost per page of
//!   15 s; a longer run's dense slot arrays are larger, but the VM's noise is of that order.
//! - `perf`: three quarters of the time is here, and most of it is cache misses on cold pages
//!   when reclaim reaches them (`unlink` 19 %, `link` 15 %, `reclaim` and `reclaim_pass` 15 %,
//!   `insert` 7 %), before the kernel's LRU rules came in (after them: 138× real time in one
//!   bench run, 80–90 ns per page).
//! - The kernel's rules (2026-11-24). Before, every access moved a page to its list's head and
//!   a referenced inactive tail got a second chance on the active list, so a streamed page was
//!   linked once, moved three times (the access, the second chance, the aging) and unlinked
//!   once; now it is linked and unlinked only. `switch-upload --bg-apps 6` runs 1.6× faster
//!   (`farm-bench -n 6`, paired, wall 0.62×). Of the 48 runs of `scripts/sim-golden`, the 11
//!   under memory pressure changed (switch-upload at 6 BG apps, camera-switch `forefront` at
//!   6, qasio-contacts, -install, -camera-burst); launch-update and camera-switch under
//!   `android`/`fasttrack` did not. Stock switch under 6 uploaders: 2,496 → 2,488 ms (seed 1),
//!   FG pages evicted 14,629 → 8,135; FastTrack's: 120 → 105 ms.
//! - Tried and dropped: LRU lists as queues with holes (`VecDeque` of page ids, each page
//!   holding its entry's position, the stamp in the entry), so that a move writes one queue
//!   entry instead of two neighbour pages. Outputs stayed byte-identical, but it ran 16 %
//!   slower (`farm-bench -n 8`, paired) and with 28 MiB instead of 17 MiB peak RSS: the holes
//!   double the queues, and the page itself is still missed on every move.

pub mod pageset;
pub mod reclaim;
pub mod writeback;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use forefront_engine::SimTime;

pub use self::pageset::PageSet;
use crate::block::ReqId;
use crate::prov::Uid;

pub type FileId = u32;
pub type PageId = u32;
pub const PAGE_SIZE: u64 = 4096;
const NIL: PageId = PageId::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    Active,
    Inactive,
}

/// A cached page: 32 bytes, so that two share a cache line and none straddles two (the page
/// cache is memory-bound; its owner is its LRU slot's uid, [`PageCache::owner`]).
#[derive(Clone, Debug)]
pub struct Page {
    pub file: FileId,
    pub index: u32,
    /// Neighbours in its LRU list.
    prev: PageId,
    next: PageId,
    /// The request filling (locked) or writing (writeback) this page.
    pub io: Option<ReqId>,
    /// Slot of the owner's LRU lists.
    app: u16,
    pub uptodate: bool,
    pub dirty: bool,
    pub writeback: bool,
    pub locked: bool,
    referenced: bool,
    list: List,
}

const _: () = assert!(std::mem::size_of::<Page>() == 32);

#[derive(Clone, Copy, Debug, Default)]
struct Lru {
    head: PageId,
    tail: PageId,
    len: u32,
    /// The stamp of `tail` (valid when `len > 0`): the victim search reads it without touching
    /// the page.
    tail_stamp: u64,
}

impl Lru {
    const EMPTY: Lru = Lru { head: NIL, tail: NIL, len: 0, tail_stamp: 0 };
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
    /// The app's candidate for the next reclaim pass, if it has an evictable page: the stamp of
    /// the tail it would take from, and whether that is the active list (when the inactive one
    /// is empty).
    fn candidate(&self) -> Option<(u64, bool)> {
        if self.clean() == 0 {
            None
        } else if self.inactive.len > 0 {
            Some((self.inactive.tail_stamp, false))
        } else {
            Some((self.active.tail_stamp, true))
        }
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

#[derive(Default, Clone, Debug)]
pub struct FileCache {
    /// Page index → page, `NIL` where not cached (a dense map: lookups are the hot path).
    slots: Vec<PageId>,
    pub nr_pages: u32,
    /// Indices of cached pages (truncate and drop_caches walk these, not every slot).
    cached: PageSet,
    /// Indices of dirty pages, for write-back in file order.
    pub dirty: PageSet,
    /// Indices of pages under write-back (fsync waits for the first one).
    pub writeback: PageSet,
    /// When the oldest dirty page of this file was dirtied (for dirty_expire); mirrored in
    /// [`PageCache::oldest_dirty_file`]'s index.
    dirtied_at: Option<SimTime>,
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
    pages: Vec<Page>,
    /// Per page slot: the access clock when the page was last touched (inserted, accessed,
    /// rotated). A compact array of its own: when reclaim takes a list's tail, the new tail's
    /// stamp is read from here (mostly cached), not from its cold page.
    stamps: Vec<u64>,
    free: Vec<PageId>,
    pub files: Vec<FileCache>,
    /// `(dirtied_at, file)` of every file with dirty pages: the flusher's oldest-first choice
    /// without a scan of every file.
    dirty_files: BTreeSet<(SimTime, FileId)>,
    /// Per-app lists, indexed by [`Page::app`]; `app_index` maps a uid to its slot.
    lrus: Vec<AppLru>,
    app_index: BTreeMap<Uid, u16>,
    /// The last uid looked up in `app_index` and its slot (inserts come in runs of one owner).
    last_app: Option<(Uid, u16)>,
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
}

impl PageCache {
    pub fn new(capacity_pages: u64) -> Self {
        PageCache {
            pages: Vec::new(),
            stamps: Vec::new(),
            free: Vec::new(),
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
        }
    }

    pub fn add_file(&mut self) -> FileId {
        self.files.push(FileCache::default());
        (self.files.len() - 1) as FileId
    }

    pub fn page(&self, id: PageId) -> &Page {
        &self.pages[id as usize]
    }
    pub fn page_mut(&mut self, id: PageId) -> &mut Page {
        &mut self.pages[id as usize]
    }
    /// The uid owning page `id`.
    pub fn owner(&self, id: PageId) -> Uid {
        self.lrus[self.pages[id as usize].app as usize].uid
    }
    pub fn lookup(&self, file: FileId, index: u32) -> Option<PageId> {
        match self.files[file as usize].slots.get(index as usize) {
            Some(&p) if p != NIL => Some(p),
            _ => None,
        }
    }
    /// Cached pages of `file` from page index `first` on, in index order (at the cost of the
    /// cached pages, not of the file's size).
    pub fn file_pages_from(&self, file: FileId, first: u32) -> impl Iterator<Item = PageId> + '_ {
        let f = &self.files[file as usize];
        f.cached.iter_from(first).map(|i| f.slots[i as usize])
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
    pub fn first_writeback(&self, file: FileId) -> Option<PageId> {
        let f = &self.files[file as usize];
        f.writeback.first().map(|i| f.slots[i as usize])
    }

    pub fn free_pages(&self) -> u64 {
        self.capacity.saturating_sub(self.nr_pages)
    }

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
    pub fn insert(&mut self, file: FileId, index: u32, owner: Uid) -> PageId {
        self.clock += 1;
        let app = self.app_slot(owner);
        let page = Page {
            file,
            index,
            app,
            uptodate: false,
            dirty: false,
            writeback: false,
            locked: false,
            referenced: false,
            list: List::None,
            io: None,
            prev: NIL,
            next: NIL,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.pages[id as usize] = page;
                self.stamps[id as usize] = self.clock;
                id
            }
            None => {
                self.pages.push(page);
                self.stamps.push(self.clock);
                (self.pages.len() - 1) as PageId
            }
        };
        let f = &mut self.files[file as usize];
        if f.slots.len() <= index as usize {
            f.slots.resize(index as usize + 1, NIL);
        }
        debug_assert_eq!(f.slots[index as usize], NIL, "page inserted twice");
        f.slots[index as usize] = id;
        f.cached.insert(index);
        f.nr_pages += 1;
        self.nr_pages += 1;
        self.inserted += 1;
        self.link(id, List::Inactive);
        id
    }

    /// A read or write touched the page (`folio_mark_accessed`): a first touch only marks it
    /// referenced; a touch of a referenced inactive page activates it (to the active list's
    /// head). Nothing else moves: a page's place in its list is where it was last put.
    pub fn mark_accessed(&mut self, id: PageId) {
        let p = &mut self.pages[id as usize];
        if p.list == List::Inactive && p.referenced {
            p.referenced = false;
            self.clock += 1;
            self.stamps[id as usize] = self.clock;
            self.unlink(id);
            self.link(id, List::Active);
        } else {
            p.referenced = true;
        }
    }

    fn is_busy(p: &Page) -> bool {
        p.dirty || p.writeback || p.locked
    }

    fn busy_delta(&mut self, id: PageId, was_busy: bool) {
        let p = &self.pages[id as usize];
        let now_busy = Self::is_busy(p);
        if was_busy != now_busy && p.list != List::None {
            let l = &mut self.lrus[p.app as usize];
            if now_busy {
                l.busy += 1;
            } else {
                l.busy -= 1;
            }
        }
    }

    /// A read request `req` will fill the page: it is locked until [`PageCache::fill_done`].
    pub fn lock_for_read(&mut self, id: PageId, req: ReqId) {
        let was = Self::is_busy(&self.pages[id as usize]);
        let p = &mut self.pages[id as usize];
        p.locked = true;
        p.io = Some(req);
        self.busy_delta(id, was);
    }

    /// The page's read completed: uptodate and unlocked.
    pub fn fill_done(&mut self, id: PageId) {
        let was = Self::is_busy(&self.pages[id as usize]);
        let p = &mut self.pages[id as usize];
        p.locked = false;
        p.uptodate = true;
        p.io = None;
        self.busy_delta(id, was);
    }

    pub fn set_dirty(&mut self, id: PageId, now: SimTime) {
        let was = Self::is_busy(&self.pages[id as usize]);
        let p = &mut self.pages[id as usize];
        if p.dirty {
            return;
        }
        p.dirty = true;
        let (file, index) = (p.file, p.index);
        self.nr_dirty += 1;
        let f = &mut self.files[file as usize];
        f.dirty.insert(index);
        if f.dirtied_at.is_none() {
            f.dirtied_at = Some(now);
            self.dirty_files.insert((now, file));
        }
        self.busy_delta(id, was);
    }

    /// Write-back starts: dirty → writeback under request `req`.
    pub fn start_writeback(&mut self, id: PageId, req: ReqId) {
        let p = &mut self.pages[id as usize];
        debug_assert!(p.dirty && !p.writeback);
        p.dirty = false;
        p.writeback = true;
        p.io = Some(req);
        let (file, index) = (p.file, p.index);
        self.nr_dirty -= 1;
        self.nr_writeback += 1;
        let f = &mut self.files[file as usize];
        f.dirty.remove(index);
        f.writeback.insert(index);
        if f.dirty.is_empty() {
            let at = f.dirtied_at.take().expect("a dirty file has its time");
            self.dirty_files.remove(&(at, file));
        }
    }

    pub fn end_writeback(&mut self, id: PageId) {
        let p = &mut self.pages[id as usize];
        debug_assert!(p.writeback);
        p.writeback = false;
        p.io = None;
        let (file, index) = (p.file, p.index);
        self.files[file as usize].writeback.remove(index);
        self.nr_writeback -= 1;
        self.busy_delta(id, true);
    }

    /// Remove a page (truncate, unlink, eviction). It must be unlocked and not under writeback.
    pub fn remove(&mut self, id: PageId) {
        let p = &self.pages[id as usize];
        debug_assert!(!p.locked && !p.writeback);
        let (file, index, dirty) = (p.file, p.index, p.dirty);
        if dirty && p.list != List::None {
            self.lrus[p.app as usize].busy -= 1;
        }
        if dirty {
            self.nr_dirty -= 1;
            let f = &mut self.files[file as usize];
            f.dirty.remove(index);
            if f.dirty.is_empty() {
                let at = f.dirtied_at.take().expect("a dirty file has its time");
                self.dirty_files.remove(&(at, file));
            }
        }
        self.unlink(id);
        let f = &mut self.files[file as usize];
        f.slots[index as usize] = NIL;
        f.cached.remove(index);
        f.nr_pages -= 1;
        self.nr_pages -= 1;
        self.free.push(id);
    }

    /// Evict up to `want` clean pages in the policy's order; `is_fg(uid)` classifies owners.
    ///
    /// The list to take the next page from: an app's inactive tail, or its active tail when its
    /// inactive list is empty; only apps with evictable pages count. Stock: the oldest tail
    /// overall. Background-first: the oldest among background apps; when background apps have
    /// only dirty or in-flight pages, stop (they must be written back first); foreground apps
    /// only when no background page is left at all. Each pass changes only the chosen app's
    /// lists, so the candidates are a heap per class built once per call and updated for that
    /// one app per pass.
    pub fn reclaim(&mut self, want: u64, order: ReclaimOrder, is_fg: impl Fn(Uid) -> bool) -> Reclaimed {
        let mut out = Reclaimed::default();
        // Age the active lists a little on every call (shrink_active_list): apps whose active
        // list outgrew the inactive one move up to 32 pages down, keeping their `referenced`
        // mark (the kernel leaves PG_referenced alone there: one more touch re-activates).
        for app in 0..self.lrus.len() {
            for _ in 0..32 {
                let l = self.lrus[app];
                if l.active.len <= l.inactive.len {
                    break;
                }
                let id = l.active.tail;
                self.unlink(id);
                self.link(id, List::Inactive);
            }
        }
        if want == 0 {
            return out;
        }
        // Classes: 0 = background (or everyone, stock), 1 = foreground.
        let mut fg = std::mem::take(&mut self.scratch_fg);
        fg.clear();
        fg.extend(self.lrus.iter().map(|l| is_fg(l.uid)));
        let class = |app: usize| usize::from(order == ReclaimOrder::BackgroundFirst && fg[app]);
        let mut heaps = std::mem::take(&mut self.scratch);
        for h in &mut heaps {
            h.clear();
        }
        let mut bg_clean: u64 = 0;
        for (app, l) in self.lrus.iter().enumerate() {
            if let Some((stamp, _)) = l.candidate() {
                heaps[class(app)].push(Reverse((stamp, app as u16)));
            }
            if !fg[app] {
                bg_clean += u64::from(l.clean());
            }
        }
        // Each pass evicts, rotates or deactivates one page; a page is touched a bounded number
        // of times, so this terminates having freed what could be freed.
        let mut budget = self.nr_pages * 3 + 256;
        let mut bg_idle = false;
        while out.freed < want && budget > 0 {
            budget -= 1;
            let heap = if !heaps[0].is_empty() {
                0
            } else if order == ReclaimOrder::BackgroundFirst {
                // No background page is evictable now (and none becomes so while only
                // foreground lists change): busy background pages are written back first.
                if !bg_idle && self.lrus.iter().zip(&fg).any(|(l, &f)| !f && l.busy > 0) {
                    out.bg_busy = true;
                    break;
                }
                bg_idle = true;
                1
            } else {
                break;
            };
            let Some(&Reverse((_, app))) = heaps[heap].peek() else { break };
            let app = app as usize;
            let clean_before = self.lrus[app].clean();
            self.reclaim_pass(app, fg[app], &mut out, bg_clean);
            let l = &self.lrus[app];
            if !fg[app] {
                bg_clean = bg_clean + u64::from(l.clean()) - u64::from(clean_before);
            }
            match l.candidate() {
                Some((stamp, _)) => {
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

    /// One pass of [`PageCache::reclaim`] on `app`'s lists (it has an evictable page).
    fn reclaim_pass(&mut self, app: usize, app_fg: bool, out: &mut Reclaimed, bg_clean: u64) {
        let lru = self.lrus[app];
        if lru.inactive.len == 0 {
            let id = lru.active.tail;
            self.unlink(id);
            self.link(id, List::Inactive);
            return;
        }
        let id = lru.inactive.tail;
        // `folio_check_references` tests and clears the referenced mark whatever it decides.
        let p = &mut self.pages[id as usize];
        p.referenced = false;
        if Self::is_busy(p) {
            // Not reclaimable now: rotate to the head (write-back will clean it).
            self.clock += 1;
            self.stamps[id as usize] = self.clock;
            self.unlink(id);
            self.link(id, List::Inactive);
            return;
        }
        // Clean: evicted even if referenced. No page is mapped here, and an unmapped file page
        // whose only reference is its referenced mark is reclaimed (`FOLIOREF_RECLAIM_CLEAN`):
        // a page read once by a streaming reader leaves from the inactive list.
        if app_fg {
            self.evicted_fg += 1;
            if bg_clean > 0 {
                self.evicted_fg_while_bg_clean += 1;
            }
        }
        self.remove(id);
        self.evicted += 1;
        out.freed += 1;
    }

    /// Whether any background app has a page that could be evicted now.
    pub fn bg_clean_pages(&self, is_fg: &impl Fn(Uid) -> bool) -> u64 {
        self.lrus.iter().filter(|l| !is_fg(l.uid)).map(|l| u64::from(l.clean())).sum()
    }

    fn lru_mut(&mut self, app: u16, list: List) -> &mut Lru {
        let l = &mut self.lrus[app as usize];
        match list {
            List::Active => &mut l.active,
            List::Inactive => &mut l.inactive,
            List::None => unreachable!("no list"),
        }
    }

    /// Put a page at the head (most recent end) of a list.
    fn link(&mut self, id: PageId, list: List) {
        let (app, stamp) = {
            let p = &mut self.pages[id as usize];
            p.list = list;
            (p.app, self.stamps[id as usize])
        };
        let lru = self.lru_mut(app, list);
        let old_head = lru.head;
        lru.head = id;
        if lru.tail == NIL {
            lru.tail = id;
            lru.tail_stamp = stamp;
        }
        lru.len += 1;
        if old_head != NIL {
            self.pages[old_head as usize].prev = id;
        }
        let p = &mut self.pages[id as usize];
        p.prev = NIL;
        p.next = old_head;
    }

    fn unlink(&mut self, id: PageId) {
        let (app, list, prev, next) = {
            let p = &mut self.pages[id as usize];
            let r = (p.app, p.list, p.prev, p.next);
            p.list = List::None;
            p.prev = NIL;
            p.next = NIL;
            r
        };
        if list == List::None {
            return;
        }
        if prev != NIL {
            self.pages[prev as usize].next = next;
        }
        if next != NIL {
            self.pages[next as usize].prev = prev;
        }
        let lru = self.lru_mut(app, list);
        if lru.head == id {
            lru.head = next;
        }
        lru.len -= 1;
        if lru.tail == id {
            lru.tail = prev;
            if prev != NIL {
                let stamp = self.stamps[prev as usize];
                self.lru_mut(app, list).tail_stamp = stamp;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The victim choice before the per-class heaps: scan every app's tail page per pass (the
    /// reference model [`PageCache::reclaim`] is checked against).
    fn reclaim_reference(pc: &mut PageCache, want: u64, order: ReclaimOrder, is_fg: impl Fn(Uid) -> bool) -> Reclaimed {
        let mut out = Reclaimed::default();
        for app in 0..pc.lrus.len() {
            for _ in 0..32 {
                let l = pc.lrus[app];
                if l.active.len <= l.inactive.len {
                    break;
                }
                let id = l.active.tail;
                pc.unlink(id);
                pc.link(id, List::Inactive);
            }
        }
        let mut budget = pc.nr_pages * 3 + 256;
        while out.freed < want && budget > 0 {
            budget -= 1;
            let pick = |pc: &PageCache, want_fg: Option<bool>| {
                let mut best: Option<(u64, usize)> = None;
                for (app, l) in pc.lrus.iter().enumerate() {
                    if l.clean() == 0 || want_fg.is_some_and(|f| is_fg(l.uid) != f) {
                        continue;
                    }
                    let tail = if l.inactive.len > 0 { l.inactive.tail } else { l.active.tail };
                    let stamp = pc.stamps[tail as usize];
                    if best.is_none_or(|(s, _)| stamp < s) {
                        best = Some((stamp, app));
                    }
                }
                best.map(|b| b.1)
            };
            let app = match order {
                ReclaimOrder::Global => pick(pc, None),
                ReclaimOrder::BackgroundFirst => match pick(pc, Some(false)) {
                    None if pc.lrus.iter().any(|l| !is_fg(l.uid) && l.busy > 0) => {
                        out.bg_busy = true;
                        break;
                    }
                    None => pick(pc, Some(true)),
                    a => a,
                },
            };
            let Some(app) = app else { break };
            let bg_clean = pc.bg_clean_pages(&is_fg);
            let app_fg = is_fg(pc.lrus[app].uid);
            pc.reclaim_pass(app, app_fg, &mut out, bg_clean);
        }
        out
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert { file: u32, index: u32, owner: Uid },
        Access(usize),
        Dirty(usize),
        StartWb(usize),
        EndWb(usize),
        Lock(usize),
        Fill(usize),
        Remove(usize),
        Reclaim { want: u64, bg_first: bool, fg: Uid },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..3, 0u32..200, 1u32..5).prop_map(|(file, index, owner)| Op::Insert { file, index, owner }),
            3 => any::<usize>().prop_map(Op::Access),
            2 => any::<usize>().prop_map(Op::Dirty),
            1 => any::<usize>().prop_map(Op::StartWb),
            1 => any::<usize>().prop_map(Op::EndWb),
            1 => any::<usize>().prop_map(Op::Lock),
            1 => any::<usize>().prop_map(Op::Fill),
            1 => any::<usize>().prop_map(Op::Remove),
            2 => (0u64..40, any::<bool>(), 0u32..5).prop_map(|(want, bg_first, fg)| Op::Reclaim { want, bg_first, fg }),
        ]
    }

    /// Live pages as (file, index), in a stable order, with their states.
    fn snapshot(pc: &PageCache) -> Vec<(u32, u32, bool, bool, bool, bool)> {
        let mut v = Vec::new();
        for (f, fc) in pc.files.iter().enumerate() {
            for (i, &p) in fc.slots.iter().enumerate() {
                if p != NIL {
                    let pg = pc.page(p);
                    v.push((f as u32, i as u32, pg.dirty, pg.writeback, pg.locked, pg.uptodate));
                }
            }
        }
        v
    }

    /// The derived indexes agree with the pages: bitmaps, counts, and cached tail stamps.
    fn check_indexes(pc: &PageCache) -> Result<(), TestCaseError> {
        for (f, fc) in pc.files.iter().enumerate() {
            let cached: Vec<u32> = (0..fc.slots.len() as u32).filter(|&i| fc.slots[i as usize] != NIL).collect();
            prop_assert!(fc.cached.iter().eq(cached.iter().copied()), "cached set of file {}", f);
            let dirty: Vec<u32> = cached.iter().copied().filter(|&i| pc.page(fc.slots[i as usize]).dirty).collect();
            prop_assert!(fc.dirty.iter().eq(dirty.iter().copied()));
            let wb: Vec<u32> = cached.iter().copied().filter(|&i| pc.page(fc.slots[i as usize]).writeback).collect();
            prop_assert!(fc.writeback.iter().eq(wb.iter().copied()));
            prop_assert_eq!(fc.nr_pages as usize, cached.len());
            prop_assert_eq!(fc.dirtied_at.is_some(), !dirty.is_empty());
            if let Some(at) = fc.dirtied_at {
                prop_assert!(pc.dirty_files.contains(&(at, f as FileId)));
            }
        }
        prop_assert_eq!(pc.dirty_files.len(), pc.files.iter().filter(|f| f.dirtied_at.is_some()).count());
        for l in &pc.lrus {
            for list in [l.active, l.inactive] {
                if list.len > 0 {
                    prop_assert_eq!(list.tail_stamp, pc.stamps[list.tail as usize]);
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The heap-based victim choice evicts exactly what scanning every app would, in both
        /// orders, whatever the page states; the bitmaps follow the pages.
        #[test]
        fn reclaim_matches_the_scan_of_every_app(ops in proptest::collection::vec(op(), 1..300)) {
            let mut a = PageCache::new(64);
            let mut b = PageCache::new(64);
            for pc in [&mut a, &mut b] {
                for _ in 0..3 {
                    pc.add_file();
                }
            }
            for o in ops {
                let live: Vec<PageId> = a.files.iter().flat_map(|f| f.slots.iter().copied().filter(|&p| p != NIL)).collect();
                let pick = |k: usize| (!live.is_empty()).then(|| live[k % live.len()]);
                // Page ids match in both caches: same operations, same slab order.
                match o {
                    Op::Insert { file, index, owner } => {
                        if a.lookup(file, index).is_none() {
                            a.insert(file, index, owner);
                            b.insert(file, index, owner);
                        }
                    }
                    Op::Reclaim { want, bg_first, fg } => {
                        let order = if bg_first { ReclaimOrder::BackgroundFirst } else { ReclaimOrder::Global };
                        let ra = a.reclaim(want, order, |u| u == fg);
                        let rb = reclaim_reference(&mut b, want, order, |u| u == fg);
                        prop_assert_eq!(ra, rb);
                    }
                    o => {
                        let (k, f): (usize, fn(&mut PageCache, PageId)) = match o {
                            Op::Access(k) => (k, |pc, p| pc.mark_accessed(p)),
                            Op::Dirty(k) => (k, |pc, p| if !pc.page(p).locked { pc.set_dirty(p, SimTime(7)) }),
                            Op::StartWb(k) => (k, |pc, p| if pc.page(p).dirty && !pc.page(p).writeback { pc.start_writeback(p, 3) }),
                            Op::EndWb(k) => (k, |pc, p| if pc.page(p).writeback { pc.end_writeback(p) }),
                            Op::Lock(k) => (k, |pc, p| if !pc.page(p).locked && !pc.page(p).uptodate { pc.lock_for_read(p, 5) }),
                            Op::Fill(k) => (k, |pc, p| if pc.page(p).locked { pc.fill_done(p) }),
                            Op::Remove(k) => (k, |pc, p| if !pc.page(p).locked && !pc.page(p).writeback { pc.remove(p) }),
                            _ => unreachable!(),
                        };
                        if let Some(p) = pick(k) {
                            f(&mut a, p);
                            f(&mut b, p);
                        }
                    }
                }
                prop_assert_eq!(snapshot(&a), snapshot(&b));
                prop_assert_eq!((a.evicted, a.evicted_fg, a.evicted_fg_while_bg_clean), (b.evicted, b.evicted_fg, b.evicted_fg_while_bg_clean));
                prop_assert_eq!((a.nr_pages, a.nr_dirty, a.nr_writeback), (b.nr_pages, b.nr_dirty, b.nr_writeback));
                check_indexes(&a)?;
            }
        }
    }

    #[test]
    fn global_order_evicts_oldest_first_and_skips_dirty() {
        let mut pc = PageCache::new(100);
        let f = pc.add_file();
        let ids: Vec<PageId> = (0..10).map(|i| pc.insert(f, i, 10 + i % 2)).collect();
        for &id in &ids {
            pc.page_mut(id).uptodate = true;
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
        assert_eq!(pc.page(hot).list, List::Active);
        pc.mark_accessed(hot); // referenced on the active list
        pc.reclaim(0, ReclaimOrder::Global, |_| false); // ages the outgrown active list
        assert_eq!(pc.page(hot).list, List::Inactive);
        pc.mark_accessed(hot);
        assert_eq!(pc.page(hot).list, List::Active, "one touch re-activates a page deactivated while referenced");
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
