//! The card table as calibration ([RS] Table 2): the paper's own microbenchmark — sequential
//! writes and random 4 KiB writes over a large file — run on every card model (its device file,
//! FTL included), compared with the card's measured sequential MB/s and random IOPS within 20 %.
//!
//! The paper publishes the figures, not the benchmark's parameters; stated here: sequential
//! writes of 128 KiB (ext4 write-back's request size on this phone), random 4 KiB writes at
//! 4 KiB-aligned offsets drawn uniformly over a 1 GiB file on a card that has just written that
//! file. With AUs of 2–4 MiB and at most 8 open, a random write lands in an open AU with a
//! chance under 3 % for any file of 256 MiB or more, so the file size does not matter beyond that.
//! Devices are served one command at a time, straight (no file system, no block layer), with
//! their service-time spread (`service_cv`) on a fixed seed.

use forefront_engine::Rng;
use forefront_engine::{RngStreams, SimTime};
use forefront_model::block::{ReqOp, ReqSlab, Request};
use forefront_model::flash::FlashDevice;
use forefront_model::prov::Provenance;

const CARDS: [&str; 8] = [
    "sd-transcend-c2",
    "sd-ridata-c2",
    "sd-sandisk-c4",
    "sd-kingston-c4",
    "sd-wintec-c6",
    "sd-adata-c6",
    "sd-patriot-c10",
    "sd-pny-c10",
];

const FILE: u64 = 1 << 30;

/// Serve writes (byte offset, bytes) one after the other; the total time (s).
fn serve(dev: &mut FlashDevice, writes: impl Iterator<Item = (u64, u64)>) -> f64 {
    let mut reqs = ReqSlab::default();
    let mut now = SimTime::ZERO;
    let mut out = vec![];
    for (off, bytes) in writes {
        let id = reqs.insert(Request::new(ReqOp::Write, off / 512, (bytes / 512) as u32, true, Provenance::KERNEL));
        dev.submit(id, 1, false, now);
        out.clear();
        dev.start(now, &mut reqs, &mut out);
        now = out[0].done_at;
        dev.finish(now);
        reqs.complete(id, |_| {});
    }
    now.ns() as f64 / 1e9
}

/// (sequential MB/s, random 4 KiB IOPS) of `card`'s model, with or without its FTL.
fn microbench(card: &str, ftl: bool) -> (f64, f64) {
    let mut p = forefront_workload::load_device(card).unwrap();
    if !ftl {
        p.ftl = None;
    }
    let rng = RngStreams::new(1);
    let mut dev = FlashDevice::new(p).seeded(rng.stream("flash.service.0"));
    let chunk = 128 * 1024;
    let seq_s = serve(&mut dev, (0..FILE / chunk).map(|k| (k * chunk, chunk)));
    let mut pick = rng.stream("microbench");
    let n = 1500;
    let rand_s = serve(&mut dev, (0..n).map(|_| (pick.gen_range(0..FILE / 4096) * 4096, 4096)));
    (FILE as f64 / seq_s / 1e6, n as f64 / rand_s)
}

#[test]
fn every_card_model_reproduces_its_measured_sequential_and_random_write_speed() {
    let mut bad = vec![];
    for card in CARDS {
        let p = forefront_workload::load_device(card).unwrap();
        let (seq, iops) = microbench(card, true);
        eprintln!(
            "{card}: seq {seq:.2} MB/s (table {}), random {iops:.2} IOPS (table {}), ftl: {}",
            p.write_seq_mb_s,
            p.write_rand_iops,
            p.ftl.is_some()
        );
        for (what, got, want) in [("seq MB/s", seq, p.write_seq_mb_s), ("random IOPS", iops, p.write_rand_iops)] {
            if (got / want - 1.0).abs() > 0.2 {
                bad.push(format!("{card}: {what} {got:.2}, table {want}"));
            }
        }
    }
    assert!(bad.is_empty(), "outside 20 % of [RS] Table 2: {bad:?}");
}

#[test]
fn the_slow_cards_have_an_ftl_and_it_decides_their_random_figure() {
    // A card whose FTL got the random figure wrong would fail above; here the FTL is shown to be
    // what the figure runs through: with random writes confined to two AUs (SQLite's clustered
    // pages) the same card serves them at page-program speed, which the flat model cannot.
    for card in ["sd-kingston-c4", "sd-pny-c10"] {
        let p = forefront_workload::load_device(card).unwrap();
        let au = p.ftl.as_ref().expect("an [ftl] table").au_kib * 1024;
        let clustered = |ftl: bool| {
            let mut q = p.clone();
            if !ftl {
                q.ftl = None;
            }
            let mut dev = FlashDevice::new(q);
            let mut pick = RngStreams::new(2).stream("clustered");
            let n = 300;
            n as f64 / serve(&mut dev, (0..n).map(|_| (pick.gen_range(0..2 * au / 4096) * 4096, 4096)))
        };
        let (with, flat) = (clustered(true), clustered(false));
        assert!(with > 50.0 * p.write_rand_iops, "{card}: clustered writes {with:.1} IOPS with the FTL");
        assert!(flat < 1.2 * p.write_rand_iops, "{card}: the flat model charges every one: {flat:.1} IOPS");
    }
}
