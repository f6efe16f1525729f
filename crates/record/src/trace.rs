//! Records imported from real traces (owned by the trace importers in `forefront-trace`).
//!
//! Every importer turns its format into a stream of [`TraceRecord`]s: block-layer events
//! ([`BlockEvent`], from blkparse text, binary blktrace and ftrace), system calls
//! ([`SyscallRecord`], from strace and MobiGen), scheduler events ([`SchedRecord`], from ftrace)
//! and multi-layer I/O spans ([`IoSpan`], from IOPro). The types are FG/BG-neutral (the
//! foreground is a property of an analysis, not of a record) and simulator-friendly: times are
//! `u64` nanoseconds, sizes are bytes. Sector addresses stay in 512-byte sectors because that is
//! the address space of the block layer.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Size of a block-layer sector, in bytes (blktrace and ftrace always count 512-byte sectors).
pub const SECTOR_BYTES: u64 = 512;

/// One imported record, whatever the source format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TraceRecord {
    Block(BlockEvent),
    Syscall(SyscallRecord),
    Sched(SchedRecord),
    Span(IoSpan),
}

impl TraceRecord {
    /// Time of the record, in nanoseconds since the trace's own origin.
    pub fn time_ns(&self) -> u64 {
        match self {
            TraceRecord::Block(r) => r.time_ns,
            TraceRecord::Syscall(r) => r.time_ns,
            TraceRecord::Sched(r) => r.time_ns,
            TraceRecord::Span(r) => r.time_ns,
        }
    }
}

/// A block device number (`major,minor`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DevId {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for DevId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.major, self.minor)
    }
}

/// What happened to a block I/O (blktrace's action codes, as blkparse prints them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum BlockAction {
    /// `Q`: a bio was queued (entered the block layer).
    Queue,
    /// `M`: back-merged into an existing request.
    BackMerge,
    /// `F`: front-merged into an existing request.
    FrontMerge,
    /// `G`: a request was allocated.
    GetRq,
    /// `S`: sleeping on request allocation.
    SleepRq,
    /// `R`: requeued by the driver.
    Requeue,
    /// `D`: dispatched (issued) to the driver/device.
    Issue,
    /// `C`: completed by the device.
    Complete,
    /// `P`: the queue was plugged.
    Plug,
    /// `U`: the queue was unplugged by I/O.
    Unplug,
    /// `T` (blkparse prints `UT`): the queue was unplugged by a timer.
    UnplugTimer,
    /// `I`: inserted into the I/O scheduler.
    Insert,
    /// `X`: a bio was split.
    Split,
    /// `B`: a bio was bounced.
    Bounce,
    /// `A`: remapped from another device (partition → disk, dm).
    Remap,
    /// `m`: a text message (e.g. from CFQ/BFQ).
    Message,
}

impl BlockAction {
    /// The code blkparse prints for this action.
    pub fn code(self) -> &'static str {
        match self {
            BlockAction::Queue => "Q",
            BlockAction::BackMerge => "M",
            BlockAction::FrontMerge => "F",
            BlockAction::GetRq => "G",
            BlockAction::SleepRq => "S",
            BlockAction::Requeue => "R",
            BlockAction::Issue => "D",
            BlockAction::Complete => "C",
            BlockAction::Plug => "P",
            BlockAction::Unplug => "U",
            BlockAction::UnplugTimer => "UT",
            BlockAction::Insert => "I",
            BlockAction::Split => "X",
            BlockAction::Bounce => "B",
            BlockAction::Remap => "A",
            BlockAction::Message => "m",
        }
    }

    /// Parses a blkparse action code (`T` and `UT` both mean an unplug by timer).
    pub fn from_code(code: &str) -> Option<BlockAction> {
        Some(match code {
            "Q" => BlockAction::Queue,
            "M" => BlockAction::BackMerge,
            "F" => BlockAction::FrontMerge,
            "G" => BlockAction::GetRq,
            "S" => BlockAction::SleepRq,
            "R" => BlockAction::Requeue,
            "D" => BlockAction::Issue,
            "C" => BlockAction::Complete,
            "P" => BlockAction::Plug,
            "U" => BlockAction::Unplug,
            "T" | "UT" => BlockAction::UnplugTimer,
            "I" => BlockAction::Insert,
            "X" => BlockAction::Split,
            "B" => BlockAction::Bounce,
            "A" => BlockAction::Remap,
            "m" => BlockAction::Message,
            _ => return None,
        })
    }

    /// All actions, in a fixed order.
    pub const ALL: [BlockAction; 16] = [
        BlockAction::Queue,
        BlockAction::BackMerge,
        BlockAction::FrontMerge,
        BlockAction::GetRq,
        BlockAction::SleepRq,
        BlockAction::Requeue,
        BlockAction::Issue,
        BlockAction::Complete,
        BlockAction::Plug,
        BlockAction::Unplug,
        BlockAction::UnplugTimer,
        BlockAction::Insert,
        BlockAction::Split,
        BlockAction::Bounce,
        BlockAction::Remap,
        BlockAction::Message,
    ];
}

/// The operation of a block request (the first letter of RWBS after an optional preflush `F`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum BlockOp {
    Read,
    Write,
    Discard,
    /// `DE`: secure erase.
    SecureErase,
    /// `F` as the operation: a flush request.
    Flush,
    /// `N`: no data (plugs, passthrough, empty flushes).
    #[default]
    None,
}

/// The RWBS flags of a block event, as the kernel's `blk_fill_rwbs` writes them:
/// `[F]{R|W|D|DE|F|N}[F][A][S][M]` (leading `F` = preflush, trailing `F` = FUA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rwbs {
    pub op: BlockOp,
    pub preflush: bool,
    pub fua: bool,
    pub ahead: bool,
    pub sync: bool,
    pub meta: bool,
}

impl Rwbs {
    /// Parses an RWBS string; `None` if it is not one the kernel or blkparse writes.
    /// `B` (barrier, old kernels) and `E` without `D` are rejected.
    pub fn parse(s: &str) -> Option<Rwbs> {
        let b = s.as_bytes();
        let mut i = 0;
        let mut r = Rwbs::default();
        // A leading F is a preflush when an operation letter follows it.
        if b.len() >= 2 && b[0] == b'F' && matches!(b[1], b'R' | b'W' | b'D' | b'N' | b'F') {
            r.preflush = true;
            i = 1;
        }
        r.op = match b.get(i)? {
            b'R' => BlockOp::Read,
            b'W' => BlockOp::Write,
            b'D' if b.get(i + 1) == Some(&b'E') => {
                i += 1;
                BlockOp::SecureErase
            }
            b'D' => BlockOp::Discard,
            b'F' => BlockOp::Flush,
            b'N' => BlockOp::None,
            _ => return None,
        };
        i += 1;
        let mut last = 0u8;
        for &c in &b[i..] {
            let (bit, flag) = match c {
                b'F' => (1, &mut r.fua),
                b'A' => (2, &mut r.ahead),
                b'S' => (4, &mut r.sync),
                b'M' => (8, &mut r.meta),
                _ => return None,
            };
            // Flags appear at most once and in kernel order.
            if bit <= last {
                return None;
            }
            last = bit;
            *flag = true;
        }
        Some(r)
    }

    /// True for requests that read data.
    pub fn is_read(&self) -> bool {
        self.op == BlockOp::Read
    }

    /// True for requests that write data.
    pub fn is_write(&self) -> bool {
        self.op == BlockOp::Write
    }
}

impl fmt::Display for Rwbs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(8);
        if self.preflush {
            s.push('F');
        }
        s.push_str(match self.op {
            BlockOp::Read => "R",
            BlockOp::Write => "W",
            BlockOp::Discard => "D",
            BlockOp::SecureErase => "DE",
            BlockOp::Flush => "F",
            BlockOp::None => "N",
        });
        if self.fua {
            s.push('F');
        }
        if self.ahead {
            s.push('A');
        }
        if self.sync {
            s.push('S');
        }
        if self.meta {
            s.push('M');
        }
        f.pad(&s)
    }
}

/// Action-specific data of a block event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockDetail {
    #[default]
    None,
    /// `A`: the request came from `from` at `from_sector`.
    Remap { from: DevId, from_sector: u64 },
    /// `X`: the bio was split at `new_sector`.
    Split { new_sector: u64 },
    /// `U`/`T`: number of requests released by the unplug.
    Unplug { depth: u32 },
    /// `m`: the message text.
    Message { text: String },
    /// A passthrough (SCSI/NVMe command) request: `bytes` carries the data length and there is
    /// no sector.
    Passthrough,
}

/// One block-layer event (one blkparse line, one `struct blk_io_trace`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockEvent {
    /// Nanoseconds since the trace started.
    pub time_ns: u64,
    pub dev: DevId,
    pub cpu: u32,
    /// Per-CPU sequence number (0 if the source has none).
    pub seq: u64,
    /// The process that was running when the event happened (0 in interrupt context).
    pub pid: u32,
    /// The process name, when the format carries it (blkparse does not print it for `C`/`A`).
    pub comm: Option<String>,
    pub action: BlockAction,
    pub rwbs: Rwbs,
    /// Start address in 512-byte sectors.
    pub sector: u64,
    /// Transfer length in bytes (a multiple of 512 except for passthrough requests).
    pub bytes: u64,
    /// Completion error (`C`, `R`), 0 otherwise.
    pub error: i32,
    pub detail: BlockDetail,
}

impl BlockEvent {
    /// Transfer length in 512-byte sectors.
    pub fn nsectors(&self) -> u64 {
        self.bytes / SECTOR_BYTES
    }
}

/// One system call (one strace or MobiGen line, `<unfinished ...>` pairs joined).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallRecord {
    /// Start time, nanoseconds since the trace's origin (midnight for `strace -tt`).
    pub time_ns: u64,
    /// Thread id (strace's pid prefix, MobiGen's tid).
    pub tid: u32,
    /// Syscall name as traced (`pread64`, `pwrite`, `openat`, ...).
    pub name: String,
    /// The file descriptor the call works on (for `open`/`openat`: the one it returned).
    pub fd: Option<i32>,
    /// The file the call names or its descriptor refers to, when known.
    pub path: Option<String>,
    /// File offset of a read or write in bytes: explicit for `pread`/`pwrite`, tracked per
    /// descriptor otherwise.
    pub offset: Option<u64>,
    /// Bytes requested by a read or write.
    pub size: Option<u64>,
    /// Time spent in the call (strace `-T`), nanoseconds.
    pub duration_ns: Option<u64>,
    /// Return value (`-errno` style values are kept as the trace shows them, e.g. `-1`).
    pub result: Option<i64>,
    /// The process name, when the trace tells it (strace: the file its `execve` ran,
    /// inherited across `fork`/`clone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
}

/// A scheduler event (ftrace / trace-cmd).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedRecord {
    pub time_ns: u64,
    pub cpu: u32,
    pub event: SchedEvent,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SchedEvent {
    /// `sched_switch`: `prev` leaves the CPU (in `prev_state`), `next` runs.
    Switch {
        prev_comm: String,
        prev_pid: u32,
        prev_prio: i32,
        prev_state: String,
        next_comm: String,
        next_pid: u32,
        next_prio: i32,
    },
    /// `sched_wakeup` / `sched_wakeup_new`: `pid` becomes runnable on `target_cpu`.
    Wakeup { comm: String, pid: u32, prio: i32, target_cpu: u32 },
}

/// The layer an IOPro span was measured at (IOPro's layer numbers 4–9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoLayer {
    Syscall,
    PageCache,
    FileSystem,
    Block,
    Scsi,
    Device,
}

impl IoLayer {
    pub fn from_iopro(n: u32) -> Option<IoLayer> {
        Some(match n {
            4 => IoLayer::Syscall,
            5 => IoLayer::PageCache,
            6 => IoLayer::FileSystem,
            7 => IoLayer::Block,
            8 => IoLayer::Scsi,
            9 => IoLayer::Device,
            _ => return None,
        })
    }

    pub fn iopro_number(self) -> u32 {
        match self {
            IoLayer::Syscall => 4,
            IoLayer::PageCache => 5,
            IoLayer::FileSystem => 6,
            IoLayer::Block => 7,
            IoLayer::Scsi => 8,
            IoLayer::Device => 9,
        }
    }
}

/// One I/O measured at one layer of the stack (an IOPro/AIOPro record).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoSpan {
    pub time_ns: u64,
    pub duration_ns: u64,
    pub uid: u32,
    pub pid: u32,
    pub tid: u32,
    pub layer: IoLayer,
    /// IOPro's `rw` field: 0 read, 1 write (other values are kept in `rw_raw`).
    pub write: bool,
    pub rw_raw: u32,
    pub func_id: u32,
    pub flag: u64,
    pub fd: i32,
    pub offset: u64,
    pub size: u64,
    pub inode: u64,
    pub lba: u64,
    pub path: String,
}
