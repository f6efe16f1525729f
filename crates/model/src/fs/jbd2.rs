//! The jbd2 commit thread, phase by phase, driven through the [`Kernel`] context.
//!
//! One call to [`step`] is one step of the thread: commit the running transaction when a
//! commit was asked for (by fsync or the commit timer), then walk the committing transaction
//! through [`CommitPhase`]: T_LOCKED (wait for the open handles to stop; new handles wait) →
//! ordered data (wait for every data write the transaction allocated, data=ordered) → journal
//! blocks (descriptor + one block per metadata block, one request) → commit record (PREFLUSH +
//! FUA) → committed (metadata becomes checkpoint work, commit waiters wake) → discards of the
//! extents the transaction freed, one request at a time → idle.
//!
//! # Simplifications versus the kernel (fs/jbd2/commit.c, fs/ext4/mballoc.c)
//! - One running and at most one committing transaction; no journal space limit, so no forced
//!   checkpoints; the journal wraps around its area.
//! - Ordered data: the thread waits for the data requests recorded when the transaction
//!   allocated blocks, one at a time in submission order (`journal_finish_inode_data_buffers`
//!   waits per page); it does not start write-back of still-dirty ordered pages itself.
//! - Discards are issued after the commit waiters are woken (ext4's `ext4_free_data_callback`
//!   runs from the commit callback); each extent is one discard of at most 256 MiB, the rest of
//!   a longer extent follows, and the thread waits for each before the next.
//! - CPU costs of the thread's own work are fixed (constants below, assumptions of the same
//!   order as a few hundred instructions per block), plus the scenario's per-block journal and
//!   per-request submit costs ([`Jbd2Costs`]).
//!
//! # Invariants
//! - The thread blocks only on: `Idle` (nothing to commit), `Holders` (T_LOCKED with open
//!   handles), or a request it waits on (ordered data, journal write, discard); every such wait
//!   has a waker (the last handle stop, the request's completion, a commit request).
//! - `committed` only grows; commit waiters of transactions up to it are woken when it does.

use forefront_engine::SimTime;

use crate::block::ReqOp;
use crate::fs::{CommitPhase, Journal};
use crate::kernel::{After, Cat, Kernel, Step};
use crate::prov::{Origin, Tid};
use crate::wait::{Blocker, Why};

/// Locking the running transaction (ns).
const LOCK_NS: u64 = 20_000;
/// Moving between commit phases (ns).
const PHASE_NS: u64 = 10_000;
/// Marking an empty transaction committed, or finishing a commit (ns).
const FINISH_NS: u64 = 5_000;
/// Largest discard request (blocks): 256 MiB.
pub const MAX_DISCARD_BLOCKS: u64 = 1 << 16;

/// Per-operation CPU costs from the scenario (ns).
#[derive(Clone, Copy, Debug)]
pub struct Jbd2Costs {
    /// Per journal block written (checksumming, buffer handling).
    pub journal_block: u64,
    /// Per request submitted.
    pub submit: u64,
}

/// The commit timer (`j_commit_interval`, checked every fifth of it): a running transaction
/// that is not empty and started at least `interval_ns` ago is asked to commit. Returns whether
/// the commit thread must be woken.
pub fn commit_timer(jn: &mut Journal, now: SimTime, interval_ns: u64) -> bool {
    let Some(started) = jn.running.started else { return false };
    if now.since(started) < interval_ns || jn.running.is_empty() {
        return false;
    }
    jn.commit_requested = jn.commit_requested.max(jn.running.id);
    true
}

/// One step of the commit thread `tid`.
pub fn step<K: Kernel + ?Sized>(cx: &mut K, tid: Tid, costs: &Jbd2Costs) -> Step {
    let now = cx.now();
    let jn = cx.journal();
    let Some((txn, phase)) = &jn.committing else {
        // Idle: commit the running transaction if asked.
        let asked = jn.commit_requested >= jn.running.id;
        if asked && !jn.running.is_empty() {
            let next = jn.running.id + 1;
            jn.lock_running(next);
            return (LOCK_NS, After::Step);
        }
        if asked {
            // Nothing to write: the transaction counts as committed.
            jn.committed = jn.running.id;
            jn.running.id += 1;
            jn.running.started = None;
            release_commit_waiters(cx);
            return (FINISH_NS, After::Step);
        }
        cx.block(tid, Blocker::Idle, Cat::Sleep);
        return (0, After::Block);
    };
    let (id, phase, handles) = (txn.id, *phase, txn.handles);
    match phase {
        CommitPhase::Locked => {
            if handles > 0 {
                cx.block(tid, Blocker::Holders { txn: id }, Cat::Journal);
                return (0, After::Block);
            }
            set_phase(cx, CommitPhase::OrderedData);
            // New handles may start on the next running transaction now.
            cx.wake_all(Blocker::Handle);
            (PHASE_NS, After::Step)
        }
        CommitPhase::OrderedData => {
            let n_ordered = committing(cx).ordered.len();
            for i in 0..n_ordered {
                let r = committing(cx).ordered[i];
                if cx.live(r) {
                    cx.wait_request(tid, r.id, Why::Ordered, Cat::PageWait);
                    return (0, After::Block);
                }
            }
            // Descriptor + one journal block per metadata block, written sequentially.
            let n = 1 + committing(cx).meta.len() as u64;
            let (journal_start, journal_blocks) = (cx.fs().journal_start, cx.fs().journal_blocks);
            let jn = cx.journal();
            let start = journal_start + jn.head % journal_blocks.saturating_sub(n + 1).max(1);
            jn.head += n + 1;
            jn.journal_blocks_written += n + 1;
            let r = cx.submit_control(tid, ReqOp::Write, start, n, Origin::JournalCommit);
            set_phase(cx, CommitPhase::JournalWrite);
            cx.wait_request(tid, r.id, Why::JournalWrite, Cat::PageWait);
            (n * costs.journal_block, After::Block)
        }
        CommitPhase::JournalWrite => {
            // Commit record: PREFLUSH + FUA, after the journal blocks.
            let (journal_start, journal_blocks) = (cx.fs().journal_start, cx.fs().journal_blocks);
            let block = journal_start + (cx.journal().head - 1) % journal_blocks;
            let r = cx.submit_control(tid, ReqOp::Write, block, 1, Origin::JournalCommit);
            cx.mark_commit_record(r.id);
            set_phase(cx, CommitPhase::CommitRecord);
            cx.wait_request(tid, r.id, Why::JournalWrite, Cat::PageWait);
            (costs.journal_block, After::Block)
        }
        CommitPhase::CommitRecord => {
            // Committed: metadata becomes checkpoint work; waiters of this commit go on.
            let jn = cx.journal();
            let meta = std::mem::take(&mut jn.committing.as_mut().expect("committing").0.meta);
            for b in meta {
                jn.checkpoint.insert((now.ns(), b));
            }
            jn.committed = id;
            jn.commits += 1;
            release_commit_waiters(cx);
            set_phase(cx, CommitPhase::Discard);
            (PHASE_NS, After::Step)
        }
        CommitPhase::Discard => {
            let c = committing(cx);
            if let Some((lba, len)) = c.freed.pop() {
                // One discard of at most 256 MiB at a time; the rest of the extent follows.
                if len > MAX_DISCARD_BLOCKS {
                    c.freed.push((lba + MAX_DISCARD_BLOCKS, len - MAX_DISCARD_BLOCKS));
                }
                let r = cx.submit_control(tid, ReqOp::Discard, lba, len.min(MAX_DISCARD_BLOCKS), Origin::Discard);
                cx.wait_request(tid, r.id, Why::Discard, Cat::PageWait);
                return (costs.submit, After::Block);
            }
            cx.journal().committing = None;
            (FINISH_NS, After::Step)
        }
    }
}

fn committing<K: Kernel + ?Sized>(cx: &mut K) -> &mut crate::fs::Txn {
    &mut cx.journal().committing.as_mut().expect("committing").0
}

fn set_phase<K: Kernel + ?Sized>(cx: &mut K, p: CommitPhase) {
    cx.journal().committing.as_mut().expect("committing").1 = p;
}

/// Wake the tasks waiting for a commit of a transaction up to the last committed one.
fn release_commit_waiters<K: Kernel + ?Sized>(cx: &mut K) {
    let done = cx.journal().committed;
    cx.wake_where(&|b| matches!(b, Blocker::Commit { txn } if txn <= done));
}

#[cfg(test)]
mod tests {
    use forefront_engine::SimTime;

    use super::*;
    use crate::testkit::Fake;

    /// The fake machine at 1 ms: requests complete only when the test says so.
    fn fake() -> Fake {
        let mut cx = Fake::new();
        cx.now = SimTime::from_ms(1);
        cx
    }

    const COSTS: Jbd2Costs = Jbd2Costs { journal_block: 3_000, submit: 1_000 };

    #[test]
    fn a_commit_walks_every_phase_and_wakes_its_waiters() {
        let mut cx = fake();
        // A transaction with two metadata blocks, one open handle and one freed extent.
        let txn = cx.jn.start_handle(SimTime::ZERO);
        cx.jn.running.meta.extend([10, 11]);
        cx.jn.running.freed.push((50_000, 3 * MAX_DISCARD_BLOCKS / 2));
        cx.jn.commit_requested = txn;
        cx.commit_waiters.push(txn);
        assert_eq!(step(&mut cx, 1, &COSTS), (LOCK_NS, After::Step));
        // T_LOCKED with the handle still open: wait for its holder.
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Holders { txn });
        cx.jn.committing.as_mut().unwrap().0.handles = 0;
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Step);
        assert_eq!(cx.woken, vec!["handles"]);
        // No ordered data: descriptor + 2 journal blocks in one request.
        assert_eq!(step(&mut cx, 1, &COSTS), (3 * COSTS.journal_block, After::Block));
        assert_eq!(cx.reqs[0].0.sectors, 3 * 8);
        cx.complete_all();
        // The commit record carries PREFLUSH and FUA.
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert!(cx.reqs[1].0.fua && cx.reqs[1].0.preflush);
        cx.complete_all();
        // Committed: waiters wake, metadata goes to checkpoint.
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Step);
        assert_eq!(cx.jn.committed, txn);
        assert!(cx.commit_waiters.is_empty());
        assert_eq!(cx.jn.checkpoint.len(), 2);
        // The freed extent is discarded in two requests (256 MiB + the rest), then idle.
        assert_eq!(step(&mut cx, 1, &COSTS), (COSTS.submit, After::Block));
        assert_eq!(cx.last_blocker(), Blocker::Request { id: 2, why: Why::Discard });
        assert_eq!(step(&mut cx, 1, &COSTS), (COSTS.submit, After::Block));
        let discarded: u64 = cx.reqs[2..].iter().map(|r| u64::from(r.0.sectors) / 8).sum();
        assert_eq!(discarded, 3 * MAX_DISCARD_BLOCKS / 2);
        assert_eq!(step(&mut cx, 1, &COSTS), (FINISH_NS, After::Step));
        assert!(cx.jn.committing.is_none());
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Idle);
    }

    #[test]
    fn the_commit_waits_for_ordered_data_in_order() {
        let mut cx = fake();
        let a = cx.submit_control(5, ReqOp::Write, 100, 1, Origin::Writeback);
        let b = cx.submit_control(5, ReqOp::Write, 200, 1, Origin::Writeback);
        cx.jn.running.ordered.extend([a, b]);
        cx.jn.commit_requested = cx.jn.running.id;
        step(&mut cx, 1, &COSTS); // lock
        step(&mut cx, 1, &COSTS); // no handles: to ordered data
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: a.id, why: Why::Ordered });
        cx.reqs[a.id as usize].1 = false;
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: b.id, why: Why::Ordered });
        cx.reqs[b.id as usize].1 = false;
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: 2, why: Why::JournalWrite });
    }

    #[test]
    fn the_timer_asks_for_a_commit_of_an_old_transaction_that_is_not_empty() {
        let mut cx = fake();
        let interval = 5_000_000_000;
        assert!(!commit_timer(&mut cx.jn, SimTime::from_secs_f64(9.0), interval), "nothing started");
        cx.jn.start_handle(SimTime::from_secs_f64(1.0));
        cx.jn.running.meta.insert(10);
        assert!(!commit_timer(&mut cx.jn, SimTime::from_secs_f64(5.9), interval), "not old enough");
        assert_eq!(cx.jn.commit_requested, 0);
        assert!(commit_timer(&mut cx.jn, SimTime::from_secs_f64(6.0), interval));
        assert_eq!(cx.jn.commit_requested, cx.jn.running.id);
    }

    #[test]
    fn an_empty_transaction_asked_for_commits_without_io() {
        let mut cx = fake();
        let id = cx.jn.running.id;
        cx.jn.commit_requested = id;
        cx.commit_waiters.push(id);
        assert_eq!(step(&mut cx, 1, &COSTS), (FINISH_NS, After::Step));
        assert_eq!(cx.jn.committed, id);
        assert!(cx.reqs.is_empty() && cx.commit_waiters.is_empty());
    }
}
