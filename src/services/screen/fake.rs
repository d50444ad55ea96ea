//! An in-memory framebuffer for host tests: pixels and a colour map in vectors, counters of
//! what the encoder read, and a switch that makes a row fail.

use crate::hil::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use alloc::vec;
use alloc::vec::Vec;

pub struct FakeFb {
    pub mode: Mode,
    pub pixels: Vec<u32>,
    pub cmap: Vec<[u8; 3]>,
    /// Colour-map entries read so far.
    pub cmap_reads: usize,
    /// Pixels read so far.
    pub pixel_reads: usize,
    /// Reading this screen row answers `Timeout`.
    pub fail_at_row: Option<u32>,
    /// `mode` answers this.
    pub mode_error: Option<FbError>,
}

impl FakeFb {
    pub fn new(width: u32, height: u32, pixels: PixelKind) -> Self {
        FakeFb {
            mode: Mode {
                width,
                height,
                pixels,
            },
            pixels: vec![0; (width * height) as usize],
            cmap: vec![[0; 3]; 8192],
            cmap_reads: 0,
            pixel_reads: 0,
            fail_at_row: None,
            mode_error: None,
        }
    }

    pub fn set(&mut self, x: u32, y: u32, raw: u32) {
        self.pixels[(y * self.mode.width + x) as usize] = raw;
    }

    pub fn set_cmap(&mut self, index: u16, rgb: [u8; 3]) {
        self.cmap[index as usize] = rgb;
    }
}

impl Framebuffer for FakeFb {
    fn mode(&mut self) -> Result<Mode, FbError> {
        match self.mode_error {
            Some(e) => Err(e),
            None => Ok(self.mode),
        }
    }

    fn cmap(&mut self, first: u16, out: &mut [[u8; 3]]) -> Result<(), FbError> {
        let first = first as usize;
        let src = self
            .cmap
            .get(first..first + out.len())
            .ok_or(FbError::OutOfRange)?;
        out.copy_from_slice(src);
        self.cmap_reads += out.len();
        Ok(())
    }

    fn read_span(&mut self, mode: &Mode, x: u32, y: u32, out: &mut [u32]) -> Result<(), FbError> {
        if self.fail_at_row == Some(y) {
            return Err(FbError::Timeout);
        }
        if *mode != self.mode || y >= mode.height || x as usize + out.len() > mode.width as usize {
            return Err(FbError::OutOfRange);
        }
        let at = (y * mode.width + x) as usize;
        let span = &self.pixels[at..at + out.len()];
        self.pixel_reads += out.len();
        if mode.pixels == PixelKind::Rgb24 {
            out.copy_from_slice(span);
            return Ok(());
        }
        // Four to a word from pixel `x & !3`, as the board hands them over.
        let skip = (x & 3) as usize;
        for (k, p) in span.iter().enumerate() {
            let (word, byte) = ((k + skip) / 4, (k + skip) % 4);
            if byte == 0 || k == 0 {
                out[word] = 0;
            }
            out[word] |= (p & 0xFF) << (24 - 8 * byte);
        }
        Ok(())
    }
}
