//! The PROM's target-only part: the reset and exception vectors, register access, and the boot
//! sequence the crate comment describes. Everything runs uncached from the PROM or in KSEG0 RAM.

use crate::{BANNER, dec32, hex32, layout, mailbox, mc, scc};
use core::ptr::{read_volatile, write_volatile};
use indy::map::{RAM_PHYS, kseg0, kseg1};
use indy::regs::z85c30::{CTRL_B, DATA_B, RR0_TX_EMPTY};

// Reset vector at 0xBFC00000, then the BEV exception vectors at their fixed offsets (TLB refill
// 0x200, XTLB 0x280, cache error 0x300, general 0x380): at boot any exception is a bug, so each
// records Cause, EPC and BadVAddr in the mailbox and stops. Then the reset code proper: Status
// (CU0 and BEV, interrupts masked, ERL/EXL clear), Config's K0 cacheable, the 16 KiB I and D cache
// tags cleared (the R4600's line is 32 bytes), the stack, .data copied and .bss zeroed.
core::arch::global_asm!(
    r#"
    .section .text.reset, "ax", @progbits
    .set noreorder
    .set noat
    .globl _reset
_reset:
    b 1f
    nop
    .org 0x200
    b 9f
    nop
    .org 0x280
    b 9f
    nop
    .org 0x300
    b 9f
    nop
    .org 0x380
    b 9f
    nop
9:
    lui $k0, {mbox_hi}
    mfc0 $k1, $13
    nop
    sw $k1, {cause}($k0)
    mfc0 $k1, $14
    nop
    sw $k1, {epc}($k0)
    mfc0 $k1, $8
    nop
    sw $k1, {badvaddr}($k0)
    li $k1, {state_exc}
    sw $k1, {state}($k0)
    lui $k1, {magic_hi}
    ori $k1, $k1, {magic_lo}
    sw $k1, 0($k0)
8:
    b 8b
    nop
1:
    lui $t0, 0x1040
    mtc0 $t0, $12
    nop
    nop
    mfc0 $t0, $16
    nop
    li $t1, -8
    and $t0, $t0, $t1
    ori $t0, $t0, 3
    mtc0 $t0, $16
    mtc0 $zero, $28
    mtc0 $zero, $29
    nop
    nop
    lui $t0, 0x8000
    addiu $t1, $t0, 0x4000
    .set push
    .set mips3
2:
    cache 0x08, 0($t0)
    cache 0x09, 0($t0)
    addiu $t0, $t0, 32
    bne $t0, $t1, 2b
    nop
    .set pop
    lui $sp, %hi(__stack_top)
    addiu $sp, $sp, %lo(__stack_top)
    lui $t0, %hi(__data_load)
    addiu $t0, $t0, %lo(__data_load)
    lui $t1, %hi(__data_start)
    addiu $t1, $t1, %lo(__data_start)
    lui $t2, %hi(__data_end)
    addiu $t2, $t2, %lo(__data_end)
3:
    beq $t1, $t2, 4f
    nop
    lw $t3, 0($t0)
    sw $t3, 0($t1)
    addiu $t0, $t0, 4
    b 3b
    addiu $t1, $t1, 4
4:
    lui $t1, %hi(__bss_start)
    addiu $t1, $t1, %lo(__bss_start)
    lui $t2, %hi(__bss_end)
    addiu $t2, $t2, %lo(__bss_end)
5:
    beq $t1, $t2, 6f
    nop
    sw $zero, 0($t1)
    b 5b
    addiu $t1, $t1, 4
6:
    lui $t9, %hi(prom_main)
    addiu $t9, $t9, %lo(prom_main)
    jalr $t9
    nop
7:
    b 7b
    nop
    .set reorder
    .set at
    "#,
    mbox_hi = const kseg1(mailbox::PHYS) >> 16,
    cause = const mailbox::CAUSE,
    epc = const mailbox::EPC,
    badvaddr = const mailbox::BADVADDR,
    state = const mailbox::STATE,
    state_exc = const mailbox::STATE_EXCEPTION,
    magic_hi = const mailbox::MAGIC >> 16,
    magic_lo = const mailbox::MAGIC & 0xFFFF,
);

pub(crate) fn w8(phys: u32, v: u8) {
    // SAFETY: `phys` is a device register of the Indy's map, reached uncached through KSEG1.
    unsafe { write_volatile(kseg1(phys) as *mut u8, v) }
}

pub(crate) fn r8(phys: u32) -> u8 {
    // SAFETY: as in `w8`.
    unsafe { read_volatile(kseg1(phys) as *const u8) }
}

pub(crate) fn w16(phys: u32, v: u16) {
    // SAFETY: as in `w8`.
    unsafe { write_volatile(kseg1(phys) as *mut u16, v) }
}

pub(crate) fn w32(phys: u32, v: u32) {
    // SAFETY: a register or RAM word of the Indy's map, uncached.
    unsafe { write_volatile(kseg1(phys) as *mut u32, v) }
}

pub(crate) fn r32(phys: u32) -> u32 {
    // SAFETY: as in `w32`.
    unsafe { read_volatile(kseg1(phys) as *const u32) }
}

fn scc_init() {
    for (reg, val) in scc::init_sequence() {
        w8(CTRL_B, reg);
        w8(CTRL_B, val);
    }
}

/// Bounded wait for the transmitter: a dead SCC must not hang the PROM.
fn scc_put(b: u8) {
    for _ in 0..100_000 {
        if r8(CTRL_B) & RR0_TX_EMPTY != 0 {
            break;
        }
    }
    w8(DATA_B, b);
}

fn mbox_put(b: u8) {
    let head = r32(mailbox::PHYS + mailbox::HEAD);
    w8(mailbox::PHYS + mailbox::RING + head % mailbox::RING_SIZE, b);
    w32(mailbox::PHYS + mailbox::HEAD, head.wrapping_add(1));
}

pub(crate) fn puts(s: &[u8]) {
    for &b in s {
        if b == b'\n' {
            scc_put(b'\r');
        }
        scc_put(b);
        mbox_put(b);
    }
}

pub(crate) fn put_hex(v: u32) {
    let mut h = [0; 8];
    hex32(v, &mut h);
    puts(&h);
}

pub(crate) fn put_dec(v: u32) {
    let mut d = [0; 10];
    let at = dec32(v, &mut d);
    puts(&d[at..]);
}

/// Sets the mailbox's state word.
pub(crate) fn set_state(state: u32) {
    w32(mailbox::PHYS + mailbox::STATE, state);
}

/// MiB of RAM that keep a pattern written at 1 MiB steps (at +0x40, clear of the stand-in's own
/// data and stack, `layout::OWN`).
fn ram_check() -> u32 {
    let mut good = 0;
    for mib in 0..mc::RAM_BYTES >> 20 {
        let phys = RAM_PHYS + (mib << 20) + 0x40;
        if layout::holds(layout::OWN, phys, 8) {
            good += 1;
            continue;
        }
        let at = kseg0(phys) as *mut u32;
        let pattern = 0xA5C3_0000 | mib;
        // SAFETY: RAM the stand-in owns (nothing is loaded yet), through cached KSEG0.
        let back = unsafe {
            write_volatile(at, pattern);
            write_volatile(at.add(1), !pattern);
            (read_volatile(at), read_volatile(at.add(1)))
        };
        if back == (pattern, !pattern) {
            good += 1;
        }
    }
    good
}

#[unsafe(no_mangle)]
extern "C" fn prom_main() -> ! {
    w32(mc::MEMCFG0, mc::memcfg0());
    w32(mc::MEMCFG1, 0);
    let mb = mailbox::PHYS;
    w32(mb + mailbox::HEAD, 0);
    w32(mb + mailbox::POLLS, 0);
    w32(mb + mailbox::STATE, mailbox::STATE_RUNNING);
    w32(mb, mailbox::MAGIC);
    scc_init();

    puts(BANNER.as_bytes());
    puts(b" ");
    puts(env!("CARGO_PKG_VERSION").as_bytes());
    puts(b": reset at bfc00000, MEMCFG0 ");
    put_hex(r32(mc::MEMCFG0));
    puts(b", PRId ");
    // SAFETY: reading a CP0 register has no side effect.
    let prid: u32;
    unsafe { core::arch::asm!("mfc0 {0}, $15", "nop", out(reg) prid, options(nomem, nostack)) };
    put_hex(prid);
    puts(b"\n");
    let good = ram_check();
    puts(b"RAM ");
    put_dec(good);
    puts(b" of ");
    put_dec(mc::RAM_BYTES >> 20);
    puts(b" MiB good\n");
    if good != mc::RAM_BYTES >> 20 {
        puts(b"RAM check failed; halted\n");
        flush_and_set(mailbox::STATE_FAILED);
        halt()
    }
    crate::kernel::boot()
}

/// Lets the last byte leave the shift register before the script may stop MAME.
pub(crate) fn flush_and_set(state: u32) {
    for _ in 0..2 {
        scc_put(0);
    }
    set_state(state);
}

/// Stops here for good: the mailbox says why, and the script stops MAME.
pub(crate) fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    w32(mailbox::PHYS + mailbox::STATE, mailbox::STATE_FAILED);
    halt()
}
