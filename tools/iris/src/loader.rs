//! The module loader the rig boots with: the shared one (`loader/`, crate `irix7-loader`), which
//! the MAME kernel stand-in uses too, so the two kernels relocate an image the same way.

pub use irix7_loader::elf::{LoadError, LoadedImage, ModInfo, RelocCounts, load, parse_modinfo};
