//! The 2026-07-28 era: `server/discover`, the envelope and header checks, methods and capabilities.

use super::*;

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

/// The answers written member by member (no `Map` built) are byte for byte what serialising
/// them as a `Value` gives: members in `Map` order, each once, in both eras.
#[test]
fn written_results_are_what_a_map_serialises() {
    let mut s = server();
    let check = |r: &mut Response| {
        let bytes = body_bytes(r, T0);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let result = text.split_once(",\"result\":").unwrap().1;
        assert_eq!(
            result.strip_suffix('}'),
            Some(v["result"].to_string().as_str())
        );
    };
    check(&mut modern(&mut s, "server/discover", json!({}), T0));
    check(&mut modern(&mut s, "tools/list", json!({}), T0));
    // Without instructions, and on one page (no `nextCursor`).
    let mut plain = McpServer::with_catalog_of(
        &s,
        Config::new("7", None),
        s.context().clone(),
        Box::new(|_: &mut [u8]| {}),
    );
    check(&mut modern(&mut plain, "tools/list", json!({}), T0));
    check(&mut modern(&mut plain, "server/discover", json!({}), T0));
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    check(&mut McpRequest::legacy(&sid, "tools/list", json!({})).send(&mut s, T0));
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
        req("server/discover", json!({"_meta": modern_meta()})),
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
    let mut m = modern_meta();
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
        let (st, v) = raw_modern(
            &mut s,
            &h,
            req("tools/list", json!({"_meta": modern_meta()})),
        );
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
        req("tools/list", json!({"_meta": modern_meta()})),
    );
    assert_eq!(st, 200);
    // Mcp-Name: missing, wrong → -32020; padded with whitespace, or base64-encoded → accepted.
    let call = req(
        "tools/call",
        json!({"_meta": modern_meta(), "name": "echo", "arguments": {"text": "é"}}),
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
        json!({"_meta": modern_meta(), "uri": "irix7://status"}),
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
    let mut m = modern_meta();
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
        json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}}])
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
