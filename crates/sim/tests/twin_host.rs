//! The calibrated host disk's order of service, against what `bench calibrate` measured on it
//! (issue 29, docs/twin.md "How the host orders a small read behind large transfers").
//!
//! Step `under-load` of the calibration times 4 KiB random `O_DIRECT` reads at depth 1 while
//! two threads keep one `max_sectors_kb` (4 MiB) random read — or write — each in flight, back to
//! back. This test drives the device model ([`FlashDevice`]) with exactly that workload, on the
//! device file the same calibration wrote, and compares the small reads' mean latency with the
//! measured one. With the shared transfer stage (`read_depth_mb_s`, `write_depth_mb_s`: one
//! stage, in the order commands start) the model predicts 0.97-1.63x the measured wait (six of
//! the eight cases within the 1.5x, the other two known red, [`KNOWN_OVER`]); with the
//! stage off (each command on its own channel at the full rate, or any sharing of the bandwidth
//! among the commands in service) the small read waits ~50 us, a hundredth of what was
//! measured, so the check fails without the mechanism.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use forefront_engine::SimTime;
use forefront_model::block::{ReqOp, ReqSlab, Request};
use forefront_model::flash::{FlashDevice, FlashParams, Started};
use forefront_model::prov::Provenance;

/// The quiet calibrations of 2026-11-26 (`--scheduler mq-deadline`): two at 09:37 UTC, two at
/// 10:43 (with the sequential streams).
const FILES: [&str; 4] = ["this-vm-quiet-5.toml", "this-vm-quiet-6.toml", "this-vm-quiet-7.toml", "this-vm-quiet-8.toml"];

fn device(file: &str) -> FlashParams {
    let path = format!("{}/../../docs/results/twin/quiet/{file}", env!("CARGO_MANIFEST_DIR"));
    forefront_workload::load_device(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn figure(d: &FlashParams, name: &str) -> f64 {
    d.provenance.as_ref().expect("a calibrated file").fields.get(name).unwrap_or_else(|| panic!("no {name}")).value
}

/// The calibration's `under-load` step on the model: `loaders` threads each with one
/// `big_sectors` random request (`op`) in flight, and one 4 KiB random reader at depth 1; the
/// small reads' mean latency (µs) over `samples` of them after a 20 ms warm-up.
fn small_read_latency_us(p: &FlashParams, op: ReqOp, loaders: usize, big_sectors: u32, samples: usize) -> f64 {
    let span = (p.capacity_gib << 21).min(1 << 21); // the calibration's 1 GiB scratch file
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut offset = |sectors: u32| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % (span / sectors as u64)) * sectors as u64
    };
    let mut d = FlashDevice::new(p.clone());
    let mut reqs = ReqSlab::default();
    let mut events: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut small_id = u32::MAX;
    let mut small_since = SimTime::ZERO;
    let mut lat = vec![];
    let mut out: Vec<Started> = vec![];
    let mut now = SimTime::ZERO;
    let submit = |d: &mut FlashDevice, reqs: &mut ReqSlab, op: ReqOp, sector: u64, sectors: u32, now: SimTime| {
        let id = reqs.insert(Request::new(op, sector, sectors, true, Provenance::KERNEL));
        d.submit(id, 0, false, now);
        id
    };
    for _ in 0..loaders {
        let s = offset(big_sectors);
        submit(&mut d, &mut reqs, op, s, big_sectors, now);
    }
    let warm_up = SimTime::from_ms(20);
    loop {
        if small_id == u32::MAX && now >= warm_up {
            let s = offset(8);
            small_id = submit(&mut d, &mut reqs, ReqOp::Read, s, 8, now);
            small_since = now;
        }
        out.clear();
        d.start(now, &mut reqs, &mut out);
        for s in &out {
            events.push(Reverse((s.done_at.ns(), s.id)));
        }
        let Reverse((t, id)) = events.pop().expect("commands in flight");
        now = SimTime::from_ns(t);
        d.finish(now);
        let r = reqs.free(id);
        if id == small_id && r.sectors == 8 {
            lat.push(now.since(small_since) as f64 / 1e3);
            small_id = u32::MAX;
            if lat.len() == samples {
                break;
            }
        } else {
            let s = offset(big_sectors);
            submit(&mut d, &mut reqs, op, s, big_sectors, now);
        }
    }
    lat.iter().sum::<f64>() / lat.len() as f64
}

/// (measured, predicted with the stage, predicted without it) for the read load and the write
/// load of one calibration file.
fn cases(file: &str) -> Vec<(&'static str, f64, f64, f64)> {
    let d = device(file);
    let big = (figure(&d, "max_sectors_kb") * 2.0) as u32;
    // The loaders' requests are at random offsets: the stage runs at the random figures.
    let d = FlashParams {
        read_depth_mb_s: figure(&d, "read_max_depth_mb_s"),
        write_depth_mb_s: figure(&d, "write_max_depth_mb_s"),
        ..d
    };
    let off = FlashParams { read_depth_mb_s: 0.0, write_depth_mb_s: 0.0, ..d.clone() };
    [("read", ReqOp::Read), ("write", ReqOp::Write)]
        .into_iter()
        .map(|(name, op)| {
            let measured = figure(&d, &format!("read_4k_under_{name}_load_mean_us"));
            let with = small_read_latency_us(&d, op, 2, big, 300);
            let without = small_read_latency_us(&off, op, 2, big, 300);
            (name, measured, with, without)
        })
        .collect()
}

/// Cases where the arrival-order stage misses the 1.5x, with the ratio measured when
/// this test was written (docs/twin.md, "How the host orders a small read behind large
/// transfers"): over the four calibrations the stage predicts 0.97-1.63x the measured wait
/// (the host lets a small read past part of the queue in some runs), 1.53 and 1.63 in run 5.
/// Known red, kept at the bar: a case here must stay above 1.5x, every other within it.
const KNOWN_OVER: [(&str, &str); 2] = [("this-vm-quiet-5.toml", "read"), ("this-vm-quiet-5.toml", "write")];

#[test]
fn the_shared_stage_predicts_a_small_reads_wait_behind_large_transfers() {
    let all: Vec<_> = FILES.iter().flat_map(|f| cases(f).into_iter().map(move |c| (*f, c))).collect();
    for (file, (load, measured, with, without)) in &all {
        eprintln!(
            "{file}: 4 KiB read under {load} load: measured {measured:.0} us, stage {with:.0} ({:.2}), no stage {without:.0}",
            with / measured
        );
    }
    for (file, (load, measured, with, _)) in &all {
        let ratio = with / measured;
        if KNOWN_OVER.contains(&(file, load)) {
            assert!(ratio > 1.5, "{file}, {load} load is within 1.5x now ({ratio:.2}): take it out of KNOWN_OVER");
        } else {
            assert!(
                ratio <= 1.5,
                "{file}, {load} load: the model's {with:.0} us against the measured {measured:.0} us (ratio {ratio:.2})"
            );
        }
    }
}

#[test]
fn without_the_shared_stage_the_small_read_does_not_wait() {
    for file in FILES {
        for (load, measured, _, without) in cases(file) {
            // Each command on its own channel: the small read costs its own ~50 us, a
            // hundredth of the measured wait — outside 1.5x by far.
            assert!(without * 1.5 < measured, "{file}, {load} load: {without:.0} us without the stage vs {measured:.0} measured");
        }
    }
}
