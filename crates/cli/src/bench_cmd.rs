//! `forefront bench`: foreground launch/switch latency under real background load, compared
//! across modes (alone, baseline, agent, bfq, ionice-idle) on this machine.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
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
    /// Time the foreground operation in each mode, interleaved, after one discarded warm-up
    /// pass; caches are dropped before every operation. Needs root.
    #[command(after_help = "Example (the table in docs/agent.md):\n  \
        forefront bench run --fg launch --bg update --runs 15\n\n\
        Modes: alone (no background), baseline (background, stock settings), agent (the real \
        `forefront agent run` with its default config, told over its socket — or with --launcher cli by \
        `forefront agent fg PID --burst` / `--burst-end` — around the operation), bfq (BFQ on the disk), ionice-idle (BFQ + background in the idle I/O class).")]
    Run(RunArgs),
    /// Measure this machine's disk through the kernel (O_DIRECT on a scratch file of the file
    /// system under test) and write a device file the simulator loads, every figure with its
    /// spread over the repetitions and its provenance (host, kernel, date). Needs root.
    #[command(after_help = "Example (docs/twin.md):\n  \
        forefront bench calibrate -o this-vm.toml\n  \
        forefront sim run launch-update --device this-vm.toml\n\n\
        Measures 4 KiB and 1 MiB sequential and 4 KiB random reads and writes at queue depth 1 and at \
        depth (the device's queue depth from sysfs, at most 32 threads), the cost of a cache flush \
        (fdatasync), of a FUA write (O_DSYNC) and of a discard (FITRIM of a punched hole). The table \
        printed gives each figure's median, min and max over --reps repetitions.")]
    Calibrate(CalibrateArgs),
    /// (internal) One foreground operation: prints `ready`, waits for a line, runs, prints `done MS BYTES`.
    #[command(hide = true)]
    Op {
        #[arg(long, value_enum)]
        fg: FgArg,
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 0)]
        seq: u64,
    },
    /// (internal) One background worker; runs until killed.
    #[command(hide = true)]
    Worker {
        #[arg(long, value_enum)]
        bg: BgArg,
        #[arg(long)]
        file: PathBuf,
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
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum ModeArg {
    Alone,
    Baseline,
    Agent,
    Bfq,
    IoniceIdle,
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
    /// Measured repetitions per mode (≥ 15 for a table you report).
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
    /// Background processes.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=16))]
    bg_procs: u32,
    /// Size of each background process's file (MiB).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(8..=65536))]
    bg_file_mib: u64,
    /// How long the background runs before the foreground operation starts (ms).
    #[arg(long, default_value_t = 1500)]
    ramp_ms: u64,
    /// Size of the app's code and resource files (MiB).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..=4096))]
    app_mib: u64,
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
}

fn run_calibrate(a: CalibrateArgs) -> anyhow::Result<ExitCode> {
    use forefront_bench::calibrate::{self, CalPlan, CalProgress};
    // Refused now (exists without --force, not a file), not after minutes of measuring.
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
    };
    let tty = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::hidden();
    if tty {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    let result = calibrate::calibrate(&plan, &mut |p| match p {
        CalProgress::Setup(what) => {
            if tty {
                bar.set_message(what.to_owned())
            } else {
                eprintln!("calibrate: {what}")
            }
        }
        CalProgress::Start { total } => {
            bar.set_length(total as u64);
            bar.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"));
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
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        BenchCommand::Op { fg, dir, seq } => {
            forefront_bench::interrupt::die_with_parent()?;
            let fg = match fg {
                FgArg::Launch => Fg::Launch,
                FgArg::Switch => Fg::Switch,
            };
            runner::op_child(fg, &dir, seq)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Worker { bg, file, ioprio_idle } => {
            forefront_bench::interrupt::die_with_parent()?;
            if ioprio_idle {
                forefront_sysfs::ioprio::set(0, forefront_sysfs::ioprio::IoPrio::IDLE)?;
            }
            match bg {
                BgArg::Update => forefront_bench::ops::update_forever(&file)?,
                BgArg::Copy => forefront_bench::ops::copy_forever(&file)?,
                BgArg::Upload => forefront_bench::ops::upload_forever(&file)?,
                BgArg::Mixed | BgArg::None => anyhow::bail!("a worker is an update, a copy or an upload"),
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Run(a) => run_bench(a),
        BenchCommand::Calibrate(a) => run_calibrate(a),
    }
}

fn run_bench(a: RunArgs) -> anyhow::Result<ExitCode> {
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
    let plan = Plan {
        fg: match a.fg {
            FgArg::Launch => Fg::Launch,
            FgArg::Switch => Fg::Switch,
        },
        bg: match a.bg {
            BgArg::Update => Bg::Update,
            BgArg::Copy => Bg::Copy,
            BgArg::Upload => Bg::Upload,
            BgArg::Mixed => Bg::Mixed,
            BgArg::None => Bg::None,
        },
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
    };
    let tty = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::hidden();
    if tty {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    let result = runner::run(&plan, &mut |p| match p {
        Progress::Setup(what) => {
            if tty {
                bar.set_message(what.to_owned())
            } else {
                eprintln!("bench: {what}")
            }
        }
        Progress::Start { total } => {
            bar.set_length(total as u64);
            bar.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"));
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
    let text = match a.format {
        Format::Table => forefront_bench::render::table(&report),
        Format::Json => forefront_bench::render::json(&report) + "\n",
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
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
