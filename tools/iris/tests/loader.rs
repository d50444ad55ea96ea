//! The loader refuses bad images with a clear error and relocates good ones exactly.

mod support;

use indy::abi::ABI_VERSION;
use iris::loader::{LoadError, LoadedImage, load};
use object::elf;
use object::{Architecture, Endianness};
use support::synthetic::*;

const BASE: u32 = 0x8810_0000;
const MAX: u32 = 0x70_0000;

fn minimal() -> Asm {
    let mut a = Asm::default();
    a.func("irix7_mcp_init").ret(0);
    a.func("irix7_mcp_poll").ret(0);
    a.func("irix7_mcp_exit").ret(0);
    a
}

fn word(img: &LoadedImage, va: u32) -> u32 {
    let o = (va - img.base) as usize;
    u32::from_be_bytes(img.bytes[o..o + 4].try_into().unwrap())
}

fn section(img: &LoadedImage, name: &str) -> u32 {
    img.sections.iter().find(|s| s.0 == name).unwrap().1
}

fn sext16(v: u32) -> u32 {
    v as u16 as i16 as i32 as u32
}

#[test]
fn minimal_module_loads() {
    let img = load(&ModuleObj::new(minimal()).build(), BASE, MAX).unwrap();
    assert_eq!(img.init, section(&img, ".text"));
    assert_eq!(img.poll, img.init + 8);
    assert_eq!(img.exit, img.init + 16);
    assert_eq!(img.modinfo.name, "testmod");
    assert_eq!(img.modinfo.version, "0.0.1");
    assert_eq!(img.modinfo.abi, 10);
    assert_eq!(
        img.symbolize(img.poll + 4).as_deref(),
        Some("irix7_mcp_poll+0x4")
    );
}

#[test]
fn not_elf() {
    let e = load(b"#!/bin/sh\necho not an object\n", BASE, MAX).unwrap_err();
    assert_eq!(e, LoadError::NotElf);
    assert_eq!(e.to_string(), "not an ELF file (bad magic)");
}

#[test]
fn wrong_class() {
    let mut m = ModuleObj::new(minimal());
    m.arch = Architecture::Mips64;
    let e = load(&m.build(), BASE, MAX).unwrap_err();
    assert_eq!(e, LoadError::WrongClass(2));
    assert!(e.to_string().contains("not ELF32"), "{e}");
}

#[test]
fn wrong_endianness() {
    let mut m = ModuleObj::new(minimal());
    m.endian = Endianness::Little;
    let e = load(&m.build(), BASE, MAX).unwrap_err();
    assert_eq!(e, LoadError::WrongEndian(1));
    assert!(e.to_string().contains("not big-endian"), "{e}");
}

#[test]
fn wrong_machine_and_type() {
    let good = ModuleObj::new(minimal()).build();
    let mut ppc = good.clone();
    ppc[18..20].copy_from_slice(&20u16.to_be_bytes()); // EM_PPC
    assert_eq!(
        load(&ppc, BASE, MAX).unwrap_err(),
        LoadError::WrongMachine(20)
    );
    let mut exec = good;
    exec[16..18].copy_from_slice(&elf::ET_EXEC.to_be_bytes());
    let e = load(&exec, BASE, MAX).unwrap_err();
    assert_eq!(e, LoadError::WrongType(elf::ET_EXEC));
    assert!(e.to_string().contains("not ET_REL"), "{e}");
}

#[test]
fn truncated_image() {
    let good = ModuleObj::new(minimal()).build();
    for cut in [20, 52, good.len() / 2, good.len() - 1] {
        let e = load(&good[..cut], BASE, MAX).unwrap_err();
        assert!(matches!(e, LoadError::Truncated(_)), "cut at {cut}: {e}");
        assert!(e.to_string().starts_with("truncated image: "), "{e}");
    }
}

#[test]
fn unknown_relocation_type() {
    let mut a = minimal();
    a.reloc(addiu(T0, ZERO, 0), "abi_ptr", elf::R_MIPS_GPREL16);
    let e = load(&ModuleObj::new(a).build(), BASE, MAX).unwrap_err();
    assert_eq!(
        e,
        LoadError::UnsupportedRelocation {
            kind: 7,
            section: ".text".into(),
            offset: 24
        }
    );
    assert_eq!(
        e.to_string(),
        "unsupported relocation type 7 (R_MIPS_GPREL16) at .text+0x18"
    );
}

#[test]
fn missing_entry_symbol() {
    let mut a = Asm::default();
    a.func("irix7_mcp_init").ret(0);
    a.func("irix7_mcp_exit").ret(0);
    let e = load(&ModuleObj::new(a).build(), BASE, MAX).unwrap_err();
    assert_eq!(e, LoadError::MissingEntry("irix7_mcp_poll"));
    assert_eq!(e.to_string(), "missing entry symbol `irix7_mcp_poll`");
}

#[test]
fn undefined_symbol() {
    let mut a = minimal();
    a.reloc(0x0C00_0000, "memcpy", elf::R_MIPS_26).op(NOP);
    let mut m = ModuleObj::new(a);
    m.undefined.push("memcpy".into());
    let e = load(&m.build(), BASE, MAX).unwrap_err();
    assert_eq!(e, LoadError::UndefinedSymbol("memcpy".into()));
}

#[test]
fn abi_too_new_and_modinfo_problems() {
    let mut m = ModuleObj::new(minimal());
    m.modinfo = Some(format!("name=x\0version=1\0abi={}\0", ABI_VERSION + 1).into_bytes());
    let e = load(&m.build(), BASE, MAX).unwrap_err();
    assert_eq!(
        e,
        LoadError::AbiTooNew {
            required: ABI_VERSION + 1,
            provided: ABI_VERSION
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "image requires ABI {}, this kernel provides ABI {ABI_VERSION}",
            ABI_VERSION + 1
        )
    );
    m.modinfo = None;
    assert_eq!(
        load(&m.build(), BASE, MAX).unwrap_err(),
        LoadError::NoModinfo
    );
    m.modinfo = Some(b"name=x\0".to_vec());
    assert!(matches!(
        load(&m.build(), BASE, MAX).unwrap_err(),
        LoadError::BadModinfo(_)
    ));
}

#[test]
fn image_too_large_for_the_module_area() {
    let mut m = ModuleObj::new(minimal());
    m.bss.push(("big".into(), u64::from(MAX)));
    assert!(matches!(
        load(&m.build(), BASE, MAX).unwrap_err(),
        LoadError::TooLarge { .. }
    ));
}

#[test]
fn hi16_lo16_pairs_with_carry_and_addend() {
    // Text at 0x8810_7FF0 puts .data at 0x8810_8xxx: the low half is >= 0x8000, so HI16 must
    // round up (the carry).
    let base = 0x8810_7FF0;
    let mut a = minimal(); // 24 bytes
    a.la(T0, "d"); // +24 hi, +28 lo
    a.reloc(lui(T1, 0x0001), "d", elf::R_MIPS_HI16); // +32: AHL = 0x10000 + sext(0xFFF0)
    a.reloc(addiu(T1, T1, -16), "d", elf::R_MIPS_LO16); // +36
    let mut m = ModuleObj::new(a);
    m.data.push(("d".into(), vec![0; 16]));
    let img = load(&m.build(), base, MAX).unwrap();
    let text = section(&img, ".text");
    assert_eq!(text, base);
    let s = section(&img, ".data") + 8; // after abi_ptr (8-aligned)
    assert_ne!(
        s & 0x8000,
        0,
        "the test must exercise the carry: S = {s:#x}"
    );
    for (at, addend) in [(24, 0u32), (32, 0xFFF0)] {
        let v = s.wrapping_add(addend);
        let hi = word(&img, text + at) & 0xFFFF;
        let lo = word(&img, text + at + 4) & 0xFFFF;
        assert_eq!(hi, (v + 0x8000) >> 16, "hi at +{at}");
        assert_eq!(lo, v & 0xFFFF, "lo at +{at}");
        assert_eq!(
            (hi << 16).wrapping_add(sext16(lo)),
            v,
            "lui/addiu rebuild the address at +{at}"
        );
    }
    // Opcode and registers untouched.
    assert_eq!(word(&img, text + 24) & 0xFFFF_0000, lui(T0, 0));
    assert_eq!(
        word(&img, text + 36) & 0xFFFF_0000,
        addiu(T1, T1, 0) & 0xFFFF_0000
    );
    assert_eq!(img.reloc_counts.hi16, 2);
    assert_eq!(img.reloc_counts.lo16, 2);
}

#[test]
fn several_hi16_share_one_lo16_and_other_symbols_do_not_pair() {
    let mut a = minimal();
    a.reloc(lui(T0, 0), "d", elf::R_MIPS_HI16); // +24
    a.reloc(lui(T1, 0), "d", elf::R_MIPS_HI16); // +28
    a.reloc(addiu(T2, T2, 0), "e", elf::R_MIPS_LO16); // +32: lone LO16 of e
    a.reloc(addiu(T0, T0, 4), "d", elf::R_MIPS_LO16); // +36: pairs with both HI16 of d
    let mut m = ModuleObj::new(a);
    m.data.push(("d".into(), vec![0; 8]));
    m.data.push(("e".into(), vec![0; 8]));
    let img = load(&m.build(), BASE, MAX).unwrap();
    let text = section(&img, ".text");
    let d = section(&img, ".data") + 8;
    let e = d + 8;
    assert_eq!(word(&img, text + 24) & 0xFFFF, (d + 4 + 0x8000) >> 16);
    assert_eq!(word(&img, text + 28) & 0xFFFF, (d + 4 + 0x8000) >> 16);
    assert_eq!(word(&img, text + 32) & 0xFFFF, e & 0xFFFF);
    assert_eq!(word(&img, text + 36) & 0xFFFF, (d + 4) & 0xFFFF);
}

#[test]
fn lone_lo16_applies_alone() {
    let mut a = minimal();
    a.reloc(lw(T0, 0x7FF0, T1), "d", elf::R_MIPS_LO16); // +24
    let mut m = ModuleObj::new(a);
    m.data.push(("d".into(), vec![0; 8]));
    let img = load(&m.build(), BASE, MAX).unwrap();
    let d = section(&img, ".data") + 8;
    let w = word(&img, section(&img, ".text") + 24);
    assert_eq!(w & 0xFFFF, (d + 0x7FF0) & 0xFFFF);
    assert_eq!(w & 0xFFFF_0000, lw(T0, 0, T1));
}

#[test]
fn unpaired_hi16_is_an_error() {
    let mut a = minimal();
    a.reloc(lui(T0, 0), "abi_ptr", elf::R_MIPS_HI16);
    let e = load(&ModuleObj::new(a).build(), BASE, MAX).unwrap_err();
    assert_eq!(
        e,
        LoadError::UnpairedHi16 {
            section: ".text".into(),
            offset: 24
        }
    );
}

#[test]
fn r26_jumps_within_the_segment() {
    let mut a = minimal();
    a.reloc(0x0800_0000, "irix7_mcp_exit", elf::R_MIPS_26)
        .op(NOP); // +24: j exit
    a.reloc(0x0C00_0001, "irix7_mcp_init", elf::R_MIPS_26)
        .op(NOP); // +32: jal init+4
    let img = load(&ModuleObj::new(a).build(), BASE, MAX).unwrap();
    let text = section(&img, ".text");
    assert_eq!(
        word(&img, text + 24),
        0x0800_0000 | ((img.exit >> 2) & 0x03FF_FFFF)
    );
    assert_eq!(
        word(&img, text + 32),
        0x0C00_0000 | (((img.init + 4) >> 2) & 0x03FF_FFFF)
    );
    assert_eq!(img.reloc_counts.r26, 2);
}

#[test]
fn r26_out_of_the_256mb_segment_is_an_error() {
    // Text from 0x8FFF_FFE0: the jump at +24 is in segment 0x8…, exit+0x40 is past 0x9000_0000.
    let mut a = minimal();
    a.reloc(0x0800_0000, "far", elf::R_MIPS_26).op(NOP);
    for _ in 0..16 {
        a.op(NOP);
    }
    a.func("far").ret(0);
    let e = load(&ModuleObj::new(a).build(), 0x8FFF_FFE0, MAX).unwrap_err();
    match e {
        LoadError::Jump26OutOfSegment { offset, target, .. } => {
            assert_eq!(offset, 24);
            assert_eq!(target, 0x8FFF_FFE0 + 24 + 8 + 64);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn r32_adds_the_symbol_to_the_word() {
    let mut m = ModuleObj::new(minimal());
    m.data.push((
        "table".into(),
        [0u32, 8].iter().flat_map(|w| w.to_be_bytes()).collect(),
    ));
    m.data_relocs
        .push(("table".into(), 0, "irix7_mcp_poll".into(), elf::R_MIPS_32));
    m.data_relocs
        .push(("table".into(), 4, "irix7_mcp_init".into(), elf::R_MIPS_32));
    let img = load(&m.build(), BASE, MAX).unwrap();
    let t = section(&img, ".data") + 8;
    assert_eq!(word(&img, t), img.poll);
    assert_eq!(word(&img, t + 4), img.init + 8);
    assert_eq!(img.reloc_counts.r32, 2);
}
