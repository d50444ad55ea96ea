//! The rig's memory map: where the kernel puts the ABI table, the serial ring, the stubs, the
//! kernel stack, the module and its heap. One place, so `docs/rig.md` and the code agree.
//!
//! Everything lives in RAM at [`RAM_PHYS`] (as on the Indy) and is handed to the module as KSEG0
//! addresses, because the module runs in KSEG0 like a kernel.

use indy::map::{RAM_ALIAS_SIZE, RAM_PHYS, kseg0};

/// Default RAM size in MiB (an Indy shipped with 32–256 MiB).
pub const DEFAULT_RAM_MIB: u32 = 64;
/// Smallest RAM the map below fits in.
pub const MIN_RAM_MIB: u32 = 16;
/// Largest RAM at [`RAM_PHYS`]: the low RAM window's end (256 MiB).
pub const MAX_RAM_MIB: u32 = indy::map::LOW_RAM_MAX >> 20;

/// Offsets from `RAM_PHYS` of the kernel's data the module may read.
pub const ABI_TABLE_OFF: u32 = 0x1000;
pub const STATUS_OFF: u32 = 0x1100;
/// The running image's digest and the last deploy's outcome (`image_info`, ABI 12).
pub const IMAGE_INFO_OFF: u32 = 0x1140;
pub const SERIAL_HEAD_OFF: u32 = 0x1200;
/// The count of context stops the module polls (`ctx_events`, ABI 15).
pub const CTX_EVENTS_OFF: u32 = 0x1210;
/// Why this boot happened and where the previous boot's survivors are (`boot_info`, ABI 13).
pub const BOOT_INFO_OFF: u32 = 0x1300;
/// Process list scratch is not needed (the module passes its own buffer); kept free.
pub const SERIAL_RING_OFF: u32 = 0x2000;
/// One 8-byte stub per ABI function; a code hook on this range implements them.
pub const STUB_OFF: u32 = 0x4000;
pub const STUB_SLOT: u32 = 8;
pub const STUB_COUNT: u32 = 32;
/// Where guest calls return to: `emu_start` stops when the PC reaches it.
pub const RETURN_SENTINEL_OFF: u32 = 0x4F00;
/// The hang hook's endless loop (`Rig::hang_next_call`): nops and a branch back, long enough
/// that the per-block instruction hook runs rarely while the guest spins.
pub const HANG_LOOP_OFF: u32 = 0x5000;
pub const HANG_LOOP_WORDS: u32 = 256;
/// One `break` word: the trap hook (`Rig::trap_next_call`) starts the next guest call here, as a
/// module that panicked (a `break` trap in the image) would stop.
pub const TRAP_OFF: u32 = 0x5400;
/// Where a cell returns to from its entry point (`break`): the rig sees it exit there.
pub const CELL_EXIT_OFF: u32 = 0x5410;
/// What survives a warm reset: the previous boot's serial ring (8 KiB) and flight region, and
/// this boot's flight region (4 KiB each). Zeroed at power-on only.
pub const PREV_RING_OFF: u32 = 0x6000;
pub const PREV_FLIGHT_OFF: u32 = 0x8000;
pub const FLIGHT_OFF: u32 = 0x9000;
/// Where the rig's own calls of kernel functions (`Rig::kernel_call`, tests) put their buffers.
pub const HOST_SCRATCH_OFF: u32 = 0x1_0000;
pub const HOST_SCRATCH_SIZE: u32 = 0x2000;
/// An unmapped page under the kernel stack, so an overflow is a clear guest crash.
pub const STACK_GUARD_OFF: u32 = 0x3_F000;
pub const STACK_GUARD_SIZE: u32 = 0x1000;
/// The kernel stack the module runs on (256 KiB, grows down from `STACK_TOP_OFF`).
pub const STACK_BOTTOM_OFF: u32 = 0x4_0000;
pub const STACK_TOP_OFF: u32 = 0x8_0000;
/// The module area: sections are placed here by the loader.
pub const MODULE_OFF: u32 = 0x10_0000;
pub const MODULE_MAX: u32 = 0x60_0000;
/// The cell window (`--cell`, docs/debug.md): a debuggable program the kernel time-slices
/// beside the module, linked at its KSEG0 address, its stack at the window's top.
pub const CELL_OFF: u32 = 0x70_0000;
pub const CELL_SIZE: u32 = 0x10_0000;
/// The module heap starts here and runs to the end of RAM.
pub const HEAP_OFF: u32 = 0x80_0000;

/// A 32-bit guest address as Unicorn's 64-bit MIPS core sees it (sign-extended).
pub const fn sext(va: u32) -> u64 {
    va as i32 as i64 as u64
}

/// KSEG0 address of an offset into RAM.
pub const fn ram_va(off: u32) -> u32 {
    kseg0(RAM_PHYS + off)
}

// The regions above must not overlap and must fit the smallest RAM.
const _: () = {
    use indy::abi::{ABI_TABLE_SIZE, SERIAL_RING_SIZE};
    assert!(STATUS_OFF >= ABI_TABLE_OFF + ABI_TABLE_SIZE);
    assert!(IMAGE_INFO_OFF >= STATUS_OFF + 40);
    assert!(SERIAL_HEAD_OFF >= IMAGE_INFO_OFF + 68);
    assert!(CTX_EVENTS_OFF >= SERIAL_HEAD_OFF + 4);
    assert!(BOOT_INFO_OFF >= CTX_EVENTS_OFF + 4);
    assert!(BOOT_INFO_OFF + 204 <= SERIAL_RING_OFF);
    assert!(HANG_LOOP_OFF + HANG_LOOP_WORDS * 4 <= TRAP_OFF);
    assert!(TRAP_OFF + 4 <= CELL_EXIT_OFF);
    assert!(CELL_EXIT_OFF + 4 <= PREV_RING_OFF);
    assert!(PREV_RING_OFF + SERIAL_RING_SIZE <= PREV_FLIGHT_OFF);
    assert!(PREV_FLIGHT_OFF + indy::abi::FLIGHT_REGION_SIZE <= FLIGHT_OFF);
    assert!(FLIGHT_OFF + indy::abi::FLIGHT_REGION_SIZE <= HOST_SCRATCH_OFF);
    assert!(HOST_SCRATCH_OFF + HOST_SCRATCH_SIZE <= STACK_GUARD_OFF);
    assert!(SERIAL_RING_OFF + SERIAL_RING_SIZE <= STUB_OFF);
    assert!(STUB_OFF + STUB_SLOT * STUB_COUNT <= RETURN_SENTINEL_OFF);
    assert!(RETURN_SENTINEL_OFF + 4 <= HANG_LOOP_OFF);
    assert!(STACK_GUARD_OFF + STACK_GUARD_SIZE == STACK_BOTTOM_OFF);
    assert!(STACK_TOP_OFF <= MODULE_OFF);
    assert!(MODULE_OFF + MODULE_MAX <= CELL_OFF);
    assert!(CELL_OFF + CELL_SIZE <= HEAP_OFF);
    assert!(HEAP_OFF < MIN_RAM_MIB << 20);
    assert!(STACK_BOTTOM_OFF < RAM_ALIAS_SIZE);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_extension() {
        assert_eq!(sext(0x8800_0000), 0xFFFF_FFFF_8800_0000);
        assert_eq!(sext(0x0800_0000), 0x0800_0000);
    }
}
