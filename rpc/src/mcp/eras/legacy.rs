//! The session-based era (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): `initialize`
//! opens a session named by `Mcp-Session-Id`; every later request carries that id.
//!
//! These are the era's checks and answers; `McpServer::legacy` in `dispatch.rs` runs them and
//! dispatches what they let through.

use crate::http::{Body, Headers, Peer, Response};
use crate::json::{ValueRef, read_value};
use crate::jsonrpc::{self, Id, Incoming, Message, ParseFailure, RpcError};
use crate::mcp::eras::session::{Sessions, plausible_id};
use crate::mcp::guard::authority::{Client, Key, Owner};
use crate::mcp::guard::config::Limits;
use crate::mcp::guard::limits::Calls;
use crate::mcp::guard::request::{Cx, Era, Exchange, SESSION_TAG, object_params, session_tag};
use crate::mcp::tools::inputs::Answers;
use crate::mcp::tools::result::{Offers, write_capabilities};
use crate::mcp::wire::reply;
use crate::mcp::wire::tool::LogLevel;
use crate::mcp::wire::version::{LEGACY_VERSIONS, SERVER_NAME};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Map, Value, json};

/// Batches were allowed only by this version.
const BATCH_VERSION: &str = "2025-03-26";

/// The session a POST names, found and touched.
pub(crate) struct Admitted {
    pub(crate) serial: u64,
    pub(crate) version: &'static str,
}

/// Finds `owner`'s session of a POST other than `initialize` from its headers (version,
/// session id) and marks it seen. `Err` is the answer for a missing, malformed or unknown
/// session (another owner's is unknown).
pub(crate) fn session(
    sessions: &mut Sessions,
    incoming: &Incoming,
    headers: &Headers,
    owner: Owner,
    now_ms: u64,
) -> Result<Admitted, Response> {
    // Session errors echo the request's id when there is one.
    let req_id = match incoming {
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
        return Err(reply::error(400, req_id, &err));
    }
    let Some(sid) = headers.get("Mcp-Session-Id").map(str::trim) else {
        let err = RpcError::new(
            jsonrpc::INVALID_REQUEST,
            "Bad Request: Mcp-Session-Id header is required",
        );
        return Err(reply::error(400, req_id, &err));
    };
    if !plausible_id(sid) {
        let err = RpcError::new(
            jsonrpc::INVALID_REQUEST,
            "Bad Request: malformed Mcp-Session-Id",
        );
        return Err(reply::error(400, req_id, &err));
    }
    let Some(session) = sessions.get_mut(sid, owner) else {
        return Err(reply::error(
            404,
            req_id,
            &RpcError::new(reply::SESSION_NOT_FOUND, "Session not found"),
        ));
    };
    session.last_seen_ms = now_ms;
    session.returned = true;
    Ok(Admitted {
        serial: session.serial,
        version: session.version,
    })
}

/// The refusal of a batch of `items` messages, if any: batches exist only in
/// [`BATCH_VERSION`], hold at most `Limits::batch_items`, and count against the rate.
pub(crate) fn batch_refused(
    version: &str,
    items: usize,
    limits: &Limits,
    within_rate: bool,
) -> Option<Response> {
    if version != BATCH_VERSION {
        let err = RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!("Invalid Request: batches are not supported in protocol {version}"),
        );
        return Some(reply::error(400, None, &err));
    }
    if items > limits.batch_items {
        let err = RpcError::new(
            jsonrpc::INVALID_REQUEST,
            format!(
                "Invalid Request: a batch of {items} items; at most {} are answered",
                limits.batch_items
            ),
        );
        return Some(reply::error(413, None, &err));
    }
    if !within_rate {
        return Some(reply::busy(None, reply::OVER_RATE));
    }
    None
}

/// The answer to a batch: a JSON array of the items' answers, or 202 when none has one.
pub(crate) struct BatchAnswer {
    out: Vec<u8>,
    any: bool,
}

impl BatchAnswer {
    pub(crate) fn new() -> Self {
        BatchAnswer {
            out: Vec::from(&b"["[..]),
            any: false,
        }
    }

    /// Bytes of the answer so far.
    pub(crate) fn bytes(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn push(&mut self, answer: Option<Vec<u8>>) {
        let Some(b) = answer else {
            return;
        };
        if self.any {
            self.out.push(b',');
        }
        self.out.extend_from_slice(&b);
        self.any = true;
    }

    pub(crate) fn finish(mut self) -> Response {
        if !self.any {
            return reply::accepted();
        }
        self.out.push(b']');
        reply::json(200, self.out)
    }
}

/// A batch item to run, or the answer it gets without being run: a parse failure, a request
/// past the rate (`over_rate`) or the answer's byte bound (`answered` bytes so far), or a
/// method that must be sent alone.
pub(crate) fn batch_item<'a>(
    item: Result<Message<'a>, ParseFailure>,
    over_rate: bool,
    answered: usize,
    limits: &Limits,
) -> Result<Message<'a>, Vec<u8>> {
    match item {
        Err(f) => Err(jsonrpc::error_response(f.id.as_ref(), &f.error)),
        Ok(m @ Message::Request { .. }) if over_rate => Err(jsonrpc::error_response(
            m.id(),
            &reply::busy_error(reply::OVER_RATE),
        )),
        Ok(m @ Message::Request { .. }) if answered >= limits.batch_answer_bytes => {
            Err(jsonrpc::error_response(
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
            Err(jsonrpc::error_response(m.id(), &err))
        }
        Ok(m) => Ok(m),
    }
}

/// What a batch item that ran answered inside the batch: its JSON, an error for an answer
/// that streams, nothing for a notification.
pub(crate) fn batch_item_answer(msg: &Message, r: Response) -> Option<Vec<u8>> {
    match r.body.joined() {
        Body::Full(b) if msg.id().is_some() => Some(b),
        Body::Stream(_) if msg.id().is_some() => {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                "Invalid Request: this answer streams; send the request alone",
            );
            Some(jsonrpc::error_response(msg.id(), &err))
        }
        _ => None,
    }
}

/// A request of session `serial` that dispatch answers, with what its session says about it.
pub(crate) struct Request<'m> {
    pub(crate) id: &'m Id,
    pub(crate) method: &'m str,
    params: ValueRef<'m>,
    version: &'static str,
    caps: Value,
    log_level: Option<LogLevel>,
    tag: [u8; SESSION_TAG],
    sse_ids: Option<(u64, u64)>,
    sse_retry_ms: Option<u64>,
}

impl Request<'_> {
    /// The request's context for dispatch.
    pub(crate) fn cx<'a>(
        &'a self,
        serial: u64,
        headers: &'a Headers,
        peer: Peer,
        now_ms: u64,
        ex: &'a Exchange,
    ) -> Cx<'a> {
        Cx {
            era: Era::Legacy(self.version),
            id: self.id,
            params: self.params,
            caps: &self.caps,
            accept: headers.get("Accept"),
            progress_token: self
                .params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .and_then(|t| t.to_value()),
            log_level: self.log_level,
            key: Key {
                owner: ex.owner,
                client: Client::Session(serial),
            },
            sse_ids: self.sse_ids,
            sse_retry_ms: self.sse_retry_ms,
            now_ms,
            headers: None,
            client: peer.addr,
            session_tag: Some(self.tag),
            authority: ex.authority.clone(),
            lent: &ex.lent,
            packed: &ex.packed,
        }
    }
}

/// A message of `owner`'s session `serial`: client answers are delivered (`answers`), cancellations
/// cancel (`calls`), `ping` and `logging/setLevel` are answered here; `Ok` is a request for
/// dispatch.
pub(crate) fn message<'m>(
    serial: u64,
    owner: Owner,
    msg: &'m Message,
    sessions: &mut Sessions,
    answers: &RefCell<Answers>,
    calls: &mut Calls,
    limits: &Limits,
) -> Result<Request<'m>, Response> {
    let key = Key {
        owner,
        client: Client::Session(serial),
    };
    let (id, method, params) = match msg {
        Message::Response {
            id: Some(id),
            outcome,
        } => {
            answers.borrow_mut().deliver(serial, id, outcome.clone());
            return Err(reply::accepted());
        }
        Message::Response { id: None, .. } => return Err(reply::accepted()),
        Message::Notification { method, params } => {
            if method == "notifications/cancelled"
                && let Some(rid) = params
                    .and_then(|p| p.get("requestId"))
                    .and_then(|r| r.to_value())
            {
                calls.cancel_request(key, &rid);
            }
            return Err(reply::accepted());
        }
        Message::Request { id, method, params } => (id, method, params),
    };
    let params = match object_params(*params) {
        Ok(p) => p,
        Err(e) => return Err(reply::error(200, Some(id), &e)),
    };
    let Some(session) = sessions.find_serial(serial) else {
        return Err(reply::error(
            404,
            None,
            &RpcError::new(reply::SESSION_NOT_FOUND, "Session not found"),
        ));
    };
    let version = session.version;
    match method.as_ref() {
        "ping" => return Err(reply::result(id, &json!({}))),
        "logging/setLevel" => {
            return Err(
                match params
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
                },
            );
        }
        _ => {}
    }
    let sse_ids = Some((serial, session.streams));
    session.streams += 1;
    Ok(Request {
        id,
        method,
        params,
        version,
        caps: session.client_capabilities.clone(),
        log_level: session.log_level,
        tag: session_tag(&session.id),
        sse_ids,
        sse_retry_ms: (version >= "2025-11-25").then_some(limits.sse_retry_ms),
    })
}

/// The 400 for an `initialize` that is not a request.
pub(crate) fn initialize_not_a_request() -> Response {
    let err = RpcError::new(
        jsonrpc::INVALID_REQUEST,
        "Invalid Request: initialize must be a request",
    );
    reply::error(400, None, &err)
}

/// The version an `initialize` gets (the one it asks for if known, else the newest) and the
/// client capabilities it declares; `Err` when it names no version.
pub(crate) fn opening(
    id: &Id,
    params: Option<ValueRef<'_>>,
) -> Result<(&'static str, Option<Value>), Response> {
    let Some(requested) = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(|v| v.as_str())
    else {
        return Err(reply::error(
            200,
            Some(id),
            &RpcError::invalid_params("Invalid params: protocolVersion is required"),
        ));
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
    Ok((version, caps))
}

/// The 503 when every session is in use and none could be evicted.
pub(crate) fn sessions_full(id: &Id) -> Response {
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
    r
}

/// The `InitializeResult` of a new session `session_id`.
pub(crate) fn initialized(
    id: &Id,
    version: &'static str,
    session_id: String,
    offers: Offers,
    server_version: &str,
    instructions_json: Option<&[u8]>,
) -> Response {
    let mut result = Map::new();
    result.insert("protocolVersion".into(), Value::from(version));
    let mut caps = Vec::new();
    write_capabilities(offers, false, &mut caps);
    let caps = json_value(&caps).unwrap_or(Value::Null);
    result.insert("capabilities".into(), caps);
    result.insert(
        "serverInfo".into(),
        json!({"name": SERVER_NAME, "version": server_version}),
    );
    // Kept only as JSON (see `instructions_json`): read back for this rare answer.
    if let Some(text) = instructions_json.and_then(json_value) {
        result.insert("instructions".into(), text);
    }
    let mut r = reply::result(id, &Value::Object(result));
    r.headers.push("Mcp-Session-Id", session_id);
    r
}

/// JSON this server wrote, read back as a value (as request bodies are read).
fn json_value(json: &[u8]) -> Option<Value> {
    read_value(core::str::from_utf8(json).ok()?)
}
