//! VC2 access and the video mode's size, found the way Linux's `newport_get_screensize` does:
//! walk the video-timing table (pairs of sequence pointer and line count, ending at a count of
//! 0); in each sequence, a word with bit 0 clear adds `(w>>7)&0xFE` columns, a word with bit 7
//! clear is followed by one more word, and bit 15 ends the sequence. Width is the largest column
//! count, height the sum of the line counts of sequences with columns. Every loop is bounded so
//! a garbage table ends in `Unsupported`, never a hang.

use super::dcb;
use crate::hil::framebuffer::FbError;
use crate::hil::newport_bus::NewportBus;
use indy::regs::dcb::{SLAVE_VC2, WIDTH1, WIDTH2, WIDTH3, crs as dcb_crs, slave as dcb_slave};
use indy::regs::rex3::VRAM_ROWS;
use indy::regs::vc2::{CRS_INDEX, CRS_RAM, CRS_REG, DENTRY, PROTOCOL, RADDR, VENTRY};

/// Timing-table pairs read at most (Linux reads 128 halfwords).
pub const MAX_PAIRS: usize = 64;
/// Words of one line sequence read at most.
pub const MAX_SEQ_WORDS: u32 = 1024;
/// The largest mode the driver reads: the visible VRAM.
pub const MAX_WIDTH: u32 = 1280;
pub const MAX_HEIGHT: u32 = VRAM_ROWS;

fn reg_mode(crs: u32, width: u32) -> u32 {
    dcb_slave(SLAVE_VC2) | PROTOCOL | dcb_crs(crs) | width
}

/// Reads VC2 register `reg`: its index as a byte to CRS 0, then a halfword from CRS 1.
pub fn get<B: NewportBus>(bus: &mut B, reg: u8) -> Result<u16, FbError> {
    dcb::write8(bus, reg_mode(CRS_INDEX, WIDTH1), reg)?;
    dcb::select(bus, reg_mode(CRS_REG, WIDTH2))?;
    dcb::next16(bus)
}

/// Writes VC2 register `reg`: one 3-byte transfer `(reg<<24)|(value<<8)`.
pub fn set<B: NewportBus>(bus: &mut B, reg: u8, value: u16) -> Result<(), FbError> {
    let word = (u32::from(reg) << 24) | (u32::from(value) << 8);
    dcb::write32(bus, reg_mode(CRS_INDEX, WIDTH3), word)
}

/// Points the RAM address (register 7) at `addr` and selects auto-incrementing RAM reads.
pub fn seek<B: NewportBus>(bus: &mut B, addr: u16) -> Result<(), FbError> {
    set(bus, RADDR, addr)?;
    dcb::select(bus, reg_mode(CRS_RAM, WIDTH2))
}

/// Columns of the line sequence at `addr`.
fn sequence_columns<B: NewportBus>(bus: &mut B, addr: u16) -> Result<u32, FbError> {
    seek(bus, addr)?;
    let mut cols = 0u32;
    let mut left = MAX_SEQ_WORDS;
    while left > 0 {
        left -= 1;
        let mut w = dcb::next16(bus)?;
        if w & 1 == 0 {
            cols += u32::from((w >> 7) & 0xFE);
        }
        if w & 0x80 == 0 {
            if left == 0 {
                break;
            }
            left -= 1;
            w = dcb::next16(bus)?;
        }
        if w & 0x8000 != 0 {
            return Ok(cols);
        }
    }
    Err(FbError::Unsupported("VC2 line sequence has no end"))
}

/// Width and height of the current video timing.
pub fn screen_size<B: NewportBus>(bus: &mut B) -> Result<(u32, u32), FbError> {
    let ventry = get(bus, VENTRY)?;
    seek(bus, ventry)?;
    let mut table = [(0u16, 0u16); MAX_PAIRS];
    let mut pairs = 0;
    for slot in table.iter_mut() {
        let seq = dcb::next16(bus)?;
        let lines = dcb::next16(bus)?;
        if lines == 0 {
            break;
        }
        *slot = (seq, lines);
        pairs += 1;
    }
    let (mut width, mut height) = (0u32, 0u32);
    for &(seq, lines) in table.iter().take(pairs) {
        let cols = sequence_columns(bus, seq)?;
        if cols > 0 {
            width = width.max(cols);
            height += u32::from(lines);
        }
    }
    if width == 0 || height == 0 {
        return Err(FbError::Unsupported("VC2 timing has no visible area"));
    }
    if width > MAX_WIDTH || height > MAX_HEIGHT {
        return Err(FbError::Unsupported(
            "VC2 timing is larger than the framebuffer",
        ));
    }
    Ok((width, height))
}

/// The display ID of the screen: the first entry of line 0's list in the DID table (register 5
/// points at one list pointer per line; a list holds `(x<<5)|did` halfwords). The driver uses it
/// for the whole screen.
pub fn screen_did<B: NewportBus>(bus: &mut B) -> Result<u8, FbError> {
    let dentry = get(bus, DENTRY)?;
    seek(bus, dentry)?;
    let line0 = dcb::next16(bus)?;
    seek(bus, line0)?;
    Ok((dcb::next16(bus)? & 0x1F) as u8)
}
