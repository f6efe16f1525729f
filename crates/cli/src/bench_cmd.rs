//! `forefront bench`: foreground launch/switch latency under real background load, compared
//! across modes (alone, baseline, agent, bfq, ionice-idle) on this machine.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use forefront_agent::config::Config;
use forefront_bench::runner::{self, Bg, Fg, Mode, Plan, Progress};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Time the foreground operation in each mode, interleaved by round; caches are dropped
    /// before every operation. The background is restarted for every operation (after one
    /// discarded warm-up pass) or, for --fg replay and the fio-style backgrounds, kept running
    /// across a round's start-ups as the S suite keeps it. Needs root.
    #[command(after_help = "Examples (docs/agent.md):\n  \
        forefront bench run --fg launch --bg update --runs 15\n  \
        forefront bench run --fg replay --trace S/comm_startup_lat/xterm.trace --bg fio-rw --bg-procs 5 \\\n      \
        --bg-file-mib 500 --ramp-ms 8000 --runs 10 --mode bfq --mode agent-bfq\n\n\
        The second is the S suite's comm_startup_lat method (BFQ's authors' benchmark): the xterm start-up's \
        I/O replayed under 5 fio-style sequential readers and 5 writers on the same file system, the background \
        started once per round and mode and 5 start-ups (--per-round) timed in its steady state, --gap-ms apart \
        (--bg-restart: restarted for every start-up).\n\n\
        Modes: alone (no background), baseline (background, stock settings), agent (the real \
        `forefront agent run` with its default config, told over its socket — or with --launcher cli by \
        `forefront agent fg PID --burst` / `--burst-end` — around the operation), agent-bfq (the same with BFQ on \
        the disk), bfq (BFQ on the disk), ionice-idle (BFQ + background in the idle I/O class).\n\n\
        Each mode's median comes with its distribution-free 95 % interval (order statistics; from 6 runs up), \
        the workers' own MB/s and the disk's (/sys/block/DEV/stat, as iostat). Before each sample (each round \
        and mode with a kept background) the page cache's copy cost is probed on a 32 MiB file of its own \
        (~70 ms, synced before the sample): the report's copy_probes, whose medians bench predict takes for \
        the simulator's copy costs (docs/twin.md, twin27).")]
    Run(RunArgs),
    /// Measure this machine's disk through the kernel (O_DIRECT on a scratch file of the file
    /// system under test) and write a device file the simulator loads, every figure with its
    /// spread over the repetitions and its provenance (host, kernel, date). Needs root.
    #[command(after_help = "Example (docs/twin.md):\n  \
        forefront bench calibrate -o this-vm.toml\n  \
        forefront sim run launch-update --device this-vm.toml\n\n\
        Measures 4 KiB and 1 MiB sequential and 4 KiB random reads and writes at queue depth 1 and at \
        depth (the device's queue depth from sysfs, at most 32 threads), the cost of a cache flush \
        (fdatasync), of a FUA write (O_DSYNC), of a discard (FITRIM of a punched hole) and the CPU's \
        cost of a page-cache copy (buffered write()s and read()s of a cached file: copy_write_page_us \
        and copy_read_page_us, which `bench predict` gives the simulated write()s and read()s, and \
        their mean copy_page_us) and of a page's allocation (write()s over the file's pages just dropped \
        from the cache, beyond the copy: alloc_page_us, which `bench predict` also passes on) and of \
        a dirty page's write-back (the thread's CPU time in an fdatasync of 32 MiB of dirty pages, per \
        page: writeback_page_us, passed on too), and on a VM whose balloon reports free pages to its \
        host, the host's reclaim of free memory (step `host`: a 768 MiB file dropped and rewritten \
        once reporting has settled: host_reclaim_page_us, _reserve_mib, _pass_mib, _interval_ms, \
        and dropped and read cold the same way: host_reclaim_read_page_us, a read's page, twin28; \
        and the free blocks below the reporting order just after the drop, from /proc/buddyinfo: \
        host_free_order0_kib .. (small folios are cut from them first, twin29); \
        which `bench predict` models; docs/twin.md, twin24), and the folio the file system caches a \
        sequential read in (step `folio`: POSIX_FADV_DONTNEED over aligned ranges of each size of a \
        64 MiB file just read: dontneed_folio_kib, the uploaders' per-chunk drop in `bench predict`; \
        twin25). The table printed gives each figure's \
        median, min and max over --reps repetitions.")]
    Calibrate(CalibrateArgs),
    /// Predict a saved `bench run --format json` with the simulator: the same workload on a
    /// calibrated device in the same modes, printed beside what was measured.
    #[command(after_help = "Example (docs/twin.md):\n  \
        forefront bench run --fg launch --bg update --runs 5 --format json > update.json\n  \
        forefront bench calibrate -o this-vm.toml\n  \
        forefront bench predict update.json --device this-vm.toml\n\n\
        The page cache, CPUs, read-ahead, nr_requests, max_sectors_kb, write-back settings and the kernel's \
        preemption model are this machine's (sysfs, /proc/sys/vm, the kernel's configuration; --preempt overrides the last). The file system of the report's work directory is reported \
        (JSON `fs`), and an ext4 without a journal is simulated as one (the table says so). \
        Modes the simulator cannot express yet print why instead of a number.")]
    Predict(PredictArgs),
    /// (internal) One foreground operation: prints `ready`, waits for a line, runs, prints `done MS BYTES`.
    #[command(hide = true)]
    Op {
        #[arg(long, value_enum)]
        fg: FgArg,
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 0)]
        seq: u64,
        #[arg(long)]
        trace: Option<PathBuf>,
        #[arg(long)]
        think: bool,
    },
    /// (internal) One background worker; runs until killed.
    #[command(hide = true)]
    Worker {
        #[arg(long, value_enum)]
        bg: WorkerArg,
        #[arg(long)]
        file: PathBuf,
        /// seq-write: the bytes of each pass.
        #[arg(long, default_value_t = 1 << 30)]
        len: u64,
        /// seq-write: overwrite the existing file instead of creating it.
        #[arg(long)]
        overwrite: bool,
        #[arg(long)]
        ioprio_idle: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum FgArg {
    /// Cold read of the app's files, open its SQLite database, a few queries.
    Launch,
    /// Save state (256 KiB) and a photo (4 MiB) with fsync, 20 SQLite transactions.
    Switch,
    /// Replay a real application's start-up I/O from --trace FILE (the S suite's
    /// comm_startup_lat format and replay method: O_DIRECT reads, one thread per traced process,
    /// read-ahead submitted asynchronously).
    Replay,
}

/// (internal) The job of one `bench worker`.
#[derive(Clone, Copy, ValueEnum)]
enum WorkerArg {
    Update,
    Copy,
    Upload,
    SeqRead,
    SeqWrite,
    SyncLoop,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum BgArg {
    /// Large sequential overwrites with an fsync every 32 MiB.
    Update,
    /// The same writes with no fsync (a copy, an unpacked update): written back by the
    /// kernel's flusher threads, which no cgroup v1 knob reaches.
    Copy,
    /// Large sequential reads (dropped from the cache as they go).
    Upload,
    /// Half the processes update, half upload (readers + writers).
    Mixed,
    /// No background workload.
    None,
    /// The S suite's readers: --bg-procs fio-style sequential readers (4 KiB buffered reads of
    /// a --bg-file-mib file, its cache dropped each pass).
    FioRead,
    /// The S suite's writers: --bg-procs fio-style sequential writers (4 KiB buffered writes
    /// over a fresh --bg-file-mib file, no fsync) and its `sync` every 2 s.
    FioWrite,
    /// --bg-procs fio-style readers and as many writers (2 × --bg-procs workers) and the
    /// `sync` loop: the S suite's "N readers + N writers".
    FioRw,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum ModeArg {
    Alone,
    Baseline,
    Agent,
    Bfq,
    IoniceIdle,
    /// The agent with BFQ on the disk (the S suite's agent mode).
    AgentBfq,
}

#[derive(Clone, Copy, ValueEnum)]
enum LauncherArg {
    Socket,
    Cli,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
}

#[derive(Args)]
struct RunArgs {
    #[arg(long, value_enum, default_value = "launch")]
    fg: FgArg,
    #[arg(long, value_enum, default_value = "update")]
    bg: BgArg,
    /// The S-suite start-up trace to replay (--fg replay), e.g. the suite's
    /// comm_startup_lat/xterm.trace; it is read, not copied.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// --fg replay: sleep the trace's think times before its requests (the S suite's replayer
    /// does not).
    #[arg(long)]
    think: bool,
    /// --bg fio-write / fio-rw: the writers overwrite files the bench writes beforehand instead
    /// of creating theirs at each start-up's start (the S suite's steady state once its writers'
    /// first pass is done; the suite itself creates them once per run).
    #[arg(long)]
    fio_overwrite: bool,
    /// Restart the background (and the mode: the agent) for every sample, after one discarded
    /// warm-up pass, each operation --ramp-ms after the background's start — the default for the
    /// project's own backgrounds (what `bench predict` simulates). Without it, --fg replay and
    /// the fio-style backgrounds keep the background running across a round's start-ups, as the
    /// S suite does (--per-round, --gap-ms).
    #[arg(long)]
    bg_restart: bool,
    /// --fg replay / fio-style backgrounds (kept background): start-ups per (round, mode) — the
    /// S suite's ITER. The background starts once per round and mode; --runs start-ups per mode
    /// in all, in ceil(runs / per-round) rounds, the modes' order rotated every round.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    per_round: u32,
    /// --fg replay / fio-style backgrounds (kept background): the pause before each start-up's
    /// cache drop (ms; the S suite's `sleep 3; sleep 1`); a start-up shorter than 2 s is
    /// followed by min(2 s, gap / 2) more (the suite's `sleep 2`).
    #[arg(long, default_value_t = 4000, value_parser = clap::value_parser!(u64).range(0..=600_000))]
    gap_ms: u64,
    /// Measured repetitions per mode (≥ 15 for a table you report; ≥ 6 for a 95 % interval of
    /// the median).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Modes to compare (repeat the flag); default: all five.
    #[arg(long = "mode", value_enum)]
    modes: Vec<ModeArg>,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// File system to run on: a work directory is created inside and removed afterwards.
    #[arg(long, default_value = "/var/tmp")]
    dir: PathBuf,
    /// Run on an ext4 image on a loop device instead of --dir: the image is made (fully
    /// written) and formatted if absent, and removed afterwards if it was made.
    #[arg(long, value_name = "FILE", conflicts_with = "dir")]
    loop_image: Option<PathBuf>,
    /// Size of a new --loop-image (MiB).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..=1_048_576))]
    loop_mib: u64,
    /// How the bench tells the agent that a burst begins and ends (agent mode): over the
    /// control socket, as a resident launcher would, or by running `forefront agent fg`.
    #[arg(long, value_enum, default_value = "socket")]
    launcher: LauncherArg,
    /// Agent mode: TOML added to the agent's default configuration — the knob under test
    /// (e.g. `[pause]\nenabled = false`); any section but `[agent]` and `[scope]`, which the
    /// bench writes. The report keeps it.
    #[arg(long, value_name = "FILE")]
    agent_config: Option<PathBuf>,
    /// Keep the work directory.
    #[arg(long)]
    keep: bool,
    /// Background processes (--bg fio-rw: readers, and as many writers).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=16))]
    bg_procs: u32,
    /// Size of each background process's file (MiB).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(8..=65536))]
    bg_file_mib: u64,
    /// How long the background runs before the foreground operation starts (ms); with a kept
    /// background (--fg replay, fio-style backgrounds), before the first start-up's gap of
    /// each round (the S suite's `transitory_duration`: 8 s on BFQ on the VM of docs/agent.md).
    #[arg(long, default_value_t = 1500)]
    ramp_ms: u64,
    /// After the run, predict it with the simulator on this device (a `bench calibrate` file)
    /// and print measured beside predicted (as `bench predict` does with a saved run).
    #[arg(long, value_name = "DEVICE")]
    predict: Option<String>,
    /// Size of the app's code and resource files (MiB).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..=4096))]
    app_mib: u64,
}

#[derive(Args)]
struct PredictArgs {
    /// A saved `forefront bench run --format json`.
    saved: PathBuf,
    #[command(flatten)]
    p: PredictOpts,
}

#[derive(Args)]
struct PredictOpts {
    /// The device to simulate: a `bench calibrate` file (or any device name or file).
    #[arg(long = "device", value_name = "DEVICE")]
    device: String,
    /// Launches simulated per mode.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    launches: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also write each simulated mode's Perfetto / Chrome trace-event JSON as DIR/MODE.json
    /// (requests per queue with their time in the scheduler and at the device, syscalls per
    /// thread, tasks per CPU: `sim run --trace-out`'s export). DIR is created if missing.
    #[arg(long, value_name = "DIR")]
    trace_out: Option<PathBuf>,
    /// With --trace-out: overwrite trace files that exist.
    #[arg(long, requires = "trace_out")]
    force: bool,
    /// The kernel's preemption model to simulate: `auto` reads this machine's (debugfs's
    /// `sched/preempt`, else `preempt=` and the kernel's configuration); `none`: a woken task
    /// waits for the running one's system call to end; `full`: it preempts at once.
    #[arg(long, value_enum, default_value = "auto")]
    preempt: PreemptArg,
    /// The fair scheduler to simulate: `auto` (the default) reads this kernel's: EEVDF from
    /// Linux 6.6, with its release's base slice and `CONFIG_HZ`'s tick, else CFS; `eevdf`
    /// forces that model (0.70 ms and 4 ms where the figures cannot be read); `cfs` the
    /// simulator's CFS (the model of the twin tables before twin22). Traced on the VM of
    /// docs/twin.md (twin22), the EEVDF model's launch waits for a CPU 0.6-1.05x as long as
    /// the kernel's behind `copy`, `upload` and `mixed` workers (CFS's 0.06-0.33x); behind the
    /// updaters EEVDF's waited 3x (CFS 2x) until the calibration measured the write-back's CPU
    /// cost (`writeback_page_us`, twin23: 1.3-2.6x).
    #[arg(long, value_enum, default_value = "auto")]
    fair: FairArg,
    /// How the bench's processes are grouped for the CPU: `auto` reads this process's (its cpu
    /// cgroup, else its session's autogroup when `kernel.sched_autogroup_enabled` is 1, else
    /// the root group); `autogroup`: one task group in which the launch competes with each
    /// worker as a task; `root`: every task at the top level beside the kernel threads;
    /// `android`: the phones' foreground and background groups at equal weights (the model of
    /// the twin tables before twin14, docs/twin.md).
    #[arg(long, value_enum, default_value = "auto")]
    cpu_groups: CpuGroupsArg,
    /// The foreground operation's own CPU work per operation (ms), instead of the `alone`
    /// mode's measured user time (`op_cpu_ms` in the report: the user share of its time on a
    /// CPU where perf's task clock was recorded, else its user time; reports from before it, or
    /// without `alone`, use the assumption: 10 ms a launch, 5 ms a switch).
    #[arg(long, value_name = "MS", value_parser = app_cpu_ms)]
    app_cpu_ms: Option<f64>,
    /// Also predict each mode with every calibrated figure of the device (and the page-copy
    /// costs) at the slowest and at the fastest of its repetitions (the `[provenance]` fields'
    /// `min` and `max`): how far the calibration's own noise moves the prediction. Needs a
    /// `bench calibrate` file; three times the simulation.
    #[arg(long)]
    band: bool,
    /// Simulate each mode's samples one after another at its own period, as before twin26,
    /// even where the report records the order the bench took them in (`timeline`): by
    /// default a mode's simulation follows that order, the other modes' samples as unmeasured
    /// drops and launches at their measured times (docs/twin.md, twin26).
    #[arg(long)]
    no_timeline: bool,
    /// Take the page-copy costs from the device file's calibration even where the report
    /// carries the run's own probes of them (`copy_probes`, from twin27 on): by default their
    /// medians are the simulator's copy costs, since on a VM the copy's cost moves from minute
    /// to minute and a calibration minutes before a run need not describe it (docs/twin.md,
    /// twin27).
    #[arg(long)]
    calibrated_copy: bool,
    /// Replay the host's free page reporting passes the run measured (`reporting_passes`, from
    /// twin27 on), each at its time with the MiB it reported, instead of the model's schedule
    /// of passes from the calibration: a control for the rest of the model, which then meets
    /// the passes where the real samples met them (docs/twin.md, twin27). Needs a report with
    /// its timeline and passes, and a device file with the host's figures.
    #[arg(long)]
    measured_passes: bool,
}

/// `--cpu-groups` of `bench predict`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum CpuGroupsArg {
    Auto,
    Autogroup,
    Root,
    Android,
}

/// `--fair` of `bench predict`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum FairArg {
    Auto,
    Cfs,
    Eevdf,
}

/// `--preempt` of `bench predict`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PreemptArg {
    Auto,
    None,
    Full,
}

#[derive(Args)]
struct CalibrateArgs {
    /// The device file to write (TOML; `forefront sim run … --device FILE` loads it).
    #[arg(short, long, value_name = "FILE")]
    out: PathBuf,
    /// Overwrite --out if it exists.
    #[arg(long)]
    force: bool,
    /// File system to measure: a work directory holding the scratch file is created inside
    /// and removed afterwards.
    #[arg(long, default_value = "/var/tmp")]
    dir: PathBuf,
    /// Measure on an ext4 image on a loop device instead of --dir (made and removed as by
    /// `bench run --loop-image`).
    #[arg(long, value_name = "FILE", conflicts_with = "dir")]
    loop_image: Option<PathBuf>,
    /// Size of a new --loop-image (MiB).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..=1_048_576))]
    loop_mib: u64,
    /// Repetitions of every measurement (the spread reported is their range).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=100))]
    reps: u32,
    /// Size of the scratch file: the span of the random accesses (MiB).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(64..=65536))]
    file_mib: u64,
    /// 4 KiB random operations per measurement at depth 1 (four times as many at depth).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(20..=100_000))]
    ops: u32,
    /// Threads of the measurements at depth (default: the queue depth from sysfs, at most 32).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32))]
    depth: Option<u32>,
    /// The device's name in the file (default: HOST-DISK).
    #[arg(long)]
    name: Option<String>,
    /// An earlier calibration's device file to compare with: every figure measured in both
    /// must differ by no more than the larger of the two spreads (the repeatability check of
    /// docs/twin.md). The new file is written either way; the exit code is 1 when a figure
    /// disagrees. Meaningful on a quiet machine only: other work between the two runs moves
    /// the figures by more than the repetitions of one run see.
    #[arg(long, value_name = "FILE")]
    check_against: Option<PathBuf>,
    /// The I/O scheduler to measure under (e.g. `mq-deadline`, the bench's `baseline`): set on
    /// the disk for the calibration and the original put back afterwards, also on an error or
    /// an interrupt. Default: the one the disk has (the small reads behind large transfers of
    /// step `under-load` depend on it).
    #[arg(long, value_name = "NAME")]
    scheduler: Option<String>,
}

fn run_calibrate(a: CalibrateArgs) -> anyhow::Result<ExitCode> {
    use forefront_bench::calibrate::{self, CalPlan, CalProgress};
    // Refused now (exists without --force, not a file; an unreadable --check-against), not
    // after minutes of measuring.
    let earlier = match &a.check_against {
        Some(p) => Some(
            forefront_workload::load_device(&p.to_string_lossy()).with_context(|| format!("--check-against {}", p.display()))?,
        ),
        None => None,
    };
    if let Some(e) = &earlier {
        if e.provenance.is_none() {
            anyhow::bail!(
                "--check-against {}: not a calibration (no [provenance] with measured figures)",
                a.check_against.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
            );
        }
    }
    let mut out = crate::output::OutputFile::create(&a.out, a.force, &[])?;
    forefront_bench::interrupt::install()?;
    let loopfs = match &a.loop_image {
        Some(img) => Some(forefront_bench::loopdev::LoopFs::create(img, a.loop_mib)?),
        None => None,
    };
    let plan = CalPlan {
        dir: loopfs.as_ref().map(|l| l.dir().to_path_buf()).unwrap_or(a.dir.clone()),
        file_bytes: a.file_mib << 20,
        reps: a.reps,
        ops: a.ops as usize,
        depth: a.depth.map(|d| d as usize),
        name: a.name.clone(),
        scheduler: a.scheduler.clone(),
    };
    let (tty, bar) = progress_bar();
    let result = calibrate::calibrate(&plan, &mut |p| match p {
        CalProgress::Setup(what) => {
            if tty {
                bar.set_message(what.to_owned())
            } else {
                eprintln!("calibrate: {what}")
            }
        }
        CalProgress::Start { total } => {
            start_bar(&bar, total);
        }
        CalProgress::Step { rep, step } => {
            bar.inc(1);
            let line = format!("rep {} {step}", rep + 1);
            if tty {
                bar.set_message(line)
            } else {
                eprintln!("calibrate: {line}")
            }
        }
    });
    bar.finish_and_clear();
    drop(loopfs);
    let cal = match result {
        Ok(c) => c,
        Err(runner::BenchError::Interrupted) => {
            eprintln!("calibrate: interrupted: the scratch file and any loop image were removed");
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(e.into()),
    };
    out.file().write_all(cal.to_toml().as_bytes()).with_context(|| format!("writing {}", a.out.display()))?;
    out.commit()?;
    let mut text = calibrate::table(&cal);
    text.push_str(&format!("device file: {}\n", a.out.display()));
    let mut code = ExitCode::SUCCESS;
    if let (Some(e), Some(p)) = (&earlier, &a.check_against) {
        let d = calibrate::disagreements(e, &cal.device);
        if d.is_empty() {
            text.push_str(&format!("repeatability: every figure agrees with {} within its spread\n", p.display()));
        } else {
            text.push_str(&format!("repeatability: {} figure(s) differ from {} beyond their spread:\n", d.len(), p.display()));
            for x in &d {
                text.push_str(&format!("  {x}\n"));
            }
            code = ExitCode::from(1);
        }
    }
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(code)
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        BenchCommand::Op { fg, dir, seq, trace, think } => {
            forefront_bench::interrupt::die_with_parent()?;
            let name = match fg {
                FgArg::Launch => "ff-op-launch",
                FgArg::Switch => "ff-op-switch",
                FgArg::Replay => "ff-op-replay",
            };
            forefront_bench::interrupt::set_process_name(name)?;
            runner::op_child(fg_of(fg), &dir, seq, trace.as_deref(), think)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Worker { bg, file, len, overwrite, ioprio_idle } => {
            forefront_bench::interrupt::die_with_parent()?;
            let name = match bg {
                WorkerArg::Update => "ff-bg-update",
                WorkerArg::Copy => "ff-bg-copy",
                WorkerArg::Upload => "ff-bg-upload",
                WorkerArg::SeqRead => "ff-bg-seq-read",
                WorkerArg::SeqWrite => "ff-bg-seq-write",
                WorkerArg::SyncLoop => "ff-bg-sync-loop",
            };
            forefront_bench::interrupt::set_process_name(name)?;
            if ioprio_idle {
                forefront_sysfs::ioprio::set(0, forefront_sysfs::ioprio::IoPrio::IDLE)?;
            }
            match bg {
                WorkerArg::Update => forefront_bench::ops::update_forever(&file)?,
                WorkerArg::Copy => forefront_bench::ops::copy_forever(&file)?,
                WorkerArg::Upload => forefront_bench::ops::upload_forever(&file)?,
                WorkerArg::SeqRead => forefront_bench::ops::seq_read_forever(&file)?,
                WorkerArg::SeqWrite => forefront_bench::ops::seq_write_forever(&file, len, overwrite)?,
                WorkerArg::SyncLoop => forefront_bench::ops::sync_loop_forever(),
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Run(a) => run_bench(a),
        BenchCommand::Calibrate(a) => run_calibrate(a),
        BenchCommand::Predict(a) => {
            let text = std::fs::read_to_string(&a.saved).with_context(|| format!("reading {}", a.saved.display()))?;
            let saved: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("{}: not JSON", a.saved.display()))?;
            let out = predict_report(&a.saved.display().to_string(), &saved, &a.p)?;
            std::io::stdout().lock().write_all(out.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn fg_of(fg: FgArg) -> Fg {
    match fg {
        FgArg::Launch => Fg::Launch,
        FgArg::Switch => Fg::Switch,
        FgArg::Replay => Fg::Replay,
    }
}

fn run_bench(a: RunArgs) -> anyhow::Result<ExitCode> {
    match (a.fg, &a.trace) {
        (FgArg::Replay, None) => {
            bail!("--fg replay needs --trace FILE (an S-suite start-up trace, e.g. comm_startup_lat/xterm.trace)")
        }
        (FgArg::Replay, Some(t)) => {
            // Checked now, before any setup: a bad line is named with its file, line and field.
            forefront_bench::replay::load(t)?;
        }
        (_, Some(_)) => bail!("--trace is for --fg replay"),
        (_, None) => {}
    }
    let mut modes: Vec<Mode> = if a.modes.is_empty() {
        Mode::ALL.to_vec()
    } else {
        a.modes
            .iter()
            .map(|m| match m {
                ModeArg::Alone => Mode::Alone,
                ModeArg::Baseline => Mode::Baseline,
                ModeArg::Agent => Mode::Agent,
                ModeArg::Bfq => Mode::Bfq,
                ModeArg::IoniceIdle => Mode::IoniceIdle,
                ModeArg::AgentBfq => Mode::AgentBfq,
            })
            .collect()
    };
    modes.dedup();
    // From here on a signal ends the run through its cleanup (loop image, workers, agent, I/O
    // scheduler, work directory) instead of killing the process around it.
    forefront_bench::interrupt::install()?;
    let loopfs = match &a.loop_image {
        Some(img) => Some(forefront_bench::loopdev::LoopFs::create(img, a.loop_mib)?),
        None => None,
    };
    let bg = match a.bg {
        BgArg::Update => Bg::Update,
        BgArg::Copy => Bg::Copy,
        BgArg::Upload => Bg::Upload,
        BgArg::Mixed => Bg::Mixed,
        BgArg::None => Bg::None,
        BgArg::FioRead => Bg::FioRead,
        BgArg::FioWrite => Bg::FioWrite,
        BgArg::FioRw => Bg::FioRw,
    };
    let plan = Plan {
        fg: fg_of(a.fg),
        bg,
        runs: a.runs as usize,
        modes,
        dir: loopfs.as_ref().map(|l| l.dir().to_path_buf()).unwrap_or(a.dir),
        keep: a.keep,
        bg_procs: a.bg_procs as usize,
        bg_file_bytes: a.bg_file_mib << 20,
        ramp: Duration::from_millis(a.ramp_ms),
        app: forefront_bench::fixture::AppSpec { code_bytes: a.app_mib << 20, ..Default::default() },
        exe: std::env::current_exe()?,
        launcher: match a.launcher {
            LauncherArg::Socket => runner::Launcher::Socket,
            LauncherArg::Cli => runner::Launcher::Cli,
        },
        agent_extra: match &a.agent_config {
            None => String::new(),
            Some(p) => agent_extra(p)?,
        },
        trace: a.trace.clone(),
        replay_think: a.think,
        fio_overwrite: a.fio_overwrite,
        bg_life: if a.bg_restart || !(fg_of(a.fg) == Fg::Replay || bg.is_fio()) {
            runner::BgLife::PerSample
        } else {
            runner::BgLife::Kept { per_round: a.per_round as usize, gap_ms: a.gap_ms }
        },
    };
    let (tty, bar) = progress_bar();
    let result = runner::run(&plan, &mut |p| match p {
        Progress::Setup(what) => {
            if tty {
                bar.set_message(what.to_owned())
            } else {
                eprintln!("bench: {what}")
            }
        }
        Progress::Start { total } => {
            start_bar(&bar, total);
        }
        Progress::Sample { mode, rep, warmup, sample } => {
            bar.inc(1);
            let line = format!("{}rep {rep} {:<11} {:>8.1} ms", if warmup { "warm-up " } else { "" }, mode.name(), sample.fg_ms);
            if tty {
                bar.set_message(line)
            } else {
                eprintln!("bench: {line}")
            }
        }
    });
    bar.finish_and_clear();
    drop(loopfs);
    let report = match result {
        Ok(r) => r,
        Err(runner::BenchError::Interrupted) => {
            eprintln!("bench: {}", runner::BenchError::Interrupted);
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(e.into()),
    };
    let mut text = match a.format {
        Format::Table => forefront_bench::render::table(&report),
        Format::Json => forefront_bench::render::json(&report) + "\n",
    };
    if let Some(device) = &a.predict {
        let saved = serde_json::to_value(&report)?;
        let opts = PredictOpts {
            device: device.clone(),
            launches: 10,
            seed: 1,
            format: a.format,
            trace_out: None,
            force: false,
            preempt: PreemptArg::Auto,
            fair: FairArg::Auto,
            cpu_groups: CpuGroupsArg::Auto,
            app_cpu_ms: None,
            band: false,
            no_timeline: false,
            calibrated_copy: false,
            measured_passes: false,
        };
        let p = predict_report("this run", &saved, &opts)?;
        match a.format {
            Format::Table => text.push_str(&format!("\n{p}")),
            // One JSON document: the report with the prediction beside it.
            Format::Json => {
                let mut v = saved;
                v["prediction"] = serde_json::from_str(&p)?;
                text = serde_json::to_string_pretty(&v)? + "\n";
            }
        }
    }
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// This machine's kernel settings for the simulated twin (`disk`: the bench's block device;
/// `preempt`: the preemption model, or `auto` for this kernel's).
fn this_host(disk: &str, o: &PredictOpts) -> anyhow::Result<forefront_workload::bench::Host> {
    let (preempt, fair) = (o.preempt, o.fair);
    use forefront_sysfs::sched::TaskGroup;
    use forefront_sysfs::{block, vm};
    use forefront_workload::bench::Preempt;
    use forefront_workload::CpuGroups;
    let root = std::path::Path::new("/");
    let queue = root.join("sys/block").join(disk).join("queue");
    let num = |name: &str| -> anyhow::Result<u64> {
        let v = block::queue_attr(&queue, name)?;
        v.parse().with_context(|| format!("{}/{name}: not a number: {v:?}", queue.display()))
    };
    let wb = vm::writeback(root)?;
    let cache = vm::dirtyable_bytes(root)?;
    let pct = |bytes: u64, ratio: u64| if bytes > 0 { 100.0 * bytes as f64 / cache.max(1) as f64 } else { ratio as f64 };
    Ok(forefront_workload::bench::Host {
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        page_cache_mib: (cache >> 20).max(64),
        read_ahead_kib: num("read_ahead_kb")?,
        async_read_ahead: true,
        readahead_folio_kib: None,
        nr_requests: num("nr_requests")? as usize,
        max_request_kib: num("max_sectors_kb")?,
        dirty_background_ratio: pct(wb.background_bytes, wb.background_ratio),
        dirty_ratio: pct(wb.dirty_bytes, wb.dirty_ratio),
        dirty_expire_s: wb.expire_centisecs as f64 / 100.0,
        writeback_interval_s: wb.writeback_centisecs as f64 / 100.0,
        copy_page_us: None,
        copy_write_page_us: None,
        alloc_page_us: None,
        writeback_page_us: None,
        fs_journal: None,
        burst_call_ms: None,
        fg_compute_ms: None,
        host_reclaim: None,
        host_passes: vec![],
        preempt: match preempt {
            PreemptArg::None => Preempt::None,
            PreemptArg::Full => Preempt::Full,
            PreemptArg::Auto => {
                match forefront_sysfs::sched::preempt_model(root) {
                    Ok(p) if p.model.preempts_kernel_code() => Preempt::Full,
                    Ok(_) => Preempt::None,
                    Err(e) => {
                        eprintln!("bench predict: this kernel's preemption model is unknown ({e}); modelled as full (--preempt chooses)");
                        Preempt::Full
                    }
                }
            }
        },
        eevdf: {
            let found = forefront_sysfs::sched::fair_scheduler(root);
            match (fair, found) {
                (FairArg::Cfs, _) => None,
                (FairArg::Auto, Ok(f)) => f.eevdf.then_some((f.base_slice_ms, f.tick_ms)),
                (FairArg::Eevdf, Ok(f)) => Some((if f.eevdf { f.base_slice_ms } else { 0.70 }, f.tick_ms)),
                (FairArg::Eevdf, Err(e)) => {
                    eprintln!("bench predict: this kernel's EEVDF figures are unknown ({e}); modelled with a 0.70 ms base slice and a 4 ms tick");
                    Some((0.70, 4.0))
                }
                (FairArg::Auto, Err(e)) => {
                    eprintln!("bench predict: this kernel's fair scheduler is unknown ({e}); modelled as CFS (--fair chooses)");
                    None
                }
            }
        },
        cpu_groups: match o.cpu_groups {
            CpuGroupsArg::Autogroup => CpuGroups::Autogroup,
            CpuGroupsArg::Root => CpuGroups::Root,
            CpuGroupsArg::Android => CpuGroups::Android,
            CpuGroupsArg::Auto => {
                match forefront_sysfs::sched::task_group(root) {
                    Ok(TaskGroup::Autogroup | TaskGroup::Cgroup(_)) => CpuGroups::Autogroup,
                    Ok(TaskGroup::Root) => CpuGroups::Root,
                    Err(e) => {
                        eprintln!("bench predict: this process's task group is unknown ({e}); modelled as one group (--cpu-groups chooses)");
                        CpuGroups::Autogroup
                    }
                }
            }
        },
    })
}

/// One mode: its name, measured p50 and p90 (ms), measured background MB/s, the prediction.
type Row = (&'static str, f64, f64, Option<f64>, forefront_sim::twin::Predicted);

/// A row's predicted p50 (ms), if the mode ran.
fn predicted_p50(r: &Row) -> Option<f64> {
    match &r.4 {
        forefront_sim::twin::Predicted::Ran { fg_p50_ms, .. } => Some(*fg_p50_ms),
        forefront_sim::twin::Predicted::Unavailable { .. } => None,
    }
}

/// The modes' order by p50 where the measurement gives one: pairs whose medians' 95 %
/// intervals (the bench's `median_ci95`) do not overlap, faster first, each with whether the
/// prediction orders it the same; and the pairs within each other's noise (overlapping
/// intervals, or none recorded), whose measured order a second run may reverse (docs/twin.md,
/// twin26).
struct Pairs {
    ordered: Vec<(&'static str, &'static str, bool)>,
    agree: usize,
    ties: Vec<(&'static str, &'static str)>,
}

fn ordered_pairs(rows: &[Row], modes: &serde_json::Map<String, serde_json::Value>) -> Pairs {
    let ci = |m: &str| {
        let c = modes.get(m)?.get("median_ci95")?;
        Some((c.get("lo_ms")?.as_f64()?, c.get("hi_ms")?.as_f64()?))
    };
    let pred = predicted_p50;
    let mut out = Pairs { ordered: vec![], agree: 0, ties: vec![] };
    for (i, a) in rows.iter().enumerate() {
        for b in &rows[i + 1..] {
            let (Some(pa), Some(pb)) = (pred(a), pred(b)) else { continue };
            let (fast, slow, pf, ps) = if a.1 <= b.1 { (a, b, pa, pb) } else { (b, a, pb, pa) };
            match (ci(fast.0), ci(slow.0)) {
                (Some((_, fast_hi)), Some((slow_lo, _))) if fast_hi < slow_lo => {
                    let same = pf < ps;
                    out.agree += same as usize;
                    out.ordered.push((fast.0, slow.0, same));
                }
                _ => out.ties.push((fast.0, slow.0)),
            }
        }
    }
    out
}

/// The run's probes of the page copy (`copy_probes`; none in reports from before twin27).
fn copy_probes(what: &str, saved: &serde_json::Value) -> anyhow::Result<Vec<forefront_bench::calibrate::CopyProbe>> {
    let Some(v) = saved.get("copy_probes") else { return Ok(vec![]) };
    let probes: Vec<forefront_bench::calibrate::CopyProbe> =
        serde_json::from_value(v.clone()).with_context(|| format!("{what}: copy_probes"))?;
    if let Some((i, p)) = probes.iter().enumerate().find(|(_, p)| {
        !(p.write_page_us.is_finite() && p.write_page_us > 0.0 && p.read_page_us.is_finite() && p.read_page_us > 0.0)
    }) {
        bail!("{what}: copy_probes[{i}]: write_page_us {} and read_page_us {} must be positive", p.write_page_us, p.read_page_us);
    }
    Ok(probes)
}

/// Measured (a saved bench report, as JSON) beside predicted, as a table or JSON.
fn predict_report(what: &str, saved: &serde_json::Value, o: &PredictOpts) -> anyhow::Result<String> {
    use forefront_model::flash::SpreadEdge;
    use forefront_sim::twin::{predict, Predicted};
    use forefront_workload::bench::{AppSpec, BenchWorkload, Bg, Fg};
    let field =
        |k: &str| saved.get(k).ok_or_else(|| anyhow::anyhow!("{what}: no `{k}` (not a `bench run --format json` report?)"));
    let fg: Fg = serde_json::from_value(field("fg")?.clone()).with_context(|| format!("{what}: fg"))?;
    let bg: Bg = serde_json::from_value(field("bg")?.clone()).with_context(|| format!("{what}: bg"))?;
    let app: AppSpec = serde_json::from_value(field("app")?.clone()).with_context(|| format!("{what}: app"))?;
    let num = |k: &str| field(k).and_then(|v| v.as_u64().ok_or_else(|| anyhow::anyhow!("{what}: `{k}` is not a whole number")));
    // Reports from before `bg_file_bytes` was recorded ran with the 1 GiB default.
    let bg_file_bytes = saved.get("bg_file_bytes").and_then(|v| v.as_u64()).unwrap_or(1 << 30);
    // The order the bench took its samples in (twin26), where each had a background of its own.
    let per_sample = saved.get("bg_life").and_then(|l| l.get("kind")).and_then(|k| k.as_str()) == Some("per-sample");
    let timeline: Vec<forefront_workload::bench::BenchSample> = match saved.get("timeline") {
        Some(t) if per_sample && !o.no_timeline => {
            serde_json::from_value(t.clone()).with_context(|| format!("{what}: timeline"))?
        }
        _ => vec![],
    };
    let w = BenchWorkload { fg, bg, bg_procs: num("bg_procs")? as usize, bg_file_bytes, ramp_ms: num("ramp_ms")?, app, timeline };
    let disk = field("device")?.as_str().unwrap_or_default().to_owned();
    let stock = field("scheduler")?.as_str().unwrap_or_default().to_owned();
    let mut host = this_host(&disk, o).with_context(|| format!("{what}: this machine's settings for device {disk:?}"))?;
    // The file system the bench's work directory was on (found by its path on this machine):
    // the simulator's ext4 journals; a host's may not (twin21).
    let fs =
        saved.get("dir").and_then(|d| d.as_str()).and_then(|d| forefront_sysfs::fs::fs_of(Path::new("/"), Path::new(d)).ok());
    host.fs_journal = fs.as_ref().and_then(|f| f.journal);
    let fs_note = fs.as_ref().filter(|f| f.journal == Some(false)).map(|f| {
        format!(
            "file system: the bench's directory is on ext4 without a journal ({} on {}), simulated so: its fsync()s and fdatasync()s write the inode in place and commit nothing (docs/twin.md, twin21)",
            f.mount_point.display(),
            f.device
        )
    });
    // A host that takes freed memory back (this machine's balloon: twin23), which the
    // simulator's page cache does not model.
    let reporting = forefront_sysfs::vm::free_page_reporting(Path::new("/"));
    let device = forefront_workload::load_device(&o.device)?;
    // The CPU's page-copy costs where the calibration measured them: a read's and a write's
    // (files before the split: their mean for both; older files: the default).
    let calibrated = |k: &str| device.provenance.as_ref().and_then(|p| p.fields.get(k)).map(|m| m.value);
    host.copy_page_us = calibrated("copy_read_page_us").or_else(|| calibrated("copy_page_us"));
    host.copy_write_page_us = calibrated("copy_write_page_us");
    // Where the run probed the copy itself (twin27), the probes' medians instead.
    let probes = copy_probes(what, saved)?;
    let probed = !o.calibrated_copy && !probes.is_empty();
    if let Some(m) = forefront_bench::calibrate::CopyProbe::medians(&probes).filter(|_| probed) {
        host.copy_page_us = Some(m.read_page_us);
        host.copy_write_page_us = Some(m.write_page_us);
    }
    let copy_source = if probed {
        format!("the run's probes (median of {})", probes.len())
    } else if host.copy_page_us.is_some() {
        "the calibration".to_owned()
    } else {
        "the simulator's default".to_owned()
    };
    // A page's allocation where the calibration measured it (files from twin21 on).
    host.alloc_page_us = calibrated("alloc_page_us");
    // A dirty page's write-back where the calibration measured it (files from twin23 on).
    host.writeback_page_us = calibrated("writeback_page_us");
    // The folio a sequential read is cached in, where the calibration measured it (files from
    // twin25 on): the uploaders' per-chunk drop keeps what it does not cover whole.
    host.readahead_folio_kib = calibrated("dontneed_folio_kib").map(|k| (k.round() as u64).max(4).next_power_of_two());
    // The host's reclaim of free memory where the calibration measured it (files from twin24
    // on, on a VM whose balloon reports free pages): without the kernel's pass counters the
    // interval is its source's `PAGE_REPORTING_DELAY` (2 s); without a measured pass, none.
    host.host_reclaim = match (calibrated("host_reclaim_page_us"), calibrated("host_reclaim_reserve_mib")) {
        (Some(page_us), Some(reserve_mib)) => {
            calibrated("host_reclaim_pass_mib").map(|pass_mib| forefront_workload::bench::HostReclaimFigures {
                interval_ms: calibrated("host_reclaim_interval_ms").unwrap_or(2000.0),
                pass_mib,
                reserve_mib,
                page_us,
                // A page allocated for a read, where measured (files from twin28 on).
                read_page_us: calibrated("host_reclaim_read_page_us"),
                // The free blocks below the reporting order, where measured (files from
                // twin29 on): orders 0 up, as far as the file has them.
                fragments_kib: (0..10).map_while(|j| calibrated(&format!("host_free_order{j}_kib"))).collect(),
            })
        }
        _ => None,
    };
    if o.measured_passes {
        let passes: Vec<forefront_bench::runner::ReportingPass> = match saved.get("reporting_passes") {
            Some(v) => serde_json::from_value(v.clone()).with_context(|| format!("{what}: reporting_passes"))?,
            None => vec![],
        };
        if passes.is_empty() || w.timeline.is_empty() || host.host_reclaim.is_none() {
            bail!(
                "{what}: --measured-passes needs the run's reporting passes ({}), its timeline ({}) and a device file with the host's reclaim figures ({})",
                if passes.is_empty() { "none in the report" } else { "present" },
                if w.timeline.is_empty() { "none followed" } else { "present" },
                if host.host_reclaim.is_none() { "none" } else { "present" },
            );
        }
        host.host_passes = passes.iter().map(|p| [p.start_ms, p.mib]).collect();
    }
    let modes = field("modes")?.as_object().ok_or_else(|| anyhow::anyhow!("{what}: `modes` is not an object"))?;
    // The app's own CPU work where the bench measured it: the `alone` mode's mean user time per
    // operation, scaled to its time on a CPU where recorded ([`app_cpu_of`]; reports from before
    // `op_cpu_ms`: the assumption).
    host.fg_compute_ms = o.app_cpu_ms.or_else(|| modes.get("alone").and_then(|m| m.get("op_cpu_ms")).and_then(app_cpu_of));
    let alone_on_cpu = o.app_cpu_ms.is_none()
        && modes.get("alone").and_then(|m| m.get("op_cpu_ms")).and_then(|c| c.get("on_cpu_ms")).is_some_and(|v| v.is_f64());
    let order = ["alone", "baseline", "agent", "agent-bfq", "bfq", "ionice-idle"];
    let mut rows: Vec<Row> = vec![];
    // `--band`: each mode's predicted p50 on the device at the slow and at the fast edge of its
    // calibration's spread.
    let mut bands: Vec<(&str, Option<f64>, Option<f64>)> = vec![];
    if o.band && device.provenance.is_none() {
        bail!("--band: {} is not a `bench calibrate` file (no [provenance] with the repetitions' spread)", o.device);
    }
    for m in order.iter().filter(|m| modes.contains_key(**m)) {
        let meas = &modes[*m];
        let mut samples: Vec<f64> =
            meas["samples_ms"].as_array().map(|a| a.iter().filter_map(|x| x.as_f64()).collect()).unwrap_or_default();
        samples.sort_by(|a, b| a.total_cmp(b));
        if samples.is_empty() {
            bail!("{what}: mode {m} has no samples_ms");
        }
        let q = |p: f64| forefront_bench::stats::quantile(&samples, p);
        // The agent modes' launches were timed with the launcher's burst call in them.
        let host = forefront_workload::bench::Host { burst_call_ms: meas["burst_call_ms"].as_f64(), ..host.clone() };
        if o.band {
            let edge = |e: SpreadEdge| -> Option<f64> {
                let dev = device.at_spread_edge(e)?;
                let cal = |k: &str| device.provenance.as_ref().and_then(|p| p.fields.get(k)).map(|m| e.pick(m, false));
                // The run's probes are the run's: the band moves the calibration's figures.
                let cal_copy = |k: &str| if probed { None } else { cal(k) };
                let h = forefront_workload::bench::Host {
                    copy_page_us: cal_copy("copy_read_page_us").or_else(|| cal_copy("copy_page_us")).or(host.copy_page_us),
                    copy_write_page_us: cal_copy("copy_write_page_us").or(host.copy_write_page_us),
                    alloc_page_us: cal("alloc_page_us").or(host.alloc_page_us),
                    writeback_page_us: cal("writeback_page_us").or(host.writeback_page_us),
                    ..host.clone()
                };
                match predict(&w, &h, &dev, &stock, m, o.launches, o.seed) {
                    Predicted::Ran { fg_p50_ms, .. } => Some(fg_p50_ms),
                    Predicted::Unavailable { .. } => None,
                }
            };
            bands.push((*m, edge(SpreadEdge::Slow), edge(SpreadEdge::Fast)));
        }
        let pred = match &o.trace_out {
            None => predict(&w, &host, &device, &stock, m, o.launches, o.seed),
            Some(dir) => match forefront_sim::twin::config(&w, &host, &device, &stock, m, o.launches, o.seed) {
                Ok(cfg) => {
                    std::fs::create_dir_all(dir).with_context(|| format!("--trace-out {}", dir.display()))?;
                    let path = dir.join(format!("{m}.json"));
                    let report = crate::sim_cmd::run_with_trace(&cfg, Some(&path), o.force, &[])?;
                    forefront_sim::twin::predicted(&cfg, report, None)
                }
                Err(reason) => Predicted::Unavailable { reason },
            },
        };
        rows.push((*m, q(0.5), q(0.9), meas["bg_window_mb_s"].as_f64(), pred));
    }
    let ratio = |p: f64, m: f64| if m > 0.0 { Some(p / m) } else { None };
    let pairs = ordered_pairs(&rows, modes);
    if let Format::Json = o.format {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(m, p50, p90, bgw, pred)| {
                let (pp50, pp90, pbg) = match pred {
                    Predicted::Ran { fg_p50_ms, fg_p90_ms, bg_mb_s, .. } => (Some(*fg_p50_ms), Some(*fg_p90_ms), *bg_mb_s),
                    Predicted::Unavailable { .. } => (None, None, None),
                };
                serde_json::json!({
                    "mode": m,
                    "measured": { "fg_p50_ms": p50, "fg_p90_ms": p90, "bg_window_mb_s": bgw },
                    "predicted": pred,
                    "ratio": {
                        "fg_p50": pp50.and_then(|p| ratio(p, *p50)),
                        "fg_p90": pp90.and_then(|p| ratio(p, *p90)),
                        "bg_mb_s": pbg.zip(*bgw).and_then(|(p, m)| ratio(p, m)),
                    },
                })
            })
            .collect();
        let doc = serde_json::json!({
            "device": device.name, "launches": o.launches, "seed": o.seed, "copy_page_us": host.copy_page_us,
            "copy_write_page_us": host.copy_write_page_us,
            "copy_source": if probed { "probes" } else if host.copy_page_us.is_some() { "calibration" } else { "default" },
            "copy_probes": probes.len(),
            "alloc_page_us": host.alloc_page_us,
            "writeback_page_us": host.writeback_page_us,
            "readahead_folio_kib": host.readahead_folio_kib,
            "fg_compute_ms": host.fg_compute_ms,
            "host_free_page_reporting": reporting,
            "host_reclaim": host.host_reclaim.map(|h| serde_json::json!({
                "interval_ms": h.interval_ms, "pass_mib": h.pass_mib, "reserve_mib": h.reserve_mib, "page_us": h.page_us,
                "read_page_us": h.read_page_us, "fragments_kib": h.fragments_kib,
            })),
            "host_passes": if host.host_passes.is_empty() { "model" } else { "measured" },
            "preempt": host.preempt.name(),
            "fair": if host.eevdf.is_some() { "eevdf" } else { "cfs" },
            "cpu_groups": host.cpu_groups.name(),
            "fs": fs.as_ref().map(|f| serde_json::json!({
                "mount_point": f.mount_point, "type": f.fs_type, "device": f.device, "journal": f.journal,
            })),
            "fg": w.fg, "bg": w.bg, "modes": v,
            "order": {
                "pairs_ordered_by_measurement": pairs.ordered.len(),
                "predicted_in_the_same_order": pairs.agree,
                "pairs": pairs.ordered.iter().map(|(a, b, same)| serde_json::json!({
                    "faster": a, "slower": b, "predicted_the_same": same,
                })).collect::<Vec<_>>(),
                "within_noise": pairs.ties.iter().map(|(a, b)| [a, b]).collect::<Vec<_>>(),
            },
            "band": o.band.then(|| bands.iter().map(|(m, slow, fast)| serde_json::json!({
                "mode": m, "slow_p50_ms": slow, "fast_p50_ms": fast,
            })).collect::<Vec<_>>()),
        });
        return Ok(serde_json::to_string_pretty(&doc)? + "\n");
    }
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "predicted on device {} ({} launches, seed {}, stock scheduler {stock}, {}, {}, kernel preemption {}, fair scheduler {}, cpu groups {}) vs measured ({what}); ratio = predicted / measured",
        device.name,
        o.launches,
        o.seed,
        match (host.copy_page_us, host.copy_write_page_us) {
            (Some(r), Some(w)) => format!("page copy {r:.3} us read / {w:.3} us write, from {copy_source}"),
            (Some(c), None) => format!("page copy {c:.3} us, from {copy_source}"),
            _ => "page copy: the simulator's default".into(),
        } + &match host.alloc_page_us {
            Some(a) => format!(", page allocation {a:.3} us measured"),
            None => ", page allocation: the simulator's default".into(),
        } + &match host.writeback_page_us {
            Some(a) => format!(", write-back {a:.3} us/page measured"),
            None => ", write-back: the simulator's default".into(),
        } + &match host.readahead_folio_kib {
            Some(k) => format!(", read-ahead folio {k} KiB measured"),
            None => String::new(),
        },
        match host.fg_compute_ms {
            Some(c) if o.app_cpu_ms.is_some() => format!("app CPU {c:.2} ms (--app-cpu-ms)"),
            Some(c) if alone_on_cpu => format!("app CPU {c:.2} ms measured (alone, user share of its time on a CPU)"),
            Some(c) => format!("app CPU {c:.2} ms measured (alone, user time)"),
            None => format!(
                "app CPU {} ms assumed",
                if w.fg == Fg::Switch { forefront_workload::bench::SWITCH_COMPUTE_MS } else { forefront_workload::bench::LAUNCH_COMPUTE_MS }
            ),
        },
        host.preempt.name(),
        match host.eevdf {
            Some((slice, tick)) => format!("eevdf (base slice {slice} ms, tick {tick} ms)"),
            None => "cfs".into(),
        },
        host.cpu_groups.name()
    );
    let _ = writeln!(
        s,
        "{:<12} {:>9} {:>9} {:>6} {:>9} {:>9} {:>6} {:>8} {:>8} {:>6}",
        "mode", "p50 meas", "p50 pred", "ratio", "p90 meas", "p90 pred", "ratio", "bg meas", "bg pred", "ratio"
    );
    let f = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
    let mut notes = vec![];
    for (m, p50, p90, bgw, pred) in &rows {
        match pred {
            Predicted::Ran { fg_p50_ms, fg_p90_ms, bg_mb_s, .. } => {
                let _ = writeln!(
                    s,
                    "{m:<12} {p50:>9.1} {fg_p50_ms:>9.1} {:>6} {p90:>9.1} {fg_p90_ms:>9.1} {:>6} {:>8} {:>8} {:>6}",
                    f(ratio(*fg_p50_ms, *p50), 2),
                    f(ratio(*fg_p90_ms, *p90), 2),
                    f(*bgw, 1),
                    f(*bg_mb_s, 1),
                    f(bg_mb_s.zip(*bgw).and_then(|(p, m)| ratio(p, m)), 2),
                );
            }
            Predicted::Unavailable { reason } => {
                let _ = writeln!(
                    s,
                    "{m:<12} {p50:>9.1} {:>9} {:>6} {p90:>9.1} {:>9} {:>6} {:>8} {:>8} {:>6}",
                    "-",
                    "-",
                    "-",
                    "-",
                    f(*bgw, 1),
                    "-",
                    "-"
                );
                notes.push(format!("{m}: {reason}"));
            }
        }
    }
    let rank = |key: &dyn Fn(&Row) -> Option<f64>| {
        let mut v: Vec<(&str, f64)> = rows.iter().filter_map(|r| key(r).map(|k| (r.0, k))).collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v.iter().map(|x| x.0).collect::<Vec<_>>().join(" < ")
    };
    let predicted = predicted_p50;
    let measured = |r: &Row| predicted(r).map(|_| r.1);
    // Where the simulated launch waits for a CPU (behind the background's system calls on a
    // kernel without preemption): the figure a sched_switch trace of the real one gives.
    let runnable: Vec<String> = rows
        .iter()
        .filter_map(|r| match &r.4 {
            Predicted::Ran { breakdown_ms, .. } => breakdown_ms.get("cpu_runnable").map(|v| format!("{} {v:.1}", r.0)),
            Predicted::Unavailable { .. } => None,
        })
        .collect();
    // The same wait, wake-up by wake-up: `scripts/sched-probe`'s figures for the real launch.
    let wakeups: Vec<String> = rows
        .iter()
        .filter_map(|r| match &r.4 {
            Predicted::Ran { cpu_waits: Some(w), .. } => Some(format!(
                "{} {:.0} ({:.1} ms; p50 {:.0}, p90 {:.0}, max {:.0} us; over 1 ms {:.1} %, over 3 ms {:.1} %)",
                r.0, w.per_launch, w.sum_ms_per_launch, w.p50_us, w.p90_us, w.max_us, w.over_1ms_pct, w.over_3ms_pct
            )),
            _ => None,
        })
        .collect();
    // The operation's own CPU time, measured (its process's, from `go` to `done`) and simulated
    // (the time its thread ran), per mode: what the model charges for the app's work and for
    // the kernel's side of its calls against what the kernel spent.
    let cpu: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let (run, charged) = match &r.4 {
                Predicted::Ran { breakdown_ms, cpu_waits, .. } => {
                    (breakdown_ms.get("cpu_running").copied(), cpu_waits.as_ref().map(|w| w.charged_ms_per_launch))
                }
                Predicted::Unavailable { .. } => (None, None),
            };
            // The simulated CPU clock: the time running plus the waits charged as runtime.
            let run = run.map(|p| match charged {
                Some(c) => format!("{p:.1} [CPU clock {:.1}]", p + c),
                None => format!("{p:.1}"),
            });
            let meas = modes.get(r.0).and_then(|m| m.get("op_cpu_ms"));
            let g = |k: &str| meas.and_then(|c| c.get(k)).and_then(|v| v.as_f64());
            let on = g("on_cpu_ms").map(|o| format!(", on a CPU {o:.1}")).unwrap_or_default();
            match (g("total_ms"), g("user_ms"), g("sys_ms"), run) {
                (Some(t), Some(u), Some(k), Some(p)) => Some(format!("{} {t:.1} ({u:.1} user + {k:.1} sys{on}) -> {p}", r.0)),
                (_, _, _, Some(p)) => Some(format!("{} - -> {p}", r.0)),
                _ => None,
            }
        })
        .collect();
    if !cpu.is_empty() {
        let _ = writeln!(
            s,
            "the FG operation's own CPU per op (ms), measured (mean: its CPU clock, split by ticks, and perf's task clock where recorded) -> predicted (its thread running [and its CPU clock: plus the waits charged as runtime]; app work {}): {}",
            match host.fg_compute_ms {
                Some(c) => format!("{c:.2} ms"),
                None => "assumed".into(),
            },
            cpu.join("; ")
        );
    }
    let _ = writeln!(s, "p50 order, measured:  {}", rank(&measured));
    let _ = writeln!(s, "p50 order, predicted: {}", rank(&predicted));
    let _ = writeln!(
        s,
        "p50 pairs the measurement orders (their medians' 95 % intervals apart): {} of which the prediction orders {} the same{}; within each other's noise: {}",
        pairs.ordered.len(),
        pairs.agree,
        match pairs.ordered.iter().filter(|p| !p.2).map(|(a, b, _)| format!("{a} < {b}")).collect::<Vec<_>>() {
            v if v.is_empty() => String::new(),
            v => format!(" (not: {})", v.join(", ")),
        },
        if pairs.ties.is_empty() {
            "-".to_string()
        } else {
            pairs.ties.iter().map(|(a, b)| format!("{a} ~ {b}")).collect::<Vec<_>>().join(", ")
        }
    );
    if !runnable.is_empty() {
        let _ = writeln!(s, "predicted wait for a CPU per launch (ms): {}", runnable.join(", "));
    }
    if !wakeups.is_empty() {
        let _ = writeln!(s, "predicted wake-ups per launch (their wait for a CPU): {}", wakeups.join("; "));
    }
    if !bands.is_empty() {
        let f = |v: &Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
        let b: Vec<String> = bands.iter().map(|(m, slow, fast)| format!("{m} {} / {}", f(slow), f(fast))).collect();
        let _ = writeln!(
            s,
            "predicted p50 (ms) with the calibration's figures at their repetitions' slowest / fastest (--band): {}",
            b.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "bg: background MB/s over the ramp + the operation, the median of the samples' (bench: bg_window_mb_s; simulator: each launch's window from the drop of the workers' files)"
    );
    if let Some(n) = fs_note {
        let _ = writeln!(s, "{n}");
    }
    if !host.host_passes.is_empty() {
        let _ = writeln!(
            s,
            "host: the run's {} measured reporting passes replayed at their times (--measured-passes), not the model's schedule",
            host.host_passes.len()
        );
    }
    match (reporting, host.host_reclaim) {
        (_, Some(h)) => {
            let _ = writeln!(
                s,
                "host: free memory the host takes back, modelled from the calibration (docs/twin.md, twin24): a reporting pass every {:.0} ms hands up to {:.0} MiB of the guest's free memory to the host, {:.0} MiB stays backed, and each 4 KiB page allocated from memory the host took back costs {:.2} us more for a write(), {}",
                h.interval_ms,
                h.pass_mib,
                h.reserve_mib,
                h.page_us,
                match h.read_page_us {
                    Some(r) => format!("{r:.2} us for a read (twin28)"),
                    None => "the same for a read (not measured: a calibration from before twin28)".to_owned(),
                }
            );
            let _ = writeln!(
                s,
                "host: {}",
                if h.fragments_kib.is_empty() {
                    "the free blocks below the reporting order not measured (a calibration from before twin29): every folio takes the backed memory first".to_owned()
                } else {
                    format!(
                        "{:.0} MiB free in blocks below the reporting order (orders 0-{}: {} KiB), which reporting never takes: folios smaller than the reporting order are cut from them first (twin29)",
                        h.fragments_kib.iter().sum::<f64>() / 1024.0,
                        h.fragments_kib.len() - 1,
                        h.fragments_kib.iter().map(|k| format!("{k:.0}")).collect::<Vec<_>>().join("/")
                    )
                }
            );
        }
        (Some(true), None) => {
            let _ = writeln!(
                s,
                "host: this machine's balloon reports free memory to its host (virtio-balloon free page reporting), which takes it back: a write into memory freed about a second or more before also pays the host's fault (~12 us per 4 KiB page on the VM of docs/twin.md, twin23); this calibration did not measure it (a file from before twin24, or no reporting pass seen), so the simulator does not model it here; measured writers can be slower than predicted (scripts/host-touch-probe measures it)"
            );
        }
        _ => {}
    }
    for n in notes {
        let _ = writeln!(s, "{n}");
    }
    Ok(s)
}

/// `--app-cpu-ms`: a finite, non-negative number of ms.
/// The app's own CPU work per operation from a mode's `op_cpu_ms`: the user share of its time
/// on a CPU where perf's task clock was recorded (the CPU clock also counts a woken task's
/// waits on a kernel without preemption: docs/twin.md, twin18), else its user time.
fn app_cpu_of(c: &serde_json::Value) -> Option<f64> {
    let g = |k: &str| c.get(k).and_then(|v| v.as_f64());
    let user = g("user_ms")?;
    match (g("on_cpu_ms"), g("sys_ms")) {
        (Some(on), Some(sys)) if user + sys > 0.0 => Some(on * user / (user + sys)),
        _ => Some(user),
    }
}

fn app_cpu_ms(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a CPU time in ms (a number >= 0)")),
    }
}

/// The `--agent-config` file: checked now (a TOML error names the file, line and field), and
/// refused if it sets the sections the bench writes.
fn agent_extra(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| format!("--agent-config {}", path.display()))?;
    let cfg = forefront_agent::config::Config::parse(path, &text)?;
    let defaults = Config::default();
    if cfg.agent != defaults.agent || cfg.scope != defaults.scope {
        bail!(
            "--agent-config {}: sets [agent] or [scope], which the bench writes itself (its socket, state, group and the workers)",
            path.display()
        );
    }
    Ok(text)
}

/// The progress bar of `bench run` and `bench calibrate`: drawn on a terminal, hidden otherwise
/// (then the callers print one line per step). Returns whether stderr is a terminal.
fn progress_bar() -> (bool, indicatif::ProgressBar) {
    let tty = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::hidden();
    if tty {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    (tty, bar)
}

/// Sets the bar's length once the number of steps is known.
fn start_bar(bar: &indicatif::ProgressBar, total: usize) {
    bar.set_length(total as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"));
}
