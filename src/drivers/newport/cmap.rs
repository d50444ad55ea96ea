//! Colour-map reads, the X driver's `newport_cmap.c` sequence: the entry's index as a halfword
//! to CRS 0 of CMAP0, then a 3-byte read from CRS 2 (R in 31:24, G 23:16, B 15:8).

use super::dcb;
use super::regs::*;
use crate::hil::framebuffer::FbError;
use crate::hil::newport_bus::NewportBus;

const BASE: u32 = dcb_slave(SLAVE_CMAP0) | CMAP_PROTOCOL;

/// RGB of entries `first .. first + out.len()`.
pub fn read<B: NewportBus>(bus: &mut B, first: u16, out: &mut [[u8; 3]]) -> Result<(), FbError> {
    if u32::from(first) + out.len() as u32 > CMAP_ENTRIES || out.len() > CMAP_ENTRIES as usize {
        return Err(FbError::OutOfRange);
    }
    let mut index = first;
    for rgb in out.iter_mut() {
        let addr = BASE | DCB_SENDIAN | DCB_ECINC | dcb_crs(CMAP_CRS_ADDR) | DCB_WIDTH2;
        dcb::write16(bus, addr, index)?;
        dcb::select(bus, BASE | dcb_crs(CMAP_CRS_READ) | DCB_WIDTH3)?;
        let w = dcb::next32(bus)?;
        *rgb = [(w >> 24) as u8, (w >> 16) as u8, (w >> 8) as u8];
        index = index.wrapping_add(1);
    }
    Ok(())
}
