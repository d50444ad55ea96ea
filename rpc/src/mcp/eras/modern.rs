//! The 2026-07-28 era: stateless. Every POST carries its envelope in `params._meta` and the
//! headers that mirror it; they are checked in the order the spec's reference server uses
//! (version header present, `_meta` keys, header = `_meta` version, version supported, then
//! `Mcp-Method` and `Mcp-Name`).

use crate::http::Response;
use crate::json::ValueRef;
use crate::jsonrpc::{self, Id, Incoming, Message, RpcError};
use crate::mcp::guard::request::{Head, header_text, object_params};
use crate::mcp::wire::reply;
use crate::mcp::wire::tool::LogLevel;
use crate::mcp::wire::version::{META_CAPS, META_LOG_LEVEL, META_VERSION, MODERN_VERSION};
use alloc::format;
use alloc::vec::Vec;
use serde_json::{Value, json};

fn mismatch(id: Option<&Id>, what: &str) -> Response {
    reply::error(
        400,
        id,
        &RpcError::new(reply::HEADER_MISMATCH, format!("Header mismatch: {what}")),
    )
}

/// A 2026-07-28 request whose envelope and headers passed: what dispatch builds its context
/// from.
pub(crate) struct Envelope<'m> {
    /// `None` for a notification.
    pub(crate) id: Option<&'m Id>,
    pub(crate) method: &'m str,
    pub(crate) params: ValueRef<'m>,
    /// `params._meta` (`{}` when absent), where the progress token is.
    pub(crate) meta: ValueRef<'m>,
    /// The client capabilities, kept as a value for the tools and the stored tasks that read
    /// them.
    pub(crate) caps: Value,
    pub(crate) log_level: Option<LogLevel>,
}

/// The one message a 2026-07-28 POST carries, or the 400 for a body that is not one.
pub(crate) fn message(incoming: Incoming<'_>) -> Result<Message<'_>, Response> {
    match incoming {
        Incoming::Single(Ok(m)) => Ok(m),
        Incoming::Single(Err(f)) => Err(reply::error(400, f.id.as_ref(), &f.error)),
        Incoming::Batch(_) => {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "Invalid Request: batches are not supported",
            );
            Err(reply::error(400, None, &err))
        }
    }
}

/// Checks `msg`'s envelope and the headers that mirror it, in the order of the module doc.
pub(crate) fn envelope<'m>(
    msg: &'m Message<'_>,
    head: &Head<'_>,
) -> Result<Envelope<'m>, Response> {
    let (method, params) = match msg {
        Message::Request { method, params, .. } | Message::Notification { method, params } => {
            (method, params)
        }
        Message::Response { .. } => {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "Invalid Request: this server sends no requests",
            );
            return Err(reply::error(400, None, &err));
        }
    };
    let id = msg.id();
    let params = match object_params(*params) {
        Ok(p) => p,
        Err(e) => return Err(reply::error(400, id, &e)),
    };

    let Some(header_version) = head.version().map(str::trim) else {
        return Err(mismatch(id, "MCP-Protocol-Version header missing"));
    };
    let meta = params.get("_meta").filter(ValueRef::is_object);
    // Each key is looked up once, for the check and for its value.
    let given = [META_VERSION, META_CAPS].map(|k| (k, meta.and_then(|m| m.get(k))));
    let [(_, version), (_, caps)] = given;
    if version.is_none() || caps.is_none() {
        let missing: Vec<&str> = given
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .collect();
        let err = RpcError::invalid_params(format!(
            "Invalid params: missing _meta keys: {}",
            missing.join(", ")
        ));
        return Err(reply::error(400, id, &err));
    }
    let meta = meta.unwrap_or(ValueRef::empty_object());
    let Some(version) = version.and_then(|v| v.as_str()) else {
        return Err(reply::error(
            400,
            id,
            &RpcError::invalid_params("Invalid params: protocolVersion must be a string"),
        ));
    };
    if version != header_version {
        return Err(mismatch(
            id,
            "MCP-Protocol-Version does not match _meta protocolVersion",
        ));
    }
    if version != MODERN_VERSION {
        let data = json!({"supported": [MODERN_VERSION], "requested": version});
        let err = RpcError::with_data(
            reply::UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            data,
        );
        return Err(reply::error(400, id, &err));
    }
    match head.method().and_then(header_text) {
        Some(m) if m == *method => {}
        Some(_) => return Err(mismatch(id, "Mcp-Method does not match the method")),
        None => return Err(mismatch(id, "Mcp-Method header missing")),
    }
    let named = match method.as_ref() {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        _ => None,
    };
    if let Some(name) = named.and_then(|n| n.as_str()) {
        match head.name().and_then(header_text) {
            Some(h) if h == name => {}
            Some(_) => return Err(mismatch(id, "Mcp-Name does not match the body")),
            None => return Err(mismatch(id, "Mcp-Name header missing")),
        }
    }
    // A task method may name its task in Mcp-Name (the tasks extension); then it must match.
    if method.starts_with("tasks/")
        && let (Some(h), Some(task)) = (
            head.name().and_then(header_text),
            params.get("taskId").and_then(|t| t.as_str()),
        )
        && h != task
    {
        return Err(mismatch(id, "Mcp-Name does not match the taskId"));
    }
    // Kept as a value for the tools and the stored tasks that read them; `{}` (what most
    // clients send) is built without the heap.
    let caps = match caps.filter(ValueRef::is_object).map(|c| c.to_value()) {
        Some(Some(c)) => c,
        _ => {
            return Err(reply::error(
                400,
                id,
                &RpcError::invalid_params("Invalid params: clientCapabilities must be an object"),
            ));
        }
    };
    let log_level = match meta.get(META_LOG_LEVEL) {
        None => None,
        Some(v) => match v.as_str().as_deref().and_then(LogLevel::parse) {
            Some(l) => Some(l),
            None => {
                return Err(reply::error(
                    400,
                    id,
                    &RpcError::invalid_params("Invalid params: unknown logLevel"),
                ));
            }
        },
    };
    Ok(Envelope {
        id,
        method,
        params,
        meta,
        caps,
        log_level,
    })
}
