//! Page cache control (`/proc/sys/vm`).

use std::path::Path;

use crate::error::{write_str, Result};

/// `sync` then `echo 3 > /proc/sys/vm/drop_caches`: clean page cache, dentries and inodes go,
/// so the next read of a file comes from the device (needs root).
pub fn drop_caches(root: &Path) -> Result<()> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    write_str(&root.join("proc/sys/vm/drop_caches"), "3")
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_3_in_a_fake_tree() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("proc/sys/vm")).unwrap();
        std::fs::write(t.path().join("proc/sys/vm/drop_caches"), "0").unwrap();
        super::drop_caches(t.path()).unwrap();
        assert_eq!(std::fs::read_to_string(t.path().join("proc/sys/vm/drop_caches")).unwrap(), "3");
    }
}
