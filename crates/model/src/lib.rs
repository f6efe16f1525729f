//! The phone's layers as plain data structures with their stock algorithms, driven by the
//! simulator (`forefront-sim`), which owns the event loop and the tasks.
//!
//! - [`cpu`]: per-core run queues, CFS with task groups ([`cpu::CpuSched`]).
//! - [`mm`]: the page cache with LRU lists, dirty state and writeback bookkeeping ([`mm::PageCache`]).
//! - [`fs`]: an ext4-like file system: extents, metadata blocks, a jbd2-like [`fs::Journal`].
//! - [`block`]: requests with provenance ([`block::Request`]), merging, the [`block::IoScheduler`]
//!   implementations (noop, deadline, CFQ) and the [`block::BlockQueue`] that dispatches to the device.
//! - [`flash`]: eMMC / UFS / SD timing with an internal command queue ([`flash::FlashDevice`]).
//! - [`kernel`]: the [`kernel::Kernel`] context through which kernel threads and paths (the
//!   jbd2 commit thread in [`fs::jbd2`], reclaim in [`mm::reclaim`]) act on the machine.
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
pub mod prov;
pub mod wait;
