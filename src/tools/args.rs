//! Reading a call's arguments. The server has validated them against the tool's input schema
//! already; these accessors still check every type and range, so a schema mistake becomes a
//! clear `E_INVAL`, never a panic.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;
use rpc::json::{Kind, ValueRef};
use rpc::mcp::{ErrorCode, ToolCall, ToolError};

/// An argument that is absent or `null`: `None`.
fn given<'a>(call: &ToolCall<'a>, name: &str) -> Option<ValueRef<'a>> {
    call.args.get(name).filter(|v| !v.is_null())
}

/// An optional argument as `read` takes it; `E_INVAL` naming `what` it must be otherwise.
fn optional<'a, T>(
    call: &ToolCall<'a>,
    name: &str,
    read: impl Fn(ValueRef<'a>) -> Option<T>,
    what: &str,
) -> Result<Option<T>, ToolError> {
    match given(call, name) {
        None => Ok(None),
        Some(v) => read(v)
            .map(Some)
            .ok_or_else(|| inval(format!("`{name}` must be {what}"))),
    }
}

/// A required string argument (decoded only if it holds an escape).
pub fn string<'a>(call: &ToolCall<'a>, name: &str) -> Result<Cow<'a, str>, ToolError> {
    call.args
        .get(name)
        .and_then(|v| v.as_str())
        .ok_or_else(|| inval(format!("`{name}` must be a string")))
}

/// An optional non-negative integer argument.
pub fn opt_u64(call: &ToolCall<'_>, name: &str) -> Result<Option<u64>, ToolError> {
    optional(call, name, |v| v.as_u64(), "a non-negative integer")
}

/// An optional boolean argument with its default.
pub fn bool_or(call: &ToolCall<'_>, name: &str, default: bool) -> Result<bool, ToolError> {
    Ok(optional(call, name, |v| v.as_bool(), "true or false")?.unwrap_or(default))
}

/// An optional string argument.
pub fn opt_str<'a>(call: &ToolCall<'a>, name: &str) -> Result<Option<Cow<'a, str>>, ToolError> {
    optional(call, name, |v| v.as_str(), "a string")
}

/// A physical address: a JSON integer, or a string in hex (`0x…`) or decimal.
pub fn addr(call: &ToolCall<'_>) -> Result<u32, ToolError> {
    let bad = || {
        inval(String::from(
            "`addr` must be a 32-bit address (integer or \"0x…\")",
        ))
    };
    let Some(v) = call.args.get("addr") else {
        return Err(bad());
    };
    match v.kind() {
        Kind::Number => v
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(bad),
        Kind::String => {
            let s = v.as_str().ok_or_else(bad)?;
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
