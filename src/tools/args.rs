//! Reading a call's arguments. The server has validated them against the tool's input schema
//! already; these accessors still check every type and range, so a schema mistake becomes a
//! clear `E_INVAL`, never a panic.

use alloc::format;
use alloc::string::String;
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

/// A physical address: a JSON integer, or a string in hex (`0x…`) or decimal.
pub fn addr(call: &ToolCall<'_>) -> Result<u32, ToolError> {
    let bad = || {
        inval(String::from(
            "`addr` must be a 32-bit address (integer or \"0x…\")",
        ))
    };
    match call.args.get("addr") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(bad),
        Some(Value::String(s)) => {
            let s = s.trim();
            let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => u32::from_str_radix(h, 16),
                None => s.parse::<u32>(),
            };
            parsed.map_err(|_| bad())
        }
        _ => Err(bad()),
    }
}

/// An optional 32-bit integer argument with its default.
pub fn u32_or(call: &ToolCall<'_>, name: &str, default: u32) -> Result<u32, ToolError> {
    match opt_u64(call, name)? {
        None => Ok(default),
        Some(v) => u32::try_from(v).map_err(|_| inval(format!("`{name}` is too large"))),
    }
}

/// An `E_INVAL` tool error.
pub fn inval(message: String) -> ToolError {
    ToolError::new(ErrorCode::Inval, message)
}
