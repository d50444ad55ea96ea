//! The block device under the filesystem: 512-byte sectors, exactly as the kernel ABI's
//! `block_read` delivers them, so the module implements it over the ABI and tests over memory.

use alloc::vec::Vec;

/// Bytes in one sector, the unit of [`BlockDevice::read`].
pub const SECTOR_SIZE: usize = 512;

/// A failed device read. `status` is the device's own (negative ABI) status code when it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoError {
    /// The device's status code (the ABI's negative status, or -5 for a generic I/O error).
    pub status: i32,
}

/// A read-only device of 512-byte sectors.
pub trait BlockDevice {
    /// Reads `count` sectors starting at sector `lba` into `buf`, which holds exactly
    /// `count * SECTOR_SIZE` bytes. Reads past the end are errors.
    fn read(&mut self, lba: u32, count: u32, buf: &mut [u8]) -> Result<(), IoError>;

    /// Number of sectors on the device.
    fn block_count(&self) -> u32;
}

/// A device over bytes in memory, for host tests, fuzzing and images already in RAM. A partial
/// last sector reads as if zero-padded.
pub struct RamDisk {
    data: Vec<u8>,
}

impl RamDisk {
    /// Wraps `data` as a device.
    pub fn new(data: Vec<u8>) -> Self {
        RamDisk { data }
    }

    /// The bytes behind the device.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }
}

impl BlockDevice for RamDisk {
    fn read(&mut self, lba: u32, count: u32, buf: &mut [u8]) -> Result<(), IoError> {
        const E_IO: IoError = IoError { status: -5 };
        let len = (count as usize).checked_mul(SECTOR_SIZE).ok_or(E_IO)?;
        if buf.len() != len
            || lba
                .checked_add(count)
                .is_none_or(|end| end > self.block_count())
        {
            return Err(E_IO);
        }
        let start = (lba as usize).checked_mul(SECTOR_SIZE).ok_or(E_IO)?;
        let avail = self.data.len().saturating_sub(start).min(len);
        let src = self.data.get(start..start + avail).ok_or(E_IO)?;
        let (head, tail) = buf.split_at_mut(avail);
        head.copy_from_slice(src);
        tail.fill(0);
        Ok(())
    }

    fn block_count(&self) -> u32 {
        let sectors = self.data.len().div_ceil(SECTOR_SIZE);
        u32::try_from(sectors).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_disk_pads_the_last_sector_and_refuses_reads_past_the_end() {
        let mut d = RamDisk::new((0..700u32).map(|i| i as u8).collect());
        assert_eq!(d.block_count(), 2);
        let mut buf = [0xAAu8; 1024];
        d.read(0, 2, &mut buf).unwrap();
        assert_eq!(buf[699], (699u32 & 0xff) as u8);
        assert!(buf[700..].iter().all(|&b| b == 0));
        assert!(d.read(1, 2, &mut buf).is_err());
        assert!(d.read(u32::MAX, 1, &mut buf[..512]).is_err());
        assert!(d.read(0, 1, &mut buf).is_err(), "buffer length must match");
    }
}
