//! The PROM's register access and console output, the leaf every target-only part uses: device
//! registers through uncached KSEG1, bytes to the Z85C30's channel B and the mailbox's ring, the
//! mailbox's state word.

use crate::{dec32, hex32, mailbox};
use core::ptr::{read_volatile, write_volatile};
use indy::map::kseg1;
use indy::regs::z85c30::{CTRL_B, DATA_B, RR0_TX_EMPTY};

pub(crate) fn w8(phys: u32, v: u8) {
    // SAFETY: `phys` is a device register of the Indy's map, reached uncached through KSEG1.
    unsafe { write_volatile(kseg1(phys) as *mut u8, v) }
}

pub(crate) fn r8(phys: u32) -> u8 {
    // SAFETY: as in `w8`.
    unsafe { read_volatile(kseg1(phys) as *const u8) }
}

pub(crate) fn w16(phys: u32, v: u16) {
    // SAFETY: as in `w8`.
    unsafe { write_volatile(kseg1(phys) as *mut u16, v) }
}

pub(crate) fn w32(phys: u32, v: u32) {
    // SAFETY: a register or RAM word of the Indy's map, uncached.
    unsafe { write_volatile(kseg1(phys) as *mut u32, v) }
}

pub(crate) fn r32(phys: u32) -> u32 {
    // SAFETY: as in `w32`.
    unsafe { read_volatile(kseg1(phys) as *const u32) }
}

/// Bounded wait for the transmitter: a dead SCC must not hang the PROM.
fn scc_put(b: u8) {
    for _ in 0..100_000 {
        if r8(CTRL_B) & RR0_TX_EMPTY != 0 {
            break;
        }
    }
    w8(DATA_B, b);
}

fn mbox_put(b: u8) {
    let head = r32(mailbox::PHYS + mailbox::HEAD);
    w8(mailbox::PHYS + mailbox::RING + head % mailbox::RING_SIZE, b);
    w32(mailbox::PHYS + mailbox::HEAD, head.wrapping_add(1));
}

pub(crate) fn puts(s: &[u8]) {
    for &b in s {
        if b == b'\n' {
            scc_put(b'\r');
        }
        scc_put(b);
        mbox_put(b);
    }
}

pub(crate) fn put_hex(v: u32) {
    let mut h = [0; 8];
    hex32(v, &mut h);
    puts(&h);
}

pub(crate) fn put_dec(v: u32) {
    let mut d = [0; 10];
    let at = dec32(v, &mut d);
    puts(&d[at..]);
}

/// Sets the mailbox's state word.
pub(crate) fn set_state(state: u32) {
    w32(mailbox::PHYS + mailbox::STATE, state);
}

/// Lets the last byte leave the shift register before the script may stop MAME.
pub(crate) fn flush_and_set(state: u32) {
    for _ in 0..2 {
        scc_put(0);
    }
    set_state(state);
}

/// Stops here for good: the mailbox says why, and the script stops MAME.
pub(crate) fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}
