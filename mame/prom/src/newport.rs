//! The Newport board as the SGI PROM leaves it, which the module's screen driver expects (it
//! reads the video mode back rather than setting one, `docs/newport.md`) and the rig's model
//! starts in: a 1280×1024 video-timing table and a DID table in the VC2's RAM, XMAP mode entry
//! [`SCREEN_DID`] colour-index 8 bits with its CMAP base at [`CMAP_BASE`], a grey ramp there,
//! TOPSCAN 0x3FF. MAME's board starts with all of that zeroed. This file says what to write;
//! `kernel` writes it through the REX3's DCB.

use indy::regs::xmap::{PIX_CI, SIZE_8, entry};

/// Where the tables go in VC2 RAM (the same places as the rig's model).
pub const LINE_TABLE: u16 = 0x0100;
pub const SEQ_BLANK: u16 = 0x0200;
pub const SEQ_VISIBLE: u16 = 0x0210;
pub const DID_TABLE: u16 = 0x0400;
pub const DID_LIST: u16 = 0x0800;
/// The display ID of every line, and the XMAP mode entry it selects.
pub const SCREEN_DID: u8 = 1;
/// CMAP index of colour-index pixel 0.
pub const CMAP_BASE: u16 = 0x100;
/// The mode entry: CI8 with the CMAP MSB of [`CMAP_BASE`].
pub const SCREEN_MODE: u32 = entry(PIX_CI, SIZE_8, (CMAP_BASE >> 8) as u32);
/// VC2 display control as the rig's model has it (display, DID and video timing enabled).
pub const VC2_CONTROL: u16 = 0x00F5;
pub const VC2_CONFIG: u16 = 0x0003;
/// The first displayed VRAM row minus one, wrapped: row 0 first.
pub const TOPSCAN: u32 = 0x3FF;

/// A two-word sequence entry for `cols` (even, ≤ 254) visible columns. The module's reader
/// (Linux's `newport_get_screensize`) counts bits 14:8 of the first word, doubled, when its bit 0
/// is clear, and takes a second word when bit 7 is clear. MAME's VC2 takes the state from bits 6:0
/// of both words (visible: bit 6 of the second) and the duration from bits 14:8 of the word that
/// follows the entry. A run of equal entries ended by [`SEQ_END`] (same duration bits) reads as
/// the same width both ways.
const fn visible_pair(cols: u16) -> (u16, u16) {
    ((cols / 2) << 8, 0x0040)
}

/// Ends a visible line: no columns (bit 0), one word (bit 7), end (bit 15); its bits 14:8 are
/// MAME's duration of the last visible entry. The zero word after it ends MAME's last run.
const SEQ_END: u16 = 0x8000 | (64 << 8) | 0x81;

/// The VC2 RAM writes, as runs of halfwords from an address: the line table (3 lines of sync,
/// 1024 visible, 38 blank), the blank and visible line sequences (1280 columns), the DID list
/// and, by [`did_table_run`], one DID-list pointer per visible line.
pub const fn vc2_runs() -> [(u16, &'static [u16]); 4] {
    const LINES: [u16; 8] = [SEQ_BLANK, 3, SEQ_VISIBLE, 1024, SEQ_BLANK, 38, 0, 0];
    const BLANK: [u16; 2] = [0x2081, 0x8081];
    const VISIBLE: [u16; 21] = {
        let mut v = [0u16; 21];
        let mut i = 0;
        while i < 10 {
            v[2 * i] = visible_pair(128).0;
            v[2 * i + 1] = visible_pair(128).1;
            i += 1;
        }
        v[20] = SEQ_END;
        v
    };
    const DIDS: [u16; 2] = [SCREEN_DID as u16, (1280 << 5) | SCREEN_DID as u16];
    [
        (LINE_TABLE, &LINES),
        (SEQ_BLANK, &BLANK),
        (SEQ_VISIBLE, &VISIBLE),
        (DID_LIST, &DIDS),
    ]
}

/// The DID table: `lines` copies of [`DID_LIST`] from [`DID_TABLE`].
pub const fn did_table_run() -> (u16, u16, u16) {
    (DID_TABLE, 1024, DID_LIST)
}

/// The colour of CMAP entry `CMAP_BASE + i`: a grey ramp, (R, G, B).
pub const fn palette(i: u8) -> (u8, u8, u8) {
    (i, i, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Width and height the way the module's driver reads them (`src/drivers/newport/vc2.rs`).
    fn screen_size(ram: &[u16]) -> (u32, u32) {
        let mut at = LINE_TABLE as usize;
        let (mut w, mut h) = (0, 0);
        loop {
            let (seq, lines) = (ram[at], ram[at + 1]);
            at += 2;
            if lines == 0 {
                break;
            }
            let mut p = seq as usize;
            let mut cols = 0u32;
            loop {
                let mut word = ram[p];
                p += 1;
                if word & 1 == 0 {
                    cols += u32::from((word >> 7) & 0xFE);
                }
                if word & 0x80 == 0 {
                    word = ram[p];
                    p += 1;
                }
                if word & 0x8000 != 0 {
                    break;
                }
            }
            if cols > 0 {
                w = w.max(cols);
                h += u32::from(lines);
            }
        }
        (w, h)
    }

    /// Visible columns of the line sequence at `seq` as MAME 0.251's VC2 decodes it (read from
    /// its `decode_vt_line`): an entry is one word, or two when bit 7 of the first is clear; the
    /// state is bits 6:0 of the first word and, for two-word entries, bits 14:8 and 6:0 of the
    /// second (the last kept by one-word entries); a pixel is visible when bit 6 of that last
    /// field is set; an entry lasts twice bits 14:8 of the word after it; the line ends after an
    /// entry whose words all have bit 15 set.
    fn mame_visible_columns(ram: &[u16], seq: u16) -> u32 {
        let mut p = seq as usize;
        let (mut c, mut cols) = (0u16, 0u32);
        loop {
            let a = ram[p];
            let (eol_a, mut eol_b) = (a & 0x8000 != 0, true);
            if a & 0x80 == 0 {
                let b = ram[p + 1];
                eol_b = b & 0x8000 != 0;
                c = b & 0x7F;
                p += 2;
            } else {
                p += 1;
            }
            let duration = u32::from((ram[p] & 0x7F00) >> 7);
            if c & 0x40 != 0 {
                cols += duration;
            }
            if eol_a && eol_b {
                return cols;
            }
        }
    }

    #[test]
    fn mame_reads_the_visible_sequence_as_1280_columns() {
        let mut ram = [0u16; 0x1000];
        for (addr, words) in vc2_runs() {
            ram[addr as usize..addr as usize + words.len()].copy_from_slice(words);
        }
        assert_eq!(mame_visible_columns(&ram, SEQ_VISIBLE), 1280);
        assert_eq!(mame_visible_columns(&ram, SEQ_BLANK), 0);
        // The rig's model starts with a visible sequence of one two-word entry (0x4000, 0x0010)
        // and nine one-word entries of 128 columns (0x4080): the module reads 1280 columns,
        // MAME none (no state has bit 6 set), and MAME's screen set-up then divides by zero.
        let rig = [
            0x4000, 0x0010, 0x4080, 0x4080, 0x4080, 0x4080, 0x4080, 0x4080, 0x4080, 0x4080, 0x4080,
            0x8081, 0,
        ];
        let mut ram = [0u16; 16];
        ram[..rig.len()].copy_from_slice(&rig);
        assert_eq!(mame_visible_columns(&ram, 0), 0);
    }

    #[test]
    fn tables_describe_1280_by_1024_with_did_1() {
        let mut ram = [0u16; 0x1000];
        for (addr, words) in vc2_runs() {
            ram[addr as usize..addr as usize + words.len()].copy_from_slice(words);
        }
        let (at, n, v) = did_table_run();
        ram[at as usize..(at + n) as usize].fill(v);
        assert_eq!(screen_size(&ram), (1280, 1024));
        let line0 = ram[DID_TABLE as usize];
        assert_eq!(ram[line0 as usize] & 0x1F, u16::from(SCREEN_DID));
        assert_eq!(indy::regs::xmap::cmap_base(SCREEN_MODE), CMAP_BASE);
        assert_eq!(indy::regs::xmap::pix_of(SCREEN_MODE), PIX_CI);
    }
}
