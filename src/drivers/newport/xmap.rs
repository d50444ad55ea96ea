//! XMAP9 mode entries: how a display ID's pixels are stored. Entry bits: 7:3 CMAP MSB, 9:8
//! pixel mode (0 CI, 1–3 RGB), 11:10 size (4, 8, 12, 24 bpp).
//!
//! An entry is read from XMAP0 a byte at a time: `(entry<<2)|i` to CRS 7, then one byte from
//! CRS 5, byte i being bits 8i+7:8i (low byte first, as the X driver assembles them; MAME
//! returns them the other way round; the rig follows this driver, see `docs/newport.md`).

use super::dcb;
use crate::hil::framebuffer::{FbError, PixelKind};
use crate::hil::newport_bus::NewportBus;
use indy::regs::dcb::{SLAVE_XMAP0, WIDTH1, crs as dcb_crs, slave as dcb_slave};
use indy::regs::xmap::{
    CRS_INDEX, CRS_MODE, PIX_CI, PROTOCOL, SIZE_4, SIZE_8, SIZE_12, SIZE_24, cmap_base, pix_of,
    size_of,
};

fn mode(crs: u32) -> u32 {
    dcb_slave(SLAVE_XMAP0) | PROTOCOL | dcb_crs(crs) | WIDTH1
}

/// The 24-bit mode entry of display ID `did` (0..32).
pub fn entry<B: NewportBus>(bus: &mut B, did: u8) -> Result<u32, FbError> {
    let mut value = 0;
    for i in 0..3u8 {
        dcb::write8(bus, mode(CRS_INDEX), ((did & 0x1F) << 2) | i)?;
        dcb::select(bus, mode(CRS_MODE))?;
        value |= u32::from(dcb::next8(bus)?) << (8 * i);
    }
    Ok(value)
}

/// The pixel kind an entry describes, or why the driver cannot read it.
pub fn pixel_kind(entry: u32) -> Result<PixelKind, FbError> {
    match (size_of(entry), pix_of(entry)) {
        (SIZE_8, PIX_CI) => Ok(PixelKind::Ci8 {
            cmap_base: cmap_base(entry),
        }),
        (SIZE_8, _) => Ok(PixelKind::Rgb8),
        (SIZE_24, 1..=3) => Ok(PixelKind::Rgb24),
        (SIZE_4, _) => Err(FbError::Unsupported("4-bit XMAP mode")),
        (SIZE_12, _) => Err(FbError::Unsupported("12-bit XMAP mode")),
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
