//! The HPC3's PBUS PIO configuration, as Linux's `hpc3.h` lays it out: one register a channel
//! (HPC3 + 0x5D000, 256 bytes apart) with the channel's strobe timing, its device's width and
//! the PBUS lanes that carry its bytes. The HPC3 does not define them after reset: a PROM
//! writes them before it touches a PBUS device, and so does the stand-in (`start.rs`).
//!
//! MAME 0.251's HPC3 neither constructs nor resets these registers (`m_pio_config`), yet routes
//! every PIO access by their width and lane bits. Left as the heap gave them, about one boot in
//! five found "8-bit, even bytes on PBUS 15:8" in the IOC2's channel: the IOC2's registers,
//! the Z85C30's among them, then read 0 and ignore writes, so nothing reached the serial port
//! (`docs/hardware-fidelity.md`).

use indy::map::HPC3_PBUS;

/// PBUS PIO channel `n`'s configuration register.
pub const fn pio_cfg(n: u32) -> u32 {
    HPC3_PBUS.base + 0x5_D000 + 0x100 * n
}

/// The PBUS PIO channel of the IOC2 and the devices behind it (the Z85C30, the front panel,
/// INT3: 0x1FBD_9800 on).
pub const IOC_CHANNEL: u32 = 6;

/// PIO configuration: the device is 16 bits wide (else 8).
pub const PIOCFG_16BIT: u32 = 1 << 18;
/// PIO configuration: even-address bytes travel on PBUS 15:8 (else 7:0).
pub const PIOCFG_EVENHI: u32 = 1 << 19;
/// PIO configuration for an 8-bit device on PBUS 7:0 with the slowest strobes: P3 and P4 of
/// reads (bits 1-4, 5-8) and of writes (bits 10-13, 14-17) at 15 GIO clocks each, P2 at 2.
pub const PIOCFG_8BIT_SLOW: u32 = (0xF << 1) | (0xF << 5) | (0xF << 10) | (0xF << 14);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ioc2_channel_is_where_linux_and_mame_put_it() {
        // MAME: the PIO configuration block at HPC3 + 0x5D000, channel = (dword offset >> 6).
        assert_eq!(pio_cfg(IOC_CHANNEL), 0x1FBD_D600);
        assert_eq!(((pio_cfg(IOC_CHANNEL) - pio_cfg(0)) / 4) >> 6, IOC_CHANNEL);
        // The IOC2's registers lie in the channel's PIO data window (HPC3 + 0x58000, 1 KiB a
        // channel in MAME's decode: channel = (dword offset >> 8)).
        assert_eq!(
            ((indy::map::IOC.base - HPC3_PBUS.base - 0x5_8000) / 4) >> 8,
            IOC_CHANNEL
        );
    }

    #[test]
    fn the_configuration_is_8_bits_on_the_low_lane() {
        assert_eq!(PIOCFG_8BIT_SLOW, 0x3_FDFE);
        assert_eq!(PIOCFG_8BIT_SLOW & (PIOCFG_16BIT | PIOCFG_EVENHI), 0);
    }
}
