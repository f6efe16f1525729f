//! One benchmark run: build the app, then run the [`schedule`]: blocks of (round, mode),
//! the modes interleaved by round. How the background lives is the plan's [`BgLife`]:
//!
//! - [`BgLife::PerSample`] (the project's own workloads): every block is one sample — drop
//!   caches, start the background workload, apply the mode, ramp, time the foreground
//!   operation, stop everything — after one discarded warm-up pass of every mode.
//! - [`BgLife::Kept`] (the S suite's method; the default for `--fg replay` and the fio-style
//!   backgrounds): for each (round, mode) the mode is applied and the background started once,
//!   ramped, then several start-ups are timed in its steady state, each after a gap, with the
//!   caches dropped [`SUITE_DROP_PAUSE`] before it, as `comm_startup_lat.sh` does; then the
//!   background and the mode are stopped.
//!
//! With `--fg replay` or a fio-style background the caches are dropped as the S suite drops
//! them: the background running, [`SUITE_DROP_PAUSE`] before the timed start-up.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use forefront_sysfs::{block, procfs, vm};

use crate::fixture::{App, AppSpec, FixtureError};
use crate::stats::{summarize, Summary};

/// The foreground operation and the background workload: defined with the simulator's
/// scenario of the bench (`forefront_workload::bench`).
pub use forefront_workload::bench::{Bg, Fg};

/// How the system is set up while the foreground operation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// No background work.
    Alone,
    /// Background work, stock settings.
    Baseline,
    /// Background work, the real `forefront agent run` managing it (default config; resident:
    /// started before the cache drop, the workers added with `scope` requests), told by
    /// `forefront agent fg PID --burst` / `--burst-end` around the operation.
    Agent,
    /// Background work, BFQ on the disk (low_latency, its default).
    Bfq,
    /// Background work started with `ionice -c3`, BFQ on the disk.
    IoniceIdle,
    /// `agent` with BFQ on the disk (the S suite's agent mode: the agent on BFQ).
    AgentBfq,
}

impl Mode {
    /// The default modes.
    pub const ALL: [Mode; 5] = [Mode::Alone, Mode::Baseline, Mode::Agent, Mode::Bfq, Mode::IoniceIdle];
    /// Every mode, in the order tables list them.
    pub const EVERY: [Mode; 6] = [Mode::Alone, Mode::Baseline, Mode::Agent, Mode::AgentBfq, Mode::Bfq, Mode::IoniceIdle];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Alone => "alone",
            Mode::Baseline => "baseline",
            Mode::Agent => "agent",
            Mode::Bfq => "bfq",
            Mode::IoniceIdle => "ionice-idle",
            Mode::AgentBfq => "agent-bfq",
        }
    }
    fn wants_bfq(self) -> bool {
        matches!(self, Mode::Bfq | Mode::IoniceIdle | Mode::AgentBfq)
    }
    /// The agent runs (on the disk's own scheduler or on BFQ).
    pub fn is_agent(self) -> bool {
        matches!(self, Mode::Agent | Mode::AgentBfq)
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub fg: Fg,
    pub bg: Bg,
    /// Measured repetitions per mode (a warm-up pass of every mode comes first, discarded).
    pub runs: usize,
    pub modes: Vec<Mode>,
    /// Parent directory of the work directory (created inside, removed afterwards).
    pub dir: PathBuf,
    pub keep: bool,
    pub bg_procs: usize,
    /// Size of each background worker's file.
    pub bg_file_bytes: u64,
    /// Time the background runs before the foreground operation starts.
    pub ramp: Duration,
    pub app: AppSpec,
    /// The `forefront` binary (run for the operation, the workers and the agent).
    pub exe: PathBuf,
    /// How the bench tells the agent about the burst.
    pub launcher: Launcher,
    /// TOML appended to the agent's configuration in `agent` mode (any section but `[agent]`
    /// and `[scope]`, which the bench writes): the knob under test.
    pub agent_extra: String,
    /// `--fg replay`: the S-suite start-up trace to replay (`crate::replay`).
    pub trace: Option<PathBuf>,
    /// `--fg replay`: sleep the trace's think times (the suite's replayer does not).
    pub replay_think: bool,
    /// fio-style writers overwrite files written beforehand instead of creating theirs at
    /// each sample's start (the S suite's steady state after its writers' first pass).
    pub fio_overwrite: bool,
    /// Whether the background is restarted for every sample or kept running across a round's.
    pub bg_life: BgLife,
}

/// How the background lives across the samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum BgLife {
    /// Started before every sample (after its cache drop) and stopped after it; the mode (the
    /// agent, the scheduler) too. One warm-up pass of every mode comes first, discarded. What
    /// `bench predict` simulates: each operation `ramp` after the background's start.
    PerSample,
    /// The S suite's `comm_startup_lat`: for each (round, mode) the mode is applied and the
    /// background started once, after a cache drop; after the ramp, `per_round` start-ups
    /// follow in its steady state, each after `gap_ms` (the suite's `sleep 3; sleep 1`) with
    /// the caches dropped [`SUITE_DROP_PAUSE`] before it, and a start-up shorter than 2 s is
    /// followed by [`post_pause`] (the suite's `sleep 2`); then the background and the mode
    /// stop. No warm-up (the suite has none): the modes rotate by round.
    Kept { per_round: usize, gap_ms: u64 },
}

/// One block of the schedule: `samples` operations of `mode` in `round` (one start of the
/// background under [`BgLife::Kept`], one per sample under [`BgLife::PerSample`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub round: usize,
    pub mode: Mode,
    pub samples: usize,
    /// Discarded (the per-sample warm-up pass).
    pub warmup: bool,
}

/// The run's blocks in order: the modes interleaved by round, the order rotated by one each
/// round so that no mode always follows another (as the S suite's `ssuite cell` does).
/// `runs` measured samples per mode: under [`BgLife::PerSample`] `runs + 1` rounds of one
/// sample (the first a warm-up); under [`BgLife::Kept`] `ceil(runs / per_round)` rounds of
/// `per_round` samples, the last holding the remainder.
pub fn schedule(modes: &[Mode], runs: usize, life: BgLife) -> Vec<Block> {
    let k = modes.len();
    let mut v = vec![];
    match life {
        BgLife::PerSample => {
            for rep in 0..=runs {
                for j in 0..k {
                    v.push(Block { round: rep, mode: modes[(j + rep) % k], samples: 1, warmup: rep == 0 });
                }
            }
        }
        BgLife::Kept { per_round, .. } => {
            let per_round = per_round.max(1);
            for round in 0..runs.div_ceil(per_round) {
                let n = per_round.min(runs - round * per_round);
                for j in 0..k {
                    v.push(Block { round, mode: modes[(j + round) % k], samples: n, warmup: false });
                }
            }
        }
    }
    v
}

/// [`BgLife::Kept`]: the pause after a start-up shorter than 2 s (the suite's "extra pause to
/// let a minimum of thr stats be printed", `sleep 2`): 2 s, or half the gap if that is shorter
/// (a quick test's short gap).
pub fn post_pause(gap_ms: u64, fg: Duration) -> Duration {
    if fg < Duration::from_secs(2) {
        Duration::from_millis(gap_ms / 2).min(Duration::from_secs(2))
    } else {
        Duration::ZERO
    }
}

/// How a launcher talks to the agent in `agent` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Over the control socket from the (resident) launcher process, as a real launcher would.
    Socket,
    /// By running `forefront agent fg PID --burst` / `--burst-end`: also pays for starting a
    /// process, whose code pages may have to be read from a busy disk after the cache drop.
    Cli,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    #[error(transparent)]
    Sysfs(#[from] forefront_sysfs::Error),
    #[error("{what}: {source}")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Step(String),
    /// SIGINT, SIGTERM or SIGHUP arrived (see [`crate::interrupt`]); the guards undo the run.
    #[error("interrupted: the run stopped and undid what it set up (workers, agent, I/O scheduler, work directory)")]
    Interrupted,
}

/// Stop here if a signal asked for it.
fn check_interrupt() -> Result<(), BenchError> {
    if crate::interrupt::requested() {
        Err(BenchError::Interrupted)
    } else {
        Ok(())
    }
}

/// Sleep `d`, waking early (with [`BenchError::Interrupted`]) if a signal asks to stop.
fn sleep_checked(d: Duration) -> Result<(), BenchError> {
    let end = Instant::now() + d;
    loop {
        check_interrupt()?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ModeResult {
    #[serde(flatten)]
    pub summary: Summary,
    /// Median divided by the median of `alone` (when measured).
    pub ratio_to_alone: Option<f64>,
    /// Median background throughput while the foreground operation ran (MB/s, 10^6 bytes
    /// through `write`/`read`, from /proc/PID/io).
    pub bg_mb_s: Option<f64>,
    /// The same over the ramp and the operation together (what BG gets over a longer window);
    /// with a kept background ([`BgLife::Kept`]) from the end of the previous start-up (the
    /// round's first: the background's start) to the end of this one.
    pub bg_window_mb_s: Option<f64>,
    /// The disk's throughput (all its reads and writes, from /sys/block/DEV/stat: what
    /// `iostat` reports) while the foreground operation ran (MB/s); includes the operation's own.
    pub disk_mb_s: Option<f64>,
    /// The same over the same window as `bg_window_mb_s`.
    pub disk_window_mb_s: Option<f64>,
    /// `agent` mode: median time of the burst call (included in the operation's time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst_call_ms: Option<f64>,
    /// The operation's own CPU time, mean per operation ([`OpCpu`]; `bench predict` takes the
    /// `alone` mode's user time as the simulated app's CPU work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_cpu_ms: Option<OpCpu>,
    pub samples_ms: Vec<f64>,
    /// Each sample's `bg_window_mb_s`, in the order of `samples_ms` (the background's spread
    /// from sample to sample: on a VM whose host takes freed memory back it moves 2-3x, docs/twin.md
    /// twin25).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bg_window_samples_mb_s: Vec<f64>,
    /// [`BgLife::Kept`]: the disk's throughput (reads + writes, as iostat) over each round's
    /// steady state, from the end of the ramp to the end of its last start-up's pause (what the
    /// S suite's iostat averages over a run), one per round, in round order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub run_disk_mb_s: Vec<f64>,
    /// The same for the workers' own read()/write() bytes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub run_bg_mb_s: Vec<f64>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    pub fg: Fg,
    pub bg: Bg,
    pub runs: usize,
    pub device: String,
    pub scheduler: String,
    pub dir: PathBuf,
    pub app: AppSpec,
    pub bg_procs: usize,
    /// Size of each background worker's file.
    pub bg_file_bytes: u64,
    pub ramp_ms: u64,
    pub launcher: Launcher,
    /// What `--agent-config` added to the agent's default configuration (empty: nothing).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub agent_extra: String,
    /// `--fg replay`: the trace replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<PathBuf>,
    /// `--fg replay`: whether its think times were slept.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replay_think: bool,
    /// Whether the fio-style writers overwrote files written beforehand.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fio_overwrite: bool,
    /// How the background lived across the samples (`{"kind": "per-sample"}` or `{"kind":
    /// "kept", "per_round": N, "gap_ms": MS}`).
    pub bg_life: BgLife,
    /// Rounds of the schedule (measured ones: the per-sample warm-up pass not counted).
    pub rounds: usize,
    pub modes: BTreeMap<&'static str, ModeResult>,
    /// Every sample in the order taken (warm-ups included): when its caches were dropped, its
    /// window began, its operation began and ended, in ms since the first sample's start; the
    /// simulator's runs keep one mode's samples in a row, the bench interleaves them, and a VM
    /// host's reclaim of free memory follows the drops (docs/twin.md, twin26).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<SampleTimes>,
    /// The wall clock at the timeline's 0 (ms since the Unix epoch), to align it with a
    /// monitor's log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline_start_unix_ms: Option<u64>,
    /// The page cache's copy costs, probed before each block of samples (each sample where
    /// every sample has a background of its own), in the run's order
    /// ([`crate::calibrate::copy_probe`]): `bench predict` takes their median for the
    /// simulator's copy costs (docs/twin.md, twin27).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub copy_probes: Vec<crate::calibrate::CopyProbe>,
    /// The VM host's free page reporting passes during the run, where the kernel counts them
    /// (`forefront_sysfs::vm::page_reporting_counters`, sampled every 10 ms; a pass's reports
    /// within 500 ms of each other, as `bench calibrate` groups them): each pass's first report
    /// in ms on the timeline's clock and the MiB it reported (docs/twin.md, twin27).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reporting_passes: Vec<ReportingPass>,
}

/// One free page reporting pass seen during a run ([`Report::reporting_passes`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReportingPass {
    /// Its first report, ms since the run's first sample.
    pub start_ms: f64,
    /// The memory it reported (MiB).
    pub mib: f64,
}

/// Follows the kernel's reporting counters in a thread of its own while the run goes on
/// ([`Report::reporting_passes`]); stopped and joined on drop, so an error path leaves no
/// thread behind.
struct PassMonitor {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<Vec<ReportingPass>>>,
}

impl PassMonitor {
    /// `None` where the kernel does not count its reporting.
    fn start(clock0: Instant) -> Option<PassMonitor> {
        let root = Path::new("/");
        let mut last = forefront_sysfs::vm::page_reporting_counters(root)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut passes: Vec<ReportingPass> = vec![];
            let mut last_report_ms = f64::NEG_INFINITY;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
                let Some(c) = forefront_sysfs::vm::page_reporting_counters(Path::new("/")) else { break };
                let kib = c.reported_kib.saturating_sub(last.reported_kib);
                if kib > 0 {
                    let now_ms = (clock0.elapsed().as_secs_f64() * 1e6).round() / 1e3;
                    match passes.last_mut() {
                        Some(p) if now_ms - last_report_ms < 500.0 => p.mib += kib as f64 / 1024.0,
                        _ => passes.push(ReportingPass { start_ms: now_ms, mib: kib as f64 / 1024.0 }),
                    }
                    last_report_ms = now_ms;
                }
                last = c;
            }
            passes
        });
        Some(PassMonitor { stop, handle: Some(handle) })
    }

    fn finish(mut self) -> Vec<ReportingPass> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.handle.take().and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

impl Drop for PassMonitor {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// One sample's place in the run ([`Report::timeline`]), in ms since the run's first sample.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SampleTimes {
    pub mode: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// The cache drop before it returned (`None`: no drop of its own, a kept background's
    /// later start-up without the suite's drop).
    pub dropped_ms: Option<f64>,
    pub window_ms: f64,
    pub op_ms: f64,
    pub end_ms: f64,
}

/// Removes the work directory unless asked to keep it.
struct WorkDir {
    path: PathBuf,
    keep: bool,
}
impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Puts the original I/O scheduler back, whatever happens (also `bench calibrate`'s).
pub(crate) struct SchedGuard {
    pub(crate) queue: PathBuf,
    pub(crate) original: String,
}
impl Drop for SchedGuard {
    fn drop(&mut self) {
        let _ = block::set_scheduler(&self.queue, &self.original);
    }
}

/// Child processes killed (SIGKILL) and reaped on drop.
#[derive(Default)]
struct Kids(Vec<Child>);
impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One request to the agent's socket; an error or a refusal stops the sample.
fn agent_request(socket: &Path, req: forefront_agent::proto::Request) -> Result<(), BenchError> {
    let r = forefront_agent::control::request(socket, &req).map_err(|e| BenchError::Step(format!("agent: {e}")))?;
    if !r.ok {
        return Err(BenchError::Step(format!("agent refused {req:?}: {}", r.error.unwrap_or_default())));
    }
    Ok(())
}

/// The agent child: SIGTERM (so it restores everything) then, if it hangs, SIGKILL.
struct AgentChild(Option<Child>, PathBuf);
impl AgentChild {
    fn stop(&mut self) -> Result<(), BenchError> {
        let Some(mut c) = self.0.take() else { return Ok(()) };
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(c.id() as i32), nix::sys::signal::Signal::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Some(st) = c.try_wait().map_err(|e| BenchError::Step(format!("agent wait: {e}")))? {
                return if st.success() {
                    Ok(())
                } else {
                    Err(BenchError::Step(format!("agent exited with {st}; log: {}", self.1.display())))
                };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
        Err(BenchError::Step(format!("agent did not stop in 10 s; log: {}", self.1.display())))
    }
}
impl Drop for AgentChild {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// One timed foreground operation and what the background did meanwhile.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub fg_ms: f64,
    /// Background throughput during the operation.
    pub bg_bytes_per_s: Option<f64>,
    /// Background throughput from the start of the ramp to the end of the operation.
    pub bg_window_bytes_per_s: Option<f64>,
    /// `agent` mode: how long telling the agent that the burst begins took.
    pub burst_call_ms: Option<f64>,
    /// The disk's throughput (reads + writes, /sys/block/DEV/stat) during the operation.
    pub disk_bytes_per_s: Option<f64>,
    /// The same from the start of the ramp to the end of the operation.
    pub disk_window_bytes_per_s: Option<f64>,
    /// The operation's own CPU time, as its process measured it ([`OpCpu`]).
    pub cpu: Option<OpCpu>,
    /// When the sample's caches were dropped (if it dropped them), its window began, its
    /// operation began and ended ([`Report::timeline`]).
    pub dropped_at: Option<Instant>,
    pub window_at: Instant,
    pub op_at: Instant,
    pub end_at: Instant,
}

/// The CPU time a foreground operation's process spent on the operation (from its `go` to its
/// `done`), in ms: `total` from `CLOCK_PROCESS_CPUTIME_ID` (the scheduler's runtime), `user` and
/// `sys` from `getrusage(RUSAGE_SELF)`, and `on_cpu` from perf's task clock ([`TaskClock`]).
/// The kernel splits a task's runtime into user and system time in proportion to the ticks it
/// sampled in each (`cputime_adjust`), so one operation's split is coarse (a 4 ms tick here
/// against a ~45 ms launch) while a mean over operations is not biased by it.
///
/// **The runtime is not the time on a CPU on a kernel without preemption** (docs/twin.md,
/// twin18): a wake-up that preempts the running task sets `need_resched` and asks the
/// scheduler to skip its next clock update (`rq_clock_skip_update` in `wakeup_preempt`),
/// which saves a clock read when the switch follows at once; with `preempt=none` the running
/// task keeps the CPU until its system call ends, and the woken task's run is then timed from
/// its wake-up, so `total` (and `user` and `sys`, scaled to it) also counts its wait for the
/// CPU. perf's task clock is timed at the context switches themselves. On the twin's VM a
/// launch beside two copy workers: `total` 50 ms, `on_cpu` 20 (tw18's means; traced, 47–55 ms
/// charged against 19–27 on a CPU).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct OpCpu {
    pub total_ms: f64,
    pub user_ms: f64,
    pub sys_ms: f64,
    /// Time on a CPU (perf's task clock); `None` where `perf_event_open` is refused (a
    /// `perf_event_paranoid` above 2 for a non-root user, a seccomp filter) or from an older
    /// helper.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_cpu_ms: Option<f64>,
}

/// perf's task clock of this process's threads (`PERF_COUNT_SW_TASK_CLOCK`, counting from its
/// opening, inherited by threads created after it): the time its tasks were on a CPU, from the
/// context switches in and out, whatever the scheduler's clock updates did ([`OpCpu`]).
pub struct TaskClock(std::os::fd::OwnedFd);

impl TaskClock {
    /// Opens and starts the counter, or `None` where the kernel refuses it.
    pub fn open() -> Option<TaskClock> {
        use perf_event_open_sys as sys;
        let mut attr = sys::bindings::perf_event_attr {
            type_: sys::bindings::PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
            config: sys::bindings::PERF_COUNT_SW_TASK_CLOCK as u64,
            ..Default::default()
        };
        attr.set_inherit(1);
        attr.set_exclude_hv(1);
        // SAFETY: `attr` is a valid, fully initialised attribute struct that outlives the call;
        // pid 0 and cpu -1 count this process on any CPU; no group; the fd closes on exec.
        let fd = unsafe { sys::perf_event_open(&mut attr, 0, -1, -1, sys::bindings::PERF_FLAG_FD_CLOEXEC as _) };
        // SAFETY: a non-negative return is a new file descriptor that nothing else owns.
        (fd >= 0).then(|| TaskClock(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }))
    }

    /// The time on a CPU since the counter was opened (ms), or `None` on a failed read.
    pub fn ms(&self) -> Option<f64> {
        let mut ns = 0u64;
        // SAFETY: reads at most 8 bytes into `ns`, which outlives the call.
        let n = unsafe {
            libc::read(std::os::fd::AsRawFd::as_raw_fd(&self.0), (&mut ns as *mut u64).cast(), std::mem::size_of::<u64>())
        };
        (n == 8).then_some(ns as f64 / 1e6)
    }
}

impl OpCpu {
    /// This process's CPU time so far.
    pub fn now() -> OpCpu {
        let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
        // SAFETY: both calls only write the structs passed to them, which outlive the calls.
        let (ts, ru) = unsafe {
            let mut ts: libc::timespec = std::mem::zeroed();
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts);
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            (ts, ru)
        };
        OpCpu {
            total_ms: ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6,
            user_ms: ms(ru.ru_utime),
            sys_ms: ms(ru.ru_stime),
            on_cpu_ms: None,
        }
    }

    /// [`OpCpu::now`] with the time on a CPU from `clock`.
    pub fn now_with(clock: Option<&TaskClock>) -> OpCpu {
        OpCpu { on_cpu_ms: clock.and_then(TaskClock::ms), ..OpCpu::now() }
    }

    /// The CPU time spent since `before`.
    pub fn since(self, before: OpCpu) -> OpCpu {
        OpCpu {
            total_ms: (self.total_ms - before.total_ms).max(0.0),
            user_ms: (self.user_ms - before.user_ms).max(0.0),
            sys_ms: (self.sys_ms - before.sys_ms).max(0.0),
            on_cpu_ms: self.on_cpu_ms.zip(before.on_cpu_ms).map(|(a, b)| (a - b).max(0.0)),
        }
    }

    /// The operation's `done` line: `done MS BYTES cpu TOTAL USER SYS [oncpu MS]`.
    pub fn done_line(elapsed_ms: f64, bytes: u64, cpu: OpCpu) -> String {
        let mut line = format!("done {elapsed_ms:.3} {bytes} cpu {:.3} {:.3} {:.3}", cpu.total_ms, cpu.user_ms, cpu.sys_ms);
        if let Some(on) = cpu.on_cpu_ms {
            line += &format!(" oncpu {on:.3}");
        }
        line
    }

    /// The CPU time a `done` line reports (`None` for a line without it: an older helper; the
    /// time on a CPU `None` where the line has none).
    pub fn parse_done(line: &str) -> Option<OpCpu> {
        fn after<'a>(line: &'a str, key: &'a str) -> impl Iterator<Item = Option<f64>> + 'a {
            line.split_whitespace().skip_while(move |w| *w != key).skip(1).map(|w| w.parse::<f64>().ok())
        }
        let mut f = after(line, "cpu");
        let on_cpu_ms = after(line, "oncpu").next().flatten().filter(|v| v.is_finite());
        match (f.next()??, f.next()??, f.next()??) {
            (t, u, s) if t.is_finite() && u.is_finite() && s.is_finite() => {
                Some(OpCpu { total_ms: t, user_ms: u, sys_ms: s, on_cpu_ms })
            }
            _ => None,
        }
    }
}

/// Mean CPU time per operation over `s` (`None` when no sample reported it).
fn mean_cpu(s: &[Sample]) -> Option<OpCpu> {
    let c: Vec<OpCpu> = s.iter().filter_map(|x| x.cpu).collect();
    let n = c.len() as f64;
    (!c.is_empty()).then(|| OpCpu {
        total_ms: c.iter().map(|x| x.total_ms).sum::<f64>() / n,
        user_ms: c.iter().map(|x| x.user_ms).sum::<f64>() / n,
        sys_ms: c.iter().map(|x| x.sys_ms).sum::<f64>() / n,
        // Over the operations that measured it (a helper refused perf_event_open: none).
        on_cpu_ms: {
            let on: Vec<f64> = c.iter().filter_map(|x| x.on_cpu_ms).collect();
            (!on.is_empty()).then(|| on.iter().sum::<f64>() / on.len() as f64)
        },
    })
}

/// Progress events for the caller (a progress bar on a TTY, nothing otherwise).
pub enum Progress<'a> {
    Setup(&'a str),
    Start { total: usize },
    Sample { mode: Mode, rep: usize, warmup: bool, sample: Sample },
}

pub fn run(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<Report, BenchError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(BenchError::Step("the benchmark needs root (drop_caches, cgroups, I/O scheduler)".into()));
    }
    let root = Path::new("/");
    let work = WorkDir { path: plan.dir.join(format!("forefront-bench-{}", std::process::id())), keep: plan.keep };
    std::fs::create_dir_all(&work.path).map_err(|e| BenchError::Step(format!("{}: {e}", work.path.display())))?;
    let queue = block::queue_dir_for_path(root, &work.path)?;
    let (original_sched, available) = block::scheduler(&queue)?;
    if plan.modes.iter().any(|m| m.wants_bfq()) && !available.iter().any(|s| s == "bfq") {
        return Err(BenchError::Step(format!("{}: bfq not offered (modprobe bfq)", queue.display())));
    }
    let device = queue.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();

    let app = if plan.fg == Fg::Replay {
        let path = plan.trace.as_deref().ok_or_else(|| BenchError::Step("--fg replay needs --trace FILE".into()))?;
        let trace = crate::replay::load(path).map_err(|e| BenchError::Step(e.to_string()))?;
        progress(Progress::Setup("writing the replay files (one per traced process)"));
        crate::replay::prepare_files(&work.path, &trace)?;
        App { dir: work.path.clone() }
    } else {
        progress(Progress::Setup("building the app (files + SQLite database)"));
        App::build(&work.path, &plan.app)?
    };
    check_interrupt()?;
    let mut bg_files = vec![];
    if plan.bg != Bg::None {
        progress(Progress::Setup("writing the background files"));
        for i in 0..plan.bg.workers(plan.bg_procs) {
            let f = work.path.join(format!("bg{i}.dat"));
            // The S suite's writers make their files as they go; every other worker's is written now.
            if plan.fio_overwrite || plan.bg.worker(i) != Some(forefront_workload::bench::Worker::SeqWrite) {
                crate::fixture::write_file(&f, plan.bg_file_bytes, 1000 + i as u64)?;
            }
            bg_files.push(f);
            check_interrupt()?;
        }
    }

    // The page copy's cost moves from minute to minute on a VM: probed beside the samples (twin27).
    let probe_file = work.path.join("copy-probe.dat");
    crate::calibrate::make_probe_file(&probe_file)?;
    let mut copy_probes = vec![];

    let mut samples: BTreeMap<Mode, Vec<Sample>> = BTreeMap::new();
    let mut taken: Vec<(Mode, bool, Sample)> = vec![];
    let (clock0, unix0) = (Instant::now(), std::time::SystemTime::now());
    let monitor = PassMonitor::start(clock0);
    let mut runs_tp: BTreeMap<Mode, Vec<RunThroughput>> = BTreeMap::new();
    let blocks = schedule(&plan.modes, plan.runs, plan.bg_life);
    let total = blocks.iter().map(|b| b.samples).sum();
    progress(Progress::Start { total });
    let mut seq = 0u64;
    for b in &blocks {
        check_interrupt()?;
        copy_probes.push(crate::calibrate::copy_probe(&probe_file)?);
        let _sched = if b.mode.wants_bfq() {
            block::set_scheduler(&queue, "bfq")?;
            Some(SchedGuard { queue: queue.clone(), original: original_sched.clone() })
        } else {
            None
        };
        match plan.bg_life {
            BgLife::PerSample => {
                seq += 1;
                let s = one_sample(plan, &app, &bg_files, b.mode, seq, &work.path, &device)?;
                taken.push((b.mode, b.warmup, s));
                progress(Progress::Sample { mode: b.mode, rep: b.round, warmup: b.warmup, sample: s });
                if !b.warmup {
                    samples.entry(b.mode).or_default().push(s);
                }
            }
            BgLife::Kept { gap_ms, .. } => {
                let mut got = vec![];
                let tp = kept_block(plan, &app, &bg_files, b, gap_ms, &mut seq, &work.path, &device, &mut |s| {
                    progress(Progress::Sample { mode: b.mode, rep: b.round, warmup: false, sample: s });
                    got.push(s);
                })?;
                taken.extend(got.iter().map(|&s| (b.mode, false, s)));
                samples.entry(b.mode).or_default().extend(got);
                if let Some(tp) = tp {
                    runs_tp.entry(b.mode).or_default().push(tp);
                }
            }
        }
    }
    let reporting_passes = monitor.map(PassMonitor::finish).unwrap_or_default();
    let alone = samples.get(&Mode::Alone).and_then(|s| summarize(&s.iter().map(|x| x.fg_ms).collect::<Vec<_>>()));
    let mut modes = BTreeMap::new();
    for m in &plan.modes {
        let s = &samples[m];
        let ms: Vec<f64> = s.iter().map(|x| x.fg_ms).collect();
        let summary = summarize(&ms).expect("runs >= 1");
        let bg: Vec<f64> = s.iter().filter_map(|x| x.bg_bytes_per_s).map(|b| b / 1e6).collect();
        let bgw: Vec<f64> = s.iter().filter_map(|x| x.bg_window_bytes_per_s).map(|b| b / 1e6).collect();
        modes.insert(
            m.name(),
            ModeResult {
                ratio_to_alone: alone.as_ref().map(|a| summary.median_ms / a.median_ms),
                disk_mb_s: summarize(&s.iter().filter_map(|x| x.disk_bytes_per_s).map(|b| b / 1e6).collect::<Vec<_>>())
                    .map(|b| b.median_ms),
                disk_window_mb_s: summarize(
                    &s.iter().filter_map(|x| x.disk_window_bytes_per_s).map(|b| b / 1e6).collect::<Vec<_>>(),
                )
                .map(|b| b.median_ms),
                bg_mb_s: summarize(&bg).map(|b| b.median_ms),
                bg_window_mb_s: summarize(&bgw).map(|b| b.median_ms),
                burst_call_ms: summarize(&s.iter().filter_map(|x| x.burst_call_ms).collect::<Vec<_>>()).map(|b| b.median_ms),
                op_cpu_ms: mean_cpu(s),
                summary,
                samples_ms: ms,
                bg_window_samples_mb_s: bgw,
                run_disk_mb_s: runs_tp.get(m).into_iter().flatten().filter_map(|t| t.disk_bytes_per_s).map(|b| b / 1e6).collect(),
                run_bg_mb_s: runs_tp.get(m).into_iter().flatten().filter_map(|t| t.bg_bytes_per_s).map(|b| b / 1e6).collect(),
            },
        );
    }
    Ok(Report {
        fg: plan.fg,
        bg: plan.bg,
        runs: plan.runs,
        device,
        scheduler: original_sched,
        dir: work.path.clone(),
        app: plan.app.clone(),
        bg_procs: if plan.bg == Bg::None { 0 } else { plan.bg_procs },
        bg_file_bytes: plan.bg_file_bytes,
        ramp_ms: plan.ramp.as_millis() as u64,
        launcher: plan.launcher,
        agent_extra: plan.agent_extra.clone(),
        trace: plan.trace.clone(),
        replay_think: plan.replay_think,
        fio_overwrite: plan.fio_overwrite,
        bg_life: plan.bg_life,
        rounds: match plan.bg_life {
            BgLife::PerSample => plan.runs,
            BgLife::Kept { per_round, .. } => plan.runs.div_ceil(per_round.max(1)),
        },
        modes,
        timeline: taken
            .iter()
            .map(|(m, warmup, x)| {
                let ms = |t: Instant| (t.saturating_duration_since(clock0).as_secs_f64() * 1e6).round() / 1e3;
                SampleTimes {
                    mode: m.name(),
                    warmup: *warmup,
                    dropped_ms: x.dropped_at.map(ms),
                    window_ms: ms(x.window_at),
                    op_ms: ms(x.op_at),
                    end_ms: ms(x.end_at),
                }
            })
            .collect(),
        timeline_start_unix_ms: unix0.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_millis() as u64),
        copy_probes,
        reporting_passes,
    })
}

fn spawn(cmd: &mut Command, what: &str) -> Result<Child, BenchError> {
    cmd.spawn().map_err(|source| BenchError::Spawn { what: what.into(), source })
}

fn read_line(r: &mut BufReader<ChildStdout>, what: &str) -> Result<String, BenchError> {
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| BenchError::Step(format!("{what}: {e}")))?;
    if line.is_empty() {
        return Err(BenchError::Step(format!("{what}: the process exited early")));
    }
    Ok(line)
}

fn bg_bytes(pids: &[i32], bg: Bg) -> u64 {
    pids.iter()
        .filter_map(|p| procfs::io(Path::new("/"), *p).ok())
        .map(|c| match bg {
            Bg::Update | Bg::Copy => c.wchar,
            Bg::Mixed | Bg::FioRw => c.wchar + c.rchar,
            Bg::FioWrite => c.wchar,
            _ => c.rchar,
        })
        .sum()
}

/// `--fg replay` and the fio-style backgrounds: the pause between the S suite's cache drop
/// (with the background running) and the timed start-up.
pub const SUITE_DROP_PAUSE: Duration = Duration::from_millis(200);

/// Bytes the disk read and wrote since boot (/sys/block/DEV/stat, fields 3 and 7 in sectors).
fn disk_bytes(dev: &str) -> Option<u64> {
    let text = std::fs::read_to_string(Path::new("/sys/block").join(dev).join("stat")).ok()?;
    let f: Vec<u64> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    Some((f.get(2)? + f.get(6)?) * 512)
}

/// The resident agent of `agent` modes, its socket and the "previous app" it was warmed up with.
struct AgentSession {
    agent: AgentChild,
    socket: PathBuf,
    _prev: Kids,
}

/// `agent` mode: the agent is resident, as on a real machine — started and warmed up (one
/// foreground change) before the cache drop, so its code is in memory when the launch calls
/// it; the workers join its scope at run time (`scope` requests) once they exist.
fn start_agent(plan: &Plan, work: &Path) -> Result<AgentSession, BenchError> {
    let mut agent = AgentChild(None, work.join("agent.log"));
    let socket = work.join("agent.sock");
    let mut warm = Kids::default();
    let cfg = work.join("agent.toml");
    let text = format!(
        "# written by forefront bench: the default configuration; the workers join its scope at run time\n\
         [agent]\nsocket = {:?}\nstate = {:?}\ngroup = {:?}\n{}",
        socket,
        // A directory of its own on a tmpfs (the agent makes it 0700 and removes it at a clean exit).
        format!("/dev/shm/forefront-bench-{}/state.json", std::process::id()),
        format!("forefront-bench-{}", std::process::id()),
        plan.agent_extra
    );
    std::fs::write(&cfg, text).map_err(|e| BenchError::Step(format!("{}: {e}", cfg.display())))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&agent.1)
        .map_err(|e| BenchError::Step(format!("{}: {e}", agent.1.display())))?;
    agent.0 = Some(spawn(
        Command::new(&plan.exe).args(["agent", "run", "--config"]).arg(&cfg).stderr(log).stdin(Stdio::null()),
        "agent",
    )?);
    let t0 = Instant::now();
    loop {
        let req = forefront_agent::proto::Request::Status {};
        if forefront_agent::control::request(&socket, &req).is_ok_and(|r| r.ok) {
            break;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(BenchError::Step(format!("agent not ready in 10 s; log: {}", agent.1.display())));
        }
        sleep_checked(Duration::from_millis(20))?;
    }
    // The previous app: a foreground change before the measured one (lives as long as the
    // session: killed with it).
    let prev = spawn(Command::new("sleep").arg("86400").stdin(Stdio::null()), "previous app (sleep)")?;
    let prev_pid = prev.id() as i32;
    warm.0.push(prev);
    agent_request(&socket, forefront_agent::proto::Request::Fg { pid: Some(prev_pid), uid: None, cgroup: None, burst: false })?;
    Ok(AgentSession { agent, socket, _prev: warm })
}

/// The running background: its processes (killed and reaped on drop: the workers and the
/// sync loop) and the workers' pids (whose bytes are the background's throughput).
struct Background {
    _kids: Kids,
    workers: Vec<i32>,
}

/// Starts the background of `mode` (none for `alone`) and, in `agent` modes, puts it in the
/// agent's scope (as a service manager would tell the resident agent).
fn start_background(
    plan: &Plan,
    bg_files: &[PathBuf],
    mode: Mode,
    work: &Path,
    agent: Option<&AgentSession>,
) -> Result<Background, BenchError> {
    let mut kids = Kids::default();
    let mut workers = vec![];
    if plan.bg != Bg::None && mode != Mode::Alone {
        for (i, f) in bg_files.iter().enumerate() {
            let kind = plan.bg.worker(i).expect("a background workload has workers").name();
            let mut c = Command::new(&plan.exe);
            c.args(["bench", "worker", "--bg", kind, "--file"]).arg(f).stdin(Stdio::null());
            if kind == "seq-write" {
                c.args(["--len", &plan.bg_file_bytes.to_string()]);
                if plan.fio_overwrite {
                    c.arg("--overwrite");
                }
            }
            if mode == Mode::IoniceIdle {
                c.arg("--ioprio-idle");
            }
            let child = spawn(&mut c, "background worker")?;
            workers.push(child.id() as i32);
            kids.0.push(child);
        }
    }
    // The S suite's `sync` loop beside its writers: in the background (the agent's scope),
    // its bytes not counted as the workers'.
    let mut helpers = vec![];
    if plan.bg.sync_loop() && mode != Mode::Alone {
        let mut c = Command::new(&plan.exe);
        // `--file` is not used: it names the work directory so the process can be told as the run's.
        c.args(["bench", "worker", "--bg", "sync-loop", "--file"]).arg(work.join("sync-loop")).stdin(Stdio::null());
        if mode == Mode::IoniceIdle {
            c.arg("--ioprio-idle");
        }
        let child = spawn(&mut c, "background sync loop")?;
        helpers.push(child.id() as i32);
        kids.0.push(child);
    }
    check_interrupt()?;
    if let Some(a) = agent {
        for &w in workers.iter().chain(&helpers) {
            agent_request(
                &a.socket,
                forefront_agent::proto::Request::Scope { pid: Some(w), uid: None, cgroup: None, remove: false },
            )?;
        }
    }
    Ok(Background { _kids: kids, workers })
}

/// The foreground operation's process, started and waiting for its `go` (as a zygote-forked
/// app would): its pid, its stdin and stdout; killed and reaped on drop.
struct Op {
    _kid: Kids,
    pid: i32,
    go: ChildStdin,
    out: BufReader<ChildStdout>,
}

fn spawn_op(plan: &Plan, app: &App, seq: u64) -> Result<Op, BenchError> {
    let fg_name = match plan.fg {
        Fg::Launch => "launch",
        Fg::Switch => "switch",
        Fg::Replay => "replay",
    };
    let mut cmd = Command::new(&plan.exe);
    cmd.args(["bench", "op", "--fg", fg_name, "--dir"])
        .arg(&app.dir)
        .args(["--seq", &seq.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if let Some(t) = &plan.trace {
        cmd.arg("--trace").arg(t);
        if plan.replay_think {
            cmd.arg("--think");
        }
    }
    let mut op = spawn(&mut cmd, "foreground operation")?;
    let pid = op.id() as i32;
    let go: ChildStdin = op.stdin.take().expect("piped");
    let mut out = BufReader::new(op.stdout.take().expect("piped"));
    let kid = Kids(vec![op]);
    let ready = read_line(&mut out, "foreground operation")?;
    if ready.trim() != "ready" {
        return Err(BenchError::Step(format!("foreground operation said {ready:?}")));
    }
    Ok(Op { _kid: kid, pid, go, out })
}

/// Counters at one instant: the workers' bytes, the disk's bytes, the time.
#[derive(Clone, Copy)]
struct Mark {
    bg: u64,
    disk: Option<u64>,
    at: Instant,
}
impl Mark {
    fn now(bg: &Background, plan: &Plan, device: &str) -> Mark {
        Mark { bg: bg_bytes(&bg.workers, plan.bg), disk: disk_bytes(device), at: Instant::now() }
    }
}

/// Times the operation: the launcher's burst call (agent modes, timed with it), `go`, its
/// `done`; then (untimed) the burst's end. `window` is where the sample's window starts.
fn time_op(
    plan: &Plan,
    agent: Option<&AgentSession>,
    mut op: Op,
    bg: &Background,
    device: &str,
    window: Mark,
) -> Result<Sample, BenchError> {
    let start = Mark::now(bg, plan, device);
    let t0 = start.at;
    let mut burst_call_ms = None;
    if let Some(a) = agent {
        launcher_call(plan, &a.socket, Some(op.pid))?;
        burst_call_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
    }
    op.go.write_all(b"go\n").map_err(|e| BenchError::Step(format!("foreground operation: {e}")))?;
    let done = read_line(&mut op.out, "foreground operation")?;
    let end = Mark::now(bg, plan, device);
    let elapsed = end.at.duration_since(t0);
    check_interrupt()?;
    if !done.starts_with("done") {
        return Err(BenchError::Step(format!("foreground operation failed: {}", done.trim())));
    }
    if let Some(a) = agent {
        launcher_call(plan, &a.socket, None)?;
    }
    let has_bg = !bg.workers.is_empty();
    let win = end.at.duration_since(window.at).as_secs_f64();
    Ok(Sample {
        fg_ms: elapsed.as_secs_f64() * 1000.0,
        bg_bytes_per_s: has_bg.then(|| end.bg.saturating_sub(start.bg) as f64 / elapsed.as_secs_f64()),
        bg_window_bytes_per_s: has_bg.then(|| end.bg.saturating_sub(window.bg) as f64 / win),
        burst_call_ms,
        disk_bytes_per_s: start.disk.zip(end.disk).map(|(a, b)| b.saturating_sub(a) as f64 / elapsed.as_secs_f64()),
        disk_window_bytes_per_s: window.disk.zip(end.disk).map(|(a, b)| b.saturating_sub(a) as f64 / win),
        cpu: OpCpu::parse_done(&done),
        dropped_at: None,
        window_at: window.at,
        op_at: t0,
        end_at: end.at,
    })
}

/// The S suite's drop before a start-up, with the background running: `echo 3 > drop_caches;
/// time sleep 0.2; time COMMAND` (comm_startup_lat.sh), untimed.
fn suite_drop(plan: &Plan) -> Result<Option<Instant>, BenchError> {
    if plan.fg == Fg::Replay || plan.bg.is_fio() {
        vm::drop_caches(Path::new("/"))?;
        let dropped = Instant::now();
        sleep_checked(SUITE_DROP_PAUSE)?;
        return Ok(Some(dropped));
    }
    Ok(None)
}

/// [`BgLife::PerSample`]: one sample with a background of its own.
fn one_sample(
    plan: &Plan,
    app: &App,
    bg_files: &[PathBuf],
    mode: Mode,
    seq: u64,
    work: &Path,
    device: &str,
) -> Result<Sample, BenchError> {
    let mut agent = if mode.is_agent() { Some(start_agent(plan, work)?) } else { None };
    vm::drop_caches(Path::new("/"))?;
    let dropped = Instant::now();
    // The foreground app's process starts first and waits (as a zygote-forked app would).
    let op = spawn_op(plan, app, seq)?;
    let bg = start_background(plan, bg_files, mode, work, agent.as_ref())?;
    let ramp0 = Mark::now(&bg, plan, device);
    sleep_checked(if bg.workers.is_empty() { Duration::from_millis(100) } else { plan.ramp })?;
    suite_drop(plan)?;
    let s = time_op(plan, agent.as_ref(), op, &bg, device, ramp0)?;
    if let Some(a) = agent.as_mut() {
        a.agent.stop()?;
    }
    drop(bg);
    Ok(Sample { dropped_at: Some(dropped), ..s })
}

/// The workers' and the disk's throughput over one round's steady state ([`BgLife::Kept`]).
#[derive(Clone, Copy, Debug)]
struct RunThroughput {
    bg_bytes_per_s: Option<f64>,
    disk_bytes_per_s: Option<f64>,
}

/// [`BgLife::Kept`]: one (round, mode) block — the mode applied and the background started
/// once, ramped, then `b.samples` start-ups in its steady state, each reported to `sample` as
/// it is taken. Returns the throughput over the steady state (after the ramp to the end of
/// the last start-up's pause).
#[allow(clippy::too_many_arguments)]
fn kept_block(
    plan: &Plan,
    app: &App,
    bg_files: &[PathBuf],
    b: &Block,
    gap_ms: u64,
    seq: &mut u64,
    work: &Path,
    device: &str,
    sample: &mut dyn FnMut(Sample),
) -> Result<Option<RunThroughput>, BenchError> {
    let mut agent = if b.mode.is_agent() { Some(start_agent(plan, work)?) } else { None };
    // The suite's flush_caches before it starts its readers and writers.
    vm::drop_caches(Path::new("/"))?;
    let bg = start_background(plan, bg_files, b.mode, work, agent.as_ref())?;
    let mut window = Mark::now(&bg, plan, device);
    sleep_checked(if bg.workers.is_empty() { Duration::from_millis(100) } else { plan.ramp })?;
    let steady = Mark::now(&bg, plan, device);
    for _ in 0..b.samples {
        sleep_checked(Duration::from_millis(gap_ms))?;
        *seq += 1;
        // The app's process starts before the drop and waits (as a zygote-forked app would).
        let op = spawn_op(plan, app, *seq)?;
        let dropped = suite_drop(plan)?;
        let s = Sample { dropped_at: dropped, ..time_op(plan, agent.as_ref(), op, &bg, device, window)? };
        window = Mark::now(&bg, plan, device);
        sample(s);
        sleep_checked(post_pause(gap_ms, Duration::from_secs_f64(s.fg_ms / 1000.0)))?;
    }
    let end = Mark::now(&bg, plan, device);
    if let Some(a) = agent.as_mut() {
        a.agent.stop()?;
    }
    drop(bg);
    let secs = end.at.duration_since(steady.at).as_secs_f64();
    let has_bg = !plan.bg.eq(&Bg::None) && b.mode != Mode::Alone;
    Ok(has_bg.then(|| RunThroughput {
        bg_bytes_per_s: Some(end.bg.saturating_sub(steady.bg) as f64 / secs),
        disk_bytes_per_s: steady.disk.zip(end.disk).map(|(a, b)| b.saturating_sub(a) as f64 / secs),
    }))
}

/// What a launcher does: burst begins (`Some(fg pid)`) or ends (`None`), over the socket or
/// through `forefront agent fg` as a separate process.
fn launcher_call(plan: &Plan, socket: &Path, burst_for: Option<i32>) -> Result<(), BenchError> {
    use forefront_agent::proto::Request;
    match plan.launcher {
        Launcher::Socket => {
            let req = match burst_for {
                Some(pid) => Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst: true },
                None => Request::BurstEnd {},
            };
            let r = forefront_agent::control::request(socket, &req).map_err(|e| BenchError::Step(e.to_string()))?;
            if !r.ok {
                return Err(BenchError::Step(format!("agent refused {req:?}: {}", r.error.unwrap_or_default())));
            }
            Ok(())
        }
        Launcher::Cli => {
            let pid = burst_for.map(|p| p.to_string());
            let args: Vec<&str> = match &pid {
                Some(p) => vec![p, "--burst"],
                None => vec!["--burst-end"],
            };
            let out = Command::new(&plan.exe)
                .args(["agent", "fg"])
                .args(&args)
                .arg("--socket")
                .arg(socket)
                .stdin(Stdio::null())
                .output()
                .map_err(|source| BenchError::Spawn { what: "forefront agent fg".into(), source })?;
            if !out.status.success() {
                return Err(BenchError::Step(format!(
                    "forefront agent fg {args:?}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            Ok(())
        }
    }
}

/// The child side of a foreground operation: says `ready`, waits for a line, runs, reports.
/// `--fg replay` reads and checks its trace before it says `ready`.
pub fn op_child(fg: Fg, dir: &Path, seq: u64, trace: Option<&Path>, think: bool) -> Result<(), BenchError> {
    let app = App { dir: dir.into() };
    let trace = match (fg, trace) {
        (Fg::Replay, Some(t)) => Some(crate::replay::load(t).map_err(|e| BenchError::Step(e.to_string()))?),
        (Fg::Replay, None) => return Err(BenchError::Step("--fg replay needs --trace FILE".into())),
        _ => None,
    };
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    let step = |e: std::io::Error| BenchError::Step(e.to_string());
    // Opened before `ready`, so that opening it is not in the operation's time.
    let clock = TaskClock::open();
    writeln!(o, "ready").map_err(step)?;
    o.flush().map_err(step)?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(step)?;
    let t0 = Instant::now();
    let cpu0 = OpCpu::now_with(clock.as_ref());
    let r = match fg {
        Fg::Launch => crate::ops::launch(&app),
        Fg::Switch => crate::ops::switch(&app, seq),
        Fg::Replay => {
            let t = trace.as_ref().expect("loaded above");
            crate::replay::replay(t, dir, &crate::replay::Replay { think, seed: seq })
                .map_err(|e| crate::fixture::FixtureError::Io { path: dir.into(), source: std::io::Error::other(e) })
        }
    };
    match r {
        Ok(bytes) => {
            let ms = t0.elapsed().as_secs_f64() * 1000.0;
            writeln!(o, "{}", OpCpu::done_line(ms, bytes, OpCpu::now_with(clock.as_ref()).since(cpu0))).map_err(step)?
        }
        Err(e) => writeln!(o, "error {e}").map_err(step)?,
    }
    o.flush().map_err(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operations_cpu_time_goes_through_its_done_line() {
        let c = OpCpu { total_ms: 41.25, user_ms: 12.0, sys_ms: 28.0, on_cpu_ms: None };
        let line = OpCpu::done_line(45.5, 123, c);
        assert_eq!(line, "done 45.500 123 cpu 41.250 12.000 28.000");
        assert_eq!(OpCpu::parse_done(&line), Some(c));
        let c = OpCpu { on_cpu_ms: Some(20.5), ..c };
        let line = OpCpu::done_line(45.5, 123, c);
        assert_eq!(line, "done 45.500 123 cpu 41.250 12.000 28.000 oncpu 20.500");
        assert_eq!(OpCpu::parse_done(&line), Some(c));
        assert_eq!(OpCpu::parse_done("done 1 2 cpu 3 1 2 oncpu x").and_then(|c| c.on_cpu_ms), None, "a damaged time on a CPU");
        // An older helper's line, or a damaged one: no CPU time, not a zero.
        for old in ["done 45.500 123", "done 45.500 123 cpu 1.0 x 2.0", "done 1 2 cpu 1 2"] {
            assert_eq!(OpCpu::parse_done(old), None, "{old}");
        }
    }

    #[test]
    fn an_operations_cpu_time_counts_its_work_and_not_its_sleep() {
        // The process's CPU clock counts every thread of it, as it should for an operation's
        // process; here the other tests' threads would count too, so this test measures in a
        // process of its own: the test binary again, running only this test.
        const CHILD: &str = "FF_BENCH_OP_CPU_CHILD";
        if std::env::var_os(CHILD).is_none() {
            let out = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "runner::tests::an_operations_cpu_time_counts_its_work_and_not_its_sleep"])
                .args(["--test-threads", "1", "--nocapture"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
            return;
        }
        let t0 = OpCpu::now();
        std::thread::sleep(Duration::from_millis(30));
        let slept = OpCpu::now().since(t0);
        let t1 = OpCpu::now();
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let spun = OpCpu::now().since(t1);
        // A spin loop may be preempted on a busy machine: at least a third of its wall time.
        assert!(spun.total_ms >= 10.0 && spun.total_ms > slept.total_ms + 5.0, "slept {slept:?}, spun {spun:?}");
        assert!(slept.total_ms < 5.0, "{slept:?}");
        // perf's task clock, the same way (where the kernel allows it: skipped with a message).
        let Some(clock) = TaskClock::open() else {
            eprintln!("SKIPPED the task-clock half: perf_event_open refused (perf_event_paranoid, seccomp)");
            return;
        };
        let t0 = OpCpu::now_with(Some(&clock));
        std::thread::sleep(Duration::from_millis(30));
        let slept = OpCpu::now_with(Some(&clock)).since(t0);
        let t1 = OpCpu::now_with(Some(&clock));
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let spun = OpCpu::now_with(Some(&clock)).since(t1);
        let (slept, spun) = (slept.on_cpu_ms.expect("a task clock"), spun.on_cpu_ms.expect("a task clock"));
        assert!(slept < 5.0 && spun >= 10.0, "task clock: slept {slept} ms, spun {spun} ms");
    }

    #[test]
    fn a_modes_cpu_time_is_the_mean_of_its_operations() {
        let s = |cpu: Option<OpCpu>| Sample {
            fg_ms: 1.0,
            bg_bytes_per_s: None,
            bg_window_bytes_per_s: None,
            burst_call_ms: None,
            disk_bytes_per_s: None,
            disk_window_bytes_per_s: None,
            cpu,
            dropped_at: None,
            window_at: Instant::now(),
            op_at: Instant::now(),
            end_at: Instant::now(),
        };
        let c = |t: f64, u: f64| Some(OpCpu { total_ms: t, user_ms: u, sys_ms: t - u, on_cpu_ms: None });
        let m = mean_cpu(&[s(c(40.0, 4.0)), s(None), s(c(50.0, 8.0))]).unwrap();
        assert_eq!(m, OpCpu { total_ms: 45.0, user_ms: 6.0, sys_ms: 39.0, on_cpu_ms: None });
        // The time on a CPU over the operations that measured it.
        let on = |t: f64, o: f64| Some(OpCpu { on_cpu_ms: Some(o), ..c(t, 1.0).unwrap() });
        let m = mean_cpu(&[s(on(40.0, 20.0)), s(c(50.0, 1.0)), s(on(60.0, 30.0))]).unwrap();
        assert_eq!((m.total_ms, m.on_cpu_ms), (50.0, Some(25.0)));
        assert_eq!(mean_cpu(&[s(None)]), None);
    }

    const KEPT: BgLife = BgLife::Kept { per_round: 5, gap_ms: 4000 };

    fn per_mode(blocks: &[Block]) -> BTreeMap<Mode, usize> {
        let mut m = BTreeMap::new();
        for b in blocks.iter().filter(|b| !b.warmup) {
            *m.entry(b.mode).or_default() += b.samples;
        }
        m
    }

    #[test]
    fn kept_background_runs_rounds_of_per_round_start_ups_modes_rotating_as_the_suite() {
        let modes = [Mode::Bfq, Mode::AgentBfq];
        let s = schedule(&modes, 10, KEPT);
        // ITER=5 ROUNDS=2: round 0 bfq then agent, round 1 agent then bfq (ssuite cell's rotation).
        let got: Vec<(usize, Mode, usize)> = s.iter().map(|b| (b.round, b.mode, b.samples)).collect();
        assert_eq!(got, [(0, Mode::Bfq, 5), (0, Mode::AgentBfq, 5), (1, Mode::AgentBfq, 5), (1, Mode::Bfq, 5)]);
        assert!(s.iter().all(|b| !b.warmup), "the suite has no warm-up");
    }

    #[test]
    fn kept_background_puts_the_remainder_in_the_last_round_and_every_mode_gets_runs() {
        let modes = [Mode::Baseline, Mode::Bfq, Mode::AgentBfq];
        for runs in 1..=23 {
            for per_round in 1..=7 {
                let s = schedule(&modes, runs, BgLife::Kept { per_round, gap_ms: 0 });
                assert!(per_mode(&s).values().all(|&n| n == runs), "runs {runs} per_round {per_round}: {s:?}");
                let rounds = runs.div_ceil(per_round);
                assert_eq!(s.len(), rounds * modes.len());
                assert!(s.iter().all(|b| b.samples >= 1 && b.samples <= per_round));
                // Each round holds every mode once, all with the same count.
                for r in 0..rounds {
                    let in_r: Vec<&Block> = s.iter().filter(|b| b.round == r).collect();
                    let mut ms: Vec<Mode> = in_r.iter().map(|b| b.mode).collect();
                    ms.sort();
                    assert_eq!(ms, [Mode::Baseline, Mode::Bfq, Mode::AgentBfq]);
                    assert!(in_r.iter().all(|b| b.samples == in_r[0].samples));
                    // The order rotates by one each round: the round's first mode is modes[r % k].
                    assert_eq!(in_r[0].mode, modes[r % modes.len()]);
                }
            }
        }
        let s = schedule(&modes, 7, BgLife::Kept { per_round: 5, gap_ms: 0 });
        assert_eq!(s.iter().map(|b| b.samples).collect::<Vec<_>>(), [5, 5, 5, 2, 2, 2]);
    }

    #[test]
    fn per_sample_background_keeps_its_warm_up_pass_and_one_sample_blocks() {
        let modes = [Mode::Alone, Mode::Bfq];
        let s = schedule(&modes, 3, BgLife::PerSample);
        let got: Vec<(usize, Mode, bool)> = s.iter().map(|b| (b.round, b.mode, b.warmup)).collect();
        assert_eq!(
            got,
            [
                (0, Mode::Alone, true),
                (0, Mode::Bfq, true),
                (1, Mode::Bfq, false),
                (1, Mode::Alone, false),
                (2, Mode::Alone, false),
                (2, Mode::Bfq, false),
                (3, Mode::Bfq, false),
                (3, Mode::Alone, false),
            ]
        );
        assert!(s.iter().all(|b| b.samples == 1));
        assert!(per_mode(&s).values().all(|&n| n == 3));
    }

    #[test]
    fn the_pause_after_a_start_up_is_the_suites_two_seconds_below_two_seconds_only() {
        assert_eq!(post_pause(4000, Duration::from_millis(150)), Duration::from_secs(2));
        assert_eq!(post_pause(4000, Duration::from_millis(2500)), Duration::ZERO);
        assert_eq!(post_pause(200, Duration::from_millis(150)), Duration::from_millis(100));
        assert_eq!(post_pause(0, Duration::from_millis(150)), Duration::ZERO);
    }

    #[test]
    fn bg_life_serialises_with_its_kind() {
        assert_eq!(serde_json::to_value(BgLife::PerSample).unwrap(), serde_json::json!({"kind": "per-sample"}));
        assert_eq!(serde_json::to_value(KEPT).unwrap(), serde_json::json!({"kind": "kept", "per_round": 5, "gap_ms": 4000}));
    }
}
