//! The kernel's process list, as the tools and the shell show it.

use crate::hil::platform::Machine;
use alloc::vec::Vec;
use indy::abi::ProcInfo;

/// Most processes read from the kernel in one call.
pub const PROC_MAX: usize = 256;

/// The name of an ABI process state.
pub fn state_name(state: u32) -> &'static str {
    match state {
        0 => "running",
        1 => "ready",
        2 => "sleeping",
        3 => "stopped",
        4 => "zombie",
        _ => "unknown",
    }
}

/// The process list, sorted by pid.
pub fn processes(machine: &dyn Machine) -> Vec<ProcInfo> {
    let mut list = machine.processes(PROC_MAX);
    list.truncate(PROC_MAX);
    list.sort_by_key(|p| p.pid);
    list
}
