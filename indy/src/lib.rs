//! The board's facts in one copy: the kernel ABI table, the Indy's physical address map, the
//! register maps of the chips the module drives and the rig models, and the PROM environment's
//! address formats. The module's drivers and the rig's device models both use these, so a
//! register moved here moves for both. `docs/hardware.md` explains the hardware behind them.
//!
//! No dependencies and no `unsafe`: these are numbers, layouts and pure decoders.

#![no_std]
#![forbid(unsafe_code)]

pub mod abi;
pub mod map;
pub mod prom_env;
pub mod regs;
