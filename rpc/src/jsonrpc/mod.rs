//! JSON-RPC 2.0 framing: a request body parsed into messages (the envelope: `jsonrpc`, `id`,
//! `method`, `params`, a client's `result` or `error`), responses and notifications written,
//! and the error object with its standard codes. Knows nothing of MCP; the JSON itself is
//! [`crate::json`]'s. Request ids are kept as their exact JSON text so that any id a client
//! sends (strings, huge or fractional numbers, null) is echoed byte for byte.

mod parse;
mod response;

#[cfg(test)]
pub(crate) use parse::parse;
pub use parse::{Id, Incoming, Message, ParseFailure, Refusal, parse_within};
pub use response::{error_response, notification, result_response};

use alloc::string::String;
use serde_json::Value;

/// Invalid JSON was received.
pub const PARSE_ERROR: i32 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i32 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i32 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i32 = -32603;

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without `data`.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// An error carrying `data`.
    pub fn with_data(code: i32, message: impl Into<String>, data: Value) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: Some(data),
        }
    }

    /// -32602 with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }
}
