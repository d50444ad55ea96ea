//! The filesystem subsystems: a sector device, the 16-block LRU, the EROFS reader, the RAM
//! overlay and the merged view every file tool uses. No hardware here: the module supplies a
//! [`BlockDevice`](crate::hil::block::BlockDevice) over the kernel's `block_read`, tests supply memory.

pub mod cache;
pub mod check;
pub mod erofs;
pub mod error;
pub mod listing;
pub mod mount;
pub mod overlay;
pub mod path;
pub mod read;
pub mod stat;

pub use error::{Errno, FsError, FsResult};
pub use stat::{FileType, Origin, Stat};

#[cfg(test)]
pub(crate) mod tests;

use crate::hil::block::{BlockDevice, IoError};
use alloc::boxed::Box;
use overlay::Overlay;

/// Opens SCSI target `n` as a sector device.
pub type DiskOpener = Box<dyn Fn(u32) -> Result<Disk, IoError>>;

/// The merged filesystem every file tool and the shell use.
pub type Fs = Overlay<Disk>;

/// The disk under the filesystem: the kernel's `block_read` on the Indy, memory in tests. A
/// boxed device keeps the services' context free of type parameters.
pub struct Disk(pub Box<dyn BlockDevice>);

impl BlockDevice for Disk {
    fn read(&mut self, lba: u32, count: u32, buf: &mut [u8]) -> Result<(), IoError> {
        self.0.read(lba, count, buf)
    }
    fn block_count(&self) -> u32 {
        self.0.block_count()
    }
}
