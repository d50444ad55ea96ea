//! HTTP/1.1 server side, bytes in and bytes out: the incremental request parser, the response
//! writer, the per-connection state machine and the 404/405 helpers for routers.

pub mod connection;
pub mod message;
pub mod parser;
pub mod response;
pub mod route;

pub use connection::{Config, Connection};
pub use message::*;
pub use parser::{Limits, ParseError, Version};
