//! The R4400 as GDB's remote protocol sees it: 32-bit MIPS, big-endian, 72 registers in GDB's
//! raw order (the kernel's `CtxFrame`). gdbstub's own MIPS description writes registers
//! little-endian, which a big-endian target cannot use, hence this one. The target description
//! (`target.xml`) names the registers with GDB's MIPS features, numbered so that the `g`
//! packet's order is the frame's.

use core::num::NonZeroUsize;

use gdbstub::arch::{Arch, RegId, Registers};
use indy::abi::{CTX_FRAME_WORDS, CtxFrame, frame};

/// GDB's MIPS target, big-endian, o32.
pub enum MipsBe {}

/// A context's registers as GDB reads and writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Regs(pub CtxFrame);

impl Registers for Regs {
    /// gdbstub's address type ([`MipsBe`]'s `Usize`).
    type ProgramCounter = u64;

    fn pc(&self) -> u64 {
        u64::from(self.0.w[frame::PC])
    }

    fn gdb_serialize(&self, mut write_byte: impl FnMut(Option<u8>)) {
        for w in self.0.w {
            for b in w.to_be_bytes() {
                write_byte(Some(b));
            }
        }
    }

    /// A `G` packet: whole big-endian words, at most the frame's 72; the words it leaves out
    /// keep their values.
    fn gdb_deserialize(&mut self, bytes: &[u8]) -> Result<(), ()> {
        if !bytes.len().is_multiple_of(4) || bytes.len() > CTX_FRAME_WORDS * 4 {
            return Err(());
        }
        for (w, b) in self.0.w.iter_mut().zip(bytes.chunks_exact(4)) {
            *w = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    }
}

/// A register by its GDB number (0–71).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegNum(pub usize);

impl RegId for RegNum {
    fn from_raw_id(id: usize) -> Option<(Self, Option<NonZeroUsize>)> {
        (id < CTX_FRAME_WORDS).then(|| (RegNum(id), NonZeroUsize::new(4)))
    }
}

/// An address as GDB sends it, narrowed to the R4400's 32 bits: GDB masks most packets' to
/// the target's width, but not every one (its `X` probe of binary writes carries KSEG0's
/// addresses sign-extended, `ffffffff887001c8`). Upper bits that are neither zero nor the
/// sign's extension name no address here (`None`: an error packet, not a mismatch that ends
/// the session).
pub fn narrow(addr: u64) -> Option<u32> {
    let low = addr as u32;
    match addr >> 32 {
        0 => Some(low),
        0xffff_ffff if low & 0x8000_0000 != 0 => Some(low),
        _ => None,
    }
}

impl Arch for MipsBe {
    /// Wider than the machine's (see [`narrow`]): gdbstub refuses a wider address than this
    /// as a protocol mismatch and ends the session.
    type Usize = u64;
    type Registers = Regs;
    type RegId = RegNum;
    /// GDB's `Z0` kind: the breakpoint's size in bytes (4).
    type BreakpointKind = usize;

    fn target_description_xml() -> Option<&'static str> {
        Some(include_str!("target.xml"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_narrowed_as_gdb_widens_them() {
        assert_eq!(narrow(0x8870_01c8), Some(0x8870_01c8));
        assert_eq!(narrow(0xffff_ffff_8870_01c8), Some(0x8870_01c8));
        assert_eq!(narrow(0x0000_0004), Some(4));
        // Not a sign's extension: bit 31 clear under ones, or other upper bits.
        assert_eq!(narrow(0xffff_ffff_0000_0004), None);
        assert_eq!(narrow(0x0000_0001_8870_01c8), None);
    }

    #[test]
    fn registers_are_big_endian_words_in_frame_order() {
        let mut f = CtxFrame::default();
        f.w[1] = 0x0102_0304;
        f.w[frame::PC] = 0x8870_0010;
        let mut bytes = alloc::vec::Vec::new();
        Regs(f).gdb_serialize(|b| bytes.push(b.unwrap()));
        assert_eq!(bytes.len(), 288);
        assert_eq!(&bytes[4..8], &[1, 2, 3, 4]);
        assert_eq!(&bytes[37 * 4..38 * 4], &[0x88, 0x70, 0x00, 0x10]);
        let mut back = Regs::default();
        back.gdb_deserialize(&bytes).unwrap();
        assert_eq!(back.0, f);
        assert_eq!(back.pc(), 0x8870_0010);
        assert!(back.gdb_deserialize(&bytes[..7]).is_err());
        assert!(back.gdb_deserialize(&[0; 292]).is_err());
    }

    #[test]
    fn the_description_numbers_registers_as_the_frame() {
        let xml = MipsBe::target_description_xml().unwrap();
        for (name, n) in [
            ("r31", 31),
            ("status", frame::SR),
            ("lo", frame::LO),
            ("hi", frame::HI),
            ("badvaddr", frame::BAD),
            ("cause", frame::CAUSE),
            ("pc", frame::PC),
            ("f0", frame::F0),
            ("fcsr", frame::FCSR),
            ("fir", frame::FIR),
        ] {
            let reg = alloc::format!("<reg name=\"{name}\" bitsize=\"32\"");
            let at = xml.find(&reg).unwrap_or_else(|| panic!("{name}"));
            let tail = &xml[at..at + xml[at..].find("/>").unwrap()];
            assert!(
                tail.contains(&alloc::format!("regnum=\"{n}\"")),
                "{name}: {tail}"
            );
        }
        assert!(xml.contains("<architecture>mips</architecture>"));
    }
}
