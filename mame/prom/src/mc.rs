//! The memory controller's memory configuration registers (MEMCFG0/1): each 16-bit half
//! describes one bank (base address, size, valid, two sub-banks). The PROM writes them before
//! using RAM, as on an Indy. MAME's Indy maps 128 MiB at 0x0800_0000 whatever they say, but
//! corrupts every write once they claim banks 2/3 or a bank of two sub-banks (its way of making
//! SGI's memory sizing find 128 MiB), so the stand-in describes two single-sub-bank 64 MiB banks.

use indy::map::{MC, RAM_PHYS};

/// MEMCFG0 (banks 0 and 1) and MEMCFG1 (banks 2 and 3): word registers in 64-bit slots.
pub const MEMCFG0: u32 = MC.base + 0xC4;
pub const MEMCFG1: u32 = MC.base + 0xCC;

/// A bank half-word's valid bit.
pub const BANK_VALID: u16 = 0x2000;
/// Two sub-banks in the bank (MAME refuses it: see the module comment).
pub const BANK_SUBBANKS: u16 = 0x4000;

/// The RAM MAME's Indy has (it supports no more).
pub const RAM_BYTES: u32 = 128 << 20;
/// One bank's size.
pub const BANK_BYTES: u32 = 64 << 20;

/// One bank's half-word: base in 4 MiB units (bits 7:0), size in 4 MiB units minus one
/// (bits 12:8), valid. `None` for a base or size the register cannot say.
pub const fn bank(base: u32, size: u32) -> Option<u16> {
    const UNIT: u32 = 4 << 20;
    if !base.is_multiple_of(UNIT) || size == 0 || !size.is_multiple_of(UNIT) {
        return None;
    }
    let (b, s) = (base / UNIT, size / UNIT - 1);
    if b > 0xFF || s > 0x1F {
        return None;
    }
    Some(BANK_VALID | (s as u16) << 8 | b as u16)
}

/// MEMCFG0: bank 0 at RAM's base, bank 1 right above it (bank 0 in the upper half).
pub const fn memcfg0() -> u32 {
    let (Some(b0), Some(b1)) = (
        bank(RAM_PHYS, BANK_BYTES),
        bank(RAM_PHYS + BANK_BYTES, BANK_BYTES),
    ) else {
        return 0;
    };
    (b0 as u32) << 16 | b1 as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_64_mib_banks_from_0x0800_0000() {
        assert_eq!(MEMCFG0, 0x1FA0_00C4);
        assert_eq!(memcfg0(), 0x2F20_2F30);
        // MAME corrupts writes when bank 0 or 1 claims two sub-banks.
        assert_eq!(memcfg0() & 0x4000_4000, 0);
        assert_eq!(2 * BANK_BYTES, RAM_BYTES);
    }

    #[test]
    fn refuses_what_the_register_cannot_say() {
        assert_eq!(bank(0x0800_1000, 4 << 20), None);
        assert_eq!(bank(0x0800_0000, 0), None);
        assert_eq!(bank(0x0800_0000, 256 << 20), None);
        assert_eq!(bank(0x4000_0000, 4 << 20), None);
        assert_eq!(bank(0, 4 << 20), Some(0x2000));
    }
}
