//! Through the real HTTP connection: request bytes in, response bytes out.

use super::*;
use crate::http::{Connection, Handler, Request};

struct Router(McpServer<Ctx>);

impl Handler for Router {
    fn handle(&mut self, req: &mut Request, peer: Peer, now_ms: u64) -> Response {
        self.0.handle(req, peer, now_ms)
    }
}

/// A modern `tools/call` of `slow` with a progress token, as bytes on the wire.
fn slow_call(steps: u32) -> Vec<u8> {
    McpRequest::modern(
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": steps}}),
    )
    .id(3)
    .meta("progressToken", json!("pt"))
    .http("/mcp", "127.0.0.1", None)
}

/// Polls the connection and collects its output until `done` says so (bounded).
fn pump(conn: &mut Connection, router: &mut Router, done: impl Fn(&str) -> bool) -> String {
    let mut text = Vec::new();
    for now in 0..10_000u64 {
        conn.poll(T0 + now, router);
        let out = conn.pending_output().to_vec();
        conn.mark_sent(out.len(), T0 + now);
        text.extend_from_slice(&out);
        if done(&String::from_utf8_lossy(&text)) {
            break;
        }
    }
    String::from_utf8(text).unwrap()
}

#[test]
fn progress_stream_is_chunked_sse() {
    let mut router = Router(server());
    let mut conn = Connection::new(PEER, crate::http::Config::default(), T0);
    let req = slow_call(3);
    assert_eq!(conn.recv(&req, T0, &mut router), req.len());
    let text = pump(&mut conn, &mut router, |t| t.ends_with("0\r\n\r\n"));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("Transfer-Encoding: chunked"));
    assert!(text.contains("Content-Type: text/event-stream"));
    assert!(text.contains("X-Accel-Buffering: no"));
    assert_eq!(text.matches("notifications/progress").count(), 3);
    let (response, _) = host_http::parse(text.as_bytes(), false, false)
        .unwrap()
        .expect("a complete response");
    let (msgs, _, _) = sse_events(&response.body);
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[3]["result"]["content"][0]["text"], "slow done");
}

#[test]
fn peer_closing_mid_stream_cancels_the_tool() {
    let mut router = Router(server());
    let mut conn = Connection::new(PEER, crate::http::Config::default(), T0);
    let req = slow_call(1000);
    conn.recv(&req, T0, &mut router);
    let text = pump(&mut conn, &mut router, |t| {
        t.contains("notifications/progress")
    });
    assert!(text.contains("notifications/progress"));
    conn.peer_closed();
    conn.poll(T0 + 1, &mut router);
    assert_eq!(router.0.context().borrow().cancelled, 1);
    let steps = router.0.context().borrow().steps;
    assert!(steps < 1000, "stopped early, after {steps} steps");
}
