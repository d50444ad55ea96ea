//! The kernel's side of ABI 15 on the rig: a cell (the demo cell, `cargo xtask cell`) runs in
//! slices beside a module, and the `ctx_*` calls stop it, read and set its registers, read and
//! write its memory (code writes included: translated code is dropped), and report its stops:
//! a breakpoint, a fault, a requested stop. A reset loads it afresh.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use indy::abi::{
    CTX_EXITED, CTX_FRAME_WORDS, CTX_RUNNING, CTX_STOPPED, STOP_EXCEPTION, STOP_REQUESTED, exc,
    frame, status,
};
use indy::map::unmapped_phys;
use iris::Rig;
use iris::kernel::abi::{AbiFn, AbiRet};
use iris::rig::cell_symbol;
use support::image::cell_elf;
use support::synthetic::*;

const BREAK: u32 = 0x0000_000D;

struct Cell {
    rig: Rig,
    elf: PathBuf,
}

impl Cell {
    fn boot(tag: &str) -> Option<Cell> {
        Cell::boot_with(tag, |_| {})
    }

    fn boot_with(tag: &str, tweak: impl FnOnce(&mut iris::RigOptions)) -> Option<Cell> {
        let elf = cell_elf()?;
        let m = hello_module("ready\n", idle_poll());
        let mut opts = synthetic_options(tag, &m.build());
        opts.cell = Some(elf.clone());
        tweak(&mut opts);
        let rig = boot_synthetic(opts).unwrap();
        Some(Cell { rig, elf })
    }

    fn sym(&self, name: &str) -> u32 {
        cell_symbol(&self.elf, name).unwrap_or_else(|| panic!("cell symbol {name}"))
    }

    fn call(&mut self, f: AbiFn, args: [u32; 4]) -> i32 {
        match self.rig.kernel_call(f, args) {
            AbiRet::I32(v) => v,
            other => panic!("{f:?} returned {other:?}"),
        }
    }

    fn scratch(&mut self, off: u32, len: usize) -> Vec<u8> {
        let va = self.rig.scratch_va() + off;
        self.rig
            .read_phys(u64::from(unmapped_phys(va).unwrap()), len)
            .unwrap()
    }

    fn words(&mut self, off: u32, n: usize) -> Vec<u32> {
        self.scratch(off, n * 4)
            .chunks_exact(4)
            .map(|b| u32::from_be_bytes(b.try_into().unwrap()))
            .collect()
    }

    fn phys_word(&mut self, va: u32) -> u32 {
        let b = self
            .rig
            .read_phys(u64::from(unmapped_phys(va).unwrap()), 4)
            .unwrap();
        u32::from_be_bytes(b.try_into().unwrap())
    }

    /// `ctx_stop_info` into the scratch area: (result, [seq, why, exc, pc, bad, cause]).
    fn stop_info(&mut self) -> (i32, Vec<u32>) {
        let out = self.rig.scratch_va();
        let r = self.call(AbiFn::CtxStopInfo, [1, out, 0, 0]);
        (r, self.words(0, 6))
    }

    fn regs(&mut self) -> Vec<u32> {
        let out = self.rig.scratch_va();
        assert_eq!(self.call(AbiFn::CtxRegsGet, [1, out, 0, 0]), status::OK);
        self.words(0, CTX_FRAME_WORDS)
    }

    /// Writes `data` into the cell at `va` through `ctx_mem_write`.
    fn poke(&mut self, va: u32, data: &[u8]) -> i32 {
        let buf = self.rig.scratch_va() + 0x1000;
        self.rig
            .write_phys(u64::from(unmapped_phys(buf).unwrap()), data)
            .unwrap();
        self.call(AbiFn::CtxMemWrite, [1, va, buf, data.len() as u32])
    }

    /// Reads `len` bytes of the cell at `va` through `ctx_mem_read`.
    fn peek(&mut self, va: u32, len: usize) -> (i32, Vec<u8>) {
        let buf = self.rig.scratch_va() + 0x1000;
        let r = self.call(AbiFn::CtxMemRead, [1, va, buf, len as u32]);
        (r, self.scratch(0x1000, len))
    }

    /// Runs polls (and cell slices) until the cell stops, at most `limit`.
    fn run_until_stopped(&mut self, limit: Duration) {
        let before = self.events();
        self.rig
            .run_until(limit, |r| events_of(r) != before)
            .unwrap();
        assert_ne!(
            self.events(),
            before,
            "the cell did not stop within {limit:?}"
        );
    }

    fn events(&self) -> u32 {
        events_of(&self.rig)
    }
}

fn events_of(rig: &Rig) -> u32 {
    rig.ctx_events()
}

#[test]
fn a_cell_runs_beside_the_module_and_stops_on_request() {
    let Some(mut c) = Cell::boot("cell-run") else {
        return;
    };
    let ticks = c.sym("CELL_TICKS");
    c.rig.run_for(50).unwrap();
    let first = c.phys_word(ticks);
    c.rig.run_for(50).unwrap();
    assert!(c.phys_word(ticks) > first, "the cell's counter advances");
    assert!(c.rig.cell_insns(1).unwrap() > 0);

    // ctx_list: one context, running, in its window.
    let out = c.rig.scratch_va();
    assert_eq!(c.call(AbiFn::CtxList, [out, 4, 0, 0]), 1);
    let info = c.words(0, 6);
    assert_eq!((info[0], info[1], info[3]), (1, CTX_RUNNING, 0));
    assert_eq!(c.scratch(24, 5), b"cell\0");
    let (base, size) = (info[4], info[5]);
    assert!((base..base + size).contains(&ticks));

    // Running: no registers, no writes; reads work.
    assert_eq!(c.stop_info().0, 0);
    assert_eq!(c.call(AbiFn::CtxRegsGet, [1, out, 0, 0]), status::E_BUSY);
    assert_eq!(c.poke(ticks, &[0; 4]), status::E_BUSY);
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::E_BUSY);
    assert_eq!(c.call(AbiFn::CtxStop, [7, 0, 0, 0]), status::E_INVAL);

    let events = c.events();
    assert_eq!(c.call(AbiFn::CtxStop, [1, 0, 0, 0]), status::OK);
    assert_eq!(c.events(), events.wrapping_add(1), "a stop is an event");
    // The module polls the word the table's `ctx_events` points at.
    let table = iris::memmap::ram_va(iris::memmap::ABI_TABLE_OFF);
    let entry = table + core::mem::offset_of!(indy::abi::AbiTable, ctx_events) as u32;
    let word = c.phys_word(entry);
    assert_eq!(c.phys_word(word), c.events());
    let (r, stop) = c.stop_info();
    assert_eq!((r, stop[1]), (1, STOP_REQUESTED));
    let regs = c.regs();
    assert_eq!(regs[frame::PC], stop[3]);
    let (lo, hi) = (base, base + size);
    assert!(
        (lo..hi).contains(&regs[frame::PC]),
        "pc {:#x}",
        regs[frame::PC]
    );
    assert!((lo..hi).contains(&regs[29]), "sp {:#x}", regs[29]);

    // Stopped: the counter holds still across polls.
    let held = c.phys_word(ticks);
    c.rig.run_for(50).unwrap();
    assert_eq!(c.phys_word(ticks), held, "a stopped cell does not run");
    let (r, bytes) = c.peek(ticks, 4);
    assert_eq!(
        (r, u32::from_be_bytes(bytes.try_into().unwrap())),
        (4, held)
    );

    // Out of its window, or too long: refused.
    assert_eq!(c.peek(hi - 2, 4).0, status::E_RANGE);
    assert_eq!(c.peek(lo - 4, 4).0, status::E_RANGE);
    assert_eq!(c.peek(lo, 4097).0, status::E_RANGE);

    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.rig.run_for(50).unwrap();
    assert!(c.phys_word(ticks) > held, "resumed, it counts again");
}

#[test]
fn a_break_written_over_translated_code_stops_the_cell_there() {
    let Some(mut c) = Cell::boot("cell-break") else {
        return;
    };
    // Let the cell run, so cell_mix is translated before the break is written over it.
    c.rig.run_for(50).unwrap();
    assert_eq!(c.call(AbiFn::CtxStop, [1, 0, 0, 0]), status::OK);
    let mix = c.sym("cell_mix");
    let tick = c.sym("cell_tick");
    let original = c.phys_word(mix);
    assert_eq!(c.poke(mix, &BREAK.to_be_bytes()), 4);
    assert_eq!(c.phys_word(mix), BREAK);
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.run_until_stopped(Duration::from_secs(10));

    let (r, stop) = c.stop_info();
    assert_eq!(r, 1);
    assert_eq!((stop[1], stop[2], stop[3]), (STOP_EXCEPTION, exc::BP, mix));
    assert_eq!(
        stop[5],
        exc::BP << 2,
        "Cause: ExcCode Bp, not in a delay slot"
    );
    let regs = c.regs();
    assert_eq!(regs[frame::PC], mix);
    assert_eq!(regs[frame::CAUSE], exc::BP << 2);
    let ra = regs[31];
    assert!(
        (tick..mix.max(tick) + 0x100).contains(&ra) && ra > tick,
        "ra {ra:#x} returns into cell_tick"
    );
    // The call's arguments: a1 is the new tick count.
    let ticks = c.phys_word(c.sym("CELL_TICKS"));
    assert_eq!(regs[5], ticks);

    // Put the word back, step over by resuming: the cell runs on, with its code intact.
    assert_eq!(c.poke(mix, &original.to_be_bytes()), 4);
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.rig.run_for(100).unwrap();
    assert!(c.phys_word(c.sym("CELL_TICKS")) > ticks + 1);
    assert_eq!(c.stop_info().0, 0, "running");
}

#[test]
fn registers_written_while_stopped_are_what_the_cell_resumes_with() {
    let Some(mut c) = Cell::boot("cell-regs") else {
        return;
    };
    c.rig.run_for(30).unwrap();
    let mix = c.sym("cell_mix");
    assert_eq!(c.call(AbiFn::CtxStop, [1, 0, 0, 0]), status::OK);
    assert_eq!(c.poke(mix, &BREAK.to_be_bytes()), 4);
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.run_until_stopped(Duration::from_secs(10));
    let mut regs = c.regs();
    // Return from cell_mix at once with v0 = 0x1234: the sum becomes 0x1234.
    regs[2] = 0x1234;
    regs[frame::PC] = regs[31];
    let bytes: Vec<u8> = regs.iter().flat_map(|w| w.to_be_bytes()).collect();
    let va = c.rig.scratch_va();
    c.rig
        .write_phys(u64::from(unmapped_phys(va).unwrap()), &bytes)
        .unwrap();
    assert_eq!(c.call(AbiFn::CtxRegsSet, [1, va, 0, 0]), status::OK);
    let back = c.regs();
    assert_eq!((back[2], back[frame::PC]), (0x1234, regs[31]));
    // Let it store the sum, then stop at the break again (the next tick's call).
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.run_until_stopped(Duration::from_secs(10));
    assert_eq!(
        c.regs()[4],
        0x1234,
        "cell_mix's first argument is the sum we returned"
    );
}

#[test]
fn a_fault_is_a_stop_with_its_cause_not_a_crash() {
    let Some(mut c) = Cell::boot("cell-fault") else {
        return;
    };
    c.rig.run_for(30).unwrap();
    assert_eq!(c.call(AbiFn::CtxStop, [1, 0, 0, 0]), status::OK);
    // Ask for a store to address 1: an address error on store.
    assert_eq!(c.poke(c.sym("CELL_FAULT"), &1u32.to_be_bytes()), 4);
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.run_until_stopped(Duration::from_secs(10));
    let (r, stop) = c.stop_info();
    assert_eq!(r, 1);
    assert_eq!((stop[1], stop[2], stop[4]), (STOP_EXCEPTION, exc::ADES, 1));
    let fault = c.sym("cell_fault");
    let pc = stop[3];
    assert!(
        (fault..fault + 0x30).contains(&pc),
        "pc {pc:#x} in cell_fault"
    );
    // The faulting word is the store (`sw`, opcode 0x2B).
    assert_eq!(c.phys_word(pc) >> 26, 0x2B);
    // The module goes on serving: polls keep returning.
    let polls = c.rig.counters().polls;
    c.rig.run_for(30).unwrap();
    assert!(c.rig.counters().polls > polls);
    let mut info_state = || {
        let out = c.rig.scratch_va();
        assert_eq!(c.call(AbiFn::CtxList, [out, 1, 0, 0]), 1);
        c.words(0, 2)[1]
    };
    assert_eq!(info_state(), CTX_STOPPED);
    assert_ne!(info_state(), CTX_EXITED);
}

#[test]
fn a_reset_while_stopped_leaves_nothing_behind() {
    let Some(mut c) = Cell::boot_with("cell-reset", |o| o.watchdog_ms = 300) else {
        return;
    };
    c.rig.run_for(30).unwrap();
    let mix = c.sym("cell_mix");
    let original = c.phys_word(mix);
    assert_eq!(c.call(AbiFn::CtxStop, [1, 0, 0, 0]), status::OK);
    assert_eq!(c.poke(mix, &BREAK.to_be_bytes()), 4);
    // A hung kernel: the watchdog resets the machine.
    let resets = c.rig.counters().resets;
    c.rig.hang_next_call();
    c.rig
        .run_until(Duration::from_secs(20), |r| r.counters().resets > resets)
        .unwrap();
    assert_eq!(c.rig.counters().resets, resets + 1);
    assert_eq!(
        c.phys_word(mix),
        original,
        "the cell's code is loaded afresh"
    );
    assert_eq!(c.stop_info().0, 0, "running again");
    let ticks = c.sym("CELL_TICKS");
    c.rig.run_for(50).unwrap();
    let t = c.phys_word(ticks);
    c.rig.run_for(50).unwrap();
    assert!(c.phys_word(ticks) > t);
}

#[test]
fn an_older_kernel_has_no_contexts() {
    let table = iris::kernel::abi::table_bytes_as(14, iris::kernel::abi::build_table(1 << 20));
    assert_eq!(
        table.len(),
        core::mem::offset_of!(indy::abi::AbiTable, ctx_events)
    );
}

#[test]
fn a_break_in_a_delay_slot_stops_at_its_branch_with_bd() {
    let Some(mut c) = Cell::boot("cell-bd") else {
        return;
    };
    c.rig.run_for(30).unwrap();
    assert_eq!(c.call(AbiFn::CtxStop, [1, 0, 0, 0]), status::OK);
    // cell_tick calls cell_mix with `jalr $t9`, its delay slot moving the tick into $a1.
    let tick = c.sym("cell_tick");
    let jalr = (tick..tick + 0x60)
        .step_by(4)
        .find(|&a| c.phys_word(a) == 0x0320_F809)
        .expect("a jalr t9 in cell_tick");
    let slot = jalr + 4;
    let original = c.phys_word(slot);
    assert_eq!(c.poke(slot, &BREAK.to_be_bytes()), 4);
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.run_until_stopped(Duration::from_secs(10));
    let (r, stop) = c.stop_info();
    assert_eq!(r, 1);
    assert_eq!((stop[1], stop[2]), (STOP_EXCEPTION, exc::BP));
    assert_eq!(stop[3], jalr, "EPC names the branch");
    assert_eq!(stop[5], (1 << 31) | (exc::BP << 2), "Cause has BD");
    assert_eq!(c.regs()[frame::PC], jalr);
    // Put the slot back and resume at the branch: the call and its slot run again, whole.
    assert_eq!(c.poke(slot, &original.to_be_bytes()), 4);
    let mix = c.sym("cell_mix");
    assert_eq!(c.poke(mix, &BREAK.to_be_bytes()), 4);
    assert_eq!(c.call(AbiFn::CtxResume, [1, 0, 0, 0]), status::OK);
    c.run_until_stopped(Duration::from_secs(10));
    let regs = c.regs();
    assert_eq!(regs[frame::PC], mix);
    assert_eq!(regs[31], jalr + 8, "returns after the slot");
    assert_eq!(
        regs[5],
        c.phys_word(c.sym("CELL_TICKS")),
        "the slot ran: a1 is the tick"
    );
}
