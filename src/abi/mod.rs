//! The kernel ABI: the table definition shared with the rig, and (on the guest) the safe
//! binding the rest of the module calls.

pub mod table;

#[cfg(target_os = "none")]
mod kernel;
#[cfg(target_os = "none")]
pub use kernel::Kernel;
