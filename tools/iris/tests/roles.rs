//! Tokens with roles, end to end on the real image: a machine with a generated administrator
//! token and an `observe` token (`mcp.tokens`) shows the lesser token only what its role
//! allows, at every door, in both eras; and no door a read-only token may use gives it the
//! administrator's token (the console masks it, memory and sectors need administer).

mod support;

use std::time::Duration;

use base64::Engine;
use iris::token::generated_token;
use rpc::testing::McpRequest;
use serde_json::{Value, json};
use support::guest::{Guest, HOST, boot_guest_without_token, generated_admin_token};
use support::http::request;
use support::mcp::messages;
use support::picture::{Glyphs, decode_bmp, decode_png};

const WATCHER: &str = "watcher-secret-0123456789";

/// A machine with a generated administrator token and a `watcher` token of role observe.
fn boot() -> Option<(Guest, String)> {
    let tokens = format!("mcp.tokens=watcher:observe:{WATCHER}");
    let g = boot_guest_without_token(&[tokens.as_str()], |_| {})?;
    let admin = generated_admin_token(&g);
    Some((g, admin))
}

/// One modern request with `token`: the last JSON-RPC message of the answer.
fn modern(g: &Guest, token: &str, method: &str, params: Value) -> Value {
    g.rig.advance_clock(60);
    let raw = McpRequest::modern(method, params).http("/mcp", HOST, Some(token));
    let r = request(g.mcp, &String::from_utf8_lossy(&raw));
    messages(&r.body).pop().unwrap_or(Value::Null)
}

fn call(g: &Guest, token: &str, tool: &str, args: Value) -> Value {
    modern(
        g,
        token,
        "tools/call",
        json!({"name": tool, "arguments": args}),
    )
}

fn text(v: &Value) -> String {
    let t = v["result"]["content"][0]["text"].as_str();
    t.or(v["error"]["message"].as_str())
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_read_only_token_sees_only_its_role_and_never_the_administrator_token() {
    let Some((g, admin)) = boot() else {
        return;
    };
    // The boot console names the token and its role, never its secret.
    let console = g.rig.console_text();
    assert!(console.contains("token watcher (observe)"), "{console}");
    assert!(!console.contains(WATCHER));

    // What the role lists: observe tools only, each saying so.
    let listed = modern(&g, WATCHER, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools").clone();
    assert!(tools.len() >= 10, "{listed}");
    for t in &tools {
        assert_eq!(t["_meta"]["irix7/privilege"], "observe", "{t}");
    }
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for hidden in [
        "system.reset",
        "shell.exec",
        "mem.read",
        "block.read",
        "input.keys",
    ] {
        assert!(!names.contains(&hidden), "{hidden} listed for watcher");
    }
    let all = modern(&g, &admin, "tools/list", json!({}));
    assert!(all["result"]["tools"].as_array().unwrap().len() > tools.len());

    // Refused, naming the role; the administrator is not refused.
    for (tool, args) in [
        ("system.reset", json!({})),
        ("mem.read", json!({"addr": 0x8000_0000u32, "len": 16})),
        ("block.read", json!({"target": 1, "lba": 0})),
        ("shell.exec", json!({"command": "status"})),
        ("console.write", json!({"text": "x"})),
    ] {
        let v = call(&g, WATCHER, tool, args);
        let t = text(&v);
        assert!(
            t.starts_with("E_PERM") && t.contains("the role of token watcher (observe)"),
            "{tool}: {v}"
        );
    }
    let v = call(
        &g,
        &admin,
        "mem.read",
        json!({"addr": 0x8000_0000u32, "len": 16}),
    );
    assert!(!text(&v).starts_with("E_PERM"), "{v}");

    // The console: the administrator reads the token where the module printed it; the
    // watcher reads the same bytes masked, whole or through any window, in text or base64,
    // through the tool or the resource.
    let whole = |token: &str, extra: Value| {
        let mut args = json!({"offset": 0, "max_bytes": 16384});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        let v = call(&g, token, "serial.read", args);
        v["result"]["structuredContent"].clone()
    };
    let mine = whole(&admin, json!({}));
    let data = mine["data"].as_str().expect("text data").to_string();
    let at = data.find(&admin).expect("the administrator sees the token");
    let start = mine["offset"].as_u64().unwrap() as usize + at;
    let theirs = whole(WATCHER, json!({}));
    let masked = theirs["data"].as_str().unwrap();
    assert!(!masked.contains(&admin[..8]), "watcher read the token");
    assert!(masked.contains("token generated: ********"), "{masked}");
    let b64 = whole(WATCHER, json!({"encoding": "base64"}));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64["data"].as_str().unwrap())
        .unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(&admin[..8]));
    for (from, len) in [
        (start + 4, 24),
        (start, 7),
        (start + 30, 2),
        (start - 3, 10),
    ] {
        let v = call(
            &g,
            WATCHER,
            "serial.read",
            json!({"offset": from, "max_bytes": len}),
        );
        let got = &v["result"]["structuredContent"];
        let d = got["data"].as_str().unwrap_or("").as_bytes();
        let at = got["offset"].as_u64().unwrap_or(0) as usize;
        assert!(!d.is_empty(), "window {from}+{len}: {v}");
        for (i, &c) in d.iter().enumerate() {
            if (start..start + admin.len()).contains(&(at + i)) {
                assert_eq!(c, b'*', "window {from}+{len} byte {i}: {v}");
            }
        }
    }
    let res = modern(
        &g,
        WATCHER,
        "resources/read",
        json!({"uri": "irix7://serial"}),
    );
    let res = res["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        res.contains("token generated: ") && !res.contains(&admin[..8]),
        "{res}"
    );

    // Nothing else a watcher may read carries it: status, the audit, the status page.
    for uri in [
        "irix7://status",
        "irix7://audit",
        "irix7://mem",
        "irix7://net",
    ] {
        let v = modern(&g, WATCHER, "resources/read", json!({"uri": uri}));
        assert!(v.get("result").is_some(), "{uri}: {v}");
        assert!(!v.to_string().contains(&admin[..8]), "{uri}");
    }
    let status = call(&g, WATCHER, "status", json!({}));
    assert!(!status.to_string().contains(&admin[..8]));
    let page = request(
        g.mcp,
        &format!("GET / HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {WATCHER}\r\n\r\n"),
    );
    assert_eq!(page.status, 200);
    assert!(!page.text().contains(&admin[..8]));
}

#[test]
fn the_legacy_era_and_the_screen_route_follow_the_role_too() {
    let Some((g, admin)) = boot() else {
        return;
    };
    let init = McpRequest::initialize("2025-06-18").http("/mcp", HOST, Some(WATCHER));
    let r = request(g.mcp, &String::from_utf8_lossy(&init));
    let sid = r.header("mcp-session-id").expect("a session").to_string();
    let legacy = |method: &str, params: Value| {
        g.rig.advance_clock(60);
        let raw = McpRequest::legacy(&sid, method, params).http("/mcp", HOST, Some(WATCHER));
        let r = request(g.mcp, &String::from_utf8_lossy(&raw));
        messages(&r.body).pop().unwrap_or(Value::Null)
    };
    let v = legacy(
        "tools/call",
        json!({"name": "system.poweroff", "arguments": {}}),
    );
    assert!(
        text(&v).starts_with("E_PERM: system.poweroff (administer)"),
        "{v}"
    );
    let v = legacy("resources/subscribe", json!({"uri": "irix7://serial"}));
    assert_eq!(v["result"], json!({}), "observe may watch the console: {v}");
    let v = legacy("tools/call", json!({"name": "status", "arguments": {}}));
    assert_eq!(v["result"]["isError"], Value::Null, "{v}");
    // The screen is observe; `/screen.bmp` follows the role like the tool.
    let bmp = |token: &str| {
        let raw = format!(
            "GET /screen.bmp HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n\r\n"
        );
        request(g.mcp, &raw).status
    };
    assert_eq!(bmp(WATCHER), 200);
    assert_eq!(bmp(&admin), 200);
}

/// What a reader learns the console's glyphs from: every character the module prints in a token
/// and in its lines about one. Written by the administrator, so it shows marked `[mcp] `.
const GLYPH_SAMPLE: &str = "glyphs 0123456789 abcdefghijklmnopqrstuvwxyz ,;:()=<>-./_";
/// A line shaped like a generated token: the reader must find it, or it could not have found
/// the token either.
const DECOY: &str = "5ee0dec0a11ce0b0d1ce0fa11e0ba5e7";

/// The screen as the holder of `token` sees it through `/screen.bmp` and a full-size
/// `screen.capture`, read back as text with glyphs learned from the picture itself.
fn screen_text(g: &Guest, token: &str) -> Vec<String> {
    let raw = format!(
        "GET /screen.bmp HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    let r = request(g.mcp, &raw);
    assert_eq!(r.status, 200, "{}", r.text());
    let bmp = decode_bmp(&r.body);
    let sample = format!("[mcp] {GLYPH_SAMPLE}");
    let glyphs = Glyphs::learn(&bmp, &sample).expect("the sample line on the screen");
    let mut lines = glyphs.read(&bmp);
    let v = call(g, token, "screen.capture", json!({"scale": 1}));
    let png = base64::engine::general_purpose::STANDARD
        .decode(v["result"]["content"][0]["data"].as_str().expect("a PNG"))
        .expect("base64");
    lines.extend(glyphs.read(&decode_png(&png)));
    lines
}

#[test]
fn no_picture_of_the_screen_shows_the_administrator_token() {
    let Some((g, admin)) = boot() else {
        return;
    };
    for line in [GLYPH_SAMPLE, DECOY] {
        let v = call(&g, &admin, "console.write", json!({"text": line}));
        assert_eq!(v["result"]["isError"], Value::Null, "{v}");
    }
    for token in [WATCHER, admin.as_str()] {
        let lines = screen_text(&g, token);
        let screen = lines.join("\n");
        // The reader reads: the token-shaped line and the module's word on where the token is.
        assert!(screen.contains(&format!("[mcp] {DECOY}")), "{screen}");
        assert!(
            screen.contains("irix7-mcp: token generated, on the serial line only"),
            "{screen}"
        );
        // No eight characters of the token in a row, anywhere on the screen.
        for part in admin.as_bytes().windows(8) {
            let part = std::str::from_utf8(part).unwrap();
            assert!(
                !screen.contains(part),
                "{part} of the token on the screen:\n{screen}"
            );
        }
    }
    // The serial line has it, for a person there (and for the rig's token file).
    assert!(
        g.rig
            .console_text()
            .contains(&format!("token generated: {admin}"))
    );
}

#[test]
fn a_kernel_that_draws_every_console_byte_never_gets_the_token_to_print() {
    // ABI 13 has no serial-only write: the module generates a token and keeps it to itself.
    let Some(g) = boot_guest_without_token(&[], |r| r.offer_abi(13)) else {
        return;
    };
    assert!(
        g.rig.wait_for_console(
            "token generated, not shown: this kernel (ABI < 14)",
            Duration::from_secs(30)
        ),
        "{}",
        g.rig.console_text()
    );
    let console = g.rig.console_text();
    assert_eq!(generated_token(&console), None, "{console}");
    let page = request(
        g.mcp,
        &format!("GET /screen.bmp HTTP/1.1\r\nHost: {HOST}\r\n\r\n"),
    );
    assert_eq!(page.status, 401);
}
