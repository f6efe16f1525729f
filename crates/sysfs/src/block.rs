//! Block devices: which queue serves a file system, and its I/O scheduler.

use std::path::{Path, PathBuf};

use crate::error::{read_to_string, write_str, Error, Result};

/// The `queue/` directory of the whole disk behind device number `major:minor` (a partition
/// has no scheduler of its own: its parent disk's is used).
pub fn queue_dir(root: &Path, major: u32, minor: u32) -> Result<PathBuf> {
    let dev = root.join(format!("sys/dev/block/{major}:{minor}"));
    let canon = dev.canonicalize().map_err(|source| Error::Read { path: dev.clone(), source })?;
    for d in [canon.clone(), canon.parent().map(Path::to_path_buf).unwrap_or_default()] {
        if d.join("queue/scheduler").exists() {
            return Ok(d.join("queue"));
        }
    }
    Err(Error::Unsupported { path: dev, message: "no queue/scheduler for this device (not a block disk?)".into() })
}

/// The queue serving the file system that holds `path`.
pub fn queue_dir_for_path(root: &Path, path: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path).map_err(|source| Error::Read { path: path.to_owned(), source })?;
    let dev = md.dev();
    queue_dir(root, libc::major(dev), libc::minor(dev))
}

/// The active scheduler and the available ones, from `queue/scheduler` (`none [mq-deadline] bfq`).
pub fn scheduler(queue: &Path) -> Result<(String, Vec<String>)> {
    let p = queue.join("scheduler");
    let text = read_to_string(&p)?;
    let mut active = None;
    let mut all = Vec::new();
    for w in text.split_whitespace() {
        let name = w.trim_start_matches('[').trim_end_matches(']');
        if w.starts_with('[') {
            active = Some(name.to_owned());
        }
        all.push(name.to_owned());
    }
    let active = active.ok_or(Error::Parse { path: p, line: 1, message: "no [active] scheduler".into() })?;
    Ok((active, all))
}

pub fn set_scheduler(queue: &Path, name: &str) -> Result<()> {
    write_str(&queue.join("scheduler"), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_active_scheduler() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("scheduler"), "none [mq-deadline] kyber bfq\n").unwrap();
        let (a, all) = scheduler(t.path()).unwrap();
        assert_eq!(a, "mq-deadline");
        assert_eq!(all, ["none", "mq-deadline", "kyber", "bfq"]);
        std::fs::write(t.path().join("scheduler"), "none bfq\n").unwrap();
        assert!(scheduler(t.path()).unwrap_err().to_string().contains("no [active]"));
    }

    #[test]
    fn partition_resolves_to_its_disk() {
        let t = tempfile::tempdir().unwrap();
        let disk = t.path().join("sys/devices/virtual/block/vdb");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::create_dir_all(disk.join("vdb1")).unwrap();
        std::fs::write(disk.join("queue/scheduler"), "[bfq] none\n").unwrap();
        std::fs::create_dir_all(t.path().join("sys/dev/block")).unwrap();
        std::os::unix::fs::symlink(disk.join("vdb1"), t.path().join("sys/dev/block/254:17")).unwrap();
        std::os::unix::fs::symlink(&disk, t.path().join("sys/dev/block/254:16")).unwrap();
        assert_eq!(queue_dir(t.path(), 254, 17).unwrap(), disk.canonicalize().unwrap().join("queue"));
        assert_eq!(queue_dir(t.path(), 254, 16).unwrap(), disk.canonicalize().unwrap().join("queue"));
        assert!(queue_dir(t.path(), 1, 1).is_err());
    }
}
