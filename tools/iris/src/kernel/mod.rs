//! The IRIX 7 kernel as far as the module can see it: the ABI functions, the serial ring, the
//! machine status block, the environment and the disks. The rig calls [`Kernel::call`] from the
//! stub hook with the call's arguments and guest memory.

pub mod abi;
pub mod boot_info;
pub mod cells;
pub mod disks;
pub mod irqs;
pub mod procs;
pub mod ring;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Env;
use crate::console::{ConsoleLog, Seen};
use crate::devices::Bus;
use crate::devices::mc::Watchdog;
use crate::memmap;
use crate::memory::GuestMemory;
use abi::{AbiFn, AbiRet};
use disks::{BlockError, Disks};
use ring::SerialRing;

use indy::abi::{ABI_VERSION, BLOCK_SIZE, MachineStatus, ProcInfo, SERIAL_RING_SIZE, status};
use indy::map::{RAM_ALIAS_SIZE, RAM_PHYS, unmapped_phys};
use indy::prom_env;

/// The OS version in the status block.
pub const OS_VERSION: &str = "7.0.0";
/// Limits on what one call may ask for, so a bad argument cannot make the rig allocate wildly.
pub const MAX_CONSOLE_WRITE: u32 = 1 << 20;
pub const MAX_ENV_KEY: u32 = 256;
pub const MAX_BLOCKS_PER_READ: u32 = 2048;
pub const MAX_CONSOLE_INPUT_QUEUE: usize = 4096;
pub const MAX_PROCS: u32 = 1024;
pub const MAX_IRQS: u32 = 64;

/// What a call asked of the machine, beyond its return value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelRequest {
    Reset,
    Poweroff,
}

/// Counters of kernel activity (benchmarks and tests read them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Calls per ABI function, indexed like `AbiFn::ALL`.
    pub calls: [u64; AbiFn::ALL.len()],
    pub cache_wback_bytes: u64,
    pub cache_inval_bytes: u64,
    pub console_bytes: u64,
    pub blocks_read: u64,
    /// Calls that passed a pointer the kernel could not use.
    pub bad_pointers: u64,
}

impl KernelStats {
    pub fn calls_to(&self, f: AbiFn) -> u64 {
        self.calls[f.index()]
    }
}

pub struct Kernel {
    pub env: Env,
    pub ring: SerialRing,
    pub disks: Disks,
    pub console: Arc<ConsoleLog>,
    pub console_rx: Rc<RefCell<VecDeque<u8>>>,
    pub watchdog: Rc<RefCell<Watchdog>>,
    pub clock: Rc<Clock>,
    pub ram_bytes: u32,
    pub stats: KernelStats,
    pub request: Option<KernelRequest>,
    /// Guest instructions spent in the module, for the process list.
    pub module_insns: u64,
    /// The device bus, for `bus_probe` and interrupt state (set by the rig after building it).
    pub bus: Option<Rc<RefCell<Bus>>>,
    /// Interrupts the Ethernet model has raised (shared with the model).
    pub enet_irqs: Rc<Cell<u64>>,
    /// The ABI whose table the module is handed ([`ABI_VERSION`] unless a test plays an older
    /// kernel, `abi::table_bytes_as`).
    pub offered_abi: u32,
    /// Offer the module at most this much heap (a kernel that gives only what the ABI
    /// promises); by default the heap runs to the end of RAM.
    pub heap_cap: Option<u32>,
    /// The wall time (Unix seconds) at boot, when pinned: two rigs started with the same value
    /// tell the module the same date, so only what the clock cannot reproduce tells them apart.
    pub unix_time_at_boot: Option<u32>,
    /// Why this boot happened and what was kept of the previous one (`boot_info`).
    pub boot: boot_info::BootState,
    /// The debuggable contexts (ABI 15): the cells the rig runs beside the module.
    pub cells: cells::Cells,
}

fn phys_of(va: u32, len: u32) -> Option<u64> {
    let phys = unmapped_phys(va)?;
    // The whole buffer must stay inside the same KSEG.
    unmapped_phys(va.checked_add(len.saturating_sub(1))?)?;
    Some(u64::from(phys))
}

impl Kernel {
    pub fn new(
        env: Env,
        disks: Disks,
        console: Arc<ConsoleLog>,
        console_rx: Rc<RefCell<VecDeque<u8>>>,
        watchdog: Rc<RefCell<Watchdog>>,
        clock: Rc<Clock>,
        ram_bytes: u32,
    ) -> Kernel {
        let ring = SerialRing::new(
            u64::from(RAM_PHYS + memmap::SERIAL_RING_OFF),
            u64::from(RAM_PHYS + memmap::SERIAL_HEAD_OFF),
            SERIAL_RING_SIZE,
        );
        Kernel {
            env,
            ring,
            disks,
            console,
            console_rx,
            watchdog,
            clock,
            ram_bytes,
            stats: KernelStats::default(),
            request: None,
            module_insns: 0,
            bus: None,
            enet_irqs: Rc::default(),
            offered_abi: ABI_VERSION,
            heap_cap: None,
            unix_time_at_boot: None,
            boot: boot_info::BootState::power_on(),
            cells: cells::Cells::default(),
        }
    }

    /// The ABI table as the kernel writes it into guest memory.
    pub fn table_image(&self) -> Vec<u8> {
        let table = abi::build_table(self.heap_size());
        abi::table_bytes_as(self.offered_abi, table)
    }

    /// Connects the kernel to the machine's devices: the bus (probes, interrupt state) and the
    /// Ethernet model's interrupt counter.
    pub fn attach_devices(&mut self, bus: Rc<RefCell<Bus>>, enet_irqs: Rc<Cell<u64>>) {
        self.bus = Some(bus);
        self.enet_irqs = enet_irqs;
    }

    /// `bus_probe`: RAM answers, and so does any page a device model claims (an unclaimed
    /// address in such a page reads 0 on the rig rather than faulting); anything else would be
    /// a bus error.
    pub fn probe(&self, phys: u32, width: u32) -> i32 {
        if !matches!(width, 1 | 2 | 4) || !phys.is_multiple_of(width) {
            return status::E_INVAL;
        }
        let inside = |base: u32, len: u32| phys >= base && phys - base < len;
        // The stack guard page is left unmapped in both views of RAM: it bus-errors.
        let guard = memmap::STACK_GUARD_OFF;
        if inside(RAM_PHYS + guard, memmap::STACK_GUARD_SIZE)
            || inside(guard, memmap::STACK_GUARD_SIZE)
        {
            return status::E_NODEV;
        }
        if inside(RAM_PHYS, self.ram_bytes) || inside(0, RAM_ALIAS_SIZE) {
            return status::OK;
        }
        let claimed = self
            .bus
            .as_ref()
            .and_then(|b| b.try_borrow().ok())
            .is_some_and(|b| b.page_runs().iter().any(|&(base, len)| inside(base, len)));
        if claimed { status::OK } else { status::E_NODEV }
    }

    /// Whether the Ethernet model's interrupt is asserted (its reset register's CLRIRQ bit).
    fn enet_pending(&self, mem: &mut dyn GuestMemory) -> bool {
        use indy::regs::hpc3::{ERESET, RESET_CLRIRQ};
        let now = self.clock.now_ms();
        self.bus
            .as_ref()
            .and_then(|b| b.try_borrow_mut().ok())
            .is_some_and(|mut b| b.read(now, mem, ERESET, 4) as u32 & RESET_CLRIRQ != 0)
    }

    pub fn heap_size(&self) -> u32 {
        let rest = self.ram_bytes - memmap::HEAP_OFF;
        self.heap_cap.map_or(rest, |cap| cap.min(rest))
    }

    /// Write to the console: the serial ring and the Z85C30 (stdout).
    pub fn console_out(&mut self, mem: &mut dyn GuestMemory, data: &[u8]) {
        self.write_out(mem, data, Seen::Everywhere);
    }

    /// Console output to the serial ring and the line, and to the screen's console if `seen`
    /// says so (`serial_write` keeps its bytes off the screen).
    fn write_out(&mut self, mem: &mut dyn GuestMemory, data: &[u8], seen: Seen) {
        if let Err(e) = self.ring.write(mem, data) {
            eprintln!("iris: kernel: serial ring write failed: {e}");
        }
        self.stats.console_bytes += data.len() as u64;
        self.console.transmit_seen(data, seen);
    }

    /// A kernel message line.
    pub fn log(&mut self, mem: &mut dyn GuestMemory, line: &str) {
        let mut text = line.as_bytes().to_vec();
        text.push(b'\n');
        self.console_out(mem, &text);
    }

    pub fn status(&self) -> MachineStatus {
        let now = self.clock.now_ms();
        let mut mac = [0u8; 8];
        if let Some(Ok(m)) = self.env.get("eaddr").map(prom_env::parse_eaddr) {
            mac[..6].copy_from_slice(&m);
        }
        let ip = self
            .env
            .get("netaddr")
            .and_then(|n| prom_env::parse_netaddr(n).ok())
            .map_or([0; 4], |n| n.addr.octets());
        let unix_time = match self.unix_time_at_boot {
            Some(at_boot) => at_boot.saturating_add((now / 1000).min(u64::from(u32::MAX)) as u32),
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs().min(u64::from(u32::MAX)) as u32)
                .unwrap_or(0),
        };
        let mut os_version = [0u8; 16];
        os_version[..OS_VERSION.len()].copy_from_slice(OS_VERSION.as_bytes());
        MachineStatus {
            ip,
            mac,
            ram_bytes: self.ram_bytes,
            uptime_ms: now as u32,
            unix_time,
            os_version,
        }
    }

    /// Refresh the machine status block in guest memory.
    pub fn update_status(&self, mem: &mut dyn GuestMemory) {
        let bytes = abi::status_bytes(&self.status());
        let _ = mem.write(u64::from(RAM_PHYS + memmap::STATUS_OFF), &bytes);
        self.write_ctx_events(mem);
    }

    /// Publish the count of context stops (`ctx_events`) where the module polls it.
    pub fn write_ctx_events(&self, mem: &mut dyn GuestMemory) {
        let at = u64::from(RAM_PHYS + memmap::CTX_EVENTS_OFF);
        let _ = mem.write(at, &self.cells.events.to_be_bytes());
    }

    fn bad_pointer(&mut self, f: AbiFn, va: u32) -> AbiRet {
        self.stats.bad_pointers += 1;
        eprintln!(
            "iris: kernel: {} got an unusable pointer {va:#010x}",
            f.name()
        );
        AbiRet::I32(status::E_INVAL)
    }

    /// Run kernel function `f` with the call's first four argument words.
    pub fn call(&mut self, f: AbiFn, a: [u32; 4], mem: &mut dyn GuestMemory) -> AbiRet {
        self.stats.calls[f.index()] += 1;
        match f {
            AbiFn::ConsoleWrite | AbiFn::SerialWrite => {
                let len = a[1].min(MAX_CONSOLE_WRITE);
                let Some(phys) = phys_of(a[0], len) else {
                    return self.bad_pointer(f, a[0]);
                };
                let mut buf = vec![0u8; len as usize];
                if mem.read(phys, &mut buf).is_err() {
                    return self.bad_pointer(f, a[0]);
                }
                let seen = if f == AbiFn::SerialWrite {
                    Seen::SerialOnly
                } else {
                    Seen::Everywhere
                };
                self.write_out(mem, &buf, seen);
                AbiRet::I32(len as i32)
            }
            AbiFn::EnvGet => {
                let (key_va, key_len, buf_va, buf_len) = (a[0], a[1], a[2], a[3]);
                if key_len > MAX_ENV_KEY {
                    return AbiRet::I32(status::E_INVAL);
                }
                let Some(kp) = phys_of(key_va, key_len) else {
                    return self.bad_pointer(f, key_va);
                };
                let mut key = vec![0u8; key_len as usize];
                if mem.read(kp, &mut key).is_err() {
                    return self.bad_pointer(f, key_va);
                }
                let key = String::from_utf8_lossy(&key).into_owned();
                let Some(value) = self.env.get(&key).map(|v| v.as_bytes().to_vec()) else {
                    return AbiRet::I32(-1);
                };
                let n = value.len().min(buf_len as usize);
                if n > 0 {
                    let Some(bp) = phys_of(buf_va, n as u32) else {
                        return self.bad_pointer(f, buf_va);
                    };
                    if mem.write(bp, &value[..n]).is_err() {
                        return self.bad_pointer(f, buf_va);
                    }
                }
                AbiRet::I32(value.len().min(i32::MAX as usize) as i32)
            }
            AbiFn::BlockRead => {
                let (target, lba, count, buf_va) = (a[0], a[1], a[2], a[3]);
                if count > MAX_BLOCKS_PER_READ {
                    return AbiRet::I32(status::E_INVAL);
                }
                let bytes = count * BLOCK_SIZE;
                let data = match self.disks.read(target, lba, count) {
                    Ok(d) => d,
                    Err(BlockError::NoDevice) => return AbiRet::I32(status::E_NODEV),
                    Err(BlockError::Range) => return AbiRet::I32(status::E_RANGE),
                    Err(BlockError::Io) => return AbiRet::I32(status::E_IO),
                };
                if bytes > 0 {
                    let Some(bp) = phys_of(buf_va, bytes) else {
                        return self.bad_pointer(f, buf_va);
                    };
                    if mem.write(bp, &data).is_err() {
                        return self.bad_pointer(f, buf_va);
                    }
                }
                self.stats.blocks_read += u64::from(count);
                AbiRet::I32(status::OK)
            }
            AbiFn::BlockCount => match self.disks.blocks(a[0]) {
                Ok(n) => AbiRet::I32(n.min(i32::MAX as u64) as i32),
                Err(_) => AbiRet::I32(status::E_NODEV),
            },
            AbiFn::ClockMs => AbiRet::U64(self.clock.now_ms()),
            AbiFn::CacheWback => {
                self.stats.cache_wback_bytes += u64::from(a[1]);
                AbiRet::Void
            }
            AbiFn::CacheInval => {
                self.stats.cache_inval_bytes += u64::from(a[1]);
                AbiRet::Void
            }
            AbiFn::VirtToPhys => AbiRet::U32(unmapped_phys(a[0]).unwrap_or(u32::MAX)),
            AbiFn::Reset => {
                self.request = Some(KernelRequest::Reset);
                AbiRet::NoReturn
            }
            AbiFn::Poweroff => {
                self.request = Some(KernelRequest::Poweroff);
                AbiRet::NoReturn
            }
            AbiFn::WatchdogKick => {
                self.watchdog.borrow_mut().kick(self.clock.now_ms());
                AbiRet::Void
            }
            AbiFn::ProcList => {
                let (buf_va, max) = (a[0], a[1].min(MAX_PROCS));
                // 1 instruction ≈ 1 ns is plausible enough for an R4400 at 150-200 MHz.
                let list = procs::list(self.clock.now_ms(), self.module_insns / 1_000_000);
                let n = list.len().min(max as usize);
                let entry = core::mem::size_of::<ProcInfo>() as u32;
                if n > 0 {
                    let Some(bp) = phys_of(buf_va, n as u32 * entry) else {
                        return self.bad_pointer(f, buf_va);
                    };
                    for (i, p) in list.iter().take(n).enumerate() {
                        let mut name = [0u8; 20];
                        name[..p.name.len()].copy_from_slice(p.name.as_bytes());
                        let info = ProcInfo {
                            pid: p.pid,
                            state: p.state,
                            cpu_ms: p.cpu_ms,
                            name,
                        };
                        if mem
                            .write(bp + u64::from(i as u32 * entry), &abi::proc_bytes(&info))
                            .is_err()
                        {
                            return self.bad_pointer(f, buf_va);
                        }
                    }
                }
                AbiRet::I32(n as i32)
            }
            AbiFn::ConsoleInput => {
                let room = MAX_CONSOLE_INPUT_QUEUE.saturating_sub(self.console_rx.borrow().len());
                let len = (a[1] as usize).min(room);
                let Some(phys) = phys_of(a[0], len as u32) else {
                    return self.bad_pointer(f, a[0]);
                };
                let mut buf = vec![0u8; len];
                if mem.read(phys, &mut buf).is_err() {
                    return self.bad_pointer(f, a[0]);
                }
                self.console_rx.borrow_mut().extend(buf);
                AbiRet::I32(len as i32)
            }
            AbiFn::IrqList => {
                let (buf_va, max) = (a[0], a[1].min(MAX_IRQS));
                let state = irqs::IrqState {
                    uptime_ms: self.clock.now_ms(),
                    enet_raised: self.enet_irqs.get(),
                    enet_pending: self.enet_pending(mem),
                };
                let list = irqs::list(&state);
                let n = list.len().min(max as usize);
                let entry = core::mem::size_of::<indy::abi::IrqInfo>() as u32;
                if n > 0 {
                    let Some(bp) = phys_of(buf_va, n as u32 * entry) else {
                        return self.bad_pointer(f, buf_va);
                    };
                    let bytes: Vec<u8> = list.iter().take(n).flat_map(irqs::irq_bytes).collect();
                    if mem.write(bp, &bytes).is_err() {
                        return self.bad_pointer(f, buf_va);
                    }
                }
                AbiRet::I32(n as i32)
            }
            AbiFn::BusProbe => AbiRet::I32(self.probe(a[0], a[1])),
            AbiFn::CtxList
            | AbiFn::CtxStop
            | AbiFn::CtxResume
            | AbiFn::CtxStopInfo
            | AbiFn::CtxRegsGet
            | AbiFn::CtxRegsSet
            | AbiFn::CtxMemRead
            | AbiFn::CtxMemWrite => {
                let r = self.cells.call(f, a, mem);
                self.write_ctx_events(mem);
                r
            }
        }
    }
}
