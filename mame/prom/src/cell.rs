//! The cell the stand-in runs beside the module: ABI 15's context 1 (`docs/abi.md`,
//! `docs/debug.md`). At boot it loads the cell's ELF the script delivered into the cell window
//! (`layout::CELL`) with the rig's reader (`irix7_loader::read_cell`); after each poll of the
//! module it gives the cell one slice (`slice`): `irix7_cell_run` loads the cell's registers
//! and returns to it with `eret`, the R4x00's Count/Compare timer (IP7) ends the slice, and the
//! general exception vector (`start.rs`) saves the cell's registers here and returns from
//! `irix7_cell_run` with Cause. Any exception but the timer's is a stop the module polls
//! (`ctx_events`); the `ctx_*` entries below stop, inspect and resume the cell.

use crate::arena::Global;
use crate::io::{put_hex, puts};
use crate::layout;
use crate::ram::{in_ram, sync_icache};
use indy::abi::{
    CTX_EXITED, CTX_MEM_MAX, CTX_RUNNING, CTX_STOPPED, CtxFrame, CtxInfo, CtxStop, STOP_EXCEPTION,
    STOP_EXITED, STOP_REQUESTED, exc, frame, status,
};
use indy::map::kseg0;

/// The cell's CPU between slices, shared with the assembly: `irix7_cell_run` keeps the
/// kernel's registers in `kernel` and starts the cell from `frame`; the general vector saves
/// the cell into `frame` when `running` says an exception is the cell's.
#[repr(C)]
pub struct CellCpu {
    /// 1 while the cell runs.
    pub running: u32,
    /// The kernel's Status, s0–s7, gp, sp, fp and ra while the cell runs.
    pub kernel: [u32; 13],
    /// The cell's registers in GDB's order (`indy::abi::frame`).
    pub frame: CtxFrame,
}

pub static CPU: Global<CellCpu> = Global::new(CellCpu {
    running: 0,
    kernel: [0; 13],
    frame: CtxFrame {
        w: [0; indy::abi::CTX_FRAME_WORDS],
    },
});

/// Offsets in [`CellCpu`] the assembly uses.
pub const OFF_RUNNING: usize = core::mem::offset_of!(CellCpu, running);
pub const OFF_KERNEL: usize = core::mem::offset_of!(CellCpu, kernel);
pub const OFF_FRAME: usize = core::mem::offset_of!(CellCpu, frame);

/// Count ticks (half the R4600's clock: 0.4 ms at 100 MHz) a slice lasts; about the rig's
/// 20,000 instructions.
const SLICE_TICKS: u32 = 20_000;
/// The cell's id.
const ID: u32 = 1;

struct State {
    loaded: bool,
    state: u32,
    stop: CtxStop,
}

static STATE: Global<State> = Global::new(State {
    loaded: false,
    state: CTX_RUNNING,
    stop: CtxStop {
        seq: 0,
        why: 0,
        exc_code: 0,
        pc: 0,
        bad: 0,
        cause: 0,
    },
});
/// Stops ever (`ctx_events`).
static EVENTS: Global<u32> = Global::new(0);

unsafe extern "C" {
    /// Runs the cell from [`CellCpu::frame`] for `ticks` of Count; returns Cause when it
    /// stopped (ExcCode 0: the slice ended), its registers saved in the frame.
    fn irix7_cell_run(ticks: u32) -> u32;
    /// Where the cell's `ra` points at its entry: a `break`, so that a return from its entry
    /// is a stop the stand-in recognises by its address.
    fn irix7_cell_exit();
}

core::arch::global_asm!(
    r#"
    .section .text.irix7_cell_run, "ax", @progbits
    .set push
    .set noreorder
    .set noat
    .set mips3
    .globl irix7_cell_run
irix7_cell_run:
    lui $k0, %hi({cpu})
    addiu $k0, $k0, %lo({cpu})
    mfc0 $t0, $12
    nop
    sw $t0, {k}+0($k0)
    sw $s0, {k}+4($k0)
    sw $s1, {k}+8($k0)
    sw $s2, {k}+12($k0)
    sw $s3, {k}+16($k0)
    sw $s4, {k}+20($k0)
    sw $s5, {k}+24($k0)
    sw $s6, {k}+28($k0)
    sw $s7, {k}+32($k0)
    sw $gp, {k}+36($k0)
    sw $sp, {k}+40($k0)
    sw $fp, {k}+44($k0)
    sw $ra, {k}+48($k0)
    # Compare = Count + ticks (which also clears a pending timer interrupt).
    mfc0 $t1, $9
    nop
    addu $t1, $t1, $a0
    mtc0 $t1, $11
    # The cell's Status: the kernel's (CU0, BEV, kernel mode) with only IM7 unmasked, IE, and
    # EXL until the eret.
    lui $t1, 0xFFFF
    ori $t1, $t1, 0x00E0
    and $t0, $t0, $t1
    ori $t0, $t0, 0x8003
    mtc0 $t0, $12
    lw $t1, {f}+{pc}($k0)
    mtc0 $t1, $14
    li $t1, 1
    sw $t1, {running}($k0)
    lw $t1, {f}+{lo}($k0)
    mtlo $t1
    lw $t1, {f}+{hi}($k0)
    mthi $t1
    lw $1, {f}+4($k0)
    lw $2, {f}+8($k0)
    lw $3, {f}+12($k0)
    lw $4, {f}+16($k0)
    lw $5, {f}+20($k0)
    lw $6, {f}+24($k0)
    lw $7, {f}+28($k0)
    lw $8, {f}+32($k0)
    lw $9, {f}+36($k0)
    lw $10, {f}+40($k0)
    lw $11, {f}+44($k0)
    lw $12, {f}+48($k0)
    lw $13, {f}+52($k0)
    lw $14, {f}+56($k0)
    lw $15, {f}+60($k0)
    lw $16, {f}+64($k0)
    lw $17, {f}+68($k0)
    lw $18, {f}+72($k0)
    lw $19, {f}+76($k0)
    lw $20, {f}+80($k0)
    lw $21, {f}+84($k0)
    lw $22, {f}+88($k0)
    lw $23, {f}+92($k0)
    lw $24, {f}+96($k0)
    lw $25, {f}+100($k0)
    lw $28, {f}+112($k0)
    lw $29, {f}+116($k0)
    lw $30, {f}+120($k0)
    lw $31, {f}+124($k0)
    nop
    nop
    eret
    nop

    .globl irix7_cell_exit
irix7_cell_exit:
    break 0x3ff
1:
    b 1b
    nop
    .set pop
    "#,
    cpu = sym CPU,
    k = const OFF_KERNEL,
    f = const OFF_FRAME,
    running = const OFF_RUNNING,
    pc = const frame::PC * 4,
    lo = const frame::LO * 4,
    hi = const frame::HI * 4,
);

fn exit_pc() -> u32 {
    irix7_cell_exit as *const () as usize as u32
}

/// Loads the cell's ELF into its window, fresh: code, data, zeroed bss and stack, registers
/// at its entry. Returns the entry, or why the cell was refused (then no cell runs).
pub fn load(elf: &[u8]) -> Result<u32, alloc::string::String> {
    let (base, size) = (kseg0(layout::CELL.0), layout::CELL.1);
    let img = irix7_loader::read_cell(elf, base, size)?;
    // SAFETY: the cell window is RAM the stand-in reserves for the cell (layout::CELL), and
    // `read_cell` checked that every segment lies inside it.
    unsafe {
        core::ptr::write_bytes(base as *mut u8, 0, size as usize);
        for s in &img.segments {
            core::ptr::copy_nonoverlapping(s.data.as_ptr(), s.va as *mut u8, s.data.len());
        }
    }
    sync_icache(base as *const u8, size as usize);
    let cpu = CPU.get();
    cpu.running = 0;
    cpu.frame = CtxFrame::default();
    cpu.frame.w[29] = base + size - 32;
    cpu.frame.w[31] = exit_pc();
    cpu.frame.w[25] = img.entry;
    cpu.frame.w[frame::PC] = img.entry;
    let st = STATE.get();
    st.loaded = true;
    st.state = CTX_RUNNING;
    st.stop = CtxStop::default();
    Ok(img.entry)
}

/// The word `ctx_events` points at.
pub fn events() -> *const u32 {
    EVENTS.get() as *const u32
}

fn record(st: &mut State, mut stop: CtxStop) {
    stop.seq = st.stop.seq.wrapping_add(1);
    st.state = if stop.why == STOP_EXITED {
        CTX_EXITED
    } else {
        CTX_STOPPED
    };
    st.stop = stop;
    let e = EVENTS.get();
    *e = e.wrapping_add(1);
}

/// One slice of the cell, when it runs: after each poll of the module.
pub fn slice() {
    let st = STATE.get();
    if !st.loaded || st.state != CTX_RUNNING {
        return;
    }
    // SAFETY: the frame holds the cell's registers; the cell's code is in its window, and the
    // general vector brings every exception it takes back here.
    let cause = unsafe { irix7_cell_run(SLICE_TICKS) };
    let code = (cause >> 2) & 31;
    if code == exc::INT {
        // The slice's end: writing Compare acknowledges the timer.
        // SAFETY: CP0 Count and Compare; nothing else is touched.
        unsafe {
            core::arch::asm!(
                ".set push", ".set mips3",
                "mfc0 {t}, $9", "nop", "addiu {t}, {t}, -1", "mtc0 {t}, $11",
                ".set pop",
                t = out(reg) _,
            )
        };
        return;
    }
    let f = &CPU.get().frame;
    let pc = f.w[frame::PC];
    let stop = if pc == exit_pc() {
        CtxStop {
            why: STOP_EXITED,
            pc,
            ..CtxStop::default()
        }
    } else {
        CtxStop {
            why: STOP_EXCEPTION,
            exc_code: code,
            pc,
            bad: if matches!(code, exc::TLBL | exc::TLBS | exc::ADEL | exc::ADES) {
                f.w[frame::BAD]
            } else {
                0
            },
            cause: code << 2 | (cause & 1 << 31),
            ..CtxStop::default()
        }
    };
    record(st, stop);
}

/// Prints the cell's load line on the console.
pub fn report(entry: u32) {
    puts(b"cell 1 cell: entry ");
    put_hex(entry);
    puts(b", window ");
    put_hex(kseg0(layout::CELL.0));
    puts(b"+");
    put_hex(layout::CELL.1);
    puts(b"\n");
}

/// The cell, when `id` names it.
fn cell(id: u32) -> Option<&'static mut State> {
    let st = STATE.get();
    (id == ID && st.loaded).then_some(st)
}

pub unsafe extern "C" fn ctx_list(out: *mut CtxInfo, max: usize) -> i32 {
    let st = STATE.get();
    if max == 0 || !st.loaded {
        return 0;
    }
    if !in_ram(out as *const u8, core::mem::size_of::<CtxInfo>()) {
        return status::E_INVAL;
    }
    let mut name = [0u8; 16];
    name[..4].copy_from_slice(b"cell");
    let info = CtxInfo {
        id: ID,
        state: st.state,
        flags: 0,
        pc: if st.state == CTX_STOPPED {
            CPU.get().frame.w[frame::PC]
        } else {
            0
        },
        base: kseg0(layout::CELL.0),
        size: layout::CELL.1,
        name,
    };
    // SAFETY: checked to lie in RAM above.
    unsafe { out.write_unaligned(info) };
    1
}

pub unsafe extern "C" fn ctx_stop(id: u32) -> i32 {
    let Some(st) = cell(id) else {
        return status::E_INVAL;
    };
    match st.state {
        CTX_RUNNING => {
            let pc = CPU.get().frame.w[frame::PC];
            let stop = CtxStop {
                why: STOP_REQUESTED,
                pc,
                ..CtxStop::default()
            };
            record(st, stop);
            status::OK
        }
        CTX_STOPPED => status::OK,
        _ => status::E_BUSY,
    }
}

pub unsafe extern "C" fn ctx_resume(id: u32) -> i32 {
    let Some(st) = cell(id) else {
        return status::E_INVAL;
    };
    if st.state != CTX_STOPPED {
        return status::E_BUSY;
    }
    st.state = CTX_RUNNING;
    status::OK
}

pub unsafe extern "C" fn ctx_stop_info(id: u32, out: *mut CtxStop) -> i32 {
    let Some(st) = cell(id) else {
        return status::E_INVAL;
    };
    if st.state == CTX_RUNNING {
        return 0;
    }
    if !in_ram(out as *const u8, core::mem::size_of::<CtxStop>()) {
        return status::E_INVAL;
    }
    // SAFETY: checked to lie in RAM above.
    unsafe { out.write_unaligned(st.stop) };
    if st.state == CTX_EXITED { 2 } else { 1 }
}

pub unsafe extern "C" fn ctx_regs_get(id: u32, out: *mut CtxFrame) -> i32 {
    let Some(st) = cell(id) else {
        return status::E_INVAL;
    };
    if st.state != CTX_STOPPED {
        return status::E_BUSY;
    }
    if !in_ram(out as *const u8, core::mem::size_of::<CtxFrame>()) {
        return status::E_INVAL;
    }
    let mut f = CPU.get().frame;
    f.w[0] = 0;
    f.w[26] = 0;
    f.w[27] = 0;
    f.w[frame::BAD] = st.stop.bad;
    f.w[frame::CAUSE] = st.stop.cause;
    // SAFETY: checked to lie in RAM above.
    unsafe { out.write_unaligned(f) };
    status::OK
}

pub unsafe extern "C" fn ctx_regs_set(id: u32, from: *const CtxFrame) -> i32 {
    let Some(st) = cell(id) else {
        return status::E_INVAL;
    };
    if st.state != CTX_STOPPED {
        return status::E_BUSY;
    }
    if !in_ram(from as *const u8, core::mem::size_of::<CtxFrame>()) {
        return status::E_INVAL;
    }
    // SAFETY: checked to lie in RAM above.
    let new = unsafe { from.read_unaligned() };
    let f = &mut CPU.get().frame;
    f.w[1..32].copy_from_slice(&new.w[1..32]);
    for w in [frame::LO, frame::HI, frame::PC] {
        f.w[w] = new.w[w];
    }
    status::OK
}

/// Whether `len` bytes at `va` lie inside the cell's window.
fn in_window(va: u32, len: usize) -> bool {
    len <= CTX_MEM_MAX && layout::holds(layout::CELL, va.wrapping_sub(kseg0(0)), len as u32)
}

pub unsafe extern "C" fn ctx_mem_read(id: u32, va: u32, buf: *mut u8, len: usize) -> i32 {
    if cell(id).is_none() {
        return status::E_INVAL;
    }
    if !in_window(va, len) {
        return status::E_RANGE;
    }
    if len == 0 {
        return 0;
    }
    if !in_ram(buf, len) {
        return status::E_INVAL;
    }
    // SAFETY: `va..va+len` lies in the cell window and `buf` in RAM (both checked above).
    unsafe { core::ptr::copy(va as *const u8, buf, len) };
    len as i32
}

pub unsafe extern "C" fn ctx_mem_write(id: u32, va: u32, data: *const u8, len: usize) -> i32 {
    let Some(st) = cell(id) else {
        return status::E_INVAL;
    };
    if !in_window(va, len) {
        return status::E_RANGE;
    }
    if len == 0 {
        return 0;
    }
    if st.state != CTX_STOPPED {
        return status::E_BUSY;
    }
    if !in_ram(data, len) {
        return status::E_INVAL;
    }
    // SAFETY: as in `ctx_mem_read`, the other way.
    unsafe { core::ptr::copy(data, va as *mut u8, len) };
    // What the cell fetches next is what was written.
    sync_icache(va as *const u8, len);
    len as i32
}
