//! The session-based era (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): `initialize`
//! opens a session named by `Mcp-Session-Id`; every later request carries that id.

use super::limits::Key;
use super::reply;
use super::request::{Cx, Era, object_params, session_tag};
use super::server::{LEGACY_VERSIONS, McpServer, SERVER_NAME};
use super::session::plausible_id;
use super::tool::LogLevel;
use crate::http::{Body, Headers, Peer, Response};
use crate::json::read_value;
use crate::jsonrpc::{self, Incoming, Message, ParseFailure, RpcError};
use alloc::format;
use alloc::vec::Vec;
use serde_json::{Map, Value, json};

/// Batches were allowed only by this version.
const BATCH_VERSION: &str = "2025-03-26";

impl<C: 'static> McpServer<C> {
    pub(crate) fn legacy(
        &mut self,
        incoming: Incoming,
        headers: &Headers,
        peer: Peer,
        now_ms: u64,
    ) -> Response {
        if let Incoming::Single(Ok(m)) = &incoming
            && m.method() == Some("initialize")
        {
            return self.initialize(m, peer, now_ms);
        }
        // Session errors echo the request's id when there is one.
        let req_id = match &incoming {
            Incoming::Single(Ok(m)) => m.id().cloned(),
            _ => None,
        };
        let req_id = req_id.as_ref();
        if let Some(v) = headers.get("MCP-Protocol-Version").map(str::trim)
            && !LEGACY_VERSIONS.contains(&v)
        {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                format!("Bad Request: unsupported MCP-Protocol-Version {v}"),
            );
            return reply::error(400, req_id, &err);
        }
        let Some(sid) = headers.get("Mcp-Session-Id").map(str::trim) else {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            );
            return reply::error(400, req_id, &err);
        };
        if !plausible_id(sid) {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "Bad Request: malformed Mcp-Session-Id",
            );
            return reply::error(400, req_id, &err);
        }
        let limits = self.config.limits;
        let Some(session) = self.sessions.get_mut(sid) else {
            return reply::error(
                404,
                req_id,
                &RpcError::new(reply::SESSION_NOT_FOUND, "Session not found"),
            );
        };
        session.last_seen_ms = now_ms;
        let serial = session.serial;
        let version = session.version;
        let admitted = session.window.admit(now_ms, limits.requests_per_second);
        match incoming {
            Incoming::Single(Err(f)) => reply::error(400, f.id.as_ref(), &f.error),
            Incoming::Single(Ok(msg)) => {
                if !admitted {
                    let why = "more requests per second than allowed";
                    return match (&msg, msg.method()) {
                        // Cancellations and answers to our own requests reduce work: never
                        // refused.
                        (Message::Response { .. }, _) | (_, Some("notifications/cancelled")) => {
                            self.legacy_message(serial, &msg, headers, peer, now_ms)
                        }
                        (Message::Request { id, .. }, Some("tools/call")) => {
                            self.busy_result(id, Era::Legacy(version), why)
                        }
                        _ => reply::busy(msg.id(), why),
                    };
                }
                self.legacy_message(serial, &msg, headers, peer, now_ms)
            }
            Incoming::Batch(items) => {
                if version != BATCH_VERSION {
                    let err = RpcError::new(
                        jsonrpc::INVALID_REQUEST,
                        format!("Invalid Request: batches are not supported in protocol {version}"),
                    );
                    return reply::error(400, None, &err);
                }
                if items.len() > limits.batch_items {
                    let err = RpcError::new(
                        jsonrpc::INVALID_REQUEST,
                        format!(
                            "Invalid Request: a batch of {} items; at most {} are answered",
                            items.len(),
                            limits.batch_items
                        ),
                    );
                    return reply::error(413, None, &err);
                }
                if !admitted {
                    return reply::busy(None, "more requests per second than allowed");
                }
                self.batch(serial, items, headers, peer, now_ms)
            }
        }
    }

    /// 2025-03-26 batches: each request is answered in a JSON array; a batch of only
    /// notifications gets 202. Tool calls cannot be batched here: their results may stream,
    /// so a batched `tools/call` gets -32600 asking for it to be sent alone, as does any other
    /// request whose answer streams. Every item after the first (counted by the caller)
    /// counts against the session's rate, and the answer is capped in bytes: items past
    /// either limit are answered with an error instead of being run.
    fn batch(
        &mut self,
        serial: u64,
        items: Vec<Result<Message, ParseFailure>>,
        headers: &Headers,
        peer: Peer,
        now_ms: u64,
    ) -> Response {
        let limits = self.config.limits;
        let mut out: Vec<u8> = Vec::from(&b"["[..]);
        let mut any = false;
        for (i, item) in items.into_iter().enumerate() {
            let over_rate = i > 0
                && !self
                    .sessions
                    .find_serial(serial)
                    .is_some_and(|s| s.window.admit(now_ms, limits.requests_per_second));
            let bytes = match item {
                Err(f) => Some(jsonrpc::error_response(f.id.as_ref(), &f.error)),
                Ok(m @ Message::Request { .. }) if over_rate => Some(jsonrpc::error_response(
                    m.id(),
                    &reply::busy_error("more requests per second than allowed"),
                )),
                Ok(m @ Message::Request { .. }) if out.len() >= limits.batch_answer_bytes => {
                    Some(jsonrpc::error_response(
                        m.id(),
                        &reply::busy_error("the batch's answer is full; send this request again"),
                    ))
                }
                Ok(m @ Message::Request { .. })
                    if matches!(m.method(), Some("tools/call" | "initialize")) =>
                {
                    let err = RpcError::new(
                        jsonrpc::INVALID_REQUEST,
                        "Invalid Request: send this method alone, not in a batch",
                    );
                    Some(jsonrpc::error_response(m.id(), &err))
                }
                Ok(m) => {
                    let r = self.legacy_message(serial, &m, headers, peer, now_ms);
                    match r.body.joined() {
                        Body::Full(b) if m.id().is_some() => Some(b),
                        Body::Stream(_) if m.id().is_some() => {
                            let err = RpcError::new(
                                jsonrpc::INVALID_REQUEST,
                                "Invalid Request: this answer streams; send the request alone",
                            );
                            Some(jsonrpc::error_response(m.id(), &err))
                        }
                        _ => None,
                    }
                }
            };
            if let Some(b) = bytes {
                if any {
                    out.push(b',');
                }
                out.extend_from_slice(&b);
                any = true;
            }
        }
        if !any {
            return reply::accepted();
        }
        out.push(b']');
        reply::json(200, out)
    }

    fn legacy_message(
        &mut self,
        serial: u64,
        msg: &Message,
        headers: &Headers,
        peer: Peer,
        now_ms: u64,
    ) -> Response {
        let key = Key::Session(serial);
        match msg {
            Message::Response {
                id: Some(id),
                outcome,
            } => {
                self.answers
                    .borrow_mut()
                    .deliver(serial, id, outcome.clone());
                reply::accepted()
            }
            Message::Response { id: None, .. } => reply::accepted(),
            Message::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(rid) = params
                        .and_then(|p| p.get("requestId"))
                        .and_then(|r| r.to_value())
                {
                    self.calls.cancel_request(key, &rid);
                }
                reply::accepted()
            }
            Message::Request { id, method, params } => {
                let params = match object_params(*params) {
                    Ok(p) => p,
                    Err(e) => return reply::error(200, Some(id), &e),
                };
                let Some(session) = self.sessions.find_serial(serial) else {
                    return reply::error(
                        404,
                        None,
                        &RpcError::new(reply::SESSION_NOT_FOUND, "Session not found"),
                    );
                };
                let version = session.version;
                match method.as_ref() {
                    "ping" => return reply::result(id, &json!({})),
                    "logging/setLevel" => {
                        return match params
                            .get("level")
                            .and_then(|l| l.as_str())
                            .as_deref()
                            .and_then(LogLevel::parse)
                        {
                            Some(level) => {
                                session.log_level = Some(level);
                                reply::result(id, &json!({}))
                            }
                            None => reply::error(
                                200,
                                Some(id),
                                &RpcError::invalid_params("Invalid params: unknown level"),
                            ),
                        };
                    }
                    _ => {}
                }
                let caps = session.client_capabilities.clone();
                let log_level = session.log_level;
                let tag = session_tag(&session.id);
                let sse_ids = Some((serial, session.streams));
                session.streams += 1;
                let retry = (version >= "2025-11-25").then_some(self.config.limits.sse_retry_ms);
                let cx = Cx {
                    era: Era::Legacy(version),
                    id,
                    params,
                    caps: &caps,
                    accept: headers.get("Accept"),
                    progress_token: params
                        .get("_meta")
                        .and_then(|m| m.get("progressToken"))
                        .and_then(|t| t.to_value()),
                    log_level,
                    key,
                    sse_ids,
                    sse_retry_ms: retry,
                    now_ms,
                    headers: None,
                    client: peer.addr,
                    session_tag: Some(tag),
                };
                if let Some(on) = match method.as_ref() {
                    "resources/subscribe" if self.can_subscribe() => Some(true),
                    "resources/unsubscribe" if self.can_subscribe() => Some(false),
                    _ => None,
                } {
                    return self.subscribe(serial, &cx, on);
                }
                self.dispatch(method, &cx)
            }
        }
    }

    fn initialize(&mut self, msg: &Message, peer: Peer, now_ms: u64) -> Response {
        let Message::Request { id, params, .. } = msg else {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "Invalid Request: initialize must be a request",
            );
            return reply::error(400, None, &err);
        };
        let limits = self.config.limits;
        if !self.clients.admit(
            peer.addr,
            now_ms,
            limits.requests_per_second,
            limits.max_clients,
        ) {
            return reply::busy(Some(id), "more requests per second than allowed");
        }
        let Some(requested) = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(|v| v.as_str())
        else {
            return reply::error(
                200,
                Some(id),
                &RpcError::invalid_params("Invalid params: protocolVersion is required"),
            );
        };
        let version = LEGACY_VERSIONS
            .iter()
            .copied()
            .find(|v| *v == requested)
            .unwrap_or(LEGACY_VERSIONS[0]);
        let caps = params
            .and_then(|p| p.get("capabilities"))
            .filter(|c| c.is_object())
            .and_then(|c| c.to_value());
        let calls = &mut self.calls;
        let created = self.sessions.create(
            limits.max_sessions,
            &mut *self.entropy,
            version,
            caps.unwrap_or_else(|| json!({})),
            now_ms,
            |serial| calls.busy(Key::Session(serial)),
        );
        let (session_id, evicted) = match created {
            Ok((s, evicted)) => (s.id.clone(), evicted),
            Err(_) => {
                let mut r = reply::error(
                    503,
                    Some(id),
                    &RpcError::with_data(
                        reply::BUSY,
                        "E_BUSY: all sessions are in use",
                        json!({"code": "E_BUSY"}),
                    ),
                );
                r.headers.push("Retry-After", "5");
                return r;
            }
        };
        if let Some(serial) = evicted {
            self.calls.cancel_all(Key::Session(serial));
            self.forget_subscriptions(serial);
        }
        let mut result = Map::new();
        result.insert("protocolVersion".into(), Value::from(version));
        let mut caps = Vec::new();
        self.write_capabilities(false, &mut caps);
        let caps = json_value(&caps).unwrap_or(Value::Null);
        result.insert("capabilities".into(), caps);
        result.insert(
            "serverInfo".into(),
            json!({"name": SERVER_NAME, "version": self.config.version}),
        );
        // Kept only as JSON (see `instructions_json`): read back for this rare answer.
        if let Some(text) = self.instructions_json.as_deref().and_then(json_value) {
            result.insert("instructions".into(), text);
        }
        let mut r = reply::result(id, &Value::Object(result));
        r.headers.push("Mcp-Session-Id", session_id);
        r
    }
}

/// JSON this server wrote, read back as a value (as request bodies are read).
fn json_value(json: &[u8]) -> Option<Value> {
    read_value(core::str::from_utf8(json).ok()?)
}
