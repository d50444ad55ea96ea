//! The Newport (XL) graphics board of the Indy, for reading the screen back: REX3 host
//! readback, the video mode from the VC2 timing and DID tables and the XMAP9 mode entries, and
//! the CMAP colour map, behind [`Framebuffer`].
//!
//! ```ignore
//! // After probing the REX3 window (an empty GIO slot bus-errors):
//! let mut fb = Newport::new(bus); // the board's KSEG1 bus, or a model in tests
//! let mode = fb.mode()?;
//! fb.read_span(&mode, 0, 0, &mut row)?;
//! ```
//! Nothing here panics on register contents: every wait and table walk is bounded, and a mode
//! the driver cannot read is `FbError::Unsupported`. See `docs/newport.md`.

mod cmap;
mod dcb;
mod rex3;
mod vc2;
mod xmap;

use crate::hil::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use crate::hil::newport_bus::NewportBus;
pub use dcb::MAX_POLLS;
use indy::regs::rex3::{
    STATUS_BACKBUSY, STATUS_GFXBUSY, TOPSCAN, VRAM_ROWS, XYWIN, XYWIN_IDENTITY,
};

/// The Newport driver over a register bus.
pub struct Newport<B: NewportBus> {
    bus: B,
}

impl<B: NewportBus> Newport<B> {
    pub fn new(bus: B) -> Self {
        Newport { bus }
    }

    pub fn bus_mut(&mut self) -> &mut B {
        &mut self.bus
    }

    /// The VRAM row shown as screen row `y`: TOPSCAN holds the first shown row minus one.
    fn vram_row(&mut self, y: u32) -> u32 {
        let first = self.bus.read32(TOPSCAN).wrapping_add(1);
        (y.wrapping_add(first)) % VRAM_ROWS
    }
}

impl<B: NewportBus> Framebuffer for Newport<B> {
    fn mode(&mut self) -> Result<Mode, FbError> {
        dcb::wait(&mut self.bus, STATUS_GFXBUSY | STATUS_BACKBUSY)?;
        let (width, height) = vc2::screen_size(&mut self.bus)?;
        let did = vc2::screen_did(&mut self.bus)?;
        let entry = xmap::entry(&mut self.bus, did)?;
        let pixels = xmap::pixel_kind(entry)?;
        Ok(Mode {
            width,
            height,
            pixels,
        })
    }

    fn cmap(&mut self, first: u16, out: &mut [[u8; 3]]) -> Result<(), FbError> {
        cmap::read(&mut self.bus, first, out)
    }

    fn read_span(&mut self, mode: &Mode, x: u32, y: u32, out: &mut [u32]) -> Result<(), FbError> {
        let end = x.checked_add(out.len() as u32).ok_or(FbError::OutOfRange)?;
        if out.len() > vc2::MAX_WIDTH as usize
            || end > mode.width
            || mode.width > vc2::MAX_WIDTH
            || y >= mode.height
            || mode.height > VRAM_ROWS
        {
            return Err(FbError::OutOfRange);
        }
        if out.is_empty() {
            return Ok(());
        }
        let row = self.vram_row(y);
        let xywin = self.bus.read32(XYWIN);
        self.bus.write32(XYWIN, XYWIN_IDENTITY);
        let r = match mode.pixels {
            PixelKind::Ci8 { .. } | PixelKind::Rgb8 => rex3::read8(&mut self.bus, row, x, out),
            PixelKind::Rgb24 => rex3::read24(&mut self.bus, row, x, out),
        };
        self.bus.write32(XYWIN, xywin);
        r
    }
}
