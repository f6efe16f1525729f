//! An ext4-like file system: inodes with extents on LBAs, metadata blocks (inode table, block
//! bitmaps, directory blocks) and the bookkeeping of a jbd2-like [`Journal`] in data=ordered
//! mode. The simulator drives the journal's commit thread; this module holds the state.
//!
//! Layout (4 KiB blocks): block 0.. `meta_blocks` hold the inode table, bitmaps and
//! directories; then the journal (`journal_mib`); data blocks after it. Data allocation is
//! delayed (delalloc): a buffered write only reserves, blocks are allocated when pages are
//! written back. Each allocation takes `extent_blocks` contiguous blocks from a cursor; with
//! probability `fragmentation` the cursor first jumps to a random place (an aged file system).
//!
//! With `inode_prealloc` (off by default) a file of 16 blocks or more allocates as ext4's
//! mballoc does for a "stream" (`ext4_mb_group_or_file`: `s_mb_stream_request` = 16 blocks):
//! the request is normalised to a window of the file's logical space sized by the file's size
//! (`ext4_mb_normalize_request`, Linux 2.6.3x: 16, 32, 64 … 512 KiB, 1 MiB from offset 0; a
//! 2 MiB-aligned 2 MiB window up to 4 MiB, 4 MiB-aligned 4 MiB up to 8 MiB, then 8 MiB), trimmed
//! to start after the file's allocated blocks to its left and to end before those to its right,
//! taken from the cursor in one piece; the blocks the request does not use stay the inode's
//! preallocation (PA), and later allocations inside the window map into it, so a growing file
//! stays physically contiguous while other files' blocks go elsewhere. Smaller files keep the
//! cursor (ext4's per-CPU locality-group PA packs small files one after the other, as the cursor
//! does). Simplifications: the window comes from the cursor, not from the goal block after the
//! file's last extent (the model keeps no free-space map); one PA per inode, dropped on
//! truncate and unlink, not when the last writer closes the file (`ext4_release_file`); a PA's
//! unused blocks are not counted as allocated.

pub mod cleaner;
pub mod ext4;
pub mod jbd2;
pub mod log;
pub mod readahead;
pub mod vfs;

use std::collections::BTreeSet;

use forefront_engine::{Rng, SimRng, SimTime};
use serde::{Deserialize, Serialize};

use crate::block::ReqKey;
use crate::mm::FileId;
use crate::prov::{Tid, Uid};

pub const BLOCK: u64 = 4096;
pub const SECTORS_PER_BLOCK: u64 = BLOCK / 512;

/// File-system tunables as in a scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FsParams {
    /// Journal commit interval (s); ext4/jbd2 default 5 s.
    pub commit_interval_s: f64,
    /// Journal size (MiB); mke2fs default for a 16 GiB partition is 64 MiB.
    pub journal_mib: u64,
    /// Probability that a new extent starts at a random place instead of the cursor.
    pub fragmentation: f64,
    /// Blocks allocated contiguously per allocation (before a possible jump).
    pub extent_blocks: u32,
    /// Writers wait for pages under write-back (stable pages), as QASIO observed (D_data).
    pub stable_pages: bool,
    /// Mounted with `-o discard`: freed extents are discarded at the end of the commit (D_discard).
    pub discard: bool,
    /// Files of 16 blocks or more allocate through a per-inode preallocation window, as ext4's
    /// mballoc does (module doc); off: every allocation takes the cursor.
    pub inode_prealloc: bool,
    /// data=ordered as jbd2 waits before Linux 5.3: the commit waits for every page under
    /// write-back of each inode filed in the transaction, up to the inode's size when the wait
    /// starts (`journal_finish_inode_data_buffers` → `filemap_fdatawait`, which also finds
    /// pages the flusher submits meanwhile); off: only the requests the transaction's own
    /// allocations submitted (module doc of [`jbd2`]).
    pub ordered_wait_file: bool,
    /// Mounted with `journal_async_commit` (the Galaxy S5's and S6's /data): jbd2 writes the
    /// commit record without PREFLUSH + FUA right after the ordered data, with the journal
    /// blocks still in flight, and flushes the device's cache once both are done (module doc of
    /// [`jbd2`]); off: the commit record (PREFLUSH + FUA) after the journal blocks complete.
    pub journal_async_commit: bool,
    /// ext4 with its journal (jbd2, the default). `false`: a file system made or mounted
    /// without one (`mke2fs -O ^has_journal`; the twin's VM, docs/twin.md twin21): metadata is
    /// changed in place, never committed. An fsync or fdatasync writes the file's dirty pages,
    /// then, where they changed, its inode block and (a file created or removed) its directory
    /// block, each a synchronous write it waits for, then flushes the device's cache
    /// (`ext4_fsync_nojournal`: `sync_inode_metadata`, `ext4_sync_parent`). Simplifications: a
    /// `write()` call marks the inode for the next fdatasync as well as fsync (the twin's trace
    /// shows one inode write per updater fdatasync of an overwritten file); the flusher does not
    /// write dirty inodes (the kernel's does, after `dirty_expire`); allocation at write-back
    /// has no transaction to file its bitmaps in and costs `metadata` only.
    #[serde(skip_serializing_if = "is_true")]
    pub journal: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Default for FsParams {
    fn default() -> Self {
        FsParams {
            commit_interval_s: 5.0,
            journal_mib: 64,
            fragmentation: 0.1,
            extent_blocks: 2048,
            stable_pages: true,
            discard: true,
            inode_prealloc: false,
            ordered_wait_file: false,
            journal_async_commit: false,
            journal: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Inode {
    pub path: String,
    pub owner: Uid,
    pub size: u64,
    /// (file block, first LBA block, length) sorted by file block.
    pub extents: Vec<(u64, u64, u64)>,
    /// Block of the inode table holding this inode.
    pub itable_block: u64,
    /// Directory block holding its entry.
    pub dir_block: u64,
    pub unlinked: bool,
    /// The inode's metadata changed in this transaction (fsync must commit it).
    pub meta_txn: Option<u64>,
    /// Its data changed in a way fdatasync must commit (size or allocation).
    pub datasync_txn: Option<u64>,
    /// The task truncating it (creat with O_TRUNC, truncate, unlink) while it drops the file's
    /// pages: the inode lock (`i_rwsem`) the kernel holds there, which keeps writers out.
    pub truncating: Option<Tid>,
    /// On a log-structured mount ([`log`]): every block written goes to the log's head.
    pub log: bool,
    /// On a FAT (vfat) mount of another device: its [`Region`] (index + 1); 0 = ext4.
    pub region: u8,
    /// An ext4 inode on a file system without a journal ([`FsParams::journal`]).
    pub nojournal: bool,
    /// Without a journal: its inode block changed since the last fsync wrote it.
    pub inode_dirty: bool,
    /// Without a journal: its directory block changed (created or removed) since the last fsync.
    pub dir_dirty: bool,
    /// The inode's preallocation with `inode_prealloc`: (first file block, first LBA, blocks).
    pub pa: Option<(u64, u64, u64)>,
    /// Its read-ahead window ([`readahead`]; used with `phone.async_read_ahead`).
    pub ra: readahead::RaState,
    /// Not in the inode cache (dropped with `echo 3 > drop_caches`): its inode-table block
    /// must be in memory before its data is read ([`Fs::itable_cold`]).
    pub cold: bool,
}

impl Inode {
    /// Whether its metadata goes through the ext4 journal (not a log or FAT file, nor on an
    /// ext4 without a journal).
    pub fn journaled(&self) -> bool {
        self.ext4() && !self.nojournal
    }

    /// Whether it is an ext4 file (not a log or FAT file), with a journal or without.
    pub fn ext4(&self) -> bool {
        !self.log && self.region == 0
    }
}

impl Inode {
    /// The LBA block of file block `fb`, if allocated.
    pub fn map(&self, fb: u64) -> Option<u64> {
        let i = self.extents.partition_point(|&(start, _, _)| start <= fb);
        if i == 0 {
            return None;
        }
        let (start, lba, len) = self.extents[i - 1];
        (fb < start + len).then(|| lba + (fb - start))
    }
    /// Allocated blocks.
    pub fn allocated(&self) -> u64 {
        self.extents.iter().map(|e| e.2).sum()
    }
}

/// Lookups in one inode's block map that remember the extent (or hole) found last, so that a
/// walk over neighbouring blocks costs one search per extent, not one per block. Start a new
/// cursor whenever the map changes.
#[derive(Clone, Copy, Debug, Default)]
pub struct MapCursor {
    /// The last extent found: (file block, LBA, length); length 0 = none.
    ext: (u64, u64, u64),
    /// The last hole found: file blocks `[start, end)`; empty = none.
    hole: (u64, u64),
}

impl MapCursor {
    /// The LBA block of file block `fb` of `ino`, if allocated (as [`Inode::map`]).
    #[inline]
    pub fn map(&mut self, ino: &Inode, fb: u64) -> Option<u64> {
        let (start, lba, len) = self.ext;
        if fb >= start && fb - start < len {
            return Some(lba + (fb - start));
        }
        if fb >= self.hole.0 && fb < self.hole.1 {
            return None;
        }
        let i = ino.extents.partition_point(|&(start, _, _)| start <= fb);
        let next = ino.extents.get(i).map_or(u64::MAX, |e| e.0);
        if i > 0 {
            let e = ino.extents[i - 1];
            if fb < e.0 + e.2 {
                self.ext = e;
                return Some(e.1 + (fb - e.0));
            }
            self.hole = (e.0 + e.2, next);
        } else {
            self.hole = (0, next);
        }
        None
    }
    /// The mapping of file block `fb` of `ino` and how many blocks from it (at most `max`, at
    /// least 1) map the same way: consecutive LBAs from the one returned, or all holes.
    #[inline]
    pub fn map_run(&mut self, ino: &Inode, fb: u64, max: u64) -> (Option<u64>, u64) {
        match self.map(ino, fb) {
            Some(lba) => (Some(lba), (self.ext.0 + self.ext.2 - fb).min(max).max(1)),
            None => (None, (self.hole.1 - fb).min(max).max(1)),
        }
    }
}

/// The file system's block map and inode table.
pub struct Fs {
    pub params: FsParams,
    pub inodes: Vec<Inode>,
    /// Total blocks on the device.
    pub blocks: u64,
    pub meta_blocks: u64,
    pub journal_start: u64,
    pub journal_blocks: u64,
    pub data_start: u64,
    cursor: u64,
    rng: SimRng,
    pub allocated_blocks: u64,
    /// The log-structured area of `fs = "lfs"` mounts, at the end of the device.
    pub log: Option<log::LogArea>,
    /// FAT file systems on other devices, each a run of LBA blocks after the main device's.
    pub regions: Vec<Region>,
    /// End of the LBA space (the main device, then each region).
    pub device_end: u64,
    /// Inode-table blocks dropped from memory with their inodes: a cold inode's first read
    /// reads its block (synchronously, `REQ_META`, as `__ext4_get_inode_loc` does), once per
    /// block; the read in flight, by block.
    pub itable_cold: std::collections::BTreeSet<u64>,
    pub itable_reads: std::collections::BTreeMap<u64, crate::block::ReqKey>,
}

/// A FAT (vfat) file system on a device of its own (Android's `/sdcard`): blocks
/// `start..end` of the LBA space; the first `fat_blocks` hold the FAT and the root directory,
/// data clusters (one 4 KiB block each) follow, allocated contiguously from a cursor when
/// pages are written back. No journal: an fsync writes the file's data, its FAT block and its
/// directory entry in place, then flushes the device (`fat_file_fsync`).
#[derive(Clone, Debug)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub fat_blocks: u64,
    cursor: u64,
}

impl Region {
    /// The FAT block holding the entry of cluster `lba`.
    pub fn fat_block(&self, lba: u64) -> u64 {
        // 1,024 four-byte entries per 4 KiB FAT block.
        self.start + ((lba - self.start) / 1024) % (self.fat_blocks / 2).max(1)
    }
    /// The directory block holding file `ino`'s entry (128 entries of 32 bytes per block).
    pub fn dir_block(&self, ino: FileId) -> u64 {
        self.start + self.fat_blocks / 2 + (u64::from(ino) / 128) % (self.fat_blocks / 2).max(1)
    }
}

impl Fs {
    pub fn new(params: FsParams, capacity_bytes: u64, rng: SimRng) -> Self {
        let blocks = capacity_bytes / BLOCK;
        let meta_blocks = 8192; // 32 MiB of inode tables, bitmaps and directories
        let journal_blocks = params.journal_mib * 256;
        let data_start = meta_blocks + journal_blocks;
        Fs {
            params,
            inodes: Vec::new(),
            blocks,
            meta_blocks,
            journal_start: meta_blocks,
            journal_blocks,
            data_start,
            cursor: data_start,
            rng,
            allocated_blocks: 0,
            log: None,
            regions: Vec::new(),
            device_end: blocks,
            itable_cold: Default::default(),
            itable_reads: Default::default(),
        }
    }

    /// Add a FAT region of `blocks` blocks after everything so far (another device's LBA
    /// space); returns its index + 1 for [`Inode::region`].
    pub fn add_region(&mut self, blocks: u64) -> u8 {
        let start = self.device_end;
        // mkfs.vfat on a 16 GB card: two FATs of ~16 MB; 1 % of the region, at least 64 blocks.
        let fat_blocks = (blocks / 100).max(64);
        self.regions.push(Region { start, end: start + blocks, fat_blocks, cursor: start + fat_blocks });
        self.device_end += blocks;
        self.regions.len() as u8
    }

    /// Allocate blocks `fb..fb+count` of FAT file `ino` contiguously from its region's cursor
    /// (wrapping to the start of the data area when the region is full).
    pub fn region_allocate(&mut self, ino: FileId, fb: u64, count: u64) {
        let r = &mut self.regions[usize::from(self.inodes[ino as usize].region) - 1];
        if r.cursor + count > r.end {
            r.cursor = r.start + r.fat_blocks;
        }
        let lba = r.cursor;
        r.cursor += count;
        set_extent(&mut self.inodes[ino as usize], fb, lba, count);
        self.allocated_blocks += count;
    }

    /// Reserve the last `blocks` of the device for a log-structured area (segments of
    /// `seg_blocks`); ext4 allocation stays below it.
    pub fn add_log_area(&mut self, blocks: u64, seg_blocks: u64) {
        let blocks = blocks.min(self.blocks.saturating_sub(self.data_start) / 2);
        let start = self.blocks - blocks;
        self.blocks = start;
        self.cursor = self.cursor.min(start.saturating_sub(1)).max(self.data_start);
        self.log = Some(log::LogArea::new(start, start + blocks, seg_blocks));
    }

    /// Write file blocks `fb..fb+count` of log file `ino` at the log's head: their old copies
    /// die and the inode maps them to the new blocks.
    pub fn log_write(&mut self, ino: FileId, fb: u64, count: u64) {
        let log = self.log.as_mut().expect("a log file has a log area");
        let mut cursor = MapCursor::default();
        for b in fb..fb + count {
            if let Some(old) = cursor.map(&self.inodes[ino as usize], b) {
                log.kill(old);
            } else {
                self.allocated_blocks += 1;
            }
            let lba = log.append(ino, b);
            set_extent(&mut self.inodes[ino as usize], b, lba, 1);
            cursor = MapCursor::default();
        }
    }

    /// Create an inode (its page-cache file id must be the same index).
    pub fn create(&mut self, id: FileId, path: &str, owner: Uid) {
        assert_eq!(id as usize, self.inodes.len(), "inodes are created in file-id order");
        // 16 inodes of 256 B per 4 KiB inode-table block; one directory block per 32 entries.
        let itable_block = 16 + (u64::from(id) / 16) % (self.meta_blocks / 2);
        let dir_block = self.meta_blocks / 2 + (u64::from(id) / 32) % (self.meta_blocks / 4);
        self.inodes.push(Inode {
            path: path.to_string(),
            owner,
            size: 0,
            extents: Vec::new(),
            itable_block,
            dir_block,
            unlinked: false,
            meta_txn: None,
            datasync_txn: None,
            truncating: None,
            log: false,
            region: 0,
            nojournal: !self.params.journal,
            inode_dirty: false,
            dir_dirty: false,
            pa: None,
            ra: Default::default(),
            cold: false,
        });
    }

    /// Drop `file`'s inode from memory with its inode-table block (`echo 3 > drop_caches` on a
    /// file nobody holds open): its next read reads the block again. Not for an open file's
    /// inode, which stays, nor for a log or FAT file.
    pub fn drop_inode(&mut self, file: FileId) {
        let ino = &mut self.inodes[file as usize];
        if ino.ext4() && !ino.unlinked {
            ino.cold = true;
            self.itable_cold.insert(ino.itable_block);
        }
    }

    /// The block-bitmap block covering LBA block `lba` (one bitmap block per 32768 blocks).
    pub fn bitmap_block(&self, lba: u64) -> u64 {
        1 + (lba / 32768) % 15
    }

    /// Allocate `count` blocks for file blocks `fb..fb+count` of `ino`; returns the bitmap
    /// blocks touched (for the journal).
    pub fn allocate(&mut self, ino: FileId, fb: u64, count: u64, touched: &mut Vec<u64>) {
        let mut fb = fb;
        let mut left = count;
        while left > 0 {
            let (lba, run) = match self.take_prealloc(ino, fb, left) {
                Some(x) => x,
                None => {
                    let run = left.min(u64::from(self.params.extent_blocks.max(1)));
                    (self.take_cursor(run), run)
                }
            };
            let inode = &mut self.inodes[ino as usize];
            // Extend the last extent when contiguous in both spaces.
            match inode.extents.last_mut() {
                Some(last) if last.0 + last.2 == fb && last.1 + last.2 == lba => last.2 += run,
                _ => {
                    let pos = inode.extents.partition_point(|e| e.0 < fb);
                    inode.extents.insert(pos, (fb, lba, run));
                }
            }
            let bm = self.bitmap_block(lba);
            if touched.last() != Some(&bm) {
                touched.push(bm);
            }
            self.allocated_blocks += run;
            fb += run;
            left -= run;
        }
    }

    /// `run` contiguous blocks at the cursor (after a possible random jump).
    fn take_cursor(&mut self, run: u64) -> u64 {
        if self.params.fragmentation > 0.0 && self.rng.gen_bool(self.params.fragmentation.min(1.0)) {
            let span = self.blocks.saturating_sub(self.data_start).max(1);
            self.cursor = self.data_start + self.rng.gen_range(0..span);
        }
        if self.cursor + run > self.blocks {
            self.cursor = self.data_start;
        }
        let lba = self.cursor;
        self.cursor += run;
        lba
    }

    /// With `inode_prealloc`, blocks for file blocks `fb..fb+left` of `ino` from its
    /// preallocation, making a new one first if `fb` is outside it: (first LBA, blocks).
    fn take_prealloc(&mut self, ino: FileId, fb: u64, left: u64) -> Option<(u64, u64)> {
        let inode = &self.inodes[ino as usize];
        if !self.params.inode_prealloc || !inode.ext4() {
            return None;
        }
        let inside = |pa: (u64, u64, u64)| fb >= pa.0 && fb < pa.0 + pa.2;
        if let Some(pa) = inode.pa.filter(|&pa| inside(pa)) {
            return Some((pa.1 + (fb - pa.0), left.min(pa.0 + pa.2 - fb)));
        }
        let (start, len) = normalized_window(fb, left, inode.size.div_ceil(BLOCK))?;
        // Trim the window to the file's unallocated blocks around `fb`.
        let i = inode.extents.partition_point(|e| e.0 <= fb);
        let lleft_end = if i > 0 { inode.extents[i - 1].0 + inode.extents[i - 1].2 } else { 0 };
        let lright = inode.extents.get(i).map_or(u64::MAX, |e| e.0);
        let (start, end) = (start.max(lleft_end), (start + len).min(lright));
        if fb < start || fb >= end {
            return None;
        }
        let lba = self.take_cursor(end - start);
        let pa = (start, lba, end - start);
        self.inodes[ino as usize].pa = Some(pa);
        Some((pa.1 + (fb - pa.0), left.min(pa.0 + pa.2 - fb)))
    }

    /// Free file blocks from `from_fb` on; returns the freed LBA ranges (start, len).
    pub fn free_from(&mut self, ino: FileId, from_fb: u64, freed: &mut Vec<(u64, u64)>) {
        if self.inodes[ino as usize].log {
            // A log file's freed blocks just die in their segments (no discard).
            let mut dead = Vec::new();
            self.inodes[ino as usize].log = false;
            self.free_from(ino, from_fb, &mut dead);
            self.inodes[ino as usize].log = true;
            let log = self.log.as_mut().expect("a log file has a log area");
            for (lba, len) in dead {
                for b in lba..lba + len {
                    log.kill(b);
                }
            }
            return;
        }
        let inode = &mut self.inodes[ino as usize];
        inode.pa = None;
        let mut kept = Vec::with_capacity(inode.extents.len());
        for &(start, lba, len) in &inode.extents {
            if start + len <= from_fb {
                kept.push((start, lba, len));
            } else if start >= from_fb {
                freed.push((lba, len));
            } else {
                let keep = from_fb - start;
                kept.push((start, lba, keep));
                freed.push((lba + keep, len - keep));
            }
        }
        inode.extents = kept;
        let n: u64 = freed.iter().map(|f| f.1).sum();
        self.allocated_blocks = self.allocated_blocks.saturating_sub(n);
    }
}

/// ext4's normalised request (`ext4_mb_normalize_request`, Linux 2.6.3x, 4 KiB blocks) for file
/// blocks `fb..fb+len` of a file of `isize` blocks: the logical window (first block, blocks), or
/// `None` for a file under `s_mb_stream_request` (16 blocks), which ext4 serves from its
/// locality group instead.
pub fn normalized_window(fb: u64, len: u64, isize: u64) -> Option<(u64, u64)> {
    let size = (fb + len).max(isize);
    if size < 16 {
        return None;
    }
    let bytes = size * BLOCK;
    let k = |kib: u64| kib * 1024 / BLOCK;
    Some(match bytes {
        b if b <= 16 * 1024 => (0, k(16)),
        b if b <= 32 * 1024 => (0, k(32)),
        b if b <= 64 * 1024 => (0, k(64)),
        b if b <= 128 * 1024 => (0, k(128)),
        b if b <= 256 * 1024 => (0, k(256)),
        b if b <= 512 * 1024 => (0, k(512)),
        b if b <= 1024 * 1024 => (0, k(1024)),
        b if b <= 4 << 20 => (fb / k(2048) * k(2048), k(2048)),
        b if b <= 8 << 20 => (fb / k(4096) * k(4096), k(4096)),
        _ if len <= k(8192) => (fb / k(8192) * k(8192), k(8192)),
        _ => (fb, len),
    })
}

/// Map file blocks `fb..fb+len` of `inode` to `lba..lba+len`, replacing what mapped them and
/// merging with a neighbour contiguous in both spaces.
fn set_extent(inode: &mut Inode, fb: u64, lba: u64, len: u64) {
    let end = fb + len;
    let mut out: Vec<(u64, u64, u64)> = Vec::with_capacity(inode.extents.len() + 2);
    for &(s, l, n) in &inode.extents {
        if s + n <= fb || s >= end {
            out.push((s, l, n));
            continue;
        }
        if s < fb {
            out.push((s, l, fb - s));
        }
        if s + n > end {
            out.push((end, l + (end - s), s + n - end));
        }
    }
    let pos = out.partition_point(|e| e.0 < fb);
    out.insert(pos, (fb, lba, len));
    // Merge around the new extent.
    let mut merged: Vec<(u64, u64, u64)> = Vec::with_capacity(out.len());
    for e in out {
        match merged.last_mut() {
            Some(last) if last.0 + last.2 == e.0 && last.1 + last.2 == e.1 => last.2 += e.2,
            _ => merged.push(e),
        }
    }
    inode.extents = merged;
}

/// The state of the committing transaction, in jbd2's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitPhase {
    /// T_LOCKED: no new handles; waiting for open handles to stop.
    Locked,
    /// T_FLUSH: waiting for the transaction's ordered data.
    OrderedData,
    /// Waiting for the journal blocks (descriptor and metadata blocks), and with
    /// `journal_async_commit` for the commit record.
    JournalWrite,
    /// Writing the commit record (PREFLUSH + FUA), or with `journal_async_commit` the cache
    /// flush after it.
    CommitRecord,
    /// Discarding the extents the transaction freed.
    Discard,
}

/// A transaction's contents.
#[derive(Clone, Debug, Default)]
pub struct Txn {
    pub id: u64,
    pub started: Option<SimTime>,
    /// Metadata blocks modified (journalled copies are written at commit).
    pub meta: BTreeSet<u64>,
    /// Data write requests the commit must wait for (data=ordered).
    pub ordered: Vec<ReqKey>,
    /// Inodes whose blocks it allocated, in filing order (`t_inode_list`).
    pub ordered_files: Vec<FileId>,
    /// With `ordered_wait_file`: the commit's wait position (index into `ordered_files`, next
    /// page, end page fixed when that file's wait started).
    pub ordered_scan: (usize, u32, Option<u32>),
    /// Extents freed in this transaction, discarded after commit.
    pub freed: Vec<(u64, u64)>,
    /// Journal requests in flight that the commit waits for before its commit record (the
    /// journal blocks, and with `journal_async_commit` the commit record itself).
    pub log: Vec<ReqKey>,
    /// The journal blocks were submitted.
    pub log_submitted: bool,
    /// Handles open on it.
    pub handles: u32,
    /// A foreground task asked for this commit (fsync) — for policies and breakdowns.
    pub fg_forced: bool,
}

impl Txn {
    pub fn is_empty(&self) -> bool {
        self.meta.is_empty() && self.ordered.is_empty() && self.freed.is_empty()
    }
}

/// jbd2-like journal state: one running and at most one committing transaction.
pub struct Journal {
    pub running: Txn,
    pub committing: Option<(Txn, CommitPhase)>,
    /// Highest transaction id whose commit completed.
    pub committed: u64,
    /// Transaction id whose commit was requested (by fsync or the timer).
    pub commit_requested: u64,
    pub head: u64,
    /// Committed metadata blocks not yet written to their home location, with commit time.
    pub checkpoint: BTreeSet<(u64, u64)>,
    pub commits: u64,
    pub journal_blocks_written: u64,
}

impl Journal {
    pub fn new() -> Self {
        Journal {
            running: Txn { id: 1, ..Default::default() },
            committing: None,
            committed: 0,
            commit_requested: 0,
            head: 0,
            checkpoint: BTreeSet::new(),
            commits: 0,
            journal_blocks_written: 0,
        }
    }

    /// Whether a new handle must wait (the committing transaction is still locked).
    pub fn handles_blocked(&self) -> bool {
        matches!(self.committing, Some((_, CommitPhase::Locked)))
    }

    /// Start a handle on the running transaction.
    pub fn start_handle(&mut self, now: SimTime) -> u64 {
        debug_assert!(!self.handles_blocked());
        if self.running.started.is_none() {
            self.running.started = Some(now);
        }
        self.running.handles += 1;
        self.running.id
    }

    /// Close the running transaction for commit (T_LOCKED). Handles opened on it still count
    /// down in the committing transaction.
    pub fn lock_running(&mut self, next_id: u64) {
        debug_assert!(self.committing.is_none());
        let txn = std::mem::replace(&mut self.running, Txn { id: next_id, ..Default::default() });
        self.committing = Some((txn, CommitPhase::Locked));
    }
}

impl Default for Journal {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forefront_engine::RngStreams;
    use proptest::prelude::*;

    proptest! {
        /// A cursor answers as `Inode::map` for any sequence of lookups (extents with gaps).
        #[test]
        fn map_cursor_matches_map(gaps in proptest::collection::vec((0u64..6, 1u64..9), 0..8), lookups in proptest::collection::vec(0u64..90, 0..60)) {
            let mut extents = Vec::new();
            let mut fb = 0;
            for (k, (gap, len)) in gaps.into_iter().enumerate() {
                fb += gap;
                extents.push((fb, 1_000 * (k as u64 + 1), len));
                fb += len;
            }
            let ino = Inode { path: String::new(), owner: 0, size: 0, extents, itable_block: 0, dir_block: 0, unlinked: false, meta_txn: None, datasync_txn: None, truncating: None, log: false, region: 0, nojournal: false, inode_dirty: false, dir_dirty: false, pa: None, ra: Default::default(), cold: false };
            let mut c = MapCursor::default();
            for f in lookups {
                prop_assert_eq!(c.map(&ino, f), ino.map(f), "block {}", f);
            }
        }
    }

    #[test]
    fn allocation_maps_and_frees() {
        let p = FsParams { fragmentation: 0.0, extent_blocks: 4, ..Default::default() };
        let mut fs = Fs::new(p, 1 << 34, RngStreams::new(1).stream("fs"));
        fs.create(0, "/a", 1);
        let mut touched = vec![];
        fs.allocate(0, 0, 10, &mut touched);
        assert_eq!(fs.inodes[0].allocated(), 10);
        // Contiguous runs merge into one extent.
        assert_eq!(fs.inodes[0].extents.len(), 1);
        assert_eq!(fs.inodes[0].map(9), Some(fs.data_start + 9));
        assert_eq!(fs.inodes[0].map(10), None);
        let mut freed = vec![];
        fs.free_from(0, 3, &mut freed);
        assert_eq!(freed, vec![(fs.data_start + 3, 7)]);
        assert_eq!(fs.inodes[0].allocated(), 3);
    }

    #[test]
    fn normalized_windows_follow_ext4s_table() {
        // Under 16 blocks: the locality group (the cursor).
        assert_eq!(normalized_window(0, 15, 0), None);
        assert_eq!(normalized_window(3, 1, 12), None);
        // 64 KiB … 1 MiB: rounded up, from block 0.
        assert_eq!(normalized_window(15, 1, 0), Some((0, 16)));
        assert_eq!(normalized_window(16, 1, 0), Some((0, 32)));
        assert_eq!(normalized_window(200, 1, 0), Some((0, 256)));
        // Up to 4 MiB: the 2 MiB-aligned 2 MiB window around the request; up to 8 MiB: 4 MiB.
        assert_eq!(normalized_window(700, 1, 0), Some((512, 512)));
        assert_eq!(normalized_window(1500, 1, 0), Some((1024, 1024)));
        // Over 8 MiB: 8 MiB windows for requests up to 8 MiB, else the request itself.
        assert_eq!(normalized_window(5000, 8, 0), Some((4096, 2048)));
        assert_eq!(normalized_window(5000, 3000, 0), Some((5000, 3000)));
    }

    #[test]
    fn a_growing_file_stays_contiguous_in_its_preallocation() {
        let p = FsParams { fragmentation: 0.0, inode_prealloc: true, ..Default::default() };
        let mut fs = Fs::new(p, 1 << 34, RngStreams::new(1).stream("fs"));
        fs.create(0, "/db", 1);
        fs.create(1, "/db-journal", 1);
        let mut touched = vec![];
        // The database grows one block at a time between small journal files' allocations.
        fs.allocate(0, 0, 16, &mut touched);
        for b in 16..100 {
            fs.allocate(1, 0, 1, &mut touched);
            let mut freed = vec![];
            fs.free_from(1, 0, &mut freed);
            fs.allocate(0, b, 1, &mut touched);
        }
        // Windows of 16, 32, 64 and 128 blocks (the rest of each after the file's blocks):
        // four pieces, each contiguous, with no journal block inside them.
        let ext = &fs.inodes[0].extents;
        assert_eq!(ext.iter().map(|e| e.2).sum::<u64>(), 100);
        assert_eq!(ext.iter().map(|e| e.2).collect::<Vec<_>>(), vec![16, 16, 32, 36], "{ext:?}");
        assert_eq!(fs.inodes[0].allocated(), 100);
        // Without it the journal files interleave: one extent per block after the first 16.
        let p = FsParams { fragmentation: 0.0, ..Default::default() };
        let mut fs = Fs::new(p, 1 << 34, RngStreams::new(1).stream("fs"));
        fs.create(0, "/db", 1);
        fs.create(1, "/db-journal", 1);
        fs.allocate(0, 0, 16, &mut touched);
        for b in 16..100 {
            fs.allocate(1, 0, 1, &mut touched);
            let mut freed = vec![];
            fs.free_from(1, 0, &mut freed);
            fs.allocate(0, b, 1, &mut touched);
        }
        assert!(fs.inodes[0].extents.len() > 80);
        // Truncating drops the preallocation.
        fs.inodes[0].pa = Some((100, 5000, 28));
        let mut freed = vec![];
        fs.free_from(0, 50, &mut freed);
        assert_eq!(fs.inodes[0].pa, None);
    }

    #[test]
    fn a_log_file_rewrites_at_the_head_and_frees_into_dead_blocks() {
        let p = FsParams { fragmentation: 0.0, ..Default::default() };
        let mut fs = Fs::new(p, 1 << 34, RngStreams::new(1).stream("fs"));
        fs.add_log_area(4 * 2048, 2048);
        let start = fs.log.as_ref().unwrap().start;
        assert_eq!(fs.blocks, start, "ext4 allocates below the log");
        fs.create(0, "/db", 1);
        fs.inodes[0].log = true;
        fs.log_write(0, 0, 4);
        assert_eq!(fs.inodes[0].extents, vec![(0, start, 4)]);
        // Rewriting block 1 in place moves it to the head; the map has three extents.
        fs.log_write(0, 1, 1);
        assert_eq!(fs.inodes[0].extents, vec![(0, start, 1), (1, start + 4, 1), (2, start + 2, 2)]);
        assert_eq!(fs.log.as_ref().unwrap().live_blocks(), 4);
        let mut freed = vec![];
        fs.free_from(0, 2, &mut freed);
        assert!(freed.is_empty(), "log blocks are not discarded");
        assert_eq!(fs.log.as_ref().unwrap().live_blocks(), 2);
        assert_eq!(fs.inodes[0].allocated(), 2);
    }

    #[test]
    fn fragmentation_splits_extents() {
        let p = FsParams { fragmentation: 1.0, extent_blocks: 2, ..Default::default() };
        let mut fs = Fs::new(p, 1 << 34, RngStreams::new(1).stream("fs"));
        fs.create(0, "/a", 1);
        fs.allocate(0, 0, 20, &mut vec![]);
        assert!(fs.inodes[0].extents.len() >= 5, "{:?}", fs.inodes[0].extents);
        for fb in 0..20 {
            assert!(fs.inodes[0].map(fb).is_some());
        }
    }
}
