//! Metrics and renderers for saved run results: `forefront report RUN.json... -o report.html`.
//!
//! Capture, derive and render are separate: the simulator saves a
//! [`RunReport`](forefront_record::run::RunReport) (`forefront sim run --format json`); this
//! crate loads it ([`input`]), derives figures from it ([`metrics`]: empirical CDFs, delay
//! against the FG-only run, delay reduction against `android`, stable per-policy colours) and
//! renders one self-contained HTML page with inline CSS and hand-written inline SVG
//! ([`html`], built from [`svg`]): no scripts, no network, the same bytes for the same inputs.
//!
//! The page shows a header table of the runs, the comparison table, the FG latency CDF per run,
//! FG/BG throughput over time (small multiples with the headline phases shaded) and a per-layer
//! stacked breakdown of the headline operation. `forefront sim compare --format json` output is
//! accepted too and shown as a table (with FG latency and delay reduction charted against the
//! BG-app count per policy, as for runs at several counts), and `forefront sim interactivity --format json` output
//! (FTC + VT-CFS) as its table, the headline latency against background apps and the VT-CFS
//! tick sweep charts; `forefront bench predict --format json` as measured against predicted
//! start-up (p50–p90 per mode) and background throughput ([`prediction`]).
//!
//! ```
//! use forefront_report::{html, input};
//! use std::path::Path;
//!
//! let text = r#"{"scenario":"demo","device":"d","scheduler":"cfq","headline":"switch",
//!   "seed":1,"seeds":1,"fg_only_ms":100.0,"cells":[{"policy":"android","bg_apps":2,
//!   "fg_ms":300.0,"fg_p50_ms":290.0,"fg_p99_ms":400.0,"delay_ms":200.0,
//!   "delay_reduction":0.0,"bg_mb_per_s":30.0,"bg_loss":0.0,"hooks":{},"samples":20}]}"#;
//! let loaded = input::parse(Path::new("cmp.json"), text).unwrap();
//! let page = html::render(
//!     &[input::Named { name: "cmp.json".into(), value: loaded }],
//!     &html::Options::default(),
//! );
//! assert!(page.starts_with("<!DOCTYPE html>") && page.contains("demo"));
//!
//! // Anything else is an error that names the file and the position.
//! let err = input::parse(Path::new("bad.json"), "{\"scenario\": 1}").unwrap_err();
//! assert!(err.to_string().starts_with("bad.json: not a `forefront sim run"));
//! assert!(err.to_string().contains("line 1 column"));
//! ```

pub mod html;
pub mod input;
pub mod interactivity;
pub mod metrics;
pub mod prediction;
pub mod svg;
pub mod table;

pub use input::{load, Input, LoadError, Named};

#[cfg(test)]
pub(crate) mod testutil {
    use forefront_record::run::{Invariants, Metrics, RunReport, RunStats, Timeline};

    /// A small run whose mean FG latency is `fg_ms`.
    pub fn run(policy: &str, bg_apps: u32, fg_ms: f64) -> RunReport {
        RunReport {
            scenario: "switch-upload".into(),
            policy: policy.into(),
            device: "galaxy-s6-ufs".into(),
            scheduler: "cfq".into(),
            seed: 1,
            bg_apps,
            bg_cells: 0,
            headline: "switch".into(),
            metrics: Metrics {
                fg_ms,
                fg_p50_ms: fg_ms,
                fg_p90_ms: fg_ms,
                fg_p99_ms: fg_ms,
                fg_max_ms: fg_ms,
                fg_samples_ms: vec![fg_ms * 0.9, fg_ms, fg_ms * 1.1],
                bg_mb_per_s: 10.0 * bg_apps as f64,
                bg_window_samples_mb_s: vec![],
                bg_read_mb: 1.0,
                bg_written_mb: 2.0,
                device_read_mb: 3.0,
                device_written_mb: 4.0,
                device_reorders: 5,
                device_fg_behind_bg: 6,
                fg_pages_evicted: 7,
                fg_evicted_while_bg_clean: 8,
                ui: None,
                cells: Vec::new(),
            },
            breakdown: [("cpu_running".to_string(), fg_ms * 0.25), ("device_queue".to_string(), fg_ms * 0.75)].into(),
            hooks: Default::default(),
            invariants: Invariants::default(),
            timeline: Timeline {
                bucket_ms: 100.0,
                fg_mb_per_s: vec![0.0, 5.0, 1.0, 0.0],
                bg_mb_per_s: vec![bg_apps as f64; 4],
                dirty_mb: vec![0.0; 4],
                queue_depth: vec![0; 4],
                phases: vec![(100.0, 150.0)],
            },
            warnings: vec![],
            stats: RunStats {
                events: 1,
                wall_ms: 1.0,
                sim_ms: 400.0,
                events_per_s: 1.0,
                sim_s_per_wall_s: 400.0,
                pages: 1,
                pages_per_s: 1.0,
                requests: 1,
                requests_per_s: 1.0,
            },
            host_reclaim: None,
        }
    }
}
