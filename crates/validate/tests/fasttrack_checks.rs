//! Each FastTrack check of `forefront_validate` on real simulator runs: it fails with the
//! mechanism it validates switched off and, unless it is known red, passes with it on.
//!
//! The passing side runs seeds 1-5 (the first of `scripts/validate`'s three sets). The failing
//! side runs seeds 1-2 only, to keep this file under a minute: each mechanism-off figure is
//! far outside its range (a reduction of ~0 or ~1, a ratio of ~1), not near an edge.

use std::cell::RefCell;
use std::collections::BTreeMap;

use forefront_record::run::RunReport;
use forefront_sim::{run, RunConfig};
use forefront_validate::fasttrack::{self, Runs};
use forefront_validate::known_red;

/// A job's runs as the check asks for it, after `swap` (the mechanism switched off) rewrote its
/// policy and background-app count. Runs each distinct job once.
struct Sim {
    seeds: u64,
    swap: fn(&str, &str, u32) -> (String, u32),
    cache: RefCell<BTreeMap<(String, String, u32), Vec<RunReport>>>,
}

impl Sim {
    fn new(seeds: u64, swap: fn(&str, &str, u32) -> (String, u32)) -> Sim {
        Sim { seeds, swap, cache: RefCell::new(BTreeMap::new()) }
    }

    fn mean(&self, s: &str, p: &str, bg: u32, f: &dyn Fn(&RunReport) -> f64) -> f64 {
        let (p, bg) = (self.swap)(s, p, bg);
        let key = (s.to_string(), p.clone(), bg);
        let mut cache = self.cache.borrow_mut();
        let reports = cache.entry(key).or_insert_with(|| {
            (1..=self.seeds).map(|seed| run(&RunConfig::builtin(s, &p, Some(bg), seed).expect("a built-in job"))).collect()
        });
        reports.iter().map(f).sum::<f64>() / reports.len() as f64
    }
}

impl Runs for Sim {
    fn fg(&self, s: &str, p: &str, bg: u32) -> f64 {
        self.mean(s, p, bg, &|r| r.metrics.fg_ms)
    }
    fn share(&self, s: &str, p: &str, bg: u32, cat: &str) -> f64 {
        self.mean(s, p, bg, &|r| r.breakdown.get(cat).copied().unwrap_or(0.0) / r.metrics.fg_ms.max(1e-9))
    }
}

fn same(_: &str, p: &str, bg: u32) -> (String, u32) {
    (p.to_string(), bg)
}

/// Check `id` fails with `off` and, if it is not known red, passes as built.
fn assert_check(id: &str, off: fn(&str, &str, u32) -> (String, u32)) {
    let c = &fasttrack::checks(&Sim::new(2, off), Some(id))[0];
    assert!(!c.pass, "{id} passed with its mechanism off: measured {:.3} in {}..={}", c.measured, c.min, c.max);
    if known_red(id).is_none() {
        let c = &fasttrack::checks(&Sim::new(5, same), Some(id))[0];
        assert!(c.pass, "{id} fails as built: measured {:.3}, range {}..={}", c.measured, c.min, c.max);
    }
}

#[test]
fn every_fasttrack_check_has_a_test_here() {
    let covered = [
        "bg-io-slows-fg-launch",
        "bg-io-slows-fg-camera",
        "read-first-device-holds-fg-writes",
        "fg-first-device-fixes-it",
        "stock-switch-slowdown",
        "fasttrack-minus-switch",
        "fasttrack-device-beats-minus",
        "fasttrack-flattens-switch",
        "fasttrack-flattens-camera",
        "fasttrack-helps-launch",
    ];
    assert_eq!(fasttrack::ids(), covered);
}

#[test]
fn launch_slowdown_needs_the_updaters() {
    // No background apps at all: T(6)/T(0) is 1.
    assert_check("bg-io-slows-fg-launch", |s, p, bg| (p.to_string(), if s == "launch-update" { 0 } else { bg }));
}

#[test]
fn camera_slowdown_needs_background_io() {
    assert_check("bg-io-slows-fg-camera", |_, p, _| (p.to_string(), 0));
}

#[test]
fn the_read_first_device_holds_the_switch_writes() {
    // FG-first command order in the device instead of read-first: the switch no longer waits there.
    assert_check("read-first-device-holds-fg-writes", |_, p, bg| {
        (if p == "android" { "android+ft-device".into() } else { p.to_string() }, bg)
    });
}

#[test]
fn the_device_scheduler_alone_fixes_the_switch() {
    // The device scheduler removed: android+ft-device is stock Android.
    assert_check("fg-first-device-fixes-it", |_, p, bg| {
        (if p == "android+ft-device" { "android".into() } else { p.to_string() }, bg)
    });
}

#[test]
fn the_stock_switch_slowdown_comes_from_the_read_first_device() {
    assert_check("stock-switch-slowdown", |_, p, bg| (if bg > 0 { "android+ft-device".into() } else { p.to_string() }, bg));
}

#[test]
fn fasttrack_minus_leaves_the_device_inversion_only_with_the_papers_gate() {
    // The gate widened to every FG I/O wait: FastTrack-- removes nearly all of the delay.
    assert_check("fasttrack-minus-switch", |_, p, bg| {
        (if p == "fasttrack-minus" { "fasttrack-minus+ft-alloc-wide".into() } else { p.to_string() }, bg)
    });
}

#[test]
fn full_fasttrack_beats_fasttrack_minus_by_the_device_scheduler() {
    // The gate widened in both: nothing is left for the device scheduler to remove.
    assert_check("fasttrack-device-beats-minus", |_, p, bg| {
        (if p.starts_with("fasttrack") { format!("{p}+ft-alloc-wide") } else { p.to_string() }, bg)
    });
}

#[test]
fn fasttrack_flattens_the_switch_with_its_device_scheduler() {
    // No device scheduler: FastTrack is FastTrack--.
    assert_check("fasttrack-flattens-switch", |_, p, bg| {
        (if p == "fasttrack" { "fasttrack-minus".into() } else { p.to_string() }, bg)
    });
}

#[test]
fn the_camera_switch_under_fasttrack() {
    // FastTrack off (stock Android in its place).
    assert_check("fasttrack-flattens-camera", |_, p, bg| (if p == "fasttrack" { "android".into() } else { p.to_string() }, bg));
}

#[test]
fn fasttrack_minus_on_the_launch() {
    // FastTrack-- without its page allocator and dispatcher: only the reclaimer is left.
    assert_check("fasttrack-helps-launch", |_, p, bg| {
        (if p == "fasttrack-minus" { "android+ft-reclaim".into() } else { p.to_string() }, bg)
    });
}
