//! The page section for `forefront sim interactivity --format json` (FTC + VT-CFS): the table of
//! latencies per policy and background-app count, the headline latency against background
//! apps, and the VT-CFS tick sweep — context switches against dispatch latency as λ varies.

use std::collections::BTreeSet;
use std::fmt::Write;

use forefront_record::run::{InteractivitySummary, RunReport};

use crate::metrics::policy_color;
use crate::svg::{escape, line_chart, Series};

fn pct(v: Option<f64>) -> String {
    // `+ 0.0`: a negative zero prints as 0 %, never -0 %.
    v.map_or_else(|| "–".to_string(), |v| format!("{:.0}%", v * 100.0 + 0.0))
}

/// Series of `points(policy)` for every policy of `policies`, in order.
fn series(policies: &[&str], points: impl Fn(&str) -> Vec<(f64, f64)>) -> Vec<Series> {
    policies
        .iter()
        .map(|p| Series {
            label: p.to_string(),
            color: policy_color(p).to_string(),
            dash: String::new(),
            points: points(p),
            step: false,
        })
        .collect()
}

/// Append the section for summary `s` (loaded from file `name`) to the page.
pub fn section(h: &mut String, name: &str, s: &InteractivitySummary) {
    let _ = writeln!(
        h,
        "<h2>Interactivity from <code>{}</code></h2>\n<p class=\"sub\">{} on {}, seeds {}..{}: <code>{}</code> = the headline interaction, from the input event to the frame showing its result on screen; dispatch and preemption latency are the run-queue waits of the user-interactive chain's tasks; reductions are against stock CFS (<code>android</code>) at the same BG-app count. VT-CFS tick {} ms.</p>",
        escape(name),
        escape(&s.scenario),
        escape(&s.device),
        s.seed,
        s.seed + s.seeds.max(1) - 1,
        escape(&s.headline),
        s.tick_ms
    );
    let hd = escape(&s.headline);
    let _ = writeln!(h, "<div class=\"wrap\"><table class=\"interactivity\">\n<tr><th>BG apps</th><th class=\"l\">policy</th><th class=\"l\">CPU</th><th>{hd} p50</th><th>{hd} p99</th><th>all p50</th><th>all p99</th><th>dispatch p50</th><th>dispatch p99</th><th>preempt p50</th><th>preempt p99</th><th>missed frames</th><th>switches/s</th><th>BG CPU</th><th>{hd} p50 red.</th><th>{hd} p99 red.</th><th>dispatch p99 red.</th><th>preempt p99 red.</th></tr>");
    for c in &s.cells {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"l\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.1}</td><td>{:.0}</td><td>{:.0}%</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.bg_apps,
            policy_color(&c.policy),
            escape(&c.policy),
            escape(&c.cpu_scheduler),
            c.headline_p50_ms,
            c.headline_p99_ms,
            c.response_p50_ms,
            c.response_p99_ms,
            c.dispatch_p50_ms,
            c.dispatch_p99_ms,
            c.preempt_p50_ms,
            c.preempt_p99_ms,
            c.frame_misses,
            c.context_switches_per_s,
            c.bg_cpu_share * 100.0,
            pct(c.headline_p50_reduction),
            pct(c.headline_p99_reduction),
            pct(c.dispatch_p99_reduction),
            pct(c.preempt_p99_reduction)
        );
    }
    h.push_str("</table></div>\n");

    let mut seen = BTreeSet::new();
    let policies: Vec<&str> = s.cells.iter().map(|c| c.policy.as_str()).filter(|p| seen.insert(*p)).collect();
    let by_bg = series(&policies, |p| {
        s.cells.iter().filter(|c| c.policy == p).map(|c| (f64::from(c.bg_apps), c.headline_p99_ms)).collect()
    });
    h.push_str("<div class=\"grid\">");
    h.push_str(&line_chart(
        &format!("{} p99 against background apps", s.headline),
        &by_bg,
        "background apps",
        &format!("{} p99 (ms)", s.headline),
        None,
        f64::INFINITY,
    ));
    h.push_str("</div>\n");

    if s.tick_sweep.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<h3>VT-CFS tick λ sweep ({} BG apps)</h3>\n<p class=\"note\">A shorter tick bounds how long an interactive task waits behind a running one, at the price of more context switches. The dashed lines are stock CFS (android) at the same BG-app count.</p>",
        s.sweep_bg_apps
    );
    let mut seen = BTreeSet::new();
    let swept: Vec<&str> = s.tick_sweep.iter().map(|t| t.policy.as_str()).filter(|p| seen.insert(*p)).collect();
    let ticks: Vec<f64> = {
        let mut v: Vec<f64> = s.tick_sweep.iter().map(|t| t.tick_ms).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let stock = s.cells.iter().find(|c| c.policy == "android" && c.bg_apps == s.sweep_bg_apps);
    let reference = |label: &str, v: Option<f64>| -> Option<Series> {
        let v = v?;
        let (lo, hi) = (ticks.first().copied()?, ticks.last().copied()?);
        Some(Series {
            label: label.to_string(),
            color: policy_color("android").to_string(),
            dash: "6 4".into(),
            points: vec![(lo, v), (hi, v)],
            step: false,
        })
    };
    let mut switches = series(&swept, |p| {
        s.tick_sweep.iter().filter(|t| t.policy == p).map(|t| (t.tick_ms, t.context_switches_per_s)).collect()
    });
    switches.extend(reference("android (CFS)", stock.map(|c| c.context_switches_per_s)));
    let mut dispatch =
        series(&swept, |p| s.tick_sweep.iter().filter(|t| t.policy == p).map(|t| (t.tick_ms, t.dispatch_p99_ms)).collect());
    dispatch.extend(reference("android (CFS)", stock.map(|c| c.dispatch_p99_ms)));
    let mut headline =
        series(&swept, |p| s.tick_sweep.iter().filter(|t| t.policy == p).map(|t| (t.tick_ms, t.headline_p99_ms)).collect());
    headline.extend(reference("android (CFS)", stock.map(|c| c.headline_p99_ms)));
    h.push_str("<div class=\"grid\">");
    h.push_str(&line_chart(
        "Overhead: context switches per second against λ",
        &switches,
        "tick λ (ms)",
        "context switches / s",
        None,
        8.0,
    ));
    h.push_str(&line_chart(
        "Dispatch latency p99 of the interactive chain against λ",
        &dispatch,
        "tick λ (ms)",
        "dispatch p99 (ms)",
        None,
        8.0,
    ));
    h.push_str(&line_chart(
        &format!("{} p99 against λ", s.headline),
        &headline,
        "tick λ (ms)",
        &format!("{} p99 (ms)", s.headline),
        None,
        8.0,
    ));
    h.push_str("</div>\n");
    h.push_str("<div class=\"wrap\"><table class=\"tick-sweep\">\n<tr><th class=\"l\">policy</th><th>λ ms</th><th>switches/s</th><th>tick preemptions/s</th><th>dispatch p50</th><th>dispatch p99</th><th>preempt p99</th><th>headline p50</th><th>headline p99</th><th>BG CPU</th></tr>\n");
    for t in &s.tick_sweep {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.1}</td><td>{:.1}</td><td>{:.0}%</td></tr>",
            escape(&t.policy),
            t.tick_ms,
            t.context_switches_per_s,
            t.tick_preemptions_per_s,
            t.dispatch_p50_ms,
            t.dispatch_p99_ms,
            t.preempt_p99_ms,
            t.headline_p50_ms,
            t.headline_p99_ms,
            t.bg_cpu_share * 100.0
        );
    }
    h.push_str("</table></div>\n");
}

/// For runs of scenarios with input events: their interactivity figures (`metrics.ui`) as one
/// table, a row per run. Nothing when no run has them.
pub fn runs_table(h: &mut String, reports: &[&RunReport], labels: &[String], styles: &[(&str, &str)]) {
    if reports.iter().all(|r| r.metrics.ui.is_none()) {
        return;
    }
    h.push_str("<h2 id=\"interactivity\">Interactivity</h2>\n<p class=\"note\">Response = input event to its frame on screen, over every interaction; dispatch and preemption latency are the run-queue waits of the user-interactive chain's tasks (ms).</p>\n<div class=\"wrap\"><table class=\"ui-runs\">\n<tr><th class=\"l\">run</th><th class=\"l\">CPU</th><th>interactions</th><th>response p50</th><th>response p99</th><th>dispatch p50</th><th>dispatch p99</th><th>preempt p50</th><th>preempt p99</th><th>frames</th><th>missed</th><th>context switches</th><th>tick preemptions</th><th>BG CPU</th><th class=\"l\">chain</th></tr>\n");
    for (i, r) in reports.iter().enumerate() {
        let Some(u) = &r.metrics.ui else { continue };
        let _ = writeln!(
            h,
            "<tr><td class=\"l\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}%</td><td class=\"l\">{}</td></tr>",
            styles[i].0,
            escape(&labels[i]),
            escape(&u.cpu_scheduler),
            u.interactions,
            u.response_p50_ms,
            u.response_p99_ms,
            u.dispatch_p50_ms,
            u.dispatch_p99_ms,
            u.preempt_p50_ms,
            u.preempt_p99_ms,
            u.frames,
            u.frame_misses,
            u.context_switches,
            u.tick_preemptions,
            u.bg_cpu_share * 100.0,
            escape(&u.chain_tasks.join(", "))
        );
    }
    h.push_str("</table></div>\n");
}
