//! `forefront bench predict --format json` (and `bench run --predict DEV --format json`): the
//! simulator's prediction of a measured `bench` run, mode by mode (docs/twin.md). The page shows
//! measured and predicted start-up as p50–p90 ranges per mode on one axis, the background
//! throughput beside it, and the table of both with their ratios and the modes' order; a mode
//! the simulator cannot run shows its reason, never a number.

use std::fmt::Write;

use serde::Deserialize;

use crate::svg::{self, coord, escape, Frame, Scale};

/// The prediction document (`bench predict --format json`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Prediction {
    /// The calibrated device's name.
    pub device: String,
    pub launches: u32,
    pub seed: u64,
    /// The bench's foreground and background (`launch`, `update`), where the document has them.
    #[serde(default)]
    pub fg: Option<String>,
    #[serde(default)]
    pub bg: Option<String>,
    pub modes: Vec<Mode>,
}

/// One bench mode: what was measured and what the simulator predicts.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Mode {
    pub mode: String,
    pub measured: Measured,
    pub predicted: Predicted,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Measured {
    pub fg_p50_ms: f64,
    pub fg_p90_ms: f64,
    #[serde(default)]
    pub bg_window_mb_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Predicted {
    Ran {
        fg_p50_ms: f64,
        fg_p90_ms: f64,
        #[serde(default)]
        bg_mb_s: Option<f64>,
    },
    Unavailable {
        reason: String,
    },
}

impl Mode {
    fn predicted_fg(&self) -> Option<(f64, f64)> {
        match self.predicted {
            Predicted::Ran { fg_p50_ms, fg_p90_ms, .. } => Some((fg_p50_ms, fg_p90_ms)),
            Predicted::Unavailable { .. } => None,
        }
    }

    fn predicted_bg(&self) -> Option<f64> {
        match self.predicted {
            Predicted::Ran { bg_mb_s, .. } => bg_mb_s,
            Predicted::Unavailable { .. } => None,
        }
    }
}

const MEASURED: &str = "#7f7f7f";
const PREDICTED: &str = "#1f77b4";

/// One band of a range chart: a label and the measured and predicted (low, high) ranges.
struct Band<'a> {
    label: &'a str,
    measured: Option<(f64, f64)>,
    predicted: Option<(f64, f64)>,
}

/// Horizontal ranges, measured above predicted in each band: a bar from low to high with a dot
/// at low (the median, for start-up; low = high draws the dot alone, for throughput).
fn range_chart(title: &str, bands: &[Band], x_title: &str) -> String {
    let row = 14.0;
    let band_h = 2.0 * row + 14.0;
    let top = 30.0;
    let longest = bands.iter().map(|b| b.label.chars().count()).max().unwrap_or(0);
    let left = (30.0 + 7.0 * longest as f64).max(110.0);
    let f = Frame {
        width: 640.0 + left,
        height: top + band_h * bands.len().max(1) as f64 + 50.0,
        left,
        right: 90.0,
        top,
        bottom: 50.0,
    };
    let values = bands.iter().flat_map(|b| [b.measured, b.predicted]).flatten().flat_map(|(a, b)| [a, b]);
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let x = Scale::auto(lo, hi, 20.0, 8, f.x0(), f.x1());
    let mut out = String::new();
    svg::open_svg(&mut out, &f, title, "chart ranges");
    out.push_str(r##"<g class="legend" fill="#222">"##);
    svg::legend_box(&mut out, 10.0, 14.0, MEASURED, "1", "measured (bench)");
    svg::legend_box(&mut out, 190.0, 14.0, PREDICTED, "1", "predicted (simulator)");
    out.push_str("</g>");
    let y = Scale { lo: 0.0, hi: 0.0, step: 1.0, r0: f.y0(), r1: f.y1(), log: false };
    svg::axes(&mut out, &f, &x, &y, x_title, "");
    if !hi.is_finite() || hi <= 0.0 {
        svg::no_data(&mut out, &f, "no figures");
    }
    for (i, b) in bands.iter().enumerate() {
        let by = f.top + 6.0 + i as f64 * band_h;
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" text-anchor="end" fill="#222">{}</text>"##,
            coord(f.x0() - 10.0),
            coord(by + row + 4.0),
            escape(b.label)
        );
        for (k, (range, color, what)) in
            [(b.measured, MEASURED, "measured"), (b.predicted, PREDICTED, "predicted")].into_iter().enumerate()
        {
            let cy = by + row / 2.0 + k as f64 * (row + 2.0);
            let Some((a, e)) = range else {
                let _ = write!(
                    out,
                    r##"<text x="{}" y="{}" fill="#999" font-size="11">{what}: not in the simulator</text>"##,
                    coord(f.x0() + 6.0),
                    coord(cy + 4.0)
                );
                continue;
            };
            let (xa, xe) = (x.map(a), x.map(e));
            let tip = if e > a { format!("{what}: {a:.1} – {e:.1}") } else { format!("{what}: {a:.1}") };
            let _ = write!(
                out,
                r#"<g class="range"><title>{}</title><rect x="{}" y="{}" width="{}" height="6" fill="{color}" fill-opacity="0.45"/><circle cx="{}" cy="{}" r="4" fill="{color}"/></g>"#,
                escape(&format!("{} · {tip}", b.label)),
                coord(xa),
                coord(cy - 3.0),
                coord((xe - xa).max(0.0)),
                coord(xa),
                coord(cy)
            );
            let _ = write!(
                out,
                r##"<text x="{}" y="{}" fill="#222" font-size="11">{}</text>"##,
                coord(xe.max(xa) + 8.0),
                coord(cy + 4.0),
                if e > a { format!("{a:.0}–{e:.0}") } else { format!("{a:.0}") }
            );
        }
    }
    out.push_str("</svg>");
    out
}

fn ratio(p: Option<f64>, m: Option<f64>) -> Option<f64> {
    p.zip(m).and_then(|(p, m)| (m > 0.0).then_some(p / m))
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

/// The modes from fastest to slowest by `key` (ties keep the document's order).
fn order(modes: &[Mode], key: impl Fn(&Mode) -> Option<f64>) -> String {
    let mut v: Vec<(&str, f64)> = modes.iter().filter_map(|m| key(m).map(|k| (m.mode.as_str(), k))).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    v.iter().map(|x| x.0).collect::<Vec<_>>().join(" < ")
}

/// The section of one prediction document, `name` the file it came from.
pub fn section(h: &mut String, name: &str, p: &Prediction) {
    let what = match (&p.fg, &p.bg) {
        (Some(fg), Some(bg)) => format!("{fg} under {bg}"),
        _ => "bench".into(),
    };
    let _ = writeln!(
        h,
        "<h2 id=\"prediction\">Predicted vs measured: {} ({})</h2>\n<p class=\"note\">The simulator on device {} ({} operations, seed {}) against the measured <code>bench</code> run, per mode: start-up p50 (dot) to p90 (bar) in ms, and background MB/s. Ratio = predicted / measured.</p>",
        escape(&what),
        escape(name),
        escape(&p.device),
        p.launches,
        p.seed
    );
    let fg: Vec<Band> = p
        .modes
        .iter()
        .map(|m| Band {
            label: &m.mode,
            measured: Some((m.measured.fg_p50_ms, m.measured.fg_p90_ms)),
            predicted: m.predicted_fg(),
        })
        .collect();
    h.push_str("<div class=\"grid\">");
    h.push_str(&range_chart(&format!("{what}: start-up p50–p90"), &fg, "start-up (ms)"));
    let bg: Vec<Band> = p
        .modes
        .iter()
        .filter(|m| m.measured.bg_window_mb_s.is_some() || m.predicted_bg().is_some())
        .map(|m| Band {
            label: &m.mode,
            measured: m.measured.bg_window_mb_s.map(|v| (v, v)),
            predicted: m.predicted_bg().map(|v| (v, v)),
        })
        .collect();
    if !bg.is_empty() {
        h.push_str(&range_chart(&format!("{what}: background throughput"), &bg, "background (MB/s)"));
    }
    h.push_str("</div>\n");
    h.push_str("<div class=\"wrap\"><table class=\"prediction\">\n<tr><th class=\"l\">mode</th><th>p50 measured</th><th>p50 predicted</th><th>ratio</th><th>p90 measured</th><th>p90 predicted</th><th>ratio</th><th>BG MB/s measured</th><th>BG MB/s predicted</th><th>ratio</th><th class=\"l\">note</th></tr>\n");
    for m in &p.modes {
        let pf = m.predicted_fg();
        let note = match &m.predicted {
            Predicted::Unavailable { reason } => escape(reason),
            Predicted::Ran { .. } => String::new(),
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{note}</td></tr>",
            escape(&m.mode),
            m.measured.fg_p50_ms,
            cell(pf.map(|x| x.0), 1),
            cell(ratio(pf.map(|x| x.0), Some(m.measured.fg_p50_ms)), 2),
            m.measured.fg_p90_ms,
            cell(pf.map(|x| x.1), 1),
            cell(ratio(pf.map(|x| x.1), Some(m.measured.fg_p90_ms)), 2),
            cell(m.measured.bg_window_mb_s, 1),
            cell(m.predicted_bg(), 1),
            cell(ratio(m.predicted_bg(), m.measured.bg_window_mb_s), 2),
        );
    }
    h.push_str("</table></div>\n");
    let _ = writeln!(
        h,
        "<p class=\"note\">Modes by start-up p50, fastest first — measured: {}; predicted: {}.</p>",
        escape(&order(&p.modes, |m| m.predicted_fg().map(|_| m.measured.fg_p50_ms))),
        escape(&order(&p.modes, |m| m.predicted_fg().map(|x| x.0)))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"device":"this-vm","launches":10,"seed":1,"fg":"launch","bg":"update","modes":[
      {"mode":"alone","measured":{"fg_p50_ms":192.0,"fg_p90_ms":250.0,"bg_window_mb_s":null},
       "predicted":{"status":"ran","fg_p50_ms":90.0,"fg_p90_ms":91.0,"bg_mb_s":null,"fg_samples_ms":[90.0],"policy":"android","scheduler":"deadline"},
       "ratio":{"fg_p50":0.47,"fg_p90":0.36,"bg_mb_s":null}},
      {"mode":"baseline","measured":{"fg_p50_ms":918.0,"fg_p90_ms":1400.0,"bg_window_mb_s":794.0},
       "predicted":{"status":"ran","fg_p50_ms":299.0,"fg_p90_ms":350.0,"bg_mb_s":2139.0,"fg_samples_ms":[299.0],"policy":"android","scheduler":"deadline"},
       "ratio":{"fg_p50":0.33,"fg_p90":0.25,"bg_mb_s":2.7}},
      {"mode":"ionice-idle","measured":{"fg_p50_ms":400.0,"fg_p90_ms":600.0,"bg_window_mb_s":500.0},
       "predicted":{"status":"unavailable","reason":"not yet in the simulator: <idle class>"},
       "ratio":{"fg_p50":null,"fg_p90":null,"bg_mb_s":null}}]}"#;

    #[test]
    fn a_prediction_is_charted_mode_by_mode_with_its_ranges_and_ratios() {
        let p: Prediction = serde_json::from_str(DOC).unwrap();
        let mut h = String::new();
        section(&mut h, "predict-update.json", &p);
        assert!(h.contains("Predicted vs measured: launch under update (predict-update.json)"), "{h}");
        // Two charts (start-up, background) with a range per mode and figure.
        assert_eq!(h.matches("<svg").count(), 2);
        assert!(h.contains("baseline · measured: 918.0 – 1400.0") && h.contains("baseline · predicted: 299.0 – 350.0"), "{h}");
        assert!(h.contains("baseline · predicted: 2139.0"), "{h}");
        // The table: ratios computed from the figures, the reason of a mode without a prediction.
        assert!(h.contains("<td>918.0</td><td>299.0</td><td>0.33</td>"), "{h}");
        assert!(h.contains("<td>794.0</td><td>2139.0</td><td>2.69</td>"), "{h}");
        assert!(h.contains("not yet in the simulator: &lt;idle class&gt;"), "escaped: {h}");
        assert!(h.contains("predicted: not in the simulator"), "{h}");
        // The order of the modes the simulator ran, measured and predicted.
        assert!(h.contains("measured: alone &lt; baseline; predicted: alone &lt; baseline"), "{h}");
        // Deterministic.
        let mut again = String::new();
        section(&mut again, "predict-update.json", &p);
        assert_eq!(h, again);
    }

    #[test]
    fn the_report_loads_and_renders_a_prediction_and_names_a_broken_one() {
        let path = std::path::Path::new("predict-update.json");
        let loaded = crate::input::parse(path, DOC).unwrap();
        assert!(matches!(&loaded, crate::Input::Prediction(p) if p.modes.len() == 3));
        let page =
            crate::html::render(&[crate::Named { name: "predict-update.json".into(), value: loaded }], &Default::default());
        assert!(page.contains("Predicted vs measured") && page.contains("forefront report: bench predict"), "{page}");
        let e = crate::input::parse(path, &DOC.replace("\"fg_p90_ms\":1400.0", "\"fg_p90_ms\":\"slow\"")).unwrap_err();
        let e = e.to_string();
        assert!(e.starts_with("predict-update.json: looks like `forefront bench predict") && e.contains("line 5"), "{e}");
    }
}
