//! Raw pixel values to colours. A capture loads its [`Palette`] once (for colour-index modes
//! the 256 colour-map entries of the mode), then converts whole spans in place into the
//! *spread* form: the three channels 10 bits apart, so that adding up to four pixels sums each
//! channel in its own field with one addition — what keeps the box filter cheap.

use crate::hil::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use alloc::boxed::Box;

/// Colour-map entries a CI8 mode can reach.
pub const CI8_ENTRIES: usize = 256;
/// Pixels whose spread values can be added before a field overflows (4 × 255 < 1024).
pub const SPREAD_MAX_SUM: usize = 4;

/// The channel order of the result: PNG stores RGB, BMP stores BGR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Rgb,
    Bgr,
}

/// Three channels into one word: the first in bits 29:20, the second in 19:10, the third in
/// 9:0.
#[inline]
pub fn spread(c: [u8; 3]) -> u32 {
    (u32::from(c[0]) << 20) | (u32::from(c[1]) << 10) | u32::from(c[2])
}

/// The three fields of a sum of spread values.
#[inline]
pub fn unspread(s: u32) -> [u32; 3] {
    [s >> 20, (s >> 10) & 0x3FF, s & 0x3FF]
}

/// Turns the raw values `read_span` returns for one mode into spread colours.
pub struct Palette {
    /// Spread colour of each 8-bit value (CI8 through the colour map, RGB8 widened); `None`
    /// for RGB24, converted with shifts.
    table: Option<Box<[u32; 256]>>,
    order: Order,
}

impl Palette {
    /// Reads what converting `mode`'s pixels needs: for CI8 the 256 colour-map entries from
    /// the mode's base; nothing for direct colour.
    pub fn load(fb: &mut dyn Framebuffer, mode: &Mode, order: Order) -> Result<Self, FbError> {
        let put = |rgb: [u8; 3]| match order {
            Order::Rgb => spread(rgb),
            Order::Bgr => spread([rgb[2], rgb[1], rgb[0]]),
        };
        let table = match mode.pixels {
            PixelKind::Ci8 { cmap_base } => {
                let mut cmap = [[0u8; 3]; CI8_ENTRIES];
                fb.cmap(cmap_base, &mut cmap)?;
                let mut t = Box::new([0u32; 256]);
                for (slot, rgb) in t.iter_mut().zip(cmap) {
                    *slot = put(rgb);
                }
                Some(t)
            }
            PixelKind::Rgb8 => {
                let mut t = Box::new([0u32; 256]);
                for (raw, slot) in (0u32..).zip(t.iter_mut()) {
                    *slot = put(rgb8(raw));
                }
                Some(t)
            }
            PixelKind::Rgb24 => None,
        };
        Ok(Palette { table, order })
    }

    /// The spread colour of each 8-bit value, for modes converted through a table.
    pub fn table(&self) -> Option<&[u32; 256]> {
        self.table.as_deref()
    }

    /// Replaces each raw value of `span` by its spread colour.
    pub fn convert(&self, span: &mut [u32]) {
        match (&self.table, self.order) {
            (Some(t), _) => {
                for v in span {
                    *v = t[(*v & 0xFF) as usize];
                }
            }
            // 0x00BBGGRR: red in the low byte.
            (None, Order::Rgb) => {
                for v in span {
                    let raw = *v;
                    *v = ((raw & 0xFF) << 20) | (raw & 0xFF00) << 2 | ((raw >> 16) & 0xFF);
                }
            }
            (None, Order::Bgr) => {
                for v in span {
                    let raw = *v;
                    *v = ((raw & 0xFF_0000) << 4) | (raw & 0xFF00) << 2 | (raw & 0xFF);
                }
            }
        }
    }

    /// The colour of one raw value, in the palette's order.
    pub fn colour(&self, raw: u32) -> [u8; 3] {
        let mut v = [raw];
        self.convert(&mut v);
        unspread(v[0]).map(|c| c as u8)
    }
}

/// 8-bit direct colour (B 7:6, G 5:3, R 2:0), each channel widened so its maximum is 255.
fn rgb8(raw: u32) -> [u8; 3] {
    let r = ((raw & 7) * 73) >> 1;
    let g = (((raw >> 3) & 7) * 73) >> 1;
    let b = ((raw >> 6) & 3) * 85;
    [r as u8, g as u8, b as u8]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::screen::fake::FakeFb;

    fn palette(fb: &mut FakeFb, order: Order) -> Palette {
        let mode = fb.mode().unwrap();
        Palette::load(fb, &mode, order).unwrap()
    }

    #[test]
    fn ci8_goes_through_the_mode_colour_map() {
        let mut fb = FakeFb::new(4, 1, PixelKind::Ci8 { cmap_base: 0x100 });
        fb.set_cmap(0x100 + 3, [10, 20, 30]);
        fb.set_cmap(3, [99, 99, 99]);
        let p = palette(&mut fb, Order::Rgb);
        assert_eq!(p.colour(3), [10, 20, 30]);
        assert_eq!(p.colour(0x103), [10, 20, 30], "only the low byte indexes");
        assert_eq!(fb.cmap_reads, 256);
        assert_eq!(palette(&mut fb, Order::Bgr).colour(3), [30, 20, 10]);
    }

    #[test]
    fn rgb8_is_bgr_233_widened_to_full_range() {
        let mut fb = FakeFb::new(1, 1, PixelKind::Rgb8);
        let p = palette(&mut fb, Order::Rgb);
        assert_eq!(p.colour(0xFF), [255, 255, 255]);
        assert_eq!(p.colour(0x07), [255, 0, 0]);
        assert_eq!(p.colour(0x38), [0, 255, 0]);
        assert_eq!(p.colour(0xC0), [0, 0, 255]);
        assert_eq!(p.colour(0x01 | (0x01 << 3) | (0x01 << 6)), [36, 36, 85]);
        assert_eq!(fb.cmap_reads, 0);
        assert_eq!(palette(&mut fb, Order::Bgr).colour(0x07), [0, 0, 255]);
    }

    #[test]
    fn rgb24_has_red_in_the_low_byte() {
        let mut fb = FakeFb::new(1, 1, PixelKind::Rgb24);
        assert_eq!(
            palette(&mut fb, Order::Rgb).colour(0x00_33_22_11),
            [0x11, 0x22, 0x33]
        );
        assert_eq!(
            palette(&mut fb, Order::Bgr).colour(0x00_33_22_11),
            [0x33, 0x22, 0x11]
        );
    }

    #[test]
    fn four_spread_colours_add_without_carrying() {
        let white = spread([255, 255, 255]);
        assert_eq!(unspread(white * 4), [1020, 1020, 1020]);
        assert_eq!(
            unspread(spread([1, 2, 3]) + spread([255, 0, 7])),
            [256, 2, 10]
        );
    }
}
