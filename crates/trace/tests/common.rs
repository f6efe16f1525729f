//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use forefront_record::trace::{BlockAction, BlockDetail, BlockEvent, DevId, Rwbs};
use forefront_trace::blktrace::{encode, RawTrace};

pub fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/traces").join(name)
}

#[allow(clippy::too_many_arguments)]
pub fn ev(
    t: u64,
    cpu: u32,
    seq: u64,
    pid: u32,
    comm: &str,
    action: BlockAction,
    rwbs: &str,
    sector: u64,
    nsec: u64,
) -> BlockEvent {
    BlockEvent {
        time_ns: t,
        dev: DevId { major: 8, minor: 0 },
        cpu,
        seq,
        pid,
        comm: Some(comm.to_string()),
        action,
        rwbs: Rwbs::parse(rwbs).unwrap(),
        sector,
        bytes: nsec * 512,
        error: 0,
        detail: BlockDetail::None,
    }
}

/// A deterministic two-CPU trace using every action blkparse prints, with process-name notes:
/// returns the per-CPU record lists (in file order).
pub fn sample_per_cpu() -> Vec<Vec<RawTrace>> {
    use BlockAction::*;
    let mut cpus: Vec<Vec<RawTrace>> = vec![Vec::new(), Vec::new()];
    let mut seqs = [0u64; 2];
    let mut push = |cpus: &mut Vec<Vec<RawTrace>>, mut e: BlockEvent| {
        let c = e.cpu as usize;
        seqs[c] += 1;
        e.seq = seqs[c];
        cpus[c].push(RawTrace::from_event(&e));
    };
    let base = 5_000_000_000u64; // blkparse prints times relative to the first record
    cpus[0].push(RawTrace::process_name(100, "fio", 0, base, 0));
    cpus[1].push(RawTrace::process_name(200, "kworker/1:1H", 1, base + 1, 0));
    let mut t = base + 1000;
    for i in 0..40u64 {
        let cpu = (i % 2) as u32;
        let (pid, comm) = if cpu == 0 { (100, "fio") } else { (200, "kworker/1:1H") };
        let rw = if i % 3 == 0 { "R" } else { "WS" };
        let sector = 2048 + i * 8 + if i % 5 == 0 { 4096 } else { 0 };
        let mut a = ev(t, cpu, 0, pid, comm, Remap, rw, sector, 8);
        a.detail = BlockDetail::Remap { from: DevId { major: 8, minor: 1 }, from_sector: sector - 2048 };
        a.comm = None;
        push(&mut cpus, a);
        t += 100;
        push(&mut cpus, ev(t, cpu, 0, pid, comm, Queue, rw, sector, 8));
        t += 100;
        if i % 4 == 1 {
            push(&mut cpus, ev(t, cpu, 0, pid, comm, BackMerge, rw, sector + 8, 8));
            t += 50;
            push(&mut cpus, ev(t, cpu, 0, pid, comm, FrontMerge, rw, sector, 8));
            t += 50;
        }
        push(&mut cpus, ev(t, cpu, 0, pid, comm, GetRq, rw, sector, 8));
        t += 100;
        let mut p = ev(t, cpu, 0, pid, comm, Plug, "N", 0, 0);
        p.sector = 0;
        push(&mut cpus, p);
        t += 100;
        push(&mut cpus, ev(t, cpu, 0, pid, comm, Insert, rw, sector, 8));
        t += 100;
        let mut u = ev(t, cpu, 0, pid, comm, if i % 7 == 3 { UnplugTimer } else { Unplug }, "N", 0, 0);
        u.detail = BlockDetail::Unplug { depth: 1 + (i % 3) as u32 };
        push(&mut cpus, u);
        t += 100;
        push(&mut cpus, ev(t, cpu, 0, pid, comm, Issue, rw, sector, 8));
        t += 1000 + i * 37;
        if i % 9 == 4 {
            push(&mut cpus, ev(t, cpu, 0, pid, comm, Requeue, rw, sector, 8));
            t += 100;
            push(&mut cpus, ev(t, cpu, 0, pid, comm, Issue, rw, sector, 8));
            t += 100;
        }
        if i % 11 == 6 {
            let mut x = ev(t, cpu, 0, pid, comm, Split, rw, sector, 8);
            x.detail = BlockDetail::Split { new_sector: sector + 4 };
            push(&mut cpus, x);
            t += 100;
            push(&mut cpus, ev(t, cpu, 0, pid, comm, Bounce, rw, sector, 8));
            t += 100;
            push(&mut cpus, ev(t, cpu, 0, pid, comm, SleepRq, rw, sector, 8));
            t += 100;
        }
        let mut c = ev(t, 1 - cpu, 0, 0, "", Complete, rw, sector, 8);
        c.comm = None;
        c.error = if i == 13 { 5 } else { 0 };
        push(&mut cpus, c);
        t += 250;
    }
    // A flush with no data, and FUA / readahead / meta flags.
    push(&mut cpus, ev(t, 0, 0, 100, "fio", Queue, "FN", 0, 0));
    t += 100;
    push(&mut cpus, ev(t, 0, 0, 100, "fio", Queue, "WFSM", 9000, 16));
    t += 100;
    push(&mut cpus, ev(t, 1, 0, 200, "kworker/1:1H", Queue, "RA", 12000, 256));
    t += 100;
    let mut d = ev(t, 0, 0, 100, "fio", Queue, "D", 30000, 2048);
    d.comm = Some("fio".into());
    push(&mut cpus, d);
    cpus
}

/// Writes the per-CPU files `dir/base.blktrace.N`.
pub fn write_blktrace(dir: &std::path::Path, base: &str, cpus: &[Vec<RawTrace>], big_endian: bool) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (i, recs) in cpus.iter().enumerate() {
        let p = dir.join(format!("{base}.blktrace.{i}"));
        let mut bytes = Vec::new();
        for r in recs {
            bytes.extend_from_slice(&encode(r, big_endian));
        }
        std::fs::write(&p, bytes).unwrap();
        paths.push(p);
    }
    paths
}
