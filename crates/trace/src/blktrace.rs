//! Binary blktrace files: `struct blk_io_trace` records (48 bytes, then `pdu_len` bytes of
//! payload), one file per CPU (`DEV.blktrace.N`), merged by time as blkparse does.
//!
//! Layout (`include/uapi/linux/blktrace_api.h`), in the byte order of the machine that
//! recorded it (both orders are read, detected from the magic like blkparse):
//!
//! ```text
//! u32 magic (0x65617400 | version 0x07), u32 sequence, u64 time (ns), u64 sector,
//! u32 bytes, u32 action (category bits << 16 | action), u32 pid, u32 device (dev_t:
//! major << 20 | minor), u32 cpu, u16 error, u16 pdu_len
//! ```
//!
//! Notify records (`BLK_TC_NOTIFY`) carry process names (used for later events' `comm`, as
//! blkparse does), timestamps (skipped) and messages (`m` events). Remap, unplug and split
//! payloads are big-endian in every trace. Times are made relative to the first event (notify records
//! excluded), as blkparse prints them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use forefront_record::trace::{BlockAction, BlockDetail, BlockEvent, BlockOp, DevId, Rwbs, TraceRecord};

use crate::{open_file, TraceError, Warnings};

pub const MAGIC: u32 = 0x6561_7400;
pub const VERSION: u32 = 0x07;
pub const RECORD_LEN: usize = 48;

// Category bits (upper 16 bits of `action`).
pub const TC_READ: u32 = 1 << 0;
pub const TC_WRITE: u32 = 1 << 1;
pub const TC_FLUSH: u32 = 1 << 2;
pub const TC_SYNC: u32 = 1 << 3;
pub const TC_QUEUE: u32 = 1 << 4;
pub const TC_REQUEUE: u32 = 1 << 5;
pub const TC_ISSUE: u32 = 1 << 6;
pub const TC_COMPLETE: u32 = 1 << 7;
pub const TC_FS: u32 = 1 << 8;
pub const TC_PC: u32 = 1 << 9;
pub const TC_NOTIFY: u32 = 1 << 10;
pub const TC_AHEAD: u32 = 1 << 11;
pub const TC_META: u32 = 1 << 12;
pub const TC_DISCARD: u32 = 1 << 13;
pub const TC_DRV_DATA: u32 = 1 << 14;
pub const TC_FUA: u32 = 1 << 15;
const TC_SHIFT: u32 = 16;
const TA_CGROUP: u32 = 1 << 8;

// Notify actions.
pub const TN_PROCESS: u32 = 0;
pub const TN_TIMESTAMP: u32 = 1;
pub const TN_MESSAGE: u32 = 2;

/// One raw `struct blk_io_trace` with its payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawTrace {
    pub magic: u32,
    pub sequence: u32,
    pub time: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub pid: u32,
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    pub pdu: Vec<u8>,
}

/// The kernel's action numbers (`__BLK_TA_*`) for each [`BlockAction`].
pub fn action_number(a: BlockAction) -> u32 {
    match a {
        BlockAction::Queue => 1,
        BlockAction::BackMerge => 2,
        BlockAction::FrontMerge => 3,
        BlockAction::GetRq => 4,
        BlockAction::SleepRq => 5,
        BlockAction::Requeue => 6,
        BlockAction::Issue => 7,
        BlockAction::Complete => 8,
        BlockAction::Plug => 9,
        BlockAction::Unplug => 10,
        BlockAction::UnplugTimer => 11,
        BlockAction::Insert => 12,
        BlockAction::Split => 13,
        BlockAction::Bounce => 14,
        BlockAction::Remap => 15,
        BlockAction::Message => TN_MESSAGE,
    }
}

fn action_from_number(n: u32) -> Option<BlockAction> {
    BlockAction::ALL.into_iter().find(|a| *a != BlockAction::Message && action_number(*a) == n)
}

/// The category bits blktrace records for an event's RWBS flags and action.
fn category_bits(ev: &BlockEvent) -> u32 {
    let r = &ev.rwbs;
    // The kernel always records a direction: WRITE for ops with the write bit (write,
    // discard, secure erase), READ otherwise (also for plugs, flushes and no-data requests).
    let mut c = match r.op {
        BlockOp::Write | BlockOp::Discard | BlockOp::SecureErase => TC_WRITE,
        BlockOp::Read | BlockOp::Flush | BlockOp::None => TC_READ,
    };
    if matches!(r.op, BlockOp::Discard | BlockOp::SecureErase) {
        c |= TC_DISCARD;
    }
    for (on, bit) in [(r.preflush, TC_FLUSH), (r.fua, TC_FUA), (r.ahead, TC_AHEAD), (r.sync, TC_SYNC), (r.meta, TC_META)] {
        if on {
            c |= bit;
        }
    }
    if ev.detail == BlockDetail::Passthrough {
        c |= TC_PC;
    }
    // BLK_TA_* definitions of blktrace_api.h.
    c |= match ev.action {
        BlockAction::Queue
        | BlockAction::BackMerge
        | BlockAction::FrontMerge
        | BlockAction::GetRq
        | BlockAction::SleepRq
        | BlockAction::Plug
        | BlockAction::Unplug
        | BlockAction::UnplugTimer
        | BlockAction::Insert
        | BlockAction::Remap => TC_QUEUE,
        BlockAction::Requeue => TC_REQUEUE,
        BlockAction::Issue => TC_ISSUE,
        BlockAction::Complete => TC_COMPLETE,
        BlockAction::Split | BlockAction::Bounce | BlockAction::Message => 0,
    };
    c
}

impl RawTrace {
    /// The record blktrace would write for `ev` (time relative to 0, version 7). Message events
    /// become notify records.
    pub fn from_event(ev: &BlockEvent) -> RawTrace {
        let device = (ev.dev.major << 20) | (ev.dev.minor & 0xf_ffff);
        let mut raw = RawTrace {
            magic: MAGIC | VERSION,
            sequence: ev.seq as u32,
            time: ev.time_ns,
            sector: ev.sector,
            bytes: ev.bytes as u32,
            action: 0,
            pid: ev.pid,
            device,
            cpu: ev.cpu,
            error: ev.error as u16,
            pdu: Vec::new(),
        };
        if let BlockDetail::Message { text } = &ev.detail {
            raw.action = (TC_NOTIFY << TC_SHIFT) | TN_MESSAGE;
            raw.pdu = text.as_bytes().to_vec();
            raw.sector = 0;
            raw.bytes = 0;
            return raw;
        }
        raw.action = (category_bits(ev) << TC_SHIFT) | action_number(ev.action);
        match &ev.detail {
            BlockDetail::Remap { from, from_sector } => {
                let mut p = Vec::with_capacity(16);
                p.extend_from_slice(&((from.major << 20) | from.minor).to_be_bytes());
                p.extend_from_slice(&device.to_be_bytes());
                p.extend_from_slice(&from_sector.to_be_bytes());
                raw.pdu = p;
            }
            BlockDetail::Unplug { depth } => raw.pdu = (*depth as u64).to_be_bytes().to_vec(),
            BlockDetail::Split { new_sector } => raw.pdu = new_sector.to_be_bytes().to_vec(),
            _ => {}
        }
        raw
    }

    /// A process-name notify record (`BLK_TN_PROCESS`), as blktrace emits before a pid's events.
    pub fn process_name(pid: u32, comm: &str, cpu: u32, time: u64, sequence: u32) -> RawTrace {
        let mut pdu = comm.as_bytes().to_vec();
        pdu.resize(16, 0);
        RawTrace {
            magic: MAGIC | VERSION,
            sequence,
            time,
            action: (TC_NOTIFY << TC_SHIFT) | TN_PROCESS,
            pid,
            cpu,
            pdu,
            ..Default::default()
        }
    }
}

/// Serialises a record in little- or big-endian byte order.
pub fn encode(raw: &RawTrace, big_endian: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD_LEN + raw.pdu.len());
    macro_rules! put {
        ($v:expr) => {
            if big_endian {
                out.extend_from_slice(&$v.to_be_bytes())
            } else {
                out.extend_from_slice(&$v.to_le_bytes())
            }
        };
    }
    put!(raw.magic);
    put!(raw.sequence);
    put!(raw.time);
    put!(raw.sector);
    put!(raw.bytes);
    put!(raw.action);
    put!(raw.pid);
    put!(raw.device);
    put!(raw.cpu);
    put!(raw.error);
    put!(raw.pdu.len() as u16);
    out.extend_from_slice(&raw.pdu);
    out
}

/// True if `head` starts with a blktrace magic in either byte order.
pub fn has_magic(head: &[u8]) -> bool {
    if head.len() < 4 {
        return false;
    }
    let w = [head[0], head[1], head[2], head[3]];
    (u32::from_le_bytes(w) & 0xffff_ff00) == MAGIC || (u32::from_be_bytes(w) & 0xffff_ff00) == MAGIC
}

/// `base.blktrace.N` files next to `base`, sorted by N.
pub fn per_cpu_files(base: &Path) -> Result<Vec<PathBuf>, TraceError> {
    let dir = match base.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = base.file_name().and_then(|n| n.to_str()) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{name}.blktrace.");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(_) => return Ok(Vec::new()),
    };
    let mut found = Vec::new();
    for e in entries {
        let e = e.map_err(|source| TraceError::Io { path: dir.clone(), source })?;
        let fname = e.file_name();
        let Some(f) = fname.to_str() else { continue };
        if let Some(n) = f.strip_prefix(&prefix).and_then(|n| n.parse::<u32>().ok()) {
            found.push((n, dir.join(f)));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// Reads raw records from one file.
pub struct FileReader<R: Read> {
    path: PathBuf,
    reader: R,
    offset: u64,
    big_endian: Option<bool>,
}

impl<R: Read> FileReader<R> {
    pub fn new(path: PathBuf, reader: R) -> FileReader<R> {
        FileReader { path, reader, offset: 0, big_endian: None }
    }

    fn err(&self, offset: u64, message: impl Into<String>) -> TraceError {
        TraceError::Binary { path: self.path.clone(), offset, message: message.into() }
    }

    /// The next record, `None` at a clean end of file. A truncated record or bad magic is an
    /// error (reading stops there: the byte stream cannot be resynchronised reliably).
    pub fn read_raw(&mut self) -> Option<Result<RawTrace, TraceError>> {
        let mut h = [0u8; RECORD_LEN];
        let start = self.offset;
        let mut got = 0;
        while got < RECORD_LEN {
            match self.reader.read(&mut h[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => return Some(Err(TraceError::Io { path: self.path.clone(), source })),
            }
        }
        if got == 0 {
            return None;
        }
        if got < RECORD_LEN {
            return Some(Err(self.err(start, format!("truncated record: {got} of {RECORD_LEN} header bytes"))));
        }
        let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let be = match self.big_endian {
            Some(be) => be,
            None => {
                let be = if magic_le & 0xffff_ff00 == MAGIC {
                    false
                } else if u32::from_be_bytes([h[0], h[1], h[2], h[3]]) & 0xffff_ff00 == MAGIC {
                    true
                } else {
                    return Some(Err(self.err(start, format!("bad magic {magic_le:#010x} (not a blktrace file)"))));
                };
                self.big_endian = Some(be);
                be
            }
        };
        let u32_at = |i: usize| {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
            if be {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let u64_at = |i: usize| {
            let b: [u8; 8] = h[i..i + 8].try_into().unwrap();
            if be {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        };
        let u16_at = |i: usize| {
            if be {
                u16::from_be_bytes([h[i], h[i + 1]])
            } else {
                u16::from_le_bytes([h[i], h[i + 1]])
            }
        };
        let magic = u32_at(0);
        if magic & 0xffff_ff00 != MAGIC {
            return Some(Err(self.err(start, format!("bad magic {magic:#010x} (record corrupt or misaligned)"))));
        }
        if magic & 0xff != VERSION {
            return Some(Err(self.err(start, format!("unsupported blktrace version {:#04x} (expected 0x07)", magic & 0xff))));
        }
        let pdu_len = u16_at(46) as usize;
        let mut pdu = vec![0u8; pdu_len];
        if let Err(e) = self.reader.read_exact(&mut pdu) {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                return Some(Err(self.err(start, format!("truncated payload: record says {pdu_len} bytes"))));
            }
            return Some(Err(TraceError::Io { path: self.path.clone(), source: e }));
        }
        self.offset += (RECORD_LEN + pdu_len) as u64;
        Some(Ok(RawTrace {
            magic,
            sequence: u32_at(4),
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
            cpu: u32_at(40),
            error: u16_at(44),
            pdu,
        }))
    }
}

fn be64(p: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(p.get(..8)?.try_into().ok()?))
}

fn dev_of(d: u32) -> DevId {
    DevId { major: d >> 20, minor: d & 0xf_ffff }
}

/// What one raw record means.
pub enum Decoded {
    Event(BlockEvent),
    /// A `BLK_TN_PROCESS` note: `pid` is called `comm`.
    ProcessName {
        pid: u32,
        comm: String,
    },
    /// Records blkparse does not print (timestamps notes, driver data, aborts).
    Skip,
}

/// Decodes a raw record the way blkparse's default output interprets it. `time_ns` is left
/// absolute (the caller subtracts the genesis); `comm` is not filled in.
pub fn decode(raw: &RawTrace) -> Result<Decoded, String> {
    let cat = raw.action >> TC_SHIFT;
    let mut act = raw.action & 0xffff;
    let mut pdu = &raw.pdu[..];
    if act & TA_CGROUP != 0 {
        act &= !TA_CGROUP;
        pdu = pdu.get(8..).ok_or("cgroup record with a payload shorter than 8 bytes")?;
    }
    let text = |p: &[u8]| {
        let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
        String::from_utf8_lossy(&p[..end]).into_owned()
    };
    let mut ev = BlockEvent {
        time_ns: raw.time,
        dev: dev_of(raw.device),
        cpu: raw.cpu,
        seq: raw.sequence as u64,
        pid: raw.pid,
        comm: None,
        action: BlockAction::Message,
        rwbs: Rwbs::default(),
        sector: raw.sector,
        bytes: raw.bytes as u64,
        error: raw.error as i32,
        detail: BlockDetail::None,
    };
    if cat & TC_NOTIFY != 0 {
        return Ok(match act {
            TN_PROCESS => Decoded::ProcessName { pid: raw.pid, comm: text(pdu) },
            TN_MESSAGE => {
                ev.detail = BlockDetail::Message { text: text(pdu) };
                ev.sector = 0;
                ev.bytes = 0;
                Decoded::Event(ev)
            }
            _ => Decoded::Skip,
        });
    }
    if cat & TC_DRV_DATA != 0 || act == 16 || act == 17 {
        return Ok(Decoded::Skip);
    }
    ev.action = action_from_number(act).ok_or_else(|| format!("unknown action {act:#x} in {:#010x}", raw.action))?;
    // blkparse's fill_rwbs.
    ev.rwbs = Rwbs {
        preflush: cat & TC_FLUSH != 0,
        op: if cat & TC_DISCARD != 0 {
            BlockOp::Discard
        } else if cat & TC_WRITE != 0 {
            BlockOp::Write
        } else if raw.bytes != 0 {
            BlockOp::Read
        } else {
            BlockOp::None
        },
        fua: cat & TC_FUA != 0,
        ahead: cat & TC_AHEAD != 0,
        sync: cat & TC_SYNC != 0,
        meta: cat & TC_META != 0,
    };
    if cat & TC_PC != 0 {
        ev.detail = BlockDetail::Passthrough;
        ev.sector = 0;
    }
    crate::text::check_extent(ev.sector, ev.bytes)?;
    match ev.action {
        BlockAction::Remap => {
            if pdu.len() < 16 {
                return Err(format!("remap record with a {}-byte payload (need 16)", pdu.len()));
            }
            let from = u32::from_be_bytes(pdu[0..4].try_into().unwrap());
            let to = u32::from_be_bytes(pdu[4..8].try_into().unwrap());
            ev.dev = dev_of(to);
            let from_sector = be64(&pdu[8..16]).unwrap();
            crate::text::check_extent(from_sector, 0).map_err(|m| format!("remap source {m}"))?;
            ev.detail = BlockDetail::Remap { from: dev_of(from), from_sector };
        }
        BlockAction::Unplug | BlockAction::UnplugTimer => {
            let depth = be64(pdu).ok_or("unplug record without its 8-byte depth")?;
            ev.detail = BlockDetail::Unplug { depth: depth as u32 };
        }
        BlockAction::Split => {
            let s = be64(pdu).ok_or("split record without its 8-byte new sector")?;
            crate::text::check_extent(s, 0).map_err(|m| format!("split's new {m}"))?;
            ev.detail = BlockDetail::Split { new_sector: s };
        }
        _ => {}
    }
    Ok(Decoded::Event(ev))
}

/// Several per-CPU files merged by time into [`TraceRecord::Block`]s.
pub struct MergedReader {
    files: Vec<FileReader<BufReader<File>>>,
    heads: Vec<Option<RawTrace>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    names: HashMap<u32, String>,
    genesis: Option<u64>,
    records: u64,
    started: bool,
    done: bool,
}

impl MergedReader {
    pub fn open(paths: &[PathBuf]) -> Result<MergedReader, TraceError> {
        let mut files = Vec::new();
        for p in paths {
            files.push(FileReader::new(p.clone(), open_file(p)?));
        }
        let n = files.len();
        Ok(MergedReader {
            files,
            heads: vec![None; n],
            heap: BinaryHeap::new(),
            names: HashMap::new(),
            genesis: None,
            records: 0,
            started: false,
            done: false,
        })
    }

    /// Refills file `i`'s head; errors are returned (lenient: counted, and the file stops).
    fn refill(&mut self, i: usize, lenient: bool, warnings: &mut Warnings) -> Result<(), TraceError> {
        match self.files[i].read_raw() {
            None => self.heads[i] = None,
            Some(Ok(raw)) => {
                self.heap.push(Reverse((raw.time, i)));
                self.heads[i] = Some(raw);
            }
            Some(Err(e)) => {
                self.heads[i] = None;
                if lenient {
                    warnings.push(e);
                } else {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn next_record(&mut self, lenient: bool, warnings: &mut Warnings) -> Option<Result<TraceRecord, TraceError>> {
        if self.done {
            return None;
        }
        if !self.started {
            self.started = true;
            for i in 0..self.files.len() {
                if let Err(e) = self.refill(i, lenient, warnings) {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        loop {
            let Some(Reverse((_, i))) = self.heap.pop() else {
                self.done = true;
                if self.records == 0 {
                    let e = TraceError::Empty {
                        path: self.files.first().map(|f| f.path.clone()).unwrap_or_default(),
                        format: "blktrace",
                    };
                    if lenient {
                        warnings.push(e);
                        return None;
                    }
                    return Some(Err(e));
                }
                return None;
            };
            let raw = self.heads[i].take().expect("heap entry has a head");
            let offset = self.files[i].offset - (RECORD_LEN + raw.pdu.len()) as u64;
            if let Err(e) = self.refill(i, lenient, warnings) {
                self.done = true;
                return Some(Err(e));
            }
            match decode(&raw) {
                Ok(Decoded::Event(mut ev)) => {
                    // Like blkparse, times count from the first event (notes do not count).
                    let genesis = *self.genesis.get_or_insert(raw.time);
                    ev.time_ns = ev.time_ns.saturating_sub(genesis);
                    if !matches!(
                        ev.action,
                        BlockAction::Complete | BlockAction::Requeue | BlockAction::Remap | BlockAction::Message
                    ) {
                        ev.comm = Some(self.names.get(&ev.pid).cloned().unwrap_or_default());
                    }
                    self.records += 1;
                    return Some(Ok(TraceRecord::Block(ev)));
                }
                Ok(Decoded::ProcessName { pid, comm }) => {
                    self.names.insert(pid, comm);
                }
                Ok(Decoded::Skip) => {}
                Err(message) => {
                    let e = TraceError::Binary { path: self.files[i].path.clone(), offset, message };
                    if lenient {
                        warnings.push(e);
                        continue;
                    }
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_inverts_from_event_in_both_byte_orders() {
        let ev = BlockEvent {
            time_ns: 1234,
            dev: DevId { major: 8, minor: 16 },
            cpu: 1,
            seq: 7,
            pid: 42,
            comm: None,
            action: BlockAction::Queue,
            rwbs: Rwbs::parse("WS").unwrap(),
            sector: 2048,
            bytes: 4096,
            error: 0,
            detail: BlockDetail::None,
        };
        for be in [false, true] {
            let bytes = encode(&RawTrace::from_event(&ev), be);
            assert_eq!(bytes.len(), RECORD_LEN);
            assert!(has_magic(&bytes));
            let mut r = FileReader::new("x".into(), &bytes[..]);
            let raw = r.read_raw().unwrap().unwrap();
            let Ok(Decoded::Event(back)) = decode(&raw) else { panic!() };
            assert_eq!(back, ev);
            assert!(r.read_raw().is_none());
        }
    }

    #[test]
    fn sectors_past_2_64_bytes_are_refused_at_their_offset() {
        let ok = RawTrace {
            magic: MAGIC | VERSION,
            action: (TC_READ << TC_SHIFT) | action_number(BlockAction::Queue),
            sector: 2048,
            bytes: 4096,
            ..Default::default()
        };
        let bad = RawTrace { sector: u64::MAX, ..ok.clone() };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sda.blktrace.0");
        let mut bytes = encode(&ok, false);
        bytes.extend(encode(&bad, false));
        std::fs::write(&path, bytes).unwrap();
        let mut r = MergedReader::open(std::slice::from_ref(&path)).unwrap();
        let mut w = Warnings::default();
        assert!(r.next_record(false, &mut w).unwrap().is_ok());
        let e = r.next_record(false, &mut w).unwrap().unwrap_err().to_string();
        assert!(e.contains("sda.blktrace.0: at byte 48: sector 18446744073709551615"), "{e}");
        assert!(e.contains("ends past byte 2^64"), "{e}");
    }

    #[test]
    fn corrupt_input_is_an_error_with_offset() {
        let mut r = FileReader::new("x".into(), &b"not a blktrace file at all, just text......."[..]);
        let e = r.read_raw().unwrap().unwrap_err();
        assert!(e.to_string().contains("x: at byte 0: truncated record"), "{e}");
        let mut rec = encode(&RawTrace { magic: MAGIC | VERSION, ..Default::default() }, false);
        rec.extend_from_slice(&[0u8; 30]);
        let mut r = FileReader::new("y".into(), &rec[..]);
        assert!(r.read_raw().unwrap().is_ok());
        let e = r.read_raw().unwrap().unwrap_err();
        assert!(e.to_string().contains("y: at byte 48: truncated record: 30 of 48"), "{e}");
    }
}
