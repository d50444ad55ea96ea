//! Tools: paged listing, calls and failures, streamed results, progress, cancellation.

use super::*;
use crate::mcp::wire::event_stream::KEEP_ALIVE_MS as KEEP_ALIVE;

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

    // A result written as JSON text: sent as it is and as its text block, checked against
    // the output schema like a built one.
    let text = "q\"uote \\ \u{1} \u{e9}";
    let args = json!({"name": "said", "arguments": {"text": text}});
    let (_, v) = modern_json(&mut s, "tools/call", args, T0);
    assert_eq!(v["result"]["structuredContent"], json!({ "said": text }));
    let block = v["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(block).unwrap(),
        json!({ "said": text })
    );
    let args = json!({"name": "said", "arguments": {"text": "x", "bad": true}});
    let (_, v) = modern_json(&mut s, "tools/call", args, T0);
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(v["result"].get("structuredContent").is_none(), "{v}");

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
            text.starts_with("E_INVAL: ") && text.contains(want),
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
    let data = ::base64::engine::general_purpose::STANDARD
        .decode(res["blob"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, (0..10_000).map(pattern_byte).collect::<Vec<u8>>());
    assert_eq!(res["uri"], "irix7://x");

    // Base64 goes straight into the body while a poll has room for it, through the pending
    // buffer when little is left: the same bytes for any budget, which is never exceeded.
    let want: Vec<u8> = (0..10_001).map(pattern_byte).collect();
    for max in [1, 63, 64, 65, 101, 777, 5000] {
        let args = json!({"name": "big", "arguments": {"len": 10_001, "kind": "blob"}});
        let mut r = modern(&mut s, "tools/call", args, T0);
        let Body::Stream(src) = &mut r.body else {
            unreachable!()
        };
        let mut out = Vec::new();
        loop {
            let before = out.len();
            let p = src.poll(&mut out, max, T0);
            assert!(out.len() - before <= max, "{max}");
            if p == BodyPoll::End {
                break;
            }
        }
        let v: Value = serde_json::from_slice(&out).unwrap();
        let blob = v["result"]["content"][1]["resource"]["blob"]
            .as_str()
            .unwrap();
        let data = ::base64::engine::general_purpose::STANDARD
            .decode(blob)
            .unwrap();
        assert_eq!(data, want, "{max}");
    }

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
    let mut m = modern_meta();
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
    let mut m = modern_meta();
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
fn a_waiting_call_streams_keep_alives_while_nothing_happens() {
    let mut s = server();
    s.register_tools(WAIT).unwrap();
    // No progress token, no log level: a run that waits still answers as an event stream.
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "wait", "arguments": {"ms": 12_000}}),
        T0,
    );
    assert_eq!(header(&r, "Content-Type"), Some("text/event-stream"));
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream")
    };
    let mut poll = |now| {
        let mut out = Vec::new();
        let p = src.poll(&mut out, 1 << 16, now);
        (p, String::from_utf8(out).unwrap())
    };
    assert_eq!(poll(T0), (BodyPoll::Pending, String::new()));
    assert_eq!(
        poll(T0 + KEEP_ALIVE - 1),
        (BodyPoll::Pending, String::new())
    );
    let ping = String::from(": keep-alive\n\n");
    // Sent, and still "come back next round": one step per poll.
    assert_eq!(poll(T0 + KEEP_ALIVE), (BodyPoll::Pending, ping.clone()));
    assert_eq!(
        poll(T0 + 2 * KEEP_ALIVE - 1),
        (BodyPoll::Pending, String::new())
    );
    assert_eq!(poll(T0 + 2 * KEEP_ALIVE), (BodyPoll::Pending, ping));
    let (p, end) = poll(T0 + 12_000);
    assert_eq!(p, BodyPoll::End);
    let (msgs, _, _) = sse_events(end.as_bytes());
    assert_eq!(msgs[0]["result"]["content"][0]["text"], "waited");
    assert_eq!(s.context().borrow().heard.iter().filter(|h| **h).count(), 0);

    // A client that takes only JSON gets JSON, and silence: a comment is no JSON.
    let mut r = McpRequest::modern(
        "tools/call",
        json!({"name": "wait", "arguments": {"ms": 12_000}}),
    )
    .accept("application/json")
    .send(&mut s, T0);
    assert_eq!(header(&r, "Content-Type"), Some("application/json"));
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream")
    };
    for now in [T0, T0 + KEEP_ALIVE, T0 + 2 * KEEP_ALIVE] {
        let mut out = Vec::new();
        assert_eq!(src.poll(&mut out, 1 << 16, now), BodyPoll::Pending);
        assert!(out.is_empty());
    }
}

#[test]
fn a_run_knows_whether_its_progress_is_heard() {
    let mut s = server();
    s.register_tools(WAIT).unwrap();
    let mut m = modern_meta();
    m["progressToken"] = json!("p");
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "wait", "arguments": {"ms": 0}, "_meta": m}),
        T0,
    );
    body_bytes(&mut r, T0);
    let mut r = modern(
        &mut s,
        "tools/call",
        json!({"name": "wait", "arguments": {"ms": 0}}),
        T0,
    );
    body_bytes(&mut r, T0);
    assert_eq!(s.context().borrow().heard, [true, false]);
}

#[test]
fn closing_the_stream_cancels_the_tool() {
    let mut s = server();
    let mut m = modern_meta();
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
