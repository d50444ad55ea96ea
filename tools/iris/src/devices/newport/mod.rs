//! The Newport (XL) graphics board in the GIO slot: REX3 at 1F0F_0000 with its DCB slaves
//! (VC2, XMAP9 pair, CMAP pair) and a 1280×1024 framebuffer in which the rig draws the console.
//!
//! The model answers what the module's capture does (see `docs/newport.md`): REX3 host
//! readback (`rex3`), the DCB (`dcb`) and its slaves (`vc2`, `xmap`, `cmap`), STATUS, TOPSCAN
//! and XYWIN. It starts as a PROM leaves the board: a 1280×1024 timing table, DID 1 on every
//! line, XMAP entry 1 = CI8 with CMAP base 0x100 (or RGB24 with [`Depth::Rgb24`]), a palette
//! there, TOPSCAN 0x3FF. Console text is drawn lazily, on the next register access.
//!
//! The board sits behind an `Rc<RefCell<_>>` ([`NewportDevice`] on the bus) so the rig and its
//! tests can switch the depth, force the busy bits or look at VRAM.

pub mod cmap;
pub mod dcb;
pub mod rex3;
pub mod text;
pub mod vc2;
pub mod vram;
pub mod xmap;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::{DevCtx, Device, Region};
use crate::console::ConsoleLog;
use dcb::DcbMode;
use rex3::Readback;
use text::{Colours, Text};
use vram::Vram;

use indy::map::REX3;
use indy::regs::dcb::{
    SLAVE_CMAP_ALL, SLAVE_CMAP0, SLAVE_CMAP1, SLAVE_VC2, SLAVE_XMAP_ALL, SLAVE_XMAP0, SLAVE_XMAP1,
};
use indy::regs::rex3::*;
use indy::regs::xmap::{PIX_CI, PIX_RGB, SIZE_8, SIZE_24};

/// The REX3 version the model reports in STATUS bits 2:0.
pub const VERSION: u32 = 3;

/// The DID every line of the rig's screen uses, and the CMAP base of its CI8 mode.
pub const SCREEN_DID: u8 = 1;
pub const CMAP_MSB: u32 = 1;
pub const CMAP_BASE: u16 = (CMAP_MSB as u16) << 8;
/// Colour indices of the console text.
pub const FG: u32 = 7;
pub const BG: u32 = 0;

/// Console bytes drawn at most per catch-up: more than a screenful, so older ones cannot show.
const REPLAY_MAX: usize = 64 << 10;

/// How the rig's screen stores pixels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Depth {
    /// 8-bit colour index through the CMAP (what an Indy's PROM sets up).
    #[default]
    Ci8,
    /// 24-bit direct colour, `0x00BBGGRR` per pixel.
    Rgb24,
}

pub struct Newport {
    console: Arc<ConsoleLog>,
    depth: Depth,
    pub vram: Vram,
    pub rex: Readback,
    pub vc2: vc2::Vc2,
    pub xmap: xmap::Xmap,
    pub cmap: cmap::Cmap,
    text: Text,
    dcbmode: u32,
    xywin: u32,
    /// Console bytes ever transmitted that are already drawn.
    drawn: u64,
    /// Test hook: STATUS always reports GFXBUSY and BACKBUSY.
    pub stuck_busy: bool,
}

/// 16 console colours (the VGA set), then a grey ramp, from `CMAP_BASE`.
fn palette(i: u32) -> [u8; 3] {
    const VGA: [[u8; 3]; 16] = [
        [0, 0, 0],
        [0xAA, 0, 0],
        [0, 0xAA, 0],
        [0xAA, 0x55, 0],
        [0, 0, 0xAA],
        [0xAA, 0, 0xAA],
        [0, 0xAA, 0xAA],
        [0xAA, 0xAA, 0xAA],
        [0x55, 0x55, 0x55],
        [0xFF, 0x55, 0x55],
        [0x55, 0xFF, 0x55],
        [0xFF, 0xFF, 0x55],
        [0x55, 0x55, 0xFF],
        [0xFF, 0x55, 0xFF],
        [0x55, 0xFF, 0xFF],
        [0xFF, 0xFF, 0xFF],
    ];
    VGA.get(i as usize).copied().unwrap_or([i as u8; 3])
}

fn bgr(rgb: [u8; 3]) -> u32 {
    (u32::from(rgb[2]) << 16) | (u32::from(rgb[1]) << 8) | u32::from(rgb[0])
}

/// `size` bytes at byte `lane` of a big-endian register word.
fn lane_get(word: u32, lane: u32, size: usize) -> u32 {
    match size {
        1 => (word >> (24 - 8 * (lane & 3))) & 0xFF,
        2 => (word >> (16 - 8 * (lane & 2))) & 0xFFFF,
        _ => word,
    }
}

/// `word` with `size` bytes at byte `lane` replaced by `value`.
fn lane_set(word: u32, lane: u32, size: usize, value: u32) -> u32 {
    let (mask, shift) = match size {
        1 => (0xFF, 24 - 8 * (lane & 3)),
        2 => (0xFFFF, 16 - 8 * (lane & 2)),
        _ => return value,
    };
    (word & !(mask << shift)) | ((value & mask) << shift)
}

impl Newport {
    pub fn new(console: Arc<ConsoleLog>) -> Newport {
        let mut n = Newport {
            console,
            depth: Depth::Ci8,
            vram: Vram::default(),
            rex: Readback::default(),
            vc2: vc2::Vc2::default(),
            xmap: xmap::Xmap::default(),
            cmap: cmap::Cmap::default(),
            text: Text::default(),
            dcbmode: 0,
            xywin: XYWIN_IDENTITY,
            drawn: 0,
            stuck_busy: false,
        };
        n.prom_init();
        n
    }

    /// Switches the screen's pixel format; the screen is cleared and the console text from now
    /// on is drawn in it.
    pub fn set_depth(&mut self, depth: Depth) {
        self.depth = depth;
        self.prom_init();
    }

    pub fn depth(&self) -> Depth {
        self.depth
    }

    /// The board as a PROM leaves it, with a blank screen; console output so far is not drawn.
    fn prom_init(&mut self) {
        self.vc2.program_1280x1024(SCREEN_DID);
        let screen = match self.depth {
            Depth::Ci8 => indy::regs::xmap::entry(PIX_CI, SIZE_8, CMAP_MSB),
            Depth::Rgb24 => indy::regs::xmap::entry(PIX_RGB, SIZE_24, 0),
        };
        // Other entries hold modes a driver that picks the wrong DID would notice.
        self.xmap.modes = [indy::regs::xmap::entry(PIX_RGB, SIZE_8, 0); indy::regs::xmap::ENTRIES];
        self.xmap.modes[0] = indy::regs::xmap::entry(PIX_CI, SIZE_8, 0x1F);
        self.xmap.modes[usize::from(SCREEN_DID)] = screen;
        self.cmap = cmap::Cmap::default();
        for i in 0..256 {
            self.cmap.rgb[usize::from(CMAP_BASE) + i as usize] = palette(i);
        }
        self.rex = Readback::default();
        self.dcbmode = 0;
        self.xywin = XYWIN_IDENTITY;
        self.text.home();
        self.vram.fill(self.colours().bg);
        self.drawn = self.console.total();
    }

    fn colours(&self) -> Colours {
        match self.depth {
            Depth::Ci8 => Colours { fg: FG, bg: BG },
            Depth::Rgb24 => Colours {
                fg: bgr(palette(FG)),
                bg: bgr(palette(BG)),
            },
        }
    }

    /// Draws the console output not drawn yet.
    pub fn sync_console(&mut self) {
        let total = self.console.total();
        if total == self.drawn {
            return;
        }
        let (fresh, total) = self.console.screen_since(self.drawn, REPLAY_MAX);
        let c = self.colours();
        for b in fresh {
            self.text.put(b, &mut self.vram, c);
        }
        self.drawn = total;
    }

    /// The TOPSCAN register: the first VRAM line shown, minus one.
    pub fn topscan(&self) -> u32 {
        self.text.first.wrapping_sub(1) & 0x3FF
    }

    /// What the viewer sees as screen row `y`: the VRAM row TOPSCAN puts there.
    pub fn screen_row(&mut self, y: u32) -> Vec<u32> {
        self.sync_console();
        let row = self.text.vram_row(y);
        (0..vram::WIDTH).map(|x| self.vram.get(x, row)).collect()
    }

    fn status(&self) -> u32 {
        let busy = if self.stuck_busy {
            STATUS_GFXBUSY | STATUS_BACKBUSY
        } else {
            0
        };
        VERSION | busy
    }

    fn dcb_write(&mut self, size: usize, value: u32) {
        let m = DcbMode::decode(self.dcbmode);
        let data = m.data_in(size, value);
        match m.slave {
            SLAVE_VC2 => self.vc2.write(m.crs, m.width, data),
            SLAVE_CMAP_ALL | SLAVE_CMAP0 | SLAVE_CMAP1 => self.cmap.write(m.crs, data),
            SLAVE_XMAP_ALL | SLAVE_XMAP0 | SLAVE_XMAP1 => self.xmap.write(m.crs, m.width, data),
            _ => {}
        }
    }

    fn dcb_read(&mut self, size: usize) -> u32 {
        let m = DcbMode::decode(self.dcbmode);
        let data = match m.slave {
            SLAVE_VC2 => self.vc2.read(m.crs),
            SLAVE_CMAP0 | SLAVE_CMAP1 => self.cmap.read(m.crs),
            SLAVE_XMAP0 | SLAVE_XMAP1 => self.xmap.read(m.crs),
            _ => 0,
        };
        m.data_out(size, data)
    }

    /// Register word offset, byte lane, and whether the access is a GO alias.
    fn decode(phys: u32) -> (u32, u32, bool) {
        let off = phys.wrapping_sub(REX3.base);
        let go = off < 0x1000 && off & GO != 0;
        let reg = if go { off - GO } else { off };
        (reg & !3, reg & 3, go)
    }

    fn reg(&self, reg: u32) -> u32 {
        match reg {
            DRAWMODE1 => self.rex.drawmode1,
            DRAWMODE0 => self.rex.drawmode0,
            XYSTARTI => self.rex.xystart,
            XYENDI => self.rex.xyend,
            WRMASK => self.rex.wrmask,
            HOSTRW0 => self.rex.host,
            DCBMODE => self.dcbmode,
            TOPSCAN => self.topscan(),
            XYWIN => self.xywin,
            STATUS => self.status(),
            _ => 0,
        }
    }

    fn set_reg(&mut self, reg: u32, v: u32) {
        match reg {
            DRAWMODE1 => self.rex.drawmode1 = v,
            DRAWMODE0 => self.rex.drawmode0 = v,
            XYSTARTI => self.rex.set_start(v),
            XYENDI => self.rex.xyend = v,
            WRMASK => self.rex.wrmask = v,
            DCBMODE => self.dcbmode = v,
            TOPSCAN => self.text.first = (v + 1) & 0x3FF,
            XYWIN => self.xywin = v,
            _ => {}
        }
    }

    /// A CPU load from the window.
    pub fn load(&mut self, phys: u32, size: usize) -> u32 {
        self.sync_console();
        let (reg, lane, go) = Self::decode(phys);
        if reg == DCBDATA0 {
            return self.dcb_read(size);
        }
        let v = lane_get(self.reg(reg), lane, size);
        if go {
            self.rex.go(&self.vram, self.xywin);
        }
        v
    }

    /// A CPU store to the window.
    pub fn store(&mut self, phys: u32, size: usize, value: u32) {
        self.sync_console();
        let (reg, lane, go) = Self::decode(phys);
        if reg == DCBDATA0 {
            self.dcb_write(size, value);
        } else {
            let v = lane_set(self.reg(reg), lane, size, value);
            self.set_reg(reg, v);
        }
        if go {
            self.rex.go(&self.vram, self.xywin);
        }
    }
}

/// The board on the bus.
pub struct NewportDevice(pub Rc<RefCell<Newport>>);

impl Device for NewportDevice {
    fn name(&self) -> &str {
        "newport"
    }

    fn regions(&self) -> Vec<Region> {
        vec![Region::new(REX3.base, REX3.size)]
    }

    fn read(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, size: usize) -> u64 {
        u64::from(self.0.borrow_mut().load(phys, size))
    }

    fn write(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, size: usize, value: u64) {
        self.0.borrow_mut().store(phys, size, value as u32);
    }

    fn reset(&mut self) {
        self.0.borrow_mut().prom_init();
    }
}

#[cfg(test)]
mod tests;
