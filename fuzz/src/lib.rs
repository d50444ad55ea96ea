//! What the fuzz targets share: the heap budget every case runs under ([`budget`]), the fake
//! machine of the module's host tests ([`fake`]) and the full-path driver ([`full_path`]).
//! A library, so `tests/regressions.rs` replays kept inputs through the same code.

extern crate alloc;

pub mod budget;
pub mod full_path;

/// Every allocation of a fuzz binary is counted, so each case is held to the budget.
#[global_allocator]
static HEAP: budget::Counting = budget::Counting;

/// The module's fake machine (`src/tools/testing/fake.rs`, the `testing` feature).
pub use irix7_mcp::tools::testing::fake;
