//! The log-structured mount's cleaner (`nilfs_cleanerd`) as a step function: a task of its own
//! that keeps enough segments of the log ([`crate::fs::log`]) clean by rewriting the live blocks
//! of the oldest used segment at the log's head.
//!
//! Every [`CLEAN_INTERVAL_S`] (nilfs_cleanerd's `cleaning_interval`, 5 s) it checks the log;
//! while fewer than `min_clean_segments` (its default: 10 % of the segments, at least two) are
//! clean it picks the oldest used segment after the head, reads its live blocks that are not
//! cached (ordinary read requests into the page cache, as NILFS2's GC inode does), marks them
//! dirty and wakes the flusher, whose write-back puts them at the head; then it checks again
//! after [`MC_CLEAN_INTERVAL_S`] (`mc_cleaning_interval`, 1 s). Its I/O competes with everyone's.
//!
//! Simplifications: a pass costs [`PASS_NS`] of CPU besides its reads; a block whose page is
//! locked for a read (someone else's, or its own read just submitted) makes the pass wait for
//! that read once, then start over.

use crate::fs::ext4::{self, Ext4, Ext4Params};
use crate::kernel::{After, Cat, Step};
use crate::prov::{Origin, Tid};
use crate::wait::Why;

pub const CLEAN_INTERVAL_S: f64 = 5.0;
pub const MC_CLEAN_INTERVAL_S: f64 = 1.0;
/// CPU work of one check of the log (ns).
pub const PASS_NS: u64 = 10_000;

/// One step of the cleaner task `tid` (reads go through `k`'s read path; without a log the task
/// exits).
pub fn step<K: Ext4 + ?Sized>(cx: &mut K, tid: Tid, k: &Ext4Params) -> Step {
    let now = cx.now();
    let sleep = |s: f64| After::Sleep(now.after((s * 1e9) as u64));
    let Some(log) = cx.fs().log.as_ref() else { return (0, After::Exit) };
    let min_clean = (log.segments() / 10).max(2);
    let Some((_, blocks)) = log.victim(min_clean) else { return (PASS_NS, sleep(CLEAN_INTERVAL_S)) };
    cx.fs_mut().log.as_mut().expect("checked").cleaner_passes += 1;
    let mut cost = PASS_NS;
    let mut wait = None;
    let mut marked = 0;
    let mut i = 0;
    while i < blocks.len() {
        let (_, file, fb) = blocks[i];
        let idx = fb as u32;
        match cx.page_cache().lookup(file, idx) {
            None => {
                // A run of uncached blocks of one file, consecutive in the file.
                let mut n = 1;
                while i + n < blocks.len()
                    && blocks[i + n].1 == file
                    && blocks[i + n].2 == fb + n as u64
                    && cx.page_cache().lookup(file, idx + n as u32).is_none()
                    && n < (k.max_sectors / 8) as usize
                {
                    n += 1;
                }
                if cx.page_cache().free_pages() < n as u64 {
                    cx.shrink(n as u64);
                }
                cost += ext4::read_pages(cx, k, tid, file, idx, n as u32, Origin::Writeback);
                let pc = cx.page_cache();
                let p = pc.lookup(file, idx).expect("inserted");
                wait = wait.or(pc.page(p).io);
                i += n;
                continue;
            }
            Some(p) => {
                let pc = cx.page_cache();
                let pg = pc.page(p);
                if pg.locked {
                    wait = wait.or(pg.io);
                } else if pg.uptodate && !pg.dirty && !pg.writeback {
                    pc.set_dirty(p, now);
                    marked += 1;
                }
            }
        }
        i += 1;
    }
    cx.fs_mut().log.as_mut().expect("checked").cleaner_blocks += marked;
    if let Some(id) = wait.filter(|&id| cx.live(cx.key(id))) {
        cx.wait_request(tid, id, Why::DataPage, Cat::PageWait);
        return (cost, After::Block);
    }
    cx.wake_flusher();
    (cost, sleep(MC_CLEAN_INTERVAL_S))
}

#[cfg(test)]
mod tests {
    use forefront_engine::SimTime;

    use super::*;
    use crate::testkit::{ext4_params, Fake, PAGE_RUN_IDS};
    use crate::wait::Blocker;

    /// A log of 4 segments of 8 blocks and a log file of 24 blocks: segments 0–2 used, the
    /// head in segment 3, one clean segment where the cleaner wants two.
    fn full_log() -> (Fake, u32) {
        let mut cx = Fake::new();
        cx.fs.add_log_area(4 * 8, 8);
        let f = cx.file("/log/a");
        cx.fs.inodes[f as usize].log = true;
        cx.fs.inodes[f as usize].size = 24 * crate::fs::BLOCK;
        cx.fs.log_write(f, 0, 24);
        (cx, f)
    }

    #[test]
    fn it_reads_the_oldest_segments_uncached_blocks_and_dirties_the_cached_ones() {
        let (mut cx, f) = full_log();
        // File blocks 0..4 (the oldest segment's first half) are cached and clean.
        for i in 0..4 {
            let p = cx.pc.insert(f, i, 10_000);
            cx.pc.set_uptodate(p);
        }
        let (cost, after) = step(&mut cx, 3, &ext4_params());
        assert!(cost > PASS_NS, "the reads cost CPU too");
        assert_eq!(after, After::Block);
        // One read of the 4 uncached live blocks of segment 0; the pass waits for it.
        assert_eq!(cx.runs, vec![(f, (4, cx.fs.log.as_ref().unwrap().start + 4, 4), false)]);
        assert_eq!(cx.blockers(), vec![Blocker::Request { id: PAGE_RUN_IDS, why: Why::DataPage }]);
        assert_eq!(cx.pc.nr_dirty, 4);
        let log = cx.fs.log.as_ref().unwrap();
        assert_eq!((log.cleaner_passes, log.cleaner_blocks), (1, 4));
    }

    #[test]
    fn with_every_live_block_cached_it_dirties_them_and_wakes_the_flusher() {
        let (mut cx, f) = full_log();
        for i in 0..8 {
            let p = cx.pc.insert(f, i, 10_000);
            cx.pc.set_uptodate(p);
        }
        cx.now = SimTime::from_secs_f64(2.0);
        assert_eq!(step(&mut cx, 3, &ext4_params()), (PASS_NS, After::Sleep(SimTime::from_secs_f64(3.0))));
        assert_eq!((cx.pc.nr_dirty, cx.woken.clone()), (8, vec!["flusher"]));
        assert!(cx.runs.is_empty() && cx.blocked.is_empty());
    }

    #[test]
    fn enough_clean_segments_or_no_log_means_nothing_to_do() {
        let mut cx = Fake::new();
        assert_eq!(step(&mut cx, 3, &ext4_params()), (0, After::Exit));
        cx.fs.add_log_area(4 * 8, 8);
        assert_eq!(step(&mut cx, 3, &ext4_params()), (PASS_NS, After::Sleep(SimTime::from_secs_f64(CLEAN_INTERVAL_S))));
        assert_eq!(cx.fs.log.as_ref().unwrap().cleaner_passes, 0);
    }
}
