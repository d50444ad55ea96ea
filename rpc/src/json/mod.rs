//! JSON for the protocol layers above: text read in place onto a tape of offsets and read back
//! through [`ValueRef`]s, built values written straight onto byte buffers, results written
//! value by value with a record of their own ([`ObjectWriter`]), strings escaped a machine
//! word at a time. Knows nothing of JSON-RPC or MCP; numbers and escaped strings are read by
//! serde_json, so every value is the one serde_json would build.

mod escape;
#[cfg(feature = "fuzzing")]
mod fuzz;
mod object_writer;
mod read;
mod scalar;
mod tape;
mod unique;
mod value_ref;
mod write;

pub(crate) use escape::{TextEscaper, escape_json, escape_str, escape_within};
#[cfg(feature = "fuzzing")]
pub use fuzz::fuzz_value;
pub use object_writer::{Members, ObjectWriter, Written};
pub(crate) use read::{COST_PER_BYTE, Fault, Reader};
pub use read::{MAX_NESTING, MAX_VALUES};
pub use tape::{Kind, Tape};
pub use unique::Repeat;
pub use value_ref::{Key, ValueRef, read_value};
pub(crate) use write::write_value;
