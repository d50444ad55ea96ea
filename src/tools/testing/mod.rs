//! Test support for the tool families: a fake machine ([`fake`]) and a client that drives the
//! real MCP server with it ([`harness`]).

/// A machine for host tests. Its state sits behind an `Rc` the test keeps, so a test can
/// change the machine (clock, serial head, process list) and see what the tools did to it
/// (console bytes, keystrokes, resets) while the server owns the context.
///
/// The file has no inner attributes: the fuzz crate includes it as is (`fuzz/src/lib.rs`), so
/// its full-path target runs the tools on this very machine.
pub mod fake;
pub mod harness;
