//! The `debug.*` names, kept for the GDB stub milestone: a call to any of them (or to any other
//! `debug.` name) answers `E_NOSYS`, and none is listed in `tools/list` so agents are not led
//! to call tools that cannot work yet. `docs/tools.md` lists the planned set.

use rpc::mcp::Reserved;

/// The planned debugger tools: attach to and detach from the kernel stub, set and clear
/// breakpoints, resume, single-step, and read registers and memory of the stopped CPU.
pub const RESERVED: Reserved = Reserved {
    prefix: "debug.",
    names: &[
        "debug.attach",
        "debug.detach",
        "debug.break",
        "debug.clear",
        "debug.continue",
        "debug.step",
        "debug.regs",
        "debug.read",
        "debug.write",
    ],
    why: "reserved for the GDB stub milestone",
};

#[cfg(test)]
mod tests;
