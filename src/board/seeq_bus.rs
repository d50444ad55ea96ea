//! The real [`Hpc3Bus`]: registers and descriptors through uncached KSEG1, packet buffers
//! through cached KSEG0 with the kernel's cache write-back/invalidate at each hand-over. The Seeq
//! driver's register logic runs over it on the Indy and over the rig's model in host tests.

use crate::drivers::seeq::DMA_ALIGN;
use crate::hil::hpc3_bus::Hpc3Bus;
use alloc::alloc::{Layout, alloc_zeroed, dealloc};
use core::ptr::NonNull;
use indy::map::{HPC3_ENET, KSEG_LIMIT, SEEQ, kseg1};
use indy::regs::hpc3::EPIO_CFG;

/// The uncached address of the register at `phys` if it is one of the Ethernet channel's or the
/// Seeq's (`HPC3_ENET`, `SEEQ`): the only physical addresses [`Hpc3Bus::read32`] and
/// [`Hpc3Bus::write32`] reach. Others read 0 and write nothing, like an out-of-range DMA offset.
fn register(phys: u32) -> Option<usize> {
    let ours = HPC3_ENET.holds(phys, 4) || SEEQ.holds(phys, 4);
    (ours && phys.is_multiple_of(4)).then_some(kseg1(phys) as usize)
}

/// Uncached HPC3 reads per microsecond of delay: each such read takes well over 100 ns on the
/// Indy (and is one MMIO callback in the rig), so this always waits at least as long as asked.
const READS_PER_US: u32 = 10;

/// The kernel services the bus needs: cache maintenance and address translation.
pub trait CacheOps {
    /// Writes back cached data over `len` bytes at `addr` (before a device reads them).
    fn wback(&self, addr: *const u8, len: usize);
    /// Invalidates cached data over `len` bytes at `addr` (before reading what a device wrote).
    ///
    /// # Safety
    /// Dirty lines are discarded: the range must be DMA memory the caller owns, cache-line
    /// aligned, sharing its lines with nothing else.
    unsafe fn inval(&self, addr: *const u8, len: usize);
    /// Physical address of kernel virtual address `addr`.
    fn virt_to_phys(&self, addr: *const u8) -> u32;
}

#[cfg(target_os = "none")]
impl CacheOps for crate::board::kernel::Kernel {
    fn wback(&self, addr: *const u8, len: usize) {
        self.cache_wback(addr, len);
    }
    unsafe fn inval(&self, addr: *const u8, len: usize) {
        // SAFETY: the caller's contract is the kernel call's.
        unsafe { self.cache_inval(addr, len) };
    }
    fn virt_to_phys(&self, addr: *const u8) -> u32 {
        crate::board::kernel::Kernel::virt_to_phys(self, addr)
    }
}

/// Why the DMA area could not be set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KsegError {
    /// The heap could not provide the area.
    NoMemory,
    /// The area's physical address is not reachable through KSEG1 or not cache-line aligned.
    NotKseg1,
}

/// Volatile KSEG1 register access and a heap-allocated DMA area.
pub struct Kseg1Bus<C: CacheOps> {
    ops: C,
    virt: NonNull<u8>,
    phys: u32,
    len: usize,
    layout: Layout,
}

// SAFETY: the bus owns its DMA area exclusively; the module runs on one CPU, and moving the bus
// between contexts moves that ownership with it.
unsafe impl<C: CacheOps + Send> Send for Kseg1Bus<C> {}

impl<C: CacheOps> Kseg1Bus<C> {
    /// Allocates a zeroed DMA area of at least `len` bytes on a cache-line boundary and pushes
    /// it out of the cache, so descriptors (accessed only through KSEG1 from then on) are never
    /// overwritten by a stale line being evicted.
    ///
    /// # Safety
    /// The Indy's HPC3 and Seeq answer at their fixed addresses, and nothing else
    /// drives its Ethernet channel or the Seeq while this bus is in use.
    pub unsafe fn new(ops: C, len: usize) -> Result<Self, KsegError> {
        let size = len.max(1).next_multiple_of(DMA_ALIGN);
        let layout = Layout::from_size_align(size, DMA_ALIGN).map_err(|_| KsegError::NoMemory)?;
        // SAFETY: the layout has a non-zero size.
        let virt = NonNull::new(unsafe { alloc_zeroed(layout) }).ok_or(KsegError::NoMemory)?;
        let phys = ops.virt_to_phys(virt.as_ptr());
        let end = u64::from(phys) + size as u64;
        if !phys.is_multiple_of(DMA_ALIGN as u32) || end > u64::from(KSEG_LIMIT) {
            // SAFETY: allocated above with this layout.
            unsafe { dealloc(virt.as_ptr(), layout) };
            return Err(KsegError::NotKseg1);
        }
        ops.wback(virt.as_ptr(), size);
        // SAFETY: the area was just allocated for DMA, cache-line aligned and rounded to whole
        // lines; it holds nothing yet.
        unsafe { ops.inval(virt.as_ptr(), size) };
        Ok(Kseg1Bus {
            ops,
            virt,
            phys,
            len: size,
            layout,
        })
    }

    /// Uncached address of `offset` in the area, if a `size`-byte access there is in range and
    /// naturally aligned.
    #[inline(always)]
    fn uncached(&self, offset: usize, size: usize) -> Option<usize> {
        let end = offset.checked_add(size)?;
        (end <= self.len && offset.is_multiple_of(size))
            .then(|| kseg1(self.phys.wrapping_add(offset as u32)) as usize)
    }

    #[inline(always)]
    fn cached(&self, offset: usize, len: usize) -> Option<*mut u8> {
        let end = offset.checked_add(len)?;
        // SAFETY: offset + len is within the allocation.
        (end <= self.len).then(|| unsafe { self.virt.as_ptr().add(offset) })
    }
}

impl<C: CacheOps> Drop for Kseg1Bus<C> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the driver stopped the DMA channels before
        // dropping its bus.
        unsafe { dealloc(self.virt.as_ptr(), self.layout) };
    }
}

impl<C: CacheOps> Hpc3Bus for Kseg1Bus<C> {
    fn read32(&mut self, phys: u32) -> u32 {
        match register(phys) {
            // SAFETY: a word-aligned address inside the HPC3's window, which `new`'s contract
            // says answers; KSEG1 maps it uncached.
            Some(a) => unsafe { core::ptr::read_volatile(a as *const u32) },
            None => 0,
        }
    }

    fn write32(&mut self, phys: u32, value: u32) {
        if let Some(a) = register(phys) {
            // SAFETY: as in `read32`.
            unsafe { core::ptr::write_volatile(a as *mut u32, value) }
        }
    }

    fn delay_us(&mut self, us: u32) {
        for _ in 0..us.saturating_mul(READS_PER_US) {
            self.read32(EPIO_CFG);
        }
    }

    fn dma_phys(&self) -> u32 {
        self.phys
    }

    fn dma_len(&self) -> usize {
        self.len
    }

    fn dma_read32(&mut self, offset: usize) -> u32 {
        match self.uncached(offset, 4) {
            // SAFETY: in range and aligned; the area is ours and below 512 MiB.
            Some(a) => unsafe { core::ptr::read_volatile(a as *const u32) },
            None => 0,
        }
    }

    fn dma_write32(&mut self, offset: usize, value: u32) {
        if let Some(a) = self.uncached(offset, 4) {
            // SAFETY: as in `dma_read32`.
            unsafe { core::ptr::write_volatile(a as *mut u32, value) }
        }
    }

    fn dma_write16(&mut self, offset: usize, value: u16) {
        if let Some(a) = self.uncached(offset, 2) {
            // SAFETY: as in `dma_read32`.
            unsafe { core::ptr::write_volatile(a as *mut u16, value) }
        }
    }

    fn dma_bytes(&mut self, offset: usize, len: usize) -> Option<&mut [u8]> {
        let p = self.cached(offset, len)?;
        // SAFETY: in range of the allocation, borrowed mutably through `self`.
        Some(unsafe { core::slice::from_raw_parts_mut(p, len) })
    }

    fn dma_wback(&mut self, offset: usize, len: usize) {
        if let Some(p) = self.cached(offset, len) {
            self.ops.wback(p, len);
        }
    }

    fn dma_inval(&mut self, offset: usize, len: usize) {
        if let Some(p) = self.cached(offset, len) {
            // SAFETY: a range of this bus's own DMA area, which shares no cache line with other
            // data (allocated cache-line aligned and rounded to whole lines).
            unsafe { self.ops.inval(p, len) };
        }
    }
}
