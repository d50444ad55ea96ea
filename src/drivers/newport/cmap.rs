//! Colour-map reads, the X driver's `newport_cmap.c` sequence: the entry's index as a halfword
//! to CRS 0 of CMAP0, then a 3-byte read from CRS 2 (R in 31:24, G 23:16, B 15:8).

use super::dcb;
use crate::hil::framebuffer::FbError;
use crate::hil::newport_bus::NewportBus;
use indy::regs::cmap::{CRS_ADDR, CRS_READ, ENTRIES, PROTOCOL};
use indy::regs::dcb::{
    ECINC, SENDIAN, SLAVE_CMAP0, WIDTH2, WIDTH3, crs as dcb_crs, slave as dcb_slave,
};

const BASE: u32 = dcb_slave(SLAVE_CMAP0) | PROTOCOL;

/// RGB of entries `first .. first + out.len()`.
pub fn read<B: NewportBus>(bus: &mut B, first: u16, out: &mut [[u8; 3]]) -> Result<(), FbError> {
    if u32::from(first) + out.len() as u32 > ENTRIES || out.len() > ENTRIES as usize {
        return Err(FbError::OutOfRange);
    }
    let mut index = first;
    for rgb in out.iter_mut() {
        let addr = BASE | SENDIAN | ECINC | dcb_crs(CRS_ADDR) | WIDTH2;
        dcb::write16(bus, addr, index)?;
        dcb::select(bus, BASE | dcb_crs(CRS_READ) | WIDTH3)?;
        let w = dcb::next32(bus)?;
        *rgb = [(w >> 24) as u8, (w >> 16) as u8, (w >> 8) as u8];
        index = index.wrapping_add(1);
    }
    Ok(())
}
