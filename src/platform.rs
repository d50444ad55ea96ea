//! The machine services the tools need, as a narrow trait: the kernel binding implements it on
//! the Indy, and host tests implement it with a fake, so tool families are tested without a
//! machine.

use crate::abi::table::{MachineStatus, ProcInfo};
use alloc::vec::Vec;

pub trait Platform {
    /// Monotonic milliseconds since boot.
    fn clock_ms(&self) -> u64;
    /// The kernel's machine status block.
    fn machine_status(&self) -> MachineStatus;
    /// Writes bytes to the console and the serial ring.
    fn console_write(&self, bytes: &[u8]);
    /// The serial ring and the absolute count of bytes ever written to it.
    fn serial_ring(&self) -> (&[u8], u32);
    /// The process list, at most `max` entries.
    fn processes(&self, max: usize) -> Vec<ProcInfo>;
    /// Queues keystrokes on the console input; returns how many were taken.
    fn console_input(&self, bytes: &[u8]) -> usize;
    /// Resets the machine (on the rig: a reboot that reloads the image).
    fn reset(&self);
    /// Powers the machine off.
    fn poweroff(&self);
}

/// Text up to the first NUL of a fixed-size kernel string field.
pub fn c_str(bytes: &[u8]) -> &str {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    core::str::from_utf8(&bytes[..end]).unwrap_or("?")
}
