//! `forefront sim interactivity`: FTC + VT-CFS's figures — response, dispatch and preemption
//! latency per policy and background-app count, their reductions against stock CFS, and the
//! sweep of VT-CFS's preemption tick λ (context-switch overhead against dispatch latency).

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use forefront_policy::Policy;
use forefront_record::run::{InteractivitySummary, RunReport, TickPoint, UiCell, UiMetrics};
use forefront_sim::RunConfig;

#[derive(Args)]
pub struct InteractivityArgs {
    /// A built-in scenario name or a scenario TOML file with input events.
    #[arg(default_value = "ftc-photo-editor")]
    scenario: String,
    /// Policies (comma-separated; `android`, stock CFS, is always included as the baseline).
    #[arg(long = "policy", value_delimiter = ',', default_values_t = Policy::cpu_policies().into_iter().map(String::from))]
    policies: Vec<String>,
    /// Background-app counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1, 2, 3])]
    bg_apps: Vec<u32>,
    /// VT-CFS ticks λ (ms) to sweep, for every policy on VT-CFS.
    #[arg(long, value_delimiter = ',', default_values_t = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0])]
    tick_ms: Vec<f64>,
    /// Skip the λ sweep.
    #[arg(long)]
    no_sweep: bool,
    /// Background apps during the λ sweep (default: the largest of --bg-apps).
    #[arg(long)]
    sweep_bg_apps: Option<u32>,
    /// First seed; seeds S..S+N are run and their figures averaged.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Output: markdown tables, or the JSON that `forefront report` charts.
    #[arg(long, value_enum, default_value_t = UiFormat::Table)]
    format: UiFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum UiFormat {
    Table,
    Json,
}

pub fn run(a: InteractivityArgs, run_all: fn(&[RunConfig]) -> Vec<RunReport>) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(a.seeds >= 1, "--seeds must be at least 1");
    anyhow::ensure!(!a.bg_apps.is_empty(), "--bg-apps needs at least one count");
    if let Some(t) = a.tick_ms.iter().find(|t| !(t.is_finite() && **t >= 0.01 && **t <= 1000.0)) {
        anyhow::bail!("--tick-ms: {t} is not in [0.01, 1000]");
    }
    let mut policies = a.policies.clone();
    if !policies.iter().any(|p| p == "android") {
        policies.insert(0, "android".into());
    }
    let base = |policy: &str, bg: u32, seed: u64| -> anyhow::Result<RunConfig> {
        Ok(RunConfig::builtin(&a.scenario, policy, Some(bg), seed)?)
    };
    let probe = base("android", 0, a.seed)?;
    anyhow::ensure!(
        scenario_has_input(&probe.scenario),
        "{}: the scenario has no `input` op, so there is no interaction to measure (try ftc-photo-editor)",
        a.scenario
    );
    let sweep_bg = a.sweep_bg_apps.unwrap_or_else(|| a.bg_apps.iter().copied().max().unwrap_or(0));
    let vt_policies: Vec<&String> = if a.no_sweep {
        vec![]
    } else {
        policies.iter().filter(|p| Policy::by_name(p).map(|p| p.vt_cfs).unwrap_or(false)).collect()
    };

    let mut cfgs = vec![];
    for &bg in &a.bg_apps {
        for p in &policies {
            for s in 0..a.seeds {
                cfgs.push(base(p, bg, a.seed + s)?);
            }
        }
    }
    let cells_end = cfgs.len();
    for p in &vt_policies {
        for &tick in &a.tick_ms {
            for s in 0..a.seeds {
                let mut c = base(p, sweep_bg, a.seed + s)?;
                c.scenario.phone.cpu.tick_ms = tick;
                cfgs.push(c);
            }
        }
    }
    let reports = run_all(&cfgs);
    let n = a.seeds as usize;
    let mean = |rs: &[RunReport], f: &dyn Fn(&RunReport, &UiMetrics) -> f64| {
        rs.iter().map(|r| f(r, r.metrics.ui.as_ref().expect("interactivity figures"))).sum::<f64>() / rs.len() as f64
    };
    let per_s = |r: &RunReport, v: u64| v as f64 / (r.stats.sim_ms / 1e3).max(1e-9);
    // A reduction is relative to stock CFS's figure; below 50 µs (ten context switches) a
    // latency is noise, and a ratio of two of them means nothing.
    let reduction = |p: f64, stock: f64, floor: f64| (stock > floor).then(|| round3(1.0 - p / stock));

    let mut cells: Vec<UiCell> = vec![];
    for (k, rs) in reports[..cells_end].chunks(n).enumerate() {
        let (bg, policy) = (a.bg_apps[k / policies.len()], &policies[k % policies.len()]);
        let mut cell = UiCell {
            policy: policy.clone(),
            bg_apps: bg,
            cpu_scheduler: rs[0].metrics.ui.as_ref().map_or_else(String::new, |u| u.cpu_scheduler.clone()),
            headline_p50_ms: round3(mean(rs, &|r, _| r.metrics.fg_p50_ms)),
            headline_p99_ms: round3(mean(rs, &|r, _| r.metrics.fg_p99_ms)),
            response_p50_ms: round3(mean(rs, &|_, u| u.response_p50_ms)),
            response_p99_ms: round3(mean(rs, &|_, u| u.response_p99_ms)),
            dispatch_p50_ms: round3(mean(rs, &|_, u| u.dispatch_p50_ms)),
            dispatch_p99_ms: round3(mean(rs, &|_, u| u.dispatch_p99_ms)),
            preempt_p50_ms: round3(mean(rs, &|_, u| u.preempt_p50_ms)),
            preempt_p99_ms: round3(mean(rs, &|_, u| u.preempt_p99_ms)),
            frame_misses: round3(mean(rs, &|_, u| u.frame_misses as f64)),
            context_switches_per_s: round3(mean(rs, &|r, u| per_s(r, u.context_switches))),
            bg_cpu_share: round3(mean(rs, &|_, u| u.bg_cpu_share)),
            headline_p50_reduction: None,
            headline_p99_reduction: None,
            dispatch_p99_reduction: None,
            preempt_p99_reduction: None,
        };
        if let Some(stock) = cells.iter().find(|c| c.policy == "android" && c.bg_apps == bg) {
            cell.headline_p50_reduction = reduction(cell.headline_p50_ms, stock.headline_p50_ms, 0.0);
            cell.headline_p99_reduction = reduction(cell.headline_p99_ms, stock.headline_p99_ms, 0.0);
            cell.dispatch_p99_reduction = reduction(cell.dispatch_p99_ms, stock.dispatch_p99_ms, 0.05);
            cell.preempt_p99_reduction = reduction(cell.preempt_p99_ms, stock.preempt_p99_ms, 0.05);
        }
        cells.push(cell);
    }
    let mut tick_sweep = vec![];
    for (k, rs) in reports[cells_end..].chunks(n).enumerate() {
        let (policy, tick) = (vt_policies[k / a.tick_ms.len()], a.tick_ms[k % a.tick_ms.len()]);
        tick_sweep.push(TickPoint {
            policy: policy.clone(),
            tick_ms: tick,
            context_switches_per_s: round3(mean(rs, &|r, u| per_s(r, u.context_switches))),
            tick_preemptions_per_s: round3(mean(rs, &|r, u| per_s(r, u.tick_preemptions))),
            dispatch_p50_ms: round3(mean(rs, &|_, u| u.dispatch_p50_ms)),
            dispatch_p99_ms: round3(mean(rs, &|_, u| u.dispatch_p99_ms)),
            preempt_p99_ms: round3(mean(rs, &|_, u| u.preempt_p99_ms)),
            headline_p50_ms: round3(mean(rs, &|r, _| r.metrics.fg_p50_ms)),
            headline_p99_ms: round3(mean(rs, &|r, _| r.metrics.fg_p99_ms)),
            bg_cpu_share: round3(mean(rs, &|_, u| u.bg_cpu_share)),
        });
    }
    let r0 = &reports[0];
    let summary = InteractivitySummary {
        scenario: r0.scenario.clone(),
        device: r0.device.clone(),
        headline: r0.headline.clone(),
        seed: a.seed,
        seeds: a.seeds,
        tick_ms: probe.scenario.phone.cpu.tick_ms,
        cells,
        sweep_bg_apps: sweep_bg,
        tick_sweep,
    };
    let mut out = std::io::stdout().lock();
    match a.format {
        UiFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &summary)?;
            writeln!(out)?;
        }
        UiFormat::Table => print_tables(&mut out, &summary)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn scenario_has_input(sc: &forefront_workload::Scenario) -> bool {
    fn any(ops: &[forefront_workload::Op]) -> bool {
        ops.iter().any(|op| match op {
            forefront_workload::Op::Input { .. } => true,
            forefront_workload::Op::Repeat { ops, .. } => any(ops),
            _ => false,
        })
    }
    sc.apps.iter().any(|a| a.threads.iter().any(|t| any(&t.ops)))
}

fn print_tables(out: &mut impl Write, s: &InteractivitySummary) -> std::io::Result<()> {
    let seeds = format!("seeds {}..{}", s.seed, s.seed + s.seeds - 1);
    let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{:.0}%", v * 100.0));
    writeln!(out, "{} on {}, {seeds}: `{}` = the headline interaction (input → its frame on screen); all = every interaction; dispatch/preemption = run-queue waits of the interactive chain's tasks (ms); VT-CFS tick {} ms; red. = reduction against android (stock CFS), – where android's latency is under 0.05 ms", s.scenario, s.device, s.headline, s.tick_ms)?;
    writeln!(out)?;
    writeln!(out, "| BG apps | policy | CPU | {h} p50 | {h} p99 | all p50 | all p99 | dispatch p50 | dispatch p99 | preempt p50 | preempt p99 | missed frames | switches/s | BG CPU | {h} p50 red. | {h} p99 red. | dispatch p99 red. | preempt p99 red. |", h = s.headline)?;
    writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    for c in &s.cells {
        writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.0} | {:.0}% | {} | {} | {} | {} |",
            c.bg_apps, c.policy, c.cpu_scheduler, c.headline_p50_ms, c.headline_p99_ms, c.response_p50_ms, c.response_p99_ms,
            c.dispatch_p50_ms, c.dispatch_p99_ms, c.preempt_p50_ms, c.preempt_p99_ms, c.frame_misses, c.context_switches_per_s,
            c.bg_cpu_share * 100.0, pct(c.headline_p50_reduction), pct(c.headline_p99_reduction), pct(c.dispatch_p99_reduction),
            pct(c.preempt_p99_reduction)
        )?;
    }
    if !s.tick_sweep.is_empty() {
        writeln!(out)?;
        writeln!(out, "VT-CFS tick λ sweep with {} BG apps ({seeds}): overhead (context switches and tick preemptions per simulated second) against latency", s.sweep_bg_apps)?;
        writeln!(out)?;
        writeln!(out, "| policy | λ ms | switches/s | tick preemptions/s | dispatch p50 | dispatch p99 | preempt p99 | {h} p50 | {h} p99 | BG CPU |", h = s.headline)?;
        writeln!(out, "|---|---|---|---|---|---|---|---|---|---|")?;
        for t in &s.tick_sweep {
            writeln!(
                out,
                "| {} | {} | {:.0} | {:.0} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} | {:.0}% |",
                t.policy,
                t.tick_ms,
                t.context_switches_per_s,
                t.tick_preemptions_per_s,
                t.dispatch_p50_ms,
                t.dispatch_p99_ms,
                t.preempt_p99_ms,
                t.headline_p50_ms,
                t.headline_p99_ms,
                t.bg_cpu_share * 100.0
            )?;
        }
    }
    Ok(())
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
