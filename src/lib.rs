//! irix7-mcp: the MCP control plane of IRIX 7, a kernel module for the SGI Indy.
//!
//! The folders are layers, each importing only those below it (`docs/architecture.md` has the
//! map and the rules; `cargo xtask layers` enforces them):
//! - [`board`]: the target glue — entry points, heap, kernel binding, register buses. The only
//!   place raw memory is touched.
//! - [`hil`]: the traits the layers meet at (platform, block device, framebuffer, buses).
//! - [`drivers`]: the Seeq Ethernet and Newport graphics chips, as register logic over `hil`
//!   buses.
//! - [`services`]: filesystem, screen capture, shell, serial ring, status, power — hardware-free
//!   and host-tested.
//! - [`tools`]: the MCP surface (tool tables, arguments, error codes) over the services.
//! - [`net`]: the TCP/IP stack, the HTTP server and its routes.
//!
//! The protocol itself (HTTP, JSON-RPC, MCP) is the `rpc` crate; the board's facts (ABI table,
//! address map, register maps) are the `indy` crate.
#![cfg_attr(not(test), no_std)]
// The board reads the R4400's Count register (`board::entropy`); MIPS inline assembly is
// unstable, and the image is built with the build-std toolchain that allows it.
#![cfg_attr(target_arch = "mips", feature(asm_experimental_arch))]

extern crate alloc;

pub mod board;
pub mod drivers;
pub mod hil;
pub mod net;
pub mod services;
pub mod tools;

// Linked for its `memcpy`, which replaces compiler_builtins' weak one; nothing names the crate.
#[cfg(target_os = "none")]
extern crate irix7_kmem;
