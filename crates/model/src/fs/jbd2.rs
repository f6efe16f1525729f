//! The jbd2 commit thread, phase by phase, driven through the [`Kernel`] context.
//!
//! One call to [`step`] is one step of the thread: commit the running transaction when a
//! commit was asked for (by fsync or the commit timer), then walk the committing transaction
//! through [`CommitPhase`]: T_LOCKED (wait for the open handles to stop; new handles wait) →
//! journal blocks submitted (descriptor + one block per metadata block, one request) → ordered
//! data (wait for every data write the transaction allocated, data=ordered) → wait for the
//! journal blocks → commit record (PREFLUSH + FUA) → committed (metadata becomes checkpoint
//! work) → the commit callback: discards of the extents the transaction freed, one synchronous
//! discard at a time → commit waiters wake → idle.
//!
//! # The commit record, and `journal_async_commit`
//! fs/jbd2/commit.c of v3.10, `jbd2_journal_commit_transaction`: the journal blocks are
//! submitted (the `t_buffers` loop) before the wait for the ordered data
//! (`journal_finish_inode_data_buffers`), so they are written while it lasts. Then:
//! - by default the thread waits for the journal blocks and only then submits the commit record
//!   with `WRITE_FLUSH_FUA` (`journal_submit_commit_record`, barriers on) and waits for it;
//!   the block layer sends it past the I/O scheduler (`blk_insert_flush`,
//!   [`crate::kernel::Kernel::submit_flush_fua`]);
//! - with the `async_commit` feature (mount option `journal_async_commit`, which the Galaxy S5
//!   and S6 mount /data with) it submits the commit record right after the ordered data wait,
//!   as a plain `WRITE_SYNC` ("Done it all: now write the commit record asynchronously"), waits
//!   for the journal blocks and the commit record, then issues one cache flush
//!   (`blkdev_issue_flush`) and waits for it.
//!
//! Either way the transaction is committed (and its callback runs) only after that.
//!
//! # Discards as Linux 3.4–3.10 issues them (`-o discard`)
//! Sources, fs/ext4/mballoc.c and fs/jbd2/commit.c of v3.10:
//! - ext4_free_blocks() frees an extent per block group: a range that crosses a group boundary
//!   is freed (and recorded) as one `ext4_free_data` entry per group ([`BLOCKS_PER_GROUP`]);
//!   ext4_mb_free_metadata() merges a new entry with an adjacent one of the same group and
//!   transaction.
//! - The entries hang on the transaction (`t_private_list`); jbd2 calls
//!   `journal->j_commit_callback` (ext4_journal_commit_callback) after setting
//!   `j_commit_sequence` and before `wake_up(&journal->j_wait_done_commit)`. So a task that
//!   sleeps in jbd2_log_wait_commit() (fsync) for this transaction wakes only after every
//!   discard of it finished, and the commit thread starts no other commit meanwhile; a task
//!   that checks afterwards finds the sequence already advanced and does not wait.
//! - ext4_free_data_callback() calls ext4_issue_discard() → sb_issue_discard() →
//!   blkdev_issue_discard() per entry, which submits the entry's bios (REQ_WRITE |
//!   REQ_DISCARD, without REQ_SYNC: async) and waits for them before the next entry. One
//!   request per entry here: an entry is at most one group (128 MiB), within the 256 MiB
//!   [`MAX_DISCARD_BLOCKS`] this model allows one request.
//!
//! What a discard costs the device is the device's `discard_us_per_mib` (see the device file).
//!
//! # Simplifications versus the kernel (fs/jbd2/commit.c, fs/ext4/mballoc.c)
//! - One running and at most one committing transaction; no journal space limit, so no forced
//!   checkpoints; the journal wraps around its area.
//! - Ordered data: the thread waits for the data requests recorded when the transaction
//!   allocated blocks, one at a time in submission order (`journal_finish_inode_data_buffers`
//!   waits per page); it does not start write-back of still-dirty ordered pages itself.
//!   With the file system's `ordered_wait_file` (Linux before 5.3: `filemap_fdatawait` over
//!   the whole file; fs/jbd2/commit.c of v3.10, and the `i_dirty_start`/`i_dirty_end` ranges
//!   that 5.3 added because such a wait could last "an indefinite amount of time" while another
//!   task appends to the file) it then waits, inode by inode in filing order, for every page
//!   still under write-back up to the inode's size when its wait began, including pages the
//!   flusher submits meanwhile; ext4 files an inode each time write-back allocates its blocks
//!   (`mpage_da_map_and_submit` → `ext4_jbd2_file_inode`, v3.10).
//! - Entries are merged with the previous entry only (the kernel's rb-tree also merges with
//!   the next); frees are in file order here, so the previous one is the adjacent one.
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
/// Blocks per ext4 block group with 4 KiB blocks (`8 * block size`, mke2fs and make_ext4fs):
/// 128 MiB. ext4 frees, and so discards, at most one group per entry.
pub const BLOCKS_PER_GROUP: u64 = 32_768;

/// The discards of a transaction's freed ranges as ext4 issues them: merged when adjacent in
/// the same group, split at group boundaries, in the order freed.
pub fn discard_entries(freed: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(freed.len());
    for &(lba, len) in freed {
        let (mut lba, mut left) = (lba, len);
        while left > 0 {
            let group_end = (lba / BLOCKS_PER_GROUP + 1) * BLOCKS_PER_GROUP;
            let n = left.min(group_end - lba);
            match out.last_mut() {
                Some(last) if last.0 + last.1 == lba && last.0 / BLOCKS_PER_GROUP == lba / BLOCKS_PER_GROUP => last.1 += n,
                _ => out.push((lba, n)),
            }
            lba += n;
            left -= n;
        }
    }
    out
}

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
            if !committing(cx).log_submitted {
                // Descriptor + one journal block per metadata block, written sequentially, and
                // before the wait for the ordered data (the `t_buffers` loop of
                // jbd2_journal_commit_transaction comes before journal_finish_inode_data_buffers).
                let n = 1 + committing(cx).meta.len() as u64;
                let (journal_start, journal_blocks) = (cx.fs().journal_start, cx.fs().journal_blocks);
                let jn = cx.journal();
                let start = journal_start + jn.head % journal_blocks.saturating_sub(n + 1).max(1);
                jn.head += n + 1;
                jn.journal_blocks_written += n + 1;
                let r = cx.submit_control(tid, ReqOp::Write, start, n, Origin::JournalCommit);
                let c = committing(cx);
                c.log.push(r);
                c.log_submitted = true;
                return (n * costs.journal_block, After::Step);
            }
            if wait_first_live(cx, tid, |t| &t.ordered, Why::Ordered) {
                return (0, After::Block);
            }
            if cx.fs().params.ordered_wait_file && wait_ordered_files(cx, tid) {
                return (0, After::Block);
            }
            set_phase(cx, CommitPhase::JournalWrite);
            if cx.fs().params.journal_async_commit {
                // "Done it all: now write the commit record asynchronously": no PREFLUSH or
                // FUA, with the journal blocks still in flight.
                let r = submit_commit_record(cx, tid, false);
                committing(cx).log.push(r);
                return (costs.journal_block, After::Step);
            }
            (PHASE_NS, After::Step)
        }
        CommitPhase::JournalWrite => {
            if wait_first_live(cx, tid, |t| &t.log, Why::JournalWrite) {
                return (0, After::Block);
            }
            committing(cx).log.clear();
            set_phase(cx, CommitPhase::CommitRecord);
            if cx.fs().params.journal_async_commit {
                // With barriers (Android's default) one cache flush once the journal blocks and
                // the commit record are done (blkdev_issue_flush).
                let r = cx.submit_control(tid, ReqOp::Flush, 0, 0, Origin::JournalCommit);
                cx.wait_request(tid, r.id, Why::JournalWrite, Cat::PageWait);
                return (costs.submit, After::Block);
            }
            // Commit record: PREFLUSH + FUA, after the journal blocks.
            let r = submit_commit_record(cx, tid, true);
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
            // j_commit_sequence advances now; its sleeping waiters wake after the callback.
            jn.committed = id;
            jn.commits += 1;
            let c = committing(cx);
            // Popped from the end: stored last entry first.
            let mut entries = discard_entries(&c.freed);
            entries.reverse();
            c.freed = entries;
            set_phase(cx, CommitPhase::Discard);
            (PHASE_NS, After::Step)
        }
        CommitPhase::Discard => {
            let c = committing(cx);
            if let Some((lba, len)) = c.freed.pop() {
                // One entry's discard (synchronous: the next waits for it); an entry over the
                // request limit (none with 128 MiB groups) is sent in parts.
                if len > MAX_DISCARD_BLOCKS {
                    c.freed.push((lba + MAX_DISCARD_BLOCKS, len - MAX_DISCARD_BLOCKS));
                }
                let r = cx.submit_control(tid, ReqOp::Discard, lba, len.min(MAX_DISCARD_BLOCKS), Origin::Discard);
                cx.wait_request(tid, r.id, Why::Discard, Cat::PageWait);
                return (costs.submit, After::Block);
            }
            cx.journal().committing = None;
            // wake_up(&journal->j_wait_done_commit), after the commit callback.
            release_commit_waiters(cx);
            (FINISH_NS, After::Step)
        }
    }
}

/// `filemap_fdatawait` over each inode of the committing transaction (Linux 3.10's
/// `journal_finish_inode_data_buffers`): block `tid` on the request of the next page under
/// write-back from the scan position up to the size the inode had when its wait started, and
/// return true; false when every inode is done. The scan moves forward only, so pages the
/// flusher submits ahead of it meanwhile are waited for too.
fn wait_ordered_files<K: Kernel + ?Sized>(cx: &mut K, tid: Tid) -> bool {
    loop {
        let c = committing(cx);
        let (pos, from, end) = c.ordered_scan;
        let Some(&file) = c.ordered_files.get(pos) else { return false };
        let end = match end {
            Some(e) => e,
            None => {
                let e = cx.fs().inodes[file as usize].size.div_ceil(crate::fs::BLOCK).min(u64::from(u32::MAX)) as u32;
                committing(cx).ordered_scan.2 = Some(e);
                e
            }
        };
        let next = cx.page_cache().files[file as usize].writeback.iter_from(from).next().filter(|&i| i < end);
        if let Some(index) = next {
            let id = cx.page_cache().page(crate::mm::PageRef { file, index }).io.expect("a page under write-back has a request");
            committing(cx).ordered_scan.1 = index;
            cx.wait_request(tid, id, Why::Ordered, Cat::PageWait);
            return true;
        }
        committing(cx).ordered_scan = (pos + 1, 0, None);
    }
}

/// Block `tid` on the first request of the committing transaction's list `keys` that is still
/// live, in list order, and return true; false when every one is done.
fn wait_first_live<K: Kernel + ?Sized>(
    cx: &mut K,
    tid: Tid,
    keys: fn(&crate::fs::Txn) -> &Vec<crate::block::ReqKey>,
    why: Why,
) -> bool {
    let n = keys(committing(cx)).len();
    for i in 0..n {
        let r = keys(committing(cx))[i];
        if cx.live(r) {
            cx.wait_request(tid, r.id, why, Cat::PageWait);
            return true;
        }
    }
    false
}

/// Submit the committing transaction's commit record, the journal's block after its journal
/// blocks: with PREFLUSH + FUA (`WRITE_FLUSH_FUA`, past the I/O scheduler) when `barrier`, else
/// as a plain sync write (the async commit).
fn submit_commit_record<K: Kernel + ?Sized>(cx: &mut K, tid: Tid, barrier: bool) -> crate::block::ReqKey {
    let (journal_start, journal_blocks) = (cx.fs().journal_start, cx.fs().journal_blocks);
    let block = journal_start + (cx.journal().head - 1) % journal_blocks;
    if barrier {
        cx.submit_flush_fua(tid, block, 1, Origin::JournalCommit)
    } else {
        cx.submit_control(tid, ReqOp::Write, block, 1, Origin::JournalCommit)
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
    use crate::mm::FileId;
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
        // Descriptor + 2 journal blocks in one request, submitted before the ordered data wait.
        assert_eq!(step(&mut cx, 1, &COSTS), (3 * COSTS.journal_block, After::Step));
        assert_eq!(cx.reqs[0].0.sectors, 3 * 8);
        // No ordered data: wait for the journal blocks.
        assert_eq!(step(&mut cx, 1, &COSTS), (PHASE_NS, After::Step));
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: 0, why: Why::JournalWrite });
        cx.complete_all();
        // The commit record carries PREFLUSH and FUA.
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert!(cx.reqs[1].0.fua && cx.reqs[1].0.preflush);
        cx.complete_all();
        // Committed: the sequence advances, metadata goes to checkpoint; the waiters sleep on
        // until the commit callback (the discards) is done.
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Step);
        assert_eq!(cx.jn.committed, txn);
        assert_eq!(cx.commit_waiters, vec![txn]);
        assert_eq!(cx.jn.checkpoint.len(), 2);
        // The freed range (blocks 50,000..148,304) crosses three group boundaries: four
        // synchronous discards, one per group, in order; each waits for the one before.
        let want = [(50_000, 15_536), (65_536, 32_768), (98_304, 32_768), (131_072, 17_232)];
        for (i, &(lba, len)) in want.iter().enumerate() {
            assert_eq!(step(&mut cx, 1, &COSTS), (COSTS.submit, After::Block));
            let id = 2 + i as u32;
            assert_eq!(cx.last_blocker(), Blocker::Request { id, why: Why::Discard });
            let (r, _) = &cx.reqs[id as usize];
            assert_eq!((r.sector / 8, u64::from(r.sectors) / 8), (lba, len));
            assert!(!cx.commit_waiters.is_empty(), "waiters sleep through the discards");
            cx.complete_all();
        }
        assert_eq!(step(&mut cx, 1, &COSTS), (FINISH_NS, After::Step));
        assert!(cx.jn.committing.is_none());
        assert!(cx.commit_waiters.is_empty(), "woken after the commit callback");
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Idle);
    }

    #[test]
    fn with_journal_async_commit_the_commit_record_goes_with_the_journal_blocks_and_a_flush_follows() {
        let mut cx = fake();
        cx.fs.params.journal_async_commit = true;
        let a = cx.submit_control(5, ReqOp::Write, 100, 1, Origin::Writeback);
        cx.jn.running.ordered.push(a);
        cx.jn.running.meta.insert(10);
        let txn = cx.jn.running.id;
        cx.jn.commit_requested = txn;
        cx.commit_waiters.push(txn);
        step(&mut cx, 1, &COSTS); // lock
        step(&mut cx, 1, &COSTS); // no handles: to ordered data
        assert_eq!(step(&mut cx, 1, &COSTS), (2 * COSTS.journal_block, After::Step));
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: a.id, why: Why::Ordered });
        cx.reqs[a.id as usize].1 = false;
        // Ordered data done: the commit record goes out at once, a plain write, while the
        // journal blocks (request 1) are still in flight.
        assert_eq!(step(&mut cx, 1, &COSTS), (COSTS.journal_block, After::Step));
        let (rec, live) = &cx.reqs[2];
        assert!(*live && rec.op == ReqOp::Write && rec.sectors == 8 && !rec.fua && !rec.preflush);
        assert!(cx.reqs[1].1, "the journal blocks are not done yet");
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: 1, why: Why::JournalWrite });
        cx.reqs[1].1 = false;
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: 2, why: Why::JournalWrite });
        assert_eq!(cx.jn.committed, txn - 1, "not committed before the flush");
        cx.reqs[2].1 = false;
        // Both done: one cache flush, then committed.
        assert_eq!(step(&mut cx, 1, &COSTS), (COSTS.submit, After::Block));
        assert_eq!(cx.reqs[3].0.op, ReqOp::Flush);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: 3, why: Why::JournalWrite });
        assert_eq!(cx.jn.committed, txn - 1);
        cx.complete_all();
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.jn.committed, txn);
        step(&mut cx, 1, &COSTS); // no discards: the waiters wake
        assert!(cx.commit_waiters.is_empty());
        // Without the option the same commit has one request fewer before it is done, the
        // record written with PREFLUSH + FUA after the journal blocks (the first test).
    }

    #[test]
    fn freed_ranges_become_one_discard_per_group_merged_when_adjacent() {
        // Two adjacent frees in one group merge; a range over a boundary splits; a range
        // after a gap stays apart even in the same group.
        let freed = [(100, 50), (150, 50), (32_700, 100), (40_000, 8)];
        assert_eq!(discard_entries(&freed), vec![(100, 100), (32_700, 68), (32_768, 32), (40_000, 8)]);
        // Adjacent but in the next group: not merged.
        assert_eq!(discard_entries(&[(32_760, 8), (32_768, 8)]), vec![(32_760, 8), (32_768, 8)]);
        assert!(discard_entries(&[]).is_empty());
        let big = discard_entries(&[(0, 4 * BLOCKS_PER_GROUP + 1)]);
        assert_eq!(big.len(), 5);
        assert_eq!(big.iter().map(|e| e.1).sum::<u64>(), 4 * BLOCKS_PER_GROUP + 1);
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
        step(&mut cx, 1, &COSTS); // the journal blocks (request 2) go out first
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: a.id, why: Why::Ordered });
        assert!(cx.reqs[2].1 && cx.reqs[2].0.op == ReqOp::Write, "the journal blocks are written during the wait");
        cx.reqs[a.id as usize].1 = false;
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: b.id, why: Why::Ordered });
        cx.reqs[b.id as usize].1 = false;
        step(&mut cx, 1, &COSTS); // ordered data done
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: 2, why: Why::JournalWrite });
    }

    /// A file of `pages` dirty pages of size `size` pages, filed in the running transaction.
    fn ordered_file(cx: &mut Fake, pages: u32, size: u64) -> FileId {
        let f = cx.file("/data/big");
        cx.fs.inodes[f as usize].size = size * crate::fs::BLOCK;
        for i in 0..pages {
            let p = cx.pc.insert(f, i, 10_000);
            cx.pc.set_dirty(p, SimTime::ZERO);
        }
        cx.jn.running.ordered_files.push(f);
        f
    }

    /// Pages `first..first + n` of `f` go under write-back in one new request.
    fn writeback(cx: &mut Fake, f: FileId, first: u32, n: u32) -> crate::block::ReqKey {
        let r = cx.submit_control(5, ReqOp::Write, 1000 + u64::from(first), u64::from(n), Origin::Writeback);
        cx.pc.start_writeback_range(f, first, n, r.id);
        r
    }

    fn complete(cx: &mut Fake, f: FileId, first: u32, n: u32, r: crate::block::ReqKey) {
        cx.reqs[r.id as usize].1 = false;
        cx.pc.end_writeback_range(f, first, n, r.id);
    }

    #[test]
    fn with_whole_file_waits_the_commit_chases_write_back_up_to_the_size_it_began_with() {
        let mut cx = fake();
        cx.fs.params.ordered_wait_file = true;
        let f = ordered_file(&mut cx, 6, 4);
        let a = writeback(&mut cx, f, 0, 2);
        cx.jn.running.ordered.push(a);
        cx.jn.commit_requested = cx.jn.running.id;
        step(&mut cx, 1, &COSTS); // lock
        step(&mut cx, 1, &COSTS); // no handles: to ordered data
        step(&mut cx, 1, &COSTS); // the journal blocks
                                  // Submitted after the lock (the next transaction's write-back of the same file).
        let b = writeback(&mut cx, f, 2, 1);
        assert_eq!(step(&mut cx, 1, &COSTS).1, After::Block);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: a.id, why: Why::Ordered });
        complete(&mut cx, f, 0, 2, a);
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: b.id, why: Why::Ordered }, "the file's later write-back");
        // The flusher goes on meanwhile: page 3 (below the size) is waited for, page 4 (past it) not.
        let c = writeback(&mut cx, f, 3, 1);
        let d = writeback(&mut cx, f, 4, 1);
        cx.fs.inodes[f as usize].size = 6 * crate::fs::BLOCK; // the writer appends: the end stays
        complete(&mut cx, f, 2, 1, b);
        step(&mut cx, 1, &COSTS);
        assert_eq!(cx.last_blocker(), Blocker::Request { id: c.id, why: Why::Ordered }, "pages submitted during the wait");
        complete(&mut cx, f, 3, 1, c);
        step(&mut cx, 1, &COSTS); // ordered data done
        step(&mut cx, 1, &COSTS);
        assert!(matches!(cx.last_blocker(), Blocker::Request { why: Why::JournalWrite, .. }));
        assert!(cx.live(d), "past the size the wait began with");
    }

    #[test]
    fn without_whole_file_waits_the_commit_waits_only_for_its_own_requests() {
        let mut cx = fake();
        let f = ordered_file(&mut cx, 4, 4);
        let a = writeback(&mut cx, f, 0, 2);
        cx.jn.running.ordered.push(a);
        cx.jn.commit_requested = cx.jn.running.id;
        step(&mut cx, 1, &COSTS); // lock
        step(&mut cx, 1, &COSTS); // no handles: to ordered data
        step(&mut cx, 1, &COSTS); // the journal blocks
        let b = writeback(&mut cx, f, 2, 1);
        step(&mut cx, 1, &COSTS);
        complete(&mut cx, f, 0, 2, a);
        step(&mut cx, 1, &COSTS); // ordered data done
        step(&mut cx, 1, &COSTS);
        assert!(matches!(cx.last_blocker(), Blocker::Request { why: Why::JournalWrite, .. }));
        assert!(cx.live(b));
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
