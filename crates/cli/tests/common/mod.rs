//! What the real-kernel agent tests share (`agent_real.rs`, `agent_security.rs`,
//! `agent_mq_deadline.rs`, `desktop_x11.rs`).

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

/// The cgroup v1 controllers the agent's groups live under.
pub const CONTROLLERS: [&str; 3] = ["cpu", "blkio", "freezer"];

/// Why an agent rig cannot run here (not root, or a cgroup v1 hierarchy missing), or `None`.
pub fn rig_unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    CONTROLLERS
        .iter()
        .find(|c| !Path::new(&format!("/sys/fs/cgroup/{c}/cgroup.procs")).exists())
        .map(|c| format!("no cgroup v1 {c} hierarchy at /sys/fs/cgroup/{c}"))
}

/// `/sys/fs/cgroup/CTRL/GROUP/SUB`.
pub fn gdir(group: &str, ctrl: &str, sub: &str) -> PathBuf {
    Path::new("/sys/fs/cgroup").join(ctrl).join(group).join(sub)
}

/// The agent's log at `path` once it holds `needle`, or as it is after 2 s. The agent (and its
/// watchdog) write their log from a thread of their own, so a line may follow what it reports.
#[allow(dead_code)] // not every test binary that shares this module reads a log
pub fn log_with(path: &Path, needle: &str) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let log = std::fs::read_to_string(path).unwrap_or_default();
        if log.contains(needle) || t0.elapsed() > Duration::from_secs(2) {
            return log;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A rig's teardown: stop the agent, thaw the background first (so killed children can exit),
/// kill the children, then move anything left to the root and remove the test's groups. A group
/// is busy while a killed process is still exiting (or a restore races us): retry for up to a
/// second, so no group of the test outlives it.
pub fn teardown(group: &str, agent: Option<Child>, children: &mut [Child]) {
    if let Some(mut a) = agent {
        let _ = a.kill();
        let _ = a.wait();
    }
    let _ = std::fs::write(gdir(group, "freezer", "bg").join("freezer.state"), "THAWED");
    for c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    for _ in 0..20 {
        for ctrl in CONTROLLERS {
            for sub in ["fg", "bg", ""] {
                let d = gdir(group, ctrl, sub);
                if let Ok(pids) = std::fs::read_to_string(d.join("cgroup.procs")) {
                    for pid in pids.lines() {
                        let _ = std::fs::write(format!("/sys/fs/cgroup/{ctrl}/cgroup.procs"), pid);
                    }
                }
                let _ = std::fs::remove_dir(&d);
            }
        }
        if CONTROLLERS.iter().all(|c| !gdir(group, c, "").exists()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
