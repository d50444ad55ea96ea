//! The module's heap: the region the kernel hands over in the ABI table, managed by talc (a
//! binned allocator: allocation cost does not grow with the number of free blocks, which a
//! first-fit list allocator's does — measured in guest instructions per request).
//!
//! Every large buffer in the module is bounded and allocated fallibly where it can be, so an
//! exhausted heap becomes an `E_NOMEM` answer rather than a crash. The allocator keeps the
//! current and peak bytes in use, which `status` and the benchmarks report.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};
use talc::TalcLock;
use talc::source::Manual;

type Heap = TalcLock<spin::Mutex<()>, Manual>;

struct CountingHeap {
    heap: Heap,
    size: AtomicUsize,
    used: AtomicUsize,
    peak: AtomicUsize,
}

// SAFETY: delegates to talc, which is a correct allocator; the counters are advisory.
unsafe impl GlobalAlloc for CountingHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { self.heap.alloc(layout) };
        if !p.is_null() {
            let used = self.used.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            self.peak.fetch_max(used, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.heap.dealloc(ptr, layout) };
        self.used.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static HEAP: CountingHeap = CountingHeap {
    heap: TalcLock::new(Manual),
    size: AtomicUsize::new(0),
    used: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};

/// Gives the allocator the kernel's region.
///
/// # Safety
/// Called once, before any allocation, with a region the module owns until `exit`.
pub unsafe fn init(base: *mut u8, size: usize) {
    // SAFETY: per the function's contract.
    if unsafe { HEAP.heap.lock().claim(base, size) }.is_some() {
        HEAP.size.store(size, Ordering::Relaxed);
    }
}

/// Heap figures in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub used: usize,
    pub peak: usize,
    pub size: usize,
}

/// Current use, peak use since boot and the region's size.
pub fn usage() -> Usage {
    Usage {
        used: HEAP.used.load(Ordering::Relaxed),
        peak: HEAP.peak.load(Ordering::Relaxed),
        size: HEAP.size.load(Ordering::Relaxed),
    }
}
