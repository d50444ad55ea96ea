//! The machine services the tools need, as a narrow trait: the kernel binding implements it on
//! the Indy, and host tests implement it with a fake, so tool families are tested without a
//! machine.

use crate::abi::table::{IrqInfo, MachineStatus, ProcInfo};
use crate::drivers::mmio::MmioError;
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
    /// The kernel's interrupt sources, at most `max`; `Err(E_NOSYS)` when its ABI has no
    /// `irq_list` (ABI 10).
    fn irqs(&self, max: usize) -> Result<Vec<IrqInfo>, i32>;
    /// Whether a `width`-byte read at physical `phys` answers: `Ok`, or the kernel's status
    /// (`E_NODEV` for a bus error, `E_INVAL`, `E_NOSYS` on ABI 10).
    fn bus_probe(&self, phys: u32, width: u32) -> Result<(), i32>;
    /// One register read of `width` bytes. Callers restrict `phys` to known device windows.
    fn mmio_read(&self, phys: u32, width: u32) -> Result<u32, MmioError>;
    /// One register write of `width` bytes.
    fn mmio_write(&self, phys: u32, width: u32, value: u32) -> Result<(), MmioError>;
    /// Copies RAM at `phys` into `buf`. Callers restrict the range to installed RAM.
    fn mem_read(&self, phys: u32, buf: &mut [u8]) -> Result<(), MmioError>;
    /// Copies `data` into RAM at `phys` and writes the data cache back over it.
    fn mem_write(&self, phys: u32, data: &[u8]) -> Result<(), MmioError>;
}

/// Text up to the first NUL of a fixed-size kernel string field.
pub fn c_str(bytes: &[u8]) -> &str {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    core::str::from_utf8(&bytes[..end]).unwrap_or("?")
}
