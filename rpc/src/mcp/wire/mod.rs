//! The protocol's own words, importing nothing else of `mcp`: the error codes and versions,
//! the canned replies, base64 and cursors, and what a tool declares and returns
//! ([`tool::ToolDef`], its content and errors), as the wire carries them.

pub(crate) mod base64;
pub(crate) mod cursor;
pub(crate) mod error_code;
pub(crate) mod reply;
pub(crate) mod tool;
pub(crate) mod version;
