//! The self-contained HTML page: inline CSS and inline SVG, no scripts, no network.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use forefront_record::run::RunReport;

use crate::input::{CompareSummary, Input, Named};
use crate::metrics::{self, Row};
use crate::svg::{self, escape, Bar, Series, TimeSeriesChart};

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.sub{color:#555;margin-top:0}
.wrap{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f4f4f4;white-space:normal;vertical-align:bottom}td.l,th.l{text-align:left}
.warn{color:#b00}
.swatch{display:inline-block;width:10px;height:10px;margin-right:5px;vertical-align:baseline}
.grid{display:flex;flex-wrap:wrap;gap:8px}
svg{max-width:100%;height:auto}
.note{color:#555;font-size:13px}
footer{margin-top:3em;color:#888;font-size:12px}
";

/// Options for [`render`].
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Page title; defaults to the scenario names.
    pub title: Option<String>,
}

/// Render the inputs (runs and comparisons, in the order given) as one HTML page. The output is
/// a pure function of the inputs: the same inputs give the same bytes.
pub fn render(inputs: &[Named<Input>], opts: &Options) -> String {
    let runs: Vec<(&str, &RunReport)> = inputs
        .iter()
        .flat_map(|n| match &n.value {
            Input::Run(r) => vec![(n.name.as_str(), r.as_ref())],
            Input::Runs(rs) => rs.iter().map(|r| (n.name.as_str(), r)).collect(),
            Input::Compare(_) | Input::Interactivity(_) | Input::Cells(_) | Input::Prediction(_) => vec![],
        })
        .collect();
    let compares: Vec<(&str, &CompareSummary)> = inputs
        .iter()
        .filter_map(|n| match &n.value {
            Input::Compare(c) => Some((n.name.as_str(), c)),
            Input::Run(_) | Input::Runs(_) | Input::Interactivity(_) | Input::Cells(_) | Input::Prediction(_) => None,
        })
        .collect();
    let reports: Vec<&RunReport> = runs.iter().map(|r| r.1).collect();
    let labels = metrics::labels(&reports);
    let styles = metrics::styles(&reports);
    let rows = metrics::rows(&reports);

    let scenarios: BTreeSet<&str> = reports
        .iter()
        .map(|r| r.scenario.as_str())
        .chain(compares.iter().map(|c| c.1.scenario.as_str()))
        .chain(inputs.iter().filter_map(|n| match &n.value {
            Input::Interactivity(s) => Some(s.scenario.as_str()),
            Input::Cells(s) => Some(s.scenario.as_str()),
            Input::Prediction(_) => Some("bench predict"),
            _ => None,
        }))
        .collect();
    let title = opts
        .title
        .clone()
        .unwrap_or_else(|| format!("forefront report: {}", scenarios.into_iter().collect::<Vec<_>>().join(", ")));

    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let _ = writeln!(
        h,
        "<p class=\"sub\">{} run(s), {} comparison(s). Latencies are of each run's headline operation (the time the user waits), in ms of simulated time.</p>",
        runs.len(),
        compares.len()
    );

    if !runs.is_empty() {
        runs_table(&mut h, &runs, &labels, &styles);
        grid_section(&mut h, &reports);
        comparison_table(&mut h, &reports, &labels, &styles, &rows);
        cdf_section(&mut h, &reports, &labels, &styles);
        timeline_section(&mut h, &reports, &labels, &styles);
        breakdown_section(&mut h, &reports, &labels, &styles);
        crate::interactivity::runs_table(&mut h, &reports, &labels, &styles);
        hooks_table(&mut h, &reports, &labels, &styles);
    }
    for (name, c) in &compares {
        compare_section(&mut h, name, c);
    }
    for n in inputs {
        match &n.value {
            Input::Interactivity(s) => crate::interactivity::section(&mut h, &n.name, s),
            Input::Cells(s) => cells_section(&mut h, &n.name, s),
            Input::Prediction(p) => crate::prediction::section(&mut h, &n.name, p),
            _ => {}
        }
    }
    let _ = write!(
        h,
        "<footer>forefront report {}: self-contained page, no scripts.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    h
}

fn swatch(color: &str) -> String {
    format!("<span class=\"swatch\" style=\"background:{color}\"></span>")
}

fn runs_table(h: &mut String, runs: &[(&str, &RunReport)], labels: &[String], styles: &[(&str, &str)]) {
    h.push_str("<h2 id=\"runs\">Runs</h2>\n<div class=\"wrap\"><table class=\"runs\">\n<tr><th class=\"l\">run</th><th class=\"l\">file</th><th class=\"l\">scenario</th><th class=\"l\">policy</th><th class=\"l\">device</th><th class=\"l\">scheduler</th><th>seed</th><th>BG apps</th><th class=\"l\">headline</th><th>samples</th><th>simulated s</th></tr>\n");
    for (i, (name, r)) in runs.iter().enumerate() {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td></tr>",
            swatch(styles[i].0),
            escape(&labels[i]),
            escape(name),
            escape(&r.scenario),
            escape(&r.policy),
            escape(&r.device),
            escape(&r.scheduler),
            r.seed,
            r.bg_apps,
            escape(&r.headline),
            r.metrics.fg_samples_ms.len(),
            r.stats.sim_ms / 1000.0
        );
    }
    h.push_str("</table></div>\n");
}

/// Runs of several scenarios (or scenario variants, `webbench/usb/lfs-for-sqlite` from a sweep)
/// on several devices: a heat map of the FG mean, devices down, scenarios across, shaded on a
/// log scale from the fastest (white) to the slowest (red) cell, one table per policy and BG-app
/// count. Several seeds of a cell are averaged. Nothing when there is only one of either.
fn grid_section(h: &mut String, reports: &[&RunReport]) {
    let mut devices: Vec<&str> = vec![];
    let mut scenarios: Vec<&str> = vec![];
    let mut groups: Vec<(&str, u32)> = vec![];
    for r in reports {
        for (v, x) in [(&mut devices, r.device.as_str()), (&mut scenarios, r.scenario.as_str())] {
            if !v.contains(&x) {
                v.push(x);
            }
        }
        if !groups.contains(&(r.policy.as_str(), r.bg_apps)) {
            groups.push((r.policy.as_str(), r.bg_apps));
        }
    }
    if devices.len() < 2 || scenarios.len() < 2 {
        return;
    }
    h.push_str("<h2 id=\"grid\">FG latency by device and scenario</h2>\n<p class=\"note\">Mean headline latency (ms) of each device (rows) and scenario or sweep variant (columns); the shade runs on a log scale from the fastest cell (white) to the slowest (red).</p>\n");
    for (policy, bg) in groups {
        let cell = |d: &str, s: &str| {
            let v: Vec<f64> = reports
                .iter()
                .filter(|r| r.device == d && r.scenario == s && r.policy == policy && r.bg_apps == bg)
                .map(|r| r.metrics.fg_ms)
                .filter(|v| !v.is_nan())
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let all: Vec<f64> =
            devices.iter().flat_map(|d| scenarios.iter().filter_map(move |s| cell(d, s))).filter(|v| *v > 0.0).collect();
        let (lo, hi) = all.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        let _ = writeln!(h, "<h3>{} · {} BG apps</h3>\n<div class=\"wrap\"><table class=\"grid\">", escape(policy), bg);
        h.push_str("<tr><th class=\"l\">device</th>");
        for s in &scenarios {
            let _ = write!(h, "<th>{}</th>", escape(s));
        }
        h.push_str("</tr>\n");
        for d in &devices {
            let _ = write!(h, "<tr><td class=\"l\">{}</td>", escape(d));
            for s in &scenarios {
                match cell(d, s) {
                    Some(v) => {
                        let t = if hi > lo && v > 0.0 { (v / lo).ln() / (hi / lo).ln() } else { 0.0 };
                        let g = (255.0 - 155.0 * t.clamp(0.0, 1.0)).round() as u8;
                        let _ = write!(h, "<td style=\"background:rgb(255,{g},{g})\">{v:.1}</td>");
                    }
                    None => h.push_str("<td>–</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table></div>\n");
    }
}

/// A figure that may be missing (`None`, or NaN: a run without headline samples) as `–`; a
/// negative zero prints as `0.0`, never `-0.0`.
fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.filter(|v| !v.is_nan()).map_or_else(|| "–".to_string(), |v| f(v + 0.0))
}

/// [`opt`] for a figure that is NaN when missing.
fn nan(v: f64) -> String {
    opt(Some(v), |v| format!("{v:.1}"))
}

fn comparison_table(h: &mut String, reports: &[&RunReport], labels: &[String], styles: &[(&str, &str)], rows: &[Row]) {
    h.push_str("<h2 id=\"comparison\">Comparison</h2>\n<div class=\"wrap\"><table class=\"comparison\">\n");
    h.push_str("<tr><th class=\"l\">run</th><th>FG mean ms</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>delay ms</th><th>delay reduction</th><th>BG MB/s</th><th>device read MB</th><th>device written MB</th><th>device reorders</th><th>FG behind BG in device</th><th>FG pages evicted</th><th>… while BG evictable</th><th>hooks fired</th></tr>\n");
    for (i, (r, row)) in reports.iter().zip(rows).enumerate() {
        let m = &r.metrics;
        let hooks = if row.hooks_fired == 0 && r.policy != "android" && !r.hooks.is_empty() {
            // A policy that silently does nothing must show up.
            "<span class=\"warn\">none fired</span>".to_string()
        } else {
            row.hooks_fired.to_string()
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{hooks}</td></tr>",
            swatch(styles[i].0),
            escape(&labels[i]),
            nan(m.fg_ms),
            nan(m.fg_p50_ms),
            nan(m.fg_p90_ms),
            nan(m.fg_p99_ms),
            nan(m.fg_max_ms),
            opt(row.delay_ms, |v| format!("{v:.1}")),
            opt(row.delay_reduction, |v| format!("{:.1}%", v * 100.0)),
            m.bg_mb_per_s,
            m.device_read_mb,
            m.device_written_mb,
            m.device_reorders,
            m.device_fg_behind_bg,
            m.fg_pages_evicted,
            m.fg_evicted_while_bg_clean,
        );
    }
    h.push_str("</table></div>\n");
    let has_alone = reports.iter().any(|r| r.bg_apps == 0);
    let has_android = reports.iter().any(|r| r.policy == "android" && r.bg_apps > 0);
    let _ = writeln!(
        h,
        "<p class=\"note\">delay = T − T<sub>alone</sub> (mean FG latency minus that of the FG-only run, bg_apps 0, of the same scenario, device and scheduler){}. delay reduction = 1 − (T<sub>p</sub> − T<sub>alone</sub>) / (T<sub>android</sub> − T<sub>alone</sub>) at the same BG-app count{}.</p>",
        if has_alone { "" } else { "; <b>no FG-only run among the inputs</b>, add one with <code>forefront sim run SCENARIO --bg-apps 0 --format json</code>" },
        if has_android { "" } else { "; <b>no android run with BG apps among the inputs</b>" }
    );
    // The figure every seed paper draws: latency and delay reduction against the BG-app count.
    let several = reports.iter().map(|r| (&r.scenario, &r.device, &r.scheduler)).collect::<BTreeSet<_>>().len() > 1;
    let points: Vec<ByCount> = reports
        .iter()
        .zip(rows)
        .map(|(r, row)| ByCount {
            series: if several { format!("{} · {} · {}", r.policy, r.scenario, r.device) } else { r.policy.clone() },
            policy: r.policy.clone(),
            bg_apps: r.bg_apps,
            fg_ms: Some(r.metrics.fg_ms).filter(|v| !v.is_nan()),
            delay_reduction: row.delay_reduction.filter(|v| !v.is_nan()),
        })
        .collect();
    by_count_charts(h, &points);
}

/// The FG latencies and delay reductions of one series at one BG-app count (its seeds).
type AtCount = (Vec<f64>, Vec<f64>);

/// One point of the by-BG-count charts: a run, or a comparison's cell.
struct ByCount {
    series: String,
    policy: String,
    bg_apps: u32,
    fg_ms: Option<f64>,
    delay_reduction: Option<f64>,
}

/// FG latency and delay reduction against the BG-app count, a line per series (the mean over
/// the points of one series at one count: the seeds of a sweep). Drawn only where some series
/// has two counts or more; a point without its figure (no sample, no FG-only or android run)
/// is left out.
fn by_count_charts(h: &mut String, points: &[ByCount]) {
    // Series name -> (policy, BG-app count -> the figures at that count).
    let mut by: BTreeMap<&str, (&str, BTreeMap<u32, AtCount>)> = BTreeMap::new();
    for p in points {
        let e = by.entry(&p.series).or_insert((&p.policy, BTreeMap::new())).1.entry(p.bg_apps).or_default();
        e.0.extend(p.fg_ms);
        e.1.extend(p.delay_reduction);
    }
    if !by.values().any(|(_, counts)| counts.keys().filter(|&&n| n > 0).count() > 1) {
        return;
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let series = |pick: &dyn Fn(&AtCount) -> Option<f64>, with_android: bool| -> Vec<Series> {
        by.iter()
            .filter(|(_, (policy, _))| with_android || *policy != "android")
            .map(|(name, (policy, counts))| Series {
                label: name.to_string(),
                color: metrics::policy_color(policy).to_string(),
                dash: String::new(),
                points: counts.iter().filter_map(|(&n, v)| pick(v).map(|y| (f64::from(n), y))).collect(),
                step: false,
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let latency = series(&|v| mean(&v.0), true);
    let reduction = series(&|v| mean(&v.1).map(|r| r * 100.0), false);
    h.push_str("<figure>\n");
    h.push_str(&svg::line_chart("FG latency by BG-app count", &latency, "BG apps", "mean FG latency (ms)", None, f64::INFINITY));
    if !reduction.is_empty() {
        h.push_str(&svg::line_chart(
            "Delay reduction by BG-app count",
            &reduction,
            "BG apps",
            "delay reduction (%)",
            None,
            f64::INFINITY,
        ));
    }
    h.push_str("\n<figcaption class=\"note\">Mean FG latency and delay reduction (against android at the same count) per policy as the number of background apps grows, the figure each seed paper draws; points without a figure are left out.</figcaption>\n</figure>\n");
}

fn cdf_section(h: &mut String, reports: &[&RunReport], labels: &[String], styles: &[(&str, &str)]) {
    let series: Vec<Series> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| Series {
            label: format!("{} (n={})", labels[i], r.metrics.fg_samples_ms.len()),
            color: styles[i].0.to_string(),
            dash: styles[i].1.to_string(),
            points: metrics::cdf(&r.metrics.fg_samples_ms),
            step: true,
        })
        .collect();
    h.push_str("<h2 id=\"cdf\">FG latency CDF</h2>\n<figure>\n");
    h.push_str(&svg::line_chart("FG latency CDF", &series, "FG latency (ms)", "fraction of samples ≤ x", Some((0.0, 1.0)), 20.0));
    h.push_str("\n<figcaption class=\"note\">Empirical CDF of every headline sample (<code>fg_samples_ms</code>) per run. Further left is faster; the tail on the right is what the user notices.</figcaption>\n</figure>\n");
}

fn timeline_section(h: &mut String, reports: &[&RunReport], labels: &[String], styles: &[(&str, &str)]) {
    let x_max_s = reports
        .iter()
        .map(|r| r.timeline.fg_mb_per_s.len().max(r.timeline.bg_mb_per_s.len()) as f64 * r.timeline.bucket_ms / 1000.0)
        .fold(0.0, f64::max);
    let y_max = reports
        .iter()
        .flat_map(|r| r.timeline.fg_mb_per_s.iter().chain(&r.timeline.bg_mb_per_s))
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let headlines: BTreeSet<&str> = reports.iter().map(|r| r.headline.as_str()).collect();
    let phase_label = headlines.into_iter().collect::<Vec<_>>().join(", ");
    h.push_str("<h2 id=\"timeline\">Throughput over time</h2>\n");
    h.push_str(&svg::timeline_legend(&phase_label));
    h.push_str("\n<div class=\"grid\">\n");
    for (i, r) in reports.iter().enumerate() {
        let t = &r.timeline;
        h.push_str(
            &TimeSeriesChart {
                title: &labels[i],
                bucket_ms: t.bucket_ms,
                fg: &t.fg_mb_per_s,
                bg: &t.bg_mb_per_s,
                phases: &t.phases,
                phase_label: &r.headline,
                x_max_s,
                y_max,
                color: styles[i].0,
            }
            .render(),
        );
        h.push('\n');
    }
    let buckets: BTreeSet<String> = reports.iter().map(|r| format!("{}", r.timeline.bucket_ms)).collect();
    let _ = writeln!(
        h,
        "</div>\n<p class=\"note\">Bytes read + written by the FG app's and the BG apps' syscalls per {} ms bucket, as MB/s; all charts share their axes. Shaded: the headline phases.</p>",
        escape(&buckets.into_iter().collect::<Vec<_>>().join("/"))
    );
}

/// Hook name × run: how often each policy hook changed a decision.
fn hooks_table(h: &mut String, reports: &[&RunReport], labels: &[String], styles: &[(&str, &str)]) {
    let names: BTreeSet<&str> = reports.iter().flat_map(|r| r.hooks.keys().map(String::as_str)).collect();
    h.push_str("<h2 id=\"hooks\">Policy hooks</h2>\n");
    if names.is_empty() {
        h.push_str("<p class=\"note\">No run reports any hook.</p>\n");
        return;
    }
    h.push_str("<div class=\"wrap\"><table class=\"hooks\">\n<tr><th class=\"l\">hook</th>");
    for (i, l) in labels.iter().enumerate() {
        let _ = write!(h, "<th>{}{}</th>", swatch(styles[i].0), escape(l));
    }
    h.push_str("</tr>\n");
    for name in names {
        let _ = write!(h, "<tr><td class=\"l\"><code>{}</code></td>", escape(name));
        for r in reports {
            match r.hooks.get(name) {
                Some(v) => {
                    let _ = write!(h, "<td>{v}</td>");
                }
                None => h.push_str("<td>–</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n<p class=\"note\">Times each hook changed a decision (a policy whose hooks never fire does nothing).</p>\n");
}

/// Layer colours, by position in the sorted union of layer names.
const LAYER_COLORS: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1b9e77",
    "#d95f02",
];

fn breakdown_section(h: &mut String, reports: &[&RunReport], labels: &[String], styles: &[(&str, &str)]) {
    // Layers at zero in every run would only crowd the legend.
    let names: Vec<String> = reports
        .iter()
        .flat_map(|r| r.breakdown.iter().filter(|(_, &v)| v > 0.0).map(|(k, _)| k.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let bars: Vec<Bar> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| Bar {
            label: labels[i].clone(),
            color: styles[i].0.to_string(),
            segments: r.breakdown.iter().filter(|(_, &v)| v > 0.0).map(|(k, v)| (k.clone(), *v)).collect(),
        })
        .collect();
    h.push_str("<h2 id=\"breakdown\">Per-layer breakdown</h2>\n<figure>\n");
    h.push_str(&svg::stacked_bars(
        "Per-layer breakdown of the headline operation",
        &bars,
        &names,
        &|i| LAYER_COLORS[i % LAYER_COLORS.len()].to_string(),
        "mean time per headline sample (ms)",
    ));
    h.push_str("\n<figcaption class=\"note\">Mean time per headline sample spent in each layer (<code>breakdown</code>), on the thread that marks it.</figcaption>\n</figure>\n");
}

/// `sim cells` output: its three tables, as the CLI prints them (crate::table).
fn cells_section(h: &mut String, name: &str, s: &forefront_record::cells::CellsSummary) {
    use crate::table;
    let _ = writeln!(h, "<h2>Virtual phones from <code>{}</code></h2>", escape(name));
    for (title, t, class) in [
        (table::cells_overhead_title(s), table::cells_overhead(s), "cells-overhead"),
        (table::cells_delay_title(s), table::cells_delay(s), "cells-delay"),
        (table::cells_switch_title(s), table::cells_switch(s), "cells-switch"),
    ] {
        let _ = writeln!(h, "<p class=\"sub\">{}</p>", escape(&title));
        h.push_str(&t.html(class));
    }
}

fn compare_section(h: &mut String, name: &str, c: &CompareSummary) {
    let _ = writeln!(
        h,
        "<h2>Comparison from <code>{}</code></h2>\n<p class=\"sub\">{} on {} ({}), headline <code>{}</code>, seeds {}..{}: FG only {} ms. Means over seeds (<code>forefront sim compare</code>).</p>",
        escape(name),
        escape(&c.scenario),
        escape(&c.device),
        escape(&c.scheduler),
        escape(&c.headline),
        c.seed,
        c.seed + c.seeds.max(1) - 1,
        opt(c.fg_only_ms, |v| format!("{v:.1}"))
    );
    // The same table `forefront sim compare` prints (crate::table).
    h.push_str(&crate::table::compare(c).html("compare"));
    let points: Vec<ByCount> = c
        .cells
        .iter()
        .map(|x| ByCount {
            series: x.policy.clone(),
            policy: x.policy.clone(),
            bg_apps: x.bg_apps,
            fg_ms: x.fg_ms,
            delay_reduction: x.delay_reduction,
        })
        .collect();
    by_count_charts(h, &points);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run;

    fn named(r: RunReport, name: &str) -> Named<Input> {
        Named { name: name.into(), value: Input::Run(Box::new(r)) }
    }

    #[test]
    fn page_has_every_section_and_is_deterministic() {
        let inputs = vec![
            named(run("android", 0, 100.0), "a.json"),
            named(run("android", 2, 300.0), "b.json"),
            named(run("fasttrack", 2, 150.0), "c.json"),
        ];
        let a = render(&inputs, &Options::default());
        assert_eq!(a, render(&inputs, &Options::default()));
        for id in ["runs", "comparison", "cdf", "timeline", "breakdown", "hooks"] {
            assert!(a.contains(&format!("id=\"{id}\"")), "missing section {id}");
        }
        // CDF + timeline legend + 3 timelines + breakdown.
        assert_eq!(a.matches("<svg").count(), 6);
        assert!(!a.contains("<script"));
        assert!(a.contains("<td>75.0%</td>"), "fasttrack's delay reduction");
        assert!(a.contains("<td>200.0</td>"), "android's delay");
    }

    #[test]
    fn latency_and_delay_reduction_are_charted_against_the_bg_app_count() {
        let mut inputs = vec![named(run("android", 0, 100.0), "alone.json")];
        for (bg, a, f) in [(1, 200.0, 110.0), (2, 300.0, 150.0), (4, 500.0, 300.0)] {
            inputs.push(named(run("android", bg, a), "a.json"));
            inputs.push(named(run("fasttrack", bg, f), "f.json"));
        }
        let page = render(&inputs, &Options::default());
        assert!(page.contains("<title>FG latency by BG-app count</title>"));
        assert!(page.contains("<title>Delay reduction by BG-app count</title>"));
        // One BG-app count: nothing to draw against it.
        let one = render(&inputs[..3], &Options::default());
        assert!(!one.contains("by BG-app count"));
        // A run without samples has no point, and no NaN reaches the page.
        let mut none = run("fasttrack", 4, f64::NAN);
        none.metrics.fg_samples_ms.clear();
        inputs[6] = named(none, "none.json");
        let page = render(&inputs, &Options::default());
        assert!(page.contains("by BG-app count") && !page.contains("NaN"));
    }

    #[test]
    fn runs_with_interactivity_get_their_table_and_others_do_not() {
        let plain = render(&[named(run("android", 2, 300.0), "a.json")], &Options::default());
        assert!(!plain.contains("id=\"interactivity\""));
        let mut r = run("ftc+vt-cfs", 3, 90.0);
        r.metrics.ui = Some(forefront_record::run::UiMetrics {
            cpu_scheduler: "vt-cfs".into(),
            tick_ms: 4.0,
            interactions: 210,
            response_p50_ms: 29.0,
            response_p99_ms: 101.3,
            dispatch_waits: 900,
            dispatch_mean_ms: 0.001,
            dispatch_p50_ms: 0.0,
            dispatch_p99_ms: 0.002,
            preempt_waits: 200,
            preempt_mean_ms: 3.0,
            preempt_p50_ms: 3.337,
            preempt_p99_ms: 6.67,
            preempted_runs: 150,
            preempt_to_done_mean_ms: 20.0,
            preempt_to_done_p50_ms: 10.0,
            preempt_to_done_p99_ms: 60.0,
            frames: 209,
            frame_misses: 1,
            context_switches: 17000,
            tick_preemptions: 9000,
            bg_cpu_share: 0.96,
            chain_tasks: vec!["editor:main".into(), "<AsyncTask>".into()],
            ftc_left_promoted: 0,
        });
        let page = render(&[named(r, "ui.json")], &Options::default());
        assert!(page.contains("id=\"interactivity\""));
        assert!(page.contains("<td>101.3</td>") && page.contains("<td>6.670</td>"), "response and preemption p99");
        assert!(page.contains("&lt;AsyncTask&gt;"), "chain names are escaped");
    }

    #[test]
    fn devices_by_scenarios_get_a_shaded_grid() {
        let mut inputs = vec![];
        for (d, sc, ms) in
            [("card", "web/stock", 500.0), ("card", "web/lfs", 20.0), ("nand", "web/stock", 20.0), ("nand", "web/lfs", 18.0)]
        {
            let mut r = run("android", 0, ms);
            (r.device, r.scenario) = (d.into(), sc.into());
            inputs.push(named(r, "s.jsonl"));
        }
        let page = render(&inputs, &Options::default());
        assert!(page.contains("id=\"grid\""));
        // The slowest cell is the reddest, the fastest white.
        assert!(page.contains("<td style=\"background:rgb(255,100,100)\">500.0</td>"), "{page}");
        assert!(page.contains("<td style=\"background:rgb(255,255,255)\">18.0</td>"));
        // One scenario or one device: no grid.
        let single = render(&inputs[..2], &Options::default());
        assert!(!single.contains("id=\"grid\""));
    }

    #[test]
    fn names_are_escaped() {
        let mut r = run("android", 2, 1.0);
        r.scenario = "<script>alert(1)</script>".into();
        r.breakdown.insert("<b>layer</b>".into(), 1.0);
        let page = render(&[named(r, "x&y.json")], &Options::default());
        assert!(!page.contains("<script>") && !page.contains("<b>layer"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("x&amp;y.json"));
    }

    #[test]
    fn silent_policy_is_flagged() {
        let mut r = run("fasttrack", 2, 1.0);
        r.hooks.insert("fg_first_dispatch".into(), 0);
        let page = render(&[named(r.clone(), "a")], &Options::default());
        assert!(page.contains("none fired"));
        r.hooks.insert("fg_first_dispatch".into(), 7);
        let page = render(&[named(r, "a")], &Options::default());
        assert!(page.contains(r#"<td class="l"><code>fg_first_dispatch</code></td><td>7</td>"#));
        assert!(!page.contains("none fired"));
    }
}
