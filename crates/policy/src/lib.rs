//! Foreground-first policies as plain values: which seam of which layer a policy changes.
//!
//! A [`Policy`] is a set of decisions, one per seam the simulator exposes:
//!
//! | seam | layer | stock Android |
//! |---|---|---|
//! | [`Policy::classify_io`] | every layer: FG/BG tag on tasks, pages and requests | tasks by cgroup only |
//! | [`Policy::alloc_gate`] | page cache: pause BG page allocation while FG I/O is in flight | off |
//! | [`Policy::reclaim`] | page cache: victim order | one global LRU |
//! | [`Policy::dispatch`] | block layer: where a new request is inserted | the I/O scheduler |
//! | [`Policy::device_order`] | device firmware: command priority | reads before writes |
//! | [`Policy::cpu`] | CPU: group weights of FG and BG | 1024 / 110 |
//!
//! The simulator counts every time a seam changes a decision (`hooks` in run reports), so a
//! policy that silently does nothing shows up.
//!
//! ```
//! let p = forefront_policy::Policy::by_name("android").unwrap();
//! assert_eq!(p.device_order, forefront_policy::DeviceOrder::ReadFirst);
//! ```
//!
//! [`classify`] holds the agent's pure FG/interactive/BG classification of real processes (who
//! is foreground, who serves it, who is background; membership follows forks):
//!
//! ```
//! use forefront_policy::classify::{classify, Class, Foreground, Process, Rules};
//! let procs = [
//!     Process { pid: 10, ppid: 1, uid: 1000, comm: "browser".into(), cgroup: "/".into() },
//!     Process { pid: 11, ppid: 10, uid: 1000, comm: "renderer".into(), cgroup: "/".into() },
//!     Process { pid: 20, ppid: 1, uid: 1000, comm: "updater".into(), cgroup: "/".into() },
//! ];
//! let rules = Rules { scope_uids: vec![1000], ..Rules::default() };
//! let classes = classify(&procs, &Foreground::Pids(vec![10]), &rules);
//! assert_eq!(classes[&11], Class::Foreground); // membership follows forks
//! assert_eq!(classes[&20], Class::Background);
//! ```

pub mod classify;

pub use classify::Class;

use serde::Serialize;

/// Reclaim victim order (page cache seam).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reclaim {
    Global,
    BackgroundFirst,
}

/// Where the block layer inserts a new request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dispatch {
    /// Everything through the I/O scheduler.
    Scheduler,
    /// Foreground requests straight to the dispatch queue.
    ForegroundDirect,
}

/// Device command priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceOrder {
    /// Reads before writes, FIFO within each (stock eMMC/UFS firmware).
    ReadFirst,
    /// FG read > FG write > BG read > BG write.
    ForegroundFirst,
}

/// CPU weights of the foreground and background groups; `None` keeps the scenario's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuWeights {
    pub fg_shares: Option<u32>,
    pub bg_shares: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Policy {
    pub name: String,
    pub description: &'static str,
    /// Tag pages and requests FG/BG by the foreground UID (App Status Detector) instead of
    /// only by the submitting task's cgroup.
    pub classify_io: bool,
    pub alloc_gate: bool,
    pub reclaim: Reclaim,
    pub dispatch: Dispatch,
    pub device_order: DeviceOrder,
    pub cpu: CpuWeights,
}

#[derive(Debug, thiserror::Error)]
#[error("unknown policy `{0}` (known: {known})", known = Policy::names().join(", "))]
pub struct UnknownPolicy(pub String);

impl Policy {
    /// Stock Android: FG/BG CPU groups, CFQ, read-first devices, global LRU.
    pub fn android() -> Policy {
        Policy {
            name: "android".into(),
            description: "stock Android: cpu.shares FG/BG groups, the scenario's I/O scheduler, global LRU, read-first device queue",
            classify_io: false,
            alloc_gate: false,
            reclaim: Reclaim::Global,
            dispatch: Dispatch::Scheduler,
            device_order: DeviceOrder::ReadFirst,
            cpu: CpuWeights { fg_shares: None, bg_shares: None },
        }
    }

    /// FastTrack-- (ATC'18): App Status Detector, Page Allocator, Page Reclaimer, I/O
    /// Dispatcher — everything but the device scheduler (what ran on real phones).
    pub fn fasttrack_minus() -> Policy {
        let mut p = Policy::android();
        p.name = "fasttrack-minus".into();
        p.description = "FastTrack--: FG by UID, BG allocation pause, BG-first reclaim, FG requests straight to dispatch";
        for c in [Component::Alloc, Component::Reclaim, Component::Dispatch] {
            c.apply(&mut p);
        }
        p
    }

    /// Full FastTrack: FastTrack-- plus the device I/O scheduler (FG read > FG write > BG read > BG write).
    pub fn fasttrack() -> Policy {
        let mut p = Policy::fasttrack_minus();
        p.name = "fasttrack".into();
        p.description = "FastTrack: FastTrack-- plus device command priority FG read > FG write > BG read > BG write";
        Component::Device.apply(&mut p);
        p
    }

    /// Every named policy; `android+ft-<component>` combinations are accepted too
    /// (components: alloc, reclaim, dispatch, device).
    pub fn names() -> Vec<&'static str> {
        vec!["android", "fasttrack-minus", "fasttrack"]
    }

    /// The single-component ablations of FastTrack.
    pub fn ablations() -> Vec<&'static str> {
        vec!["android+ft-alloc", "android+ft-reclaim", "android+ft-dispatch", "android+ft-device"]
    }

    pub fn by_name(name: &str) -> Result<Policy, UnknownPolicy> {
        let mut parts = name.split('+');
        let base = parts.next().unwrap_or_default();
        let mut p = match base {
            "android" => Policy::android(),
            "fasttrack-minus" => Policy::fasttrack_minus(),
            "fasttrack" => Policy::fasttrack(),
            _ => return Err(UnknownPolicy(name.to_string())),
        };
        for part in parts {
            let c = Component::parse(part).ok_or_else(|| UnknownPolicy(name.to_string()))?;
            c.apply(&mut p);
        }
        if name.contains('+') {
            p.name = name.to_string();
            p.description = "a combination of components (see the name)";
        }
        Ok(p)
    }
}

/// One FastTrack component, for ablations. Every component needs the App Status Detector
/// (FG/BG classification by UID), so applying any of them turns it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Alloc,
    Reclaim,
    Dispatch,
    Device,
}

impl Component {
    pub fn parse(s: &str) -> Option<Component> {
        Some(match s {
            "ft-alloc" => Component::Alloc,
            "ft-reclaim" => Component::Reclaim,
            "ft-dispatch" => Component::Dispatch,
            "ft-device" => Component::Device,
            _ => return None,
        })
    }

    pub fn apply(self, p: &mut Policy) {
        p.classify_io = true;
        match self {
            Component::Alloc => p.alloc_gate = true,
            Component::Reclaim => p.reclaim = Reclaim::BackgroundFirst,
            Component::Dispatch => p.dispatch = Dispatch::ForegroundDirect,
            Component::Device => p.device_order = DeviceOrder::ForegroundFirst,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fasttrack_minus_is_fasttrack_without_the_device_scheduler() {
        let mut minus = Policy::by_name("fasttrack-minus").unwrap();
        let full = Policy::by_name("fasttrack").unwrap();
        assert_eq!(minus.device_order, DeviceOrder::ReadFirst);
        assert_eq!(full.device_order, DeviceOrder::ForegroundFirst);
        minus.device_order = DeviceOrder::ForegroundFirst;
        minus.name = full.name.clone();
        minus.description = full.description;
        assert_eq!(minus, full);
    }

    #[test]
    fn ablations_change_one_seam_each() {
        let base = Policy::android();
        for name in Policy::ablations() {
            let p = Policy::by_name(name).unwrap();
            let changed = [p.alloc_gate != base.alloc_gate, p.reclaim != base.reclaim, p.dispatch != base.dispatch, p.device_order != base.device_order];
            assert_eq!(changed.iter().filter(|&&c| c).count(), 1, "{name}");
            assert!(p.classify_io);
        }
        assert!(Policy::by_name("android+ft-bogus").is_err());
        assert!(Policy::by_name("qasio").is_err());
    }
}
