//! Resource subscriptions on the real image: a legacy session subscribed to `irix7://serial`
//! hears `notifications/resources/updated` on its `GET /mcp` stream when the console is
//! written, resumes with `Last-Event-ID` after a dropped connection without losing what its
//! event log still holds, and the number of event streams is bounded, answered clearly and
//! harmless when clients open many and never read them.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rpc::testing::McpRequest;
use serde_json::{Value, json};
use support::guest::{Guest, HOST, TOKEN, boot_guest};
use support::http::{Stream, request};
use support::mcp::{GuestClient, tool_ok};

/// Sends a raw request; its response.
fn send(g: &Guest, req: &McpRequest) -> host_http::Response {
    request(
        g.mcp,
        &String::from_utf8_lossy(&req.http("/mcp", HOST, Some(TOKEN))),
    )
}

/// A legacy session subscribed to `uri`.
fn subscribed(g: &Guest, uri: &str) -> String {
    let init = send(g, &McpRequest::initialize("2025-11-25"));
    assert_eq!(init.status, 200, "{}", init.text());
    let sid = init.header("mcp-session-id").unwrap().to_string();
    let note = McpRequest::legacy(&sid, "notifications/initialized", json!({}))
        .replace_body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(send(g, &note).status, 202);
    let req = McpRequest::legacy(&sid, "resources/subscribe", json!({"uri": uri})).id(2);
    let r = send(g, &req);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains(r#""result":{}"#), "{}", r.text());
    sid
}

/// Opens the session's event stream, resuming after `last` if given.
fn open_get(addr: SocketAddr, sid: &str, last: Option<&str>) -> Stream {
    let resume = last.map_or(String::new(), |l| format!("Last-Event-ID: {l}\r\n"));
    Stream::open(
        addr,
        &format!(
            "GET /mcp HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Accept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\n{resume}\r\n"
        ),
    )
}

/// The `(id, message)` of each complete event so far.
fn events(s: &Stream) -> Vec<(String, Value)> {
    let text = String::from_utf8_lossy(&s.body);
    let complete = text.rfind("\n\n").map_or("", |i| &text[..i]);
    complete
        .split("\n\n")
        .filter_map(|ev| {
            let id = ev.lines().find_map(|l| l.strip_prefix("id: "))?;
            let data = ev.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((id.to_string(), serde_json::from_str(data).ok()?))
        })
        .collect()
}

/// Reads `s` until it holds `n` events (or fails after 20 s).
fn wait_events(s: &mut Stream, n: usize) -> Vec<(String, Value)> {
    let t = Instant::now();
    while events(s).len() < n {
        assert!(
            s.more(),
            "the stream ended: {}",
            String::from_utf8_lossy(&s.body)
        );
        assert!(t.elapsed() < Duration::from_secs(20), "no event came");
    }
    events(s)
}

/// Writes a line on the console from another (2026-07-28) client, then lets the rig clock
/// pass the serial resource's coalescing interval (500 ms).
fn console_line(g: &Guest, text: &str) {
    tool_ok(g.mcp, "console.write", json!({"text": text}));
    g.rig.advance_clock(600);
}

/// `(used, peak, budget)` of the module's heap, from `irix7://mem`.
fn heap(c: &mut GuestClient) -> (u64, u64, u64) {
    let m = c.request("resources/read", json!({"uri": "irix7://mem"}));
    let text = m["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let figure = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    (
        figure("heap used"),
        figure("heap peak"),
        figure("heap budget"),
    )
}

const UPDATED: &str = "notifications/resources/updated";

#[test]
fn a_subscribed_session_hears_console_writes_and_resumes_after_a_drop() {
    let Some(g) = boot_guest(&[]) else { return };
    let a = subscribed(&g, "irix7://serial");
    let mut stream = open_get(g.mcp, &a, None);
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    g.rig.advance_clock(600);
    console_line(&g, "subscribe-test one");
    let got = wait_events(&mut stream, 1);
    assert_eq!(got[0].1["method"], UPDATED);
    assert_eq!(got[0].1["params"]["uri"], "irix7://serial");
    let first = got[0].0.clone();

    // The connection drops. While A is away, session B's stream keeps the machine looking,
    // so A's log gets an event for each of two writes half a second apart.
    drop(stream);
    let b = subscribed(&g, "irix7://serial");
    let mut other = open_get(g.mcp, &b, None);
    g.rig.advance_clock(600);
    console_line(&g, "subscribe-test two");
    wait_events(&mut other, 1);
    console_line(&g, "subscribe-test three");
    wait_events(&mut other, 2);

    // A comes back after its first event: both events it missed, from the log, in order.
    let mut resumed = open_get(g.mcp, &a, Some(&first));
    assert_eq!(resumed.status, 200);
    let got = wait_events(&mut resumed, 2);
    let serial = first.split_once("-e").unwrap().0;
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [format!("{serial}-e2"), format!("{serial}-e3")],
        "after {first}"
    );
    assert!(got.iter().all(|(_, m)| m["method"] == UPDATED));

    // Unsubscribed, the console's chatter stops reaching it; keep-alives still flow.
    let req = McpRequest::legacy(
        &a,
        "resources/unsubscribe",
        json!({"uri": "irix7://serial"}),
    );
    let r = send(&g, &req);
    assert_eq!(r.status, 200, "{}", r.text());
    console_line(&g, "subscribe-test four");
    g.rig.advance_clock(6_000);
    let t = Instant::now();
    while !String::from_utf8_lossy(&resumed.body).contains(": keep-alive") {
        assert!(resumed.more(), "the stream ended");
        assert!(t.elapsed() < Duration::from_secs(20));
    }
    assert_eq!(events(&resumed).len(), 2);
}

#[test]
fn event_streams_are_bounded_answered_clearly_and_harmless_when_never_read() {
    let Some(g) = boot_guest(&[]) else { return };
    let (used_before, _, _) = heap(&mut GuestClient::new(&g));
    // Clients that open streams and never read them: the bound (4 on the rig's heap) is
    // reached, then every further stream is refused at once with the reason.
    let mut open = Vec::new();
    let mut refused = 0;
    for i in 0..12 {
        // Four requests a session, all of one token: spread so that the token's rate (20 a
        // second, shared by its sessions) is not what refuses them.
        g.rig.advance_clock(250);
        let sid = subscribed(&g, "irix7://serial");
        let mut s = open_get(g.mcp, &sid, None);
        if s.status == 200 {
            open.push(s);
            continue;
        }
        assert_eq!(s.status, 503, "attempt {i}");
        assert_eq!(s.header("retry-after"), Some("5"));
        let len: usize = s.header("content-length").unwrap().parse().unwrap();
        while s.body.len() < len {
            assert!(s.more(), "closed before the answer's end");
        }
        let body = String::from_utf8_lossy(&s.body).into_owned();
        assert!(
            body.contains("E_BUSY: all 4 event streams (GET /mcp, subscriptions/listen) are open"),
            "{body}"
        );
        refused += 1;
    }
    assert_eq!((open.len(), refused), (4, 8));

    // The console chatters while nobody reads: other clients are still answered promptly.
    let mut c = GuestClient::new(&g);
    for i in 0..20 {
        console_line(&g, &format!("nobody reads this {i} {}", "x".repeat(200)));
        let t = Instant::now();
        c.ok("status", json!({}));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
    let (used, peak, budget) = heap(&mut c);
    assert!(peak <= budget, "peak {peak} over the budget {budget}");
    // Each open connection's socket holds its TCP buffers (8 + 16 KiB on this heap) from the
    // heap since sockets take them on connect: the four streams, this client and the next
    // listener. Beyond those, unread events may hold at most 64 KiB.
    let sockets = 6 * (8 + 16) * 1024;
    assert!(
        used < used_before + sockets + 64 * 1024,
        "{used_before} -> {used}"
    );
    let max = g.rig.counters().max_poll_insns;
    println!("longest poll with 4 unread event streams: {max} instructions");
    // The hostile-load suite's bound on one poll.
    assert!(max <= 10_000_000, "{max}");

    // Closed streams give their places back.
    drop(open);
    let sid = subscribed(&g, "irix7://serial");
    let t = Instant::now();
    loop {
        g.rig.advance_clock(100);
        let s = open_get(g.mcp, &sid, None);
        if s.status == 200 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no place came back");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_modern_listen_stream_acknowledges_and_hears_the_console() {
    let Some(g) = boot_guest(&[]) else { return };
    let raw = support::mcp::mcp_request(
        9,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": ["irix7://serial", "irix7://nope"]}}),
        json!({}),
        "application/json, text/event-stream",
    );
    let mut s = Stream::open(g.mcp, &raw);
    assert_eq!(s.status, 200);
    assert_eq!(s.header("content-type"), Some("text/event-stream"));
    let t = Instant::now();
    while s.events().is_empty() {
        assert!(s.more(), "the stream ended");
        assert!(t.elapsed() < Duration::from_secs(20));
    }
    let tag = json!({"io.modelcontextprotocol/subscriptionId": 9});
    let ack = &s.events()[0];
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["irix7://serial"]})
    );
    assert_eq!(ack["params"]["_meta"], tag);
    g.rig.advance_clock(600);
    console_line(&g, "listen-test");
    while s.events().len() < 2 {
        assert!(s.more(), "the stream ended");
        assert!(t.elapsed() < Duration::from_secs(20), "no update came");
    }
    let update = &s.events()[1];
    assert_eq!(update["method"], UPDATED);
    assert_eq!(update["params"]["uri"], "irix7://serial");
    assert_eq!(update["params"]["_meta"], tag);
}
