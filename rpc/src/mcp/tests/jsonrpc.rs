//! JSON-RPC 2.0 framing: parse errors, invalid requests, ids of every type, notifications.

use super::*;

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
            modern_meta()
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
        json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"_meta": modern_meta()}})
            .to_string();
    let h = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "notifications/whatever"),
    ];
    let r = post(&mut s, &h, &body, T0);
    assert_eq!(r.status, 202);
    assert!(matches!(r.body, Body::Empty));
}
