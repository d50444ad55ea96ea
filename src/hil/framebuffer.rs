//! The interface between the screen encoder and the graphics hardware. The driver knows the
//! registers (REX3 readback, VC2 timing tables, XMAP mode entries, the colour map); the encoder
//! knows only modes, raw pixel values and colour-map entries.

/// How the pixels of the current video mode are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelKind {
    /// 8-bit colour index; the colour is colour-map entry `cmap_base + pixel`.
    Ci8 { cmap_base: u16 },
    /// 8-bit direct colour: blue in bits 7:6, green 5:3, red 2:0.
    Rgb8,
    /// 24-bit direct colour, one pixel per word: `0x00BBGGRR` (red in the low byte).
    Rgb24,
}

/// The video mode the display shows now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub width: u32,
    pub height: u32,
    pub pixels: PixelKind,
}

/// Why the framebuffer could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FbError {
    /// No graphics board answered (or the kernel could not probe for one).
    NoDevice,
    /// The board stayed busy past the driver's bound.
    Timeout,
    /// The board reported a mode the driver cannot read (message for the user).
    Unsupported(&'static str),
    /// The request lies outside the mode (a driver bug or a stale mode).
    OutOfRange,
}

/// A framebuffer the encoder can read back, one span at a time so a capture can stop after any
/// span and go on in a later poll.
pub trait Framebuffer {
    /// Finds the current video mode (size from the video timing, pixel kind from the mode
    /// tables).
    fn mode(&mut self) -> Result<Mode, FbError>;
    /// RGB of colour-map entries `first .. first + out.len()`.
    fn cmap(&mut self, first: u16, out: &mut [[u8; 3]]) -> Result<(), FbError>;
    /// Raw values of the pixels `x .. x + out.len()` of screen row `y` in `mode` (what the
    /// viewer sees as row `y`, whatever the hardware's scroll offset): `0x00BBGGRR` a word for
    /// [`PixelKind::Rgb24`]; for the 8-bit modes (a colour index for [`PixelKind::Ci8`], the
    /// byte for [`PixelKind::Rgb8`]) four to a word as the board hands them over, leftmost in
    /// bits 31:24, the first word holding pixel `x & !3` on (the words past the span's last
    /// are left as they were): unpacking them is left to the consumer, which often need not.
    fn read_span(&mut self, mode: &Mode, x: u32, y: u32, out: &mut [u32]) -> Result<(), FbError>;
}
