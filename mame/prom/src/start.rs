//! The PROM's start: the reset and exception vectors and the boot sequence the crate comment
//! describes, up to the kernel stand-in. Everything runs uncached from the PROM or in KSEG0 RAM.

use crate::io::{flush_and_set, halt, put_dec, put_hex, puts, r32, w8, w32};
use crate::{BANNER, layout, mailbox, mc, pbus, scc};
use core::ptr::{read_volatile, write_volatile};
use indy::abi::frame;
use indy::map::{RAM_PHYS, kseg0, kseg1};
use indy::regs::z85c30::CTRL_B;

// Reset vector at 0xBFC00000, then the BEV exception vectors at their fixed offsets (TLB refill
// 0x200, XTLB 0x280, cache error 0x300, general 0x380). An exception the cell takes while it
// runs (`cell.rs`: the TLB and general vectors, `running` set) is the cell's stop or the end of
// its slice: `10:` saves its registers in its frame, puts back the kernel's Status and
// registers `irix7_cell_run` kept, and returns from that call with Cause. Any other exception is
// a bug: `9:` records Cause, EPC and BadVAddr in the mailbox and stops. Then the reset code proper: Status
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
    b 10f
    nop
    .org 0x280
    b 10f
    nop
    .org 0x300
    b 9f
    nop
    .org 0x380
    b 10f
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
10:
    lui $k0, %hi({cpu})
    addiu $k0, $k0, %lo({cpu})
    lw $k1, {running}($k0)
    nop
    beq $k1, $zero, 9b
    nop
    sw $zero, {running}($k0)
    sw $1, {f}+4($k0)
    sw $2, {f}+8($k0)
    sw $3, {f}+12($k0)
    sw $4, {f}+16($k0)
    sw $5, {f}+20($k0)
    sw $6, {f}+24($k0)
    sw $7, {f}+28($k0)
    sw $8, {f}+32($k0)
    sw $9, {f}+36($k0)
    sw $10, {f}+40($k0)
    sw $11, {f}+44($k0)
    sw $12, {f}+48($k0)
    sw $13, {f}+52($k0)
    sw $14, {f}+56($k0)
    sw $15, {f}+60($k0)
    sw $16, {f}+64($k0)
    sw $17, {f}+68($k0)
    sw $18, {f}+72($k0)
    sw $19, {f}+76($k0)
    sw $20, {f}+80($k0)
    sw $21, {f}+84($k0)
    sw $22, {f}+88($k0)
    sw $23, {f}+92($k0)
    sw $24, {f}+96($k0)
    sw $25, {f}+100($k0)
    sw $zero, {f}+104($k0)
    sw $zero, {f}+108($k0)
    sw $28, {f}+112($k0)
    sw $29, {f}+116($k0)
    sw $30, {f}+120($k0)
    sw $31, {f}+124($k0)
    mflo $k1
    sw $k1, {f}+{lo}($k0)
    mfhi $k1
    sw $k1, {f}+{hi}($k0)
    mfc0 $k1, $14
    nop
    sw $k1, {f}+{pc}($k0)
    mfc0 $k1, $13
    nop
    sw $k1, {f}+{cause_w}($k0)
    mfc0 $k1, $8
    nop
    sw $k1, {f}+{bad}($k0)
    mfc0 $k1, $12
    nop
    sw $k1, {f}+{sr}($k0)
    lw $s0, {k}+4($k0)
    lw $s1, {k}+8($k0)
    lw $s2, {k}+12($k0)
    lw $s3, {k}+16($k0)
    lw $s4, {k}+20($k0)
    lw $s5, {k}+24($k0)
    lw $s6, {k}+28($k0)
    lw $s7, {k}+32($k0)
    lw $gp, {k}+36($k0)
    lw $sp, {k}+40($k0)
    lw $fp, {k}+44($k0)
    lw $ra, {k}+48($k0)
    lw $v0, {f}+{cause_w}($k0)
    lw $k1, {k}+0($k0)
    mtc0 $k1, $12
    nop
    nop
    nop
    jr $ra
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
    cpu = sym crate::cell::CPU,
    running = const crate::cell::OFF_RUNNING,
    k = const crate::cell::OFF_KERNEL,
    f = const crate::cell::OFF_FRAME,
    lo = const frame::LO * 4,
    hi = const frame::HI * 4,
    pc = const frame::PC * 4,
    cause_w = const frame::CAUSE * 4,
    bad = const frame::BAD * 4,
    sr = const frame::SR * 4,
);

/// Configures the IOC2's PBUS PIO channel as an 8-bit device on PBUS 7:0 (`pbus.rs`: its
/// contents are undefined after reset, and MAME's HPC3 routes the IOC2's accesses by them).
fn pbus_pio_init() {
    w32(pbus::pio_cfg(pbus::IOC_CHANNEL), pbus::PIOCFG_8BIT_SLOW);
}

fn scc_init() {
    for (reg, val) in scc::init_sequence() {
        w8(CTRL_B, reg);
        w8(CTRL_B, val);
    }
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
    // Before the first access to an IOC2 device.
    pbus_pio_init();
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

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    w32(mailbox::PHYS + mailbox::STATE, mailbox::STATE_FAILED);
    halt()
}
