//! The shared body of the text-format fuzz targets: any bytes through one importer in lenient
//! mode (so every line is tried) must not panic, and every record it yields must survive
//! statistics and Perfetto export; in strict mode every error names the file and its line and
//! stays short (a long field is abridged).

use std::io::Cursor;
use std::path::Path;

use forefront_trace::perfetto::PerfettoWriter;
use forefront_trace::stats::{FgSelector, StatsBuilder};
use forefront_trace::{InputFormat, TraceError, TraceReader};

pub fn import_all(data: &[u8], format: InputFormat) {
    let strict = TraceReader::from_reader(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec())), format, false);
    for rec in strict {
        if let Err(e) = rec {
            let msg = e.to_string();
            let line = msg.strip_prefix("fuzz:").map(|r| r.bytes().take_while(u8::is_ascii_digit).count());
            assert!(line.is_some_and(|n| n > 0) || msg.starts_with("fuzz: no trace records"), "{msg}");
            assert!(msg.len() < 600, "a {}-byte message", msg.len());
        }
    }
    let r = TraceReader::from_reader(Path::new("fuzz"), Box::new(Cursor::new(data.to_vec())), format, true);
    let mut stats = StatsBuilder::new(FgSelector::default());
    let mut out = PerfettoWriter::new(Vec::new(), FgSelector::default()).unwrap();
    for rec in r {
        // Lenient mode skips bad lines; only a line past the 1 MiB limit still ends the import.
        if let Err(TraceError::LineTooLong { .. }) = rec {
            break;
        }
        let rec = rec.expect("lenient mode yields no errors but a line too long");
        stats.add(&rec);
        out.add(&rec).unwrap();
    }
    let _ = stats.finish(format);
    let _ = out.finish().unwrap();
}
