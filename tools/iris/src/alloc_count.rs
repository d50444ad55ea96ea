//! Heap allocation counts: code hooks on the first instruction of the module's global
//! allocator's `alloc` and `dealloc`, found by name in the image's symbols. The bench reports
//! allocations and bytes per request from them, exactly and independently of the profiler; a
//! hook on two addresses costs nothing elsewhere, so counting stays on once started.

use std::cell::Cell;
use std::rc::Rc;

use unicorn_engine::RegisterMIPS;

use crate::cpu::{Uc, uc_err};
use crate::error::RigError;
use crate::loader::LoadedImage;
use crate::memmap::sext;

/// The trait method names of the global allocator, as `rustc_demangle` prints them.
const ALLOC_SUFFIX: &str = " as core::alloc::global::GlobalAlloc>::alloc";
const DEALLOC_SUFFIX: &str = " as core::alloc::global::GlobalAlloc>::dealloc";
/// Only the module's own allocator (its crate) counts: a library's `GlobalAlloc` impl that it
/// wraps (talc's) may also have a symbol of its own.
const MODULE_PREFIX: &str = "<irix7_mcp::";

/// Allocator calls since counting started. `realloc` and `alloc_zeroed` go through `alloc` and
/// `dealloc` (the default methods), so a growth is one allocation and one free.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocCounts {
    pub allocs: u64,
    /// Bytes asked for (the layouts' sizes, before the allocator rounds them).
    pub bytes: u64,
    pub frees: u64,
    pub freed_bytes: u64,
    /// The most `bytes - freed_bytes` reached since the last [`AllocCounts::mark`] (or since
    /// counting started): with the value at the mark, how far above it a piece of work took
    /// the heap, which the module's own peak counter cannot say once boot went higher.
    pub live_peak: i64,
}

impl AllocCounts {
    /// Bytes asked for and not freed since counting started (negative when more was freed
    /// than allocated since: memory from before).
    pub fn live(&self) -> i64 {
        self.bytes as i64 - self.freed_bytes as i64
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &AllocCounts) -> AllocCounts {
        AllocCounts {
            allocs: self.allocs - earlier.allocs,
            bytes: self.bytes - earlier.bytes,
            frees: self.frees - earlier.frees,
            freed_bytes: self.freed_bytes - earlier.freed_bytes,
            live_peak: self.live_peak - earlier.live(),
        }
    }
}

/// The guest addresses of the allocator's `alloc` and `dealloc`: the one function of the
/// module's crate with each name. Fails when there is not exactly one (a renamed or inlined
/// allocator must not silently count nothing).
pub fn allocator_entries(functions: &[(u32, u32, String)]) -> Result<(u32, u32), String> {
    let find = |suffix: &str| {
        let hits: Vec<(u32, String)> = functions
            .iter()
            .map(|(a, _, n)| (*a, format!("{:#}", rustc_demangle::demangle(n))))
            .filter(|(_, n)| n.starts_with(MODULE_PREFIX) && n.ends_with(suffix))
            .collect();
        match hits.as_slice() {
            [(a, _)] => Ok(*a),
            [] => Err(format!(
                "no `{MODULE_PREFIX}…{suffix}` in the image's symbols"
            )),
            _ => Err(format!(
                "{} functions named `{MODULE_PREFIX}…{suffix}`: {:?}",
                hits.len(),
                hits.iter().map(|(_, n)| n).collect::<Vec<_>>()
            )),
        }
    };
    Ok((find(ALLOC_SUFFIX)?, find(DEALLOC_SUFFIX)?))
}

/// The installed hooks and their shared counts.
pub(crate) struct AllocHook {
    counts: Rc<Cell<AllocCounts>>,
}

impl AllocHook {
    /// Hooks `image`'s allocator entries. The layout's size is read from `$a1`: the module's
    /// build passes `GlobalAlloc::alloc(layout)` as (align, size) and `dealloc(ptr, layout)` as
    /// (ptr, size) once the static `&self` is folded away. The bench checks the byte counts
    /// against the module's own `status` heap figure, so a change of that convention shows.
    pub(crate) fn install(uc: &mut Uc, image: &LoadedImage) -> Result<AllocHook, RigError> {
        let (alloc, dealloc) = allocator_entries(&image.functions).map_err(RigError::State)?;
        let counts = Rc::new(Cell::new(AllocCounts::default()));
        for (addr, is_alloc) in [(alloc, true), (dealloc, false)] {
            let c = counts.clone();
            let at = sext(addr);
            uc.add_code_hook(at, at, move |uc, _, _| {
                let size = uc.reg_read(RegisterMIPS::A1).unwrap_or(0) as u32;
                let mut n = c.get();
                if is_alloc {
                    n.allocs += 1;
                    n.bytes += u64::from(size);
                    n.live_peak = n.live_peak.max(n.live());
                } else {
                    n.frees += 1;
                    n.freed_bytes += u64::from(size);
                }
                c.set(n);
            })
            .map_err(|e| RigError::Emulator(uc_err("allocation hook", e)))?;
        }
        // Blocks translated before the hooks existed must call them too.
        uc.ctl_flush_tb()
            .map_err(|e| RigError::Emulator(uc_err("flush TB", e)))?;
        Ok(AllocHook { counts })
    }

    pub(crate) fn counts(&self) -> AllocCounts {
        self.counts.get()
    }

    /// Starts [`AllocCounts::live_peak`] again from what is live now.
    pub(crate) fn mark(&self) {
        let mut n = self.counts.get();
        n.live_peak = n.live();
        self.counts.set(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// v0-mangled names as the module's build emits them (`rustc_demangle` reads them back).
    const ALLOC: &str = "_RNvXNtNtCserYvGO6fU8t_9irix7_mcp5board4heapNtB2_12CountingHeapNtNtNtCslJnKPnALgre_4core5alloc6global11GlobalAlloc5alloc";
    const DEALLOC: &str = "_RNvXNtNtCserYvGO6fU8t_9irix7_mcp5board4heapNtB2_12CountingHeapNtNtNtCslJnKPnALgre_4core5alloc6global11GlobalAlloc7dealloc";
    const REALLOC: &str = "_RNvCsfLfy6EI15iL_7___rustc14___rust_realloc";

    fn f(addr: u32, name: &str) -> (u32, u32, String) {
        (addr, 16, name.to_string())
    }

    #[test]
    fn finds_the_module_allocator_by_name() {
        let fs = [f(0x100, REALLOC), f(0x200, ALLOC), f(0x300, DEALLOC)];
        assert_eq!(allocator_entries(&fs), Ok((0x200, 0x300)));
    }

    #[test]
    fn refuses_a_missing_or_ambiguous_allocator() {
        let missing = [f(0x100, REALLOC), f(0x300, DEALLOC)];
        assert!(allocator_entries(&missing).unwrap_err().contains("no `"));
        let twice = [f(0x200, ALLOC), f(0x210, ALLOC), f(0x300, DEALLOC)];
        assert!(
            allocator_entries(&twice)
                .unwrap_err()
                .contains("2 functions")
        );
    }

    #[test]
    fn since_subtracts_every_count_and_the_peak_is_above_the_earlier_live_bytes() {
        let a = AllocCounts {
            allocs: 3,
            bytes: 100,
            frees: 2,
            freed_bytes: 60,
            live_peak: 90,
        };
        // In between, 120 more bytes were live at once (160 in all) before 164 were freed.
        let b = AllocCounts {
            allocs: 5,
            bytes: 164,
            frees: 5,
            freed_bytes: 164,
            live_peak: 160,
        };
        assert_eq!(
            b.since(&a),
            AllocCounts {
                allocs: 2,
                bytes: 64,
                frees: 3,
                freed_bytes: 104,
                live_peak: 120,
            }
        );
        assert_eq!((a.live(), b.live()), (40, 0));
    }
}
