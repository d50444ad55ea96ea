//! Pictures of the screen as the tests read them: PNG and BMP decoded to RGB, and text read back
//! off the console's cells with glyphs learned from the picture itself (what anyone holding a
//! picture can do, with no font of its own).

use std::collections::HashMap;

/// An RGB image as the tests compare them.
pub struct Rgb {
    pub width: usize,
    pub height: usize,
    pub px: Vec<[u8; 3]>,
}

impl Rgb {
    pub fn at(&self, x: usize, y: usize) -> [u8; 3] {
        self.px[y * self.width + x]
    }

    /// The most common colour: the console background.
    pub fn background(&self) -> [u8; 3] {
        let mut counts = std::collections::HashMap::new();
        for p in &self.px {
            *counts.entry(*p).or_insert(0usize) += 1;
        }
        counts.into_iter().max_by_key(|(_, n)| *n).unwrap().0
    }

    /// Each `s`×`s` box averaged with rounding, as the module's box filter does.
    pub fn shrink(&self, s: usize) -> Rgb {
        let (w, h) = (self.width / s, self.height / s);
        let mut px = Vec::with_capacity(w * h);
        for by in 0..h {
            for bx in 0..w {
                let mut sum = [0u32; 3];
                for y in by * s..by * s + s {
                    for x in bx * s..bx * s + s {
                        for (c, v) in sum.iter_mut().zip(self.at(x, y)) {
                            *c += u32::from(v);
                        }
                    }
                }
                let area = (s * s) as u32;
                px.push(sum.map(|c| ((c + area / 2) / area) as u8));
            }
        }
        Rgb {
            width: w,
            height: h,
            px,
        }
    }
}

pub fn decode_png(bytes: &[u8]) -> Rgb {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("a sane size")];
    let info = reader.next_frame(&mut buf).expect("PNG image data");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let px = buf[..info.buffer_size()]
        .chunks_exact(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    Rgb {
        width: info.width as usize,
        height: info.height as usize,
        px,
    }
}

pub fn decode_bmp(bytes: &[u8]) -> Rgb {
    let img = bmp::from_reader(&mut std::io::Cursor::new(bytes)).expect("a BMP");
    let (w, h) = (img.get_width() as usize, img.get_height() as usize);
    let mut px = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let p = img.get_pixel(x as u32, y as u32);
            px.push([p.r, p.g, p.b]);
        }
    }
    Rgb {
        width: w,
        height: h,
        px,
    }
}

/// Width and height of a console cell on the rig's screen (its 8×16 font, cells from the top
/// left corner).
pub const CELL: (usize, usize) = (8, 16);

/// A cell's ink: one byte a pixel row (the cell is 8 wide), a bit set where the pixel is not
/// the background.
type Ink = [u8; CELL.1];

/// The glyphs a reader has learned: each cell's ink and the character it shows.
pub struct Glyphs {
    known: HashMap<Ink, char>,
}

impl Rgb {
    /// The ink of every cell, row by row.
    fn cells(&self) -> Vec<Vec<Ink>> {
        let bg = self.background();
        (0..self.height / CELL.1)
            .map(|row| {
                (0..self.width / CELL.0)
                    .map(|col| {
                        let mut ink: Ink = [0; CELL.1];
                        for (y, bits) in ink.iter_mut().enumerate() {
                            for x in 0..CELL.0 {
                                if self.at(col * CELL.0 + x, row * CELL.1 + y) != bg {
                                    *bits |= 0x80 >> x;
                                }
                            }
                        }
                        ink
                    })
                    .collect()
            })
            .collect()
    }
}

impl Glyphs {
    /// Learns the glyphs from the row of `picture` that shows `sample` from its first column:
    /// the one row whose cells repeat exactly where the sample's characters repeat. `None`
    /// when no row shows it.
    pub fn learn(picture: &Rgb, sample: &str) -> Option<Glyphs> {
        let chars: Vec<char> = sample.chars().collect();
        picture.cells().into_iter().find_map(|row| {
            if row.len() < chars.len() {
                return None;
            }
            let mut known = HashMap::new();
            let mut seen: HashMap<char, Ink> = HashMap::new();
            for (c, ink) in chars.iter().zip(&row) {
                if *seen.entry(*c).or_insert(*ink) != *ink {
                    return None;
                }
                if *known.entry(*ink).or_insert(*c) != *c {
                    return None;
                }
            }
            Some(Glyphs { known })
        })
    }

    /// Every row of `picture` as text: a learned glyph as its character, an empty cell as a
    /// space, any other as `?`.
    pub fn read(&self, picture: &Rgb) -> Vec<String> {
        picture
            .cells()
            .iter()
            .map(|row| {
                let line: String = row
                    .iter()
                    .map(|ink| match self.known.get(ink) {
                        Some(c) => *c,
                        None if ink.iter().all(|b| *b == 0) => ' ',
                        None => '?',
                    })
                    .collect();
                line.trim_end().to_string()
            })
            .collect()
    }
}
