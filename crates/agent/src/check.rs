//! `forefront agent check`: every kernel capability the configured actions need, all listed
//! at once (not one failure at a time).

use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;

use forefront_sysfs::{block, CgroupMounts, Controller, Version};

use crate::config::Config;

/// One capability and whether this system has it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Capability {
    pub name: String,
    pub ok: bool,
    /// Usable, but with a cost worth knowing (`warn` in the table; not a failure).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warn: bool,
    pub detail: String,
}

fn cap(name: &str, ok: bool, detail: impl Into<String>) -> Capability {
    Capability { name: name.into(), ok, warn: false, detail: detail.into() }
}

pub fn check(cfg: &Config) -> Vec<Capability> {
    let root = &cfg.agent.root;
    let mut out = vec![];
    let euid = nix::unistd::geteuid().as_raw();
    out.push(cap(
        "root",
        euid == 0,
        if euid == 0 { "running as root".to_owned() } else { format!("euid {euid}: cgroup writes need root") },
    ));
    let mounts = match CgroupMounts::read(root) {
        Ok(m) => m,
        Err(e) => {
            out.push(cap("cgroup mounts", false, e.to_string()));
            return out;
        }
    };
    let need = |c: Controller, action: &str, out: &mut Vec<Capability>| match mounts.hierarchy(c) {
        Some(h) if h.read_only => {
            out.push(cap(
                &format!("{c} controller"),
                false,
                format!(
                    "{:?} at {}, mounted read-only (a container's view of the host's cgroups?): no group can be made, {action} off",
                    h.version,
                    h.mount.display()
                ),
            ));
            None
        }
        Some(h) => {
            out.push(cap(&format!("{c} controller"), true, format!("{:?} at {}", h.version, h.mount.display())));
            Some(h)
        }
        None => {
            out.push(cap(&format!("{c} controller"), false, format!("not mounted (v1) nor enabled in v2: {action} off")));
            None
        }
    };
    if cfg.cpu.enabled {
        if let Some(h) = need(Controller::Cpu, "CPU weights", &mut out) {
            if cfg.cpu.bg_idle {
                let has = match h.version {
                    Version::V1 => h.mount.join("cpu.idle").exists(),
                    Version::V2 => any_child_has(&h.mount, "cpu.idle"),
                };
                out.push(cap(
                    "cpu.idle",
                    has,
                    if has { "idle CPU class available" } else { "kernel < 5.15 or not found: background keeps low shares only" },
                ));
            }
        }
    }
    if cfg.io.enabled {
        if let Some(h) = need(Controller::Io, "I/O weights", &mut out) {
            let has = match h.version {
                Version::V1 => h.mount.join("blkio.bfq.io_service_bytes").exists(),
                Version::V2 => any_child_has(&h.mount, "io.bfq.weight") || any_child_has(&h.mount, "io.weight"),
            };
            out.push(cap(
                "BFQ group weights",
                has,
                if has { "BFQ loaded" } else { "BFQ not loaded: `modprobe bfq` and select it for the disk" },
            ));
        }
        let bfq_anywhere = std::fs::read_dir(root.join("sys/block"))
            .map(|d| {
                d.flatten().any(|e| {
                    block::scheduler(&e.path().join("queue")).map(|(_, all)| all.iter().any(|s| s == "bfq")).unwrap_or(false)
                })
            })
            .unwrap_or(false);
        out.push(cap(
            "bfq scheduler",
            bfq_anywhere,
            if bfq_anywhere { "offered by at least one disk" } else { "no disk offers bfq" },
        ));
    }
    if cfg.io.enabled {
        // Which I/O mechanisms the disks' schedulers and the io hierarchy offer, and which the
        // agent will use (crate::iosched): informational, never a failure; one offered but
        // unused is a warning.
        let disks = crate::iosched::disks(root);
        let list: Vec<String> = disks.iter().map(|d| format!("{} {}", d.name, d.scheduler)).collect();
        out.push(cap("disks", true, if list.is_empty() { "no block device with a scheduler".into() } else { list.join(", ") }));
        for m in crate::iosched::plan(&cfg.io, &crate::iosched::offer(root), &disks) {
            let mut c = cap(&format!("io: {}", m.name), true, m.detail);
            c.warn = !m.used;
            out.push(c);
        }
    }
    if cfg.pause.enabled {
        need(Controller::Freezer, "background pause", &mut out);
        if cfg.pause.hold_writeback {
            out.push(match crate::writeback::plan_now(root) {
                Err(e) => cap("write-back hold", false, e.to_string()),
                Ok(held) if held.is_empty() => {
                    let mut c = cap(
                        "write-back hold",
                        true,
                        "periodic write-back is off (dirty_writeback_centisecs = 0) or held already (dirty_expire_centisecs a day or more): nothing is held during a pause",
                    );
                    c.warn = true;
                    c
                }
                Ok(held) => cap(
                    "write-back hold",
                    true,
                    format!(
                        "a pause holds {}",
                        held.iter().map(|h| format!("{} = {}", h.set.display(), h.value)).collect::<Vec<_>>().join(", ")
                    ),
                ),
            });
        }
    }
    if cfg.memory.enabled {
        need(Controller::Memory, "memory protection", &mut out);
    }
    for (what, p) in [("socket directory", &cfg.agent.socket), ("state directory", &cfg.agent.state)] {
        let dir = p.parent().unwrap_or(Path::new("/"));
        let ok = dir.is_dir() || dir.parent().is_some_and(|d| d.is_dir());
        let mut c = cap(what, ok, dir.display().to_string());
        if what == "state directory" {
            // Made (with missing ancestors) at start: what matters is whether it can be trusted.
            c.ok = true;
            match crate::state::check_private_dir(dir) {
                Ok(true) => c.detail = format!("{}: private (owned by this user, no group or world write)", dir.display()),
                Ok(false) => c.detail = format!("{}: created with mode 0700 at start", dir.display()),
                Err(e) => {
                    c.ok = false;
                    c.detail = e.to_string();
                }
            }
        }
        if what == "state directory" && c.ok && crate::config::on_tmpfs(dir) == Some(false) {
            // Every change is written and fsynced before it is made: on a disk that is I/O on
            // the disk the agent is trying to keep fast.
            c.warn = true;
            c.detail = format!(
                "{}; not a tmpfs, so every change the agent makes is fsynced there first; if that disk is the one in use, set [agent] state under a tmpfs, in a directory of its own",
                c.detail
            );
        }
        out.push(c);
    }
    out
}

fn any_child_has(dir: &Path, file: &str) -> bool {
    std::fs::read_dir(dir).map(|d| d.flatten().any(|e| e.path().join(file).exists())).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_missing_capability_at_once() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("proc/self")).unwrap();
        std::fs::write(t.path().join("proc/self/mountinfo"), "").unwrap();
        let mut cfg =
            Config { agent: crate::config::AgentSection { root: t.path().into(), ..Default::default() }, ..Default::default() };
        assert!(cfg.pause.hold_writeback, "on by default");
        cfg.cpu.enabled = true; // off by default: checked only when on
        let caps = check(&cfg);
        let missing: Vec<&str> = caps.iter().filter(|c| !c.ok).map(|c| c.name.as_str()).collect();
        for want in ["cpu controller", "io controller", "freezer controller", "bfq scheduler", "write-back hold"] {
            assert!(missing.contains(&want), "{want} not reported: {missing:?}");
        }
    }

    #[test]
    fn a_read_only_hierarchy_is_a_failure() {
        // What systemd-nspawn gives a container on a cgroup v1 host (scripts/test-deb-boot).
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("proc/self")).unwrap();
        std::fs::write(
            t.path().join("proc/self/mountinfo"),
            "57 50 0:35 / /sys/fs/cgroup/blkio ro,nosuid,nodev,noexec,relatime shared:18 - cgroup cgroup rw,blkio\n\
             63 50 0:34 / /sys/fs/cgroup/freezer rw,nosuid,nodev,noexec,relatime shared:24 - cgroup cgroup rw,freezer\n",
        )
        .unwrap();
        let cfg =
            Config { agent: crate::config::AgentSection { root: t.path().into(), ..Default::default() }, ..Default::default() };
        let caps = check(&cfg);
        let io = caps.iter().find(|c| c.name == "io controller").unwrap();
        assert!(!io.ok && io.detail.contains("mounted read-only"), "{io:?}");
        assert!(caps.iter().find(|c| c.name == "freezer controller").unwrap().ok);
    }

    #[test]
    fn fake_v2_with_everything() {
        let t = tempfile::tempdir().unwrap();
        let cg = t.path().join("sys/fs/cgroup");
        std::fs::create_dir_all(cg.join("system.slice")).unwrap();
        std::fs::write(cg.join("cgroup.controllers"), "cpu io memory pids").unwrap();
        for f in ["cpu.idle", "io.bfq.weight"] {
            std::fs::write(cg.join("system.slice").join(f), "0").unwrap();
        }
        crate::writeback::fake_vm(t.path(), 1000);
        std::fs::create_dir_all(t.path().join("sys/block/sda/queue")).unwrap();
        std::fs::write(t.path().join("sys/block/sda/queue/scheduler"), "none [bfq]").unwrap();
        std::fs::create_dir_all(t.path().join("proc/self")).unwrap();
        std::fs::write(t.path().join("proc/self/mountinfo"), "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n").unwrap();
        let cfg = Config {
            agent: crate::config::AgentSection {
                root: t.path().into(),
                socket: t.path().join("s"),
                state: t.path().join("st"),
                ..Default::default()
            },
            ..Default::default()
        };
        let caps = check(&cfg);
        let bad: Vec<_> = caps.iter().filter(|c| !c.ok && c.name != "root").collect();
        assert!(bad.is_empty(), "{bad:?}");
        let wb = caps.iter().find(|c| c.name == "write-back hold").expect("reported");
        assert!(wb.detail.contains("dirty_expire_centisecs = 8640000"), "{wb:?}");
        assert!(!wb.detail.contains("dirty_writeback_centisecs"), "{wb:?}");
    }

    #[test]
    fn a_state_directory_others_may_write_is_a_failure() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let state_cap = |state: PathBuf| {
            let cfg = Config { agent: crate::config::AgentSection { state, ..Default::default() }, ..Default::default() };
            check(&cfg).into_iter().find(|c| c.name == "state directory").expect("reported")
        };
        let c = state_cap(open.join("state.json"));
        assert!(!c.ok && c.detail.contains("group or others may write it"), "{c:?}");
        let c = state_cap(open.join("sub/state.json"));
        assert!(!c.ok && c.detail.contains("not sticky"), "{c:?}");
        let c = state_cap(t.path().join("new/state.json"));
        assert!(c.ok && c.detail.contains("created with mode 0700"), "{c:?}");
        assert!(!t.path().join("new").exists(), "check creates nothing");
    }

    #[test]
    fn a_state_journal_off_tmpfs_is_a_warning_not_a_failure() {
        let shm = Path::new("/dev/shm");
        let disk = Path::new(env!("CARGO_MANIFEST_DIR"));
        if crate::config::on_tmpfs(shm) != Some(true) || crate::config::on_tmpfs(disk) != Some(false) {
            eprintln!("SKIP: needs /dev/shm on tmpfs and the source tree on a disk");
            return;
        }
        let state_cap = |state: &Path| {
            let cfg =
                Config { agent: crate::config::AgentSection { state: state.into(), ..Default::default() }, ..Default::default() };
            check(&cfg).into_iter().find(|c| c.name == "state directory").expect("reported")
        };
        let on_shm = state_cap(&shm.join("forefront-check-test/state.json"));
        assert!(on_shm.ok && !on_shm.warn, "{on_shm:?}");
        let on_disk = state_cap(&disk.join("state.json"));
        assert!(on_disk.ok && on_disk.warn && on_disk.detail.contains("fsynced"), "{on_disk:?}");
    }
}
