//! One capture as a paced byte stream: reads the mode and palette at the start, then encodes
//! a bounded batch of screen rows per call and hands the bytes out in pieces, so a capture
//! spreads over many polls while other clients are served. Memory: the encoder state, one
//! batch of output, one screen span — never the whole image.

use super::bmp;
use super::downscale::Downscale;
use super::pixel::{Order, Palette};
use super::png::{PngEncoder, PngError};
use super::region::{Region, Shrink};
use crate::hil::framebuffer::{FbError, Framebuffer, Mode};
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use irix7_kmem::budget::Pool;

/// What one PNG capture holds at most (the measured peak of a full-screen capture's encoder,
/// `cargo xtask bench`): the memory plan sets it aside, and the capture pool lets one run at a
/// time.
pub const PNG_CAPTURE_BYTES: usize = 512 * 1024;

/// The pool PNG captures draw on: room for one at a time (each boxes a deflate compressor of
/// about 300 KiB), so concurrent `screen.capture` calls and `irix7://screen` reads cannot run
/// the heap out; the next one is refused until the first ends.
pub fn png_pool() -> Rc<Pool> {
    Pool::new("captures", PNG_CAPTURE_BYTES)
}

/// Screen rows read per batch: 8 rows of 1280 pixels is ~10 K pixel reads, a few
/// milliseconds of an R4400.
pub const BATCH_SCREEN_ROWS: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A PNG, rows top-down.
    Png,
    /// A 24-bit BMP, rows bottom-up.
    Bmp,
}

/// Why a capture could not start or go on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureError {
    /// The board failed.
    Fb(FbError),
    /// The region or scale does not fit the mode (the message says how).
    Invalid(String),
    /// The encoder failed (a bug).
    Encode,
}

impl From<FbError> for CaptureError {
    fn from(e: FbError) -> Self {
        CaptureError::Fb(e)
    }
}

impl From<PngError> for CaptureError {
    fn from(_: PngError) -> Self {
        CaptureError::Encode
    }
}

/// What [`Capture::read`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Bytes were appended.
    Data,
    /// A batch was encoded but gave no bytes yet (deflate is holding them): come back on a
    /// later poll.
    Idle,
    /// The file is complete.
    End,
}

pub struct Capture {
    mode: Mode,
    palette: Palette,
    rows: Downscale,
    png: Option<PngEncoder>,
    /// One PNG row as the encoder takes it: the filter byte, then RGB (empty for a BMP).
    row: Vec<u8>,
    /// Result rows encoded so far.
    done: u32,
    /// Encoded bytes of the last batch (`buf[..filled]`), handed out from `pos`. BMP rows are
    /// written into it in place: zeroed once, it keeps its length, and the padding stays zero.
    buf: Vec<u8>,
    filled: usize,
    pos: usize,
    finished: bool,
}

impl Capture {
    /// Reads the mode (and the colour map of a CI mode) and checks the region (the whole
    /// screen if `None`) and scale against it. The first bytes (signature and headers) are
    /// ready at once.
    pub fn start(
        fb: &mut dyn Framebuffer,
        format: Format,
        region: Option<Region>,
        scale: u32,
    ) -> Result<Capture, CaptureError> {
        let mode = fb.mode()?;
        let region = region.unwrap_or(Region::full(&mode));
        let shrink = Shrink::new(&mode, region, scale).map_err(CaptureError::Invalid)?;
        let order = match format {
            Format::Png => Order::Rgb,
            Format::Bmp => Order::Bgr,
        };
        let palette = Palette::load(fb, &mode, order)?;
        let mut buf = Vec::new();
        let (png, row) = match format {
            Format::Png => (
                Some(PngEncoder::new(shrink.width, shrink.height, &mut buf)),
                vec![0; 1 + shrink.width as usize * 3],
            ),
            Format::Bmp => {
                buf.extend_from_slice(&bmp::header(shrink.width, shrink.height));
                (None, Vec::new())
            }
        };
        Ok(Capture {
            mode,
            palette,
            rows: Downscale::new(shrink),
            png,
            row,
            done: 0,
            filled: buf.len(),
            buf,
            pos: 0,
            finished: false,
        })
    }

    /// The mode the capture reads.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The region, scale and result size.
    pub fn shrink(&self) -> &Shrink {
        self.rows.shrink()
    }

    /// Appends at most `max` bytes of the file to `out`, encoding one batch of rows first if
    /// none are waiting.
    pub fn read(
        &mut self,
        fb: &mut dyn Framebuffer,
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<Poll, CaptureError> {
        let (piece, poll) = self.piece(fb, max)?;
        out.extend_from_slice(piece);
        Ok(poll)
    }

    /// The next at most `max` bytes of the file (none when `Idle` or `End`), encoding one
    /// batch of rows first if none are waiting.
    pub fn piece(
        &mut self,
        fb: &mut dyn Framebuffer,
        max: usize,
    ) -> Result<(&[u8], Poll), CaptureError> {
        if self.pos >= self.filled {
            if self.finished {
                return Ok((&[], Poll::End));
            }
            self.pos = 0;
            self.batch(fb)?;
            if self.filled == 0 {
                return Ok((&[], Poll::Idle));
            }
        }
        let at = self.pos;
        let n = max.max(1).min(self.filled - at);
        self.pos += n;
        let poll = if self.finished && self.pos >= self.filled {
            Poll::End
        } else {
            Poll::Data
        };
        Ok((self.buf.get(at..at + n).unwrap_or(&[]), poll))
    }

    /// The whole file at once (for callers that cannot stream).
    pub fn encode_all(mut self, fb: &mut dyn Framebuffer) -> Result<Vec<u8>, CaptureError> {
        let mut out = Vec::new();
        while self.read(fb, &mut out, usize::MAX)? != Poll::End {}
        Ok(out)
    }

    fn batch(&mut self, fb: &mut dyn Framebuffer) -> Result<(), CaptureError> {
        let s = *self.rows.shrink();
        let count = (BATCH_SCREEN_ROWS / s.scale).max(1);
        let (len, stride) = (s.width as usize * 3, bmp::stride(s.width) as usize);
        if self.png.is_some() {
            self.buf.clear();
        } else if self.buf.len() != count as usize * stride {
            self.buf = vec![0; count as usize * stride];
        }
        self.filled = 0;
        for _ in 0..count {
            if self.done >= s.height {
                break;
            }
            match &mut self.png {
                Some(png) => {
                    let rgb = self.row.get_mut(1..).unwrap_or_default();
                    self.rows
                        .row(fb, &self.mode, &self.palette, self.done, rgb)?;
                    png.row(&self.row)?;
                }
                None => {
                    let at = self.filled;
                    let room = self.buf.get_mut(at..at + len).unwrap_or_default();
                    let y = s.height - 1 - self.done;
                    self.rows.row(fb, &self.mode, &self.palette, y, room)?;
                    self.filled += stride;
                }
            }
            self.done += 1;
        }
        self.finished = self.done >= s.height;
        if let Some(png) = &mut self.png {
            png.drain(&mut self.buf);
            if self.finished {
                png.finish(&mut self.buf)?;
            }
            self.filled = self.buf.len();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hil::framebuffer::PixelKind;
    use crate::services::screen::fake::FakeFb;
    use crate::services::screen::png::decode::decode;

    /// A 64×48 CI screen: blue background, a white 8×16 "glyph" cell at (8, 16).
    fn screen() -> FakeFb {
        let mut fb = FakeFb::new(64, 48, PixelKind::Ci8 { cmap_base: 0x200 });
        fb.set_cmap(0x200, [0, 0, 170]);
        fb.set_cmap(0x207, [255, 255, 255]);
        for y in 16..32 {
            for x in 8..16 {
                fb.set(x, y, 7);
            }
        }
        fb
    }

    fn drain(cap: &mut Capture, fb: &mut FakeFb, max: usize) -> (Vec<u8>, usize, usize) {
        let mut out = Vec::new();
        let (mut calls, mut idle) = (0, 0);
        loop {
            calls += 1;
            assert!(calls < 100_000);
            let before = out.len();
            match cap.read(fb, &mut out, max).unwrap() {
                Poll::End => break,
                Poll::Idle => idle += 1,
                Poll::Data => assert!(out.len() > before),
            }
            assert!(out.len() - before <= max);
        }
        (out, calls, idle)
    }

    #[test]
    fn a_png_thumbnail_averages_the_screen() {
        let mut fb = screen();
        let mut cap = Capture::start(&mut fb, Format::Png, None, 2).unwrap();
        assert_eq!((cap.shrink().width, cap.shrink().height), (32, 24));
        let (png, _, idle) = drain(&mut cap, &mut fb, 100);
        assert!(idle > 0, "compressible batches yield before giving bytes");
        let d = decode(&png);
        assert_eq!((d.width, d.height), (32, 24));
        let px = |x: usize, y: usize| &d.rgb[(y * 32 + x) * 3..][..3];
        assert_eq!(px(0, 0), [0, 0, 170]);
        assert_eq!(px(4, 8), [255, 255, 255]);
        assert_eq!(px(7, 15), [255, 255, 255]);
        assert_eq!(px(8, 8), [0, 0, 170]);
        assert_eq!(fb.cmap_reads, 256, "the colour map is read once");
        assert_eq!(fb.pixel_reads, 64 * 48, "every pixel is read once");
    }

    #[test]
    fn a_bmp_is_the_full_screen_bottom_up() {
        let mut fb = screen();
        let mut cap = Capture::start(&mut fb, Format::Bmp, None, 1).unwrap();
        let (bmp, calls, idle) = drain(&mut cap, &mut fb, 1000);
        assert_eq!(idle, 0);
        assert!(calls > 48 * 64 * 3 / 1000);
        assert_eq!(bmp.len() as u64, bmp::file_len(64, 48));
        let px = |x: usize, y: usize| {
            let at = 54 + (47 - y) * 64 * 3 + x * 3;
            [bmp[at + 2], bmp[at + 1], bmp[at]]
        };
        assert_eq!(px(0, 0), [0, 0, 170]);
        assert_eq!(px(8, 16), [255, 255, 255]);
        assert_eq!(px(15, 31), [255, 255, 255]);
        assert_eq!(px(16, 31), [0, 0, 170]);
        assert_eq!(px(8, 32), [0, 0, 170]);
    }

    #[test]
    fn bmp_rows_are_padded_with_zeros() {
        // 9 pixels: 27 bytes a row, stored in 28.
        let mut fb = screen();
        let region = Region {
            x: 7,
            y: 15,
            width: 9,
            height: 17,
        };
        let cap = Capture::start(&mut fb, Format::Bmp, Some(region), 1).unwrap();
        let bmp = cap.encode_all(&mut fb).unwrap();
        assert_eq!(bmp.len() as u64, bmp::file_len(9, 17));
        for (y, row) in bmp[54..].chunks_exact(28).rev().enumerate() {
            let white = [255, 255, 255];
            let blue = [170, 0, 0];
            let want_first = if y == 0 { blue } else { white };
            assert_eq!(&row[..3], &blue, "row {y}");
            assert_eq!(&row[3..6], &want_first, "row {y}");
            assert_eq!(&row[27..], &[0], "row {y}");
        }
    }

    #[test]
    fn a_region_is_cut_out() {
        let mut fb = screen();
        let region = Region {
            x: 8,
            y: 16,
            width: 9,
            height: 16,
        };
        let cap = Capture::start(&mut fb, Format::Png, Some(region), 1).unwrap();
        let d = decode(&cap.encode_all(&mut fb).unwrap());
        assert_eq!((d.width, d.height), (9, 16));
        assert_eq!(&d.rgb[..3], [255, 255, 255]);
        assert_eq!(&d.rgb[8 * 3..9 * 3], [0, 0, 170]);
    }

    #[test]
    fn batches_are_bounded() {
        // A noisy full-size screen: the hardest case for the output buffer.
        let mut fb = FakeFb::new(1280, 1024, PixelKind::Rgb24);
        let mut seed = 1u32;
        for p in fb.pixels.iter_mut() {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *p = seed >> 8;
        }
        let mut cap = Capture::start(&mut fb, Format::Bmp, None, 1).unwrap();
        let mut out = Vec::new();
        let mut peak = 0;
        while cap.read(&mut fb, &mut out, 4096).unwrap() != Poll::End {
            peak = peak.max(cap.buf.capacity());
            out.clear();
        }
        assert!(peak <= 8 * 3840 * 2, "BMP batch buffer {peak}");
        let mut cap = Capture::start(&mut fb, Format::Png, None, 2).unwrap();
        let mut total = 0;
        let mut peak = 0;
        loop {
            let r = cap.read(&mut fb, &mut out, 4096).unwrap();
            peak = peak.max(cap.buf.capacity());
            total += out.len();
            out.clear();
            if r == Poll::End {
                break;
            }
        }
        assert!(total > 640 * 512 * 2, "noise hardly compresses: {total}");
        assert!(peak <= 256 * 1024, "PNG batch buffer {peak}");
    }

    #[test]
    fn errors_stop_the_capture() {
        let mut fb = screen();
        fb.mode_error = Some(FbError::NoDevice);
        assert_eq!(
            Capture::start(&mut fb, Format::Png, None, 2).err(),
            Some(CaptureError::Fb(FbError::NoDevice))
        );
        fb.mode_error = None;
        assert!(matches!(
            Capture::start(&mut fb, Format::Png, None, 0),
            Err(CaptureError::Invalid(_))
        ));
        let cap = Capture::start(&mut fb, Format::Png, None, 2).unwrap();
        fb.fail_at_row = Some(40);
        assert_eq!(
            cap.encode_all(&mut fb),
            Err(CaptureError::Fb(FbError::Timeout))
        );
    }
}
