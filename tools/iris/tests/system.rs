//! System control on the rig with the real module image: `system.reset` reboots with a
//! fresh uptime, a hung guest is reset by the MC watchdog, the serial ring reads across a wrap,
//! and a streamed `shell.exec sleep` reports progress and frees its slot when cancelled.

mod support;

use serde_json::{Value, json};
use std::io::Write;
use std::net::{Shutdown, SocketAddr};
use std::time::{Duration, Instant};
use support::guest::{boot_guest, boot_guest_with};
use support::http::{Stream, connect, read_response};
use support::mcp::{call_tool, first_text, mcp_request, messages, tool_ok, tool_request};

/// Server limit: 20 requests per rolling second per client; loops below stay well under it.
const PACE: Duration = Duration::from_millis(150);

/// `status` once the guest answers again on a fresh connection (after a reset).
fn status_after_reboot(addr: SocketAddr, within: Duration) -> Value {
    let start = Instant::now();
    loop {
        let mut s = connect(addr);
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let answered = s
            .write_all(tool_request(1, "status", json!({})).as_bytes())
            .is_ok()
            .then(|| read_response(&mut s, &mut Vec::new(), false))
            .flatten();
        if let Some(r) = answered.filter(|r| r.status == 200) {
            let msg = messages(&r.body).pop().expect("a JSON-RPC message");
            return msg["result"]["structuredContent"].clone();
        }
        assert!(
            start.elapsed() < within,
            "the guest did not serve again within {within:?}"
        );
        std::thread::sleep(PACE);
    }
}

fn wait_until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < within, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn reset_reboots_with_a_fresh_uptime_and_the_digest_verified_again() {
    let Some(g) = boot_guest(&[]) else { return };
    // Ten minutes of uptime before the reset, so a clock that kept counting would show.
    g.rig.advance_clock(600_000);
    std::thread::sleep(PACE);
    let before = tool_ok(g.mcp, "status", json!({}));
    let up_before = before["uptime_ms"].as_u64().unwrap();
    assert!(up_before >= 600_000, "{before}");

    let mut s = connect(g.mcp);
    s.write_all(tool_request(2, "system.reset", json!({"delay_ms": 100})).as_bytes())
        .unwrap();
    let mut buf = Vec::new();
    let r = read_response(&mut s, &mut buf, false).expect("system.reset answers first");
    let res = messages(&r.body).pop().unwrap();
    assert_eq!(
        res["result"]["structuredContent"],
        json!({"action": "reset", "in_ms": 100}),
        "{res}"
    );
    wait_until("the machine resets", Duration::from_secs(20), || {
        g.rig.counters().resets == 1
    });

    // The old connection is gone with the old module: a request on it is not answered.
    let _ = s.write_all(tool_request(3, "status", json!({})).as_bytes());
    assert!(
        read_response(&mut s, &mut buf, false).is_none(),
        "the connection outlived the reset"
    );

    let after = status_after_reboot(g.mcp, Duration::from_secs(30));
    let up_after = after["uptime_ms"].as_u64().unwrap();
    assert!(
        up_after < 60_000,
        "uptime {up_after} ms after the reset (was {up_before})"
    );

    let console = g.rig.console_text();
    assert!(console.contains("kernel: reset requested by the module: resetting the machine"));
    let verified = console
        .lines()
        .filter(|l| l.starts_with("sha256 ") && l.ends_with(" verified"))
        .count();
    assert_eq!(
        verified, 2,
        "two boots, each verifying the image:\n{console}"
    );
    assert_eq!(console.matches("irix7-mcp 0.1.0, ABI").count(), 2);
    let c = g.rig.counters();
    assert_eq!((c.resets, c.watchdog_resets), (1, 0));
    g.rig.stop().unwrap();
}

#[test]
fn a_hung_guest_is_reset_by_the_watchdog_and_serves_again() {
    const PERIOD_MS: u64 = 1_500;
    let Some(g) = boot_guest_with(&[], |o| o.watchdog_ms = PERIOD_MS, |_| {}) else {
        return;
    };
    tool_ok(g.mcp, "status", json!({}));
    // A healthy guest outlives the period: every completed poll kicks the watchdog.
    std::thread::sleep(Duration::from_millis(PERIOD_MS + 500));
    assert_eq!(g.rig.counters().watchdog_resets, 0);
    tool_ok(g.mcp, "echo", json!({"text": "alive"}));

    let hung_at = Instant::now();
    g.rig.hang_next_call();
    wait_until("the watchdog fires", Duration::from_secs(60), || {
        g.rig.counters().watchdog_resets == 1
    });
    let waited = hung_at.elapsed();
    // The last kick came at most one poll before the hook was set.
    assert!(
        waited >= Duration::from_millis(PERIOD_MS - 100),
        "reset after {waited:?}, before the period"
    );
    let console = g.rig.console_text();
    assert!(
        console.contains("MC watchdog expired") && console.contains("resetting the machine"),
        "{console}"
    );

    let st = status_after_reboot(g.mcp, Duration::from_secs(30));
    assert!(st["uptime_ms"].as_u64().unwrap() < 30_000, "{st}");
    let echo = tool_ok(g.mcp, "echo", json!({"text": "back"}));
    assert_eq!(echo["text"], "back");
    assert_eq!(g.rig.counters().resets, 1);
    g.rig.stop().unwrap();
}

#[test]
fn with_the_watchdog_off_the_hang_hook_is_reported_as_a_hang() {
    let Some(g) = boot_guest_with(
        &[],
        |o| {
            o.watchdog_ms = 0;
            o.hang_insns = 50_000_000;
        },
        |_| {},
    ) else {
        return;
    };
    tool_ok(g.mcp, "status", json!({}));
    g.rig.hang_next_call();
    match g.rig.join() {
        Err(iris::RigError::Hang { call, pc, .. }) => {
            assert_eq!(call, "irix7_mcp_poll");
            assert_eq!(pc & !0xFFF, 0x8800_5000, "pc {pc:#x} outside the hang loop");
        }
        other => panic!("expected a hang, got {other:?}"),
    }
}

#[test]
fn serial_ring_reads_across_a_wrap_report_lost_bytes_then_reach_eof() {
    let Some(g) = boot_guest(&[]) else { return };
    let lines: Vec<String> = (0..3)
        .map(|i| {
            let c = char::from(b'a' + i);
            format!("wrap{i} {}", c.to_string().repeat(3990))
        })
        .collect();
    for (i, l) in lines.iter().enumerate() {
        let tool = if i % 2 == 0 {
            "console.write"
        } else {
            "serial.write"
        };
        let w = tool_ok(g.mcp, tool, json!({"text": l}));
        // The line as written: the client mark, the text, the newline.
        assert_eq!(w["bytes"].as_u64(), Some(6 + l.len() as u64 + 1), "{w}");
        std::thread::sleep(PACE);
    }

    // From offset 0: the ring (8 KiB) no longer holds it.
    let first = tool_ok(
        g.mcp,
        "serial.read",
        json!({"offset": 0, "max_bytes": 3000}),
    );
    let oldest = first["oldest"].as_u64().unwrap();
    let head = first["head"].as_u64().unwrap();
    assert!(head > 12_000, "{first}");
    assert_eq!(head - oldest, 8192, "a full ring: {first}");
    assert_eq!(first["offset"].as_u64(), Some(oldest), "{first}");
    assert_eq!(first["lost"].as_u64(), Some(oldest), "{first}");
    assert_eq!(first["eof"], json!(false));

    let mut data = decode(&first);
    let mut next = first["next_offset"].as_u64().unwrap();
    assert_eq!(next, oldest + data.len() as u64);
    let mut reads = 1;
    loop {
        std::thread::sleep(PACE);
        let r = tool_ok(
            g.mcp,
            "serial.read",
            json!({"offset": next, "max_bytes": 3000}),
        );
        reads += 1;
        assert_eq!(r["offset"].as_u64(), Some(next), "{r}");
        assert_eq!(r["lost"].as_u64(), Some(0), "{r}");
        data.extend(decode(&r));
        next = r["next_offset"].as_u64().unwrap();
        if r["eof"] == json!(true) {
            assert_eq!(Some(next), r["head"].as_u64());
            break;
        }
        assert!(reads < 10, "no eof after {reads} reads");
    }
    let text = String::from_utf8_lossy(&data);
    // The last line is whole; the first was overwritten.
    assert!(
        text.contains(&format!("[mcp] {}\n", lines[2])),
        "last line missing"
    );
    assert!(!text.contains("wrap0 "), "the oldest line should be gone");
    g.rig.stop().unwrap();
}

/// The bytes of a text-encoded read (the console output here is ASCII, so text is exact).
fn decode(read: &Value) -> Vec<u8> {
    let data = read["data"].as_str().unwrap().as_bytes().to_vec();
    assert_eq!(read["bytes"].as_u64(), Some(data.len() as u64), "{read}");
    data
}

#[test]
fn shell_sleep_streams_progress_and_closing_the_stream_frees_its_slot() {
    let Some(g) = boot_guest(&[]) else { return };
    let sleep_call = |id: u64, meta: Value, accept: &str| {
        mcp_request(
            id,
            "tools/call",
            json!({"name": "shell.exec", "arguments": {"command": "sleep 5"}}),
            meta,
            accept,
        )
    };
    let mut a = Stream::open(
        g.mcp,
        &sleep_call(
            1,
            json!({"progressToken": "sleep-1"}),
            "application/json, text/event-stream",
        ),
    );
    assert_eq!(a.status, 200);
    assert!(
        a.header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream")),
        "{:?}",
        a.headers
    );

    // The rig clock moves the sleep on; each jump is reported as progress.
    let progress = |a: &Stream| -> Vec<(f64, f64)> {
        a.events()
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .inspect(|m| assert_eq!(m["params"]["progressToken"], "sleep-1"))
            .map(|m| {
                let p = &m["params"];
                (
                    p["progress"].as_f64().unwrap(),
                    p["total"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let mut jumps = 0;
    while progress(&a).len() < 3 {
        assert!(jumps < 8, "progress so far: {:?}", progress(&a));
        g.rig.advance_clock(700);
        jumps += 1;
        std::thread::sleep(Duration::from_millis(200));
        a.s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let _ = a.more();
        a.ended = false;
    }
    let seen = progress(&a);
    assert!(seen.windows(2).all(|w| w[1].0 > w[0].0), "{seen:?}");
    assert!(seen.iter().all(|&(p, t)| t == 5000.0 && p < t), "{seen:?}");
    assert!(
        !a.events().iter().any(|m| m.get("result").is_some()),
        "finished early"
    );

    // Three more sleeps fill the four call slots: a fifth call is refused.
    let others: Vec<_> = (2..5)
        .map(|id| {
            let mut s = connect(g.mcp);
            s.write_all(sleep_call(id, json!({}), "application/json").as_bytes())
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let busy = call_tool(g.mcp, "echo", json!({"text": "fifth"}));
    assert_eq!(busy["isError"], json!(true), "{busy}");
    assert!(
        first_text(&busy).starts_with("E_BUSY") && first_text(&busy).contains("4 tool calls"),
        "{busy}"
    );

    // Closing the stream cancels the sleep: its slot is free again.
    a.s.shutdown(Shutdown::Both).unwrap();
    drop(a);
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let r = call_tool(g.mcp, "echo", json!({"text": "after close"}));
        if r["isError"] != json!(true) {
            assert_eq!(r["structuredContent"]["text"], "after close");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "slot not freed after closing the stream: {r}"
        );
    }
    // The other three were not disturbed: past their deadline they finish with status 0.
    g.rig.advance_clock(6_000);
    for (i, mut s) in others.into_iter().enumerate() {
        let r = read_response(&mut s, &mut Vec::new(), false)
            .unwrap_or_else(|| panic!("sleep {i} unanswered"));
        let msg = messages(&r.body).pop().unwrap();
        assert_eq!(
            msg["result"]["structuredContent"]["exit_status"],
            json!(0),
            "{msg}"
        );
    }
    g.rig.stop().unwrap();
}
