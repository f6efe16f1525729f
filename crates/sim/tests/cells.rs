//! Cells (SOSP'11): virtual phones sharing one kernel. What must hold: a background cell's apps
//! are background apps of the phone for every policy; a cell switch moves the foreground and
//! the CPU groups; the shared base is one copy; private data is per cell; overhead and per-cell
//! figures come from mechanisms; conservation and determinism as everywhere.

use forefront_sim::{run, RunConfig};
use forefront_workload::Scenario;

fn cfg(scenario: &str, policy: &str, busy: u32, seed: u64) -> RunConfig {
    let mut c = RunConfig::builtin(scenario, policy, None, seed).expect("built-in scenario");
    c.scenario.bg_cells = busy;
    c
}

#[test]
fn conservation_and_determinism_hold_for_every_policy_across_cells() {
    for scenario in ["cells-nexus-s", "cells-switch"] {
        for policy in ["android", "fasttrack", "qasio", "forefront", "ftc+vt-cfs"] {
            let mut c = cfg(scenario, policy, 2, 3);
            c.scenario.duration_s = 25.0;
            let r = run(&c);
            let i = &r.invariants;
            let what = format!("{scenario} {policy}");
            assert_eq!(i.requests_submitted, i.requests_completed + i.requests_merged + i.requests_in_flight, "{what}");
            assert_eq!(i.bytes_submitted, i.bytes_completed + i.bytes_in_flight, "{what}");
            assert_eq!(i.tasks_blocked_without_waker, 0, "{what}");
            assert!(!r.metrics.fg_samples_ms.is_empty(), "{what}: no headline sample");
            assert_eq!(r.bg_cells, 2, "{what}");
            let mut again = run(&c);
            again.stats = r.stats.clone();
            assert_eq!(serde_json::to_string(&again).unwrap(), serde_json::to_string(&r).unwrap(), "{what}: not deterministic");
        }
    }
}

#[test]
fn every_cell_is_reported_and_busy_cells_are_the_phones_background() {
    let r = run(&cfg("cells-nexus-s", "android", 2, 1));
    let roles: Vec<(&str, &str)> = r.metrics.cells.iter().map(|c| (c.name.as_str(), c.role.as_str())).collect();
    assert_eq!(roles, [("home", "fg"), ("busy0", "busy"), ("busy1", "busy"), ("idle0", "idle"), ("idle1", "idle")]);
    let home = &r.metrics.cells[0];
    assert!(
        (home.on_screen_ms - r.stats.sim_ms).abs() < 1e-6,
        "home was on screen the whole run: {} of {}",
        home.on_screen_ms,
        r.stats.sim_ms
    );
    assert_eq!(home.phases["launch"].samples, r.metrics.fg_samples_ms.len() as u64, "the headline is the home cell's launches");
    // The busy cells' syscall writes are exactly the phone's background writes (idle cells
    // write nothing; no host app runs here).
    let busy_written: f64 = r.metrics.cells.iter().filter(|c| c.role == "busy").map(|c| c.written_mb).sum();
    assert!(busy_written > 10.0, "busy cells wrote {busy_written} MB");
    assert!((busy_written - r.metrics.bg_written_mb).abs() < 0.01, "{busy_written} vs {}", r.metrics.bg_written_mb);
    for c in r.metrics.cells.iter().filter(|c| c.role != "fg") {
        assert_eq!(c.on_screen_ms, 0.0, "{}", c.name);
        assert!(c.cpu_ms > 0.0, "{}: its system services ran", c.name);
    }
    for c in r.metrics.cells.iter().filter(|c| c.role == "idle") {
        assert_eq!(c.written_mb, 0.0, "{}", c.name);
    }
}

#[test]
fn background_cells_interfere_and_a_foreground_app_in_a_background_cell_never_becomes_the_phones() {
    let none = run(&cfg("cells-nexus-s", "android", 0, 1));
    let four = run(&cfg("cells-nexus-s", "android", 4, 1));
    assert!(
        four.metrics.fg_ms > none.metrics.fg_ms * 1.1,
        "busy cells slow the launch: {} vs {}",
        four.metrics.fg_ms,
        none.metrics.fg_ms
    );
    // With FastTrack the FG UID is the home cell's gallery; busy cells' I/O is never FG, so
    // its FG-first dispatch fires only for the launch's requests: at most the launches' own
    // request count, the same as with no busy cell.
    let ft0 = run(&cfg("cells-nexus-s", "fasttrack", 0, 1));
    let ft4 = run(&cfg("cells-nexus-s", "fasttrack", 4, 1));
    let fg_direct = |r: &forefront_record::run::RunReport| r.hooks.get("dispatch.fg_direct").copied().unwrap_or(0);
    assert!(fg_direct(&ft0) > 0);
    assert!(fg_direct(&ft4) <= fg_direct(&ft0) + fg_direct(&ft0) / 10, "{} vs {}", fg_direct(&ft4), fg_direct(&ft0));
    // The switch scenario's background launchers ask for the foreground at their start:
    // deferred (4 background cells), never the phone's.
    let sw = run(&cfg("cells-switch", "android", 2, 1));
    assert_eq!(sw.hooks.get("cells.foreground_deferred"), Some(&4));
}

#[test]
fn a_switch_moves_the_screen_and_costs_the_framebuffer_copies() {
    // Exact costs: no CPU spread (the copies spread like any CPU work otherwise).
    let mut c = cfg("cells-switch", "android", 0, 1);
    c.scenario.phone.cpu.compute_cv = 0.0;
    let r = run(&c);
    assert_eq!(r.hooks["cells.switch"], 20);
    assert!(!r.hooks.contains_key("cells.switch_missing"));
    let cell = |n: &str| r.metrics.cells.iter().find(|c| c.name == n).unwrap();
    assert_eq!(cell("vp0").switched_in, 10);
    assert_eq!(cell("home").switched_in, 10);
    let on = cell("home").on_screen_ms + cell("vp0").on_screen_ms;
    assert!((on - r.stats.sim_ms).abs() < 1e-3, "the screen always shows one of the two: {on} vs {}", r.stats.sim_ms);
    assert_eq!(cell("vp1").on_screen_ms, 0.0);
    // Every switch runs the mux's two copies on the switching thread (480x800x4 B twice at
    // 500 MB/s = 6.144 ms at speed 1.0, the Nexus S core).
    let copy = 6.144;
    assert!(r.breakdown["cpu_running"] >= copy, "{:?}", r.breakdown);
    // Warm switches (launcher cache in memory): the copy, the redraw's 40 ms, little else.
    assert!(r.metrics.fg_p50_ms > 46.0 && r.metrics.fg_p50_ms < 60.0, "p50 {}", r.metrics.fg_p50_ms);
}

#[test]
fn plain_phone_one_cell_and_idle_cells_differ_only_by_their_mechanisms() {
    // Exact costs: no CPU spread (with it, the runs draw their bursts differently).
    let exact = || {
        let mut c = cfg("cells-nexus-s", "android", 0, 2);
        c.scenario.phone.cpu.compute_cv = 0.0;
        c
    };
    let mut plain = exact();
    plain.scenario.cells_params.virtualize = false;
    let mut one = exact();
    one.scenario.cells_params.total = 1;
    let mut five = exact();
    five.scenario.cells_params.total = 5;
    let (p, o, f) = (run(&plain), run(&one), run(&five));
    assert!(p.metrics.cells.is_empty() && p.bg_cells == 0);
    assert_eq!(o.metrics.cells.len(), 1);
    assert_eq!(f.metrics.cells.len(), 5);
    // One cell: the same launches plus the union lookups of its opens (3 per launch, 5 µs each)
    // on the launching thread's CPU time. (The mean latency may move either way by more: a
    // shift of microseconds changes which launches meet a system-service wake-up.)
    let lookups = 3.0 * 0.005;
    let d = o.breakdown["cpu_running"] - p.breakdown["cpu_running"];
    assert!((d - lookups).abs() < 0.0021, "one cell adds {d} ms of CPU per launch, lookups {lookups}");
    // Idle cells: their system services compete for the one core.
    assert!(f.breakdown["cpu_runnable"] > o.breakdown["cpu_runnable"], "{:?} vs {:?}", f.breakdown, o.breakdown);
    assert!(f.metrics.fg_ms > o.metrics.fg_ms);
}

/// Two cells read the same base file: one copy on flash and in the page cache (read once);
/// a private file of the same path is one copy per cell (read twice).
#[test]
fn the_base_is_shared_and_private_data_is_per_cell() {
    let text = |path: &str| {
        format!(
            "name='t'\ndescription='d'\nheadline='p'\ndevice='nexus-s-inand'\nduration_s=30\nbg_cells=1\n\
             [[file]]\npath='{path}'\nsize='4MiB'\nowner='reader'\n\
             [[app]]\nname='ui'\nrole='fg'\n[[app.thread]]\nname='m'\n\
             ops=[{{op='sleep', ms=3000.0}}, {{op='phase_begin', name='p'}}, {{op='read', path='{path}', len='4MiB'}}, {{op='phase_end', name='p'}}]\n\
             [[app]]\nname='reader'\nrole='bg'\n[[app.thread]]\nname='m'\nops=[{{op='read', path='{path}', len='4MiB'}}]\n\
             [[cell]]\nname='home'\nrole='fg'\napps=['ui', 'reader']\n\
             [[cell]]\nname='b{{c}}'\nrole='busy'\napps=['reader']\n"
        )
    };
    let dev_read = |path: &str| {
        let sc = Scenario::parse("t.toml", &text(path)).unwrap();
        let mut c = cfg("cells-nexus-s", "android", 1, 1);
        c.scenario = sc;
        run(&c).metrics.device_read_mb
    };
    let mib4 = 4.0 * 1048576.0 / 1e6;
    let shared = dev_read("/system/base.bin");
    let private = dev_read("/data/own.bin");
    // Each app reads the file once, before the FG thread (3 s later) reads the home copy again.
    assert!((shared - mib4).abs() < 0.2, "shared base read once: {shared} MB");
    assert!((private - 2.0 * mib4).abs() < 0.2, "private data read once per cell: {private} MB");
}

/// Cells' "< 2 % overhead" [CE], moved here from `forefront sim validate` (issue 26): on this
/// model it cannot fail — the virtualisation costs are assumed microseconds and the idle cells'
/// services an assumed 2 ms a second — so it is an invariant of the model, not a validation.
/// Five cells (four idle) against the plain phone, the mean launch over seeds 1–3, without CPU
/// spread: with it (`compute_cv` 0.1), the two setups draw their bursts differently and the
/// difference of 3-seed means is noise of about ±1 %, larger than the overhead itself.
#[test]
fn five_virtual_phones_cost_the_launch_under_two_percent() {
    let mean = |virtualize: bool| {
        (1..=3)
            .map(|seed| {
                let mut c = cfg("cells-nexus-s", "android", 0, seed);
                c.scenario.phone.cpu.compute_cv = 0.0;
                c.scenario.cells_params.virtualize = virtualize;
                run(&c).metrics.fg_ms
            })
            .sum::<f64>()
            / 3.0
    };
    let overhead = mean(true) / mean(false) - 1.0;
    assert!((0.0..0.02).contains(&overhead), "overhead {overhead}");
}

/// A switch's time is a distribution: the redraw's CPU work spreads (`compute_cv`), and the
/// first switch into each cell is cold. Warm switches stay near the copy + redraw (46 ms).
#[test]
fn switch_times_spread_over_switches_and_seeds() {
    let samples = |seed| run(&cfg("cells-switch", "android", 0, seed)).metrics.fg_samples_ms;
    let (a, b) = (samples(1), samples(2));
    let mut warm: Vec<f64> = a.iter().copied().filter(|&ms| ms < 100.0).collect();
    warm.sort_by(f64::total_cmp);
    assert!(warm.len() >= 16, "{a:?}");
    assert!(warm[warm.len() - 1] - warm[0] > 4.0, "warm switches do not spread: {warm:?}");
    assert!(warm.iter().all(|&ms| ms > 30.0 && ms < 70.0), "{warm:?}");
    assert_ne!(a, b, "another seed, other switch times");
    assert_eq!(a, samples(1), "same seed, same switch times");
}
