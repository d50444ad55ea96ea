//! Display-control-bus transfers: DCBMODE names the slave, its register (CRS) and the width;
//! each DCBDATA0 access is one transfer, sized as Linux does (1 byte at +3, 2 bytes at +2,
//! 3 or 4 bytes as a word with 3-byte data left-justified). Every transfer first waits for
//! BACKBUSY to clear, a bounded number of polls.

use crate::hil::framebuffer::FbError;
use crate::hil::newport_bus::NewportBus;
use indy::regs::rex3::{DCBDATA0, DCBMODE, STATUS, STATUS_BACKBUSY};

/// STATUS polls before a busy board counts as hung. Each is an uncached bus read (well over
/// 100 ns on the Indy), so this bounds a wait to tens of milliseconds.
pub const MAX_POLLS: u32 = 100_000;

/// Waits until none of `bits` is set in STATUS.
pub fn wait<B: NewportBus>(bus: &mut B, bits: u32) -> Result<(), FbError> {
    for _ in 0..MAX_POLLS {
        if bus.read32(STATUS) & bits == 0 {
            return Ok(());
        }
    }
    Err(FbError::Timeout)
}

/// Selects the slave, register and width of the following transfers.
pub fn select<B: NewportBus>(bus: &mut B, mode: u32) -> Result<(), FbError> {
    wait(bus, STATUS_BACKBUSY)?;
    bus.write32(DCBMODE, mode);
    Ok(())
}

pub fn write8<B: NewportBus>(bus: &mut B, mode: u32, value: u8) -> Result<(), FbError> {
    select(bus, mode)?;
    bus.write8(DCBDATA0 + 3, value);
    Ok(())
}

pub fn write16<B: NewportBus>(bus: &mut B, mode: u32, value: u16) -> Result<(), FbError> {
    select(bus, mode)?;
    bus.write16(DCBDATA0 + 2, value);
    Ok(())
}

pub fn write32<B: NewportBus>(bus: &mut B, mode: u32, value: u32) -> Result<(), FbError> {
    select(bus, mode)?;
    bus.write32(DCBDATA0, value);
    Ok(())
}

/// One more 1-byte read with the mode already selected.
pub fn next8<B: NewportBus>(bus: &mut B) -> Result<u8, FbError> {
    wait(bus, STATUS_BACKBUSY)?;
    Ok(bus.read8(DCBDATA0 + 3))
}

/// One more 2-byte read with the mode already selected (auto-incrementing slaves).
pub fn next16<B: NewportBus>(bus: &mut B) -> Result<u16, FbError> {
    wait(bus, STATUS_BACKBUSY)?;
    Ok(bus.read16(DCBDATA0 + 2))
}

/// One more 3- or 4-byte read with the mode already selected.
pub fn next32<B: NewportBus>(bus: &mut B) -> Result<u32, FbError> {
    wait(bus, STATUS_BACKBUSY)?;
    Ok(bus.read32(DCBDATA0))
}
