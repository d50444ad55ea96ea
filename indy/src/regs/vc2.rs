//! The VC2 video timing controller, DCB slave [`super::dcb::SLAVE_VC2`]: 32 halfword registers
//! and 32K halfwords of RAM holding the video-timing and DID tables (`docs/hardware.md`, "VC2").

/// DCB chip-select timing for the VC2.
pub const PROTOCOL: u32 = 0x0084_1000;

/// CRS 0: a register index (1-byte transfer) or a whole register write
/// `(reg<<24)|(value<<8)` (3-byte transfer).
pub const CRS_INDEX: u32 = 0;
/// CRS 1: the selected register, as a halfword.
pub const CRS_REG: u32 = 1;
/// CRS 3: RAM at [`RADDR`], which then increments.
pub const CRS_RAM: u32 = 3;

/// Register: RAM address of the video-timing table.
pub const VENTRY: u8 = 0x00;
/// Register: RAM address of the DID table.
pub const DENTRY: u8 = 0x05;
/// Register: RAM address for CRS 3 accesses.
pub const RADDR: u8 = 0x07;
/// Register: display control.
pub const CONTROL: u8 = 0x10;
/// Register: configuration (0x1F per NetBSD and MAME; Linux says 0x20).
pub const CONFIG: u8 = 0x1F;
/// Number of registers.
pub const REGS: usize = 32;

/// Halfwords of VC2 RAM.
pub const RAM_WORDS: usize = 0x8000;
