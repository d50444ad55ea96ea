//! Raw physical access: any RAM address, any register. It is what `mem.*`, `mmio.*` and
//! `dma.list` are for, and what no other code may do, so it is not part of the platform every
//! tool holds: the board mints one bus (a step it must vouch for) and hands it to the device
//! tools alone, which check each address against the board's map first.

/// Why an access was refused before touching the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmioError {
    /// The width is not 1, 2 or 4 bytes.
    Width,
    /// The address is not a multiple of the width.
    Align,
    /// The range does not lie in the physical space the CPU reaches unmapped (below 512 MiB).
    Range,
}

/// Whether one register access of `width` bytes at `phys` is well formed: 1, 2 or 4 bytes,
/// naturally aligned, below 512 MiB. Every [`RawBus`] refuses the others with this answer.
pub fn check_register(phys: u32, width: u32) -> Result<(), MmioError> {
    if !matches!(width, 1 | 2 | 4) {
        return Err(MmioError::Width);
    }
    if !phys.is_multiple_of(width) {
        return Err(MmioError::Align);
    }
    if phys >= indy::map::KSEG_LIMIT {
        return Err(MmioError::Range);
    }
    Ok(())
}

/// Physical memory and registers, one access at a time.
pub trait RawBus {
    /// Whether a `width`-byte read at physical `phys` answers: `Ok`, or the kernel's status
    /// (`E_NODEV` for a bus error, `E_INVAL`, `E_NOSYS` on ABI 10).
    fn bus_probe(&self, phys: u32, width: u32) -> Result<(), i32>;
    /// One register read of `width` bytes, zero-extended.
    fn mmio_read(&self, phys: u32, width: u32) -> Result<u32, MmioError>;
    /// One register write of `width` bytes (the low bits of `value`).
    fn mmio_write(&self, phys: u32, width: u32, value: u32) -> Result<(), MmioError>;
    /// Copies RAM at `phys` into `buf`.
    fn mem_read(&self, phys: u32, buf: &mut [u8]) -> Result<(), MmioError>;
    /// Copies `data` into RAM at `phys` and writes the data cache back over it.
    fn mem_write(&self, phys: u32, data: &[u8]) -> Result<(), MmioError>;
}
