//! The shared body of the text-format fuzz targets: any bytes through one importer in lenient
//! mode (so every line is tried) must not panic, and every record it yields must survive
//! statistics and Perfetto export.

use std::io::Cursor;
use std::path::Path;

use forefront_trace::perfetto::PerfettoWriter;
use forefront_trace::stats::{FgSelector, StatsBuilder};
use forefront_trace::{InputFormat, TraceReader};

pub fn import_all(data: &[u8], format: InputFormat) {
    let r = TraceReader::from_reader(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec())), format, true);
    let mut stats = StatsBuilder::new(FgSelector::default());
    let mut out = PerfettoWriter::new(Vec::new(), FgSelector::default()).unwrap();
    for rec in r {
        let rec = rec.expect("lenient mode yields no errors");
        stats.add(&rec);
        out.add(&rec).unwrap();
    }
    let _ = stats.finish(format);
    let _ = out.finish().unwrap();
}
