//! The real [`NewportBus`]: volatile uncached access to the REX3 window through KSEG1.

use crate::hil::newport_bus::NewportBus;
use indy::map::{REX3, kseg1};

/// Uncached, unmapped KSEG1 address of the REX3 window.
const BASE: usize = kseg1(REX3.base) as usize;
/// The window the driver uses: registers, GO aliases and configuration registers.
const WINDOW: u32 = REX3.size;

/// REX3 registers through KSEG1.
pub struct Kseg1Rex3 {
    _private: (),
}

impl Kseg1Rex3 {
    /// # Safety
    /// A Newport board answers at [`REX3`] (probe it first: an empty GIO slot bus-errors)
    /// and nothing else drives it while this bus is in use.
    pub unsafe fn new() -> Kseg1Rex3 {
        Kseg1Rex3 { _private: () }
    }

    /// The address of `off`, kept inside the window and aligned to `align`.
    fn at(off: u32, align: u32) -> usize {
        BASE + ((off % WINDOW) & !(align - 1)) as usize
    }
}

impl NewportBus for Kseg1Rex3 {
    fn read32(&mut self, off: u32) -> u32 {
        // SAFETY: inside the REX3 window, aligned; `new`'s contract says the board is there.
        unsafe { core::ptr::read_volatile(Self::at(off, 4) as *const u32) }
    }
    fn write32(&mut self, off: u32, value: u32) {
        // SAFETY: as for `read32`.
        unsafe { core::ptr::write_volatile(Self::at(off, 4) as *mut u32, value) }
    }
    fn read16(&mut self, off: u32) -> u16 {
        // SAFETY: as for `read32`.
        unsafe { core::ptr::read_volatile(Self::at(off, 2) as *const u16) }
    }
    fn write16(&mut self, off: u32, value: u16) {
        // SAFETY: as for `read32`.
        unsafe { core::ptr::write_volatile(Self::at(off, 2) as *mut u16, value) }
    }
    fn read8(&mut self, off: u32) -> u8 {
        // SAFETY: as for `read32`.
        unsafe { core::ptr::read_volatile(Self::at(off, 1) as *const u8) }
    }
    fn write8(&mut self, off: u32, value: u8) {
        // SAFETY: as for `read32`.
        unsafe { core::ptr::write_volatile(Self::at(off, 1) as *mut u8, value) }
    }
}
