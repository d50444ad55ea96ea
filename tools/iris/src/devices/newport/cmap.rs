//! The CMAP colour map: 8192 RGB entries (both CMAP chips hold the same table).
//!
//! CRS 0 with a 2-byte transfer sets the address; CRS 1 (3 bytes, `R<<16|G<<8|B`) writes the
//! entry there, CRS 2 reads it the same way (the X driver's `newport_cmap.c` sequence); both
//! advance the address.

use indy::regs::cmap::{CRS_ADDR, CRS_READ, CRS_WRITE};

const ENTRIES: usize = indy::regs::cmap::ENTRIES as usize;

pub struct Cmap {
    pub rgb: Vec<[u8; 3]>,
    addr: u16,
}

impl Default for Cmap {
    fn default() -> Self {
        Cmap {
            rgb: vec![[0; 3]; ENTRIES],
            addr: 0,
        }
    }
}

impl Cmap {
    fn next(&mut self) -> usize {
        let a = usize::from(self.addr) % ENTRIES;
        self.addr = ((a + 1) % ENTRIES) as u16;
        a
    }

    pub fn write(&mut self, crs: u32, data: u32) {
        match crs {
            CRS_ADDR => self.addr = (data as u16) % ENTRIES as u16,
            CRS_WRITE => {
                let a = self.next();
                self.rgb[a] = [(data >> 16) as u8, (data >> 8) as u8, data as u8];
            }
            _ => {}
        }
    }

    /// A 3-byte read: `R<<16|G<<8|B` (the DCB left-justifies it into the data word).
    pub fn read(&mut self, crs: u32) -> u32 {
        if crs != CRS_READ {
            return 0;
        }
        let a = self.next();
        let [r, g, b] = self.rgb[a];
        (u32::from(r) << 16) | (u32::from(g) << 8) | u32::from(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_then_read_advances() {
        let mut c = Cmap::default();
        c.write(CRS_ADDR, 8191);
        c.write(CRS_WRITE, 0x0A0B0C);
        c.write(CRS_WRITE, 0x010203);
        c.write(CRS_ADDR, 8191);
        assert_eq!(c.read(CRS_READ), 0x0A0B0C);
        assert_eq!(c.read(CRS_READ), 0x010203, "wraps to entry 0");
        assert_eq!(c.rgb[0], [1, 2, 3]);
        assert_eq!(c.read(CRS_WRITE), 0);
    }
}
