//! `forefront sim`: the simulator's command line.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use forefront_model::block::SchedulerConfig;
use forefront_model::cpu::SchedKind;
use forefront_policy::Policy;
use forefront_record::run::RunReport;
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
    ///   scenario = "launch-update"            # built-in name or a scenario file
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
    /// what they `execve`) or a thread id; repeatable. Its threads' calls are the measured app,
    /// the others run as a background app. A value that matches nothing is an error that lists
    /// names the trace has (the rule of `trace stats --fg` and `trace convert --fg`). Without
    /// --fg there is no FG/BG split: the whole trace is the measured app.
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
    /// Output: a markdown table, or json/csv.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Args)]
struct RunArgs {
    /// A built-in scenario name (see `forefront sim list`) or a path to a scenario TOML file.
    scenario: String,
    /// Policy (see `forefront sim list`; `POLICY+COMPONENT` combinations too, e.g.
    /// `android+ft-device`, `fasttrack+qa-boost`).
    #[arg(long, default_value = "android")]
    policy: String,
    /// Background app instances (default: the scenario's `bg_apps`).
    #[arg(long)]
    bg_apps: Option<u32>,
    /// Busy background cells, for scenarios with virtual phones (`[[cell]]`; default: the
    /// scenario's `bg_cells`).
    #[arg(long)]
    bg_cells: Option<u32>,
    /// Seed of the run's random streams (same seed, same output).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Override the scenario's device: a built-in name or a device TOML file.
    #[arg(long)]
    device: Option<String>,
    /// Override the scenario's I/O scheduler (kernel-default tunables).
    #[arg(long, value_parser = ["noop", "deadline", "cfq"])]
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
        Some(SimCommand::Sweep(a)) => crate::sim_sweep::sweep(a, run_all),
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
    Ok(ExitCode::SUCCESS)
}

fn config(r: &RunArgs) -> anyhow::Result<RunConfig> {
    let mut cfg = RunConfig::builtin(&r.scenario, &r.policy, r.bg_apps, r.seed)?;
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
    Ok(cfg)
}

fn run_one(r: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&r)?;
    let report = run_with_trace(&cfg, r.trace.trace_out.as_deref(), r.trace.force)?;
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

/// Run, writing the Perfetto export to `trace_out` when given.
pub fn run_with_trace(cfg: &RunConfig, trace_out: Option<&std::path::Path>, force: bool) -> anyhow::Result<RunReport> {
    let Some(path) = trace_out else { return Ok(sim_run(cfg)) };
    anyhow::ensure!(force || !path.exists(), "{} exists; pass --force to overwrite it", path.display());
    let (report, trace) = forefront_sim::run_traced(cfg, true);
    let forefront_sim::RunTrace { records, fg_tids, threads } = trace.expect("asked for a trace");
    let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let fg = forefront_trace::stats::FgSelector { pids: fg_tids, comms: vec![] };
    let mut w = forefront_trace::perfetto::PerfettoWriter::new(std::io::BufWriter::new(file), fg)?;
    // One Perfetto process per app, a track "app/thread" per thread.
    w.name_threads(threads);
    for r in &records {
        w.add(r)?;
    }
    let mut out = w.finish()?;
    out.flush()?;
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
    v.extend([m.fg_ms, m.fg_p50_ms, m.fg_p90_ms, m.fg_p99_ms, m.fg_max_ms, m.bg_mb_per_s].iter().map(f64::to_string));
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
    writeln!(
        out,
        "  mean {:>9.1} ms   p50 {:>9.1}   p90 {:>9.1}   p99 {:>9.1}   max {:>9.1}",
        m.fg_ms, m.fg_p50_ms, m.fg_p90_ms, m.fg_p99_ms, m.fg_max_ms
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
    anyhow::ensure!(seeds >= 1, "--seeds must be at least 1");
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
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
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
                let delay = if k == 0 { "-".to_string() } else { format!("{:.1}", mean(v) - t0) };
                let (p50, p99) = (forefront_sim::percentile(v, 50.0), forefront_sim::percentile(v, 99.0));
                writeln!(
                    out,
                    "{:<22} {:>7} {:>8} {:>10.1} {:>10.1} {:>10.1} {:>12} {:>10.2}",
                    name,
                    n,
                    v.len(),
                    mean(v),
                    p50,
                    p99,
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

/// One cell of a comparison: a policy at a background-app count, averaged over seeds.
#[derive(serde::Serialize)]
struct Cell {
    policy: String,
    bg_apps: u32,
    /// Headline samples over all seeds; a run with none (the FG app never finished a headline
    /// phase within the scenario's duration) leaves the latency fields null.
    samples: usize,
    fg_ms: Option<f64>,
    fg_p50_ms: Option<f64>,
    fg_p99_ms: Option<f64>,
    /// T_policy − T_fg_only (ms).
    delay_ms: Option<f64>,
    /// 1 − (T_policy − T_fg_only) / (T_android − T_fg_only); null where android shows no delay.
    delay_reduction: Option<f64>,
    bg_mb_per_s: f64,
    /// 1 − BG throughput / BG throughput under android.
    bg_loss: Option<f64>,
    hooks: std::collections::BTreeMap<String, u64>,
}

/// Run `cfgs` on up to `available_parallelism` threads (parallelism across runs, never inside
/// one); results come back in input order.
///
/// On a terminal, stderr shows a progress bar (runs done of all, elapsed, estimate); piped or
/// redirected output shows nothing.
fn run_all(cfgs: &[RunConfig]) -> Vec<RunReport> {
    use std::io::IsTerminal;
    let bar = indicatif::ProgressBar::hidden();
    if std::io::stderr().is_terminal() && cfgs.len() > 1 {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} (about {eta} left)")
                .expect("valid template"),
        );
        bar.set_length(cfgs.len() as u64);
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
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
    anyhow::ensure!(c.seeds >= 1, "--seeds must be at least 1");
    let base = |policy: &str, bg: u32, seed: u64| -> anyhow::Result<RunConfig> {
        let mut cfg = RunConfig::builtin(&c.scenario, policy, Some(bg), seed)?;
        if let Some(d) = &c.device {
            cfg.device = forefront_workload::load_device(d)?;
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
            cells.push(Cell {
                policy: p.clone(),
                bg_apps: bg,
                samples: rs.iter().map(|r| r.metrics.fg_samples_ms.len()).sum(),
                fg_ms: fg.map(round1),
                fg_p50_ms: complete.then(|| round1(mean(rs, |r| r.metrics.fg_p50_ms))),
                fg_p99_ms: complete.then(|| round1(mean(rs, |r| r.metrics.fg_p99_ms))),
                delay_ms: fg.map(|fg| round1(fg - t0)),
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
    match c.format {
        Format::Json => {
            let v = serde_json::json!({
                "scenario": r0.scenario, "device": r0.device, "scheduler": r0.scheduler,
                "headline": r0.headline, "seed": c.seed, "seeds": c.seeds,
                "fg_only_ms": round1(t0), "cells": cells,
            });
            serde_json::to_writer_pretty(&mut out, &v)?;
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
            for x in &cells {
                w.write_record([
                    r0.scenario.clone(),
                    x.policy.clone(),
                    x.bg_apps.to_string(),
                    x.samples.to_string(),
                    opt(x.fg_ms),
                    opt(x.fg_p50_ms),
                    opt(x.fg_p99_ms),
                    round1(t0).to_string(),
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
                "{} on {} ({}), headline `{}`, seeds {}..{}: FG only {:.1} ms",
                r0.scenario,
                r0.device,
                r0.scheduler,
                r0.headline,
                c.seed,
                c.seed + c.seeds - 1,
                t0
            )?;
            writeln!(
                out,
                "| BG apps | policy | samples | FG mean ms | p50 | p99 | delay ms | delay reduction | BG MB/s | BG loss |"
            )?;
            writeln!(out, "|---|---|---|---|---|---|---|---|---|---|")?;
            let mut unfinished = false;
            for x in &cells {
                let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{:.0}%", v * 100.0));
                let ms = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
                unfinished |= x.fg_ms.is_none();
                writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} |",
                    x.bg_apps,
                    x.policy,
                    x.samples,
                    ms(x.fg_ms),
                    ms(x.fg_p50_ms),
                    ms(x.fg_p99_ms),
                    ms(x.delay_ms),
                    pct(x.delay_reduction),
                    x.bg_mb_per_s,
                    pct(x.bg_loss)
                )?;
            }
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
    let mut reports = vec![run_with_trace(&cfgs[0], a.trace.trace_out.as_deref(), a.trace.force)?];
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
                    "| {} | {:.2} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                    r.device,
                    r.stats.sim_ms / 1e3,
                    m.fg_samples_ms.len(),
                    m.fg_ms,
                    m.fg_p99_ms,
                    m.device_read_mb,
                    m.device_written_mb
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
