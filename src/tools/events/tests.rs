//! `irix7://events`: what it serves, and that both eras' subscribers hear a requested reset
//! and a shell `reboot`, each also an audit line.

use super::*;
use crate::services::events;
use crate::tools::testing::{fake, harness};
use rpc::http::{Body, BodyPoll, Response};
use rpc::testing::{McpRequest, messages};
use serde_json::{Value, json};

fn read(s: &mut rpc::mcp::McpServer<Ctx>) -> Value {
    let r = harness::request(s, "resources/read", json!({"uri": URI}));
    let c = &r["result"]["contents"][0];
    assert_eq!(c["mimeType"], "application/json", "{r}");
    serde_json::from_str(c["text"].as_str().unwrap()).unwrap()
}

/// A server whose context has recorded its boot, as the board's does at init.
fn booted() -> rpc::mcp::McpServer<Ctx> {
    let (mut ctx, state) = fake::ctx_and_state();
    state.now.set(40);
    ctx.services_mut().record_boot(40);
    harness::server_with(ctx)
}

/// Polls a streamed body for `ms` milliseconds from `from`, in 10 ms steps.
fn pump(r: &mut Response, from: u64, ms: u64) -> Vec<u8> {
    let Body::Stream(src) = &mut r.body else {
        panic!("not a stream");
    };
    let mut out = std::vec::Vec::new();
    let mut t = from;
    while t < from + ms {
        if let BodyPoll::End = src.poll(&mut out, 4096, t) {
            break;
        }
        t += 10;
    }
    out
}

fn updates(body: &[u8]) -> usize {
    messages(body)
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated" && m["params"]["uri"] == URI)
        .count()
}

#[test]
fn the_boot_is_the_first_event_and_a_refused_deploy_follows_it() {
    let (mut ctx, state) = fake::ctx_and_state();
    state.image.set(Some(indy::abi::ImageInfo {
        sha256: [0x5b; 32],
        deploy: 1,
        refused_sha256: [0xee; 32],
    }));
    ctx.services_mut().record_boot(12);
    let mut s = harness::server_with(ctx);
    let v = read(&mut s);
    assert_eq!(v["boot_cause"], "unknown");
    assert_eq!(
        (v["total"].as_u64(), v["dropped"].as_u64()),
        (Some(2), Some(0))
    );
    let ev = v["events"].as_array().unwrap();
    assert_eq!(ev[0]["seq"], 1);
    assert_eq!(ev[0]["at_ms"], 12);
    assert_eq!(ev[0]["kind"], "boot");
    assert!(
        ev[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("cause unknown, module "),
        "{v}"
    );
    assert_eq!(ev[1]["kind"], "deploy-refused");
    assert!(
        ev[1]["detail"]
            .as_str()
            .unwrap()
            .contains("refused: sha256 mismatch; running the last good image"),
        "{v}"
    );
    // Both are audit lines and console lines.
    let audit = s.context().borrow().services().audit.borrow().text();
    assert!(
        audit.contains("\naudit 12 ms machine event 1 boot: cause unknown"),
        "{audit}"
    );
    assert!(audit.contains("machine event 2 deploy-refused: deploy of eeee"));
    let console = String::from_utf8(state.console.borrow().clone()).unwrap();
    assert!(
        console.contains("irix7-mcp: audit 12 ms machine event 1 boot: cause unknown"),
        "{console}"
    );
}

#[test]
fn a_requested_reset_and_a_near_miss_are_events() {
    let mut s = booted();
    let r = harness::call(&mut s, "system.reset", json!({"delay_ms": 5000}));
    assert_ne!(r["isError"], true, "{r}");
    // A second request is refused and is no event.
    let r = harness::call(&mut s, "system.poweroff", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    s.context()
        .borrow_mut()
        .services_mut()
        .polled(40 + events::NEAR_MISS_MS + 5);
    let v = read(&mut s);
    let ev = v["events"].as_array().unwrap();
    assert_eq!(ev.len(), 3, "{v}");
    assert_eq!(ev[1]["kind"], "reset-requested");
    assert_eq!(ev[1]["detail"], "system.reset, in 5000 ms");
    assert_eq!(ev[2]["kind"], "watchdog-near-miss");
    assert_eq!(
        ev[2]["detail"],
        format!(
            "{} ms between two polls (the watchdog resets at 67108 ms)",
            // The fake's events start at 0: the first poll's gap is measured from there.
            events::NEAR_MISS_MS + 45
        )
    );
    let audit = s.context().borrow().services().audit.borrow().text();
    assert!(
        audit.contains("machine event 2 reset-requested: system.reset, in 5000 ms"),
        "{audit}"
    );
}

#[test]
fn an_address_given_changed_or_lost_is_an_event_and_the_same_one_is_not() {
    use crate::services::status::NetUsage;
    let (mut ctx, _) = fake::ctx_and_state();
    let svc = ctx.services_mut();
    let net = |ip| NetUsage {
        ip,
        prefix_len: 24,
        ..NetUsage::default()
    };
    svc.set_net(net(None), 1);
    svc.set_net(net(Some([10, 0, 2, 15])), 2);
    svc.set_net(net(Some([10, 0, 2, 15])), 3);
    svc.set_net(net(None), 4);
    let kept: std::vec::Vec<(u64, &str)> = svc
        .events
        .iter()
        .map(|e| (e.at_ms, e.detail.as_str()))
        .collect();
    // The fake starts with an address: the first figures lose it.
    assert_eq!(kept, [(1, "lost"), (2, "10.0.2.15/24"), (4, "lost")]);
}

#[test]
fn legacy_and_modern_subscribers_hear_a_reset_requested_through_the_shell() {
    let mut s = booted();
    // Legacy: a session subscribed, with its GET stream open.
    let init = McpRequest::initialize("2025-11-25").send(&mut s, 1000);
    let sid = init.headers.get("Mcp-Session-Id").unwrap().to_string();
    McpRequest::legacy(&sid, "notifications/initialized", json!({}))
        .id(Value::Null)
        .send(&mut s, 1000);
    let sub =
        McpRequest::legacy(&sid, "resources/subscribe", json!({"uri": URI})).send(&mut s, 1000);
    let (body, _) = rpc::testing::drain(&mut { sub }, 1000, 10);
    assert_eq!(messages(&body)[0]["result"], json!({}));
    let mut headers = rpc::http::Headers::default();
    headers.push("Mcp-Session-Id", &sid);
    headers.push("Accept", "text/event-stream");
    headers.push("MCP-Protocol-Version", "2025-11-25");
    let mut legacy = s.handle_parts(
        &rpc::http::Method::Get,
        &headers,
        b"",
        rpc::testing::LOOPBACK,
        1000,
    );
    // Modern: a listen stream.
    let mut modern = McpRequest::modern(
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": [URI]}}),
    )
    .id(7)
    .send(&mut s, 1000);
    // Both streams take the resource's version first; nothing changed yet.
    assert_eq!(updates(&pump(&mut legacy, 1000, 500)), 0);
    assert_eq!(updates(&pump(&mut modern, 1000, 500)), 0);
    let r = harness::call(&mut s, "shell.exec", json!({"command": "reboot"}));
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(updates(&pump(&mut legacy, 1500, 500)), 1);
    assert_eq!(updates(&pump(&mut modern, 1500, 500)), 1);
    let v = read(&mut s);
    let last = v["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "reset-requested");
    assert_eq!(last["detail"], "reboot, in 250 ms");
}
