//! Reset and power-off through the registers Linux's `arch/mips/sgi-ip22/ip22-reset.c` uses:
//! reset sets SYSINIT in the MC's CPU control 0; power-off masks the DS1386's watchdog alarm and
//! clears the power bit of the IOC2's front-panel register. MAME 0.251 stores both writes and
//! acts on neither (its MC keeps CPU control 0 as data, its IOC2 panel write only clears
//! interrupt bits), so the Lua script of `cargo xtask mame` watches for them and resets or stops
//! the machine, standing in for the missing hardware (`docs/hardware-fidelity.md`).

use indy::map::{DS1386, IOC};

pub use indy::regs::mc::CPUCTRL0;
/// CPU control 0: system init, which resets the machine (Linux's `SGIMC_CCTRL0_SYSINIT`).
pub const CPUCTRL0_SYSINIT: u32 = 0x200;

/// The IOC2 front-panel register, a byte in the last lane of its word (MAME's IOC2 register
/// 0x14, Linux's `sgioc->panel`).
pub const PANEL: u32 = IOC.base + 0x13;
/// Front panel: the power stays on while this bit is set (Linux's `SGIOC_PANEL_POWERON`).
pub const PANEL_POWERON: u8 = 0x01;

/// DS1386 register `n`: a byte in the last lane of word `n`.
pub const fn ds1386(n: u32) -> u32 {
    DS1386.base + 4 * n + 3
}
/// The DS1386 command register and its watchdog-alarm mask; the watchdog's hundredths and
/// seconds (Linux's `RTC_CMD`, `RTC_WAM`, `RTC_WHSEC`, `RTC_WSEC`).
pub const RTC_CMD: u32 = ds1386(0xB);
pub const RTC_WAM: u8 = 0x08;
pub const RTC_WHSEC: u32 = ds1386(0xC);
pub const RTC_WSEC: u32 = ds1386(0xD);

/// How long the stand-in waits for a reset or power-off write to take effect before doing
/// without it (restart at the reset vector, or halt).
pub const TAKE_EFFECT_MS: u64 = 200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_those_of_linux_and_mame() {
        assert_eq!(CPUCTRL0, 0x1FA0_0004);
        // IOC2 register 0x14 in 32-bit slots from 0x1FBD_9800, last byte lane.
        assert_eq!(PANEL, 0x1FBD_9800 + 4 * 0x14 + 3);
        assert_eq!(RTC_CMD, 0x1FBE_002F);
        assert_eq!((RTC_WHSEC, RTC_WSEC), (0x1FBE_0033, 0x1FBE_0037));
    }
}
