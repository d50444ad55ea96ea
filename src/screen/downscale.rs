//! Produces the RGB rows of a [`Shrink`]: reads `scale` screen rows through the framebuffer and
//! averages each `scale`×`scale` box into one pixel. Memory is one screen span and one row of
//! sums, whatever the image size; any row can be asked for, in any order (the BMP writer goes
//! bottom-up).

use super::framebuffer::{FbError, Framebuffer, Mode};
use super::pixel::Palette;
use super::region::Shrink;
use alloc::vec;
use alloc::vec::Vec;

pub struct Downscale {
    shrink: Shrink,
    /// Raw pixels of one screen row of the region (only the part the boxes cover).
    span: Vec<u32>,
    /// Per-channel sums of the current row of boxes.
    sums: Vec<u32>,
}

impl Downscale {
    pub fn new(shrink: Shrink) -> Self {
        let cols = (shrink.width * shrink.scale) as usize;
        let sums = if shrink.scale > 1 {
            vec![0; shrink.width as usize * 3]
        } else {
            Vec::new()
        };
        Downscale {
            shrink,
            span: vec![0; cols],
            sums,
        }
    }

    pub fn shrink(&self) -> &Shrink {
        &self.shrink
    }

    /// Writes thumbnail row `row` as RGB triples into `rgb` (`width * 3` bytes).
    pub fn row(
        &mut self,
        fb: &mut dyn Framebuffer,
        mode: &Mode,
        palette: &Palette,
        row: u32,
        rgb: &mut [u8],
    ) -> Result<(), FbError> {
        let s = self.shrink;
        if row >= s.height || rgb.len() != s.width as usize * 3 {
            return Err(FbError::OutOfRange);
        }
        let top = s.region.y + row * s.scale;
        if s.scale == 1 {
            fb.read_span(mode, s.region.x, top, &mut self.span)?;
            for (px, raw) in rgb.chunks_exact_mut(3).zip(&self.span) {
                px.copy_from_slice(&palette.rgb(*raw));
            }
            return Ok(());
        }
        self.sums.fill(0);
        let scale = s.scale as usize;
        for y in top..top + s.scale {
            fb.read_span(mode, s.region.x, y, &mut self.span)?;
            for (sum, box_) in self
                .sums
                .chunks_exact_mut(3)
                .zip(self.span.chunks_exact(scale))
            {
                for raw in box_ {
                    let [r, g, b] = palette.rgb(*raw);
                    sum[0] += u32::from(r);
                    sum[1] += u32::from(g);
                    sum[2] += u32::from(b);
                }
            }
        }
        // Rounded mean of the box.
        let area = s.scale * s.scale;
        for (out, sum) in rgb.iter_mut().zip(&self.sums) {
            *out = ((sum + area / 2) / area) as u8;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::fake::FakeFb;
    use crate::screen::framebuffer::PixelKind;
    use crate::screen::region::Region;

    fn setup(fb: &mut FakeFb, region: Region, scale: u32) -> (Mode, Palette, Downscale) {
        let mode = fb.mode().unwrap();
        let p = Palette::load(fb, &mode).unwrap();
        let d = Downscale::new(Shrink::new(&mode, region, scale).unwrap());
        (mode, p, d)
    }

    #[test]
    fn scale_one_copies_the_region() {
        let mut fb = FakeFb::new(8, 4, PixelKind::Rgb24);
        fb.set(5, 2, 0x00_03_02_01);
        let region = Region {
            x: 4,
            y: 2,
            width: 3,
            height: 2,
        };
        let (mode, p, mut d) = setup(&mut fb, region, 1);
        let mut row = [9u8; 9];
        d.row(&mut fb, &mode, &p, 0, &mut row).unwrap();
        assert_eq!(row, [0, 0, 0, 1, 2, 3, 0, 0, 0]);
    }

    #[test]
    fn boxes_are_averaged_with_rounding() {
        let mut fb = FakeFb::new(4, 4, PixelKind::Ci8 { cmap_base: 0 });
        fb.set_cmap(1, [255, 255, 255]);
        fb.set_cmap(2, [0, 1, 3]);
        // Top-left box: one white pixel of four; top-right: all white.
        fb.set(0, 0, 1);
        for (x, y) in [(2, 0), (3, 0), (2, 1), (3, 1)] {
            fb.set(x, y, 1);
        }
        for (x, y) in [(0, 2), (1, 2), (0, 3), (1, 3)] {
            fb.set(x, y, 2);
        }
        let mode = fb.mode().unwrap();
        let (_, p, mut d) = setup(&mut fb, Region::full(&mode), 2);
        let mut row = [0u8; 6];
        d.row(&mut fb, &mode, &p, 0, &mut row).unwrap();
        assert_eq!(row, [64, 64, 64, 255, 255, 255]);
        d.row(&mut fb, &mode, &p, 1, &mut row).unwrap();
        assert_eq!(row, [0, 1, 3, 0, 0, 0]);
    }

    #[test]
    fn rows_past_the_end_and_wrong_buffers_are_errors() {
        let mut fb = FakeFb::new(4, 4, PixelKind::Rgb8);
        let mode = fb.mode().unwrap();
        let (_, p, mut d) = setup(&mut fb, Region::full(&mode), 2);
        let mut row = [0u8; 6];
        assert_eq!(
            d.row(&mut fb, &mode, &p, 2, &mut row),
            Err(FbError::OutOfRange)
        );
        assert_eq!(
            d.row(&mut fb, &mode, &p, 0, &mut [0u8; 5]),
            Err(FbError::OutOfRange)
        );
    }

    #[test]
    fn framebuffer_errors_come_through() {
        let mut fb = FakeFb::new(4, 4, PixelKind::Rgb8);
        let mode = fb.mode().unwrap();
        let (_, p, mut d) = setup(&mut fb, Region::full(&mode), 1);
        fb.fail_at_row = Some(1);
        let mut row = [0u8; 12];
        assert!(d.row(&mut fb, &mode, &p, 0, &mut row).is_ok());
        assert_eq!(
            d.row(&mut fb, &mode, &p, 1, &mut row),
            Err(FbError::Timeout)
        );
    }
}
