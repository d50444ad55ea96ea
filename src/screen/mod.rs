//! Screen capture: reads a framebuffer through the narrow [`Framebuffer`] trait (the Newport
//! driver on the Indy, an in-memory fake in host tests), turns its pixels into RGB and encodes
//! them as PNG thumbnails or a full-size BMP, a bounded piece per poll.

pub mod framebuffer;

pub use framebuffer::{FbError, Framebuffer, Mode, PixelKind};
