//! `forefront sim`'s assembly: a phone built from a [`Scenario`], a device and a [`Policy`],
//! run to a [`RunReport`].
//!
//! ```no_run
//! use forefront_sim::{run, RunConfig};
//! let cfg = RunConfig::builtin("launch-update", "android", Some(2), 1).unwrap();
//! let report = run(&cfg);
//! println!("{} ms", report.metrics.fg_ms);
//! ```
//!
//! The world ([`world`]) owns the event loop: CPU timers, device completions, block-queue
//! kicks, timed wake-ups, the flusher and journal timers. Tasks run their programs as CPU
//! bursts and block on requests, pages, journal handles and commits, write throttling,
//! congestion, page allocation, the network and IPC; every blocked nanosecond is charged to a
//! [`Cat`] so the headline phase gets a per-layer breakdown.
//!
//! Kernel behaviour (file paths, journal, write-back, reclaim, the log cleaner, tmpfs, block
//! layer, devices) lives in `forefront_model` as step functions over context traits that the
//! world implements; every policy decision is a pure function of `forefront_policy`, applied in
//! one module of the world, its policy seam (`world/priority.rs`).

mod program;
pub mod replay;
pub mod twin;
pub mod world;

use std::collections::BTreeMap;
use std::time::Instant;

use forefront_model::flash::FlashParams;
use forefront_policy::Policy;
use forefront_record::run::{CellMetrics, Metrics, PhaseStats, RunReport, RunStats, UiMetrics};
use forefront_record::trace::TraceRecord;
use forefront_workload::{LoadError, Scenario};

pub use forefront_model::kernel::Cat;

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub scenario: Scenario,
    pub device: FlashParams,
    pub policy: Policy,
    pub bg_apps: u32,
    pub seed: u64,
}

impl RunConfig {
    /// A built-in (or file) scenario on its own device; a device that does not load is named
    /// with the scenario's `device` key.
    pub fn builtin(scenario: &str, policy: &str, bg_apps: Option<u32>, seed: u64) -> Result<RunConfig, ConfigError> {
        let name = scenario;
        let scenario = Scenario::load(name)?;
        let device = forefront_workload::load_device(&scenario.device).map_err(|e| {
            let file = if forefront_workload::scenario_names().any(|n| n == name) {
                format!("scenarios/{name}.toml")
            } else {
                name.to_string()
            };
            ConfigError::Invalid(format!("{file}: device: {e}"))
        })?;
        let policy = Policy::by_name(policy)?;
        let bg_apps = bg_apps.unwrap_or(scenario.bg_apps);
        Ok(RunConfig { scenario, device, policy, bg_apps, seed })
    }

    /// Whether the run can go: the scenario's and the device's checks (again: an axis, a
    /// variant or code may have changed them since they were loaded), the background-app
    /// limit, and the scenario's files and sizes against the device's capacity. Every
    /// [`try_run`] checks first.
    pub fn check(&self) -> Result<(), ConfigError> {
        use forefront_workload::limits::MAX_BG_APPS;
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.bg_apps > MAX_BG_APPS {
            return bad(format!("bg_apps: {} is over the limit of {MAX_BG_APPS} background app instances", self.bg_apps));
        }
        self.scenario.validate().map_err(|e| ConfigError::Invalid(format!("scenario `{}`: {e}", self.scenario.name)))?;
        self.device.validate().map_err(|e| ConfigError::Invalid(format!("device `{}`: {e}", self.device.name)))?;
        let sc = &self.scenario;
        // Capacity of every device the run has (main, RAID-0 members, vfat mounts' devices):
        // what the scenario's files may take at most.
        let mut capacity = u128::from(self.device.capacity_gib) << 30;
        for name in sc.phone.storage.raid0_with.iter().chain(sc.mounts.iter().filter_map(|m| m.device.as_ref())) {
            if let Ok(d) = forefront_workload::load_device(name) {
                capacity += u128::from(d.capacity_gib) << 30;
            }
        }
        let (_, apps) = sc.instances(self.bg_apps, sc.bg_cells);
        let mut files: u128 = u128::from(sc.phone.fs.journal_mib) << 20;
        for f in &sc.files {
            let copies = apps.iter().filter(|a| a.spec.name == f.owner).count().max(1) as u128;
            let copies = if sc.has_cells() && sc.cells_params.is_shared(&f.path) { 1 } else { copies };
            files += u128::from(f.size.0) * copies;
        }
        if files > capacity {
            return bad(format!(
                "file: the scenario's files with {} background apps and its journal (phone.fs.journal_mib = {}) take {} MiB: they do not fit on device `{}` ({} MiB)",
                self.bg_apps,
                sc.phone.fs.journal_mib,
                files >> 20,
                self.device.name,
                capacity >> 20
            ));
        }
        for (i, a) in sc.apps.iter().enumerate() {
            for (j, t) in a.threads.iter().enumerate() {
                too_large(&t.ops, &format!("app[{i}].thread[{j}].ops"), capacity).map_err(|e| {
                    ConfigError::Invalid(format!("{e} on device `{}` ({} MiB)", self.device.name, capacity >> 20))
                })?;
            }
        }
        Ok(())
    }
}

/// The first op that sets a file larger than `capacity` bytes (a write's end, a truncate).
fn too_large(ops: &[forefront_workload::Op], key: &str, capacity: u128) -> Result<(), String> {
    use forefront_workload::Op;
    for (k, op) in ops.iter().enumerate() {
        let end = match op {
            Op::Repeat { ops, .. } => {
                too_large(ops, &format!("{key}[{k}].ops"), capacity)?;
                continue;
            }
            Op::Write { offset, len, .. } => u128::from(offset.unwrap_or_default().0) + u128::from(len.0),
            Op::Truncate { size, .. } => u128::from(size.0),
            _ => continue,
        };
        if end > capacity {
            return Err(format!(
                "{key}[{k}] ({}): a file of {} bytes is larger than the storage",
                forefront_workload::op_name(op),
                end
            ));
        }
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Policy(#[from] forefront_policy::UnknownPolicy),
    /// A configuration [`RunConfig::check`] refuses; the text begins with the key.
    #[error("{0}")]
    Invalid(String),
}

/// A run that could not be done: its configuration was refused, or its time stopped advancing.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine found the run stalled at one instant ([`forefront_engine::STALL_EVENTS`]).
    #[error("{scenario}: {report}")]
    Stalled { scenario: String, report: String },
}

/// Check the configuration ([`RunConfig::check`]) and run it: what every front end (CLI,
/// sweep, Python) calls for input it did not build itself.
pub fn try_run(cfg: &RunConfig) -> Result<RunReport, RunError> {
    try_run_traced(cfg, false).map(|r| r.0)
}

/// The `agent` policy's view of a run at its start ([`world::AgentView`]: the processes, the
/// scope and the classes the agent decides), after the configuration's checks; `None` for the
/// other policies.
pub fn agent_view(cfg: &RunConfig) -> Result<Option<world::AgentView>, RunError> {
    cfg.check()?;
    let world = world::World::new(&cfg.scenario, cfg.device.clone(), cfg.policy.clone(), cfg.bg_apps, cfg.seed);
    Ok(world.agent_view())
}

/// Percentile by nearest rank over sorted samples ([`forefront_record::stats::percentile`]);
/// 0 when there is no sample.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    forefront_record::stats::percentile(sorted, p).unwrap_or(0.0)
}

/// Run one simulation of a configuration known to be good (a built-in, a test's); panics with
/// the reason where [`try_run`] returns an error.
pub fn run(cfg: &RunConfig) -> RunReport {
    run_traced(cfg, false).0
}

/// What a Perfetto export of a run needs besides the report.
pub struct RunTrace {
    /// Block, syscall and scheduler records, time-ordered.
    pub records: Vec<TraceRecord>,
    /// The FG app's task ids.
    pub fg_tids: Vec<u32>,
    /// Every task: (tid, app, thread).
    pub threads: Vec<(u32, String, String)>,
}

/// [`run`] with, when `trace`, its records for a Perfetto export; panics where
/// [`try_run_traced`] returns an error.
pub fn run_traced(cfg: &RunConfig, trace: bool) -> (RunReport, Option<RunTrace>) {
    try_run_traced(cfg, trace).unwrap_or_else(|e| panic!("{e}"))
}

/// [`try_run`] with, when `trace`, the run's records for a Perfetto export.
pub fn try_run_traced(cfg: &RunConfig, trace: bool) -> Result<(RunReport, Option<RunTrace>), RunError> {
    run_world(cfg, trace, false).map(|(r, t, _)| (r, t))
}

/// The headline app's threads' waits for a CPU inside headline phases
/// ([`try_run_fg_cpu_waits`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FgCpuWaits {
    /// Every wait from a wake-up to the first instruction (µs, in the order they ended): what
    /// a `sched_wakeup` → `sched_switch` trace of the real process gives (`bench predict`
    /// prints them beside `scripts/sched-probe`'s figures).
    pub waits_us: Vec<f64>,
    /// The part of those waits charged to the threads as runtime, summed (µs): a deferred
    /// preemption's wait after the core's last clock update (`preempt = "none"`; the CPU
    /// model's module doc), which the kernel's CPU clock counts beside the time on a CPU.
    pub charged_us: f64,
}

/// [`try_run`] with the headline app's waits for a CPU ([`FgCpuWaits`]).
pub fn try_run_fg_cpu_waits(cfg: &RunConfig) -> Result<(RunReport, FgCpuWaits), RunError> {
    run_world(cfg, false, true).map(|(r, _, w)| (r, w))
}

fn run_world(cfg: &RunConfig, trace: bool, fg_waits: bool) -> Result<(RunReport, Option<RunTrace>, FgCpuWaits), RunError> {
    cfg.check()?;
    let wall = Instant::now();
    let mut world = world::World::new(&cfg.scenario, cfg.device.clone(), cfg.policy.clone(), cfg.bg_apps, cfg.seed);
    let fg_tids = world.fg_tids();
    let threads = world.thread_names();
    if trace {
        world.record_trace();
    }
    if fg_waits {
        world.record_fg_cpu_waits();
    }
    let mut out = world.run();
    if let Some(report) = out.stall.take() {
        return Err(RunError::Stalled { scenario: cfg.scenario.name.clone(), report });
    }
    let records = out.trace.take().map(|records| RunTrace { records, fg_tids, threads });
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3;
    // The headline: the phone's foreground samples (in Cells scenarios, those of the cell on
    // the screen).
    let head: Vec<&world::Sample> = out.samples.iter().filter(|s| s.phase == cfg.scenario.headline && s.on_screen).collect();
    let in_head = |t: forefront_engine::SimTime| head.iter().any(|s| s.start <= t && t.ns() <= s.start.ns() + s.ns);
    let mut waits = FgCpuWaits::default();
    for (_, kind, ns) in out.fg_cpu_waits.take().unwrap_or_default().into_iter().filter(|&(end, _, _)| in_head(end)) {
        match kind {
            forefront_model::cpu::WaitKind::SkippedClock => waits.charged_us += ns as f64 / 1e3,
            _ => waits.waits_us.push(ns as f64 / 1e3),
        }
    }
    let samples: Vec<f64> = head.iter().map(|s| s.ns as f64 / 1e6).collect();
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    let n = samples.len().max(1) as f64;
    let mut breakdown = BTreeMap::new();
    for c in Cat::ALL {
        let total: u64 = head.iter().map(|s| s.cats[c as usize]).sum();
        breakdown.insert(c.name().to_string(), round3(total as f64 / 1e6 / n));
    }
    let sim_s = out.sim_end.as_secs_f64().max(1e-9);
    let cells = cell_metrics(&out);
    let mut hooks = out.hooks;
    let report_requests = out.invariants.requests_submitted;
    for (name, n) in forefront_policy::device_overtake_hooks(&cfg.policy, out.dev_reorders) {
        hooks.insert(name.into(), n);
    }
    // Only where the scenario uses them (so other reports keep their bytes).
    if out.nosync_fsyncs > 0 {
        hooks.insert("fs.nosync_fsyncs".into(), out.nosync_fsyncs);
    }
    if out.raid_pieces > 0 {
        hooks.insert("storage.raid0_pieces".into(), out.raid_pieces);
    }
    if let Some(l) = &out.lfs {
        hooks.insert("lfs.blocks_appended".into(), l.appended);
        hooks.insert("lfs.segments_used".into(), l.segments_used);
        hooks.insert("lfs.cleaner_passes".into(), l.cleaner_passes);
        hooks.insert("lfs.cleaner_blocks".into(), l.cleaner_blocks);
        hooks.insert("lfs.log_full".into(), l.full);
    }
    let mb = |b: u64| round3(b as f64 / 1e6);
    let mut warnings = vec![];
    if let Some(l) = out.lfs.filter(|l| l.full > 0) {
        warnings.push(format!(
            "the log-structured area ran out of clean segments {} times: the head reused segments without the cleaner's copying (its cost is missing); raise the lfs mount's size_mib",
            l.full
        ));
    }
    let net_share = out.bg_net_wait_ns as f64 / (out.bg_net_threads as f64 * out.sim_end.ns() as f64).max(1.0);
    // Starved background: mostly waiting for the shared link, and doing no more I/O than what
    // trickles in through it (e.g. `--bg-apps 50` downloads on one 10 MB/s link).
    let bg_io_mb_s = (out.bg_read + out.bg_written) as f64 / 1e6 / sim_s;
    if cfg.bg_apps > 0 && net_share > 0.8 && bg_io_mb_s <= 1.1 * cfg.scenario.phone.net_mb_s {
        warnings.push(format!(
            "the background apps spent {:.0}% of their time waiting for the network ({} apps share one {} MB/s link) and did only {:.1} MB/s of I/O: they barely load the phone, so these figures are close to the foreground alone; use fewer --bg-apps or raise [phone] net_mb_s",
            net_share * 100.0,
            cfg.bg_apps,
            cfg.scenario.phone.net_mb_s,
            bg_io_mb_s
        ));
    }
    // A run cut off by the scenario's duration measured only part of the foreground's work:
    // its means and percentiles cover the phases that finished, and the runtime is the limit.
    // The text is the same for every run of a scenario, so `sim compare` and sweeps list it once
    // with the runs it concerns.
    if out.fg_threads_unfinished > 0 {
        warnings.push(format!(
            "the run ended at the scenario's duration ({} s of simulated time) before the foreground finished its program: the FG figures cover only the headline phases that completed (fg_samples_ms); raise `duration_s` in the scenario or use fewer --bg-apps",
            cfg.scenario.duration_s
        ));
    }
    if samples.is_empty() {
        warnings.push(format!(
            "no headline sample (`{}`) in the run: its FG latency figures are null in JSON and – in tables",
            cfg.scenario.headline
        ));
    }
    let report = RunReport {
        scenario: cfg.scenario.name.clone(),
        policy: cfg.policy.name.clone(),
        device: cfg.device.name.clone(),
        scheduler: cfg.scenario.phone.scheduler.name().to_string(),
        seed: cfg.seed,
        bg_apps: cfg.bg_apps,
        bg_cells: if cfg.scenario.has_cells() { cfg.scenario.bg_cells } else { 0 },
        headline: cfg.scenario.headline.clone(),
        metrics: Metrics {
            // No headline sample: no figure (NaN; `null` in JSON), not a 0 ms.
            fg_ms: if samples.is_empty() { f64::NAN } else { round3(samples.iter().sum::<f64>() / n) },
            fg_p50_ms: fg_percentile(&sorted, 50.0),
            fg_p90_ms: fg_percentile(&sorted, 90.0),
            fg_p99_ms: fg_percentile(&sorted, 99.0),
            fg_max_ms: sorted.last().map_or(f64::NAN, |&v| round3(v)),
            fg_samples_ms: samples.iter().map(|&v| round3(v)).collect(),
            bg_mb_per_s: round3((out.bg_read + out.bg_written) as f64 / 1e6 / sim_s),
            bg_window_samples_mb_s: out
                .samples
                .iter()
                .filter(|s| s.phase == forefront_workload::BG_WINDOW_PHASE && s.ns > 0)
                .map(|s| round3(s.bg_bytes as f64 / 1e6 / (s.ns as f64 / 1e9)))
                .collect(),
            bg_read_mb: mb(out.bg_read),
            bg_written_mb: mb(out.bg_written),
            device_read_mb: mb(out.dev_read),
            device_written_mb: mb(out.dev_written),
            device_reorders: out.dev_reorders,
            device_fg_behind_bg: out.dev_fg_behind_bg,
            fg_pages_evicted: out.fg_pages_evicted,
            fg_evicted_while_bg_clean: out.fg_evicted_while_bg_clean,
            ui: out.ui.take().map(|u| ui_metrics(cfg, u)),
            cells,
        },
        breakdown,
        hooks,
        invariants: out.invariants,
        timeline: {
            let mut tl = out.timeline;
            tl.phases = head.iter().map(|s| (round3(s.start.as_ms_f64()), round3(s.ns as f64 / 1e6))).collect();
            tl
        },
        warnings,
        stats: {
            let wall_s = (wall_ms / 1e3).max(1e-9);
            let requests = report_requests;
            RunStats {
                events: out.events,
                wall_ms: round3(wall_ms),
                sim_ms: round3(out.sim_end.as_ms_f64()),
                events_per_s: (out.events as f64 / wall_s).round(),
                sim_s_per_wall_s: round3(out.sim_end.as_secs_f64() / wall_s),
                pages: out.pages,
                pages_per_s: (out.pages as f64 / wall_s).round(),
                requests,
                requests_per_s: (requests as f64 / wall_s).round(),
            }
        },
        host_reclaim: out.host_reclaim.map(|(reported_pages, refaulted_pages)| forefront_record::run::HostReclaimCounts {
            reported_pages,
            refaulted_pages,
        }),
    };
    Ok((report, records, waits))
}

/// Per-cell figures of a Cells run (empty otherwise).
fn cell_metrics(out: &world::Outcome) -> Vec<CellMetrics> {
    out.cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut by_phase: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for s in out.samples.iter().filter(|s| s.cell == Some(i)) {
                by_phase.entry(s.phase.clone()).or_default().push(s.ns as f64 / 1e6);
            }
            let phases = by_phase
                .into_iter()
                .map(|(name, mut v)| {
                    v.sort_by(f64::total_cmp);
                    let stats = PhaseStats {
                        samples: v.len() as u64,
                        mean_ms: round3(v.iter().sum::<f64>() / v.len() as f64),
                        p50_ms: round3(percentile(&v, 50.0)),
                        p99_ms: round3(percentile(&v, 99.0)),
                    };
                    (name, stats)
                })
                .collect();
            CellMetrics {
                name: c.name.clone(),
                template: c.template.clone(),
                role: c.role.to_string(),
                apps: c.apps.clone(),
                on_screen_ms: round3(c.on_screen_ns as f64 / 1e6),
                switched_in: c.switched_in,
                cpu_ms: round3(c.cpu_ns as f64 / 1e6),
                read_mb: round3(c.read as f64 / 1e6),
                written_mb: round3(c.written as f64 / 1e6),
                phases,
            }
        })
        .collect()
}

/// The interactivity figures of a run (scenarios with input events).
fn ui_metrics(cfg: &RunConfig, u: world::UiOutcome) -> UiMetrics {
    let ms = |mut v: Vec<u64>| {
        v.sort_unstable();
        let f: Vec<f64> = v.iter().map(|&x| x as f64 / 1e6).collect();
        let mean = if f.is_empty() { 0.0 } else { f.iter().sum::<f64>() / f.len() as f64 };
        (f.len() as u64, round3(mean), round3(percentile(&f, 50.0)), round3(percentile(&f, 99.0)))
    };
    let (interactions, _, r50, r99) = ms(u.responses_ns);
    let (dispatch_waits, d_mean, d50, d99) = ms(u.dispatch_ns);
    let (preempt_waits, p_mean, p50, p99) = ms(u.preempt_ns);
    let (preempted_runs, pd_mean, pd50, pd99) = ms(u.preempt_done_ns);
    let vt =
        forefront_policy::runs_vt_cfs(&cfg.policy) || cfg.scenario.phone.cpu.scheduler == forefront_model::cpu::SchedKind::VtCfs;
    UiMetrics {
        cpu_scheduler: if vt { "vt-cfs" } else { "cfs" }.to_string(),
        tick_ms: cfg.scenario.phone.cpu.tick_ms,
        interactions,
        response_p50_ms: r50,
        response_p99_ms: r99,
        dispatch_waits,
        dispatch_mean_ms: d_mean,
        dispatch_p50_ms: d50,
        dispatch_p99_ms: d99,
        preempt_waits,
        preempt_mean_ms: p_mean,
        preempt_p50_ms: p50,
        preempt_p99_ms: p99,
        preempted_runs,
        preempt_to_done_mean_ms: pd_mean,
        preempt_to_done_p50_ms: pd50,
        preempt_to_done_p99_ms: pd99,
        frames: u.frames,
        frame_misses: u.frame_misses,
        context_switches: u.context_switches,
        tick_preemptions: u.tick_preemptions,
        bg_cpu_share: round3(u.bg_run_ns as f64 / u.cores_ns.max(1) as f64),
        chain_tasks: u.chain_tasks,
        ftc_left_promoted: u.left_promoted,
    }
}

/// A headline percentile, NaN (no figure) without samples.
fn fg_percentile(sorted: &[f64], p: f64) -> f64 {
    forefront_record::stats::percentile(sorted, p).map_or(f64::NAN, round3)
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
