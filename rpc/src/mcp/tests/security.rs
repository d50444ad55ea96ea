//! Bearer token and Origin checks.

use super::*;

#[test]
fn bearer_token_is_required_and_never_echoed() {
    let mut c = config();
    c.token = Some("hunter2-token".into());
    let mut s = server_with(c);
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic hunter2-token"),
        Some("Bearer hunter2-token2"),
    ] {
        let mut h = vec![
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "server/discover"),
        ];
        if let Some(a) = auth {
            h.push(("Authorization", a));
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}).to_string();
        let mut r = post(&mut s, &h, &body, T0);
        assert_eq!(r.status, 401, "{auth:?}");
        assert_eq!(header(&r, "WWW-Authenticate"), Some("Bearer"));
        let text = String::from_utf8(body_bytes(&mut r, T0)).unwrap();
        assert!(!text.contains("hunter2"));
        for (_, v) in r.headers.iter() {
            assert!(!v.contains("hunter2"));
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}).to_string();
    let h = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "server/discover"),
        ("Authorization", "Bearer hunter2-token"),
    ];
    let mut r = post(&mut s, &h, &body, T0);
    assert_eq!(r.status, 200);
    assert!(
        !String::from_utf8(body_bytes(&mut r, T0))
            .unwrap()
            .contains("hunter2")
    );
    assert!(!format!("{:?}", config_with_token()).contains("hunter2"));
    // GET and DELETE need the token too.
    assert_eq!(
        s.handle_parts(
            &Method::Delete,
            &headers(&[("Mcp-Session-Id", "x")]),
            b"",
            PEER,
            T0
        )
        .status,
        401
    );
}

fn config_with_token() -> Config {
    let mut c = config();
    c.token = Some("hunter2-token".into());
    c
}

#[test]
fn origin_is_checked() {
    let mut c = config();
    c.own_ip = Some([10, 0, 2, 15]);
    let mut s = server_with(c);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}).to_string();
    let mut run = |origin: Option<&str>| {
        let mut h = vec![
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "server/discover"),
            ("Host", "evil.example.com"),
        ];
        if let Some(o) = origin {
            h.push(("Origin", o));
        }
        post(&mut s, &h, &body, T0).status
    };
    assert_eq!(run(Some("http://evil.example.com")), 403);
    assert_eq!(run(Some("http://10.0.2.16:7801")), 403);
    assert_eq!(run(Some("http://localhost:6274")), 200);
    assert_eq!(run(Some("http://10.0.2.15:7801")), 200);
    // Without an Origin the Host is judged instead: a rebinding name is refused.
    assert_eq!(run(None), 403);
}

#[test]
fn host_is_checked_without_an_origin() {
    let mut c = config();
    c.hosts = vec!["indy".into()];
    let mut s = server_with(c);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}).to_string();
    let mut run = |host: &str| {
        let h = [
            ("MCP-Protocol-Version", MODERN_VERSION),
            ("Mcp-Method", "server/discover"),
            ("Host", host),
        ];
        let mut r = post(&mut s, &h, &body, T0);
        (r.status, String::from_utf8(body_bytes(&mut r, T0)).unwrap())
    };
    let (status, text) = run("rebind.evil.example:7801");
    assert_eq!(status, 403);
    assert!(text.contains("Host not allowed"), "{text}");
    for ok in ["localhost:7801", "127.0.0.1:40000", "indy", "[::1]:7801"] {
        assert_eq!(run(ok).0, 200, "{ok}");
    }
    // The own address is learnt late (DHCP): before it, its literal is refused; after, it passes.
    assert_eq!(run("10.0.2.15:7801").0, 403);
    s.set_own_ip(Some([10, 0, 2, 15]));
    let h = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "server/discover"),
        ("Host", "10.0.2.15:7801"),
    ];
    assert_eq!(post(&mut s, &h, &body, T0).status, 200);
    // admit judges the head the same way, before any token check.
    let foreign = headers(&[("Host", "rebind.evil.example")]);
    assert_eq!(s.admit(&foreign, PEER, None, T0).unwrap_err().status, 403);
}

#[test]
fn failed_authentications_are_throttled_per_client_before_the_token_is_checked() {
    use crate::http::Admission;
    let mut c = config();
    c.token = Some("a-token-long-enough".into());
    c.limits.auth_failures_per_second = 3;
    let mut s = server_with(c);
    let peer = |last| Peer {
        addr: [10, 0, 0, last],
        port: 1,
    };
    let wrong = headers(&[("Authorization", "Bearer guess")]);
    let right = headers(&[("Authorization", "Bearer a-token-long-enough")]);
    for _ in 0..3 {
        assert_eq!(s.admit(&wrong, peer(1), None, T0).unwrap_err().status, 401);
    }
    // The fourth guess in the same second is not even looked at, nor is the right token.
    let r = s.admit(&wrong, peer(1), None, T0 + 10).unwrap_err();
    assert_eq!((r.status, header(&r, "Retry-After")), (401, Some("1")));
    let r = s.admit(&right, peer(1), None, T0 + 20).unwrap_err();
    assert_eq!((r.status, header(&r, "Retry-After")), (401, Some("1")));
    // A connection that already proved the token is not throttled by the guessers beside it
    // (a NAT, a tunnel) for requests bearing that token; its other requests are, so it is
    // no door for guessing other tokens.
    assert_eq!(
        s.admit(&right, peer(1), Some(0), T0 + 20).ok(),
        Some(Admission::Authenticated(0))
    );
    let r = s.admit(&wrong, peer(1), Some(0), T0 + 20).unwrap_err();
    assert_eq!((r.status, header(&r, "Retry-After")), (401, Some("1")));
    // The Origin check still comes first.
    let foreign = headers(&[
        ("Origin", "http://evil.example"),
        ("Authorization", "Bearer guess"),
    ]);
    assert_eq!(
        s.admit(&foreign, peer(1), None, T0 + 30)
            .unwrap_err()
            .status,
        403
    );
    // Another client is not affected; a second later the first may try again.
    assert_eq!(
        s.admit(&right, peer(2), None, T0 + 20).ok(),
        Some(Admission::Authenticated(0))
    );
    assert_eq!(
        s.admit(&right, peer(1), None, T0 + 1000).ok(),
        Some(Admission::Authenticated(0))
    );
}

#[test]
fn without_a_token_nothing_is_authenticated() {
    use crate::http::Admission;
    let mut s = server_with(config());
    assert!(!s.token_required());
    let h = headers(&[("Authorization", "Bearer anything")]);
    assert_eq!(s.admit(&h, PEER, None, T0).ok(), Some(Admission::Anonymous));
    assert_eq!(
        s.admit(&h, PEER, Some(0), T0).ok(),
        Some(Admission::Anonymous)
    );
}

#[test]
fn a_request_not_admitted_is_judged_by_handle_and_an_admitted_one_answered() {
    use crate::http::{Admission, Handler, Request};
    let mut s = server_with(config_with_token());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}).to_string();
    let fields = [
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "server/discover"),
        ("Content-Type", "application/json"),
    ];
    let req = |auth: &str| {
        let mut h = fields.to_vec();
        h.push(("Authorization", auth));
        Request {
            method: Method::Post,
            target: "/mcp".into(),
            headers: headers(&h),
            body: body.clone().into_bytes(),
            admission: None,
            answer: Vec::new(),
            earlier: 0,
        }
    };
    // Built by hand, without `admit`: the token is checked here.
    assert_eq!(s.handle(&mut req("Bearer wrong"), PEER, T0).status, 401);
    let head = req("Bearer hunter2-token");
    let admission = Handler::admit(&mut s, &head, PEER, None, T0).ok();
    assert_eq!(admission, Some(Admission::Authenticated(0)));
    let mut admitted = Request { admission, ..head };
    assert_eq!(s.handle(&mut admitted, PEER, T0).status, 200);
}

/// One connection carries requests of two tokens in turn (a gateway in front of two users, or
/// one client that changes its token): each request is judged by its own token alone. The
/// request's authority is a value passed down with it, never left on the server for the next.
#[test]
fn two_requests_of_different_roles_on_one_connection_each_see_only_their_own_authority() {
    use crate::http::{Handler, Request};
    const ADMIN: &str = "admin-secret-long-enough";
    const WATCHER: &str = "watcher-secret-long-enough";
    let mut c = config();
    c.limits.page_size = 100;
    c.token = Some(ADMIN.into());
    c.tokens =
        crate::mcp::guard::authority::parse_tokens(&format!("watcher:observe:{WATCHER}"), |_| {
            Ok(())
        })
        .unwrap();
    let mut s = server_with(c);
    // The connection's answer buffer, handed from one request to the next as a connection
    // hands it (`Request::answer`).
    let mut answer = Vec::new();
    let mut ask = |s: &mut McpServer<Ctx>, secret: &str, method: &str, params: Value| {
        let built = McpRequest::modern(method, params)
            .header("Authorization", &format!("Bearer {secret}"))
            .header("Content-Type", "application/json");
        let mut req = Request {
            method: Method::Post,
            target: "/mcp".into(),
            headers: built.headers(),
            body: built.body(),
            admission: None,
            answer: core::mem::take(&mut answer),
            earlier: 1,
        };
        req.admission = Handler::admit(s, &req, PEER, Some(0), T0).ok();
        assert!(req.admission.is_some(), "admitted");
        let mut r = s.handle(&mut req, PEER, T0);
        answer = core::mem::take(&mut req.answer);
        body_json(&mut r, T0)
    };
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .expect("a listing")
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let all: Vec<String> = TOOLS.iter().map(|t| t.name.to_string()).collect();
    let read_only: Vec<String> = TOOLS
        .iter()
        .filter(|t| t.annotations.read_only)
        .map(|t| t.name.to_string())
        .collect();
    assert_ne!(all, read_only);
    // In turn, each sees its own listing, whoever came before it.
    for (secret, want) in [
        (ADMIN, &all),
        (WATCHER, &read_only),
        (WATCHER, &read_only),
        (ADMIN, &all),
        (WATCHER, &read_only),
    ] {
        let v = ask(&mut s, secret, "tools/list", json!({}));
        assert_eq!(&names(&v), want, "{secret}");
    }
    // A destructive tool: refused to the watcher right after the administrator ran it, and
    // run for the administrator right after the watcher was refused.
    let call = json!({"name": "fail", "arguments": {}});
    for (secret, refused) in [(ADMIN, false), (WATCHER, true), (ADMIN, false)] {
        let v = ask(&mut s, secret, "tools/call", call.clone());
        let text = v["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert_eq!(text.starts_with("E_PERM"), refused, "{secret}: {v}");
    }
}
