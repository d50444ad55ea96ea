//! irix7-mcp: the MCP control plane of IRIX 7, a kernel module for the SGI Indy.
//!
//! Layers (see DESIGN.md): `rpc` (a separate crate) speaks HTTP and MCP; the subsystems here are
//! written against small traits and tested on the host; the drivers and the ABI binding are the
//! only code that touches hardware; [`entry`] wires everything for the kernel.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod abi;
pub mod drivers;
pub mod entropy;
pub mod fs;
pub mod modinfo;
pub mod net;
pub mod platform;
pub mod screen;
pub mod serial_ring;
pub mod shell;
pub mod status;
pub mod tools;

// Linked for its `memcpy`, which replaces compiler_builtins' weak one; nothing names the crate.
#[cfg(target_os = "none")]
extern crate irix7_kmem;

#[cfg(target_os = "none")]
mod console;
#[cfg(target_os = "none")]
mod entry;
#[cfg(target_os = "none")]
mod heap;
#[cfg(target_os = "none")]
mod panic;
