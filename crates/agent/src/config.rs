//! The agent's TOML configuration: [`Config`] and its sections live in
//! [`forefront_policy::agent::config`] (shared with the simulator's `agent` policy, which reads
//! the same file); this module re-exports them and adds what needs the host ([`on_tmpfs`]).

use std::path::Path;

pub use forefront_policy::agent::config::*;

/// Whether `path` (or, if it does not exist yet, its nearest existing ancestor) is on a tmpfs or
/// ramfs; `None` when it cannot be told.
pub fn on_tmpfs(path: &Path) -> Option<bool> {
    use nix::sys::statfs::{statfs, FsType, TMPFS_MAGIC};
    // RAMFS_MAGIC (linux/magic.h); nix does not name it.
    const RAMFS_MAGIC: FsType = FsType(0x8584_58f6);
    let existing = path.ancestors().find(|p| p.exists())?;
    let t = statfs(existing).ok()?.filesystem_type();
    Some(t == TMPFS_MAGIC || t == RAMFS_MAGIC)
}
