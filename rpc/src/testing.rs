//! Test support for everything that talks to the MCP endpoint, in one copy: the request
//! envelope of both eras, a raw HTTP/1.1 serialiser, an SSE frame reader and a seeded PRNG.
//!
//! Not part of the product: rpc's own tests get it through `cfg(test)`, other crates through
//! the `testing` feature (`rpc = { …, features = ["testing"] }` under `[dev-dependencies]`),
//! so a protocol-version bump is one edit here instead of one per test suite.
//!
//! ```
//! use rpc::testing::{McpRequest, messages};
//! use serde_json::json;
//!
//! // A modern tools/call with a progress token, as a TCP client would send it…
//! let req = McpRequest::modern("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}))
//!     .meta("progressToken", json!("p1"));
//! let wire = req.http("/mcp", "indy", None);
//! assert!(wire.starts_with(b"POST /mcp HTTP/1.1\r\n"));
//! // …or handed to a server in process: `let mut resp = req.send(&mut server, now_ms);`,
//! // then `messages(&drain(&mut resp, now_ms, 10_000).0)`.
//! assert_eq!(messages(b"data: {\"id\":1}\n\n")[0]["id"], 1);
//! ```
//!
//! The hand-built envelopes elsewhere map onto it like this:
//! - in-process harness (`request(s, method, name, params)`):
//!   `McpRequest::modern(method, params).send(s, now)`, then
//!   `last_message(&drain(&mut resp, now, 10_000).0)`; `Mcp-Name` follows from `params`;
//! - an SSE call with a progress token: `.id(7).meta("progressToken", json!("p1"))`, the body
//!   polled by hand and its pieces fed to an [`SseReader`];
//! - a raw TCP request (`mcp_request(id, method, params, extra_meta, accept)`):
//!   `McpRequest::modern(method, params).id(id).meta(key, value).accept(accept)`, then
//!   `.http("/mcp", "indy", token)`;
//! - a legacy session request: `McpRequest::legacy(session_id, method, params)`, after
//!   `McpRequest::initialize(version)` answered with the `Mcp-Session-Id`.

use crate::http::{Body, BodyPoll, Headers, Method, Peer, Response};
use crate::mcp::{MODERN_VERSION, McpServer};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde_json::{Map, Value, json};

/// The legacy protocol version [`McpRequest::legacy`] speaks (the newest of that family).
pub const LEGACY_VERSION: &str = "2025-11-25";

/// The `Accept` header of a client that takes both JSON and SSE answers.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// The peer [`McpRequest::send`] presents: a loopback client.
pub const LOOPBACK: Peer = Peer {
    addr: [127, 0, 0, 1],
    port: 40000,
};

/// The `params._meta` every 2026-07-28 request must carry: the protocol version and (empty)
/// client capabilities. For tests that build a body by hand.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// Which envelope a request gets.
#[derive(Clone, Debug)]
enum Era {
    /// 2026-07-28: `_meta` in the body, mirrored by `MCP-Protocol-Version`, `Mcp-Method` and
    /// `Mcp-Name`.
    Modern,
    /// The 2025-11-25 family inside a session.
    Legacy { session: String },
    /// A legacy `initialize`: no session yet, the version is in the body.
    Initialize,
}

/// One JSON-RPC request over MCP's HTTP transport, with the headers its era requires.
///
/// Build it with [`McpRequest::modern`], [`McpRequest::legacy`] or
/// [`McpRequest::initialize`], adjust it with the chained setters, then either
/// [`send`](McpRequest::send) it to an in-process [`McpServer`] or serialise it with
/// [`http`](McpRequest::http) for a socket. The defaults are what a well-behaved client sends:
/// JSON-RPC id 1, `Accept` for JSON and SSE, `Content-Type: application/json`.
#[derive(Clone, Debug)]
pub struct McpRequest {
    era: Era,
    id: Value,
    method: String,
    params: Map<String, Value>,
    name: Option<String>,
    accept: String,
    extra: Vec<(String, String)>,
    replaced: Option<Value>,
}

impl McpRequest {
    /// A 2026-07-28 request. `params` is a JSON object (anything else counts as `{}`); any
    /// `_meta` in it is merged over [`modern_meta`]. `Mcp-Name` mirrors `params.name` for
    /// `tools/call` and `prompts/get` and `params.uri` for `resources/read`, as the server
    /// checks.
    pub fn modern(method: &str, params: Value) -> Self {
        let mut params = object(params);
        let mut meta = object(modern_meta());
        if let Some(Value::Object(given)) = params.remove("_meta") {
            meta.extend(given);
        }
        params.insert("_meta".into(), Value::Object(meta));
        let name = match method {
            "tools/call" | "prompts/get" => params.get("name"),
            "resources/read" => params.get("uri"),
            _ => None,
        }
        .and_then(Value::as_str)
        .map(String::from);
        Self::new(Era::Modern, method, params, name)
    }

    /// A request of the 2025-11-25 family inside the session `session` (the
    /// `Mcp-Session-Id` an `initialize` answer carried).
    pub fn legacy(session: &str, method: &str, params: Value) -> Self {
        let era = Era::Legacy {
            session: session.into(),
        };
        Self::new(era, method, object(params), None)
    }

    /// A legacy `initialize` asking for protocol `version`, with empty capabilities and a
    /// client name; id 0.
    pub fn initialize(version: &str) -> Self {
        let params = json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "irix7-tests", "version": "1"},
        });
        Self::new(Era::Initialize, "initialize", object(params), None).id(0)
    }

    fn new(era: Era, method: &str, params: Map<String, Value>, name: Option<String>) -> Self {
        Self {
            era,
            id: json!(1),
            method: method.into(),
            params,
            name,
            accept: ACCEPT_BOTH.into(),
            extra: Vec::new(),
            replaced: None,
        }
    }

    /// The JSON-RPC id (any JSON value; the default is 1).
    pub fn id(mut self, id: impl Into<Value>) -> Self {
        self.id = id.into();
        self
    }

    /// Sets one top-level entry of `params` (e.g. an `initialize`'s `capabilities`).
    pub fn param(mut self, key: &str, value: Value) -> Self {
        self.params.insert(key.into(), value);
        self
    }

    /// Sets one `params._meta` entry, e.g. `progressToken`, `…/logLevel`, `…/clientInfo`.
    pub fn meta(mut self, key: &str, value: Value) -> Self {
        let meta = self
            .params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.insert(key.into(), value);
        }
        self
    }

    /// The client capabilities announced in `_meta` (modern era; the default is `{}`).
    pub fn capabilities(self, caps: Value) -> Self {
        self.meta("io.modelcontextprotocol/clientCapabilities", caps)
    }

    /// The `Accept` header (the default takes JSON and SSE).
    pub fn accept(mut self, accept: &str) -> Self {
        self.accept = accept.into();
        self
    }

    /// One more header, after the envelope's own (e.g. `Authorization`, `Origin`,
    /// `Mcp-Param-*`).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.extra.push((name.into(), value.into()));
        self
    }

    /// Sends `body` instead of the request object (a batch, a notification, a malformed
    /// message); the headers still follow the era and method the request was built with.
    pub fn replace_body(mut self, body: Value) -> Self {
        self.replaced = Some(body);
        self
    }

    /// The JSON-RPC request object (or what [`replace_body`](McpRequest::replace_body) set).
    pub fn body_value(&self) -> Value {
        if let Some(b) = &self.replaced {
            return b.clone();
        }
        json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "method": self.method,
            "params": self.params,
        })
    }

    /// The body bytes.
    pub fn body(&self) -> Vec<u8> {
        self.body_value().to_string().into_bytes()
    }

    /// The request's headers in wire order, without `Host` and `Content-Length` (which belong
    /// to the HTTP message, see [`McpRequest::http`]).
    pub fn header_list(&self) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = Vec::new();
        let mut put = |n: &str, v: &str| h.push((n.into(), v.into()));
        put("Content-Type", "application/json");
        put("Accept", &self.accept);
        match &self.era {
            Era::Modern => {
                put("MCP-Protocol-Version", MODERN_VERSION);
                put("Mcp-Method", &self.method);
                if let Some(n) = &self.name {
                    put("Mcp-Name", n);
                }
            }
            Era::Legacy { session } => {
                put("Mcp-Session-Id", session);
                put("MCP-Protocol-Version", LEGACY_VERSION);
            }
            Era::Initialize => {}
        }
        h.extend(self.extra.iter().cloned());
        h
    }

    /// The headers as the server's [`Headers`], for [`McpServer::handle_parts`].
    pub fn headers(&self) -> Headers {
        let mut h = Headers::default();
        for (name, value) in self.header_list() {
            h.push(name, value);
        }
        h
    }

    /// Hands the request to `server` as a POST from [`LOOPBACK`] at `now_ms`.
    pub fn send<C: 'static>(&self, server: &mut McpServer<C>, now_ms: u64) -> Response {
        server.handle_parts(
            &Method::Post,
            &self.headers(),
            &self.body(),
            LOOPBACK,
            now_ms,
        )
    }

    /// The request as HTTP/1.1 bytes for a socket: see [`http_post`].
    pub fn http(&self, path: &str, host: &str, token: Option<&str>) -> Vec<u8> {
        http_post(path, host, token, &self.header_list(), &self.body())
    }
}

/// A JSON value as an object; anything else becomes the empty object.
fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A complete HTTP/1.1 POST: the request line for `path`, `Host: host`, `Authorization:
/// Bearer token` when there is one, `headers` in order, `Content-Length` and the body.
pub fn http_post(
    path: &str,
    host: &str,
    token: Option<&str>,
    headers: &[(String, String)],
    body: &[u8],
) -> Vec<u8> {
    let mut head = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\n");
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Drains a response body, polling a streamed one at most `max_polls` times (time advances
/// 10 ms per poll). Returns the bytes and whether the body ended.
pub fn drain(resp: &mut Response, mut now_ms: u64, max_polls: usize) -> (Vec<u8>, bool) {
    match &mut resp.body {
        Body::Empty => (Vec::new(), true),
        Body::Full(b) => (b.clone(), true),
        Body::Spliced(own, splice) => {
            let mut b = own[..splice.at].to_vec();
            b.extend_from_slice(splice.bytes());
            b.extend_from_slice(&own[splice.at..]);
            (b, true)
        }
        Body::Stream(src) => {
            let mut out = Vec::new();
            for _ in 0..max_polls {
                match src.poll(&mut out, 1024, now_ms) {
                    BodyPoll::End => return (out, true),
                    BodyPoll::Data | BodyPoll::Pending => now_ms += 10,
                }
            }
            (out, false)
        }
    }
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id:` field, if the event had one.
    pub id: Option<String>,
    /// The `retry:` field, if the event had one.
    pub retry: Option<String>,
    /// The `data:` lines, joined with `\n` (empty for a priming event).
    pub data: String,
}

/// Splits a stream of SSE bytes into events as they complete; bytes of an unfinished event
/// are kept for the next [`feed`](SseReader::feed), so it can follow a body arriving in pieces.
#[derive(Debug, Default)]
pub struct SseReader {
    pending: Vec<u8>,
}

impl SseReader {
    /// Takes the next bytes of the stream; returns the events they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = find(&self.pending, b"\n\n") {
            let frame: Vec<u8> = self.pending.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&frame);
            let mut ev = SseEvent::default();
            let mut data: Vec<&str> = Vec::new();
            for line in text.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "data" => data.push(value),
                    "id" => ev.id = Some(value.to_string()),
                    "retry" => ev.retry = Some(value.to_string()),
                    _ => {}
                }
            }
            if data.is_empty() && ev.id.is_none() && ev.retry.is_none() {
                continue;
            }
            ev.data = data.join("\n");
            events.push(ev);
        }
        events
    }
}

/// Where `needle` first occurs in `hay`.
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The complete events of an SSE body.
pub fn sse_events(body: &[u8]) -> Vec<SseEvent> {
    SseReader::default().feed(body)
}

/// The JSON-RPC messages of a response body: the body itself when it is one JSON value,
/// else the JSON of each SSE event that carries data.
pub fn messages(body: &[u8]) -> Vec<Value> {
    if let Ok(v) = serde_json::from_slice(body) {
        return alloc::vec![v];
    }
    sse_events(body)
        .iter()
        .filter(|e| !e.data.is_empty())
        .filter_map(|e| serde_json::from_str(&e.data).ok())
        .collect()
}

/// The last JSON-RPC message of a response body: the answer to the request, after any
/// notifications an SSE stream carried before it.
pub fn last_message(body: &[u8]) -> Option<Value> {
    messages(body).pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_envelope_merges_meta_and_mirrors_the_name() {
        let req = McpRequest::modern(
            "resources/read",
            json!({"uri": "irix7://status", "_meta": {"progressToken": 3}}),
        )
        .id(9);
        let body = req.body_value();
        assert_eq!(body["id"], 9);
        assert_eq!(body["params"]["_meta"]["progressToken"], 3);
        assert_eq!(
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            MODERN_VERSION
        );
        let h = req.headers();
        assert_eq!(h.get("Mcp-Method"), Some("resources/read"));
        assert_eq!(h.get("Mcp-Name"), Some("irix7://status"));
        assert_eq!(h.get("MCP-Protocol-Version"), Some(MODERN_VERSION));
        // No name header where the server checks none.
        let list = McpRequest::modern("tools/list", json!({"name": "x"}));
        assert_eq!(list.headers().get("Mcp-Name"), None);
    }

    #[test]
    fn legacy_envelope_names_the_session_and_no_method() {
        let h = McpRequest::legacy("abc", "ping", json!({})).headers();
        assert_eq!(h.get("Mcp-Session-Id"), Some("abc"));
        assert_eq!(h.get("MCP-Protocol-Version"), Some(LEGACY_VERSION));
        assert_eq!(h.get("Mcp-Method"), None);
        let init = McpRequest::initialize("2025-03-26");
        assert_eq!(init.body_value()["params"]["protocolVersion"], "2025-03-26");
        assert_eq!(init.headers().get("MCP-Protocol-Version"), None);
    }

    #[test]
    fn http_post_frames_the_body() {
        let req = McpRequest::modern("tools/list", json!({})).header("Origin", "http://x");
        let wire = String::from_utf8(req.http("/mcp", "indy", Some("t0k"))).unwrap();
        let (head, body) = wire.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("POST /mcp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer t0k\r\n")
        );
        assert!(head.ends_with(&format!(
            "Origin: http://x\r\nContent-Length: {}",
            body.len()
        )));
        assert_eq!(body.as_bytes(), &req.body()[..]);
    }

    #[test]
    fn sse_reader_waits_for_whole_events() {
        let mut r = SseReader::default();
        let first = r.feed(b"id: 1\nretry: 50\ndata:\n\nid: 2\ndata: {\"a\"");
        assert_eq!(first.len(), 1, "the second event is not complete yet");
        assert_eq!(
            (first[0].id.as_deref(), first[0].data.as_str()),
            (Some("1"), "")
        );
        let evs = r.feed(b":1}\n\n");
        assert_eq!(evs.len(), 1);
        assert_eq!(
            (evs[0].id.as_deref(), evs[0].data.as_str()),
            (Some("2"), "{\"a\":1}")
        );
        let all = sse_events(b"id: 1\nretry: 50\ndata:\n\ndata: {\"b\":2}\n\n");
        assert_eq!(all[0].retry.as_deref(), Some("50"));
        assert_eq!(messages(b"data: {\"b\":2}\n\ndata: {\"c\":3}\n\n").len(), 2);
        assert_eq!(last_message(b"{\"d\":4}"), Some(json!({"d": 4})));
    }
}
