//! What a token holds is its own: a lesser token at every limit leaves the administrator
//! served, another token cannot use, read or end its sessions, and a noisy client of a token
//! leaves its quiet sibling room.

use super::*;

const ADMIN: &str = "admin-secret-long-enough";
const WATCHER: &str = "watcher-secret-long-enough";
const OPERATOR: &str = "operator-secret-long-enough";

fn owned_server(limits: impl FnOnce(&mut crate::mcp::Limits)) -> McpServer<Ctx> {
    let mut c = config();
    c.token = Some(ADMIN.into());
    let tokens = format!("watcher:observe:{WATCHER},operator:operate:{OPERATOR}");
    c.tokens = crate::mcp::guard::authority::parse_tokens(&tokens, |_| Ok(())).unwrap();
    limits(&mut c.limits);
    server_with(c)
}

/// A client: a connection from the loopback address's port `port`.
fn peer(port: u16) -> Peer {
    Peer {
        addr: [127, 0, 0, 1],
        port,
    }
}

/// `req` with `secret` as its bearer, from `port`, at `now`.
fn send(s: &mut McpServer<Ctx>, req: McpRequest, secret: &str, port: u16, now: u64) -> Response {
    let req = req.header("Authorization", &format!("Bearer {secret}"));
    s.handle_parts(&Method::Post, &req.headers(), &req.body(), peer(port), now)
}

fn call(name: &str, args: Value) -> McpRequest {
    McpRequest::modern("tools/call", json!({"name": name, "arguments": args}))
}

fn text(r: &mut Response, now: u64) -> String {
    let v = body_json(r, now);
    v["result"]["content"][0]["text"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| v.to_string())
}

fn open_session(s: &mut McpServer<Ctx>, secret: &str, port: u16, now: u64) -> String {
    let r = send(s, McpRequest::initialize("2025-11-25"), secret, port, now);
    assert_eq!(r.status, 200);
    header(&r, "Mcp-Session-Id").expect("a session").to_string()
}

#[test]
fn a_legacy_session_is_its_owners_alone() {
    let mut s = owned_server(|_| {});
    let sid = open_session(&mut s, ADMIN, 1, T0);
    let ping = || McpRequest::legacy(&sid, "ping", json!({}));
    let narrowed = ping().header("Irix7-Policy", "observe");
    // Another token, and the administrator's own token narrowed by a gateway, find no such
    // session: to use, to stream or to end.
    assert_eq!(send(&mut s, ping(), WATCHER, 2, T0).status, 404);
    let r = s.handle_parts(
        &Method::Post,
        &narrowed
            .clone()
            .header("Authorization", &format!("Bearer {ADMIN}"))
            .headers(),
        &narrowed.body(),
        peer(2),
        T0,
    );
    assert_eq!(r.status, 404);
    for (method, secret) in [(Method::Get, WATCHER), (Method::Delete, OPERATOR)] {
        let h = headers(&[
            ("Mcp-Session-Id", &sid),
            ("Accept", "text/event-stream"),
            ("Authorization", &format!("Bearer {secret}")),
        ]);
        let r = s.handle_parts(&method, &h, b"", peer(2), T0);
        assert_eq!(r.status, 404, "{method:?}");
    }
    // An answer or a cancellation sent into it by another token is never delivered: the
    // session is not found before its messages are read.
    let answer = McpRequest::legacy(&sid, "x", json!({})).replace_body(
        json!({"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {"confirm": true}}}),
    );
    assert_eq!(send(&mut s, answer, WATCHER, 2, T0).status, 404);
    // It is still the administrator's.
    assert_eq!(send(&mut s, ping(), ADMIN, 3, T0 + 1).status, 200);
    let h = headers(&[
        ("Mcp-Session-Id", &sid),
        ("Authorization", &format!("Bearer {ADMIN}")),
    ]);
    assert_eq!(
        s.handle_parts(&Method::Delete, &h, b"", peer(3), T0 + 2)
            .status,
        200
    );
}

#[test]
fn a_lesser_token_at_its_rate_and_call_limits_leaves_the_administrator_served() {
    let mut s = owned_server(|_| {});
    // The watcher uses up its rate.
    let list = || McpRequest::modern("tools/list", json!({}));
    let mut n = 0;
    while send(&mut s, list(), WATCHER, 1, T0).status == 200 {
        n += 1;
        assert!(n <= 20, "the watcher's rate is bounded");
    }
    assert_eq!(n, 20);
    let mut r = send(&mut s, call("echo", json!({"text": "a"})), ADMIN, 9, T0);
    assert_eq!(text(&mut r, T0), "a");
    // The operator holds as many slow calls as it may, from as many connections as it likes:
    // its four.
    let mut held = Vec::new();
    for port in 2..20 {
        let mut r = send(
            &mut s,
            call("slow", json!({"steps": 1000})),
            OPERATOR,
            port,
            T0,
        );
        if matches!(r.body, Body::Stream(_)) {
            held.push(r);
        } else {
            assert!(text(&mut r, T0).starts_with("E_BUSY"), "port {port}");
        }
    }
    assert_eq!(held.len(), 4);
    let mut r = send(&mut s, call("slow", json!({"steps": 1})), ADMIN, 9, T0);
    assert!(!text(&mut r, T0).starts_with("E_BUSY"));
}

#[test]
fn a_quiet_client_is_served_while_a_sibling_of_its_token_floods() {
    let mut s = owned_server(|_| {});
    for second in 0..3u64 {
        let now = T0 + second * 1000;
        // The noisy client sends twice what the token may in a second...
        for _ in 0..40 {
            send(&mut s, call("echo", json!({"text": "n"})), WATCHER, 1, now);
        }
        // ...and a quiet one of the same token still gets its calls through.
        for k in 0..3 {
            let mut r = send(
                &mut s,
                call("echo", json!({"text": "q"})),
                WATCHER,
                2,
                now + k,
            );
            assert_eq!(text(&mut r, now), "q", "second {second}, call {k}");
        }
    }
}

#[test]
fn a_lesser_token_cannot_evict_the_administrators_sessions() {
    let mut s = owned_server(|l| l.max_sessions = 8);
    let mine: Vec<String> = (0..4)
        .map(|k| open_session(&mut s, ADMIN, 1, T0 + k))
        .collect();
    // The watcher opens sessions in a loop; it holds at most its half and evicts its own.
    for k in 0..40 {
        let r = send(
            &mut s,
            McpRequest::initialize("2025-11-25"),
            WATCHER,
            2,
            T0 + 10 + k,
        );
        assert!(matches!(r.status, 200 | 429 | 503), "{}", r.status);
    }
    assert!(s.sessions.len() <= 8);
    for (k, sid) in mine.iter().enumerate() {
        let r = send(
            &mut s,
            McpRequest::legacy(sid, "ping", json!({})),
            ADMIN,
            1,
            T0 + 100 + k as u64,
        );
        assert_eq!(r.status, 200, "the administrator's session {k}");
    }
    // The administrator may still open one more (the table's room above the watcher's).
    open_session(&mut s, ADMIN, 1, T0 + 200);
}

#[test]
fn connections_rank_by_their_tokens_role_and_narrowing_for_a_ports_last_slot() {
    let mut s = owned_server(|_| {});
    let mut rank_of = |secret: &str, narrowing: Option<&str>| {
        let mut req = McpRequest::modern("ping", json!({}))
            .header("Authorization", &format!("Bearer {secret}"));
        if let Some(n) = narrowing {
            req = req.header("Irix7-Policy", n);
        }
        let headers = req.headers();
        match s.admit(&headers, peer(1), None, T0) {
            Ok(crate::http::Admission::Authenticated(token)) => s.rank(&headers, token),
            Ok(other) => panic!("{secret} admitted as {other:?}"),
            Err(r) => panic!("{secret} refused: {}", r.status),
        }
    };
    let (watcher, operator) = (rank_of(WATCHER, None), rank_of(OPERATOR, None));
    let admin = rank_of(ADMIN, None);
    assert!(
        watcher < operator && operator < admin,
        "{watcher} {operator} {admin}"
    );
    assert_eq!(admin, crate::http::RANK_TOP);
    // A request narrowed by a gateway ranks as its narrowing leaves it (its connection ranks
    // as its last request), as its owner does.
    assert_eq!(rank_of(ADMIN, Some("observe")), watcher);
    assert_eq!(rank_of(ADMIN, Some("operate")), operator);
}

/// `req` with `secret` on a connection from `port` that carried `earlier` requests before,
/// admitted and answered as a connection hands it over.
fn on_connection(
    s: &mut McpServer<Ctx>,
    req: McpRequest,
    secret: &str,
    (port, earlier): (u16, u32),
    now: u64,
) -> Response {
    use crate::http::{Handler, Request};
    let built = req.header("Authorization", &format!("Bearer {secret}"));
    let mut req = Request {
        method: Method::Post,
        target: "/mcp".into(),
        headers: built.headers(),
        body: built.body(),
        earlier,
        ..Request::default()
    };
    req.admission = Handler::admit(s, &req, peer(port), None, now).ok();
    Handler::handle(s, &mut req, peer(port), now)
}

#[test]
fn one_request_connections_are_one_client_and_a_kept_connection_keeps_its_part() {
    let mut s = owned_server(|l| l.requests_per_second = 10);
    let list = || McpRequest::modern("tools/list", json!({}));
    // A client opening a connection a request: each first request counts to the token's
    // fresh connections together, so past the limit they are refused (not let through as
    // forty quiet clients up to twice the limit).
    let flood: Vec<u16> = (0..40)
        .map(|k| on_connection(&mut s, list(), ADMIN, (1000 + k, 0), T0).status)
        .collect();
    assert_eq!(
        flood.iter().filter(|&&st| st == 200).count(),
        10,
        "{flood:?}"
    );
    assert!(flood[10..].iter().all(|&st| st == 429), "{flood:?}");
    // A sibling that keeps its connection is a client of its own, below its part: served.
    for _ in 0..3 {
        assert_eq!(on_connection(&mut s, list(), ADMIN, (7, 5), T0).status, 200);
    }
    // A call turned away for the rate is a tool result, which tells the connection so (the
    // server lets such connections go first when slots run short).
    let echo = call("echo", json!({"text": "x"}));
    let r = on_connection(&mut s, echo, ADMIN, (2000, 0), T0);
    assert_eq!((r.status, r.turned_away), (200, true));
    let served = on_connection(
        &mut s,
        call("echo", json!({"text": "x"})),
        ADMIN,
        (7, 9),
        T0,
    );
    assert_eq!((served.status, served.turned_away), (200, false));
}
