//! Tables defined once and rendered twice: as markdown for the terminal (`forefront sim
//! compare`, `sim cells`) and as HTML for the report page (`forefront report`), so the two never
//! disagree on a column, a unit or how a missing figure reads.
//!
//! A [`Table`] is its header and rows of [`Cell`]s already formatted; the renderers only lay
//! them out (HTML escapes text and adds the policy's colour swatch).

use std::fmt::Write;

use forefront_record::cells::CellsSummary;
use forefront_record::compare::CompareSummary;

use crate::svg::escape;

/// One cell: its text, and what kind of value it holds (for alignment and decoration).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A figure (right-aligned in HTML).
    Num(String),
    /// Text (left-aligned).
    Text(String),
    /// A policy's name (with its colour swatch in HTML).
    Policy(String),
}

impl Cell {
    fn text(&self) -> &str {
        match self {
            Cell::Num(s) | Cell::Text(s) | Cell::Policy(s) => s,
        }
    }
}

/// A table: the header's column names and the rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub header: Vec<(&'static str, bool)>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// As a markdown table (one line per row).
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "| {} |", self.header.iter().map(|h| h.0).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(self.header.len()));
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", row.iter().map(Cell::text).collect::<Vec<_>>().join(" | "));
        }
        out
    }

    /// As an HTML `<table>` of class `class` inside a scrolling wrapper.
    pub fn html(&self, class: &str) -> String {
        let mut out = format!("<div class=\"wrap\"><table class=\"{class}\">\n<tr>");
        for (name, left) in &self.header {
            let _ = write!(out, "<th{}>{}</th>", if *left { " class=\"l\"" } else { "" }, escape(name));
        }
        out.push_str("</tr>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for c in row {
                let _ = match c {
                    Cell::Num(s) => write!(out, "<td>{}</td>", escape(s)),
                    Cell::Text(s) => write!(out, "<td class=\"l\">{}</td>", escape(s)),
                    Cell::Policy(s) => write!(
                        out,
                        "<td class=\"l\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td>",
                        crate::metrics::policy_color(s),
                        escape(s)
                    ),
                };
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table></div>\n");
        out
    }
}

/// A figure with one decimal, `–` where it is missing (and `0.0`, never `-0.0`).
pub fn ms(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "–".to_string(), |v| format!("{:.1}", v + 0.0))
}

/// A share as a percentage with one decimal, `–` where it is missing (never `-0.0%`).
pub fn pct(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "–".to_string(), |v| format!("{:.1}%", v * 100.0 + 0.0))
}

/// The table of a `sim compare`: a row per policy and background-app count.
pub fn compare(c: &CompareSummary) -> Table {
    let header = vec![
        ("BG apps", false),
        ("policy", true),
        ("samples", false),
        ("FG mean ms", false),
        ("p50", false),
        ("p99", false),
        ("delay ms", false),
        ("delay reduction", false),
        ("BG MB/s", false),
        ("BG loss", false),
        ("hooks fired", false),
    ];
    let rows = c
        .cells
        .iter()
        .map(|x| {
            vec![
                Cell::Num(x.bg_apps.to_string()),
                Cell::Policy(x.policy.clone()),
                Cell::Num(x.samples.to_string()),
                Cell::Num(ms(x.fg_ms)),
                Cell::Num(ms(x.fg_p50_ms)),
                Cell::Num(ms(x.fg_p99_ms)),
                Cell::Num(ms(x.delay_ms)),
                Cell::Num(pct(x.delay_reduction)),
                Cell::Num(ms(Some(x.bg_mb_per_s))),
                Cell::Num(pct(x.bg_loss)),
                Cell::Num(x.hooks.values().sum::<u64>().to_string()),
            ]
        })
        .collect();
    Table { header, rows }
}

fn seeds(s: &CellsSummary) -> String {
    format!("seeds {}..{}", s.seed, s.seed + s.seeds.max(1) - 1)
}

/// The overhead table's caption.
pub fn cells_overhead_title(s: &CellsSummary) -> String {
    format!(
        "Overhead of virtual phones: {} on {}, android, no busy cell, {} (launch ms; change = per-layer change of the mean launch against the plain phone, ms)",
        s.scenario,
        s.device,
        seeds(s)
    )
}

/// `sim cells`: the launch on the plain phone, in one cell and in five, with the largest
/// per-layer changes against the plain phone (the cause of the overhead).
pub fn cells_overhead(s: &CellsSummary) -> Table {
    let header = vec![
        ("setup", true),
        ("page cache MiB", false),
        ("mean", false),
        ("p50", false),
        ("p99", false),
        ("overhead", false),
        ("largest changes", true),
    ];
    let rows = s
        .overhead
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let causes = if i == 0 {
                "(reference)".to_string()
            } else {
                let mut v: Vec<(&String, &f64)> = r.change_ms.iter().filter(|(_, d)| d.abs() >= 0.05).collect();
                v.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
                let v: Vec<String> = v.iter().take(3).map(|(l, d)| format!("{l} {d:+.2}")).collect();
                if v.is_empty() {
                    "none ≥ 0.05 ms".to_string()
                } else {
                    v.join(", ")
                }
            };
            let overhead =
                Some(r.overhead_pct).filter(|v| v.is_finite()).map_or("–".to_string(), |v| format!("{:+.3}%", v + 0.0));
            vec![
                Cell::Text(r.setup.clone()),
                Cell::Num(r.page_cache_mib.to_string()),
                Cell::Num(ms(Some(r.mean_ms))),
                Cell::Num(ms(Some(r.p50_ms))),
                Cell::Num(ms(Some(r.p99_ms))),
                Cell::Num(overhead),
                Cell::Text(causes),
            ]
        })
        .collect();
    Table { header, rows }
}

/// The delay table's caption.
pub fn cells_delay_title(s: &CellsSummary) -> String {
    format!(
        "Foreground cell's launch with busy background cells (mail sync + app updates each), {}; delay against the same policy with none",
        seeds(s)
    )
}

/// `sim cells`: the foreground cell's launch per policy and number of busy background cells.
pub fn cells_delay(s: &CellsSummary) -> Table {
    let header = vec![
        ("policy", true),
        ("busy cells", false),
        ("mean", false),
        ("p50", false),
        ("p99", false),
        ("delay ms", false),
        ("slowdown", false),
        ("BG MB/s", false),
    ];
    let rows = s
        .delay
        .iter()
        .map(|r| {
            let slowdown = Some(r.slowdown).filter(|v| v.is_finite()).map_or("–".to_string(), |v| format!("{v:.2}×"));
            vec![
                Cell::Policy(r.policy.clone()),
                Cell::Num(r.bg_cells.to_string()),
                Cell::Num(ms(Some(r.mean_ms))),
                Cell::Num(ms(Some(r.p50_ms))),
                Cell::Num(ms(Some(r.p99_ms))),
                Cell::Num(ms(Some(r.delay_ms))),
                Cell::Num(slowdown),
                Cell::Num(format!("{:.2}", r.bg_mb_per_s)),
            ]
        })
        .collect();
    Table { header, rows }
}

/// The switch table's caption.
pub fn cells_switch_title(s: &CellsSummary) -> String {
    format!("Cell switch ({}): request → the new cell's screen redrawn, ms, {}", s.switch_scenario, seeds(s))
}

/// `sim cells`: the cell switch per policy and number of busy cells.
pub fn cells_switch(s: &CellsSummary) -> Table {
    let header = vec![("policy", true), ("busy cells", false), ("mean", false), ("p50", false), ("p99", false), ("max", false)];
    let rows = s
        .switch
        .iter()
        .map(|r| {
            vec![
                Cell::Policy(r.policy.clone()),
                Cell::Num(r.bg_cells.to_string()),
                Cell::Num(ms(Some(r.mean_ms))),
                Cell::Num(ms(Some(r.p50_ms))),
                Cell::Num(ms(Some(r.p99_ms))),
                Cell::Num(ms(Some(r.max_ms))),
            ]
        })
        .collect();
    Table { header, rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forefront_record::compare::CompareCell;

    fn cell(policy: &str, fg: Option<f64>, reduction: Option<f64>) -> CompareCell {
        CompareCell {
            bg_apps: 2,
            bg_loss: Some(-0.0),
            bg_mb_per_s: 30.0,
            delay_ms: fg.map(|f| f - 100.0),
            delay_reduction: reduction,
            fg_ms: fg,
            fg_p50_ms: fg,
            fg_p99_ms: fg,
            hooks: [("a".to_string(), 2), ("b".to_string(), 3)].into(),
            policy: policy.into(),
            samples: if fg.is_some() { 20 } else { 0 },
        }
    }

    #[test]
    fn one_table_two_renderings_with_the_same_figures() {
        let c = CompareSummary {
            cells: vec![cell("android", None, None), cell("fasttrack", Some(150.0), Some(0.75))],
            device: "d".into(),
            fg_only_ms: Some(100.0),
            headline: "h".into(),
            scenario: "s".into(),
            scheduler: "cfq".into(),
            seed: 1,
            seeds: 1,
        };
        let t = compare(&c);
        let md = t.markdown();
        assert!(md.starts_with("| BG apps | policy | samples |"), "{md}");
        assert!(md.contains("| 2 | android | 0 | – | – | – | – | – | 30.0 | 0.0% | 5 |"), "{md}");
        assert!(md.contains("| 2 | fasttrack | 20 | 150.0 | 150.0 | 150.0 | 50.0 | 75.0% | 30.0 | 0.0% | 5 |"), "{md}");
        let html = t.html("compare");
        assert!(html.contains("<td>75.0%</td>") && html.contains("<td>–</td>") && !html.contains("-0.0"));
        assert_eq!(html.matches("<tr>").count(), 3);
        assert!(html.contains("background:#1f77b4\"></span>fasttrack"), "fasttrack's swatch");
    }
}
