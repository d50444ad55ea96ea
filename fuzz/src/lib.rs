//! What the fuzz targets share: the heap budget every case runs under ([`budget`]), the fake
//! machine of the module's host tests ([`fake`]) and the full-path driver ([`full_path`]).
//! A library, so `tests/regressions.rs` replays kept inputs through the same code.

extern crate alloc;

pub mod budget;
pub mod full_path;

/// Every allocation of a fuzz binary is counted, so each case is held to the budget.
#[global_allocator]
static HEAP: budget::Counting = budget::Counting;

// `fake.rs` names its imports from the module crate's root (`crate::hil`, …): these make the
// same paths resolve here.
use irix7_mcp::{hil, services, tools};

/// The module's fake machine (`src/tools/testing/fake.rs`), compiled here as is: the module
/// crate builds it only for its own tests.
#[allow(dead_code)]
pub mod fake {
    include!("../../src/tools/testing/fake.rs");
}
