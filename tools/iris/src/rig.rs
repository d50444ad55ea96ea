//! The rig: the machine (CPU, RAM, devices) and the kernel stand-in that boots the module and
//! schedules it. [`Rig`] is the in-process API tests use; the `iris` binary is a thin CLI on it.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use unicorn_engine::RegisterMIPS;

use crate::clock::Clock;
use crate::config::{Env, load_boot_config};
use crate::console::ConsoleLog;
use crate::cpu::{Cpu, Fault, UcMem, intno_name, mem_kind_name, uc_err};
use crate::devices::mc::Watchdog;
use crate::devices::newport::Newport;
use crate::devices::{Bus, Device, MachineEvent, MachineLinks, standard_devices};
use crate::error::{GuestCrash, RigError};
use crate::image;
use crate::kernel::abi::{AbiFn, AbiRet};
use crate::kernel::disks::{DEFAULT_ROOTFS, DEFAULT_ROOTFS_TARGET, Disks};
use crate::kernel::{Kernel, KernelRequest, KernelStats, OS_VERSION};
use crate::loader::{self, LoadedImage};
use crate::memmap::{self, ram_va, sext};
use crate::memory::GuestMemory;
use crate::net::{Forward, RigNet};
use crate::profile::{Profile, Profiler};
use indy::map::RAM_PHYS;
use indy::regs::mc::WATCHDOG_PERIOD_MS;

/// The boot configuration's default path, relative to the repository root.
pub const DEFAULT_CONFIG: &str = "boot/config.conf";
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
}

impl Default for RigOptions {
    fn default() -> RigOptions {
        RigOptions {
            root: None,
            config: None,
            env: Vec::new(),
            env_file: None,
            ram_mib: memmap::DEFAULT_RAM_MIB,
            disks: Vec::new(),
            no_disk: false,
            watchdog_ms: WATCHDOG_PERIOD_MS,
            hang_insns: DEFAULT_HANG_INSNS,
            quiet: false,
            forwards: Vec::new(),
        }
    }
}

/// Instruction and event counters (exact guest instruction counts from the block hook).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every guest instruction executed since the rig was built.
    pub total_insns: u64,
    /// Instructions the last `irix7_mcp_init` executed.
    pub init_insns: u64,
    /// Instructions of the last completed `irix7_mcp_poll`.
    pub last_poll_insns: u64,
    /// Sum over all completed polls.
    pub poll_insns: u64,
    pub polls: u64,
    /// Machine resets (module request or watchdog).
    pub resets: u64,
    pub watchdog_resets: u64,
}

/// Why a run loop returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The predicate became true.
    Predicate,
    /// The time limit passed.
    TimeLimit,
    /// The module powered the machine off.
    PoweredOff,
}

/// One scheduler round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The module said more work is pending (poll returned > 0).
    pub pending: bool,
    /// A device did something or the machine was reset.
    pub busy: bool,
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

enum CallEnd {
    Returned(i32),
    Request(KernelRequest),
    DeviceReset(String),
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
    counters: Counters,
    phase: Phase,
    mmio_mapped: bool,
    net: RigNet,
    /// The hang hook: the next guest call spins instead of running the module.
    hang_next: Cell<bool>,
    /// The profiling hook while `profile_start` is in force.
    profiler: Option<Profiler>,
}

impl Rig {
    /// Build the machine: RAM, CPU, devices, kernel state. Nothing runs yet.
    pub fn new(opts: RigOptions) -> Result<Rig, RigError> {
        let root = opts.root.clone().unwrap_or_else(image::find_repo_root);
        let config_path = opts
            .config
            .clone()
            .unwrap_or_else(|| root.join(DEFAULT_CONFIG));
        let mut env = Env::with_defaults();
        if let Some(f) = &opts.env_file {
            env.apply_file(f)?;
        }
        for s in &opts.env {
            env.apply_setting(s)?;
        }
        if !(memmap::MIN_RAM_MIB..=memmap::MAX_RAM_MIB).contains(&opts.ram_mib) {
            return Err(RigError::Config(format!(
                "--ram {} MiB out of range {}..={}",
                opts.ram_mib,
                memmap::MIN_RAM_MIB,
                memmap::MAX_RAM_MIB
            )));
        }
        let ram_bytes = opts.ram_mib << 20;
        let mut disks = Disks::default();
        if !opts.no_disk {
            for (t, p) in &opts.disks {
                disks.attach(*t, p).map_err(RigError::Config)?;
            }
            let rootfs = root.join(DEFAULT_ROOTFS);
            if opts.disks.is_empty() && rootfs.is_file() {
                disks
                    .attach(DEFAULT_ROOTFS_TARGET, &rootfs)
                    .map_err(RigError::Config)?;
            }
        }

        let clock = Rc::new(Clock::new());
        let console = Arc::new(ConsoleLog::new(!opts.quiet));
        let console_rx = Rc::new(RefCell::new(VecDeque::new()));
        let watchdog = Rc::new(RefCell::new(Watchdog::new(opts.watchdog_ms)));
        let screen = Rc::new(RefCell::new(Newport::new(console.clone())));
        let links = MachineLinks {
            console: console.clone(),
            console_rx: console_rx.clone(),
            watchdog: watchdog.clone(),
            screen: screen.clone(),
        };
        let mut bus = Bus::new(opts.quiet);
        for d in standard_devices(&links) {
            bus.add(d).map_err(RigError::Emulator)?;
        }
        let net = RigNet::attach(&mut bus, &env, &opts.forwards).map_err(RigError::Config)?;
        let bus = Rc::new(RefCell::new(bus));
        let kernel = Rc::new(RefCell::new(Kernel::new(
            env,
            disks,
            console.clone(),
            console_rx.clone(),
            watchdog.clone(),
            clock.clone(),
            ram_bytes,
        )));
        kernel
            .borrow_mut()
            .attach_devices(bus.clone(), net.enet_irq_counter());
        let mut cpu = Cpu::new(ram_bytes).map_err(RigError::Emulator)?;
        install_stub_hook(&mut cpu, kernel.clone())?;
        Ok(Rig {
            opts,
            root,
            config_path,
            cpu,
            bus,
            kernel,
            clock,
            console,
            console_rx,
            watchdog,
            screen,
            image: None,
            counters: Counters::default(),
            phase: Phase::Built,
            mmio_mapped: false,
            net,
            hang_next: Cell::new(false),
            profiler: None,
        })
    }

    /// The network: forwarded ports, wire and forwarder counters, the storm hook.
    pub fn net(&self) -> &RigNet {
        &self.net
    }

    /// Boot the module on an ABI 10 table (before `boot`): version 10, no `irq_list` or
    /// `bus_probe`, as an older kernel hands it over.
    pub fn offer_abi_10(&mut self) {
        self.kernel.borrow_mut().abi_10 = true;
    }

    /// Add a device (before `boot`). The Ethernet model and port forwarder come in this way.
    pub fn add_device(&mut self, device: Box<dyn Device>) -> Result<(), RigError> {
        if self.mmio_mapped {
            return Err(RigError::State("devices must be added before boot".into()));
        }
        self.bus
            .borrow_mut()
            .add(device)
            .map_err(RigError::Emulator)
    }

    /// The shared links devices are built from (console, input queue, watchdog).
    pub fn links(&self) -> MachineLinks {
        MachineLinks {
            console: self.console.clone(),
            console_rx: self.console_rx.clone(),
            watchdog: self.watchdog.clone(),
            screen: self.screen.clone(),
        }
    }

    /// The Newport graphics board: switch it to 24-bit ([`Newport::set_depth`]), look at VRAM.
    pub fn screen(&self) -> Rc<RefCell<Newport>> {
        self.screen.clone()
    }

    fn map_mmio(&mut self) -> Result<(), RigError> {
        if self.mmio_mapped {
            return Ok(());
        }
        let runs = self.bus.borrow().page_runs();
        for (phys, len) in runs {
            let (bus_r, bus_w) = (self.bus.clone(), self.bus.clone());
            let (clock_r, clock_w) = (self.clock.clone(), self.clock.clone());
            let windows = self.cpu.windows;
            self.cpu
                .uc
                .mmio_map(
                    u64::from(phys),
                    u64::from(len),
                    Some(
                        move |uc: &mut unicorn_engine::Unicorn<'_, ()>, off: u64, size: usize| {
                            let mut mem = UcMem { uc, windows };
                            bus_r.borrow_mut().read(
                                clock_r.now_ms(),
                                &mut mem,
                                phys + off as u32,
                                size,
                            )
                        },
                    ),
                    Some(
                        move |uc: &mut unicorn_engine::Unicorn<'_, ()>,
                              off: u64,
                              size: usize,
                              value: u64| {
                            let mut mem = UcMem { uc, windows };
                            bus_w.borrow_mut().write(
                                clock_w.now_ms(),
                                &mut mem,
                                phys + off as u32,
                                size,
                                value,
                            )
                        },
                    ),
                )
                .map_err(|e| {
                    RigError::Emulator(uc_err(&format!("map MMIO {phys:#x}+{len:#x}"), e))
                })?;
        }
        self.mmio_mapped = true;
        Ok(())
    }

    fn klog(&mut self, line: &str) {
        let mut mem = self.cpu.mem();
        self.kernel.borrow_mut().log(&mut mem, line);
    }

    /// Kernel entry: start the serial ring, print the boot lines, load the image named by the
    /// boot configuration (verifying its SHA-256) and call `irix7_mcp_init`.
    pub fn boot(&mut self) -> Result<(), RigError> {
        if self.phase != Phase::Built {
            return Err(RigError::State("boot called twice".into()));
        }
        self.map_mmio()?;
        {
            let mut mem = self.cpu.mem();
            let mut k = self.kernel.borrow_mut();
            k.ring
                .clear(&mut mem)
                .map_err(|e| RigError::Emulator(e.to_string()))?;
        }
        let ram_mib = self.opts.ram_mib;
        self.klog(&format!("IRIX 7 kernel {OS_VERSION} (iris rig): SGI Indy IP24, R4400 (emulated), {ram_mib} MB RAM"));
        let disks: Vec<String> = self
            .kernel
            .borrow()
            .disks
            .list()
            .map(|(t, d)| {
                format!(
                    "scsi target {t}: {} ({} blocks)",
                    d.path.display(),
                    d.blocks
                )
            })
            .collect();
        for d in disks {
            self.klog(&d);
        }
        self.arm_watchdog();
        self.phase = Phase::Running;
        let r = self.load_and_init();
        if r.is_err() {
            self.phase = Phase::Halted;
        }
        r
    }

    fn arm_watchdog(&mut self) {
        let mut wd = self.watchdog.borrow_mut();
        wd.enabled = wd.period_ms > 0;
        wd.last_kick_ms = self.clock.now_ms();
    }

    /// Fetch, verify and relocate the image into the module area, and write the ABI table.
    fn load_module(&mut self) -> Result<(), RigError> {
        let env = self.kernel.borrow().env.clone();
        let cfg = match load_boot_config(&self.config_path, &env) {
            Ok(c) => c,
            Err(e) => {
                self.klog(&format!("kernel: {e}"));
                return Err(e.into());
            }
        };
        self.klog(&format!("loading irix7-mcp from {}", cfg.url));
        let data = image::fetch(&cfg.url, &self.root)
            .inspect_err(|e| self.klog(&format!("kernel: {e}")))?;
        let digest = image::verify(&data, &cfg.sha256)
            .inspect_err(|e| self.klog(&format!("kernel: {e}")))?;
        self.klog(&format!("sha256 {digest} verified"));
        let img = loader::load(&data, ram_va(memmap::MODULE_OFF), memmap::MODULE_MAX)
            .inspect_err(|e| self.klog(&format!("kernel: loader: {e}")))?;
        let base_phys = u64::from(RAM_PHYS + memmap::MODULE_OFF);
        let heap_size = self.kernel.borrow().heap_size();
        {
            let mut mem = self.cpu.mem();
            let zero = vec![0u8; memmap::MODULE_MAX as usize];
            let fault = |e: crate::memory::MemFault| RigError::Emulator(e.to_string());
            mem.write(base_phys, &zero).map_err(fault)?;
            mem.write(base_phys, &img.bytes).map_err(fault)?;
            mem.write(
                u64::from(RAM_PHYS + memmap::ABI_TABLE_OFF),
                &self.kernel.borrow().table_image(),
            )
            .map_err(fault)?;
        }
        self.cpu
            .uc
            .ctl_flush_tb()
            .map_err(|e| RigError::Emulator(uc_err("flush TB", e)))?;
        let m = &img.modinfo;
        let line = format!(
            "module {} {} (ABI {}): {} bytes at {:#010x}, heap {} KiB at {:#010x}",
            m.name,
            m.version,
            m.abi,
            img.bytes.len(),
            img.base,
            heap_size / 1024,
            ram_va(memmap::HEAP_OFF)
        );
        self.image = Some(img);
        self.klog(&line);
        Ok(())
    }

    /// Load the module and run its init, again after each reset it asks for.
    fn load_and_init(&mut self) -> Result<(), RigError> {
        for _ in 0..MAX_RESETS_IN_INIT {
            self.load_module()?;
            let Some(init) = self.image.as_ref().map(|i| i.init) else {
                return Err(RigError::State("no image".into()));
            };
            let before = self.cpu.state.insns.get();
            let end = self.call_guest("irix7_mcp_init", init, &[ram_va(memmap::ABI_TABLE_OFF)]);
            self.counters.init_insns = self.cpu.state.insns.get() - before;
            match end? {
                CallEnd::Returned(0) => {
                    self.kick_watchdog();
                    return Ok(());
                }
                CallEnd::Returned(s) => {
                    self.klog(&format!("kernel: irix7_mcp_init failed with status {s}"));
                    return Err(RigError::InitFailed(s));
                }
                CallEnd::Request(KernelRequest::Poweroff) => {
                    self.power_off();
                    return Ok(());
                }
                CallEnd::Request(KernelRequest::Reset) => {
                    self.note_reset("reset requested by the module", false)
                }
                CallEnd::DeviceReset(reason) => self.note_reset(&reason, true),
            }
        }
        Err(RigError::ResetLoop(MAX_RESETS_IN_INIT))
    }

    fn note_reset(&mut self, reason: &str, watchdog: bool) {
        self.klog(&format!("kernel: {reason}: resetting the machine"));
        if !self.opts.quiet {
            eprintln!("iris: {reason}: resetting the machine");
        }
        self.counters.resets += 1;
        if watchdog {
            self.counters.watchdog_resets += 1;
        }
        self.bus.borrow_mut().reset();
        // `clock_ms` counts from boot: the new boot starts it at 0 (the watchdog is re-armed
        // on the restarted clock).
        self.clock.restart();
        self.arm_watchdog();
    }

    fn reset_machine(&mut self, reason: &str, watchdog: bool) -> Result<(), RigError> {
        self.note_reset(reason, watchdog);
        self.load_and_init()
    }

    fn power_off(&mut self) {
        self.klog("kernel: power off");
        self.phase = Phase::PoweredOff;
    }

    fn kick_watchdog(&mut self) {
        self.watchdog.borrow_mut().kick(self.clock.now_ms());
    }

    fn watchdog_active(&self) -> bool {
        let wd = self.watchdog.borrow();
        wd.enabled && wd.period_ms > 0
    }

    /// Tick every device; returns (busy, reset reason).
    fn tick_devices(&mut self) -> (bool, Option<String>) {
        let now = self.clock.now_ms();
        let mut mem = UcMem {
            uc: &mut self.cpu.uc,
            windows: self.cpu.windows,
        };
        let mut bus = self.bus.borrow_mut();
        let busy = bus.tick(now, &mut mem);
        let reset = bus
            .take_events()
            .into_iter()
            .map(|MachineEvent::Reset(r)| r)
            .next();
        (busy, reset)
    }

    /// Run one guest function to completion (in slices, ticking devices between them).
    fn call_guest(
        &mut self,
        call: &'static str,
        entry: u32,
        args: &[u32],
    ) -> Result<CallEnd, RigError> {
        let emu = |e| RigError::Emulator(e);
        let st = self.cpu.state.clone();
        let start = st.insns.get();
        st.fault.borrow_mut().take();
        self.kernel.borrow_mut().request = None;
        let sentinel = ram_va(memmap::RETURN_SENTINEL_OFF);
        for r in 1..32 {
            self.cpu.set_reg(r, 0).map_err(emu)?;
        }
        for (i, a) in args.iter().take(4).enumerate() {
            self.cpu.set_reg(4 + i as i32, *a).map_err(emu)?;
        }
        self.cpu.set_reg(25, entry).map_err(emu)?; // $t9, as PIC callers would set it
        self.cpu
            .set_reg(29, ram_va(memmap::STACK_TOP_OFF) - 32)
            .map_err(emu)?;
        self.cpu.set_reg(31, sentinel).map_err(emu)?;
        let mut pc = if self.hang_next.replace(false) {
            ram_va(memmap::HANG_LOOP_OFF)
        } else {
            entry
        };
        loop {
            {
                let mut mem = self.cpu.mem();
                self.kernel.borrow().update_status(&mut mem);
            }
            st.stop_at.set(st.insns.get() + SLICE_INSNS);
            let result = self.cpu.uc.emu_start(sext(pc), sext(sentinel), 0, 0);
            let used = st.insns.get() - start;
            let fault = st.fault.borrow_mut().take();
            if let Some(fault) = fault {
                return Err(RigError::Crash(self.crash_report(call, Some(fault), None)));
            }
            if let Err(e) = result {
                return Err(RigError::Crash(self.crash_report(
                    call,
                    None,
                    Some(format!("{e:?}")),
                )));
            }
            if let Some(req) = self.kernel.borrow_mut().request.take() {
                return Ok(CallEnd::Request(req));
            }
            pc = self.cpu.pc();
            if pc == sentinel {
                self.kernel.borrow_mut().module_insns += used;
                return Ok(CallEnd::Returned(self.cpu.reg(2) as i32));
            }
            let (_, reset) = self.tick_devices();
            if let Some(reason) = reset {
                return Ok(CallEnd::DeviceReset(reason));
            }
            if !self.watchdog_active() && used > self.opts.hang_insns {
                let symbol = self.symbolize(pc);
                return Err(RigError::Hang {
                    call,
                    insns: used,
                    pc,
                    symbol,
                });
            }
        }
    }

    fn symbolize(&self, va: u32) -> Option<String> {
        self.image.as_ref().and_then(|i| i.symbolize(va))
    }

    fn crash_report(
        &mut self,
        call: &'static str,
        fault: Option<Fault>,
        error: Option<String>,
    ) -> GuestCrash {
        let mut pc = self.cpu.pc();
        let block = self.cpu.state.last_block.get() as u32;
        let physical = matches!(fault, Some(Fault::Mem { .. }));
        let (what, bad_addr) = match fault {
            Some(Fault::Mem { kind, addr, size }) => (
                format!("{} ({size}-byte access)", mem_kind_name(kind)),
                Some(addr as u32),
            ),
            Some(Fault::Intr { intno, pc: at }) => {
                pc = at as u32;
                let mut ea = None;
                if pc == 0 {
                    // Unicorn reports PC 0 for some exceptions: find the instruction in the block.
                    if let Some((at, bad)) = self.cpu.locate_in_block(block, intno) {
                        pc = at;
                        ea = bad;
                    }
                } else if matches!(intno, 12 | 13 | 26 | 27 | 28) {
                    ea = self.cpu.decode_ea(pc);
                }
                (format!("{}, intno {intno}", intno_name(intno)), ea)
            }
            Some(Fault::BadStub { addr }) => (
                "jump into the ABI stub area between stubs".to_string(),
                Some(addr as u32),
            ),
            None => (
                format!("emulator stopped: {}", error.unwrap_or_default()),
                None,
            ),
        };
        let symbol = self.symbolize(if pc != 0 { pc } else { block });
        let crash = GuestCrash {
            call,
            what,
            pc,
            block,
            bad_addr,
            bad_is_physical: physical,
            ra: self.cpu.reg(31),
            sp: self.cpu.reg(29),
            symbol,
        };
        let line = format!("kernel: {crash}");
        self.klog(&line);
        crash
    }

    /// One scheduler round: tick devices, then call `irix7_mcp_poll(now)` once. After an error
    /// (crash, hang, module failure) the machine is halted: later steps fail and `stop` does not
    /// call into the module.
    pub fn step(&mut self) -> Result<Step, RigError> {
        let r = self.step_inner();
        if r.is_err() && self.phase == Phase::Running {
            self.phase = Phase::Halted;
        }
        r
    }

    fn step_inner(&mut self) -> Result<Step, RigError> {
        match self.phase {
            Phase::Running => {}
            Phase::PoweredOff => {
                return Ok(Step {
                    pending: false,
                    busy: false,
                });
            }
            Phase::Halted => {
                return Err(RigError::State(
                    "the machine halted after a fatal error".into(),
                ));
            }
            _ => return Err(RigError::State("step before boot or after stop".into())),
        }
        let (busy, reset) = self.tick_devices();
        if let Some(reason) = reset {
            self.reset_machine(&reason, true)?;
            return Ok(Step {
                pending: true,
                busy: true,
            });
        }
        let Some(poll) = self.image.as_ref().map(|i| i.poll) else {
            return Err(RigError::State("no image".into()));
        };
        let now = self.clock.now_ms();
        let before = self.cpu.state.insns.get();
        match self.call_guest("irix7_mcp_poll", poll, &[(now >> 32) as u32, now as u32])? {
            CallEnd::Returned(s) => {
                let used = self.cpu.state.insns.get() - before;
                self.counters.polls += 1;
                self.counters.last_poll_insns = used;
                self.counters.poll_insns += used;
                self.kick_watchdog();
                if s < 0 {
                    self.klog(&format!("kernel: irix7_mcp_poll failed with status {s}"));
                    return Err(RigError::PollFailed(s));
                }
                Ok(Step {
                    pending: s > 0,
                    busy,
                })
            }
            CallEnd::Request(KernelRequest::Reset) => {
                self.reset_machine("reset requested by the module", false)?;
                Ok(Step {
                    pending: true,
                    busy: true,
                })
            }
            CallEnd::Request(KernelRequest::Poweroff) => {
                self.power_off();
                Ok(Step {
                    pending: false,
                    busy: true,
                })
            }
            CallEnd::DeviceReset(reason) => {
                self.reset_machine(&reason, true)?;
                Ok(Step {
                    pending: true,
                    busy: true,
                })
            }
        }
    }

    /// Run the scheduler until `done(self)` holds, the module powers off, or `limit` passes
    /// (host time). Sleeps ~1 ms when the module is idle and no device did anything.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&Rig) -> bool,
    ) -> Result<RunEnd, RigError> {
        let start = Instant::now();
        loop {
            if self.phase == Phase::PoweredOff {
                return Ok(RunEnd::PoweredOff);
            }
            if done(self) {
                return Ok(RunEnd::Predicate);
            }
            if start.elapsed() >= limit {
                return Ok(RunEnd::TimeLimit);
            }
            let step = self.step()?;
            if !step.pending && !step.busy {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Run for `ms` milliseconds of host time (or until power-off).
    pub fn run_for(&mut self, ms: u64) -> Result<RunEnd, RigError> {
        self.run_until(Duration::from_millis(ms), |_| false)
    }

    /// Run until the console shows `needle` (or `limit` passes).
    pub fn run_until_console(&mut self, needle: &str, limit: Duration) -> Result<RunEnd, RigError> {
        self.run_until(limit, |r| r.console.contains(needle))
    }

    /// Call the module's `irix7_mcp_exit` and stop. Safe to call more than once.
    pub fn stop(&mut self) -> Result<(), RigError> {
        if self.phase != Phase::Running {
            self.phase = Phase::Stopped;
            return Ok(());
        }
        self.phase = Phase::Stopped;
        let Some(exit) = self.image.as_ref().map(|i| i.exit) else {
            return Ok(());
        };
        self.call_guest("irix7_mcp_exit", exit, &[])?;
        self.klog("kernel: module exited");
        Ok(())
    }

    /// Advance the rig clock (what `clock_ms`, `poll(now)` and the status block see). The jump
    /// counts as time in which the kernel kept kicking the watchdog between polls, so it does
    /// not fire the watchdog by itself.
    pub fn advance_clock(&self, ms: u64) {
        self.clock.advance(ms);
        self.watchdog.borrow_mut().kick(self.clock.now_ms());
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The hang hook: the next guest call (normally a poll) runs an endless loop instead of the
    /// module, as a hung kernel would. With the watchdog on, the watchdog resets the machine
    /// after `watchdog_ms`; with it off, the call is reported as a hang after `hang_insns`.
    pub fn hang_next_call(&self) {
        self.hang_next.set(true);
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

    pub fn counters(&self) -> Counters {
        Counters {
            total_insns: self.cpu.state.insns.get(),
            ..self.counters.clone()
        }
    }

    pub fn kernel_stats(&self) -> KernelStats {
        self.kernel.borrow().stats.clone()
    }

    /// Start attributing guest instructions to the image's functions (a second block hook,
    /// only while profiling). Restarts the counts when already profiling.
    pub fn profile_start(&mut self) -> Result<(), RigError> {
        if let Some(p) = &self.profiler {
            p.take();
            return Ok(());
        }
        let Some(image) = self.image.as_ref() else {
            return Err(RigError::State("profile_start before boot".into()));
        };
        let p = Profiler::install(&mut self.cpu.uc, image).map_err(RigError::Emulator)?;
        self.profiler = Some(p);
        Ok(())
    }

    /// The profile since `profile_start` or the last take; counting goes on from zero.
    pub fn profile_take(&mut self) -> Option<Profile> {
        self.profiler.as_ref().map(Profiler::take)
    }

    /// Stop profiling: removes the hook and returns the profile since the last take.
    pub fn profile_stop(&mut self) -> Result<Option<Profile>, RigError> {
        match self.profiler.take() {
            Some(p) => p
                .remove(&mut self.cpu.uc)
                .map(Some)
                .map_err(RigError::Emulator),
            None => Ok(None),
        }
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

/// The code hook on the stub range: run the kernel function, put its result in `$v0`/`$v1` and
/// return to `$ra`.
fn install_stub_hook(cpu: &mut Cpu, kernel: Rc<RefCell<Kernel>>) -> Result<(), RigError> {
    let windows = cpu.windows;
    let st = cpu.state.clone();
    let lo = sext(ram_va(memmap::STUB_OFF));
    let hi = lo + u64::from(memmap::STUB_SLOT * memmap::STUB_COUNT) - 1;
    let sentinel = sext(ram_va(memmap::RETURN_SENTINEL_OFF));
    cpu.uc
        .add_code_hook(lo, hi, move |uc, addr, _size| {
            let Some(f) = AbiFn::from_stub(addr as u32) else {
                st.fault.borrow_mut().get_or_insert(Fault::BadStub { addr });
                let _ = uc.emu_stop();
                return;
            };
            let args = [4, 5, 6, 7].map(|r| uc.reg_read(2 + r).unwrap_or(0) as u32);
            let ret = {
                let mut mem = UcMem { uc, windows };
                kernel.borrow_mut().call(f, args, &mut mem)
            };
            let next = match ret {
                AbiRet::Void => uc.reg_read(RegisterMIPS::RA),
                AbiRet::I32(v) => uc
                    .reg_write(RegisterMIPS::V0, sext(v as u32))
                    .and_then(|_| uc.reg_read(RegisterMIPS::RA)),
                AbiRet::U32(v) => uc
                    .reg_write(RegisterMIPS::V0, sext(v))
                    .and_then(|_| uc.reg_read(RegisterMIPS::RA)),
                AbiRet::U64(v) => uc
                    .reg_write(RegisterMIPS::V0, sext((v >> 32) as u32))
                    .and_then(|_| uc.reg_write(RegisterMIPS::V1, sext(v as u32)))
                    .and_then(|_| uc.reg_read(RegisterMIPS::RA)),
                // Leave through the return sentinel; the rig sees the kernel's request.
                AbiRet::NoReturn => Ok(sentinel),
            };
            let _ = uc.reg_write(RegisterMIPS::PC, next.unwrap_or(sentinel));
        })
        .map_err(|e| RigError::Emulator(uc_err("stub hook", e)))?;
    Ok(())
}
