//! `forefront trace capture`: record the block I/O of a real workload as blkparse text.
//!
//! blktrace's relay files are refused by kernels under lockdown (`blktrace -d` fails with
//! EPERM), so capture uses the ftrace `blk` tracer, which reports the same events into the
//! ftrace ring buffer: `current_tracer=blk`, `options/blk_classic=1` (nanosecond timestamps),
//! `/sys/class/block/DEV/trace/enable=1`, then `trace_pipe` is read while the workload runs.
//! Each line is parsed by the ftrace importer and written back in blkparse's default format
//! (per-CPU sequence numbers are synthesised; the `blk` tracer has none).
//!
//! Every tracefs and sysfs value changed is recorded first and restored by a guard's `Drop`,
//! also on errors and on Ctrl-C (SIGINT, SIGTERM and SIGHUP are caught while capturing). If
//! tracefs was not mounted, it is mounted for the capture and unmounted afterwards.
//!
//! The workload runs in a process group of its own ([`Workload`]), and the whole group is ended
//! (SIGTERM, a short grace, SIGKILL) when its first process exits, when `duration` is over, on
//! those signals and on errors: nothing it started in the background keeps doing I/O after the
//! capture. (A process that leaves the group — `setsid`, a daemon — escapes, as it would from a
//! shell's job control; so does everything if `forefront` itself is SIGKILLed.) Being in its
//! own group, the workload is not in the terminal's foreground: Ctrl-C reaches `forefront`,
//! which ends the group, and a workload that reads the terminal is stopped (SIGTTIN). The kernel's own `/sys/class/block/DEV/stat` is read
//! when tracing starts and stops, so the caller can check the capture against it.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use forefront_record::trace::{BlockAction, BlockOp, DevId, TraceRecord};

use crate::ftrace::FtraceParser;
use crate::LineParser;

/// Capture errors (setup, workload and tracefs I/O), each naming the path or command.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no block device `{0}` (no /sys/class/block/{0})")]
    NoDevice(String),
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    #[error("the kernel has no `blk` tracer (CONFIG_BLK_DEV_IO_TRACE is off)")]
    NoBlkTracer,
    #[error("cannot run {cmd:?}: {source}")]
    Spawn {
        cmd: String,
        #[source]
        source: io::Error,
    },
    #[error("give a command to run (`-- CMD...`) or a --duration")]
    NothingToDo,
    #[error("writing the capture: {0}")]
    Output(#[source] io::Error),
    #[error("{}:{line}: cannot parse blk tracer output: {message}", path.display())]
    Parse { path: PathBuf, line: u64, message: String },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CaptureError + '_ {
    move |source| CaptureError::Io { path: path.to_path_buf(), source }
}

/// What to capture.
#[derive(Clone, Debug)]
pub struct CaptureOptions {
    /// Device name (`loop0`, `/dev/nvme0n1`, `sda1`).
    pub dev: String,
    /// Stop after this long (kills the workload if it is still running).
    pub duration: Option<Duration>,
    /// The workload; empty to capture for `duration` whatever runs.
    pub command: Vec<String>,
    /// Time to keep tracing after the workload exits, for its last completions.
    pub settle: Duration,
    /// `/sys/class/block` (a parameter so tests can point elsewhere).
    pub sys_class_block: PathBuf,
}

impl CaptureOptions {
    pub fn new(dev: &str) -> CaptureOptions {
        CaptureOptions {
            dev: dev.trim_start_matches("/dev/").to_string(),
            duration: None,
            command: Vec::new(),
            settle: Duration::from_millis(200),
            sys_class_block: PathBuf::from("/sys/class/block"),
        }
    }
}

/// Completed-I/O counters of `/sys/class/block/DEV/stat` (fields 1 and 5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCounts {
    pub reads: u64,
    pub writes: u64,
}

/// What a capture saw.
#[derive(Clone, Debug, Default)]
pub struct CaptureSummary {
    pub backend: &'static str,
    pub device: DevId,
    /// blkparse lines written.
    pub events: u64,
    /// Completed read / write requests in the capture.
    pub completed: KernelCounts,
    /// The kernel's counters' increase between the start and the end of tracing.
    pub kernel_delta: KernelCounts,
    /// Events of other devices in the shared ring buffer (dropped).
    pub other_devices: u64,
    pub exit_status: Option<ExitStatus>,
    pub interrupted: bool,
    pub timed_out: bool,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Restores what capture changed, in reverse order, when dropped.
struct Restore {
    writes: Vec<(PathBuf, String)>,
    unmount: Option<PathBuf>,
    old_handlers: Vec<(libc::c_int, libc::sighandler_t)>,
}

impl Restore {
    /// Writes `value` to `path` after remembering the current value.
    fn set(&mut self, path: PathBuf, value: &str) -> Result<(), CaptureError> {
        let old = fs::read_to_string(&path).map_err(io_err(&path))?;
        let old = current_value(&old);
        fs::write(&path, value).map_err(io_err(&path))?;
        self.writes.push((path, old));
        Ok(())
    }
}

/// tracefs files show choices as `[selected]` or a plain value.
fn current_value(s: &str) -> String {
    let s = s.trim();
    if let (Some(a), Some(b)) = (s.find('['), s.find(']')) {
        if a < b {
            return s[a + 1..b].to_string();
        }
    }
    s.lines().next().unwrap_or("").to_string()
}

impl Drop for Restore {
    fn drop(&mut self) {
        while let Some((path, old)) = self.writes.pop() {
            if let Err(e) = fs::write(&path, &old) {
                eprintln!("warning: could not restore {} to `{old}`: {e}", path.display());
            }
        }
        if let Some(mnt) = self.unmount.take() {
            if let Ok(c) = CString::new(mnt.as_os_str().as_encoded_bytes()) {
                // SAFETY: a valid NUL-terminated path; umount has no other preconditions.
                if unsafe { libc::umount(c.as_ptr()) } != 0 {
                    eprintln!("warning: could not unmount {}: {}", mnt.display(), io::Error::last_os_error());
                }
            }
        }
        for (sig, old) in self.old_handlers.drain(..) {
            // SAFETY: reinstalling the handler that was there before.
            unsafe { libc::signal(sig, old) };
        }
    }
}

/// Finds (or mounts) tracefs.
fn tracefs(restore: &mut Restore) -> Result<PathBuf, CaptureError> {
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if Path::new(p).join("trace_pipe").exists() {
            return Ok(PathBuf::from(p));
        }
    }
    let mnt = PathBuf::from("/sys/kernel/tracing");
    let src = CString::new("nodev").unwrap();
    let target = CString::new("/sys/kernel/tracing").unwrap();
    let fstype = CString::new("tracefs").unwrap();
    // SAFETY: valid NUL-terminated strings; data is null.
    let rc = unsafe { libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(CaptureError::NoTracefs(format!(
            "not mounted, and mounting it on /sys/kernel/tracing failed: {}",
            io::Error::last_os_error()
        )));
    }
    restore.unmount = Some(mnt.clone());
    Ok(mnt)
}

fn read_stat(path: &Path) -> Result<KernelCounts, CaptureError> {
    let s = fs::read_to_string(path).map_err(io_err(path))?;
    let f: Vec<u64> = s.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    if f.len() < 5 {
        return Err(CaptureError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidData, "fewer than 5 fields"),
        });
    }
    Ok(KernelCounts { reads: f[0], writes: f[4] })
}

/// Reads `trace_pipe` without blocking until told to stop, converting lines to blkparse text.
struct PipeReader {
    path: PathBuf,
    file: fs::File,
    buf: Vec<u8>,
    parser: FtraceParser,
    pending: VecDeque<TraceRecord>,
    line: u64,
}

impl PipeReader {
    /// Reads what is available; returns false when the pipe had nothing.
    fn pump<W: Write>(&mut self, dev: DevId, out: &mut W, sum: &mut CaptureSummary) -> Result<bool, CaptureError> {
        let mut chunk = [0u8; 1 << 16];
        let n = match self.file.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => return Ok(false),
            Err(source) => return Err(CaptureError::Io { path: self.path.clone(), source }),
        };
        if n == 0 {
            return Ok(false);
        }
        self.buf.extend_from_slice(&chunk[..n]);
        while let Some(nl) = memchr::memchr(b'\n', &self.buf) {
            let line: Vec<u8> = self.buf.drain(..=nl).collect();
            self.line += 1;
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            self.parser.parse_line(&text, &mut self.pending).map_err(|e| CaptureError::Parse {
                path: self.path.clone(),
                line: self.line,
                message: format!("column {}: {} in `{}`", e.column, e.message, text),
            })?;
            while let Some(r) = self.pending.pop_front() {
                let TraceRecord::Block(ev) = r else { continue };
                if ev.dev != dev {
                    sum.other_devices += 1;
                    continue;
                }
                if ev.action == BlockAction::Complete {
                    match ev.rwbs.op {
                        BlockOp::Read => sum.completed.reads += 1,
                        BlockOp::Write => sum.completed.writes += 1,
                        _ => {}
                    }
                }
                crate::blkparse::write_event(out, &ev).map_err(CaptureError::Output)?;
                sum.events += 1;
            }
        }
        Ok(true)
    }
}

/// The workload: the leader of a process group of its own, so that ending it ends everything
/// it started. Dropping it ends the group (on any error path too).
struct Workload {
    child: std::process::Child,
    status: Option<ExitStatus>,
}

impl Workload {
    fn spawn(command: &[String]) -> Result<Workload, CaptureError> {
        use std::os::unix::process::CommandExt;
        let child = Command::new(&command[0])
            .args(&command[1..])
            .process_group(0)
            .spawn()
            .map_err(|source| CaptureError::Spawn { cmd: command.join(" "), source })?;
        Ok(Workload { child, status: None })
    }

    /// Whether the leader has exited. It is not reaped (`WNOWAIT`): while its zombie exists
    /// its pid stays this group's id, so `killpg` cannot reach anyone else's processes.
    fn leader_exited(&self) -> bool {
        // SAFETY: siginfo_t is plain data; zeroed is a valid "nothing happened" value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to a siginfo_t; the pid is our own child's.
        let rc = unsafe { libc::waitid(libc::P_PID, self.child.id(), &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        // An error (ECHILD) means there is nothing left to wait for.
        // SAFETY: si_pid is set by waitid (0 when no child changed state).
        rc != 0 || unsafe { info.si_pid() } != 0
    }

    /// Ends every process of the group: SIGTERM, up to `grace` for the leader to exit, then
    /// SIGKILL to whatever is left; then reaps the leader. Idempotent.
    fn end(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.status.is_some() {
            return self.status;
        }
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: signals our own workload's group (its unreaped leader keeps the id ours).
        unsafe { libc::killpg(pgid, libc::SIGTERM) };
        let until = Instant::now() + grace;
        while !self.leader_exited() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Members that outlived the leader or ignore SIGTERM (the group may be empty by now:
        // ESRCH is fine).
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: as above; the leader is still unreaped.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        self.status = self.child.wait().ok();
        self.status
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.end(Duration::from_millis(200));
    }
}

/// Checks what can be checked before any output is created: something to do, and the device
/// exists. Returns the device's number.
pub fn check(opts: &CaptureOptions) -> Result<DevId, CaptureError> {
    if opts.command.is_empty() && opts.duration.is_none() {
        return Err(CaptureError::NothingToDo);
    }
    let devdir = opts.sys_class_block.join(&opts.dev);
    if !devdir.exists() {
        return Err(CaptureError::NoDevice(opts.dev.clone()));
    }
    let devfile = devdir.join("dev");
    let devno = fs::read_to_string(&devfile).map_err(io_err(&devfile))?;
    let (maj, min) = devno.trim().split_once(':').ok_or_else(|| CaptureError::NoDevice(opts.dev.clone()))?;
    Ok(DevId { major: maj.parse().unwrap_or(0), minor: min.parse().unwrap_or(0) })
}

/// Runs the capture, writing blkparse text to `out`.
pub fn capture<W: Write>(opts: &CaptureOptions, out: &mut W) -> Result<CaptureSummary, CaptureError> {
    let dev = check(opts)?;
    let devdir = opts.sys_class_block.join(&opts.dev);
    let mut sum = CaptureSummary { backend: "ftrace-blk", device: dev, ..Default::default() };

    let mut restore = Restore { writes: Vec::new(), unmount: None, old_handlers: Vec::new() };
    INTERRUPTED.store(false, Ordering::SeqCst);
    // Ctrl-C, kill and hang-up stop the capture cleanly (the guard restores tracefs).
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        let old = unsafe { libc::signal(sig, on_sigint as *const () as libc::sighandler_t) };
        restore.old_handlers.push((sig, old));
    }

    let t = tracefs(&mut restore)?;
    let tracers = fs::read_to_string(t.join("available_tracers")).map_err(io_err(&t.join("available_tracers")))?;
    if !tracers.split_whitespace().any(|x| x == "blk") {
        return Err(CaptureError::NoBlkTracer);
    }
    restore.set(t.join("current_tracer"), "blk")?;
    restore.set(t.join("options/blk_classic"), "1")?;
    // Empty the ring buffer (truncating `trace` clears it; there is nothing to restore).
    fs::write(t.join("trace"), "").map_err(io_err(&t.join("trace")))?;
    let pipe_path = t.join("trace_pipe");
    let file = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&pipe_path).map_err(io_err(&pipe_path))?;
    let mut pipe =
        PipeReader { path: pipe_path, file, buf: Vec::new(), parser: FtraceParser::default(), pending: VecDeque::new(), line: 0 };
    restore.set(t.join("tracing_on"), "1")?;
    let stat_path = devdir.join("stat");
    restore.set(devdir.join("trace/enable"), "1")?;
    let before = read_stat(&stat_path)?;

    let start = Instant::now();
    let mut workload = if opts.command.is_empty() { None } else { Some(Workload::spawn(&opts.command)?) };
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) {
            sum.interrupted = true;
        }
        if let Some(w) = workload.as_mut() {
            if w.leader_exited() {
                // What it left running in the background goes with it.
                sum.exit_status = w.end(Duration::ZERO);
                break;
            }
        }
        let over = opts.duration.is_some_and(|d| start.elapsed() >= d);
        if over || sum.interrupted {
            sum.timed_out = over;
            if let Some(w) = workload.as_mut() {
                sum.exit_status = w.end(Duration::from_millis(500));
            }
            break;
        }
        if !pipe.pump(dev, out, &mut sum)? {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let settle_end = Instant::now() + opts.settle;
    while Instant::now() < settle_end {
        if !pipe.pump(dev, out, &mut sum)? {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let after = read_stat(&stat_path)?;
    // Stop tracing the device, then drain what is left in the ring buffer.
    let (enable_path, enable_old) = restore.writes.pop().expect("enable was set last");
    fs::write(&enable_path, &enable_old).map_err(io_err(&enable_path))?;
    let drain_end = Instant::now() + Duration::from_millis(100);
    loop {
        let got = pipe.pump(dev, out, &mut sum)?;
        if !got && Instant::now() >= drain_end {
            break;
        }
        if !got {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    out.flush().map_err(CaptureError::Output)?;
    sum.kernel_delta =
        KernelCounts { reads: after.reads.saturating_sub(before.reads), writes: after.writes.saturating_sub(before.writes) };
    // The tracer cannot be switched back while trace_pipe is open.
    drop(pipe);
    drop(restore);
    Ok(sum)
}
