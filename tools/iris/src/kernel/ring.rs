//! The kernel's serial ring in guest memory: `size` bytes and a head word counting every byte
//! ever written, so byte `n` lives at `n % size` and a reader that remembers an absolute offset
//! can tell what it missed.

use crate::memory::{GuestMemory, MemFault};

#[derive(Debug, Clone)]
pub struct SerialRing {
    /// Physical address of the ring's first byte.
    pub ring_phys: u64,
    /// Physical address of the head word (big-endian u32).
    pub head_phys: u64,
    pub size: u32,
    /// Bytes ever written (mirrors the head word; wraps at 2^32 like it).
    pub head: u32,
}

impl SerialRing {
    pub fn new(ring_phys: u64, head_phys: u64, size: u32) -> SerialRing {
        SerialRing {
            ring_phys,
            head_phys,
            size,
            head: 0,
        }
    }

    /// Zero the ring and the head word (at kernel entry).
    pub fn clear(&mut self, mem: &mut dyn GuestMemory) -> Result<(), MemFault> {
        self.head = 0;
        mem.write(self.ring_phys, &vec![0u8; self.size as usize])?;
        mem.write_u32(self.head_phys, 0)
    }

    /// Append bytes, overwriting the oldest, then publish the new head.
    pub fn write(&mut self, mem: &mut dyn GuestMemory, data: &[u8]) -> Result<(), MemFault> {
        let size = self.size as usize;
        // Only the last `size` bytes survive; skip the rest but count them.
        let skip = data.len().saturating_sub(size);
        let mut head = self.head.wrapping_add(skip as u32);
        let mut rest = &data[skip..];
        while !rest.is_empty() {
            let at = (head % self.size) as usize;
            let n = rest.len().min(size - at);
            mem.write(self.ring_phys + at as u64, &rest[..n])?;
            head = head.wrapping_add(n as u32);
            rest = &rest[n..];
        }
        self.head = head;
        mem.write_u32(self.head_phys, head)
    }

    /// The ring's valid content in write order (at most `size` bytes), read from guest memory.
    pub fn contents(&self, mem: &mut dyn GuestMemory) -> Result<Vec<u8>, MemFault> {
        let head = mem.read_u32(self.head_phys)?;
        let mut buf = vec![0u8; self.size as usize];
        mem.read(self.ring_phys, &mut buf)?;
        let valid = head.min(self.size) as usize;
        let start = (head.wrapping_sub(valid as u32) % self.size) as usize;
        let mut out = Vec::with_capacity(valid);
        out.extend_from_slice(&buf[start..(start + valid).min(buf.len())]);
        if start + valid > buf.len() {
            out.extend_from_slice(&buf[..start + valid - buf.len()]);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::VecMemory;

    #[test]
    fn wraps_with_absolute_offsets() {
        let mut mem = VecMemory::new(0x1000, 64);
        let mut ring = SerialRing::new(0x1000, 0x1000 + 32, 16);
        ring.clear(&mut mem).unwrap();
        ring.write(&mut mem, b"0123456789").unwrap();
        assert_eq!(mem.read_u32(0x1020).unwrap(), 10);
        assert_eq!(ring.contents(&mut mem).unwrap(), b"0123456789");
        ring.write(&mut mem, b"abcdefghij").unwrap();
        assert_eq!(ring.head, 20);
        assert_eq!(mem.read_u32(0x1020).unwrap(), 20);
        // Byte n lives at n % 16: bytes 16..20 ("ghij") wrapped to the start.
        assert_eq!(&mem.bytes[0..4], b"ghij");
        assert_eq!(ring.contents(&mut mem).unwrap(), b"456789abcdefghij");
        // A write longer than the ring keeps only its tail and counts every byte.
        let long: Vec<u8> = (0..40u8).collect();
        ring.write(&mut mem, &long).unwrap();
        assert_eq!(ring.head, 60);
        assert_eq!(
            ring.contents(&mut mem).unwrap(),
            (24..40u8).collect::<Vec<_>>()
        );
        assert_eq!(mem.bytes[(59 % 16) as usize], 39);
    }

    #[test]
    fn head_wraps_at_u32() {
        let mut mem = VecMemory::new(0, 64);
        let mut ring = SerialRing::new(0, 32, 16);
        ring.head = u32::MAX - 2;
        ring.write(&mut mem, b"wxyz").unwrap();
        assert_eq!(ring.head, 1);
        assert_eq!(mem.read_u32(32).unwrap(), 1);
    }
}
