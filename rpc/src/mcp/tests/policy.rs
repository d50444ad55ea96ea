//! `mcp.policy` (what is listed and callable, in both eras) and the audit records of calls and
//! failed logins.

use super::*;
use crate::mcp::{AuditEvent, AuditRecord, Outcome, Policy, Via};

/// A server with `policy` whose audit records land in the returned list.
fn audited(policy: &str) -> (McpServer<Ctx>, Rc<RefCell<Vec<AuditRecord>>>) {
    let mut c = config();
    c.policy = Policy::parse(policy).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = seen.clone();
    c.audit = Some(Rc::new(move |r: &AuditRecord| {
        sink.borrow_mut().push(r.clone())
    }));
    (server_with(c), seen)
}

/// Every tool name `tools/list` shows, across pages.
fn listed(s: &mut McpServer<Ctx>, sid: Option<&str>) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, v) = match sid {
            Some(sid) => legacy_json(s, sid, "tools/list", params, T0),
            None => modern_json(s, "tools/list", params, T0),
        };
        let tools = v["result"]["tools"].as_array().unwrap();
        names.extend(
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string()),
        );
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return names,
        }
    }
}

/// Calls `tool` and returns the result (or error) object.
fn call(s: &mut McpServer<Ctx>, sid: Option<&str>, tool: &str, args: Value) -> Value {
    let params = json!({"name": tool, "arguments": args});
    let (_, v) = match sid {
        Some(sid) => legacy_json(s, sid, "tools/call", params, T0),
        None => modern_json(s, "tools/call", params, T0),
    };
    v
}

fn text_of(v: &Value) -> &str {
    v["result"]["content"][0]["text"].as_str().unwrap_or("")
}

#[test]
fn each_policy_filters_the_listing_and_refuses_calls_in_both_eras() {
    let all: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    let read_only: Vec<&str> = TOOLS
        .iter()
        .filter(|t| t.annotations.read_only)
        .map(|t| t.name)
        .collect();
    let no_destructive: Vec<&str> = TOOLS
        .iter()
        .filter(|t| !t.annotations.destructive)
        .map(|t| t.name)
        .collect();
    for (policy, offered) in [
        ("full", all.clone()),
        ("", all.clone()),
        ("read-only", read_only),
        ("no-destructive", no_destructive),
        ("ec*, fail,*lo*", vec!["echo", "fail", "slow"]),
    ] {
        for legacy_era in [false, true] {
            let (mut s, _) = audited(policy);
            let sid = legacy_era.then(|| initialize(&mut s, "2025-11-25", T0).0);
            let sid = sid.as_deref();
            assert_eq!(
                listed(&mut s, sid),
                offered,
                "{policy:?} legacy={legacy_era}"
            );
            for t in TOOLS {
                let args = match t.name {
                    "echo" => json!({"text": "hi"}),
                    "add" => json!({"a": 1, "b": 2}),
                    "slow" => json!({"steps": 0}),
                    _ => json!({}),
                };
                let v = call(&mut s, sid, t.name, args);
                let refused = text_of(&v).starts_with("E_PERM");
                assert_eq!(
                    refused,
                    !offered.contains(&t.name),
                    "{policy:?} legacy={legacy_era} {}: {v}",
                    t.name
                );
                if refused {
                    let shown = if policy.is_empty() { "full" } else { policy };
                    let text = text_of(&v);
                    assert!(text.starts_with(&format!("E_PERM: {} (", t.name)), "{text}");
                    assert!(
                        text.ends_with(&format!(") is outside mcp.policy={shown}")),
                        "{text}"
                    );
                    assert_eq!(v["result"]["isError"], true);
                }
            }
        }
    }
}

#[test]
fn the_filtered_listing_is_rendered_once_and_spliced() {
    let (mut s, _) = audited("no-destructive");
    let listings = s.tools.listings(s.tools.listed()).to_vec();
    assert!(!listings.is_empty());
    assert!(
        !core::str::from_utf8(&listings)
            .unwrap()
            .contains("\"fail\"")
    );
    assert_eq!(s.tools.offered(), TOOLS.len() - 1);
    // Pages of the filtered list are slices of that one buffer.
    let (_, v) = modern_json(&mut s, "tools/list", json!({}), T0);
    let first = v["result"]["tools"][0].to_string();
    assert!(first.contains("\"echo\""));
    // A catalog copied into a server with another policy is filtered anew.
    let mut c = config();
    c.policy = Policy::parse("read-only").unwrap();
    let mut copy = McpServer::with_catalog_of(
        &s,
        c,
        Rc::new(RefCell::new(Ctx::default())),
        Box::new(|b: &mut [u8]| b.fill(1)),
    );
    assert!(!listed(&mut copy, None).contains(&"slow".to_string()));
}

#[test]
fn writes_destructive_calls_and_refusals_are_audited_but_reads_are_not() {
    let (mut s, seen) = audited("ec*,fail,slow,add");
    // Read-only tools leave nothing, whatever their outcome.
    call(&mut s, None, "echo", json!({"text": "hi"}));
    call(&mut s, None, "add", json!({"a": "x"}));
    call(&mut s, None, "big", json!({}));
    assert!(seen.borrow().is_empty(), "{:?}", seen.borrow());

    // A destructive call that fails, in the modern era.
    let v = call(
        &mut s,
        None,
        "fail",
        json!({"path": "/etc/passwd", "data": "c2VjcmV0"}),
    );
    assert_eq!(text_of(&v), "E_NOT_FOUND: no such file: /x");
    // A write call whose result streams: its line is written when it ends.
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let mut r = McpRequest::legacy(
        &sid,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 2}}),
    )
    .id(3)
    .send(&mut s, T0 + 5);
    assert_eq!(seen.borrow().len(), 1, "not before the call ends");
    let end = body_json(&mut r, T0 + 5);
    assert_eq!(end["result"]["content"][0]["text"], "slow done");
    // A write call outside the policy.
    let mut c = config();
    c.policy = Policy::parse("read-only").unwrap();
    let sink_seen = seen.clone();
    c.audit = Some(Rc::new(move |r: &AuditRecord| {
        sink_seen.borrow_mut().push(r.clone())
    }));
    let mut ro = server_with(c);
    let v = call(&mut ro, None, "slow", json!({"steps": 1}));
    assert!(text_of(&v).starts_with("E_PERM"));
    // Invalid arguments of a write tool are an outcome too.
    call(&mut s, None, "slow", json!({"steps": "many"}));
    // Refused calls are counted, and summarised per token when their window closes.
    assert_eq!(seen.borrow().len(), 2);
    ro.poll_audit(T0 + crate::mcp::guard::audit::REFUSAL_WINDOW_MS);
    s.poll_audit(T0 + crate::mcp::guard::audit::REFUSAL_WINDOW_MS);

    let records = seen.borrow();
    let lines: Vec<String> = records.iter().map(ToString::to_string).collect();
    assert_eq!(records.len(), 4, "{lines:#?}");
    assert_eq!(
        records[0].event,
        AuditEvent::Call {
            via: Via::Stateless,
            tool: "fail".into(),
            args: "{path=\"/etc/passwd\",data=<8 bytes>}".into(),
            outcome: Outcome::Failed(ErrorCode::NotFound),
        }
    );
    assert_eq!(records[0].client, PEER.addr);
    assert_eq!(records[0].at_ms, T0);
    assert_eq!(
        lines[0],
        "audit 1000000 ms 127.0.0.1 as admin stateless fail {path=\"/etc/passwd\",data=<8 bytes>} -> E_NOT_FOUND"
    );
    assert_eq!(
        lines[1],
        format!(
            "audit 1000005 ms 127.0.0.1 as admin session {} slow {{steps=2}} -> ok",
            &sid[..8]
        )
    );
    assert!(
        lines[2]
            .ends_with("as admin 1 refused calls in 10 s (the last: slow -> refused by policy)"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].ends_with("as admin 1 refused calls in 10 s (the last: slow -> E_INVAL)"),
        "{}",
        lines[3]
    );
    assert!(lines.iter().all(|l| !l.contains("c2VjcmV0")));
}

#[test]
fn a_cancelled_streaming_call_is_audited_as_cancelled() {
    let (mut s, seen) = audited("full");
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let mut r = McpRequest::legacy(
        &sid,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 100}}),
    )
    .id(9)
    .send(&mut s, T0);
    let Body::Stream(mut body) = core::mem::replace(&mut r.body, Body::Full(Vec::new())) else {
        panic!("slow streams")
    };
    let mut out = Vec::new();
    body.poll(&mut out, 4096, T0);
    assert!(seen.borrow().is_empty());
    body.cancel();
    drop(body);
    let records = seen.borrow();
    assert_eq!(records.len(), 1);
    assert!(
        records[0]
            .to_string()
            .ends_with("slow {steps=100} -> cancelled"),
        "{}",
        records[0]
    );
}

#[test]
fn failed_logins_are_counted_without_the_token_and_summarised_once_a_window() {
    let (mut s, seen) = audited("full");
    s.config.token = Some("the-real-token-123".into());
    let body = McpRequest::modern("server/discover", json!({}));
    let admit = |s: &mut McpServer<Ctx>, auth: Option<&str>, peer: Peer, now: u64| {
        let mut h = body.headers();
        if let Some(a) = auth {
            h.push("Authorization", a);
        }
        s.admit(&h, peer, None, now)
            .map(|_| ())
            .map_err(|r| r.status)
    };
    let other = Peer {
        addr: [192, 168, 7, 7],
        port: 9,
    };
    assert_eq!(admit(&mut s, None, PEER, T0), Err(401));
    assert_eq!(
        admit(&mut s, Some("Bearer guess-guess-guess"), PEER, T0),
        Err(401)
    );
    assert_eq!(
        admit(&mut s, Some("Basic dXNlcjpwYXNz"), PEER, T0),
        Err(401)
    );
    assert_eq!(
        admit(&mut s, Some("Bearer the-real-token-123"), PEER, T0),
        Ok(())
    );
    // Past the throttle's limit, refusals are counted as throttled.
    let limit = s.config.limits.auth_failures_per_second;
    for _ in 0..limit + 10 {
        let _ = admit(&mut s, Some("Bearer guess-guess-guess"), PEER, T0 + 10);
    }
    assert_eq!(
        admit(&mut s, Some("Bearer guess"), other, T0 + 20),
        Err(401)
    );
    // Nothing is recorded while the window is open.
    s.poll_audit(T0 + 9_999);
    assert!(seen.borrow().is_empty());
    s.poll_audit(T0 + 10_000);
    let lines: Vec<String> = seen.borrow().iter().map(ToString::to_string).collect();
    // Three failures, then `limit + 10` guesses of which the throttle lets `limit - 3` through.
    let (wrong, throttled) = (1 + limit - 3, 13);
    assert_eq!(
        lines,
        vec![
            format!(
                "audit {T0} ms 127.0.0.1 {} failed logins in 10 s \
                 (wrong token {wrong}, missing token 2, throttled {throttled})",
                limit + 13
            ),
            format!(
                "audit {T0} ms 192.168.7.7 1 failed logins in 10 s \
                 (wrong token 1, missing token 0, throttled 0)"
            ),
        ]
    );
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("guess") && !l.contains("real-token") && !l.contains("dXNl"))
    );
}

#[test]
fn a_repeated_argument_key_is_refused_naming_it_in_both_eras_and_nothing_runs() {
    let (mut s, seen) = audited("full");
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let args = json!({"path": "/tmp/decoy", "paTH": "/etc/passwd", "data": "eA=="});
    for legacy in [false, true] {
        let req = match legacy {
            true => McpRequest::legacy(
                &sid,
                "tools/call",
                json!({"name": "fail", "arguments": args}),
            ),
            false => McpRequest::modern("tools/call", json!({"name": "fail", "arguments": args})),
        };
        let body = String::from_utf8(req.body())
            .unwrap()
            .replace("\"paTH\"", "\"path\"");
        let h: Vec<(String, String)> = req.header_list();
        let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut r = post(&mut s, &h, &body, T0 + 1);
        let v = crate::testing::last_message(&body_bytes(&mut r, T0 + 1)).expect("an answer");
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(
            v["error"]["message"], "Invalid params: the key \"path\" is given twice",
            "{v}"
        );
    }
    assert!(seen.borrow().is_empty(), "{:?}", seen.borrow());
}

/// A server with `mcp.confirm` on, auditing.
fn confirming() -> (McpServer<Ctx>, Rc<RefCell<Vec<AuditRecord>>>) {
    let (mut s, seen) = audited("full");
    s.config.confirm = true;
    (s, seen)
}

fn modern_call(s: &mut McpServer<Ctx>, tool: &str, caps: Value, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {"path": "/x"}});
    if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
        p.extend(e);
    }
    let mut r = McpRequest::modern("tools/call", params)
        .capabilities(caps)
        .send(s, T0);
    body_json(&mut r, T0)
}

#[test]
fn with_confirm_a_destructive_call_asks_first_and_runs_only_on_a_yes() {
    let (mut s, seen) = confirming();
    let elicit = json!({"elicitation": {}});
    // A client that cannot be asked is refused.
    let v = modern_call(&mut s, "fail", json!({}), json!({}));
    assert_eq!(
        text_of(&v),
        "E_PERM: fail needs the user's consent (mcp.confirm) and this client cannot be asked \
         (no elicitation capability)"
    );
    // One that can is asked, with a data-free description of the call.
    let v = modern_call(&mut s, "fail", elicit.clone(), json!({}));
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    let ask = &v["result"]["inputRequests"]["irix7.confirm"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        ask["params"]["message"],
        "Allow the destructive tool fail {path=\"/x\"} on this machine?"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["required"],
        json!(["confirm"])
    );
    // A yes runs the tool (which fails its own way here); anything else is E_PERM.
    let answer = |a: Value| json!({"inputResponses": {"irix7.confirm": a}});
    let yes = answer(json!({"action": "accept", "content": {"confirm": true}}));
    let v = modern_call(&mut s, "fail", elicit.clone(), yes);
    assert_eq!(text_of(&v), "E_NOT_FOUND: no such file: /x");
    for no in [
        json!({"action": "decline"}),
        json!({"action": "accept", "content": {"confirm": false}}),
    ] {
        let v = modern_call(&mut s, "fail", elicit.clone(), answer(no));
        assert_eq!(
            text_of(&v),
            "E_PERM: fail was not allowed by the user (mcp.confirm)"
        );
    }
    // Tools that are not destructive are not asked about.
    let mut r = McpRequest::modern(
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 0}}),
    )
    .send(&mut s, T0);
    assert_eq!(
        body_json(&mut r, T0)["result"]["content"][0]["text"],
        "slow done"
    );
    let outcomes: Vec<String> = seen
        .borrow()
        .iter()
        .map(|r| r.to_string().rsplit("-> ").next().unwrap().to_string())
        .collect();
    // The question itself is no outcome: the yes, the two noes, the write; the refusal
    // before the question (the client cannot be asked) is counted and summarised.
    assert_eq!(outcomes, ["E_NOT_FOUND", "E_PERM", "E_PERM", "ok"]);
    s.poll_audit(T0 + crate::mcp::guard::audit::REFUSAL_WINDOW_MS);
    let last = seen.borrow().last().map(ToString::to_string).unwrap();
    assert!(
        last.ends_with("1 refused calls in 10 s (the last: fail -> E_PERM)"),
        "{last}"
    );
}

#[test]
fn with_confirm_a_legacy_session_is_asked_on_its_stream_or_refused_without_one() {
    let (mut s, _) = confirming();
    let r = McpRequest::initialize("2025-11-25")
        .param("capabilities", json!({"elicitation": {}}))
        .send(&mut s, T0);
    let sid = header(&r, "Mcp-Session-Id").unwrap().to_string();
    let call =
        McpRequest::legacy(&sid, "tools/call", json!({"name": "fail", "arguments": {}})).id(4);
    for (answer, want) in [
        (
            json!({"action": "accept", "content": {"confirm": true}}),
            "E_NOT_FOUND: no such file: /x",
        ),
        (
            json!({"action": "cancel"}),
            "E_PERM: fail was not allowed by the user (mcp.confirm)",
        ),
    ] {
        let mut r = call.send(&mut s, T0);
        let Body::Stream(src) = &mut r.body else {
            panic!("the question streams")
        };
        let mut out = Vec::new();
        src.poll(&mut out, 1 << 16, T0);
        let (msgs, _, _) = sse_events(&out);
        let ask = msgs
            .iter()
            .find(|m| m["method"] == "elicitation/create")
            .expect("asked");
        assert!(
            ask["params"]["message"]
                .as_str()
                .unwrap()
                .contains("tool fail {}")
        );
        let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer});
        assert_eq!(legacy(&mut s, &sid, &reply, T0).status, 202);
        let rest = body_bytes(&mut r, T0);
        let (msgs, _, _) = sse_events(&rest);
        let last = msgs.last().unwrap();
        assert_eq!(last["id"], 4);
        assert_eq!(last["result"]["content"][0]["text"], want, "{last}");
    }
    // Without SSE the client cannot be asked: the call fails closed.
    let mut r = call.accept("application/json").send(&mut s, T0);
    let v = body_json(&mut r, T0);
    assert!(text_of(&v).starts_with("E_NOTSUP"), "{v}");
}
