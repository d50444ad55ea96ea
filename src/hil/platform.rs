//! The machine services the kernel provides, split by concern so that code can ask for just the
//! part it needs: the kernel binding implements them on the Indy, host tests with a fake.
//! Raw physical memory and register access is not here: it is [`crate::hil::raw_bus::RawBus`],
//! which only the device tools are handed.

use alloc::vec::Vec;
use indy::abi::{ImageInfo, IrqInfo, MachineStatus, ProcInfo};

/// What the machine is and how long it has been up.
pub trait Machine {
    /// Monotonic milliseconds since boot.
    fn clock_ms(&self) -> u64;
    /// The kernel's machine status block.
    fn machine_status(&self) -> MachineStatus;
    /// The process list, at most `max` entries.
    fn processes(&self, max: usize) -> Vec<ProcInfo>;
    /// The kernel's interrupt sources, at most `max`; `Err(E_NOSYS)` when its ABI has no
    /// `irq_list` (ABI 10).
    fn irqs(&self, max: usize) -> Result<Vec<IrqInfo>, i32>;
    /// The running image's digest and the last deploy's outcome; `None` when the kernel's ABI
    /// has no `image_info` (before 12).
    fn image_info(&self) -> Option<ImageInfo>;
}

/// The console: output, the kernel's serial ring, keyboard input.
pub trait Console {
    /// Writes bytes to the console and the serial ring.
    fn console_write(&self, bytes: &[u8]);
    /// The serial ring's size in bytes.
    fn serial_ring_size(&self) -> usize;
    /// Copies the serial ring's bytes from index `at` into `out`, going on at index 0 past the
    /// ring's end. A copy, not a view: the kernel changes the ring under any reference, and
    /// may write during the copy (`services::serial_ring` deals with that).
    fn serial_ring_copy(&self, at: usize, out: &mut [u8]);
    /// The absolute count of bytes ever written to the serial ring.
    fn serial_head(&self) -> u32;
    /// Queues keystrokes on the console input; returns how many were taken.
    fn console_input(&self, bytes: &[u8]) -> usize;
}

/// Reset and power-off.
pub trait Power {
    /// Resets the machine (on the rig: a reboot that reloads the image).
    fn reset(&self);
    /// Powers the machine off.
    fn poweroff(&self);
}

/// Everything above, for the code that holds the whole machine (the tool context).
pub trait Platform: Machine + Console + Power {}

impl<T: Machine + Console + Power + ?Sized> Platform for T {}

/// Text up to the first NUL of a fixed-size kernel string field.
pub fn c_str(bytes: &[u8]) -> &str {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    core::str::from_utf8(&bytes[..end]).unwrap_or("?")
}
