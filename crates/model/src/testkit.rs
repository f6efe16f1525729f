//! One fake machine for the layer modules' unit tests ([`crate::fs::jbd2`],
//! [`crate::fs::ext4`], [`crate::mm::reclaim`], [`crate::mm::writeback`]): it implements every
//! context trait ([`Kernel`], [`Reclaim`], [`Writeback`], [`Ext4`]) and records what a step asked
//! of the machine, so that a test drives a step function and reads what it did.
//!
//! What it models and what it does not:
//! - **waits** are recorded in order in [`Fake::blocked`] (`block` and `wait_request` alike);
//!   nothing is woken: wake-ups are recorded in [`Fake::woken`] (and `wake_where` drops the
//!   commit waiters its predicate matches from [`Fake::commit_waiters`]);
//! - **control requests** (`submit_control`) are kept in [`Fake::reqs`] with ids 0, 1, … and stay
//!   live until the test completes them ([`Fake::complete_all`] or by hand); any other id — a
//!   page's I/O a test set itself, or a page run's — counts as live;
//! - **page runs** (ext4's `submit_pages`) are recorded in [`Fake::runs`] and put their pages
//!   under I/O at once, with ids from [`PAGE_RUN_IDS`] on;
//! - **write-back** (the flusher's `writeback_pages`) marks the pages under write-back at once
//!   and records them in [`Fake::written`]; with [`Fake::real_writeback`] it takes ext4's own
//!   path instead (journal handles, delayed allocation, page runs);
//! - **reclaim** frees pages in the global order; the allocation gate pauses a task when
//!   [`Fake::gate`] is set; the reclaim seams are recorded in [`Fake::events`].

use forefront_engine::{RngStreams, SimTime};

use crate::block::{ReqId, ReqKey, ReqOp, Request};
use crate::fs::ext4::{self, Ext4, Ext4Params, FileOp};
use crate::fs::{Fs, FsParams, Journal};
use crate::kernel::{Cat, Kernel};
use crate::mm::reclaim::{Reclaim, ReclaimCosts};
use crate::mm::writeback::{Writeback, WritebackState};
use crate::mm::{FileId, PageCache, ReclaimOrder, Reclaimed};
use crate::prov::{Origin, Provenance, Tid};
use crate::wait::{Blocker, WaitGraph, Why};

/// The first id a page run submitted through [`Ext4::submit_pages`] gets.
pub const PAGE_RUN_IDS: ReqId = 1_000;

/// The app UID the fake's files belong to.
pub const APP_UID: u32 = 10_000;

pub struct Fake {
    pub now: SimTime,
    pub pc: PageCache,
    pub jn: Journal,
    pub fs: Fs,
    /// Tasks 0 (the jbd2 thread) to 3.
    pub wg: WaitGraph,
    /// Every wait registered, in order.
    pub blocked: Vec<(Tid, Blocker)>,
    /// Control requests in submission order (the id is the index) and whether each is live.
    pub reqs: Vec<(Request, bool)>,
    /// Wake-ups asked for: "handles" (the journal-handle queue), "commit" (`wake_where`),
    /// "flusher", "jbd2", "holders".
    pub woken: Vec<&'static str>,
    /// Transactions whose commit a task waits for.
    pub commit_waiters: Vec<u64>,
    /// Dirty throttling's state (`Ext4::dirty_throttle`).
    pub throttle: crate::mm::throttle::DirtyThrottle,
    /// The reclaim seams used: "kswapd", "writeback", "release", "reclaim_wait".
    pub events: Vec<&'static str>,
    /// The allocation gate pauses every task that reaches it.
    pub gate: bool,
    pub wb: WritebackState,
    pub async_queued: usize,
    /// Pages the flusher wrote back, per call.
    pub written: Vec<(FileId, Vec<u32>)>,
    /// Page runs ext4 submitted: (file, (first page, first block, pages), write).
    pub runs: Vec<(FileId, (u32, u64, u32), bool)>,
    /// The file operation in progress (ext4's `set_file_op`).
    pub op: Option<FileOp>,
    /// The flusher's write-back takes ext4's own path (see the module doc).
    pub real_writeback: bool,
    /// A journal handle taken by the fake write-back (not `real_writeback`).
    pub handle: bool,
}

impl Fake {
    /// An idle machine at time 0: a page cache of 100,000 pages, an unfragmented file system, an
    /// empty journal, four tasks.
    pub fn new() -> Fake {
        let p = FsParams { fragmentation: 0.0, ..Default::default() };
        let mut wg = WaitGraph::new(0);
        for _ in 0..4 {
            wg.add_task();
        }
        Fake {
            now: SimTime::ZERO,
            pc: PageCache::new(100_000),
            jn: Journal::new(),
            fs: Fs::new(p, 1 << 34, RngStreams::new(1).stream("fs")),
            wg,
            blocked: Vec::new(),
            reqs: Vec::new(),
            woken: Vec::new(),
            commit_waiters: Vec::new(),
            throttle: Default::default(),
            events: Vec::new(),
            gate: false,
            wb: WritebackState::default(),
            async_queued: 0,
            written: Vec::new(),
            runs: Vec::new(),
            op: None,
            real_writeback: false,
            handle: false,
        }
    }

    /// A file at `path` of the app.
    pub fn file(&mut self, path: &str) -> FileId {
        let id = self.pc.add_file();
        self.fs.create(id, path, APP_UID);
        id
    }

    /// A page cache of `capacity` pages holding one file of `clean` clean then `dirty` dirty
    /// pages (dirtied at time 0).
    pub fn with_pages(capacity: u64, clean: u64, dirty: u64) -> Fake {
        let mut cx = Fake::new();
        cx.pc = PageCache::new(capacity);
        let f = cx.pc.add_file();
        for i in 0..clean + dirty {
            let p = cx.pc.insert(f, i as u32, APP_UID);
            cx.pc.set_uptodate(p);
            if i >= clean {
                cx.pc.set_dirty(p, SimTime::ZERO);
            }
        }
        cx
    }

    /// A file of `pages` dirty pages, dirtied at `at_s` seconds.
    pub fn dirty_file(&mut self, pages: u32, at_s: f64) -> FileId {
        let f = self.pc.add_file();
        for i in 0..pages {
            let p = self.pc.insert(f, i, APP_UID);
            self.pc.set_dirty(p, SimTime::from_secs_f64(at_s));
        }
        f
    }

    /// The blockers of every wait, in order.
    pub fn blockers(&self) -> Vec<Blocker> {
        self.blocked.iter().map(|b| b.1).collect()
    }

    pub fn last_blocker(&self) -> Blocker {
        self.blocked.last().expect("blocked").1
    }

    /// Complete every control request.
    pub fn complete_all(&mut self) {
        for r in &mut self.reqs {
            r.1 = false;
        }
    }

    /// The control requests as (op, first block, origin).
    pub fn control(&self) -> Vec<(ReqOp, u64, Origin)> {
        self.reqs.iter().map(|(r, _)| (r.op, r.sector / 8, r.prov.origin)).collect()
    }
}

/// The ext4 costs the tests use (ns; pages).
pub fn ext4_params() -> Ext4Params {
    Ext4Params {
        copy_page: 100,
        copy_write_page: 100,
        syscall: 1_000,
        metadata: 2_000,
        writeback_page: 50,
        submit_request: 500,
        read_ahead_kib: 128,
        async_read_ahead: false,
        max_sectors: 1024,
        readahead_folio_pages: 1,
        dirty_background_pages: 10_000,
        dirty_limit_pages: 20_000,
        throttle: crate::mm::throttle::ThrottleMode::PerPage,
        reclaim: ReclaimCosts { alloc_page: 10, reclaim_page: 10 },
    }
}

impl Kernel for Fake {
    fn now(&self) -> SimTime {
        self.now
    }
    fn block(&mut self, tid: Tid, b: Blocker, _cat: Cat) {
        self.blocked.push((tid, b));
    }
    fn wait_request(&mut self, tid: Tid, id: ReqId, why: Why, _cat: Cat) {
        self.blocked.push((tid, Blocker::Request { id, why }));
    }
    fn wake_all(&mut self, b: Blocker) {
        if b == Blocker::Handle {
            self.woken.push("handles");
        }
    }
    fn wake_where(&mut self, pred: &dyn Fn(Blocker) -> bool) {
        self.commit_waiters.retain(|&t| !pred(Blocker::Commit { txn: t }));
        self.woken.push("commit");
    }
    fn submit_control(&mut self, _tid: Tid, op: ReqOp, block: u64, blocks: u64, origin: Origin) -> ReqKey {
        let prov = Provenance { origin, ..Provenance::KERNEL };
        self.reqs.push((Request::new(op, block * 8, (blocks * 8) as u32, true, prov), true));
        ReqKey { id: (self.reqs.len() - 1) as ReqId, serial: 0 }
    }
    fn submit_flush_fua(&mut self, tid: Tid, block: u64, blocks: u64, origin: Origin) -> ReqKey {
        let k = self.submit_control(tid, ReqOp::Write, block, blocks, origin);
        let r = &mut self.reqs[k.id as usize].0;
        (r.fua, r.preflush) = (true, true);
        k
    }
    fn live(&self, k: ReqKey) -> bool {
        self.reqs.get(k.id as usize).is_none_or(|x| x.1)
    }
    fn request_mut(&mut self, id: ReqId) -> &mut Request {
        &mut self.reqs[id as usize].0
    }
    fn journal(&mut self) -> &mut Journal {
        &mut self.jn
    }
    fn fs(&self) -> &Fs {
        &self.fs
    }
    fn page_cache(&mut self) -> &mut PageCache {
        &mut self.pc
    }
}

impl Reclaim for Fake {
    fn shrink(&mut self, want: u64) -> Reclaimed {
        self.pc.reclaim(want, ReclaimOrder::Global, |_| false)
    }
    fn alloc_gate_pauses(&mut self, tid: Tid) -> bool {
        if self.gate {
            self.blocked.push((tid, Blocker::Alloc));
        }
        self.gate
    }
    fn wake_kswapd(&mut self) {
        self.events.push("kswapd");
    }
    fn writeback_for_reclaim(&mut self) {
        self.events.push("writeback");
    }
    fn release_alloc_waiters(&mut self) {
        self.events.push("release");
    }
    fn reclaim_wait(&mut self, _tid: Tid, short: u64) {
        assert!(short > 0, "a reclaim wait is for pages still missing");
        self.events.push("reclaim_wait");
    }
}

impl Writeback for Fake {
    fn async_queued(&self) -> usize {
        self.async_queued
    }
    fn ensure_handle(&mut self, tid: Tid) -> bool {
        if self.real_writeback {
            return ext4::ensure_handle(self, tid);
        }
        self.handle = true;
        true
    }
    fn stop_handle_of(&mut self, tid: Tid) {
        if self.real_writeback {
            let txn = self.wg.release_handle(tid).expect("held");
            ext4::stop_handle(self, txn);
        } else {
            assert!(std::mem::take(&mut self.handle), "stops only a handle it holds");
        }
    }
    fn writeback_pages(&mut self, tid: Tid, file: FileId, idxs: &[u32], origin: Origin) -> u64 {
        self.written.push((file, idxs.to_vec()));
        if self.real_writeback {
            return ext4::writeback_pages(self, &ext4_params(), tid, file, idxs, origin);
        }
        assert!(self.handle, "write-back allocates under a handle");
        for &i in idxs {
            let p = self.pc.lookup(file, i).expect("a dirty page");
            self.pc.start_writeback(p, 0);
        }
        idxs.len() as u64
    }
    fn writeback_state(&mut self) -> &mut WritebackState {
        &mut self.wb
    }
}

impl Ext4 for Fake {
    fn fs_mut(&mut self) -> &mut Fs {
        &mut self.fs
    }
    fn wait_graph(&mut self) -> &mut WaitGraph {
        &mut self.wg
    }
    fn set_file_op(&mut self, _tid: Tid, op: Option<FileOp>) {
        self.op = op;
    }
    fn count_bytes(&mut self, _tid: Tid, _bytes: u64, _write: bool) {}
    fn submit_pages(&mut self, _tid: Tid, file: FileId, run: (u32, u64, u32), write: bool, _origin: Origin) -> u64 {
        let id = PAGE_RUN_IDS + self.runs.len() as ReqId;
        for i in 0..run.2 {
            let p = self.pc.lookup(file, run.0 + i).expect("page");
            if write {
                self.pc.start_writeback(p, id);
            } else {
                self.pc.lock_for_read(p, id);
            }
        }
        self.runs.push((file, run, write));
        500
    }
    fn key(&self, id: ReqId) -> ReqKey {
        ReqKey { id, serial: 0 }
    }
    fn task_is_fg(&self, _tid: Tid) -> bool {
        true
    }
    fn wake_flusher(&mut self) {
        self.woken.push("flusher");
    }
    fn wake_jbd2(&mut self) {
        self.woken.push("jbd2");
    }
    fn wake_jbd2_holders(&mut self, _txn: u64) {
        self.woken.push("holders");
    }
    fn dirty_throttle(&mut self) -> &mut crate::mm::throttle::DirtyThrottle {
        &mut self.throttle
    }
}
