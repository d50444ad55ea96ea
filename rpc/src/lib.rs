//! HTTP/1.1, JSON-RPC 2.0 and MCP for irix7-mcp: bytes in, bytes out. No clock, no sockets, no
//! hardware — time and the peer's identity come in as arguments, so everything here is tested
//! and fuzzed on the host.
#![no_std]
#![forbid(unsafe_code)]
// A refused request's `Err` is its HTTP answer, returned a frame or two up to the connection
// that sends it: boxing it would cost every refusal an allocation, and a `Response` carries
// its header index and fixed fields inline so that answering allocates nothing.
#![allow(clippy::result_large_err)]

extern crate alloc;

pub mod http;
pub mod json;
pub mod jsonrpc;
pub mod mcp;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
