//! The memory controller's registers the module and rig touch (`docs/hardware.md`, "MC
//! watchdog"): CPU control and the watchdog, the one that resets an Indy.

use crate::map::MC;

/// CPU control 0; [`CPUCTRL0_WATCHDOG`] enables the watchdog.
pub const CPUCTRL0: u32 = MC.base + 0x04;
/// Watchdog counter: any write restarts it; it reads as the ticks since.
pub const WATCHDOG: u32 = MC.base + 0x14;

/// CPUCTRL0 bit that enables the watchdog.
pub const CPUCTRL0_WATCHDOG: u32 = 0x100;
/// The watchdog counts this many microseconds per tick.
pub const WATCHDOG_TICK_US: u64 = 64;
/// The watchdog fires when its 20-bit counter overflows.
pub const WATCHDOG_TICKS: u64 = 1 << 20;
/// Milliseconds from the last kick to the reset: about 67 s, fixed.
pub const WATCHDOG_PERIOD_MS: u64 = WATCHDOG_TICKS * WATCHDOG_TICK_US / 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_is_about_67_seconds() {
        assert_eq!(WATCHDOG_PERIOD_MS, 67_108);
        assert_eq!(WATCHDOG, 0x1FA0_0014);
    }
}
