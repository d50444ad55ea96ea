//! Loading the module image, in one copy for every kernel that loads it: the iris rig (on the
//! host) and the kernel stand-in that runs the image in MAME's Indy (on the R4x00). The image's
//! SHA-256 is checked against the boot configuration's ([`digest`]), then the ELF32 relocatable
//! object is placed at a base address and relocated ([`elf`]), as `docs/image.md` describes.
//!
//! The cells both kernels run beside the module are read here too ([`cell`]).
//!
//! `no_std` with `alloc`: pure functions of bytes, no I/O.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod cell;
pub mod digest;
pub mod elf;

pub use cell::{CellImage, CellSegment, read_cell};
pub use digest::{DigestMismatch, sha256_hex, verify};
pub use elf::{LoadError, LoadedImage, ModInfo, RelocCounts, load, parse_modinfo};
