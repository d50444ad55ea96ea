//! Newport REX3 registers (`docs/hardware.md`, "Newport"): offsets in the REX3 window
//! ([`crate::map::REX3`]) and the field values host readback uses.

use crate::map::REX3;

/// Adding this to a register's offset also executes the programmed command (its GO alias).
pub const GO: u32 = 0x800;

pub const DRAWMODE1: u32 = 0x000;
pub const DRAWMODE0: u32 = 0x004;
pub const SETUP: u32 = 0x030;
pub const XYSTARTI: u32 = 0x150;
pub const XYENDI: u32 = 0x154;
pub const WRMASK: u32 = 0x220;
pub const HOSTRW0: u32 = 0x230;
pub const DCBMODE: u32 = 0x238;
pub const DCBDATA0: u32 = 0x240;
pub const TOPSCAN: u32 = 0x1320;
pub const XYWIN: u32 = 0x1324;
pub const STATUS: u32 = 0x1338;

/// Physical address of the register at `off`.
pub const fn phys(off: u32) -> u32 {
    REX3.base + off
}

/// STATUS bits 2:0: the chip version, never 0 on a board.
pub const STATUS_VERSION: u32 = 0x07;
pub const STATUS_GFXBUSY: u32 = 0x08;
/// The display control bus is busy.
pub const STATUS_BACKBUSY: u32 = 0x10;

/// The REX3 version STATUS reports, or `None` when bits 2:0 are 0 (no board answered there).
pub const fn version(status: u32) -> Option<u32> {
    match status & STATUS_VERSION {
        0 => None,
        v => Some(v),
    }
}

/// DRAWMODE0 opcode field and its READ value.
pub const DM0_OPCODE: u32 = 0x3;
pub const DM0_READ: u32 = 0x1;
/// DRAWMODE0: fetch the rectangle from the block's corner.
pub const DM0_BLOCK: u32 = 0x4;
/// DRAWMODE0: the first GO after XYSTARTI starts at the rectangle's corner.
pub const DM0_DOSETUP: u32 = 0x20;
/// DRAWMODE0: the host reads (or writes) the pixels.
pub const DM0_CHOST: u32 = 0x40;
/// DRAWMODE0 for host readback: READ | BLOCK | DOSETUP | CHOST.
pub const DM0_READ_BLOCK: u32 = DM0_READ | DM0_BLOCK | DM0_DOSETUP | DM0_CHOST;

/// DRAWMODE1: pixels packed into host words.
pub const DM1_RWPACKED: u32 = 0x80;
/// DRAWMODE1 host depth field (bits 9:8) and its values.
pub const DM1_HD_SHIFT: u32 = 8;
pub const DM1_HD8: u32 = 1;
pub const DM1_HD32: u32 = 3;
/// DRAWMODE1 common to both readbacks: RGB/CI planes, RWPACKED, logic op SRC, prefetch.
const DM1_READ: u32 = 0x1 | DM1_RWPACKED | 0x3000_0000 | 0x0400_0000;
/// DRAWMODE1 for 8-bit pixels (DD8 | HD8): four per word, leftmost in 31:24.
pub const DM1_READ8: u32 = DM1_READ | 0x8 | (DM1_HD8 << DM1_HD_SHIFT);
/// DRAWMODE1 for 24-bit pixels (DD24 | HD32 | RGBMODE): one `0x00BBGGRR` per word.
pub const DM1_READ24: u32 = DM1_READ | 0x8018 | (DM1_HD32 << DM1_HD_SHIFT);

/// XYWIN value that makes coordinates 1:1 with VRAM.
pub const XYWIN_IDENTITY: u32 = 0x1000_1000;
/// VRAM rows; TOPSCAN rotates the display through them.
pub const VRAM_ROWS: u32 = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_status_bits_2_0() {
        assert_eq!(version(0x13), Some(3));
        assert_eq!(version(STATUS_GFXBUSY | STATUS_BACKBUSY), None);
        assert_eq!(phys(STATUS), 0x1F0F_1338);
    }

    #[test]
    fn readback_modes_are_the_reference_values() {
        assert_eq!(DM0_READ_BLOCK, 0x65);
        assert_eq!(DM1_READ8, 0x3400_0189);
        assert_eq!(DM1_READ24, 0x3400_8399);
    }
}
