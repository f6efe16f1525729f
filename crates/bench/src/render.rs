//! Rendering a [`Report`]: a table for people, JSON for scripts.

use std::fmt::Write;

use crate::runner::{Mode, Report};

pub fn table(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fg {} under bg {}: {} runs per mode (+1 warm-up discarded), {} bg process(es), device {} ({}), dir {}",
        json_name(&r.fg),
        json_name(&r.bg),
        r.runs,
        r.bg_procs,
        r.device,
        r.scheduler,
        r.dir.display()
    )
    .map(|_| ());
    let _ = writeln!(
        s,
        "{:<12} {:>10} {:>9} {:>9} {:>9} {:>8} {:>9} {:>10}",
        "mode", "median ms", "min", "max", "IQR", "x alone", "bg MB/s", "bg MB/s w"
    );
    for m in Mode::ALL {
        let Some(x) = r.modes.get(m.name()) else { continue };
        let ratio = x.ratio_to_alone.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
        let bg = x.bg_mb_s.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
        let bgw = x.bg_window_mb_s.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            s,
            "{:<12} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>8} {:>9} {:>10}",
            m.name(),
            x.summary.median_ms,
            x.summary.min_ms,
            x.summary.max_ms,
            x.summary.iqr_ms,
            ratio,
            bg,
            bgw
        );
    }
    if let Some(b) = r.modes.get("agent").and_then(|a| a.burst_call_ms) {
        let _ = writeln!(s, "agent: the burst call ({}) took {b:.1} ms (median), included in its times", json_name(&r.launcher));
    }
    let _ = writeln!(
        s,
        "bg MB/s: background read/write throughput while the FG operation ran; w: over the {} ms ramp + the operation",
        r.ramp_ms
    );
    s
}

fn json_name(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("report serialises")
}
