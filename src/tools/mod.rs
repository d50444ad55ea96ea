//! The MCP tools: one file per tool family, each a table of [`ToolDef`]s with schemas and
//! handlers that call subsystems through the [`Ctx`]. Nothing here touches hardware.

pub mod system;

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
}

impl Ctx {
    /// A snapshot of the machine's status.
    pub fn status(&self) -> Status {
        Status::collect(&*self.platform, self.abi_version, (self.heap)(), self.net)
    }
}

/// Registers every tool family and resource in a stable order.
pub fn register(server: &mut McpServer<Ctx>) -> Result<(), RegistryError> {
    server.register_tools(system::TOOLS)?;
    server.register_resources(system::RESOURCES);
    Ok(())
}

#[cfg(test)]
pub(crate) mod fake {
    //! A machine for host tests.
    use super::*;
    use crate::abi::table::{MachineStatus, ProcInfo};
    use alloc::vec::Vec;
    use core::cell::Cell;

    pub struct FakePlatform {
        pub now: Cell<u64>,
        pub resets: Cell<u32>,
        pub console: core::cell::RefCell<Vec<u8>>,
    }

    impl Platform for FakePlatform {
        fn clock_ms(&self) -> u64 {
            self.now.get()
        }
        fn machine_status(&self) -> MachineStatus {
            let mut os = [0u8; 16];
            os[..5].copy_from_slice(b"7.0.0");
            MachineStatus {
                ip: [0; 4],
                mac: [8, 0, 0x69, 1, 2, 3, 0, 0],
                ram_bytes: 64 << 20,
                uptime_ms: self.now.get() as u32,
                unix_time: 1_796_000_000,
                os_version: os,
            }
        }
        fn console_write(&self, bytes: &[u8]) {
            self.console.borrow_mut().extend_from_slice(bytes);
        }
        fn serial_ring(&self) -> (&[u8], u32) {
            (&[], 0)
        }
        fn processes(&self, _max: usize) -> Vec<ProcInfo> {
            Vec::new()
        }
        fn console_input(&self, bytes: &[u8]) -> usize {
            bytes.len()
        }
        fn reset(&self) {
            self.resets.set(self.resets.get() + 1);
        }
        fn poweroff(&self) {}
    }

    pub fn ctx() -> Ctx {
        Ctx {
            platform: Box::new(FakePlatform {
                now: Cell::new(12_345),
                resets: Cell::new(0),
                console: Default::default(),
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
        }
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
        let config = rpc::mcp::Config::new("7.0.0", None);
        let mut counter = 0u8;
        let entropy: rpc::mcp::Entropy = Box::new(move |buf: &mut [u8]| {
            for b in buf {
                counter = counter.wrapping_add(37);
                *b = counter;
            }
        });
        let mut s = McpServer::new(config, Rc::new(RefCell::new(fake::ctx())), entropy);
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
        let json_text = match text.lines().filter_map(|l| l.strip_prefix("data:")).last() {
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
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {r}"))
    }
}
