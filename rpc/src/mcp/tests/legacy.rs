//! The 2025-11-25 family: `initialize`, sessions and their table, batches in 2025-03-26.

use super::*;

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
    assert_eq!(s.sessions.len(), 0);

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
    // An ended session has no event stream either.
    let h = headers(&[("Mcp-Session-Id", &sid), ("Accept", "text/event-stream")]);
    assert_eq!(s.handle_parts(&Method::Get, &h, b"", PEER, t2).status, 404);
}

#[test]
fn legacy_session_table_evicts_lru_idle_then_refuses() {
    let mut c = config();
    // One owner holds half the table: three.
    c.limits.max_sessions = 6;
    c.limits.requests_per_second = 1000;
    let mut s = server_with(c);
    let a = initialize(&mut s, "2025-11-25", T0).0;
    let b = initialize(&mut s, "2025-11-25", T0 + 1).0;
    let c_ = initialize(&mut s, "2025-11-25", T0 + 2).0;
    // Touch `a` so `b` is the least recently used.
    assert_eq!(legacy_json(&mut s, &a, "ping", json!({}), T0 + 3).0, 200);
    let d = initialize(&mut s, "2025-11-25", T0 + 4).0;
    assert_eq!(s.sessions.len(), 3);
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
fn a_client_opening_sessions_in_a_loop_evicts_its_own_not_one_in_use() {
    let mut c = config();
    // One owner holds half the table: four.
    c.limits.max_sessions = 8;
    c.limits.requests_per_second = 1000;
    let mut s = server_with(c);
    let used = initialize(&mut s, "2025-11-25", T0).0;
    assert_eq!(legacy_json(&mut s, &used, "ping", json!({}), T0 + 1).0, 200);
    // A runaway opens sessions it never comes back to, many more than the table holds, and
    // the session in use is the least recently used of all by the end.
    let mut last = String::new();
    for k in 0..40 {
        last = initialize(&mut s, "2025-11-25", T0 + 10 + k).0;
    }
    assert_eq!(s.sessions.len(), 4);
    assert_eq!(
        legacy_json(&mut s, &used, "ping", json!({}), T0 + 100).0,
        200
    );
    // A fresh client is never refused: its session takes an abandoned one's place, and is
    // still there after the runaway's next three.
    let fresh = initialize(&mut s, "2025-11-25", T0 + 101).0;
    for k in 0..2 {
        initialize(&mut s, "2025-11-25", T0 + 102 + k);
    }
    assert_eq!(
        legacy_json(&mut s, &fresh, "ping", json!({}), T0 + 110).0,
        200
    );
    assert_eq!(
        legacy_json(&mut s, &last, "ping", json!({}), T0 + 111).0,
        404
    );
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

#[test]
fn batches_are_capped_in_items_rate_and_answer_bytes() {
    let mut c = config();
    c.limits.batch_items = 8;
    c.limits.requests_per_second = 5;
    c.limits.batch_answer_bytes = 2000;
    let mut s = server_with(c);
    let (sid, _) = initialize(&mut s, "2025-03-26", T0);
    let h = [
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-03-26"),
    ];
    let items = |n: usize, method: &str| {
        Value::Array(
            (0..n)
                .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": method}))
                .collect(),
        )
        .to_string()
    };
    // Too many items: refused whole, nothing run.
    let mut r = post(&mut s, &h, &items(9, "ping"), T0 + 2000);
    assert_eq!(r.status, 413);
    assert_eq!(body_json(&mut r, T0 + 2000)["error"]["code"], -32600);
    // Every item counts against the rate: 5 per second, the rest answered E_BUSY.
    let mut r = post(&mut s, &h, &items(8, "ping"), T0 + 4000);
    let v = body_json(&mut r, T0 + 4000);
    let busy = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .filter(|a| a["error"]["data"]["code"] == "E_BUSY")
            .count()
    };
    assert_eq!(busy(&v), 3, "{v}");
    // The answer stops growing past its byte cap: later items get E_BUSY, not run.
    let mut r = post(&mut s, &h, &items(5, "tools/list"), T0 + 6000);
    let v = body_json(&mut r, T0 + 6000);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 5);
    assert!(arr[0]["result"]["tools"].is_array());
    assert!(busy(&v) >= 1, "{v}");
}
