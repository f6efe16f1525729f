//! A log-structured area (NILFS2-like) for the files of `fs = "lfs"` mounts ([RS]'s pilot:
//! SQLite on a log-structured file system).
//!
//! The area is a run of LBA blocks at the end of the device, cut into segments (NILFS2's
//! default: 8 MiB, 2048 blocks). Every block a file writes goes to the *head* of the log — a
//! rewrite of a DB page in place becomes an append — and its old copy becomes dead. When the
//! head fills its segment it moves to the next clean segment (one with no live block), skipping
//! those still in use. The cleaner (`nilfs_cleanerd`, a task of the simulator) makes segments
//! clean again by rewriting their live blocks at the head: [`LogArea::victim`] names the segment
//! to clean and its live blocks.
//!
//! An fsync of a log file writes its dirty blocks at the head and then one segment-summary /
//! super-root block with preflush + FUA ([`LogArea::summary_block`]): no jbd2 commit.
//!
//! Invariants: `live[s]` is the number of blocks of segment `s` in the reverse map; a live
//! block is mapped by exactly one (file, file block); the head's segment is never a victim.
//!
//! Simplifications versus NILFS2: checkpoints, snapshots and the DAT (virtual block numbers)
//! are not modelled; the reverse map is exact (NILFS2 finds live blocks through segment
//! summaries and the DAT); when no segment is clean the head takes the segment with the
//! fewest live blocks *without* moving them first ([`LogArea::full`] counts it and the run
//! reports it), so a log too small for its workload is visible, not silently slow.

use std::collections::HashMap;

use crate::mm::FileId;

/// A live block of the log: (LBA, file, file block).
pub type LiveBlock = (u64, FileId, u64);

/// NILFS2's default segment size (`mkfs.nilfs2 -B 2048` with 4 KiB blocks: 8 MiB).
pub const SEGMENT_BLOCKS: u64 = 2048;

#[derive(Clone, Debug)]
pub struct LogArea {
    pub start: u64,
    pub end: u64,
    pub seg_blocks: u64,
    /// Next block to write.
    head: u64,
    /// Live blocks per segment.
    live: Vec<u32>,
    /// Live LBA block → (file, file block).
    rmap: HashMap<u64, (FileId, u64)>,
    /// Blocks appended, segments the head entered, and entries into a segment that still
    /// had live blocks (the log was full).
    pub appended: u64,
    pub segments_used: u64,
    pub full: u64,
    /// The cleaner's passes and the live blocks it marked for rewriting ([`crate::fs::cleaner`]).
    pub cleaner_passes: u64,
    pub cleaner_blocks: u64,
}

impl LogArea {
    /// A log over blocks `start..end` with segments of `seg_blocks` (at least two segments).
    pub fn new(start: u64, end: u64, seg_blocks: u64) -> LogArea {
        let n = ((end - start) / seg_blocks).max(2);
        LogArea {
            start,
            end: start + n * seg_blocks,
            seg_blocks,
            head: start,
            live: vec![0; n as usize],
            rmap: HashMap::new(),
            appended: 0,
            segments_used: 1,
            full: 0,
            cleaner_passes: 0,
            cleaner_blocks: 0,
        }
    }

    pub fn segments(&self) -> usize {
        self.live.len()
    }
    fn seg_of(&self, lba: u64) -> usize {
        ((lba - self.start) / self.seg_blocks) as usize
    }
    pub fn contains(&self, lba: u64) -> bool {
        (self.start..self.end).contains(&lba)
    }
    pub fn live_blocks(&self) -> u64 {
        self.live.iter().map(|&l| u64::from(l)).sum()
    }

    /// Segments with no live block, other than the head's.
    pub fn clean_segments(&self) -> usize {
        let h = self.seg_of(self.head);
        self.live.iter().enumerate().filter(|&(s, &l)| s != h && l == 0).count()
    }

    /// The block `lba` is dead (rewritten elsewhere, truncated or unlinked).
    pub fn kill(&mut self, lba: u64) {
        if self.rmap.remove(&lba).is_some() {
            let s = self.seg_of(lba);
            self.live[s] -= 1;
        }
    }

    /// The next block at the head for (`file`, `fb`); the caller kills the block's old copy.
    pub fn append(&mut self, file: FileId, fb: u64) -> u64 {
        let lba = self.take_head();
        // A block still live there (only when the log was full) loses its owner's copy; the
        // segment's live count stays.
        if self.rmap.insert(lba, (file, fb)).is_none() {
            let s = self.seg_of(lba);
            self.live[s] += 1;
        }
        lba
    }

    /// The block at the head, which moves on (to the next clean segment at a boundary).
    fn take_head(&mut self) -> u64 {
        if self.head % self.seg_blocks == 0 && self.appended > 0 {
            self.enter_next_segment();
        }
        let lba = self.head;
        self.head += 1;
        if self.head == self.end {
            self.head = self.start;
        }
        self.appended += 1;
        lba
    }

    /// The head reached a segment boundary: go on at the next clean segment in log order.
    fn enter_next_segment(&mut self) {
        let n = self.live.len();
        let from = self.seg_of(if self.head == self.start { self.end - 1 } else { self.head - 1 });
        let next = (1..=n).map(|k| (from + k) % n).find(|&s| self.live[s] == 0);
        let seg = next.unwrap_or_else(|| {
            self.full += 1;
            (1..=n).map(|k| (from + k) % n).min_by_key(|&s| self.live[s]).expect("segments")
        });
        self.head = self.start + seg as u64 * self.seg_blocks;
        self.segments_used += 1;
    }

    /// Where an fsync's segment summary (and super root) goes: the head.
    pub fn summary_block(&mut self) -> u64 {
        self.take_head()
    }

    /// The segment the cleaner should clean next and its live blocks (in LBA order), when
    /// fewer than `min_clean` segments are clean: the oldest in log order after the head (the
    /// timestamp policy, nilfs_cleanerd's default), skipping the head's own.
    pub fn victim(&self, min_clean: usize) -> Option<(usize, Vec<LiveBlock>)> {
        if self.clean_segments() >= min_clean {
            return None;
        }
        let n = self.live.len();
        let h = self.seg_of(self.head);
        let s = (1..n).map(|k| (h + k) % n).find(|&s| self.live[s] > 0)?;
        let base = self.start + s as u64 * self.seg_blocks;
        let blocks = (base..base + self.seg_blocks).filter_map(|lba| self.rmap.get(&lba).map(|&(f, fb)| (lba, f, fb))).collect();
        Some((s, blocks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_append_and_kill_the_old_copy() {
        let mut log = LogArea::new(1000, 1000 + 4 * 8, 8);
        let a = log.append(1, 0);
        let b = log.append(1, 1);
        assert_eq!((a, b), (1000, 1001));
        // Rewrite file block 0: a new block at the head, the old one dead.
        log.kill(a);
        let a2 = log.append(1, 0);
        assert_eq!(a2, 1002);
        assert_eq!(log.live_blocks(), 2);
        assert_eq!(log.clean_segments(), 3);
    }

    #[test]
    fn the_head_skips_segments_in_use_and_the_cleaner_picks_the_oldest() {
        let mut log = LogArea::new(0, 4 * 4, 4);
        // Fill segment 0 with live blocks, segment 1 with blocks that die.
        for fb in 0..4 {
            log.append(1, fb);
        }
        for fb in 0..4 {
            let l = log.append(2, fb);
            log.kill(l);
        }
        assert_eq!(log.clean_segments(), 2, "segments 1 (dead) and 3 are clean; 2 holds the head next");
        // Segments 2 and 3 fill; the head wraps to segment 1 (clean), skipping segment 0.
        for fb in 0..8 {
            log.append(3, fb);
        }
        let next = log.append(4, 0);
        assert_eq!(next, 4, "segment 0 is still live: the head takes segment 1");
        assert_eq!(log.full, 0);
        // With no clean segment left, the cleaner's victim is the oldest after the head.
        let (seg, blocks) = log.victim(1).expect("no clean segment");
        assert_eq!(seg, 2);
        assert_eq!(blocks.len(), 4);
        assert!(blocks.iter().all(|&(_, f, _)| f == 3));
    }

    #[test]
    fn a_full_log_is_counted() {
        let mut log = LogArea::new(0, 2 * 2, 2);
        for fb in 0..5 {
            log.append(1, fb);
        }
        assert_eq!(log.full, 1);
    }
}
