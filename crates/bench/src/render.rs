//! Rendering a [`Report`]: a table for people, JSON for scripts.

use std::fmt::Write;

use crate::runner::{BgLife, Mode, Report};

pub fn table(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fg {} under bg {}: {} runs per mode ({}), {}, device {} ({}), dir {}",
        json_name(&r.fg),
        json_name(&r.bg),
        r.runs,
        match r.bg_life {
            BgLife::PerSample => "background restarted for each, +1 warm-up discarded".to_owned(),
            BgLife::Kept { per_round, gap_ms } =>
                format!("background kept running: {} round(s) of up to {per_round} per mode, {gap_ms} ms gaps", r.rounds),
        },
        match r.bg {
            crate::runner::Bg::FioRw => format!("{n} readers + {n} writers", n = r.bg_procs),
            _ => format!("{} bg process(es)", r.bg_procs),
        },
        r.device,
        r.scheduler,
        r.dir.display()
    )
    .map(|_| ());
    if let Some(t) = &r.trace {
        let _ = writeln!(
            s,
            "replayed trace {} (think times {})",
            t.display(),
            if r.replay_think { "slept" } else { "not slept, as the S suite's replayer" }
        );
    }
    let _ = writeln!(
        s,
        "{:<12} {:>10} {:>19} {:>9} {:>9} {:>9} {:>8} {:>9} {:>10} {:>11}",
        "mode", "median ms", "95% CI of median", "min", "max", "IQR", "x alone", "bg MB/s", "bg MB/s w", "disk MB/s w"
    );
    let f1 = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
    for m in Mode::EVERY {
        let Some(x) = r.modes.get(m.name()) else { continue };
        let ratio = x.ratio_to_alone.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
        let ci = x
            .summary
            .median_ci95
            .as_ref()
            .map(|c| format!("{:.1}-{:.1}", c.lo_ms, c.hi_ms))
            .unwrap_or_else(|| "- (n < 6)".into());
        let _ = writeln!(
            s,
            "{:<12} {:>10.1} {:>19} {:>9.1} {:>9.1} {:>9.1} {:>8} {:>9} {:>10} {:>11}",
            m.name(),
            x.summary.median_ms,
            ci,
            x.summary.min_ms,
            x.summary.max_ms,
            x.summary.iqr_ms,
            ratio,
            f1(x.bg_mb_s),
            f1(x.bg_window_mb_s),
            f1(x.disk_window_mb_s),
        );
    }
    if let BgLife::Kept { .. } = r.bg_life {
        let runs: Vec<String> = Mode::EVERY
            .iter()
            .filter_map(|m| r.modes.get(m.name()).map(|x| (m, x)))
            .filter(|(_, x)| !x.run_disk_mb_s.is_empty())
            .map(|(m, x)| {
                let v: Vec<String> = x.run_disk_mb_s.iter().map(|v| format!("{v:.0}")).collect();
                format!("{} {}", m.name(), v.join(" / "))
            })
            .collect();
        if !runs.is_empty() {
            let _ = writeln!(
                s,
                "disk MB/s per round, from the end of the ramp to the end of the round (what the S suite's iostat averages): {}",
                runs.join("; ")
            );
        }
    }
    let cpu: Vec<String> = r
        .modes
        .iter()
        .filter_map(|(m, x)| {
            x.op_cpu_ms.map(|c| {
                let on = c.on_cpu_ms.map(|o| format!(", on a CPU {o:.1}")).unwrap_or_default();
                format!("{m} {:.1} ({:.1} user, {:.1} sys{on})", c.total_ms, c.user_ms, c.sys_ms)
            })
        })
        .collect();
    if !cpu.is_empty() {
        let _ = writeln!(
            s,
            "the FG operation's own CPU ms, mean per operation (its CPU clock; on a CPU: perf's task clock, which leaves out waits for the CPU that the clock counts on a kernel without preemption): {}",
            cpu.join("; ")
        );
    }
    if let Some(m) = crate::calibrate::CopyProbe::medians(&r.copy_probes) {
        let spread = |median: f64, f: fn(&crate::calibrate::CopyProbe) -> f64| {
            let (lo, hi) = r.copy_probes.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
            format!("{median:.3} ({lo:.3}-{hi:.3})")
        };
        let _ = writeln!(
            s,
            "page copy probed before each of {} blocks, us per 4 KiB page, median (min-max): write {}, read {} (bench predict's copy costs)",
            r.copy_probes.len(),
            spread(m.write_page_us, |p| p.write_page_us),
            spread(m.read_page_us, |p| p.read_page_us)
        );
    }
    for m in ["agent", "agent-bfq"] {
        if let Some(b) = r.modes.get(m).and_then(|a| a.burst_call_ms) {
            let _ =
                writeln!(s, "{m}: the burst call ({}) took {b:.1} ms (median), included in its times", json_name(&r.launcher));
        }
    }
    let _ = writeln!(
        s,
        "bg MB/s: the workers' read()/write() bytes (/proc/PID/io) while the FG operation ran; w: {}; \
         disk MB/s w: the disk's reads + writes (/sys/block/{}/stat, what iostat reports: write-back included, the FG's own I/O too) over the same window; \
         95% CI: order statistics, distribution-free",
        match r.bg_life {
            BgLife::PerSample => format!("over the {} ms ramp + the operation", r.ramp_ms),
            BgLife::Kept { .. } => "from the end of the previous start-up (the first: the background's start) to the end of this one".into(),
        },
        r.device
    );
    s
}

fn json_name(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("report serialises")
}
