//! REX3 host readback of one span (X `NewportXAAReadPixmap`): wait for idle, DRAWMODE1 for the
//! depth, WRMASK all ones, DRAWMODE0 = READ|BLOCK|DOSETUP|CHOST, the rectangle (both corners
//! included), GO _SETUP to prime the prefetch, then every word but the last from GO HOSTRW0 and
//! the last from plain HOSTRW0. Words never span rows.
//!
//! 8-bit spans are widened to whole words (x rounded down to a multiple of 4) and handed over
//! as read, four pixels a word. XYWIN is set to 1:1 for the read and put back afterwards.

use super::dcb;
use crate::hil::framebuffer::FbError;
use crate::hil::newport_bus::NewportBus;
use indy::regs::rex3::*;

/// Programs a block read of VRAM row `row`, columns `x0..=x1`, and primes the prefetch.
fn start<B: NewportBus>(bus: &mut B, dm1: u32, x0: u32, x1: u32, row: u32) -> Result<(), FbError> {
    dcb::wait(bus, STATUS_GFXBUSY | STATUS_BACKBUSY)?;
    bus.write32(DRAWMODE1, dm1);
    bus.write32(WRMASK, 0xFFFF_FFFF);
    bus.write32(DRAWMODE0, DM0_READ_BLOCK);
    bus.write32(XYSTARTI, (x0 << 16) | row);
    bus.write32(XYENDI, (x1 << 16) | row);
    bus.write32(SETUP + GO, 0);
    Ok(())
}

/// Reads the 8-bit pixels `x .. x + out.len()` of VRAM row `row` into the first words of
/// `out`, four a word from pixel `x & !3` on. `out` is not empty and the span lies inside VRAM
/// (the caller checks).
pub fn read8<B: NewportBus>(bus: &mut B, row: u32, x: u32, out: &mut [u32]) -> Result<(), FbError> {
    let x0 = x & !3;
    let x1 = x + out.len() as u32 - 1;
    let words = ((x1 - x0) >> 2) as usize + 1;
    start(bus, DM1_READ8, x0, x1, row)?;
    // Every word but the last through GO, the last from plain HOSTRW0.
    let Some((last, body)) = out.get_mut(..words).and_then(|w| w.split_last_mut()) else {
        return Ok(());
    };
    for w in body {
        *w = bus.read32(HOSTRW0 + GO);
    }
    *last = bus.read32(HOSTRW0);
    Ok(())
}

/// Reads 24-bit pixels (`0x00BBGGRR`) `x .. x + out.len()` of VRAM row `row`, one per word.
pub fn read24<B: NewportBus>(
    bus: &mut B,
    row: u32,
    x: u32,
    out: &mut [u32],
) -> Result<(), FbError> {
    let Some((last, body)) = out.split_last_mut() else {
        return Ok(());
    };
    start(bus, DM1_READ24, x, x + body.len() as u32, row)?;
    for p in body {
        *p = bus.read32(HOSTRW0 + GO) & 0x00FF_FFFF;
    }
    *last = bus.read32(HOSTRW0) & 0x00FF_FFFF;
    Ok(())
}
