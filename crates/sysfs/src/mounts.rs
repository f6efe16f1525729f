//! Where the cgroup hierarchies are: parsed from `<root>/proc/self/mountinfo`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{read_to_string, Error, Result};

/// The resource controllers forefront uses, named as cgroup v2 names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Controller {
    Cpu,
    /// v1 `blkio`, v2 `io`.
    Io,
    Freezer,
    Memory,
}

impl Controller {
    pub const ALL: [Controller; 4] = [Controller::Cpu, Controller::Io, Controller::Freezer, Controller::Memory];

    /// The name of the v1 hierarchy's controller (what mountinfo's super options list).
    pub fn v1_name(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu",
            Controller::Io => "blkio",
            Controller::Freezer => "freezer",
            Controller::Memory => "memory",
        }
    }

    /// The name in v2's `cgroup.controllers` (the v2 freezer is built in: `None`).
    pub fn v2_name(self) -> Option<&'static str> {
        match self {
            Controller::Cpu => Some("cpu"),
            Controller::Io => Some("io"),
            Controller::Freezer => None,
            Controller::Memory => Some("memory"),
        }
    }
}

impl std::fmt::Display for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Controller::Cpu => "cpu",
            Controller::Io => "io",
            Controller::Freezer => "freezer",
            Controller::Memory => "memory",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Version {
    V1,
    V2,
}

/// One hierarchy a controller lives in: its mount point (under the root) and version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    pub mount: PathBuf,
    pub version: Version,
    /// Mounted read-only (a container's view of the host's hierarchy, e.g. systemd-nspawn's
    /// v1 controllers): no group can be made there.
    pub read_only: bool,
}

/// The cgroup mounts of a system. A controller bound to a v1 hierarchy cannot be enabled in v2,
/// so each controller has at most one home; hybrid layouts (this VM, Android) mix both.
#[derive(Clone, Debug, Default)]
pub struct CgroupMounts {
    /// v1 hierarchies by controller name (`cpu`, `blkio`, ...), mount paths under the root.
    pub v1: BTreeMap<String, PathBuf>,
    /// The v2 mount, if any.
    pub v2: Option<PathBuf>,
    /// The mount points above that are mounted read-only (`ro` in mountinfo's mount options).
    pub read_only: std::collections::BTreeSet<PathBuf>,
}

impl CgroupMounts {
    /// Reads `<root>/proc/self/mountinfo`.
    pub fn read(root: &Path) -> Result<Self> {
        let path = root.join("proc/self/mountinfo");
        let text = read_to_string(&path)?;
        Self::parse(root, &path, &text)
    }

    /// Parses mountinfo text; mount points are re-rooted under `root`.
    pub fn parse(root: &Path, path: &Path, text: &str) -> Result<Self> {
        let mut mounts = CgroupMounts::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |message: &str| Error::Parse { path: path.to_owned(), line: i + 1, message: message.to_owned() };
            let (left, right) = line.split_once(" - ").ok_or_else(|| bad("no ' - ' separator"))?;
            let mount_point = left.split(' ').nth(4).ok_or_else(|| bad("fewer than 5 fields before ' - '"))?;
            let ro = left.split(' ').nth(5).is_some_and(|o| o.split(',').any(|o| o == "ro"));
            let mut rf = right.split(' ');
            let fstype = rf.next().ok_or_else(|| bad("no file system type"))?;
            let _source = rf.next();
            let super_opts = rf.next().unwrap_or("");
            let at = root.join(unescape(mount_point).trim_start_matches('/'));
            match fstype {
                "cgroup2" if mounts.v2.is_none() => {
                    if ro {
                        mounts.read_only.insert(at.clone());
                    }
                    mounts.v2 = Some(at)
                }
                "cgroup" => {
                    for opt in super_opts.split(',') {
                        if matches!(opt, "cpu" | "blkio" | "freezer" | "memory" | "cpuset" | "cpuacct")
                            && !mounts.v1.contains_key(opt)
                        {
                            if ro {
                                mounts.read_only.insert(at.clone());
                            }
                            mounts.v1.insert(opt.to_owned(), at.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(mounts)
    }

    /// Where `controller` lives: its v1 hierarchy if it has one, else the v2 mount if the
    /// controller is enabled there (for the freezer: if `cgroup.freeze` exists in v2, which
    /// only non-root groups have, so the presence of v2 is taken as enough).
    pub fn hierarchy(&self, controller: Controller) -> Option<Hierarchy> {
        if let Some(p) = self.v1.get(controller.v1_name()) {
            return Some(Hierarchy { mount: p.clone(), version: Version::V1, read_only: self.read_only.contains(p) });
        }
        let v2 = self.v2.as_ref()?;
        let available = match controller.v2_name() {
            None => true,
            Some(name) => std::fs::read_to_string(v2.join("cgroup.controllers"))
                .map(|s| s.split_whitespace().any(|c| c == name))
                .unwrap_or(false),
        };
        available.then(|| Hierarchy { mount: v2.clone(), version: Version::V2, read_only: self.read_only.contains(v2) })
    }
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(file: &str, root: &str) -> CgroupMounts {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/mountinfo").join(file);
        let text = std::fs::read_to_string(&p).unwrap();
        CgroupMounts::parse(Path::new(root), &p, &text).unwrap()
    }

    #[test]
    fn this_vm_is_v1_with_a_v2_mount_beside() {
        let m = parse("v1-vm.txt", "/");
        assert_eq!(m.v1["cpu"], Path::new("/sys/fs/cgroup/cpu"));
        assert_eq!(m.v1["blkio"], Path::new("/sys/fs/cgroup/blkio"));
        assert_eq!(m.v1["freezer"], Path::new("/sys/fs/cgroup/freezer"));
        assert_eq!(m.v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
        let h = m.hierarchy(Controller::Io).unwrap();
        assert_eq!(h.version, Version::V1);
    }

    #[test]
    fn a_containers_read_only_v1_hierarchies_are_marked() {
        // systemd-nspawn 252 on this VM (scripts/test-deb-boot): the v1 controllers read-only
        // (mount options), their super options rw; the v2 mount and name=systemd writable.
        let m = parse("nspawn-v1-ro.txt", "/");
        for c in [Controller::Cpu, Controller::Io, Controller::Freezer] {
            let h = m.hierarchy(c).unwrap();
            assert_eq!(h.version, Version::V1);
            assert!(h.read_only, "{c}");
        }
        assert!(!m.read_only.contains(m.v2.as_deref().unwrap()));
        assert!(!parse("v1-vm.txt", "/").hierarchy(Controller::Io).unwrap().read_only);
    }

    #[test]
    fn pure_v2_rooted_elsewhere() {
        let m = parse("v2.txt", "/tmp/fake");
        assert!(m.v1.is_empty());
        assert_eq!(m.v2.as_deref(), Some(Path::new("/tmp/fake/sys/fs/cgroup")));
        // The freezer is built into v2; cpu needs cgroup.controllers, absent in /tmp/fake.
        assert_eq!(m.hierarchy(Controller::Freezer).unwrap().version, Version::V2);
        assert!(m.hierarchy(Controller::Cpu).is_none());
    }

    #[test]
    fn android_hybrid_has_v1_cpu_and_blkio_and_v2_beside() {
        let m = parse("android-hybrid.txt", "/");
        assert_eq!(m.v1["cpu"], Path::new("/dev/cpuctl"));
        assert_eq!(m.v1["memory"], Path::new("/dev/memcg"));
        assert!(!m.v1.contains_key("freezer"));
        assert_eq!(m.hierarchy(Controller::Freezer).unwrap().mount, Path::new("/sys/fs/cgroup"));
    }

    #[test]
    fn malformed_line_names_file_and_line() {
        let err = CgroupMounts::parse(Path::new("/"), Path::new("mi"), "1 2 3\n").unwrap_err();
        assert_eq!(err.to_string(), "mi:1: no ' - ' separator");
    }

    #[test]
    fn octal_escapes_in_mount_points() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        assert_eq!(unescape(r"/a\04"), r"/a\04");
    }
}
