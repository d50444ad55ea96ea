//! The 2026-07-28 era: stateless. Every POST carries its envelope in `params._meta` and the
//! headers that mirror it; they are checked in the order the spec's reference server uses
//! (version header present, `_meta` keys, header = `_meta` version, version supported, then
//! `Mcp-Method` and `Mcp-Name`).

use super::limits::Key;
use super::reply;
use super::request::{Cx, Era, Head, header_text, object_params};
use super::server::{META_CAPS, META_LOG_LEVEL, META_VERSION, MODERN_VERSION, McpServer};
use super::tool::LogLevel;
use crate::http::{Headers, Peer, Response};
use crate::json::ValueRef;
use crate::jsonrpc::{self, Id, Incoming, Message, RpcError};
use alloc::format;
use alloc::vec::Vec;
use serde_json::json;

fn mismatch(id: Option<&Id>, what: &str) -> Response {
    reply::error(
        400,
        id,
        &RpcError::new(reply::HEADER_MISMATCH, format!("Header mismatch: {what}")),
    )
}

impl<C: 'static> McpServer<C> {
    pub(crate) fn modern(
        &mut self,
        incoming: Incoming,
        headers: &Headers,
        head: &Head<'_>,
        peer: Peer,
        now_ms: u64,
    ) -> Response {
        let msg = match incoming {
            Incoming::Single(Ok(m)) => m,
            Incoming::Single(Err(f)) => return reply::error(400, f.id.as_ref(), &f.error),
            Incoming::Batch(_) => {
                let err = RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "Invalid Request: batches are not supported",
                );
                return reply::error(400, None, &err);
            }
        };
        let (method, params) = match &msg {
            Message::Request { method, params, .. } | Message::Notification { method, params } => {
                (method, params)
            }
            Message::Response { .. } => {
                let err = RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "Invalid Request: this server sends no requests",
                );
                return reply::error(400, None, &err);
            }
        };
        let id = msg.id();
        let params = match object_params(*params) {
            Ok(p) => p,
            Err(e) => return reply::error(400, id, &e),
        };

        let Some(header_version) = head.version().map(str::trim) else {
            return mismatch(id, "MCP-Protocol-Version header missing");
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
            return reply::error(400, id, &err);
        }
        let meta = meta.unwrap_or(ValueRef::empty_object());
        let Some(version) = version.and_then(|v| v.as_str()) else {
            return reply::error(
                400,
                id,
                &RpcError::invalid_params("Invalid params: protocolVersion must be a string"),
            );
        };
        if version != header_version {
            return mismatch(
                id,
                "MCP-Protocol-Version does not match _meta protocolVersion",
            );
        }
        if version != MODERN_VERSION {
            let data = json!({"supported": [MODERN_VERSION], "requested": version});
            let err = RpcError::with_data(
                reply::UNSUPPORTED_VERSION,
                "Unsupported protocol version",
                data,
            );
            return reply::error(400, id, &err);
        }
        match head.method().and_then(header_text) {
            Some(m) if m == *method => {}
            Some(_) => return mismatch(id, "Mcp-Method does not match the method"),
            None => return mismatch(id, "Mcp-Method header missing"),
        }
        let named = match method.as_ref() {
            "tools/call" | "prompts/get" => params.get("name"),
            "resources/read" => params.get("uri"),
            _ => None,
        };
        if let Some(name) = named.and_then(|n| n.as_str()) {
            match head.name().and_then(header_text) {
                Some(h) if h == name => {}
                Some(_) => return mismatch(id, "Mcp-Name does not match the body"),
                None => return mismatch(id, "Mcp-Name header missing"),
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
            return mismatch(id, "Mcp-Name does not match the taskId");
        }
        // Kept as a value for the tools and the stored tasks that read them; `{}` (what most
        // clients send) is built without the heap.
        let caps = match caps.filter(ValueRef::is_object).map(|c| c.to_value()) {
            Some(Some(c)) => c,
            _ => {
                return reply::error(
                    400,
                    id,
                    &RpcError::invalid_params(
                        "Invalid params: clientCapabilities must be an object",
                    ),
                );
            }
        };
        let log_level = match meta.get(META_LOG_LEVEL) {
            None => None,
            Some(v) => match v.as_str().as_deref().and_then(LogLevel::parse) {
                Some(l) => Some(l),
                None => {
                    return reply::error(
                        400,
                        id,
                        &RpcError::invalid_params("Invalid params: unknown logLevel"),
                    );
                }
            },
        };

        let limits = self.config.limits;
        if !self.clients.admit(
            peer.addr,
            now_ms,
            limits.requests_per_second,
            limits.max_clients,
        ) {
            let why = "more requests per second than allowed";
            return match (id, method.as_ref()) {
                (Some(id), "tools/call") => self.busy_result(id, Era::Modern, why),
                _ => reply::busy(id, why),
            };
        }
        let Some(id) = id else {
            // Notifications (cancellation is closing the stream in this era) need no answer.
            return reply::accepted();
        };
        let cx = Cx {
            era: Era::Modern,
            id,
            params,
            caps: &caps,
            accept: head.accept(),
            progress_token: meta.get("progressToken").and_then(|t| t.to_value()),
            log_level,
            key: Key::Addr(peer.addr),
            sse_ids: None,
            sse_retry_ms: None,
            now_ms,
            headers: Some(headers),
            client: peer.addr,
            session_tag: None,
        };
        self.dispatch(method, &cx)
    }
}
