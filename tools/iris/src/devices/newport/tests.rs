//! Register-level tests of the whole board: the sequences the module's driver uses.

use super::*;
use indy::regs::dcb::SLAVE_XMAP0;
use indy::regs::xmap::entry as xmap_entry;

fn board() -> (Arc<ConsoleLog>, Newport) {
    let log = Arc::new(ConsoleLog::new(false));
    let n = Newport::new(log.clone());
    (log, n)
}

fn w(n: &mut Newport, off: u32, v: u32) {
    n.store(REX3.base + off, 4, v);
}

fn r(n: &mut Newport, off: u32) -> u32 {
    n.load(REX3.base + off, 4)
}

/// Reads the rectangle as the reference's sequence does: GO _SETUP, GO reads, a plain last read.
fn read_rect(
    n: &mut Newport,
    dm1: u32,
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
    words: usize,
) -> Vec<u32> {
    w(n, DRAWMODE1, dm1);
    w(n, WRMASK, 0xFFFF_FFFF);
    w(n, DRAWMODE0, 0x65);
    w(n, XYSTARTI, (x0 << 16) | y0);
    w(n, XYENDI, (x1 << 16) | y1);
    w(n, SETUP + GO, 0);
    let mut out: Vec<u32> = (1..words).map(|_| r(n, HOSTRW0 + GO)).collect();
    out.push(r(n, HOSTRW0));
    out
}

fn dcb_byte_read(n: &mut Newport, mode: u32) -> u32 {
    w(n, DCBMODE, mode);
    n.load(REX3.base + DCBDATA0 + 3, 1)
}

#[test]
fn console_text_reads_back_through_rex3() {
    let (log, mut n) = board();
    log.transmit(b"Hello\n");
    // Text row 0 (VRAM lines 0..16): the 'H' cell has foreground pixels, row 1 has none.
    let words = read_rect(&mut n, 0x3400_0189, 0, 0, 1279, 15, 320 * 16);
    assert!(
        words[..2]
            .iter()
            .any(|w| w.to_be_bytes().contains(&(FG as u8)))
    );
    assert!(words.iter().all(|w| {
        w.to_be_bytes()
            .iter()
            .all(|b| u32::from(*b) == FG || u32::from(*b) == BG)
    }));
    let blank = read_rect(&mut n, 0x3400_0189, 0, 16, 1279, 31, 320 * 16);
    assert!(blank.iter().all(|w| *w == 0));
    // Exactly the words asked for: the last plain read returned the final word of row 15.
    assert_eq!(words.len(), 320 * 16);
    assert_eq!(r(&mut n, STATUS), VERSION);
    assert_eq!(r(&mut n, TOPSCAN), 0x3FF);
    n.stuck_busy = true;
    assert_eq!(r(&mut n, STATUS) & 0x18, 0x18);
}

#[test]
fn dcb_reads_vc2_xmap_and_cmap() {
    let (_log, mut n) = board();
    // VC2 register 0 through an index byte (CRS 0) and a halfword read (CRS 1).
    w(&mut n, DCBMODE, 0x0084_1000 | 1);
    n.store(REX3.base + DCBDATA0 + 3, 1, 0);
    w(&mut n, DCBMODE, 0x0084_1000 | (1 << 4) | 2);
    assert_eq!(
        n.load(REX3.base + DCBDATA0 + 2, 2),
        u32::from(vc2::LINE_TABLE)
    );
    // XMAP0 entry SCREEN_DID, low byte first.
    let did = u32::from(SCREEN_DID);
    let mut entry = 0;
    for i in 0..3 {
        w(&mut n, DCBMODE, (SLAVE_XMAP0 << 7) | (7 << 4) | 1);
        n.store(REX3.base + DCBDATA0 + 3, 1, (did << 2) | i);
        entry |= dcb_byte_read(&mut n, (SLAVE_XMAP0 << 7) | (5 << 4) | 1) << (8 * i);
    }
    assert_eq!(entry, xmap_entry(PIX_CI, SIZE_8, CMAP_MSB));
    // CMAP entry CMAP_BASE + 7 through the X driver's sequence.
    w(&mut n, DCBMODE, 0x100 | 0x0084_8000 | 0x1000_0000 | 8 | 2);
    n.store(REX3.base + DCBDATA0 + 2, 2, u32::from(CMAP_BASE) + FG);
    w(&mut n, DCBMODE, 0x100 | 0x0084_8000 | (2 << 4) | 3);
    assert_eq!(r(&mut n, DCBDATA0), 0xAAAA_AA00);
}

#[test]
fn rgb24_screen_and_scroll() {
    let (log, mut n) = board();
    n.set_depth(Depth::Rgb24);
    assert_eq!(
        n.xmap.modes[usize::from(SCREEN_DID)],
        xmap_entry(PIX_RGB, SIZE_24, 0)
    );
    log.transmit(b"#");
    let words = read_rect(&mut n, 0x3400_8399, 0, 0, 7, 15, 8 * 16);
    assert!(words.contains(&0x00AA_AAAA));
    assert!(words.iter().all(|w| *w == 0 || *w == 0x00AA_AAAA));
    // 64 newlines scroll once: TOPSCAN = 16 - 1, and the '#' is off the top.
    log.transmit(&[b'\n'; 64]);
    assert_eq!(r(&mut n, TOPSCAN), 15);
    assert!(n.screen_row(0).iter().all(|p| *p == 0));
    // A reset returns to the PROM state.
    NewportDevice(Rc::new(RefCell::new(Newport::new(log.clone())))).reset();
    w(&mut n, TOPSCAN, 0x3FF);
    assert_eq!(r(&mut n, TOPSCAN), 0x3FF);
}
