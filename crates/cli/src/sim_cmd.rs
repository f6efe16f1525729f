//! `forefront sim`: the simulator's command line.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use forefront_model::block::SchedulerConfig;
use forefront_policy::Policy;
use forefront_record::run::RunReport;
use forefront_sim::{run as sim_run, RunConfig};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimArgs {
    #[command(subcommand)]
    command: Option<SimCommand>,
    /// With no subcommand: seed of the comparison runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// With no subcommand: background apps of the comparison (default: the scenario's).
    #[arg(long)]
    bg_apps: Option<u32>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Subcommand)]
enum SimCommand {
    /// Run one scenario under one policy.
    Run(RunArgs),
    /// List built-in scenarios, policies, devices and I/O schedulers.
    List,
}

#[derive(Args)]
struct RunArgs {
    /// A built-in scenario name (see `forefront sim list`) or a path to a scenario TOML file.
    scenario: String,
    #[arg(long, default_value = "android")]
    policy: String,
    /// Background app instances (default: the scenario's `bg_apps`).
    #[arg(long)]
    bg_apps: Option<u32>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Override the scenario's device: a built-in name or a device TOML file.
    #[arg(long)]
    device: Option<String>,
    /// Override the scenario's I/O scheduler (kernel-default tunables).
    #[arg(long, value_parser = ["noop", "deadline", "cfq"])]
    scheduler: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
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
        None => compare(args.seed, args.bg_apps, args.format),
    }
}

fn list() -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "scenarios:")?;
    for n in forefront_workload::scenario_names() {
        let s = forefront_workload::builtin_scenario(n)?;
        writeln!(out, "  {n:<16} {} (headline: {}, device: {}, bg_apps: {})", s.description, s.headline, s.device, s.bg_apps)?;
    }
    writeln!(out, "policies:")?;
    for n in Policy::names() {
        writeln!(out, "  {n:<16} {}", Policy::by_name(n)?.description)?;
    }
    writeln!(out, "devices:")?;
    for n in forefront_workload::device_names() {
        writeln!(out, "  {n:<16} {}", forefront_workload::builtin_device(n)?.description)?;
    }
    writeln!(out, "schedulers:")?;
    for s in SchedulerConfig::all() {
        writeln!(out, "  {}", s.name())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn config(r: &RunArgs) -> anyhow::Result<RunConfig> {
    let mut cfg = RunConfig::builtin(&r.scenario, &r.policy, r.bg_apps, r.seed)?;
    if let Some(d) = &r.device {
        cfg.device = forefront_workload::load_device(d)?;
    }
    if let Some(s) = &r.scheduler {
        cfg.scenario.phone.scheduler =
            SchedulerConfig::all().into_iter().find(|c| c.name() == s).context("scheduler")?;
    }
    Ok(cfg)
}

fn run_one(r: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&r)?;
    let report = sim_run(&cfg);
    let mut out = std::io::stdout().lock();
    match r.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
        Format::Csv => {
            writeln!(out, "{}", CSV_HEADER)?;
            writeln!(out, "{}", csv_row(&report))?;
        }
        Format::Table => print_report(&mut out, &report)?,
    }
    Ok(ExitCode::SUCCESS)
}

const CSV_HEADER: &str = "scenario,policy,device,scheduler,seed,bg_apps,fg_ms,fg_p50_ms,fg_p90_ms,fg_p99_ms,fg_max_ms,bg_mb_per_s,samples";

fn csv_row(r: &RunReport) -> String {
    let m = &r.metrics;
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{}",
        r.scenario, r.policy, r.device, r.scheduler, r.seed, r.bg_apps, m.fg_ms, m.fg_p50_ms, m.fg_p90_ms, m.fg_p99_ms,
        m.fg_max_ms, m.bg_mb_per_s, m.fg_samples_ms.len()
    )
}

fn print_report(out: &mut impl Write, r: &RunReport) -> std::io::Result<()> {
    let m = &r.metrics;
    writeln!(out, "scenario {} · policy {} · device {} · {} · {} bg apps · seed {}", r.scenario, r.policy, r.device, r.scheduler, r.bg_apps, r.seed)?;
    writeln!(out, "headline `{}`: {} samples", r.headline, m.fg_samples_ms.len())?;
    writeln!(out, "  mean {:>9.1} ms   p50 {:>9.1}   p90 {:>9.1}   p99 {:>9.1}   max {:>9.1}", m.fg_ms, m.fg_p50_ms, m.fg_p90_ms, m.fg_p99_ms, m.fg_max_ms)?;
    writeln!(out, "background: {:.2} MB/s ({:.1} MB read, {:.1} MB written by BG apps)", m.bg_mb_per_s, m.bg_read_mb, m.bg_written_mb)?;
    writeln!(out, "device: {:.1} MB read, {:.1} MB written, {} reorders", m.device_read_mb, m.device_written_mb, m.device_reorders)?;
    writeln!(out, "per-layer time of the headline operation (mean ms per sample):")?;
    for (k, v) in &r.breakdown {
        if *v > 0.0 {
            writeln!(out, "  {k:<22} {v:>9.2}")?;
        }
    }
    writeln!(out, "policy hooks fired:")?;
    for (k, v) in &r.hooks {
        writeln!(out, "  {k:<30} {v}")?;
    }
    writeln!(out, "stats: {} events in {:.0} ms wall for {:.0} ms simulated ({:.2} M events/s)", r.stats.events, r.stats.wall_ms, r.stats.sim_ms, r.stats.events_per_s / 1e6)?;
    Ok(())
}

/// The default job: the default scenario alone (FG only) and under every policy with BG apps.
fn compare(seed: u64, bg_apps: Option<u32>, format: Format) -> anyhow::Result<ExitCode> {
    let scenario = forefront_workload::DEFAULT_SCENARIO;
    let alone = sim_run(&RunConfig::builtin(scenario, "android", Some(0), seed)?);
    let mut reports = vec![];
    for p in Policy::names() {
        reports.push(sim_run(&RunConfig::builtin(scenario, p, bg_apps, seed)?));
    }
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            let v = serde_json::json!({ "fg_only": alone, "runs": reports });
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        Format::Csv => {
            writeln!(out, "{CSV_HEADER}")?;
            writeln!(out, "{}", csv_row(&alone))?;
            for r in &reports {
                writeln!(out, "{}", csv_row(r))?;
            }
        }
        Format::Table => {
            let t0 = alone.metrics.fg_ms;
            writeln!(out, "scenario {scenario} on {} ({}), seed {seed}: headline `{}`", alone.device, alone.scheduler, alone.headline)?;
            writeln!(out, "{:<22} {:>7} {:>10} {:>10} {:>10} {:>12} {:>12}", "run", "bg_apps", "mean ms", "p50 ms", "p99 ms", "BG delay ms", "BG MB/s")?;
            writeln!(out, "{:<22} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>12} {:>12.2}", "FG only (reference)", 0, t0, alone.metrics.fg_p50_ms, alone.metrics.fg_p99_ms, "-", alone.metrics.bg_mb_per_s)?;
            for r in &reports {
                let m = &r.metrics;
                writeln!(out, "{:<22} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>12.2}", r.policy, r.bg_apps, m.fg_ms, m.fg_p50_ms, m.fg_p99_ms, m.fg_ms - t0, m.bg_mb_per_s)?;
            }
            writeln!(out, "BG delay = mean FG latency − FG-only mean. `forefront sim run {scenario} --policy P` shows a run's per-layer breakdown.")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
