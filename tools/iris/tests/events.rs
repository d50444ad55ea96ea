//! Machine events on the real image: `irix7://events` starts with the boot (and the address),
//! a legacy session subscribed with its `GET /mcp` stream and a 2026-07-28
//! `subscriptions/listen` stream both hear a requested reset before the machine goes, the
//! next boot starts a fresh ring, a poll gap of half the watchdog period is a near miss, and
//! every event is an audit line on the console and in `irix7://audit`.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rpc::testing::McpRequest;
use serde_json::{Value, json};
use std::io::Write;
use support::guest::{Guest, HOST, TOKEN, boot_guest};
use support::http::{Stream, connect, read_response, request};
use support::mcp::{GuestClient, mcp_request, messages};

const URI: &str = "irix7://events";
const UPDATED: &str = "notifications/resources/updated";

fn send(g: &Guest, req: &McpRequest) -> host_http::Response {
    request(
        g.mcp,
        &String::from_utf8_lossy(&req.http("/mcp", HOST, Some(TOKEN))),
    )
}

/// A legacy session subscribed to the events, and its `GET /mcp` stream.
fn legacy_stream(g: &Guest) -> Stream {
    let init = send(g, &McpRequest::initialize("2025-11-25"));
    assert_eq!(init.status, 200, "{}", init.text());
    let sid = init.header("mcp-session-id").unwrap().to_string();
    let note = McpRequest::legacy(&sid, "notifications/initialized", json!({}))
        .replace_body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(send(g, &note).status, 202);
    let r = send(
        g,
        &McpRequest::legacy(&sid, "resources/subscribe", json!({"uri": URI})).id(2),
    );
    assert!(r.text().contains(r#""result":{}"#), "{}", r.text());
    let s = Stream::open(
        g.mcp,
        &format!(
            "GET /mcp HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Accept: text/event-stream\r\nMcp-Session-Id: {sid}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\n\r\n"
        ),
    );
    assert_eq!(s.status, 200);
    s
}

/// A 2026-07-28 `subscriptions/listen` stream for the events.
fn listen_stream(addr: SocketAddr) -> Stream {
    let params = json!({"notifications": {"resourceSubscriptions": [URI]}});
    let raw = mcp_request(
        9,
        "subscriptions/listen",
        params,
        json!({}),
        "application/json, text/event-stream",
    );
    let s = Stream::open(addr, &raw);
    assert_eq!(s.status, 200);
    s
}

fn updates(s: &Stream) -> usize {
    s.events()
        .iter()
        .filter(|m| m["method"] == UPDATED && m["params"]["uri"] == URI)
        .count()
}

/// Reads `s` until it has carried `n` updates of the events (or fails after 20 s).
fn wait_updates(s: &mut Stream, n: usize) {
    let t = Instant::now();
    while updates(s) < n {
        assert!(
            s.more(),
            "the stream ended: {}",
            String::from_utf8_lossy(&s.body)
        );
        assert!(t.elapsed() < Duration::from_secs(20), "no update came");
    }
}

fn events(c: &mut GuestClient) -> Value {
    let r = c.request("resources/read", json!({"uri": URI}));
    let text = r["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    serde_json::from_str(text).unwrap()
}

/// The events once the machine answers again on a fresh connection (after a reset).
fn events_after_reboot(addr: SocketAddr) -> Value {
    let start = Instant::now();
    loop {
        let mut s = connect(addr);
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let raw = mcp_request(
            1,
            "resources/read",
            json!({"uri": URI}),
            json!({}),
            "application/json, text/event-stream",
        );
        let answered = s
            .write_all(raw.as_bytes())
            .is_ok()
            .then(|| read_response(&mut s, &mut Vec::new(), false))
            .flatten();
        if let Some(r) = answered.filter(|r| r.status == 200) {
            let msg = messages(&r.body).pop().expect("a JSON-RPC message");
            let text = msg["result"]["contents"][0]["text"].as_str().unwrap();
            return serde_json::from_str(text).unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the guest did not serve again"
        );
        std::thread::sleep(Duration::from_millis(150));
    }
}

fn kinds(v: &Value) -> Vec<String> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn subscribers_of_both_eras_hear_a_requested_reset_and_the_next_boot_starts_afresh() {
    let Some(g) = boot_guest(&[]) else { return };
    let mut c = GuestClient::new(&g);
    let v = events(&mut c);
    // The boot, then the static address the first poll found.
    assert_eq!(kinds(&v)[..2], ["boot", "address"], "{v}");
    let boot = &v["events"][0];
    assert_eq!(boot["seq"], 1);
    let cause = v["boot_cause"].as_str().unwrap();
    assert!(
        boot["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!("cause {cause}, module ")),
        "{v}"
    );
    assert_eq!(v["events"][1]["detail"], "172.31.77.2/24", "{v}");

    let mut legacy = legacy_stream(&g);
    let mut modern = listen_stream(g.mcp);
    // The watch looks at most every 250 ms: let it take the version before the change.
    g.rig.advance_clock(300);
    std::thread::sleep(Duration::from_millis(300));
    g.rig.advance_clock(300);

    // Long enough for the notice and a read before the machine goes.
    let r = c.ok("system.reset", json!({"delay_ms": 20_000}));
    assert_eq!(r["action"], "reset");
    g.rig.advance_clock(300);
    wait_updates(&mut legacy, 1);
    wait_updates(&mut modern, 1);
    let v = events(&mut c);
    let last = v["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "reset-requested", "{v}");
    assert!(
        last["detail"]
            .as_str()
            .unwrap()
            .starts_with("system.reset, in "),
        "{v}"
    );
    let audit = c.request("resources/read", json!({"uri": "irix7://audit"}));
    let audit = audit["result"]["contents"][0]["text"].as_str().unwrap();
    let line = format!(
        "machine event {} reset-requested: system.reset, in ",
        last["seq"]
    );
    assert!(audit.contains(&line), "{audit}");
    assert!(g.rig.console_text().contains(&line));

    // The reset: the events lived in the module's heap, so the new boot's ring starts at 1.
    g.rig.advance_clock(20_000);
    let t = Instant::now();
    while g.rig.counters().resets == 0 {
        assert!(t.elapsed() < Duration::from_secs(20), "no reset");
        std::thread::sleep(Duration::from_millis(20));
    }
    let v = events_after_reboot(g.mcp);
    assert_eq!(v["events"][0]["seq"], 1, "{v}");
    assert_eq!(v["events"][0]["kind"], "boot", "{v}");
    assert!(!kinds(&v).contains(&"reset-requested".to_string()), "{v}");
    g.rig.stop().unwrap();
}

#[test]
fn a_poll_gap_of_half_the_watchdog_period_is_a_near_miss() {
    let Some(g) = boot_guest(&[]) else { return };
    let mut c = GuestClient::new(&g);
    assert!(!kinds(&events(&mut c)).contains(&"watchdog-near-miss".to_string()));
    // 40 s of machine time with no poll (the rig's clock jumps; its watchdog is kicked).
    g.rig.advance_clock(40_000);
    // A connection idle that long is closed: ask on a new one.
    let v = events(&mut GuestClient::new(&g));
    let miss = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "watchdog-near-miss")
        .unwrap_or_else(|| panic!("no near miss: {v}"))
        .clone();
    let gap: u64 = miss["detail"]
        .as_str()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((40_000..45_000).contains(&gap), "{miss}");
    assert!(g.rig.console_text().contains(&format!(
        "irix7-mcp: audit {} ms machine event {} watchdog-near-miss: {gap} ms between two polls",
        miss["at_ms"], miss["seq"]
    )));
    g.rig.stop().unwrap();
}
