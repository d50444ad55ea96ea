//! Legacy MCP sessions on the real image: a session unused for 30 minutes of rig time is gone
//! (404), a request without a session id is refused (400) — the rig clock jumps instead of the
//! test waiting.

mod support;

use host_http::Response;
use support::guest::{TOKEN, boot_guest};
use support::http::request;

fn post(addr: std::net::SocketAddr, session: Option<&str>, body: &str) -> Response {
    let sid =
        session.map(|s| format!("Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
    request(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n{body}",
            sid.unwrap_or_default(),
            body.len()
        ),
    )
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;

#[test]
fn sessions_expire_after_thirty_idle_minutes_and_need_their_id() {
    let Some(g) = boot_guest(&[]) else { return };
    let init = post(g.mcp, None, INIT);
    assert_eq!(init.status, 200);
    assert!(
        init.text().contains(r#""protocolVersion":"2025-11-25""#),
        "{}",
        init.text()
    );
    let sid = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));

    let initialized = post(
        g.mcp,
        Some(&sid),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202);
    assert!(initialized.body.is_empty());
    assert_eq!(post(g.mcp, Some(&sid), PING).status, 200);

    // No session id on a legacy request: 400.
    let missing = request(
        g.mcp,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
             Content-Length: {}\r\n\r\n{PING}",
            PING.len()
        ),
    );
    assert_eq!(missing.status, 400);

    // 29 idle minutes: still there. Past 30: gone.
    g.rig.advance_clock(29 * 60_000);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(post(g.mcp, Some(&sid), PING).status, 200);
    g.rig.advance_clock(31 * 60_000);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(post(g.mcp, Some(&sid), PING).status, 404);
    g.rig.stop().unwrap();
}
