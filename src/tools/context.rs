//! The context every tool handler gets: the shared [`Services`] (reached through `Deref`, so a
//! handler writes `ctx.fs`), plus the raw bus, which only the device tools can open.

use super::devices::RawAccess;
use crate::services::context::Services;
use core::ops::{Deref, DerefMut};

pub struct Ctx {
    services: Services,
    /// Physical memory and registers: opaque outside `tools::devices`.
    pub raw: RawAccess,
}

impl Ctx {
    pub fn new(services: Services, raw: RawAccess) -> Self {
        Ctx { services, raw }
    }
}

impl Deref for Ctx {
    type Target = Services;
    fn deref(&self) -> &Services {
        &self.services
    }
}

impl DerefMut for Ctx {
    fn deref_mut(&mut self) -> &mut Services {
        &mut self.services
    }
}
