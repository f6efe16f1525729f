//! Hand-written SVG: escaping, linear scales with "nice" ticks, and the three chart kinds of
//! the report (line chart, shaded time series, stacked horizontal bars).
//!
//! Output is a pure function of the input: coordinates are printed with one decimal, labels with
//! as many decimals as the tick step needs, so the same data gives the same bytes.

use std::fmt::Write;

/// Escape text for HTML/SVG element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with one decimal; never `-0.0`.
pub fn coord(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    let r = if r == 0.0 || !r.is_finite() { 0.0 } else { r };
    format!("{r:.1}")
}

/// `s` cut to `max` characters, with an ellipsis when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A "nice" tick step (1, 2, 2.5 or 5 × 10^k) giving about `target` intervals over `span`.
pub fn nice_step(span: f64, target: usize) -> f64 {
    let raw = span / target.max(1) as f64;
    if raw.is_nan() || raw <= 0.0 || raw.is_infinite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// An axis from `lo` to `hi` (data units) mapped onto pixels `r0..r1` (r1 < r0 for a y axis
/// growing upwards): linear with ticks every `step`, or logarithmic (`log`) with ticks at
/// 1, 2 and 5 × 10^k.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub step: f64,
    pub r0: f64,
    pub r1: f64,
    pub log: bool,
}

impl Scale {
    /// A scale covering `min..=max` whose ends fall on ticks. An empty or inverted range
    /// becomes `min..min+1`.
    pub fn nice(min: f64, max: f64, target_ticks: usize, r0: f64, r1: f64) -> Scale {
        let (min, max) = if min.is_finite() && max.is_finite() && max > min {
            (min, max)
        } else if min.is_finite() {
            (min, min + 1.0)
        } else {
            (0.0, 1.0)
        };
        let step = nice_step(max - min, target_ticks);
        let lo = (min / step).floor() * step;
        let hi = (max / step).ceil() * step;
        Scale { lo, hi, step, r0, r1, log: false }
    }

    /// A logarithmic scale covering `min..=max` (both > 0), its ends on the 1-2-5 grid
    /// (1, 2, 5 × 10^k) just outside the data.
    pub fn log(min: f64, max: f64, r0: f64, r1: f64) -> Scale {
        let min = if min > 0.0 && min.is_finite() { min } else { 1.0 };
        let max = if max.is_finite() && max > min { max } else { min * 10.0 };
        let grid = |v: f64| -> Vec<f64> {
            let d = 10f64.powf(v.log10().floor());
            vec![d / 2.0, d, 2.0 * d, 5.0 * d, 10.0 * d]
        };
        // Small tolerance so a value on the grid is its own end.
        let lo = grid(min).into_iter().filter(|&g| g <= min * (1.0 + 1e-9)).fold(f64::NEG_INFINITY, f64::max);
        let hi = grid(max).into_iter().filter(|&g| g >= max * (1.0 - 1e-9)).fold(f64::INFINITY, f64::min);
        Scale { lo, hi, step: 0.0, r0, r1, log: true }
    }

    /// A log scale when the positive data span more than `ratio` (a latency CDF where the
    /// FG-only run and a blocked run differ 20-fold is unreadable on a linear axis).
    pub fn auto(min: f64, max: f64, ratio: f64, target_ticks: usize, r0: f64, r1: f64) -> Scale {
        if min > 0.0 && max / min > ratio {
            Scale::log(min, max, r0, r1)
        } else {
            Scale::nice(min.min(0.0), max, target_ticks, r0, r1)
        }
    }

    /// Data → pixels; values outside the domain extrapolate.
    pub fn map(&self, v: f64) -> f64 {
        if self.log {
            let v = v.max(self.lo * 1e-3);
            return self.r0 + (v / self.lo).log10() / (self.hi / self.lo).log10() * (self.r1 - self.r0);
        }
        self.r0 + (v - self.lo) / (self.hi - self.lo) * (self.r1 - self.r0)
    }

    /// Tick values from `lo` to `hi` inclusive.
    pub fn ticks(&self) -> Vec<f64> {
        if self.hi.partial_cmp(&self.lo) != Some(std::cmp::Ordering::Greater) {
            return vec![];
        }
        if self.log {
            let mut out = vec![];
            let mut d = 10f64.powf(self.lo.log10().floor());
            while d <= self.hi * (1.0 + 1e-9) {
                for m in [1.0, 2.0, 5.0] {
                    let t = d * m;
                    if t >= self.lo * (1.0 - 1e-9) && t <= self.hi * (1.0 + 1e-9) {
                        out.push(t);
                    }
                }
                d *= 10.0;
            }
            return out;
        }
        let n = ((self.hi - self.lo) / self.step).round() as usize;
        (0..=n).map(|i| self.lo + i as f64 * self.step).collect()
    }

    /// A tick label with just enough decimals for the step.
    pub fn label(&self, v: f64) -> String {
        if self.log {
            let d = (0..=6).find(|&d| {
                let s = v * 10f64.powi(d);
                (s - s.round()).abs() < 1e-6 * s.abs().max(1.0)
            });
            return format!("{v:.*}", d.unwrap_or(6) as usize);
        }
        let d = (0..=6).find(|&d| {
            let s = self.step * 10f64.powi(d);
            (s - s.round()).abs() < 1e-6 * s.abs().max(1.0)
        });
        let v = if v.abs() < self.step * 1e-9 { 0.0 } else { v };
        format!("{v:.*}", d.unwrap_or(6) as usize)
    }
}

/// One polyline of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub color: String,
    /// `stroke-dasharray`, empty for solid.
    pub dash: String,
    pub points: Vec<(f64, f64)>,
    /// Draw as a right-continuous step function (a CDF) instead of straight segments.
    pub step: bool,
}

/// Geometry shared by the charts: total size and the plot area inside the margins.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    pub(crate) fn x0(&self) -> f64 {
        self.left
    }
    pub(crate) fn x1(&self) -> f64 {
        self.width - self.right
    }
    pub(crate) fn y0(&self) -> f64 {
        self.height - self.bottom
    }
    pub(crate) fn y1(&self) -> f64 {
        self.top
    }
}

pub(crate) fn open_svg(out: &mut String, f: &Frame, title: &str, class: &str) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="{class}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" font-family="sans-serif" font-size="12"><title>{t}</title>"#,
        w = f.width,
        h = f.height,
        t = escape(title),
    );
}

/// Axes with ticks, grid lines, tick labels and the axis titles (with units).
pub(crate) fn axes(out: &mut String, f: &Frame, x: &Scale, y: &Scale, x_title: &str, y_title: &str) {
    out.push_str(r##"<g class="grid" stroke="#e4e4e4" stroke-width="1">"##);
    for t in y.ticks() {
        let py = coord(y.map(t));
        let _ = write!(out, r#"<line x1="{}" y1="{py}" x2="{}" y2="{py}"/>"#, coord(f.x0()), coord(f.x1()));
    }
    out.push_str("</g>");
    out.push_str(r##"<g class="axis" stroke="#333" stroke-width="1">"##);
    let _ = write!(out, r#"<line x1="{0}" y1="{1}" x2="{2}" y2="{1}"/>"#, coord(f.x0()), coord(f.y0()), coord(f.x1()));
    let _ = write!(out, r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#, coord(f.x0()), coord(f.y0()), coord(f.y1()));
    for t in x.ticks() {
        let px = coord(x.map(t));
        let _ = write!(out, r#"<line x1="{px}" y1="{}" x2="{px}" y2="{}"/>"#, coord(f.y0()), coord(f.y0() + 5.0));
    }
    for t in y.ticks() {
        let py = coord(y.map(t));
        let _ = write!(out, r#"<line x1="{}" y1="{py}" x2="{}" y2="{py}"/>"#, coord(f.x0() - 5.0), coord(f.x0()));
    }
    out.push_str("</g>");
    out.push_str(r##"<g class="ticks" fill="#333">"##);
    for t in x.ticks() {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            coord(x.map(t)),
            coord(f.y0() + 18.0),
            x.label(t)
        );
    }
    for t in y.ticks() {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            coord(f.x0() - 8.0),
            coord(y.map(t) + 4.0),
            y.label(t)
        );
    }
    out.push_str("</g>");
    let _ = write!(
        out,
        r#"<text class="xtitle" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        coord((f.x0() + f.x1()) / 2.0),
        coord(f.height - 6.0),
        escape(x_title)
    );
    let (cx, cy) = (coord(14.0), coord((f.y0() + f.y1()) / 2.0));
    let _ = write!(
        out,
        r#"<text class="ytitle" x="{cx}" y="{cy}" text-anchor="middle" transform="rotate(-90 {cx} {cy})">{}</text>"#,
        escape(y_title)
    );
}

/// The `d` attribute of a series.
fn path_data(s: &Series, x: &Scale, y: &Scale) -> String {
    let mut d = String::new();
    for (i, &(px, py)) in s.points.iter().enumerate() {
        let (sx, sy) = (coord(x.map(px)), coord(y.map(py)));
        if i == 0 {
            if s.step {
                // A CDF starts at 0 at its first value.
                let _ = write!(d, "M{sx} {}V{sy}", coord(y.map(0.0)));
            } else {
                let _ = write!(d, "M{sx} {sy}");
            }
        } else if s.step {
            let _ = write!(d, "H{sx}V{sy}");
        } else {
            let _ = write!(d, "L{sx} {sy}");
        }
    }
    d
}

fn legend_line(out: &mut String, x: f64, y: f64, color: &str, dash: &str, label: &str) {
    let dash_attr = if dash.is_empty() { String::new() } else { format!(r#" stroke-dasharray="{dash}""#) };
    let _ = write!(
        out,
        r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{color}" stroke-width="2.5"{dash_attr}/><text x="{}" y="{}">{}</text>"#,
        coord(x),
        coord(y),
        coord(x + 24.0),
        coord(y),
        coord(x + 30.0),
        coord(y + 4.0),
        escape(label)
    );
}

pub(crate) fn legend_box(out: &mut String, x: f64, y: f64, color: &str, opacity: &str, label: &str) {
    let _ = write!(
        out,
        r#"<rect x="{}" y="{}" width="14" height="12" fill="{color}" fill-opacity="{opacity}"/><text x="{}" y="{}">{}</text>"#,
        coord(x),
        coord(y - 6.0),
        coord(x + 20.0),
        coord(y + 4.0),
        escape(label)
    );
}

pub(crate) fn no_data(out: &mut String, f: &Frame, what: &str) {
    let _ = write!(
        out,
        r##"<text class="nodata" x="{}" y="{}" text-anchor="middle" fill="#999">{}</text>"##,
        coord((f.x0() + f.x1()) / 2.0),
        coord((f.y0() + f.y1()) / 2.0),
        escape(what)
    );
}

/// A line chart of several series with a legend on the right: used for the FG latency CDF
/// (`step` series, y from 0 to 1). The x axis turns logarithmic when the data span more than
/// `log_ratio` (pass `f64::INFINITY` for always linear).
pub fn line_chart(
    title: &str,
    series: &[Series],
    x_title: &str,
    y_title: &str,
    y_fixed: Option<(f64, f64)>,
    log_ratio: f64,
) -> String {
    // Legend column as wide as the longest label (about 7 px per character at 12 px).
    let longest = series.iter().map(|s| s.label.chars().count()).max().unwrap_or(0);
    let legend_w = (46.0 + 7.0 * longest as f64).max(160.0);
    let f = Frame { width: 670.0 + legend_w, height: 380.0, left: 64.0, right: 20.0 + legend_w, top: 16.0, bottom: 46.0 };
    let pts = || series.iter().flat_map(|s| s.points.iter());
    let (xmin, xmax) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (ymin, ymax) =
        y_fixed.unwrap_or_else(|| pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1))));
    let x = Scale::auto(xmin, xmax, log_ratio, 8, f.x0(), f.x1());
    let y = Scale::nice(ymin, ymax, 5, f.y0(), f.y1());
    let mut out = String::new();
    open_svg(&mut out, &f, title, "chart line-chart");
    let x_title = if x.log { format!("{x_title}, log scale") } else { x_title.to_string() };
    axes(&mut out, &f, &x, &y, &x_title, y_title);
    if series.iter().all(|s| s.points.is_empty()) {
        no_data(&mut out, &f, "no samples");
    }
    out.push_str(r#"<g class="series" fill="none" stroke-width="2">"#);
    for s in series.iter().filter(|s| !s.points.is_empty()) {
        let dash = if s.dash.is_empty() { String::new() } else { format!(r#" stroke-dasharray="{}""#, s.dash) };
        let _ = write!(
            out,
            r#"<path d="{}" stroke="{}"{dash}><title>{}</title></path>"#,
            path_data(s, &x, &y),
            s.color,
            escape(&s.label)
        );
    }
    out.push_str("</g>");
    out.push_str(r##"<g class="legend" fill="#222">"##);
    for (i, s) in series.iter().enumerate() {
        legend_line(&mut out, f.x1() + 16.0, f.top + 10.0 + 20.0 * i as f64, &s.color, &s.dash, &s.label);
    }
    out.push_str("</g></svg>");
    out
}

/// FG and BG throughput of one run over time, headline phases shaded. `x_max`/`y_max` let small
/// multiples share their axes.
pub struct TimeSeriesChart<'a> {
    pub title: &'a str,
    pub bucket_ms: f64,
    pub fg: &'a [f64],
    pub bg: &'a [f64],
    /// (start ms, duration ms)
    pub phases: &'a [(f64, f64)],
    pub phase_label: &'a str,
    pub x_max_s: f64,
    pub y_max: f64,
    /// Colour of the run (its policy), shown as a swatch by the title.
    pub color: &'a str,
}

pub const FG_LINE: &str = "#2ca02c";
pub const BG_LINE: &str = "#ff7f0e";
pub const PHASE_FILL: &str = "#4a7bd0";

impl TimeSeriesChart<'_> {
    pub fn render(&self) -> String {
        let f = Frame { width: 440.0, height: 250.0, left: 56.0, right: 12.0, top: 30.0, bottom: 42.0 };
        let x = Scale::nice(0.0, self.x_max_s, 6, f.x0(), f.x1());
        let y = Scale::nice(0.0, self.y_max, 4, f.y0(), f.y1());
        let mut out = String::new();
        open_svg(&mut out, &f, self.title, "chart timeline");
        let _ = write!(
            out,
            r##"<rect x="{}" y="6" width="12" height="12" fill="{}"/><text x="{}" y="16" font-weight="bold" fill="#222">{}</text>"##,
            coord(f.x0()),
            self.color,
            coord(f.x0() + 18.0),
            escape(&truncate(self.title, 48))
        );
        out.push_str(&format!(r#"<g class="phases" fill="{PHASE_FILL}" fill-opacity="0.16">"#));
        for &(start, dur) in self.phases {
            let (a, b) = (x.map(start / 1000.0).max(f.x0()), x.map((start + dur) / 1000.0).min(f.x1()));
            if b > a {
                let _ = write!(
                    out,
                    r#"<rect x="{}" y="{}" width="{}" height="{}"/>"#,
                    coord(a),
                    coord(f.y1()),
                    coord((b - a).max(0.5)),
                    coord(f.y0() - f.y1())
                );
            }
        }
        out.push_str("</g>");
        axes(&mut out, &f, &x, &y, "simulated time (s)", "MB/s");
        if self.fg.is_empty() && self.bg.is_empty() {
            no_data(&mut out, &f, "no timeline");
        }
        let line = |vals: &[f64], color: &str, label: &str| {
            // One point per bucket, at its middle.
            let points = vals.iter().enumerate().map(|(i, &v)| ((i as f64 + 0.5) * self.bucket_ms / 1000.0, v)).collect();
            let s = Series { label: label.into(), color: color.into(), dash: String::new(), points, step: false };
            if s.points.is_empty() {
                String::new()
            } else {
                format!(r#"<path d="{}" stroke="{color}"><title>{label}</title></path>"#, path_data(&s, &x, &y))
            }
        };
        out.push_str(r#"<g class="series" fill="none" stroke-width="1.5">"#);
        out.push_str(&line(self.bg, BG_LINE, "BG MB/s"));
        out.push_str(&line(self.fg, FG_LINE, "FG MB/s"));
        out.push_str("</g>");
        out.push_str("</svg>");
        out
    }
}

/// A legend for the timeline small multiples, drawn once above them.
pub fn timeline_legend(phase_label: &str) -> String {
    let f = Frame { width: 520.0, height: 24.0, left: 0.0, right: 0.0, top: 0.0, bottom: 0.0 };
    let mut out = String::new();
    open_svg(&mut out, &f, "legend", "legend");
    out.push_str(r##"<g fill="#222">"##);
    legend_line(&mut out, 4.0, 12.0, FG_LINE, "", "FG app MB/s");
    legend_line(&mut out, 150.0, 12.0, BG_LINE, "", "BG apps MB/s");
    legend_box(&mut out, 300.0, 12.0, PHASE_FILL, "0.3", &format!("headline phase ({phase_label})"));
    out.push_str("</g></svg>");
    out
}

/// One bar of a stacked bar chart.
pub struct Bar {
    pub label: String,
    pub color: String,
    /// (segment name, value), drawn left to right.
    pub segments: Vec<(String, f64)>,
}

/// Horizontal stacked bars, one per run; segment colours by segment name (`seg_color`).
pub fn stacked_bars(
    title: &str,
    bars: &[Bar],
    seg_names: &[String],
    seg_color: &dyn Fn(usize) -> String,
    x_title: &str,
) -> String {
    let bar_h = 24.0;
    let legend_rows = seg_names.len().div_ceil(5) as f64;
    let top = 12.0 + 20.0 * legend_rows;
    let plot_h = (bars.len().max(1) as f64) * (bar_h + 12.0);
    // Room on the left for the longest bar label (about 7 px per character at 12 px).
    let longest = bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(0);
    let left = (30.0 + 7.0 * longest as f64).max(120.0);
    let f = Frame { width: 700.0 + left, height: top + plot_h + 50.0, left, right: 70.0, top, bottom: 50.0 };
    let xmax = bars.iter().map(|b| b.segments.iter().map(|s| s.1.max(0.0)).sum::<f64>()).fold(0.0, f64::max);
    let x = Scale::nice(0.0, xmax, 8, f.x0(), f.x1());
    let mut out = String::new();
    open_svg(&mut out, &f, title, "chart bars");
    out.push_str(r##"<g class="legend" fill="#222">"##);
    for (i, name) in seg_names.iter().enumerate() {
        let (col, row) = (i % 5, i / 5);
        legend_box(&mut out, 10.0 + 170.0 * col as f64, 12.0 + 20.0 * row as f64, &seg_color(i), "1", name);
    }
    out.push_str("</g>");
    // No y ticks: a band per bar (an empty tick list via a step larger than the domain).
    let y = Scale { lo: 0.0, hi: 0.0, step: 1.0, r0: f.y0(), r1: f.y1(), log: false };
    axes(&mut out, &f, &x, &y, x_title, "");
    if bars.iter().all(|b| b.segments.is_empty()) {
        no_data(&mut out, &f, "no breakdown");
    }
    for (i, b) in bars.iter().enumerate() {
        let by = f.top + 6.0 + i as f64 * (bar_h + 12.0);
        let _ = write!(
            out,
            r##"<rect x="{}" y="{}" width="6" height="{bar_h}" fill="{}"/><text x="{}" y="{}" text-anchor="end" fill="#222">{}</text>"##,
            coord(f.x0() - 12.0),
            coord(by),
            b.color,
            coord(f.x0() - 16.0),
            coord(by + bar_h / 2.0 + 4.0),
            escape(&b.label)
        );
        let mut acc = 0.0;
        out.push_str(r#"<g class="bar">"#);
        for (name, v) in &b.segments {
            let v = v.max(0.0);
            let idx = seg_names.iter().position(|n| n == name).unwrap_or(0);
            let (a, e) = (x.map(acc), x.map(acc + v));
            let _ = write!(
                out,
                r#"<rect x="{}" y="{}" width="{}" height="{bar_h}" fill="{}"><title>{}: {} ms</title></rect>"#,
                coord(a),
                coord(by),
                coord(e - a),
                seg_color(idx),
                escape(&format!("{} · {name}", b.label)),
                format_args!("{v:.1}")
            );
            acc += v;
        }
        out.push_str("</g>");
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" fill="#222">{acc:.1}</text>"##,
            coord(x.map(acc) + 6.0),
            coord(by + bar_h / 2.0 + 4.0)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        assert_eq!(escape("plain · ünïcode"), "plain · ünïcode");
    }

    #[test]
    fn truncates_by_characters() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "ab…");
        assert_eq!(truncate("ünïcödé", 4), "ünï…");
    }

    #[test]
    fn coords_are_stable() {
        assert_eq!(coord(1.04), "1.0");
        assert_eq!(coord(1.06), "1.1");
        assert_eq!(coord(-0.01), "0.0");
        assert_eq!(coord(f64::NAN), "0.0");
    }

    #[test]
    fn nice_scales() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(1.0, 4), 0.25);
        assert_eq!(nice_step(730.0, 8), 100.0);
        let s = Scale::nice(0.0, 93.0, 5, 0.0, 100.0);
        assert_eq!((s.lo, s.hi, s.step), (0.0, 100.0, 20.0));
        assert_eq!(s.ticks(), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(s.map(50.0), 50.0);
        // A y axis grows upwards: pixel range reversed.
        let y = Scale::nice(0.0, 1.0, 4, 300.0, 20.0);
        assert_eq!(y.map(0.0), 300.0);
        assert_eq!(y.map(1.0), 20.0);
        assert_eq!(y.ticks().len(), 5);
        assert_eq!(y.label(0.25), "0.25");
        assert_eq!(s.label(40.0), "40");
        // Degenerate ranges still give a usable axis.
        let d = Scale::nice(5.0, 5.0, 4, 0.0, 100.0);
        assert!(d.hi > d.lo);
        let e = Scale::nice(f64::INFINITY, f64::NEG_INFINITY, 4, 0.0, 100.0);
        assert_eq!((e.lo, e.hi), (0.0, 1.0));
    }

    #[test]
    fn log_scales() {
        let s = Scale::log(80.0, 2600.0, 0.0, 200.0);
        assert_eq!((s.lo, s.hi), (50.0, 5000.0));
        assert_eq!(s.map(50.0), 0.0);
        assert!((s.map(500.0) - 100.0).abs() < 1e-9);
        assert_eq!(s.map(5000.0), 200.0);
        assert_eq!(s.ticks(), vec![50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0]);
        // Ends on the grid stay put.
        let g = Scale::log(100.0, 1000.0, 0.0, 1.0);
        assert_eq!((g.lo, g.hi), (100.0, 1000.0));
        assert_eq!(Scale::log(0.3, 0.9, 0.0, 1.0).ticks(), vec![0.2, 0.5, 1.0]);
        assert_eq!(s.label(0.5), "0.5");
        assert_eq!(s.label(2000.0), "2000");
        // auto: log only for a wide positive range.
        assert!(Scale::auto(80.0, 2600.0, 20.0, 8, 0.0, 1.0).log);
        assert!(!Scale::auto(80.0, 1000.0, 20.0, 8, 0.0, 1.0).log);
        assert!(!Scale::auto(0.0, 1000.0, 20.0, 8, 0.0, 1.0).log);
    }

    #[test]
    fn cdf_path_is_a_step_function() {
        let s = Series {
            label: "a".into(),
            color: "#000".into(),
            dash: String::new(),
            points: vec![(1.0, 0.5), (2.0, 1.0)],
            step: true,
        };
        let x = Scale { lo: 0.0, hi: 2.0, step: 1.0, r0: 0.0, r1: 200.0, log: false };
        let y = Scale { lo: 0.0, hi: 1.0, step: 0.5, r0: 100.0, r1: 0.0, log: false };
        assert_eq!(path_data(&s, &x, &y), "M100.0 100.0V50.0H200.0V0.0");
    }

    #[test]
    fn line_chart_escapes_and_is_deterministic() {
        let series = vec![Series {
            label: "<evil>".into(),
            color: "#123456".into(),
            dash: "7 3".into(),
            points: vec![(1.0, 0.5), (3.0, 1.0)],
            step: true,
        }];
        let a = line_chart("t&t", &series, "ms", "fraction", Some((0.0, 1.0)), 20.0);
        let b = line_chart("t&t", &series, "ms", "fraction", Some((0.0, 1.0)), 20.0);
        assert_eq!(a, b);
        assert!(a.contains("&lt;evil&gt;") && !a.contains("<evil>"));
        assert!(a.contains("<title>t&amp;t</title>"));
        assert!(a.contains(r#"stroke-dasharray="7 3""#));
        assert_eq!(a.matches("<path ").count(), 1);
        assert!(!a.contains("no samples"));
        let empty = line_chart("t", &[], "ms", "fraction", Some((0.0, 1.0)), 20.0);
        assert!(empty.contains("no samples"));
    }

    #[test]
    fn stacked_bars_sum_segments() {
        let bars =
            vec![Bar { label: "r".into(), color: "#000".into(), segments: vec![("cpu".into(), 2.0), ("flash".into(), 3.0)] }];
        let names = vec!["cpu".to_string(), "flash".to_string()];
        let svg = stacked_bars("b", &bars, &names, &|i| ["#a00", "#0a0"][i].to_string(), "ms");
        assert!(svg.contains(">5.0</text>"), "total label: {svg}");
        assert_eq!(svg.matches(r##"fill="#0a0""##).count(), 2, "legend + segment");
    }
}
