//! `mcp.policy` and the audit trail end to end: the real MIPS module in the rig, booted with
//! `mcp.token` and `mcp.policy`, every request over TCP through the rig's port forwarding.
//! Each policy value is checked in both eras (2026-07-28 and a 2025-11-25 session): what
//! `tools/list` shows, and that every tool left out answers `E_PERM` naming the policy. The
//! audit trail's lines for a write, a destructive call and a summary of failed logins are
//! looked for on the console, in `irix7://audit` and in `shell.exec audit`, without file data
//! or tokens.
//!
//! Needs `cargo xtask image` (and `cargo xtask fixtures` for the audit test, whose write needs
//! the overlay over a mounted image); without them each test says so and returns.

mod support;

use host_http::Response;
use iris::image::find_repo_root;
use rpc::testing::McpRequest;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use support::guest::{Guest, boot_guest, boot_guest_with_disk};
use support::http::request;
use support::mcp::messages;

const TOKEN: &str = "policy-test-token-5d81e0";
const HOST: &str = "localhost";

fn boot(policy: Option<&str>) -> Option<Guest> {
    let token = format!("mcp.token={TOKEN}");
    let mut env = vec![token];
    if let Some(p) = policy {
        env.push(format!("mcp.policy={p}"));
    }
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    boot_guest(&env)
}

fn send(addr: SocketAddr, req: &McpRequest, token: Option<&str>) -> Response {
    request(
        addr,
        &String::from_utf8_lossy(&req.http("/mcp", HOST, token)),
    )
}

/// The last JSON-RPC message of a 200 answer.
fn answer(what: &str, r: Response) -> Value {
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    messages(&r.body)
        .pop()
        .unwrap_or_else(|| panic!("{what}: no JSON-RPC message in {}", r.text()))
}

/// One era's way of talking to the guest: stateless, or inside a legacy session.
struct Client<'g> {
    g: &'g Guest,
    session: Option<String>,
}

impl<'g> Client<'g> {
    fn modern(g: &'g Guest) -> Self {
        Client { g, session: None }
    }

    fn legacy(g: &'g Guest) -> Self {
        let r = send(g.mcp, &McpRequest::initialize("2025-11-25"), Some(TOKEN));
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

    fn era(&self) -> &'static str {
        if self.session.is_some() {
            "2025-11-25"
        } else {
            "2026-07-28"
        }
    }

    /// A request's JSON-RPC answer. The guest clock moves on first, so that a walk over every
    /// tool stays under the module's requests-per-second limit.
    fn rpc(&self, method: &str, params: Value) -> Value {
        self.g.rig.advance_clock(60);
        let req = match &self.session {
            Some(sid) => McpRequest::legacy(sid, method, params).id(2),
            None => McpRequest::modern(method, params).id(2),
        };
        answer(
            &format!("{} {method}", self.era()),
            send(self.g.mcp, &req, Some(TOKEN)),
        )
    }

    fn listed(&self) -> Vec<Value> {
        let v = self.rpc("tools/list", json!({}));
        assert!(v["result"]["nextCursor"].is_null(), "one page: {v}");
        v["result"]["tools"].as_array().expect("tools").clone()
    }

    /// A tool call's `result`.
    fn call(&self, tool: &str, args: Value) -> Value {
        let v = self.rpc("tools/call", json!({"name": tool, "arguments": args}));
        v.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{} {tool}: no result in {v}", self.era()))
    }
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

/// The whole catalogue (`docs/tools.json`, which the catalogue test keeps equal to what a
/// booted guest lists without a policy).
fn catalogue() -> Vec<Value> {
    let path = find_repo_root().join("docs/tools.json");
    let v: Value = serde_json::from_slice(&std::fs::read(path).expect("docs/tools.json")).unwrap();
    v.as_array().expect("an array of tools").clone()
}

/// Boots with `policy`, then in both eras: the listing is exactly `offered(tool)` of the
/// catalogue, every tool left out answers `E_PERM: <tool> (<privilege>) is outside
/// mcp.policy=<shown>`,
/// `allowed_call` (a tool the policy offers) runs, and `status` shows the policy. The console
/// says how many tools are offered, and `console` besides.
fn check_policy(
    policy: Option<&str>,
    shown: &str,
    offered: impl Fn(&Value) -> bool,
    allowed_call: (&str, Value),
    console: &[&str],
) {
    let Some(g) = boot(policy) else { return };
    let all = catalogue();
    let want: Vec<Value> = all.iter().filter(|t| offered(t)).cloned().collect();
    assert!(!want.is_empty());
    let line = format!(
        "policy {shown}: {} of {} tools offered",
        want.len(),
        all.len()
    );
    for l in console.iter().copied().chain([line.as_str()]) {
        assert!(
            g.rig.wait_for_console(l, Duration::from_secs(10)),
            "{l} not in {}",
            g.rig.console_text()
        );
    }
    for c in [Client::modern(&g), Client::legacy(&g)] {
        let listed = c.listed();
        assert_eq!(names(&listed), names(&want), "{policy:?} in {}", c.era());
        assert_eq!(listed, want, "listed as the catalogue lists them");
        for t in all.iter().filter(|t| !offered(t)) {
            let name = t["name"].as_str().unwrap();
            let r = c.call(name, json!({}));
            assert_eq!(r["isError"], true, "{name} in {}: {r}", c.era());
            let privilege = t["_meta"]["irix7/privilege"].as_str().unwrap();
            assert_eq!(
                text(&r),
                format!("E_PERM: {name} ({privilege}) is outside mcp.policy={shown}"),
                "{}",
                c.era()
            );
        }
        let (tool, args) = &allowed_call;
        let r = c.call(tool, args.clone());
        assert!(
            !text(&r).starts_with("E_PERM"),
            "{tool} in {}: {r}",
            c.era()
        );
        // Every policy here offers `status`.
        let st = c.call("status", json!({}));
        assert_eq!(st["structuredContent"]["policy"], shown, "{st}");
    }
}

/// Tools whose capability is observe (the privilege `docs/tools.json` lists).
fn observe(t: &Value) -> bool {
    t["_meta"]["irix7/privilege"] == "observe"
}

#[test]
fn without_a_policy_everything_is_offered() {
    check_policy(
        None,
        "full",
        |_| true,
        ("console.write", json!({"text": "policy full"})),
        &[],
    );
}

#[test]
fn full_offers_everything() {
    check_policy(
        Some("full"),
        "full",
        |_| true,
        ("console.write", json!({"text": "policy full"})),
        &[],
    );
}

#[test]
fn read_only_offers_only_observe_tools() {
    check_policy(
        Some("read-only"),
        "read-only",
        observe,
        ("serial.read", json!({})),
        &[],
    );
}

#[test]
fn no_destructive_leaves_out_administer_tools() {
    check_policy(
        Some("no-destructive"),
        "no-destructive",
        |t| t["_meta"]["irix7/privilege"] != "administer",
        ("console.write", json!({"text": "policy no-destructive"})),
        &[],
    );
}

#[test]
fn a_glob_list_offers_the_names_it_matches() {
    check_policy(
        Some("fs.*,status,serial.read"),
        "fs.*,status,serial.read",
        |t| {
            let n = t["name"].as_str().unwrap_or("");
            n.starts_with("fs.") || n == "status" || n == "serial.read"
        },
        ("serial.read", json!({})),
        &[],
    );
}

#[test]
fn an_invalid_policy_fails_closed_to_observe() {
    check_policy(
        Some("fs.*,,status"),
        "observe (the configured \"fs.*,,status\" is invalid)",
        observe,
        ("serial.read", json!({})),
        &["mcp.policy refused (an empty item in the list): serving observe only"],
    );
}

/// The lines of `irix7://audit`.
fn audit_resource(c: &Client) -> String {
    let v = c.rpc("resources/read", json!({"uri": "irix7://audit"}));
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("irix7://audit: {v}"))
        .to_string()
}

#[test]
fn writes_destructive_calls_and_failed_logins_are_audited_without_data_or_tokens() {
    let image = find_repo_root().join("target/fixtures/rootfs.erofs");
    if !image.exists() {
        println!(
            "skipped: no {} (run `cargo xtask fixtures`)",
            image.display()
        );
        return;
    }
    let token = format!("mcp.token={TOKEN}");
    let Some(g) = boot_guest_with_disk(&[&token], image) else {
        return;
    };
    const SECRET: &str = "TOP-SECRET-FILE-CONTENTS";
    let modern = Client::modern(&g);
    // A write and a destructive call, both succeeding, in the stateless era.
    let r = modern.call(
        "fs.write",
        json!({"path": "/tmp/audited", "content": SECRET}),
    );
    assert_ne!(r["isError"], true, "{r}");
    let r = modern.call("fs.remove", json!({"path": "/tmp/audited"}));
    assert_ne!(r["isError"], true, "{r}");
    // A read is not audited.
    modern.call("fs.stat", json!({"path": "/tmp"}));
    // A write in a legacy session.
    let legacy = Client::legacy(&g);
    let sid = legacy.session.clone().unwrap();
    let r = legacy.call("console.write", json!({"text": SECRET}));
    assert_ne!(r["isError"], true, "{r}");
    // Failed logins: no token, then a wrong one.
    let probe = McpRequest::modern("tools/list", json!({}));
    assert_eq!(send(g.mcp, &probe, None).status, 401);
    let wrong = "wrong-token-guess-3c7a10";
    assert_eq!(send(g.mcp, &probe, Some(wrong)).status, 401);

    // Failed logins are summarised when their window (10 s of guest time) closes.
    g.rig.advance_clock(10_500);
    let want = [
        "stateless fs.write {path=\"/tmp/audited\",content=<24 bytes>} -> ok".to_string(),
        "stateless fs.remove {path=\"/tmp/audited\"} -> ok".to_string(),
        format!(
            "session {} console.write {{text=<24 bytes>}} -> ok",
            &sid[..8]
        ),
        "2 failed logins in 10 s (wrong token 1, missing token 1, throttled 0)".to_string(),
    ];
    assert!(
        g.rig.wait_for_console(&want[3], Duration::from_secs(10)),
        "{}",
        g.rig.console_text()
    );
    let console = g.rig.console_text();
    // The calls' lines: machine events (the boot, the address) are audit lines too.
    let console_audit: Vec<&str> = console
        .lines()
        .filter(|l| l.starts_with("irix7-mcp: audit ") && !l.contains(" ms machine event "))
        .collect();
    let resource = audit_resource(&modern);
    let shell = modern.call("shell.exec", json!({"command": "audit"}));
    let shell_out = shell["structuredContent"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("shell.exec audit: {shell}"))
        .to_string();
    for w in &want {
        assert_eq!(
            console_audit
                .iter()
                .filter(|l| l.ends_with(w.as_str()))
                .count(),
            1,
            "{w} once on the console: {console_audit:#?}"
        );
        assert!(
            resource.lines().any(|l| l.ends_with(w.as_str())),
            "{w} in irix7://audit: {resource}"
        );
        assert!(
            shell_out.lines().any(|l| l.ends_with(w.as_str())),
            "{w} in shell audit: {shell_out}"
        );
    }
    // Exactly those (the resource read and the fs.stat are read-only; the shell call that
    // printed the log came after it was read).
    assert_eq!(console_audit.len(), want.len(), "{console_audit:#?}");
    assert!(
        resource.starts_with("# audit lines of calls since boot: 3, 3 kept, 0 dropped"),
        "{resource}"
    );
    assert!(
        resource.contains("(one per address per 10 s; 2 failed logins) since boot: 1, 1 kept"),
        "{resource}"
    );
    for l in console_audit.iter().copied().chain(resource.lines()) {
        assert!(
            l.contains(" ms 172.31.77.1 ")
                || l.starts_with('#')
                || l.contains(" ms machine event "),
            "client address: {l}"
        );
        for secret in [SECRET, TOKEN, wrong] {
            assert!(!l.contains(secret), "{secret} leaked: {l}");
        }
    }
    // The shell call itself (destructive) is audited after it ends.
    assert!(g.rig.wait_for_console(
        "shell.exec {command=\"audit\"} -> ok",
        Duration::from_secs(10)
    ));
}

#[test]
fn with_confirm_destructive_calls_need_a_yes_through_elicitation() {
    let token = format!("mcp.token={TOKEN}");
    let Some(g) = boot_guest(&[&token, "mcp.confirm=on"]) else {
        return;
    };
    assert!(
        g.rig.wait_for_console(
            "tools offered; destructive ones ask for consent (mcp.confirm)",
            Duration::from_secs(10)
        ),
        "{}",
        g.rig.console_text()
    );
    let call = |caps: Value, responses: Option<Value>| {
        g.rig.advance_clock(60);
        let mut params = json!({"name": "fs.remove", "arguments": {"path": "/tmp/x"}});
        if let Some(r) = responses {
            params["inputResponses"] = json!({"irix7.confirm": r});
        }
        let req = McpRequest::modern("tools/call", params).capabilities(caps);
        answer("fs.remove", send(g.mcp, &req, Some(TOKEN)))["result"].clone()
    };
    let r = call(json!({}), None);
    assert!(
        text(&r).starts_with("E_PERM: fs.remove needs the user's consent (mcp.confirm)"),
        "{r}"
    );
    let elicit = json!({"elicitation": {}});
    let r = call(elicit.clone(), None);
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(
        r["inputRequests"]["irix7.confirm"]["params"]["message"],
        "Allow the destructive tool fs.remove {path=\"/tmp/x\"} on this machine?"
    );
    let r = call(elicit.clone(), Some(json!({"action": "decline"})));
    assert_eq!(
        text(&r),
        "E_PERM: fs.remove was not allowed by the user (mcp.confirm)"
    );
    // A yes runs the tool: without a disk it answers with its own error, not E_PERM.
    let r = call(
        elicit,
        Some(json!({"action": "accept", "content": {"confirm": true}})),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(!text(&r).starts_with("E_PERM"), "{r}");
    // Tools that are not destructive run without asking.
    let c = Client::modern(&g);
    let r = c.call("console.write", json!({"text": "no question"}));
    assert_ne!(r["isError"], true, "{r}");
    let st = c.call("status", json!({}));
    assert_eq!(
        st["structuredContent"]["policy"],
        "full, destructive tools ask first (mcp.confirm)"
    );
}
