//! A command's output: bytes up to a cap, then only counted, so a command can never take more
//! memory than the caller allowed. Growth goes through `try_reserve`: a heap that cannot hold
//! more ends the output as truncated instead of aborting the module.
//!
//! Every output kept until its answer has streamed out also draws on one pool shared by all
//! running commands (`Services::shell_output`, an eighth of the heap): a per-call cap alone
//! lets many concurrent calls (several sessions or clients) hold the heap between them.

use alloc::rc::Rc;
use alloc::vec::Vec;
use irix7_kmem::budget::{Lease, Pool};

/// Bytes all running commands' outputs may hold together, as a share of the heap: the shell
/// pool's limit is the heap's size divided by this (128 KiB of the ABI's 1 MiB minimum, 7 MiB
/// of the rig's 56 MiB).
pub const BUDGET_HEAP_SHARE: usize = 8;

/// The pool the shell's outputs draw on, sized for a heap of `heap_size` bytes.
pub fn pool(heap_size: usize) -> Rc<Pool> {
    Pool::new("shell", heap_size / BUDGET_HEAP_SHARE)
}

#[derive(Debug)]
pub struct Output {
    buf: Vec<u8>,
    cap: usize,
    truncated: bool,
    /// The buffer's capacity as charged to the shared pool, if any; given back on drop.
    lease: Option<Lease>,
    /// The budget refused a growth: the output stopped there.
    refused: bool,
}

impl Output {
    /// An empty output that keeps at most `cap` bytes, on no shared budget.
    pub fn new(cap: usize) -> Self {
        Output {
            buf: Vec::new(),
            cap,
            truncated: false,
            lease: None,
            refused: false,
        }
    }

    /// An empty output that keeps at most `cap` bytes and charges what it holds to `pool`
    /// until it is dropped.
    pub fn with_budget(cap: usize, pool: &Rc<Pool>) -> Self {
        let mut out = Self::new(cap);
        out.lease = pool.take(0);
        out
    }

    /// Appends what fits; the rest is dropped and the output marked truncated.
    pub fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.room());
        if n < bytes.len() {
            self.truncated = true;
        }
        let Some(part) = bytes.get(..n) else {
            return;
        };
        // Grow by doubling, but never past the cap: an 8 MiB output never reserves 16 MiB.
        if self.buf.capacity() - self.buf.len() < n {
            let grow = n.max(self.buf.len()).min(self.room());
            if let Some(lease) = self.lease.as_mut()
                && !lease.grow(grow)
            {
                self.refused = true;
                self.truncated = true;
                self.cap = self.buf.len();
                return;
            }
            if self.buf.try_reserve_exact(grow).is_err() {
                if let Some(lease) = self.lease.as_mut() {
                    lease.shrink_to(lease.bytes() - grow);
                }
                self.truncated = true;
                self.cap = self.buf.len();
                return;
            }
        }
        self.buf.extend_from_slice(part);
    }

    pub fn push_str(&mut self, s: &str) {
        self.push(s.as_bytes());
    }

    /// Bytes that still fit.
    pub fn room(&self) -> usize {
        self.cap.saturating_sub(self.buf.len())
    }

    /// Records that output was dropped without pushing it (e.g. a file not read to its end).
    pub fn mark_truncated(&mut self) {
        self.truncated = true;
    }

    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes kept.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Whether the shared budget stopped the output (the command's answer is then a refusal,
    /// not a silently shortened output).
    pub fn refused(&self) -> bool {
        self.refused
    }

    /// The shared pool the output draws on.
    pub fn pool(&self) -> Option<&Rc<Pool>> {
        self.lease.as_ref().map(Lease::pool)
    }

    /// Drops the bytes and gives their budget back now.
    pub fn release(&mut self) {
        self.buf = Vec::new();
        self.cap = 0;
        if let Some(lease) = self.lease.as_mut() {
            lease.shrink_to(0);
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.release();
    }
}

impl core::fmt::Write for Output {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn keeps_up_to_the_cap_then_marks_truncated() {
        let mut o = Output::new(10);
        o.push_str("hello ");
        assert!(!o.truncated());
        assert_eq!(o.room(), 4);
        let n = 2;
        write!(o, "world{}", "!".repeat(n)).unwrap();
        assert!(o.truncated());
        assert_eq!(o.room(), 0);
        o.push(b"more");
        assert_eq!((o.bytes(), o.truncated()), (&b"hello worl"[..], true));
    }

    #[test]
    fn never_reserves_past_the_cap() {
        let mut o = Output::new(1000);
        for _ in 0..100 {
            o.push(&[b'x'; 7]);
        }
        assert_eq!(o.len(), 700);
        o.push(&[b'y'; 500]);
        assert_eq!(o.len(), 1000);
        assert!(o.truncated());
        assert!(o.buf.capacity() <= 1000, "capacity {}", o.buf.capacity());
    }

    #[test]
    fn exactly_full_is_not_truncated() {
        let mut o = Output::new(3);
        o.push(b"abc");
        o.push(b"");
        assert!(!o.truncated());
        assert_eq!(o.len(), 3);
        o.mark_truncated();
        assert!(o.truncated());
    }

    #[test]
    fn outputs_draw_on_one_pool_and_give_it_back_when_dropped() {
        let p = pool(8 * 1000);
        assert_eq!(p.limit(), 1000);
        let mut a = Output::with_budget(600, &p);
        a.push(&[b'a'; 600]);
        assert_eq!(p.usage().used, 600);
        let mut b = Output::with_budget(600, &p);
        b.push(&[b'b'; 300]);
        assert!(!b.refused());
        // 300 more would take the total to 1200: refused, the output stops where it was.
        b.push(&[b'b'; 300]);
        assert!(b.refused() && b.truncated());
        assert_eq!((b.len(), b.room()), (300, 0));
        let u = p.usage();
        assert_eq!(
            (u.name, u.used, u.limit, u.peak, u.refused),
            ("shell", 900, 1000, 900, 1)
        );
        drop(a);
        assert_eq!(p.usage().used, 300);
        b.release();
        assert_eq!(p.usage().used, 0);
        drop(b);
        assert_eq!((p.usage().used, p.usage().peak), (0, 900));
    }

    #[test]
    fn an_output_without_a_budget_is_only_capped() {
        let mut o = Output::new(100);
        o.push(&[0; 100]);
        assert!(!o.refused() && !o.truncated());
        // An empty pool has no room at all.
        let p = pool(0);
        let mut q = Output::with_budget(100, &p);
        q.push(b"x");
        assert!(q.refused());
        assert_eq!(p.usage().refused, 1);
    }
}
