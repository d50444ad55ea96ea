//! How requests and answers follow each other on one connection: pipelining, input in any
//! pieces, keep-alive and `Connection: close`, HEAD, 204 and `100 Continue`.

use super::*;

#[test]
fn pipelined_requests_answered_in_order() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let input = b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /3 HTTP/1.1\r\nHost: x\r\n\r\n";
    let r = send(&mut c, &mut h, input, 1);
    assert_eq!(h.seen, ["/1", "/2", "/3"]);
    let bodies: Vec<String> = r.iter().map(|r| text(&r.body)).collect();
    assert_eq!(bodies, ["GET /1 ", "POST /2 abc", "GET /3 "]);
    assert!(r.iter().all(|r| r.header("connection").is_none()));
    assert!(!c.is_finished());
}

#[test]
fn byte_at_a_time_input() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let input = b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /y HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut out = Vec::new();
    for &b in input.iter() {
        assert_eq!(c.recv(&[b], 5, &mut h), 1);
        out.extend(drain(&mut c, &mut h, 5));
    }
    let r = replies(&out);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].body, b"POST /x abc");
    assert_eq!(r[1].body, b"GET /y ");
}

#[test]
fn http10_closes_unless_keep_alive() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let r = send(
        &mut c,
        &mut h,
        b"GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
        0,
    );
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].header("connection"), Some("close"));
    assert_eq!(h.seen, ["/a"]);
    assert!(c.is_finished());

    let (mut c, mut h) = (conn(), TestHandler::default());
    let r = send(
        &mut c,
        &mut h,
        b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        0,
    );
    assert_eq!(r[0].header("connection"), Some("keep-alive"));
    assert!(!c.is_finished());
}

#[test]
fn connection_close_honoured_and_later_requests_dropped() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let input = b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
    let r = send(&mut c, &mut h, input, 0);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].header("connection"), Some("close"));
    assert_eq!(h.seen, ["/a"]);
    assert!(c.is_finished());
    // Input after the close decision is taken and dropped.
    assert_eq!(c.recv(b"GET /c HTTP/1.1\r\n\r\n", 0, &mut h), 19);
    assert_eq!(h.seen.len(), 1);
}

#[test]
fn handler_can_ask_for_close() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let r = send(&mut c, &mut h, b"GET /bye HTTP/1.1\r\nHost: x\r\n\r\n", 0);
    assert_eq!(r[0].header("connection"), Some("close"));
    assert_eq!(
        r.iter()
            .filter(|r| r.header("connection").is_some())
            .count(),
        1
    );
    assert!(c.is_finished());
}

#[test]
fn head_gets_get_headers_without_body() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"HEAD /abc HTTP/1.1\r\nHost: x\r\n\r\nGET /z HTTP/1.1\r\nHost: x\r\n\r\n",
        0,
        &mut h,
    );
    let out = text(&drain(&mut c, &mut h, 0));
    let get_len = "HEAD /abc ".len();
    let want = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {get_len}\r\n\r\nHTTP/1.1 200 OK\r\n"
    );
    assert!(out.starts_with(&want), "{out}");
    assert!(out.ends_with("\r\n\r\nGET /z "));
}

#[test]
fn no_content_has_no_length() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /nocontent HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    assert_eq!(
        text(&drain(&mut c, &mut h, 0)),
        "HTTP/1.1 204 No Content\r\n\r\n"
    );
}

#[test]
fn peer_close_still_flushes_complete_answers() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /partial HTTP/1.1\r\n",
        0,
        &mut h,
    );
    c.peer_closed();
    assert!(!c.is_finished());
    let r = replies(&drain(&mut c, &mut h, 0));
    assert_eq!(r.len(), 1);
    assert!(c.is_finished());
}

#[test]
fn expect_continue_gets_interim_response() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"POST /p HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n",
        0,
        &mut h,
    );
    assert_eq!(c.pending_output(), CONTINUE);
    let out = drain(&mut c, &mut h, 0);
    assert_eq!(out, CONTINUE);
    let r = send(&mut c, &mut h, b"body", 0);
    assert_eq!(r[0].body, b"POST /p body");
}

#[test]
fn continue_waits_for_earlier_responses() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![None]));
    let input = b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\nPOST /p HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    c.recv(input, 0, &mut h);
    let first = drain(&mut c, &mut h, 0);
    assert!(!text(&first).contains("100 Continue"));
    h.release(0);
    let second = drain(&mut c, &mut h, 0);
    assert!(
        text(&second).ends_with("0\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"),
        "{}",
        text(&second)
    );
    let r = send(&mut c, &mut h, b"ok", 0);
    assert_eq!(r[0].body, b"POST /p ok");
}
