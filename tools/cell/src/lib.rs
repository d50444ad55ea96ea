//! The demo cell: a small program the kernel time-slices beside the module, so that there is
//! something worth debugging (docs/debug.md). `cell_main` calls `cell_tick` forever; each tick
//! counts in `CELL_TICKS` and folds the count into `CELL_SUM` through `cell_mix`. Writing a
//! non-zero address into `CELL_FAULT` (a debugger's memory write) makes the next round store
//! to it: an odd address is an address error, the fault a test asks for.

#![no_std]

use core::ptr::{addr_of, addr_of_mut, read_volatile, write_volatile};

/// Ticks so far.
#[unsafe(no_mangle)]
pub static mut CELL_TICKS: u32 = 0;
/// A running mix of the ticks.
#[unsafe(no_mangle)]
pub static mut CELL_SUM: u32 = 0;
/// Where to store on request (0: nowhere).
#[unsafe(no_mangle)]
pub static mut CELL_FAULT: u32 = 0;

/// One step of the mix: a call with arguments and a result, for `bt`, `finish` and `next`.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn cell_mix(sum: u32, tick: u32) -> u32 {
    sum.rotate_left(5) ^ tick.wrapping_mul(0x9E37_79B9)
}

/// One tick: count it and mix it in.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn cell_tick() -> u32 {
    // SAFETY: the cell is one thread; a debugger may write these words while it is stopped,
    // hence the volatile accesses.
    unsafe {
        let tick = read_volatile(addr_of!(CELL_TICKS)).wrapping_add(1);
        write_volatile(addr_of_mut!(CELL_TICKS), tick);
        let sum = cell_mix(read_volatile(addr_of!(CELL_SUM)), tick);
        write_volatile(addr_of_mut!(CELL_SUM), sum);
        tick
    }
}

/// The requested fault: a store to `at`.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn cell_fault(at: u32) {
    // SAFETY: none: this is the fault the debugger asked for (an odd address is an address
    // error, which the kernel turns into a stop of the cell).
    unsafe { write_volatile(at as usize as *mut u32, 0xDEAD_BEEF) }
}

/// The entry point: tick forever, faulting when asked.
#[unsafe(no_mangle)]
pub extern "C" fn cell_main() -> ! {
    loop {
        cell_tick();
        // SAFETY: see `cell_tick`.
        let at = unsafe { read_volatile(addr_of!(CELL_FAULT)) };
        if at != 0 {
            cell_fault(at);
        }
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
