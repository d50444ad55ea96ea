//! What the board can offer the DRBG (`services::entropy`) that nobody on the network sees:
//! the R4400's CP0 Count register (it advances every other pipeline clock, ~50 MHz on a
//! 100 MHz R4400) read around uncached device reads, whose latency depends on the GIO bus
//! arbitration and the state of the devices; the DS1386's hundredths of a second; the clock.
//! docs/security.md ("Entropy") says how much each is worth, on an Indy and in the rig.

use crate::board::kernel::Kernel;
use alloc::vec::Vec;
use indy::map::{DS1386, kseg1};

/// Count samples taken at boot (each around one uncached read).
const BOOT_SAMPLES: usize = 64;

/// The CP0 Count register.
#[cfg(target_arch = "mips")]
pub fn count() -> u32 {
    let c: u32;
    // SAFETY: `mfc0` of Count ($9) reads a free-running counter: no side effect, no memory
    // access. The module runs in kernel mode, where CP0 is always usable.
    unsafe {
        core::arch::asm!("mfc0 $8, $9", "nop", out("$8") c, options(nomem, nostack, preserves_flags));
    }
    c
}

/// One uncached read of the DS1386's first clock register (hundredths of a second). Reading
/// the clock registers has no side effect; the value and the time the read takes both vary.
fn rtc_hundredths() -> u32 {
    // SAFETY: the DS1386 window is the board's, always present on an Indy (the kernel reads
    // the clock from it), and a 4-byte read of its first register is allowed (`indy::map`).
    unsafe { core::ptr::read_volatile(kseg1(DS1386.base) as *const u32) }
}

/// The boot samples: the clock and wall time, then Count before and after each of
/// [`BOOT_SAMPLES`] uncached DS1386 reads (the deltas carry the jitter), with the values read.
pub fn boot_samples(kernel: Kernel) -> Vec<u64> {
    let machine = kernel.machine_status();
    let mut out = Vec::with_capacity(BOOT_SAMPLES + 2);
    out.push(kernel.clock_ms());
    out.push(u64::from(machine.unix_time) << 32 | u64::from(machine.uptime_ms));
    for _ in 0..BOOT_SAMPLES {
        let before = count();
        let rtc = rtc_hundredths();
        let after = count();
        out.push(
            u64::from(after.wrapping_sub(before)) << 32 ^ u64::from(after) ^ u64::from(rtc) << 40,
        );
    }
    out
}

/// One sample for an event whose timing the network decides (a poll that moved frames).
pub fn event_sample(kernel_clock_ms: u64) -> u64 {
    u64::from(count()) ^ kernel_clock_ms << 32
}
