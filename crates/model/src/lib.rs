//! The phone's layers as plain data structures with their stock algorithms, driven by the
//! simulator (`forefront-sim`), which owns the event loop and the tasks.
//!
//! - [`cpu`]: per-core run queues, CFS with task groups ([`cpu::CpuSched`]).
//! - [`mm`]: the page cache with LRU lists, dirty state and writeback bookkeeping ([`mm::PageCache`]);
//!   reclaim (watermarks, kswapd, direct reclaim: [`mm::reclaim`]) and the write-back flusher
//!   with its state between steps and the dirty thresholds ([`mm::writeback`]); dirty
//!   throttling as Linux 3.10's `balance_dirty_pages` ([`mm::throttle`]).
//! - [`fs`]: an ext4-like file system: extents, metadata blocks, a jbd2-like [`fs::Journal`]; the
//!   file paths (read, write, fsync, creat/truncate/unlink, journal handles: [`fs::ext4`]), the
//!   jbd2 commit thread and its commit timer ([`fs::jbd2`]), and a NILFS2-like log-structured
//!   area ([`fs::log`]) with its cleaner ([`fs::cleaner`]).
//! - [`block`]: requests with provenance ([`block::Request`]), merging, the [`block::IoScheduler`]
//!   implementations (noop, deadline, CFQ) and the [`block::BlockQueue`] that dispatches to the device.
//! - [`flash`]: eMMC / UFS / SD timing with an internal command queue ([`flash::FlashDevice`]).
//! - [`storage`]: the phone's block device: one device, or RAID-0 over several, each member
//!   with its own block queue ([`storage::Storage`], built from the devices' parameters).
//! - [`kernel`]: the [`kernel::Kernel`] context through which the layer modules ([`fs::ext4`],
//!   [`fs::jbd2`], [`mm::reclaim`], [`mm::writeback`]) act on the machine the simulator owns;
//!   each is a plain step function with unit tests on one fake context (`testkit`, test builds
//!   only).
//! - [`net`]: the network link shared by every app ([`net::Link`]: a round trip, then fair
//!   shares).
//! - [`wait`]: the [`wait::WaitGraph`] — what every blocked task waits for, and which I/O that is,
//!   directly or through the journal (QASIO's dependencies).
//!
//! Each layer exposes the seams that foreground-first policies change (classification, page
//! allocation gate, reclaim order, dispatch insertion, device command priority, CPU weights); the
//! decisions themselves live in `forefront-policy`.

pub mod block;
pub mod cpu;
pub mod flash;
pub mod fs;
pub mod kernel;
pub mod mm;
pub mod net;
pub mod prov;
pub mod storage;
pub mod wait;

#[cfg(test)]
mod testkit;
