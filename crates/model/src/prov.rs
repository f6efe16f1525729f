//! Provenance: who caused a piece of work and who waits for it. Every request and CPU burst
//! carries one, so policies can classify work and reports can split time by app and FG/BG.

use serde::Serialize;

/// Index of a task (thread) in the simulation, also its tid.
pub type Tid = u32;
/// Android app user id; kernel threads use uid 0.
pub type Uid = u32;

/// What originated an I/O (the syscall or kernel path), for breakdowns and policy matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Read,
    Write,
    Fsync,
    Fdatasync,
    Truncate,
    Unlink,
    Metadata,
    Readahead,
    Writeback,
    JournalCommit,
    Checkpoint,
    Discard,
    Replay,
}

/// Provenance carried by requests and pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// The app (uid) the data belongs to or the work is done for.
    pub uid: Uid,
    /// The process (app) id: CFQ's per-process sync queues key on it.
    pub pid: u32,
    /// The task that submitted the request (a kernel thread for write-back and commits).
    pub tid: Tid,
    /// Foreground at submission, as the active policy's classifier saw it.
    pub fg: bool,
    pub origin: Origin,
    /// blkio cgroup of the submitter (index into the scenario's blkio groups; 0 = root).
    pub blkio_group: u16,
}

impl Provenance {
    pub const KERNEL: Provenance = Provenance { uid: 0, pid: 0, tid: 0, fg: false, origin: Origin::Writeback, blkio_group: 0 };
}
