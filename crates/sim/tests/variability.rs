//! Launch I/O shaped like a real start-up, and run-to-run variability (issue 15):
//! `read_random` issues small reads with no readahead while a streaming read still reads
//! ahead; a device's `service_cv` and the CPU's `compute_cv` make an FG-only launch a
//! distribution over seeds, and each seed still gives the same bytes.

use forefront_policy::Policy;
use forefront_sim::{run, RunConfig};
use forefront_workload::{builtin_scenario, load_device, Scenario};

/// One FG thread running `ops` on a cold 24 MiB file, on `device` (its preset, edited by `dev`).
fn cfg(ops: &str, phone: &str, dev: impl Fn(&mut forefront_model::flash::FlashParams), seed: u64) -> RunConfig {
    let text = format!(
        "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 600.0\n{phone}\n\
         [[file]]\npath = '/data/app.apk'\nsize = '24MiB'\nowner = 'a'\n\
         [[app]]\nname = 'a'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
         ops = [{{ op = 'phase_begin', name = 'run' }}, {ops}, {{ op = 'phase_end', name = 'run' }}]\n"
    );
    let scenario = Scenario::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let mut device = load_device("galaxy-s6-ufs").unwrap();
    dev(&mut device);
    RunConfig { scenario, device, policy: Policy::by_name("android").unwrap(), bg_apps: 0, seed }
}

#[test]
fn random_reads_read_only_what_they_ask_and_a_stream_reads_ahead() {
    let random =
        run(&cfg("{ op = 'read_random', path = '/data/app.apk', span = '24MiB', count = 200, size = '4KiB' }", "", |_| {}, 1));
    // 200 pages at scattered offsets: at most 200 requests of one page each (a repeat is a hit).
    let mb = random.metrics.device_read_mb;
    assert!(mb <= 200.0 * 4096.0 / 1e6 + 1e-9, "{mb} MB read for 200 random pages: readahead ran");
    assert!(mb >= 150.0 * 4096.0 / 1e6, "{mb} MB: most pages are distinct");
    assert!(random.invariants.requests_submitted >= 150, "{}", random.invariants.requests_submitted);
    // The same bytes as one stream: readahead makes 128 KiB requests.
    let stream = run(&cfg("{ op = 'read', path = '/data/app.apk', len = '800KiB', chunk = '4KiB' }", "", |_| {}, 1));
    assert!(stream.invariants.requests_submitted <= 8, "{} requests for an 800 KiB stream", stream.invariants.requests_submitted);
    // The offsets are the op's, not the run's: another seed reads the same pages.
    let other_seed =
        run(&cfg("{ op = 'read_random', path = '/data/app.apk', span = '24MiB', count = 200, size = '4KiB' }", "", |_| {}, 2));
    assert_eq!(other_seed.metrics.device_read_mb, mb);
}

#[test]
fn bad_read_random_is_refused_with_the_field() {
    let text = "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 1.0\n\
                [[app]]\nname = 'a'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
                ops = [{ op = 'read_random', path = '/x', span = '4KiB', count = 3, size = '16KiB' }]\n";
    let e = Scenario::parse("bad.toml", text).unwrap_err().to_string();
    assert!(e.contains("bad.toml") && e.contains("read_random") && e.contains("span"), "{e}");
}

#[test]
fn spread_makes_launches_a_distribution_and_each_seed_repeats_exactly() {
    let ops = "{ op = 'read_random', path = '/data/app.apk', span = '24MiB', count = 300, size = '4KiB', size_max = '16KiB' }, \
               { op = 'compute', ms = 50.0 }";
    let spread = |seed| cfg(ops, "[phone.cpu]\ncompute_cv = 0.1\n", |d| d.service_cv = 0.3, seed);
    let flat = |seed| cfg(ops, "", |d| d.service_cv = 0.0, seed);
    let times: Vec<f64> = (1..=8).map(|s| run(&spread(s)).metrics.fg_ms).collect();
    let flat_times: Vec<f64> = (1..=3).map(|s| run(&flat(s)).metrics.fg_ms).collect();
    assert!(flat_times.windows(2).all(|w| w[0] == w[1]), "no spread, no variation: {flat_times:?}");
    let (lo, hi) = times.iter().fold((f64::MAX, f64::MIN), |(a, b), &t| (a.min(t), b.max(t)));
    assert!(hi > lo * 1.02, "8 seeds with spread vary: {times:?}");
    // Mean-one spreads leave the typical launch near the nominal one.
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    assert!((mean / flat_times[0] - 1.0).abs() < 0.15, "mean {mean} vs nominal {}", flat_times[0]);
    // Determinism per seed.
    let a = serde_json::to_string(&run(&spread(5)).metrics).unwrap();
    let b = serde_json::to_string(&run(&spread(5)).metrics).unwrap();
    assert_eq!(a, b);
}

#[test]
fn the_builtin_fg_only_launch_is_no_longer_a_constant() {
    let sc = builtin_scenario("launch-update").unwrap();
    let device = load_device(&sc.device).unwrap();
    let r = run(&RunConfig { scenario: sc, device, policy: Policy::by_name("android").unwrap(), bg_apps: 0, seed: 1 });
    let (p50, p99) = (r.metrics.fg_p50_ms, r.metrics.fg_p99_ms);
    assert!(p99 > p50 * 1.02, "FG-only launches p50 {p50} ms, p99 {p99} ms: still one value");
}

/// Every built-in scenario family varies from seed to seed through its CPU bursts
/// (`compute_cv`) and its device commands (`service_cv`), not only FastTrack's (issue 26): two
/// seeds give two headline distributions, one seed the same bytes.
#[test]
fn every_scenario_family_varies_from_seed_to_seed() {
    for (scenario, bg, cap_s) in
        [("qasio-contacts", 1, Some(200.0)), ("ftc-aviary", 3, None), ("cells-switch", 0, None), ("webbench", 0, None)]
    {
        let samples = |seed| {
            let mut c = RunConfig::builtin(scenario, "android", Some(bg), seed).expect("built-in scenario");
            assert!(c.scenario.phone.cpu.compute_cv > 0.0, "{scenario}: no CPU spread");
            if let Some(s) = cap_s {
                c.scenario.duration_s = s;
            }
            run(&c).metrics.fg_samples_ms
        };
        let (a, b) = (samples(1), samples(2));
        assert!(!a.is_empty(), "{scenario}: no headline sample");
        assert_ne!(a, b, "{scenario}: seeds 1 and 2 give the same samples");
        assert_eq!(a, samples(1), "{scenario}: the same seed differs");
    }
}
