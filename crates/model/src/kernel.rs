//! The context kernel threads and paths run in: what a step of a task asks for ([`After`]),
//! where its blocked time goes ([`Cat`]), and the [`Kernel`] trait through which a layer module
//! (the jbd2 commit thread in [`crate::fs::jbd2`], kswapd and direct reclaim in
//! [`crate::mm::reclaim`], the flusher in [`crate::mm::writeback`]) acts on the rest of the machine without owning it.
//!
//! The simulator implements [`Kernel`] on its world; unit tests use one fake machine
//! (`crate::testkit`, test builds only) that records what was blocked, woken and submitted. A layer step is a plain function
//! `step(cx, tid, …) -> (cpu_ns, After)`: the CPU work the task does first, then what it does
//! when that burst ends. A step that blocks registers the wait (through [`Kernel::block`] or
//! [`Kernel::wait_request`]) and returns [`After::Block`]; it never sleeps on its own.

use forefront_engine::SimTime;

use crate::block::{ReqId, ReqKey, ReqOp, Request};
use crate::fs::{Fs, Journal};
use crate::mm::PageCache;
use crate::prov::{Origin, Tid};
use crate::wait::{Blocker, Why};

/// Where a task's time went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat {
    CpuRunning = 0,
    CpuRunnable,
    /// Waiting for a page or buffer under I/O someone else started (page lock, write-back).
    PageWait,
    /// Journal handles and commits.
    Journal,
    /// Own requests, by stage.
    BlockQueue,
    DeviceQueue,
    DeviceService,
    /// Dirty throttling and request-queue congestion.
    Throttle,
    /// Page allocation: reclaim waits and the FG-first allocation gate.
    Alloc,
    Net,
    Ipc,
    Sleep,
}

impl Cat {
    pub const COUNT: usize = 12;
    pub const ALL: [Cat; Cat::COUNT] = [
        Cat::CpuRunning,
        Cat::CpuRunnable,
        Cat::PageWait,
        Cat::Journal,
        Cat::BlockQueue,
        Cat::DeviceQueue,
        Cat::DeviceService,
        Cat::Throttle,
        Cat::Alloc,
        Cat::Net,
        Cat::Ipc,
        Cat::Sleep,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Cat::CpuRunning => "cpu_running",
            Cat::CpuRunnable => "cpu_runnable",
            Cat::PageWait => "page_lock_writeback",
            Cat::Journal => "journal",
            Cat::BlockQueue => "block_queue",
            Cat::DeviceQueue => "device_queue",
            Cat::DeviceService => "device_service",
            Cat::Throttle => "dirty_throttle",
            Cat::Alloc => "page_alloc",
            Cat::Net => "network",
            Cat::Ipc => "ipc",
            Cat::Sleep => "sleep",
        }
    }
}

/// What a task does when its current CPU burst ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Take the next step.
    Step,
    /// Leave the CPU: the step registered a wait.
    Block,
    Sleep(SimTime),
    Exit,
}

/// CPU work (ns) to do first, and what follows it.
pub type Step = (u64, After);

/// What a layer module needs from the machine around it.
pub trait Kernel {
    fn now(&self) -> SimTime;
    /// `tid` waits on `b`; its blocked time is charged to `cat`.
    fn block(&mut self, tid: Tid, b: Blocker, cat: Cat);
    /// `tid` waits for live request `id` for reason `why`; time waiting for a request it
    /// submitted itself is split by the request's stage, otherwise charged to `cat_other`.
    fn wait_request(&mut self, tid: Tid, id: ReqId, why: Why, cat_other: Cat);
    /// Wake every task blocked on `b`, in the order they blocked.
    fn wake_all(&mut self, b: Blocker);
    /// Wake every task whose blocker satisfies `pred`, in the order they blocked.
    fn wake_where(&mut self, pred: &dyn Fn(Blocker) -> bool);
    /// Submit a data-less or journal request (flush, discard, journal blocks, metadata) of
    /// `blocks` 4 KiB blocks at `block`; returns its key.
    fn submit_control(&mut self, tid: Tid, op: ReqOp, block: u64, blocks: u64, origin: Origin) -> ReqKey;
    /// Whether the request `k` names is still live (ids are reused; the key tells them apart).
    fn live(&self, k: ReqKey) -> bool;
    fn request_mut(&mut self, id: ReqId) -> &mut Request;
    /// Submit a write of `blocks` 4 KiB blocks at `block` with PREFLUSH + FUA (jbd2's commit
    /// record, a log's super root). As Linux 3.10's `blk_insert_flush` does with every
    /// REQ_FLUSH / REQ_FUA request, it never enters the I/O scheduler and never merges: it goes
    /// to the dispatch queue (`BlockQueue::submit`).
    fn submit_flush_fua(&mut self, tid: Tid, block: u64, blocks: u64, origin: Origin) -> ReqKey;
    fn journal(&mut self) -> &mut Journal;
    fn fs(&self) -> &Fs;
    fn page_cache(&mut self) -> &mut PageCache;
}
