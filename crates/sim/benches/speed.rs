//! Simulator speed against real time, and how its cost grows (`cargo bench -p forefront-sim
//! --bench speed`). Prints, each figure the median of three runs:
//!
//! 1. `switch-upload` with 6 BG apps, 60 simulated seconds: simulated seconds per wall second
//!    (target: ≥ 1,000× real time), events, pages and requests per wall second;
//! 2. growth with simulated time: 15, 30 and 60 s of the same run, wall time and wall time per
//!    page-cache page as ratios to 15 s (linear cost = 2× and 4× wall, flat per page);
//! 3. growth with the number of BG apps (1, 2, 4, 8 at 20 s): wall time, and wall time per
//!    page-cache page, as ratios to 1 app (more apps do more I/O, so cost per page is the figure
//!    that shows bookkeeping growing with the number of apps; flat = no per-app term).
//!
//! It measures and prints; it asserts nothing (wall time depends on the machine).

use std::time::Instant;

use forefront_sim::{run, RunConfig};

/// (wall seconds, simulated seconds, events, pages, requests): the median-wall run of three.
fn measure(scenario: &str, bg: u32, duration_s: f64) -> (f64, f64, u64, u64, u64) {
    let mut cfg = RunConfig::builtin(scenario, "android", Some(bg), 1).expect("built-in scenario");
    cfg.scenario.duration_s = duration_s;
    let mut runs: Vec<_> = (0..3)
        .map(|_| {
            let t = Instant::now();
            let r = run(&cfg);
            let wall = t.elapsed().as_secs_f64();
            (wall, r.stats.sim_ms / 1e3, r.stats.events, r.stats.pages, r.stats.requests)
        })
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    runs[1]
}

fn main() {
    let (wall, sim, events, pages, reqs) = measure("switch-upload", 6, 60.0);
    println!("switch-upload, 6 BG apps, {sim:.0} s simulated: {:.0} ms wall", wall * 1e3);
    println!(
        "  {:.0}x real time (target >= 1000x) · {:.2} M events/s · {:.2} M pages/s · {:.0} k requests/s",
        sim / wall,
        events as f64 / wall / 1e6,
        pages as f64 / wall / 1e6,
        reqs as f64 / wall / 1e3
    );

    // The first seconds fill an empty page cache (no reclaim yet): cheaper per page than the
    // steady state, so a short run's wall time understates the rate. Cost per page-cache page
    // is the figure that shows whether the cost per unit of work grows with the run's length.
    println!("growth with simulated time (switch-upload, 6 BG apps):");
    growth("15 s", [15, 30, 60].map(|secs| (format!("{secs:>3} s"), 6, f64::from(secs))));
    println!("growth with BG apps (switch-upload, 20 s):");
    growth("1 app", [1, 2, 4, 8].map(|bg| (format!("{bg} BG apps"), bg, 20.0)));
}

/// Prints wall time and wall time per page-cache page of each `(label, bg apps, seconds)`
/// run of `switch-upload`, as ratios to the first (`first` names it).
fn growth<const N: usize>(first: &str, points: [(String, u32, f64); N]) {
    let mut base: Option<(f64, f64)> = None;
    for (label, bg, secs) in points {
        let (w, _, _, pages, _) = measure("switch-upload", bg, secs);
        let per_page = w / pages.max(1) as f64;
        let (w1, p1) = *base.get_or_insert((w, per_page));
        println!(
            "  {label}: {:>6.0} ms wall ({:.2}x of {first}) · {:>9} pages · {:.1} ns/page ({:.2}x of {first})",
            w * 1e3,
            w / w1,
            pages,
            per_page * 1e9,
            per_page / p1
        );
    }
}
