//! The REX3 host readback engine: DRAWMODE0/1, XYSTARTI/XYENDI and HOSTRW0 with the GO
//! prefetch. Only the READ opcode is modelled (the rig draws its console itself), which is all
//! the module's capture needs.
//!
//! A GO (an access at register + 0x800, or a GO _SETUP write) executes the command: with
//! DOSETUP the first GO after XYSTARTI starts at the rectangle's corner; each execution packs the
//! next word into HOSTRW0 and advances. Reading GO HOSTRW0 returns the word then fetches the
//! next one; reading plain HOSTRW0 only returns it. So `GO _SETUP`, N−1 GO reads and one plain
//! read yield exactly N words.

use super::vram::Vram;

use indy::regs::rex3::{
    DM0_DOSETUP, DM0_OPCODE, DM0_READ, DM1_HD_SHIFT, DM1_HD8, DM1_HD32, DM1_RWPACKED,
};

/// XYWIN's coordinates are biased by this (XYWIN_IDENTITY holds it in both halves).
const XYWIN_BIAS: i64 = 0x1000;

#[derive(Default)]
pub struct Readback {
    pub drawmode0: u32,
    pub drawmode1: u32,
    pub wrmask: u32,
    pub xystart: u32,
    pub xyend: u32,
    /// Next pixel to fetch, in register coordinates.
    pos: (u32, u32),
    /// XYSTARTI was written since the last setup.
    pending_setup: bool,
    /// The rectangle has been read to its end.
    done: bool,
    /// The HOSTRW0 register: the word the last execution fetched.
    pub host: u32,
    /// Executions after the rectangle's last word (a driver that reads the last word through
    /// GO makes the board fetch past the rectangle).
    pub overruns: u64,
}

fn xy(v: u32) -> (u32, u32) {
    ((v >> 16) & 0xFFFF, v & 0xFFFF)
}

impl Readback {
    pub fn set_start(&mut self, v: u32) {
        self.xystart = v;
        self.pending_setup = true;
    }

    /// One GO: set up if asked, then fetch the next word into HOSTRW0.
    pub fn go(&mut self, vram: &Vram, xywin: u32) {
        if self.drawmode0 & DM0_OPCODE != DM0_READ {
            return;
        }
        if self.pending_setup && self.drawmode0 & DM0_DOSETUP != 0 {
            self.pos = xy(self.xystart);
            self.pending_setup = false;
            self.done = false;
        }
        self.host = if self.done {
            self.overruns += 1;
            0
        } else {
            self.fetch(vram, xywin)
        };
    }

    fn pixel(vram: &Vram, x: u32, y: u32, xywin: u32) -> u32 {
        let sx = i64::from(x) + i64::from(xywin >> 16) - XYWIN_BIAS;
        let sy = i64::from(y) + i64::from(xywin & 0xFFFF) - XYWIN_BIAS;
        match (u32::try_from(sx), u32::try_from(sy)) {
            (Ok(sx), Ok(sy)) => vram.get(sx, sy),
            _ => 0,
        }
    }

    /// Packs the word at the current position and advances; words never span rows.
    fn fetch(&mut self, vram: &Vram, xywin: u32) -> u32 {
        let hd = (self.drawmode1 >> DM1_HD_SHIFT) & 3;
        let packed8 = self.drawmode1 & DM1_RWPACKED != 0 && hd == DM1_HD8;
        let per = if packed8 { 4 } else { 1 };
        let (x, y) = self.pos;
        let (sx, _) = xy(self.xystart);
        let (ex, ey) = xy(self.xyend);
        let n = if x <= ex { per.min(ex - x + 1) } else { 1 };
        let mut word = 0;
        for i in 0..n {
            let p = Self::pixel(vram, x + i, y, xywin);
            word |= if packed8 {
                (p & 0xFF) << (24 - 8 * i)
            } else if hd == DM1_HD32 {
                p & 0x00FF_FFFF
            } else {
                p & 0xFF
            };
        }
        if x + n > ex {
            if y >= ey {
                self.done = true;
            }
            self.pos = (sx, y + 1);
        } else {
            self.pos = (x + n, y);
        }
        word
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indy::regs::rex3::{DM0_READ_BLOCK, DM1_READ8, DM1_READ24, XYWIN_IDENTITY};

    fn setup(dm1: u32, start: (u32, u32), end: (u32, u32)) -> Readback {
        let mut r = Readback {
            drawmode0: DM0_READ_BLOCK,
            drawmode1: dm1,
            ..Readback::default()
        };
        r.set_start((start.0 << 16) | start.1);
        r.xyend = (end.0 << 16) | end.1;
        r
    }

    #[test]
    fn packed_8bit_words_never_span_rows() {
        let mut v = Vram::default();
        for x in 0..8 {
            v.set(x, 5, 0x10 + x);
            v.set(x, 6, 0x20 + x);
        }
        let mut r = setup(DM1_READ8, (1, 5), (5, 6));
        let mut words = Vec::new();
        for _ in 0..4 {
            r.go(&v, XYWIN_IDENTITY);
            words.push(r.host);
        }
        // Row 5: pixels 1..=4 then 5 alone (left-justified); row 6 likewise.
        assert_eq!(words, [0x1112_1314, 0x1500_0000, 0x2122_2324, 0x2500_0000]);
        assert_eq!(r.overruns, 0);
        r.go(&v, XYWIN_IDENTITY);
        assert_eq!(r.host, 0, "past the end reads nothing");
        assert_eq!(r.overruns, 1);
    }

    #[test]
    fn rgb24_one_pixel_per_word_and_window_offset() {
        let mut v = Vram::default();
        v.set(10, 20, 0x00AB_CDEF);
        v.set(11, 20, 0xFF12_3456);
        let mut r = setup(DM1_READ24, (9, 19), (10, 19));
        // XYWIN shifts coordinates by (+1, +1).
        r.go(&v, 0x1001_1001);
        assert_eq!(r.host, 0x00AB_CDEF);
        r.go(&v, 0x1001_1001);
        assert_eq!(r.host, 0x0012_3456);
        // Off-screen coordinates read 0.
        let mut r = setup(DM1_READ24, (1279, 0), (1281, 0));
        v.set(1279, 0, 7);
        r.go(&v, XYWIN_IDENTITY);
        assert_eq!(r.host, 7);
        r.go(&v, XYWIN_IDENTITY);
        assert_eq!(r.host, 0);
    }
}
