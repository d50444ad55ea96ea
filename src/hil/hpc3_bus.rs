//! The narrow interface between the Seeq driver and the machine: physical register access and
//! one DMA area. On the Indy it is `board::seeq_bus::Kseg1Bus` (volatile KSEG1 access plus the
//! kernel's cache operations); in host tests it is the iris rig's HPC3 model over fake RAM.

/// Register and DMA-memory access for the HPC3 Ethernet channel.
///
/// The DMA area is one block of memory the bus owns, at least as long as the driver asked for,
/// starting on a 128-byte boundary (a secondary cache line), so that no other data shares a cache
/// line with a DMA buffer. Offsets are bytes from its start; out-of-range accesses read 0 and
/// write nothing (the driver never makes them).
pub trait Hpc3Bus {
    /// Reads the 32-bit register at physical address `phys`.
    fn read32(&mut self, phys: u32) -> u32;
    /// Writes the 32-bit register at physical address `phys`.
    fn write32(&mut self, phys: u32, value: u32);
    /// Waits at least `us` microseconds.
    fn delay_us(&mut self, us: u32);

    /// Physical address of the DMA area's first byte (what descriptors point at).
    fn dma_phys(&self) -> u32;
    /// Length of the DMA area in bytes.
    fn dma_len(&self) -> usize;
    /// Uncached read of the big-endian word at `offset` (descriptors).
    fn dma_read32(&mut self, offset: usize) -> u32;
    /// Uncached write of the big-endian word at `offset` (descriptors).
    fn dma_write32(&mut self, offset: usize, value: u32);
    /// Uncached write of the big-endian halfword at `offset`: lets the CPU change a descriptor's
    /// flag half (bits 31:16) without racing the HPC, which rewrites only the other half.
    fn dma_write16(&mut self, offset: usize, value: u16);
    /// The CPU's view of `len` bytes at `offset`, or `None` when out of range. Call
    /// [`Hpc3Bus::dma_inval`] before reading what the device wrote and [`Hpc3Bus::dma_wback`]
    /// after writing what the device will read.
    fn dma_bytes(&mut self, offset: usize, len: usize) -> Option<&mut [u8]>;
    /// Writes the CPU's cached copy of a range back to memory (hand-over to the device).
    fn dma_wback(&mut self, offset: usize, len: usize);
    /// Drops the CPU's cached copy of a range (hand-over from the device).
    fn dma_inval(&mut self, offset: usize, len: usize);
}
