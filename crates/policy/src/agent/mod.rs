//! The agent's decisions, shared by the daemon (`forefront_agent`) and the simulator's `agent`
//! policy: its configuration ([`config::Config`], the agent's own TOML), the rule bounding its
//! pauses ([`pause::PauseGate`]), the classification rules its configuration makes
//! ([`rules`], then [`crate::classify::classify`]) and the knobs it sets on a task of each class
//! ([`knobs`]).
//!
//! The daemon applies the knobs through cgroupfs, `ioprio_set` and `/proc/sys/vm`; the
//! simulator through its models (block-layer groups and ioprio classes, CPU group weights, a
//! per-task frozen state, the flusher's thresholds). Both decide here.
//!
//! ```
//! use forefront_policy::agent::{config::Config, knobs};
//! use forefront_policy::Class;
//! let cfg = Config::default();
//! let bg = knobs(&cfg, Some(Class::Background));
//! assert_eq!(bg.io_weight, Some(10));
//! assert!(bg.ioprio_idle && bg.pausable);
//! assert!(!knobs(&cfg, Some(Class::Interactive)).pausable);
//! ```

pub mod config;
pub mod pause;

use std::collections::BTreeSet;

use crate::classify::{Class, Rules};
use config::{Config, ScopeSection};

/// The classification rules of a configuration: its scope, its cells (every cell is in scope:
/// a cell that is not foreground is background), the scope added at run time (`scope`
/// requests), its interactive helpers, and the processes never classified.
pub fn rules(cfg: &Config, runtime: &ScopeSection, exclude: BTreeSet<i32>) -> Rules {
    Rules {
        scope_uids: cfg.scope.uids.iter().chain(&runtime.uids).copied().collect(),
        scope_cgroups: cfg.scope.cgroups.iter().chain(cfg.cells.values()).chain(&runtime.cgroups).cloned().collect(),
        scope_trees: cfg.scope.trees.iter().chain(&runtime.trees).copied().collect(),
        interactive_comms: cfg.scope.interactive.clone(),
        exclude,
    }
}

/// What the agent sets on a task of one class (`None`: a process it does not manage).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskKnobs {
    /// The BFQ weight of the task's group (`blkio.bfq.weight` / `io.bfq.weight`, 1..=1000);
    /// `None`: the group is not weighted (`[io] enabled = false`, or unmanaged).
    pub io_weight: Option<u32>,
    /// The task's threads get the idle I/O class (`ionice -c3`).
    pub ioprio_idle: bool,
    /// The CPU weight of its group in `cpu.shares` units; `None`: not set (`[cpu] enabled =
    /// false`, or unmanaged).
    pub cpu_shares: Option<u32>,
    /// Its group is in the idle CPU class (`cpu.idle = 1`).
    pub cpu_idle: bool,
    /// `cpu_shares` and `cpu_idle` hold only during a pause (`[cpu] pause_only`).
    pub cpu_pause_only: bool,
    /// A pause freezes it (its group is the freezer's).
    pub pausable: bool,
}

/// The knobs the agent sets on a task of class `class` under `cfg` — as the daemon's group
/// setup and placement do: the foreground and background groups' CPU and I/O weights, the
/// background's idle I/O class and CPU idle class, and the freezer on the background group.
/// Interactive helpers are placed in no group of the agent's: nothing is set on them.
pub fn knobs(cfg: &Config, class: Option<Class>) -> TaskKnobs {
    let (io, cpu) = (&cfg.io, &cfg.cpu);
    match class {
        Some(Class::Foreground) => TaskKnobs {
            io_weight: io.enabled.then_some(io.fg_weight as u32),
            cpu_shares: cpu.enabled.then_some(cpu.fg_shares as u32),
            ..TaskKnobs::default()
        },
        Some(Class::Background) => TaskKnobs {
            io_weight: io.enabled.then_some(io.bg_weight as u32),
            ioprio_idle: io.enabled && io.bg_ioprio_idle,
            cpu_shares: cpu.enabled.then_some(cpu.bg_shares as u32),
            cpu_idle: cpu.enabled && cpu.bg_idle,
            cpu_pause_only: cpu.enabled && cpu.pause_only,
            pausable: cfg.pause.enabled,
        },
        Some(Class::Interactive) | None => TaskKnobs::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_follow_each_section_switch() {
        let mut cfg = Config::default();
        let fg = knobs(&cfg, Some(Class::Foreground));
        assert_eq!((fg.io_weight, fg.cpu_shares, fg.ioprio_idle, fg.pausable), (Some(1000), None, false, false));
        let bg = knobs(&cfg, Some(Class::Background));
        assert_eq!((bg.io_weight, bg.cpu_shares, bg.cpu_idle), (Some(10), None, false), "the CPU side is off by default");
        cfg.cpu.enabled = true;
        cfg.io.enabled = false;
        cfg.pause.enabled = false;
        let bg = knobs(&cfg, Some(Class::Background));
        assert_eq!(
            (bg.io_weight, bg.ioprio_idle, bg.cpu_shares, bg.cpu_idle, bg.pausable),
            (None, false, Some(110), true, false)
        );
        assert_eq!(knobs(&cfg, None), TaskKnobs::default());
    }

    #[test]
    fn rules_take_the_scope_the_cells_and_the_runtime_scope() {
        let mut cfg = Config::default();
        cfg.scope.uids = vec![1000];
        cfg.scope.interactive = vec!["gnome-shell".into()];
        cfg.cells.insert("work".into(), "/cells/work".into());
        let rt = ScopeSection { trees: vec![42], ..ScopeSection::default() };
        let r = rules(&cfg, &rt, [7].into());
        assert_eq!(r.scope_uids, [1000]);
        assert_eq!(r.scope_cgroups, ["/cells/work"]);
        assert_eq!(r.scope_trees, [42]);
        assert_eq!(r.interactive_comms, ["gnome-shell"]);
        assert!(r.exclude.contains(&7));
    }
}
