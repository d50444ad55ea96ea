//! A boot PROM for MAME's Indy (`indy_4610`), written by the project because no SGI PROM may be
//! shipped or fetched. MAME accepts a PROM file of the right name and size whatever its
//! checksum, so `cargo xtask mame` links this crate to run from the reset vector (KSEG1
//! 0xBFC00000, uncached) and writes it where MAME looks for `ip24prom.070-9101-011.bin`.
//!
//! What it does at reset (`start`, the target-only part, with `io` for registers and console): set
//! Status and Config, clear the cache tags, set up a stack in RAM, describe the RAM to the memory
//! controller ([`mc`]), program the Z85C30's channel B as the console ([`scc`]), check the RAM, and
//! print its banner on the console and in a RAM mailbox the Lua script reads ([`mailbox`]). Then it
//! is the kernel stand-in (`kernel`): it asks the script for the product image and the boot
//! environment, verifies and relocates the image with the rig's loader, and runs the module on the
//! ABI of `docs/abi.md`. The host build keeps the numbers and encodings, which the unit tests and
//! `cargo xtask mame` use.

#![no_std]
// Inline assembly on MIPS is unstable; the image build (RUSTC_BOOTSTRAP) allows it.
#![cfg_attr(target_arch = "mips", feature(asm_experimental_arch))]

extern crate alloc;

pub mod boot_env;
pub mod clock;
pub mod layout;
pub mod mailbox;
pub mod mc;
pub mod newport;
pub mod pbus;
pub mod power;
pub mod scc;

#[cfg(target_os = "none")]
mod arena;
#[cfg(target_os = "none")]
mod cell;
#[cfg(target_os = "none")]
mod io;
#[cfg(target_os = "none")]
mod kept;
#[cfg(target_os = "none")]
mod kernel;
#[cfg(target_os = "none")]
mod newport_init;
#[cfg(target_os = "none")]
mod ram;
#[cfg(target_os = "none")]
mod start;

/// The first words of the banner, what `cargo xtask mame` waits for on both console paths.
pub const BANNER: &str = "irix7-mame-prom";

/// Lowercase hex of `v`, eight digits, into `out`.
pub fn hex32(v: u32, out: &mut [u8; 8]) {
    for (i, o) in out.iter_mut().enumerate() {
        let nib = (v >> (28 - 4 * i)) & 0xF;
        *o = b"0123456789abcdef"[nib as usize];
    }
}

/// Decimal of `v` into the end of `out`; returns where the digits start.
pub fn dec32(mut v: u32, out: &mut [u8; 10]) -> usize {
    let mut i = out.len();
    loop {
        i -= 1;
        out[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_decimal() {
        let mut h = [0; 8];
        hex32(0x2F20_2F30, &mut h);
        assert_eq!(&h, b"2f202f30");
        let mut d = [0; 10];
        let at = dec32(128, &mut d);
        assert_eq!(&d[at..], b"128");
        let at = dec32(0, &mut d);
        assert_eq!(&d[at..], b"0");
        let at = dec32(u32::MAX, &mut d);
        assert_eq!(&d[at..], b"4294967295");
    }
}
