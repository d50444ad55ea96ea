//! Where everything sits in the 128 MiB of MAME's Indy (physical addresses from
//! [`indy::map::RAM_PHYS`]): the module where the rig puts it, its heap, the stand-in's own
//! data and allocations, the staging areas the Lua script delivers the image and the boot
//! environment into, and the mailbox. None overlap (checked below at compile time).

use crate::mailbox;
use indy::map::RAM_PHYS;

/// The stand-in's `.data`, `.bss` and stack (prom.ld says the same).
pub const OWN: (u32, u32) = (RAM_PHYS + 0x4_0000, 0xC_0000);
/// The relocated module (the rig's `MODULE_OFF` and `MODULE_MAX`).
pub const MODULE: (u32, u32) = (RAM_PHYS + 0x10_0000, 0x70_0000);
/// The module's heap (`heap_base`, `heap_size`).
pub const HEAP: (u32, u32) = (RAM_PHYS + 0x80_0000, 32 << 20);
/// The stand-in's allocations (the loader's working copies and symbol names).
pub const ARENA: (u32, u32) = (RAM_PHYS + 0x280_0000, 64 << 20);
/// Where the script writes the image.
pub const IMAGE: (u32, u32) = (RAM_PHYS + 0x680_0000, 16 << 20);
/// Where the script writes the boot environment (`key = value` lines).
pub const ENV: (u32, u32) = (RAM_PHYS + 0x780_0000, 64 << 10);
/// The mailbox.
pub const MAILBOX: (u32, u32) = (mailbox::PHYS, 0x1_0000);

/// Every region, in address order.
pub const REGIONS: [(u32, u32); 7] = [OWN, MODULE, HEAP, ARENA, IMAGE, ENV, MAILBOX];

const _: () = {
    let mut i = 1;
    while i < REGIONS.len() {
        assert!(REGIONS[i - 1].0 + REGIONS[i - 1].1 <= REGIONS[i].0);
        i += 1;
    }
    let last = REGIONS[REGIONS.len() - 1];
    assert!(last.0 + last.1 <= RAM_PHYS + crate::mc::RAM_BYTES);
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
        assert!(holds(IMAGE, IMAGE.0, IMAGE.1));
        assert!(!holds(IMAGE, IMAGE.0, IMAGE.1 + 1));
        assert!(!holds(ENV, ENV.0 - 1, 1));
    }
}
