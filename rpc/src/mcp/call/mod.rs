//! `tools/call` after its tool is found.

mod stream;
pub(crate) use stream::*;
