//! End-to-end tests of the endpoint: an HTTP request in, a response out (streamed bodies
//! drained), for both eras.

extern crate std;

use super::*;
use crate::http::{Body, BodyPoll, Headers, Method, Peer, Response};
use crate::mcp::ErrorCode;
use crate::testing::{self, McpRequest, drain, modern_meta};
use ::base64::Engine;
use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Value, json};

/// The fake subsystems the test tools use.
#[derive(Default)]
struct Ctx {
    cancelled: u32,
    steps: u32,
    /// What `StepIo::progress_heard` said to each step of a `wait`.
    heard: Vec<bool>,
}

const PEER: Peer = Peer {
    addr: [127, 0, 0, 1],
    port: 40000,
};
const T0: u64 = 1_000_000;

fn echo(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let text = call
        .args
        .get("text")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    Ok(Started::Done(ToolOutput::text(text)))
}

fn add(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let a = call.args.get("a").and_then(|v| v.as_i64()).unwrap_or(0);
    let b = call.args.get("b").and_then(|v| v.as_i64()).unwrap_or(0);
    let mut json = crate::json::ObjectWriter::new(16);
    json.key("sum").i64(a + b);
    Ok(Started::Done(ToolOutput::structured(json.finish())))
}

/// Answers its argument `text` as a structured result written as JSON text, under the key
/// `said`, or under `wrong` (against its output schema) when `bad` is true.
fn said(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let text = call
        .args
        .get("text")
        .unwrap_or(crate::json::ValueRef::empty_object());
    let bad = call.args.get("bad").and_then(|v| v.as_bool()) == Some(true);
    let key = if bad { "wrong" } else { "said" };
    let mut json = crate::json::ObjectWriter::new(16);
    json.key(key).value(text);
    Ok(Started::Done(ToolOutput::structured(json.finish())))
}

fn bad_out(_: &mut Ctx, _: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let mut json = crate::json::ObjectWriter::new(16);
    json.key("sum").str("seven");
    Ok(Started::Done(ToolOutput::structured(json.finish())))
}

fn fail(_: &mut Ctx, _: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    Err(ToolError::new(ErrorCode::NotFound, "no such file: /x"))
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
    let steps = call.args.get("steps").and_then(|v| v.as_u64()).unwrap_or(3) as u32;
    Ok(Started::Run(Box::new(Slow {
        left: steps,
        total: steps,
    })))
}

/// Waits on nothing until `ms` have passed since its first step, then answers.
struct Wait {
    ms: u64,
    since: Option<u64>,
}

impl ToolRun<Ctx> for Wait {
    fn step(&mut self, ctx: &mut Ctx, io: &mut StepIo<'_>) -> Step<Ctx> {
        ctx.heard.push(io.progress_heard());
        let since = *self.since.get_or_insert(io.now_ms());
        if io.now_ms().saturating_sub(since) >= self.ms {
            return Step::Done(ToolOutput::text("waited"));
        }
        Step::Pending
    }

    fn waits(&self) -> bool {
        true
    }
}

fn wait(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let ms = call.args.get("ms").and_then(|v| v.as_u64()).unwrap_or(0);
    Ok(Started::Run(Box::new(Wait { ms, since: None })))
}

/// `wait`, kept out of [`TOOLS`] (whose listing other tests count): registered by the tests
/// of waiting calls.
const WAIT: &[ToolDef<Ctx>] = &[ToolDef {
    name: "wait",
    title: None,
    description: "Waits a while",
    input_schema: r#"{"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}"#,
    output_schema: None,
    annotations: Annotations::READ_ONLY,
    requires: &[],
    errors: &[],
    start: wait,
}];

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
    fn read(&mut self, _: &mut Ctx, buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
        if self.fail_at.is_some_and(|f| self.sent >= f) {
            return Err(ToolError::new(ErrorCode::Io, "disk read failed"));
        }
        let n = buf.len().min(self.len - self.sent);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = pattern_byte(self.sent + i);
        }
        self.sent += n;
        Ok((
            n,
            if self.sent == self.len {
                SourcePoll::End
            } else {
                SourcePoll::Data
            },
        ))
    }

    fn cancel(&mut self, ctx: &mut Ctx) {
        ctx.cancelled += 1;
    }
}

fn big(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    let len = call.args.get("len").and_then(|v| v.as_u64()).unwrap_or(0) as usize;
    let fail_at = call
        .args
        .get("failAt")
        .and_then(|v| v.as_u64())
        .map(|v| v as usize);
    let kind = match call.args.get("kind").and_then(|v| v.as_str()).as_deref() {
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
        name: "said",
        title: None,
        description: "Structured result written as JSON text",
        input_schema: r#"{"type":"object"}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"said":{"type":"string"}},"required":["said"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: said,
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
        errors: &[ErrorCode::NotFound],
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
        errors: &[ErrorCode::Io],
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
    Err(ToolError::new(ErrorCode::Io, "device gone"))
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
        return Err(ToolError::new(ErrorCode::NotFound, "no file"));
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

/// A modern request with correct headers.
fn modern(s: &mut McpServer<Ctx>, method: &str, params: Value, now: u64) -> Response {
    McpRequest::modern(method, params).send(s, now)
}

fn modern_json(s: &mut McpServer<Ctx>, method: &str, params: Value, now: u64) -> (u16, Value) {
    let mut r = modern(s, method, params, now);
    let v = body_json(&mut r, now);
    (r.status, v)
}

fn initialize(s: &mut McpServer<Ctx>, version: &str, now: u64) -> (String, Value) {
    let mut r = McpRequest::initialize(version).send(s, now);
    assert_eq!(r.status, 200);
    let sid = header(&r, "Mcp-Session-Id")
        .expect("session id")
        .to_string();
    (sid, body_json(&mut r, now))
}

/// `body` (any JSON: a request, a notification, a batch) in session `sid`.
fn legacy(s: &mut McpServer<Ctx>, sid: &str, body: &Value, now: u64) -> Response {
    McpRequest::legacy(sid, "", json!({}))
        .replace_body(body.clone())
        .send(s, now)
}

fn legacy_json(
    s: &mut McpServer<Ctx>,
    sid: &str,
    method: &str,
    params: Value,
    now: u64,
) -> (u16, Value) {
    let mut r = McpRequest::legacy(sid, method, params).id(7).send(s, now);
    let v = body_json(&mut r, now);
    (r.status, v)
}

/// The JSON messages of an SSE body, with the event ids and retry fields seen.
fn sse_events(bytes: &[u8]) -> (Vec<Value>, Vec<String>, Vec<String>) {
    let events = testing::sse_events(bytes);
    let msgs = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    let ids = events.iter().filter_map(|e| e.id.clone()).collect();
    let retries = events.iter().filter_map(|e| e.retry.clone()).collect();
    (msgs, ids, retries)
}

mod coding;
mod fuzz_entry;
mod jsonrpc;
mod legacy;
mod limits;
mod modern;
mod over_http;
mod owners;
mod policy;
mod registry;
mod resources;
mod security;
mod subscriptions;
mod tasks;
mod tools;
