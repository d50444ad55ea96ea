//! Reading a cell (`docs/debug.md`): a static big-endian MIPS executable linked in a kernel's
//! cell window. Both kernels that run cells load it with this one reader: the rig (on the
//! host) and the MAME stand-in (on the R4x00). Pure: bytes in, the loadable segments out,
//! each checked to lie inside the window.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::{BigEndian, Object};

/// One loadable segment: its bytes from the file (`data`) at `va`, then zeros up to `mem`
/// bytes (its `.bss`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellSegment<'a> {
    pub va: u32,
    pub data: &'a [u8],
    pub mem: u32,
}

/// A cell as a kernel loads it: its segments and its entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellImage<'a> {
    pub segments: Vec<CellSegment<'a>>,
    pub entry: u32,
}

/// Parses a cell's ELF and checks that every loadable segment and the entry lie inside the
/// window `base..base + size` (KSEG0 addresses). The message says what is wrong.
pub fn read_cell(elf: &[u8], base: u32, size: u32) -> Result<CellImage<'_>, String> {
    let file = ElfFile32::<BigEndian>::parse(elf).map_err(|e| format!("{e}"))?;
    let endian = file.endian();
    let end = u64::from(base) + u64::from(size);
    let headers = file
        .elf_header()
        .program_headers(endian, elf)
        .map_err(|e| format!("{e}"))?;
    let mut segments = Vec::new();
    for ph in headers {
        if ph.p_type(endian) != object::elf::PT_LOAD {
            continue;
        }
        let va = ph.p_vaddr(endian);
        let mem = ph.p_memsz(endian);
        let data = ph
            .data(endian, elf)
            .map_err(|_| String::from("a segment's data lies outside the file"))?;
        if va < base || u64::from(va) + u64::from(mem) > end || data.len() as u64 > u64::from(mem) {
            return Err(format!(
                "segment {va:#x}+{mem:#x} is outside the cell window {base:#x}..{end:#x}"
            ));
        }
        segments.push(CellSegment { va, data, mem });
    }
    let entry = file.entry() as u32;
    if entry < base || u64::from(entry) >= end {
        return Err(format!("entry {entry:#x} is outside the cell window"));
    }
    Ok(CellImage { segments, entry })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_refused_not_a_panic() {
        assert!(read_cell(b"", 0x8870_0000, 0x10_0000).is_err());
        assert!(read_cell(&[0x7F, b'E', b'L', b'F', 1, 2, 1], 0x8870_0000, 0x10_0000).is_err());
        let mut junk = [0u8; 256];
        junk[..4].copy_from_slice(b"\x7fELF");
        junk[4] = 1;
        junk[5] = 2;
        for (i, b) in junk.iter_mut().enumerate().skip(6) {
            *b = (i * 37) as u8;
        }
        assert!(read_cell(&junk, 0x8870_0000, 0x10_0000).is_err());
    }
}
