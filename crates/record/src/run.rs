//! What a simulation run reports: the stable JSON contract of `forefront sim run --format json`.
//!
//! Everything but [`RunStats`] is a pure function of (scenario, policy, device, bg_apps, seed);
//! `stats` alone holds wall-clock figures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub scenario: String,
    pub policy: String,
    pub device: String,
    pub scheduler: String,
    pub seed: u64,
    pub bg_apps: u32,
    /// Busy background cells (Cells scenarios; absent otherwise).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bg_cells: u32,
    /// The headline phase (the time the user waits).
    pub headline: String,
    pub metrics: Metrics,
    /// Mean time per headline sample spent in each layer (ms), on the thread that marks it.
    pub breakdown: BTreeMap<String, f64>,
    /// Policy hook name → times it changed a decision.
    pub hooks: BTreeMap<String, u64>,
    /// Conservation counters checked by the tests.
    pub invariants: Invariants,
    /// Time series sampled every `bucket_ms` of simulated time.
    pub timeline: Timeline,
    /// What makes the run's figures mean less than they seem (e.g. background apps that barely
    /// ran); absent when there is nothing to say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Absent in `sim sweep` lines (they keep only what is deterministic): all zero then.
    #[serde(default)]
    pub stats: RunStats,
    /// The VM host's reclaim of free memory (`[phone.host_reclaim]`; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_reclaim: Option<HostReclaimCounts>,
}

/// What the host's reclaim of free memory did over a run ([`RunReport::host_reclaim`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostReclaimCounts {
    /// 4 KiB pages the guest's reporting passes handed to the host.
    pub reported_pages: u64,
    /// Pages allocated from memory the host had taken back (each paid its fault).
    pub refaulted_pages: u64,
}

/// A run's figures. The FG latency figures of a run with no headline sample (the FG app finished
/// no headline phase within the scenario's duration) are NaN here, `null` in JSON and `–` in
/// tables: never a 0 ms that reads like a fast app ([`nan_as_null`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Mean headline FG latency (ms).
    #[serde(with = "nan_as_null")]
    pub fg_ms: f64,
    #[serde(with = "nan_as_null")]
    pub fg_p50_ms: f64,
    #[serde(with = "nan_as_null")]
    pub fg_p90_ms: f64,
    #[serde(with = "nan_as_null")]
    pub fg_p99_ms: f64,
    #[serde(with = "nan_as_null")]
    pub fg_max_ms: f64,
    /// Every headline sample (ms), in completion order.
    pub fg_samples_ms: Vec<f64>,
    /// Bytes read + written by background apps' syscalls per second of simulated time.
    pub bg_mb_per_s: f64,
    /// The same over each phase named `bg_window` (the scenario's windows of background
    /// measurement, in completion order: `forefront bench`'s per-sample figure); absent when the
    /// scenario has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bg_window_samples_mb_s: Vec<f64>,
    pub bg_read_mb: f64,
    pub bg_written_mb: f64,
    /// Device bytes served (MB) and the share of time it was busy.
    pub device_read_mb: f64,
    pub device_written_mb: f64,
    /// How often the device's command order let a command overtake an older one.
    pub device_reorders: u64,
    /// How often a BG command started in the device while an FG command waited there.
    pub device_fg_behind_bg: u64,
    /// Pages of the FG app evicted, and how many of those while BG pages were evictable.
    pub fg_pages_evicted: u64,
    pub fg_evicted_while_bg_clean: u64,
    /// Interactivity, for scenarios with input events (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiMetrics>,
    /// Per virtual phone, for Cells scenarios (absent otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellMetrics>,
}

/// One virtual phone's share of a Cells run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellMetrics {
    pub name: String,
    /// The `[[cell]]` it was made from, and that template's role (`fg`, `busy`, `idle`).
    pub template: String,
    pub role: String,
    pub apps: Vec<String>,
    /// Time on the screen (ms) and how often it was switched to.
    pub on_screen_ms: f64,
    pub switched_in: u64,
    /// CPU time of its threads (ms) and their syscall I/O (MB).
    pub cpu_ms: f64,
    pub read_mb: f64,
    pub written_mb: f64,
    /// Every phase its apps measured, by name: all samples, on screen or not.
    pub phases: BTreeMap<String, PhaseStats>,
}

/// Samples of one phase (ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseStats {
    pub samples: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Interactivity figures (FTC + VT-CFS, SPE'15) of a run whose scenario has input events.
/// Latencies are over the waits of the tasks of user-interactive chains while an interaction
/// was open: *dispatch* from a wake-up to the first instruction, *preemption* from being
/// preempted to running again, and *preemption to done* from a run's first preemption to the
/// end of that run (the SPE'15 journal's "preempted until it finishes").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UiMetrics {
    /// The CPU scheduler (`cfs` or `vt-cfs`) and VT-CFS's preemption tick (ms).
    pub cpu_scheduler: String,
    pub tick_ms: f64,
    /// Interactions displayed, and their response time (input event → the end of composing the
    /// frame that shows the result), over every phase.
    pub interactions: u64,
    pub response_p50_ms: f64,
    pub response_p99_ms: f64,
    pub dispatch_waits: u64,
    pub dispatch_mean_ms: f64,
    pub dispatch_p50_ms: f64,
    pub dispatch_p99_ms: f64,
    pub preempt_waits: u64,
    pub preempt_mean_ms: f64,
    pub preempt_p50_ms: f64,
    pub preempt_p99_ms: f64,
    /// Runs on the CPU (wake-up to stop) of chain tasks that were preempted at least once, and
    /// the time from each one's first preemption to its stop (absent in older reports: 0).
    #[serde(default)]
    pub preempted_runs: u64,
    #[serde(default)]
    pub preempt_to_done_mean_ms: f64,
    #[serde(default)]
    pub preempt_to_done_p50_ms: f64,
    #[serde(default)]
    pub preempt_to_done_p99_ms: f64,
    /// Frames composed, and vsyncs during a continuous interaction with no new frame.
    pub frames: u64,
    pub frame_misses: u64,
    /// Context switches on every core, and VT-CFS ticks that handed a core to another task.
    pub context_switches: u64,
    pub tick_preemptions: u64,
    /// Share of all cores' time the background apps' tasks ran (what FTC and VT-CFS cost them).
    pub bg_cpu_share: f64,
    /// Tasks that were part of a user-interactive chain at least once, by name.
    pub chain_tasks: Vec<String>,
    /// Tasks still promoted (weight or interactive mark) at the end with no interaction open:
    /// FTC restores every one, so this must be 0.
    pub ftc_left_promoted: u64,
}

/// Throughput and state over simulated time, one value per bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub bucket_ms: f64,
    /// Bytes read + written by the foreground app's syscalls in each bucket, as MB/s.
    pub fg_mb_per_s: Vec<f64>,
    /// The same for background apps.
    pub bg_mb_per_s: Vec<f64>,
    /// Dirty page-cache data at the end of each bucket (MB).
    pub dirty_mb: Vec<f64>,
    /// Requests queued in the host plus outstanding in the device at the end of each bucket.
    pub queue_depth: Vec<u32>,
    /// Headline phases as (start ms, duration ms).
    pub phases: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Invariants {
    pub requests_submitted: u64,
    pub requests_merged: u64,
    pub requests_completed: u64,
    /// Requests still queued or on the device when the run ended.
    pub requests_in_flight: u64,
    pub bytes_submitted: u64,
    pub bytes_completed: u64,
    pub bytes_in_flight: u64,
    /// Tasks still blocked when the run ended, and whether each has something that will wake it.
    pub tasks_blocked_at_end: u64,
    pub tasks_blocked_without_waker: u64,
    /// Events the engine had to clamp into the present (must be 0).
    pub time_clamps: u64,
    /// Background async requests dispatched while a boosted (QASIO) request waited in the
    /// host's queues: must be 0, since a boost puts a request ahead of every other async one.
    #[serde(default)]
    pub boosted_async_overtaken: u64,
}

/// Wall-clock figures: the only part of a report that differs between identical runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    pub events: u64,
    pub wall_ms: f64,
    pub sim_ms: f64,
    pub events_per_s: f64,
    /// Speed against real time: simulated seconds per wall-clock second.
    #[serde(default)]
    pub sim_s_per_wall_s: f64,
    /// Pages inserted into the page cache over the run, and per wall-clock second.
    #[serde(default)]
    pub pages: u64,
    #[serde(default)]
    pub pages_per_s: f64,
    /// Block requests submitted over the run, and per wall-clock second.
    #[serde(default)]
    pub requests: u64,
    #[serde(default)]
    pub requests_per_s: f64,
}

/// `forefront sim interactivity --format json`: the FTC + VT-CFS figures of one scenario per
/// policy and background-app count (means over seeds), and the sweep of VT-CFS's tick λ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InteractivitySummary {
    pub scenario: String,
    pub device: String,
    /// The headline phase (e.g. `tap`): `headline_*` figures are its samples.
    pub headline: String,
    pub seed: u64,
    pub seeds: u64,
    /// The scenario's λ (ms), used by the cells.
    pub tick_ms: f64,
    pub cells: Vec<UiCell>,
    /// Background apps of the λ sweep.
    pub sweep_bg_apps: u32,
    pub tick_sweep: Vec<TickPoint>,
}

/// One policy at one background-app count. Reductions are `1 − policy / android` (stock CFS)
/// at the same count; `None` for android itself, and for dispatch and preemption latency where
/// android's is under 0.05 ms (noise).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiCell {
    pub policy: String,
    pub bg_apps: u32,
    pub cpu_scheduler: String,
    pub headline_p50_ms: f64,
    pub headline_p99_ms: f64,
    pub response_p50_ms: f64,
    pub response_p99_ms: f64,
    pub dispatch_p50_ms: f64,
    pub dispatch_p99_ms: f64,
    pub preempt_p50_ms: f64,
    pub preempt_p99_ms: f64,
    pub frame_misses: f64,
    pub context_switches_per_s: f64,
    pub bg_cpu_share: f64,
    pub headline_p50_reduction: Option<f64>,
    pub headline_p99_reduction: Option<f64>,
    pub dispatch_p99_reduction: Option<f64>,
    pub preempt_p99_reduction: Option<f64>,
}

/// One policy at one tick λ in the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TickPoint {
    pub policy: String,
    pub tick_ms: f64,
    pub context_switches_per_s: f64,
    pub tick_preemptions_per_s: f64,
    pub dispatch_p50_ms: f64,
    pub dispatch_p99_ms: f64,
    pub preempt_p99_ms: f64,
    pub headline_p50_ms: f64,
    pub headline_p99_ms: f64,
    pub bg_cpu_share: f64,
}

/// A figure that may be missing (NaN) as JSON: `null` for NaN, and back. serde_json writes a
/// NaN `f64` as `null` but refuses to read `null` into one; this reads it back, so a report
/// with no headline sample round-trips.
pub mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_nan() {
            s.serialize_none()
        } else {
            s.serialize_f64(*v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// `v` with a missing figure (NaN) as `–`, else formatted by `f`: how tables print a figure a
/// run could not measure.
pub fn or_dash(v: f64, f: impl Fn(f64) -> String) -> String {
    if v.is_nan() {
        "–".to_string()
    } else {
        f(v)
    }
}
