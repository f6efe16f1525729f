//! The virtual file system: the namespace (paths → files), the mount each file is on, and
//! tmpfs, whose files live in RAM only.
//!
//! The phone's ext4 holds every file outside the scenario's mounts. A mount is ext4 with or
//! without `sync` (without: fsync and fdatasync return at once, counted in
//! [`Vfs::nosync_fsyncs`]), a log-structured area ([`crate::fs::log`]), FAT on a device of its
//! own (a region of the file system), or tmpfs.
//!
//! tmpfs is CPU work only: a syscall per call, a copy per page, an allocation per new page,
//! metadata work for create, unlink and truncate; its pages are taken from the page cache's
//! capacity and given back when the file shrinks ([`Vfs::tmpfs_resize`]).
//!
//! Simplifications: paths name files (no directories, no descriptors); the page cache keeps at
//! least 64 pages however much tmpfs holds (tmpfs beyond memory would be an out-of-memory kill
//! on a phone, which is not modelled).

use std::collections::HashMap;

use crate::fs::Fs;
use crate::mm::{FileId, PageCache, PAGE_SIZE};
use crate::prov::Uid;

/// The file system a file is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MountClass {
    Ext4,
    /// ext4 mounted with `sync = false`.
    Ext4NoSync,
    Tmpfs,
    Lfs,
    Vfat,
}

/// A call on a tmpfs file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmpfsCall {
    Create,
    Unlink,
    Truncate(u64),
    Read {
        offset: u64,
        len: u64,
        chunk: u64,
    },
    /// `offset` None: append.
    Write {
        offset: Option<u64>,
        len: u64,
        chunk: u64,
    },
    /// fsync or fdatasync: nothing to do.
    Sync,
}

/// What tmpfs calls cost (µs).
#[derive(Clone, Copy, Debug)]
pub struct TmpfsCosts {
    pub syscall_us: f64,
    pub metadata_us: f64,
    pub copy_page_us: f64,
    /// A `write()`'s copy per page (`Costs::write_copy_page_us`).
    pub copy_write_page_us: f64,
    pub alloc_page_us: f64,
}

/// The namespace and the mounts' per-file state.
#[derive(Clone, Debug, Default)]
pub struct Vfs {
    paths: HashMap<String, FileId>,
    /// Per file: the file system it is on.
    class: Vec<MountClass>,
    /// Per file: the pages it holds, if on tmpfs.
    ram_pages: Vec<u64>,
    /// fsync/fdatasync calls a `sync = false` mount turned into no-ops.
    pub nosync_fsyncs: u64,
}

impl Vfs {
    pub fn lookup(&self, path: &str) -> Option<FileId> {
        self.paths.get(path).copied()
    }

    /// Create the file at `path` (not present yet), owned by `uid`, on a mount of `class`
    /// (`region`: its FAT region, 0 for none): a page-cache file and an inode with the same id.
    pub fn create(&mut self, pc: &mut PageCache, fs: &mut Fs, path: &str, uid: Uid, class: MountClass, region: u8) -> FileId {
        let id = pc.add_file();
        fs.create(id, path, uid);
        self.paths.insert(path.to_string(), id);
        self.class.push(class);
        self.ram_pages.push(0);
        let ino = &mut fs.inodes[id as usize];
        ino.log = class == MountClass::Lfs;
        ino.region = region;
        id
    }

    /// Remove `path` from the namespace (the file's pages and blocks are the caller's).
    pub fn unlink(&mut self, path: &str) -> Option<FileId> {
        self.paths.remove(path)
    }

    pub fn class(&self, file: FileId) -> MountClass {
        self.class[file as usize]
    }

    /// Set tmpfs file `file`'s size; its pages come from (or go back to) the page cache's
    /// memory. Returns how many pages it gained.
    pub fn tmpfs_resize(&mut self, pc: &mut PageCache, fs: &mut Fs, file: FileId, bytes: u64) -> u64 {
        let want = bytes.div_ceil(PAGE_SIZE);
        let have = std::mem::replace(&mut self.ram_pages[file as usize], want);
        pc.capacity = (pc.capacity + have).saturating_sub(want).max(64);
        fs.inodes[file as usize].size = bytes;
        want.saturating_sub(have)
    }

    /// Carry out `call` on tmpfs file `file`: returns its CPU cost (µs) and the bytes it read
    /// and wrote.
    pub fn tmpfs_call(
        &mut self,
        pc: &mut PageCache,
        fs: &mut Fs,
        file: FileId,
        call: TmpfsCall,
        c: &TmpfsCosts,
    ) -> (f64, u64, u64) {
        let sys = c.syscall_us;
        let calls = |len: u64, chunk: u64| len.div_ceil(chunk.max(1)).max(1) as f64;
        let pages = |b: u64| b.div_ceil(PAGE_SIZE) as f64;
        let size = fs.inodes[file as usize].size;
        match call {
            TmpfsCall::Create | TmpfsCall::Unlink => {
                self.tmpfs_resize(pc, fs, file, 0);
                (sys + c.metadata_us, 0, 0)
            }
            TmpfsCall::Truncate(to) => {
                self.tmpfs_resize(pc, fs, file, to);
                (sys + c.metadata_us, 0, 0)
            }
            TmpfsCall::Read { offset, len, chunk } => {
                let n = len.min(size.saturating_sub(offset));
                (calls(n, chunk) * sys + pages(n) * c.copy_page_us, n, 0)
            }
            TmpfsCall::Write { offset, len, chunk } => {
                let start = offset.unwrap_or(size);
                let new = self.tmpfs_resize(pc, fs, file, size.max(start + len));
                (calls(len, chunk) * sys + pages(len) * c.copy_write_page_us + new as f64 * c.alloc_page_us, 0, len)
            }
            TmpfsCall::Sync => (sys, 0, 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use forefront_engine::RngStreams;

    use super::*;
    use crate::fs::FsParams;

    const C: TmpfsCosts =
        TmpfsCosts { syscall_us: 1.0, metadata_us: 10.0, copy_page_us: 0.5, copy_write_page_us: 0.5, alloc_page_us: 2.0 };

    fn machine() -> (Vfs, PageCache, Fs) {
        (Vfs::default(), PageCache::new(1_000), Fs::new(FsParams::default(), 1 << 34, RngStreams::new(1).stream("fs")))
    }

    #[test]
    fn tmpfs_takes_its_pages_from_the_page_cache_and_gives_them_back() {
        let (mut v, mut pc, mut fs) = machine();
        let f = v.create(&mut pc, &mut fs, "/dev/shm/a", 10_000, MountClass::Tmpfs, 0);
        assert_eq!(v.lookup("/dev/shm/a"), Some(f));
        // Two 4 KiB calls of one new page each: 2 syscalls, 2 copies, 2 allocations.
        let w = TmpfsCall::Write { offset: None, len: 2 * PAGE_SIZE, chunk: PAGE_SIZE };
        assert_eq!(v.tmpfs_call(&mut pc, &mut fs, f, w, &C), (2.0 + 1.0 + 4.0, 0, 2 * PAGE_SIZE));
        assert_eq!((pc.capacity, fs.inodes[f as usize].size), (998, 2 * PAGE_SIZE));
        // A read past the end reads what there is; a rewrite in place allocates nothing.
        let r = TmpfsCall::Read { offset: PAGE_SIZE, len: 10 * PAGE_SIZE, chunk: 1 << 20 };
        assert_eq!(v.tmpfs_call(&mut pc, &mut fs, f, r, &C), (1.5, PAGE_SIZE, 0));
        let w = TmpfsCall::Write { offset: Some(0), len: PAGE_SIZE, chunk: PAGE_SIZE };
        assert_eq!(v.tmpfs_call(&mut pc, &mut fs, f, w, &C).0, 1.5);
        assert_eq!(v.tmpfs_call(&mut pc, &mut fs, f, TmpfsCall::Truncate(0), &C).0, 11.0);
        assert_eq!(pc.capacity, 1_000, "every page given back");
        assert_eq!(v.unlink("/dev/shm/a"), Some(f));
        assert_eq!(v.lookup("/dev/shm/a"), None);
    }

    #[test]
    fn the_page_cache_keeps_a_floor_and_files_keep_their_mount() {
        let (mut v, mut pc, mut fs) = machine();
        let f = v.create(&mut pc, &mut fs, "/tmp/big", 10_000, MountClass::Tmpfs, 0);
        v.tmpfs_resize(&mut pc, &mut fs, f, 10_000 * PAGE_SIZE);
        assert_eq!(pc.capacity, 64);
        let g = v.create(&mut pc, &mut fs, "/log/db", 10_000, MountClass::Lfs, 0);
        let h = v.create(&mut pc, &mut fs, "/sdcard/x", 10_000, MountClass::Vfat, 1);
        assert_eq!((v.class(g), v.class(h)), (MountClass::Lfs, MountClass::Vfat));
        assert!(fs.inodes[g as usize].log && fs.inodes[h as usize].region == 1);
    }
}
