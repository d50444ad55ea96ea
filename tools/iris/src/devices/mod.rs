//! The emulated Indy devices and the bus that routes MMIO accesses to them.
//!
//! A device is one file here: it implements [`Device`], names the physical ranges it claims,
//! and is added in [`standard_devices`] (or with `Rig::add_device` before boot). The bus maps
//! the 4 KiB pages those ranges touch with Unicorn's `mmio_map` and hands each access to the
//! device that claims the address. Between guest calls the scheduler calls every device's
//! `tick` with `&mut` access to guest RAM, which is where DMA engines do their work.

pub mod bus;
pub mod hpc3_enet;
pub mod mc;
pub mod newport;
pub mod regfile;
pub mod z85c30;

pub use bus::{Bus, DevCtx, Device, MachineEvent, Region};

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use crate::console::ConsoleLog;

/// Shared state the kernel and the devices both reach: the console (Z85C30 channel B) output,
/// its input queue, and the MC watchdog.
pub struct MachineLinks {
    pub console: Arc<ConsoleLog>,
    pub console_rx: Rc<RefCell<VecDeque<u8>>>,
    pub watchdog: Rc<RefCell<mc::Watchdog>>,
    /// The graphics board, reachable by the rig and tests (depth, VRAM, busy hook).
    pub screen: Rc<RefCell<newport::Newport>>,
}

/// The devices every rig has.
pub fn standard_devices(links: &MachineLinks) -> Vec<Box<dyn Device>> {
    vec![
        Box::new(z85c30::Z85c30::new(
            links.console.clone(),
            links.console_rx.clone(),
        )),
        Box::new(mc::MemoryController::new(links.watchdog.clone())),
        Box::new(regfile::RegisterFile::default()),
        Box::new(newport::NewportDevice(links.screen.clone())),
    ]
}
