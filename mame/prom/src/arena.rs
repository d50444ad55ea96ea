//! The kernel stand-in's globals and allocator (target only): the ABI's entries are plain
//! functions, so their state is global, and the loader needs `alloc`.

use crate::layout;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use indy::map::kseg0;

/// One-CPU, interrupt-free globals: the ABI's entries are plain functions, so their state is
/// global; nothing runs concurrently with them.
pub struct Global<T>(UnsafeCell<T>);
// SAFETY: the stand-in runs on one CPU with interrupts masked.
unsafe impl<T> Sync for Global<T> {}
impl<T> Global<T> {
    pub const fn new(v: T) -> Self {
        Global(UnsafeCell::new(v))
    }
    #[allow(clippy::mut_from_ref)]
    pub fn get(&self) -> &mut T {
        // SAFETY: single-threaded, and no caller holds the reference across another `get`.
        unsafe { &mut *self.0.get() }
    }
}

/// A bump allocator over `layout::ARENA`: the stand-in loads one image per boot, so it never
/// frees (a reset starts it over).
pub struct Arena {
    pub next: Global<u32>,
}

// SAFETY: hands out disjoint, aligned blocks of RAM the stand-in owns, or null when full.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let next = self.next.get();
        let base = kseg0(layout::ARENA.0);
        let cur = (*next).max(base);
        let Some(start) = cur
            .checked_add(l.align() as u32 - 1)
            .map(|a| a & !(l.align() as u32 - 1))
        else {
            return core::ptr::null_mut();
        };
        match start.checked_add(l.size() as u32) {
            Some(end) if end <= base + layout::ARENA.1 => {
                *next = end;
                start as *mut u8
            }
            _ => core::ptr::null_mut(),
        }
    }
    unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
}

#[global_allocator]
pub static ARENA: Arena = Arena {
    next: Global::new(0),
};
