//! RAM as the kernel stand-in's ABI entries see it (target only): whether a pointer the module
//! or the cell's debugger passed lies in RAM, and the R4600's cache maintenance over RAM the
//! stand-in wrote (the loaded module, the cell's code).

use indy::map::unmapped_phys;

/// A pointer and length the module passed, when they lie in RAM.
pub(crate) fn in_ram(p: *const u8, len: usize) -> bool {
    unmapped_phys(p as u32).is_some_and(|phys| {
        phys >= indy::map::RAM_PHYS
            && u64::from(phys) + len as u64
                <= u64::from(indy::map::RAM_PHYS) + u64::from(crate::mc::RAM_BYTES)
    })
}

/// The R4600's primary cache line.
const LINE: u32 = 32;

fn each_line(p: *const u8, len: usize, f: impl Fn(u32)) {
    let start = p as u32;
    if len == 0 || unmapped_phys(start).is_none() {
        return;
    }
    let end = start.saturating_add(len as u32);
    let mut a = start & !(LINE - 1);
    while a < end {
        f(a);
        a += LINE;
    }
}

pub(crate) unsafe extern "C" fn cache_wback(p: *const u8, len: usize) {
    // Hit_Writeback_Invalidate_D.
    each_line(p, len, |a| unsafe {
        core::arch::asm!(".set push", ".set mips3", "cache 0x15, 0({0})", ".set pop", in(reg) a)
    });
}

pub(crate) unsafe extern "C" fn cache_inval(p: *const u8, len: usize) {
    // Hit_Invalidate_D.
    each_line(p, len, |a| unsafe {
        core::arch::asm!(".set push", ".set mips3", "cache 0x11, 0({0})", ".set pop", in(reg) a)
    });
}

/// Writes the data cache back and drops stale instructions over freshly loaded code.
pub(crate) fn sync_icache(p: *const u8, len: usize) {
    // SAFETY: cache maintenance on RAM the stand-in just wrote.
    unsafe { cache_wback(p, len) };
    each_line(p, len, |a| unsafe {
        core::arch::asm!(".set push", ".set mips3", "cache 0x10, 0({0})", ".set pop", in(reg) a)
    });
}
