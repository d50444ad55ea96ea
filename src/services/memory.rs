//! The module's memory plan as the status reports see it: the heap bytes the module means never
//! to pass (`heap budget`) and, for each kind of input-driven work, the budget it draws on.
//!
//! The budgets themselves live where the work is (request bodies and parses in the server,
//! shell output in the shell); each is shown here through a [`Gauge`].

use alloc::boxed::Box;
use alloc::vec::Vec;

/// One budget's figures, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetUse {
    pub name: &'static str,
    pub limit: usize,
    pub used: usize,
    pub peak: usize,
    /// Charges refused since boot (each an answer of "busy" to some client).
    pub refused: u64,
}

/// Something that reports a budget's figures.
pub trait Gauge {
    fn usage(&self) -> BudgetUse;
}

/// The plan the module started with.
#[derive(Default)]
pub struct MemoryPlan {
    /// Heap bytes the module means never to pass: the heap less a reserve for the small,
    /// bounded allocations nobody charges.
    pub heap_budget: usize,
    pub gauges: Vec<Box<dyn Gauge>>,
}

impl MemoryPlan {
    pub fn budgets(&self) -> Vec<BudgetUse> {
        self.gauges.iter().map(|g| g.usage()).collect()
    }
}
