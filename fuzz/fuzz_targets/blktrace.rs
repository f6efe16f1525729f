//! Any bytes as a binary blktrace file: records decode or fail with an error, never a panic.
#![no_main]

use forefront_trace::blktrace::{decode, FileReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = FileReader::new("fuzz".into(), data);
    while let Some(rec) = r.read_raw() {
        match rec {
            Ok(raw) => {
                let _ = decode(&raw);
            }
            Err(_) => break,
        }
    }
});
