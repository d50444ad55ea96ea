//! The XMAP9 pair's 32 mode entries (both chips hold the same table: PROMs and drivers
//! broadcast). An entry is 24 bits: 2 gamma bypass, 7:3 CMAP MSB, 9:8 pixel mode (0 CI,
//! 1–3 RGB), 11:10 size (4, 8, 12, 24 bpp).
//!
//! Reading an entry (the rig's choice, shared with the module's driver): write
//! `(entry<<2)|i` to CRS 7 (1 byte), then read one byte from CRS 5: byte i is bits 8i+7:8i, low
//! byte first, as the X driver assembles them. Writing: CRS 5, 4 bytes, `(entry<<24)|value`.

use indy::regs::xmap::{CRS_INDEX, CRS_MODE, ENTRIES};

#[derive(Default)]
pub struct Xmap {
    pub modes: [u32; ENTRIES],
    /// Last CRS 7 index byte.
    addr: u8,
}

impl Xmap {
    pub fn write(&mut self, crs: u32, width: u32, data: u32) {
        match (crs, width) {
            (CRS_INDEX, 1) => self.addr = data as u8,
            (CRS_MODE, 0) => {
                let e = usize::from((data >> 24) as u8);
                if let Some(m) = self.modes.get_mut(e) {
                    *m = data & 0x00FF_FFFF;
                }
            }
            _ => {}
        }
    }

    pub fn read(&mut self, crs: u32) -> u32 {
        if crs != CRS_MODE {
            return 0;
        }
        let e = usize::from(self.addr >> 2);
        let i = u32::from(self.addr & 3);
        self.modes.get(e).map_or(0, |m| (m >> (8 * i)) & 0xFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_bytes_low_first() {
        let mut x = Xmap::default();
        x.write(CRS_MODE, 0, (9 << 24) | 0x12_3456);
        let bytes: Vec<u32> = (0..4)
            .map(|i| {
                x.write(CRS_INDEX, 1, (9 << 2) | i);
                x.read(CRS_MODE)
            })
            .collect();
        assert_eq!(bytes, [0x56, 0x34, 0x12, 0]);
        x.write(CRS_INDEX, 1, 0xFF);
        assert_eq!(x.read(CRS_MODE), 0);
    }
}
