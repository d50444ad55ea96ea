//! The emulated R4400: Unicorn's MIPS64 big-endian core with the R4000 model, RAM at its Indy
//! physical addresses, and the hooks that count instructions and catch faults.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use unicorn_engine::unicorn_const::{Arch, HookType, MemType, Mode, Prot};
use unicorn_engine::{RegisterMIPS, Unicorn};

use crate::memmap;
use crate::memory::{GuestMemory, MemFault, RamWindows};
use indy::map::{KSEG0, RAM_ALIAS_SIZE, RAM_PHYS, unmapped_phys};

pub type Uc = Unicorn<'static, ()>;

/// Unicorn's CPU model number for the R4000 in MIPS64 mode.
pub const CPU_MODEL_R4000: i32 = 0;

/// The fixes the rig's Unicorn must have (docs/rig.md, "Which Unicorn"): the string the
/// fixed library's `irix7_unicorn_fixes` returns (`tools/xtask/src/unicorn.rs` adds it).
pub const UNICORN_FIXES: &str = "irix7-mcp fixes 1: mips-delay-slot-temporary, stale-delay-slot-flag, temporaries-exhausted-error, pending-branch-on-new-pc";

#[cfg(not(iris_stock_unicorn))]
mod fixed {
    // Only the project's fixed Unicorn defines this: linked against a stock library, the rig
    // does not link, naming it.
    unsafe extern "C" {
        fn irix7_unicorn_fixes() -> *const std::ffi::c_char;
    }

    pub fn fixes() -> &'static str {
        // SAFETY: the function takes nothing and returns a pointer to a static NUL-terminated
        // ASCII string.
        unsafe { std::ffi::CStr::from_ptr(irix7_unicorn_fixes()) }
            .to_str()
            .unwrap_or("(not UTF-8)")
    }
}

/// Which fixes the linked Unicorn has: [`UNICORN_FIXES`], or a note that the rig was built on
/// the stock library on purpose (`IRIS_STOCK_UNICORN`, see `tools/iris/build.rs`).
pub fn unicorn_fixes() -> &'static str {
    #[cfg(not(iris_stock_unicorn))]
    return fixed::fixes();
    #[cfg(iris_stock_unicorn)]
    return "none: the stock library (built with IRIS_STOCK_UNICORN)";
}

unsafe extern "C" {
    fn uc_version(major: *mut u32, minor: *mut u32) -> u32;
}

/// One line naming the emulator the rig runs (`iris --version`): the library's own version
/// (`uc_version`; the 2.1.5 crate's sources call themselves 2.1.4) and its fixes.
pub fn emulator_line() -> String {
    // SAFETY: uc_version accepts null pointers for the parts it need not write.
    let v = unsafe { uc_version(std::ptr::null_mut(), std::ptr::null_mut()) };
    format!(
        "Unicorn {}.{}.{} (crate unicorn-engine-sys), {}",
        v >> 24,
        (v >> 16) & 0xff,
        (v >> 8) & 0xff,
        unicorn_fixes()
    )
}

/// Guest memory through Unicorn (RAM windows only).
pub struct UcMem<'a, 'u> {
    pub uc: &'a mut Unicorn<'u, ()>,
    pub windows: RamWindows,
}

impl GuestMemory for UcMem<'_, '_> {
    fn read(&mut self, phys: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let p = self.windows.check(phys, buf.len())?;
        self.uc.mem_read(p, buf).map_err(|_| MemFault {
            phys,
            len: buf.len(),
        })
    }

    fn write(&mut self, phys: u64, data: &[u8]) -> Result<(), MemFault> {
        let p = self.windows.check(phys, data.len())?;
        self.uc.mem_write(p, data).map_err(|_| MemFault {
            phys,
            len: data.len(),
        })
    }
}

/// What stopped the CPU abnormally, as the hooks saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// An access to unmapped or protected memory.
    Mem {
        kind: MemType,
        addr: u64,
        size: usize,
    },
    /// A CPU exception Unicorn does not vector (intno as QEMU numbers them).
    Intr { intno: u32, pc: u64 },
    /// A jump into the stub area between stubs.
    BadStub { addr: u64 },
}

/// Hook-side state: the instruction counter and the fault record.
#[derive(Default)]
pub struct CpuState {
    /// Guest instructions executed (exact, from the block hook).
    pub insns: Cell<u64>,
    /// Stop the CPU once `insns` reaches this (slicing long calls).
    pub stop_at: Cell<u64>,
    pub last_block: Cell<u64>,
    pub fault: RefCell<Option<Fault>>,
    /// A cell runs (not the module): the kernel's stubs refuse it.
    pub cell_running: Cell<bool>,
}

/// Host memory backing guest RAM; Unicorn maps it (twice for the alias), so it must outlive the
/// Unicorn instance.
pub struct RamBuf {
    ptr: *mut u8,
    layout: Layout,
}

impl RamBuf {
    fn new(size: usize) -> Result<RamBuf, String> {
        let layout = Layout::from_size_align(size, 0x1000).map_err(|e| e.to_string())?;
        // SAFETY: the layout has a non-zero size (at least MIN_RAM_MIB).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(format!("cannot allocate {size} bytes of guest RAM"));
        }
        Ok(RamBuf { ptr, layout })
    }
}

impl Drop for RamBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// The CPU with its RAM. Field order matters: `uc` is dropped before `ram`.
pub struct Cpu {
    pub uc: Uc,
    pub state: Rc<CpuState>,
    pub windows: RamWindows,
    _ram: RamBuf,
}

pub fn uc_err(what: &str, e: unicorn_engine::unicorn_const::uc_error) -> String {
    format!("{what}: {e:?}")
}

impl Cpu {
    /// A CPU with `ram_bytes` of RAM at [`RAM_PHYS`] (and its first 512 KiB aliased at 0), a hole
    /// under the kernel stack, and the counting/fault hooks installed.
    pub fn new(ram_bytes: u32) -> Result<Cpu, String> {
        #[cfg(not(iris_stock_unicorn))]
        if unicorn_fixes() != UNICORN_FIXES {
            return Err(format!(
                "the rig was linked with a Unicorn whose fixes are {:?}, not {UNICORN_FIXES:?}: \
                 run `cargo xtask prereqs` and rebuild",
                unicorn_fixes()
            ));
        }
        let mut uc = Unicorn::new(Arch::MIPS, Mode::MIPS64 | Mode::BIG_ENDIAN)
            .map_err(|e| uc_err("create MIPS64 BE engine", e))?;
        uc.ctl_set_cpu_model(CPU_MODEL_R4000)
            .map_err(|e| uc_err("select R4000", e))?;
        let ram = RamBuf::new(ram_bytes as usize)?;
        let guard = (memmap::STACK_GUARD_OFF, memmap::STACK_BOTTOM_OFF);
        // (phys, offset in RAM, len)
        let pieces = [
            (RAM_PHYS, 0, guard.0),
            (RAM_PHYS + guard.1, guard.1, ram_bytes - guard.1),
            (0, 0, guard.0),
            (guard.1, guard.1, RAM_ALIAS_SIZE - guard.1),
        ];
        for (phys, off, len) in pieces {
            // SAFETY: the range lies inside `ram`, which lives as long as `uc` (see `Cpu`).
            unsafe {
                uc.mem_map_ptr(
                    u64::from(phys),
                    u64::from(len),
                    Prot::ALL,
                    ram.ptr.add(off as usize).cast(),
                )
            }
            .map_err(|e| uc_err(&format!("map RAM at {phys:#x}"), e))?;
        }
        let windows = RamWindows {
            main: (u64::from(RAM_PHYS), u64::from(ram_bytes)),
            alias: (0, u64::from(RAM_ALIAS_SIZE)),
        };
        let state = Rc::new(CpuState::default());

        let st = state.clone();
        uc.add_block_hook(1, 0, move |uc, addr, size| {
            let n = st.insns.get() + u64::from(size / 4);
            st.insns.set(n);
            st.last_block.set(addr);
            if n >= st.stop_at.get() {
                let _ = uc.emu_stop();
            }
        })
        .map_err(|e| uc_err("block hook", e))?;

        let st = state.clone();
        let invalid = HookType::MEM_READ_UNMAPPED
            | HookType::MEM_WRITE_UNMAPPED
            | HookType::MEM_FETCH_UNMAPPED
            | HookType::MEM_READ_PROT
            | HookType::MEM_WRITE_PROT
            | HookType::MEM_FETCH_PROT;
        uc.add_mem_hook(invalid, 1, 0, move |_uc, kind, addr, size, _value| {
            st.fault
                .borrow_mut()
                .get_or_insert(Fault::Mem { kind, addr, size });
            false
        })
        .map_err(|e| uc_err("memory fault hook", e))?;

        let st = state.clone();
        uc.add_intr_hook(move |uc, intno| {
            let pc = uc.reg_read(RegisterMIPS::PC).unwrap_or(0);
            st.fault
                .borrow_mut()
                .get_or_insert(Fault::Intr { intno, pc });
            let _ = uc.emu_stop();
        })
        .map_err(|e| uc_err("interrupt hook", e))?;

        let mut cpu = Cpu {
            uc,
            state,
            windows,
            _ram: ram,
        };
        // Fill the stub area and the return sentinel with `break` so a missed hook is a crash.
        let brk = 0x0000_000Du32.to_be_bytes();
        let stubs: Vec<u8> = brk
            .iter()
            .copied()
            .cycle()
            .take((memmap::STUB_SLOT * memmap::STUB_COUNT) as usize)
            .collect();
        cpu.mem()
            .write(u64::from(RAM_PHYS + memmap::STUB_OFF), &stubs)
            .map_err(|e| e.to_string())?;
        cpu.mem()
            .write(u64::from(RAM_PHYS + memmap::RETURN_SENTINEL_OFF), &brk)
            .map_err(|e| e.to_string())?;
        // The hang loop: nops, then `b` back to its first word with a nop in the delay slot.
        let n = memmap::HANG_LOOP_WORDS;
        let back = (0x1000_0000u32 | (0u32.wrapping_sub(n - 1) & 0xFFFF)).to_be_bytes();
        let mut hang = vec![0u8; (n * 4) as usize];
        let at = ((n - 2) * 4) as usize;
        hang[at..at + 4].copy_from_slice(&back);
        cpu.mem()
            .write(u64::from(RAM_PHYS + memmap::HANG_LOOP_OFF), &hang)
            .map_err(|e| e.to_string())?;
        cpu.mem()
            .write(u64::from(RAM_PHYS + memmap::TRAP_OFF), &brk)
            .map_err(|e| e.to_string())?;
        Ok(cpu)
    }

    pub fn mem(&mut self) -> UcMem<'_, 'static> {
        UcMem {
            uc: &mut self.uc,
            windows: self.windows,
        }
    }

    pub fn reg(&self, n: i32) -> u32 {
        // RegisterMIPS numbers $0..$31 from 2.
        self.uc.reg_read(2 + n).unwrap_or(0) as u32
    }

    pub fn set_reg(&mut self, n: i32, v: u32) -> Result<(), String> {
        self.uc
            .reg_write(2 + n, memmap::sext(v))
            .map_err(|e| uc_err("write register", e))
    }

    pub fn pc(&self) -> u32 {
        self.uc.reg_read(RegisterMIPS::PC).unwrap_or(0) as u32
    }

    pub fn set_pc(&mut self, v: u32) -> Result<(), String> {
        self.uc
            .reg_write(RegisterMIPS::PC, memmap::sext(v))
            .map_err(|e| uc_err("write PC", e))
    }

    /// The effective address of the load/store at `pc`, decoded from the instruction (Unicorn
    /// does not expose BadVAddr).
    pub fn decode_ea(&mut self, pc: u32) -> Option<u32> {
        let insn = self.fetch(pc)?;
        let (_, _) = mem_access(insn)?;
        let base = self.reg(((insn >> 21) & 31) as i32);
        Some(base.wrapping_add(insn as u16 as i16 as i32 as u32))
    }

    fn fetch(&mut self, va: u32) -> Option<u32> {
        let phys = unmapped_phys(va)?;
        self.mem().read_u32(u64::from(phys)).ok()
    }

    /// Where in the straight-line block at `block` exception `intno` came from, for the
    /// exceptions whose hook sees PC 0 (trap, address error): the first instruction of the
    /// block that matches the cause. Returns (pc, bad address for address errors).
    pub fn locate_in_block(&mut self, block: u32, intno: u32) -> Option<(u32, Option<u32>)> {
        for i in 0..64u32 {
            let pc = block.wrapping_add(4 * i);
            let insn = self.fetch(pc)?;
            let (op, funct, rt) = (insn >> 26, insn & 0x3F, (insn >> 16) & 31);
            match intno {
                18 if op == 0 && funct == 0x0D => return Some((pc, None)),
                22 if (op == 0 && (0x30..=0x36).contains(&funct))
                    || (op == 1 && (8..=14).contains(&rt)) =>
                {
                    return Some((pc, None));
                }
                12 | 13 => {
                    if let Some((size, store)) = mem_access(insn) {
                        let ea = self.decode_ea(pc)?;
                        let misaligned = ea % size != 0 && !matches!(op, 0x22 | 0x26 | 0x2A | 0x2E);
                        if store == (intno == 13) && (misaligned || ea < KSEG0) {
                            return Some((pc, Some(ea)));
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// (access size, is store) of a MIPS I/II load or store.
fn mem_access(insn: u32) -> Option<(u32, bool)> {
    match insn >> 26 {
        0x20 | 0x24 => Some((1, false)),
        0x21 | 0x25 => Some((2, false)),
        0x23 | 0x30 => Some((4, false)),
        0x22 | 0x26 => Some((1, false)), // lwl/lwr: any alignment
        0x28 => Some((1, true)),
        0x29 => Some((2, true)),
        0x2B | 0x38 => Some((4, true)),
        0x2A | 0x2E => Some((1, true)), // swl/swr
        _ => None,
    }
}

/// A short name for a QEMU MIPS exception number as Unicorn reports it.
pub fn intno_name(intno: u32) -> &'static str {
    match intno {
        12 => "address error on load or fetch (AdEL)",
        13 => "address error on store (AdES)",
        15 => "bus error on fetch (IBE)",
        17 => "syscall",
        18 => "break",
        19 => "coprocessor unusable (CpU)",
        20 => "reserved instruction (RI)",
        21 => "integer overflow (Ov)",
        22 => "trap (teq/tne…)",
        23 => "floating-point exception",
        26 => "TLB miss on load (TLBL)",
        27 => "TLB miss on store (TLBS)",
        28 => "bus error on data (DBE)",
        _ => "CPU exception",
    }
}

pub fn mem_kind_name(kind: MemType) -> &'static str {
    match kind {
        MemType::READ_UNMAPPED => "read from unmapped memory",
        MemType::WRITE_UNMAPPED => "write to unmapped memory",
        MemType::FETCH_UNMAPPED => "fetch from unmapped memory",
        MemType::READ_PROT => "read from protected memory",
        MemType::WRITE_PROT => "write to protected memory",
        MemType::FETCH_PROT => "fetch from protected memory",
        _ => "memory fault",
    }
}
