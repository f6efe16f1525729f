//! Derived figures: empirical CDFs, percentiles, and the comparison rows (delay against the
//! FG-only run, its reduction against `android`).

use std::collections::BTreeMap;

use forefront_record::run::RunReport;

/// The empirical CDF of `samples`: sorted finite values `x_i` with `F(x_i) = (i+1)/n`.
/// Equal values keep one point, at the highest fraction. Non-finite samples are dropped.
pub fn cdf(samples: &[f64]) -> Vec<(f64, f64)> {
    let mut xs: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(xs.len());
    for (i, &x) in xs.iter().enumerate() {
        let f = (i + 1) as f64 / n;
        match out.last_mut() {
            Some(last) if last.0 == x => last.1 = f,
            _ => out.push((x, f)),
        }
    }
    out
}

/// The simulator's percentile (nearest rank), so the page quotes what the runs report.
pub use forefront_record::stats::percentile;

/// One line of the comparison table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// T − T_alone (ms), when an FG-only run (bg_apps 0) of the same scenario, device and
    /// scheduler is among the inputs.
    pub delay_ms: Option<f64>,
    /// 1 − (T_p − T_0)/(T_android − T_0), when an `android` run with the same bg_apps and an
    /// FG-only run are among the inputs and android shows a delay.
    pub delay_reduction: Option<f64>,
    /// Sum of all hook counts.
    pub hooks_fired: u64,
}

/// Runs are compared within the same scenario, device and scheduler.
fn group(r: &RunReport) -> (&str, &str, &str) {
    (&r.scenario, &r.device, &r.scheduler)
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// The comparison rows, one per run, in input order. Several FG-only (or android) runs of a
/// group (e.g. several seeds) are averaged.
pub fn rows(runs: &[&RunReport]) -> Vec<Row> {
    runs.iter()
        .map(|r| {
            let t0 = mean(runs.iter().filter(|o| group(o) == group(r) && o.bg_apps == 0).map(|o| o.metrics.fg_ms));
            let ta = mean(
                runs.iter()
                    .filter(|o| group(o) == group(r) && o.bg_apps == r.bg_apps && o.policy == "android")
                    .map(|o| o.metrics.fg_ms),
            );
            let delay_ms = t0.map(|t0| r.metrics.fg_ms - t0);
            let delay_reduction = match (t0, ta) {
                (Some(t0), Some(ta)) if r.bg_apps > 0 && ta - t0 > 1e-6 => Some(1.0 - (r.metrics.fg_ms - t0) / (ta - t0)),
                _ => None,
            };
            Row { delay_ms, delay_reduction, hooks_fired: r.hooks.values().sum() }
        })
        .collect()
}

/// Short, unique labels for runs: the policy, plus whichever of bg_apps, seed, scenario, device
/// and scheduler vary among the runs; `#k` if that still leaves duplicates.
pub fn labels(runs: &[&RunReport]) -> Vec<String> {
    let varies = |f: &dyn Fn(&RunReport) -> String| {
        let first = runs.first().map(|r| f(r));
        runs.iter().any(|r| Some(f(r)) != first)
    };
    let bg = varies(&|r| r.bg_apps.to_string());
    let seed = varies(&|r| r.seed.to_string());
    let scen = varies(&|r| r.scenario.clone());
    let dev = varies(&|r| r.device.clone());
    let sched = varies(&|r| r.scheduler.clone());
    let mut out: Vec<String> = runs
        .iter()
        .map(|r| {
            let mut s = r.policy.clone();
            if r.bg_apps == 0 {
                s.push_str(" · FG only");
            } else if bg {
                s.push_str(&format!(" · {} BG", r.bg_apps));
            }
            if seed {
                s.push_str(&format!(" · seed {}", r.seed));
            }
            for (on, v) in [(scen, &r.scenario), (dev, &r.device), (sched, &r.scheduler)] {
                if on {
                    s.push_str(" · ");
                    s.push_str(v);
                }
            }
            s
        })
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for l in &out {
        *seen.entry(l.clone()).or_default() += 1;
    }
    let mut k: BTreeMap<String, usize> = BTreeMap::new();
    for l in out.iter_mut() {
        if seen[l.as_str()] > 1 {
            let n = k.entry(l.clone()).or_default();
            *n += 1;
            l.push_str(&format!(" #{n}"));
        }
    }
    out
}

/// Colour of a policy, the same in every chart and every report: fixed for the built-in
/// policies, otherwise picked from a palette by a stable (FNV-1a) hash of the name.
pub fn policy_color(policy: &str) -> &'static str {
    match policy {
        "android" => "#d62728",
        "fasttrack" => "#1f77b4",
        "fasttrack-minus" => "#17becf",
        "android+ft-alloc" => "#9467bd",
        "android+ft-reclaim" => "#8c564b",
        "android+ft-dispatch" => "#e377c2",
        "android+ft-device" => "#bcbd22",
        _ => {
            const PALETTE: [&str; 6] = ["#ff7f0e", "#2ca02c", "#393b79", "#637939", "#8c6d31", "#843c39"];
            let h = policy.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
            PALETTE[(h % PALETTE.len() as u64) as usize]
        }
    }
}

/// FG-only runs are the reference: grey whatever their policy.
pub const FG_ONLY_COLOR: &str = "#7f7f7f";

/// Stroke style per run: the policy colour, and a dash pattern that tells apart runs sharing a
/// colour (same policy at several bg_apps or seeds).
pub fn styles(runs: &[&RunReport]) -> Vec<(&'static str, &'static str)> {
    const DASHES: [&str; 5] = ["", "7 3", "2 3", "9 3 2 3", "4 4"];
    let mut used: BTreeMap<&str, usize> = BTreeMap::new();
    runs.iter()
        .map(|r| {
            let color = if r.bg_apps == 0 { FG_ONLY_COLOR } else { policy_color(&r.policy) };
            let n = used.entry(color).or_default();
            let dash = DASHES[*n % DASHES.len()];
            *n += 1;
            (color, dash)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    #[test]
    fn cdf_of_samples() {
        assert_eq!(cdf(&[]), vec![]);
        assert_eq!(cdf(&[3.0, 1.0, 2.0, 4.0]), vec![(1.0, 0.25), (2.0, 0.5), (3.0, 0.75), (4.0, 1.0)]);
        // Ties collapse to the highest fraction; NaN is dropped.
        assert_eq!(cdf(&[2.0, 1.0, 2.0, f64::NAN]), vec![(1.0, 1.0 / 3.0), (2.0, 1.0)]);
    }

    #[test]
    fn percentiles_nearest_rank() {
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), Some(5.0));
        assert_eq!(percentile(&xs, 90.0), Some(9.0));
        assert_eq!(percentile(&xs, 99.0), Some(10.0));
        assert_eq!(percentile(&xs, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn delay_and_reduction() {
        let alone = run("android", 0, 100.0);
        let android = run("android", 2, 300.0);
        let ft = run("fasttrack", 2, 150.0);
        let rs = rows(&[&alone, &android, &ft]);
        assert_eq!(rs[0].delay_ms, Some(0.0));
        assert_eq!(rs[0].delay_reduction, None);
        assert_eq!(rs[1].delay_ms, Some(200.0));
        assert_eq!(rs[1].delay_reduction, Some(0.0));
        assert_eq!(rs[2].delay_ms, Some(50.0));
        assert_eq!(rs[2].delay_reduction, Some(0.75));
        // Without the FG-only run there is no delay at all.
        let rs = rows(&[&android, &ft]);
        assert_eq!(rs[1].delay_ms, None);
        assert_eq!(rs[1].delay_reduction, None);
        // A run of another scenario is not compared with these.
        let mut other = run("fasttrack", 2, 150.0);
        other.scenario = "launch".into();
        assert_eq!(rows(&[&alone, &android, &other])[2].delay_ms, None);
    }

    #[test]
    fn labels_are_unique_and_short() {
        let a = run("android", 0, 1.0);
        let b = run("android", 2, 1.0);
        let c = run("fasttrack", 2, 1.0);
        assert_eq!(labels(&[&a, &b, &c]), ["android · FG only", "android · 2 BG", "fasttrack · 2 BG"]);
        assert_eq!(labels(&[&b, &c]), ["android", "fasttrack"]);
        assert_eq!(labels(&[&c, &c]), ["fasttrack #1", "fasttrack #2"]);
    }

    #[test]
    fn colors_are_stable() {
        assert_eq!(policy_color("android"), "#d62728");
        assert_eq!(policy_color("my-policy"), policy_color("my-policy"));
        let a = run("android", 2, 1.0);
        let mut a2 = run("android", 4, 1.0);
        a2.seed = 2;
        let f = run("fasttrack", 2, 1.0);
        let z = run("fasttrack", 0, 1.0);
        let s = styles(&[&a, &a2, &f, &z]);
        assert_eq!(s[0], ("#d62728", ""));
        assert_eq!(s[1], ("#d62728", "7 3"));
        assert_eq!(s[2], ("#1f77b4", ""));
        assert_eq!(s[3], (FG_ONLY_COLOR, ""));
    }
}
