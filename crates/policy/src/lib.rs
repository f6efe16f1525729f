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

    /// Every policy name `by_name` accepts.
    pub fn names() -> Vec<&'static str> {
        vec!["android"]
    }

    pub fn by_name(name: &str) -> Result<Policy, UnknownPolicy> {
        match name {
            "android" => Ok(Policy::android()),
            _ => Err(UnknownPolicy(name.to_string())),
        }
    }
}
