//! XMAP9 mode entries: how a display ID's pixels are stored. Entry bits: 7:3 CMAP MSB, 9:8
//! pixel mode (0 CI, 1–3 RGB), 11:10 size (4, 8, 12, 24 bpp).
//!
//! An entry is read from XMAP0 a byte at a time: `(entry<<2)|i` to CRS 7, then one byte from
//! CRS 5, byte i being bits 8i+7:8i (low byte first, as the X driver assembles them; MAME
//! returns them the other way round; the rig follows this driver, see `docs/newport.md`).

use super::dcb;
use super::regs::*;
use crate::hil::framebuffer::{FbError, PixelKind};
use crate::hil::newport_bus::NewportBus;

fn mode(crs: u32) -> u32 {
    dcb_slave(SLAVE_XMAP0) | XMAP_PROTOCOL | dcb_crs(crs) | DCB_WIDTH1
}

/// The 24-bit mode entry of display ID `did` (0..32).
pub fn entry<B: NewportBus>(bus: &mut B, did: u8) -> Result<u32, FbError> {
    let mut value = 0;
    for i in 0..3u8 {
        dcb::write8(bus, mode(XMAP_CRS_INDEX), ((did & 0x1F) << 2) | i)?;
        dcb::select(bus, mode(XMAP_CRS_MODE))?;
        value |= u32::from(dcb::next8(bus)?) << (8 * i);
    }
    Ok(value)
}

/// The pixel kind an entry describes, or why the driver cannot read it.
pub fn pixel_kind(entry: u32) -> Result<PixelKind, FbError> {
    let pix = (entry >> 8) & 3;
    let size = (entry >> 10) & 3;
    match (size, pix) {
        (1, 0) => Ok(PixelKind::Ci8 {
            cmap_base: (((entry >> 3) & 0x1F) << 8) as u16,
        }),
        (1, _) => Ok(PixelKind::Rgb8),
        (3, 1..=3) => Ok(PixelKind::Rgb24),
        (0, _) => Err(FbError::Unsupported("4-bit XMAP mode")),
        (2, _) => Err(FbError::Unsupported("12-bit XMAP mode")),
        _ => Err(FbError::Unsupported("24-bit colour-index XMAP mode")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_entries() {
        assert_eq!(pixel_kind(0x408), Ok(PixelKind::Ci8 { cmap_base: 0x100 }));
        assert_eq!(pixel_kind(0x4F8 | 0x100), Ok(PixelKind::Rgb8));
        assert_eq!(pixel_kind(0xE00), Ok(PixelKind::Rgb24));
        assert!(matches!(pixel_kind(0xC00), Err(FbError::Unsupported(_))));
        assert!(matches!(pixel_kind(0x800), Err(FbError::Unsupported(_))));
        assert!(matches!(pixel_kind(0x000), Err(FbError::Unsupported(_))));
    }
}
