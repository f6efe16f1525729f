//! Foreground-first decisions as pure functions: no I/O, no clock, no globals. The agent feeds
//! them snapshots of a real system; the simulator feeds them its modelled tasks.
//!
//! - [`classify`]: who is foreground, who serves it, who is background ([`Class`],
//!   [`classify::classify`]).
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
