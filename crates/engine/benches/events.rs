//! Bare engine throughput: a steady state of `pending` events, each pop scheduling one more at a
//! pseudo-random future time (the hold model). Prints events/s through criterion's throughput.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use forefront_engine::{EventQueue, Rng, RngStreams, SimTime};

fn hold(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine_hold");
    const EVENTS: u64 = 200_000;
    for pending in [100usize, 1_000, 10_000] {
        group.throughput(Throughput::Elements(EVENTS));
        group.bench_with_input(BenchmarkId::from_parameter(pending), &pending, |b, &pending| {
            let mut rng = RngStreams::new(1).stream("bench");
            let delays: Vec<u64> = (0..4096).map(|_| rng.gen_range(1..1_000_000)).collect();
            b.iter(|| {
                let mut q: EventQueue<u32> = EventQueue::with_capacity(pending + 1);
                for i in 0..pending {
                    q.schedule(SimTime(delays[i % delays.len()]), i as u32);
                }
                let mut k = 0usize;
                for _ in 0..EVENTS {
                    let (t, e) = q.pop().expect("queue never drains in the hold model");
                    k = (k + 1) & 4095;
                    q.schedule(t.after(delays[k]), e);
                }
                q.len()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, hold);
criterion_main!(benches);
