//! The request body reader (`rpc/src/json/read.rs`) against serde_json on the same text:
//! every value serde_json reads must be read the same, and nothing serde_json refuses may be
//! read as a value. The reader may refuse more (nesting past 32 levels, more than 4096 values)
//! and calls well-formed text no `Value` holds (`1e999`, half a surrogate pair) unreadable.
//! A value read is also copied into an object by `ObjectWriter`, whose record must read the same.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let ours = rpc::json::fuzz_value(text);
    match serde_json::from_str::<Value>(text) {
        Ok(theirs) => match ours {
            Ok(Some(v)) => assert_eq!(v, theirs, "{text:?}"),
            Err("deep" | "many") => {}
            other => panic!("serde_json reads {text:?}, the reader says {other:?}"),
        },
        Err(e) => match ours {
            Err(_) | Ok(None) => {}
            Ok(Some(v)) => panic!("serde_json refuses {text:?} ({e}), the reader reads {v}"),
        },
    }
});
