//! The relocator: checks that the image is an ELF32 big-endian MIPS relocatable object, places
//! its allocated sections at a base address and applies its relocations, like the IRIX 7 kernel
//! does. Pure: bytes in, a relocated memory image out (the caller copies it into RAM).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, SectionTable, Sym, SymbolTable};
use object::{BigEndian, SectionIndex, SymbolIndex};

use indy::abi::{ABI_VERSION, SYM_EXIT, SYM_INIT, SYM_POLL};

type Elf32 = elf::FileHeader32<BigEndian>;
/// Offsets in `e_ident`.
const EI_CLASS: usize = 4;
const EI_DATA: usize = 5;
const EI_NIDENT: usize = 16;
const BE: BigEndian = BigEndian;

/// Why an image was refused. Each message names the problem and, where there is one, the place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    NotElf,
    WrongClass(u8),
    WrongEndian(u8),
    WrongMachine(u16),
    WrongType(u16),
    Malformed(String),
    Truncated(String),
    UnsupportedRelocation {
        kind: u32,
        section: String,
        offset: u32,
    },
    RelaNotSupported(String),
    UndefinedSymbol(String),
    CommonSymbol(String),
    MissingEntry(&'static str),
    UnpairedHi16 {
        section: String,
        offset: u32,
    },
    Jump26OutOfSegment {
        section: String,
        offset: u32,
        target: u32,
    },
    Misaligned {
        section: String,
        offset: u32,
    },
    NoModinfo,
    BadModinfo(String),
    AbiTooNew {
        required: u32,
        provided: u32,
    },
    TooLarge {
        needed: u64,
        max: u32,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LoadError::*;
        match self {
            NotElf => write!(f, "not an ELF file (bad magic)"),
            WrongClass(c) => write!(
                f,
                "ELF class {c} is not ELF32 (the Indy kernel loads 32-bit objects)"
            ),
            WrongEndian(d) => write!(f, "ELF data encoding {d} is not big-endian (ELFDATA2MSB)"),
            WrongMachine(m) => write!(f, "ELF machine {m} is not EM_MIPS (8)"),
            WrongType(t) => write!(
                f,
                "ELF type {t} is not ET_REL (1): the image must be a relocatable object"
            ),
            Malformed(m) => write!(f, "malformed ELF: {m}"),
            Truncated(m) => write!(f, "truncated image: {m}"),
            UnsupportedRelocation {
                kind,
                section,
                offset,
            } => write!(
                f,
                "unsupported relocation type {kind} ({}) at {section}+{offset:#x}",
                reloc_name(*kind)
            ),
            RelaNotSupported(s) => write!(
                f,
                "RELA relocation section {s} is not supported (MIPS o32 uses REL)"
            ),
            UndefinedSymbol(s) => write!(
                f,
                "undefined symbol `{s}`: everything must come through the ABI table"
            ),
            CommonSymbol(s) => write!(
                f,
                "common symbol `{s}` is not supported (link with -r to allocate it)"
            ),
            MissingEntry(s) => write!(f, "missing entry symbol `{s}`"),
            UnpairedHi16 { section, offset } => {
                write!(
                    f,
                    "R_MIPS_HI16 at {section}+{offset:#x} has no matching R_MIPS_LO16"
                )
            }
            Jump26OutOfSegment {
                section,
                offset,
                target,
            } => write!(
                f,
                "R_MIPS_26 at {section}+{offset:#x}: target {target:#010x} is outside the 256 MB segment"
            ),
            Misaligned { section, offset } => {
                write!(f, "misaligned relocation at {section}+{offset:#x}")
            }
            NoModinfo => write!(f, "image has no .modinfo section"),
            BadModinfo(m) => write!(f, "bad .modinfo: {m}"),
            AbiTooNew { required, provided } => write!(
                f,
                "image requires ABI {required}, this kernel provides ABI {provided}"
            ),
            TooLarge { needed, max } => {
                write!(f, "image needs {needed} bytes, the module area holds {max}")
            }
        }
    }
}

impl core::error::Error for LoadError {}

fn reloc_name(kind: u32) -> &'static str {
    match kind {
        elf::R_MIPS_NONE => "R_MIPS_NONE",
        elf::R_MIPS_16 => "R_MIPS_16",
        elf::R_MIPS_32 => "R_MIPS_32",
        elf::R_MIPS_REL32 => "R_MIPS_REL32",
        elf::R_MIPS_26 => "R_MIPS_26",
        elf::R_MIPS_HI16 => "R_MIPS_HI16",
        elf::R_MIPS_LO16 => "R_MIPS_LO16",
        elf::R_MIPS_GPREL16 => "R_MIPS_GPREL16",
        elf::R_MIPS_LITERAL => "R_MIPS_LITERAL",
        elf::R_MIPS_GOT16 => "R_MIPS_GOT16",
        elf::R_MIPS_PC16 => "R_MIPS_PC16",
        elf::R_MIPS_CALL16 => "R_MIPS_CALL16",
        elf::R_MIPS_GPREL32 => "R_MIPS_GPREL32",
        _ => "unknown",
    }
}

/// The `.modinfo` strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModInfo {
    pub name: String,
    pub version: String,
    /// The ABI version the image requires.
    pub abi: u32,
}

/// A relocated image ready to copy to `base`.
#[derive(Debug, Clone)]
pub struct LoadedImage {
    /// Guest (KSEG0) address of `bytes[0]`.
    pub base: u32,
    /// The module area's content from `base`: sections with relocations applied, `.bss` zeroed.
    pub bytes: Vec<u8>,
    pub init: u32,
    pub poll: u32,
    pub exit: u32,
    pub modinfo: ModInfo,
    /// (name, address, size) of each placed section, in placement order.
    pub sections: Vec<(String, u32, u32)>,
    /// Relocations applied, per type (32, HI16, LO16, 26).
    pub reloc_counts: RelocCounts,
    /// Function symbols (address, size, name) sorted by address, for crash reports.
    pub functions: Vec<(u32, u32, String)>,
}

impl LoadedImage {
    /// `name+0xoff` of the function containing `va`.
    pub fn symbolize(&self, va: u32) -> Option<String> {
        let i = self
            .functions
            .partition_point(|(a, _, _)| *a <= va)
            .checked_sub(1)?;
        let (addr, size, name) = &self.functions[i];
        let off = va - addr;
        (off < (*size).max(1)).then(|| format!("{name}+{off:#x}"))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelocCounts {
    pub r32: u32,
    pub hi16: u32,
    pub lo16: u32,
    pub r26: u32,
}

fn malformed(e: object::Error) -> LoadError {
    LoadError::Truncated(e.to_string())
}

/// Load `data` at guest address `base` into an area of at most `max` bytes.
pub fn load(data: &[u8], base: u32, max: u32) -> Result<LoadedImage, LoadError> {
    check_ident(data)?;
    let header = Elf32::parse(data).map_err(malformed)?;
    let machine = header.e_machine(BE);
    if machine != elf::EM_MIPS {
        return Err(LoadError::WrongMachine(machine));
    }
    let kind = header.e_type(BE);
    if kind != elf::ET_REL {
        return Err(LoadError::WrongType(kind));
    }
    let sections = header.sections(BE, data).map_err(malformed)?;
    let symbols = sections
        .symbols(BE, data, elf::SHT_SYMTAB)
        .map_err(malformed)?;

    let (placed, total) = place_sections(&sections, base, data)?;
    if total > u64::from(max) {
        return Err(LoadError::TooLarge { needed: total, max });
    }
    let mut bytes = vec![0u8; total as usize];
    for (index, addr) in &placed {
        let section = sections.section(*index).map_err(malformed)?;
        if section.sh_type(BE) == elf::SHT_NOBITS {
            continue;
        }
        let content = section.data(BE, data).map_err(malformed)?;
        let off = (addr - base) as usize;
        bytes[off..off + content.len()].copy_from_slice(content);
    }

    let addr_of: BTreeMap<usize, u32> = placed.iter().map(|(i, a)| (i.0, *a)).collect();
    let resolver = Resolver {
        symbols: &symbols,
        addr_of: &addr_of,
        sections: &sections,
    };
    resolver.check_no_undefined()?;

    let mut counts = RelocCounts::default();
    for section in sections.iter() {
        let name = section_name(&sections, section);
        if section.sh_type(BE) == elf::SHT_RELA {
            let target = section.sh_info(BE) as usize;
            if addr_of.contains_key(&target) {
                return Err(LoadError::RelaNotSupported(name));
            }
            continue;
        }
        let Some((rels, _)) = section.rel(BE, data).map_err(malformed)? else {
            continue;
        };
        let target = SectionIndex(section.sh_info(BE) as usize);
        let Some(&target_addr) = addr_of.get(&target.0) else {
            continue; // relocations of debug info and other unloaded sections
        };
        let target_section = sections.section(target).map_err(malformed)?;
        let target_name = section_name(&sections, target_section);
        if target_section.sh_type(BE) == elf::SHT_NOBITS && !rels.is_empty() {
            return Err(LoadError::Malformed(format!(
                "relocations against .bss-like section {target_name}"
            )));
        }
        let mut ctx = RelocCtx {
            bytes: &mut bytes,
            base,
            section: target_name,
            section_addr: target_addr,
            section_size: target_section.sh_size(BE),
            counts: &mut counts,
            pending_hi: Vec::new(),
        };
        for rel in rels {
            let sym = rel.r_sym(BE);
            let s = resolver.value(sym)?;
            ctx.apply(rel.r_type(BE), rel.r_offset.get(BE), sym, s)?;
        }
        ctx.finish()?;
    }

    let init = resolver.entry(SYM_INIT)?;
    let poll = resolver.entry(SYM_POLL)?;
    let exit = resolver.entry(SYM_EXIT)?;
    let modinfo = read_modinfo(&sections, data)?;
    if modinfo.abi > ABI_VERSION {
        return Err(LoadError::AbiTooNew {
            required: modinfo.abi,
            provided: ABI_VERSION,
        });
    }
    let sections_out = placed
        .iter()
        .filter_map(|(i, a)| {
            let s = sections.section(*i).ok()?;
            Some((section_name(&sections, s), *a, s.sh_size(BE)))
        })
        .collect();
    let functions = resolver.functions();
    Ok(LoadedImage {
        base,
        bytes,
        init,
        poll,
        exit,
        modinfo,
        sections: sections_out,
        reloc_counts: counts,
        functions,
    })
}

/// The identification bytes, checked before anything else so each mismatch has its own message.
fn check_ident(data: &[u8]) -> Result<(), LoadError> {
    if data.len() < 4 || data[..4] != elf::ELFMAG {
        return Err(LoadError::NotElf);
    }
    if data.len() < EI_NIDENT {
        return Err(LoadError::Truncated(format!(
            "{} bytes, shorter than the ELF identification",
            data.len()
        )));
    }
    if data[EI_CLASS] != elf::ELFCLASS32 {
        return Err(LoadError::WrongClass(data[EI_CLASS]));
    }
    if data[EI_DATA] != elf::ELFDATA2MSB {
        return Err(LoadError::WrongEndian(data[EI_DATA]));
    }
    Ok(())
}

fn section_name(sections: &SectionTable<'_, Elf32>, s: &elf::SectionHeader32<BigEndian>) -> String {
    sections
        .section_name(BE, s)
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_else(|_| "<bad name>".into())
}

/// Lay out every SHF_ALLOC section from `base`, each at its alignment. Returns (section, address)
/// in placement order and the total size in bytes.
fn place_sections(
    sections: &SectionTable<'_, Elf32>,
    base: u32,
    data: &[u8],
) -> Result<(Vec<(SectionIndex, u32)>, u64), LoadError> {
    let mut placed = Vec::new();
    let mut cursor: u64 = 0;
    for (i, s) in sections.iter().enumerate() {
        if s.sh_flags(BE) & elf::SHF_ALLOC == 0 || s.sh_size(BE) == 0 {
            continue;
        }
        if s.sh_type(BE) != elf::SHT_NOBITS {
            // Make sure the content is really there before copying it.
            s.data(BE, data).map_err(malformed)?;
        }
        let align = u64::from(s.sh_addralign(BE).max(1));
        if !align.is_power_of_two() {
            return Err(LoadError::Malformed(format!(
                "section alignment {align} is not a power of two"
            )));
        }
        cursor = cursor.div_ceil(align) * align;
        let addr = u64::from(base) + cursor;
        if addr > u64::from(u32::MAX) {
            return Err(LoadError::TooLarge {
                needed: cursor,
                max: 0,
            });
        }
        placed.push((SectionIndex(i), addr as u32));
        cursor += u64::from(s.sh_size(BE));
    }
    Ok((placed, cursor))
}

struct Resolver<'a, 'd> {
    symbols: &'a SymbolTable<'d, Elf32>,
    addr_of: &'a BTreeMap<usize, u32>,
    sections: &'a SectionTable<'d, Elf32>,
}

impl Resolver<'_, '_> {
    fn name(&self, sym: &elf::Sym32<BigEndian>) -> String {
        sym.name(BE, self.symbols.strings())
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_else(|_| "<bad name>".into())
    }

    fn check_no_undefined(&self) -> Result<(), LoadError> {
        for (i, sym) in self.symbols.iter().enumerate() {
            if i == 0 {
                continue;
            }
            let shndx = sym.st_shndx(BE);
            if shndx == elf::SHN_UNDEF && sym.st_name(BE) != 0 {
                return Err(LoadError::UndefinedSymbol(self.name(sym)));
            }
            if shndx == elf::SHN_COMMON {
                return Err(LoadError::CommonSymbol(self.name(sym)));
            }
        }
        Ok(())
    }

    /// The final address (S) of symbol `index`.
    fn value(&self, index: u32) -> Result<u32, LoadError> {
        if index == 0 {
            return Ok(0);
        }
        let sym = self
            .symbols
            .symbol(SymbolIndex(index as usize))
            .map_err(malformed)?;
        let shndx = sym.st_shndx(BE);
        match shndx {
            elf::SHN_UNDEF => Err(LoadError::UndefinedSymbol(self.name(sym))),
            elf::SHN_ABS => Ok(sym.st_value(BE)),
            elf::SHN_COMMON => Err(LoadError::CommonSymbol(self.name(sym))),
            _ => {
                let sec = self
                    .symbols
                    .shndx(BE, SymbolIndex(index as usize))
                    .unwrap_or(u32::from(shndx)) as usize;
                let Some(addr) = self.addr_of.get(&sec) else {
                    let section = self
                        .sections
                        .section(SectionIndex(sec))
                        .map(|s| section_name(self.sections, s))
                        .unwrap_or_else(|_| format!("#{sec}"));
                    return Err(LoadError::Malformed(format!(
                        "symbol `{}` refers to section {section}, which is not loaded",
                        self.name(sym)
                    )));
                };
                Ok(addr.wrapping_add(sym.st_value(BE)))
            }
        }
    }

    fn functions(&self) -> Vec<(u32, u32, String)> {
        let mut out: Vec<(u32, u32, String)> = self
            .symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.st_type() == elf::STT_FUNC && s.st_shndx(BE) != elf::SHN_UNDEF)
            .filter_map(|(i, s)| Some((self.value(i as u32).ok()?, s.st_size(BE), self.name(s))))
            .collect();
        out.sort();
        out
    }

    fn entry(&self, name: &'static str) -> Result<u32, LoadError> {
        for (i, sym) in self.symbols.iter().enumerate() {
            if sym.st_shndx(BE) == elf::SHN_UNDEF || sym.st_bind() != elf::STB_GLOBAL {
                continue;
            }
            if sym.name(BE, self.symbols.strings()).ok() == Some(name.as_bytes()) {
                return self.value(i as u32);
            }
        }
        Err(LoadError::MissingEntry(name))
    }
}

/// Applies one REL section's relocations to one target section.
struct RelocCtx<'a> {
    bytes: &'a mut [u8],
    base: u32,
    section: String,
    section_addr: u32,
    section_size: u32,
    counts: &'a mut RelocCounts,
    /// HI16 relocations waiting for their LO16: (offset in section, symbol index).
    pending_hi: Vec<(u32, u32)>,
}

impl RelocCtx<'_> {
    fn word_at(&self, offset: u32) -> Result<usize, LoadError> {
        if !offset.is_multiple_of(4) {
            return Err(LoadError::Misaligned {
                section: self.section.clone(),
                offset,
            });
        }
        if u64::from(offset) + 4 > u64::from(self.section_size) {
            return Err(LoadError::Malformed(format!(
                "relocation offset {offset:#x} outside section {} ({:#x} bytes)",
                self.section, self.section_size
            )));
        }
        Ok((self.section_addr - self.base + offset) as usize)
    }

    fn read(&self, at: usize) -> u32 {
        u32::from_be_bytes([
            self.bytes[at],
            self.bytes[at + 1],
            self.bytes[at + 2],
            self.bytes[at + 3],
        ])
    }

    fn write(&mut self, at: usize, v: u32) {
        self.bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }

    fn apply(&mut self, kind: u32, offset: u32, sym: u32, s: u32) -> Result<(), LoadError> {
        match kind {
            elf::R_MIPS_NONE => Ok(()),
            elf::R_MIPS_32 => {
                let at = self.word_at(offset)?;
                let v = self.read(at).wrapping_add(s);
                self.write(at, v);
                self.counts.r32 += 1;
                Ok(())
            }
            elf::R_MIPS_26 => {
                let at = self.word_at(offset)?;
                let insn = self.read(at);
                let addend = (((insn & 0x03FF_FFFF) << 6) as i32 >> 4) as u32; // sign-extended 28 bits
                let target = s.wrapping_add(addend);
                let place = self.section_addr.wrapping_add(offset);
                if target & 3 != 0 {
                    return Err(LoadError::Misaligned {
                        section: self.section.clone(),
                        offset,
                    });
                }
                if target & 0xF000_0000 != place.wrapping_add(4) & 0xF000_0000 {
                    return Err(LoadError::Jump26OutOfSegment {
                        section: self.section.clone(),
                        offset,
                        target,
                    });
                }
                self.write(at, (insn & 0xFC00_0000) | ((target >> 2) & 0x03FF_FFFF));
                self.counts.r26 += 1;
                Ok(())
            }
            elf::R_MIPS_HI16 => {
                self.word_at(offset)?;
                self.pending_hi.push((offset, sym));
                Ok(())
            }
            elf::R_MIPS_LO16 => {
                let at = self.word_at(offset)?;
                let insn = self.read(at);
                let lo = i32::from(insn as u16 as i16);
                let pending = core::mem::take(&mut self.pending_hi);
                for (hi_off, hi_sym) in pending {
                    if hi_sym != sym {
                        self.pending_hi.push((hi_off, hi_sym));
                        continue;
                    }
                    let hi_at = self.word_at(hi_off)?;
                    let hi_insn = self.read(hi_at);
                    let ahl = ((hi_insn & 0xFFFF) << 16).wrapping_add(lo as u32);
                    let v = s.wrapping_add(ahl);
                    let field = (v.wrapping_add(0x8000) >> 16) & 0xFFFF;
                    self.write(hi_at, (hi_insn & 0xFFFF_0000) | field);
                    self.counts.hi16 += 1;
                }
                let v = s.wrapping_add(lo as u32);
                self.write(at, (insn & 0xFFFF_0000) | (v & 0xFFFF));
                self.counts.lo16 += 1;
                Ok(())
            }
            other => Err(LoadError::UnsupportedRelocation {
                kind: other,
                section: self.section.clone(),
                offset,
            }),
        }
    }

    fn finish(&self) -> Result<(), LoadError> {
        match self.pending_hi.first() {
            Some(&(offset, _)) => Err(LoadError::UnpairedHi16 {
                section: self.section.clone(),
                offset,
            }),
            None => Ok(()),
        }
    }
}

fn read_modinfo(sections: &SectionTable<'_, Elf32>, data: &[u8]) -> Result<ModInfo, LoadError> {
    let (_, section) = sections
        .section_by_name(BE, b".modinfo")
        .ok_or(LoadError::NoModinfo)?;
    let content = section.data(BE, data).map_err(malformed)?;
    parse_modinfo(content)
}

/// Parse NUL-separated `key=value` strings. `abi` is required; `name` and `version` default to
/// "?" so an old image still loads and says what it lacks.
pub fn parse_modinfo(content: &[u8]) -> Result<ModInfo, LoadError> {
    let mut info = ModInfo {
        name: "?".into(),
        version: "?".into(),
        abi: 0,
    };
    let mut abi = None;
    for entry in content.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let text = core::str::from_utf8(entry)
            .map_err(|_| LoadError::BadModinfo("entry is not UTF-8".into()))?;
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| LoadError::BadModinfo(format!("entry `{text}` is not key=value")))?;
        match key {
            "name" => info.name = value.into(),
            "version" => info.version = value.into(),
            "abi" => {
                abi =
                    Some(value.trim().parse::<u32>().map_err(|_| {
                        LoadError::BadModinfo(format!("abi `{value}` is not a number"))
                    })?)
            }
            _ => {}
        }
    }
    info.abi = abi.ok_or_else(|| LoadError::BadModinfo("no abi= entry".into()))?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modinfo_parses_and_requires_abi() {
        let m = parse_modinfo(b"name=irix7-mcp\0version=0.1.0\0abi=10\0").unwrap();
        assert_eq!(
            m,
            ModInfo {
                name: "irix7-mcp".into(),
                version: "0.1.0".into(),
                abi: 10
            }
        );
        assert!(matches!(
            parse_modinfo(b"name=x\0"),
            Err(LoadError::BadModinfo(_))
        ));
        assert!(matches!(
            parse_modinfo(b"abi=ten\0"),
            Err(LoadError::BadModinfo(_))
        ));
        assert!(matches!(
            parse_modinfo(b"garbage\0"),
            Err(LoadError::BadModinfo(_))
        ));
    }

    #[test]
    fn ident_checks() {
        assert_eq!(load(b"hello world", 0, 100).unwrap_err(), LoadError::NotElf);
        assert!(matches!(
            load(b"\x7fELF\x01", 0, 100).unwrap_err(),
            LoadError::Truncated(_)
        ));
        let mut id = [0u8; 64];
        id[..4].copy_from_slice(&elf::ELFMAG);
        id[4] = 2;
        id[5] = 2;
        assert_eq!(load(&id, 0, 100).unwrap_err(), LoadError::WrongClass(2));
        id[4] = 1;
        id[5] = 1;
        assert_eq!(load(&id, 0, 100).unwrap_err(), LoadError::WrongEndian(1));
    }
}
