//! The filesystem subsystems: a sector device, the 16-block LRU, the EROFS reader, the RAM
//! overlay and the merged view every file tool uses. No hardware here: the module supplies a
//! [`block::BlockDevice`] over the kernel's `block_read`, tests supply memory.

pub mod block;
pub mod cache;
pub mod erofs;
pub mod error;
#[cfg(target_os = "none")]
pub mod kernel_disk;
pub mod overlay;
pub mod path;
pub mod stat;

pub use error::{ErrorCode, FsError, FsResult};
pub use stat::{FileType, Origin, Stat};

#[cfg(test)]
pub(crate) mod tests;
