//! The audit trail holds, end to end (the real MIPS module in the rig, every request over TCP
//! through the rig's port forwarding): a flood of failed logins is summarised and counted
//! without pushing the record of an earlier call out of `irix7://audit` or flooding the
//! console; an object that repeats a key is refused, naming it, in both eras; a padded path
//! is recorded as the target it names.
//!
//! Needs `cargo xtask image` and `cargo xtask fixtures` (the writes need the overlay over a
//! mounted image); without them each test says so and returns.

mod support;

use host_http::Response;
use iris::image::find_repo_root;
use rpc::testing::McpRequest;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use support::guest::{Guest, boot_guest_with_disk};
use support::http::request;
use support::mcp::messages;

const TOKEN: &str = "audit-test-token-9e27b4";
const HOST: &str = "localhost";
/// The address the guest sees the rig's forwarded connections come from.
const RIG_CLIENT: &str = "172.31.77.1";

fn boot() -> Option<Guest> {
    let image = find_repo_root().join("target/fixtures/rootfs.erofs");
    if !image.exists() {
        println!(
            "skipped: no {} (run `cargo xtask fixtures`)",
            image.display()
        );
        return None;
    }
    boot_guest_with_disk(&[&format!("mcp.token={TOKEN}")], image)
}

/// `req` sent as HTTP, with each `"paTH"` of its body turned into `"path"` (same length, so
/// the framing holds): how a client sends an object serde_json cannot build.
fn send(addr: SocketAddr, req: &McpRequest, token: Option<&str>) -> Response {
    let raw =
        String::from_utf8_lossy(&req.http("/mcp", HOST, token)).replace("\"paTH\"", "\"path\"");
    request(addr, &raw)
}

/// One era's requests: stateless, or in a legacy (2025-06-18) session.
struct Client<'g> {
    g: &'g Guest,
    session: Option<String>,
}

impl<'g> Client<'g> {
    fn modern(g: &'g Guest) -> Self {
        Client { g, session: None }
    }

    fn legacy(g: &'g Guest) -> Self {
        let r = send(g.mcp, &McpRequest::initialize("2025-06-18"), Some(TOKEN));
        let sid = r
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("initialize: {}", r.text()))
            .to_string();
        let note = McpRequest::legacy(&sid, "notifications/initialized", json!({}))
            .replace_body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        send(g.mcp, &note, Some(TOKEN));
        Client {
            g,
            session: Some(sid),
        }
    }

    /// A request's JSON-RPC answer (the guest clock moved on first, to stay under the
    /// requests-per-second limit).
    fn rpc(&self, method: &str, params: Value) -> Value {
        let (status, v) = self.answer(method, params);
        assert_eq!(status, 200, "{method}: {v}");
        v
    }

    /// The HTTP status and the JSON-RPC message of a request, whatever the status.
    fn answer(&self, method: &str, params: Value) -> (u16, Value) {
        self.g.rig.advance_clock(60);
        let req = match &self.session {
            Some(sid) => McpRequest::legacy(sid, method, params).id(2),
            None => McpRequest::modern(method, params).id(2),
        };
        let r = send(self.g.mcp, &req, Some(TOKEN));
        let v = messages(&r.body)
            .pop()
            .unwrap_or_else(|| panic!("{method}: no message in {}", r.text()));
        (r.status, v)
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        let v = self.rpc("tools/call", json!({"name": tool, "arguments": args}));
        assert_ne!(v["result"]["isError"], true, "{tool}: {v}");
        v["result"].clone()
    }
}

fn audit_resource(c: &Client) -> String {
    let v = c.rpc("resources/read", json!({"uri": "irix7://audit"}));
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("irix7://audit: {v}"))
        .to_string()
}

fn console_audit(g: &Guest) -> Vec<String> {
    g.rig
        .console_text()
        .lines()
        .filter(|l| l.starts_with("irix7-mcp: audit "))
        .map(String::from)
        .collect()
}

#[test]
fn two_hundred_failed_logins_are_summarised_and_leave_the_calls_recorded() {
    let Some(g) = boot() else {
        return;
    };
    let modern = Client::modern(&g);
    modern.call("fs.write", json!({"path": "/tmp/kept", "content": "x"}));
    let call_line = "stateless fs.write {path=\"/tmp/kept\",content=<1 bytes>} -> ok";
    assert!(g.rig.wait_for_console(call_line, Duration::from_secs(10)));

    // 200 failed logins from the rig's address, as fast as it sends them (a tenth without a
    // token): past 20 a second they are throttled, and counted all the same.
    let probe = McpRequest::modern("tools/list", json!({}));
    let started = std::time::Instant::now();
    for i in 0..200 {
        let token = (i % 10 != 0).then_some("wrong-token-guess-4410ab");
        assert_eq!(send(g.mcp, &probe, token).status, 401, "attempt {i}");
    }
    // The guest clock is the wall clock: a slow host may spread them over more windows.
    let windows = started.elapsed().as_secs() as usize / 10 + 2;
    // The last window closes 10 s (guest time) after it opened; its summary follows.
    g.rig.advance_clock(10_500);
    let all = "(one per address per 10 s; 200 failed logins)";
    let text = (0..100)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            audit_resource(&modern)
        })
        .find(|t| t.contains(all))
        .unwrap_or_else(|| panic!("{all}: {}", audit_resource(&modern)));
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("# audit lines of calls since boot: 1, 1 kept, 0 dropped"),
        "{text}"
    );
    assert!(lines[1].ends_with(call_line), "{text}");
    assert!(
        lines[2].starts_with("# audit lines of lesser tokens' calls since boot: 0,"),
        "{text}"
    );
    assert!(lines[4].starts_with("# failed-login summaries"), "{text}");
    let summaries: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains(" failed logins in 10 s ("))
        .collect();
    assert!((1..=windows).contains(&summaries.len()), "{text}");
    for l in &summaries {
        assert!(l.contains(&format!(" ms {RIG_CLIENT} ")), "{text}");
    }
    let counted: u32 = summaries
        .iter()
        .map(|l| {
            let n = l.split(&format!("{RIG_CLIENT} ")).nth(1).unwrap();
            n.split(' ').next().unwrap().parse::<u32>().unwrap()
        })
        .sum();
    assert_eq!(counted, 200, "{text}");
    // The console got one line for the 200, not 200.
    let console = console_audit(&g);
    assert_eq!(
        console
            .iter()
            .filter(|l| l.contains("failed logins"))
            .count(),
        summaries.len(),
        "{console:#?}"
    );
    assert!(!g.rig.console_text().contains("wrong-token-guess"));
}

#[test]
fn a_repeated_key_is_refused_naming_it_and_a_padded_path_is_recorded_as_its_target() {
    let Some(g) = boot() else {
        return;
    };
    let modern = Client::modern(&g);
    modern.call("fs.write", json!({"path": "/tmp/x", "content": "x"}));
    for c in [Client::modern(&g), Client::legacy(&g)] {
        // `{"path":"/tmp/x", …, "path":"/tmp/decoy"}`: which one a reader takes is a guess.
        let (status, v) = c.answer(
            "tools/call",
            json!({"name": "fs.remove", "arguments": {"path": "/tmp/x", "paTH": "/tmp/decoy"}}),
        );
        assert_eq!(status, 400, "{v}");
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(
            v["error"]["message"], "Invalid params: the key \"path\" is given twice",
            "{v}"
        );
        // Nothing ran: the file is still there.
        let stat = c.rpc(
            "tools/call",
            json!({"name": "fs.stat", "arguments": {"path": "/tmp/x"}}),
        );
        assert_ne!(stat["result"]["isError"], true, "{stat}");
    }
    // The padded path (over 64 bytes) is recorded, and removed, as /tmp/x.
    let padded = format!("{}/tmp/./x", "/.".repeat(40));
    assert!(padded.len() > 64);
    let legacy = Client::legacy(&g);
    legacy.call("fs.remove", json!({"path": padded}));
    let sid = legacy.session.clone().unwrap();
    let want = format!("session {} fs.remove {{path=\"/tmp/x\"}} -> ok", &sid[..8]);
    assert!(
        g.rig.wait_for_console(&want, Duration::from_secs(10)),
        "{:#?}",
        console_audit(&g)
    );
    let text = audit_resource(&modern);
    assert!(text.lines().any(|l| l.ends_with(&want)), "{text}");
    // The refused calls left no line.
    assert!(!text.contains("decoy"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains("fs.remove")).count(),
        1,
        "{text}"
    );
}
