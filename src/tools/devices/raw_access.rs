//! Physical memory and registers, handed to the device tools alone: the bus is private to
//! `tools::devices`, so no other tool can reach it, whatever context it holds.

use crate::hil::raw_bus::RawBus;
use alloc::boxed::Box;

pub struct RawAccess(pub(super) Option<Box<dyn RawBus>>);

impl RawAccess {
    /// The board's raw bus (minted at init, where the board vouches for it).
    pub fn granted(bus: Box<dyn RawBus>) -> Self {
        RawAccess(Some(bus))
    }

    /// No raw access: the device tools answer `E_NOSYS`.
    pub fn none() -> Self {
        RawAccess(None)
    }
}
