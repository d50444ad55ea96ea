//! The console drawn on the screen: what the Z85C30 console transmits, as text in 8×16 cells
//! (the public-domain `font8x8` glyphs with each row doubled), 160 columns by 64 rows.
//!
//! It scrolls the way Linux's `newport_con` does: text row r, line j lives in VRAM row
//! `(16r + j + first) & 0x3FF`; scrolling adds 16 to `first` and clears the new bottom row, and
//! the TOPSCAN register holds `first − 1`. `\n` starts a new line (as CR LF), `\r` returns,
//! backspace steps left, tabs go to the next multiple of 8, long lines wrap, ANSI escape
//! sequences are skipped, and bytes above 0x7F (UTF-8) show as one `?` per character.

use super::vram::{HEIGHT, Vram};
use font8x8::legacy::BASIC_LEGACY;

pub const CELL_W: u32 = 8;
pub const CELL_H: u32 = 16;
pub const COLS: u32 = super::vram::WIDTH / CELL_W;
pub const ROWS: u32 = HEIGHT / CELL_H;
const LINE_MASK: u32 = HEIGHT - 1;

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Esc {
    #[default]
    None,
    /// After ESC.
    Start,
    /// Inside `ESC [`, until a final byte 0x40..=0x7E.
    Csi,
}

#[derive(Default)]
pub struct Text {
    col: u32,
    row: u32,
    /// First VRAM line on the screen.
    pub first: u32,
    esc: Esc,
}

/// Pixel values the text is drawn with.
#[derive(Clone, Copy)]
pub struct Colours {
    pub fg: u32,
    pub bg: u32,
}

impl Text {
    /// VRAM row of screen line `y`.
    pub fn vram_row(&self, y: u32) -> u32 {
        (y + self.first) & LINE_MASK
    }

    pub fn put(&mut self, b: u8, vram: &mut Vram, c: Colours) {
        match (self.esc, b) {
            (Esc::Start, b'[') => self.esc = Esc::Csi,
            (Esc::Start, _) => self.esc = Esc::None,
            (Esc::Csi, 0x40..=0x7E) => self.esc = Esc::None,
            (Esc::Csi, _) => {}
            (Esc::None, 0x1B) => self.esc = Esc::Start,
            (Esc::None, b'\n') => self.newline(vram, c),
            (Esc::None, b'\r') => self.col = 0,
            (Esc::None, 0x08) => self.col = self.col.saturating_sub(1),
            (Esc::None, b'\t') => {
                self.col = (self.col + 8) & !7;
                if self.col >= COLS {
                    self.newline(vram, c);
                }
            }
            (Esc::None, 0x20..=0x7E) => self.glyph(b, vram, c),
            // UTF-8: one mark per character, none for continuation bytes.
            (Esc::None, 0xC0..=0xFF) => self.glyph(b'?', vram, c),
            _ => {}
        }
    }

    fn glyph(&mut self, b: u8, vram: &mut Vram, c: Colours) {
        if self.col >= COLS {
            self.newline(vram, c);
        }
        let rows = BASIC_LEGACY.get(usize::from(b)).copied().unwrap_or([0; 8]);
        let x0 = self.col * CELL_W;
        for j in 0..CELL_H {
            let bits = rows[(j / 2) as usize];
            let y = self.vram_row(self.row * CELL_H + j);
            for i in 0..CELL_W {
                let on = (bits >> i) & 1 != 0;
                vram.set(x0 + i, y, if on { c.fg } else { c.bg });
            }
        }
        self.col += 1;
    }

    fn newline(&mut self, vram: &mut Vram, c: Colours) {
        self.col = 0;
        if self.row + 1 < ROWS {
            self.row += 1;
            return;
        }
        self.first = (self.first + CELL_H) & LINE_MASK;
        for j in 0..CELL_H {
            vram.fill_row(self.vram_row(self.row * CELL_H + j), c.bg);
        }
    }

    /// Back to the top-left of an unscrolled screen (the caller clears VRAM).
    pub fn home(&mut self) {
        *self = Text::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Colours = Colours { fg: 7, bg: 0 };

    fn lit(v: &Vram, t: &Text, text_row: u32, col: u32) -> usize {
        let mut n = 0;
        for j in 0..CELL_H {
            for i in 0..CELL_W {
                n += usize::from(v.get(col * CELL_W + i, t.vram_row(text_row * CELL_H + j)) == 7);
            }
        }
        n
    }

    #[test]
    fn draws_wraps_and_handles_controls() {
        let (mut v, mut t) = (Vram::default(), Text::default());
        for b in b"A\tB\x1b[1;31mC\rD\x08E\n\xc3\xa9" {
            t.put(*b, &mut v, C);
        }
        // 'A' at col 0 was overwritten by 'D' then 'E' (backspace), tab put 'B' at 8, the
        // escape sequence drew nothing, 'C' at 9.
        assert!(lit(&v, &t, 0, 0) > 0);
        assert_eq!(lit(&v, &t, 0, 1), 0);
        assert!(lit(&v, &t, 0, 8) > 0 && lit(&v, &t, 0, 9) > 0);
        assert_eq!(lit(&v, &t, 0, 10), 0);
        // The two-byte UTF-8 character is one mark on row 1.
        assert!(lit(&v, &t, 1, 0) > 0);
        assert_eq!(lit(&v, &t, 1, 1), 0);
        // A line longer than the screen wraps onto the next row.
        for _ in 0..=COLS {
            t.put(b'#', &mut v, C);
        }
        assert!(lit(&v, &t, 2, 0) > 0);
        assert!(lit(&v, &t, 2, 1) > 0, "row 2 col 1 got the wrapped '#'");
        assert_eq!(lit(&v, &t, 2, 2), 0);
    }

    #[test]
    fn scrolls_through_topscan() {
        let (mut v, mut t) = (Vram::default(), Text::default());
        t.put(b'X', &mut v, C);
        for _ in 0..ROWS {
            t.put(b'\n', &mut v, C);
        }
        // One scroll: the 'X' row left the screen, the screen starts 16 lines further on.
        assert_eq!(t.first, CELL_H);
        assert_eq!(lit(&v, &t, 0, 0), 0);
        t.put(b'Y', &mut v, C);
        assert!(lit(&v, &t, ROWS - 1, 0) > 0);
        // The bottom text row wraps around VRAM to lines 0..16.
        assert_eq!(t.vram_row((ROWS - 1) * CELL_H), 0);
    }
}
