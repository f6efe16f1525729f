//! Writes a synthetic trace, or times an import (used by `scripts/bench-import`).
//!
//! ```text
//! gen_trace blkparse REQUESTS OUT.txt
//! gen_trace blktrace REQUESTS DIR/BASE      (writes BASE.blktrace.0 and .1)
//! gen_trace import FILE...                  (prints records, MB and MB/s)
//! ```

use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;

use forefront_trace::{synth, ReadOptions, TraceReader};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("blkparse") => {
            let evs = synth::block_events(args[1].parse().unwrap());
            let mut w = BufWriter::new(std::fs::File::create(&args[2]).unwrap());
            synth::write_blkparse(&mut w, &evs).unwrap();
        }
        Some("blktrace") => {
            let evs = synth::block_events(args[1].parse().unwrap());
            for (i, bytes) in synth::blktrace_per_cpu(&evs).iter().enumerate() {
                std::fs::write(format!("{}.blktrace.{i}", args[2]), bytes).unwrap();
            }
        }
        Some("import") => {
            let paths: Vec<PathBuf> = args[1..].iter().map(PathBuf::from).collect();
            let mut bytes = 0u64;
            for p in &paths {
                bytes += std::fs::metadata(p).map(|m| m.len()).unwrap_or_else(|_| {
                    forefront_trace::blktrace::per_cpu_files(p).unwrap().iter().map(|f| std::fs::metadata(f).unwrap().len()).sum()
                });
            }
            let start = Instant::now();
            let mut r = TraceReader::open(&paths, &ReadOptions::default()).unwrap();
            let n = r.by_ref().try_fold(0u64, |n, x| x.map(|_| n + 1)).unwrap();
            let s = start.elapsed().as_secs_f64();
            println!(
                "{} {} records {:.1} MB in {:.3} s = {:.1} MB/s",
                r.format().name(),
                n,
                bytes as f64 / 1e6,
                s,
                bytes as f64 / 1e6 / s
            );
        }
        _ => {
            eprintln!("usage: gen_trace blkparse|blktrace REQUESTS OUT | gen_trace import FILE...");
            std::process::exit(2);
        }
    }
}
