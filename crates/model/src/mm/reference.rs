//! The per-page page cache that [`super::PageCache`] replaced: every page a 32-byte slab entry
//! linked into its LRU list one by one. Kept, for tests only, as the reference the run-based
//! cache is checked against (`mm::tests`): same operations, same pages evicted, same counters.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use forefront_engine::SimTime;

use super::{FileId, PageSet, ReclaimOrder, Reclaimed};
use crate::block::ReqId;
use crate::prov::Uid;

pub type PageId = u32;
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
