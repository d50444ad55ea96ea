//! The fixtures answer as the conformance scenarios expect, through the real endpoint.

extern crate std;

use super::mrtr::{sign, verify};
use super::register;
use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;
use rpc::http::Response;
use rpc::mcp::{Config, LEGACY_VERSIONS, McpServer};
use rpc::testing::{McpRequest, drain, last_message, messages};
use serde_json::{Value, json};

fn server() -> McpServer<()> {
    let mut c = Config::new("7.0", None);
    c.limits.requests_per_second = 10_000;
    let mut s = McpServer::new(
        c,
        Rc::new(RefCell::new(())),
        Box::new(|b: &mut [u8]| b.fill(3)),
    );
    register(&mut s).unwrap();
    s
}

/// The answer: the JSON body, or the last message of an SSE body.
fn json_of(r: &mut Response, now: u64) -> Value {
    let (bytes, ended) = drain(r, now, 10_000);
    assert!(ended);
    last_message(&bytes).unwrap()
}

fn sse_messages(r: &mut Response, now: u64) -> Vec<Value> {
    messages(&drain(r, now, 10_000).0)
}

/// A modern request from a client that can be asked for sampling, elicitation and roots
/// (unless `params._meta` names other capabilities), with `extra` headers.
fn modern_with(
    s: &mut McpServer<()>,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    let caps = params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities")
        .cloned()
        .unwrap_or_else(
            || json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}),
        );
    let mut req = McpRequest::modern(method, params).capabilities(caps).id(9);
    for (k, v) in extra {
        req = req.header(k, v);
    }
    let mut r = req.send(s, 0);
    let v = json_of(&mut r, 0);
    (r.status, v)
}

/// Opens a legacy session with `capabilities`; its id.
fn session(s: &mut McpServer<()>, capabilities: Value) -> String {
    let r = McpRequest::initialize(LEGACY_VERSIONS[0])
        .param("capabilities", capabilities)
        .send(s, 0);
    r.headers.get("Mcp-Session-Id").unwrap().to_string()
}

fn modern(s: &mut McpServer<()>, method: &str, params: Value) -> Value {
    modern_with(s, method, params, &[]).1
}

fn call(s: &mut McpServer<()>, name: &str, extra: Value) -> Value {
    let mut p = json!({"name": name, "arguments": {}});
    if let Value::Object(e) = extra {
        for (k, v) in e {
            p[k] = v;
        }
    }
    modern(s, "tools/call", p)
}

#[test]
fn content_fixtures() {
    let mut s = server();
    let r = call(&mut s, "test_simple_text", json!({}));
    assert_eq!(
        r["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
    let r = call(&mut s, "test_image_content", json!({}));
    assert_eq!(r["result"]["content"][0]["mimeType"], "image/png");
    let r = call(&mut s, "test_audio_content", json!({}));
    assert_eq!(r["result"]["content"][0]["mimeType"], "audio/wav");
    assert!(
        r["result"]["content"][0]["data"]
            .as_str()
            .unwrap()
            .starts_with("UklGR")
    );
    let r = call(&mut s, "test_embedded_resource", json!({}));
    assert_eq!(
        r["result"]["content"][0]["resource"]["uri"],
        "test://embedded-resource"
    );
    let r = call(&mut s, "test_multiple_content_types", json!({}));
    let types: Vec<&str> = r["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, vec!["text", "image", "resource"]);
    let r = call(&mut s, "test_error_handling", json!({}));
    assert_eq!(r["result"]["isError"], true);
    let (st, r) = modern_with(
        &mut s,
        "tools/call",
        json!({"name": "test_missing_capability", "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        &[],
    );
    assert_eq!((st, r["error"]["code"].as_i64()), (400, Some(-32021)));
    let r = modern(&mut s, "tools/list", json!({}));
    let tools = r["result"]["tools"].as_array().unwrap();
    let schema = &tools
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap()["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(schema["$defs"]["address"].is_object());
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn progress_fixture_paces_its_notices() {
    let mut s = server();
    let mut r = McpRequest::modern(
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {}}),
    )
    .meta("progressToken", json!("p"))
    .send(&mut s, 1000);
    let msgs = sse_messages(&mut r, 1000);
    let p: Vec<i64> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_i64().unwrap())
        .collect();
    assert_eq!(p, vec![0, 50, 100]);
    assert!(msgs.last().unwrap()["result"]["content"][0]["text"].is_string());
}

#[test]
fn logging_fixture_in_a_legacy_session() {
    let mut s = server();
    let sid = session(&mut s, json!({}));
    let set = McpRequest::legacy(&sid, "logging/setLevel", json!({"level": "debug"}));
    assert_eq!(set.send(&mut s, 0).status, 200);
    let mut r = McpRequest::legacy(
        &sid,
        "tools/call",
        json!({"name": "test_tool_with_logging", "arguments": {}}),
    )
    .id(2)
    .send(&mut s, 0);
    let logs = sse_messages(&mut r, 0)
        .into_iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 3);
}

#[test]
fn resources_templates_and_prompts() {
    let mut s = server();
    let r = modern(
        &mut s,
        "resources/read",
        json!({"uri": "test://static-text"}),
    );
    assert_eq!(
        r["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    let r = modern(
        &mut s,
        "resources/read",
        json!({"uri": "test://static-binary"}),
    );
    assert_eq!(r["result"]["contents"][0]["mimeType"], "image/png");
    let r = modern(
        &mut s,
        "resources/read",
        json!({"uri": "test://template/123/data"}),
    );
    let text = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap()["data"],
        "Data for ID: 123"
    );
    let r = modern(
        &mut s,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}}),
    );
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='hello', arg2='world'"
    );
    let r = modern(
        &mut s,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}}),
    );
    assert_eq!(r["error"]["code"], -32602);
    let r = modern(&mut s, "prompts/list", json!({}));
    assert_eq!(r["result"]["prompts"].as_array().unwrap().len(), 5);
}

#[test]
fn input_required_flows() {
    let mut s = server();
    let r = call(&mut s, "test_input_required_result_elicitation", json!({}));
    assert_eq!(r["result"]["resultType"], "input_required");
    assert_eq!(
        r["result"]["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let answer = json!({"action": "accept", "content": {"name": "Alice"}});
    let r = call(
        &mut s,
        "test_input_required_result_elicitation",
        json!({"inputResponses": {"user_name": answer, "extra": {}}}),
    );
    assert_eq!(
        (
            r["result"]["resultType"].as_str(),
            &r["result"]["content"][0]["text"]
        ),
        (Some("complete"), &json!("Hello, Alice!"))
    );
    // Wrong keys: asked again. Malformed responses: -32602.
    let r = call(
        &mut s,
        "test_input_required_result_elicitation",
        json!({"inputResponses": {"wrong_key": {}}}),
    );
    assert_eq!(r["result"]["resultType"], "input_required");
    for bad in [json!({"user_name": 12345}), Value::Null] {
        let r = call(
            &mut s,
            "test_input_required_result_elicitation",
            json!({"inputResponses": bad}),
        );
        assert_eq!(r["error"]["code"], -32602);
    }

    // Multi-round with evolving state.
    let r1 = call(&mut s, "test_input_required_result_multi_round", json!({}));
    let st1 = r1["result"]["requestState"].as_str().unwrap().to_string();
    let r2 = call(
        &mut s,
        "test_input_required_result_multi_round",
        json!({"requestState": st1,
        "inputResponses": {"step1": {"action": "accept", "content": {"name": "Alice"}}}}),
    );
    let st2 = r2["result"]["requestState"].as_str().unwrap().to_string();
    assert_ne!(st1, st2);
    let r3 = call(
        &mut s,
        "test_input_required_result_multi_round",
        json!({"requestState": st2,
        "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}}}),
    );
    assert_eq!(r3["result"]["content"][0]["text"], "Alice likes blue");

    // Tampered state is a JSON-RPC error.
    let r = call(
        &mut s,
        "test_input_required_result_tampered_state",
        json!({}),
    );
    let st = r["result"]["requestState"].as_str().unwrap();
    let r = call(
        &mut s,
        "test_input_required_result_tampered_state",
        json!({"requestState": format!("{st}-TAMPERED"), "inputResponses": {"confirm": {}}}),
    );
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(verify(&sign("abc")), Some("abc"));
    assert_eq!(verify("abc.0000000000000000"), None);

    // Only declared capabilities are asked through.
    let r = call(
        &mut s,
        "test_input_required_result_capabilities",
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}}),
    );
    let keys: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, vec!["greeting"]);

    // Prompts can ask too; lists never do.
    let r = modern(
        &mut s,
        "prompts/get",
        json!({"name": "test_input_required_result_prompt"}),
    );
    assert_eq!(r["result"]["resultType"], "input_required");
    let r = modern(
        &mut s,
        "prompts/get",
        json!({"name": "test_input_required_result_prompt",
        "inputResponses": {"user_context": {"action": "accept", "content": {"context": "c"}}}}),
    );
    assert!(r["result"]["messages"].is_array());

    // A legacy client cannot be asked: it gets an error result.
    let sid = session(&mut s, json!({}));
    let mut r = McpRequest::legacy(
        &sid,
        "tools/call",
        json!({"name": "test_input_required_result_elicitation"}),
    )
    .id(2)
    .accept("application/json")
    .send(&mut s, 0);
    let v = json_of(&mut r, 0);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_NOTSUP")
    );
}

#[test]
fn mcp_param_headers_are_checked() {
    let mut s = server();
    let p = json!({"name": "test_x_mcp_header", "arguments": {"region": "Hello"}});
    for (header, want) in [
        (Some("=?base64?SGVsbG8=?="), 200),
        (Some("  Hello "), 200),
        (Some("=?base64?SGVsbG8?="), 400),
        (Some("=?base64?SGVs!!!bG8=?="), 400),
        (Some("Bye"), 400),
        (None, 400),
    ] {
        let extra: Vec<(&str, &str)> = header
            .map(|h| ("Mcp-Param-Region", h))
            .into_iter()
            .collect();
        let (st, v) = modern_with(&mut s, "tools/call", p.clone(), &extra);
        assert_eq!(st, want, "{header:?}: {v}");
        if want == 400 {
            assert_eq!(v["error"]["code"], -32020);
        }
    }
    // Literal values that only look like the encoding are compared as they are.
    let p = json!({"name": "test_x_mcp_header", "arguments": {"region": "=?base64?SGVsbG8="}});
    assert_eq!(
        modern_with(
            &mut s,
            "tools/call",
            p,
            &[("Mcp-Param-Region", "=?base64?SGVsbG8=")]
        )
        .0,
        200
    );
}

#[test]
fn legacy_client_input_goes_out_as_requests_on_the_stream() {
    use rpc::http::{Body, BodyPoll};
    let mut s = server();
    let sid = session(&mut s, json!({"sampling": {}}));
    let call = McpRequest::legacy(
        &sid,
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "Say hi"}}),
    )
    .id(5);
    let mut r = call.send(&mut s, 0);
    assert_eq!(r.headers.get("Content-Type"), Some("text/event-stream"));
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream")
    };
    let mut out = Vec::new();
    assert_eq!(src.poll(&mut out, 1 << 16, 0), BodyPoll::Data);
    let text = String::from_utf8(out.clone()).unwrap();
    let request: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains("sampling/createMessage"))
        .map(|d| serde_json::from_str(d).unwrap())
        .expect("a sampling request on the stream");
    assert_eq!(
        request["params"]["messages"][0]["content"]["text"],
        "Say hi"
    );
    // Nothing more until the client answers.
    assert_eq!(src.poll(&mut out, 1 << 16, 0), BodyPoll::Pending);
    // An answer to an unknown id is accepted and ignored.
    let stray = json!({"jsonrpc": "2.0", "id": "nope", "result": {}});
    let answer_with = |body: Value| McpRequest::legacy(&sid, "", json!({})).replace_body(body);
    assert_eq!(answer_with(stray).send(&mut s, 0).status, 202);
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi!"}, "model": "m"}});
    assert_eq!(answer_with(answer).send(&mut s, 0).status, 202);
    let Body::Stream(src) = &mut r.body else {
        panic!()
    };
    let mut rest = Vec::new();
    while src.poll(&mut rest, 1 << 16, 0) != BodyPoll::End {}
    let text = String::from_utf8(rest).unwrap();
    let last: Value = serde_json::from_str(
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .next_back()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (&last["id"], &last["result"]["content"][0]["text"]),
        (&json!(5), &json!("LLM response: hi!"))
    );

    // A client error answer fails the call as a tool error.
    let mut r = call.send(&mut s, 0);
    let Body::Stream(src) = &mut r.body else {
        panic!()
    };
    let mut out = Vec::new();
    src.poll(&mut out, 1 << 16, 0);
    let text = String::from_utf8(out).unwrap();
    let id = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains("sampling"))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["id"].clone())
        .unwrap();
    let refuse =
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": "user declined"}});
    answer_with(refuse).send(&mut s, 0);
    let Body::Stream(src) = &mut r.body else {
        panic!()
    };
    let mut rest = Vec::new();
    while src.poll(&mut rest, 1 << 16, 0) != BodyPoll::End {}
    let text = String::from_utf8(rest).unwrap();
    assert!(
        text.contains("E_CLIENT: client refused llm: user declined"),
        "{text}"
    );

    // Without SSE the legacy client cannot be asked.
    let mut r = call.accept("application/json").send(&mut s, 0);
    let v = json_of(&mut r, 0);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_NOTSUP")
    );
}

#[test]
fn task_fixtures_run_as_the_tasks_scenarios_expect() {
    let mut s = server();
    let ext = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}});
    let with_ext = |name: &str, args: Value| {
        json!({"name": name, "arguments": args,
            "_meta": {"io.modelcontextprotocol/clientCapabilities": ext}})
    };
    let get = |s: &mut McpServer<()>, id: &str| {
        modern(
            s,
            "tasks/get",
            json!({"taskId": id, "_meta": {"io.modelcontextprotocol/clientCapabilities": ext}}),
        )["result"]
            .clone()
    };
    let start = |s: &mut McpServer<()>, name: &str, args: Value| {
        let r = modern(s, "tools/call", with_ext(name, args));
        assert_eq!(r["result"]["resultType"], "task", "{name}: {r}");
        r["result"]["taskId"].as_str().unwrap().to_string()
    };
    let slow = start(&mut s, "slow_compute", json!({"seconds": 1, "label": "x"}));
    let failing = start(&mut s, "failing_job", json!({}));
    let fault = start(&mut s, "protocol_error_job", json!({}));
    s.poll_tasks(0);
    s.poll_tasks(500);
    assert_eq!(get(&mut s, &slow)["status"], "working");
    for t in [1000, 1010, 1020] {
        s.poll_tasks(t);
    }
    let r = get(&mut s, &slow);
    assert_eq!(r["status"], "completed");
    assert_eq!(
        r["result"]["content"][0]["text"],
        "slow_compute x: done after 1 s"
    );
    let r = get(&mut s, &failing);
    assert_eq!(
        (&r["status"], &r["result"]["isError"]),
        (&json!("completed"), &json!(true))
    );
    let r = get(&mut s, &fault);
    assert_eq!(r["status"], "failed");
    assert!(r.get("result").is_none() && r["error"]["code"].is_i64());
    // Quick and sync paths.
    let r = modern(
        &mut s,
        "tools/call",
        with_ext("slow_compute", json!({"seconds": 0})),
    );
    assert_eq!(r["result"]["resultType"], "complete");
    let r = modern(
        &mut s,
        "tools/call",
        with_ext("greet", json!({"name": "A"})),
    );
    assert_eq!(r["result"]["content"][0]["text"], "Hello, A!");
    // Required: refused without the extension.
    let (status, r) = modern_with(&mut s, "tools/call", json!({"name": "failing_job"}), &[]);
    assert_eq!((status, r["error"]["code"].as_i64()), (400, Some(-32021)));
    // MRTR first, then a task that carries what was gathered.
    let r = modern(
        &mut s,
        "tools/call",
        with_ext("test_tool_with_task", json!({})),
    );
    assert_eq!(r["result"]["resultType"], "input_required");
    assert!(r["result"].get("taskId").is_none());
    let mut retry = with_ext("test_tool_with_task", json!({}));
    retry["inputResponses"] =
        json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
    let r = modern(&mut s, "tools/call", retry);
    let id = r["result"]["taskId"].as_str().unwrap().to_string();
    for t in [2000, 2600, 2610] {
        s.poll_tasks(t);
    }
    let r = get(&mut s, &id);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Hello, Alice! (from a task)"
    );
}

#[test]
fn the_watched_resource_can_be_subscribed_in_both_eras() {
    let mut s = server();
    let sid = session(&mut s, json!({}));
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let mut r = McpRequest::legacy(&sid, method, json!({"uri": "test://watched-resource"}))
            .send(&mut s, 0);
        assert_eq!(json_of(&mut r, 0)["result"], json!({}), "{method}");
    }
    let r = modern(&mut s, "server/discover", json!({}));
    assert_eq!(r["result"]["capabilities"]["resources"]["subscribe"], true);
    let mut r = McpRequest::modern(
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": ["test://watched-resource"]}}),
    )
    .send(&mut s, 0);
    assert_eq!(r.status, 200);
    // A listen stream does not end by itself: read what it sent first.
    let (bytes, ended) = rpc::testing::drain(&mut r, 0, 10);
    assert!(!ended);
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        text.contains(r#""resourceSubscriptions":["test://watched-resource"]"#),
        "{text}"
    );
}
