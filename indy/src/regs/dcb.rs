//! The REX3 display control bus (`docs/hardware.md`, "Display control bus"): DCBMODE names a
//! slave chip, one of its registers (CRS), the transfer width and the chip-select timing; each
//! access to DCBDATA0 is one transfer. The slaves' own registers are in `vc2`, `xmap`, `cmap`.

/// DCBMODE bits 1:0: bytes per transfer (0 means 4).
pub const WIDTH_MASK: u32 = 0x3;
pub const WIDTH1: u32 = 1;
pub const WIDTH2: u32 = 2;
pub const WIDTH3: u32 = 3;
/// DCBMODE: the slave's register address increments after each transfer.
pub const ECINC: u32 = 0x8;
/// DCBMODE: swap the data's byte order (the CMAP wants its index that way).
pub const SENDIAN: u32 = 0x1000_0000;

/// DCBMODE bits 6:4: the slave's register (CRS).
pub const fn crs(n: u32) -> u32 {
    (n & 7) << 4
}

/// DCBMODE bits 10:7: the slave.
pub const fn slave(n: u32) -> u32 {
    (n & 0xF) << 7
}

/// The transfer width of a DCBMODE value.
pub const fn width_of(mode: u32) -> u32 {
    mode & WIDTH_MASK
}

/// The CRS of a DCBMODE value.
pub const fn crs_of(mode: u32) -> u32 {
    (mode >> 4) & 7
}

/// The slave of a DCBMODE value.
pub const fn slave_of(mode: u32) -> u32 {
    (mode >> 7) & 0xF
}

pub const SLAVE_VC2: u32 = 0;
/// Both CMAPs (writes only).
pub const SLAVE_CMAP_ALL: u32 = 1;
pub const SLAVE_CMAP0: u32 = 2;
pub const SLAVE_CMAP1: u32 = 3;
/// Both XMAPs (writes only).
pub const SLAVE_XMAP_ALL: u32 = 4;
pub const SLAVE_XMAP0: u32 = 5;
pub const SLAVE_XMAP1: u32 = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        // The CMAP read of the reference: CMAP0, its protocol, CRS 2, width 3.
        let m = slave(SLAVE_CMAP0) | 0x0084_8000 | crs(2) | WIDTH3;
        assert_eq!(m, 0x0084_8123);
        assert_eq!((width_of(m), crs_of(m), slave_of(m)), (3, 2, SLAVE_CMAP0));
        assert_eq!(slave_of(slave(SLAVE_XMAP1)), SLAVE_XMAP1);
    }
}
