//! Raw pixel values to RGB. A capture loads its [`Palette`] once (for colour-index modes the
//! 256 colour-map entries of the mode), so converting a pixel is a table look-up or a few
//! shifts, never a hardware access.

use super::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use alloc::vec::Vec;

/// Colour-map entries a CI8 mode can reach.
pub const CI8_ENTRIES: usize = 256;

/// Turns the raw values `read_span` returns for one mode into RGB.
pub struct Palette {
    kind: PixelKind,
    /// The mode's colour-map entries (CI8 only; empty otherwise).
    cmap: Vec<[u8; 3]>,
}

impl Palette {
    /// Reads what converting `mode`'s pixels needs: for CI8 the 256 colour-map entries from
    /// the mode's base; nothing for direct colour.
    pub fn load(fb: &mut dyn Framebuffer, mode: &Mode) -> Result<Self, FbError> {
        let mut cmap = Vec::new();
        if let PixelKind::Ci8 { cmap_base } = mode.pixels {
            cmap.resize(CI8_ENTRIES, [0; 3]);
            fb.cmap(cmap_base, &mut cmap)?;
        }
        Ok(Palette {
            kind: mode.pixels,
            cmap,
        })
    }

    /// The RGB of one raw pixel value.
    #[inline]
    pub fn rgb(&self, raw: u32) -> [u8; 3] {
        match self.kind {
            PixelKind::Ci8 { .. } => self
                .cmap
                .get((raw & 0xFF) as usize)
                .copied()
                .unwrap_or([0; 3]),
            PixelKind::Rgb8 => {
                // B 7:6, G 5:3, R 2:0, each widened so its maximum becomes 255.
                let r = ((raw & 7) * 73) >> 1;
                let g = (((raw >> 3) & 7) * 73) >> 1;
                let b = ((raw >> 6) & 3) * 85;
                [r as u8, g as u8, b as u8]
            }
            PixelKind::Rgb24 => [raw as u8, (raw >> 8) as u8, (raw >> 16) as u8],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::fake::FakeFb;

    #[test]
    fn ci8_goes_through_the_mode_colour_map() {
        let mut fb = FakeFb::new(4, 1, PixelKind::Ci8 { cmap_base: 0x100 });
        fb.set_cmap(0x100 + 3, [10, 20, 30]);
        fb.set_cmap(3, [99, 99, 99]);
        let mode = fb.mode().unwrap();
        let p = Palette::load(&mut fb, &mode).unwrap();
        assert_eq!(p.rgb(3), [10, 20, 30]);
        assert_eq!(p.rgb(0x103), [10, 20, 30], "only the low byte indexes");
        assert_eq!(fb.cmap_reads, 256);
    }

    #[test]
    fn rgb8_is_bgr_233_widened_to_full_range() {
        let mut fb = FakeFb::new(1, 1, PixelKind::Rgb8);
        let mode = fb.mode().unwrap();
        let p = Palette::load(&mut fb, &mode).unwrap();
        assert_eq!(p.rgb(0xFF), [255, 255, 255]);
        assert_eq!(p.rgb(0x07), [255, 0, 0]);
        assert_eq!(p.rgb(0x38), [0, 255, 0]);
        assert_eq!(p.rgb(0xC0), [0, 0, 255]);
        assert_eq!(p.rgb(0x01 | (0x01 << 3) | (0x01 << 6)), [36, 36, 85]);
        assert_eq!(fb.cmap_reads, 0);
    }

    #[test]
    fn rgb24_has_red_in_the_low_byte() {
        let mut fb = FakeFb::new(1, 1, PixelKind::Rgb24);
        let mode = fb.mode().unwrap();
        let p = Palette::load(&mut fb, &mode).unwrap();
        assert_eq!(p.rgb(0x00_33_22_11), [0x11, 0x22, 0x33]);
    }
}
