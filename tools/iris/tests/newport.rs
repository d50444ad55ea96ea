//! The module's Newport driver against the rig's Newport model: mode detection, colour map,
//! readback of the console text (any alignment), TOPSCAN rotation after scrolling, the 24-bit
//! path, a board stuck busy, and garbage video timing.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use font8x8::legacy::BASIC_LEGACY;
use indy::map::REX3;
use iris::console::ConsoleLog;
use iris::devices::newport::{self as model, Depth};
use irix7_mcp::drivers::newport::{MAX_POLLS, Newport};
use irix7_mcp::hil::framebuffer::{FbError, Framebuffer, Mode, PixelKind};
use irix7_mcp::hil::newport_bus::NewportBus;

/// The driver's bus onto the model, counting accesses.
struct ModelBus {
    m: Rc<RefCell<model::Newport>>,
    accesses: u64,
}

impl ModelBus {
    fn load(&mut self, off: u32, size: usize) -> u32 {
        self.accesses += 1;
        self.m.borrow_mut().load(REX3.base + off, size)
    }
    fn store(&mut self, off: u32, size: usize, v: u32) {
        self.accesses += 1;
        self.m.borrow_mut().store(REX3.base + off, size, v);
    }
}

impl NewportBus for ModelBus {
    fn read32(&mut self, off: u32) -> u32 {
        self.load(off, 4)
    }
    fn write32(&mut self, off: u32, value: u32) {
        self.store(off, 4, value)
    }
    fn read16(&mut self, off: u32) -> u16 {
        self.load(off, 2) as u16
    }
    fn write16(&mut self, off: u32, value: u16) {
        self.store(off, 2, u32::from(value))
    }
    fn read8(&mut self, off: u32) -> u8 {
        self.load(off, 1) as u8
    }
    fn write8(&mut self, off: u32, value: u8) {
        self.store(off, 1, u32::from(value))
    }
}

struct Setup {
    log: Arc<ConsoleLog>,
    m: Rc<RefCell<model::Newport>>,
    fb: Newport<ModelBus>,
}

fn setup() -> Setup {
    let log = Arc::new(ConsoleLog::new(false));
    let m = Rc::new(RefCell::new(model::Newport::new(log.clone())));
    let fb = Newport::new(ModelBus {
        m: m.clone(),
        accesses: 0,
    });
    Setup { log, m, fb }
}

const CI8: Mode = Mode {
    width: 1280,
    height: 1024,
    pixels: PixelKind::Ci8 {
        cmap_base: model::CMAP_BASE,
    },
};

/// Pixels `x .. x + n` of screen row `y`, one a word: the driver hands 8-bit pixels over
/// four to a word from pixel `x & !3` on, and leaves the words past them alone.
fn pixels(fb: &mut Newport<ModelBus>, mode: &Mode, x: u32, y: u32, n: usize) -> Vec<u32> {
    let mut out = vec![0xDEAD; n];
    fb.read_span(mode, x, y, &mut out).unwrap();
    if mode.pixels == PixelKind::Rgb24 {
        return out;
    }
    let skip = (x & 3) as usize;
    let words = (skip + n).div_ceil(4);
    assert!(out[words..].iter().all(|w| *w == 0xDEAD), "x {x} n {n}");
    (0..n)
        .map(|i| {
            let k = i + skip;
            (out[k / 4] >> (24 - 8 * (k % 4))) & 0xFF
        })
        .collect()
}

fn row(fb: &mut Newport<ModelBus>, mode: &Mode, y: u32) -> Vec<u32> {
    pixels(fb, mode, 0, y, mode.width as usize)
}

/// Whether text cell (`text_row`, `col`) of the screen shows `ch` in `fg` on `bg`.
fn cell_shows(
    fb: &mut Newport<ModelBus>,
    mode: &Mode,
    text_row: u32,
    col: u32,
    ch: u8,
    fg: u32,
) -> bool {
    let glyph = BASIC_LEGACY[usize::from(ch)];
    (0..16).all(|j| {
        let px = pixels(fb, mode, col * 8, text_row * 16 + j, 8);
        let bits = glyph[(j / 2) as usize];
        (0..8).all(|i| (px[i] == fg) == ((bits >> i) & 1 != 0))
    })
}

#[test]
fn mode_is_1280x1024_ci8_with_the_proms_cmap_base() {
    let mut s = setup();
    assert_eq!(s.fb.mode(), Ok(CI8));
}

#[test]
fn cmap_entries_are_what_the_rig_programmed() {
    let mut s = setup();
    let mut got = vec![[0u8; 3]; 256];
    s.fb.cmap(model::CMAP_BASE, &mut got).unwrap();
    let base = usize::from(model::CMAP_BASE);
    assert_eq!(got, s.m.borrow().cmap.rgb[base..base + 256].to_vec());
    assert_eq!(got[model::FG as usize], [0xAA, 0xAA, 0xAA]);
    assert_eq!(got[15], [0xFF, 0xFF, 0xFF]);
    let mut last = [[1u8; 3]; 1];
    s.fb.cmap(8191, &mut last).unwrap();
    assert_eq!(last, [[0, 0, 0]]);
    let mut two = [[0u8; 3]; 2];
    assert_eq!(s.fb.cmap(8191, &mut two), Err(FbError::OutOfRange));
}

#[test]
fn console_line_is_drawn_where_the_viewer_sees_it() {
    let mut s = setup();
    s.log.transmit(b"Hello, Indy\n");
    let mode = s.fb.mode().unwrap();
    for (i, ch) in b"Hello, Indy".iter().enumerate() {
        assert!(
            cell_shows(&mut s.fb, &mode, 0, i as u32, *ch, model::FG),
            "cell {i}"
        );
    }
    let lit: usize = (0..16)
        .map(|y| {
            row(&mut s.fb, &mode, y)
                .iter()
                .filter(|p| **p == model::FG)
                .count()
        })
        .sum();
    assert!(lit > 100, "{lit} foreground pixels");
    for y in 16..32 {
        assert!(
            row(&mut s.fb, &mode, y).iter().all(|p| *p == model::BG),
            "row {y}"
        );
    }
}

#[test]
fn spans_of_any_alignment_match_the_screen() {
    let mut s = setup();
    s.log
        .transmit(b"#%@&*0123456789 abcdefghijklmnopqrstuvwxyz\n");
    let mode = s.fb.mode().unwrap();
    for y in [0u32, 3, 7, 15] {
        let truth = s.m.borrow_mut().screen_row(y);
        for x in [0u32, 1, 2, 3, 5, 6, 100, 1275, 1279] {
            for n in [1usize, 2, 3, 4, 5, 7, 8, 9, 13, 64] {
                if x as usize + n > 1280 {
                    continue;
                }
                let out = pixels(&mut s.fb, &mode, x, y, n);
                assert_eq!(out, truth[x as usize..x as usize + n], "x {x} n {n} y {y}");
            }
        }
    }
    // Four pixels per word: a full 8-bit row is 320 data reads plus a fixed setup.
    s.fb.bus_mut().accesses = 0;
    row(&mut s.fb, &mode, 1);
    let a = s.fb.bus_mut().accesses;
    assert!((320..340).contains(&a), "{a} accesses for one row");
    // The last word of every span came from plain HOSTRW0: nothing was fetched past the end.
    assert_eq!(s.m.borrow().rex.overruns, 0);
    let mut out = [0u32; 2];
    assert_eq!(
        s.fb.read_span(&mode, 1279, 0, &mut out),
        Err(FbError::OutOfRange)
    );
    assert_eq!(
        s.fb.read_span(&mode, 0, 1024, &mut out),
        Err(FbError::OutOfRange)
    );
    assert_eq!(
        s.fb.read_span(&mode, u32::MAX, 0, &mut out),
        Err(FbError::OutOfRange)
    );
    assert_eq!(s.fb.read_span(&mode, 0, 0, &mut []), Ok(()));
}

#[test]
fn scrolled_screen_is_read_in_the_viewers_order() {
    let mut s = setup();
    for k in 0..70 {
        s.log.transmit(format!("L{k:02}\n").as_bytes());
    }
    let mode = s.fb.mode().unwrap();
    // 70 newlines on 64 rows: 7 scrolls of 16 lines, TOPSCAN = first line - 1.
    s.m.borrow_mut().sync_console();
    assert_eq!(s.m.borrow().topscan(), 7 * 16 - 1);
    // The viewer's first row is "L07", the last printed line "L69" is on text row 62.
    for (i, ch) in b"L07".iter().enumerate() {
        assert!(cell_shows(&mut s.fb, &mode, 0, i as u32, *ch, model::FG));
    }
    for (i, ch) in b"L69".iter().enumerate() {
        assert!(cell_shows(&mut s.fb, &mode, 62, i as u32, *ch, model::FG));
    }
    for y in [0u32, 15, 16, 500, 911, 912, 1008, 1023] {
        let truth = s.m.borrow_mut().screen_row(y);
        assert_eq!(row(&mut s.fb, &mode, y), truth, "screen row {y}");
    }
}

#[test]
fn rgb24_screen_reads_one_pixel_per_word() {
    let mut s = setup();
    s.m.borrow_mut().set_depth(Depth::Rgb24);
    s.log.transmit(b"RGB\n");
    let mode = s.fb.mode().unwrap();
    assert_eq!(
        mode,
        Mode {
            width: 1280,
            height: 1024,
            pixels: PixelKind::Rgb24
        }
    );
    for (i, ch) in b"RGB".iter().enumerate() {
        assert!(cell_shows(&mut s.fb, &mode, 0, i as u32, *ch, 0x00AA_AAAA));
    }
    let truth = s.m.borrow_mut().screen_row(5);
    assert_eq!(pixels(&mut s.fb, &mode, 3, 5, 21), truth[3..24]);
}

#[test]
fn a_board_that_stays_busy_times_out() {
    let mut s = setup();
    let mode = s.fb.mode().unwrap();
    s.m.borrow_mut().stuck_busy = true;
    s.fb.bus_mut().accesses = 0;
    assert_eq!(s.fb.mode(), Err(FbError::Timeout));
    assert_eq!(s.fb.bus_mut().accesses, u64::from(MAX_POLLS));
    let mut out = [0u32; 4];
    assert_eq!(s.fb.read_span(&mode, 0, 0, &mut out), Err(FbError::Timeout));
    let mut c = [[0u8; 3]; 1];
    assert_eq!(s.fb.cmap(0, &mut c), Err(FbError::Timeout));
}

#[test]
fn garbage_video_timing_is_unsupported_not_a_hang() {
    let mut s = setup();
    // A sequence that never ends.
    {
        let mut m = s.m.borrow_mut();
        let seq = usize::from(m.vc2.ram[usize::from(model::vc2::LINE_TABLE) + 2]);
        m.vc2.ram[seq..seq + 0x2000].fill(0x4080);
    }
    assert!(matches!(s.fb.mode(), Err(FbError::Unsupported(_))));
    // Wider than VRAM: 254 columns a word, ten words.
    let mut s = setup();
    {
        let mut m = s.m.borrow_mut();
        let seq = usize::from(m.vc2.ram[usize::from(model::vc2::LINE_TABLE) + 2]);
        m.vc2.ram[seq..seq + 10].fill(0x7F80);
        m.vc2.ram[seq + 10] = 0x8081;
    }
    assert!(matches!(s.fb.mode(), Err(FbError::Unsupported(_))));
    // No lines at all, and a 12-bit XMAP mode.
    let mut s = setup();
    s.m.borrow_mut().vc2.regs[model::vc2::reg(indy::regs::vc2::VENTRY)] = 0x7000;
    assert!(matches!(s.fb.mode(), Err(FbError::Unsupported(_))));
    let mut s = setup();
    s.m.borrow_mut().xmap.modes[usize::from(model::SCREEN_DID)] = 0x800;
    assert!(matches!(s.fb.mode(), Err(FbError::Unsupported(_))));
    // Pseudo-random VC2 RAM and registers: an answer or Unsupported, and bounded work.
    let mut x: u32 = 0x1234_5678;
    for _ in 0..8 {
        let mut s = setup();
        {
            let mut m = s.m.borrow_mut();
            let vc2 = &mut m.vc2;
            for w in vc2.ram.iter_mut().chain(vc2.regs.iter_mut()) {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *w = (x >> 16) as u16;
            }
        }
        match s.fb.mode() {
            Ok(m) => assert!(m.width <= 1280 && m.height <= 1024 && m.width > 0),
            Err(e) => assert!(matches!(e, FbError::Unsupported(_)), "{e:?}"),
        }
        assert!(s.fb.bus_mut().accesses < 1_000_000);
    }
}
