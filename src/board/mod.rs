//! The board: everything that touches the machine directly. The kernel's entry points, the
//! heap, the panic handler, the console, the binding of the kernel's ABI table, and the
//! register buses the drivers run on. This is the only folder where `unsafe` code may live
//! (`docs/architecture.md`); every block states why it is sound.
#![allow(unsafe_code)]

pub mod mmio;
pub mod modinfo;
pub mod newport_bus;
pub mod seeq_bus;

#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod console;
#[cfg(target_os = "none")]
mod disk;
#[cfg(target_os = "none")]
mod entropy;
#[cfg(target_os = "none")]
mod entry;
#[cfg(target_os = "none")]
mod flight;
#[cfg(target_os = "none")]
mod heap;
#[cfg(target_os = "none")]
mod kernel;
#[cfg(target_os = "none")]
mod panic;
