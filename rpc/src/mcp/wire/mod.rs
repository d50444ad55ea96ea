//! The protocol's own words, importing nothing else of `mcp`: the error codes and versions,
//! the canned replies, base64 and cursors, what every event stream shares, what a tool says of its behaviour
//! ([`annotations::Annotations`]) and what it declares and returns ([`tool::ToolDef`], its
//! content and errors), as the wire carries them.

pub(crate) mod annotations;
pub(crate) mod base64;
pub(crate) mod cursor;
pub(crate) mod error_code;
pub(crate) mod event_stream;
pub(crate) mod reply;
pub(crate) mod tool;
pub(crate) mod version;
