//! Guest physical memory as devices and the kernel see it: big-endian words, physical addresses,
//! RAM only (a device's DMA never reaches another device's registers).

use std::fmt;

/// A DMA or kernel access outside RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemFault {
    pub phys: u64,
    pub len: usize,
}

impl fmt::Display for MemFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no RAM at physical {:#010x} (+{} bytes)",
            self.phys, self.len
        )
    }
}

impl std::error::Error for MemFault {}

/// Physical guest memory.
pub trait GuestMemory {
    fn read(&mut self, phys: u64, buf: &mut [u8]) -> Result<(), MemFault>;
    fn write(&mut self, phys: u64, data: &[u8]) -> Result<(), MemFault>;

    fn read_u32(&mut self, phys: u64) -> Result<u32, MemFault> {
        let mut b = [0u8; 4];
        self.read(phys, &mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    fn write_u32(&mut self, phys: u64, v: u32) -> Result<(), MemFault> {
        self.write(phys, &v.to_be_bytes())
    }

    fn read_u16(&mut self, phys: u64) -> Result<u16, MemFault> {
        let mut b = [0u8; 2];
        self.read(phys, &mut b)?;
        Ok(u16::from_be_bytes(b))
    }

    fn write_u16(&mut self, phys: u64, v: u16) -> Result<(), MemFault> {
        self.write(phys, &v.to_be_bytes())
    }
}

/// The RAM windows of the machine: `(phys base, length)`. An access must fall inside one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RamWindows {
    pub main: (u64, u64),
    pub alias: (u64, u64),
}

impl RamWindows {
    /// Translate an alias address to main RAM and check the whole range lies in RAM.
    pub fn check(&self, phys: u64, len: usize) -> Result<u64, MemFault> {
        let fault = MemFault { phys, len };
        let end = phys.checked_add(len as u64).ok_or(fault)?;
        let (mb, ml) = self.main;
        if phys >= mb && end <= mb + ml {
            return Ok(phys);
        }
        let (ab, al) = self.alias;
        if phys >= ab && end <= ab + al {
            return Ok(mb + (phys - ab));
        }
        Err(fault)
    }
}

/// Guest memory backed by a `Vec`, for device tests on the host.
#[derive(Debug, Clone)]
pub struct VecMemory {
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl VecMemory {
    pub fn new(base: u64, size: usize) -> VecMemory {
        VecMemory {
            base,
            bytes: vec![0; size],
        }
    }

    fn range(&self, phys: u64, len: usize) -> Result<std::ops::Range<usize>, MemFault> {
        let fault = MemFault { phys, len };
        let start = phys.checked_sub(self.base).ok_or(fault)? as usize;
        let end = start.checked_add(len).ok_or(fault)?;
        if end > self.bytes.len() {
            return Err(fault);
        }
        Ok(start..end)
    }
}

impl GuestMemory for VecMemory {
    fn read(&mut self, phys: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let r = self.range(phys, buf.len())?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }

    fn write(&mut self, phys: u64, data: &[u8]) -> Result<(), MemFault> {
        let r = self.range(phys, data.len())?;
        self.bytes[r].copy_from_slice(data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        let w = RamWindows {
            main: (0x0800_0000, 0x100_0000),
            alias: (0, 0x8_0000),
        };
        assert_eq!(w.check(0x0800_0010, 4), Ok(0x0800_0010));
        assert_eq!(w.check(0x10, 4), Ok(0x0800_0010));
        assert!(w.check(0x7_FFFE, 4).is_err());
        assert!(w.check(0x08FF_FFFE, 4).is_err());
        assert!(w.check(u64::MAX - 1, 4).is_err());
    }

    #[test]
    fn vec_memory_big_endian() {
        let mut m = VecMemory::new(0x1000, 16);
        m.write_u32(0x1004, 0x1234_5678).unwrap();
        assert_eq!(m.bytes[4..8], [0x12, 0x34, 0x56, 0x78]);
        assert_eq!(m.read_u16(0x1006).unwrap(), 0x5678);
        assert!(m.read_u32(0x100E).is_err());
        assert!(m.read_u32(0xFFC).is_err());
    }
}
