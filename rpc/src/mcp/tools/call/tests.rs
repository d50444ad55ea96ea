use super::asking::ASK_DEADLINE_MS;
use crate::http::{Body, BodyPoll, Response};
use crate::mcp::{
    Annotations, Config, InputRequired, LEGACY_VERSIONS, McpServer, Started, ToolCall, ToolDef,
    ToolError, ToolOutput,
};
use crate::testing::{McpRequest, drain, last_message, messages};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Value, json};

/// Asks the client for a confirmation, then answers with what it said.
fn confirm(_: &mut (), call: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
    match call.input_responses {
        Some(r) => Ok(Started::Done(ToolOutput::text(r["ok"].to_string()))),
        None => Ok(Started::InputRequired(InputRequired {
            input_requests: json!({"ok": {"method": "elicitation/create",
                "params": {"message": "go?", "requestedSchema": {"type": "object"}}}}),
            request_state: None,
        })),
    }
}

/// A long text with escapes and non-ASCII characters throughout: long enough that the
/// answer is streamed.
fn long_text() -> String {
    "plain text \"quoted\" \\ tab\t é€😀 \u{1} ".repeat(1000)
}

/// Answers with a long text block and the same text as a (heavy) structured result.
fn long(_: &mut (), _: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
    let text = long_text();
    let mut json = crate::json::ObjectWriter::new(text.len() + 16);
    json.key("text").str(&text);
    let mut out = ToolOutput::structured(json.finish());
    out.content = alloc::vec![crate::mcp::Content::text(text)];
    Ok(Started::Done(out))
}

const TOOLS: &[ToolDef<()>] = &[
    ToolDef {
        name: "confirm",
        title: None,
        description: "Asks first",
        input_schema: r#"{"type":"object"}"#,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: confirm,
    },
    ToolDef {
        name: "long",
        title: None,
        description: "Answers at length",
        input_schema: r#"{"type":"object"}"#,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: long,
    },
];

const T0: u64 = 5_000;

fn server() -> (McpServer<()>, String) {
    let mut c = Config::new("7.0", None);
    c.limits.requests_per_second = 10_000;
    let mut s = McpServer::new(c, Rc::new(RefCell::new(())), Box::new(|b| b.fill(9)));
    s.register_tools(TOOLS).unwrap();
    let r = McpRequest::initialize(LEGACY_VERSIONS[0])
        .param("capabilities", json!({"elicitation": {}}))
        .send(&mut s, T0);
    let sid = r.headers.get("Mcp-Session-Id").unwrap().to_string();
    (s, sid)
}

fn call(s: &mut McpServer<()>, sid: &str, now: u64) -> Response {
    McpRequest::legacy(
        sid,
        "tools/call",
        json!({"name": "confirm", "arguments": {}}),
    )
    .send(s, now)
}

/// One poll of a streamed body: what it said and the bytes it wrote.
fn poll(r: &mut Response, now: u64) -> (BodyPoll, Vec<u8>) {
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream");
    };
    let mut out = Vec::new();
    let p = src.poll(&mut out, 1 << 16, now);
    (p, out)
}

#[test]
fn long_text_is_escaped_into_the_body_within_each_polls_room() {
    let (mut s, sid) = server();
    let mut bodies = Vec::new();
    for max in [64, 100, 777, 4096, 1 << 16] {
        let mut r =
            McpRequest::legacy(&sid, "tools/call", json!({"name": "long"})).send(&mut s, T0);
        let Body::Stream(src) = &mut r.body else {
            panic!("expected a stream");
        };
        let mut out = Vec::new();
        loop {
            let before = out.len();
            let p = src.poll(&mut out, max, T0);
            assert!(out.len() - before <= max, "max {max}");
            if p == BodyPoll::End {
                break;
            }
        }
        bodies.push(out);
    }
    let v: Value = serde_json::from_slice(&bodies[0]).unwrap();
    let text = long_text();
    let result = &v["result"];
    assert_eq!(result["content"][0]["text"], text.as_str());
    let structured = json!({ "text": text });
    assert_eq!(result["content"][1]["text"], structured.to_string());
    assert_eq!(result["structuredContent"], structured);
    for b in &bodies {
        assert_eq!(b, &bodies[0]);
    }
}

#[test]
fn an_unanswered_request_for_input_ends_the_call_at_the_deadline() {
    let (mut s, sid) = server();
    let mut r = call(&mut s, &sid, T0);
    let (_, sent) = poll(&mut r, T0);
    let asked = messages(&sent);
    assert_eq!(asked[0]["method"], "elicitation/create", "{asked:?}");
    // Just before the deadline the call still waits.
    assert_eq!(
        poll(&mut r, T0 + ASK_DEADLINE_MS - 1),
        (BodyPoll::Pending, Vec::new())
    );
    let (p, out) = poll(&mut r, T0 + ASK_DEADLINE_MS);
    assert_eq!(p, BodyPoll::End);
    let result = messages(&out).pop().unwrap();
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "E_TIMEOUT: the client did not answer ok within 60 s");
    assert_eq!(s.answers.borrow().len(), 0, "the call forgot its request");
}

#[test]
fn calls_past_the_deadline_give_their_slots_back() {
    let (mut s, sid) = server();
    let limit = Config::new("7.0", None).limits.concurrent_calls;
    let mut waiting: Vec<Response> = (0..limit).map(|_| call(&mut s, &sid, T0)).collect();
    for r in &mut waiting {
        assert_eq!(poll(r, T0).0, BodyPoll::Data);
    }
    let busy = |s: &mut McpServer<()>, now: u64| {
        let mut r = call(s, &sid, now);
        let last: Value = last_message(&drain(&mut r, now, 100).0).unwrap();
        last["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("E_BUSY"))
    };
    assert!(busy(&mut s, T0 + 1), "the slots are all taken");
    let late = T0 + ASK_DEADLINE_MS;
    for r in &mut waiting {
        while poll(r, late).0 != BodyPoll::End {}
    }
    assert!(!busy(&mut s, late), "the timed-out calls freed their slots");
}
/// A structured result of `n` numbers (strings when `bad`, against the output schema).
fn listing(n: u64, bad: bool) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| if bad { json!(i.to_string()) } else { json!(i) })
        .collect();
    json!({"items": items, "note": note()})
}

fn note() -> String {
    "caf\u{e9} \u{1F5A5}".repeat(900)
}

fn big(_: &mut (), call: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
    let n = call.args.get("n").and_then(|n| n.as_u64()).unwrap_or(0);
    let bad = call.args.get("bad").is_some();
    let mut json = crate::json::ObjectWriter::new(0);
    json.key("items").begin_array();
    for i in 0..n {
        match bad {
            true => json.str(&i.to_string()),
            false => json.u64(i),
        };
    }
    json.end_array().key("note").str(&note());
    Ok(Started::Done(ToolOutput::structured(json.finish())))
}

const BIG: &[ToolDef<()>] = &[ToolDef {
    name: "big",
    title: None,
    description: "A big structured result",
    input_schema: r#"{"type":"object"}"#,
    output_schema: Some(
        r#"{"type":"object","properties":{"items":{"type":"array","items":{"type":"integer"}},"note":{"type":"string"}},"required":["items"]}"#,
    ),
    annotations: Annotations::READ_ONLY,
    requires: &[],
    errors: &[],
    start: big,
}];

/// Calls `big`; the response, its JSON, and what each poll of its body answered.
fn call_big(args: Value) -> (Response, Value, Vec<BodyPoll>) {
    let mut c = Config::new("7.0", None);
    c.limits.requests_per_second = 10_000;
    let mut s = McpServer::new(c, Rc::new(RefCell::new(())), Box::new(|b| b.fill(9)));
    s.register_tools(BIG).unwrap();
    let mut r = McpRequest::modern("tools/call", json!({"name": "big", "arguments": args}))
        .accept("application/json")
        .send(&mut s, T0);
    let (mut body, mut polls) = (Vec::new(), Vec::new());
    if let Body::Full(b) = &r.body {
        body = b.clone();
    }
    if let Body::Stream(src) = &mut r.body {
        loop {
            let p = src.poll(&mut body, 1 << 14, T0);
            let end = p == BodyPoll::End;
            polls.push(p);
            if end {
                break;
            }
            assert!(polls.len() < 1000);
        }
    }
    let v = serde_json::from_slice(&body).unwrap();
    (r, v, polls)
}

#[test]
fn a_heavy_structured_result_is_checked_and_written_over_several_polls() {
    let (r, v, polls) = call_big(json!({"n": 3000}));
    assert!(
        matches!(r.body, Body::Stream(_)),
        "streamed, not built in one poll"
    );
    let result = &v["result"];
    assert_eq!(result["structuredContent"], listing(3000, false));
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, serde_json::to_string(&listing(3000, false)).unwrap());
    assert!(result.get("isError").is_none(), "{result}");
    // The poll that ran the tool, the one of the check and the one that serialised the
    // result each end there ("come back next poll"); then 16 KiB pieces go out.
    assert!(
        polls[..3].iter().all(|p| *p == BodyPoll::Pending),
        "{polls:?}"
    );
    let size = text.len() * 2;
    assert!(
        polls.len() > 3 + size / (16 << 10),
        "{polls:?} for {size} bytes"
    );
}

#[test]
fn a_heavy_result_that_breaks_its_schema_is_an_internal_error() {
    let (_, v, _) = call_big(json!({"n": 3000, "bad": true}));
    let result = &v["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("E_INTERNAL: structured result does not match outputSchema"),
        "{text}"
    );
}

#[test]
fn a_light_structured_result_is_still_answered_whole() {
    let (r, v, _) = call_big(json!({"n": 3}));
    assert!(matches!(r.body, Body::Full(_)));
    assert_eq!(v["result"]["structuredContent"]["items"], json!([0, 1, 2]));
}
