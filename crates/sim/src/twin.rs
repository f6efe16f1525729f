//! The simulator as this machine's twin: `forefront bench`'s workload
//! ([`forefront_workload::bench`]) run on a calibrated device (`forefront bench calibrate`) in
//! the bench's modes, for `bench run --predict` and `bench predict` (docs/twin.md).
//!
//! | bench mode | simulator |
//! |---|---|
//! | `alone` | no background, the disk's stock scheduler (the bench report's; mq-deadline is the simulator's `deadline`), policy `android` with stock Linux's equal weights |
//! | `baseline` | the background workers, the same setup |
//! | `bfq` | scheduler `bfq` — where the simulator has one (issue 29's BFQ model) |
//! | `agent` | policy `agent` — where the simulator has one (issue 29's agent policy); with [`Host::burst_call_ms`](forefront_workload::bench::Host::burst_call_ms), the launcher's burst call after the pause begins |
//! | `ionice-idle` | not expressed: the background's idle I/O class needs BFQ's idle class |
//!
//! A mode the simulator cannot run yet comes back as [`Predicted::Unavailable`] with the
//! reason, never as a number.

use forefront_model::flash::FlashParams;
use forefront_policy::Policy;
use forefront_workload::bench::{BenchWorkload, Host, SimSetup};

use crate::RunConfig;

/// One mode's prediction.
// One per mode of a prediction: the size of the unavailable variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Predicted {
    Ran {
        fg_p50_ms: f64,
        fg_p90_ms: f64,
        /// Background `read`/`write` bytes per second (MB/s): the median of
        /// `bg_window_samples_mb_s` as the bench reports its `bg_window_mb_s` (the median of its
        /// samples' windows); the run's `bg_mb_per_s` where the scenario marks no window.
        bg_mb_s: Option<f64>,
        /// Each launch's window (from the drop of the workers' files, where the bench starts its
        /// workers, to the launch's end): the background's rate, as the bench's
        /// `bg_window_samples_mb_s`.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        bg_window_samples_mb_s: Vec<f64>,
        fg_samples_ms: Vec<f64>,
        policy: String,
        scheduler: String,
        /// Mean time per launch in each layer (ms): the simulator's `breakdown` (e.g.
        /// `cpu_runnable`, the time the launch waited for a CPU).
        breakdown_ms: std::collections::BTreeMap<String, f64>,
        /// The launch's waits for a CPU after its wake-ups, as `scripts/sched-probe` reports
        /// the real launch's (`None` when the run did not record them, e.g. a traced run).
        cpu_waits: Option<CpuWaits>,
        /// With the host's reclaim modelled: what the run's reporting handed to the host and
        /// what allocations took back from it (pages).
        #[serde(skip_serializing_if = "Option::is_none")]
        host_reclaim: Option<forefront_record::run::HostReclaimCounts>,
    },
    Unavailable {
        reason: String,
    },
}

/// The headline's waits for a CPU from a wake-up to its first instruction, over a run's
/// launches: the figures `scripts/sched-probe` gives for the real launch (its wake-ups per
/// operation, their summed wait, and the distribution of one wait), so that the model's
/// scheduler can be compared wake-up by wake-up and not only in total.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct CpuWaits {
    /// Wake-ups per launch.
    pub per_launch: f64,
    /// Their summed wait per launch (ms).
    pub sum_ms_per_launch: f64,
    /// One wait's median, 90th percentile and maximum (µs).
    pub p50_us: f64,
    pub p90_us: f64,
    pub max_us: f64,
    /// The share of wake-ups (%) that waited more than 1 ms and more than 3 ms.
    pub over_1ms_pct: f64,
    pub over_3ms_pct: f64,
    /// The part of the waits charged to the launch as runtime, per launch (ms): what its CPU
    /// clock counts beyond its time on a CPU on a kernel without preemption (twin18, twin19).
    pub charged_ms_per_launch: f64,
}

impl CpuWaits {
    /// The summary of `waits` (µs), of which `charged_us` were charged as runtime, over
    /// `launches` launches.
    pub fn of(waits: &[f64], charged_us: f64, launches: usize) -> CpuWaits {
        let mut sorted = waits.to_vec();
        sorted.sort_by(f64::total_cmp);
        let pct = |p: f64| forefront_record::stats::percentile(&sorted, p).unwrap_or(0.0);
        let n = launches.max(1) as f64;
        let share = |us: f64| 100.0 * waits.iter().filter(|&&w| w > us).count() as f64 / waits.len().max(1) as f64;
        CpuWaits {
            per_launch: waits.len() as f64 / n,
            sum_ms_per_launch: waits.iter().sum::<f64>() / 1e3 / n,
            p50_us: pct(50.0),
            p90_us: pct(90.0),
            max_us: sorted.last().copied().unwrap_or(0.0),
            over_1ms_pct: share(1000.0),
            over_3ms_pct: share(3000.0),
            charged_ms_per_launch: charged_us / 1e3 / n,
        }
    }
}

/// The simulator's name of a kernel I/O scheduler (`queue/scheduler`): mq-deadline is
/// `deadline`, none is `noop`; `bfq` and `kyber` keep theirs.
pub fn sim_scheduler(kernel: &str) -> &str {
    match kernel {
        "mq-deadline" | "deadline" => "deadline",
        "none" | "noop" => "noop",
        k => k,
    }
}

/// How the simulator expresses bench mode `mode` on a disk whose stock scheduler is `stock`
/// (the simulator's name): (scheduler, background, policy), or why not.
pub fn setup_of<'a>(mode: &str, stock: &'a str) -> Result<(&'a str, bool, &'static str), String> {
    match mode {
        "alone" => Ok((stock, false, "android")),
        "baseline" => Ok((stock, true, "android")),
        "bfq" => Ok(("bfq", true, "android")),
        "agent" => Ok((stock, true, "agent")),
        "ionice-idle" => {
            Err("not yet in the simulator: the background's idle I/O class (BFQ's idle class on the tasks of a scenario)".into())
        }
        m => Err(format!("unknown bench mode `{m}`")),
    }
}

/// Runs the bench's workload in bench mode `mode` on `device`, the disk's stock scheduler
/// being `stock` (the kernel's name, from the bench report): `launches` launches, one seed.
pub fn predict(
    w: &BenchWorkload,
    host: &Host,
    device: &FlashParams,
    stock: &str,
    mode: &str,
    launches: u32,
    seed: u64,
) -> Predicted {
    match config(w, host, device, stock, mode, launches, seed) {
        Ok(cfg) => match crate::try_run_fg_cpu_waits(&cfg) {
            Ok((r, waits)) => predicted(&cfg, r, Some(&waits)),
            Err(e) => Predicted::Unavailable { reason: format!("the simulation failed: {e}") },
        },
        Err(reason) => Predicted::Unavailable { reason },
    }
}

/// The simulator run [`predict`] makes for bench mode `mode` (for a caller that runs it
/// itself, e.g. with a trace: `bench predict --trace-out`), or why the mode cannot be run.
pub fn config(
    w: &BenchWorkload,
    host: &Host,
    device: &FlashParams,
    stock: &str,
    mode: &str,
    launches: u32,
    seed: u64,
) -> Result<RunConfig, String> {
    let (scheduler, background, policy) = setup_of(mode, sim_scheduler(stock))?;
    let setup = SimSetup { scheduler: scheduler.into(), background, launches, mode: Some(mode.into()) };
    let scenario = match w.scenario(&device.name, host, &setup) {
        Ok(s) => s,
        // The scenario format refuses a scheduler kind it does not know: the model is absent.
        Err(e) if e.contains("unknown variant") => {
            return Err(format!("not yet in the simulator: I/O scheduler `{scheduler}` ({})", first_line(&e)))
        }
        Err(e) => return Err(e),
    };
    let mut scenario = scenario;
    if let (true, Some(ms)) = (policy == "agent", host.burst_call_ms) {
        burst_call(&mut scenario, ms);
    }
    let policy = Policy::by_name(policy).map_err(|e| format!("not yet in the simulator: policy `{policy}` ({e})"))?;
    Ok(RunConfig { bg_apps: scenario.bg_apps, scenario, device: device.clone(), policy, seed })
}

/// The launcher's burst call in each headline phase: `ms` of waiting right after the phase
/// begins (where the simulated agent pauses the background), before the operation's first
/// call. The bench times an `agent`-mode operation from before the call
/// (`forefront_bench::runner::time_op`: `fg PID --burst` over the agent's socket, then `go`),
/// so the measured times hold it; its median is in the saved report (`burst_call_ms`).
///
/// Simplifications: the call's median for every operation (the report keeps no per-sample
/// figure); the pause takes hold at the call's start, where the daemon writes the freezer
/// during the call (after its journal) and the kernel stops each task at its next return to
/// user space — either way the background's I/O already submitted goes on during the call,
/// and the launch's first read meets what is left of it.
fn burst_call(scenario: &mut forefront_workload::Scenario, ms: f64) {
    use forefront_workload::Op;
    fn walk(ops: &mut Vec<Op>, headline: &str, ms: f64) {
        let mut i = 0;
        while i < ops.len() {
            match &mut ops[i] {
                Op::Repeat { ops: inner, .. } => walk(inner, headline, ms),
                Op::PhaseBegin { name } if name == headline => {
                    ops.insert(i + 1, Op::Sleep { ms });
                    i += 1;
                }
                _ => {}
            }
            i += 1;
        }
    }
    let headline = scenario.headline.clone();
    for a in scenario.apps.iter_mut().filter(|a| a.role == forefront_workload::Role::Fg) {
        for t in &mut a.threads {
            walk(&mut t.ops, &headline, ms);
        }
    }
}

/// A run of [`config`]'s as a prediction, with the headline's waits for a CPU (µs) when the run
/// recorded them ([`crate::try_run_fg_cpu_waits`]), and the runtime they were charged as.
pub fn predicted(cfg: &RunConfig, r: forefront_record::run::RunReport, cpu_waits: Option<&crate::FgCpuWaits>) -> Predicted {
    Predicted::Ran {
        cpu_waits: cpu_waits.map(|w| CpuWaits::of(&w.waits_us, w.charged_us, r.metrics.fg_samples_ms.len())),
        fg_p50_ms: r.metrics.fg_p50_ms,
        fg_p90_ms: r.metrics.fg_p90_ms,
        bg_mb_s: (cfg.bg_apps > 0).then(|| median(&r.metrics.bg_window_samples_mb_s).unwrap_or(r.metrics.bg_mb_per_s)),
        bg_window_samples_mb_s: if cfg.bg_apps > 0 { r.metrics.bg_window_samples_mb_s } else { vec![] },
        fg_samples_ms: r.metrics.fg_samples_ms,
        policy: r.policy,
        scheduler: r.scheduler,
        breakdown_ms: r.breakdown,
        host_reclaim: r.host_reclaim,
    }
}

/// The median as `forefront bench` takes it (linear between the two middle values).
fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = 0.5 * s.len().checked_sub(1)? as f64;
    let (lo, hi) = (s[pos.floor() as usize], s[pos.ceil() as usize]);
    Some(lo + (hi - lo) * (pos - pos.floor()))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use forefront_workload::bench::{AppSpec, Bg, Fg};

    fn small(bg: Bg) -> BenchWorkload {
        BenchWorkload {
            fg: Fg::Launch,
            bg,
            bg_procs: 2,
            bg_file_bytes: 64 << 20,
            ramp_ms: 500,
            app: AppSpec { code_files: 8, code_bytes: 8 << 20, db_rows: 500, row_bytes: 4096 },
            timeline: vec![],
        }
    }

    #[test]
    fn background_slows_the_launch_and_is_measured() {
        let dev = forefront_workload::load_device("galaxy-s6-ufs").unwrap();
        let host = Host::default();
        let Predicted::Ran { fg_p50_ms: alone, bg_mb_s: None, .. } =
            predict(&small(Bg::Update), &host, &dev, "mq-deadline", "alone", 3, 1)
        else {
            panic!("alone runs, with no background")
        };
        let Predicted::Ran { fg_p50_ms: base, bg_mb_s: Some(bg), fg_samples_ms, .. } =
            predict(&small(Bg::Update), &host, &dev, "mq-deadline", "baseline", 3, 1)
        else {
            panic!("baseline runs")
        };
        assert_eq!(fg_samples_ms.len(), 3);
        assert!(alone > 0.0 && base > alone, "alone {alone} ms, baseline {base} ms");
        assert!(bg > 1.0, "{bg} MB/s");
        // Uploads read their files from the device on every pass (each pass ends by dropping
        // the worker's pages): no more than the device's sequential read rate.
        let Predicted::Ran { bg_mb_s: Some(up), .. } = predict(&small(Bg::Upload), &host, &dev, "mq-deadline", "baseline", 3, 1)
        else {
            panic!("upload runs")
        };
        assert!(
            up > 0.3 * dev.read_seq_mb_s && up <= dev.read_seq_mb_s * 1.01,
            "{up} MB/s on a {} MB/s device",
            dev.read_seq_mb_s
        );
    }

    /// A measured baseline sample after an unmeasured `alone` one whose drop came `gap_ms`
    /// before its own (the bench's interleaved modes; an `alone` sample ramps 100 ms).
    fn after(gap_ms: f64) -> BenchWorkload {
        use forefront_workload::bench::BenchSample;
        let at = |mode: &str, d: f64, op: f64, end: f64| BenchSample {
            mode: mode.into(),
            warmup: false,
            dropped_ms: Some(d),
            window_ms: d + 10.0,
            op_ms: d + op,
            end_ms: d + end,
        };
        BenchWorkload {
            bg_file_bytes: 1 << 30,
            timeline: vec![at("alone", 1_000.0, 110.0, 200.0), at("baseline", 1_000.0 + gap_ms, 1_510.0, 2_300.0)],
            ..small(Bg::Update)
        }
    }

    #[test]
    fn a_drop_just_before_the_pass_the_previous_one_asked_for_hands_its_memory_to_the_host() {
        // The kernel's free page reporting: a pass 2 s after the free that asks for it. The
        // `alone` sample's drop frees the fixture's files (cached as it wrote them), and its
        // workers are absent then, as the bench's (twin28). A sample whose drop comes 1.9 s
        // after it meets that pass 0.1 s into its ramp, the memory still free: the host takes
        // it, and the workers pay its fault as they write their files again. One 0.4 s after it
        // has taken the memory back for its workers' files before the pass comes.
        // A device as fast as this VM's disk (twin26's calibration: ~3.8 GB/s written), so
        // that the host's fault, not the device, bounds the workers.
        let mut dev = forefront_workload::load_device("galaxy-s6-ufs").unwrap();
        (dev.write_seq_mb_s, dev.bus_mb_s, dev.write_depth_mb_s) = (3_800.0, 3_800.0, 5_400.0);
        let host = Host {
            host_reclaim: Some(forefront_workload::bench::HostReclaimFigures {
                interval_ms: 2_300.0,
                pass_mib: 768.0,
                reserve_mib: 4.0,
                page_us: 14.0,
                read_page_us: None,
                fragments_kib: vec![],
            }),
            ..Host::default()
        };
        let run = |gap: f64| {
            let p = predict(&after(gap), &host, &dev, "mq-deadline", "baseline", 1, 1);
            let Predicted::Ran { bg_window_samples_mb_s: w, host_reclaim: Some(h), .. } = p else { panic!("runs: {p:?}") };
            assert_eq!(w.len(), 1, "one measured sample");
            (w[0], h.refaulted_pages)
        };
        let (caught, caught_pages) = run(1_900.0);
        let (clear, clear_pages) = run(400.0);
        eprintln!("caught: {caught:.0} MB/s, {caught_pages} pages refaulted; clear: {clear:.0} MB/s, {clear_pages}");
        assert!(caught_pages > 50_000 && clear_pages < caught_pages / 10, "refaulted {caught_pages} vs {clear_pages}");
        assert!(caught < 0.8 * clear, "window {caught:.0} MB/s vs {clear:.0} MB/s");
    }

    #[test]
    fn measured_passes_are_replayed_where_the_run_met_them() {
        // `bench predict --measured-passes` (twin27): the host's passes are the run's, at
        // their times. The same sample as above, 2.6 s after the previous one (the model's own
        // pass would have come and gone): a measured 768 MiB pass 0.1 s after its drop takes
        // what the drop freed and the workers pay the host's fault; the same pass after the
        // sample's end leaves its window alone.
        let mut dev = forefront_workload::load_device("galaxy-s6-ufs").unwrap();
        (dev.write_seq_mb_s, dev.bus_mb_s, dev.write_depth_mb_s) = (3_800.0, 3_800.0, 5_400.0);
        let figures = forefront_workload::bench::HostReclaimFigures {
            interval_ms: 2_300.0,
            pass_mib: 768.0,
            reserve_mib: 4.0,
            page_us: 14.0,
            read_page_us: None,
            fragments_kib: vec![],
        };
        let run = |pass_ms: f64| {
            let host = Host { host_reclaim: Some(figures.clone()), host_passes: vec![[pass_ms, 768.0]], ..Host::default() };
            let p = predict(&after(2_600.0), &host, &dev, "mq-deadline", "baseline", 1, 1);
            let Predicted::Ran { bg_window_samples_mb_s: w, host_reclaim: Some(h), .. } = p else { panic!("runs: {p:?}") };
            (w[0], h.refaulted_pages, h.reported_pages)
        };
        // The baseline sample's drop is at 3,600 ms, its end at 5,900.
        let (caught, caught_pages, reported) = run(3_700.0);
        let (clear, clear_pages, _) = run(6_500.0);
        eprintln!("caught: {caught:.0} MB/s, {caught_pages} pages refaulted; clear: {clear:.0} MB/s, {clear_pages}");
        assert_eq!(reported, 768 * 256, "the measured pass reports what the run's did");
        assert!(caught_pages > 50_000 && clear_pages < caught_pages / 10, "refaulted {caught_pages} vs {clear_pages}");
        assert!(caught < 0.8 * clear, "window {caught:.0} MB/s vs {clear:.0} MB/s");
    }

    #[test]
    fn the_switch_is_predicted_and_slowed_by_the_background() {
        let dev = forefront_workload::load_device("galaxy-s6-ufs").unwrap();
        let host = Host::default();
        let w = BenchWorkload { fg: Fg::Switch, ..small(Bg::Update) };
        let p = predict(&w, &host, &dev, "mq-deadline", "alone", 3, 1);
        let Predicted::Ran { fg_p50_ms: alone, fg_samples_ms, .. } = p else { panic!("alone runs: {p:?}") };
        assert_eq!(fg_samples_ms.len(), 3, "one sample per switch");
        let p = predict(&w, &host, &dev, "mq-deadline", "baseline", 3, 1);
        let Predicted::Ran { fg_p50_ms: base, bg_mb_s: Some(bg), .. } = p else { panic!("baseline runs: {p:?}") };
        // 4.25 MiB written and synced, then 20 synced WAL appends: at least the flushes' cost.
        assert!(alone > 21.0 * dev.flush_overhead_us / 1e3, "alone {alone} ms");
        assert!(base > alone, "alone {alone} ms, baseline {base} ms");
        assert!(bg > 1.0, "{bg} MB/s");
    }

    /// The baseline launch under readers on this VM's calibrated disk (docs/twin.md, "Every
    /// disagreement" item 2): measured 1,039 ms against 45 ms alone. Without the kernel's
    /// read-ahead and the shared bandwidth the model leaves the launch unaffected; with them the
    /// readers' windows in flight, served at the disk's bandwidth at depth, slow it.
    #[test]
    fn read_ahead_and_shared_bandwidth_move_the_baseline_the_measured_way() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results/twin/quiet/this-vm-quiet-bw.toml");
        let with = forefront_workload::load_device(path).unwrap();
        assert!(with.read_depth_mb_s > 0.0 && with.write_depth_mb_s > 0.0, "the calibrated file sets the stage");
        let without = FlashParams { read_depth_mb_s: 0.0, write_depth_mb_s: 0.0, ..with.clone() };
        // This VM's queue settings (read_ahead_kb 8192, max_sectors_kb 4096, nr_requests 256).
        let host =
            Host { read_ahead_kib: 8192, max_request_kib: 4096, nr_requests: 256, copy_page_us: Some(0.286), ..Host::default() };
        let old_host = Host { async_read_ahead: false, ..host.clone() };
        let w = BenchWorkload { bg_file_bytes: 256 << 20, ..small(Bg::Upload) };
        let p50 = |host: &Host, dev: &FlashParams, mode: &str| match predict(&w, host, dev, "mq-deadline", mode, 3, 1) {
            Predicted::Ran { fg_p50_ms, .. } => fg_p50_ms,
            p => panic!("{mode}: {p:?}"),
        };
        let (alone_old, base_old) = (p50(&old_host, &without, "alone"), p50(&old_host, &without, "baseline"));
        let base_new = p50(&host, &with, "baseline");
        assert!(base_old < 1.5 * alone_old, "without the mechanisms the baseline stays near alone: {base_old} vs {alone_old} ms");
        assert!(base_new > 3.0 * base_old, "with them the readers slow the launch: {base_new} vs {base_old} ms");
    }

    /// twin8: with the host's completions in batches (`batch_completion`), two `fdatasync`ing
    /// updaters return together and leave the disk idle together, and the launch's reads pass
    /// in those gaps; in arrival order they drift apart and every read waits behind a burst.
    /// The measured quiet update cell: baseline 450.7 ms against alone 45.5 (launch-update-r15).
    #[test]
    fn batch_completion_lets_the_launch_through_the_updaters_gaps() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results/twin/quiet/this-vm-quiet-batch.toml");
        let with = forefront_workload::load_device(path).unwrap();
        assert!(with.batch_completion, "the file sets the flag");
        let without = FlashParams { batch_completion: false, ..with.clone() };
        let host =
            Host { read_ahead_kib: 8192, max_request_kib: 4096, nr_requests: 256, copy_page_us: Some(0.286), ..Host::default() };
        let w = BenchWorkload { bg_file_bytes: 256 << 20, ..small(Bg::Update) };
        let p50 = |dev: &FlashParams, mode: &str| match predict(&w, &host, dev, "mq-deadline", mode, 3, 1) {
            Predicted::Ran { fg_p50_ms, .. } => fg_p50_ms,
            p => panic!("{mode}: {p:?}"),
        };
        let (alone, batched, ordered) = (p50(&with, "alone"), p50(&with, "baseline"), p50(&without, "baseline"));
        eprintln!("alone {alone} ms, baseline with batches {batched} ms, in arrival order {ordered} ms");
        assert!(batched < 0.5 * ordered, "batches let the launch through: {batched} vs {ordered} ms");
        assert!(batched > 2.0 * alone, "the updaters still slow it: {batched} vs alone {alone} ms");
    }

    /// Drops every `exec` op: the operations run in one process, as before twin10.
    fn one_process(ops: &mut Vec<forefront_workload::Op>) {
        use forefront_workload::Op;
        ops.retain(|op| !matches!(op, Op::Exec));
        for op in ops.iter_mut() {
            if let Op::Repeat { ops, .. } = op {
                one_process(ops);
            }
        }
    }

    /// twin10 (docs/twin.md, "Per-launch queues and preemption"): each real launch is a process
    /// of its own, so its BFQ queue is new and BFQ deems it interactive (weight 40 × 30), and
    /// every process of the bench is in the root blkio group, so that raised queue outweighs an
    /// updater's in service and preempts it (`bfq_bfqq_higher_class_or_weight`). With one
    /// process looping its launches (raised only while it has been idle 2 s) or the launch in a
    /// group of its own (whose weight is the group's, not the raised queue's), the updaters'
    /// bursts keep the device between the launch's reads. Measured on the quiet machine:
    /// BFQ's launch 52.7 ms against 45.5 alone (launch-update-r15).
    #[test]
    fn a_new_raised_process_per_launch_preempts_the_updaters_under_bfq() {
        let (dev, host) = quiet_vm();
        // The phones' CPU groups (`Host::default`'s), as twin10 measured it. With the host's
        // autogroup (twin14) the raised queue still preempts (65.0 ms against 60.4 alone), but
        // the blkio-groups counterfactual no longer slows the launch (65.0 ms): docs/twin.md.
        assert_eq!(host.cpu_groups, forefront_workload::CpuGroups::Android);
        // The bench's own workload (`bench run --fg launch --bg update`'s defaults): one
        // process's launches come 1.5 s apart, under BFQ's 2 s `wr_min_idle_time`, so after its
        // first raising (3.75 s) it is not raised again.
        let w = BenchWorkload::named("launch/update").unwrap();
        let p50 = |mode: &str, exec: bool, root: bool| {
            let mut cfg = config(&w, &host, &dev, "mq-deadline", mode, 5, 1).unwrap();
            assert!(cfg.scenario.phone.blkio_root_only, "the bench's scenario has no blkio groups");
            // A fixed 1.5 s pause, as twin10 measured it: the random phase (twin11) moves each
            // launch by up to an updater's burst, as much as the groups do, and its longer gaps
            // (up to 3 s) let one process's queue idle past `wr_min_idle_time` and be raised
            // again; the test isolates the two mechanisms it is about.
            fixed_pauses_everywhere(&mut cfg);
            cfg.scenario.phone.blkio_root_only = root;
            if !exec {
                for a in &mut cfg.scenario.apps {
                    for t in &mut a.threads {
                        one_process(&mut t.ops);
                    }
                }
            }
            let r = crate::try_run(&cfg).unwrap();
            r.metrics.fg_p50_ms
        };
        let alone = p50("alone", true, true);
        let (both, one, grouped, neither) =
            (p50("bfq", true, true), p50("bfq", false, true), p50("bfq", true, false), p50("bfq", false, false));
        eprintln!("alone {alone:.1} ms; bfq: both {both:.1}, one process {one:.1}, groups {grouped:.1}, neither {neither:.1}");
        assert!(both < 1.25 * alone, "a new raised queue per launch preempts: {both} vs alone {alone} ms");
        for (what, v) in [("one process", one), ("groups", grouped), ("neither", neither)] {
            assert!(v > 1.25 * both, "{what}: {v} vs {both} ms");
        }
    }

    #[test]
    fn cpu_waits_summarise_each_wake_up_per_launch() {
        let w = CpuWaits::of(&[10.0, 20.0, 30.0, 4000.0], 50.0, 2);
        assert_eq!((w.per_launch, w.max_us, w.charged_ms_per_launch), (2.0, 4000.0, 0.025));
        assert!((w.sum_ms_per_launch - 2.03).abs() < 1e-9, "{w:?}");
        assert_eq!((w.p50_us, w.p90_us), (20.0, 4000.0));
        assert_eq!((w.over_1ms_pct, w.over_3ms_pct), (25.0, 25.0));
        assert_eq!(CpuWaits::of(&[], 0.0, 3), CpuWaits::default());
    }

    /// twin14: the host's CPU grouping reaches the scheduler. Under the phones' groups the
    /// launch's group entity meets the workers' as one; in the session's autogroup, and in the
    /// root group, it meets each worker as a task, and its wake-ups wait differently.
    #[test]
    fn the_hosts_cpu_groups_reach_the_scenario_and_change_the_waits() {
        let (dev, host) = quiet_vm();
        let w = BenchWorkload::named("launch/update").unwrap();
        let waits = |g: forefront_workload::CpuGroups| {
            let host = Host { cpu_groups: g, preempt: forefront_workload::bench::Preempt::None, ..host.clone() };
            let cfg = config(&w, &host, &dev, "mq-deadline", "baseline", 3, 1).unwrap();
            assert_eq!(cfg.scenario.phone.cpu_groups, g);
            match predict(&w, &host, &dev, "mq-deadline", "baseline", 3, 1) {
                Predicted::Ran { cpu_waits: Some(w), .. } => w,
                p => panic!("{p:?}"),
            }
        };
        use forefront_workload::CpuGroups::*;
        let (android, session, root) = (waits(Android), waits(Autogroup), waits(Root));
        assert!(android.per_launch > 100.0, "{android:?}");
        assert_ne!(android, session, "the autogroup changes the launch's waits");
        assert_ne!(android, root, "the root group changes the launch's waits");
    }

    /// This VM's quiet calibration (docs/results/twin/quiet/this-vm-quiet-batch.toml) and its
    /// queue settings (read_ahead_kb 8192, max_sectors_kb 4096, nr_requests 256).
    fn quiet_vm() -> (FlashParams, Host) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results/twin/quiet/this-vm-quiet-batch.toml");
        let dev = forefront_workload::load_device(path).unwrap();
        let host =
            Host { read_ahead_kib: 8192, max_request_kib: 4096, nr_requests: 256, copy_page_us: Some(0.286), ..Host::default() };
        (dev, host)
    }

    /// [`fixed_pauses`] in every thread of every app of `cfg`'s scenario.
    fn fixed_pauses_everywhere(cfg: &mut RunConfig) {
        for a in &mut cfg.scenario.apps {
            for t in &mut a.threads {
                fixed_pauses(&mut t.ops);
            }
        }
    }

    /// Replaces each jittered pause (`think`) by a fixed one of its base length: every
    /// operation after the same pause, as before twin11.
    fn fixed_pauses(ops: &mut [forefront_workload::Op]) {
        use forefront_workload::Op;
        for op in ops.iter_mut() {
            match op {
                Op::Think { ms, .. } => *op = Op::Sleep { ms: *ms },
                Op::Repeat { ops, .. } => fixed_pauses(ops),
                _ => {}
            }
        }
    }

    /// twin11 (docs/twin.md, "The launch meets the background at a random phase"): the
    /// readers' read-ahead windows come in a cycle of ~20 ms, and a launch waits for what is in
    /// flight when it starts. With a fixed pause between launches the simulated cycle restarts
    /// with each thaw of the agent's pause and every launch meets it at one phase; the real
    /// launches meet it anywhere (measured under the agent, upload: 44-206 ms, IQR 18.6 ms).
    /// With the random extra the launches spread over the cycle and pay half a window on average.
    #[test]
    fn launches_meet_the_background_at_random_phases() {
        let (dev, host) = quiet_vm();
        let w = BenchWorkload::named("launch/upload").unwrap();
        let samples = |mode: &str, jitter: bool| {
            let mut cfg = config(&w, &host, &dev, "mq-deadline", mode, 10, 1).unwrap();
            if !jitter {
                fixed_pauses_everywhere(&mut cfg);
            }
            crate::try_run(&cfg).unwrap().metrics.fg_samples_ms
        };
        let alone = samples("alone", true);
        let alone = alone.iter().sum::<f64>() / alone.len() as f64;
        // Distinct phases met: the launch times rounded to 1 ms.
        let phases = |s: &[f64]| s.iter().map(|x| x.round() as i64).collect::<std::collections::BTreeSet<_>>().len();
        let mean_excess = |s: &[f64]| s.iter().map(|x| x - alone).sum::<f64>() / s.len() as f64;
        let (random, fixed) = (samples("agent", true), samples("agent", false));
        eprintln!("alone {alone:.1} ms; agent, random phases {random:.1?}; fixed pause {fixed:.1?}");
        assert!(phases(&random) >= 6, "random phases spread the launches: {random:?}");
        assert!(phases(&fixed) <= 3, "a fixed pause meets one phase: {fixed:?}");
        assert!(
            mean_excess(&random) > 2.0 * mean_excess(&fixed).max(0.5),
            "the windows in flight cost the launch: {random:?} vs {fixed:?} (alone {alone} ms)"
        );
    }

    /// twin11: the bench times an `agent`-mode launch from before the launcher's burst call
    /// (its median is in the report: 2.3-4.9 ms in the quiet cells), so the agent mode waits
    /// that long after the pause begins; no other mode does. Under `copy` the disk has nothing
    /// in flight to overlap the call with, and the launch grows by the call.
    #[test]
    fn the_agent_modes_launch_includes_the_burst_call() {
        use forefront_workload::Op;
        let (dev, host) = quiet_vm();
        let called = Host { burst_call_ms: Some(5.0), ..host.clone() };
        let w = small(Bg::Copy);
        let sleeps_after_begin = |cfg: &RunConfig| {
            let app = cfg.scenario.apps.iter().find(|a| a.role == forefront_workload::Role::Fg).unwrap();
            let Op::Repeat { ops, .. } = &app.threads[0].ops[0] else { panic!("{:?}", app.threads[0].ops) };
            ops.windows(2).filter(|p| matches!((&p[0], &p[1]), (Op::PhaseBegin { .. }, Op::Sleep { ms }) if *ms == 5.0)).count()
        };
        for mode in ["alone", "baseline", "bfq"] {
            assert_eq!(sleeps_after_begin(&config(&w, &called, &dev, "mq-deadline", mode, 3, 1).unwrap()), 0, "{mode}");
        }
        assert_eq!(sleeps_after_begin(&config(&w, &host, &dev, "mq-deadline", "agent", 3, 1).unwrap()), 0);
        assert_eq!(sleeps_after_begin(&config(&w, &called, &dev, "mq-deadline", "agent", 3, 1).unwrap()), 1);
        let p50 = |h: &Host| match predict(&w, h, &dev, "mq-deadline", "agent", 3, 1) {
            Predicted::Ran { fg_p50_ms, .. } => fg_p50_ms,
            p => panic!("{p:?}"),
        };
        let (free, with) = (p50(&host), p50(&called));
        eprintln!("agent under copy: a free call {free:.1} ms, a 5 ms call {with:.1} ms");
        assert!((with - free - 5.0).abs() < 0.5, "the call adds itself: {with} vs {free} ms");
    }

    /// twin12: on a kernel without kernel preemption (this VM: `Dynamic Preempt: none`), each
    /// of the launch's wake-ups waits for the copy writer on its CPU to finish its `write()`
    /// call (a 1 MiB call of page copies; traced on this VM: 252-259 wake-ups per launch,
    /// 115-138 µs median wait, 69-78 ms per launch, docs/twin.md twin12). With full preemption the writers cannot delay
    /// the launch (nothing of theirs reaches the disk during it); without it they do. The
    /// scenario carries the host's model.
    #[test]
    fn without_kernel_preemption_the_copy_writers_delay_the_launch() {
        let (dev, host) = quiet_vm();
        let none = Host { preempt: forefront_workload::bench::Preempt::None, ..host.clone() };
        let w = small(Bg::Copy);
        let cfg = config(&w, &none, &dev, "mq-deadline", "baseline", 3, 1).unwrap();
        assert_eq!(cfg.scenario.phone.cpu.preempt, forefront_workload::bench::Preempt::None);
        assert_eq!(
            config(&w, &host, &dev, "mq-deadline", "baseline", 3, 1).unwrap().scenario.phone.cpu.preempt,
            Default::default()
        );
        let p50 = |h: &Host, mode: &str| match predict(&w, h, &dev, "mq-deadline", mode, 3, 1) {
            Predicted::Ran { fg_p50_ms, .. } => fg_p50_ms,
            p => panic!("{p:?}"),
        };
        let (alone, full, without) = (p50(&host, "alone"), p50(&host, "baseline"), p50(&none, "baseline"));
        eprintln!("launch under copy: alone {alone:.1} ms, full preemption {full:.1} ms, none {without:.1} ms");
        assert!(full < 1.05 * alone, "full preemption: the writers do not delay the launch ({full} vs {alone} ms)");
        assert!(without > 1.1 * full, "no kernel preemption: each wake-up waits for a write() call ({without} vs {full} ms)");
        // Frozen writers (the agent's pause) delay nothing either way.
        let (agent_full, agent_none) = (p50(&host, "agent"), p50(&none, "agent"));
        assert!((agent_none - agent_full).abs() < 0.05 * agent_full, "{agent_none} vs {agent_full} ms");
    }

    /// twin19: without kernel preemption the launch is charged part of its waits behind the
    /// copy writers as runtime (the skipped clock update of a deferred preemption), which its CPU
    /// clock counts; with full preemption nothing is.
    #[test]
    fn a_deferred_preemptions_wait_shows_in_the_launchs_cpu_clock() {
        let (dev, host) = quiet_vm();
        let none = Host { preempt: forefront_workload::bench::Preempt::None, ..host.clone() };
        let w = small(Bg::Copy);
        let waits = |h: &Host| match predict(&w, h, &dev, "mq-deadline", "baseline", 3, 1) {
            Predicted::Ran { cpu_waits: Some(c), .. } => c,
            p => panic!("{p:?}"),
        };
        let (full, without) = (waits(&host), waits(&none));
        eprintln!("launch under copy, charged as runtime per launch: full {full:?}, none {without:?}");
        assert_eq!(full.charged_ms_per_launch, 0.0, "{full:?}");
        assert!(without.charged_ms_per_launch > 0.2 * without.sum_ms_per_launch, "{without:?}");
        assert!(without.charged_ms_per_launch <= without.sum_ms_per_launch, "{without:?}");
    }

    /// twin13: the host's EEVDF reaches the scenario (scheduler, base slice, tick, slices checked
    /// at the tick), and a copy launch's waits for a CPU differ from CFS's: under EEVDF a woken
    /// launch with no lag waits for a writer's request (and the tick) instead of one call.
    #[test]
    fn the_hosts_eevdf_reaches_the_scenario_and_changes_the_waits() {
        let (dev, host) = quiet_vm();
        let none = Host { preempt: forefront_workload::bench::Preempt::None, ..host.clone() };
        let eevdf = Host { eevdf: Some((0.70, 4.0)), ..none.clone() };
        let w = small(Bg::Copy);
        let cpu = config(&w, &eevdf, &dev, "mq-deadline", "baseline", 3, 1).unwrap().scenario.phone.cpu;
        assert_eq!(cpu.scheduler, forefront_model::cpu::SchedKind::Eevdf);
        assert_eq!((cpu.min_granularity_ms, cpu.tick_ms, cpu.slice_on_tick), (0.70, 4.0, true));
        let cfs = config(&w, &none, &dev, "mq-deadline", "baseline", 3, 1).unwrap().scenario.phone.cpu;
        assert_eq!(cfs.scheduler, forefront_model::cpu::SchedKind::Cfs);
        let waits = |h: &Host| match predict(&w, h, &dev, "mq-deadline", "baseline", 3, 1) {
            Predicted::Ran { fg_p50_ms, .. } => fg_p50_ms,
            p => panic!("{p:?}"),
        };
        let (a, b) = (waits(&none), waits(&eevdf));
        eprintln!("launch under copy, no kernel preemption: CFS {a:.1} ms, EEVDF {b:.1} ms");
        assert!((a - b).abs() > 0.01 * a, "the fair scheduler is in the model: CFS {a} vs EEVDF {b} ms");
    }

    #[test]
    fn modes_the_simulator_lacks_say_so() {
        let dev = forefront_workload::load_device("galaxy-s6-ufs").unwrap();
        match predict(&small(Bg::Update), &Host::default(), &dev, "mq-deadline", "ionice-idle", 1, 1) {
            Predicted::Unavailable { reason } => assert!(reason.starts_with("not yet in the simulator"), "{reason}"),
            p => panic!("{p:?}"),
        }
        assert_eq!(sim_scheduler("mq-deadline"), "deadline");
        assert_eq!(sim_scheduler("none"), "noop");
        // bfq and agent: a number where the model exists, the reason where it does not.
        for mode in ["bfq", "agent"] {
            match predict(&small(Bg::Update), &Host::default(), &dev, "mq-deadline", mode, 1, 1) {
                Predicted::Unavailable { reason } => assert!(reason.starts_with("not yet in the simulator"), "{mode}: {reason}"),
                Predicted::Ran { fg_p50_ms, .. } => assert!(fg_p50_ms > 0.0),
            }
        }
    }
}
