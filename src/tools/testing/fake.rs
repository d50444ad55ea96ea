use crate::hil::block::IoError;
use crate::hil::platform::{Console, Machine, Power};
use crate::hil::raw_bus::{MmioError, RawBus, check_register};
use crate::services::context::Services;
use crate::services::serial_ring::Ring;
use crate::services::status::{HeapUsage, NetUsage};
use crate::tools::Ctx;
use crate::tools::devices::raw_access::RawAccess;
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use indy::abi::{MachineStatus, ProcInfo};

pub struct FakeState {
    pub now: Cell<u64>,
    pub resets: Cell<u32>,
    pub poweroffs: Cell<u32>,
    /// Everything written to the console.
    pub console: RefCell<Vec<u8>>,
    /// The serial ring's head (bytes ever written); the ring's bytes are fixed at creation.
    pub serial_head: Cell<u32>,
    /// Added to the head at each copy out of the ring: the kernel writing while a tool reads.
    pub serial_head_bump: Cell<u32>,
    /// Keystrokes queued on the console input.
    pub keys: RefCell<Vec<u8>>,
    /// How many more keystrokes the input queue takes.
    pub key_room: Cell<usize>,
    /// The kernel's process list.
    pub procs: RefCell<Vec<ProcInfo>>,
    /// Device registers by address (0 until written) and RAM bytes (0 until written).
    pub regs: RefCell<alloc::collections::BTreeMap<u32, u32>>,
    pub ram: RefCell<alloc::collections::BTreeMap<u32, u8>>,
    /// Windows (base, size) whose probe bus-errors.
    pub absent: RefCell<Vec<(u32, u32)>>,
    /// The kernel's interrupt sources; `None`: an ABI 10 kernel (no `irq_list`/`bus_probe`).
    pub irqs: RefCell<Option<Vec<indy::abi::IrqInfo>>>,
    /// The kernel's image info; `None`: a kernel before ABI 12.
    pub image: Cell<Option<indy::abi::ImageInfo>>,
}

pub struct FakePlatform {
    pub state: Rc<FakeState>,
    pub ring: Vec<u8>,
}

impl Machine for FakePlatform {
    fn clock_ms(&self) -> u64 {
        self.state.now.get()
    }
    fn machine_status(&self) -> MachineStatus {
        let mut os = [0u8; 16];
        os[..5].copy_from_slice(b"7.0.0");
        MachineStatus {
            ip: [0; 4],
            mac: [8, 0, 0x69, 1, 2, 3, 0, 0],
            ram_bytes: 64 << 20,
            uptime_ms: self.state.now.get() as u32,
            unix_time: 1_796_000_000,
            os_version: os,
        }
    }
    fn processes(&self, max: usize) -> Vec<ProcInfo> {
        self.state
            .procs
            .borrow()
            .iter()
            .take(max)
            .copied()
            .collect()
    }
    fn irqs(&self, max: usize) -> Result<Vec<indy::abi::IrqInfo>, i32> {
        let list = self.state.irqs.borrow();
        let list = list.as_ref().ok_or(indy::abi::status::E_NOSYS)?;
        Ok(list.iter().take(max).copied().collect())
    }
    fn image_info(&self) -> Option<indy::abi::ImageInfo> {
        self.state.image.get()
    }
}

impl Console for FakePlatform {
    fn console_write(&self, bytes: &[u8]) {
        self.state.console.borrow_mut().extend_from_slice(bytes);
    }
    fn serial_ring_size(&self) -> usize {
        self.ring.len()
    }
    fn serial_ring_copy(&self, at: usize, out: &mut [u8]) {
        let head = self.state.serial_head.get();
        self.state
            .serial_head
            .set(head.wrapping_add(self.state.serial_head_bump.get()));
        self.ring[..].copy(at, out);
    }
    fn serial_head(&self) -> u32 {
        self.state.serial_head.get()
    }
    fn console_input(&self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.state.key_room.get());
        self.state.key_room.set(self.state.key_room.get() - n);
        self.state.keys.borrow_mut().extend_from_slice(&bytes[..n]);
        n
    }
}

impl Power for FakePlatform {
    fn reset(&self) {
        self.state.resets.set(self.state.resets.get() + 1);
    }
    fn poweroff(&self) {
        self.state.poweroffs.set(self.state.poweroffs.get() + 1);
    }
}

/// The fake's registers and RAM, as the device tools' raw bus.
pub struct FakeBus {
    pub state: Rc<FakeState>,
}

impl RawBus for FakeBus {
    fn bus_probe(&self, phys: u32, _width: u32) -> Result<(), i32> {
        use indy::abi::status;
        if self.state.irqs.borrow().is_none() {
            return Err(status::E_NOSYS);
        }
        let absent = self.state.absent.borrow();
        match absent.iter().any(|&(b, n)| phys >= b && phys - b < n) {
            true => Err(status::E_NODEV),
            false => Ok(()),
        }
    }
    fn mmio_read(&self, phys: u32, width: u32) -> Result<u32, MmioError> {
        check_register(phys, width)?;
        let v = self.state.regs.borrow().get(&phys).copied().unwrap_or(0);
        Ok(if width == 4 {
            v
        } else {
            v & ((1 << (width * 8)) - 1)
        })
    }
    fn mmio_write(&self, phys: u32, width: u32, value: u32) -> Result<(), MmioError> {
        check_register(phys, width)?;
        self.state.regs.borrow_mut().insert(phys, value);
        Ok(())
    }
    fn mem_read(&self, phys: u32, buf: &mut [u8]) -> Result<(), MmioError> {
        let ram = self.state.ram.borrow();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = ram.get(&(phys + i as u32)).copied().unwrap_or(0);
        }
        Ok(())
    }
    fn mem_write(&self, phys: u32, data: &[u8]) -> Result<(), MmioError> {
        let mut ram = self.state.ram.borrow_mut();
        for (i, b) in data.iter().enumerate() {
            ram.insert(phys + i as u32, *b);
        }
        Ok(())
    }
}

/// A process list entry.
pub fn proc(pid: u32, state: u32, cpu_ms: u32, name: &str) -> ProcInfo {
    let mut n = [0u8; 20];
    let len = name.len().min(20);
    n[..len].copy_from_slice(&name.as_bytes()[..len]);
    ProcInfo {
        pid,
        state,
        cpu_ms,
        name: n,
    }
}

pub fn ctx() -> Ctx {
    ctx_and_state().0
}

/// A context and the machine state behind it, with an empty serial ring.
pub fn ctx_and_state() -> (Ctx, Rc<FakeState>) {
    ctx_with_ring(Vec::new(), 0)
}

/// A context whose serial ring holds `ring` with `head` bytes written so far.
pub fn ctx_with_ring(ring: Vec<u8>, head: u32) -> (Ctx, Rc<FakeState>) {
    let state = Rc::new(FakeState {
        now: Cell::new(12_345),
        resets: Cell::new(0),
        poweroffs: Cell::new(0),
        console: RefCell::default(),
        serial_head: Cell::new(head),
        serial_head_bump: Cell::new(0),
        keys: RefCell::default(),
        key_room: Cell::new(64),
        procs: RefCell::new(alloc::vec![
            proc(0, 1, 246, "kernel"),
            proc(1, 2, 12, "init"),
            proc(5, 0, 1500, "mcpd"),
        ]),
        regs: RefCell::default(),
        ram: RefCell::default(),
        absent: RefCell::default(),
        irqs: RefCell::new(Some(Vec::new())),
        image: Cell::new(Some(indy::abi::ImageInfo {
            sha256: [0x5b; 32],
            ..Default::default()
        })),
    });
    let services = Services {
        platform: Box::new(FakePlatform {
            state: state.clone(),
            ring,
        }),
        abi_version: 10,
        heap: || HeapUsage {
            used: 1000,
            peak: 2000,
            size: 1 << 24,
        },
        net: NetUsage {
            ip: Some([172, 31, 77, 2]),
            port: 7801,
            ..NetUsage::default()
        },
        pending: None,
        fs: None,
        fs_error: None,
        open_disk: Box::new(|_| Err(IoError { status: -19 })),
        screen: None,
        memory: Default::default(),
        shell_output: crate::services::shell::output::pool(1 << 24),
        captures: crate::services::screen::capture::png_pool(),
        events: crate::services::events::Events::new(0),
        audit: Default::default(),
        policy: "full".into(),
        serial_waiters: crate::services::serial_wait::Waiters::new(2),
        console_secret: None,
        boot: Default::default(),
        debugger: crate::services::debug::debugger::Debugger::new(None),
    };
    let raw = RawAccess::granted(Box::new(FakeBus {
        state: state.clone(),
    }));
    (Ctx::new(services, raw), state)
}
