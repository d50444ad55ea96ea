//! End-to-end tests of the endpoint: an HTTP request in, a response out (streamed bodies
//! drained), for both eras.

extern crate std;

use super::fuzz::drain;
use super::*;
use crate::http::{Body, BodyPoll, Headers, Method, Peer, Response};
use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use base64::Engine;
use core::cell::RefCell;
use serde_json::{Value, json};

/// The fake subsystems the test tools use.
#[derive(Default)]
struct Ctx {
    cancelled: u32,
    steps: u32,
}

const PEER: Peer = Peer {
    addr: [127, 0, 0, 1],
    port: 40000,
};
const T0: u64 = 1_000_000;

fn echo(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let text = call.args.get("text").and_then(Value::as_str).unwrap_or("");
    Ok(Started::Done(ToolOutput::text(text)))
}

fn add(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let a = call.args.get("a").and_then(Value::as_i64).unwrap_or(0);
    let b = call.args.get("b").and_then(Value::as_i64).unwrap_or(0);
    Ok(Started::Done(ToolOutput::structured(json!({"sum": a + b}))))
}

fn bad_out(_: &mut Ctx, _: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    Ok(Started::Done(ToolOutput::structured(
        json!({"sum": "seven"}),
    )))
}

fn fail(_: &mut Ctx, _: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    Err(ToolError::new("NOT_FOUND", "no such file: /x"))
}

/// Runs `steps` steps, reporting progress and logging, then answers.
struct Slow {
    left: u32,
    total: u32,
}

impl ToolRun<Ctx> for Slow {
    fn step(&mut self, ctx: &mut Ctx, io: &mut StepIo<'_>) -> Step<Ctx> {
        ctx.steps += 1;
        if self.left == 0 {
            return Step::Done(ToolOutput::text("slow done"));
        }
        let done = self.total - self.left;
        io.progress(
            f64::from(done),
            Some(f64::from(self.total)),
            Some("working"),
        );
        // A repeated value must not reach the client.
        io.progress(f64::from(done), Some(f64::from(self.total)), None);
        io.log(LogLevel::Debug, json!("debug detail"));
        io.log(LogLevel::Info, json!({"step": done}));
        self.left -= 1;
        Step::Pending
    }

    fn cancel(&mut self, ctx: &mut Ctx) {
        ctx.cancelled += 1;
    }
}

fn slow(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let steps = call.args.get("steps").and_then(Value::as_u64).unwrap_or(3) as u32;
    Ok(Started::Run(Box::new(Slow {
        left: steps,
        total: steps,
    })))
}

/// Serves `len` bytes of a pattern with quotes, newlines and multi-byte characters.
struct Pattern {
    sent: usize,
    len: usize,
    fail_at: Option<usize>,
}

fn pattern_byte(i: usize) -> u8 {
    b"ab\"c\\\n\x01xyz"[i % 10]
}

impl ContentSource<Ctx> for Pattern {
    fn read(
        &mut self,
        _: &mut Ctx,
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<SourcePoll, ToolError> {
        if self.fail_at.is_some_and(|f| self.sent >= f) {
            return Err(ToolError::new("IO", "disk read failed"));
        }
        let n = max.min(self.len - self.sent);
        out.extend((self.sent..self.sent + n).map(pattern_byte));
        self.sent += n;
        Ok(if self.sent == self.len {
            SourcePoll::End
        } else {
            SourcePoll::Data
        })
    }

    fn cancel(&mut self, ctx: &mut Ctx) {
        ctx.cancelled += 1;
    }
}

fn big(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let len = call.args.get("len").and_then(Value::as_u64).unwrap_or(0) as usize;
    let fail_at = call
        .args
        .get("failAt")
        .and_then(Value::as_u64)
        .map(|v| v as usize);
    let kind = match call.args.get("kind").and_then(Value::as_str) {
        Some("blob") => StreamKind::ResourceBlob {
            uri: "irix7://x".into(),
            mime_type: "application/octet-stream".into(),
        },
        _ => StreamKind::Text,
    };
    let src = Box::new(Pattern {
        sent: 0,
        len,
        fail_at,
    });
    Ok(Started::Done(ToolOutput::content(vec![
        Content::text("head"),
        Content::stream(kind, src),
    ])))
}

const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "echo",
        title: Some("Echo"),
        description: "Echo text back",
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string","maxLength":16}},"required":["text"],"additionalProperties":false}"#,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: echo,
    },
    ToolDef {
        name: "add",
        title: None,
        description: "Add two integers",
        input_schema: r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: add,
    },
    ToolDef {
        name: "bad_out",
        title: None,
        description: "Structured result that violates its schema",
        input_schema: r#"{"type":"object"}"#,
        output_schema: Some(r#"{"type":"object","properties":{"sum":{"type":"integer"}}}"#),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: bad_out,
    },
    ToolDef {
        name: "fail",
        title: None,
        description: "Always fails",
        input_schema: r#"{"type":"object"}"#,
        output_schema: None,
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &["NOT_FOUND"],
        start: fail,
    },
    ToolDef {
        name: "slow",
        title: None,
        description: "Runs across polls",
        input_schema: r#"{"type":"object","properties":{"steps":{"type":"integer","minimum":0,"maximum":1000}}}"#,
        output_schema: None,
        annotations: Annotations::WRITE,
        requires: &[],
        errors: &[],
        start: slow,
    },
    ToolDef {
        name: "big",
        title: None,
        description: "Streams a big block",
        input_schema: r#"{"type":"object","properties":{"len":{"type":"integer"},"failAt":{"type":"integer"},"kind":{"enum":["text","blob"]}}}"#,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &["IO"],
        start: big,
    },
    ToolDef {
        name: "needs_sampling",
        title: None,
        description: "Needs the sampling capability",
        input_schema: r#"{"type":"object"}"#,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &["sampling"],
        errors: &[],
        start: echo,
    },
];

fn read_status(_: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![ResourceContents::Text {
        uri: uri.into(),
        mime_type: Some("application/json".into()),
        text: "{\"up\":1}".into(),
    }])
}

fn read_broken(_: &mut Ctx, _: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Err(ToolError::new("IO", "device gone"))
}

fn read_file(
    _: &mut Ctx,
    uri: &str,
    vars: &[(&str, &str)],
) -> Result<Vec<ResourceContents>, ToolError> {
    let name = vars
        .iter()
        .find(|(k, _)| *k == "name")
        .map(|(_, v)| *v)
        .unwrap_or("");
    if name == "missing" {
        return Err(ToolError::new("NOT_FOUND", "no file"));
    }
    Ok(vec![ResourceContents::Blob {
        uri: uri.into(),
        mime_type: None,
        data: name.as_bytes().to_vec(),
    }])
}

const RESOURCES: &[ResourceDef<Ctx>] = &[
    ResourceDef {
        uri: "irix7://status",
        name: "status",
        title: None,
        description: "Machine status",
        mime_type: Some("application/json"),
        read: read_status,
    },
    ResourceDef {
        uri: "irix7://broken",
        name: "broken",
        title: None,
        description: "Fails",
        mime_type: None,
        read: read_broken,
    },
];

const TEMPLATES: &[TemplateDef<Ctx>] = &[TemplateDef {
    uri_template: "irix7://file/{name}",
    name: "file",
    title: None,
    description: "A file",
    mime_type: None,
    read: read_file,
}];

fn config() -> Config {
    let mut c = Config::new("7.0.1", Some("Drive an SGI Indy".into()));
    c.limits.page_size = 3;
    c
}

fn server_with(config: Config) -> McpServer<Ctx> {
    let mut n = 0u8;
    let entropy = Box::new(move |buf: &mut [u8]| {
        for b in buf.iter_mut() {
            n = n.wrapping_mul(31).wrapping_add(17);
            *b = n;
        }
    });
    let mut s = McpServer::new(config, Rc::new(RefCell::new(Ctx::default())), entropy);
    s.register_tools(TOOLS).unwrap();
    s.register_resources(RESOURCES);
    s.register_templates(TEMPLATES);
    s
}

fn server() -> McpServer<Ctx> {
    server_with(config())
}

fn headers(list: &[(&str, &str)]) -> Headers {
    let mut h = Headers::default();
    for (n, v) in list {
        h.push(*n, *v);
    }
    h
}

fn post(s: &mut McpServer<Ctx>, h: &[(&str, &str)], body: &str, now: u64) -> Response {
    s.handle_parts(&Method::Post, &headers(h), body.as_bytes(), PEER, now)
}

fn body_bytes(r: &mut Response, now: u64) -> Vec<u8> {
    let (bytes, ended) = drain(r, now, 100_000);
    assert!(ended, "body did not end");
    bytes
}

fn body_json(r: &mut Response, now: u64) -> Value {
    let b = body_bytes(r, now);
    serde_json::from_slice(&b).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&b)))
}

fn header<'a>(r: &'a Response, name: &str) -> Option<&'a str> {
    r.headers.get(name)
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    })
}

/// A modern request with correct headers.
fn modern(s: &mut McpServer<Ctx>, method: &str, mut params: Value, now: u64) -> Response {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(String::from);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", method),
    ];
    if let Some(n) = &name {
        h.push(("Mcp-Name", n.as_str()));
    }
    post(s, &h, &body, now)
}

fn modern_json(s: &mut McpServer<Ctx>, method: &str, params: Value, now: u64) -> (u16, Value) {
    let mut r = modern(s, method, params, now);
    let v = body_json(&mut r, now);
    (r.status, v)
}

fn initialize(s: &mut McpServer<Ctx>, version: &str, now: u64) -> (String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut r = post(
        s,
        &[("Accept", "application/json, text/event-stream")],
        &body.to_string(),
        now,
    );
    assert_eq!(r.status, 200);
    let sid = header(&r, "Mcp-Session-Id")
        .expect("session id")
        .to_string();
    (sid, body_json(&mut r, now))
}

fn legacy(s: &mut McpServer<Ctx>, sid: &str, body: &Value, now: u64) -> Response {
    let h = [
        ("Accept", "application/json, text/event-stream"),
        ("Mcp-Session-Id", sid),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    post(s, &h, &body.to_string(), now)
}

fn legacy_json(
    s: &mut McpServer<Ctx>,
    sid: &str,
    method: &str,
    params: Value,
    now: u64,
) -> (u16, Value) {
    let mut r = legacy(
        s,
        sid,
        &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        now,
    );
    let v = body_json(&mut r, now);
    (r.status, v)
}

/// The JSON messages of an SSE body, with the event ids seen.
fn sse_events(bytes: &[u8]) -> (Vec<Value>, Vec<String>, Vec<String>) {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let (mut msgs, mut ids, mut retries) = (Vec::new(), Vec::new(), Vec::new());
    for event in text.split("\n\n").filter(|e| !e.is_empty()) {
        for line in event.lines() {
            if let Some(d) = line.strip_prefix("data: ") {
                if !d.is_empty() {
                    msgs.push(serde_json::from_str(d).unwrap());
                }
            } else if let Some(i) = line.strip_prefix("id: ") {
                ids.push(i.to_string());
            } else if let Some(r) = line.strip_prefix("retry: ") {
                retries.push(r.to_string());
            }
        }
    }
    (msgs, ids, retries)
}

// ---- JSON-RPC ----

#[test]
fn parse_error_and_invalid_requests() {
    let mut s = server();
    let h = [("MCP-Protocol-Version", MODERN_VERSION)];
    let mut r = post(&mut s, &h, "{\"jsonrpc\":", T0);
    assert_eq!(r.status, 400);
    let v = body_json(&mut r, T0);
    assert_eq!(
        (v["error"]["code"].as_i64(), &v["id"]),
        (Some(-32700), &Value::Null)
    );

    for (body, want_id) in [
        (r#"{"id":5,"method":"tools/list"}"#, json!(5)),
        (
            r#"{"jsonrpc":"1.0","id":"a","method":"tools/list"}"#,
            json!("a"),
        ),
        (r#"{"jsonrpc":"2.0","id":6,"method":42}"#, json!(6)),
        (
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","params":3}"#,
            json!(8),
        ),
        (r#"[1,2]"#, Value::Null),
        (r#"42"#, Value::Null),
        (r#"[]"#, Value::Null),
    ] {
        let mut r = post(&mut s, &h, body, T0);
        assert_eq!(r.status, 400, "{body}");
        let v = body_json(&mut r, T0);
        assert_eq!(v["error"]["code"], json!(-32600), "{body}: {v}");
        assert_eq!(v["id"], want_id, "{body}");
    }
}

#[test]
fn ids_of_every_type_are_echoed_exactly() {
    let mut s = server();
    for raw in [
        "\"abc\"",
        "\"\\u0041\\n\"",
        "123456789012345678901234567890",
        "-17",
        "3.25",
        "1e400",
        "-0.0",
        "null",
        "0",
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{raw},"method":"tools/list","params":{{"_meta":{}}}}}"#,
            meta()
        );
        let h = [
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "tools/list"),
        ];
        let mut r = post(&mut s, &h, &body, T0);
        assert_eq!(r.status, 200, "{raw}");
        let text = String::from_utf8(body_bytes(&mut r, T0)).unwrap();
        assert!(
            text.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw},\"result\":")),
            "{raw}: {text}"
        );
    }
    // Error responses echo the id too.
    let body = r#"{"jsonrpc":"2.0","id":98765432109876543210,"method":"nope/nope","params":{}}"#;
    let mut r = post(
        &mut s,
        &[("MCP-Protocol-Version", MODERN_VERSION)],
        body,
        T0,
    );
    let text = String::from_utf8(body_bytes(&mut r, T0)).unwrap();
    assert!(text.contains("\"id\":98765432109876543210,"), "{text}");
}

#[test]
fn notifications_get_202_without_body() {
    let mut s = server();
    let body =
        json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"_meta": meta()}})
            .to_string();
    let h = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "notifications/whatever"),
    ];
    let r = post(&mut s, &h, &body, T0);
    assert_eq!(r.status, 202);
    assert!(matches!(r.body, Body::Empty));
}

// ---- modern era ----

#[test]
fn modern_discover_and_result_decoration() {
    let mut s = server();
    let (status, v) = modern_json(&mut s, "server/discover", json!({}), T0);
    assert_eq!(status, 200);
    let r = &v["result"];
    assert_eq!(r["supportedVersions"], json!([MODERN_VERSION]));
    assert_eq!(r["resultType"], "complete");
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "irix7-mcp", "version": "7.0.1"})
    );
    assert_eq!(r["instructions"], "Drive an SGI Indy");
    assert!(r["capabilities"]["tools"].is_object() && r["capabilities"]["prompts"].is_object());
    assert_eq!(
        (r["ttlMs"].as_u64(), r["cacheScope"].as_str()),
        (Some(0), Some("private"))
    );
    for m in [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    ] {
        let (_, v) = modern_json(&mut s, m, json!({}), T0);
        assert!(
            v["result"]["ttlMs"].is_u64() && v["result"]["cacheScope"] == "private",
            "{m}: {v}"
        );
        assert_eq!(v["result"]["resultType"], "complete");
    }
    let (_, v) = modern_json(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://status"}),
        T0,
    );
    assert_eq!(v["result"]["cacheScope"], "private");
    // Tool results carry resultType and serverInfo but no cache hints.
    let (_, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
        T0,
    );
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(
        v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "irix7-mcp"
    );
    assert!(v["result"].get("ttlMs").is_none());
    // prompts/list is empty in the product, and completion answers.
    let (_, v) = modern_json(&mut s, "prompts/list", json!({}), T0);
    assert_eq!(v["result"]["prompts"], json!([]));
    let (_, v) = modern_json(
        &mut s,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}}),
        T0,
    );
    assert_eq!(v["result"]["completion"]["values"], json!([]));
}

fn raw_modern(s: &mut McpServer<Ctx>, h: &[(&str, &str)], body: Value) -> (u16, Value) {
    let mut r = post(s, h, &body.to_string(), T0);
    let v = body_json(&mut r, T0);
    (r.status, v)
}

#[test]
fn modern_envelope_and_header_errors() {
    let mut s = server();
    let req = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 11, "method": method, "params": params});
    let good = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "server/discover"),
    ];

    // Version header missing → -32020.
    let (st, v) = raw_modern(
        &mut s,
        &[("Mcp-Method", "server/discover")],
        req("server/discover", json!({"_meta": meta()})),
    );
    assert_eq!(
        (st, v["error"]["code"].as_i64(), v["id"].as_i64()),
        (400, Some(-32020), Some(11))
    );
    // Missing _meta, or missing keys → -32602, even when the version is also unsupported.
    for params in [
        json!({}),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999"}}),
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
    ] {
        let (st, v) = raw_modern(
            &mut s,
            &[
                ("MCP-Protocol-Version", "v999"),
                ("Mcp-Method", "server/discover"),
            ],
            req("server/discover", params),
        );
        assert_eq!(
            (st, v["error"]["code"].as_i64(), v["id"].as_i64()),
            (400, Some(-32602), Some(11)),
            "{v}"
        );
    }
    // Header and _meta disagree → -32020.
    let mut m = meta();
    m["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let (st, v) = raw_modern(
        &mut s,
        &good,
        req("server/discover", json!({"_meta": m.clone()})),
    );
    assert_eq!((st, v["error"]["code"].as_i64()), (400, Some(-32020)));
    // Both say an unknown version → -32022 with supported/requested.
    let (st, v) = raw_modern(
        &mut s,
        &[
            ("MCP-Protocol-Version", "v999.0.0"),
            ("Mcp-Method", "server/discover"),
        ],
        req("server/discover", json!({"_meta": m})),
    );
    assert_eq!((st, v["error"]["code"].as_i64()), (400, Some(-32022)));
    assert_eq!(
        v["error"]["data"],
        json!({"supported": [MODERN_VERSION], "requested": "v999.0.0"})
    );
    // Mcp-Method missing, wrong, wrong case.
    for h in [
        vec![("MCP-Protocol-Version", MODERN_VERSION)],
        vec![
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "prompts/list"),
        ],
        vec![
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "TOOLS/LIST"),
        ],
    ] {
        let (st, v) = raw_modern(&mut s, &h, req("tools/list", json!({"_meta": meta()})));
        assert_eq!(
            (st, v["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{h:?}"
        );
    }
    // Header names are case-insensitive.
    let (st, _) = raw_modern(
        &mut s,
        &[
            ("mcp-protocol-version", MODERN_VERSION),
            ("MCP-METHOD", "tools/list"),
        ],
        req("tools/list", json!({"_meta": meta()})),
    );
    assert_eq!(st, 200);
    // Mcp-Name: missing, wrong → -32020; padded with whitespace, or base64-encoded → accepted.
    let call = req(
        "tools/call",
        json!({"_meta": meta(), "name": "echo", "arguments": {"text": "é"}}),
    );
    let base = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "tools/call"),
    ];
    let (st, v) = raw_modern(&mut s, &base, call.clone());
    assert_eq!((st, v["error"]["code"].as_i64()), (400, Some(-32020)));
    for (name, want) in [
        ("wrong", 400),
        ("  echo\t", 200),
        ("=?base64?ZWNobw==?=", 200),
        ("=?base64?!!?=", 400),
    ] {
        let mut h = base.to_vec();
        h.push(("Mcp-Name", name));
        let (st, _) = raw_modern(&mut s, &h, call.clone());
        assert_eq!(st, want, "{name}");
    }
    let uri_req = req(
        "resources/read",
        json!({"_meta": meta(), "uri": "irix7://status"}),
    );
    let h = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "resources/read"),
        ("Mcp-Name", "irix7://statu"),
    ];
    assert_eq!(raw_modern(&mut s, &h, uri_req).0, 400);
}

#[test]
fn modern_method_not_found_and_capability_errors() {
    let mut s = server();
    for m in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "unknown/method",
    ] {
        let (st, v) = modern_json(&mut s, m, json!({}), T0);
        assert_eq!(
            (st, v["error"]["code"].as_i64(), v["id"].as_i64()),
            (404, Some(-32601), Some(1)),
            "{m}"
        );
    }
    let (st, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "needs_sampling", "arguments": {}}),
        T0,
    );
    assert_eq!((st, v["error"]["code"].as_i64()), (400, Some(-32021)));
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
    let (st, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "needs_sampling", "arguments": {}, "_meta": m}),
        T0,
    );
    assert_eq!((st, v["result"]["isError"].as_bool()), (200, None));
}

#[test]
fn modern_get_and_delete_are_405() {
    let mut s = server();
    for m in [Method::Get, Method::Delete] {
        let h = headers(&[
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Session-Id", "abc"),
        ]);
        let r = s.handle_parts(&m, &h, b"", PEER, T0);
        assert_eq!(r.status, 405, "{m:?}");
        assert!(header(&r, "Allow").is_some());
    }
    let r = s.handle_parts(&Method::Put, &Headers::default(), b"", PEER, T0);
    assert_eq!(r.status, 405);
}

#[test]
fn modern_batches_are_rejected() {
    let mut s = server();
    let body =
        json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}])
            .to_string();
    let mut r = post(
        &mut s,
        &[("MCP-Protocol-Version", MODERN_VERSION)],
        &body,
        T0,
    );
    assert_eq!(r.status, 400);
    assert_eq!(body_json(&mut r, T0)["error"]["code"], -32600);
}

// ---- legacy era ----

#[test]
fn legacy_initialize_negotiates_versions() {
    let mut s = server();
    for v in LEGACY_VERSIONS {
        let (sid, r) = initialize(&mut s, v, T0);
        assert_eq!(r["result"]["protocolVersion"], v);
        assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) && sid.len() >= 32);
    }
    for v in [MODERN_VERSION, "2099-01-01", "1999-01-01"] {
        let (_, r) = initialize(&mut s, v, T0);
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{v}");
    }
    let (_, r) = initialize(&mut s, "2025-06-18", T0);
    let res = &r["result"];
    assert_eq!(
        res["serverInfo"],
        json!({"name": "irix7-mcp", "version": "7.0.1"})
    );
    assert_eq!(res["instructions"], "Drive an SGI Indy");
    assert!(res["capabilities"]["tools"].is_object() && res["capabilities"]["logging"].is_object());
    assert!(
        res.get("resultType").is_none(),
        "legacy results are not decorated"
    );
    // Ids differ between sessions.
    let (a, _) = initialize(&mut s, "2025-06-18", T0);
    let (b, _) = initialize(&mut s, "2025-06-18", T0);
    assert_ne!(a, b);
}

#[test]
fn legacy_session_lifecycle() {
    let mut s = server();
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let r = legacy(
        &mut s,
        &sid,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        T0,
    );
    assert_eq!(r.status, 202);
    let (st, v) = legacy_json(&mut s, &sid, "ping", json!({}), T0);
    assert_eq!((st, &v["result"]), (200, &json!({})));
    let (st, v) = legacy_json(
        &mut s,
        &sid,
        "logging/setLevel",
        json!({"level": "info"}),
        T0,
    );
    assert_eq!((st, &v["result"]), (200, &json!({})));
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "logging/setLevel",
        json!({"level": "loud"}),
        T0,
    );
    assert_eq!(v["error"]["code"], -32602);
    let (_, v) = legacy_json(&mut s, &sid, "no/such", json!({}), T0);
    assert_eq!(v["error"]["code"], -32601);

    // Missing session id → 400; unknown → 404.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    assert_eq!(
        post(&mut s, &[("MCP-Protocol-Version", "2025-11-25")], &body, T0).status,
        400
    );
    let mut r = post(&mut s, &[("Mcp-Session-Id", "nope")], &body, T0);
    assert_eq!(r.status, 404);
    let v = body_json(&mut r, T0);
    assert_eq!(
        (v["id"].as_i64(), v["error"]["code"].as_i64()),
        (Some(1), Some(-32001))
    );
    assert_eq!(
        post(&mut s, &[("Mcp-Session-Id", "bad id")], &body, T0).status,
        400
    );
    // A bad legacy version header → 400.
    assert_eq!(
        post(
            &mut s,
            &[
                ("Mcp-Session-Id", &sid),
                ("MCP-Protocol-Version", "2030-01-01")
            ],
            &body,
            T0
        )
        .status,
        400
    );
    // No version header: assumed 2025-03-26, still served.
    assert_eq!(
        post(&mut s, &[("Mcp-Session-Id", &sid)], &body, T0).status,
        200
    );

    // Inactivity: 29 minutes is fine and refreshes; 30 minutes after the last use it is gone.
    let t1 = T0 + 29 * 60_000;
    assert_eq!(legacy_json(&mut s, &sid, "ping", json!({}), t1).0, 200);
    assert_eq!(
        legacy_json(&mut s, &sid, "ping", json!({}), t1 + 30 * 60_000 - 1).0,
        200
    );
    let t2 = t1 + 60 * 60_000;
    let r = legacy(
        &mut s,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        t2,
    );
    assert_eq!(r.status, 404);
    assert_eq!(s.session_count(), 0);

    // DELETE ends a session; a second DELETE is 404.
    let (sid, _) = initialize(&mut s, "2025-06-18", t2);
    let h = headers(&[("Mcp-Session-Id", &sid)]);
    assert_eq!(
        s.handle_parts(&Method::Delete, &h, b"", PEER, t2).status,
        200
    );
    assert_eq!(
        s.handle_parts(&Method::Delete, &h, b"", PEER, t2).status,
        404
    );
    assert_eq!(
        legacy(
            &mut s,
            &sid,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            t2
        )
        .status,
        404
    );
    // GET never opens a stream here (no server-initiated messages): 405.
    assert_eq!(s.handle_parts(&Method::Get, &h, b"", PEER, t2).status, 405);
}

#[test]
fn legacy_session_table_evicts_lru_idle_then_refuses() {
    let mut c = config();
    c.limits.max_sessions = 3;
    c.limits.requests_per_second = 1000;
    let mut s = server_with(c);
    let a = initialize(&mut s, "2025-11-25", T0).0;
    let b = initialize(&mut s, "2025-11-25", T0 + 1).0;
    let c_ = initialize(&mut s, "2025-11-25", T0 + 2).0;
    // Touch `a` so `b` is the least recently used.
    assert_eq!(legacy_json(&mut s, &a, "ping", json!({}), T0 + 3).0, 200);
    let d = initialize(&mut s, "2025-11-25", T0 + 4).0;
    assert_eq!(s.session_count(), 3);
    assert_eq!(legacy_json(&mut s, &b, "ping", json!({}), T0 + 5).0, 404);
    // Make every session busy with a running call; then a new session is refused with 503.
    let mut streams = Vec::new();
    for sid in [&a, &c_, &d] {
        let r = legacy(
            &mut s,
            sid,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {"steps": 100}}}),
            T0 + 6,
        );
        streams.push(r);
    }
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
    let mut r = post(&mut s, &[], &body.to_string(), T0 + 7);
    assert_eq!(r.status, 503);
    assert_eq!(body_json(&mut r, T0)["error"]["code"], BUSY);
    // Finishing one call frees its session for eviction.
    let mut first = streams.remove(0);
    body_bytes(&mut first, T0 + 8);
    drop(first);
    assert_eq!(post(&mut s, &[], &body.to_string(), T0 + 9).status, 200);
    assert_eq!(legacy_json(&mut s, &a, "ping", json!({}), T0 + 10).0, 404);
}

#[test]
fn legacy_batches_only_in_2025_03_26() {
    let mut s = server();
    let (old, _) = initialize(&mut s, "2025-03-26", T0);
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
        {"jsonrpc": "2.0", "id": 4}
    ]);
    let h = [
        ("Mcp-Session-Id", old.as_str()),
        ("MCP-Protocol-Version", "2025-03-26"),
    ];
    let mut r = post(&mut s, &h, &batch.to_string(), T0);
    assert_eq!(r.status, 200);
    let v = body_json(&mut r, T0);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 4);
    assert_eq!((&arr[0]["id"], &arr[0]["result"]), (&json!(1), &json!({})));
    assert_eq!(arr[1]["id"], "two");
    assert!(arr[1]["result"]["tools"].is_array());
    assert_eq!(
        (&arr[2]["id"], arr[2]["error"]["code"].as_i64()),
        (&json!(3), Some(-32600))
    );
    assert_eq!(arr[3]["error"]["code"], -32600);
    let only_notes = json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]);
    assert_eq!(post(&mut s, &h, &only_notes.to_string(), T0).status, 202);

    let (new, _) = initialize(&mut s, "2025-06-18", T0);
    let mut r = post(
        &mut s,
        &[("Mcp-Session-Id", new.as_str())],
        &batch.to_string(),
        T0,
    );
    assert_eq!(r.status, 400);
    assert_eq!(body_json(&mut r, T0)["error"]["code"], -32600);
}

// ---- tools ----

#[test]
fn tools_list_pages_with_opaque_cursors_in_stable_order() {
    let mut s = server();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, v) = modern_json(&mut s, "tools/list", params, T0);
        let tools = v["result"]["tools"].as_array().unwrap();
        assert!(tools.len() <= 3);
        names.extend(
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string()),
        );
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let want: Vec<String> = TOOLS.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, want);
    let (_, v) = modern_json(&mut s, "tools/list", json!({"cursor": "bogus"}), T0);
    assert_eq!(v["error"]["code"], -32602);
    // The listing carries schemas and annotations.
    let (_, v) = modern_json(&mut s, "tools/list", json!({}), T0);
    let echo = &v["result"]["tools"][0];
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    assert_eq!(echo["title"], "Echo");
    assert_eq!(
        v["result"]["tools"][1]["outputSchema"]["required"],
        json!(["sum"])
    );
    // The listings are spliced in as bytes; the modern members are still all there.
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["cacheScope"], "private");
    assert!(v["result"]["ttlMs"].is_u64());
    assert!(
        v["result"]["_meta"]
            .as_object()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(v["result"].as_object().unwrap().len(), 6, "{v}");
}

#[test]
fn tool_call_results_and_failures() {
    let mut s = server();
    let (_, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
        T0,
    );
    assert_eq!(
        v["result"]["content"],
        json!([{"type": "text", "text": "hi"}])
    );
    assert!(v["result"].get("isError").is_none());

    let (_, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "add", "arguments": {"a": 2, "b": 5}}),
        T0,
    );
    assert_eq!(v["result"]["structuredContent"], json!({"sum": 7}));
    assert_eq!(
        v["result"]["content"],
        json!([{"type": "text", "text": "{\"sum\":7}"}])
    );

    let (_, v) = modern_json(&mut s, "tools/call", json!({"name": "bad_out"}), T0);
    assert_eq!(v["result"]["isError"], true);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_INTERNAL: structured result")
    );

    let (st, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "fail", "arguments": {}}),
        T0,
    );
    assert_eq!(st, 200);
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(
        v["result"]["content"][0]["text"],
        "E_NOT_FOUND: no such file: /x"
    );

    for (args, want) in [
        (json!({}), "missing required property \"text\""),
        (json!({"text": 3}), "$.text: expected string"),
        (json!({"text": "x", "more": 1}), "$.more: unknown property"),
        (json!({"text": "this is far too long"}), "at most 16"),
    ] {
        let (_, v) = modern_json(
            &mut s,
            "tools/call",
            json!({"name": "echo", "arguments": args}),
            T0,
        );
        assert_eq!(v["result"]["isError"], true);
        let text = v["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("E_INVALID_ARGUMENT: ") && text.contains(want),
            "{text}"
        );
    }
    let (st, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
        T0,
    );
    assert_eq!((st, v["error"]["code"].as_i64()), (200, Some(-32602)));
    let (_, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "echo", "arguments": [1]}),
        T0,
    );
    assert_eq!(v["error"]["code"], -32602);
    let (_, v) = modern_json(&mut s, "tools/call", json!({"arguments": {}}), T0);
    assert_eq!(v["error"]["code"], -32602);
}

#[test]
fn big_results_stream_through_the_encoders() {
    let mut s = server();
    let len = 300_000;
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "big", "arguments": {"len": len}}),
        T0,
    );
    assert!(matches!(r.body, Body::Stream(_)));
    assert_eq!(header(&r, "Content-Type"), Some("application/json"));
    // Polls never exceed the byte budget they are given.
    let Body::Stream(src) = &mut r.body else {
        unreachable!()
    };
    let mut out = Vec::new();
    loop {
        let before = out.len();
        let p = src.poll(&mut out, 777, T0);
        assert!(out.len() - before <= 777);
        if p == BodyPoll::End {
            break;
        }
    }
    let v: Value = serde_json::from_slice(&out).unwrap();
    let text = v["result"]["content"][1]["text"].as_str().unwrap();
    let want: String = (0..len).map(|i| pattern_byte(i) as char).collect();
    assert_eq!(text, want);
    assert_eq!(v["result"]["content"][0]["text"], "head");
    assert_eq!(v["result"]["resultType"], "complete");

    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "big", "arguments": {"len": 10_000, "kind": "blob"}}),
        T0,
    );
    let v = body_json(&mut r, T0);
    let res = &v["result"]["content"][1]["resource"];
    let data = base64::engine::general_purpose::STANDARD
        .decode(res["blob"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, (0..10_000).map(pattern_byte).collect::<Vec<u8>>());
    assert_eq!(res["uri"], "irix7://x");

    // A source failing half-way: the partial block is closed and an error block follows.
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "big", "arguments": {"len": 50_000, "failAt": 8192}}),
        T0,
    );
    let v = body_json(&mut r, T0);
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(v["result"]["content"][2]["text"], "E_IO: disk read failed");
}

#[test]
fn long_calls_run_across_polls_in_json_mode() {
    let mut s = server();
    // No progress token: plain JSON even though SSE is accepted; progress is not sent.
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 5}}),
        T0,
    );
    assert_eq!(header(&r, "Content-Type"), Some("application/json"));
    // One poll advances the tool by one step, however much room the poll offers.
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream")
    };
    assert_eq!(src.poll(&mut Vec::new(), 1 << 20, T0), BodyPoll::Pending);
    assert_eq!(s.context().borrow().steps, 1);
    let v = body_json(&mut r, T0);
    assert_eq!(v["result"]["content"][0]["text"], "slow done");
    assert_eq!(s.context().borrow().steps, 6);
}

#[test]
fn progress_streams_as_sse_then_result() {
    let mut s = server();
    let mut m = meta();
    m["progressToken"] = json!("tok-1");
    m["io.modelcontextprotocol/logLevel"] = json!("info");
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 4}, "_meta": m}),
        T0,
    );
    assert_eq!(header(&r, "Content-Type"), Some("text/event-stream"));
    assert_eq!(header(&r, "X-Accel-Buffering"), Some("no"));
    let (msgs, ids, retries) = sse_events(&body_bytes(&mut r, T0));
    assert!(
        ids.is_empty() && retries.is_empty(),
        "modern streams carry no event ids"
    );
    let progress: Vec<f64> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "tok-1");
            assert_eq!(m["params"]["total"], 4);
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, vec![0.0, 1.0, 2.0, 3.0]);
    let logs: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 4, "info logs only, debug filtered");
    assert!(logs.iter().all(|l| l["params"]["level"] == "info"));
    let last = msgs.last().unwrap();
    assert_eq!(
        (&last["id"], &last["result"]["content"][0]["text"]),
        (&json!(1), &json!("slow done"))
    );

    // Without a log level no log messages are sent.
    let mut m = meta();
    m["progressToken"] = json!(5);
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 2}, "_meta": m}),
        T0,
    );
    let (msgs, _, _) = sse_events(&body_bytes(&mut r, T0));
    assert!(msgs.iter().all(|m| m["method"] != "notifications/message"));
    assert_eq!(msgs.len(), 3);
}

#[test]
fn closing_the_stream_cancels_the_tool() {
    let mut s = server();
    let mut m = meta();
    m["progressToken"] = json!("t");
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 1000}, "_meta": m}),
        T0,
    );
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream")
    };
    let mut out = Vec::new();
    for _ in 0..3 {
        src.poll(&mut out, 4096, T0);
    }
    src.cancel();
    assert_eq!(s.context().borrow().cancelled, 1);
    let steps = s.context().borrow().steps;
    assert_eq!(src.poll(&mut out, 4096, T0), BodyPoll::End);
    assert_eq!(s.context().borrow().steps, steps, "no step after cancel");
    drop(r);
    assert_eq!(s.context().borrow().cancelled, 1, "cancel runs once");

    // Dropping an unfinished body (connection lost) cancels too, also mid-stream content.
    let r = modern(
        &mut s,
        "tools/call",
        json!({"name": "big", "arguments": {"len": 100_000}}),
        T0,
    );
    let mut r = r;
    let Body::Stream(src) = &mut r.body else {
        panic!()
    };
    src.poll(&mut Vec::new(), 100, T0);
    drop(r);
    assert_eq!(s.context().borrow().cancelled, 2);
}

#[test]
fn legacy_cancel_notification_stops_matching_call() {
    let mut s = server();
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let (_, _) = legacy_json(
        &mut s,
        &sid,
        "logging/setLevel",
        json!({"level": "debug"}),
        T0,
    );
    let call = |id: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {"steps": 1000}, "_meta": {"progressToken": "p"}}})
    };
    let mut keep = legacy(&mut s, &sid, &call(json!("keep")), T0);
    let mut stop = legacy(&mut s, &sid, &call(json!(42)), T0);
    assert_eq!(header(&stop, "Content-Type"), Some("text/event-stream"));
    let (Body::Stream(k), Body::Stream(st)) = (&mut keep.body, &mut stop.body) else {
        panic!()
    };
    let mut out = Vec::new();
    st.poll(&mut out, 1 << 20, T0);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42, "reason": "user"}});
    assert_eq!(legacy(&mut s, &sid, &note, T0).status, 202);
    while st.poll(&mut out, 1 << 20, T0) != BodyPoll::End {}
    assert_eq!(s.context().borrow().cancelled, 1);
    let (msgs, ids, retries) = sse_events(&out);
    assert!(
        msgs.iter().all(|m| m.get("result").is_none()),
        "no result after cancel"
    );
    assert!(
        msgs.iter().any(|m| m["method"] == "notifications/message"),
        "debug level set by logging/setLevel"
    );
    // Legacy streams: a priming event with retry, then unique ids.
    assert_eq!(retries, vec!["3000".to_string()]);
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len());
    // The other call still runs.
    assert_ne!(k.poll(&mut Vec::new(), 1 << 20, T0), BodyPoll::End);
}

#[test]
fn json_mode_cancel_answers_with_an_error() {
    let mut s = server();
    let (sid, _) = initialize(&mut s, "2025-06-18", T0);
    let body = json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "slow", "arguments": {"steps": 1000}}});
    let mut r = post(&mut s, &[("Mcp-Session-Id", &sid)], &body.to_string(), T0);
    let Body::Stream(src) = &mut r.body else {
        panic!()
    };
    src.poll(&mut Vec::new(), 100, T0);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}});
    assert_eq!(legacy(&mut s, &sid, &note, T0).status, 202);
    let v = body_json(&mut r, T0);
    assert_eq!(
        (&v["id"], v["error"]["code"].as_i64()),
        (&json!("c"), Some(-32800))
    );
}

// ---- resources ----

#[test]
fn resources_and_not_found_in_both_eras() {
    let mut s = server();
    let (_, v) = modern_json(&mut s, "resources/list", json!({}), T0);
    assert_eq!(v["result"]["resources"][0]["uri"], "irix7://status");
    let (_, v) = modern_json(&mut s, "resources/templates/list", json!({}), T0);
    assert_eq!(
        v["result"]["resourceTemplates"][0]["uriTemplate"],
        "irix7://file/{name}"
    );
    let (_, v) = modern_json(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://status"}),
        T0,
    );
    assert_eq!(
        v["result"]["contents"][0],
        json!({"uri": "irix7://status", "mimeType": "application/json", "text": "{\"up\":1}"})
    );
    let (_, v) = modern_json(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://file/abc"}),
        T0,
    );
    assert_eq!(v["result"]["contents"][0]["blob"], "YWJj");
    for uri in ["irix7://nothing", "irix7://file/missing"] {
        let (_, v) = modern_json(&mut s, "resources/read", json!({"uri": uri}), T0);
        assert_eq!(
            (v["error"]["code"].as_i64(), &v["error"]["data"]["uri"]),
            (Some(-32602), &json!(uri))
        );
    }
    let (_, v) = modern_json(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://broken"}),
        T0,
    );
    assert_eq!(v["error"]["code"], -32603);
    assert_eq!(v["error"]["message"], "E_IO: device gone");
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "resources/read",
        json!({"uri": "irix7://nothing"}),
        T0,
    );
    assert_eq!(
        (v["error"]["code"].as_i64(), &v["error"]["data"]["uri"]),
        (Some(-32002), &json!("irix7://nothing"))
    );
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "resources/read",
        json!({"uri": "irix7://status"}),
        T0,
    );
    assert!(v["result"].get("ttlMs").is_none());
}

// ---- security ----

#[test]
fn bearer_token_is_required_and_never_echoed() {
    let mut c = config();
    c.token = Some("hunter2-token".into());
    let mut s = server_with(c);
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic hunter2-token"),
        Some("Bearer hunter2-token2"),
    ] {
        let mut h = vec![
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "server/discover"),
        ];
        if let Some(a) = auth {
            h.push(("Authorization", a));
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}).to_string();
        let mut r = post(&mut s, &h, &body, T0);
        assert_eq!(r.status, 401, "{auth:?}");
        assert_eq!(header(&r, "WWW-Authenticate"), Some("Bearer"));
        let text = String::from_utf8(body_bytes(&mut r, T0)).unwrap();
        assert!(!text.contains("hunter2"));
        for (_, v) in &r.headers.0 {
            assert!(!v.contains("hunter2"));
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}).to_string();
    let h = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "server/discover"),
        ("Authorization", "Bearer hunter2-token"),
    ];
    let mut r = post(&mut s, &h, &body, T0);
    assert_eq!(r.status, 200);
    assert!(
        !String::from_utf8(body_bytes(&mut r, T0))
            .unwrap()
            .contains("hunter2")
    );
    assert!(!format!("{:?}", config_with_token()).contains("hunter2"));
    // GET and DELETE need the token too.
    assert_eq!(
        s.handle_parts(
            &Method::Delete,
            &headers(&[("Mcp-Session-Id", "x")]),
            b"",
            PEER,
            T0
        )
        .status,
        401
    );
}

fn config_with_token() -> Config {
    let mut c = config();
    c.token = Some("hunter2-token".into());
    c
}

#[test]
fn origin_is_checked() {
    let mut c = config();
    c.own_ip = Some([10, 0, 2, 15]);
    let mut s = server_with(c);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}).to_string();
    let mut run = |origin: Option<&str>| {
        let mut h = vec![
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "server/discover"),
            ("Host", "evil.example.com"),
        ];
        if let Some(o) = origin {
            h.push(("Origin", o));
        }
        post(&mut s, &h, &body, T0).status
    };
    assert_eq!(run(Some("http://evil.example.com")), 403);
    assert_eq!(run(Some("http://10.0.2.16:7801")), 403);
    assert_eq!(run(Some("http://localhost:6274")), 200);
    assert_eq!(run(Some("http://10.0.2.15:7801")), 200);
    assert_eq!(run(None), 200);
}

// ---- limits ----

#[test]
fn twenty_first_request_in_a_second_is_busy() {
    let mut s = server();
    for i in 0..20 {
        assert_eq!(
            modern(&mut s, "tools/list", json!({}), T0 + i * 10).status,
            200
        );
    }
    let (st, v) = modern_json(&mut s, "tools/list", json!({}), T0 + 500);
    assert_eq!(st, 429);
    assert_eq!(v["error"]["code"], BUSY);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("E_BUSY")
    );
    let (st, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
        T0 + 600,
    );
    assert_eq!(st, 200);
    assert_eq!(v["result"]["isError"], true);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_BUSY: ")
    );
    // A second later the window has moved on.
    assert_eq!(
        modern(&mut s, "tools/list", json!({}), T0 + 1000).status,
        200
    );

    // Legacy: per session.
    let (sid, _) = initialize(&mut s, "2025-11-25", T0 + 5000);
    for i in 0..20 {
        assert_eq!(
            legacy_json(&mut s, &sid, "ping", json!({}), T0 + 5000 + i).0,
            200
        );
    }
    assert_eq!(
        legacy_json(&mut s, &sid, "ping", json!({}), T0 + 5100).0,
        429
    );
    let (other, _) = initialize(&mut s, "2025-11-25", T0 + 5100);
    assert_eq!(
        legacy_json(&mut s, &other, "ping", json!({}), T0 + 5100).0,
        200
    );
}

#[test]
fn fifth_concurrent_tool_call_is_busy() {
    let mut s = server();
    let mut running: Vec<Response> = (0..4)
        .map(|_| {
            modern(
                &mut s,
                "tools/call",
                json!({"name": "slow", "arguments": {"steps": 50}}),
                T0,
            )
        })
        .collect();
    let (st, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 1}}),
        T0,
    );
    assert_eq!(st, 200);
    assert_eq!(v["result"]["isError"], true);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_BUSY: 4 tool calls")
    );
    // Other methods are not limited by concurrency.
    assert_eq!(modern(&mut s, "tools/list", json!({}), T0).status, 200);
    // When one finishes, a new call is accepted.
    let mut done = running.remove(0);
    body_bytes(&mut done, T0);
    let (_, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "ok"}}),
        T0,
    );
    assert_eq!(v["result"]["content"][0]["text"], "ok");
}

#[test]
fn registry_rejects_bad_tables() {
    let mut s = server();
    let dup = [TOOLS[0]];
    assert!(s.register_tools(&dup).unwrap_err().reason.contains("twice"));
    let mut bad = TOOLS[0];
    bad.name = "bad name";
    assert!(s.register_tools(&[bad]).is_err());
    let mut bad = TOOLS[0];
    bad.name = "ok.name";
    bad.input_schema = "{not json";
    assert!(s.register_tools(&[bad]).is_err());
    bad.input_schema = r#"{"type":"string"}"#;
    assert!(s.register_tools(&[bad]).is_err());
    assert_eq!(s.tool_count(), TOOLS.len());
}

#[test]
fn tools_list_copies_the_listings_word_aligned_in_one_piece() {
    let mut c = config();
    c.limits.page_size = 100;
    let mut s = server_with(c);
    let r = modern(&mut s, "tools/list", json!({}), T0);
    let Body::Full(body) = &r.body else {
        panic!("tools/list answers with a complete body")
    };
    let text = core::str::from_utf8(body).unwrap();
    let key = text.find("\"tools\":").unwrap() + "\"tools\":".len();
    let bracket = key + text[key..].find('[').unwrap();
    assert!(text[key..bracket].bytes().all(|b| b == b' '), "{text}");
    let listings = s.tools.listings(s.tools.entries());
    assert_eq!(
        &body[bracket + 1..bracket + 1 + listings.len()],
        listings,
        "the page is the registry's bytes"
    );
    let dst = body.as_ptr() as usize + bracket + 1;
    assert_eq!(dst % 4, listings.as_ptr() as usize % 4);
    let v: Value = serde_json::from_slice(body).unwrap();
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    assert_eq!(names, want);
}

const GDB: Reserved = Reserved {
    prefix: "debug.",
    names: &["debug.attach", "debug.step"],
    why: "reserved for the GDB stub milestone",
};

#[test]
fn reserved_names_answer_nosys_in_both_eras_and_are_not_listed() {
    let mut s = server();
    s.reserve_tools(GDB).unwrap();
    // A planned name and an unplanned one under the prefix both answer E_NOSYS.
    for name in ["debug.attach", "debug.frobnicate"] {
        let (st, v) = modern_json(
            &mut s,
            "tools/call",
            json!({"name": name, "arguments": {}}),
            T0,
        );
        assert_eq!(st, 200);
        assert_eq!(v["result"]["isError"], true, "{v}");
        assert_eq!(
            v["result"]["content"][0]["text"],
            format!("E_NOSYS: {name} is reserved for the GDB stub milestone")
        );
    }
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "tools/call",
        json!({"name": "debug.step", "arguments": {}}),
        T0,
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(
        v["result"]["content"][0]["text"],
        "E_NOSYS: debug.step is reserved for the GDB stub milestone"
    );
    // A name that only resembles the prefix is still unknown.
    let (_, v) = modern_json(&mut s, "tools/call", json!({"name": "debugger"}), T0);
    assert_eq!(v["error"]["code"], -32602);
    // Not listed: every page of tools/list holds registered tools only.
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, v) = modern_json(&mut s, "tools/list", params, T0);
        for t in v["result"]["tools"].as_array().unwrap() {
            names.push(t["name"].as_str().unwrap().to_string());
        }
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let want: Vec<String> = TOOLS.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, want);
    assert_eq!(s.tools().reserved(), &[GDB]);
}

#[test]
fn reservations_and_tables_cannot_overlap() {
    let mut s = server();
    s.reserve_tools(GDB).unwrap();
    let mut t = TOOLS[0];
    t.name = "debug.attach";
    let e = s.register_tools(&[t]).unwrap_err();
    assert_eq!(e.name, "debug.attach");
    assert!(e.reason.contains("reserved"), "{e}");
    // A prefix over a registered tool is refused, and so is a planned name outside it.
    let over = Reserved {
        prefix: "ec",
        names: &[],
        why: "x",
    };
    assert_eq!(s.reserve_tools(over).unwrap_err().name, "echo");
    let stray = Reserved {
        prefix: "gdb.",
        names: &["debug.x"],
        why: "x",
    };
    assert!(s.reserve_tools(stray).is_err());
    assert_eq!(s.tools().reserved().len(), 1);
    assert_eq!(s.tool_count(), TOOLS.len());
}

#[test]
fn fuzz_entry_survives_odd_inputs() {
    for case in [
        &b""[..],
        b"POST\n\n{",
        b"POST\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: slow\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":1,\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        b"GET\nMcp-Session-Id: x\n\n",
        b"POST\nContent-Type: text/plain\n\n{}",
        b"POST\n\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]",
        &[0xff, 0xfe, b'\n', b'\n', 0x80],
    ] {
        fuzz::one_input(case);
    }
}

#[test]
fn fuzz_entry_survives_mutated_requests() {
    let seeds: [&[u8]; 4] = [
        b"POST\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: echo\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        b"POST\nAccept: text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: slow\n\n{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":7,\"io.modelcontextprotocol/logLevel\":\"debug\",\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        b"POST\n\n{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{}}}",
        b"POST\nMcp-Session-Id: abc\n\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}]",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..3000 {
        let mut input = seeds[i % seeds.len()].to_vec();
        for _ in 0..(next() % 8) {
            let len = input.len().max(1);
            let at = (next() as usize) % len;
            match next() % 4 {
                0 => {
                    if at < input.len() {
                        input[at] = next() as u8;
                    }
                }
                1 => {
                    let alphabet = b"{}[]\":,\\\n0-e9";
                    input.insert(
                        at.min(input.len()),
                        alphabet[(next() as usize) % alphabet.len()],
                    );
                }
                2 => {
                    if at < input.len() {
                        input.remove(at);
                    }
                }
                _ => input.truncate(at),
            }
        }
        fuzz::one_input(&input);
    }
}

/// Through the real HTTP connection: request bytes in, response bytes out.
mod over_http {
    use super::*;
    use crate::http::{Connection, Handler, Request};

    struct Router(McpServer<Ctx>);

    impl Handler for Router {
        fn handle(&mut self, req: Request, peer: Peer, now_ms: u64) -> Response {
            self.0.handle(req, peer, now_ms)
        }
    }

    fn request(body: &Value, extra: &str) -> Vec<u8> {
        let body = body.to_string();
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: slow\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn slow_call(steps: u32) -> Value {
        let mut m = meta();
        m["progressToken"] = json!("pt");
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"steps": steps}, "_meta": m}})
    }

    /// The body of a chunked response.
    fn dechunk(text: &str) -> String {
        let mut rest = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        let mut body = String::new();
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            body.push_str(&tail[..n]);
            rest = &tail[n + 2..];
        }
        body
    }

    /// Polls the connection and collects its output until `done` says so (bounded).
    fn pump(conn: &mut Connection, router: &mut Router, done: impl Fn(&str) -> bool) -> String {
        let mut text = Vec::new();
        for now in 0..10_000u64 {
            conn.poll(T0 + now, router);
            let out = conn.pending_output().to_vec();
            conn.mark_sent(out.len(), T0 + now);
            text.extend_from_slice(&out);
            if done(&String::from_utf8_lossy(&text)) {
                break;
            }
        }
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn progress_stream_is_chunked_sse() {
        let mut router = Router(server());
        let mut conn = Connection::new(PEER, crate::http::Config::default(), T0);
        let req = request(&slow_call(3), "");
        assert_eq!(conn.recv(&req, T0, &mut router), req.len());
        let text = pump(&mut conn, &mut router, |t| t.ends_with("0\r\n\r\n"));
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains("Transfer-Encoding: chunked"));
        assert!(text.contains("Content-Type: text/event-stream"));
        assert!(text.contains("X-Accel-Buffering: no"));
        assert_eq!(text.matches("notifications/progress").count(), 3);
        let body = dechunk(&text);
        let (msgs, _, _) = sse_events(body.as_bytes());
        assert_eq!(msgs.len(), 4);
        assert_eq!(msgs[3]["result"]["content"][0]["text"], "slow done");
    }

    #[test]
    fn peer_closing_mid_stream_cancels_the_tool() {
        let mut router = Router(server());
        let mut conn = Connection::new(PEER, crate::http::Config::default(), T0);
        let req = request(&slow_call(1000), "");
        conn.recv(&req, T0, &mut router);
        let text = pump(&mut conn, &mut router, |t| {
            t.contains("notifications/progress")
        });
        assert!(text.contains("notifications/progress"));
        conn.peer_closed();
        conn.poll(T0 + 1, &mut router);
        assert_eq!(router.0.context().borrow().cancelled, 1);
        let steps = router.0.context().borrow().steps;
        assert!(steps < 1000, "stopped early, after {steps} steps");
    }
}
