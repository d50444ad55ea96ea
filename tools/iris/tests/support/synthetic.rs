//! Test helpers: a tiny MIPS assembler, an ELF relocatable-object builder (the `object` crate's
//! writer) and a rig set up in a temporary root with a boot config for a given image.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use iris::image::sha256_hex;
use iris::{Rig, RigError, RigOptions};
use object::elf;
use object::write::{Object, Relocation, StandardSection, Symbol, SymbolId, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags, SymbolKind,
    SymbolScope,
};

pub const ZERO: u32 = 0;
pub const V0: u32 = 2;
pub const V1: u32 = 3;
pub const A0: u32 = 4;
pub const A1: u32 = 5;
pub const A2: u32 = 6;
pub const A3: u32 = 7;
pub const T0: u32 = 8;
pub const T1: u32 = 9;
pub const T2: u32 = 10;
pub const S0: u32 = 16;
pub const T9: u32 = 25;
pub const SP: u32 = 29;
pub const RA: u32 = 31;

pub fn lui(rt: u32, imm: u16) -> u32 {
    0x3C00_0000 | rt << 16 | u32::from(imm)
}
pub fn addiu(rt: u32, rs: u32, imm: i16) -> u32 {
    0x2400_0000 | rs << 21 | rt << 16 | u32::from(imm as u16)
}
pub fn ori(rt: u32, rs: u32, imm: u16) -> u32 {
    0x3400_0000 | rs << 21 | rt << 16 | u32::from(imm)
}
pub fn lw(rt: u32, off: i16, base: u32) -> u32 {
    0x8C00_0000 | base << 21 | rt << 16 | u32::from(off as u16)
}
pub fn sw(rt: u32, off: i16, base: u32) -> u32 {
    0xAC00_0000 | base << 21 | rt << 16 | u32::from(off as u16)
}
pub fn addu(rd: u32, rs: u32, rt: u32) -> u32 {
    rs << 21 | rt << 16 | rd << 11 | 0x21
}
pub fn mov(rd: u32, rs: u32) -> u32 {
    addu(rd, rs, ZERO)
}
pub fn jr(rs: u32) -> u32 {
    rs << 21 | 0x08
}
pub fn jalr(rs: u32) -> u32 {
    rs << 21 | 31 << 11 | 0x09
}
pub fn beq(rs: u32, rt: u32, off: i16) -> u32 {
    0x1000_0000 | rs << 21 | rt << 16 | u32::from(off as u16)
}
pub fn bne(rs: u32, rt: u32, off: i16) -> u32 {
    0x1400_0000 | rs << 21 | rt << 16 | u32::from(off as u16)
}
pub fn teq(rs: u32, rt: u32) -> u32 {
    rs << 21 | rt << 16 | 0x34
}
pub const BREAK: u32 = 0x0000_000D;
pub const NOP: u32 = 0;
/// `b .` with its delay slot: an endless loop.
pub const SPIN: [u32; 2] = [0x1000_FFFF, 0];

/// Machine code for one section, with relocations by symbol name.
#[derive(Default, Clone)]
pub struct Asm {
    pub words: Vec<u32>,
    pub relocs: Vec<(u32, String, u32)>,
    /// Global function symbols: (name, byte offset, size filled in at the next `func`).
    pub funcs: Vec<(String, u32)>,
}

impl Asm {
    pub fn here(&self) -> u32 {
        self.words.len() as u32 * 4
    }
    pub fn func(&mut self, name: &str) -> &mut Self {
        self.funcs.push((name.into(), self.here()));
        self
    }
    pub fn op(&mut self, w: u32) -> &mut Self {
        self.words.push(w);
        self
    }
    pub fn ops(&mut self, ws: &[u32]) -> &mut Self {
        self.words.extend_from_slice(ws);
        self
    }
    pub fn reloc(&mut self, w: u32, sym: &str, kind: u32) -> &mut Self {
        self.relocs.push((self.here(), sym.into(), kind));
        self.words.push(w);
        self
    }
    /// reg = &sym
    pub fn la(&mut self, reg: u32, sym: &str) -> &mut Self {
        self.reloc(lui(reg, 0), sym, elf::R_MIPS_HI16).reloc(
            addiu(reg, reg, 0),
            sym,
            elf::R_MIPS_LO16,
        )
    }
    /// reg = *(u32*)&sym
    pub fn lw_sym(&mut self, reg: u32, sym: &str) -> &mut Self {
        self.reloc(lui(reg, 0), sym, elf::R_MIPS_HI16)
            .reloc(lw(reg, 0, reg), sym, elf::R_MIPS_LO16)
    }
    /// *(u32*)&sym = rt (clobbers `tmp`)
    pub fn sw_sym(&mut self, rt: u32, sym: &str, tmp: u32) -> &mut Self {
        self.reloc(lui(tmp, 0), sym, elf::R_MIPS_HI16)
            .reloc(sw(rt, 0, tmp), sym, elf::R_MIPS_LO16)
    }
    pub fn prologue(&mut self) -> &mut Self {
        self.ops(&[addiu(SP, SP, -32), sw(RA, 28, SP)])
    }
    /// Return with $v0 as it is.
    pub fn epilogue(&mut self) -> &mut Self {
        self.ops(&[lw(RA, 28, SP), jr(RA), addiu(SP, SP, 32)])
    }
    /// Call the ABI function at table byte offset `field` (arguments already in $a0..$a3).
    pub fn call_abi(&mut self, field: usize) -> &mut Self {
        self.lw_sym(T0, "abi_ptr")
            .ops(&[lw(T9, field as i16, T0), jalr(T9), NOP])
    }
    /// Return `v` from a leaf function.
    pub fn ret(&mut self, v: i16) -> &mut Self {
        self.ops(&[jr(RA), addiu(V0, ZERO, v)])
    }
}

/// A module object: .text from an `Asm`, named data blobs, .bss buffers and .modinfo.
pub struct ModuleObj {
    pub text: Asm,
    /// (name, bytes) in .data
    pub data: Vec<(String, Vec<u8>)>,
    /// (name, bytes) in .rodata
    pub rodata: Vec<(String, Vec<u8>)>,
    /// (name, size) in .bss
    pub bss: Vec<(String, u64)>,
    pub modinfo: Option<Vec<u8>>,
    pub undefined: Vec<String>,
    /// Relocations in .data: (data item, offset in it, symbol, type).
    pub data_relocs: Vec<(String, u64, String, u32)>,
    pub arch: Architecture,
    pub endian: Endianness,
}

impl ModuleObj {
    /// A module with `abi_ptr` in .data and the standard .modinfo (ABI 10).
    pub fn new(text: Asm) -> ModuleObj {
        ModuleObj {
            text,
            data: vec![("abi_ptr".into(), vec![0; 4])],
            rodata: Vec::new(),
            bss: Vec::new(),
            modinfo: Some(b"name=testmod\0version=0.0.1\0abi=10\0".to_vec()),
            undefined: Vec::new(),
            data_relocs: Vec::new(),
            arch: Architecture::Mips,
            endian: Endianness::Big,
        }
    }

    pub fn build(&self) -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, self.arch, self.endian);
        let mut syms: Vec<(String, SymbolId)> = Vec::new();
        let text = obj.section_id(StandardSection::Text);
        let code: Vec<u8> = self
            .text
            .words
            .iter()
            .flat_map(|w| {
                if self.endian == Endianness::Big {
                    w.to_be_bytes()
                } else {
                    w.to_le_bytes()
                }
            })
            .collect();
        let text_off = obj.append_section_data(text, &code, 16);
        for (i, (name, off)) in self.text.funcs.iter().enumerate() {
            let end = self
                .text
                .funcs
                .get(i + 1)
                .map_or(code.len() as u32, |f| f.1);
            let id = obj.add_symbol(Symbol {
                name: name.clone().into_bytes(),
                value: text_off + u64::from(*off),
                size: u64::from(end - off),
                kind: SymbolKind::Text,
                scope: SymbolScope::Dynamic,
                weak: false,
                section: SymbolSection::Section(text),
                flags: SymbolFlags::None,
            });
            syms.push((name.clone(), id));
        }
        let mut item_offsets: Vec<(String, u64)> = Vec::new();
        let mut add_data = |obj: &mut Object, sec, items: &Vec<(String, Vec<u8>)>| {
            for (name, bytes) in items {
                let off = obj.append_section_data(sec, bytes, 8);
                item_offsets.push((name.clone(), off));
                let id = obj.add_symbol(Symbol {
                    name: name.clone().into_bytes(),
                    value: off,
                    size: bytes.len() as u64,
                    kind: SymbolKind::Data,
                    scope: SymbolScope::Compilation,
                    weak: false,
                    section: SymbolSection::Section(sec),
                    flags: SymbolFlags::None,
                });
                syms.push((name.clone(), id));
            }
        };
        let data = obj.section_id(StandardSection::Data);
        add_data(&mut obj, data, &self.data);
        if !self.rodata.is_empty() {
            let ro = obj.section_id(StandardSection::ReadOnlyData);
            add_data(&mut obj, ro, &self.rodata);
        }
        if !self.bss.is_empty() {
            let bss = obj.section_id(StandardSection::UninitializedData);
            for (name, size) in &self.bss {
                let off = obj.append_section_bss(bss, *size, 8);
                let id = obj.add_symbol(Symbol {
                    name: name.clone().into_bytes(),
                    value: off,
                    size: *size,
                    kind: SymbolKind::Data,
                    scope: SymbolScope::Compilation,
                    weak: false,
                    section: SymbolSection::Section(bss),
                    flags: SymbolFlags::None,
                });
                syms.push((name.clone(), id));
            }
        }
        for name in &self.undefined {
            let id = obj.add_symbol(Symbol {
                name: name.clone().into_bytes(),
                value: 0,
                size: 0,
                kind: SymbolKind::Text,
                scope: SymbolScope::Dynamic,
                weak: false,
                section: SymbolSection::Undefined,
                flags: SymbolFlags::None,
            });
            syms.push((name.clone(), id));
        }
        if let Some(info) = &self.modinfo {
            let s = obj.add_section(Vec::new(), b".modinfo".to_vec(), SectionKind::Other);
            obj.append_section_data(s, info, 1);
        }
        for (off, name, kind) in &self.text.relocs {
            let symbol = syms
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("no symbol {name}"))
                .1;
            obj.add_relocation(
                text,
                Relocation {
                    offset: text_off + u64::from(*off),
                    symbol,
                    addend: 0,
                    flags: RelocationFlags::Elf { r_type: *kind },
                },
            )
            .unwrap();
        }
        for (item, off, name, kind) in &self.data_relocs {
            let symbol = syms
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("no symbol {name}"))
                .1;
            let base = item_offsets.iter().find(|(n, _)| n == item).unwrap().1;
            obj.add_relocation(
                data,
                Relocation {
                    offset: base + off,
                    symbol,
                    addend: 0,
                    flags: RelocationFlags::Elf { r_type: *kind },
                },
            )
            .unwrap();
        }
        obj.write().unwrap()
    }
}

/// Byte offset of an ABI table field.
#[macro_export]
macro_rules! field {
    ($f:ident) => {
        core::mem::offset_of!(indy::abi::AbiTable, $f)
    };
}

/// A fresh directory under the system temp dir.
pub fn temp_root(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "iris-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("boot")).unwrap();
    dir
}

/// Options for a rig whose root holds `image` as `m.o` and a boot config naming it with its
/// real digest. Quiet, no disks.
pub fn synthetic_options(tag: &str, image: &[u8]) -> RigOptions {
    let root = temp_root(tag);
    std::fs::write(root.join("m.o"), image).unwrap();
    std::fs::write(
        root.join("boot/config.conf"),
        format!(
            "# test\nmcp.url = file:m.o\nmcp.sha256 = {}\n",
            sha256_hex(image)
        ),
    )
    .unwrap();
    RigOptions {
        root: Some(root),
        quiet: true,
        no_disk: true,
        ..RigOptions::default()
    }
}

/// Builds and boots a rig (on this thread).
pub fn boot_synthetic(opts: RigOptions) -> Result<Rig, RigError> {
    let mut rig = Rig::new(opts)?;
    rig.boot()?;
    Ok(rig)
}

/// A module whose init saves the table pointer and writes `msg` with console_write, whose poll
/// runs `poll` and whose exit returns 0.
pub fn hello_module(msg: &str, poll: Asm) -> ModuleObj {
    let mut a = Asm::default();
    a.func("irix7_mcp_init")
        .prologue()
        .sw_sym(A0, "abi_ptr", T0)
        .la(A0, "msg")
        .op(addiu(A1, ZERO, msg.len() as i16))
        .call_abi(field!(console_write))
        .op(mov(V0, ZERO))
        .epilogue();
    a.func("irix7_mcp_exit").ret(0);
    a.func("irix7_mcp_poll");
    let base = a.here();
    for (off, name, kind) in &poll.relocs {
        a.relocs.push((base + off, name.clone(), *kind));
    }
    a.words.extend_from_slice(&poll.words);
    let mut m = ModuleObj::new(a);
    m.rodata.push(("msg".into(), msg.as_bytes().to_vec()));
    m
}

/// A poll body that returns 0 at once.
pub fn idle_poll() -> Asm {
    let mut p = Asm::default();
    p.ret(0);
    p
}
