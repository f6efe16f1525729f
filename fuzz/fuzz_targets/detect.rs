//! Format detection on any bytes: no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = forefront_trace::detect_format(data);
});
