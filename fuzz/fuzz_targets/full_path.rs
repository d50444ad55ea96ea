//! Bytes through the whole module: HTTP connections, the router, the MCP server and the real
//! tools on the fake machine, under the heap budget. The layout is `irix7_fuzz::full_path`'s.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The one-time setup is done before the first case is measured.
    irix7_fuzz::full_path::prepare();
    irix7_fuzz::budget::case(|| irix7_fuzz::full_path::run(data));
});
