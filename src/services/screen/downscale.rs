//! Produces the rows of a [`Shrink`]: reads `scale` screen rows through the framebuffer and
//! averages each `scale`×`scale` box into one pixel (rounded mean). Memory is `scale` screen
//! spans and, for scales above 2, one row of sums, whatever the image size; any row can be
//! asked for, in any order (the BMP writer goes bottom-up).

use super::pixel::{Palette, SPREAD_MAX_SUM, unspread};
use super::region::Shrink;
use crate::hil::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use alloc::vec;
use alloc::vec::Vec;

pub struct Downscale {
    shrink: Shrink,
    /// `scale` screen rows of the region (only the columns the boxes cover), as spread colours.
    spans: Vec<u32>,
    /// Per-channel sums of a row of boxes (scales above 2 only).
    sums: Vec<u32>,
}

impl Downscale {
    pub fn new(shrink: Shrink) -> Self {
        let cols = (shrink.width * shrink.scale) as usize;
        let sums = if shrink.scale > 2 {
            vec![0; shrink.width as usize * 3]
        } else {
            Vec::new()
        };
        Downscale {
            shrink,
            spans: vec![0; cols * shrink.scale as usize],
            sums,
        }
    }

    pub fn shrink(&self) -> &Shrink {
        &self.shrink
    }

    /// Writes result row `row` into `out` (`width * 3` bytes, in the palette's channel order).
    pub fn row(
        &mut self,
        fb: &mut dyn Framebuffer,
        mode: &Mode,
        palette: &Palette,
        row: u32,
        out: &mut [u8],
    ) -> Result<(), FbError> {
        let s = self.shrink;
        if row >= s.height || out.len() != s.width as usize * 3 {
            return Err(FbError::OutOfRange);
        }
        let cols = (s.width * s.scale) as usize;
        let top = s.region.y + row * s.scale;
        // 8-bit pixels come four to a word. Scales 1 and 2 of a region starting on a word
        // take them as they come; everything else spreads them one to a word first.
        let packed = mode.pixels != PixelKind::Rgb24;
        let words =
            packed && s.region.x.is_multiple_of(4) && cols.is_multiple_of(4) && s.scale <= 2;
        for (y, span) in (top..).zip(self.spans.chunks_exact_mut(cols)) {
            fb.read_span(mode, s.region.x, y, span)?;
            if packed && !words {
                unpack(span, (s.region.x % 4) as usize);
            }
            // Scales 1 and 2 look colours up inside their loops (one pass over the pixels).
            if s.scale > 2 || palette.table().is_none() {
                palette.convert(span);
            }
        }
        match (s.scale, palette.table()) {
            (1, Some(t)) if words => copy8(&self.spans, out, t),
            (2, Some(t)) if words => halve8(&self.spans, cols, out, t),
            (1, Some(t)) => copy(&self.spans, out, |raw| t[(raw & 0xFF) as usize]),
            (1, None) => copy(&self.spans, out, |v| v),
            (2, Some(t)) => halve(&self.spans, cols, out, |raw| t[(raw & 0xFF) as usize]),
            (2, None) => halve(&self.spans, cols, out, |v| v),
            _ => self.average(cols, out),
        }
        Ok(())
    }

    /// Boxes of any scale: spread sums of up to four pixels, split into per-channel sums.
    fn average(&mut self, cols: usize, out: &mut [u8]) {
        let scale = self.shrink.scale as usize;
        self.sums.fill(0);
        for span in self.spans.chunks_exact(cols) {
            for (sum, box_) in self.sums.chunks_exact_mut(3).zip(span.chunks_exact(scale)) {
                for part in box_.chunks(SPREAD_MAX_SUM) {
                    let s = part.iter().fold(0u32, |t, v| t.wrapping_add(*v));
                    for (acc, c) in sum.iter_mut().zip(unspread(s)) {
                        *acc += c;
                    }
                }
            }
        }
        let area = (scale * scale) as u32;
        for (o, sum) in out.iter_mut().zip(&self.sums) {
            *o = ((sum + area / 2) / area) as u8;
        }
    }
}

// The loops below index arrays over a counted range: the size-optimised image calls the `next`
// of `zip` and `chunks_exact` out of line for every pixel, which cost more than the pixel.

/// Scale 1: each pixel looked up through `colour` and stored, four to a step (the loop
/// costs as much as a pixel).
#[inline]
fn copy(span: &[u32], out: &mut [u8], colour: impl Fn(u32) -> u32) {
    // One pixel's fields hold at most 255: the low byte of each is the channel.
    let rgb = |s: u32| [(s >> 20) as u8, (s >> 10) as u8, s as u8];
    let (quads, rest) = span.as_chunks::<4>();
    let (out4, out_rest) = out.as_chunks_mut::<12>();
    for i in 0..out4.len().min(quads.len()) {
        let ([a, b, c, d], o) = (quads[i], &mut out4[i]);
        let ([a0, a1, a2], [b0, b1, b2]) = (rgb(colour(a)), rgb(colour(b)));
        let ([c0, c1, c2], [d0, d1, d2]) = (rgb(colour(c)), rgb(colour(d)));
        *o = [a0, a1, a2, b0, b1, b2, c0, c1, c2, d0, d1, d2];
    }
    let out_rest = out_rest.as_chunks_mut::<3>().0;
    for i in 0..out_rest.len().min(rest.len()) {
        out_rest[i] = rgb(colour(rest[i]));
    }
}

/// One pixel's spread colour as bytes (its fields hold at most 255: the low byte of each is
/// the channel).
#[inline(always)]
fn bytes(s: u32) -> [u8; 3] {
    [(s >> 20) as u8, (s >> 10) as u8, s as u8]
}

/// Spreads 8-bit pixels read four to a word, the first `skip` pixels into the first word, to
/// one a word, in place: from the end, where no word still to be read has been overwritten.
fn unpack(span: &mut [u32], skip: usize) {
    for i in (0..span.len()).rev() {
        let k = i + skip;
        span[i] = (span[k / 4] >> (24 - 8 * (k % 4))) & 0xFF;
    }
}

/// Scale 1 of 8-bit pixels four to a word: each looked up in `t` and stored.
#[inline]
fn copy8(words: &[u32], out: &mut [u8], t: &[u32; 256]) {
    let out = out.as_chunks_mut::<12>().0;
    for i in 0..out.len().min(words.len()) {
        let w = words[i];
        let [a0, a1, a2] = bytes(t[(w >> 24) as usize]);
        let [b0, b1, b2] = bytes(t[((w >> 16) & 0xFF) as usize]);
        let [c0, c1, c2] = bytes(t[((w >> 8) & 0xFF) as usize]);
        let [d0, d1, d2] = bytes(t[(w & 0xFF) as usize]);
        out[i] = [a0, a1, a2, b0, b1, b2, c0, c1, c2, d0, d1, d2];
    }
}

/// Scale 2 of 8-bit pixels four to a word: a word of the upper row and one of the lower hold
/// two boxes. Eight pixels of one value (most of a console screen) are looked up once.
#[inline]
fn halve8(spans: &[u32], cols: usize, out: &mut [u8], t: &[u32; 256]) {
    let (upper, lower) = spans.split_at(cols);
    let out = out.as_chunks_mut::<6>().0;
    let box_ = |a: u32, b: u32, c: u32, d: u32| {
        let at = |v: u32| t[(v & 0xFF) as usize];
        let [x, y, z] = unspread(at(a) + at(b) + at(c) + at(d));
        [
            ((x + 2) >> 2) as u8,
            ((y + 2) >> 2) as u8,
            ((z + 2) >> 2) as u8,
        ]
    };
    for i in 0..out.len().min(upper.len()).min(lower.len()) {
        let (u, l) = (upper[i], lower[i]);
        out[i] = if u == l && u == u.rotate_right(8) {
            let [r, g, b] = bytes(t[(u & 0xFF) as usize]);
            [r, g, b, r, g, b]
        } else {
            let [r0, g0, b0] = box_(u >> 24, u >> 16, l >> 24, l >> 16);
            let [r1, g1, b1] = box_(u >> 8, u, l >> 8, l);
            [r0, g0, b0, r1, g1, b1]
        };
    }
}

/// Scale 2: each pair of `upper` and `lower` pixels, looked up through `colour`, added in one
/// spread sum (four pixels, no carry) and rounded. A box of one raw value (most of a console
/// screen) is that value's colour, looked up once.
#[inline]
fn halve(spans: &[u32], cols: usize, out: &mut [u8], colour: impl Fn(u32) -> u32) {
    let (upper, lower) = spans.split_at(cols);
    let (upper, lower) = (upper.as_chunks::<2>().0, lower.as_chunks::<2>().0);
    let out = out.as_chunks_mut::<3>().0;
    for i in 0..out.len().min(upper.len()).min(lower.len()) {
        let ([a0, a1], [b0, b1]) = (upper[i], lower[i]);
        out[i] = if a0 == a1 && a0 == b0 && a0 == b1 {
            let s = colour(a0);
            [(s >> 20) as u8, (s >> 10) as u8, s as u8]
        } else {
            let sum = colour(a0)
                .wrapping_add(colour(a1))
                .wrapping_add(colour(b0))
                .wrapping_add(colour(b1));
            let [x, y, z] = unspread(sum);
            [
                ((x + 2) >> 2) as u8,
                ((y + 2) >> 2) as u8,
                ((z + 2) >> 2) as u8,
            ]
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hil::framebuffer::PixelKind;
    use crate::services::screen::fake::FakeFb;
    use crate::services::screen::pixel::Order;
    use crate::services::screen::region::Region;

    fn setup(fb: &mut FakeFb, region: Region, scale: u32) -> (Mode, Palette, Downscale) {
        let mode = fb.mode().unwrap();
        let p = Palette::load(fb, &mode, Order::Rgb).unwrap();
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
    fn direct_colour_boxes_are_averaged_too() {
        let mut fb = FakeFb::new(4, 2, PixelKind::Rgb24);
        fb.set(2, 0, 0x00_00_00_FF);
        fb.set(3, 1, 0x00_FF_00_01);
        let mode = fb.mode().unwrap();
        let (_, p, mut d) = setup(&mut fb, Region::full(&mode), 2);
        let mut row = [9u8; 6];
        d.row(&mut fb, &mode, &p, 0, &mut row).unwrap();
        assert_eq!(row, [0, 0, 0, 64, 0, 64]);
    }

    #[test]
    fn large_boxes_do_not_overflow_a_channel() {
        // 16×16 of white plus one black pixel: 255 × 255 / 256 rounds to 254.
        let mut fb = FakeFb::new(32, 16, PixelKind::Rgb24);
        fb.pixels.fill(0x00FF_FFFF);
        fb.set(3, 5, 0);
        fb.set(20, 0, 0x0000_00FF);
        let mode = fb.mode().unwrap();
        let (_, p, mut d) = setup(&mut fb, Region::full(&mode), 16);
        let mut row = [0u8; 6];
        d.row(&mut fb, &mode, &p, 0, &mut row).unwrap();
        assert_eq!(row, [254, 254, 254, 255, 254, 254]);
        let (_, p, mut d) = setup(&mut fb, Region::full(&mode), 3);
        let mut row = [0u8; 30];
        d.row(&mut fb, &mode, &p, 1, &mut row).unwrap();
        // Box (1,1) covers x 3..6, y 3..6: the black pixel at (3,5) is one of nine.
        assert_eq!(&row[3..6], &[227, 227, 227]);
        assert_eq!(&row[..3], &[255, 255, 255]);
    }

    #[test]
    fn eight_bit_pixels_give_the_same_boxes_at_any_alignment() {
        // Noise in a few colours, with runs: the word-at-a-time paths (regions starting on a
        // word), the uniform-word shortcut and the unpacked ones must all give the box means.
        let mut fb = FakeFb::new(32, 8, PixelKind::Ci8 { cmap_base: 0x100 });
        let mut seed = 7u32;
        for i in 0..8u16 {
            fb.set_cmap(
                0x100 + i,
                [(i * 37) as u8, (255 - i * 30) as u8, (i * 11) as u8],
            );
        }
        for (i, p) in fb.pixels.iter_mut().enumerate() {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *p = if i % 32 < 12 { 3 } else { (seed >> 16) % 8 };
        }
        let colour = |fb: &FakeFb, x: u32, y: u32| {
            let raw = fb.pixels[(y * 32 + x) as usize];
            fb.cmap[0x100 + raw as usize]
        };
        for scale in [1u32, 2] {
            for x in 0..6 {
                for width in [8, 9, 12, 16] {
                    let region = Region {
                        x,
                        y: 0,
                        width,
                        height: 8,
                    };
                    let (mode, p, mut d) = setup(&mut fb, region, scale);
                    let w = (width / scale) as usize;
                    let mut row = vec![0u8; w * 3];
                    for r in 0..8 / scale {
                        d.row(&mut fb, &mode, &p, r, &mut row).unwrap();
                        for o in 0..w as u32 {
                            let mut sum = [0u32; 3];
                            for (dx, dy) in (0..scale).flat_map(|a| (0..scale).map(move |b| (a, b)))
                            {
                                let c = colour(&fb, x + o * scale + dx, r * scale + dy);
                                for k in 0..3 {
                                    sum[k] += u32::from(c[k]);
                                }
                            }
                            let area = scale * scale;
                            let want = sum.map(|v| ((v + area / 2) / area) as u8);
                            let at = o as usize * 3;
                            assert_eq!(
                                row[at..at + 3],
                                want,
                                "scale {scale} x {x} w {width} row {r} px {o}"
                            );
                        }
                    }
                }
            }
        }
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
