//! The machine's services, hardware-free and tested on the host: the filesystem, screen capture,
//! the shell, the serial ring, the audit trail, the machine's events, status figures, power and the physical-memory policy. They are
//! written against `hil` traits and know nothing of MCP; `tools` puts them on the wire.

pub mod audit;
pub mod boot;
pub mod console_mark;
pub mod context;
pub mod debug;
pub mod duration;
pub mod entropy;
pub mod events;
pub mod flight;
pub mod fs;
pub mod identity;
pub mod memory;
pub mod phys;
pub mod power;
pub mod proc;
pub mod screen;
pub mod serial_ring;
pub mod serial_wait;
pub mod shell;
pub mod status;
