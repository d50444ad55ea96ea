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
/// The mode entry: CI8 with the CMAP MSB of [`CMAP_BASE`], and the same MSB in the auxiliary
/// CMAP MSB (bits 23:19, unused while the auxiliary pixel mode, bits 18:16, is off). The module
/// reads an entry a byte at a time low byte first (X.Org's `NewportXmap9GetModeRegister`),
/// MAME's XMAP9 answers high byte first; with bits 23:16 equal to bits 7:0 both orders read
/// the same entry, so the screen comparison checks the rest of the path and the byte order
/// stays an open question (`docs/hardware-fidelity.md`).
pub const SCREEN_MODE: u32 = {
    let e = entry(PIX_CI, SIZE_8, (CMAP_BASE >> 8) as u32);
    e | ((e & 0xFF) << 16)
};
/// VC2 display control as the rig's model has it. Under Linux's `newport.h` names that is
/// EVIRQ | EVIDEO | ECURS | EGSYNC | EILACE | ECDISP: video timing and the cursor on, EDIDS (0x8)
/// clear. MAME reads only the cursor bits (4, 7, glyph mode 8) and the vertical interrupt; its
/// cursor glyph comes from VC2 RAM at the cursor entry (0), which the stand-in leaves zero.
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

/// The colour of CMAP entry `CMAP_BASE + i`, (R, G, B): three different functions of `i`, so
/// a swapped channel or a wrong index shows in the comparison.
pub const fn palette(i: u8) -> (u8, u8, u8) {
    (i, i.wrapping_mul(7) ^ 0x55, 255 - i)
}

/// The Bt445 RAMDAC between the CMAPs and the DACs (DCB slave 7, X.Org's `BT445_PROTOCOL`
/// DCB_CYCLES(1,1,3)): its gamma table maps each channel. A PROM loads it; MAME's model starts
/// it all zero and maps every pixel through it, which is why MAME showed a black screen.
pub const SLAVE_RAMDAC: u32 = 7;
pub const RAMDAC_PROTOCOL: u32 = (1 << 23) | (1 << 18) | (3 << 13);
/// CRS 0: the table address; CRS 1: an entry, which advances the address.
pub const RAMDAC_CRS_ADDR: u32 = 0;
pub const RAMDAC_CRS_LUT: u32 = 1;

/// Gamma table entry `i` of the identity ramp, as one word with the channels in 31:8 (the form
/// MAME's model takes; all three are `i`, so their order does not matter).
pub const fn ramdac_word(i: u8) -> u32 {
    let i = i as u32;
    (i << 24) | (i << 16) | (i << 8)
}

/// A filled rectangle of colour index `ci`, corners included.
#[derive(Clone, Copy)]
pub struct Rect {
    pub x0: u16,
    pub y0: u16,
    pub x1: u16,
    pub y1: u16,
    pub ci: u8,
}

/// Columns of the text-like cells, and their rows.
const CELL_COLS: u16 = 120;
const CELL_ROWS: u16 = 24;

/// The picture the stand-in draws before the module runs, as a PROM console leaves text on the
/// screen: a background, sixteen colour bars, and rows of 8×16 cells in eight indices with a
/// fixed pattern of gaps. Rectangle `n` is [`picture`]`(n)` for `n < `[`PICTURE_RECTS`].
pub const PICTURE_RECTS: usize = 1 + 16 + (CELL_COLS * CELL_ROWS) as usize;

pub const fn picture(n: usize) -> Option<Rect> {
    if n == 0 {
        return Some(Rect {
            x0: 0,
            y0: 0,
            x1: 1279,
            y1: 1023,
            ci: 0,
        });
    }
    if n <= 16 {
        let k = (n - 1) as u16;
        return Some(Rect {
            x0: 80 * k,
            y0: 0,
            x1: 80 * k + 79,
            y1: 255,
            ci: (16 * k) as u8 + 1,
        });
    }
    if n >= PICTURE_RECTS {
        return None;
    }
    let c = (n - 17) as u16;
    let (row, col) = (c / CELL_COLS, c % CELL_COLS);
    // A cell is left out when this hash of its place says so: text has gaps.
    let gap = (row as u32 * 31 + col as u32 * 17).is_multiple_of(7);
    let ci = if gap { 0 } else { 200 + (row + col) as u8 % 8 };
    Some(Rect {
        x0: 40 + 10 * col,
        y0: 300 + 24 * row,
        x1: 40 + 10 * col + 7,
        y1: 300 + 24 * row + 15,
        ci,
    })
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
    fn the_mode_entry_reads_the_same_in_either_byte_order() {
        let low_first = SCREEN_MODE;
        let b = [SCREEN_MODE >> 16, SCREEN_MODE >> 8, SCREEN_MODE].map(|v| v & 0xFF);
        let high_first = b[0] | (b[1] << 8) | (b[2] << 16);
        assert_eq!(low_first, high_first);
        // Auxiliary pixel mode (bits 18:16) off: the auxiliary MSB is never used.
        assert_eq!((SCREEN_MODE >> 16) & 7, 0);
    }

    #[test]
    fn the_picture_lies_on_the_screen_and_uses_many_indices() {
        let mut used = [false; 256];
        let mut n = 0;
        while let Some(r) = picture(n) {
            assert!(r.x0 <= r.x1 && r.x1 < 1280 && r.y0 <= r.y1 && r.y1 < 1024);
            used[usize::from(r.ci)] = true;
            n += 1;
        }
        assert_eq!(n, PICTURE_RECTS);
        assert!(used.iter().filter(|u| **u).count() >= 16 + 8);
        // Different indices give different colours on every channel's function.
        assert_ne!(palette(1), palette(17));
        assert_ne!(palette(0).0, palette(0).2);
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
