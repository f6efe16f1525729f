//! Import speed per format: `cargo bench -p forefront-trace --bench import` prints MB/s and
//! records/s (best of 3) for synthetic traces of about FOREFRONT_BENCH_MB megabytes (default
//! 64). The Facebook MobiGen trace is also timed when present.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use forefront_trace::{synth, InputFormat, ReadOptions, TraceReader};

fn time_import(paths: &[PathBuf], bytes: u64) -> (InputFormat, u64, f64) {
    let mut best = f64::MAX;
    let mut n = 0;
    let mut fmt = InputFormat::Auto;
    for _ in 0..3 {
        let start = Instant::now();
        let mut r = TraceReader::open(paths, &ReadOptions::default()).unwrap();
        n = r.by_ref().try_fold(0u64, |n, x| x.map(|_| n + 1)).unwrap();
        fmt = r.format();
        best = best.min(start.elapsed().as_secs_f64());
    }
    let _ = bytes;
    (fmt, n, best)
}

fn write(path: &Path, f: impl FnOnce(&mut BufWriter<std::fs::File>)) -> u64 {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    f(&mut w);
    drop(w);
    std::fs::metadata(path).unwrap().len()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing and wants speed.
    let quick = !std::env::args().any(|a| a == "--bench");
    let mb: u64 = std::env::var("FOREFRONT_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(if quick { 1 } else { 64 });
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut cases: Vec<(Vec<PathBuf>, u64)> = Vec::new();

    // blkparse lines are ~60 bytes, 5 per request.
    let evs = synth::block_events(mb * 1_000_000 / 300);
    let p = d.join("block.txt");
    let n = write(&p, |w| synth::write_blkparse(w, &evs).unwrap());
    cases.push((vec![p], n));
    let mut bin = Vec::new();
    let mut total = 0;
    for (i, bytes) in synth::blktrace_per_cpu(&evs).iter().enumerate() {
        let p = d.join(format!("block.blktrace.{i}"));
        std::fs::write(&p, bytes).unwrap();
        total += bytes.len() as u64;
        bin.push(p);
    }
    drop(evs);
    cases.push((bin, total));
    let lines = mb * 1_000_000 / 90;
    let p = d.join("strace.txt");
    let n = write(&p, |w| synth::write_strace(w, lines).unwrap());
    cases.push((vec![p], n));
    let p = d.join("mobigen.txt");
    let n = write(&p, |w| synth::write_mobigen(w, mb * 1_000_000 / 35).unwrap());
    cases.push((vec![p], n));
    let p = d.join("iopro.txt");
    let n = write(&p, |w| synth::write_iopro(w, mb * 1_000_000 / 110).unwrap());
    cases.push((vec![p], n));
    let p = d.join("ftrace.txt");
    let n = write(&p, |w| synth::write_ftrace(w, mb * 1_000_000 / 140).unwrap());
    cases.push((vec![p], n));
    let fb = PathBuf::from("/work/shared/traces/mobigen-facebook.txt");
    if fb.exists() {
        let n = std::fs::metadata(&fb).unwrap().len();
        cases.push((vec![fb], n));
    }

    println!("{:<10} {:>10} {:>12} {:>10} {:>12}", "format", "MB", "records", "MB/s", "records/s");
    for (paths, bytes) in cases {
        let (fmt, n, secs) = time_import(&paths, bytes);
        println!(
            "{:<10} {:>10.1} {:>12} {:>10.1} {:>12.0}",
            fmt.name(),
            bytes as f64 / 1e6,
            n,
            bytes as f64 / 1e6 / secs,
            n as f64 / secs
        );
    }
}
