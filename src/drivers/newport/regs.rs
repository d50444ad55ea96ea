//! REX3 register offsets (from the board's base, 1F0F_0000) and the field values the driver
//! writes. Sources: Linux `include/video/newport.h`, NetBSD `newportreg.h`, the X driver.

/// Physical address of the REX3 register window.
pub const REX3_PHYS: u32 = 0x1F0F_0000;
/// Adding this to a register's offset also executes the programmed command (its GO alias).
pub const GO: u32 = 0x800;

pub const DRAWMODE1: u32 = 0x000;
pub const DRAWMODE0: u32 = 0x004;
pub const SETUP: u32 = 0x030;
pub const XYSTARTI: u32 = 0x150;
pub const XYENDI: u32 = 0x154;
pub const WRMASK: u32 = 0x220;
pub const HOSTRW0: u32 = 0x230;
pub const DCBMODE: u32 = 0x238;
pub const DCBDATA0: u32 = 0x240;
pub const TOPSCAN: u32 = 0x1320;
pub const XYWIN: u32 = 0x1324;
pub const STATUS: u32 = 0x1338;

pub const STATUS_GFXBUSY: u32 = 0x08;
pub const STATUS_BACKBUSY: u32 = 0x10;

/// DRAWMODE0 for host readback: READ | BLOCK | DOSETUP | CHOST.
pub const DM0_READ_BLOCK: u32 = 0x65;
/// DRAWMODE1 common to both readbacks: RGB/CI planes, RWPACKED, logic op SRC, prefetch.
const DM1_READ: u32 = 0x1 | 0x80 | 0x3000_0000 | 0x0400_0000;
/// DRAWMODE1 for 8-bit pixels (DD8 | HD8): four per word, leftmost in 31:24.
pub const DM1_READ8: u32 = DM1_READ | 0x108;
/// DRAWMODE1 for 24-bit pixels (DD24 | HD32 | RGBMODE): one `0x00BBGGRR` per word.
pub const DM1_READ24: u32 = DM1_READ | 0x8318;
/// XYWIN value that makes coordinates 1:1 with VRAM.
pub const XYWIN_IDENTITY: u32 = 0x1000_1000;
/// VRAM rows; TOPSCAN rotates the display through them.
pub const VRAM_ROWS: u32 = 1024;

/// DCBMODE fields.
pub const DCB_WIDTH1: u32 = 1;
pub const DCB_WIDTH2: u32 = 2;
pub const DCB_WIDTH3: u32 = 3;
pub const DCB_ECINC: u32 = 0x8;
pub const DCB_SENDIAN: u32 = 0x1000_0000;
pub const fn dcb_crs(crs: u32) -> u32 {
    crs << 4
}
pub const fn dcb_slave(slave: u32) -> u32 {
    slave << 7
}
pub const SLAVE_VC2: u32 = 0;
pub const SLAVE_CMAP0: u32 = 2;
pub const SLAVE_XMAP0: u32 = 5;
/// Chip-select timings of each slave.
pub const VC2_PROTOCOL: u32 = 0x0084_1000;
pub const CMAP_PROTOCOL: u32 = 0x0084_8000;
/// XMAP9 write timing (setup 2, hold 1, width 0).
pub const XMAP_PROTOCOL: u32 = 0x0020_0800;

/// VC2 registers and CRS values.
pub const VC2_VENTRY: u8 = 0x00;
pub const VC2_DENTRY: u8 = 0x05;
pub const VC2_RADDR: u8 = 0x07;
pub const VC2_CRS_INDEX: u32 = 0;
pub const VC2_CRS_REG: u32 = 1;
pub const VC2_CRS_RAM: u32 = 3;

/// XMAP9 CRS values.
pub const XMAP_CRS_MODE: u32 = 5;
pub const XMAP_CRS_INDEX: u32 = 7;

/// CMAP CRS values and size.
pub const CMAP_CRS_ADDR: u32 = 0;
pub const CMAP_CRS_READ: u32 = 2;
pub const CMAP_ENTRIES: u32 = 8192;
