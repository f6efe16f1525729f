//! The wait graph: for every blocked task, what will release it — and, through the journal,
//! which I/O that finally is.
//!
//! Every layer blocks tasks through one call, [`WaitGraph::block`], naming a [`Blocker`]:
//! a request (with the reason it waits, [`Why`]), a journal handle (the committing transaction
//! is locked), a transaction's commit, the handle holders of a locked transaction (what the
//! jbd2 thread waits for in T_LOCKED), or a non-I/O condition (dirty throttling, congestion,
//! page allocation, a timer, IPC, idle). The graph also records which task holds a journal
//! handle on which transaction, and the wake list of each request.
//!
//! Policies walk it: [`WaitGraph::io_behind`] answers "which requests does this task wait on,
//! directly or through the journal", each tagged with the [`Via`] it was reached through;
//! [`WaitGraph::waiting_through`] answers the reverse question, "which tasks wait, directly or
//! through the journal, on what this task waits for" (whose waits change when it blocks).
//!
//! Invariants:
//! - a task has at most one blocker; [`WaitGraph::unblock`] removes it and returns it;
//! - a task waiting on a request is in that request's wake list, and only there;
//! - wait queues are FIFO: [`WaitGraph::blocked_on`] lists tasks in the order they blocked
//!   (as the kernel's wait queues wake them), never by task id;
//! - walks are bounded: the journal makes chains at most task → jbd2 → handle holder → request,
//!   and a visited set stops any cycle a caller could build.
//!
//! ```
//! use forefront_engine::SimTime;
//! use forefront_model::wait::{Blocker, Via, WaitGraph, Why};
//! let mut g = WaitGraph::new(/* jbd2 */ 1);
//! g.add_task(); g.add_task(); g.add_task();
//! // jbd2 (task 1) waits for an ordered-data write; task 2 waits for the commit of txn 7.
//! g.block(1, Blocker::Request { id: 40, why: Why::Ordered }, SimTime::ZERO);
//! g.block(2, Blocker::Commit { txn: 7 }, SimTime::ZERO);
//! let mut behind = Vec::new();
//! g.io_behind(2, &mut behind);
//! assert_eq!(behind, vec![(40, Why::Ordered, Via::Commit)]);
//! let mut through = Vec::new();
//! g.waiting_through(1, &mut through);
//! assert_eq!(through, vec![1, 2]);
//! ```

use forefront_engine::SimTime;

use crate::block::ReqId;
use crate::prov::Tid;

/// Why a task waits on a request: the kernel path that blocked it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Why {
    /// A request it submitted itself and waits for (a read, a sync write, a flush).
    Own,
    /// A data page someone else's request holds: locked for a read fill, or under write-back
    /// while the task modifies it (stable pages).
    DataPage,
    /// A metadata buffer under a checkpoint write that the task must modify (`lock_buffer`),
    /// or being read in by another task (a cold inode's table block).
    MetaBuffer,
    /// A sync path (fsync, truncate) waiting for write-back of pages it must see on flash.
    SyncWriteback,
    /// The jbd2 commit waiting for the transaction's ordered data (data=ordered).
    Ordered,
    /// The jbd2 commit waiting for its journal blocks or commit record.
    JournalWrite,
    /// The jbd2 commit waiting for the discards of the extents the transaction freed.
    Discard,
}

/// What will release a blocked task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// The completion of request `id`.
    Request { id: ReqId, why: Why },
    /// Starting a journal handle: the committing transaction is locked (T_LOCKED).
    Handle,
    /// The commit of transaction `txn`.
    Commit { txn: u64 },
    /// The handles still open on locked transaction `txn` (the jbd2 thread in T_LOCKED).
    Holders { txn: u64 },
    /// Dirty throttling (balance_dirty_pages).
    Throttle,
    /// Request-queue congestion (the flusher over nr_requests).
    Congestion,
    /// Page allocation: reclaim or the foreground-first allocation gate.
    Alloc,
    /// A timed wake-up (sleep, network transfer).
    Timer,
    /// Another task's signal on a channel.
    Ipc { chan: u32 },
    /// The reply to a binder transaction to `service`: run by server thread `server` (an edge
    /// caller → server), or still queued for a free server thread (`None`).
    Binder { service: u32, server: Option<Tid> },
    /// The inode lock of file `file`, held by a task truncating it (writers wait).
    Inode { file: u32 },
    /// A kernel thread with nothing to do.
    Idle,
}

impl Blocker {
    /// The index of the shared wait queues that completions poll (throttle, congestion,
    /// allocation, journal handle).
    fn queue(self) -> Option<usize> {
        match self {
            Blocker::Throttle => Some(0),
            Blocker::Congestion => Some(1),
            Blocker::Alloc => Some(2),
            Blocker::Handle => Some(3),
            _ => None,
        }
    }

    /// Whether [`WaitGraph::count`] counts the tasks waiting on it (the shared queues).
    pub fn counted(self) -> bool {
        self.queue().is_some()
    }

    /// Whether this is a wait for I/O (directly or through the journal).
    pub fn is_io(self) -> bool {
        matches!(self, Blocker::Request { .. } | Blocker::Handle | Blocker::Commit { .. } | Blocker::Holders { .. })
    }
}

/// How a walk reached a request from the task it started at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    /// The task itself waits on it.
    Direct,
    /// The task waits for a journal handle; the locked transaction waits on a handle holder
    /// that waits on the request.
    Handle,
    /// The task waits for a commit; the commit (jbd2) waits on the request, directly or
    /// through a handle holder.
    Commit,
}

/// Who waits on what. Indexed by task id; tasks are added in id order.
#[derive(Clone, Debug, Default)]
pub struct WaitGraph {
    jbd2: Tid,
    /// Per task: what it waits on, since when, and the order it blocked in.
    blockers: Vec<Option<(Blocker, SimTime, u64)>>,
    seq: u64,
    /// The transaction each task holds a handle on.
    handles: Vec<Option<u64>>,
    /// Wake list per request id: (task, since).
    waiters: Vec<Vec<(Tid, SimTime)>>,
    /// Blocked tasks per [`Blocker::queue`] index (cheap "anyone waiting?" checks).
    counts: [u32; 4],
}

impl WaitGraph {
    /// A graph whose journal commit thread is task `jbd2`.
    pub fn new(jbd2: Tid) -> Self {
        WaitGraph { jbd2, ..Default::default() }
    }

    pub fn set_jbd2(&mut self, jbd2: Tid) {
        self.jbd2 = jbd2;
    }

    /// Register the next task id.
    pub fn add_task(&mut self) -> Tid {
        self.blockers.push(None);
        self.handles.push(None);
        (self.blockers.len() - 1) as Tid
    }

    /// `tid` blocks on `b` from `now`. A request blocker also puts it on the request's wake list.
    pub fn block(&mut self, tid: Tid, b: Blocker, now: SimTime) {
        let slot = &mut self.blockers[tid as usize];
        debug_assert!(slot.is_none(), "task {tid} waits twice ({:?} then {b:?})", slot.map(|s| s.0));
        self.seq += 1;
        *slot = Some((b, now, self.seq));
        if let Some(q) = b.queue() {
            self.counts[q] += 1;
        }
        if let Blocker::Request { id, .. } = b {
            let i = id as usize;
            if self.waiters.len() <= i {
                self.waiters.resize_with(i + 1, Vec::new);
            }
            self.waiters[i].push((tid, now));
        }
    }

    /// `tid` no longer waits; returns what it waited for and since when.
    pub fn unblock(&mut self, tid: Tid) -> Option<(Blocker, SimTime)> {
        let b = self.blockers[tid as usize].take()?;
        if let Some(q) = b.0.queue() {
            self.counts[q] -= 1;
        }
        if let Blocker::Request { id, .. } = b.0 {
            if let Some(w) = self.waiters.get_mut(id as usize) {
                w.retain(|&(t, _)| t != tid);
            }
        }
        Some((b.0, b.1))
    }

    /// `tid` keeps waiting, since the same instant and in the same queue order, on `b` instead
    /// (a queued binder transaction taken by a server thread). Not for request blockers.
    pub fn repoint(&mut self, tid: Tid, b: Blocker) {
        let slot = self.blockers[tid as usize].as_mut().expect("repoint of a task that does not wait");
        debug_assert!(b.queue().is_none() && slot.0.queue().is_none());
        debug_assert!(!matches!(b, Blocker::Request { .. }) && !matches!(slot.0, Blocker::Request { .. }));
        slot.0 = b;
    }

    /// The chain of tasks `tid` waits on through binder replies: the server thread running its
    /// transaction, the server that server calls, and so on (bounded by the number of tasks).
    pub fn binder_chain(&self, tid: Tid, out: &mut Vec<Tid>) {
        out.clear();
        let mut t = tid;
        while let Some(Blocker::Binder { server: Some(s), .. }) = self.blocker(t) {
            if out.contains(&s) || out.len() >= self.blockers.len() {
                break;
            }
            out.push(s);
            t = s;
        }
    }

    /// Restart the clock of `tid`'s wait (it left the CPU only now).
    pub fn restart(&mut self, tid: Tid, now: SimTime) {
        if let Some((_, since, _)) = &mut self.blockers[tid as usize] {
            *since = now;
        }
    }

    /// How many tasks wait on `b`, one of the shared queues (throttle, congestion, allocation,
    /// journal handle); 0 for any other blocker.
    pub fn count(&self, b: Blocker) -> u32 {
        b.queue().map_or(0, |q| self.counts[q])
    }

    pub fn blocker(&self, tid: Tid) -> Option<Blocker> {
        self.blockers[tid as usize].map(|b| b.0)
    }

    pub fn is_blocked_on(&self, tid: Tid, b: Blocker) -> bool {
        self.blocker(tid) == Some(b)
    }

    /// Move the wake list of request `id` (it completed) into `out` (cleared first); the tasks
    /// stay blocked until the caller wakes them. The graph keeps the list's buffer for the
    /// request id's next use, so completions do not allocate.
    pub fn take_waiters_into(&mut self, id: ReqId, out: &mut Vec<(Tid, SimTime)>) {
        out.clear();
        if let Some(w) = self.waiters.get_mut(id as usize) {
            out.append(w);
        }
    }

    /// Tasks waiting on request `id`.
    pub fn request_waiters(&self, id: ReqId) -> impl Iterator<Item = Tid> + '_ {
        self.waiters.get(id as usize).into_iter().flatten().map(|w| w.0)
    }

    /// Tasks whose blocker satisfies `pred`, in the order they blocked (a FIFO wait queue).
    pub fn blocked_on(&self, pred: impl Fn(Blocker) -> bool) -> Vec<Tid> {
        let mut v: Vec<(u64, Tid)> =
            self.blockers.iter().enumerate().filter_map(|(t, b)| b.filter(|b| pred(b.0)).map(|b| (b.2, t as Tid))).collect();
        v.sort_unstable();
        v.into_iter().map(|x| x.1).collect()
    }

    /// The first task (in blocking order) whose blocker is `b`.
    pub fn first_blocked_on(&self, b: Blocker) -> Option<Tid> {
        self.blockers.iter().enumerate().filter_map(|(t, x)| x.filter(|x| x.0 == b).map(|x| (x.2, t as Tid))).min().map(|x| x.1)
    }

    // ------------------------------------------------------------------ journal handles

    pub fn hold_handle(&mut self, tid: Tid, txn: u64) {
        self.handles[tid as usize] = Some(txn);
    }

    /// Drop `tid`'s handle; returns the transaction it was on.
    pub fn release_handle(&mut self, tid: Tid) -> Option<u64> {
        self.handles[tid as usize].take()
    }

    pub fn handle_of(&self, tid: Tid) -> Option<u64> {
        self.handles[tid as usize]
    }

    /// Tasks holding a handle on `txn`, in id order.
    pub fn holders(&self, txn: u64) -> impl Iterator<Item = Tid> + '_ {
        self.handles.iter().enumerate().filter_map(move |(t, h)| (*h == Some(txn)).then_some(t as Tid))
    }

    // ------------------------------------------------------------------ walks

    /// The requests `tid` waits on, directly or through the journal, with the wait reason at
    /// the request and how it was reached. A task waiting for a handle or a commit reaches
    /// whatever the jbd2 thread waits on; jbd2 waiting for handle holders reaches whatever
    /// those wait on.
    pub fn io_behind(&self, tid: Tid, out: &mut Vec<(ReqId, Why, Via)>) {
        out.clear();
        match self.blocker(tid) {
            Some(Blocker::Request { id, why }) => out.push((id, why, Via::Direct)),
            Some(Blocker::Handle) => self.through_jbd2(Via::Handle, out),
            Some(Blocker::Commit { .. }) => self.through_jbd2(Via::Commit, out),
            Some(Blocker::Holders { txn }) => self.through_holders(txn, Via::Direct, out),
            _ => {}
        }
    }

    fn through_jbd2(&self, via: Via, out: &mut Vec<(ReqId, Why, Via)>) {
        match self.blocker(self.jbd2) {
            Some(Blocker::Request { id, why }) => out.push((id, why, via)),
            Some(Blocker::Holders { txn }) => self.through_holders(txn, via, out),
            _ => {}
        }
    }

    fn through_holders(&self, txn: u64, via: Via, out: &mut Vec<(ReqId, Why, Via)>) {
        for h in self.holders(txn) {
            if h == self.jbd2 {
                continue;
            }
            if let Some(Blocker::Request { id, why }) = self.blocker(h) {
                out.push((id, why, via));
            }
        }
    }

    /// The tasks whose [`io_behind`](Self::io_behind) passes through `tid`'s wait, `tid`
    /// first, then in id order: jbd2's waiters (handle and commit waiters) when `tid` is jbd2;
    /// jbd2 and its waiters when `tid` holds a handle on the transaction jbd2 waits to lock.
    pub fn waiting_through(&self, tid: Tid, out: &mut Vec<Tid>) {
        out.clear();
        out.push(tid);
        let jbd2_waits_on_tid = match (self.blocker(self.jbd2), self.handle_of(tid)) {
            (Some(Blocker::Holders { txn }), Some(h)) => txn == h && tid != self.jbd2,
            _ => false,
        };
        if jbd2_waits_on_tid {
            out.push(self.jbd2);
        }
        if tid == self.jbd2 || jbd2_waits_on_tid {
            for (t, b) in self.blockers.iter().enumerate() {
                if matches!(b, Some((Blocker::Handle | Blocker::Commit { .. }, _, _))) && t as Tid != tid {
                    out.push(t as Tid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize) -> WaitGraph {
        let mut g = WaitGraph::new(0);
        for _ in 0..n {
            g.add_task();
        }
        g
    }

    #[test]
    fn block_and_unblock_keep_the_wake_list() {
        let mut g = graph(3);
        g.block(1, Blocker::Request { id: 5, why: Why::Own }, SimTime(10));
        g.block(2, Blocker::Request { id: 5, why: Why::DataPage }, SimTime(20));
        assert_eq!(g.request_waiters(5).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(g.unblock(1), Some((Blocker::Request { id: 5, why: Why::Own }, SimTime(10))));
        assert_eq!(g.request_waiters(5).collect::<Vec<_>>(), vec![2]);
        let mut out = vec![(9, SimTime(1))];
        g.take_waiters_into(5, &mut out);
        assert_eq!(out, vec![(2, SimTime(20))]);
        g.take_waiters_into(5, &mut out);
        assert!(out.is_empty());
        assert_eq!(g.unblock(1), None);
    }

    #[test]
    fn handle_waiters_reach_what_a_holder_waits_on() {
        // jbd2 = 0 waits for the holders of txn 3; task 1 holds a handle on it and waits on a
        // metadata buffer under write-back (D_meta); task 2 cannot start a handle.
        let mut g = graph(4);
        g.hold_handle(1, 3);
        g.block(0, Blocker::Holders { txn: 3 }, SimTime::ZERO);
        g.block(1, Blocker::Request { id: 9, why: Why::MetaBuffer }, SimTime::ZERO);
        g.block(2, Blocker::Handle, SimTime::ZERO);
        g.block(3, Blocker::Commit { txn: 3 }, SimTime::ZERO);
        let behind = |g: &WaitGraph, t| {
            let mut v = Vec::new();
            g.io_behind(t, &mut v);
            v
        };
        let through = |g: &WaitGraph, t| {
            let mut v = Vec::new();
            g.waiting_through(t, &mut v);
            v
        };
        assert_eq!(behind(&g, 2), vec![(9, Why::MetaBuffer, Via::Handle)]);
        assert_eq!(behind(&g, 3), vec![(9, Why::MetaBuffer, Via::Commit)]);
        assert_eq!(behind(&g, 1), vec![(9, Why::MetaBuffer, Via::Direct)]);
        // jbd2 waiting for the holders reaches what they wait on.
        assert_eq!(behind(&g, 0), vec![(9, Why::MetaBuffer, Via::Direct)]);
        // When the holder blocks, jbd2 and both journal waiters wait through it.
        assert_eq!(through(&g, 1), vec![1, 0, 2, 3]);
        // A task holding a handle on another transaction is not waited on.
        g.release_handle(1);
        g.hold_handle(1, 4);
        assert_eq!(through(&g, 1), vec![1]);
        assert!(behind(&g, 2).is_empty());
    }

    #[test]
    fn wait_queues_are_fifo_not_by_id() {
        let mut g = graph(4);
        g.block(3, Blocker::Alloc, SimTime(1));
        g.block(1, Blocker::Alloc, SimTime(2));
        g.block(2, Blocker::Throttle, SimTime(3));
        assert_eq!(g.blocked_on(|b| b == Blocker::Alloc), vec![3, 1]);
        assert_eq!(g.count(Blocker::Alloc), 2);
        assert_eq!(g.first_blocked_on(Blocker::Alloc), Some(3));
        g.unblock(3);
        g.block(3, Blocker::Alloc, SimTime(4));
        assert_eq!(g.blocked_on(|b| b == Blocker::Alloc), vec![1, 3]);
        assert_eq!(g.count(Blocker::Throttle), 1);
    }

    #[test]
    fn non_io_waits_reach_nothing() {
        let mut g = graph(2);
        for b in [Blocker::Throttle, Blocker::Congestion, Blocker::Alloc, Blocker::Timer, Blocker::Ipc { chan: 0 }, Blocker::Idle]
        {
            g.block(1, b, SimTime::ZERO);
            assert!(!b.is_io());
            let mut v = vec![(1, Why::Own, Via::Direct)];
            g.io_behind(1, &mut v);
            assert!(v.is_empty());
            g.unblock(1);
        }
    }

    #[test]
    fn binder_edges_repoint_keep_the_wait_and_chain_through_servers() {
        let mut g = graph(4);
        // Task 0 calls service 1; its transaction waits for a free server thread.
        g.block(0, Blocker::Binder { service: 1, server: None }, SimTime(5));
        let mut chain = vec![];
        g.binder_chain(0, &mut chain);
        assert!(chain.is_empty());
        // Server 2 takes it and calls service 3, run by server 3: 0 → 2 → 3.
        g.repoint(0, Blocker::Binder { service: 1, server: Some(2) });
        g.block(2, Blocker::Binder { service: 3, server: Some(3) }, SimTime(7));
        g.binder_chain(0, &mut chain);
        assert_eq!(chain, vec![2, 3]);
        // The caller's wait still dates from when it blocked.
        assert_eq!(g.unblock(0), Some((Blocker::Binder { service: 1, server: Some(2) }, SimTime(5))));
        // A cycle (2 → 3 → 2) stops.
        g.block(3, Blocker::Binder { service: 1, server: Some(2) }, SimTime(8));
        g.binder_chain(2, &mut chain);
        assert_eq!(chain, vec![3, 2]);
    }
}
