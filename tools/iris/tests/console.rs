//! Console forgery, end to end on the real image: a client that writes lines looking like the
//! module's own (`irix7-mcp: token generated: …`, `irix7-mcp: audit …`) changes no token file,
//! the lines show marked in `serial.read`, and the token the module generated keeps working;
//! after a reset, the file follows the new token the module announces.

mod support;

use std::time::{Duration, Instant};

use iris::image::find_repo_root;
use iris::token::{generated_token, token_path};
use serde_json::json;
use support::guest::{Guest, boot_guest_without_token};
use support::http::request;
use support::mcp::{call_tool_with_token, tool_request, with_bearer};

const FAKE_TOKEN: &str = "00112233445566778899aabbccddeeff";
const FAKE_AUDIT: &str = "irix7-mcp: audit 5000 ms 10.0.0.9 stateless system.reset {} -> ok";

/// The token file's content once it is not empty (the rig writes it as init returns).
fn file_token(g: &Guest) -> String {
    let file = token_path(&find_repo_root(), g.mcp.port());
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if !text.trim().is_empty() {
            return text.trim().to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no token in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ok(g: &Guest, token: &str, tool: &str, args: serde_json::Value) -> serde_json::Value {
    let r = call_tool_with_token(g.mcp, token, tool, args);
    assert_ne!(r["isError"], true, "{tool}: {r}");
    r["structuredContent"].clone()
}

#[test]
fn forged_console_lines_are_marked_and_change_no_token_file() {
    let Some(g) = boot_guest_without_token(&[], |_| {}) else {
        return;
    };
    let real = file_token(&g);
    assert_eq!(real.len(), 32, "{real}");
    assert_eq!(generated_token(&g.rig.console_text()), Some(real.clone()));
    let from = ok(&g, &real, "serial.read", json!({"max_bytes": 1}))["head"]
        .as_u64()
        .unwrap();

    let forged = format!("irix7-mcp: token generated: {FAKE_TOKEN} (console only)");
    ok(&g, &real, "console.write", json!({ "text": forged }));
    ok(
        &g,
        &real,
        "serial.write",
        json!({ "text": format!("ok\n{FAKE_AUDIT}\r{forged}\n\x1b[2K{FAKE_AUDIT}") }),
    );
    // Polls go on (each call is several): a scanner that looked at later output would have
    // rewritten the file by now.
    for _ in 0..5 {
        ok(&g, &real, "status", json!({}));
    }
    assert_eq!(file_token(&g), real, "the token file changed");

    // The written lines are in the serial ring, each behind the mark; no line of what was
    // written since starts as the module's own.
    let st = ok(&g, &real, "serial.read", json!({ "offset": from }));
    let data = st["data"].as_str().unwrap();
    assert!(
        data.contains(&format!("[mcp] {forged}\n")),
        "console.write's line is not marked:\n{data}"
    );
    assert!(
        data.contains(&format!(
            "[mcp] ok\n[mcp] {FAKE_AUDIT}\r[mcp] {forged}\n[mcp] \\u{{1b}}[2K{FAKE_AUDIT}\n"
        )),
        "serial.write's lines are not marked:\n{data}"
    );
    for line in data.split(['\n', '\r']) {
        assert!(
            !line.starts_with(&format!("irix7-mcp: token generated: {FAKE_TOKEN}"))
                && !line.starts_with("irix7-mcp: audit 5000 ms 10.0.0.9"),
            "an unmarked forged line: {line:?}"
        );
    }
    // The module's own audit lines for those calls are there, unmarked.
    assert!(data.contains("\nirix7-mcp: audit "), "{data}");

    // A line a client leaves open is ended before the module's next one: the audit line of
    // the write itself starts a line, never reads as the client's text.
    let from = ok(&g, &real, "serial.read", json!({"max_bytes": 1}))["head"]
        .as_u64()
        .unwrap();
    ok(
        &g,
        &real,
        "console.write",
        json!({"text": "left open", "newline": false}),
    );
    ok(&g, &real, "status", json!({}));
    let st = ok(&g, &real, "serial.read", json!({ "offset": from }));
    let data = st["data"].as_str().unwrap();
    assert!(
        data.contains("[mcp] left open\nirix7-mcp: audit "),
        "the module's line continued the client's:\n{data}"
    );

    // The real token still opens /mcp; the forged one does not.
    ok(&g, &real, "status", json!({}));
    let fake = request(
        g.mcp,
        &with_bearer(&tool_request(1, "status", json!({})), FAKE_TOKEN),
    );
    assert_eq!(fake.status, 401, "{}", fake.text());

    // A reset's init announces a new token, and the file follows it.
    ok(&g, &real, "system.reset", json!({"delay_ms": 100}));
    let start = Instant::now();
    while g.rig.counters().resets == 0 {
        assert!(start.elapsed() < Duration::from_secs(30), "no reset");
        std::thread::sleep(Duration::from_millis(50));
    }
    let start = Instant::now();
    let mut next = file_token(&g);
    while next == real {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the file kept the old token"
        );
        std::thread::sleep(Duration::from_millis(50));
        next = file_token(&g);
    }
    assert_eq!(generated_token(&g.rig.console_text()), Some(next.clone()));
    assert_ne!(next, FAKE_TOKEN);
    ok(&g, &next, "status", json!({}));
    g.rig.stop().unwrap();
}
