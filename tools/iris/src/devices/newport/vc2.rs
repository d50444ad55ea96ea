//! The VC2 video timing controller as a DCB slave: 32 registers and 32K halfwords of RAM
//! holding the video-timing table and the DID table.
//!
//! Register access (DCB slave 0): CRS 0 takes a register index (1-byte transfer) or a whole
//! write `(reg<<24)|(val<<8)` (3-byte transfer); CRS 1 reads or writes the selected register as
//! a halfword; CRS 3 reads or writes RAM at register 7 and increments register 7. The config
//! register is 0x1F (NetBSD, MAME; Linux says 0x20).

use indy::regs::vc2::{
    CONFIG, CONTROL, CRS_INDEX, CRS_RAM, CRS_REG, DENTRY, RADDR, RAM_WORDS, REGS, VENTRY,
};

/// Index of a VC2 register in [`Vc2::regs`].
pub const fn reg(r: u8) -> usize {
    r as usize
}

/// Where the rig's PROM-like setup puts its tables in VC2 RAM.
pub const LINE_TABLE: u16 = 0x0100;
pub const SEQ_BLANK: u16 = 0x0200;
pub const SEQ_VISIBLE: u16 = 0x0210;
pub const DID_TABLE: u16 = 0x0400;
pub const DID_LIST: u16 = 0x0800;

pub struct Vc2 {
    pub regs: [u16; REGS],
    pub ram: Vec<u16>,
    /// Register selected by the last CRS 0 index write.
    index: u8,
}

impl Default for Vc2 {
    fn default() -> Self {
        Vc2 {
            regs: [0; REGS],
            ram: vec![0; RAM_WORDS],
            index: 0,
        }
    }
}

/// A horizontal sequence word that adds `cols` (even, ≤ 254) visible columns and needs no
/// second word (bit 7 set).
fn visible_word(cols: u16) -> u16 {
    ((cols / 2) << 8) | 0x80
}

impl Vc2 {
    /// A 1280×1024 timing table, as a PROM leaves it: 3 lines of vertical sync and 38 of
    /// blanking around 1024 visible lines, and a DID table whose every line starts with `did`.
    pub fn program_1280x1024(&mut self, did: u8) {
        self.ram.fill(0);
        let lines = [
            (SEQ_BLANK, 3u16),
            (SEQ_VISIBLE, 1024),
            (SEQ_BLANK, 38),
            (0, 0),
        ];
        for (i, (seq, n)) in lines.iter().enumerate() {
            self.ram[usize::from(LINE_TABLE) + 2 * i] = *seq;
            self.ram[usize::from(LINE_TABLE) + 2 * i + 1] = *n;
        }
        // Blank lines: state words with bit 0 set (no columns), the last one stops (bit 15).
        self.ram[usize::from(SEQ_BLANK)] = 0x2081;
        self.ram[usize::from(SEQ_BLANK) + 1] = 0x8081;
        // Visible lines: 128 columns in a word that takes a second word (bit 7 clear), then
        // nine single words of 128 columns: 1280 in all.
        let mut seq = vec![visible_word(128) & !0x80, 0x0010];
        seq.extend(std::iter::repeat_n(visible_word(128), 9));
        seq.push(0x8081);
        for (i, w) in seq.iter().enumerate() {
            self.ram[usize::from(SEQ_VISIBLE) + i] = *w;
        }
        // DID table: one list pointer per line, each list `(x<<5)|did` ending at x = 1280.
        for line in 0..1024 {
            self.ram[usize::from(DID_TABLE) + line] = DID_LIST;
        }
        self.ram[usize::from(DID_LIST)] = u16::from(did & 0x1F);
        self.ram[usize::from(DID_LIST) + 1] = (1280 << 5) | u16::from(did & 0x1F);
        self.regs = [0; REGS];
        self.regs[reg(VENTRY)] = LINE_TABLE;
        self.regs[reg(DENTRY)] = DID_TABLE;
        self.regs[reg(CONTROL)] = 0x00F5;
        self.regs[reg(CONFIG)] = 0x0003;
    }

    fn ram_at(&mut self) -> usize {
        let a = usize::from(self.regs[reg(RADDR)]) % RAM_WORDS;
        self.regs[reg(RADDR)] = self.regs[reg(RADDR)].wrapping_add(1);
        a
    }

    /// A DCB write of `width` bytes (`data` right-aligned, 3 bytes in 23:0) to `crs`.
    pub fn write(&mut self, crs: u32, width: u32, data: u32) {
        match (crs, width) {
            (CRS_INDEX, 1) => self.index = data as u8,
            (CRS_INDEX, 3) => {
                let reg = usize::from((data >> 16) as u8);
                if let Some(r) = self.regs.get_mut(reg) {
                    *r = data as u16;
                }
            }
            (CRS_REG, _) => {
                if let Some(r) = self.regs.get_mut(usize::from(self.index)) {
                    *r = data as u16;
                }
            }
            (CRS_RAM, _) => {
                let a = self.ram_at();
                self.ram[a] = data as u16;
            }
            _ => {}
        }
    }

    /// A DCB read from `crs` (halfword data).
    pub fn read(&mut self, crs: u32) -> u32 {
        match crs {
            CRS_REG => self
                .regs
                .get(usize::from(self.index))
                .map_or(0, |r| u32::from(*r)),
            CRS_RAM => {
                let a = self.ram_at();
                u32::from(self.ram[a])
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_and_ram_auto_increment() {
        let mut v = Vc2::default();
        v.program_1280x1024(3);
        v.write(0, 1, u32::from(VENTRY));
        assert_eq!(v.read(1), u32::from(LINE_TABLE));
        // Word write: register 7 = LINE_TABLE + 2, then read (sequence, count) pairs.
        v.write(0, 3, (7 << 16) | u32::from(LINE_TABLE + 2));
        assert_eq!(v.read(3), u32::from(SEQ_VISIBLE));
        assert_eq!(v.read(3), 1024);
        v.write(0, 1, u32::from(RADDR));
        assert_eq!(v.read(1), u32::from(LINE_TABLE + 4));
        v.write(0, 3, (7 << 16) | u32::from(DID_LIST));
        assert_eq!(v.read(3), 3);
        // RAM writes through CRS 3 land and increment too.
        v.write(0, 3, (7 << 16) | 0x7FFF);
        v.write(3, 2, 0xBEEF);
        v.write(0, 3, (7 << 16) | 0x7FFF);
        assert_eq!(v.read(3), 0xBEEF);
        // Unknown register indices read 0 and writes to them are dropped.
        v.write(0, 1, 0x40);
        v.write(1, 2, 5);
        assert_eq!(v.read(1), 0);
    }
}
