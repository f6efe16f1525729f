//! `forefront sim`: the simulator's command line.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use forefront_model::block::SchedulerConfig;
use forefront_model::cpu::SchedKind;
use forefront_policy::Policy;
use forefront_record::compare::{CompareCell, CompareSummary};
use forefront_record::run::{or_dash, RunReport};
use forefront_sim::{run as sim_run, RunConfig};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimArgs {
    #[command(subcommand)]
    command: Option<SimCommand>,
    /// With no subcommand: first seed of the comparison runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// With no subcommand: seeds per configuration (their samples are pooled).
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// With no subcommand: background apps of the comparison (default: the scenario's).
    #[arg(long)]
    bg_apps: Option<u32>,
    /// Output: a table for people, or json/csv for programs.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Subcommand)]
enum SimCommand {
    /// Run one scenario under one policy.
    Run(RunArgs),
    /// List built-in scenarios, policies, devices, I/O and CPU schedulers.
    List,
    /// Compare policies on one scenario over several background-app counts: FG latency, the
    /// delay caused by BG apps, its reduction against `android`, and what BG apps lose.
    Compare(CompareArgs),
    /// Replay a real trace in the simulator: a syscall trace (strace, MobiGen) as app threads,
    /// or a block trace (blkparse, blktrace, ftrace) at the block layer, on any device/policy.
    ///
    /// Refused before the run, naming the record: a request or a read/write past the device's
    /// capacity, files that do not fit on it; and traces of more than 10,000 threads (block:
    /// submitting pids).
    Replay(ReplayArgs),
    /// Interactivity (FTC + VT-CFS): response, dispatch and preemption latency of the
    /// user-interactive chain per policy and BG-app count, and the sweep of VT-CFS's tick λ.
    Interactivity(crate::sim_ui::InteractivityArgs),
    /// Virtual phones (Cells): the overhead of running the FG workload in a cell (plain phone,
    /// one cell, five), the FG cell's delay with 0–4 busy background cells per policy, and
    /// the time of a cell switch.
    Cells(crate::sim_cells::CellsArgs),
    /// Check the phenomena the seed papers report (directions and ranges with tolerances);
    /// exits 1 if one fails. Run by `scripts/validate` in CI.
    Validate(crate::sim_validate::ValidateArgs),
    /// Run a declarative sweep (policies × BG apps × devices × scenario/device fields × seeds)
    /// on every core into a resumable JSON Lines file, optionally one shard of it.
    ///
    /// SPEC.toml:
    ///
    ///   scenario = "launch-update"            # built-in name, a scenario file, or the bench's
    ///                                         # workload "bench:FG/BG" (needs `devices`)
    ///   policies = ["android", "fasttrack"]
    ///   bg_apps = [1, 2, 4]
    ///   devices = ["galaxy-s6-ufs"]           # optional (default: the scenario's)
    ///   seeds = 3                             # seeds 1..=3, or a list [1, 5, 9]
    ///   [axes]                                # optional: dotted paths into the scenario,
    ///   "phone.page_cache_mib" = [256, 768]   # or with `device.` into the device
    ///   "device.starvation_ms" = [100.0, 500.0]
    ///   [[variant]]                           # optional: named sets of fields (what-ifs);
    ///   group = "net"                         # one dimension per group (default "variant")
    ///   name = "usb"
    ///   set = { "phone.net_mb_s" = 25.0 }
    ///
    /// Every point's scenario and device pass the checks of a file (ranges, limits, files
    /// that fit the device) with the values its axes and variants set; seeds are distinct,
    /// at most 10000, and a spec has at most 1000000 points (checked before any is built).
    ///
    /// See sweeps/revisiting-storage.toml for a sweep of devices, networks, what-ifs and pilots.
    #[command(verbatim_doc_comment)]
    Sweep(crate::sim_sweep::SweepArgs),
    /// Join the shard outputs of one sweep into the file one machine would have written.
    Merge(crate::sim_sweep::MergeArgs),
}

#[derive(Args)]
struct ReplayArgs {
    /// Trace files (several blktrace per-CPU files, or their base name DEV, are merged).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<std::path::PathBuf>,
    /// Trace format; `auto` detects it from the content.
    #[arg(long, default_value = "auto", value_parser = ["auto", "blkparse", "blktrace", "strace", "mobigen", "iopro", "ftrace"])]
    input_format: String,
    /// Skip unparsable lines (counted on stderr) instead of stopping; a line longer than 1 MiB
    /// still ends the import.
    #[arg(long)]
    lenient: bool,
    /// Devices to replay on (repeatable: runtimes side by side). Default: galaxy-s5-emmc.
    #[arg(long = "device")]
    devices: Vec<String>,
    /// Policy (see `forefront sim list`; `POLICY+COMPONENT` combinations too, e.g.
    /// `android+ft-device`, `fasttrack+qa-boost`).
    #[arg(long, default_value = "android")]
    policy: String,
    /// The foreground app (syscall traces): a process name (strace traces name processes by
    /// what they `execve`, or by the name set with `prctl(PR_SET_NAME)`) or a thread id;
    /// repeatable. Its threads' calls are the measured app, the others run as a background app.
    /// A value that matches nothing is an error that lists names the trace has (the rule of
    /// `trace stats --fg` and `trace convert --fg`). Without --fg there is no FG/BG split: the
    /// whole trace is the measured app.
    #[arg(long, value_name = "COMM|TID")]
    fg: Vec<String>,
    /// `trace` keeps the trace's think times; `afap` issues calls back to back.
    #[arg(long, value_parser = ["trace", "afap"], default_value = "trace")]
    timing: String,
    /// Seed of the run's random streams (same seed, same output).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output: a table for people, or json/csv for programs.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    trace: TraceOut,
}

#[derive(Args)]
struct CompareArgs {
    /// A built-in scenario name or a scenario TOML file.
    scenario: String,
    /// Policies to compare (comma-separated or repeated; `android` is always included as the
    /// baseline).
    #[arg(long = "policy", value_delimiter = ',', default_values_t = ["android".to_string(), "fasttrack-minus".to_string(), "fasttrack".to_string()])]
    policies: Vec<String>,
    /// Add the ablations: FastTrack's single components (android+ft-alloc, …), and with qasio or
    /// forefront among the policies, QASIO's (android+qa-boost, fasttrack+qa-device,
    /// fasttrack+fg-inherit).
    #[arg(long)]
    ablation: bool,
    /// Background-app counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2, 4, 6])]
    bg_apps: Vec<u32>,
    /// First seed; with --seeds N, seeds S..S+N are run and their means averaged.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seeds per cell.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Override the scenario's device: a built-in name or a device TOML file.
    #[arg(long)]
    device: Option<String>,
    /// The agent's configuration for the `agent` policy (default: the agent's defaults).
    #[arg(long, value_name = "FILE")]
    agent_config: Option<std::path::PathBuf>,
    /// Output: a markdown table, or json/csv.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Args)]
struct RunArgs {
    /// A built-in scenario name (see `forefront sim list`), a path to a scenario TOML file, or
    /// `bench:FG/BG` (`forefront bench`'s workload, e.g. `bench:launch/update`; needs --device).
    scenario: String,
    /// Policy (see `forefront sim list`; `POLICY+COMPONENT` combinations too, e.g.
    /// `android+ft-device`, `fasttrack+qa-boost`; `agent` is the forefront agent driven by its
    /// TOML, see --agent-config).
    #[arg(long, default_value = "android")]
    policy: String,
    /// With `--policy agent`: the agent's configuration file (as `forefront agent run --config`
    /// reads it; default: the agent's defaults, the shipped dist/agent.toml).
    #[arg(long, value_name = "FILE")]
    agent_config: Option<std::path::PathBuf>,
    /// Background app instances (default: the scenario's `bg_apps`; at most 1000).
    #[arg(long)]
    bg_apps: Option<u32>,
    /// Busy background cells, for scenarios with virtual phones (`[[cell]]`; default: the
    /// scenario's `bg_cells`; at most 64).
    #[arg(long)]
    bg_cells: Option<u32>,
    /// Seed of the run's random streams (same seed, same output).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Override the scenario's device: a built-in name or a device TOML file.
    #[arg(long)]
    device: Option<String>,
    /// Override the scenario's I/O scheduler (kernel-default tunables).
    #[arg(long, value_parser = ["noop", "deadline", "cfq", "mq-deadline", "bfq"])]
    scheduler: Option<String>,
    /// Output: a table for people, or json/csv for programs.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    trace: TraceOut,
}

/// `--trace-out` for `sim run` and `sim replay`.
#[derive(Args)]
struct TraceOut {
    /// Also write a Perfetto / Chrome trace-event JSON of the run (tasks per CPU, syscall spans
    /// per thread, requests per queue, queue depth); for `replay`, of the first device's run.
    #[arg(long, value_name = "FILE.json")]
    trace_out: Option<std::path::PathBuf>,
    /// Overwrite the --trace-out file if it exists.
    #[arg(long)]
    force: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

pub fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(SimCommand::List) => list(),
        Some(SimCommand::Run(r)) => run_one(r),
        Some(SimCommand::Compare(c)) => compare_policies(c),
        Some(SimCommand::Replay(r)) => replay(r),
        Some(SimCommand::Interactivity(a)) => crate::sim_ui::run(a, run_all),
        Some(SimCommand::Cells(a)) => crate::sim_cells::run(a, run_all),
        Some(SimCommand::Validate(a)) => crate::sim_validate::run(a, run_all),
        Some(SimCommand::Sweep(a)) => crate::sim_sweep::sweep(a, run_streamed),
        Some(SimCommand::Merge(a)) => crate::sim_sweep::merge(a),
        None => compare(args.seed, args.seeds, args.bg_apps, args.format),
    }
}

fn list() -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "scenarios:")?;
    for n in forefront_workload::scenario_names() {
        let s = forefront_workload::builtin_scenario(n)?;
        let load = if s.cells.is_empty() {
            format!("bg_apps: {}", s.bg_apps)
        } else {
            format!("{} cells, bg_cells: {}", s.cells_params.total.max(1 + s.bg_cells), s.bg_cells)
        };
        writeln!(out, "  {n:<16} {} (headline: {}, device: {}, {load})", s.description, s.headline, s.device)?;
    }
    writeln!(out, "policies:")?;
    for n in Policy::names() {
        writeln!(out, "  {n:<16} {}", Policy::by_name(n)?.description)?;
    }
    writeln!(out, "  {:<16} {} (--agent-config FILE: the agent's TOML)", "agent", Policy::by_name("agent")?.description)?;
    writeln!(out, "  {:<16} any policy plus components: {}", "POLICY+COMPONENT", Policy::components().join(", "))?;
    writeln!(out, "devices:")?;
    for n in forefront_workload::device_names() {
        writeln!(out, "  {n:<16} {}", forefront_workload::builtin_device(n)?.description)?;
    }
    writeln!(out, "schedulers:")?;
    for s in SchedulerConfig::all() {
        writeln!(out, "  {}", s.name())?;
    }
    writeln!(out, "cpu schedulers ([phone.cpu] scheduler):")?;
    writeln!(out, "  {:<16} stock CFS: weighted slices, wake-up preemption", SchedKind::Cfs.name())?;
    writeln!(out, "  {:<16} VT-CFS [VT]: preemption at every tick (tick_ms), no weighted slice", SchedKind::VtCfs.name())?;
    writeln!(
        out,
        "  {:<16} EEVDF (Linux 6.6+): earliest eligible virtual deadline, lag kept across sleeps",
        SchedKind::Eevdf.name()
    )?;
    Ok(ExitCode::SUCCESS)
}

fn config(r: &RunArgs) -> anyhow::Result<RunConfig> {
    let mut cfg = match r.scenario.strip_prefix(forefront_workload::bench::NAMED_PREFIX) {
        // The bench's workload (`bench:FG/BG`, as `sim sweep` names it) on --device.
        Some(name) => {
            let device = r.device.as_deref().context(
                "--device: the bench's workload (`bench:FG/BG`) has no device of its own; give one (a `bench calibrate` output)",
            )?;
            let scenario = forefront_workload::bench::BenchWorkload::named_scenario(name, device)
                .map_err(|e| anyhow::anyhow!("{}: {e}", r.scenario))?;
            RunConfig {
                bg_apps: r.bg_apps.unwrap_or(scenario.bg_apps),
                scenario,
                device: forefront_workload::load_device(device)?,
                policy: Policy::by_name(&r.policy).map_err(|e| anyhow::anyhow!("--policy: {e}"))?,
                seed: r.seed,
            }
        }
        None => RunConfig::builtin(&r.scenario, &r.policy, r.bg_apps, r.seed)?,
    };
    if let Some(path) = &r.agent_config {
        anyhow::ensure!(
            cfg.policy.agent.is_some(),
            "--agent-config: policy `{}` is not the agent (use --policy agent)",
            r.policy
        );
        cfg.policy.agent = Some(Box::new(forefront_policy::agent::config::Config::load(path)?));
    }
    if let Some(n) = r.bg_cells {
        anyhow::ensure!(
            !cfg.scenario.cells.is_empty(),
            "--bg-cells: scenario `{}` has no virtual phones ([[cell]]); use --bg-apps",
            cfg.scenario.name
        );
        cfg.scenario.bg_cells = n;
    }
    if let Some(d) = &r.device {
        cfg.device = forefront_workload::load_device(d)?;
    }
    if let Some(s) = &r.scheduler {
        cfg.scenario.phone.scheduler = SchedulerConfig::all().into_iter().find(|c| c.name() == s).context("scheduler")?;
    }
    cfg.check().map_err(|e| flag_error(e, r.bg_apps.is_some(), r.bg_cells.is_some()))?;
    Ok(cfg)
}

/// A refused configuration, naming the flag that set the refused value where one did.
fn flag_error(e: forefront_sim::ConfigError, bg_apps_flag: bool, bg_cells_flag: bool) -> anyhow::Error {
    let text = e.to_string();
    if bg_apps_flag && text.starts_with("bg_apps:") {
        anyhow::anyhow!("--bg-apps: {}", &text["bg_apps: ".len()..])
    } else if bg_cells_flag && text.contains(": bg_cells:") {
        anyhow::anyhow!("--bg-cells: {}", text.split(": bg_cells: ").nth(1).unwrap_or_default())
    } else {
        e.into()
    }
}

/// Every configuration checked ([`RunConfig::check`]) before any runs; `--seeds` within its
/// limit.
pub fn check_all(cfgs: &[RunConfig]) -> anyhow::Result<()> {
    for c in cfgs {
        c.check().map_err(|e| flag_error(e, true, true))?;
    }
    Ok(())
}

/// `--seed S --seeds N`: N within [`forefront_workload::limits::MAX_SEEDS`], S + N without overflow.
fn check_seeds(seed: u64, seeds: u64) -> anyhow::Result<()> {
    use forefront_workload::limits::MAX_SEEDS;
    anyhow::ensure!((1..=MAX_SEEDS).contains(&seeds), "--seeds must be in 1..={MAX_SEEDS}, got {seeds}");
    anyhow::ensure!(seed.checked_add(seeds).is_some(), "--seed {seed} + --seeds {seeds} overflow a 64-bit seed");
    Ok(())
}

fn run_one(r: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&r)?;
    let mut inputs = vec![std::path::Path::new(&r.scenario)];
    inputs.extend(r.device.as_deref().map(std::path::Path::new));
    let report = run_with_trace(&cfg, r.trace.trace_out.as_deref(), r.trace.force, &inputs)?;
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    match r.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            w.write_record(CSV_HEADER)?;
            w.write_record(csv_row(&report))?;
            w.flush()?;
        }
        Format::Table => print_report(&mut out, &report)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Run, writing the Perfetto export to `trace_out` when given (never over one of `inputs`, the
/// files the run was read from; see [`crate::output`]).
pub fn run_with_trace(
    cfg: &RunConfig,
    trace_out: Option<&std::path::Path>,
    force: bool,
    inputs: &[&std::path::Path],
) -> anyhow::Result<RunReport> {
    let Some(path) = trace_out else { return Ok(forefront_sim::try_run(cfg)?) };
    let mut file = crate::output::OutputFile::create(path, force, inputs)?;
    let (report, trace) = forefront_sim::try_run_traced(cfg, true)?;
    let forefront_sim::RunTrace { records, fg_tids, threads } = trace.expect("asked for a trace");
    let fg = forefront_trace::stats::FgSelector { pids: fg_tids, comms: vec![] };
    let mut w = forefront_trace::perfetto::PerfettoWriter::new(std::io::BufWriter::new(file.file()), fg)?;
    // One Perfetto process per app, a track "app/thread" per thread.
    w.name_threads(threads);
    for r in &records {
        w.add(r)?;
    }
    let mut out = w.finish()?;
    out.flush()?;
    drop(out);
    file.commit()?;
    eprintln!("wrote {} ({} records)", path.display(), records.len());
    Ok(report)
}

const CSV_HEADER: [&str; 14] = [
    "scenario",
    "policy",
    "device",
    "scheduler",
    "seed",
    "bg_apps",
    "fg_ms",
    "fg_p50_ms",
    "fg_p90_ms",
    "fg_p99_ms",
    "fg_max_ms",
    "bg_mb_per_s",
    "samples",
    "bg_cells",
];

/// A run as a CSV record (quoted by the `csv` writer where a field needs it).
fn csv_row(r: &RunReport) -> Vec<String> {
    let m = &r.metrics;
    let mut v = vec![
        r.scenario.clone(),
        r.policy.clone(),
        r.device.clone(),
        r.scheduler.clone(),
        r.seed.to_string(),
        r.bg_apps.to_string(),
    ];
    // A figure the run could not measure (no headline sample) is an empty field.
    v.extend(
        [m.fg_ms, m.fg_p50_ms, m.fg_p90_ms, m.fg_p99_ms, m.fg_max_ms, m.bg_mb_per_s]
            .iter()
            .map(|v| or_dash(*v, |v| v.to_string()).replace('–', "")),
    );
    v.push(m.fg_samples_ms.len().to_string());
    v.push(r.bg_cells.to_string());
    v
}

fn print_report(out: &mut impl Write, r: &RunReport) -> std::io::Result<()> {
    let m = &r.metrics;
    let cells = if m.cells.is_empty() {
        String::new()
    } else {
        format!(" · {} cells, {} busy", m.cells.len(), m.cells.iter().filter(|c| c.role == "busy").count())
    };
    writeln!(
        out,
        "scenario {} · policy {} · device {} · {} · {} bg apps{cells} · seed {}",
        r.scenario, r.policy, r.device, r.scheduler, r.bg_apps, r.seed
    )?;
    writeln!(out, "headline `{}`: {} samples", r.headline, m.fg_samples_ms.len())?;
    let f = |v: f64| or_dash(v, |v| format!("{v:.1}"));
    writeln!(
        out,
        "  mean {:>9} ms   p50 {:>9}   p90 {:>9}   p99 {:>9}   max {:>9}",
        f(m.fg_ms),
        f(m.fg_p50_ms),
        f(m.fg_p90_ms),
        f(m.fg_p99_ms),
        f(m.fg_max_ms)
    )?;
    writeln!(
        out,
        "background: {:.2} MB/s ({:.1} MB read, {:.1} MB written by BG apps)",
        m.bg_mb_per_s, m.bg_read_mb, m.bg_written_mb
    )?;
    writeln!(
        out,
        "device: {:.1} MB read, {:.1} MB written, {} reorders",
        m.device_read_mb, m.device_written_mb, m.device_reorders
    )?;
    writeln!(out, "per-layer time of the headline operation (mean ms per sample):")?;
    for (k, v) in &r.breakdown {
        if *v > 0.0 {
            writeln!(out, "  {k:<22} {v:>9.2}")?;
        }
    }
    if let Some(u) = &m.ui {
        writeln!(
            out,
            "interactivity ({} on the CPU{}): {} interactions displayed",
            u.cpu_scheduler,
            if u.cpu_scheduler == "vt-cfs" { format!(", tick {} ms", u.tick_ms) } else { String::new() },
            u.interactions
        )?;
        writeln!(out, "  response   p50 {:>7.2} ms  p99 {:>7.2} ms", u.response_p50_ms, u.response_p99_ms)?;
        writeln!(
            out,
            "  dispatch   p50 {:>7.3} ms  p99 {:>7.3} ms  mean {:.3} ms over {} waits of chain tasks",
            u.dispatch_p50_ms, u.dispatch_p99_ms, u.dispatch_mean_ms, u.dispatch_waits
        )?;
        writeln!(
            out,
            "  preemption p50 {:>7.3} ms  p99 {:>7.3} ms  mean {:.3} ms over {} waits",
            u.preempt_p50_ms, u.preempt_p99_ms, u.preempt_mean_ms, u.preempt_waits
        )?;
        writeln!(
            out,
            "  preempted → done p50 {:>7.3} ms  p99 {:>7.3} ms  mean {:.3} ms over {} preempted runs",
            u.preempt_to_done_p50_ms, u.preempt_to_done_p99_ms, u.preempt_to_done_mean_ms, u.preempted_runs
        )?;
        writeln!(
            out,
            "  frames {} ({} missed deadlines) · {} context switches · {} tick preemptions · BG apps used {:.1}% of the CPU",
            u.frames,
            u.frame_misses,
            u.context_switches,
            u.tick_preemptions,
            u.bg_cpu_share * 100.0
        )?;
        writeln!(out, "  chain: {}", u.chain_tasks.join(", "))?;
    }
    if !m.cells.is_empty() {
        writeln!(out, "cells (virtual phones; the headline counts the samples of the cell on the screen):")?;
        writeln!(
            out,
            "  {:<12} {:<5} {:>10} {:>9} {:>9} {:>9} {:>10}  phases (samples, p50 ms)",
            "cell", "role", "screen s", "switches", "CPU s", "read MB", "written MB"
        )?;
        for c in &m.cells {
            let phases: Vec<String> = c.phases.iter().map(|(k, p)| format!("{k} {} × {:.1}", p.samples, p.p50_ms)).collect();
            writeln!(
                out,
                "  {:<12} {:<5} {:>10.1} {:>9} {:>9.2} {:>9.1} {:>10.1}  {}",
                c.name,
                c.role,
                c.on_screen_ms / 1e3,
                c.switched_in,
                c.cpu_ms / 1e3,
                c.read_mb,
                c.written_mb,
                phases.join(", ")
            )?;
        }
    }
    writeln!(out, "policy hooks fired:")?;
    for (k, v) in &r.hooks {
        writeln!(out, "  {k:<30} {v}")?;
    }
    let s = &r.stats;
    writeln!(
        out,
        "stats: {} events in {:.0} ms wall for {:.0} ms simulated ({:.2} M events/s)",
        s.events,
        s.wall_ms,
        s.sim_ms,
        s.events_per_s / 1e6
    )?;
    writeln!(
        out,
        "speed: {:.0}x real time, {:.2} M pages/s ({} pages), {:.0} k requests/s ({} requests)",
        s.sim_s_per_wall_s,
        s.pages_per_s / 1e6,
        s.pages,
        s.requests_per_s / 1e3,
        s.requests
    )?;
    Ok(())
}

/// The default job: the default scenario alone (FG only) and under every policy with BG apps,
/// each over `seeds` seeds whose headline samples are pooled (20 samples per run are too few
/// for one seed's tail to mean much).
fn compare(seed: u64, seeds: u64, bg_apps: Option<u32>, format: Format) -> anyhow::Result<ExitCode> {
    check_seeds(seed, seeds)?;
    let scenario = forefront_workload::DEFAULT_SCENARIO;
    let mut cfgs = vec![];
    let mut labels: Vec<(&str, u32)> = vec![("android", 0)];
    for s in 0..seeds {
        cfgs.push(RunConfig::builtin(scenario, "android", Some(0), seed + s)?);
    }
    for p in Policy::names() {
        let first = RunConfig::builtin(scenario, p, bg_apps, seed)?;
        labels.push((p, first.bg_apps));
        for s in 0..seeds {
            cfgs.push(RunConfig { seed: seed + s, ..first.clone() });
        }
    }
    check_all(&cfgs)?;
    let reports = run_all(&cfgs);
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            let n = seeds as usize;
            let v = serde_json::json!({ "seeds": (seed..seed + seeds).collect::<Vec<_>>(), "fg_only": &reports[..n], "runs": &reports[n..] });
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            w.write_record(CSV_HEADER)?;
            for r in &reports {
                w.write_record(csv_row(r))?;
            }
            w.flush()?;
        }
        Format::Table => {
            // Pool each configuration's samples over its seeds.
            let pooled: Vec<(Vec<f64>, f64)> = reports
                .chunks(seeds as usize)
                .map(|rs| {
                    let mut v: Vec<f64> = rs.iter().flat_map(|r| r.metrics.fg_samples_ms.iter().copied()).collect();
                    v.sort_by(f64::total_cmp);
                    (v, rs.iter().map(|r| r.metrics.bg_mb_per_s).sum::<f64>() / rs.len() as f64)
                })
                .collect();
            // No sample: no figure (NaN, printed `–`).
            let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
            let t0 = mean(&pooled[0].0);
            let a = &reports[0];
            writeln!(
                out,
                "scenario {scenario} on {} ({}), seeds {seed}..{}: headline `{}`, samples pooled over seeds",
                a.device,
                a.scheduler,
                seed + seeds - 1,
                a.headline
            )?;
            writeln!(
                out,
                "{:<22} {:>7} {:>8} {:>10} {:>10} {:>10} {:>12} {:>10}",
                "run", "bg_apps", "samples", "mean ms", "p50 ms", "p99 ms", "BG delay ms", "BG MB/s"
            )?;
            for (k, ((v, bg), (policy, n))) in pooled.iter().zip(&labels).enumerate() {
                let name = if k == 0 { "FG only (reference)" } else { policy };
                let f = |x: f64| or_dash(x, |x| format!("{x:.1}"));
                let delay = if k == 0 { "-".to_string() } else { f(mean(v) - t0) };
                let pct = |p: f64| forefront_record::stats::percentile(v, p).unwrap_or(f64::NAN);
                writeln!(
                    out,
                    "{:<22} {:>7} {:>8} {:>10} {:>10} {:>10} {:>12} {:>10.2}",
                    name,
                    n,
                    v.len(),
                    f(mean(v)),
                    f(pct(50.0)),
                    f(pct(99.0)),
                    delay,
                    bg
                )?;
            }
            writeln!(out, "BG delay = mean FG latency − FG-only mean. `forefront sim run {scenario} --policy P` shows one run's per-layer breakdown;")?;
            writeln!(out, "`forefront sim compare {scenario} --ablation --seeds 3` compares across BG-app counts.")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `cfgs` on up to `available_parallelism` threads (parallelism across runs, never inside
/// one); results come back in input order.
///
/// On a terminal, stderr shows a progress bar (runs done of all, elapsed, estimate); piped or
/// redirected output shows nothing.
fn run_all(cfgs: &[RunConfig]) -> Vec<RunReport> {
    let bar = progress_bar(cfgs.len());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(cfgs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<RunReport>> = (0..cfgs.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut out);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= cfgs.len() {
                    break;
                }
                let r = sim_run(&cfgs[i]);
                slots.lock().expect("no panics while holding the lock")[i] = Some(r);
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let out: Vec<RunReport> = out.into_iter().map(|r| r.expect("every run finished")).collect();
    // Each distinct warning once, with the runs it concerns.
    let mut warned: std::collections::BTreeMap<&str, Vec<String>> = std::collections::BTreeMap::new();
    for r in &out {
        for w in &r.warnings {
            warned.entry(w.as_str()).or_default().push(format!("{} {} BG {} seed {}", r.policy, r.bg_apps, r.scenario, r.seed));
        }
    }
    for (w, runs) in warned {
        eprintln!("warning: {w} (in {} run(s), e.g. {})", runs.len(), runs[0]);
    }
    out
}

/// A progress bar of `n` runs on stderr when it is a terminal (and more than one run), else
/// hidden: piped or redirected output shows nothing.
fn progress_bar(n: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    let bar = indicatif::ProgressBar::hidden();
    if std::io::stderr().is_terminal() && n > 1 {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} (about {eta} left)")
                .expect("valid template"),
        );
        bar.set_length(n as u64);
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
    bar
}

/// How one run of [`run_streamed`] ended.
pub enum RunOutcome {
    Report(Box<RunReport>),
    /// The run ended with an error (e.g. a loop that stopped advancing time) or panicked: why.
    Failed(String),
}

/// [`run_streamed`]'s type, for the commands that take it.
pub type Streamed = fn(Vec<RunConfig>, &mut dyn FnMut(usize, RunOutcome) -> anyhow::Result<()>) -> anyhow::Result<bool>;

/// Run `cfgs` on up to `available_parallelism` threads and hand each outcome to `done` (on this
/// thread, in completion order, with the run's position in `cfgs`) as soon as it finishes. A run
/// that fails or panics is a [`RunOutcome::Failed`], and the others go on.
///
/// SIGINT, SIGTERM or SIGHUP stop it: no run starts after the signal, and it returns `false`
/// at once, without waiting for the runs in flight (their threads end with the process).
/// Returns `true` when every run was handed to `done`; an error from `done` ends it too.
pub fn run_streamed(cfgs: Vec<RunConfig>, done: &mut dyn FnMut(usize, RunOutcome) -> anyhow::Result<()>) -> anyhow::Result<bool> {
    run_streamed_with(cfgs, |c| Ok(forefront_sim::try_run(c)?), done)
}

/// [`run_streamed`] with `run` in place of the simulator (tests inject failures through it).
pub fn run_streamed_with(
    cfgs: Vec<RunConfig>,
    run: fn(&RunConfig) -> anyhow::Result<RunReport>,
    done: &mut dyn FnMut(usize, RunOutcome) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    forefront_bench::interrupt::install().context("installing the SIGINT/SIGTERM handler")?;
    let n = cfgs.len();
    let bar = progress_bar(n);
    let cfgs = Arc::new(cfgs);
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<(usize, RunOutcome)>();
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get()).min(n.max(1));
    for _ in 0..threads {
        let (cfgs, next, stop, tx) = (cfgs.clone(), next.clone(), stop.clone(), tx.clone());
        std::thread::spawn(move || loop {
            if stop.load(Ordering::SeqCst) || forefront_bench::interrupt::requested() {
                break;
            }
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= cfgs.len() {
                break;
            }
            let outcome = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&cfgs[i]))) {
                Ok(Ok(r)) => RunOutcome::Report(Box::new(r)),
                Ok(Err(e)) => RunOutcome::Failed(format!("the run failed: {e:#}")),
                Err(payload) => RunOutcome::Failed(forefront_sweep::panic_message(payload.as_ref())),
            };
            if tx.send((i, outcome)).is_err() {
                break;
            }
        });
    }
    drop(tx);
    let mut warned: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut handed = 0;
    let result = loop {
        if forefront_bench::interrupt::requested() {
            break Ok(false);
        }
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok((i, outcome)) => {
                if let RunOutcome::Report(r) = &outcome {
                    for w in &r.warnings {
                        *warned.entry(w.clone()).or_default() += 1;
                    }
                }
                if let Err(e) = done(i, outcome) {
                    break Err(e);
                }
                handed += 1;
                bar.inc(1);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break Ok(handed == n),
        }
    };
    stop.store(true, Ordering::SeqCst);
    bar.finish_and_clear();
    for (w, k) in warned {
        eprintln!("warning: {w} (in {k} run(s))");
    }
    result
}

fn compare_policies(c: CompareArgs) -> anyhow::Result<ExitCode> {
    let mut policies = c.policies.clone();
    if !policies.iter().any(|p| p == "android") {
        policies.insert(0, "android".into());
    }
    if c.ablation {
        let mut ablations = Policy::ablations();
        if policies.iter().any(|p| p.starts_with("qasio") || p.starts_with("forefront")) {
            ablations.extend(Policy::qasio_ablations());
        }
        for a in ablations {
            if !policies.iter().any(|p| p == a) {
                policies.push(a.to_string());
            }
        }
    }
    check_seeds(c.seed, c.seeds)?;
    let agent_cfg = match &c.agent_config {
        Some(path) => {
            anyhow::ensure!(
                policies.iter().any(|p| Policy::by_name(p).is_ok_and(|p| p.agent.is_some())),
                "--agent-config: no policy is the agent (add `--policy agent`)"
            );
            Some(forefront_policy::agent::config::Config::load(path)?)
        }
        None => None,
    };
    let base = |policy: &str, bg: u32, seed: u64| -> anyhow::Result<RunConfig> {
        let mut cfg = RunConfig::builtin(&c.scenario, policy, Some(bg), seed)?;
        if let Some(d) = &c.device {
            cfg.device = forefront_workload::load_device(d)?;
        }
        if let (Some(a), Some(agent)) = (&mut cfg.policy.agent, &agent_cfg) {
            **a = agent.clone();
        }
        Ok(cfg)
    };
    // Jobs: FG-only reference per seed, then every (bg, policy, seed).
    let mut cfgs = vec![];
    for s in 0..c.seeds {
        cfgs.push(base("android", 0, c.seed + s)?);
    }
    for &bg in &c.bg_apps {
        for p in &policies {
            for s in 0..c.seeds {
                cfgs.push(base(p, bg, c.seed + s)?);
            }
        }
    }
    check_all(&cfgs)?;
    let reports = run_all(&cfgs);
    let n = c.seeds as usize;
    let mean = |rs: &[RunReport], f: fn(&RunReport) -> f64| rs.iter().map(f).sum::<f64>() / rs.len() as f64;
    let t0 = mean(&reports[..n], |r| r.metrics.fg_ms);
    let mut cells = vec![];
    let mut k = n;
    for &bg in &c.bg_apps {
        let mut android: Option<(Option<f64>, f64)> = None;
        for p in &policies {
            let rs = &reports[k..k + n];
            k += n;
            let complete = rs.iter().all(|r| !r.metrics.fg_samples_ms.is_empty());
            let fg = complete.then(|| mean(rs, |r| r.metrics.fg_ms));
            let bgt = mean(rs, |r| r.metrics.bg_mb_per_s);
            if p == "android" {
                android = Some((fg, bgt));
            }
            let (ta, ba) = android.expect("android runs first");
            let mut hooks = std::collections::BTreeMap::new();
            for r in rs {
                for (h, v) in &r.hooks {
                    *hooks.entry(h.clone()).or_insert(0) += v;
                }
            }
            cells.push(CompareCell {
                policy: p.clone(),
                bg_apps: bg,
                samples: rs.iter().map(|r| r.metrics.fg_samples_ms.len()).sum(),
                fg_ms: fg.map(round1),
                fg_p50_ms: complete.then(|| round1(mean(rs, |r| r.metrics.fg_p50_ms))),
                fg_p99_ms: complete.then(|| round1(mean(rs, |r| r.metrics.fg_p99_ms))),
                // NaN without FG-only samples: no delay then.
                delay_ms: fg.map(|fg| fg - t0).filter(|d| d.is_finite()).map(round1),
                delay_reduction: match (fg, ta) {
                    (Some(fg), Some(ta)) if ta - t0 > 1e-6 => Some(round3(1.0 - (fg - t0) / (ta - t0))),
                    _ => None,
                },
                bg_mb_per_s: round1(bgt),
                bg_loss: (ba > 0.0).then(|| round3(1.0 - bgt / ba)),
                hooks,
            });
        }
    }
    let mut out = std::io::stdout().lock();
    let r0 = &reports[0];
    let summary = CompareSummary {
        scenario: r0.scenario.clone(),
        device: r0.device.clone(),
        scheduler: r0.scheduler.clone(),
        headline: r0.headline.clone(),
        seed: c.seed,
        seeds: c.seeds,
        fg_only_ms: Some(round1(t0)).filter(|t| t.is_finite()),
        cells,
    };
    match c.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &summary)?;
            writeln!(out)?;
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            w.write_record([
                "scenario",
                "policy",
                "bg_apps",
                "samples",
                "fg_ms",
                "fg_p50_ms",
                "fg_p99_ms",
                "fg_only_ms",
                "delay_ms",
                "delay_reduction",
                "bg_mb_per_s",
                "bg_loss",
            ])?;
            let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            for x in &summary.cells {
                w.write_record([
                    r0.scenario.clone(),
                    x.policy.clone(),
                    x.bg_apps.to_string(),
                    x.samples.to_string(),
                    opt(x.fg_ms),
                    opt(x.fg_p50_ms),
                    opt(x.fg_p99_ms),
                    or_dash(round1(t0), |t| t.to_string()).replace('–', ""),
                    opt(x.delay_ms),
                    opt(x.delay_reduction),
                    x.bg_mb_per_s.to_string(),
                    opt(x.bg_loss),
                ])?;
            }
            w.flush()?;
        }
        Format::Table => {
            writeln!(
                out,
                "{} on {} ({}), headline `{}`, seeds {}..{}: FG only {} ms",
                r0.scenario,
                r0.device,
                r0.scheduler,
                r0.headline,
                c.seed,
                c.seed + c.seeds - 1,
                or_dash(t0, |t| format!("{t:.1}"))
            )?;
            // The table the HTML report shows for this output (forefront_report::table).
            out.write_all(forefront_report::table::compare(&summary).markdown().as_bytes())?;
            let unfinished = summary.cells.iter().any(|x| x.fg_ms.is_none());
            if unfinished {
                writeln!(out, "\n–: in at least one run the FG app finished no headline phase within the scenario's duration ({:.0} s of simulated time).", cfgs[0].scenario.duration_s)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn replay(a: ReplayArgs) -> anyhow::Result<ExitCode> {
    use forefront_record::trace::TraceRecord;
    use forefront_sim::replay::{block_scenario, syscall_scenario, Timing};
    let format = forefront_trace::InputFormat::from_name(&a.input_format).expect("clap checked the value");
    let opts = forefront_trace::ReadOptions { format, lenient: a.lenient };
    let mut reader = forefront_trace::TraceReader::open(&a.files, &opts)?;
    let (mut calls, mut blocks) = (Vec::new(), Vec::new());
    for r in &mut reader {
        match r? {
            TraceRecord::Syscall(c) => calls.push(c),
            TraceRecord::Block(b) => blocks.push(b),
            _ => {}
        }
    }
    if reader.warnings().count > 0 {
        eprintln!("warning: {} trace problem(s) skipped (--lenient)", reader.warnings().count);
    }
    // --fg (the rule of `trace stats` and `trace convert`): thread ids and process names,
    // each of which must match a thread of the trace; the threads they select are the app.
    let sel = forefront_trace::stats::FgSelector::parse(&a.fg);
    let mut fg_tids: Vec<u32> = vec![];
    if !sel.is_empty() && !calls.is_empty() {
        let present = forefront_trace::stats::TraceNames {
            ids: calls.iter().map(|c| c.tid).collect(),
            comms: calls.iter().filter_map(|c| c.comm.clone()).collect(),
        };
        sel.check(&present)?;
        let tids: std::collections::BTreeSet<u32> =
            calls.iter().filter(|c| sel.matches(c.tid, c.comm.as_deref())).map(|c| c.tid).collect();
        fg_tids.extend(tids);
    }
    let timing = if a.timing == "afap" { Timing::Afap } else { Timing::Trace };
    let name = a.files.first().and_then(|f| f.file_name()).map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    let devices = if a.devices.is_empty() { vec!["galaxy-s5-emmc".to_string()] } else { a.devices.clone() };
    let build = |device: &str, capacity: u64| -> anyhow::Result<_> {
        let r = if !calls.is_empty() {
            syscall_scenario(&name, &calls, &fg_tids, timing, device, capacity)
        } else if !a.fg.is_empty() {
            Err("--fg selects threads of a syscall trace; this is a block trace".into())
        } else {
            block_scenario(&name, &blocks, timing, device, capacity)
        };
        r.map_err(|e| anyhow::anyhow!("{name}: {e}"))
    };
    let mut cfgs = vec![];
    let mut skipped = None;
    for d in &devices {
        let device = forefront_workload::load_device(d)?;
        let (scenario, sk) = build(d, device.capacity_gib.saturating_mul(1 << 30))?;
        skipped.get_or_insert(sk);
        let policy = Policy::by_name(&a.policy)?;
        cfgs.push(RunConfig { scenario, device, policy, bg_apps: 0, seed: a.seed });
        let bg = cfgs.last().expect("pushed").scenario.bg_apps;
        cfgs.last_mut().expect("pushed").bg_apps = bg;
    }
    if let Some(sk) = &skipped {
        let left: u64 = sk.calls.values().sum();
        eprintln!(
            "replaying {} of {} records ({} not file I/O: {})",
            sk.replayed,
            sk.replayed + left,
            left,
            sk.calls.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        );
    }
    let inputs: Vec<&std::path::Path> =
        a.files.iter().map(|f| f.as_path()).chain(a.devices.iter().map(std::path::Path::new)).collect();
    let mut reports = vec![run_with_trace(&cfgs[0], a.trace.trace_out.as_deref(), a.trace.force, &inputs)?];
    reports.extend(run_all(&cfgs[1..]));
    let mut out = std::io::stdout().lock();
    match a.format {
        Format::Json if reports.len() == 1 => {
            serde_json::to_writer_pretty(&mut out, &reports[0])?;
            writeln!(out)?;
        }
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &reports)?;
            writeln!(out)?;
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            w.write_record(CSV_HEADER.iter().chain(&["runtime_s"]))?;
            for r in &reports {
                let mut row = csv_row(r);
                row.push((r.stats.sim_ms / 1e3).to_string());
                w.write_record(row)?;
            }
            w.flush()?;
        }
        Format::Table => {
            writeln!(out, "replay of {name} ({} timing), policy {}", a.timing, a.policy)?;
            writeln!(
                out,
                "| device | runtime s | FG threads | mean thread ms | p99 thread ms | device MB read | device MB written |"
            )?;
            writeln!(out, "|---|---|---|---|---|---|---|")?;
            for r in &reports {
                let m = &r.metrics;
                writeln!(
                    out,
                    "| {} | {:.2} | {} | {} | {} | {:.1} | {:.1} |",
                    r.device,
                    r.stats.sim_ms / 1e3,
                    m.fg_samples_ms.len(),
                    or_dash(m.fg_ms, |v| format!("{v:.1}")),
                    or_dash(m.fg_p99_ms, |v| format!("{v:.1}")),
                    m.device_read_mb,
                    m.device_written_mb
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
