//! Where everything sits in the 128 MiB of MAME's Indy (physical addresses from
//! [`indy::map::RAM_PHYS`]): the module where the rig puts it, its heap, the stand-in's own
//! data and allocations, the staging areas the Lua script delivers the image and the boot
//! environment into, what it keeps across a reset, and the mailbox. None overlap (checked below
//! at compile time).

use crate::mailbox;
use indy::map::RAM_PHYS;

/// The stand-in's `.data`, `.bss` and stack (prom.ld says the same).
pub const OWN: (u32, u32) = (RAM_PHYS + 0x4_0000, 0xC_0000);
/// The relocated module (the rig's `MODULE_OFF` and `MODULE_MAX`).
pub const MODULE: (u32, u32) = (RAM_PHYS + 0x10_0000, 0x60_0000);
/// The cell's window: code, data and stack (the rig's `CELL_OFF` and `CELL_SIZE`, where
/// `tools/cell/cell.ld` links the demo cell).
pub const CELL: (u32, u32) = (RAM_PHYS + 0x70_0000, 0x10_0000);
/// The module's heap (`heap_base`, `heap_size`).
pub const HEAP: (u32, u32) = (RAM_PHYS + 0x80_0000, 32 << 20);
/// The stand-in's allocations (the loader's working copies and symbol names).
pub const ARENA: (u32, u32) = (RAM_PHYS + 0x280_0000, 64 << 20);
/// Where the script writes the image.
pub const IMAGE: (u32, u32) = (RAM_PHYS + 0x680_0000, 15 << 20);
/// Where the script writes the cell's ELF, when the run has one.
pub const CELL_IMAGE: (u32, u32) = (RAM_PHYS + 0x770_0000, 1 << 20);
/// Where the script writes the boot environment (`key = value` lines).
pub const ENV: (u32, u32) = (RAM_PHYS + 0x780_0000, 64 << 10);
/// What the stand-in keeps across a reset it performs (`kept`): RAM its reset code and memory
/// test leave alone, and MAME's soft reset does not clear.
pub const KEPT: (u32, u32) = (RAM_PHYS + 0x7F0_0000, 0x1_0000);
/// Offsets in [`KEPT`]: the header's words (why the last boot ended, boots, its uptime, the
/// ring's head and sum, its image digest), then the previous flight region and serial ring.
pub const KEPT_MAGIC: u32 = 0x00;
pub const KEPT_BOOTS: u32 = 0x04;
pub const KEPT_UPTIME: u32 = 0x08;
pub const KEPT_RING_HEAD: u32 = 0x0C;
pub const KEPT_RING_SUM: u32 = 0x10;
pub const KEPT_SHA256: u32 = 0x20;
pub const KEPT_FLIGHT: u32 = 0x1000;
pub const KEPT_RING: u32 = 0x2000;
/// The header's word after a reset the stand-in asked for (`reset`), "I7KR".
pub const KEPT_RESET: u32 = 0x4937_4B52;
/// The header's word while a boot runs, "I7KB": found at the next boot, the machine was reset
/// some other way (MAME's own reset) and nothing was kept.
pub const KEPT_BOOTED: u32 = 0x4937_4B42;
/// The mailbox.
pub const MAILBOX: (u32, u32) = (mailbox::PHYS, 0x1_0000);

/// Every region, in address order.
pub const REGIONS: [(u32, u32); 10] = [
    OWN, MODULE, CELL, HEAP, ARENA, IMAGE, CELL_IMAGE, ENV, KEPT, MAILBOX,
];

const _: () = {
    let mut i = 1;
    while i < REGIONS.len() {
        assert!(REGIONS[i - 1].0 + REGIONS[i - 1].1 <= REGIONS[i].0);
        i += 1;
    }
    let last = REGIONS[REGIONS.len() - 1];
    assert!(last.0 + last.1 <= RAM_PHYS + crate::mc::RAM_BYTES);
    // The memory test writes a pattern at +0x40 of every MiB: clear of the header's end.
    assert!(KEPT_SHA256 + 32 <= 0x40 && KEPT.0 & 0xF_FFFF == 0);
    assert!(KEPT_FLIGHT + indy::abi::FLIGHT_REGION_SIZE <= KEPT_RING);
    assert!(KEPT_RING + indy::abi::SERIAL_RING_SIZE <= KEPT.1);
};

/// Whether `[phys, phys + len)` lies inside `region`.
pub const fn holds(region: (u32, u32), phys: u32, len: u32) -> bool {
    phys >= region.0 && (phys - region.0) as u64 + len as u64 <= region.1 as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_where_the_rig_puts_them() {
        assert_eq!(MODULE.0, 0x0810_0000);
        assert_eq!(HEAP.0, 0x0880_0000);
        assert_eq!(indy::map::kseg0(CELL.0), 0x8870_0000);
        assert!(holds(IMAGE, IMAGE.0, IMAGE.1));
        assert!(!holds(IMAGE, IMAGE.0, IMAGE.1 + 1));
        assert!(!holds(ENV, ENV.0 - 1, 1));
    }
}
