//! `cargo xtask check-isa`: the image may only hold instructions a R4400 runs in 32-bit kernel
//! mode. The emulator enforces most of the ISA by itself, but not all of it (it accepts MIPS32
//! `mul`), and a 64-bit instruction would corrupt the upper register halves the 32-bit kernel
//! does not save — so the audit is static, over the whole `.text`.

use crate::cmd;
use crate::image::Image;
use std::process::Command;

/// MIPS III 64-bit operations: legal on the R4400, but they break the 32-bit kernel ABI.
const MIPS64: &[&str] = &[
    "dadd", "daddu", "daddi", "daddiu", "dsub", "dsubu", "dmult", "dmultu", "ddiv", "ddivu",
    "dsll", "dsrl", "dsra", "dsll32", "dsrl32", "dsra32", "dsllv", "dsrlv", "dsrav", "ld", "sd",
    "ldl", "ldr", "sdl", "sdr", "lld", "scd", "lwu", "dmfc0", "dmtc0", "dmfc1", "dmtc1", "dext",
    "dins", "dneg", "dnegu", "dabs", "dmul", "drotr", "dclz",
];
/// MIPS IV and later conditional moves, prefetches and indexed FP memory ops.
const MIPS4: &[&str] = &[
    "movn", "movz", "movf", "movt", "pref", "prefx", "lwxc1", "ldxc1", "swxc1", "sdxc1",
];
/// MIPS32 release 1 and 2 additions.
const MIPS32: &[&str] = &[
    "mul", "madd", "maddu", "msub", "msubu", "clz", "clo", "seb", "seh", "ext", "ins", "wsbh",
    "rotr", "rotrv", "di", "ei", "rdhwr", "synci", "jr.hb", "jalr.hb", "ehb", "wait", "sdbbp",
];
/// FPU memory and transfer operations (the module is soft-float).
const FPU: &[&str] = &[
    "lwc1", "swc1", "ldc1", "sdc1", "mfc1", "mtc1", "cfc1", "ctc1", "mfhc1", "mthc1", "bc1f",
    "bc1t", "bc1fl", "bc1tl",
];
/// Operand formats of FPU arithmetic (`add.s`, `cvt.d.w`, `c.lt.d` …).
const FPU_FORMATS: &[&str] = &[".s", ".d", ".w", ".l", ".ps"];

/// Why an instruction is refused, or `None` when the R4400 kernel may run it.
pub fn classify(mnemonic: &str) -> Option<&'static str> {
    if MIPS64.contains(&mnemonic) {
        Some("64-bit operation")
    } else if MIPS4.contains(&mnemonic) {
        Some("MIPS IV instruction")
    } else if MIPS32.contains(&mnemonic) {
        Some("MIPS32 instruction")
    } else if FPU.contains(&mnemonic) || FPU_FORMATS.iter().any(|f| mnemonic.ends_with(f)) {
        Some("FPU instruction")
    } else if mnemonic == ".word" || mnemonic == "(bad)" {
        Some("undecodable word")
    } else {
        None
    }
}

/// MIPS32 `mul rd, rs, rt` (SPECIAL2 function 2), which Unicorn's R4000 model wrongly runs.
fn is_mips32_mul(word: u32) -> bool {
    word & 0xfc00_07ff == 0x7000_0002
}

/// One refused instruction.
pub struct Finding {
    pub offset: u64,
    pub text: String,
    pub reason: &'static str,
}

/// Audits an image; returns the refused instructions (empty = clean) and the instruction count.
pub fn audit(image: &Image) -> Result<(Vec<Finding>, usize), String> {
    let mut findings = Vec::new();
    // Everything objdump decodes, with the widest ISA so nothing hides as `.word`.
    let listing = cmd::output(
        Command::new("mips-linux-gnu-objdump")
            .args([
                "-d",
                "-j",
                ".text",
                "-m",
                "mips:isa64r2",
                "--no-show-raw-insn",
            ])
            .arg(&image.path),
    )?;
    let mut count = 0;
    for line in listing.lines() {
        // "     1c:\taddiu\tsp,sp,-32"
        let mut cols = line.split('\t');
        let Some(addr) = cols.next().and_then(|a| a.trim().strip_suffix(':')) else {
            continue;
        };
        let Ok(offset) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let Some(mnemonic) = cols.next().map(str::trim) else {
            continue;
        };
        count += 1;
        if let Some(reason) = classify(mnemonic) {
            findings.push(Finding {
                offset,
                text: line.trim().replace('\t', " "),
                reason,
            });
        }
    }
    // The static `mul` scan over the raw words.
    let text = image.section_data(".text")?;
    for (i, w) in text.chunks_exact(4).enumerate() {
        let word = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
        let offset = i as u64 * 4;
        if is_mips32_mul(word) && !findings.iter().any(|f| f.offset == offset) {
            findings.push(Finding {
                offset,
                text: format!("{word:08x}"),
                reason: "MIPS32 mul",
            });
        }
    }
    if count == 0 {
        return Err("objdump decoded no instructions in .text".into());
    }
    Ok((findings, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_forbidden_families() {
        for m in [
            "daddu", "ld", "sd", "dsll32", "movn", "movz", "seb", "ext", "wsbh", "clz", "mul",
        ] {
            assert!(classify(m).is_some(), "{m} must be refused");
        }
        for m in ["add.s", "cvt.d.w", "c.lt.d", "lwc1", "mtc1"] {
            assert_eq!(classify(m), Some("FPU instruction"), "{m}");
        }
        for m in [
            "addiu", "lw", "sw", "ll", "sc", "sync", "teq", "mult", "divu", "jalr", "lwl",
        ] {
            assert_eq!(classify(m), None, "{m} is fine on the R4400");
        }
    }

    #[test]
    fn finds_mul_by_encoding() {
        // mul v0, a0, a1 = 0x70851002
        assert!(is_mips32_mul(0x7085_1002));
        // madd a0, a1 (SPECIAL2 function 0) is another instruction, caught by mnemonic.
        assert!(!is_mips32_mul(0x7085_0000));
        // mult a0, a1 (SPECIAL function 0x18) is MIPS I.
        assert!(!is_mips32_mul(0x0085_0018));
    }
}
