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
//! the tails of a few lists. A page accessed twice while inactive moves to the active list; the
//! active list is aged into the inactive one when it outgrows it (`inactive_is_low`).
//! Only clean, unlocked pages not under writeback are evicted; dirty pages wait for write-back.

pub mod reclaim;
pub mod writeback;

use std::collections::{BTreeMap, BTreeSet};

use forefront_engine::SimTime;

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

#[derive(Clone, Debug)]
pub struct Page {
    pub file: FileId,
    pub index: u32,
    pub owner: Uid,
    /// Slot of the owner's LRU lists.
    app: u16,
    pub uptodate: bool,
    pub dirty: bool,
    pub writeback: bool,
    pub locked: bool,
    /// The request filling (locked) or writing (writeback) this page.
    pub io: Option<ReqId>,
    pub dirtied_at: SimTime,
    referenced: bool,
    stamp: u64,
    list: List,
    prev: PageId,
    next: PageId,
}

#[derive(Clone, Copy, Debug, Default)]
struct Lru {
    head: PageId,
    tail: PageId,
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

#[derive(Default, Clone, Debug)]
pub struct FileCache {
    /// Page index → page, `NIL` where not cached (a dense map: lookups are the hot path).
    slots: Vec<PageId>,
    pub nr_pages: u32,
    /// Indices of dirty pages, for write-back in file order.
    pub dirty: BTreeSet<u32>,
    /// When the oldest dirty page of this file was dirtied (for dirty_expire).
    pub dirtied_at: Option<SimTime>,
}

enum Pick {
    /// An app's slot, and whether to take from its active list.
    List(usize, bool),
    BgBusy,
    Nothing,
}

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
    free: Vec<PageId>,
    pub files: Vec<FileCache>,
    /// Per-app lists, indexed by [`Page::app`]; `app_index` maps a uid to its slot.
    lrus: Vec<AppLru>,
    app_index: BTreeMap<Uid, u16>,
    clock: u64,
    /// Pages the cache may hold (memory available to it).
    pub capacity: u64,
    pub nr_pages: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
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
            free: Vec::new(),
            files: Vec::new(),
            lrus: Vec::new(),
            app_index: BTreeMap::new(),
            clock: 0,
            capacity: capacity_pages.max(64),
            nr_pages: 0,
            nr_dirty: 0,
            nr_writeback: 0,
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
    pub fn lookup(&self, file: FileId, index: u32) -> Option<PageId> {
        match self.files[file as usize].slots.get(index as usize) {
            Some(&p) if p != NIL => Some(p),
            _ => None,
        }
    }
    /// Cached pages of `file` from page index `first` on, in index order.
    pub fn file_pages_from(&self, file: FileId, first: u32) -> impl Iterator<Item = PageId> + '_ {
        let slots = &self.files[file as usize].slots;
        slots.get(first as usize..).unwrap_or(&[]).iter().copied().filter(|&p| p != NIL)
    }

    pub fn free_pages(&self) -> u64 {
        self.capacity.saturating_sub(self.nr_pages)
    }

    /// Insert a new (not uptodate) page; the caller made room first.
    pub fn insert(&mut self, file: FileId, index: u32, owner: Uid) -> PageId {
        self.clock += 1;
        let app = match self.app_index.get(&owner) {
            Some(&a) => a,
            None => {
                let a = self.lrus.len() as u16;
                self.lrus.push(AppLru { uid: owner, active: Lru::EMPTY, inactive: Lru::EMPTY, busy: 0 });
                self.app_index.insert(owner, a);
                a
            }
        };
        let page = Page {
            file,
            index,
            owner,
            app,
            uptodate: false,
            dirty: false,
            writeback: false,
            locked: false,
            io: None,
            dirtied_at: SimTime::ZERO,
            referenced: false,
            stamp: self.clock,
            list: List::None,
            prev: NIL,
            next: NIL,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.pages[id as usize] = page;
                id
            }
            None => {
                self.pages.push(page);
                (self.pages.len() - 1) as PageId
            }
        };
        let f = &mut self.files[file as usize];
        if f.slots.len() <= index as usize {
            f.slots.resize(index as usize + 1, NIL);
        }
        debug_assert_eq!(f.slots[index as usize], NIL, "page inserted twice");
        f.slots[index as usize] = id;
        f.nr_pages += 1;
        self.nr_pages += 1;
        self.link(id, List::Inactive);
        id
    }

    /// A read or write touched the page (mark_page_accessed).
    pub fn mark_accessed(&mut self, id: PageId) {
        self.clock += 1;
        let p = &mut self.pages[id as usize];
        p.stamp = self.clock;
        if p.list == List::Inactive && p.referenced {
            p.referenced = false;
            self.unlink(id);
            self.link(id, List::Active);
        } else {
            p.referenced = true;
            let list = p.list;
            self.unlink(id);
            self.link(id, list);
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
        p.dirtied_at = now;
        let (file, index) = (p.file, p.index);
        self.nr_dirty += 1;
        let f = &mut self.files[file as usize];
        f.dirty.insert(index);
        if f.dirtied_at.is_none() {
            f.dirtied_at = Some(now);
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
        f.dirty.remove(&index);
        if f.dirty.is_empty() {
            f.dirtied_at = None;
        } else {
            // Keep the oldest remaining dirty time: pages are written from the file's start, so
            // take the minimum over the rest only when the oldest one left (approximation: the
            // file's age is kept until it has no dirty pages).
        }
    }

    pub fn end_writeback(&mut self, id: PageId) {
        let p = &mut self.pages[id as usize];
        debug_assert!(p.writeback);
        p.writeback = false;
        p.io = None;
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
            f.dirty.remove(&index);
            if f.dirty.is_empty() {
                f.dirtied_at = None;
            }
        }
        self.unlink(id);
        let f = &mut self.files[file as usize];
        f.slots[index as usize] = NIL;
        f.nr_pages -= 1;
        self.nr_pages -= 1;
        self.free.push(id);
    }

    /// Evict up to `want` clean pages in the policy's order; `is_fg(uid)` classifies owners.
    pub fn reclaim(&mut self, want: u64, order: ReclaimOrder, is_fg: impl Fn(Uid) -> bool) -> Reclaimed {
        let mut out = Reclaimed::default();
        // Age the active lists a little on every call (shrink_active_list): apps whose active
        // list outgrew the inactive one move up to 32 pages down.
        for app in 0..self.lrus.len() {
            for _ in 0..32 {
                let l = self.lrus[app];
                if l.active.len <= l.inactive.len {
                    break;
                }
                let id = l.active.tail;
                self.unlink(id);
                self.pages[id as usize].referenced = false;
                self.link(id, List::Inactive);
            }
        }
        // Each pass evicts, rotates, re-activates or deactivates one page; a page is touched a
        // bounded number of times, so this terminates having freed what could be freed.
        let mut budget = self.nr_pages * 3 + 256;
        while out.freed < want && budget > 0 {
            budget -= 1;
            let (app, from_active) = match self.pick_list(order, &is_fg) {
                Pick::List(app, active) => (app, active),
                Pick::BgBusy => {
                    out.bg_busy = true;
                    break;
                }
                Pick::Nothing => break,
            };
            let lru = self.lrus[app];
            if from_active {
                let id = lru.active.tail;
                self.unlink(id);
                self.pages[id as usize].referenced = false;
                self.link(id, List::Inactive);
                continue;
            }
            let id = lru.inactive.tail;
            let p = &self.pages[id as usize];
            if Self::is_busy(p) {
                // Not reclaimable now: rotate to the head (write-back will clean it).
                self.clock += 1;
                self.pages[id as usize].stamp = self.clock;
                self.unlink(id);
                self.link(id, List::Inactive);
                continue;
            }
            if p.referenced {
                // Second chance.
                self.clock += 1;
                self.pages[id as usize].referenced = false;
                self.pages[id as usize].stamp = self.clock;
                self.unlink(id);
                self.link(id, List::Active);
                continue;
            }
            if is_fg(p.owner) {
                self.evicted_fg += 1;
                if self.bg_clean_pages(&is_fg) > 0 {
                    self.evicted_fg_while_bg_clean += 1;
                }
            }
            self.remove(id);
            self.evicted += 1;
            out.freed += 1;
        }
        out
    }

    /// Whether any background app has a page that could be evicted now.
    pub fn bg_clean_pages(&self, is_fg: &impl Fn(Uid) -> bool) -> u64 {
        self.lrus.iter().filter(|l| !is_fg(l.uid)).map(|l| u64::from(l.clean())).sum()
    }

    /// The list to take the next page from: an app's inactive tail, or its active tail when its
    /// inactive list is too small; only apps with evictable pages count. Stock: the oldest tail
    /// overall. Background-first: the oldest among background apps; when background apps have
    /// only dirty or in-flight pages, stop (they must be written back first); foreground apps
    /// only when no background page is left at all.
    fn pick_list(&self, order: ReclaimOrder, is_fg: &impl Fn(Uid) -> bool) -> Pick {
        let pick = |want_fg: Option<bool>| {
            let mut best: Option<(u64, usize, bool)> = None;
            for (app, l) in self.lrus.iter().enumerate() {
                if l.clean() == 0 || want_fg.is_some_and(|f| is_fg(l.uid) != f) {
                    continue;
                }
                let (tail, active) = if l.inactive.len > 0 { (l.inactive.tail, false) } else { (l.active.tail, true) };
                let stamp = self.pages[tail as usize].stamp;
                if best.is_none_or(|(s, _, _)| stamp < s) {
                    best = Some((stamp, app, active));
                }
            }
            best.map_or(Pick::Nothing, |(_, app, a)| Pick::List(app, a))
        };
        match order {
            ReclaimOrder::Global => pick(None),
            ReclaimOrder::BackgroundFirst => match pick(Some(false)) {
                Pick::Nothing => {
                    let bg_busy = self.lrus.iter().any(|l| !is_fg(l.uid) && l.busy > 0);
                    if bg_busy {
                        Pick::BgBusy
                    } else {
                        pick(Some(true))
                    }
                }
                p => p,
            },
        }
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
        let app = self.pages[id as usize].app;
        let lru = self.lru_mut(app, list);
        let old_head = lru.head;
        lru.head = id;
        if lru.tail == NIL {
            lru.tail = id;
        }
        lru.len += 1;
        if old_head != NIL {
            self.pages[old_head as usize].prev = id;
        }
        let p = &mut self.pages[id as usize];
        p.list = list;
        p.prev = NIL;
        p.next = old_head;
    }

    fn unlink(&mut self, id: PageId) {
        let (app, list, prev, next) = {
            let p = &self.pages[id as usize];
            (p.app, p.list, p.prev, p.next)
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
        if lru.tail == id {
            lru.tail = prev;
        }
        lru.len -= 1;
        let p = &mut self.pages[id as usize];
        p.list = List::None;
        p.prev = NIL;
        p.next = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
