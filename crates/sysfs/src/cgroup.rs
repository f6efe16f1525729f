//! One cgroup directory and the knobs forefront turns in it, named per hierarchy version.

use std::path::{Path, PathBuf};

use crate::error::{read_to_string, write_str, Error, Result};
use crate::mounts::{Controller, Version};

/// A knob, by meaning. The file behind it depends on the hierarchy (and, for I/O, on the
/// scheduler): see [`Knob::files`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// CPU weight. Values are given in v1 `cpu.shares` units (1024 = default) everywhere and
    /// converted for v2 `cpu.weight` (100 = default) as systemd does.
    CpuWeight,
    /// SCHED_IDLE for the whole group (`cpu.idle`, v1 and v2 since Linux 5.15): `0`/`1`.
    CpuIdle,
    /// BFQ weight 1..=1000 (`blkio.bfq.weight`, v2 `io.bfq.weight`, v2 fallback `io.weight`).
    IoWeight,
    /// The freezer: v1 `freezer.state` FROZEN/THAWED, v2 `cgroup.freeze` 1/0.
    Freeze,
    /// Memory protection in bytes: v2 `memory.low`; v1 has none, the closest is a soft limit
    /// on the *other* groups, so on v1 this knob is `memory.soft_limit_in_bytes`.
    MemoryLow,
    /// The I/O priority class of every bio the group issues (blk-ioprio: v2 `io.prio.class`,
    /// v1 `blkio.prio.class`), honoured by BFQ and mq-deadline: 0 `no-change`, 1
    /// `promote-to-rt`, 2 `restrict-to-be`, 3 `idle`.
    IoPrioClass,
    /// blk-iolatency's per-device latency target (v2 `io.latency`, `MAJ:MIN target=µs`):
    /// peers of a group that misses its target are throttled. Written per device with
    /// [`Cgroup::set_device_knob`].
    IoLatency,
}

impl Knob {
    pub fn controller(self) -> Controller {
        match self {
            Knob::CpuWeight | Knob::CpuIdle => Controller::Cpu,
            Knob::IoWeight | Knob::IoPrioClass | Knob::IoLatency => Controller::Io,
            Knob::Freeze => Controller::Freezer,
            Knob::MemoryLow => Controller::Memory,
        }
    }

    /// Candidate files, best first; the first that exists in the group is used.
    pub fn files(self, version: Version) -> &'static [&'static str] {
        match (self, version) {
            (Knob::CpuWeight, Version::V1) => &["cpu.shares"],
            (Knob::CpuWeight, Version::V2) => &["cpu.weight"],
            (Knob::CpuIdle, _) => &["cpu.idle"],
            (Knob::IoWeight, Version::V1) => &["blkio.bfq.weight", "blkio.weight"],
            (Knob::IoWeight, Version::V2) => &["io.bfq.weight", "io.weight"],
            (Knob::Freeze, Version::V1) => &["freezer.state"],
            (Knob::Freeze, Version::V2) => &["cgroup.freeze"],
            (Knob::MemoryLow, Version::V1) => &["memory.soft_limit_in_bytes"],
            (Knob::MemoryLow, Version::V2) => &["memory.low"],
            (Knob::IoPrioClass, Version::V1) => &["blkio.prio.class"],
            (Knob::IoPrioClass, Version::V2) => &["io.prio.class"],
            // v2 only; v1 has no such file (the name is looked for and not found).
            (Knob::IoLatency, _) => &["io.latency"],
        }
    }

    /// The file text that sets `value` (in forefront's units, see each variant).
    pub fn encode(self, version: Version, value: u64) -> String {
        match (self, version) {
            (Knob::CpuWeight, Version::V2) => shares_to_weight(value).to_string(),
            (Knob::Freeze, Version::V1) => if value != 0 { "FROZEN" } else { "THAWED" }.to_owned(),
            (Knob::IoPrioClass, _) => ["no-change", "promote-to-rt", "restrict-to-be", "idle"][value.min(3) as usize].to_owned(),
            _ => value.to_string(),
        }
    }
}

/// v1 shares (2..=262144, 1024 default) to v2 weight (1..=10000, 100 default), as systemd maps
/// them: 1024 → 100, 110 (Android's background) → 10.
pub fn shares_to_weight(shares: u64) -> u64 {
    (shares * 100 / 1024).clamp(1, 10_000)
}

/// A cgroup directory in one hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    pub dir: PathBuf,
    pub version: Version,
}

impl Cgroup {
    pub fn new(dir: impl Into<PathBuf>, version: Version) -> Self {
        Cgroup { dir: dir.into(), version }
    }

    pub fn exists(&self) -> bool {
        self.dir.is_dir()
    }

    /// `mkdir`; returns whether it created the directory (false: it was there already).
    pub fn create(&self) -> Result<bool> {
        match std::fs::create_dir(&self.dir) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(source) => Err(Error::Create { path: self.dir.clone(), source }),
        }
    }

    /// `rmdir` (the kernel refuses while the group has members or children).
    ///
    /// A fake tree has regular files in its directories: they are deleted first, which on
    /// cgroupfs is never needed (its files vanish with the directory) and is not attempted.
    pub fn remove(&self) -> Result<()> {
        let err = |source| Error::Remove { path: self.dir.clone(), source };
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) && !is_cgroupfs(&self.dir) => {
                for entry in std::fs::read_dir(&self.dir).map_err(err)?.flatten() {
                    if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                        std::fs::remove_file(entry.path()).map_err(err)?;
                    }
                }
                std::fs::remove_dir(&self.dir).map_err(err)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// The file implementing `knob` here, if any.
    pub fn knob_path(&self, knob: Knob) -> Option<PathBuf> {
        knob.files(self.version).iter().map(|f| self.dir.join(f)).find(|p| p.exists())
    }

    fn require(&self, knob: Knob) -> Result<PathBuf> {
        self.knob_path(knob).ok_or_else(|| Error::Unsupported {
            path: self.dir.join(knob.files(self.version)[0]),
            message: format!("no {knob:?} knob in this {:?} group", self.version),
        })
    }

    /// Raw text of a knob, trimmed (for recording originals).
    pub fn read_knob(&self, knob: Knob) -> Result<(PathBuf, String)> {
        let p = self.require(knob)?;
        let text = read_to_string(&p)?;
        Ok((p, text.trim().to_owned()))
    }

    /// Sets `knob` to `value` (forefront units). Returns the file written.
    pub fn set_knob(&self, knob: Knob, value: u64) -> Result<PathBuf> {
        let p = self.require(knob)?;
        write_str(&p, &knob.encode(self.version, value))?;
        Ok(p)
    }

    /// Sets a per-device knob for device `dev` (`MAJ:MIN`): `io.latency` gets
    /// `MAJ:MIN target=VALUE` (µs), a weight `MAJ:MIN VALUE`. Returns the file written.
    pub fn set_device_knob(&self, knob: Knob, dev: &str, value: u64) -> Result<PathBuf> {
        let p = self.require(knob)?;
        let text = match knob {
            Knob::IoLatency => format!("{dev} target={value}"),
            _ => format!("{dev} {value}"),
        };
        write_str(&p, &text)?;
        Ok(p)
    }

    /// Whether the group is frozen now (v1 FREEZING counts as frozen: the kernel is on it).
    pub fn is_frozen(&self) -> Result<bool> {
        let (_, text) = self.read_knob(Knob::Freeze)?;
        Ok(match self.version {
            Version::V1 => text != "THAWED",
            Version::V2 => text == "1",
        })
    }

    /// Whether a freeze asked for has taken effect for every task: v1 `freezer.state` left
    /// FREEZING; v2 `cgroup.events` says `frozen 1` (without that file: assumed settled).
    pub fn freeze_settled(&self) -> Result<bool> {
        match self.version {
            Version::V1 => Ok(self.read_knob(Knob::Freeze)?.1 != "FREEZING"),
            Version::V2 => {
                let p = self.dir.join("cgroup.events");
                if !p.exists() {
                    return Ok(true);
                }
                Ok(read_to_string(&p)?.lines().any(|l| l.trim() == "frozen 1"))
            }
        }
    }

    /// Member processes (`cgroup.procs`).
    pub fn procs(&self) -> Result<Vec<i32>> {
        let p = self.dir.join("cgroup.procs");
        let text = read_to_string(&p)?;
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                l.trim().parse().map_err(|_| Error::Parse { path: p.clone(), line: i + 1, message: format!("not a pid: {l:?}") })
            })
            .collect()
    }

    /// Moves a whole process (all its threads) into this group. Children forked later stay.
    pub fn add_proc(&self, pid: i32) -> Result<()> {
        let p = self.dir.join("cgroup.procs");
        if is_cgroupfs(&self.dir) {
            write_str(&p, &pid.to_string())
        } else {
            // A fake tree has no kernel to move the pid out of its old group: append.
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).create(true).open(&p).map_err(|source| Error::Write {
                path: p.clone(),
                value: pid.to_string(),
                source,
            })?;
            writeln!(f, "{pid}").map_err(|source| Error::Write { path: p.clone(), value: pid.to_string(), source })
        }
    }

    /// v2 only: enables controllers for the children (`+cpu +io` in `cgroup.subtree_control`).
    pub fn enable_subtree(&self, controllers: &[Controller]) -> Result<()> {
        let names: Vec<String> = controllers.iter().filter_map(|c| c.v2_name()).map(|n| format!("+{n}")).collect();
        if self.version == Version::V1 || names.is_empty() {
            return Ok(());
        }
        write_str(&self.dir.join("cgroup.subtree_control"), &names.join(" "))
    }
}

/// Whether `path` is on a real cgroup file system (as opposed to a fake tree in a tempdir).
pub fn is_cgroupfs(path: &Path) -> bool {
    const CGROUP_SUPER_MAGIC: i64 = 0x27e0eb;
    const CGROUP2_SUPER_MAGIC: i64 = 0x63677270;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else { return false };
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated string and st a valid out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    matches!(st.f_type as i64, CGROUP_SUPER_MAGIC | CGROUP2_SUPER_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(version: Version, files: &[(&str, &str)]) -> (tempfile::TempDir, Cgroup) {
        let t = tempfile::tempdir().unwrap();
        for (f, v) in files {
            std::fs::write(t.path().join(f), v).unwrap();
        }
        let g = Cgroup::new(t.path(), version);
        (t, g)
    }

    #[test]
    fn v2_cpu_weight_is_converted_from_shares() {
        let (_t, g) = fake(Version::V2, &[("cpu.weight", "100\n")]);
        let p = g.set_knob(Knob::CpuWeight, 110).unwrap();
        assert_eq!(std::fs::read_to_string(p).unwrap(), "10");
        g.set_knob(Knob::CpuWeight, 1024).unwrap();
        assert_eq!(g.read_knob(Knob::CpuWeight).unwrap().1, "100");
    }

    #[test]
    fn v1_cpu_weight_is_shares() {
        let (_t, g) = fake(Version::V1, &[("cpu.shares", "1024\n")]);
        g.set_knob(Knob::CpuWeight, 110).unwrap();
        assert_eq!(g.read_knob(Knob::CpuWeight).unwrap().1, "110");
    }

    #[test]
    fn v2_io_weight_prefers_bfq_then_falls_back_to_io_weight() {
        let (_t, g) = fake(Version::V2, &[("io.bfq.weight", "default 100\n"), ("io.weight", "default 100\n")]);
        assert!(g.knob_path(Knob::IoWeight).unwrap().ends_with("io.bfq.weight"));
        let (_t2, g2) = fake(Version::V2, &[("io.weight", "default 100\n")]);
        let p = g2.set_knob(Knob::IoWeight, 10).unwrap();
        assert!(p.ends_with("io.weight"));
        assert_eq!(std::fs::read_to_string(p).unwrap(), "10");
    }

    #[test]
    fn freeze_names_and_values_per_version() {
        let (_t, g1) = fake(Version::V1, &[("freezer.state", "THAWED\n")]);
        g1.set_knob(Knob::Freeze, 1).unwrap();
        assert!(g1.is_frozen().unwrap());
        assert_eq!(g1.read_knob(Knob::Freeze).unwrap().1, "FROZEN");
        g1.set_knob(Knob::Freeze, 0).unwrap();
        assert!(!g1.is_frozen().unwrap());

        let (_t, g2) = fake(Version::V2, &[("cgroup.freeze", "0\n")]);
        g2.set_knob(Knob::Freeze, 1).unwrap();
        assert_eq!(g2.read_knob(Knob::Freeze).unwrap().1, "1");
        assert!(g2.is_frozen().unwrap());
    }

    #[test]
    fn freeze_settled_per_version() {
        let (t, g1) = fake(Version::V1, &[("freezer.state", "FREEZING\n")]);
        assert!(!g1.freeze_settled().unwrap());
        std::fs::write(t.path().join("freezer.state"), "FROZEN\n").unwrap();
        assert!(g1.freeze_settled().unwrap());
        let (t, g2) = fake(Version::V2, &[("cgroup.freeze", "1\n"), ("cgroup.events", "populated 1\nfrozen 0\n")]);
        assert!(!g2.freeze_settled().unwrap());
        std::fs::write(t.path().join("cgroup.events"), "populated 1\nfrozen 1\n").unwrap();
        assert!(g2.freeze_settled().unwrap());
    }

    #[test]
    fn memory_low_is_soft_limit_on_v1() {
        let (_t, g) = fake(Version::V1, &[("memory.soft_limit_in_bytes", "9223372036854771712\n")]);
        assert!(g.set_knob(Knob::MemoryLow, 1 << 30).unwrap().ends_with("memory.soft_limit_in_bytes"));
        let (_t, g2) = fake(Version::V2, &[("memory.low", "0\n")]);
        assert!(g2.set_knob(Knob::MemoryLow, 1 << 30).unwrap().ends_with("memory.low"));
    }

    #[test]
    fn missing_knob_error_names_the_file() {
        let (_t, g) = fake(Version::V1, &[]);
        let err = g.set_knob(Knob::CpuIdle, 1).unwrap_err().to_string();
        assert!(err.contains("cpu.idle"), "{err}");
        assert!(err.contains("no CpuIdle knob"), "{err}");
    }

    #[test]
    fn procs_add_and_parse_errors() {
        let (t, g) = fake(Version::V2, &[("cgroup.procs", "")]);
        g.add_proc(42).unwrap();
        g.add_proc(43).unwrap();
        assert_eq!(g.procs().unwrap(), vec![42, 43]);
        std::fs::write(t.path().join("cgroup.procs"), "1\nxyz\n").unwrap();
        let err = g.procs().unwrap_err().to_string();
        assert!(err.ends_with(":2: not a pid: \"xyz\""), "{err}");
    }

    #[test]
    fn subtree_control_on_v2_only() {
        let (t, g) = fake(Version::V2, &[("cgroup.subtree_control", "")]);
        g.enable_subtree(&[Controller::Cpu, Controller::Freezer, Controller::Io]).unwrap();
        assert_eq!(std::fs::read_to_string(t.path().join("cgroup.subtree_control")).unwrap(), "+cpu +io");
        let (t1, g1) = fake(Version::V1, &[]);
        g1.enable_subtree(&[Controller::Cpu]).unwrap();
        assert!(!t1.path().join("cgroup.subtree_control").exists());
    }

    #[test]
    fn create_and_remove_fake_group() {
        let t = tempfile::tempdir().unwrap();
        let g = Cgroup::new(t.path().join("bg"), Version::V2);
        assert!(g.create().unwrap());
        assert!(!g.create().unwrap());
        std::fs::write(g.dir.join("cgroup.freeze"), "0").unwrap();
        g.remove().unwrap();
        assert!(!g.exists());
        g.remove().unwrap(); // removing a removed group is fine
    }
}
