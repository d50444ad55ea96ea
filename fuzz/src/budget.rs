//! The heap budget oracle: a counting allocator around the system one, so a case whose peak of
//! live heap bytes exceeds [`BUDGET`] fails like a crash. libFuzzer's own `-malloc_limit_mb`
//! only works with a sanitizer's allocator hooks, which the suite's `--sanitizer none` runs lack.
//!
//! Live bytes are counted process-wide; a case is measured from what was live when it started
//! (the fixture image and other one-time setup are not its cost).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most heap one case may hold at once beyond what was live before it: the module's 8 MiB test
/// heap. Host pointers are twice the Indy's, so a structure of pointers costs up to twice as
/// much here as on the machine; a case over this figure is over the test heap on either.
pub const BUDGET: usize = 8 << 20;

/// Bytes live now and the most live since the current case started.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counted.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; `new_size` is the caller's, checked by its contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Both blocks exist during the move: count the new one before the old one goes.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// Heap bytes live now (all threads).
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn grew(n: usize) {
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

/// Runs one case and fails it (a panic, which libFuzzer records as a crash) when its peak
/// heap went over [`BUDGET`]. Returns the case's result and its peak in bytes.
pub fn case<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = f();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    assert!(
        peak <= BUDGET,
        "heap budget: this case held {peak} bytes at its peak, over the {BUDGET}-byte budget"
    );
    (r, peak)
}
