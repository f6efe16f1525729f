//! `forefront sim cells`: Cells' (SOSP'11) questions in one run — the overhead of running the
//! foreground workload in a virtual phone (plain phone, one cell, five cells), the foreground
//! cell's delay with 0–N busy background cells per policy, and the time of a cell switch.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use forefront_record::cells::{CellsSummary, DelayRow, OverheadRow, SwitchRow};
use forefront_record::run::RunReport;
use forefront_sim::RunConfig;

#[derive(Args)]
pub struct CellsArgs {
    /// The launch scenario (overhead and delay): a built-in name or a TOML file with `[[cell]]`.
    #[arg(default_value = "cells-nexus-s")]
    scenario: String,
    /// The cell-switch scenario.
    #[arg(long, default_value = "cells-switch")]
    switch_scenario: String,
    /// Policies (comma-separated).
    #[arg(long = "policy", value_delimiter = ',', default_values_t = ["android", "fasttrack", "qasio", "forefront"].map(String::from))]
    policies: Vec<String>,
    /// Busy background-cell counts for the delay table.
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1, 2, 3, 4])]
    bg_cells: Vec<u32>,
    /// Busy background-cell counts for the switch table (the switch scenario needs one idle
    /// cell to switch to, so at most `total` − 2).
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1, 2, 3])]
    switch_bg_cells: Vec<u32>,
    /// Run both scenarios on this device instead of theirs (a built-in name or a device file).
    #[arg(long)]
    device: Option<String>,
    /// First seed; seeds S..S+N are run and their figures averaged.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    #[arg(long, value_enum, default_value_t = CellsFormat::Table)]
    format: CellsFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum CellsFormat {
    Table,
    Json,
}

pub fn run(a: CellsArgs, run_all: fn(&[RunConfig]) -> Vec<RunReport>) -> anyhow::Result<ExitCode> {
    let max = forefront_workload::limits::MAX_SEEDS;
    anyhow::ensure!((1..=max).contains(&a.seeds), "--seeds must be in 1..={max}, got {}", a.seeds);
    anyhow::ensure!(!a.policies.is_empty() && !a.bg_cells.is_empty(), "--policy and --bg-cells need at least one value");
    let device = a.device.as_deref().map(forefront_workload::load_device).transpose()?;
    let cfg = |scenario: &str, policy: &str, busy: u32, seed: u64| -> anyhow::Result<RunConfig> {
        let mut c = RunConfig::builtin(scenario, policy, None, seed)?;
        if let Some(d) = &device {
            c.device = d.clone();
        }
        anyhow::ensure!(!c.scenario.cells.is_empty(), "{scenario}: the scenario has no virtual phones ([[cell]])");
        c.scenario.bg_cells = busy;
        crate::sim_cmd::check_all(std::slice::from_ref(&c))?;
        Ok(c)
    };
    let probe = cfg(&a.scenario, "android", 0, a.seed)?;
    let total = probe.scenario.cells_params.total.max(1);
    let switch_total = cfg(&a.switch_scenario, "android", 0, a.seed)?.scenario.cells_params.total;
    if let Some(n) = a.switch_bg_cells.iter().find(|&&n| n.saturating_add(2) > switch_total) {
        anyhow::bail!(
            "--switch-bg-cells {n}: {} has {switch_total} cells, and the switch needs the home cell and an idle one",
            a.switch_scenario
        );
    }

    // Overhead: the same workload, no busy cell, on the plain phone, in one cell, in `total`.
    let setups: Vec<(String, Option<u32>)> = vec![
        ("plain phone".into(), None),
        ("1 cell".into(), Some(1)),
        (format!("{total} cells ({} idle)", total - 1), Some(total)),
    ];
    let mut cfgs = vec![];
    for (_, cells) in &setups {
        for s in 0..a.seeds {
            let mut c = cfg(&a.scenario, "android", 0, a.seed + s)?;
            match cells {
                None => c.scenario.cells_params.virtualize = false,
                Some(n) => c.scenario.cells_params.total = *n,
            }
            cfgs.push(c);
        }
    }
    let delay_start = cfgs.len();
    for p in &a.policies {
        for &busy in &a.bg_cells {
            for s in 0..a.seeds {
                cfgs.push(cfg(&a.scenario, p, busy, a.seed + s)?);
            }
        }
    }
    let switch_start = cfgs.len();
    for p in &a.policies {
        for &busy in &a.switch_bg_cells {
            for s in 0..a.seeds {
                cfgs.push(cfg(&a.switch_scenario, p, busy, a.seed + s)?);
            }
        }
    }
    let reports = run_all(&cfgs);
    let n = a.seeds as usize;
    let mean = |rs: &[RunReport], f: &dyn Fn(&RunReport) -> f64| round3(rs.iter().map(f).sum::<f64>() / rs.len() as f64);

    let mut overhead: Vec<OverheadRow> = vec![];
    for (k, rs) in reports[..delay_start].chunks(n).enumerate() {
        let m = mean(rs, &|r| r.metrics.fg_ms);
        let layers: BTreeMap<String, f64> = rs[0].breakdown.keys().map(|l| (l.clone(), mean(rs, &|r| r.breakdown[l]))).collect();
        let (plain_ms, plain_layers) = match overhead.first() {
            Some(p) => (p.mean_ms, p.layers_ms.clone()),
            None => (m, layers.clone()),
        };
        let change_ms =
            layers.iter().map(|(l, v)| (l.clone(), round3(v - plain_layers.get(l).copied().unwrap_or(0.0)))).collect();
        let cells = setups[k].1.unwrap_or(0);
        let sc = &cfgs[k * n].scenario;
        overhead.push(OverheadRow {
            setup: setups[k].0.clone(),
            cells,
            page_cache_mib: sc.cells_params.page_cache_mib(sc.phone.page_cache_mib, cells as usize),
            mean_ms: m,
            p50_ms: mean(rs, &|r| r.metrics.fg_p50_ms),
            p99_ms: mean(rs, &|r| r.metrics.fg_p99_ms),
            overhead_pct: round3((m / plain_ms - 1.0) * 100.0),
            layers_ms: layers,
            change_ms,
        });
    }
    let mut delay: Vec<DelayRow> = vec![];
    for (k, rs) in reports[delay_start..switch_start].chunks(n).enumerate() {
        let (policy, busy) = (&a.policies[k / a.bg_cells.len()], a.bg_cells[k % a.bg_cells.len()]);
        let m = mean(rs, &|r| r.metrics.fg_ms);
        let base = delay.iter().find(|d| &d.policy == policy && d.bg_cells == 0).map_or(m, |d| d.mean_ms);
        delay.push(DelayRow {
            policy: policy.clone(),
            bg_cells: busy,
            mean_ms: m,
            p50_ms: mean(rs, &|r| r.metrics.fg_p50_ms),
            p99_ms: mean(rs, &|r| r.metrics.fg_p99_ms),
            delay_ms: round3(m - base),
            slowdown: round3(m / base),
            bg_mb_per_s: mean(rs, &|r| r.metrics.bg_mb_per_s),
        });
    }
    let switch = reports[switch_start..]
        .chunks(n)
        .enumerate()
        .map(|(k, rs)| SwitchRow {
            policy: a.policies[k / a.switch_bg_cells.len()].clone(),
            bg_cells: a.switch_bg_cells[k % a.switch_bg_cells.len()],
            mean_ms: mean(rs, &|r| r.metrics.fg_ms),
            p50_ms: mean(rs, &|r| r.metrics.fg_p50_ms),
            p99_ms: mean(rs, &|r| r.metrics.fg_p99_ms),
            max_ms: mean(rs, &|r| r.metrics.fg_max_ms),
        })
        .collect();
    let summary = CellsSummary {
        scenario: probe.scenario.name.clone(),
        switch_scenario: a.switch_scenario.clone(),
        device: probe.device.name.clone(),
        seed: a.seed,
        seeds: a.seeds,
        overhead,
        delay,
        switch,
    };
    let mut out = std::io::stdout().lock();
    match a.format {
        CellsFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &summary)?;
            writeln!(out)?;
        }
        CellsFormat::Table => print_tables(&mut out, &summary)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The three tables, as the HTML report shows them (`forefront_report::table`).
fn print_tables(out: &mut impl Write, s: &CellsSummary) -> std::io::Result<()> {
    use forefront_report::table;
    for (title, t) in [
        (table::cells_overhead_title(s), table::cells_overhead(s)),
        (table::cells_delay_title(s), table::cells_delay(s)),
        (table::cells_switch_title(s), table::cells_switch(s)),
    ] {
        writeln!(out, "{title}")?;
        writeln!(out)?;
        out.write_all(t.markdown().as_bytes())?;
        writeln!(out)?;
    }
    Ok(())
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
