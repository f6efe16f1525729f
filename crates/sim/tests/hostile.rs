//! Configurations a front end must refuse, and a run whose time stops advancing: each gives its
//! error naming the key or the event, in well under a second, never a hang or an allocation
//! without bound.

use std::time::{Duration, Instant};

use forefront_sim::{try_run, RunConfig};

fn cfg() -> RunConfig {
    RunConfig::builtin("launch-update", "android", Some(1), 1).expect("built-in")
}

fn refused(c: &RunConfig) -> String {
    let t = Instant::now();
    let e = try_run(c).expect_err("refused").to_string();
    assert!(t.elapsed() < Duration::from_secs(1), "{e}: took {:?}", t.elapsed());
    e
}

#[test]
fn a_zero_interval_stops_the_run_with_the_event_named() {
    // Past the checks (a front end that skipped them): the engine ends the run itself.
    for (what, set) in [
        ("FlusherTimer", (|c: &mut RunConfig| c.scenario.phone.writeback_interval_s = 0.0) as fn(&mut RunConfig)),
        ("CommitTimer", |c: &mut RunConfig| c.scenario.phone.fs.commit_interval_s = 0.0),
    ] {
        let mut c = cfg();
        set(&mut c);
        let t = Instant::now();
        let world = forefront_sim::world::World::new(&c.scenario, c.device.clone(), c.policy.clone(), c.bg_apps, c.seed);
        let out = world.run();
        assert!(t.elapsed() < Duration::from_secs(2), "{what}: took {:?}", t.elapsed());
        let stall = out.stall.expect("the run stalled");
        assert!(stall.contains("stopped advancing") && stall.contains(what), "{stall}");
        // Through the front door the same configuration is refused before it runs.
        let e = refused(&c);
        assert!(
            e.contains(if what == "FlusherTimer" { "phone.writeback_interval_s" } else { "phone.fs.commit_interval_s" }),
            "{e}"
        );
    }
    // A good run has no stall.
    assert!(try_run(&cfg()).is_ok());
}

#[test]
fn sizes_beyond_their_limits_are_refused_before_anything_is_allocated() {
    let mut c = cfg();
    c.bg_apps = 1_000_000_000;
    let e = refused(&c);
    assert!(e.starts_with("bg_apps: 1000000000 is over the limit of 1000"), "{e}");

    let mut c = cfg();
    c.scenario.files[0].size = forefront_workload::Bytes(100 << 30);
    let e = refused(&c);
    assert!(e.contains("do not fit on device `galaxy-s6-ufs`"), "{e}");

    let mut c = cfg();
    c.device.capacity_gib = 1 << 44;
    let e = refused(&c);
    assert!(e.contains("device `galaxy-s6-ufs`: capacity_gib must be in 1..=1048576, got 17592186044416"), "{e}");

    let mut c = cfg();
    c.device.queue_depth = 0;
    assert!(refused(&c).contains("queue_depth must be 1..=256, got 0"));

    // A truncate to i64::MAX: over the scenario limit and the device.
    let mut c = cfg();
    c.scenario.apps[0].threads[0]
        .ops
        .insert(0, forefront_workload::Op::Truncate { path: "/x".into(), size: forefront_workload::Bytes(i64::MAX as u64) });
    let e = refused(&c);
    assert!(e.contains("app[0].thread[0].ops[0] (truncate): size 9223372036854775807 is over the limit"), "{e}");
    let mut c = cfg();
    c.scenario.apps[0].threads[0]
        .ops
        .insert(0, forefront_workload::Op::Truncate { path: "/x".into(), size: forefront_workload::Bytes(1 << 40) });
    let e = refused(&c);
    assert!(e.contains("app[0].thread[0].ops[0] (truncate): a file of 1099511627776 bytes is larger than the storage"), "{e}");
}

#[test]
fn a_missing_device_names_the_scenario_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = include_str!("../../../scenarios/launch-update.toml").replacen(
        "device = \"galaxy-s6-ufs\"",
        "device = \"./nodev.toml\"",
        1,
    );
    assert!(text.contains("./nodev.toml"), "the fixture names its device");
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    let e = match RunConfig::builtin(path.to_str().unwrap(), "android", None, 1) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a missing device loads"),
    };
    assert!(e.contains("s.toml: device: ./nodev.toml: No such file"), "{e}");
}
