//! Arbitrary bytes as the previous boot's flight region: parsed as the module parses it at
//! init. Nothing may panic, and a record believed must read back the same when written again
//! (nothing the parser accepted was misread).

#![no_main]

use irix7_mcp::services::flight::record::{RECORD_LEN, encode, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    irix7_fuzz::budget::case(|| {
        if let Ok(f) = parse(data) {
            let mut again = [0u8; RECORD_LEN];
            encode(&f, &mut again);
            assert_eq!(parse(&again).as_ref(), Ok(&f));
        }
    });
});
