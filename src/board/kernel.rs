//! Safe calls into the kernel through the ABI table. The table outlives the module (the kernel
//! keeps it until `exit`), so the binding holds a `'static` reference.

use crate::board::mmio;
use crate::hil::debug::{Contexts, CtxState};
use crate::hil::platform::{Console, Machine, Power};
use crate::hil::raw_bus::{MmioError, RawBus};
use alloc::string::String;
use alloc::vec::Vec;
use core::mem::offset_of;
use indy::abi::{
    AbiTable, BootInfo, CTX_MEM_MAX, CtxFrame, CtxInfo, CtxStop, FLIGHT_REGION_SIZE, ImageInfo,
    IrqInfo, MachineStatus, ProcInfo, SERIAL_RING_SIZE, status,
};

/// Longest environment value the module reads; longer values are refused, not cut.
pub const ENV_VALUE_MAX: usize = 1024;

/// The kernel, as the module sees it.
#[derive(Clone, Copy)]
pub struct Kernel {
    table: &'static AbiTable,
}

// SAFETY: the module runs on one CPU and the kernel calls it from one thread; the table is
// immutable after `init`.
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

impl Kernel {
    /// Binds to a table the kernel handed to `init`, checked for version and size by the caller.
    ///
    /// # Safety
    /// `table` must point to a valid ABI table that lives until `exit`.
    pub unsafe fn new(table: &'static AbiTable) -> Self {
        Kernel { table }
    }

    /// Writes bytes to the console and the serial ring.
    pub fn console_write(&self, bytes: &[u8]) {
        // An empty slice's pointer is dangling (0x1 for bytes), which the kernel rightly
        // refuses; formatting writes empty pieces (an empty `{}`), so they stop here.
        if bytes.is_empty() {
            return;
        }
        // SAFETY: the pointer and length describe a live slice.
        unsafe { (self.table.console_write)(bytes.as_ptr(), bytes.len()) };
    }

    /// Writes bytes to the serial line and the serial ring only, never to a console the kernel
    /// draws on the screen; `Err(E_NOSYS)` on a kernel before ABI 14, which has no such entry.
    pub fn serial_write(&self, bytes: &[u8]) -> Result<(), i32> {
        if !self.table.has(offset_of!(AbiTable, serial_write) + 4) {
            return Err(status::E_NOSYS);
        }
        if !bytes.is_empty() {
            // SAFETY: the entry exists (checked above); the pointer and length describe a live
            // slice.
            unsafe { (self.table.serial_write)(bytes.as_ptr(), bytes.len()) };
        }
        Ok(())
    }

    /// An environment variable's value, or `None` when absent, not UTF-8 or over
    /// [`ENV_VALUE_MAX`] bytes.
    pub fn env(&self, key: &str) -> Option<String> {
        let mut buf = [0u8; ENV_VALUE_MAX];
        // SAFETY: key and buf are live slices of the given lengths.
        let n =
            unsafe { (self.table.env_get)(key.as_ptr(), key.len(), buf.as_mut_ptr(), buf.len()) };
        let n = usize::try_from(n).ok()?;
        let value = buf.get(..n)?;
        core::str::from_utf8(value).ok().map(String::from)
    }

    /// Monotonic milliseconds since boot.
    pub fn clock_ms(&self) -> u64 {
        // SAFETY: a plain call with no arguments.
        unsafe { (self.table.clock_ms)() }
    }

    /// A copy of the machine status block.
    pub fn machine_status(&self) -> MachineStatus {
        // SAFETY: the kernel keeps the block valid and aligned; read it whole, volatile, since
        // the kernel updates it between calls.
        unsafe { core::ptr::read_volatile(self.table.machine_status) }
    }

    /// Whether the console's last byte ended a line (or nothing was written yet): the
    /// module's lines start on a line of their own, whatever a client left open before them.
    pub fn at_line_start(&self) -> bool {
        let head = self.serial_head();
        let size = self.table.serial_ring_size;
        if head == 0 || size == 0 {
            return true;
        }
        let at = ((head - 1) % size) as usize;
        // SAFETY: `at` is inside the kernel's ring of `size` bytes, valid for the module's
        // lifetime; read volatile, one byte, because the kernel writes it between calls.
        let last = unsafe { core::ptr::read_volatile(self.table.serial_ring.add(at)) };
        last == b'\n'
    }

    /// The serial ring's absolute write offset.
    pub fn serial_head(&self) -> u32 {
        // SAFETY: the head word is the kernel's, valid and aligned for the module's lifetime;
        // read volatile because the kernel advances it between calls.
        unsafe { core::ptr::read_volatile(self.table.serial_head) }
    }

    /// The serial ring's size in bytes.
    pub fn serial_ring_size(&self) -> usize {
        self.table.serial_ring_size as usize
    }

    /// Copies the serial ring's bytes from index `at` into `out`, going on at index 0 past
    /// the ring's end; what `out` holds beyond the ring's size is left as it is.
    pub fn serial_ring_copy(&self, at: usize, out: &mut [u8]) {
        let size = self.serial_ring_size();
        let at = at.min(size);
        let first = out.len().min(size - at);
        let wrapped = out.len().saturating_sub(first).min(at);
        // SAFETY: `at + first <= size` and `wrapped <= at <= size`: both runs are inside the
        // `size` bytes the kernel owns at `serial_ring` for the module's lifetime, and inside
        // `out`. The kernel may write while they are copied, so no reference is ever made to
        // them: the bytes go through a raw pointer into the module's own buffer, and a byte
        // the kernel overwrote during the copy is dropped by the reader
        // (`services::serial_ring`), which compares the head before and after.
        unsafe {
            let ring = self.table.serial_ring;
            core::ptr::copy_nonoverlapping(ring.add(at), out.as_mut_ptr(), first);
            core::ptr::copy_nonoverlapping(ring, out.as_mut_ptr().add(first), wrapped);
        }
    }

    /// Reads `buf.len() / 512` blocks from SCSI `target` at `lba`. Errors are the kernel's
    /// negative status codes.
    pub fn block_read(&self, target: u32, lba: u32, buf: &mut [u8]) -> Result<(), i32> {
        let count = (buf.len() / indy::abi::BLOCK_SIZE as usize) as u32;
        // SAFETY: buf is a live, writable slice holding `count` blocks.
        let r = unsafe { (self.table.block_read)(target, lba, count, buf.as_mut_ptr()) };
        if r < 0 { Err(r) } else { Ok(()) }
    }

    /// Size of SCSI `target` in blocks.
    pub fn block_count(&self, target: u32) -> Result<u32, i32> {
        // SAFETY: a plain call.
        let r = unsafe { (self.table.block_count)(target) };
        u32::try_from(r).map_err(|_| r)
    }

    /// Writes back the data cache over `bytes` (before a device reads them).
    // The kernel only does cache maintenance on the range, which is harmless for any address.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn cache_wback(&self, bytes: *const u8, len: usize) {
        // SAFETY: cache maintenance on any range is harmless.
        unsafe { (self.table.cache_wback)(bytes, len) }
    }

    /// Invalidates the data cache over `bytes` (before reading what a device wrote).
    ///
    /// # Safety
    /// Dirty lines in the range are discarded, so writes the CPU has not written back are lost:
    /// `bytes..bytes + len` must be a DMA buffer the caller owns, cache-line aligned, with no
    /// other data in its lines (the NIC driver's area).
    pub unsafe fn cache_inval(&self, bytes: *const u8, len: usize) {
        // SAFETY: the caller's contract.
        unsafe { (self.table.cache_inval)(bytes, len) }
    }

    /// The physical address of a kernel virtual address.
    // A pure translation: the kernel never dereferences the address.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn virt_to_phys(&self, addr: *const u8) -> u32 {
        // SAFETY: a pure translation.
        unsafe { (self.table.virt_to_phys)(addr) }
    }

    /// The heap region the kernel gives the module.
    pub fn heap_region(&self) -> (*mut u8, usize) {
        (self.table.heap_base, self.table.heap_size as usize)
    }

    /// Resets the machine.
    pub fn reset(&self) {
        // SAFETY: a plain call; on real hardware it does not return.
        unsafe { (self.table.reset)() }
    }

    /// Powers the machine off.
    pub fn poweroff(&self) {
        // SAFETY: as above.
        unsafe { (self.table.poweroff)() }
    }

    /// Feeds the memory controller's watchdog.
    pub fn watchdog_kick(&self) {
        // SAFETY: a plain call.
        unsafe { (self.table.watchdog_kick)() }
    }

    /// The kernel's process list, at most `max` entries.
    pub fn processes(&self, max: usize) -> Vec<ProcInfo> {
        let mut list = Vec::new();
        if list.try_reserve_exact(max).is_err() {
            return list;
        }
        list.resize(max, ProcInfo::default());
        // SAFETY: the buffer holds `max` entries.
        let n = unsafe { (self.table.proc_list)(list.as_mut_ptr(), max) };
        list.truncate(usize::try_from(n).unwrap_or(0).min(max));
        list
    }

    /// Queues keystrokes on the console input; returns how many were taken.
    pub fn console_input(&self, bytes: &[u8]) -> usize {
        // Nothing to queue, and an empty slice's pointer is dangling (see `console_write`).
        if bytes.is_empty() {
            return 0;
        }
        // SAFETY: a live slice.
        let n = unsafe { (self.table.console_input)(bytes.as_ptr(), bytes.len()) };
        usize::try_from(n).unwrap_or(0)
    }

    /// The kernel's interrupt sources, at most `max`; `Err(E_NOSYS)` on an ABI 10 kernel,
    /// `Err(E_NOMEM)` when the list does not fit the heap.
    pub fn irqs(&self, max: usize) -> Result<Vec<IrqInfo>, i32> {
        if !self.table.has(offset_of!(AbiTable, irq_list) + 4) {
            return Err(status::E_NOSYS);
        }
        let mut list = Vec::new();
        list.try_reserve_exact(max).map_err(|_| status::E_NOMEM)?;
        list.resize(max, IrqInfo::default());
        // SAFETY: the entry exists (checked above) and the buffer holds `max` entries.
        let n = unsafe { (self.table.irq_list)(list.as_mut_ptr(), max) };
        if n < 0 {
            return Err(n);
        }
        list.truncate((n as usize).min(max));
        Ok(list)
    }

    /// The kernel's image info block, or `None` on a kernel before ABI 12 (or a null pointer).
    pub fn image_info(&self) -> Option<ImageInfo> {
        if !self.table.has(offset_of!(AbiTable, image_info) + 4) || self.table.image_info.is_null()
        {
            return None;
        }
        // SAFETY: the entry exists (checked above) and points to the kernel's block, valid and
        // aligned for the module's lifetime. The kernel writes it before `init` and not again
        // while the module runs, so a plain copy will do (a volatile one is byte by byte).
        Some(unsafe { core::ptr::read(self.table.image_info) })
    }

    /// The kernel's boot info block, or `None` on a kernel before ABI 13 (or a null pointer).
    pub fn boot_info(&self) -> Option<BootInfo> {
        if !self.table.has(offset_of!(AbiTable, boot_info) + 4) || self.table.boot_info.is_null() {
            return None;
        }
        // SAFETY: the entry exists (checked above) and points to the kernel's block, valid and
        // aligned for the module's lifetime, written before `init` and not changed after.
        Some(unsafe { core::ptr::read(self.table.boot_info) })
    }

    /// A copy of `len` bytes the kernel kept from the previous boot at `ptr` (its serial ring
    /// or flight region), at most `max`; `None` for a null pointer, nothing kept, or no heap.
    pub fn previous_copy(&self, ptr: *const u8, len: u32, max: u32) -> Option<Vec<u8>> {
        if ptr.is_null() || len == 0 {
            return None;
        }
        let n = len.min(max) as usize;
        let mut copy = Vec::new();
        copy.try_reserve_exact(n).ok()?;
        // SAFETY: the kernel keeps `len` bytes at `ptr` for the module's lifetime (`boot_info`'s
        // contract) and does not write them while the module runs; `n <= len`.
        unsafe {
            core::ptr::copy_nonoverlapping(ptr, copy.as_mut_ptr(), n);
            copy.set_len(n);
        }
        Some(copy)
    }

    /// Bounds on what the module copies of the previous boot: the ABI's sizes.
    pub const PREVIOUS_RING_MAX: u32 = SERIAL_RING_SIZE;
    pub const PREVIOUS_FLIGHT_MAX: u32 = FLIGHT_REGION_SIZE;

    /// Whether a `width`-byte read at `phys` answers (`E_NODEV`: bus error); `Err(E_NOSYS)` on
    /// an ABI 10 kernel.
    pub fn bus_probe(&self, phys: u32, width: u32) -> Result<(), i32> {
        if !self.table.has(offset_of!(AbiTable, bus_probe) + 4) {
            return Err(status::E_NOSYS);
        }
        // SAFETY: the entry exists; the kernel probes under its bus-error handler.
        let r = unsafe { (self.table.bus_probe)(phys, width) };
        if r < 0 { Err(r) } else { Ok(()) }
    }
}

impl Kernel {
    /// Whether the kernel's table has ABI 15's contexts (its last entry, `ctx_mem_write`).
    fn has_contexts(&self) -> Result<(), i32> {
        if self.table.has(offset_of!(AbiTable, ctx_mem_write) + 4)
            && !self.table.ctx_events.is_null()
        {
            Ok(())
        } else {
            Err(status::E_NOSYS)
        }
    }
}

/// A kernel status as a result: negative is an error, the rest a value.
fn checked(r: i32) -> Result<i32, i32> {
    if r < 0 { Err(r) } else { Ok(r) }
}

impl Contexts for Kernel {
    fn events(&self) -> Result<u32, i32> {
        self.has_contexts()?;
        // SAFETY: the entry exists (checked above) and points to the kernel's word, valid and
        // aligned for the module's lifetime; volatile, since the kernel bumps it between calls.
        Ok(unsafe { core::ptr::read_volatile(self.table.ctx_events) })
    }

    fn list(&self, max: usize) -> Result<Vec<CtxInfo>, i32> {
        self.has_contexts()?;
        let mut list = Vec::new();
        list.try_reserve_exact(max).map_err(|_| status::E_NOMEM)?;
        list.resize(max, CtxInfo::default());
        // SAFETY: the entry exists and the buffer holds `max` entries.
        let n = checked(unsafe { (self.table.ctx_list)(list.as_mut_ptr(), max) })?;
        list.truncate((n as usize).min(max));
        Ok(list)
    }

    fn stop(&self, id: u32) -> Result<(), i32> {
        self.has_contexts()?;
        // SAFETY: the entry exists; a plain call.
        checked(unsafe { (self.table.ctx_stop)(id) }).map(|_| ())
    }

    fn resume(&self, id: u32) -> Result<(), i32> {
        self.has_contexts()?;
        // SAFETY: as above.
        checked(unsafe { (self.table.ctx_resume)(id) }).map(|_| ())
    }

    fn state(&self, id: u32) -> Result<CtxState, i32> {
        self.has_contexts()?;
        let mut stop = CtxStop::default();
        // SAFETY: the entry exists and `stop` is a live, writable `CtxStop`.
        match checked(unsafe { (self.table.ctx_stop_info)(id, &mut stop) })? {
            0 => Ok(CtxState::Running),
            2 => Ok(CtxState::Exited(stop)),
            _ => Ok(CtxState::Stopped(stop)),
        }
    }

    fn regs(&self, id: u32) -> Result<CtxFrame, i32> {
        self.has_contexts()?;
        let mut frame = CtxFrame::default();
        // SAFETY: the entry exists and `frame` is a live, writable frame.
        checked(unsafe { (self.table.ctx_regs_get)(id, &mut frame) })?;
        Ok(frame)
    }

    fn set_regs(&self, id: u32, frame: &CtxFrame) -> Result<(), i32> {
        self.has_contexts()?;
        // SAFETY: the entry exists and `frame` is a live frame.
        checked(unsafe { (self.table.ctx_regs_set)(id, frame) }).map(|_| ())
    }

    fn read(&self, id: u32, va: u32, buf: &mut [u8]) -> Result<(), i32> {
        self.has_contexts()?;
        if buf.len() > CTX_MEM_MAX {
            return Err(status::E_RANGE);
        }
        if buf.is_empty() {
            return Ok(());
        }
        // SAFETY: the entry exists; `buf` is a live, writable slice of that length (the
        // kernel copies from the context's window, which it checks, into it).
        let n = checked(unsafe { (self.table.ctx_mem_read)(id, va, buf.as_mut_ptr(), buf.len()) })?;
        if n as usize == buf.len() {
            Ok(())
        } else {
            Err(status::E_IO)
        }
    }

    fn write(&self, id: u32, va: u32, data: &[u8]) -> Result<(), i32> {
        self.has_contexts()?;
        if data.len() > CTX_MEM_MAX {
            return Err(status::E_RANGE);
        }
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the entry exists; `data` is a live slice of that length.
        let n = checked(unsafe { (self.table.ctx_mem_write)(id, va, data.as_ptr(), data.len()) })?;
        if n as usize == data.len() {
            Ok(())
        } else {
            Err(status::E_IO)
        }
    }
}

impl Machine for Kernel {
    fn clock_ms(&self) -> u64 {
        Kernel::clock_ms(self)
    }
    fn machine_status(&self) -> MachineStatus {
        Kernel::machine_status(self)
    }
    fn processes(&self, max: usize) -> Vec<ProcInfo> {
        Kernel::processes(self, max)
    }
    fn irqs(&self, max: usize) -> Result<Vec<IrqInfo>, i32> {
        Kernel::irqs(self, max)
    }
    fn image_info(&self) -> Option<ImageInfo> {
        Kernel::image_info(self)
    }
}

impl Console for Kernel {
    fn console_write(&self, bytes: &[u8]) {
        Kernel::console_write(self, bytes)
    }
    fn serial_ring_size(&self) -> usize {
        Kernel::serial_ring_size(self)
    }
    fn serial_ring_copy(&self, at: usize, out: &mut [u8]) {
        Kernel::serial_ring_copy(self, at, out)
    }
    fn serial_head(&self) -> u32 {
        Kernel::serial_head(self)
    }
    fn console_input(&self, bytes: &[u8]) -> usize {
        Kernel::console_input(self, bytes)
    }
}

impl Power for Kernel {
    fn reset(&self) {
        Kernel::reset(self)
    }
    fn poweroff(&self) {
        Kernel::poweroff(self)
    }
}

/// The kernel's raw bus: physical RAM through KSEG0, registers through KSEG1. Whoever holds one
/// can write anywhere, so it exists only where [`KernelRawBus::mint`] is called: the module's
/// init, which hands it to the device tools.
pub struct KernelRawBus(Kernel);

impl KernelRawBus {
    /// # Safety
    /// The holder may read and write any physical RAM and register below 512 MiB; the caller
    /// gives it only to code that checks each access against the board's map first and is
    /// documented as able to hang or corrupt the machine (the device tools).
    pub unsafe fn mint(kernel: Kernel) -> Self {
        KernelRawBus(kernel)
    }
}

impl RawBus for KernelRawBus {
    fn bus_probe(&self, phys: u32, width: u32) -> Result<(), i32> {
        self.0.bus_probe(phys, width)
    }
    fn mmio_read(&self, phys: u32, width: u32) -> Result<u32, MmioError> {
        // SAFETY: the contract of `mint`: the holder checks the address against the Indy's
        // windows (the full-root `mmio.*` tools are documented as able to hang the machine).
        unsafe { mmio::read(phys, width) }
    }
    fn mmio_write(&self, phys: u32, width: u32, value: u32) -> Result<(), MmioError> {
        // SAFETY: as above.
        unsafe { mmio::write(phys, width, value) }
    }
    fn mem_read(&self, phys: u32, buf: &mut [u8]) -> Result<(), MmioError> {
        // SAFETY: the contract of `mint`: the holder checks the range against installed RAM.
        unsafe { mmio::copy_from_ram(phys, buf) }
    }
    fn mem_write(&self, phys: u32, data: &[u8]) -> Result<(), MmioError> {
        // SAFETY: as above; `mem.write` is documented as able to corrupt the kernel.
        let va = unsafe { mmio::copy_to_ram(phys, data) }?;
        self.0.cache_wback(va, data.len());
        Ok(())
    }
}
