//! Building HTTP responses that carry JSON-RPC messages.

use crate::http::{Body, Headers, Response};
use crate::jsonrpc::{self, Id, RpcError};
use alloc::vec::Vec;
use serde_json::Value;

/// JSON-RPC code for "over a limit, try again later" (`E_BUSY`), from the range JSON-RPC
/// leaves to implementations.
pub const BUSY: i32 = -32000;
/// The request's headers disagree with its body (modern era).
pub const HEADER_MISMATCH: i32 = -32020;
/// The client did not declare a capability the request needs.
pub const MISSING_CAPABILITY: i32 = -32021;
/// The requested protocol version is not served.
pub const UNSUPPORTED_VERSION: i32 = -32022;
/// Legacy-era resource not found.
pub const RESOURCE_NOT_FOUND_LEGACY: i32 = -32002;
/// Legacy-era session unknown or expired (the SDKs' value).
pub const SESSION_NOT_FOUND: i32 = -32001;

pub(crate) fn json(status: u16, body: Vec<u8>) -> Response {
    Response::full(status, "application/json", body)
}

pub(crate) fn error(status: u16, id: Option<&Id>, err: &RpcError) -> Response {
    json(status, jsonrpc::error_response(id, err))
}

pub(crate) fn result(id: &Id, value: &Value) -> Response {
    json(200, jsonrpc::result_response(id, value))
}

pub(crate) fn accepted() -> Response {
    Response::empty(202)
}

/// 405 with the methods this endpoint takes.
pub(crate) fn not_allowed(allow: &str) -> Response {
    let mut r = error(
        405,
        None,
        &RpcError::new(jsonrpc::INVALID_REQUEST, "Method Not Allowed"),
    );
    r.headers.push("Allow", allow);
    r
}

/// Why a client over its per-second request limit is refused.
pub(crate) const OVER_RATE: &str = "more requests per second than allowed";

/// 429 `E_BUSY` for anything but a tool call (which gets an `isError` result instead).
pub(crate) fn busy(id: Option<&Id>, why: &str) -> Response {
    let mut r = error(429, id, &busy_error(why));
    r.headers.push_static("Retry-After", "1");
    r
}

/// The JSON-RPC error of [`busy`], for a batch item.
pub(crate) fn busy_error(why: &str) -> RpcError {
    let mut msg = alloc::string::String::from("E_BUSY: ");
    msg.push_str(why);
    RpcError::with_data(BUSY, msg, serde_json::json!({"code": "E_BUSY"}))
}

/// A streamed body with the SSE or JSON content type.
pub(crate) fn stream(sse: bool, body: Body) -> Response {
    let mut headers = Headers::default();
    if sse {
        headers.push_static("Content-Type", "text/event-stream");
        headers.push_static("Cache-Control", "no-cache");
        headers.push_static("X-Accel-Buffering", "no");
    } else {
        headers.push_static("Content-Type", "application/json");
    }
    Response {
        status: 200,
        headers,
        body,
        turned_away: false,
    }
}
