//! End-to-end simulator speed: events/s of the default scenario and the wall time of 60 s of
//! simulated time with 6 background apps (the targets of the foundation issue are ≥ 3 M
//! events/s and ≤ 2 s; this prints the measured figures, it does not assert them).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use forefront_sim::{run, RunConfig};

fn sim(c: &mut Criterion) {
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    for (scenario, bg) in [("launch-update", 2), ("launch-update", 6), ("switch-upload", 6), ("camera-switch", 6)] {
        let mut cfg = RunConfig::builtin(scenario, "android", Some(bg), 1).unwrap();
        cfg.scenario.duration_s = 60.0;
        let events = run(&cfg).stats.events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(format!("{scenario}/bg{bg}/60s"), |b| b.iter(|| run(&cfg).stats.events));
    }
    g.finish();
}

criterion_group!(benches, sim);
criterion_main!(benches);
