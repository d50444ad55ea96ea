//! The CMAP colour-map pair, DCB slaves [`super::dcb::SLAVE_CMAP0`]/`1`: 8192 RGB entries
//! (`docs/hardware.md`, "CMAP").

/// DCB chip-select timing for the CMAP.
pub const PROTOCOL: u32 = 0x0084_8000;

/// CRS 0: the entry address (2-byte transfer, byte-swapped with `dcb::SENDIAN`).
pub const CRS_ADDR: u32 = 0;
/// CRS 1: write the entry at the address, `R<<16|G<<8|B` (3 bytes), and advance.
pub const CRS_WRITE: u32 = 1;
/// CRS 2: read the entry at the address the same way, and advance.
pub const CRS_READ: u32 = 2;

/// Number of entries.
pub const ENTRIES: u32 = 8192;
