//! Writes the Newport state of `crate::newport` through the REX3's DCB (target only).

use crate::io::w32;
use crate::newport;

/// The REX3's DCB, as the module's driver drives it (`docs/newport.md`, "DCB transfers"):
/// wait for BACKBUSY to clear (bounded) before DCBMODE and before each data access.
mod dcb {
    use crate::io::{r32, w16, w32};
    use indy::regs::dcb::{WIDTH1, WIDTH2, WIDTH3, crs, slave};
    use indy::regs::rex3::{DCBDATA0, DCBMODE, STATUS, STATUS_BACKBUSY, phys};

    fn wait() {
        for _ in 0..100_000 {
            if r32(phys(STATUS)) & STATUS_BACKBUSY == 0 {
                return;
            }
        }
    }

    fn mode(slave_n: u32, protocol: u32, crs_n: u32, width: u32) {
        wait();
        w32(
            phys(DCBMODE),
            slave(slave_n) | protocol | crs(crs_n) | width,
        );
        wait();
    }

    pub fn write16(s: u32, p: u32, c: u32, v: u16) {
        mode(s, p, c, WIDTH2);
        w16(phys(DCBDATA0) + 2, v);
    }

    pub fn write24(s: u32, p: u32, c: u32, v: u32) {
        mode(s, p, c, WIDTH3);
        w32(phys(DCBDATA0), v);
    }

    pub fn write8(s: u32, p: u32, c: u32, v: u8) {
        mode(s, p, c, WIDTH1);
        crate::io::w8(phys(DCBDATA0) + 3, v);
    }

    pub fn write32(s: u32, p: u32, c: u32, v: u32) {
        mode(s, p, c, 0);
        w32(phys(DCBDATA0), v);
    }
}

/// Leaves the Newport board as the SGI PROM does (`newport`): the module reads its mode back.
pub fn newport_init() {
    use indy::regs::dcb::{SENDIAN, SLAVE_CMAP_ALL, SLAVE_VC2, SLAVE_XMAP_ALL};
    use indy::regs::vc2::{CONFIG, CONTROL, CRS_INDEX, CRS_RAM, DENTRY, PROTOCOL, RADDR, VENTRY};
    use indy::regs::{cmap, xmap};
    let vc2_reg = |reg: u8, v: u16| {
        dcb::write24(
            SLAVE_VC2,
            PROTOCOL,
            CRS_INDEX,
            (u32::from(reg) << 24) | (u32::from(v) << 8),
        )
    };
    // Video timing off while the tables change.
    vc2_reg(CONTROL, 0);
    let ram = |addr: u16, words: &mut dyn Iterator<Item = u16>| {
        vc2_reg(RADDR, addr);
        for w in words {
            dcb::write16(SLAVE_VC2, PROTOCOL, CRS_RAM, w);
        }
    };
    for (addr, words) in newport::vc2_runs() {
        ram(addr, &mut words.iter().copied());
    }
    let (at, n, v) = newport::did_table_run();
    ram(at, &mut core::iter::repeat_n(v, usize::from(n)));
    vc2_reg(VENTRY, newport::LINE_TABLE);
    vc2_reg(DENTRY, newport::DID_TABLE);
    vc2_reg(CONFIG, newport::VC2_CONFIG);
    vc2_reg(CONTROL, newport::VC2_CONTROL);
    // Both XMAPs: mode entry SCREEN_DID (CRS 5, a whole word: entry in 31:24, mode in 23:0).
    dcb::write32(
        SLAVE_XMAP_ALL,
        xmap::PROTOCOL,
        xmap::CRS_MODE,
        (u32::from(newport::SCREEN_DID) << 24) | newport::SCREEN_MODE,
    );
    // Both CMAPs: the palette from CMAP_BASE, the address before every entry (as Linux's
    // newport_con does; MAME's CMAP does not advance it).
    let cproto = cmap::PROTOCOL | SENDIAN;
    for i in 0..=255u8 {
        let (r, g, b) = newport::palette(i);
        let word = (u32::from(r) << 24) | (u32::from(g) << 16) | (u32::from(b) << 8);
        dcb::write16(
            SLAVE_CMAP_ALL,
            cproto,
            cmap::CRS_ADDR,
            newport::CMAP_BASE + u16::from(i),
        );
        dcb::write24(SLAVE_CMAP_ALL, cproto, CMAP_CRS_PALETTE, word);
    }
    // The RAMDAC's gamma table: identity.
    let rproto = newport::RAMDAC_PROTOCOL;
    dcb::write8(newport::SLAVE_RAMDAC, rproto, newport::RAMDAC_CRS_ADDR, 0);
    for i in 0..=255u8 {
        dcb::write32(
            newport::SLAVE_RAMDAC,
            rproto,
            newport::RAMDAC_CRS_LUT,
            newport::ramdac_word(i),
        );
    }
    use indy::regs::rex3::{TOPSCAN, XYWIN, XYWIN_IDENTITY, phys};
    w32(phys(TOPSCAN), newport::TOPSCAN);
    w32(phys(XYWIN), XYWIN_IDENTITY);
    draw_picture();
}

/// Draws `newport::picture` with REX3 block fills, as Linux's `newport_clear_screen` does:
/// CI planes at 8 bits with logic op SRC, DRAW | BLOCK | DOSETUP | STOPONX | STOPONY, COLORI,
/// the corners, GO.
fn draw_picture() {
    use indy::regs::rex3::{DRAWMODE0, DRAWMODE1, GO, STATUS, STATUS_GFXBUSY, WRMASK, phys};
    use indy::regs::rex3::{XYENDI, XYSTARTI};
    // Linux `newport.h` names: DM1_RGBPLANES | NPORT_DMODE1_DD8 | CCLT | CCEQ | CCGT | LO_SRC.
    const DM1_DRAW8: u32 = 0x1 | 0x8 | 0x7000 | 0x3000_0000;
    // NPORT_DMODE0_DRAW | BLOCK | DOSETUP | STOPX | STOPY.
    const DM0_FILL: u32 = 0x2 | 0x4 | 0x20 | 0x100 | 0x200;
    // The colour index a fill writes (`colori`).
    const COLORI: u32 = 0x224;
    let mut n = 0;
    while let Some(r) = newport::picture(n) {
        for _ in 0..100_000 {
            if crate::io::r32(phys(STATUS)) & STATUS_GFXBUSY == 0 {
                break;
            }
        }
        w32(phys(DRAWMODE1), DM1_DRAW8);
        w32(phys(WRMASK), 0xFFFF_FFFF);
        w32(phys(DRAWMODE0), DM0_FILL);
        w32(phys(COLORI), u32::from(r.ci));
        w32(phys(XYSTARTI), (u32::from(r.x0) << 16) | u32::from(r.y0));
        w32(phys(XYENDI + GO), (u32::from(r.x1) << 16) | u32::from(r.y1));
        n += 1;
    }
}

/// The CMAP's palette write register as MAME has it: CRS 2 (Linux's `NCMAP_REGADDR_PBUF`).
/// `indy::regs::cmap::CRS_WRITE` says 1 after X.Org's driver, which MAME ignores; the sources
/// disagree (`docs/hardware-fidelity.md`).
const CMAP_CRS_PALETTE: u32 = 2;
