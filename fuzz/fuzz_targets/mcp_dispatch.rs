//! The whole MCP endpoint: a request's method, header lines and body in, the response (with any
//! streamed body drained) out. Nothing may panic, whatever the era, headers or JSON.
//!
//! Input layout (see `rpc::mcp::fuzz::one_input`): `METHOD\nName: value\n…\n\nbody`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rpc::mcp::fuzz::one_input(data);
});
