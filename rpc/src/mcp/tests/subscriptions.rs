//! Legacy subscriptions: `resources/subscribe`, the session's `GET /mcp` stream, its limit,
//! keep-alives and `Last-Event-ID` replay.

use super::*;
use crate::mcp::WatchDef;

fn steps(c: &mut Ctx) -> u64 {
    u64::from(c.steps)
}

const WATCHES: &[WatchDef<Ctx>] = &[WatchDef {
    uri: "irix7://status",
    interval_ms: 100,
    version: steps,
}];

fn watching(limit: usize) -> McpServer<Ctx> {
    let mut c = config();
    c.limits.event_streams = limit;
    c.limits.requests_per_second = 1000;
    let mut s = server_with(c);
    s.register_watches(WATCHES);
    s
}

fn get(s: &mut McpServer<Ctx>, sid: &str, last: Option<&str>, now: u64) -> Response {
    let mut h = vec![
        ("Mcp-Session-Id", sid),
        ("Accept", "text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    if let Some(l) = last {
        h.push(("Last-Event-ID", l));
    }
    s.handle_parts(&Method::Get, &headers(&h), b"", PEER, now)
}

/// Polls a stream body for `ms` milliseconds in 10 ms steps; the bytes and whether it ended.
fn pump(r: &mut Response, from: u64, ms: u64) -> (Vec<u8>, bool) {
    let Body::Stream(src) = &mut r.body else {
        panic!("not a stream");
    };
    let mut out = Vec::new();
    let mut t = from;
    while t < from + ms {
        if let BodyPoll::End = src.poll(&mut out, 1024, t) {
            return (out, true);
        }
        t += 10;
    }
    (out, false)
}

fn change(s: &McpServer<Ctx>) {
    s.context().borrow_mut().steps += 1;
}

fn session(s: &mut McpServer<Ctx>) -> String {
    let (sid, init) = initialize(s, "2025-11-25", T0);
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        true
    );
    let (st, v) = legacy_json(
        s,
        &sid,
        "resources/subscribe",
        json!({"uri": "irix7://status"}),
        T0,
    );
    assert_eq!((st, &v["result"]), (200, &json!({})), "{v}");
    sid
}

#[test]
fn subscribing_needs_a_watchable_uri_and_is_advertised_only_when_real() {
    let mut plain = server();
    let (_, init) = initialize(&mut plain, "2025-11-25", T0);
    assert_eq!(init["result"]["capabilities"]["resources"], json!({}));
    let mut s = watching(2);
    let sid = session(&mut s);
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "resources/subscribe",
        json!({"uri": "irix7://nope"}),
        T0,
    );
    assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS);
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("irix7://status"), "{msg}");
    let (_, v) = legacy_json(&mut s, &sid, "resources/subscribe", json!({}), T0);
    assert_eq!(v["error"]["code"], crate::jsonrpc::INVALID_PARAMS);
    // The modern era delivers them on `subscriptions/listen`.
    let (_, d) = modern_json(&mut s, "server/discover", json!({}), T0);
    assert_eq!(
        d["result"]["capabilities"]["resources"]["subscribe"], true,
        "{d}"
    );
    // Without anything subscribable there is no listen either.
    let (st, v) = modern_json(&mut plain, "subscriptions/listen", json!({}), T0);
    assert_eq!((st, &v["error"]["code"]), (404, &json!(-32601)));
}

fn listen(s: &mut McpServer<Ctx>, uris: Value, now: u64) -> Response {
    McpRequest::modern(
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris, "toolsListChanged": true}}),
    )
    .id(42)
    .send(s, now)
}

#[test]
fn a_listen_stream_acknowledges_then_tags_its_updates() {
    let mut s = watching(1);
    let mut r = listen(
        &mut s,
        json!(["irix7://status", "irix7://nope", "irix7://status"]),
        T0,
    );
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "Content-Type"), Some("text/event-stream"));
    let (out, _) = pump(&mut r, T0, 200);
    let (msgs, ids, _) = sse_events(&out);
    // Only what can be delivered is acknowledged: the subscribable URIs, no list changes.
    assert_eq!(
        msgs,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"resourceSubscriptions": ["irix7://status"]},
                           "_meta": {"io.modelcontextprotocol/subscriptionId": 42}}})
        ]
    );
    assert!(
        ids.is_empty(),
        "no event ids: the era does not resume streams"
    );
    change(&s);
    let (out, _) = pump(&mut r, T0 + 200, 200);
    let (msgs, _, _) = sse_events(&out);
    assert_eq!(
        msgs,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "irix7://status",
                           "_meta": {"io.modelcontextprotocol/subscriptionId": 42}}})
        ]
    );
    // It holds the one place (limit 1): a second listen, or a legacy GET, is refused.
    let mut again = listen(&mut s, json!([]), T0);
    assert_eq!(again.status, 503);
    let v = body_json(&mut again, T0);
    assert_eq!(
        (&v["id"], &v["error"]["data"]["code"]),
        (&json!(42), &json!("E_BUSY"))
    );
    let sid = session(&mut s);
    assert_eq!(get(&mut s, &sid, None, T0).status, 503);
    // Closed, it gives the place back and leaves nothing behind.
    drop(r);
    assert!(
        s.subscriptions
            .hub
            .borrow()
            .feeds
            .iter()
            .all(|f| f.serial < 1 << 63)
    );
    assert_eq!(listen(&mut s, json!([]), T0).status, 200);
}

#[test]
fn a_listen_needs_an_event_stream_client() {
    let mut s = watching(1);
    let mut r = McpRequest::modern("subscriptions/listen", json!({}))
        .accept("application/json")
        .send(&mut s, T0);
    assert_eq!(r.status, 406);
    assert!(
        body_json(&mut r, T0)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("text/event-stream")
    );
}

#[test]
fn updates_arrive_on_the_get_stream_coalesced_with_ids_and_keep_alives() {
    let mut s = watching(2);
    let sid = session(&mut s);
    let mut r = get(&mut s, &sid, None, T0);
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "Content-Type"), Some("text/event-stream"));
    // The first look takes the version; nothing has changed yet.
    let (out, ended) = pump(&mut r, T0, 200);
    assert!(out.is_empty() && !ended);
    // Many changes within one interval are one update.
    for _ in 0..5 {
        change(&s);
    }
    let (out, _) = pump(&mut r, T0 + 200, 300);
    let (msgs, ids, _) = sse_events(&out);
    assert_eq!(
        msgs,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "irix7://status"}})
        ]
    );
    assert_eq!(ids.len(), 1);
    // Idle: a comment every five seconds.
    let (out, _) = pump(&mut r, T0 + 500, 5_100);
    assert_eq!(out, b": keep-alive\n\n");
    // Unsubscribed: no more updates.
    legacy_json(
        &mut s,
        &sid,
        "resources/unsubscribe",
        json!({"uri": "irix7://status"}),
        T0,
    );
    change(&s);
    let (out, _) = pump(&mut r, T0 + 6_000, 500);
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
    // The session ends: so does its stream.
    let h = headers(&[("Mcp-Session-Id", &sid)]);
    assert_eq!(
        s.handle_parts(&Method::Delete, &h, b"", PEER, T0).status,
        200
    );
    assert!(pump(&mut r, T0 + 7_000, 20).1);
}

#[test]
fn a_session_that_listens_does_not_expire_until_its_stream_closes() {
    let mut s = watching(2);
    let sid = session(&mut s);
    let other = session(&mut s);
    let r = get(&mut s, &sid, None, T0);
    // An hour later, with only the stream in use: still there; the idle session is gone.
    let later = T0 + 60 * 60_000;
    assert_eq!(legacy_json(&mut s, &sid, "ping", json!({}), later).0, 200);
    assert_eq!(legacy_json(&mut s, &other, "ping", json!({}), later).0, 404);
    // Without its stream it expires like any other.
    drop(r);
    let (st, _) = legacy_json(&mut s, &sid, "ping", json!({}), later + 31 * 60_000);
    assert_eq!(st, 404);
}

#[test]
fn a_dropped_stream_resumes_from_last_event_id() {
    let mut s = watching(2);
    let sid = session(&mut s);
    let mut r = get(&mut s, &sid, None, T0);
    pump(&mut r, T0, 100);
    change(&s);
    let (out, _) = pump(&mut r, T0 + 100, 100);
    let (_, ids, _) = sse_events(&out);
    let first = ids[0].clone();
    // An event is logged while the client is away (the stream it had is still polled
    // once, then its connection is found dead).
    change(&s);
    let (lost, _) = pump(&mut r, T0 + 200, 100);
    assert_eq!(sse_events(&lost).0.len(), 1);
    drop(r);
    let mut again = get(&mut s, &sid, Some(&first), T0 + 300);
    let (out, _) = pump(&mut again, T0 + 300, 50);
    assert_eq!(
        out, lost,
        "the event after Last-Event-ID is sent again, same id"
    );
    // Without Last-Event-ID only new events come.
    drop(again);
    let mut fresh = get(&mut s, &sid, None, T0 + 400);
    assert!(pump(&mut fresh, T0 + 400, 50).0.is_empty());
}

#[test]
fn replay_past_the_log_resends_one_update_per_resource() {
    let mut s = watching(2);
    let sid = session(&mut s);
    let mut r = get(&mut s, &sid, None, T0);
    pump(&mut r, T0, 100);
    let mut t = T0 + 100;
    let mut first = String::new();
    for i in 0..40 {
        change(&s);
        let (out, _) = pump(&mut r, t, 100);
        if i == 0 {
            first = sse_events(&out).1[0].clone();
        }
        t += 100;
    }
    drop(r);
    let mut again = get(&mut s, &sid, Some(&first), t);
    let (out, _) = pump(&mut again, t, 50);
    let (msgs, ids, _) = sse_events(&out);
    assert_eq!(msgs.len(), 1, "{}", String::from_utf8_lossy(&out));
    assert_eq!(msgs[0]["params"]["uri"], "irix7://status");
    assert_eq!(ids[0], format!("{}-e41", ids[0].split('-').next().unwrap()));
}

#[test]
fn streams_are_one_per_session_and_bounded_in_all() {
    let mut s = watching(2);
    let a = session(&mut s);
    let b = session(&mut s);
    let c = session(&mut s);
    let mut ra = get(&mut s, &a, None, T0);
    let _rb = get(&mut s, &b, None, T0);
    let mut rc = get(&mut s, &c, None, T0);
    assert_eq!(rc.status, 503);
    assert_eq!(header(&rc, "Retry-After"), Some("5"));
    let v = body_json(&mut rc, T0);
    assert_eq!(v["error"]["data"]["code"], "E_BUSY");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2 event streams"),
        "{v}"
    );
    // A session's new GET takes over from its old stream, which ends.
    let mut ra2 = get(&mut s, &a, None, T0);
    assert_eq!(ra2.status, 200);
    assert!(pump(&mut ra, T0, 20).1);
    drop(ra);
    assert!(!pump(&mut ra2, T0, 20).1);
    // A closed stream frees its place.
    drop(ra2);
    assert_eq!(get(&mut s, &c, None, T0).status, 200);
}

#[test]
fn get_is_refused_clearly_without_a_usable_session() {
    let mut s = watching(2);
    let sid = session(&mut s);
    // No session, or the modern era: 405 as before.
    let r = s.handle_parts(
        &Method::Get,
        &headers(&[("Accept", "text/event-stream")]),
        b"",
        PEER,
        T0,
    );
    assert_eq!(r.status, 405);
    let h = headers(&[
        ("Mcp-Session-Id", &sid),
        ("Accept", "text/event-stream"),
        ("MCP-Protocol-Version", MODERN_VERSION),
    ]);
    assert_eq!(s.handle_parts(&Method::Get, &h, b"", PEER, T0).status, 405);
    let h = headers(&[("Mcp-Session-Id", &sid), ("Accept", "application/json")]);
    assert_eq!(s.handle_parts(&Method::Get, &h, b"", PEER, T0).status, 406);
    assert_eq!(get(&mut s, "no-such-session", None, T0).status, 404);
    // A POST stream's event id cannot be resumed here: said so, not taken for a new stream.
    let mut r = get(&mut s, &sid, Some("0-1-2"), T0);
    assert_eq!(r.status, 400);
    let v = body_json(&mut r, T0);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("POST"),
        "{v}"
    );
}

#[test]
fn an_event_stream_ends_at_its_lifetime_and_says_how_to_come_back() {
    let mut s = {
        let mut c = config();
        c.limits.event_streams = 2;
        c.limits.requests_per_second = 1000;
        c.limits.event_stream_lifetime_ms = 60_000;
        let mut s = server_with(c);
        s.register_watches(WATCHES);
        s
    };
    let sid = session(&mut s);
    let mut r = get(&mut s, &sid, None, T0);
    let mut l = listen(&mut s, json!(["irix7://status"]), T0);
    pump(&mut r, T0, 100);
    pump(&mut l, T0, 100);
    // Read as it comes, a stream still ends: the legacy one advertises when to reconnect.
    let (out, ended) = pump(&mut r, T0 + 100, 60_000);
    assert!(ended, "the GET stream outlived its lifetime");
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.ends_with("retry: 3000\n: this stream's lifetime is over; open another\n\n"),
        "{text}"
    );
    let (out, ended) = pump(&mut l, T0 + 100, 60_000);
    assert!(ended, "the listen stream outlived its lifetime");
    assert!(
        String::from_utf8_lossy(&out)
            .ends_with(": this stream's lifetime is over; open another\n\n")
    );
    // Its place is free again, and the session's next GET is served.
    drop((r, l));
    let again = get(&mut s, &sid, None, T0 + 61_000);
    assert_eq!(again.status, 200);
}
