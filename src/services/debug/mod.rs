//! The cell debugger (docs/debug.md): a debugging session of one of the kernel's contexts
//! (ABI 15) with software breakpoints and stepping ([`session`], [`next_pc`]), and GDB's remote
//! protocol over it ([`rsp`], through gdbstub with the project's own big-endian MIPS
//! registers, [`arch`], [`target`]). Written against `hil::debug::Contexts`; host-tested over
//! a simulated cell.

pub mod arch;
pub mod debugger;
pub mod next_pc;
pub mod rsp;
pub mod session;
pub mod target;

/// A simulated cell, for the host tests and the fuzz target.
#[cfg(any(test, feature = "testing"))]
pub mod fake;
#[cfg(test)]
mod tests;
