//! Test support for the tool families: a fake machine ([`fake`]), a client that drives the
//! real MCP server with it ([`harness`]), and the check that its error answers are declared
//! ([`declared`]).

#[cfg(test)]
pub mod declared;
/// A machine for host tests. Its state sits behind an `Rc` the test keeps, so a test can
/// change the machine (clock, serial head, process list) and see what the tools did to it
/// (console bytes, keystrokes, resets) while the server owns the context. The fuzz crate's
/// full-path target runs the tools on it too (the `testing` feature).
pub mod fake;
#[cfg(test)]
pub mod harness;
