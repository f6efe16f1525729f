//! A replayed start-up: the I/O of a real application's start-up, recorded as a trace in the
//! format of the S suite's `comm_startup_lat` (the BFQ authors' benchmark,
//! github.com/Algodev-github/S), replayed on files of the file system under test.
//!
//! # The trace format
//!
//! One request per line, fields separated by white space:
//!
//! ```text
//! xterm-31657  .015820     8   113248520  Rand    -65536      0        RA   4.682409   C
//! PROCESS      DELTA_S     SECTORS  POS   Seq|Rand  (unused)  (unused)  ACTION  (rest ignored)
//! ```
//!
//! `PROCESS` names the traced process (one replaying thread each, in order of first
//! appearance), `DELTA_S` the think time before the request (seconds), `SECTORS` its size in
//! 512-byte sectors, `POS` the traced sector (not used: the replay reads files of its own),
//! `Seq` or `Rand` whether it continued the process's previous request, `ACTION` the block
//! layer's action (`RA`: read-ahead, issued asynchronously; anything else a synchronous read).
//! Blank lines and lines starting with `#` are skipped (the suite's traces have none).
//!
//! # What the replay does (as the suite's `replay-startup-io` does it)
//!
//! - one file of [`REPLAY_FILE_BYTES`] per traced process, fully written by the bench
//!   ([`prepare_files`]), opened `O_DIRECT` (no page cache: every read reaches the device);
//! - one thread per traced process, created when the start-up begins; the requests are issued
//!   in the trace's order, one thread at a time (the thread of the next request takes over);
//! - a `Seq` request reads on from where its thread's previous one ended (from 0 again at the
//!   end of the file), a `Rand` request at a random 512-byte-aligned offset (a seeded generator
//!   here, so a run is repeatable; the suite uses `rand()` seeded by the time);
//! - an `RA` request (except the trace's last) is submitted through Linux AIO (`io_submit`)
//!   and not waited for; any other request first waits for its thread's submitted reads, then
//!   reads synchronously (`pread`) — that is the trace's parallelism;
//! - the think times are not slept by default: the suite's replayer has its `nanosleep` under
//!   `#if 0` ("emulation seems more accurate this way"); [`Replay::think`] sleeps them.
//!
//! What the suite times and this does not: its start-up time includes the exec of the replayer
//! and the loading of its libraries (libstdc++, libaio) from the cold cache; here the replaying
//! process is started before the cache drop (as a zygote-forked app is) and the time runs from
//! the opening of the files to the last read.

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::fixture::FixtureError;

/// Size of each replay file: the suite's `OUT_FILE_SIZE`.
pub const REPLAY_FILE_BYTES: u64 = 20_000_000;
const SECTOR: u64 = 512;
/// Alignment of the `O_DIRECT` buffers (a page: enough for any logical block size).
const ALIGN: usize = 4096;
/// Reads one thread may have submitted and not yet reaped (its AIO context's size).
const AIO_DEPTH: usize = 256;

/// Whether a request continues its thread's previous one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Seq,
    Rand,
}

/// One traced request.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Index of the replaying thread (order of first appearance of the process name).
    pub thread: usize,
    pub delta_s: f64,
    pub sectors: u64,
    pub kind: Kind,
    /// Submitted asynchronously (the block layer's read-ahead, `RA`).
    pub read_ahead: bool,
}

/// A parsed trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub path: PathBuf,
    /// The traced processes, one replaying thread each.
    pub procs: Vec<String>,
    pub requests: Vec<Request>,
}

impl Trace {
    /// Bytes the replay reads.
    pub fn bytes(&self) -> u64 {
        self.requests.iter().map(|r| r.sectors * SECTOR).sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: field {field} ({name}): {msg}")]
    Field { path: PathBuf, line: usize, field: usize, name: &'static str, msg: String },
    #[error("{path}: no requests (an S-suite start-up trace has one per line)")]
    Empty { path: PathBuf },
}

/// Reads and checks a trace file.
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io { path: path.into(), source })?;
    parse(path, &text)
}

/// Parses a trace's text (`path` names it in errors).
pub fn parse(path: &Path, text: &str) -> Result<Trace, TraceError> {
    let mut procs: Vec<String> = vec![];
    let mut requests = vec![];
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let err = |field: usize, name: &'static str, msg: String| TraceError::Field {
            path: path.into(),
            line: i + 1,
            field,
            name,
            msg,
        };
        let f: Vec<&str> = t.split_whitespace().collect();
        const NAMES: [&str; 8] = ["process", "delta", "sectors", "position", "type", "unused", "unused", "action"];
        if f.len() < NAMES.len() {
            let missing = f.len();
            return Err(err(missing + 1, NAMES[missing], format!("missing: the line has {} fields, a request needs 8", f.len())));
        }
        let delta_s: f64 = f[1].parse().map_err(|_| err(2, "delta", format!("{:?} is not a number of seconds", f[1])))?;
        if !delta_s.is_finite() || delta_s < 0.0 {
            return Err(err(2, "delta", format!("{:?} is not a time ≥ 0", f[1])));
        }
        let sectors: u64 = f[2].parse().map_err(|_| err(3, "sectors", format!("{:?} is not a whole number of sectors", f[2])))?;
        if sectors == 0 || sectors * SECTOR > REPLAY_FILE_BYTES / 2 {
            return Err(err(
                3,
                "sectors",
                format!("{sectors} is out of range (1 to {} sectors of 512 bytes)", REPLAY_FILE_BYTES / 2 / SECTOR),
            ));
        }
        let kind = match f[4] {
            "Seq" => Kind::Seq,
            "Rand" => Kind::Rand,
            other => return Err(err(5, "type", format!("{other:?} is neither Seq nor Rand"))),
        };
        let thread = match procs.iter().position(|p| p == f[0]) {
            Some(k) => k,
            None => {
                procs.push(f[0].to_owned());
                procs.len() - 1
            }
        };
        requests.push(Request { thread, delta_s, sectors, kind, read_ahead: f[7] == "RA" });
    }
    if requests.is_empty() {
        return Err(TraceError::Empty { path: path.into() });
    }
    Ok(Trace { path: path.into(), procs, requests })
}

/// The replay file of thread `i` in `dir`.
pub fn file_of(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("replay{i}.dat"))
}

/// Writes (fully, fsynced) the replay files of `trace` under `dir`.
pub fn prepare_files(dir: &Path, trace: &Trace) -> Result<(), FixtureError> {
    for i in 0..trace.procs.len() {
        crate::fixture::write_file(&file_of(dir, i), REPLAY_FILE_BYTES, 5000 + i as u64)?;
    }
    Ok(())
}

/// How to replay.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Sleep each request's think time before issuing it.
    pub think: bool,
    /// Seed of the `Rand` offsets.
    pub seed: u64,
}

// Linux AIO, the kernel ABI of <linux/aio_abi.h> (the suite's replayer uses it through libaio).
#[repr(C)]
#[derive(Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}
const IOCB_CMD_PREAD: u16 = 0;

/// An `O_DIRECT` buffer (page-aligned).
struct Buf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}
// SAFETY: a plain heap allocation owned by one thread at a time.
unsafe impl Send for Buf {}
impl Buf {
    fn new(len: usize) -> Buf {
        let layout = std::alloc::Layout::from_size_align(len.max(1), ALIGN).expect("valid layout");
        // SAFETY: a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Buf { ptr, layout }
    }
}
impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// One replaying thread's file, AIO context and submitted reads.
struct Lane {
    file: std::fs::File,
    path: PathBuf,
    ctx: libc::c_ulong,
    offset: u64,
    /// Buffers of submitted reads, kept until they are reaped.
    pending: Vec<(Box<Iocb>, Buf)>,
}

impl Lane {
    fn open(path: &Path) -> Result<Lane, String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the context id into `ctx`.
        let r = unsafe { libc::syscall(libc::SYS_io_setup, AIO_DEPTH as libc::c_long, &mut ctx as *mut libc::c_ulong) };
        if r < 0 {
            return Err(format!("io_setup: {}", std::io::Error::last_os_error()));
        }
        Ok(Lane { file, path: path.into(), ctx, offset: 0, pending: vec![] })
    }

    fn reap(&mut self) -> Result<(), String> {
        let n = self.pending.len();
        if n == 0 {
            return Ok(());
        }
        let mut events = vec![IoEvent::default(); n];
        let mut got = 0;
        while got < n {
            // SAFETY: `events` has room for n - got events from offset got.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    (n - got) as libc::c_long,
                    (n - got) as libc::c_long,
                    events[got..].as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("io_getevents: {e}"));
            }
            got += r as usize;
        }
        for ev in &events {
            if ev.res < 0 {
                return Err(format!(
                    "{}: asynchronous read: {}",
                    self.path.display(),
                    std::io::Error::from_raw_os_error(-ev.res as i32)
                ));
            }
        }
        self.pending.clear();
        Ok(())
    }

    fn submit(&mut self, len: usize, offset: u64) -> Result<(), String> {
        if self.pending.len() == AIO_DEPTH {
            self.reap()?;
        }
        let buf = Buf::new(len);
        let mut cb = Box::new(Iocb {
            aio_lio_opcode: IOCB_CMD_PREAD,
            aio_fildes: self.file.as_raw_fd() as u32,
            aio_buf: buf.ptr as u64,
            aio_nbytes: len as u64,
            aio_offset: offset as i64,
            ..Default::default()
        });
        let mut list = [&mut *cb as *mut Iocb];
        loop {
            // SAFETY: one valid iocb whose buffer lives until it is reaped.
            let r = unsafe { libc::syscall(libc::SYS_io_submit, self.ctx, 1 as libc::c_long, list.as_mut_ptr()) };
            if r == 1 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if r < 0 && e.raw_os_error() == Some(libc::EAGAIN) && !self.pending.is_empty() {
                self.reap()?;
                continue;
            }
            return Err(format!("{}: io_submit: {e}", self.path.display()));
        }
        self.pending.push((cb, buf));
        Ok(())
    }

    fn read(&mut self, len: usize, offset: u64) -> Result<(), String> {
        self.reap()?;
        let buf = Buf::new(len);
        // SAFETY: `buf` holds `len` bytes.
        let r = unsafe { libc::pread(self.file.as_raw_fd(), buf.ptr as *mut libc::c_void, len, offset as i64) };
        if r < 0 {
            return Err(format!("{}: read: {}", self.path.display(), std::io::Error::last_os_error()));
        }
        Ok(())
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        let _ = self.reap();
        // SAFETY: the context made in `open`, destroyed once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

/// A small deterministic generator for the `Rand` offsets (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Replays `trace` on the files [`prepare_files`] wrote under `dir`: opens them, starts one
/// thread per traced process and issues the requests in order. Returns the bytes read.
pub fn replay(trace: &Trace, dir: &Path, how: &Replay) -> Result<u64, String> {
    let lanes: Vec<Lane> = (0..trace.procs.len()).map(|i| Lane::open(&file_of(dir, i))).collect::<Result<_, _>>()?;
    // Whose turn it is: the index of the next request (or an error that stops every thread).
    struct Turn {
        next: usize,
        rng: Rng,
        failed: Option<String>,
    }
    let turn = Arc::new((
        Mutex::new(Turn { next: 0, rng: Rng(how.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1), failed: None }),
        Condvar::new(),
    ));
    let reqs: Arc<Vec<Request>> = Arc::new(trace.requests.clone());
    let think = how.think;
    let mut handles = vec![];
    for (id, mut lane) in lanes.into_iter().enumerate() {
        let turn = Arc::clone(&turn);
        let reqs = Arc::clone(&reqs);
        let h = std::thread::Builder::new()
            .name(format!("replay{id}"))
            .spawn(move || {
                let (m, cv) = &*turn;
                let mut g = m.lock().expect("replay lock");
                loop {
                    while g.failed.is_none() && g.next < reqs.len() && reqs[g.next].thread != id {
                        g = cv.wait(g).expect("replay lock");
                    }
                    if g.failed.is_some() || g.next >= reqs.len() {
                        // Wait for what this thread submitted before it ends (as a process
                        // exiting does).
                        drop(g);
                        return lane.reap();
                    }
                    // This thread's run of consecutive requests.
                    while g.next < reqs.len() && reqs[g.next].thread == id {
                        let k = g.next;
                        let r = &reqs[k];
                        let len = r.sectors * SECTOR;
                        let offset = match r.kind {
                            Kind::Seq => {
                                if lane.offset >= REPLAY_FILE_BYTES - len {
                                    lane.offset = 0;
                                }
                                lane.offset
                            }
                            Kind::Rand => (g.rng.next() % (REPLAY_FILE_BYTES / SECTOR - r.sectors)) * SECTOR,
                        };
                        if think && k > 0 && r.delta_s > 0.0 {
                            std::thread::sleep(Duration::from_secs_f64(r.delta_s));
                        }
                        let res = if r.read_ahead && k + 1 < reqs.len() {
                            lane.submit(len as usize, offset)
                        } else {
                            lane.read(len as usize, offset)
                        };
                        if let Err(e) = res {
                            g.failed = Some(e);
                            cv.notify_all();
                            break;
                        }
                        lane.offset = offset + len;
                        g.next += 1;
                    }
                    cv.notify_all();
                }
            })
            .map_err(|e| format!("replay thread: {e}"))?;
        handles.push(h);
    }
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert("a replay thread panicked".into());
            }
        }
    }
    let g = turn.0.lock().expect("replay lock");
    if let Some(e) = g.failed.clone().or(first_err) {
        return Err(e);
    }
    Ok(trace.bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "\
app-1 \t 0 8 1000 Rand -10 0 RM 1.0 START
app-1 .0001 8 1008 Seq 0 8 RA 1.1 C
app-1 .0001 16 1016 Seq 0 16 RA 1.2 C
helper-2 .002 32 5000 Rand 99 0 RM 1.3 C

# a comment
app-1 .0001 8 1032 Seq 0 24 RM 1.4 C
helper-2 0 64 5032 Seq 0 32 RA 1.5 C
";

    #[test]
    fn parses_processes_sizes_types_and_actions() {
        let t = parse(Path::new("small.trace"), SMALL).unwrap();
        assert_eq!(t.procs, ["app-1", "helper-2"]);
        assert_eq!(t.requests.len(), 6);
        assert_eq!(t.requests[1], Request { thread: 0, delta_s: 0.0001, sectors: 8, kind: Kind::Seq, read_ahead: true });
        assert_eq!(t.requests[3].thread, 1);
        assert_eq!(t.requests[3].kind, Kind::Rand);
        assert!(!t.requests[3].read_ahead);
        assert_eq!(t.bytes(), (8 + 8 + 16 + 32 + 8 + 64) * 512);
    }

    #[test]
    fn bad_input_names_file_line_and_field() {
        let cases = [
            ("a 0 8 1 Seq 0 0\n", "t:1: field 8 (action): missing"),
            ("a 0 8 1 Seq 0 0 RA\nb x 8 1 Seq 0 0 RA\n", "t:2: field 2 (delta): \"x\" is not a number"),
            ("a -1 8 1 Seq 0 0 RA\n", "t:1: field 2 (delta): \"-1\" is not a time"),
            ("a 0 8.5 1 Seq 0 0 RA\n", "t:1: field 3 (sectors): \"8.5\" is not a whole number"),
            ("a 0 0 1 Seq 0 0 RA\n", "t:1: field 3 (sectors): 0 is out of range"),
            ("\n\na 0 8 1 Sequential 0 0 RA\n", "t:3: field 5 (type): \"Sequential\" is neither Seq nor Rand"),
            ("a\n", "t:1: field 2 (delta): missing"),
        ];
        for (text, want) in cases {
            let e = parse(Path::new("t"), text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
        let e = parse(Path::new("t"), "# nothing\n\n").unwrap_err().to_string();
        assert_eq!(e, "t: no requests (an S-suite start-up trace has one per line)");
        let e = load(Path::new("/nonexistent/x.trace")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/x.trace: "), "{e}");
    }

    /// The replay on a real file system (O_DIRECT where the file system takes it: tmpfs does
    /// not, so this runs under the target directory's file system).
    #[test]
    fn replays_a_small_trace_on_real_files() {
        let base = std::env::var_os("CARGO_TARGET_TMPDIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let dir = tempfile::tempdir_in(base).unwrap();
        let t = parse(Path::new("small.trace"), SMALL).unwrap();
        prepare_files(dir.path(), &t).unwrap();
        for i in 0..2 {
            assert_eq!(std::fs::metadata(file_of(dir.path(), i)).unwrap().len(), REPLAY_FILE_BYTES);
        }
        match replay(&t, dir.path(), &Replay { think: true, seed: 1 }) {
            Ok(bytes) => assert_eq!(bytes, t.bytes()),
            Err(e) if e.contains("Invalid argument") => eprintln!("SKIP: O_DIRECT not supported here: {e}"),
            Err(e) => panic!("{e}"),
        }
        // A missing file is an error naming it, not a panic.
        std::fs::remove_file(file_of(dir.path(), 1)).unwrap();
        let e = replay(&t, dir.path(), &Replay { think: false, seed: 1 }).unwrap_err();
        assert!(e.contains("replay1.dat"), "{e}");
    }
}
