//! The whole MCP endpoint: up to eight requests (method, header lines, body) against one
//! server, each response (with any streamed body drained) out. Nothing may panic, whatever the
//! era, headers, JSON or order of requests.
//!
//! Input layout (see `rpc::mcp::fuzz::one_input`): `METHOD\nName: value\n…\n\nbody`, requests
//! separated by `\n--\n`; `$SID` in a header value is the session the last `initialize` opened.
//! Each case runs under the heap budget (`irix7_fuzz::budget`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    irix7_fuzz::budget::case(|| rpc::mcp::fuzz::one_input(data));
});
