//! A command's output: bytes up to a cap, then only counted, so a command can never take more
//! memory than the caller allowed. Growth goes through `try_reserve`: a heap that cannot hold
//! more ends the output as truncated instead of aborting the module.
//!
//! Every output kept until its answer has streamed out also draws on one [`Budget`] shared by
//! all running commands: a per-call cap alone lets many concurrent calls (several sessions or
//! clients) hold the heap between them.

use crate::services::memory::{BudgetUse, Gauge};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Bytes all running commands' outputs may hold together, as a share of the heap.
pub const BUDGET_HEAP_SHARE: usize = 8;

/// The output bytes held across every running command, against a limit set from the heap.
/// The module is single-threaded: plain loads and stores suffice (no read-modify-write, so no
/// LL/SC loop in the image); atomics only make a `static` of it safe code.
#[derive(Debug)]
pub struct Budget {
    used: AtomicUsize,
    limit: AtomicUsize,
    peak: AtomicUsize,
    refused: AtomicUsize,
}

/// The figures a status report shows: bytes held now, the limit, the most ever held, and how
/// many growths were refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetUsage {
    pub used: usize,
    pub limit: usize,
    pub peak: usize,
    pub refused: usize,
}

/// The budget `shell.exec` draws on.
pub static BUDGET: Budget = Budget::new();

impl Budget {
    /// A budget with no room until [`Budget::configure`] sizes it.
    pub const fn new() -> Self {
        Budget {
            used: AtomicUsize::new(0),
            limit: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
        }
    }

    /// Sizes the limit from the heap the kernel gave: 1/[`BUDGET_HEAP_SHARE`] of it (128 KiB
    /// of the ABI's 1 MiB minimum, 7 MiB of the rig's 56 MiB).
    pub fn configure(&self, heap_size: usize) {
        self.limit
            .store(heap_size / BUDGET_HEAP_SHARE, Ordering::Relaxed);
    }

    pub fn usage(&self) -> BudgetUsage {
        BudgetUsage {
            used: self.used.load(Ordering::Relaxed),
            limit: self.limit.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// Takes `n` bytes if they fit under the limit; a refusal is counted.
    fn take(&self, n: usize) -> bool {
        let u = self.usage();
        match u.used.checked_add(n).filter(|&t| t <= u.limit) {
            Some(total) => {
                self.used.store(total, Ordering::Relaxed);
                self.peak.store(u.peak.max(total), Ordering::Relaxed);
                true
            }
            None => {
                self.refused
                    .store(u.refused.saturating_add(1), Ordering::Relaxed);
                false
            }
        }
    }

    fn give(&self, n: usize) {
        let used = self.used.load(Ordering::Relaxed);
        self.used.store(used.saturating_sub(n), Ordering::Relaxed);
    }
}

impl Default for Budget {
    fn default() -> Self {
        Self::new()
    }
}

/// [`BUDGET`] as `status` and `irix7://mem` show it.
impl Gauge for &'static Budget {
    fn usage(&self) -> BudgetUse {
        let u = Budget::usage(self);
        BudgetUse {
            name: "shell",
            limit: u.limit,
            used: u.used,
            peak: u.peak,
            refused: u.refused as u64,
        }
    }
}

#[derive(Debug)]
pub struct Output {
    buf: Vec<u8>,
    cap: usize,
    truncated: bool,
    /// The shared budget the buffer's capacity is charged to, if any.
    budget: Option<&'static Budget>,
    /// Bytes charged to `budget`, given back on drop.
    charged: usize,
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
            budget: None,
            charged: 0,
            refused: false,
        }
    }

    /// An empty output that keeps at most `cap` bytes and charges what it holds to `budget`
    /// until it is dropped.
    pub fn with_budget(cap: usize, budget: &'static Budget) -> Self {
        let mut out = Self::new(cap);
        out.budget = Some(budget);
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
            if let Some(b) = self.budget {
                if !b.take(grow) {
                    self.refused = true;
                    self.truncated = true;
                    self.cap = self.buf.len();
                    return;
                }
                self.charged += grow;
            }
            if self.buf.try_reserve_exact(grow).is_err() {
                if let Some(b) = self.budget {
                    b.give(grow);
                    self.charged -= grow;
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

    /// The shared budget the output draws on.
    pub fn budget(&self) -> Option<&'static Budget> {
        self.budget
    }

    /// Drops the bytes and gives their budget back now.
    pub fn release(&mut self) {
        self.buf = Vec::new();
        self.cap = 0;
        if let Some(b) = self.budget {
            b.give(core::mem::take(&mut self.charged));
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
    fn outputs_draw_on_one_budget_and_give_it_back_when_dropped() {
        static B: Budget = Budget::new();
        B.configure(8 * 1000);
        assert_eq!(B.usage().limit, 1000);
        let mut a = Output::with_budget(600, &B);
        a.push(&[b'a'; 600]);
        assert_eq!(B.usage().used, 600);
        let mut b = Output::with_budget(600, &B);
        b.push(&[b'b'; 300]);
        assert!(!b.refused());
        // 300 more would take the total to 1200: refused, the output stops where it was.
        b.push(&[b'b'; 300]);
        assert!(b.refused() && b.truncated());
        assert_eq!((b.len(), b.room()), (300, 0));
        assert_eq!(
            B.usage(),
            BudgetUsage {
                used: 900,
                limit: 1000,
                peak: 900,
                refused: 1
            }
        );
        drop(a);
        assert_eq!(B.usage().used, 300);
        b.release();
        assert_eq!(B.usage().used, 0);
        drop(b);
        assert_eq!((B.usage().used, B.usage().peak), (0, 900));
    }

    #[test]
    fn an_output_without_a_budget_is_only_capped() {
        static B: Budget = Budget::new();
        let mut o = Output::new(100);
        o.push(&[0; 100]);
        assert!(!o.refused() && !o.truncated());
        // An unsized budget has no room at all.
        let mut p = Output::with_budget(100, &B);
        p.push(b"x");
        assert!(p.refused());
        assert_eq!(B.usage().refused, 1);
    }
}
