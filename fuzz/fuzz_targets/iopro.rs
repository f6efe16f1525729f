//! Any bytes through the iopro importer: see `forefront_trace_fuzz::import_all`.
#![no_main]

use forefront_trace::InputFormat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| forefront_trace_fuzz::import_all(data, InputFormat::Iopro));
