//! Screen capture: reads a framebuffer through the narrow [`Framebuffer`](crate::hil::framebuffer::Framebuffer) trait (the Newport
//! driver on the Indy, an in-memory fake in host tests), turns its pixels into RGB and encodes
//! them as PNG thumbnails or a full-size BMP, a bounded piece per poll.

pub mod bmp;
pub mod capture;
pub mod downscale;
#[cfg(test)]
pub(crate) mod fake;
pub mod pixel;
pub mod png;
pub mod region;

pub use capture::{Capture, CaptureError, Format, Poll};
pub use region::Region;
