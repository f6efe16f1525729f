//! A bounded property run over the scenario and device loaders: one field of a small scenario
//! or of its device set to a random value, inside or outside its range (zero, negative, NaN,
//! infinite, tiny, huge). Every case is either refused with an error that names the field (its
//! key, or the line it is on) or runs to completion within a time and memory bound. CI fixes
//! `PROPTEST_RNG_SEED`; `PROPTEST_CASES` raises the count.

use std::time::{Duration, Instant};

use forefront_sim::{try_run, RunConfig};
use proptest::prelude::*;

const SCENARIO: &str = r#"
name = "props"
description = "one field at a time"
headline = "launch"
device = "galaxy-s6-ufs"
duration_s = 2.0
bg_apps = 1

[[file]]
path = "/data/app.apk"
size = "4MiB"
owner = "ui"

[[app]]
name = "ui"
role = "fg"
[[app.thread]]
name = "main"
ops = [
  { op = "phase_begin", name = "launch" },
  { op = "read", path = "/data/app.apk", len = "1MiB" },
  { op = "compute", ms = 5.0 },
  { op = "phase_end", name = "launch" },
]

[[app]]
name = "sync"
role = "bg"
[[app.thread]]
name = "w"
ops = [{ op = "repeat", times = 0, ops = [{ op = "write", path = "/data/bg{i}", len = "256KiB" }, { op = "fsync", path = "/data/bg{i}" }] }]
"#;

/// Scenario fields (dotted paths) and whether each is an integer.
const SCENARIO_FIELDS: &[(&str, bool)] = &[
    ("duration_s", false),
    ("bg_apps", true),
    ("phone.writeback_interval_s", false),
    ("phone.dirty_expire_s", false),
    ("phone.dirty_ratio", false),
    ("phone.page_cache_mib", true),
    ("phone.nr_requests", true),
    ("phone.read_ahead_kib", true),
    ("phone.max_request_kib", true),
    ("phone.net_mb_s", false),
    ("phone.fg_cpu_shares", true),
    ("phone.cpu.sched_latency_ms", false),
    ("phone.cpu.min_granularity_ms", false),
    ("phone.cpu.wakeup_granularity_ms", false),
    ("phone.cpu.tick_ms", false),
    ("phone.cpu.compute_cv", false),
    ("phone.fs.commit_interval_s", false),
    ("phone.fs.journal_mib", true),
    ("phone.fs.extent_blocks", true),
    ("phone.fs.fragmentation", false),
    ("phone.costs.syscall_us", false),
    ("phone.costs.copy_page_us", false),
    ("phone.costs.copy_write_page_us", false),
];

/// Device fields.
const DEVICE_FIELDS: &[(&str, bool)] = &[
    ("queue_depth", true),
    ("channels", true),
    ("capacity_gib", true),
    ("read_seq_mb_s", false),
    ("read_rand_iops", false),
    ("write_seq_mb_s", false),
    ("write_rand_iops", false),
    ("bus_mb_s", false),
    ("cmd_overhead_us", false),
    ("flush_overhead_us", false),
    ("write_buffer_kib", true),
    ("starvation_ms", false),
    ("service_cv", false),
    ("write_streams", true),
];

fn int_value() -> impl Strategy<Value = toml::Value> {
    prop_oneof![Just(0i64), Just(1i64), Just(-1i64), 0i64..2_000, (20u32..63).prop_map(|p| 1i64 << p), Just(i64::MAX),]
        .prop_map(toml::Value::Integer)
}

fn float_value() -> impl Strategy<Value = toml::Value> {
    prop_oneof![
        Just(0.0),
        Just(-1.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(1e-12),
        Just(1e300),
        0.0f64..2.0,
        1.0f64..2_000.0,
    ]
    .prop_map(toml::Value::Float)
}

fn set(doc: &mut toml::Value, path: &str, v: toml::Value) {
    let mut cur = doc;
    let parts: Vec<&str> = path.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        let t = cur.as_table_mut().expect("a table");
        cur = t.entry(p.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
    }
    cur.as_table_mut().expect("a table").insert(parts[parts.len() - 1].to_string(), v);
}

/// The line (1-based) of `key = ` in `text`, after the header of its table.
fn line_of(text: &str, path: &str) -> Option<usize> {
    let (table, key) = path.rsplit_once('.').map_or(("", path), |(t, k)| (t, k));
    let start = if table.is_empty() { 0 } else { text.lines().position(|l| l.trim() == format!("[{table}]"))? };
    text.lines().enumerate().skip(start).find(|(_, l)| l.starts_with(&format!("{key} = "))).map(|(i, _)| i + 1)
}

fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    kib / 1024
}

/// Refused naming the field, or run within the bounds.
fn refused_or_bounded(file: &str, text: &str, path: &str, cfg: Result<RunConfig, String>) -> Result<(), TestCaseError> {
    let key = path.rsplit('.').next().unwrap_or(path);
    let named = |e: &str| e.contains(key) || line_of(text, path).is_some_and(|l| e.contains(&format!("{file}:{l}:")));
    let cfg = match cfg {
        Err(e) => {
            prop_assert!(named(&e), "refused without naming `{}`: {}", path, e);
            return Ok(());
        }
        Ok(c) => c,
    };
    let t = Instant::now();
    match try_run(&cfg) {
        Err(e) => prop_assert!(named(&e.to_string()), "refused without naming `{}`: {}", path, e),
        Ok(r) => {
            prop_assert!(t.elapsed() < Duration::from_secs(20), "{} ran {:?}", path, t.elapsed());
            prop_assert!(rss_mib() < 2048, "{}: {} MiB resident", path, rss_mib());
            prop_assert!(r.stats.events > 0);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_scenario_field_is_refused_by_name_or_runs_bounded(
        field in 0..SCENARIO_FIELDS.len(),
        int in int_value(),
        float in float_value(),
    ) {
        let (path, is_int) = SCENARIO_FIELDS[field];
        let mut doc: toml::Value = toml::from_str(SCENARIO).expect("the base parses");
        set(&mut doc, path, if is_int { int } else { float });
        let text = toml::to_string(&doc).expect("serialises");
        let cfg = forefront_workload::Scenario::parse("p.toml", &text).map_err(|e| e.to_string()).and_then(|scenario| {
            let device = forefront_workload::load_device(&scenario.device).map_err(|e| e.to_string())?;
            let policy = forefront_policy::Policy::by_name("android").map_err(|e| e.to_string())?;
            let bg_apps = scenario.bg_apps;
            let c = RunConfig { scenario, device, policy, bg_apps, seed: 1 };
            c.check().map_err(|e| e.to_string())?;
            Ok(c)
        });
        refused_or_bounded("p.toml", &text, path, cfg)?;
    }

    #[test]
    fn a_device_field_is_refused_by_name_or_runs_bounded(
        field in 0..DEVICE_FIELDS.len(),
        int in int_value(),
        float in float_value(),
    ) {
        let (path, is_int) = DEVICE_FIELDS[field];
        let mut doc: toml::Value = toml::from_str(include_str!("../../../devices/galaxy-s6-ufs.toml")).expect("parses");
        set(&mut doc, path, if is_int { int } else { float });
        let text = toml::to_string(&doc).expect("serialises");
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("d.toml");
        std::fs::write(&file, &text).expect("written");
        let name = file.to_str().expect("UTF-8").to_string();
        let cfg = forefront_workload::load_device(&name).map_err(|e| e.to_string()).map(|device| {
            let mut c = RunConfig::builtin("launch-update", "android", Some(1), 1).expect("built-in");
            c.scenario.duration_s = 2.0;
            c.device = device;
            c
        });
        refused_or_bounded(&name, &text, path, cfg)?;
    }
}
