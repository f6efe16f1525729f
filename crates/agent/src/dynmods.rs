//! Cgroup moves that do not wait for an RCU grace period (`[agent] favor_dynmods`).
//!
//! On cgroup v1 a write to `cgroup.procs` or `tasks` takes the kernel's global
//! `cgroup_threadgroup_rwsem` for writing. That lock is a per-CPU rwsem whose readers (every
//! fork, exit and exec) run lock-free; the price is paid by the writer, who waits for an RCU
//! grace period unless another writer did so moments before. Measured on this project's VM
//! (kernel 6.18, 2 vCPUs, idle): the first move after a quiet second took 7.0–7.9 ms, the one
//! right after it 0.10–0.17 ms; under the S suite's 5 readers + 5 writers a grace period takes
//! tens of ms. The agent's switch to a running app moves it out of the background groups before
//! it replies (it must not be frozen with them), so every switch paid one.
//!
//! The mount option `favordynmods` (kernel 6.0 on, v1 and v2) keeps that lock's readers on their
//! slow path so that a writer never waits for a grace period. Since 6.18 it also makes a move
//! lock only the moved process's own thread group (`cgroup_enable_per_threadgroup_rwsem`), and
//! once on that cannot be turned off until reboot: unmounting the hierarchy that turned it on
//! leaves it on (the kernel logs "cgroup favordynmods: per threadgroup rwsem mechanism can't be
//! disabled" when asked). The agent's hierarchies are usually mounted already, and v1 refuses the
//! option on a remount ("option or name mismatch"), but the switch is global: mounting any v1
//! hierarchy with it turns it on for all. So the agent mounts a named hierarchy with no
//! controller (`none,name=forefront_dyn,favordynmods`) on a directory of its own beside its state
//! journal and unmounts it at once: nothing stays mounted, even if the agent is killed later.
//! Before 6.18 the effect ends with that unmount, so there the option does nothing lasting (boot
//! with `cgroup_favordynmods=true`, or mount cgroup2 with `favordynmods`, instead).
//!
//! Its price, by the kernel's documentation, is slower forks and exits; measured on this VM
//! before and after turning it on (`docs/agent.md`, "Moves without a grace period").
//!
//! Invariants:
//! - nothing is mounted when the option is off, when a cgroup mount already carries
//!   `favordynmods`, or when `agent.root` is not `/` (tests run on fake trees);
//! - what this module mounts it unmounts before returning (and removes its directory);
//! - a failure is logged and the agent runs on without it.

use std::path::{Path, PathBuf};

/// The named hierarchy's name (`name=` in mountinfo's super options).
pub const NAME: &str = "forefront_dyn";

/// Whether any cgroup or cgroup2 mount in `mountinfo` carries `favordynmods`.
pub fn already_on(mountinfo: &str) -> bool {
    mountinfo.lines().filter_map(cgroup_options).any(|o| o.split(',').any(|o| o == "favordynmods"))
}

/// A cgroup or cgroup2 mount's mount and super options, comma-separated together.
fn cgroup_options(line: &str) -> Option<String> {
    let (left, right) = line.split_once(" - ")?;
    let mount_opts = left.split(' ').nth(5).unwrap_or("");
    let mut r = right.split(' ');
    let fstype = r.next()?;
    if fstype != "cgroup" && fstype != "cgroup2" {
        return None;
    }
    let _source = r.next();
    let super_opts = r.next().unwrap_or("");
    Some(format!("{mount_opts},{super_opts}"))
}

/// What [`favor`] decided, for the log and the tests.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    Off,
    /// Not on the real root (`agent.root` names a fake tree).
    NotRealRoot,
    AlreadyOn,
    /// Mount (and unmount) at this path.
    Mount(PathBuf),
}

/// The decision, from the config, the root, the journal's directory and mountinfo's text.
pub fn plan(enabled: bool, root: &Path, state_dir: &Path, mountinfo: &str) -> Plan {
    if !enabled {
        Plan::Off
    } else if root != Path::new("/") {
        Plan::NotRealRoot
    } else if already_on(mountinfo) {
        Plan::AlreadyOn
    } else {
        Plan::Mount(state_dir.join(format!("dynmods.{}", std::process::id())))
    }
}

/// What [`favor`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Off, or not on the real root: nothing tried.
    NotTried,
    AlreadyOn,
    /// Mounted and unmounted again: on from here (kernel 6.18 and later) until reboot.
    TurnedOn,
    /// The kernel or the file system refused (logged).
    Failed,
}

/// `[agent] favor_dynmods`: turns the kernel's `favordynmods` on by mounting a named hierarchy
/// with it and unmounting it at once (see the module doc).
pub fn favor(enabled: bool, root: &Path, state: &Path, log: fn(&str)) -> Outcome {
    use nix::mount::{mount, umount2, MntFlags, MsFlags};
    let state_dir = state.parent().unwrap_or(Path::new("/run"));
    let mountinfo = std::fs::read_to_string(root.join("proc/self/mountinfo")).unwrap_or_default();
    let dir = match plan(enabled, root, state_dir, &mountinfo) {
        Plan::Off | Plan::NotRealRoot => return Outcome::NotTried,
        Plan::AlreadyOn => {
            log("favor_dynmods: a cgroup hierarchy is already mounted with favordynmods");
            return Outcome::AlreadyOn;
        }
        Plan::Mount(dir) => dir,
    };
    if let Err(e) = std::fs::create_dir(&dir) {
        log(&format!("favor_dynmods: cannot make {}: {e}; moves wait for RCU grace periods", dir.display()));
        return Outcome::Failed;
    }
    let opts = format!("none,name={NAME},favordynmods");
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let outcome = match mount(Some("cgroup"), &dir, Some("cgroup"), flags, Some(opts.as_str())) {
        Ok(()) => {
            if let Err(e) = umount2(&dir, MntFlags::MNT_DETACH) {
                log(&format!("favor_dynmods: cannot unmount {}: {e}", dir.display()));
            }
            log(&format!(
                "favor_dynmods: a hierarchy mounted with {opts} and unmounted: cgroup moves no longer wait for an RCU grace period (kernel 6.18 and later, until reboot)"
            ));
            Outcome::TurnedOn
        }
        Err(e) => {
            log(&format!(
                "favor_dynmods: the kernel refused a cgroup hierarchy with favordynmods ({e}); moves wait for RCU grace periods"
            ));
            Outcome::Failed
        }
    };
    let _ = std::fs::remove_dir(&dir);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn a_hierarchy_with_favordynmods_is_seen_in_either_option_list() {
        assert!(!already_on(HYBRID));
        let v2 = "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw,nsdelegate,favordynmods\n";
        assert!(already_on(v2));
        let v1 = "50 31 0:40 / /run/x rw,relatime - cgroup cgroup rw,name=other,favordynmods\n";
        assert!(already_on(v1));
        // a file system that is not a cgroup does not count
        let other = "60 23 0:41 / /mnt rw - tmpfs favordynmods rw,favordynmods\n";
        assert!(!already_on(other));
    }

    #[test]
    fn it_mounts_on_a_directory_of_its_own_beside_the_journal() {
        let state = Path::new("/run/forefront/state");
        let Plan::Mount(dir) = plan(true, Path::new("/"), state, HYBRID) else { panic!("no mount planned") };
        assert_eq!(dir.parent(), Some(state));
        assert!(dir.file_name().unwrap().to_str().unwrap().starts_with("dynmods."));
    }

    #[test]
    fn nothing_is_mounted_when_off_on_a_fake_root_or_when_already_on() {
        let state = Path::new("/run/forefront/state");
        assert_eq!(plan(false, Path::new("/"), state, HYBRID), Plan::Off);
        assert_eq!(plan(true, Path::new("/tmp/fake"), state, HYBRID), Plan::NotRealRoot);
        let on = format!("{HYBRID}80 31 0:60 / /sys/fs/cgroup/x rw - cgroup2 cgroup2 rw,favordynmods\n");
        assert_eq!(plan(true, Path::new("/"), state, &on), Plan::AlreadyOn);
        // and `favor` on a fake root touches nothing
        assert_eq!(favor(true, Path::new("/nonexistent-root"), Path::new("/nonexistent/state.json"), |_| {}), Outcome::NotTried);
    }
}
