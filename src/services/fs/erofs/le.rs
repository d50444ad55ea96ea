//! Bounds-checked little-endian field access: every on-disk structure is parsed through it, so
//! a short or truncated structure is an error instead of a panic.

use alloc::format;

use crate::services::fs::error::{FsError, FsResult};

/// Little-endian field access that fails instead of panicking on short input.
pub(crate) struct Fields<'a>(pub(crate) &'a [u8]);

impl<'a> Fields<'a> {
    pub(crate) fn bytes(&self, off: usize, len: usize) -> FsResult<&'a [u8]> {
        self.0
            .get(off..off.saturating_add(len))
            .ok_or_else(|| FsError::corrupt(format!("structure too short for field at {off}")))
    }
    /// `N` bytes at `off`, as an array for [`Whole`].
    pub(crate) fn array<const N: usize>(&self, off: usize) -> FsResult<&'a [u8; N]> {
        self.bytes(off, N)?
            .try_into()
            .map_err(|_| FsError::corrupt(format!("structure too short for field at {off}")))
    }
    pub(crate) fn u8(&self, off: usize) -> FsResult<u8> {
        Ok(self.bytes(off, 1)?[0])
    }
    pub(crate) fn u16(&self, off: usize) -> FsResult<u16> {
        let b = self.bytes(off, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub(crate) fn u32(&self, off: usize) -> FsResult<u32> {
        let b = self.bytes(off, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&self, off: usize) -> FsResult<u64> {
        let b = self.bytes(off, 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

/// Little-endian fields of a structure already read whole into an array (an inode, a dirent):
/// at the constant offsets inside it that callers pass, a read is a plain load with no error to
/// carry, which matters for a listing that decodes an inode per entry.
pub(crate) struct Whole<'a, const N: usize>(pub(crate) &'a [u8; N]);

impl<const N: usize> Whole<'_, N> {
    fn array<const W: usize>(&self, off: usize) -> [u8; W] {
        let mut out = [0u8; W];
        if let Some(b) = self.0.get(off..off.saturating_add(W)) {
            out.copy_from_slice(b);
        }
        out
    }
    pub(crate) fn u8(&self, off: usize) -> u8 {
        u8::from_le_bytes(self.array(off))
    }
    pub(crate) fn u16(&self, off: usize) -> u16 {
        u16::from_le_bytes(self.array(off))
    }
    pub(crate) fn u32(&self, off: usize) -> u32 {
        u32::from_le_bytes(self.array(off))
    }
    pub(crate) fn u64(&self, off: usize) -> u64 {
        u64::from_le_bytes(self.array(off))
    }
}
