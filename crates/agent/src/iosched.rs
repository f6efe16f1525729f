//! Which I/O mechanisms this system offers the agent, and which it uses: the plan behind the
//! I/O half of `agent check` and of the agent's start.
//!
//! What each block-layer scheduler honours (Linux 6.x):
//!
//! - **bfq**: group weights (`blkio.bfq.weight` / `io.bfq.weight`) and I/O priority classes;
//! - **mq-deadline**: I/O priority classes (since 5.14: RT, BE and IDLE requests are queued
//!   apart and dispatched in that order; a lower class waits at most `prio_aging_expire`,
//!   10 s by default), no group weights;
//! - **none** and **kyber**: neither. On cgroup v2 the generic controllers still act:
//!   `io.weight` (blk-iocost, once enabled for the device in the root's `io.cost.qos`) and
//!   `io.latency` (blk-iolatency: a group whose latency target is missed throttles its peers).
//!
//! The agent's I/O side therefore gives background threads the idle class (`ioprio_set`) and,
//! where blk-ioprio offers it, the background group the idle class too (`io.prio.class` /
//! `blkio.prio.class`: every bio of the group, including new threads and — on v2 — its
//! buffered write-back); BFQ weights where BFQ runs; on v2, `io.weight` where BFQ's is missing,
//! and an `io.latency` target for the foreground group on the devices whose scheduler honours
//! no priority (`io.fg_latency_us`, off by default: not measured here).
//!
//! ```
//! use forefront_agent::iosched::{plan, Disk, Offer};
//! let disks = [Disk { name: "nvme0n1".into(), dev: "259:0".into(), scheduler: "none".into() }];
//! let offer = Offer { v2: true, io_weight: true, io_latency: true, ..Default::default() };
//! let p = plan(&forefront_agent::config::Config::default().io, &offer, &disks);
//! assert!(p.iter().any(|m| m.name == "io.weight" && m.used));
//! ```

use std::path::Path;

use forefront_sysfs::{block, CgroupMounts, Controller, Version};

use crate::config::IoSection;

/// A block device and its active scheduler.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Disk {
    pub name: String,
    /// `MAJ:MIN`.
    pub dev: String,
    pub scheduler: String,
}

impl Disk {
    /// Whether its scheduler honours I/O priority classes.
    pub fn honours_ioprio(&self) -> bool {
        matches!(self.scheduler.as_str(), "bfq" | "mq-deadline")
    }
}

/// What the cgroup I/O hierarchy offers (files found in the agent's hierarchy holding `io`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offer {
    /// The io hierarchy is cgroup v2.
    pub v2: bool,
    /// `blkio.bfq.weight` / `io.bfq.weight` in the groups.
    pub bfq_weight: bool,
    /// `io.weight` (v2, blk-iocost).
    pub io_weight: bool,
    /// blk-iocost enabled for at least one device (`enable=1` in the root's `io.cost.qos`).
    pub iocost_enabled: bool,
    /// `io.latency` (v2, blk-iolatency).
    pub io_latency: bool,
    /// `io.prio.class` / `blkio.prio.class` (blk-ioprio).
    pub prio_class: bool,
}

/// One mechanism: whether the system offers it and whether the agent uses it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Mechanism {
    pub name: &'static str,
    pub available: bool,
    pub used: bool,
    pub detail: String,
}

/// Block devices with a scheduler and a size (unbound loop devices and empty drives are left
/// out), in name order.
pub fn disks(root: &Path) -> Vec<Disk> {
    let mut out = vec![];
    let Ok(dir) = std::fs::read_dir(root.join("sys/block")) else { return out };
    for e in dir.flatten() {
        let p = e.path();
        let Ok((active, _)) = block::scheduler(&p.join("queue")) else { continue };
        let size: u64 = std::fs::read_to_string(p.join("size")).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        let dev = std::fs::read_to_string(p.join("dev")).map(|s| s.trim().to_owned()).unwrap_or_default();
        if size == 0 || dev.is_empty() {
            continue;
        }
        out.push(Disk { name: e.file_name().to_string_lossy().into_owned(), dev, scheduler: active });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `pause.nr_requests`: the settings that raise the request queue's `nr_requests` to `want` on
/// every disk run by BFQ whose queue has fewer, for a pause (in the order of [`disks`];
/// applied and released with the write-back settings, see [`crate::writeback::apply`]). Empty
/// when `want` is 0. A disk whose `nr_requests` cannot be read is left out.
pub fn plan_nr_requests(root: &Path, want: u64) -> Vec<crate::writeback::Held> {
    plan_nr_requests_where(root, want, |now| now < want)
}

/// `io.nr_requests`: the settings that set the request queue's `nr_requests` to `want` on
/// every disk run by BFQ whose queue has another depth, for the agent's lifetime (in the order
/// of [`disks`]). Empty when `want` is 0. A disk whose `nr_requests` cannot be read is left out.
pub fn plan_nr_requests_lifetime(root: &Path, want: u64) -> Vec<crate::writeback::Held> {
    plan_nr_requests_where(root, want, |now| now != want)
}

fn plan_nr_requests_where(root: &Path, want: u64, change: impl Fn(u64) -> bool) -> Vec<crate::writeback::Held> {
    if want == 0 {
        return vec![];
    }
    disks(root)
        .into_iter()
        .filter(|d| d.scheduler == "bfq")
        .filter_map(|d| {
            let path = root.join("sys/block").join(&d.name).join("queue/nr_requests");
            let now: u64 = block::queue_attr(path.parent()?, "nr_requests").ok()?.parse().ok()?;
            change(now).then(|| crate::writeback::Held {
                set: path.clone(),
                value: want.to_string(),
                path,
                original: now.to_string(),
            })
        })
        .collect()
}

/// `pause.strict_guarantees`: the settings that turn BFQ's `strict_guarantees` on for a pause on
/// every disk run by BFQ where it is off (in the order of [`disks`]; applied and released with
/// the write-back settings). Empty when `on` is false. A disk whose attribute cannot be read
/// (not BFQ's, or an older BFQ) is left out.
pub fn plan_strict_guarantees(root: &Path, on: bool) -> Vec<crate::writeback::Held> {
    if !on {
        return vec![];
    }
    disks(root)
        .into_iter()
        .filter(|d| d.scheduler == "bfq")
        .filter_map(|d| {
            let path = root.join("sys/block").join(&d.name).join("queue/iosched/strict_guarantees");
            let now = std::fs::read_to_string(&path).ok()?.trim().to_owned();
            (now == "0").then(|| crate::writeback::Held { set: path.clone(), value: "1".into(), path, original: now })
        })
        .collect()
}

/// What the io hierarchy offers: its files looked up in the mount and its first-level groups.
pub fn offer(root: &Path) -> Offer {
    let Some(h) = CgroupMounts::read(root).ok().and_then(|m| m.hierarchy(Controller::Io)) else {
        return Offer::default();
    };
    let has = |f: &str| {
        h.mount.join(f).exists()
            || std::fs::read_dir(&h.mount).map(|d| d.flatten().any(|e| e.path().join(f).exists())).unwrap_or(false)
    };
    let v2 = h.version == Version::V2;
    let qos = std::fs::read_to_string(h.mount.join("io.cost.qos")).unwrap_or_default();
    Offer {
        v2,
        // v1's root group has no weight file: BFQ's statistics there say child groups get one.
        bfq_weight: if v2 { has("io.bfq.weight") } else { has("blkio.bfq.weight") || has("blkio.bfq.io_service_bytes") },
        io_weight: v2 && has("io.weight"),
        iocost_enabled: v2 && qos.lines().any(|l| l.split_whitespace().any(|w| w == "enable=1")),
        io_latency: v2 && has("io.latency"),
        prio_class: has(if v2 { "io.prio.class" } else { "blkio.prio.class" }),
    }
}

fn list(disks: &[&Disk]) -> String {
    if disks.is_empty() {
        return "none".into();
    }
    disks.iter().map(|d| format!("{} ({})", d.name, d.scheduler)).collect::<Vec<_>>().join(", ")
}

/// The agent's I/O plan for these disks and this hierarchy (pure).
pub fn plan(io: &IoSection, offer: &Offer, disks: &[Disk]) -> Vec<Mechanism> {
    let on = io.enabled;
    let prio: Vec<&Disk> = disks.iter().filter(|d| d.honours_ioprio()).collect();
    let deaf: Vec<&Disk> = disks.iter().filter(|d| !d.honours_ioprio()).collect();
    let bfq: Vec<&Disk> = disks.iter().filter(|d| d.scheduler == "bfq").collect();
    let mut out = vec![];
    let why_off = |avail: bool, switch: bool, what: &str| match (avail, on && switch) {
        (true, true) => "used".to_owned(),
        (true, false) => format!("available, not used ({what})"),
        (false, _) => "not available".to_owned(),
    };
    let avail = offer.bfq_weight && !bfq.is_empty();
    out.push(Mechanism {
        name: "bfq weights",
        available: avail,
        used: avail && on,
        detail: format!(
            "{}: BFQ runs on {}; weight knob {}",
            why_off(avail, true, "io.enabled = false"),
            list(&bfq),
            if offer.bfq_weight { "present" } else { "absent" }
        ),
    });
    let avail = !prio.is_empty();
    out.push(Mechanism {
        name: "ioprio idle",
        available: avail,
        used: avail && on && io.bg_ioprio_idle,
        detail: format!(
            "{}: background threads in the idle class (ioprio_set); honoured on {}; ignored on {}",
            why_off(avail, io.bg_ioprio_idle, "io.bg_ioprio_idle = false"),
            list(&prio),
            list(&deaf)
        ),
    });
    let avail = offer.prio_class;
    out.push(Mechanism {
        name: "prio.class idle",
        available: avail,
        used: avail && on && io.bg_ioprio_idle,
        detail: format!(
            "{}: the background group's bios in the idle class (blk-ioprio {}), for the schedulers that honour it",
            why_off(avail, io.bg_ioprio_idle, "io.bg_ioprio_idle = false"),
            if offer.v2 { "io.prio.class, write-back included" } else { "blkio.prio.class" }
        ),
    });
    // Knob::IoWeight falls back to io.weight where io.bfq.weight is missing.
    let avail = offer.io_weight && !offer.bfq_weight;
    out.push(Mechanism {
        name: "io.weight",
        available: avail,
        used: avail && on,
        detail: if !offer.v2 {
            "not available: cgroup v1 (blk-iocost is v2 only)".into()
        } else if offer.bfq_weight {
            "not used: BFQ's weights are set instead".into()
        } else if !offer.io_weight {
            "not available: no io.weight in the v2 groups".into()
        } else if offer.iocost_enabled {
            format!("{}: weights {}/{} through blk-iocost (enabled in io.cost.qos)", why_off(true, true, ""), io.fg_weight, io.bg_weight)
        } else {
            format!(
                "{}: weights {}/{} written, but blk-iocost is not enabled for any device (io.cost.qos enable=1): no effect until it is",
                why_off(true, true, ""),
                io.fg_weight,
                io.bg_weight
            )
        },
    });
    let avail = offer.io_latency;
    let used = avail && on && io.fg_latency_us > 0 && !deaf.is_empty();
    out.push(Mechanism {
        name: "io.latency",
        available: avail,
        used,
        detail: if !avail {
            "not available: cgroup v2's blk-iolatency (io.latency) not found".into()
        } else if used {
            format!("used: foreground target {} µs on {}", io.fg_latency_us, list(&deaf))
        } else if io.fg_latency_us == 0 {
            "available, not used (io.fg_latency_us = 0)".into()
        } else {
            format!("available, not used: every disk's scheduler honours priorities ({})", list(&prio))
        },
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(name: &str, dev: &str, sched: &str) -> Disk {
        Disk { name: name.into(), dev: dev.into(), scheduler: sched.into() }
    }

    fn find<'a>(p: &'a [Mechanism], name: &str) -> &'a Mechanism {
        p.iter().find(|m| m.name == name).unwrap()
    }

    #[test]
    fn mq_deadline_without_bfq_uses_the_idle_class() {
        let io = IoSection::default();
        let p = plan(&io, &Offer { bfq_weight: true, ..Default::default() }, &[disk("sda", "8:0", "mq-deadline")]);
        assert!(!find(&p, "bfq weights").used, "BFQ's knob alone is not BFQ running: {p:?}");
        let m = find(&p, "ioprio idle");
        assert!(m.used && m.detail.contains("honoured on sda (mq-deadline)"), "{m:?}");
        assert!(!find(&p, "io.weight").available && !find(&p, "io.latency").available);
        let off = plan(&IoSection { bg_ioprio_idle: false, ..io }, &Offer::default(), &[disk("sda", "8:0", "mq-deadline")]);
        assert!(find(&off, "ioprio idle").available && !find(&off, "ioprio idle").used);
    }

    #[test]
    fn a_pure_v2_host_with_none_uses_io_weight_and_io_latency() {
        let disks = [disk("nvme0n1", "259:0", "none"), disk("sda", "8:0", "mq-deadline")];
        let offer = Offer { v2: true, io_weight: true, io_latency: true, prio_class: true, ..Default::default() };
        let io = IoSection { fg_latency_us: 2000, ..Default::default() };
        let p = plan(&io, &offer, &disks);
        let w = find(&p, "io.weight");
        assert!(w.used && w.detail.contains("not enabled"), "{w:?}");
        let l = find(&p, "io.latency");
        assert!(l.used && l.detail.contains("2000 µs on nvme0n1 (none)") && !l.detail.contains("sda"), "{l:?}");
        assert!(find(&p, "ioprio idle").detail.contains("ignored on nvme0n1 (none)"));
        assert!(find(&p, "prio.class idle").used);
        let p = plan(&io, &Offer { iocost_enabled: true, ..offer.clone() }, &disks);
        assert!(find(&p, "io.weight").detail.contains("enabled in io.cost.qos"));
        // Only priority-honouring disks: no latency target is needed.
        let p = plan(&io, &offer, &disks[1..]);
        assert!(find(&p, "io.latency").available && !find(&p, "io.latency").used);
        // Off by default.
        let p = plan(&IoSection::default(), &offer, &disks);
        assert!(find(&p, "io.latency").detail.contains("fg_latency_us = 0"));
    }

    #[test]
    fn disks_and_offer_are_read_from_a_fake_sysfs() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for (name, sched, size, dev) in [
            ("nvme0n1", "[none] mq-deadline kyber bfq", "100", "259:0"),
            ("sda", "none [mq-deadline] kyber bfq", "100", "8:0"),
            ("loop7", "[none] mq-deadline", "0", "7:7"),
        ] {
            let q = r.join("sys/block").join(name).join("queue");
            std::fs::create_dir_all(&q).unwrap();
            std::fs::write(q.join("scheduler"), sched).unwrap();
            std::fs::write(q.parent().unwrap().join("size"), size).unwrap();
            std::fs::write(q.parent().unwrap().join("dev"), dev).unwrap();
        }
        assert_eq!(disks(r), [disk("nvme0n1", "259:0", "none"), disk("sda", "8:0", "mq-deadline")], "unbound loop7 left out");
        let cg = r.join("sys/fs/cgroup");
        std::fs::create_dir_all(cg.join("system.slice")).unwrap();
        std::fs::write(cg.join("cgroup.controllers"), "cpu io memory").unwrap();
        std::fs::write(cg.join("io.cost.qos"), "259:0 enable=1 ctrl=auto rpct=95.00\n").unwrap();
        for f in ["io.weight", "io.latency", "io.prio.class"] {
            std::fs::write(cg.join("system.slice").join(f), "").unwrap();
        }
        std::fs::create_dir_all(r.join("proc/self")).unwrap();
        std::fs::write(r.join("proc/self/mountinfo"), "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n").unwrap();
        assert_eq!(
            offer(r),
            Offer { v2: true, bfq_weight: false, io_weight: true, iocost_enabled: true, io_latency: true, prio_class: true }
        );
    }
}
