//! The REX3 display control bus (DCB): DCBMODE selects a slave, its register (CRS) and the
//! transfer width; each access to DCBDATA0 is one transfer. Access sizes follow Linux: a 1-byte
//! transfer is a byte at DCBDATA0+3, a 2-byte transfer a halfword at +2, 3 or 4 bytes a word
//! with 3-byte data left-justified (bits 31:8). Slaves see data right-aligned.

use indy::regs::dcb::{crs_of, slave_of, width_of};

/// The fields of a DCBMODE value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcbMode {
    /// Bytes per transfer; 0 means 4.
    pub width: u32,
    pub crs: u32,
    pub slave: u32,
}

impl DcbMode {
    pub fn decode(mode: u32) -> DcbMode {
        DcbMode {
            width: width_of(mode),
            crs: crs_of(mode),
            slave: slave_of(mode),
        }
    }

    /// The slave's right-aligned data of a DCBDATA0 write of `size` bytes carrying `value`.
    pub fn data_in(&self, size: usize, value: u32) -> u32 {
        match (size, self.width) {
            (1, _) | (_, 1) => value & 0xFF,
            (2, _) | (_, 2) => value & 0xFFFF,
            (_, 3) => value >> 8,
            _ => value,
        }
    }

    /// What a DCBDATA0 read of `size` bytes returns for the slave's right-aligned `data`.
    pub fn data_out(&self, size: usize, data: u32) -> u32 {
        match (size, self.width) {
            (1, _) | (_, 1) => data & 0xFF,
            (2, _) | (_, 2) => data & 0xFFFF,
            (_, 3) => (data & 0x00FF_FFFF) << 8,
            _ => data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indy::regs::dcb::{SLAVE_CMAP0, SLAVE_VC2, SLAVE_XMAP0};

    #[test]
    fn decodes_the_reference_modes() {
        // CMAP read: CMAP0, protocol, CRS 2, width 3.
        let m = DcbMode::decode(0x100 | 0x0084_8000 | (2 << 4) | 3);
        assert_eq!(
            m,
            DcbMode {
                width: 3,
                crs: 2,
                slave: SLAVE_CMAP0
            }
        );
        assert_eq!(m.data_out(4, 0x11_2233), 0x1122_3300);
        // VC2 register write word (reg<<24)|(val<<8).
        let m = DcbMode::decode(0x0084_1000 | 3);
        assert_eq!(m.slave, SLAVE_VC2);
        assert_eq!(m.data_in(4, 0x0712_3400), 0x07_1234);
        // XMAP byte read from CRS 5.
        let m = DcbMode::decode((SLAVE_XMAP0 << 7) | (5 << 4) | 1);
        assert_eq!((m.crs, m.data_out(1, 0x1AB)), (5, 0xAB));
        assert_eq!(DcbMode::decode(2).data_in(2, 0xDEAD_BEEF), 0xBEEF);
    }
}
