//! The rig: the machine (CPU, RAM, devices) and the kernel stand-in that boots the module and
//! schedules it. [`Rig`] is the in-process API tests use; the `iris` binary is a thin CLI on it.
//!
//! One concept per file: `machine` assembles the devices and the memory map, `boot` loads and
//! verifies the image and handles resets and power-off, `last_good` keeps the image to fall
//! back to, `scheduler` runs guest calls and polls,
//! `crash` turns a fault into a symbolised report. This file holds the options, the state and
//! the accessors tests read.

mod boot;
mod cells;
mod crash;
mod last_good;
mod machine;
mod scheduler;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crate::alloc_count::{AllocCounts, AllocHook};
use crate::clock::Clock;
use crate::console::ConsoleLog;
use crate::cpu::Cpu;
use crate::devices::Bus;
use crate::devices::mc::Watchdog;
use crate::devices::newport::Newport;
use crate::error::RigError;
use crate::kernel::{Kernel, KernelStats};
use crate::loader::LoadedImage;
use crate::memmap;
use crate::memory::GuestMemory;
use crate::net::{Forward, RigNet, WireFaults};
use crate::profile::{Profile, ProfileHook};
use indy::regs::mc::WATCHDOG_PERIOD_MS;

pub use cells::{CELL_SLICE_INSNS, cell_symbol};
pub use scheduler::{Counters, RunEnd, Step};

/// The boot configuration's default path, relative to the repository root.
pub const DEFAULT_CONFIG: &str = "boot/config.conf";
/// Where the CLI keeps the last good image, relative to the repository root.
pub const DEFAULT_LAST_GOOD: &str = "target/iris/last-good.o";
/// Guest instructions per slice of a long call: between slices devices tick and the watchdog is
/// checked.
pub const SLICE_INSNS: u64 = 10_000_000;
/// With the watchdog off, a call running past this many instructions is reported as a hang.
pub const DEFAULT_HANG_INSNS: u64 = 4_000_000_000;
/// Resets in a row during init before the rig gives up.
pub const MAX_RESETS_IN_INIT: u32 = 8;

/// How to build a rig (the CLI flags, one to one).
#[derive(Debug, Clone)]
pub struct RigOptions {
    /// Repository root for relative paths; found from the current directory when `None`.
    pub root: Option<PathBuf>,
    /// Boot configuration; `DEFAULT_CONFIG` under the root when `None`.
    pub config: Option<PathBuf>,
    /// `KEY=VALUE` NVRAM settings, applied after `env_file`.
    pub env: Vec<String>,
    pub env_file: Option<PathBuf>,
    pub ram_mib: u32,
    /// Heap offered to the module in KiB, when less than the rest of RAM (the ABI promises
    /// 1024): to test the module on a kernel that gives only what it promises.
    pub heap_kib: Option<u32>,
    /// Pin the wall time the kernel reports: Unix seconds at boot, advancing with the rig's
    /// clock (the host's time when `None`).
    pub unix_time: Option<u32>,
    /// SCSI disks `(target, image path)`.
    pub disks: Vec<(u8, PathBuf)>,
    /// Attach no disk at all (not even the default root filesystem).
    pub no_disk: bool,
    /// MC watchdog period in ms; 0 turns the watchdog off.
    pub watchdog_ms: u64,
    /// Instruction budget of one guest call when the watchdog is off.
    pub hang_insns: u64,
    /// Do not echo the console to stdout, and no rig diagnostics on stderr.
    pub quiet: bool,
    /// Host 127.0.0.1 ports forwarded to guest ports (none by default; the CLI adds
    /// `net::DEFAULT_FORWARDS`).
    pub forwards: Vec<Forward>,
    /// Write every frame on the virtual wire to this pcap file (needs a forward).
    pub pcap: Option<PathBuf>,
    /// Loss, corruption, reordering, duplication and delay on the virtual wire (needs a forward).
    pub wire_faults: Option<WireFaults>,
    /// Keep the last good image in this file too, so that a new start of the rig can fall back
    /// to it (relative to the root; the CLI's default is [`DEFAULT_LAST_GOOD`]). Without it the
    /// last good image lives only as long as the rig.
    pub last_good_file: Option<PathBuf>,
    /// When the module traps (a crash, a panic's `break`), the kernel panics and resets the
    /// machine, the next boot's cause saying why (`panic`), instead of halting the rig with
    /// the crash as an error.
    pub reboot_on_panic: bool,
    /// A cell to run beside the module (relative to the root): a static R4400 ELF linked in
    /// the cell window (`cargo xtask cell`, docs/debug.md), loaded afresh at every boot.
    pub cell: Option<PathBuf>,
}

/// What the kernel keeps across a warm reset, for [`Rig::corrupt_at_next_reset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Survivor {
    /// The previous boot's serial ring.
    Ring,
    /// The previous boot's flight record (its header).
    Flight,
    /// The first call slot of the previous boot's flight record.
    FlightSlot,
}

impl Default for RigOptions {
    fn default() -> RigOptions {
        RigOptions {
            root: None,
            config: None,
            env: Vec::new(),
            env_file: None,
            ram_mib: memmap::DEFAULT_RAM_MIB,
            heap_kib: None,
            unix_time: None,
            disks: Vec::new(),
            no_disk: false,
            watchdog_ms: WATCHDOG_PERIOD_MS,
            hang_insns: DEFAULT_HANG_INSNS,
            quiet: false,
            forwards: Vec::new(),
            pcap: None,
            wire_faults: None,
            last_good_file: None,
            reboot_on_panic: false,
            cell: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Built,
    Running,
    PoweredOff,
    Stopped,
    /// A fatal error ended the run; the module is not called again.
    Halted,
}

/// The emulated Indy with its kernel.
pub struct Rig {
    opts: RigOptions,
    root: PathBuf,
    config_path: PathBuf,
    cpu: Cpu,
    bus: Rc<RefCell<Bus>>,
    kernel: Rc<RefCell<Kernel>>,
    clock: Rc<Clock>,
    console: Arc<ConsoleLog>,
    console_rx: Rc<RefCell<VecDeque<u8>>>,
    watchdog: Rc<RefCell<Watchdog>>,
    screen: Rc<RefCell<Newport>>,
    image: Option<LoadedImage>,
    /// What the kernel boots when a deploy is refused.
    last_good: last_good::LastGood,
    counters: Counters,
    phase: Phase,
    mmio_mapped: bool,
    net: RigNet,
    /// The hang hook: the next guest call spins instead of running the module.
    hang_next: Cell<bool>,
    /// The trap hook: the next guest call stops on a `break` trap.
    trap_next: Cell<bool>,
    /// The corruption hook: what to damage at the next warm reset.
    corrupt_next: RefCell<Vec<Survivor>>,
    /// The digest of the image the module runs (the next boot's `prev_sha256`).
    running_sha256: [u8; 32],
    /// The profiling hook while `profile_start` is in force.
    profiler: ProfileHook,
    /// The allocation-counting hooks once `alloc_count_start` installed them.
    alloc_hook: Option<AllocHook>,
    /// The generated token's files under `target/iris/` (see `token`).
    token_files: crate::token::TokenFiles,
    /// The rig's registration for the lab gateway under `target/iris/rigs/` (see `registration`).
    registrations: crate::registration::Registrations,
}

impl Rig {
    /// The files registering this rig for the lab gateway (one per forward to the MCP port).
    pub fn registration_files(&self) -> &[std::path::PathBuf] {
        self.registrations.paths()
    }

    /// The network: forwarded ports, wire and forwarder counters, the storm hook.
    pub fn net(&self) -> &RigNet {
        &self.net
    }

    /// Boot the module on the table of an older kernel (before `boot`): ABI `version` and only
    /// the entries it had (10: no `irq_list` or `bus_probe`; 12: no `boot_info`, so the module
    /// cannot say why it booted; 13: no `serial_write`, so a generated token cannot be shown).
    pub fn offer_abi(&mut self, version: u32) {
        self.kernel.borrow_mut().offered_abi = version;
    }

    /// Calls kernel function `f` from the host with argument words `args`, as the module's call
    /// through its stub would (without the trampoline, which `tests/abi.rs` covers): tests of
    /// the kernel's side of an entry the module does not use on its own. Buffers go in the
    /// scratch area ([`Rig::scratch_va`]).
    pub fn kernel_call(
        &mut self,
        f: crate::kernel::abi::AbiFn,
        args: [u32; 4],
    ) -> crate::kernel::abi::AbiRet {
        let mut mem = self.cpu.mem();
        self.kernel.borrow_mut().call(f, args, &mut mem)
    }

    /// The KSEG0 address of the host's scratch buffer (8 KiB) for [`Rig::kernel_call`].
    pub fn scratch_va(&self) -> u32 {
        memmap::ram_va(memmap::HOST_SCRATCH_OFF)
    }

    /// Stops of every cell so far (`ctx_events`).
    pub fn ctx_events(&self) -> u32 {
        self.kernel.borrow().cells.events
    }

    /// Guest instructions cell `id` has run since it was loaded (`None`: no such cell).
    pub fn cell_insns(&self, id: u32) -> Option<u64> {
        let mut k = self.kernel.borrow_mut();
        k.cells.get(id).map(|c| c.insns)
    }

    /// The trap hook: the next guest call (normally a poll) stops on a `break` trap, as the
    /// module does when it panics (the image's panic strategy); with
    /// [`RigOptions::reboot_on_panic`] the kernel panics and resets the machine.
    pub fn trap_next_call(&self) {
        self.trap_next.set(true);
    }

    /// The corruption hook: at the next warm reset, once the kernel has kept the previous
    /// boot's serial ring and flight region, damage `what` in guest memory (as a bit flipped
    /// in DRAM across the reset would), before the module reads it.
    pub fn corrupt_at_next_reset(&self, what: Survivor) {
        self.corrupt_next.borrow_mut().push(what);
    }

    /// The Newport graphics board: switch it to 24-bit ([`Newport::set_depth`]), look at VRAM.
    pub fn screen(&self) -> Rc<RefCell<Newport>> {
        self.screen.clone()
    }

    fn klog(&mut self, line: &str) {
        let mut mem = self.cpu.mem();
        self.kernel.borrow_mut().log(&mut mem, line);
    }

    /// Everything the console (Z85C30 channel B) transmitted.
    pub fn console_text(&self) -> String {
        self.console.text()
    }

    pub fn console(&self) -> Arc<ConsoleLog> {
        self.console.clone()
    }

    /// The serial ring as the module sees it: (head = bytes ever written, valid content in order).
    pub fn serial_ring(&mut self) -> (u32, Vec<u8>) {
        let ring = self.kernel.borrow().ring.clone();
        let mut mem = self.cpu.mem();
        let head = mem.read_u32(ring.head_phys).unwrap_or(0);
        (head, ring.contents(&mut mem).unwrap_or_default())
    }

    /// Queue bytes on the console input (Z85C30 channel B receive).
    pub fn console_input(&self, bytes: &[u8]) {
        self.console_rx.borrow_mut().extend(bytes.iter().copied());
    }

    pub fn kernel_stats(&self) -> KernelStats {
        self.kernel.borrow().stats.clone()
    }

    /// Start attributing guest instructions to the image's functions (a second block hook,
    /// only while profiling). Restarts the counts when already profiling.
    pub fn profile_start(&mut self) -> Result<(), RigError> {
        self.profiler.start(&mut self.cpu.uc, self.image.as_ref())
    }

    /// The profile since `profile_start` or the last take; counting goes on from zero.
    pub fn profile_take(&mut self) -> Option<Profile> {
        self.profiler.take()
    }

    /// Stop profiling: removes the hook and returns the profile since the last take.
    pub fn profile_stop(&mut self) -> Result<Option<Profile>, RigError> {
        self.profiler.stop(&mut self.cpu.uc)
    }

    /// Start counting the module's heap allocations (code hooks on its allocator's `alloc` and
    /// `dealloc`); counting then stays on. Needs a booted image.
    pub fn alloc_count_start(&mut self) -> Result<(), RigError> {
        if self.alloc_hook.is_none() {
            let Some(image) = self.image.as_ref() else {
                return Err(RigError::State("alloc_count_start before boot".into()));
            };
            self.alloc_hook = Some(AllocHook::install(&mut self.cpu.uc, image)?);
        }
        Ok(())
    }

    /// Starts the allocation counts' live peak again from now (see `AllocCounts::live_peak`).
    pub fn alloc_peak_mark(&self) {
        if let Some(h) = &self.alloc_hook {
            h.mark();
        }
    }

    /// Allocations since `alloc_count_start`, if counting.
    pub fn alloc_counts(&self) -> Option<AllocCounts> {
        self.alloc_hook.as_ref().map(AllocHook::counts)
    }

    pub fn image(&self) -> Option<&LoadedImage> {
        self.image.as_ref()
    }

    pub fn is_powered_off(&self) -> bool {
        self.phase == Phase::PoweredOff
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn device_names(&self) -> Vec<String> {
        self.bus.borrow().device_names()
    }

    /// Read guest physical memory (RAM).
    pub fn read_phys(&mut self, phys: u64, len: usize) -> Result<Vec<u8>, RigError> {
        let mut buf = vec![0u8; len];
        self.cpu
            .mem()
            .read(phys, &mut buf)
            .map_err(|e| RigError::State(e.to_string()))?;
        Ok(buf)
    }

    /// Write guest physical memory (RAM).
    pub fn write_phys(&mut self, phys: u64, data: &[u8]) -> Result<(), RigError> {
        self.cpu
            .mem()
            .write(phys, data)
            .map_err(|e| RigError::State(e.to_string()))
    }
}
