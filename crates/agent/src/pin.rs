//! Keeping the launcher's helper in memory (`[agent] pin_exec`).
//!
//! Every launch and switch through `forefront-exec` starts by exec'ing it, before the agent is
//! even asked: if its pages are not in the page cache (after memory pressure, or a benchmark's
//! cache drop), that exec reads them from the disk while the background still competes, and
//! the launch waits for it. The agent maps the helper's file and locks the mapping for its own
//! lifetime: a mapped page cache page is neither dropped by `drop_caches` nor reclaimed while
//! locked, so the helper's exec only maps pages already in memory. It costs the file's size in
//! locked memory (about 0.5 MB) and nothing else; the mapping goes when the agent exits.

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
