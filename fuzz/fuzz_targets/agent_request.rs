//! The agent's control protocol: any bytes through the request parser and validator
//! (`forefront_agent::proto::parse`, what the socket runs on every authorised line) must not
//! panic, and whatever it accepts must hold the validator's promises (see
//! `forefront_agent::proto::accepted_invariants`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = forefront_agent::proto::parse(data) {
        if let Err(why) = forefront_agent::proto::accepted_invariants(&req) {
            panic!("accepted {:?} but {why}", String::from_utf8_lossy(data));
        }
    }
});
