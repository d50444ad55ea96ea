//! Writing JSON-RPC responses and notifications. The id is spliced in as the raw text the
//! client sent.

use super::{Id, RpcError};
use crate::json::write_value;
use alloc::vec::Vec;
use serde_json::{Map, Value};

/// `{"jsonrpc":"2.0","id":…,"result":…}`.
pub fn result_response(id: &Id, result: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_json().as_bytes());
    out.extend_from_slice(b",\"result\":");
    write_value(&mut out, result);
    out.push(b'}');
    out
}

/// `{"jsonrpc":"2.0","id":…,"error":{…}}`; the id is null when the request's id is unknown.
pub fn error_response(id: Option<&Id>, err: &RpcError) -> Vec<u8> {
    let mut obj = Map::new();
    obj.insert("code".into(), Value::from(err.code));
    obj.insert("message".into(), Value::from(err.message.as_str()));
    if let Some(data) = &err.data {
        obj.insert("data".into(), data.clone());
    }
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        Some(id) => out.extend_from_slice(id.as_json().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"error\":");
    write_value(&mut out, &Value::Object(obj));
    out.push(b'}');
    out
}

/// `{"jsonrpc":"2.0","method":…,"params":…}`.
pub fn notification(method: &str, params: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    write_value(&mut out, &Value::from(method));
    out.extend_from_slice(b",\"params\":");
    write_value(&mut out, params);
    out.push(b'}');
    out
}
