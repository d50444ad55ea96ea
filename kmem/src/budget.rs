//! Memory budgets: how many heap bytes one kind of input-driven work may hold at once.
//!
//! The kernel gives the module a fixed heap (the ABI promises 1 MiB) and a failed allocation
//! aborts the module, which resets the machine. So every allocation whose size a client
//! chooses is charged to a [`Pool`] *before* it is made: request bodies in flight, parsed
//! JSON trees, batch answers, shell output. A charge over the pool's limit is refused, and the
//! caller answers `503` with `Retry-After` (HTTP) or `E_BUSY` (a tool) instead of
//! allocating. The pools' limits are sized from the heap at init, so their sum plus the
//! module's idle use stays under the heap whatever the clients send.
//!
//! A charge is a [`Lease`]: it gives its bytes back when dropped, so an early return, a
//! cancelled call or a vanished client never leaks budget.
//!
//! The functions are `#[inline]`: this crate is `no_builtins`, which keeps it out of the image's
//! LTO, so without it every charge would be a call across crates (the image is 380 bytes
//! smaller with it).

use alloc::rc::Rc;
use core::cell::Cell;

/// One budget: a limit and what is charged against it now.
#[derive(Debug)]
pub struct Pool {
    name: &'static str,
    limit: Cell<usize>,
    used: Cell<usize>,
    peak: Cell<usize>,
    refused: Cell<u64>,
}

/// A pool's figures, for `status` and `irix7://mem`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolUse {
    pub name: &'static str,
    pub limit: usize,
    pub used: usize,
    pub peak: usize,
    /// Charges refused since boot (each one an answer of "busy" to some client).
    pub refused: u64,
}

impl Pool {
    #[inline]
    pub fn new(name: &'static str, limit: usize) -> Rc<Pool> {
        Rc::new(Pool {
            name,
            limit: Cell::new(limit),
            used: Cell::new(0),
            peak: Cell::new(0),
            refused: Cell::new(0),
        })
    }

    /// Charges `bytes`, or refuses (and counts the refusal) when that would pass the limit.
    #[inline]
    pub fn take(self: &Rc<Self>, bytes: usize) -> Option<Lease> {
        let mut lease = Lease {
            pool: self.clone(),
            bytes: 0,
        };
        lease.grow(bytes).then_some(lease)
    }

    #[inline]
    pub fn limit(&self) -> usize {
        self.limit.get()
    }

    /// Sets the limit, for a plan made again once init knows more of what the module holds.
    /// Charges already made stay; new ones are weighed against the new limit.
    #[inline]
    pub fn set_limit(&self, limit: usize) {
        self.limit.set(limit);
    }

    /// Bytes still free in the pool.
    #[inline]
    pub fn free(&self) -> usize {
        self.limit.get().saturating_sub(self.used.get())
    }

    #[inline]
    pub fn usage(&self) -> PoolUse {
        PoolUse {
            name: self.name,
            limit: self.limit.get(),
            used: self.used.get(),
            peak: self.peak.get(),
            refused: self.refused.get(),
        }
    }
}

/// Bytes charged to a pool; given back on drop.
#[derive(Debug)]
pub struct Lease {
    pool: Rc<Pool>,
    bytes: usize,
}

impl Lease {
    /// Charges `extra` more bytes to the same pool. False (nothing charged, the refusal
    /// counted) when the pool cannot take them.
    #[inline]
    pub fn grow(&mut self, extra: usize) -> bool {
        let pool = &self.pool;
        let used = pool.used.get();
        match used.checked_add(extra) {
            Some(total) if total <= pool.limit.get() => {
                pool.used.set(total);
                pool.peak.set(pool.peak.get().max(total));
                self.bytes += extra;
                true
            }
            _ => {
                pool.refused.set(pool.refused.get() + 1);
                false
            }
        }
    }

    /// Gives back all but `keep` bytes (a buffer shrank).
    #[inline]
    pub fn shrink_to(&mut self, keep: usize) {
        if keep < self.bytes {
            let back = self.bytes - keep;
            self.pool.used.set(self.pool.used.get() - back);
            self.bytes = keep;
        }
    }

    #[inline]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The pool charged.
    #[inline]
    pub fn pool(&self) -> &Rc<Pool> {
        &self.pool
    }
}

impl Drop for Lease {
    #[inline]
    fn drop(&mut self) {
        self.shrink_to(0);
    }
}

/// Grows `v` so that `extra` more bytes fit, charging any new capacity to `lease` first and
/// allocating fallibly. False when the budget or the heap refuses (nothing changes then).
#[inline]
pub fn reserve(v: &mut alloc::vec::Vec<u8>, extra: usize, lease: &mut Lease) -> bool {
    let need = match v.len().checked_add(extra) {
        Some(n) => n,
        None => return false,
    };
    if need <= v.capacity() {
        return true;
    }
    // Double as `Vec` would, so appends stay amortised, unless the pool has only room for
    // what is needed.
    let doubled = v.capacity().saturating_mul(2);
    let target = if doubled > need && doubled - v.capacity() <= lease.pool.free() {
        doubled
    } else {
        need
    };
    let grow_by = target - v.capacity();
    if !lease.grow(grow_by) {
        return false;
    }
    if v.try_reserve_exact(target - v.len()).is_err() {
        lease.shrink_to(lease.bytes - grow_by);
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn leases_charge_and_give_back() {
        let pool = Pool::new("body", 100);
        let mut a = pool.take(60).expect("fits");
        assert!(pool.take(41).is_none(), "over the limit");
        assert_eq!(pool.usage().refused, 1);
        let b = pool.take(40).expect("exactly fits");
        assert_eq!(pool.free(), 0);
        assert!(!a.grow(1));
        drop(b);
        assert!(a.grow(40));
        a.shrink_to(10);
        assert_eq!(pool.usage().used, 10);
        drop(a);
        let u = pool.usage();
        assert_eq!((u.used, u.peak, u.refused), (0, 100, 2));
    }

    #[test]
    fn reserve_charges_capacity_and_stops_at_the_limit() {
        let pool = Pool::new("body", 1000);
        let mut lease = pool.take(0).unwrap();
        let mut v = Vec::new();
        for _ in 0..30 {
            assert!(reserve(&mut v, 30, &mut lease));
            v.extend_from_slice(&[7; 30]);
        }
        assert_eq!(v.len(), 900);
        assert!(v.capacity() <= 1000, "{}", v.capacity());
        assert_eq!(lease.bytes(), v.capacity());
        assert!(!reserve(&mut v, 200, &mut lease), "past the pool");
        assert_eq!(v.len(), 900);
        assert!(reserve(&mut v, 100, &mut lease));
        drop(lease);
        assert_eq!(pool.usage().used, 0);
    }
}
