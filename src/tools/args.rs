//! Reading a call's arguments. The server has validated them against the tool's input schema
//! already; these accessors still check every type and range, so a schema mistake becomes a
//! clear `E_INVAL`, never a panic.

use alloc::format;
use rpc::mcp::{ErrorCode, ToolCall, ToolError};
use serde_json::Value;

/// A required string argument.
pub fn string<'a>(call: &'a ToolCall<'_>, name: &str) -> Result<&'a str, ToolError> {
    match call.args.get(name) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(ToolError::new(
            ErrorCode::Inval,
            format!("`{name}` must be a string"),
        )),
    }
}

/// An optional non-negative integer argument.
pub fn opt_u64(call: &ToolCall<'_>, name: &str) -> Result<Option<u64>, ToolError> {
    match call.args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ToolError::new(
                ErrorCode::Inval,
                format!("`{name}` must be a non-negative integer"),
            )
        }),
    }
}

/// An optional boolean argument with its default.
pub fn bool_or(call: &ToolCall<'_>, name: &str, default: bool) -> Result<bool, ToolError> {
    match call.args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ToolError::new(
            ErrorCode::Inval,
            format!("`{name}` must be true or false"),
        )),
    }
}

/// An optional string argument.
pub fn opt_str<'a>(call: &'a ToolCall<'_>, name: &str) -> Result<Option<&'a str>, ToolError> {
    match call.args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::new(
            ErrorCode::Inval,
            format!("`{name}` must be a string"),
        )),
    }
}
