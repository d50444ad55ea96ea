//! Raw access to physical addresses for the device tools (`mmio.*`, `mem.*`, `dma.list`), through
//! [`crate::hil::raw_bus::RawBus`].
//!
//! Registers go through uncached KSEG1, one access of the asked width. RAM goes through cached
//! KSEG0 so a read sees what the CPU wrote (the
//! R4400's data cache is write-back); after a write the caller writes the range back so a
//! device doing DMA sees it. Both windows reach physical addresses below 512 MiB only.

use crate::hil::raw_bus::{MmioError, check_register};
use indy::map::{KSEG_LIMIT, kseg0, kseg1};

/// Checks one register access and returns its KSEG1 address.
pub fn register_va(phys: u32, width: u32) -> Result<usize, MmioError> {
    check_register(phys, width)?;
    Ok(kseg1(phys) as usize)
}

/// Checks a RAM range and returns its KSEG0 address.
pub fn ram_va(phys: u32, len: usize) -> Result<usize, MmioError> {
    let end = u64::from(phys) + len as u64;
    if end > u64::from(KSEG_LIMIT) {
        return Err(MmioError::Range);
    }
    Ok(kseg0(phys) as usize)
}

/// Reads one register of `width` bytes; the value is zero-extended.
///
/// # Safety
/// `phys` must be a register that answers a read of that width (a missing device bus-errors and
/// a read may have side effects, e.g. popping a FIFO).
pub unsafe fn read(phys: u32, width: u32) -> Result<u32, MmioError> {
    let va = register_va(phys, width)?;
    // SAFETY: the address is aligned for the width and lies in KSEG1; the caller vouches that
    // the register answers.
    unsafe {
        Ok(match width {
            1 => u32::from(core::ptr::read_volatile(va as *const u8)),
            2 => u32::from(core::ptr::read_volatile(va as *const u16)),
            _ => core::ptr::read_volatile(va as *const u32),
        })
    }
}

/// Writes one register of `width` bytes (the low bits of `value`).
///
/// # Safety
/// As [`read`]; and the write may do anything the device does when written.
pub unsafe fn write(phys: u32, width: u32, value: u32) -> Result<(), MmioError> {
    let va = register_va(phys, width)?;
    // SAFETY: as in `read`.
    unsafe {
        match width {
            1 => core::ptr::write_volatile(va as *mut u8, value as u8),
            2 => core::ptr::write_volatile(va as *mut u16, value as u16),
            _ => core::ptr::write_volatile(va as *mut u32, value),
        }
    }
    Ok(())
}

/// Copies RAM at `phys` into `buf`.
///
/// # Safety
/// `phys..phys + buf.len()` must be installed RAM.
pub unsafe fn copy_from_ram(phys: u32, buf: &mut [u8]) -> Result<(), MmioError> {
    let va = ram_va(phys, buf.len())?;
    // SAFETY: the caller vouches the range is RAM; `buf` is a distinct live slice.
    unsafe { core::ptr::copy_nonoverlapping(va as *const u8, buf.as_mut_ptr(), buf.len()) };
    Ok(())
}

/// Copies `data` into RAM at `phys` and returns the KSEG0 address written, for the caller's
/// cache write-back.
///
/// # Safety
/// `phys..phys + data.len()` must be installed RAM, and overwriting it may corrupt anything
/// that lives there (the kernel, the module, its heap).
pub unsafe fn copy_to_ram(phys: u32, data: &[u8]) -> Result<*const u8, MmioError> {
    let va = ram_va(phys, data.len())?;
    // SAFETY: as above.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), va as *mut u8, data.len()) };
    Ok(va as *const u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_accesses_are_checked_before_any_access() {
        assert_eq!(register_va(0x1FB9_5018, 4), Ok(0xBFB9_5018));
        assert_eq!(register_va(0x1FBD_9837, 1), Ok(0xBFBD_9837));
        assert_eq!(register_va(0x1F0F_133A, 2), Ok(0xBF0F_133A));
        assert_eq!(register_va(0x1FB9_5019, 4), Err(MmioError::Align));
        assert_eq!(register_va(0x1FB9_5019, 2), Err(MmioError::Align));
        assert_eq!(register_va(0x1FB9_5018, 3), Err(MmioError::Width));
        assert_eq!(register_va(0x1FB9_5018, 8), Err(MmioError::Width));
        assert_eq!(register_va(0x2000_0000, 4), Err(MmioError::Range));
    }

    #[test]
    fn ram_ranges_stay_below_512_mib() {
        assert_eq!(ram_va(0x0800_1000, 92), Ok(0x8800_1000));
        assert_eq!(ram_va(0x1FFF_FFF0, 16), Ok(0x9FFF_FFF0));
        assert_eq!(ram_va(0x1FFF_FFF0, 17), Err(MmioError::Range));
        assert_eq!(ram_va(0xFFFF_FFFF, 2), Err(MmioError::Range));
    }
}
