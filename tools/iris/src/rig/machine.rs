//! Machine assembly: RAM, CPU, the standard devices, the network, the kernel stand-in, and the
//! memory map that routes MMIO pages to the device bus and the ABI stub range to the kernel.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use unicorn_engine::RegisterMIPS;

use super::{DEFAULT_CONFIG, Phase, Rig, RigOptions, last_good};
use crate::clock::Clock;
use crate::config::Env;
use crate::console::ConsoleLog;
use crate::cpu::{Cpu, Fault, UcMem, uc_err};
use crate::devices::mc::Watchdog;
use crate::devices::newport::Newport;
use crate::devices::{Bus, Device, MachineEvent, MachineLinks, standard_devices};
use crate::error::RigError;
use crate::image;
use crate::kernel::Kernel;
use crate::kernel::abi::{AbiFn, AbiRet};
use crate::kernel::disks::{DEFAULT_ROOTFS, DEFAULT_ROOTFS_TARGET, Disks};
use crate::memmap::{self, ram_va, sext};
use crate::net::RigNet;
use crate::profile::ProfileHook;

use super::scheduler::Counters;

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
        let net = RigNet::attach(
            &mut bus,
            &env,
            &opts.forwards,
            opts.pcap.as_deref(),
            opts.wire_faults.as_ref(),
        )
        .map_err(RigError::Config)?;
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
        kernel.borrow_mut().heap_cap = opts.heap_kib.map(|k| k.saturating_mul(1024));
        kernel.borrow_mut().unix_time_at_boot = opts.unix_time;
        let mut cpu = Cpu::new(ram_bytes).map_err(RigError::Emulator)?;
        install_stub_hook(&mut cpu, kernel.clone())?;
        let last_good =
            last_good::LastGood::new(opts.last_good_file.as_ref().map(|f| root.join(f)));
        let host_ports: Vec<u16> = net.forward_addrs().iter().map(|a| a.port()).collect();
        let token_files = crate::token::TokenFiles::new(&root, &host_ports);
        let mcp_forwards: Vec<(u16, u16)> = host_ports
            .iter()
            .zip(&opts.forwards)
            .map(|(&h, f)| (h, f.guest_port))
            .collect();
        let registrations = crate::registration::Registrations::new(&root, &mcp_forwards);
        Ok(Rig {
            last_good,
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
            registrations,
            phase: Phase::Built,
            mmio_mapped: false,
            net,
            hang_next: Cell::new(false),
            trap_next: Cell::new(false),
            corrupt_next: RefCell::new(Vec::new()),
            running_sha256: [0; 32],
            profiler: ProfileHook::default(),
            alloc_hook: None,
            token_files,
        })
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

    pub(super) fn map_mmio(&mut self) -> Result<(), RigError> {
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

    /// Tick every device; returns (busy, reset reason).
    pub(super) fn tick_devices(&mut self) -> (bool, Option<String>) {
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
            // Only the module may call the kernel: a cell that jumps here stops instead.
            let from_cell = st.cell_running.get();
            let Some(f) = AbiFn::from_stub(addr as u32).filter(|_| !from_cell) else {
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
