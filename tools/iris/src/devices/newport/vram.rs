//! The visible framebuffer: 1280×1024 pixels of 24 planes each, stored one `u32` per pixel
//! (CI modes use bits 7:0, RGB24 stores `0x00BBGGRR`). Real VRAM is wider (MAME: 1344), but
//! nothing the module does reads beyond the visible width, so coordinates outside read 0 and
//! writes there are dropped.

pub const WIDTH: u32 = 1280;
/// Rows of VRAM; TOPSCAN rotates the display through all of them.
pub const HEIGHT: u32 = 1024;

pub struct Vram {
    px: Vec<u32>,
}

impl Default for Vram {
    fn default() -> Self {
        Vram {
            px: vec![0; (WIDTH * HEIGHT) as usize],
        }
    }
}

impl Vram {
    fn index(x: u32, y: u32) -> Option<usize> {
        (x < WIDTH && y < HEIGHT).then(|| (y * WIDTH + x) as usize)
    }

    pub fn get(&self, x: u32, y: u32) -> u32 {
        Self::index(x, y).map_or(0, |i| self.px[i])
    }

    pub fn set(&mut self, x: u32, y: u32, v: u32) {
        if let Some(i) = Self::index(x, y) {
            self.px[i] = v;
        }
    }

    /// Sets VRAM row `y` (a physical row) to `v`.
    pub fn fill_row(&mut self, y: u32, v: u32) {
        if let Some(i) = Self::index(0, y) {
            self.px[i..i + WIDTH as usize].fill(v);
        }
    }

    pub fn fill(&mut self, v: u32) {
        self.px.fill(v);
    }
}
