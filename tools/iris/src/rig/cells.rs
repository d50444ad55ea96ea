//! Cells on the rig: loading a cell's ELF into its window at each boot, and running every
//! runnable cell for one slice after each completed poll. A cell's exception becomes a stop
//! the module polls (`ctx_events`), never a rig crash; code the module wrote into a cell is
//! dropped from Unicorn's translation cache before the cell runs again.

use std::path::Path;

use indy::abi::{CTX_RUNNING, CtxStop, STOP_EXCEPTION, STOP_EXITED, exc};
use indy::map::{RAM_PHYS, unmapped_phys};
use object::{Object, ObjectSymbol};
use unicorn_engine::RegisterMIPS;

use super::Rig;
use crate::cpu::{Fault, uc_err};
use crate::error::RigError;
use crate::kernel::cells::Cell;
use crate::memmap::{self, ram_va, sext};
use crate::memory::GuestMemory;
use unicorn_engine::unicorn_const::MemType;

/// Guest instructions a cell runs per slice: small beside a poll, so the module's latency and
/// the watchdog (host time) barely notice it.
pub const CELL_SLICE_INSNS: u64 = 20_000;

/// A cell image: its loadable bytes at their KSEG0 addresses, its entry and its name.
pub struct CellImage {
    pub segments: Vec<(u32, Vec<u8>)>,
    pub entry: u32,
    pub name: String,
}

/// Reads a cell's ELF: a static big-endian MIPS executable whose loadable segments all lie in
/// the cell window (`irix7_loader::read_cell`, the MAME stand-in's reader too).
pub fn read_cell(path: &Path) -> Result<CellImage, RigError> {
    let bad = |e: String| RigError::Config(format!("cell {}: {e}", path.display()));
    let data = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let img =
        irix7_loader::read_cell(&data, ram_va(memmap::CELL_OFF), memmap::CELL_SIZE).map_err(bad)?;
    let segments = img
        .segments
        .iter()
        .map(|s| {
            let mut bytes = s.data.to_vec();
            bytes.resize(s.mem as usize, 0);
            (s.va, bytes)
        })
        .collect();
    let name = path
        .file_stem()
        .map_or("cell".into(), |s| s.to_string_lossy().into_owned());
    Ok(CellImage {
        segments,
        entry: img.entry,
        name,
    })
}

/// The address of symbol `name` in a cell's ELF (tests and the GDB test read it).
pub fn cell_symbol(path: &Path, name: &str) -> Option<u32> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address() as u32)
}

/// `Cause.ExcCode` of a QEMU MIPS exception number as Unicorn reports it.
fn intno_exc(intno: u32) -> u32 {
    match intno {
        12 => exc::ADEL,
        13 => exc::ADES,
        15 => exc::IBE,
        17 => exc::SYS,
        18 => exc::BP,
        19 => exc::CPU,
        20 => exc::RI,
        21 => exc::OV,
        22 => exc::TR,
        23 => exc::FPE,
        26 => exc::TLBL,
        27 => exc::TLBS,
        28 => exc::DBE,
        _ => exc::RI,
    }
}

/// Whether `insn` is a branch or jump (it has a delay slot).
fn has_delay_slot(insn: u32) -> bool {
    let (op, funct, rt) = (insn >> 26, insn & 0x3F, (insn >> 16) & 31);
    match op {
        0 => matches!(funct, 0x08 | 0x09),      // jr, jalr
        1 => matches!(rt, 0..=3 | 0x10..=0x13), // bltz … bgezall
        2..=7 | 0x14..=0x17 => true,            // j, jal, beq…bgtz, the likely forms
        _ => false,
    }
}

impl Rig {
    /// Loads the cell of [`super::RigOptions::cell`] into its window (after a boot or a reset,
    /// so a reset leaves nothing of a debugging session behind): fresh code, data and stack, a
    /// fresh context at its entry.
    pub(super) fn load_cell(&mut self) -> Result<(), RigError> {
        self.kernel.borrow_mut().cells.clear();
        let Some(path) = self.opts.cell.clone() else {
            return Ok(());
        };
        let path = self.root.join(path);
        let img = read_cell(&path)?;
        let fault = |e: crate::memory::MemFault| RigError::Emulator(e.to_string());
        {
            let mut mem = self.cpu.mem();
            let window = u64::from(RAM_PHYS + memmap::CELL_OFF);
            mem.write(window, &vec![0u8; memmap::CELL_SIZE as usize])
                .map_err(fault)?;
            for (va, bytes) in &img.segments {
                let phys = unmapped_phys(*va).unwrap_or(0);
                mem.write(u64::from(phys), bytes).map_err(fault)?;
            }
        }
        let emu = |e| RigError::Emulator(uc_err("cell context", e));
        let mut ctx = self.cpu.uc.context_init().map_err(emu)?;
        for r in 1..32 {
            ctx.reg_write(2 + r, 0).map_err(emu)?;
        }
        let top = ram_va(memmap::CELL_OFF) + memmap::CELL_SIZE - 32;
        ctx.reg_write(2 + 29, sext(top)).map_err(emu)?;
        ctx.reg_write(2 + 31, sext(ram_va(memmap::CELL_EXIT_OFF)))
            .map_err(emu)?;
        ctx.reg_write(2 + 25, sext(img.entry)).map_err(emu)?;
        ctx.reg_write(RegisterMIPS::PC, sext(img.entry))
            .map_err(emu)?;
        self.cpu
            .uc
            .ctl_flush_tb()
            .map_err(|e| RigError::Emulator(uc_err("flush TB", e)))?;
        let line = format!(
            "cell 1 {}: entry {:#010x}, window {:#010x}+{:#x}",
            img.name,
            img.entry,
            ram_va(memmap::CELL_OFF),
            memmap::CELL_SIZE
        );
        self.kernel.borrow_mut().cells.list.push(Cell {
            id: 1,
            name: img.name,
            base: ram_va(memmap::CELL_OFF),
            size: memmap::CELL_SIZE,
            state: CTX_RUNNING,
            stop: CtxStop::default(),
            ctx,
            insns: 0,
        });
        self.klog(&line);
        Ok(())
    }

    /// One slice for every runnable cell, after a poll: drop the translations of code the
    /// module wrote, run, and turn what stopped the cell into a stop the module will poll.
    pub(super) fn run_cells(&mut self) -> Result<(), RigError> {
        fn emu(what: &'static str) -> impl Fn(unicorn_engine::unicorn_const::uc_error) -> RigError {
            move |e| RigError::Emulator(uc_err(what, e))
        }
        let dirty = std::mem::take(&mut self.kernel.borrow_mut().cells.dirty);
        for (va, len) in dirty {
            let start = sext(va);
            self.cpu
                .uc
                .ctl_remove_cache(start, start + u64::from(len))
                .map_err(emu("drop translated cell code"))?;
        }
        let count = self.kernel.borrow().cells.list.len();
        if count == 0 {
            return Ok(());
        }
        // The module's state as its poll left it, put back after the cells ran.
        let module = self.cpu.uc.context_init().map_err(emu("save module"))?;
        let exit = ram_va(memmap::CELL_EXIT_OFF);
        let st = self.cpu.state.clone();
        for i in 0..count {
            {
                let k = self.kernel.borrow();
                let cell = &k.cells.list[i];
                if cell.state != CTX_RUNNING {
                    continue;
                }
                self.cpu
                    .uc
                    .context_restore(&cell.ctx)
                    .map_err(emu("restore cell"))?;
            }
            st.fault.borrow_mut().take();
            let before = st.insns.get();
            st.stop_at.set(before + CELL_SLICE_INSNS);
            st.cell_running.set(true);
            let pc = self.cpu.pc();
            let result = self.cpu.uc.emu_start(sext(pc), sext(exit), 0, 0);
            st.cell_running.set(false);
            let fault = st.fault.borrow_mut().take();
            let stop = self.cell_stop(fault, result.err().map(|e| format!("{e:?}")), exit);
            let mut k = self.kernel.borrow_mut();
            let k = &mut *k;
            let cell = &mut k.cells.list[i];
            self.cpu
                .uc
                .context_save(&mut cell.ctx)
                .map_err(emu("save cell"))?;
            cell.insns += st.insns.get() - before;
            if let Some(stop) = stop {
                cell.record_stop(stop, &mut k.cells.events);
            }
        }
        self.cpu
            .uc
            .context_restore(&module)
            .map_err(emu("restore module"))?;
        let k = self.kernel.borrow();
        k.write_ctx_events(&mut self.cpu.mem());
        Ok(())
    }

    /// What a slice's end means for the cell: `None` when it only ran out of time.
    fn cell_stop(
        &mut self,
        fault: Option<Fault>,
        error: Option<String>,
        exit: u32,
    ) -> Option<CtxStop> {
        let exception = |exc_code: u32, pc: u32, bad: u32| CtxStop {
            why: STOP_EXCEPTION,
            exc_code,
            pc,
            bad,
            cause: exc_code << 2,
            ..CtxStop::default()
        };
        let Some(fault) = fault else {
            if self.cpu.pc() == exit {
                return Some(CtxStop {
                    why: STOP_EXITED,
                    pc: exit,
                    ..CtxStop::default()
                });
            }
            // An emulator error with no hook's record: a bus error where the PC stands.
            return error.map(|_| exception(exc::DBE, self.cpu.pc(), 0));
        };
        Some(match fault {
            Fault::Intr { intno, pc } => {
                let block = self.cpu.state.last_block.get() as u32;
                let (at, bad) = self
                    .cpu
                    .locate_in_block(block, intno)
                    .unwrap_or((pc as u32, None));
                let mut stop = exception(intno_exc(intno), at, bad.unwrap_or(0));
                // In a delay slot: EPC names the branch, and Cause.BD says so.
                if at > block
                    && let Some(prev) = self.cell_word(at - 4)
                    && has_delay_slot(prev)
                {
                    stop.pc = at - 4;
                    stop.cause |= 1 << 31;
                }
                stop
            }
            Fault::Mem { kind, addr, .. } => {
                let fetch = matches!(kind, MemType::FETCH_UNMAPPED | MemType::FETCH_PROT);
                let pc = if fetch { addr as u32 } else { self.cpu.pc() };
                exception(if fetch { exc::IBE } else { exc::DBE }, pc, addr as u32)
            }
            // A cell may not call the kernel's stubs: it stops where it tried.
            Fault::BadStub { addr } => exception(exc::IBE, addr as u32, addr as u32),
        })
    }

    fn cell_word(&mut self, va: u32) -> Option<u32> {
        let phys = unmapped_phys(va)?;
        self.cpu.mem().read_u32(u64::from(phys)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_slot_instructions() {
        assert!(has_delay_slot(0x03E0_0008)); // jr ra
        assert!(has_delay_slot(0x0C00_0000)); // jal
        assert!(has_delay_slot(0x1000_FFFF)); // b
        assert!(has_delay_slot(0x0411_0000)); // bal (bgezal)
        assert!(!has_delay_slot(0x0000_000D)); // break
        assert!(!has_delay_slot(0x2402_0001)); // li v0,1
    }
}
