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

fn read_u64(path: &Path) -> Result<u64> {
    let text = read_to_string(path)?;
    text.trim().parse().map_err(|e| Error::Parse { path: path.to_owned(), line: 1, message: format!("not a number: {e}") })
}

/// The device's command queue depth: the tags of its hardware queue (`mq/*/nr_tags`, the
/// commands blk-mq lets the driver hold at once), else a SCSI disk's `device/queue_depth`, else
/// the scheduler's `nr_requests`. Returns the depth and the file it came from.
pub fn queue_depth(queue: &Path) -> Result<(u64, PathBuf)> {
    let disk = queue.parent().unwrap_or(queue);
    let mut best: Option<(u64, PathBuf)> = None;
    if let Ok(rd) = std::fs::read_dir(disk.join("mq")) {
        let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let p = d.join("nr_tags");
            if let Ok(n) = read_u64(&p) {
                if best.as_ref().is_none_or(|(b, _)| n > *b) {
                    best = Some((n, p));
                }
            }
        }
    }
    if let Some(b) = best {
        return Ok(b);
    }
    let scsi = disk.join("device/queue_depth");
    if let Ok(n) = read_u64(&scsi) {
        return Ok((n, scsi));
    }
    let p = queue.join("nr_requests");
    Ok((read_u64(&p)?, p))
}

/// The disk's size in bytes (`size`, in 512-byte sectors).
pub fn capacity_bytes(queue: &Path) -> Result<u64> {
    Ok(read_u64(&queue.parent().unwrap_or(queue).join("size"))? * 512)
}

/// The disk's name (`vda`, `nvme0n1`, `loop0`): the directory holding `queue/`.
pub fn disk_name(queue: &Path) -> String {
    queue.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// One `queue/` attribute as text (`write_cache`, `fua`, `discard_max_bytes`, `rotational`).
pub fn queue_attr(queue: &Path, name: &str) -> Result<String> {
    Ok(read_to_string(&queue.join(name))?.trim().to_owned())
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
    fn queue_depth_prefers_the_hardware_tags() {
        let t = tempfile::tempdir().unwrap();
        let disk = t.path().join("vda");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::write(disk.join("queue/nr_requests"), "256\n").unwrap();
        std::fs::write(disk.join("size"), "1024\n").unwrap();
        let q = disk.join("queue");
        assert_eq!(queue_depth(&q).unwrap().0, 256);
        for (i, n) in [(0, "64\n"), (1, "128\n")] {
            std::fs::create_dir_all(disk.join(format!("mq/{i}"))).unwrap();
            std::fs::write(disk.join(format!("mq/{i}/nr_tags")), n).unwrap();
        }
        let (n, from) = queue_depth(&q).unwrap();
        assert_eq!((n, from), (128, disk.join("mq/1/nr_tags")));
        assert_eq!(capacity_bytes(&q).unwrap(), 1024 * 512);
        assert_eq!(disk_name(&q), "vda");
        std::fs::write(disk.join("size"), "x\n").unwrap();
        assert!(capacity_bytes(&q).unwrap_err().to_string().contains("size:1: not a number"));
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
