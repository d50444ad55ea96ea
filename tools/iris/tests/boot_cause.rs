//! Why the machine booted, end to end on the real image: one rig taken through each cause in
//! turn (power-on, a requested reset, the watchdog after a hang, a module trap the kernel
//! panics on, a previous boot damaged across the reset), checking each time `status.boot`, the
//! status page, the previous boot's console (its last line is the kernel's reset line, and the
//! line written before it is there) and the flight record (which names the call in flight at a
//! watchdog or a trap). A kernel before ABI 13 boots the same image, which says it cannot tell.

mod support;

use std::io::Write;
use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use iris::Survivor;
use serde_json::{Value, json};
use support::guest::{Guest, boot_guest_with};
use support::http::{connect, read_response, request};
use support::mcp::{mcp_request, messages, tool_ok, tool_request};

const PACE: Duration = Duration::from_millis(200);
const WATCHDOG_MS: u64 = 1_500;

/// A JSON-RPC message on a fresh connection, or `None` while the guest does not answer.
fn try_rpc(addr: SocketAddr, raw: &str) -> Option<Value> {
    let mut s = connect(addr);
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.write_all(raw.as_bytes()).ok()?;
    let r = read_response(&mut s, &mut Vec::new(), false)?;
    (r.status == 200).then(|| messages(&r.body).pop()).flatten()
}

/// `status` once the guest serves after reset number `resets`.
fn status_after(g: &Guest, resets: u64) -> Value {
    let start = Instant::now();
    while g.rig.counters().resets < resets {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no reset {resets}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    loop {
        if let Some(m) = try_rpc(g.mcp, &tool_request(1, "status", json!({}))) {
            return m["result"]["structuredContent"].clone();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "not serving");
        thread::sleep(PACE);
    }
}

fn resource(addr: SocketAddr, uri: &str) -> Value {
    let raw = mcp_request(
        2,
        "resources/read",
        json!({"uri": uri}),
        json!({}),
        "application/json, text/event-stream",
    );
    try_rpc(addr, &raw).expect("resources/read answers")
}

fn resource_text(addr: SocketAddr, uri: &str) -> String {
    let v = resource(addr, uri);
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{uri}: {v}"))
        .to_string()
}

/// The previous boot's console through `serial.read`.
fn previous_console(addr: SocketAddr) -> String {
    let r = tool_ok(addr, "serial.read", json!({"boot": "previous"}));
    assert_eq!(r["eof"], true, "{r}");
    r["data"].as_str().unwrap().to_string()
}

/// The details page (behind the token).
fn status_page(addr: SocketAddr) -> String {
    let raw = format!(
        "GET / HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        support::guest::TOKEN
    );
    String::from_utf8_lossy(&request(addr, &raw).body).into_owned()
}

/// Writes a marker line on the console and returns it as the console shows it.
fn mark(addr: SocketAddr, n: u32) -> String {
    let text = format!("before reset {n}");
    tool_ok(addr, "console.write", json!({"text": text}));
    text
}

/// Starts a `serial.read` that waits for text that never comes, on its own connection: a
/// call in flight when the machine stops.
fn call_in_flight(addr: SocketAddr) -> thread::JoinHandle<()> {
    let raw = tool_request(
        9,
        "serial.read",
        json!({"wait_ms": 120_000, "until": "this text is never written"}),
    );
    thread::spawn(move || {
        let mut s = connect(addr);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(raw.as_bytes());
        let _ = read_response(&mut s, &mut Vec::new(), false);
    })
}

/// Checks what the new boot says about the last: the cause, the console's last lines and the
/// flight record's state.
fn check_boot(g: &Guest, st: &Value, cause: &str, marker: &str, kernel_line: &str) {
    let boot = &st["boot"];
    assert_eq!(boot["cause"], cause, "{st}");
    assert_eq!(boot["console"], "ok", "{st}");
    assert_eq!(boot["flight"]["state"], "ok", "{st}");
    assert_eq!(boot["flight"]["build"], st["build_id"], "{st}");
    assert_eq!(boot["previous_sha256"], st["image"]["sha256"], "{st}");
    let console = previous_console(g.mcp);
    assert!(console.contains(marker), "{console}");
    let last = console.lines().last().unwrap_or("");
    assert!(
        last.contains(kernel_line),
        "last line {last:?} of\n{console}"
    );
    assert!(!console.contains(support::guest::TOKEN));
    let page = status_page(g.http);
    assert!(
        page.contains("<td>boot</td>") && page.contains(cause),
        "{page}"
    );
    let text = resource_text(g.mcp, "irix7://status");
    assert!(text.contains(&format!("boot        {cause}")), "{text}");
}

#[test]
fn each_cause_is_told_with_the_previous_console_and_the_flight_record() {
    let Some(g) = boot_guest_with(
        &[],
        |o| {
            o.watchdog_ms = WATCHDOG_MS;
            o.reboot_on_panic = true;
        },
        |_| {},
    ) else {
        return;
    };
    // Power-on: nothing survived.
    let st = tool_ok(g.mcp, "status", json!({}));
    assert_eq!(st["boot"]["cause"], "power-on", "{st}");
    assert_eq!(st["boot"]["boots"], 1);
    assert_eq!(st["boot"]["console"], "absent");
    assert_eq!(st["boot"]["flight"]["state"], "absent");
    let r = support::mcp::call_tool(g.mcp, "serial.read", json!({"boot": "previous"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(g.rig.console_text().contains("boot: power-on"));

    // A requested reset: who asked is in the flight record.
    let marker = mark(g.mcp, 1);
    tool_ok(g.mcp, "system.reset", json!({"delay_ms": 100}));
    let st = status_after(&g, 1);
    check_boot(
        &g,
        &st,
        "requested",
        &marker,
        "reset requested by the module",
    );
    assert_eq!(st["boot"]["requested_by"], "system.reset", "{st}");
    assert_eq!(st["boot"]["boots"], 2);
    assert!(st["boot"].get("deploy").is_none(), "{st}");
    let flight = resource_text(g.mcp, "irix7://flight/previous");
    assert!(flight.contains("reset by    system.reset"), "{flight}");

    // The watchdog after a hang, with a call in flight: the record names it.
    let marker = mark(g.mcp, 2);
    let waiting = call_in_flight(g.mcp);
    thread::sleep(Duration::from_millis(1_200)); // a periodic write after the call started
    g.rig.hang_next_call();
    let st = status_after(&g, 2);
    check_boot(&g, &st, "watchdog", &marker, "MC watchdog expired");
    assert_eq!(
        st["boot"]["flight"]["calls"],
        json!(["serial.read"]),
        "{st}"
    );
    let flight = resource_text(g.mcp, "irix7://flight/previous");
    assert!(
        flight.contains("  serial.read from ") && flight.contains("(2026-07-28), started at"),
        "{flight}"
    );
    assert_eq!(g.rig.counters().watchdog_resets, 1);
    drop(waiting);

    // A module trap: the kernel panics, says why, and the record names the call in flight.
    let marker = mark(g.mcp, 3);
    let waiting = call_in_flight(g.mcp);
    thread::sleep(Duration::from_millis(300));
    g.rig.trap_next_call();
    let st = status_after(&g, 3);
    check_boot(&g, &st, "panic", &marker, "module trapped");
    assert!(
        st["boot"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("module trapped")),
        "{st}"
    );
    assert_eq!(
        st["boot"]["flight"]["calls"],
        json!(["serial.read"]),
        "{st}"
    );
    drop(waiting);

    // Damage across the reset: reported, never read, and the machine serves normally.
    g.rig.corrupt_at_next_reset(Survivor::Ring);
    g.rig.corrupt_at_next_reset(Survivor::Flight);
    tool_ok(g.mcp, "system.reset", json!({"delay_ms": 100}));
    let st = status_after(&g, 4);
    assert_eq!(st["boot"]["cause"], "requested", "{st}");
    assert_eq!(st["boot"]["console"], "corrupt", "{st}");
    assert_eq!(st["boot"]["flight"]["state"], "corrupt", "{st}");
    assert!(st["boot"].get("requested_by").is_none(), "{st}");
    let r = support::mcp::call_tool(g.mcp, "serial.read", json!({"boot": "previous"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(support::mcp::first_text(&r).starts_with("E_IO"), "{r}");
    let flight = resource_text(g.mcp, "irix7://flight/previous");
    assert!(flight.starts_with("flight record corrupt"), "{flight}");
    assert_eq!(
        tool_ok(g.mcp, "echo", json!({"text": "still here"}))["text"],
        "still here"
    );
    g.rig.stop().unwrap();
}

#[test]
fn a_kernel_before_abi_13_boots_the_module_which_cannot_tell_why() {
    let Some(g) = boot_guest_with(&[], |_| {}, |r| r.offer_abi_12()) else {
        return;
    };
    let st = tool_ok(g.mcp, "status", json!({}));
    assert_eq!(st["abi"], 12, "{st}");
    assert_eq!(st["boot"]["cause"], "unknown", "{st}");
    assert_eq!(st["boot"]["flight"]["state"], "absent", "{st}");
    assert!(st["image"]["sha256"].is_string(), "{st}");
    g.rig.stop().unwrap();
}
