//! The capability table is complete, and every role meets exactly what it says at every door,
//! in both eras.

use super::*;
use crate::services::shell::builtins::BUILTINS;
use crate::tools::testing::harness;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use rpc::mcp::McpServer;
use rpc::mcp::authority::NARROWING_HEADER;
use rpc::testing::{McpRequest, drain, last_message};
use serde_json::{Value, json};

/// Every door the module has, from what it registers and serves.
fn reachable() -> Vec<Door> {
    let mut s = harness::server();
    let mut doors: Vec<Door> = s.tools().defs().map(|d| Tool(d.name)).collect();
    let list = harness::request(&mut s, "resources/list", json!({}));
    for r in list["result"]["resources"].as_array().unwrap() {
        let uri = String::from(r["uri"].as_str().unwrap());
        doors.push(Resource(uri.leak()));
    }
    let list = harness::request(&mut s, "resources/templates/list", json!({}));
    for t in list["result"]["resourceTemplates"].as_array().unwrap() {
        let uri = String::from(t["uriTemplate"].as_str().unwrap());
        doors.push(Template(uri.leak()));
    }
    for w in crate::tools::serial::WATCHES
        .iter()
        .chain(crate::tools::system::WATCHES)
        .chain(crate::tools::events::WATCHES)
    {
        doors.push(Watch(w.uri));
    }
    doors.extend(BUILTINS.iter().map(|b| Builtin(b.name)));
    let routes = [
        STATUS_DETAILS,
        SCREEN_BMP,
        DEBUG_RSP,
        EVENT_STREAM_ROUTE,
        SESSION_END_ROUTE,
    ];
    doors.extend(routes.map(Route));
    doors
}

#[test]
fn every_reachable_door_has_exactly_one_row_and_every_row_door_is_reachable() {
    let doors = reachable();
    for d in &doors {
        let rows = ROWS.iter().filter(|c| c.doors.contains(d)).count();
        assert_eq!(rows, 1, "{} {} is in {rows} rows", d.kind(), d.name());
    }
    for c in ROWS {
        for d in c.doors {
            assert!(
                doors.contains(d),
                "{}: {} {} is not reachable",
                c.name,
                d.kind(),
                d.name()
            );
        }
        let later = ROWS.iter().filter(|o| o.name == c.name).count();
        assert_eq!(later, 1, "{} is named twice", c.name);
    }
}

#[test]
fn a_command_opens_the_door_of_its_builtin() {
    let args = |c: &str| json!({"command": c}).to_string();
    let door = |c: &str| {
        let text = args(c);
        let mut tape = rpc::json::Tape::default();
        let v = tape.read(&text).unwrap();
        shell::opened_door(v)
    };
    assert_eq!(door("poweroff"), Some(Builtin("poweroff")));
    assert_eq!(door("  'reboot' "), Some(Builtin("reboot")));
    assert_eq!(door("cat /etc/motd"), Some(Builtin("cat")));
    assert_eq!(door("frobnicate"), None);
    assert_eq!(door("'unterminated"), None);
}

/// The tokens of the matrix: name, role (as `mcp.tokens` writes it), secret.
const ROLES: &[(&str, &str, &str)] = &[
    ("admin", "administer", "admin-secret-0000000"),
    ("operator", "operate", "operator-secret-0000"),
    ("watcher", "observe", "watcher-secret-00000"),
    (
        "console",
        "serial.read+status+!status",
        "console-secret-0000",
    ),
];

fn matrix_server() -> McpServer<crate::tools::Ctx> {
    let mut config = harness::config();
    config.token = Some(String::from(ROLES[0].2));
    let lesser: Vec<String> = ROLES[1..]
        .iter()
        .map(|(n, r, s)| alloc::format!("{n}:{r}:{s}"))
        .collect();
    config.tokens = rpc::mcp::authority::parse_tokens(&lesser.join(","), |_| Ok(())).unwrap();
    config.limits.requests_per_second = 1 << 20;
    let entropy: rpc::mcp::Entropy = alloc::boxed::Box::new(|b: &mut [u8]| b.fill(5));
    let ctx = Rc::new(RefCell::new(crate::tools::testing::fake::ctx()));
    let mut s = McpServer::new(config, ctx, entropy);
    crate::tools::register(&mut s).unwrap();
    s
}

/// Sends `req` with `secret` (and a gateway's narrowing, if any); the last JSON-RPC message.
fn send(
    s: &mut McpServer<crate::tools::Ctx>,
    req: McpRequest,
    secret: &str,
    narrowing: Option<&str>,
) -> Value {
    let mut req = req.header("Authorization", &alloc::format!("Bearer {secret}"));
    if let Some(n) = narrowing {
        req = req.header(NARROWING_HEADER, n);
    }
    let mut resp = req.send(s, 1000);
    let (body, _) = drain(&mut resp, 1000, 2000);
    last_message(&body)
        .or_else(|| serde_json::from_slice(&body).ok())
        .unwrap_or(Value::Null)
}

/// A legacy session of protocol `version` opened with `secret` (and a gateway's narrowing:
/// a session is its owner's alone, and a narrowed token is an owner of its own).
fn session(
    s: &mut McpServer<crate::tools::Ctx>,
    secret: &str,
    narrowing: Option<&str>,
    version: &str,
) -> String {
    let mut req =
        McpRequest::initialize(version).header("Authorization", &alloc::format!("Bearer {secret}"));
    if let Some(n) = narrowing {
        req = req.header(NARROWING_HEADER, n);
    }
    let resp = req.send(s, 1000);
    let id = resp
        .headers
        .get("Mcp-Session-Id")
        .expect("a session")
        .to_string();
    let note = McpRequest::legacy(&id, "notifications/initialized", json!({})).id(Value::Null);
    send(s, note, secret, narrowing);
    id
}

/// Whether an answer is the refusal of the authority (an `E_PERM` result or error).
fn refused(v: &Value) -> bool {
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .or(v["error"]["message"].as_str());
    text.is_some_and(|t| t.starts_with("E_PERM") && t.contains(" is outside "))
}

/// Every tool `tools/list` shows, across pages.
fn listed(
    s: &mut McpServer<crate::tools::Ctx>,
    mk: &dyn Fn(&str, Value) -> McpRequest,
    secret: &str,
    narrowing: Option<&str>,
) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let v = send(s, mk("tools/list", params), secret, narrowing);
        for t in v["result"]["tools"].as_array().unwrap() {
            names.push(String::from(t["name"].as_str().unwrap()));
        }
        cursor = v["result"]["nextCursor"].clone();
        if cursor.is_null() {
            return names;
        }
    }
}

#[test]
fn every_role_meets_what_the_table_says_at_every_door_in_both_eras() {
    let mut s = matrix_server();
    // Each token, and the administrator narrowed as a gateway would.
    let mut holders: Vec<(&str, &str, Option<&str>)> = ROLES
        .iter()
        .map(|(_, role, secret)| (*role, *secret, None))
        .collect();
    holders.push((
        "operate,!shell.exec,!fs.w*",
        ROLES[0].2,
        Some("operate,!shell.exec,!fs.w*"),
    ));
    for (role, secret, narrowing) in holders {
        let policy =
            rpc::mcp::Policy::parse_items(role, if narrowing.is_some() { ',' } else { '+' })
                .unwrap();
        let allowed = |door: Door| {
            let cap = TABLE.judge(door, None).unwrap();
            policy.allows(cap)
        };
        let sid = session(&mut s, secret, narrowing, "2025-06-18");
        for legacy in [false, true] {
            let mk = |method: &str, params: Value| {
                if legacy {
                    McpRequest::legacy(&sid, method, params)
                } else {
                    McpRequest::modern(method, params)
                }
            };
            let era = if legacy { "legacy" } else { "modern" };
            let names = listed(&mut s, &mk, secret, narrowing);
            let resources = send(&mut s, mk("resources/list", json!({})), secret, narrowing);
            let resources: Vec<&str> = resources["result"]["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["uri"].as_str().unwrap())
                .collect::<Vec<_>>()
                .into_iter()
                .map(|u| &*String::from(u).leak())
                .collect();
            let templates = send(
                &mut s,
                mk("resources/templates/list", json!({})),
                secret,
                narrowing,
            );
            let templates = templates["result"]["resourceTemplates"]
                .as_array()
                .unwrap()
                .len();
            for row in ROWS {
                for &door in row.doors {
                    let want = allowed(door);
                    let at = alloc::format!("{role} {era} {} {}", door.kind(), door.name());
                    match door {
                        Tool(name) => {
                            assert_eq!(names.iter().any(|n| n == name), want, "listed: {at}");
                            // Arguments no schema takes: a call the authority passes stops at
                            // the schema, so no tool runs.
                            let call = json!({"name": name, "arguments": {"matrix-probe": 1}});
                            let v = send(&mut s, mk("tools/call", call), secret, narrowing);
                            assert_eq!(!refused(&v), want, "called: {at}: {v}");
                        }
                        Resource(uri) => {
                            assert_eq!(resources.contains(&uri), want, "listed: {at}");
                            let v = send(
                                &mut s,
                                mk("resources/read", json!({"uri": uri})),
                                secret,
                                narrowing,
                            );
                            assert_eq!(!refused(&v), want, "read: {at}: {v}");
                        }
                        Template(_) => {
                            assert_eq!(templates == 1, want, "listed: {at}");
                            let uri = "irix7://fs/etc/motd";
                            let v = send(
                                &mut s,
                                mk("resources/read", json!({"uri": uri})),
                                secret,
                                narrowing,
                            );
                            assert_eq!(!refused(&v), want, "read: {at}: {v}");
                        }
                        Watch(uri) if legacy => {
                            let req = mk("resources/subscribe", json!({"uri": uri}));
                            let v = send(&mut s, req, secret, narrowing);
                            assert_eq!(!refused(&v), want, "subscribed: {at}: {v}");
                        }
                        Watch(uri) => {
                            // `subscriptions/listen` acknowledges only what may be watched.
                            let params = json!({"notifications": {"resourceSubscriptions": [uri]}});
                            let req = mk("subscriptions/listen", params)
                                .accept("application/json, text/event-stream")
                                .header("Authorization", &alloc::format!("Bearer {secret}"));
                            let req = match narrowing {
                                Some(n) => req.header(NARROWING_HEADER, n),
                                None => req,
                            };
                            let mut resp = req.send(&mut s, 1000);
                            let (body, _) = drain(&mut resp, 1000, 3);
                            let ack = rpc::testing::messages(&body);
                            let honored =
                                &ack[0]["params"]["notifications"]["resourceSubscriptions"];
                            assert_eq!(honored == &json!([uri]), want, "listened: {at}: {ack:?}");
                        }
                        Builtin(name) => {
                            // Through the shell: its own capability, then the builtin's.
                            let shell = allowed(Tool("shell.exec"));
                            let call =
                                json!({"name": "shell.exec", "arguments": {"command": name}});
                            let v = send(&mut s, mk("tools/call", call), secret, narrowing);
                            assert_eq!(!refused(&v), want && shell, "ran: {at}: {v}");
                        }
                        Route(_) => {}
                    }
                }
            }
            // Through tasks: a client of the tasks extension whose call would wait becomes a
            // task only when the authority lets the call start.
            if !legacy {
                let caps = json!({"extensions": {rpc::mcp::TASKS_EXTENSION: {}}});
                let args = json!({"wait_ms": 60_000, "until": "never printed by the fake"});
                let req = McpRequest::modern(
                    "tools/call",
                    json!({"name": "serial.read", "arguments": args}),
                )
                .capabilities(caps);
                let v = send(&mut s, req, secret, narrowing);
                let want = allowed(Tool("serial.read"));
                assert_eq!(
                    v["result"]["resultType"] == "task",
                    want,
                    "{role} task: {v}"
                );
                assert_eq!(refused(&v), !want, "{role} task: {v}");
                // Cancelled, so the console's waiters are free for the next holder.
                if let Some(id) = v["result"]["taskId"].as_str() {
                    let caps = json!({"extensions": {rpc::mcp::TASKS_EXTENSION: {}}});
                    let req = McpRequest::modern("tasks/cancel", json!({"taskId": id}))
                        .capabilities(caps);
                    send(&mut s, req, secret, narrowing);
                }
            }
            // Inside a legacy batch (protocol 2025-03-26), each item is judged alone.
            if legacy {
                let sid = session(&mut s, secret, narrowing, "2025-03-26");
                // (`tools/call` is never batched: resources are.)
                let read = |id: u32, uri: &str| json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}});
                let body = json!([read(1, "irix7://audit"), read(2, "irix7://serial")]);
                let req = McpRequest::legacy(&sid, "tools/call", json!({})).replace_body(body);
                let mut req = req.header("Authorization", &alloc::format!("Bearer {secret}"));
                if let Some(n) = narrowing {
                    req = req.header(NARROWING_HEADER, n);
                }
                let mut resp = req.send(&mut s, 1000);
                let (body, _) = drain(&mut resp, 1000, 2000);
                let items: Vec<Value> = serde_json::from_slice(&body).unwrap_or_default();
                assert_eq!(
                    items.len(),
                    2,
                    "{role} batch: {}",
                    String::from_utf8_lossy(&body)
                );
                let audit = allowed(Resource("irix7://audit"));
                assert_eq!(refused(&items[0]), !audit, "{role} batch: {}", items[0]);
                let serial = allowed(Resource("irix7://serial"));
                assert_eq!(refused(&items[1]), !serial, "{role} batch: {}", items[1]);
            }
        }
    }
}

#[test]
fn a_narrowing_that_does_not_parse_refuses_the_request() {
    let mut s = matrix_server();
    let req = McpRequest::modern("tools/list", json!({}))
        .header("Authorization", &alloc::format!("Bearer {}", ROLES[0].2))
        .header(NARROWING_HEADER, "observe,fs.[ab]");
    let resp = req.send(&mut s, 1000);
    assert_eq!(resp.status, 400);
}

#[test]
fn ending_a_session_is_a_door_of_the_session_capability() {
    let mut s = matrix_server();
    let delete = |s: &mut McpServer<crate::tools::Ctx>, sid: &str, secret: &str| {
        let mut h = rpc::http::Headers::default();
        h.push("Mcp-Session-Id", sid);
        h.push("Authorization", alloc::format!("Bearer {secret}"));
        let peer = rpc::http::Peer {
            addr: [127, 0, 0, 1],
            port: 1,
        };
        s.handle_parts(&rpc::http::Method::Delete, &h, b"", peer, 1000)
            .status
    };
    // The console role (serial.read and status, not the session capability) opens a session
    // but may not end it by DELETE; a watcher (observe) ends its own.
    let (_, _, console) = ROLES[3];
    let sid = session(&mut s, console, None, "2025-11-25");
    assert_eq!(delete(&mut s, &sid, console), 403);
    let (_, _, watcher) = ROLES[2];
    let sid = session(&mut s, watcher, None, "2025-11-25");
    assert_eq!(delete(&mut s, &sid, watcher), 200);
}
