//! FastTrack's checks ([FT], ATC'18): each brackets one of the paper's figures (±15 points for a
//! percentage, within 1.5× for a ratio) or states one mechanism the paper names, measured on the
//! runs of [`crate::suite`] through [`Runs`] — so that `crates/validate/tests/fasttrack_checks.rs`
//! can evaluate the same checks on real runs with one mechanism switched off.
//!
//! The paper's figures (docs/reproductions/fasttrack.md): background app updates slow a launch by
//! up to 2.6× and a switch by up to 19.5×; FastTrack-- (what ran on the phones) removes up to
//! 87 % of the launch's delay and 61 % of the switch's, limited there by the device-internal
//! inversion that full FastTrack's device scheduler removes; under FastTrack the camera switch
//! stays at its FG-only time with up to six I/O-intensive background apps.

use crate::Check;

/// Mean figures of the suite's runs over the seeds, by (scenario, policy, background apps).
pub trait Runs {
    /// Mean foreground latency (ms).
    fn fg(&self, scenario: &str, policy: &str, bg: u32) -> f64;
    /// Mean share of the foreground latency spent in breakdown category `cat`.
    fn share(&self, scenario: &str, policy: &str, bg: u32, cat: &str) -> f64;
}

/// One check: its text, range and how its figure is measured.
struct Spec {
    id: &'static str,
    claim: &'static str,
    figure: &'static str,
    min: f64,
    max: f64,
    measure: fn(&dyn Runs) -> f64,
}

/// 1 − (T_policy − T_alone) / (T_android − T_alone): the share of the background-caused delay
/// a policy removes (the paper's metric).
pub fn reduction(r: &dyn Runs, scenario: &str, policy: &str, bg: u32) -> f64 {
    let alone = r.fg(scenario, "android", 0);
    1.0 - (r.fg(scenario, policy, bg) - alone) / (r.fg(scenario, "android", bg) - alone).max(1e-9)
}

/// Stock slowdown with `bg` background apps: T(bg) / T(alone).
fn slowdown(r: &dyn Runs, scenario: &str, bg: u32) -> f64 {
    r.fg(scenario, "android", bg) / r.fg(scenario, "android", 0).max(1e-9)
}

/// The smallest step of the stock curve: min of T(1)/T(0) and T(3)/T(1).
fn smallest_step(r: &dyn Runs, scenario: &str) -> f64 {
    let t: Vec<f64> = [0, 1, 3].iter().map(|&b| r.fg(scenario, "android", b)).collect();
    t.windows(2).map(|w| w[1] / w[0]).fold(f64::INFINITY, f64::min)
}

/// A ratio within 1.5× of the paper's `x`.
const fn ratio_lo(x: f64) -> f64 {
    x / 1.5
}
const fn ratio_hi(x: f64) -> f64 {
    x * 1.5
}

fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "bg-io-slows-fg-launch",
            claim: "background app updates slow a launch by up to 2.6x (paper; within 1.5x)",
            figure: "launch-update, android: T(6 BG) / T(FG only)",
            min: ratio_lo(2.6),
            max: ratio_hi(2.6),
            measure: |r| slowdown(r, "launch-update", 6),
        },
        Spec {
            id: "bg-io-slows-fg-camera",
            claim: "background I/O slows the foreground, more with more background apps",
            figure: "camera-switch, android: smallest ratio T(1 BG)/T(0), T(3)/T(1)",
            min: 1.05,
            max: f64::INFINITY,
            measure: |r| smallest_step(r, "camera-switch"),
        },
        Spec {
            id: "read-first-device-holds-fg-writes",
            claim: "a write-dominant foreground waits in the device behind background reads (read-first firmware)",
            figure: "switch-upload, android, 2 BG: device_queue share of the switch",
            min: 0.5,
            max: 1.0,
            measure: |r| r.share("switch-upload", "android", 2, "device_queue"),
        },
        Spec {
            id: "fg-first-device-fixes-it",
            claim: "FastTrack's device scheduler alone removes most of that delay",
            figure: "switch-upload, 2 BG: delay reduction of android+ft-device",
            min: 0.8,
            max: 1.0,
            measure: |r| reduction(r, "switch-upload", "android+ft-device", 2),
        },
        Spec {
            id: "stock-switch-slowdown",
            claim: "background uploads slow a switch by up to 19.5x (paper; within 1.5x)",
            figure: "switch-upload, android: T(6 BG) / T(FG only)",
            min: ratio_lo(19.5),
            max: ratio_hi(19.5),
            measure: |r| slowdown(r, "switch-upload", 6),
        },
        Spec {
            id: "fasttrack-minus-switch",
            claim: "FastTrack-- removes 61 % of the switch's delay (paper; ±15 points), limited by the device-internal inversion",
            figure: "switch-upload, 6 BG: delay reduction of fasttrack-minus",
            min: 0.46,
            max: 0.76,
            measure: |r| reduction(r, "switch-upload", "fasttrack-minus", 6),
        },
        Spec {
            id: "fasttrack-device-beats-minus",
            claim: "full FastTrack removes the device-internal inversion FastTrack-- leaves: at least 10 points more",
            figure: "switch-upload, 6 BG: reduction of fasttrack − reduction of fasttrack-minus",
            min: 0.1,
            max: 1.0,
            measure: |r| reduction(r, "switch-upload", "fasttrack", 6) - reduction(r, "switch-upload", "fasttrack-minus", 6),
        },
        Spec {
            id: "fasttrack-flattens-switch",
            claim: "FastTrack keeps the foreground near its alone time however many background apps run",
            figure: "switch-upload, 6 BG: delay reduction of fasttrack",
            min: 0.8,
            max: 1.0,
            measure: |r| reduction(r, "switch-upload", "fasttrack", 6),
        },
        Spec {
            id: "fasttrack-flattens-camera",
            claim: "under FastTrack the camera switch stays at its FG-only time with six I/O-intensive apps (paper: ≈ FG only)",
            figure: "camera-switch, 6 BG: T(fasttrack) / T(FG only)",
            min: 0.8,
            max: 1.25,
            measure: |r| r.fg("camera-switch", "fasttrack", 6) / r.fg("camera-switch", "android", 0).max(1e-9),
        },
        Spec {
            id: "fasttrack-helps-launch",
            claim: "FastTrack-- removes up to 87 % of a launch's delay under app updates (paper; ±15 points)",
            figure: "launch-update, 6 BG: delay reduction of fasttrack-minus",
            min: 0.72,
            max: 1.0,
            measure: |r| reduction(r, "launch-update", "fasttrack-minus", 6),
        },
    ]
}

/// The ids of FastTrack's checks, in the order [`checks`] gives them.
pub fn ids() -> Vec<&'static str> {
    specs().iter().map(|s| s.id).collect()
}

/// FastTrack's checks measured on `r` (only the one named `only`, if given: a caller that runs
/// the simulator on demand then runs only what that check reads).
pub fn checks(r: &dyn Runs, only: Option<&str>) -> Vec<Check> {
    specs()
        .into_iter()
        .filter(|s| only.is_none_or(|id| id == s.id))
        .map(|s| Check::new(s.id, "[FT]", s.claim, s.figure.into(), (s.measure)(r), s.min, s.max))
        .collect()
}
