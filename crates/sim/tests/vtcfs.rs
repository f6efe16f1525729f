//! FTC + VT-CFS (SPE'15) in the simulator: the user-interactive chain is followed through
//! binder to the compositor, VT-CFS preempts at ticks and CFS never does, FTC promotes the chain
//! and restores it, every interaction is displayed once, and the mechanisms move response time
//! the way the paper reports.

use forefront_record::run::{RunReport, UiMetrics};
use forefront_sim::{run, RunConfig};
use forefront_workload::Op;

const SCENARIO: &str = "ftc-photo-editor";

fn cfg(policy: &str, bg: u32) -> RunConfig {
    RunConfig::builtin(SCENARIO, policy, Some(bg), 1).expect("built-in scenario")
}

fn ui(r: &RunReport) -> &UiMetrics {
    r.metrics.ui.as_ref().expect("a scenario with input events reports interactivity")
}

#[test]
fn the_interactive_chain_is_followed_through_binder_to_the_compositor() {
    let r = run(&cfg("android", 1));
    let chain = &ui(&r).chain_tasks;
    for t in [
        "system_server:InputDispatcher",
        "editor:main",
        "editor:AsyncTask #1",
        "editor:AsyncTask #2",
        "surfaceflinger:SurfaceFlinger",
    ] {
        assert!(chain.iter().any(|c| c == t), "{t} missing from the chain {chain:?}");
    }
    assert!(chain.iter().any(|c| c.starts_with("system_server:binder_")), "no binder server in the chain {chain:?}");
    assert!(!chain.iter().any(|c| c.starts_with("antivirus")), "a background app joined the chain {chain:?}");

    // Without the binder call, no binder thread joins: membership comes from the call's edge.
    let mut c = cfg("android", 1);
    for app in &mut c.scenario.apps {
        for t in &mut app.threads {
            strip_binder_calls(&mut t.ops);
        }
    }
    let r = run(&c);
    let chain = &ui(&r).chain_tasks;
    assert!(!chain.iter().any(|c| c.starts_with("system_server:binder_")), "{chain:?}");
    assert!(chain.iter().any(|c| c == "editor:AsyncTask #1"), "{chain:?}");
}

fn strip_binder_calls(ops: &mut Vec<Op>) {
    ops.retain(|op| !matches!(op, Op::BinderCall { .. }));
    for op in ops {
        if let Op::Repeat { ops, .. } = op {
            strip_binder_calls(ops);
        }
    }
}

#[test]
fn every_interaction_is_displayed_once_and_ftc_restores_every_task() {
    for policy in forefront_policy::Policy::cpu_policies() {
        for bg in 0..=3 {
            let r = run(&cfg(policy, bg));
            let u = ui(&r);
            let what = format!("{policy} with {bg} BG apps");
            // 30 taps + 3 drags of 60 move events.
            assert_eq!(u.interactions, 210, "{what}");
            assert_eq!(r.metrics.fg_samples_ms.len(), 30, "{what}: tap samples");
            // A result is on screen no sooner than one composition (2 ms) after its input.
            assert!(r.metrics.fg_samples_ms.iter().all(|&ms| ms >= 2.0), "{what}");
            // One frame per result, fewer when a late compositor shows two results in one.
            assert!(u.frames <= 210 && u.frames >= 170, "{what}: {} frames", u.frames);
            assert_eq!(u.ftc_left_promoted, 0, "{what}: a task kept FTC's promotion");
            assert_eq!(r.invariants.tasks_blocked_without_waker, 0, "{what}");
            assert_eq!(r.invariants.time_clamps, 0, "{what}");
            // The breakdown of a tap sums to its response time.
            let sum: f64 = r.breakdown.values().sum();
            assert!(
                (sum - r.metrics.fg_ms).abs() <= 0.01 * r.metrics.fg_ms + 0.01,
                "{what}: breakdown {sum} vs {}",
                r.metrics.fg_ms
            );
        }
    }
}

#[test]
fn vt_cfs_preempts_at_ticks_cfs_never_does_and_a_shorter_tick_switches_more() {
    let cfs = run(&cfg("android", 3));
    assert_eq!(ui(&cfs).tick_preemptions, 0);
    assert_eq!(ui(&cfs).cpu_scheduler, "cfs");
    let vt = run(&cfg("vt-cfs", 3));
    assert_eq!(ui(&vt).cpu_scheduler, "vt-cfs");
    assert!(ui(&vt).tick_preemptions > 1000, "{}", ui(&vt).tick_preemptions);
    let switches = |tick_ms: f64| {
        let mut c = cfg("vt-cfs", 3);
        c.scenario.phone.cpu.tick_ms = tick_ms;
        ui(&run(&c)).context_switches
    };
    let (fine, coarse) = (switches(1.0), switches(8.0));
    assert!(fine > 3 * coarse, "λ 1 ms: {fine} switches, λ 8 ms: {coarse}");
    // Preemption waits of chain tasks under VT-CFS last whole ticks: never more than a few.
    let u = ui(&vt);
    assert!(u.preempt_p99_ms <= 3.0 * u.tick_ms + 0.1, "preemption p99 {} ms with λ {} ms", u.preempt_p99_ms, u.tick_ms);
}

#[test]
fn ftc_promotes_only_under_ftc() {
    for (policy, promotes) in [("android", false), ("vt-cfs", false), ("ftc", true), ("ftc+vt-cfs", true), ("forefront", true)] {
        let r = run(&cfg(policy, 2));
        let n = |h: &str| r.hooks.get(h).copied().unwrap_or(0);
        assert_eq!(n("ftc.promoted") > 0, promotes, "{policy}: {:?}", r.hooks);
        assert_eq!(n("ftc.restored") > 0, promotes, "{policy}: {:?}", r.hooks);
    }
}

#[test]
fn background_cpu_load_slows_taps_and_ftc_on_vt_cfs_takes_most_of_it_back() {
    let tap = |policy: &str, bg: u32| run(&cfg(policy, bg)).metrics.fg_ms;
    let alone = tap("android", 0);
    let stock = tap("android", 3);
    let both = tap("ftc+vt-cfs", 3);
    assert!(stock > 1.5 * alone, "3 BG apps: {stock} ms vs {alone} ms alone");
    // Direction only: the promoted worker gets more of its core than under stock CFS.
    assert!(both < 0.85 * stock, "ftc+vt-cfs {both} ms vs stock {stock} ms");
    assert!(both >= alone, "faster than alone? {both} vs {alone}");
}

#[test]
fn background_instances_are_dealt_round_robin_over_the_templates() {
    // 1 BG app: the antivirus only (reads, writes nothing); 2: + the encoder (writes).
    let one = run(&cfg("android", 1));
    assert!(one.metrics.bg_read_mb > 0.0 && one.metrics.bg_written_mb == 0.0, "{:?}", one.metrics);
    let two = run(&cfg("android", 2));
    assert!(two.metrics.bg_written_mb > 0.0);
    assert!(ui(&two).bg_cpu_share > ui(&one).bg_cpu_share);
}

#[test]
fn same_seed_same_report_and_no_ui_block_without_input() {
    let c = cfg("ftc+vt-cfs", 3);
    let strip = |r: RunReport| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("stats");
        v
    };
    assert_eq!(strip(run(&c)), strip(run(&c)));
    let mut plain = RunConfig::builtin("camera-switch", "android", Some(1), 1).unwrap();
    plain.scenario.duration_s = 5.0;
    let v = serde_json::to_value(run(&plain)).unwrap();
    assert!(v["metrics"].get("ui").is_none(), "a scenario without input events has no `ui` block");
}

/// The SPE 2015 journal's setup (`ftc-aviary`): the Galaxy Nexus's storage, its kernel's tick
/// (CONFIG_HZ = 128) as λ and as stock CFS's slice check, the paper's three background apps;
/// every interaction is displayed and FTC + VT-CFS shortens the tap against stock CFS.
#[test]
fn the_journal_setup_runs_on_the_galaxy_nexus_tick() {
    let c = RunConfig::builtin("ftc-aviary", "android", None, 1).expect("built-in scenario");
    assert_eq!(c.scenario.device, "galaxy-nexus-emmc");
    assert_eq!(c.scenario.phone.cpu.tick_ms, 1000.0 / 128.0);
    assert!(c.scenario.phone.cpu.slice_on_tick);
    assert_eq!(c.bg_apps, 3);
    let stock = run(&c);
    let both = run(&RunConfig::builtin("ftc-aviary", "ftc+vt-cfs", None, 1).expect("built-in scenario"));
    for r in [&stock, &both] {
        assert_eq!(ui(r).interactions, 210);
        assert_eq!(ui(r).tick_ms, 7.8125);
        assert_eq!(ui(r).ftc_left_promoted, 0);
    }
    assert!(both.metrics.fg_p50_ms < 0.9 * stock.metrics.fg_p50_ms, "{} vs {}", both.metrics.fg_p50_ms, stock.metrics.fg_p50_ms);
}
