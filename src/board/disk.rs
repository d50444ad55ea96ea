//! The SCSI disk as the kernel serves it: a [`BlockDevice`] over the ABI's `block_read`, so the
//! filesystem and `block.read` reach the Indy's disks through the kernel's driver.

use crate::board::kernel::Kernel;
use crate::hil::block::{BlockDevice, IoError, SECTOR_SIZE};
use indy::abi::status;

/// One SCSI target, its size read once when opened.
pub struct KernelDisk {
    kernel: Kernel,
    target: u32,
    blocks: u32,
}

impl KernelDisk {
    /// Opens SCSI `target`; fails with the kernel's status when it has no such disk.
    pub fn open(kernel: Kernel, target: u32) -> Result<Self, IoError> {
        let blocks = kernel
            .block_count(target)
            .map_err(|s| IoError { status: s })?;
        Ok(KernelDisk {
            kernel,
            target,
            blocks,
        })
    }
}

impl BlockDevice for KernelDisk {
    fn read(&mut self, lba: u32, count: u32, buf: &mut [u8]) -> Result<(), IoError> {
        let fits = (count as usize)
            .checked_mul(SECTOR_SIZE)
            .is_some_and(|len| len == buf.len());
        let inside = lba.checked_add(count).is_some_and(|end| end <= self.blocks);
        if !fits {
            return Err(IoError {
                status: status::E_INVAL,
            });
        }
        if !inside {
            return Err(IoError {
                status: status::E_RANGE,
            });
        }
        self.kernel
            .block_read(self.target, lba, buf)
            .map_err(|s| IoError { status: s })
    }

    fn block_count(&self) -> u32 {
        self.blocks
    }
}
