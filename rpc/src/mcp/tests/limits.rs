//! Rate and concurrency limits.

use super::*;

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

    // Legacy: per owner (the token), the window shared fairly between its sessions.
    let (sid, _) = initialize(&mut s, "2025-11-25", T0 + 5000);
    let (other, _) = initialize(&mut s, "2025-11-25", T0 + 5000);
    let mut flooded = 0;
    while legacy_json(&mut s, &sid, "ping", json!({}), T0 + 5001 + flooded).0 == 200 {
        flooded += 1;
        assert!(flooded < 40);
    }
    assert_eq!(flooded, 18, "the owner's 20 less its two initializes");
    // A sibling session is below its equal part: served, while the flooder is not.
    assert_eq!(
        legacy_json(&mut s, &other, "ping", json!({}), T0 + 5100).0,
        200
    );
    assert_eq!(
        legacy_json(&mut s, &sid, "ping", json!({}), T0 + 5100).0,
        429
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
fn a_parse_over_the_budget_is_refused_with_503_and_the_budget_is_given_back() {
    let mut c = config();
    c.parse_budget = irix7_kmem::budget::Pool::new("parse", 8 * 1024);
    let pool = c.parse_budget.clone();
    let mut s = server_with(c);
    assert_eq!(modern(&mut s, "tools/list", json!({}), T0).status, 200);
    let text = "x".repeat(5000);
    let r = modern(
        &mut s,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
        T0 + 10,
    );
    assert_eq!(r.status, 503);
    assert_eq!(header(&r, "Retry-After"), Some("1"));
    let u = pool.usage();
    assert_eq!((u.used, u.refused), (0, 1));
    assert!(u.peak > 0 && u.peak <= 8 * 1024);
}

#[test]
fn the_tape_a_big_request_grew_is_given_back_and_a_small_one_keeps_its_room() {
    let mut s = server();
    let kept = s.tape_capacity();
    assert!(kept > 0);
    assert_eq!(modern(&mut s, "tools/list", json!({}), T0).status, 200);
    assert_eq!(
        s.tape_capacity(),
        kept,
        "a small request neither grows nor frees it"
    );
    // 2,000 values in `_meta`: the tape grows to hold them, for this request only.
    let many = vec![0; 2000];
    let r = modern(
        &mut s,
        "tools/list",
        json!({"_meta": {"many": many}}),
        T0 + 10,
    );
    assert_eq!(r.status, 200);
    assert_eq!(s.tape_capacity(), 0, "given back after the request");
    assert_eq!(modern(&mut s, "tools/list", json!({}), T0 + 20).status, 200);
    assert!(s.tape_capacity() <= 256, "{}", s.tape_capacity());
}
