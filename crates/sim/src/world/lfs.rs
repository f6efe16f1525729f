//! The log-structured mount's cleaner (`nilfs_cleanerd`): a task of its own that keeps enough
//! segments of the log ([`forefront_model::fs::log`]) clean by rewriting the live blocks of
//! the oldest used segment at the log's head.
//!
//! Every `CLEAN_INTERVAL_S` (nilfs_cleanerd's `cleaning_interval`, 5 s) it checks the log;
//! while fewer than `min_clean_segments` (its default: 10 % of the segments) are clean it picks
//! the oldest used segment after the head, reads its live blocks that are not cached (ordinary
//! read requests into the page cache, as NILFS2's GC inode does), marks them dirty and wakes
//! the flusher, whose write-back puts them at the head; then it checks again after
//! `MC_CLEAN_INTERVAL_S` (`mc_cleaning_interval`, 1 s). Its I/O competes with everyone's.

use forefront_model::fs::ext4;
use forefront_model::kernel::{After, Cat};
use forefront_model::prov::{Origin, Tid};
use forefront_model::wait::Why;

use super::World;

const CLEAN_INTERVAL_S: f64 = 5.0;
const MC_CLEAN_INTERVAL_S: f64 = 1.0;

impl World {
    pub(super) fn cleaner_step(&mut self, tid: Tid) -> (u64, After) {
        let now = self.now();
        let sleep = |s: f64| After::Sleep(now.after((s * 1e9) as u64));
        let Some(log) = self.fs.log.as_ref() else { return (0, After::Exit) };
        let min_clean = (log.segments() / 10).max(2);
        let Some((_, blocks)) = log.victim(min_clean) else { return (self.us(10.0), sleep(CLEAN_INTERVAL_S)) };
        self.cleaner_passes += 1;
        let k = self.ext4_params();
        let mut cost = self.us(10.0);
        let mut wait = None;
        let mut i = 0;
        while i < blocks.len() {
            let (_, file, fb) = blocks[i];
            let idx = fb as u32;
            match self.pc.lookup(file, idx) {
                None => {
                    // A run of uncached blocks of one file, consecutive in the file.
                    let mut n = 1;
                    while i + n < blocks.len()
                        && blocks[i + n].1 == file
                        && blocks[i + n].2 == fb + n as u64
                        && self.pc.lookup(file, idx + n as u32).is_none()
                        && n < (k.max_sectors / 8) as usize
                    {
                        n += 1;
                    }
                    if self.pc.free_pages() < n as u64 {
                        self.shrink(n as u64);
                    }
                    cost += ext4::read_pages(self, &k, tid, file, idx, n as u32, Origin::Writeback);
                    let p = self.pc.lookup(file, idx).expect("inserted");
                    wait = wait.or(self.pc.page(p).io);
                    i += n;
                    continue;
                }
                Some(p) => {
                    let pg = self.pc.page(p);
                    if pg.locked {
                        wait = wait.or(pg.io);
                    } else if pg.uptodate && !pg.dirty && !pg.writeback {
                        self.pc.set_dirty(p, now);
                        self.cleaner_blocks += 1;
                    }
                }
            }
            i += 1;
        }
        if let Some(id) = wait.filter(|&id| self.reqs.try_get(id).is_some()) {
            self.wait_request(tid, id, Why::DataPage, Cat::PageWait);
            return (cost, After::Block);
        }
        self.wake_flusher();
        (cost, sleep(MC_CLEAN_INTERVAL_S))
    }
}
