//! Keeping what a launch needs in memory: the launcher's helper (`[agent] pin_exec`) and the
//! agent's own pages (`[agent] lock_memory`).
//!
//! Every launch and switch through `forefront-exec` starts by exec'ing it, before the agent is
//! even asked: if its pages are not in the page cache (after memory pressure, or a benchmark's
//! cache drop), that exec reads them from the disk while the background still competes, and
//! the launch waits for it. The agent maps the helper's file and locks the mapping for its own
//! lifetime: a mapped page cache page is neither dropped by `drop_caches` nor reclaimed while
//! locked, so the helper's exec only maps pages already in memory. It costs the file's size in
//! locked memory (about 0.5 MB) and nothing else; the mapping goes when the agent exits.
//!
//! The agent's own code is read in the same way, by page faults, the first time it runs: and
//! the code of a pause (the freeze, the write-back hold, the watchdog's `F` line) first runs at
//! the first launch that finds a background, which is the worst moment to read it. A fault in a
//! file mapping reads the file's whole read-ahead window around the page (`read_ahead_kb`:
//! 8 MiB on this VM's disk), so the agent's first pause read 6.4 MB of its own binary in the
//! watchdog alone, beside the launch and under the background it was about to freeze (traced:
//! `filemap:mm_filemap_add_to_page_cache`, docs/agent.md "The agent's own first pause").
//! [`lock_self`] locks every page the process maps at start, reading the code in before any
//! launch.

use std::path::{Path, PathBuf};

/// A file mapped read-only and locked in memory until dropped.
#[derive(Debug)]
pub struct Pinned {
    addr: *mut libc::c_void,
    len: usize,
    pub path: PathBuf,
}

// SAFETY: the mapping is read-only and only unmapped in Drop; no one reads through it.
unsafe impl Send for Pinned {}

impl Pinned {
    /// Maps `path` and locks its pages in memory (reading them in now).
    pub fn new(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let len = file.metadata().map_err(|e| format!("cannot stat {}: {e}", path.display()))?.len() as usize;
        if len == 0 {
            return Err(format!("{} is empty", path.display()));
        }
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh read-only shared mapping of a file we opened; checked below.
        let addr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED | libc::MAP_POPULATE, file.as_raw_fd(), 0)
        };
        if addr == libc::MAP_FAILED {
            return Err(format!("cannot map {}: {}", path.display(), std::io::Error::last_os_error()));
        }
        let pinned = Pinned { addr, len, path: path.into() };
        // SAFETY: the range is the mapping made above.
        if unsafe { libc::mlock(addr, len) } != 0 {
            return Err(format!("cannot lock {} in memory: {}", path.display(), std::io::Error::last_os_error()));
        }
        Ok(pinned)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: unmaps (and so unlocks) exactly the mapping made in `new`.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// `[agent] lock_memory`: locks every page this process maps now (its code and data, read in
/// now where they are not in memory) and, from now on, each page it maps when first touched (a
/// new thread's stack, the heap as it grows: not all at once). Returns the locked size
/// (`VmLck`, bytes). The locks last the process's lifetime; the binary's pages are page cache
/// pages, shared with every other process mapping them (the watchdog runs the same binary).
pub fn lock_self() -> Result<u64, String> {
    // SAFETY: mlockall takes no pointers.
    if unsafe { libc::mlockall(libc::MCL_CURRENT) } != 0 {
        return Err(format!("mlockall(MCL_CURRENT): {}", std::io::Error::last_os_error()));
    }
    // Later mappings locked page by page (MCL_ONFAULT): MCL_FUTURE alone would read in a new
    // thread's whole stack (2 MiB) at its creation.
    // SAFETY: as above.
    if unsafe { libc::mlockall(libc::MCL_FUTURE | libc::MCL_ONFAULT) } != 0 {
        return Err(format!("mlockall(MCL_FUTURE | MCL_ONFAULT): {}", std::io::Error::last_os_error()));
    }
    locked_bytes(&std::fs::read_to_string("/proc/self/status").map_err(|e| format!("cannot read /proc/self/status: {e}"))?)
}

/// `VmLck` of a `/proc/PID/status` text, in bytes.
pub fn locked_bytes(status: &str) -> Result<u64, String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| "no VmLck line in /proc/self/status".to_owned())
}

/// The helper `forefront-exec` beside the agent's own executable `exe`.
pub fn helper_beside(exe: &Path) -> PathBuf {
    exe.with_file_name("forefront-exec")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the pages of `len` bytes at `addr` are resident (mincore).
    fn resident(addr: *mut libc::c_void, len: usize) -> usize {
        let page = 4096;
        let mut vec = vec![0u8; len.div_ceil(page)];
        // SAFETY: addr/len is a live mapping; vec has one byte per page.
        let r = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|b| **b & 1 == 1).count()
    }

    #[test]
    fn a_pinned_file_is_mapped_and_resident_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("forefront-exec");
        std::fs::write(&f, vec![7u8; 3 * 4096 + 5]).unwrap();
        let p = match Pinned::new(&f) {
            Ok(p) => p,
            Err(e) if e.contains("lock") => {
                eprintln!("SKIPPED: mlock not allowed here: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(p.len(), 3 * 4096 + 5);
        assert_eq!(resident(p.addr, p.len), 4, "every page read in and locked");
        drop(p);
    }

    #[test]
    fn the_locked_size_is_read_from_the_status_text() {
        assert_eq!(locked_bytes("Name:\tforefront\nVmLck:\t   14336 kB\nVmPin:\t0 kB\n"), Ok(14336 * 1024));
        assert!(locked_bytes("Name:\tforefront\n").is_err());
        assert!(locked_bytes("VmLck:\t12 MB\n").is_err());
    }

    #[test]
    fn missing_and_empty_files_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = Pinned::new(&dir.path().join("nope")).unwrap_err();
        assert!(e.contains("cannot open") && e.contains("nope"), "{e}");
        let f = dir.path().join("empty");
        std::fs::write(&f, b"").unwrap();
        assert!(Pinned::new(&f).unwrap_err().contains("is empty"));
        assert_eq!(helper_beside(Path::new("/usr/bin/forefront")), Path::new("/usr/bin/forefront-exec"));
    }
}
