//! The physical-memory policy of the device tools: which RAM ranges and which register windows
//! a raw access may touch. The board's map says what exists; the kernel's probe says what
//! answers now (RAM it left unmapped, an empty GIO slot), so a bad address becomes an error
//! instead of a bus error in the module.

use crate::hil::raw_bus::{MmioError, RawBus};
use indy::abi::status;
use indy::map::{self, RamError, Window};

/// Why an access was refused before it reached the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhysError {
    /// At or above 512 MiB: high RAM, which only mapped addresses reach.
    HighRam { phys: u32 },
    /// Not all installed RAM; `ram` is the installed size.
    NotRam { phys: u32, len: u32, ram: u32 },
    /// A page of the range does not answer the kernel's probe.
    RamNoAnswer { at: u32 },
    /// The access itself is malformed (its width, or an address not aligned to it).
    Access {
        phys: u32,
        width: u32,
        error: MmioError,
    },
    /// No known window holds the span; `nearest` is the closest one.
    NoWindow {
        phys: u32,
        span: u32,
        nearest: &'static Window,
    },
    /// The window does not take accesses of this width.
    WidthNotAllowed { window: &'static Window, width: u32 },
    /// The window's device does not answer the kernel's probe.
    Absent { window: &'static Window, phys: u32 },
}

/// Checks `len` bytes of RAM at `phys`: installed (of `ram_bytes`), and every 4 KiB page
/// answering the kernel's probe. An ABI 10 kernel cannot probe; the range check is all there is
/// then.
pub fn check_ram(bus: &dyn RawBus, phys: u32, len: u32, ram_bytes: u32) -> Result<(), PhysError> {
    map::check_ram(phys, len, ram_bytes).map_err(|e| match e {
        RamError::HighRam => PhysError::HighRam { phys },
        RamError::NotRam => PhysError::NotRam {
            phys,
            len,
            ram: ram_bytes,
        },
    })?;
    const PAGE: u32 = 4096;
    let end = phys.saturating_add(len.max(1) - 1);
    let mut page = phys & !(PAGE - 1);
    while page <= end {
        let at = page.max(phys);
        match bus.bus_probe(at, 1) {
            Ok(()) | Err(status::E_NOSYS) => {}
            Err(_) => return Err(PhysError::RamNoAnswer { at }),
        }
        match page.checked_add(PAGE) {
            Some(next) => page = next,
            None => break,
        }
    }
    Ok(())
}

/// The window holding `count` registers of `width` bytes at `phys`, checked for width,
/// alignment and presence (the kernel's probe where it offers one; on ABI 10 the access goes
/// ahead, as the tools' descriptions warn).
pub fn window_for(
    bus: &dyn RawBus,
    phys: u32,
    width: u32,
    count: u32,
) -> Result<&'static Window, PhysError> {
    if !matches!(width, 1 | 2 | 4) {
        let error = MmioError::Width;
        return Err(PhysError::Access { phys, width, error });
    }
    if !phys.is_multiple_of(width) {
        let error = MmioError::Align;
        return Err(PhysError::Access { phys, width, error });
    }
    let span = width.saturating_mul(count);
    let Some(window) = map::find(phys, span) else {
        return Err(PhysError::NoWindow {
            phys,
            span,
            nearest: map::nearest(phys),
        });
    };
    if !window.allows(width) {
        return Err(PhysError::WidthNotAllowed { window, width });
    }
    match bus.bus_probe(phys, width) {
        Ok(()) | Err(status::E_NOSYS) => Ok(window),
        Err(_) => Err(PhysError::Absent { window, phys }),
    }
}
