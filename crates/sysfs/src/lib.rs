//! The only crate of forefront that touches `/sys`, `/proc` and cgroupfs.
//!
//! Every function takes the file-system root it works under (`/` on a real system, a tempdir
//! holding a fake tree in tests), so the cgroup v1 and v2 logic is tested on fake trees as well
//! as on a real kernel. Errors are typed ([`Error`]) and each names the file it is about.
//!
//! - [`mounts`]: where each controller lives ([`CgroupMounts`], [`Hierarchy`], v1 or v2).
//! - [`cgroup`]: a group directory ([`Cgroup`]) and its knobs by meaning ([`Knob`]), with the
//!   per-version file names (`cpu.shares`/`cpu.weight`, `blkio.bfq.weight`/`io.bfq.weight`,
//!   `freezer.state`/`cgroup.freeze`, `memory.soft_limit_in_bytes`/`memory.low`).
//! - [`procfs`]: processes, threads, their cgroups and I/O counters.
//! - [`ioprio`]: I/O priority classes of threads.
//! - [`block`]: the queue and I/O scheduler behind a file system.
//! - [`vm`]: dropping the page cache.
//! - [`sched`]: the kernel's preemption model.
//! - [`fs`]: the file system a path is on, and whether its ext4 journals.
//!
//! ```no_run
//! use forefront_sysfs::{Cgroup, CgroupMounts, Controller, Knob};
//! let root = std::path::Path::new("/");
//! let mounts = CgroupMounts::read(root)?;
//! let cpu = mounts.hierarchy(Controller::Cpu).expect("cpu controller");
//! let bg = Cgroup::new(cpu.mount.join("forefront/bg"), cpu.version);
//! bg.create()?;
//! bg.set_knob(Knob::CpuWeight, 110)?; // v1 cpu.shares=110, v2 cpu.weight=10
//! # Ok::<(), forefront_sysfs::Error>(())
//! ```

pub mod block;
pub mod cgroup;
mod error;
pub mod fs;
pub mod ioprio;
pub mod mounts;
pub mod procfs;
pub mod sched;
pub mod vm;

pub use cgroup::{Cgroup, Knob};
pub use error::{Error, Result};

/// Writes a raw value to a kernel file in one write (for restoring a recorded original text).
pub fn write_value(path: &std::path::Path, value: &str) -> Result<()> {
    error::write_str(path, value)
}
pub use mounts::{CgroupMounts, Controller, Hierarchy, Version};
