//! The kernel's CPU scheduling as the simulator models it: the preemption model (where a task
//! running kernel code can be preempted, [`preempt_model`]) and the fair scheduler with its
//! base slice and tick ([`fair_scheduler`]).
//!
//! The preemption model is read, in this order, from the first source that answers:
//!
//! 1. `/sys/kernel/debug/sched/preempt` (kernels with `PREEMPT_DYNAMIC`): the modes, the
//!    current one in parentheses, e.g. `none voluntary (full) lazy`. Debugfs is often not
//!    mounted or refused (kernel lockdown), so this is only the first try.
//! 2. The kernel's configuration, `/proc/config.gz` (gzip, `CONFIG_IKCONFIG_PROC`) or
//!    `/boot/config-<release>`: with `CONFIG_PREEMPT_DYNAMIC=y` a `preempt=` on the kernel's
//!    command line (`/proc/cmdline`) chooses the mode, else the configured one does
//!    (`CONFIG_PREEMPT_NONE`, `_VOLUNTARY`, `CONFIG_PREEMPT`, `_LAZY`, `_RT`;
//!    `kernel/Kconfig.preempt`).
//!
//! The boot log's `Dynamic Preempt: <mode>` line says the same but needs the kernel log, which
//! may have rotated; it is not read.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{read_to_string, Error, Result};

/// A preemption model of `kernel/Kconfig.preempt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptModel {
    /// `CONFIG_PREEMPT_NONE` / `preempt=none`: kernel code is preempted only where it calls
    /// `cond_resched()` or returns to user space.
    None,
    /// `CONFIG_PREEMPT_VOLUNTARY` / `preempt=voluntary`: as `None`, plus `might_sleep()` points.
    Voluntary,
    /// `CONFIG_PREEMPT` / `preempt=full`: anywhere outside a critical section.
    Full,
    /// `CONFIG_PREEMPT_LAZY` / `preempt=lazy`: fair-class tasks as `None` until the next tick,
    /// then as `Full`.
    Lazy,
    /// `CONFIG_PREEMPT_RT`: fully preemptible.
    Rt,
}

impl PreemptModel {
    /// The name the kernel uses (`preempt=` values, debugfs).
    pub fn name(self) -> &'static str {
        match self {
            PreemptModel::None => "none",
            PreemptModel::Voluntary => "voluntary",
            PreemptModel::Full => "full",
            PreemptModel::Lazy => "lazy",
            PreemptModel::Rt => "rt",
        }
    }

    fn parse(s: &str) -> Option<PreemptModel> {
        Some(match s {
            "none" => PreemptModel::None,
            "voluntary" => PreemptModel::Voluntary,
            "full" => PreemptModel::Full,
            "lazy" => PreemptModel::Lazy,
            "rt" => PreemptModel::Rt,
            _ => return None,
        })
    }

    /// Whether a woken task can take the CPU from one in the middle of a system call: false
    /// for `none` and `voluntary` (it waits for the call's end or a `cond_resched()`), and for
    /// `lazy`, whose fair-class wake-ups wait the same way up to a tick.
    pub fn preempts_kernel_code(self) -> bool {
        matches!(self, PreemptModel::Full | PreemptModel::Rt)
    }
}

/// The preemption model and the file it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemption {
    pub model: PreemptModel,
    /// Where it was found, e.g. `/proc/config.gz (CONFIG_PREEMPT_NONE=y)`.
    pub source: String,
}

/// This kernel's preemption model (see the module doc for the sources, in order).
pub fn preempt_model(root: &Path) -> Result<Preemption> {
    let debugfs = root.join("sys/kernel/debug/sched/preempt");
    if let Ok(text) = read_to_string(&debugfs) {
        if let Some(m) = current_of_debugfs(&text) {
            return Ok(Preemption { model: m, source: debugfs.display().to_string() });
        }
    }
    let (config_path, config) = kernel_config(root)?;
    let has = |key: &str| config.lines().any(|l| l.trim() == format!("{key}=y"));
    if has("CONFIG_PREEMPT_DYNAMIC") {
        let cmdline = root.join("proc/cmdline");
        let text = read_to_string(&cmdline)?;
        // Arguments after `--` go to init, not to the kernel.
        let chosen = text.split_whitespace().take_while(|a| *a != "--").filter_map(|a| a.strip_prefix("preempt=")).last();
        if let Some(v) = chosen {
            let model = PreemptModel::parse(v).ok_or_else(|| Error::Parse {
                path: cmdline.clone(),
                line: 1,
                message: format!("preempt={v:?} is not one of none, voluntary, full, lazy"),
            })?;
            return Ok(Preemption { model, source: format!("{} (preempt={v})", cmdline.display()) });
        }
    }
    let keys = [
        ("CONFIG_PREEMPT_RT", PreemptModel::Rt),
        ("CONFIG_PREEMPT", PreemptModel::Full),
        ("CONFIG_PREEMPT_LAZY", PreemptModel::Lazy),
        ("CONFIG_PREEMPT_VOLUNTARY", PreemptModel::Voluntary),
        ("CONFIG_PREEMPT_NONE", PreemptModel::None),
    ];
    for (key, model) in keys {
        if has(key) {
            return Ok(Preemption { model, source: format!("{} ({key}=y)", config_path.display()) });
        }
    }
    Err(Error::Parse {
        path: config_path,
        line: 0,
        message: "no CONFIG_PREEMPT_NONE, _VOLUNTARY, CONFIG_PREEMPT, _LAZY or _RT set to y".into(),
    })
}

/// Which fair-class scheduler the kernel runs, and the figures the simulator needs of it.
#[derive(Clone, Debug, PartialEq)]
pub struct FairScheduler {
    /// EEVDF (Linux 6.6 and later) rather than CFS.
    pub eevdf: bool,
    /// The base slice before its `1 + log2(ncpus)` scaling, ms: EEVDF's
    /// `normalized_sysctl_sched_base_slice` (0.75 ms in 6.6–6.14, 0.70 ms from 6.15, commit
    /// 2ae891b82695 "sched: Reduce the default slice…"), or CFS's minimum granularity (0.75 ms).
    pub base_slice_ms: f64,
    /// The tick, ms (`1000 / CONFIG_HZ`): where a slice's end is checked (`HRTICK` is off by
    /// default).
    pub tick_ms: f64,
    /// Where the figures came from, e.g. `/proc/sys/kernel/osrelease (6.18.44), /proc/config.gz (CONFIG_HZ=250)`.
    pub source: String,
}

/// This kernel's fair scheduler: EEVDF from release 6.6 (`/proc/sys/kernel/osrelease`), with
/// the base slice of its release, and the tick of its configuration's `CONFIG_HZ` (see
/// [`preempt_model`] for where the configuration is found).
pub fn fair_scheduler(root: &Path) -> Result<FairScheduler> {
    let path = root.join("proc/sys/kernel/osrelease");
    let release = read_to_string(&path)?;
    let release = release.trim();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let (major, minor) =
        match (parts.next().and_then(|p| p.parse::<u32>().ok()), parts.next().and_then(|p| p.parse::<u32>().ok())) {
            (Some(a), Some(b)) => (a, b),
            _ => {
                return Err(Error::Parse {
                    path,
                    line: 1,
                    message: format!("{release:?} is not a kernel release (MAJOR.MINOR…)"),
                });
            }
        };
    let eevdf = (major, minor) >= (6, 6);
    let base_slice_ms = if (major, minor) >= (6, 15) { 0.70 } else { 0.75 };
    let (config_path, config) = kernel_config(root)?;
    let hz = config.lines().find_map(|l| l.trim().strip_prefix("CONFIG_HZ=")).map(str::to_owned);
    let hz = hz.ok_or_else(|| Error::Parse { path: config_path.clone(), line: 0, message: "no CONFIG_HZ".into() })?;
    let hz_num: u32 = hz.parse().ok().filter(|&h| h > 0).ok_or_else(|| Error::Parse {
        path: config_path.clone(),
        line: 0,
        message: format!("CONFIG_HZ={hz} is not a positive number"),
    })?;
    Ok(FairScheduler {
        eevdf,
        base_slice_ms,
        tick_ms: 1000.0 / f64::from(hz_num),
        source: format!("{} ({release}), {} (CONFIG_HZ={hz})", path.display(), config_path.display()),
    })
}

/// The task group the fair scheduler puts this process (and the processes it starts) in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskGroup {
    /// A cpu cgroup other than the root (its path): the process's group, one entity beside
    /// the root's tasks.
    Cgroup(String),
    /// The root cpu cgroup with `kernel.sched_autogroup_enabled = 1`: the session's autogroup
    /// (`CONFIG_SCHED_AUTOGROUP`, `kernel/sched/autogroup.c`), which the children of the
    /// process share as long as none starts a new session.
    Autogroup,
    /// The root group itself: every task one entity at the top level, beside the kernel's.
    Root,
}

/// This process's task group (see [`TaskGroup`]): its cpu cgroup from `/proc/self/cgroup`
/// (cgroup v1: the line whose controllers include `cpu`; v2 only: the `0::` line, counted
/// when the root's `cgroup.subtree_control` enables `cpu`), and, in the root cgroup,
/// `/proc/sys/kernel/sched_autogroup_enabled` (absent on a kernel without autogroup: the
/// root group).
pub fn task_group(root: &Path) -> Result<TaskGroup> {
    use crate::procfs::{cgroup_of, parse_cgroups};
    let path = root.join("proc/self/cgroup");
    let lines = parse_cgroups(&path, &read_to_string(&path)?)?;
    let mut cpu_path = cgroup_of(&lines, Some("cpu"));
    let v2 = cgroup_of(&lines, None);
    if cpu_path.is_none() {
        if let Some(p) = v2.filter(|p| p != "/") {
            let ctl = root.join("sys/fs/cgroup/cgroup.subtree_control");
            if std::fs::read_to_string(&ctl).is_ok_and(|s| s.split_whitespace().any(|c| c == "cpu")) {
                cpu_path = Some(p);
            }
        }
    }
    if let Some(p) = cpu_path.filter(|p| p != "/") {
        return Ok(TaskGroup::Cgroup(p));
    }
    let ag = root.join("proc/sys/kernel/sched_autogroup_enabled");
    match std::fs::read_to_string(&ag) {
        Ok(v) if v.trim() == "1" => Ok(TaskGroup::Autogroup),
        Ok(v) if v.trim() == "0" => Ok(TaskGroup::Root),
        Ok(v) => Err(Error::Parse { path: ag, line: 1, message: format!("{:?} is neither 0 nor 1", v.trim()) }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TaskGroup::Root),
        Err(e) => Err(Error::Read { path: ag, source: e }),
    }
}

/// The mode in parentheses of debugfs's `sched/preempt`.
fn current_of_debugfs(text: &str) -> Option<PreemptModel> {
    let open = text.find('(')?;
    let close = open + text[open..].find(')')?;
    PreemptModel::parse(text[open + 1..close].trim())
}

/// The kernel's configuration as text: `/proc/config.gz`, else `/boot/config-<release>`.
fn kernel_config(root: &Path) -> Result<(PathBuf, String)> {
    let gz = root.join("proc/config.gz");
    match std::fs::File::open(&gz) {
        Ok(f) => {
            let mut text = String::new();
            flate2::read::GzDecoder::new(f).read_to_string(&mut text).map_err(|e| Error::Read { path: gz.clone(), source: e })?;
            return Ok((gz, text));
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::Read { path: gz, source: e }),
        Err(_) => {}
    }
    let release = read_to_string(&root.join("proc/sys/kernel/osrelease"))?;
    let boot = root.join("boot").join(format!("config-{}", release.trim()));
    let text = read_to_string(&boot).map_err(|_| Error::Unsupported {
        path: boot.clone(),
        message: format!("no kernel configuration: neither {} nor this file", gz.display()),
    })?;
    Ok((boot, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, content) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        d
    }

    fn gz(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn the_task_group_is_the_cpu_cgroup_else_the_autogroup_else_the_root() {
        let v1 = |cpu: &str, ag: Option<&'static [u8]>| {
            let cg = format!("12:blkio:/x\n3:cpuset:/\n1:cpu,cpuacct:{cpu}\n0::/user.slice\n");
            let mut files: Vec<(&str, &[u8])> = vec![];
            let cg: &'static str = Box::leak(cg.into_boxed_str());
            files.push(("proc/self/cgroup", cg.as_bytes()));
            if let Some(a) = ag {
                files.push(("proc/sys/kernel/sched_autogroup_enabled", a));
            }
            task_group(tree(&files).path()).unwrap()
        };
        assert_eq!(v1("/", Some(b"1\n")), TaskGroup::Autogroup);
        assert_eq!(v1("/", Some(b"0\n")), TaskGroup::Root);
        assert_eq!(v1("/", None), TaskGroup::Root);
        assert_eq!(v1("/ff/bg", Some(b"1\n")), TaskGroup::Cgroup("/ff/bg".into()));
        // cgroup v2 only: the process's cgroup counts when the root enables `cpu` below it.
        let v2 = |ctl: &'static [u8]| {
            let d = tree(&[
                ("proc/self/cgroup", b"0::/user.slice/s.scope\n"),
                ("sys/fs/cgroup/cgroup.subtree_control", ctl),
                ("proc/sys/kernel/sched_autogroup_enabled", b"1\n"),
            ]);
            task_group(d.path()).unwrap()
        };
        assert_eq!(v2(b"cpu io memory\n"), TaskGroup::Cgroup("/user.slice/s.scope".into()));
        assert_eq!(v2(b"io memory\n"), TaskGroup::Autogroup);
        // Bad input is named by file and line.
        let d = tree(&[("proc/self/cgroup", b"1:cpu:/\nnonsense\n")]);
        let e = task_group(d.path()).unwrap_err().to_string();
        assert!(e.contains("proc/self/cgroup:2:"), "{e}");
        let d = tree(&[("proc/self/cgroup", b"1:cpu:/\n"), ("proc/sys/kernel/sched_autogroup_enabled", b"yes\n")]);
        let e = task_group(d.path()).unwrap_err().to_string();
        assert!(e.contains("sched_autogroup_enabled"), "{e}");
    }

    const DYNAMIC_NONE: &str = "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPTION=y\n";

    #[test]
    fn debugfs_answers_first() {
        let d = tree(&[
            ("sys/kernel/debug/sched/preempt", b"none voluntary (full) lazy\n"),
            ("proc/config.gz", &gz(DYNAMIC_NONE)),
            ("proc/cmdline", b"quiet\n"),
        ]);
        let p = preempt_model(d.path()).unwrap();
        assert_eq!(p.model, PreemptModel::Full);
        assert!(p.source.ends_with("sys/kernel/debug/sched/preempt"), "{}", p.source);
    }

    #[test]
    fn a_dynamic_kernel_without_preempt_on_its_command_line_runs_its_configured_mode() {
        // This VM: CONFIG_PREEMPT_NONE=y with PREEMPT_DYNAMIC, debugfs refused, an init's
        // `preempt=` after `--` that the kernel does not take.
        let d = tree(&[("proc/config.gz", &gz(DYNAMIC_NONE)), ("proc/cmdline", b"quiet panic=1 -- --init preempt=full\n")]);
        let p = preempt_model(d.path()).unwrap();
        assert_eq!(p.model, PreemptModel::None);
        assert!(p.source.contains("config.gz (CONFIG_PREEMPT_NONE=y)"), "{}", p.source);
        assert!(!p.model.preempts_kernel_code());
    }

    #[test]
    fn the_command_line_chooses_on_a_dynamic_kernel() {
        let d = tree(&[("proc/config.gz", &gz(DYNAMIC_NONE)), ("proc/cmdline", b"quiet preempt=full\n")]);
        assert_eq!(preempt_model(d.path()).unwrap().model, PreemptModel::Full);
        let d = tree(&[("proc/config.gz", &gz(DYNAMIC_NONE)), ("proc/cmdline", b"preempt=sometimes\n")]);
        let e = preempt_model(d.path()).unwrap_err().to_string();
        assert!(e.contains("cmdline") && e.contains("sometimes"), "{e}");
    }

    #[test]
    fn a_static_kernel_ignores_preempt_on_its_command_line_and_boot_config_is_read() {
        let d = tree(&[
            ("proc/sys/kernel/osrelease", b"5.15.0-x\n"),
            ("boot/config-5.15.0-x", b"CONFIG_PREEMPT=y\nCONFIG_PREEMPT_COUNT=y\n"),
            ("proc/cmdline", b"preempt=none\n"),
        ]);
        let p = preempt_model(d.path()).unwrap();
        assert_eq!(p.model, PreemptModel::Full);
        assert!(p.model.preempts_kernel_code());
        assert!(p.source.contains("config-5.15.0-x (CONFIG_PREEMPT=y)"), "{}", p.source);
    }

    #[test]
    fn the_fair_scheduler_follows_the_release_and_the_tick_the_configuration() {
        let with = |release: &[u8], hz: &str| {
            let config = format!("{DYNAMIC_NONE}CONFIG_HZ_250=y\nCONFIG_HZ={hz}\n");
            tree(&[("proc/sys/kernel/osrelease", release), ("proc/config.gz", &gz(&config))])
        };
        let d = with(b"6.18.44-cloud\n", "250");
        let f = fair_scheduler(d.path()).unwrap();
        assert!(f.eevdf);
        assert_eq!((f.base_slice_ms, f.tick_ms), (0.70, 4.0));
        assert!(f.source.contains("6.18.44-cloud") && f.source.contains("CONFIG_HZ=250"), "{}", f.source);
        let f = fair_scheduler(with(b"6.6.0\n", "1000").path()).unwrap();
        assert!(f.eevdf);
        assert_eq!((f.base_slice_ms, f.tick_ms), (0.75, 1.0));
        let f = fair_scheduler(with(b"5.15.0-91-generic\n", "100").path()).unwrap();
        assert!(!f.eevdf);
        assert_eq!(f.tick_ms, 10.0);
        let e = fair_scheduler(with(b"weird\n", "250").path()).unwrap_err().to_string();
        assert!(e.contains("osrelease") && e.contains("weird"), "{e}");
        let e = fair_scheduler(with(b"6.18.0\n", "0").path()).unwrap_err().to_string();
        assert!(e.contains("config.gz") && e.contains("CONFIG_HZ=0"), "{e}");
    }

    #[test]
    fn no_configuration_is_an_error_naming_the_files() {
        let d = tree(&[("proc/sys/kernel/osrelease", b"6.1.0\n")]);
        let e = preempt_model(d.path()).unwrap_err().to_string();
        assert!(e.contains("config-6.1.0") && e.contains("config.gz"), "{e}");
    }
}
