//! The traits the layers meet at. Drivers implement them over registers, the board over the
//! kernel, tests over memory; services and tools use them without knowing which.

pub mod block;
pub mod debug;
pub mod framebuffer;
pub mod hpc3_bus;
pub mod newport_bus;
pub mod nic;
pub mod platform;
pub mod raw_bus;
