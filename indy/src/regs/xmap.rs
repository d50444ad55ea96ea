//! The XMAP9 pair, DCB slaves [`super::dcb::SLAVE_XMAP0`]/`1`: 32 mode entries saying how each
//! display ID's pixels are stored (`docs/hardware.md`, "XMAP9"). An entry is 24 bits: 2 gamma
//! bypass, 7:3 CMAP MSB, 9:8 pixel mode, 11:10 size.

/// DCB chip-select timing for the XMAP9 (setup 2, hold 1, width 0).
pub const PROTOCOL: u32 = 0x0020_0800;

/// CRS 5: a byte of the entry [`CRS_INDEX`] selects (read), or a whole entry
/// `(entry<<24)|value` (4-byte write).
pub const CRS_MODE: u32 = 5;
/// CRS 7: `(entry<<2)|byte` selects what the next [`CRS_MODE`] read returns.
pub const CRS_INDEX: u32 = 7;

/// Number of mode entries.
pub const ENTRIES: usize = 32;

/// Pixel mode: colour index through the CMAP.
pub const PIX_CI: u32 = 0;
/// Pixel mode: RGB (1–3 are RGB maps; this one is plain RGB).
pub const PIX_RGB: u32 = 2;
/// Size field values: 4, 8, 12 and 24 bits per pixel.
pub const SIZE_4: u32 = 0;
pub const SIZE_8: u32 = 1;
pub const SIZE_12: u32 = 2;
pub const SIZE_24: u32 = 3;

/// A mode entry: pixel mode, size and the CMAP MSB (bits 12:8 of a CI pixel's CMAP index).
pub const fn entry(pix: u32, size: u32, cmap_msb: u32) -> u32 {
    ((size & 3) << 10) | ((pix & 3) << 8) | ((cmap_msb & 0x1F) << 3)
}

/// The pixel mode of an entry (0 CI, 1–3 RGB).
pub const fn pix_of(entry: u32) -> u32 {
    (entry >> 8) & 3
}

/// The size field of an entry.
pub const fn size_of(entry: u32) -> u32 {
    (entry >> 10) & 3
}

/// The CMAP index of colour-index pixel 0 in an entry's mode: the MSB in bits 12:8.
pub const fn cmap_base(entry: u32) -> u16 {
    (((entry >> 3) & 0x1F) << 8) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_fields_round_trip() {
        let e = entry(PIX_CI, SIZE_8, 1);
        assert_eq!(e, 0x408);
        assert_eq!(
            (pix_of(e), size_of(e), cmap_base(e)),
            (PIX_CI, SIZE_8, 0x100)
        );
        let e = entry(PIX_RGB, SIZE_24, 0);
        assert_eq!((pix_of(e), size_of(e)), (PIX_RGB, SIZE_24));
        assert_eq!(cmap_base(0x4F8 | 0x100), 0x1F00);
    }
}
