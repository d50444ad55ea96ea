//! The iris rig: an emulated SGI Indy (Unicorn's R4000 core with Indy devices) plus a stand-in
//! for the IRIX 7 kernel that loads, verifies, relocates and runs the irix7-mcp module image.
//! See `docs/rig.md`.

pub mod alloc_count;
pub mod breakdown;
pub mod clock;
pub mod config;
pub mod console;
pub mod cpu;
pub mod devices;
pub mod error;
pub mod handle;
pub mod https;
pub mod image;
pub mod kernel;
pub mod loader;
pub mod memmap;
pub mod memory;
pub mod net;
pub mod profile;
pub mod registration;
pub mod rig;
pub mod token;

pub use devices::{DevCtx, Device, Region};
pub use error::{GuestCrash, RigError};
pub use handle::RigHandle;
pub use memory::GuestMemory;
pub use rig::{Counters, Rig, RigOptions, RunEnd, Step, Survivor};
