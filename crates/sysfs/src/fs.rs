//! The file system a path lives on: its type, its block device and, for ext4, whether it has a
//! journal (`/sys/fs/ext4/DEV/journal_task` reads `<none>` on a file system made or mounted
//! without one). The simulator's ext4 always journals (jbd2, `data=ordered`), so a host whose
//! file system does not is one the twin's `fsync`s do not describe (docs/twin.md, twin21).

use std::path::{Path, PathBuf};

use crate::error::{read_to_string, Error, Result};
use crate::mounts::unescape;

/// What [`fs_of`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsInfo {
    /// The mount point holding the path (as the system sees it, not re-rooted).
    pub mount_point: PathBuf,
    /// The file system type (`ext4`, `tmpfs`, …).
    pub fs_type: String,
    /// The block device's kernel name (`vda`, `nvme0n1p2`, `dm-0`), from `/sys/dev/block`,
    /// else the mount source's last component.
    pub device: String,
    /// ext4 only: `Some(true)` with a journal, `Some(false)` without; `None` for other types or
    /// an ext4 whose sysfs directory has no `journal_task` (kernels before 5.6).
    pub journal: Option<bool>,
}

/// The file system `path` (absolute, as the system sees it) is on: the longest mount point of
/// `<root>/proc/self/mountinfo` that contains it.
pub fn fs_of(root: &Path, path: &Path) -> Result<FsInfo> {
    let file = root.join("proc/self/mountinfo");
    let text = read_to_string(&file)?;
    let (mount_point, fs_type, majmin, source) = mount_of(&file, &text, path)?;
    let device = std::fs::read_link(root.join("sys/dev/block").join(&majmin))
        .ok()
        .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| source.rsplit('/').next().unwrap_or(&source).to_owned());
    let journal = if fs_type == "ext4" {
        let task = root.join("sys/fs/ext4").join(&device).join("journal_task");
        match std::fs::read_to_string(&task) {
            Ok(t) => Some(t.trim() != "<none>" && !t.trim().is_empty()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(Error::Read { path: task, source }),
        }
    } else {
        None
    };
    Ok(FsInfo { mount_point, fs_type, device, journal })
}

/// The mount holding `path` in mountinfo `text`: its mount point, type, `major:minor` and source.
fn mount_of(file: &Path, text: &str, path: &Path) -> Result<(PathBuf, String, String, String)> {
    let mut best: Option<(PathBuf, String, String, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: &str| Error::Parse { path: file.to_owned(), line: i + 1, message: message.to_owned() };
        let (left, right) = line.split_once(" - ").ok_or_else(|| bad("no ' - ' separator"))?;
        let left: Vec<&str> = left.split(' ').collect();
        let (Some(majmin), Some(mount_point)) = (left.get(2), left.get(4)) else {
            return Err(bad("fewer than 5 fields before ' - '"));
        };
        let mut right = right.split(' ');
        let (Some(fs_type), Some(source)) = (right.next(), right.next()) else {
            return Err(bad("no file system type and source after ' - '"));
        };
        let mount_point = PathBuf::from(unescape(mount_point));
        if path.starts_with(&mount_point) && best.as_ref().is_none_or(|b| mount_point.as_os_str().len() >= b.0.as_os_str().len())
        {
            best = Some((mount_point, fs_type.to_owned(), (*majmin).to_owned(), source.to_owned()));
        }
    }
    best.ok_or_else(|| Error::Unsupported { path: file.to_owned(), message: format!("no mount holds {}", path.display()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 22 0:26 / /var/tmp rw shared:5 - tmpfs tmpfs rw
31 22 254:1 / /mnt/my\\040disk rw - ext4 /dev/vdb rw
";

    fn tree(journal_task: Option<&str>) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("proc/self")).unwrap();
        std::fs::write(t.path().join("proc/self/mountinfo"), MOUNTINFO).unwrap();
        std::fs::create_dir_all(t.path().join("sys/dev/block")).unwrap();
        std::os::unix::fs::symlink("../../devices/pci0000:00/virtio1/block/vda", t.path().join("sys/dev/block/254:0")).unwrap();
        if let Some(task) = journal_task {
            std::fs::create_dir_all(t.path().join("sys/fs/ext4/vda")).unwrap();
            std::fs::write(t.path().join("sys/fs/ext4/vda/journal_task"), task).unwrap();
        }
        t
    }

    #[test]
    fn an_ext4_without_a_journal_is_told_from_one_with_and_from_other_types() {
        let t = tree(Some("<none>\n"));
        let root = fs_of(t.path(), Path::new("/work/main")).unwrap();
        assert_eq!(root, FsInfo { mount_point: "/".into(), fs_type: "ext4".into(), device: "vda".into(), journal: Some(false) });
        // The longest mount point wins: /var/tmp is a tmpfs here.
        let tmp = fs_of(t.path(), Path::new("/var/tmp/forefront-bench-1")).unwrap();
        assert_eq!((tmp.fs_type.as_str(), tmp.journal), ("tmpfs", None));
        // A path only sharing a prefix string is not inside the mount.
        assert_eq!(fs_of(t.path(), Path::new("/var/tmpfoo")).unwrap().mount_point, PathBuf::from("/"));
        // No /sys/dev/block link: the source's name; an escaped space in the mount point.
        let other = fs_of(t.path(), Path::new("/mnt/my disk/x")).unwrap();
        assert_eq!((other.device.as_str(), other.journal), ("vdb", None));

        let t = tree(Some("jbd2/vda-8\n"));
        assert_eq!(fs_of(t.path(), Path::new("/work")).unwrap().journal, Some(true));
        let t = tree(None);
        assert_eq!(fs_of(t.path(), Path::new("/work")).unwrap().journal, None, "an older kernel: unknown");
    }

    #[test]
    fn a_bad_mountinfo_line_is_named_by_file_and_line() {
        let t = tree(Some("<none>"));
        std::fs::write(t.path().join("proc/self/mountinfo"), "22 1 254:0 / / rw - ext4 /dev/vda rw\nnonsense\n").unwrap();
        let e = fs_of(t.path(), Path::new("/work")).unwrap_err().to_string();
        assert!(e.contains("proc/self/mountinfo:2") && e.contains("separator"), "{e}");
    }
}
