//! Any bytes through the blkparse importer (lenient, so every line is tried): no panic, and every
//! record it yields survives statistics and Perfetto export.
#![no_main]

use std::io::Cursor;
use std::path::Path;

use forefront_trace::perfetto::PerfettoWriter;
use forefront_trace::stats::{FgSelector, StatsBuilder};
use forefront_trace::{InputFormat, TraceReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let r = TraceReader::from_reader(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec())), InputFormat::Blkparse, true);
    let mut stats = StatsBuilder::new(FgSelector::default());
    let mut out = PerfettoWriter::new(Vec::new(), FgSelector::default()).unwrap();
    for rec in r {
        let rec = rec.expect("lenient mode yields no errors");
        stats.add(&rec);
        out.add(&rec).unwrap();
    }
    let _ = stats.finish(InputFormat::Blkparse);
    let _ = out.finish().unwrap();
});
