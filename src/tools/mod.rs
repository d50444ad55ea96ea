//! The MCP tools: one file per tool family, each a table of [`ToolDef`]s with schemas and
//! handlers that call subsystems through the [`Ctx`]. Nothing here touches hardware.

pub mod args;
pub mod block;
#[cfg(test)]
pub mod catalogue;
pub mod console;
pub mod debug;
pub mod devices;
pub mod fs;
pub mod pending;
pub mod proc;
pub mod screen;
pub mod serial;
pub mod shell;
pub mod system;

use crate::fs::block::{BlockDevice, IoError};
use crate::fs::overlay::Overlay;
use crate::platform::Platform;
use crate::status::{HeapUsage, NetUsage, Status};
use alloc::boxed::Box;
use rpc::mcp::{McpServer, RegistryError};

/// What every tool handler can reach.
pub struct Ctx {
    pub platform: Box<dyn Platform>,
    /// The ABI version the kernel offers.
    pub abi_version: u32,
    /// Reads the heap figures (the allocator on the Indy, a fake in host tests).
    pub heap: fn() -> HeapUsage,
    /// The network figures, refreshed by the server on each poll.
    pub net: NetUsage,
    /// A reset or power-off a tool has answered for; the module's `poll` carries it out.
    pub pending: Option<pending::Pending>,
    /// The merged filesystem (EROFS image + RAM overlay), once mounted.
    pub fs: Option<Fs>,
    /// Why `fs` is `None` (no disk, or the image was refused): what the fs tools answer.
    pub fs_error: Option<rpc::mcp::ToolError>,
    /// Opens a SCSI target for raw reads (`block.read`).
    pub open_disk: DiskOpener,
    /// The graphics board (the Newport driver), if one answered at boot.
    pub screen: Option<Box<dyn crate::screen::Framebuffer>>,
}

/// Opens SCSI target `n` as a sector device.
pub type DiskOpener = Box<dyn Fn(u32) -> Result<Disk, IoError>>;

/// The merged filesystem every file tool and the shell use.
pub type Fs = Overlay<Disk>;

/// The disk under the filesystem: the kernel's `block_read` on the Indy, memory in tests. A
/// boxed device keeps [`Ctx`] free of type parameters.
pub struct Disk(pub Box<dyn BlockDevice>);

impl BlockDevice for Disk {
    fn read(&mut self, lba: u32, count: u32, buf: &mut [u8]) -> Result<(), IoError> {
        self.0.read(lba, count, buf)
    }
    fn block_count(&self) -> u32 {
        self.0.block_count()
    }
}

impl Ctx {
    /// A snapshot of the machine's status.
    pub fn status(&self) -> Status {
        let mut st = Status::collect(&*self.platform, self.abi_version, (self.heap)(), self.net);
        st.cache = self
            .fs
            .as_ref()
            .and_then(|f| f.lower())
            .map(|e| e.cache_stats());
        st
    }
}

/// Registers every tool family and resource in a stable order.
pub fn register(server: &mut McpServer<Ctx>) -> Result<(), RegistryError> {
    server.register_tools(system::TOOLS)?;
    server.register_tools(serial::TOOLS)?;
    server.register_tools(console::TOOLS)?;
    server.register_tools(shell::TOOLS)?;
    server.register_tools(proc::TOOLS)?;
    server.register_tools(fs::TOOLS)?;
    server.register_tools(block::TOOLS)?;
    server.register_tools(screen::TOOLS)?;
    server.register_tools(devices::TOOLS)?;
    server.reserve_tools(debug::RESERVED)?;
    server.register_resources(system::RESOURCES);
    server.register_resources(serial::RESOURCES);
    server.register_resources(screen::RESOURCES);
    Ok(())
}

#[cfg(test)]
pub(crate) mod fake {
    //! A machine for host tests. Its state sits behind an `Rc` the test keeps, so a test can
    //! change the machine (clock, serial head, process list) and see what the tools did to it
    //! (console bytes, keystrokes, resets) while the server owns the context.
    use super::*;
    use crate::abi::table::{MachineStatus, ProcInfo};
    use crate::drivers::mmio::MmioError;
    use alloc::rc::Rc;
    use alloc::vec::Vec;
    use core::cell::{Cell, RefCell};

    pub struct FakeState {
        pub now: Cell<u64>,
        pub resets: Cell<u32>,
        pub poweroffs: Cell<u32>,
        /// Everything written to the console.
        pub console: RefCell<Vec<u8>>,
        /// The serial ring's head (bytes ever written); the ring's bytes are fixed at creation.
        pub serial_head: Cell<u32>,
        /// Added to the head after each look at the ring: the kernel writing while a tool reads.
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
        pub irqs: RefCell<Option<Vec<crate::abi::table::IrqInfo>>>,
    }

    pub struct FakePlatform {
        pub state: Rc<FakeState>,
        pub ring: Vec<u8>,
    }

    impl Platform for FakePlatform {
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
        fn console_write(&self, bytes: &[u8]) {
            self.state.console.borrow_mut().extend_from_slice(bytes);
        }
        fn serial_ring(&self) -> (&[u8], u32) {
            let head = self.state.serial_head.get();
            self.state
                .serial_head
                .set(head.wrapping_add(self.state.serial_head_bump.get()));
            (&self.ring, head)
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
        fn console_input(&self, bytes: &[u8]) -> usize {
            let n = bytes.len().min(self.state.key_room.get());
            self.state.key_room.set(self.state.key_room.get() - n);
            self.state.keys.borrow_mut().extend_from_slice(&bytes[..n]);
            n
        }
        fn reset(&self) {
            self.state.resets.set(self.state.resets.get() + 1);
        }
        fn poweroff(&self) {
            self.state.poweroffs.set(self.state.poweroffs.get() + 1);
        }
        fn irqs(&self, max: usize) -> Result<Vec<crate::abi::table::IrqInfo>, i32> {
            let list = self.state.irqs.borrow();
            let list = list.as_ref().ok_or(crate::abi::table::status::E_NOSYS)?;
            Ok(list.iter().take(max).copied().collect())
        }
        fn bus_probe(&self, phys: u32, _width: u32) -> Result<(), i32> {
            use crate::abi::table::status;
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
            crate::drivers::mmio::register_va(phys, width)?;
            let v = self.state.regs.borrow().get(&phys).copied().unwrap_or(0);
            Ok(if width == 4 {
                v
            } else {
                v & ((1 << (width * 8)) - 1)
            })
        }
        fn mmio_write(&self, phys: u32, width: u32, value: u32) -> Result<(), MmioError> {
            crate::drivers::mmio::register_va(phys, width)?;
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
        });
        let ctx = Ctx {
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
        };
        (ctx, state)
    }
}

#[cfg(test)]
pub(crate) mod harness {
    //! Drives the real MCP server with modern-era requests, as a client on the wire would.
    use super::*;
    use alloc::rc::Rc;
    use alloc::string::String;
    use alloc::vec::Vec;
    use core::cell::RefCell;
    use rpc::http::{Body, BodyPoll, Headers, Method, Peer};
    use serde_json::{Value, json};

    pub fn server() -> McpServer<Ctx> {
        server_with(fake::ctx())
    }

    /// A server over a given context (e.g. one from [`fake::ctx_with_ring`]).
    pub fn server_with(ctx: Ctx) -> McpServer<Ctx> {
        let config = rpc::mcp::Config::new("7.0.0", None);
        let mut counter = 0u8;
        let entropy: rpc::mcp::Entropy = Box::new(move |buf: &mut [u8]| {
            for b in buf {
                counter = counter.wrapping_add(37);
                *b = counter;
            }
        });
        let mut s = McpServer::new(config, Rc::new(RefCell::new(ctx)), entropy);
        register(&mut s).expect("tables register");
        s
    }

    /// Sends one modern request and returns the JSON-RPC response object.
    pub fn request(
        s: &mut McpServer<Ctx>,
        method: &str,
        name: Option<&str>,
        params: Value,
    ) -> Value {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut h = Headers::default();
        h.push("Content-Type", "application/json");
        h.push("Accept", "application/json, text/event-stream");
        h.push("MCP-Protocol-Version", "2026-07-28");
        h.push("Mcp-Method", method);
        if let Some(n) = name {
            h.push("Mcp-Name", n);
        }
        let bytes = serde_json::to_vec(&body).unwrap();
        let peer = Peer {
            addr: [127, 0, 0, 1],
            port: 40000,
        };
        let resp = s.handle_parts(&Method::Post, &h, &bytes, peer, 1000);
        assert_eq!(resp.status, 200, "HTTP status for {method}");
        let text = match resp.body {
            Body::Full(b) => b,
            Body::Stream(mut src) => {
                let mut out = Vec::new();
                for _ in 0..10_000 {
                    if src.poll(&mut out, 65536, 1000) == BodyPoll::End {
                        break;
                    }
                }
                out
            }
            Body::Empty => Vec::new(),
        };
        let text = String::from_utf8(text).unwrap();
        // An SSE body carries the response as the last `data:` line.
        let json_text = match text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
        {
            Some(d) => String::from(d.trim()),
            None => text,
        };
        serde_json::from_str(&json_text).unwrap()
    }

    /// Calls a tool and returns its `result`.
    pub fn call(s: &mut McpServer<Ctx>, tool: &str, args: Value) -> Value {
        let r = request(
            s,
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": args}),
        );
        let result = r
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {r}"));
        super::catalogue::assert_declared(s, tool, &result);
        result
    }
}
