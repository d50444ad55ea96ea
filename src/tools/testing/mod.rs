//! Test support for the tool families: a fake machine ([`fake`]) and a client that drives the
//! real MCP server with it ([`harness`]).

pub mod fake;
pub mod harness;
