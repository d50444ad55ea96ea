extern crate std;
use super::*;
use crate::http::message::{Body, BodyPoll, BodySource, Headers, Request, Shared, Splice};
use crate::http::response::CONTINUE;
use alloc::collections::VecDeque;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use core::cell::RefCell;
use std::format;
use std::vec;

const PEER: Peer = Peer {
    addr: [10, 0, 2, 2],
    port: 40000,
};

#[derive(Default)]
struct Log {
    /// Wait steps the test has let pass so far.
    releases: usize,
    waits_passed: usize,
    polls: usize,
    max_seen: usize,
    cancelled: bool,
    ended: bool,
}

/// A scripted body: `Some(bytes)` yields data, `None` is Pending until the test releases
/// it; the end of the script is End.
struct Script {
    steps: VecDeque<Option<Vec<u8>>>,
    log: Rc<RefCell<Log>>,
}

impl BodySource for Script {
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, _now: u64) -> BodyPoll {
        let mut log = self.log.borrow_mut();
        log.polls += 1;
        log.max_seen = log.max_seen.max(max);
        if matches!(self.steps.front(), Some(None)) && log.releases > log.waits_passed {
            log.waits_passed += 1;
            self.steps.pop_front();
        }
        match self.steps.front().cloned() {
            Some(Some(mut data)) => {
                self.steps.pop_front();
                if data.len() > max {
                    let rest = data.split_off(max);
                    self.steps.push_front(Some(rest));
                }
                out.extend_from_slice(&data);
                BodyPoll::Data
            }
            Some(None) => BodyPoll::Pending,
            None => {
                log.ended = true;
                BodyPoll::End
            }
        }
    }
    fn cancel(&mut self) {
        self.log.borrow_mut().cancelled = true;
    }
}

/// Answers `/stream` with the next queued script, `/nocontent` with 204, `/bye` with a
/// handler-requested close, everything else with "METHOD target body".
#[derive(Default)]
struct TestHandler {
    seen: Vec<String>,
    scripts: VecDeque<Vec<Option<Vec<u8>>>>,
    logs: Vec<Rc<RefCell<Log>>>,
}

impl TestHandler {
    fn with_script(steps: Vec<Option<Vec<u8>>>) -> Self {
        let mut h = TestHandler::default();
        h.scripts.push_back(steps);
        h
    }
    fn log(&self, i: usize) -> std::cell::Ref<'_, Log> {
        self.logs[i].borrow()
    }
    fn release(&self, i: usize) {
        self.logs[i].borrow_mut().releases += 1;
    }
}

impl Handler for TestHandler {
    fn handle(&mut self, req: &mut Request, peer: Peer, _now: u64) -> Response {
        assert_eq!(peer, PEER);
        self.seen.push(req.target.clone());
        match req.path() {
            "/stream" => {
                let log = Rc::new(RefCell::new(Log::default()));
                self.logs.push(log.clone());
                let steps = self.scripts.pop_front().unwrap_or_default().into();
                let mut headers = Headers::default();
                headers.push("Content-Type", "text/event-stream");
                Response {
                    status: 200,
                    headers,
                    body: Body::Stream(Box::new(Script { steps, log })),
                }
            }
            "/nocontent" => Response::empty(204),
            "/bye" => {
                let mut r = Response::full(200, "text/plain", "bye");
                r.headers.push("Connection", "close");
                r
            }
            "/big" => Response::full(200, "application/octet-stream", vec![b'b'; 50_000]),
            "/spliced" => {
                let shared = Rc::new(b"0123456789".repeat(300));
                let splice = Splice {
                    at: 2,
                    shared: Shared::Kept(shared),
                    range: 5..2005,
                    packed: None,
                };
                Response {
                    status: 200,
                    headers: Headers::default(),
                    body: Body::Spliced(b"[<>]".to_vec(), splice),
                }
            }
            // The answer written into the room the connection lends.
            "/room" => {
                let mut page = mem::take(&mut req.answer);
                assert!(page.is_empty());
                let at = page.as_ptr() as usize;
                page.extend_from_slice(format!("room {}", page.capacity()).as_bytes());
                self.seen.push(format!("{at}"));
                Response::full(200, "text/plain", page)
            }
            _ => {
                let text = format!(
                    "{} {} {}",
                    req.method.as_str(),
                    req.target,
                    String::from_utf8_lossy(&req.body)
                );
                Response::full(200, "text/plain", text)
            }
        }
    }
}

fn conn() -> Connection {
    Connection::new(PEER, Config::default(), 0)
}

/// A connection that no anonymous lifetime ends: for the idle and stream rules alone.
fn lasting_conn() -> Connection {
    let config = Config {
        anonymous_lifetime_ms: u64::MAX,
        ..Config::default()
    };
    Connection::new(PEER, config, 0)
}

/// After an error the connection waits for the client to finish sending (lingering
/// close), and ends when it closes its side.
fn assert_lingers(c: &mut Connection) {
    assert!(
        !c.is_finished(),
        "an error is followed by a lingering close"
    );
    c.peer_closed();
    assert!(c.is_finished());
}

/// Polls and takes all output, as a socket that accepts everything would.
fn drain(c: &mut Connection, h: &mut dyn Handler, now: u64) -> Vec<u8> {
    let mut all = Vec::new();
    loop {
        c.poll(now, h);
        let out = c.pending_output().to_vec();
        if out.is_empty() {
            return all;
        }
        c.mark_sent(out.len(), now);
        all.extend_from_slice(&out);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_spliced_body_is_sent_from_its_pieces_in_any_sizes() {
    let want: Vec<u8> = [&b"[<"[..], &b"0123456789".repeat(300)[5..2005], b">]"].concat();
    for piece in [1, 7, 1460, 5000] {
        let mut c = conn();
        let mut h = TestHandler::default();
        c.recv(b"GET /spliced HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
        let mut all = Vec::new();
        loop {
            c.poll(0, &mut h);
            let out = c.pending_output();
            let n = out.len().min(piece);
            if n == 0 {
                break;
            }
            all.extend_from_slice(&out[..n]);
            c.mark_sent(n, 0);
        }
        let r = replies(&all);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].header("content-length"), Some("2004"));
        assert_eq!(r[0].body, want, "pieces of {piece}");
        assert!(!c.is_finished());
    }
}

#[test]
fn a_sent_answer_s_room_is_lent_to_the_next_request_unless_it_is_big() {
    let mut c = conn();
    let mut h = TestHandler::default();
    let get = |c: &mut Connection, h: &mut TestHandler, path: &str| {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        c.recv(req.as_bytes(), 0, h);
        replies(&drain(c, h, 0)).remove(0).body
    };
    assert_eq!(get(&mut c, &mut h, "/room"), b"room 0", "no room yet");
    // The room of the first answer is the second's, and the third's.
    assert_ne!(get(&mut c, &mut h, "/room"), b"room 0");
    let second = h.seen.last().cloned();
    get(&mut c, &mut h, "/room");
    assert_eq!(h.seen.last().cloned(), second, "the same buffer");
    // A big answer in between is not kept: the room the small one left is.
    assert_eq!(get(&mut c, &mut h, "/big").len(), 50_000);
    assert!(c.output.kept_answer() <= KEPT_ANSWER);
    get(&mut c, &mut h, "/room");
    assert_eq!(h.seen.last().cloned(), second);
}

/// A parsed response as a client would see it.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Splits a byte stream into responses (none of them to HEAD), checking the framing.
fn replies(mut b: &[u8]) -> Vec<Reply> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let end = b
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("head end")
            + 4;
        let head = text(&b[..end]);
        b = &b[end..];
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
        let status: u16 = status_line[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(": ").unwrap();
                (n.to_string(), v.to_string())
            })
            .collect();
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        if status == 100 {
            out.push(reply);
            continue;
        }
        if let Some(cl) = reply.header("content-length") {
            let n: usize = cl.parse().unwrap();
            reply.body = b[..n].to_vec();
            b = &b[n..];
        } else if reply.header("transfer-encoding") == Some("chunked") {
            loop {
                let le = b.windows(2).position(|w| w == b"\r\n").unwrap();
                let n = usize::from_str_radix(&text(&b[..le]), 16).unwrap();
                b = &b[le + 2..];
                if n == 0 {
                    assert_eq!(&b[..2], b"\r\n");
                    b = &b[2..];
                    break;
                }
                reply.body.extend_from_slice(&b[..n]);
                assert_eq!(&b[n..n + 2], b"\r\n");
                b = &b[n + 2..];
            }
        } else if status != 204 && status != 304 {
            reply.body = b.to_vec();
            b = &[];
        }
        out.push(reply);
    }
    out
}

fn send(c: &mut Connection, h: &mut TestHandler, bytes: &[u8], now: u64) -> Vec<Reply> {
    assert_eq!(c.recv(bytes, now, h), bytes.len());
    replies(&drain(c, h, now))
}

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
fn head_of_stream_cancels_source() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(b"data".to_vec())]),
    );
    c.recv(b"HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let out = text(&drain(&mut c, &mut h, 0));
    assert!(out.ends_with("Transfer-Encoding: chunked\r\n\r\n"), "{out}");
    assert!(h.log(0).cancelled);
    assert_eq!(h.log(0).polls, 0);
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
fn streamed_body_is_chunked_and_later_requests_wait() {
    let steps = vec![
        Some(b"event: a\n\n".to_vec()),
        None,
        Some(b"event: b\n\n".to_vec()),
    ];
    let (mut c, mut h) = (conn(), TestHandler::with_script(steps));
    let input = b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_eq!(c.recv(input, 0, &mut h), input.len());
    let first = text(&drain(&mut c, &mut h, 0));
    assert!(first.contains(
        "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\na\r\nevent: a\n\n\r\n"
    ));
    // The pending step held the stream open: /after is not handled yet.
    assert_eq!(h.seen, ["/stream"]);
    assert_eq!(drain(&mut c, &mut h, 1), b"");
    assert_eq!(h.seen, ["/stream"]);
    h.release(0);
    let rest = drain(&mut c, &mut h, 1);
    assert_eq!(h.seen, ["/stream", "/after"]);
    let mut all = first.into_bytes();
    all.extend_from_slice(&rest);
    let r = replies(&all);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].body, b"event: a\n\nevent: b\n\n");
    assert_eq!(r[1].body, b"GET /after ");
    assert!(h.log(0).ended && !h.log(0).cancelled);
}

#[test]
fn stream_backpressure_bounds_output() {
    let total = 200_000;
    let steps = vec![Some(vec![b's'; total])];
    let (mut c, mut h) = (conn(), TestHandler::with_script(steps));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let cap = Config::default().output_buffer;
    let mut all = Vec::new();
    for _ in 0..10_000 {
        c.poll(0, &mut h);
        let pending = c.pending_output().len();
        assert!(pending <= cap + 200, "{pending} bytes buffered");
        if pending == 0 {
            break;
        }
        // A slow socket: 1000 bytes per round.
        let n = pending.min(1000);
        all.extend_from_slice(&c.pending_output()[..n]);
        c.mark_sent(n, 0);
    }
    assert!(h.log(0).max_seen <= cap);
    let r = replies(&all);
    assert_eq!(r[0].body.len(), total);
    assert!(h.log(0).ended);
}

#[test]
fn full_body_larger_than_buffer_is_sent_in_pieces() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n",
        0,
        &mut h,
    );
    assert!(c.pending_output().len() <= Config::default().output_buffer + 200);
    // /next waits until /big is fully in the buffer.
    assert_eq!(h.seen, ["/big"]);
    let r = replies(&drain(&mut c, &mut h, 0));
    assert_eq!(r[0].body, vec![b'b'; 50_000]);
    assert_eq!(r[1].body, b"GET /next ");
}

#[test]
fn full_body_is_handed_out_from_its_own_buffer() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n",
        0,
        &mut h,
    );
    // First the head alone, then the whole body at once (no copy through the 16 KiB
    // output buffer), taken here in uneven pieces.
    let head = c.pending_output().to_vec();
    assert!(text(&head).ends_with("\r\n\r\n"), "{}", text(&head));
    c.mark_sent(head.len(), 0);
    c.poll(0, &mut h);
    assert_eq!(c.pending_output().len(), 50_000);
    let mut body = Vec::new();
    for piece in [1, 4095, 30_000] {
        body.extend_from_slice(&c.pending_output()[..piece]);
        c.mark_sent(piece, 1);
        c.poll(1, &mut h);
        assert_eq!(h.seen, ["/big"], "/next waits until the body is sent");
    }
    // A peer that stops reading mid-body is aborted after the idle timeout.
    let idle = Config::default().idle_timeout_ms;
    c.poll(1 + idle - 1, &mut h);
    assert!(!c.is_finished());
    body.extend_from_slice(c.pending_output());
    c.mark_sent(usize::MAX, 2);
    assert_eq!(body, vec![b'b'; 50_000]);
    let r = replies(&drain(&mut c, &mut h, 2));
    assert_eq!(h.seen, ["/big", "/next"]);
    assert_eq!(r[0].body, b"GET /next ");

    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let n = c.pending_output().len();
    c.mark_sent(n, 0);
    c.mark_sent(100, idle / 2);
    c.poll(idle, &mut h);
    assert!(!c.is_finished(), "the peer took bytes within the timeout");
    c.poll(idle / 2 + idle, &mut h);
    assert!(c.is_finished(), "a peer that stopped reading is aborted");
}

#[test]
fn a_peer_reading_a_few_bytes_every_few_seconds_is_given_up_on() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    // 100 bytes every 10 s: each read would reset a stall timer, but what the peer takes
    // buys it only 100 ms at the minimum rate.
    let mut t = 0;
    while !c.is_finished() {
        t += 10_000;
        c.poll(t, &mut h);
        c.mark_sent(100, t);
        assert!(t < 100_000, "never given up on");
    }
    assert!(c.is_aborted());
    let idle = Config::default().idle_timeout_ms;
    // The wait is first seen at the first poll (10 s), and judged at each poll after.
    assert!(t <= idle + 20_000, "given up on at {t} ms");
    // One that takes the answer at the minimum rate, however long that takes, gets it all.
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let rate = Config::default().min_send_rate;
    let mut got = 0;
    let mut t = 0;
    while !c.pending_output().is_empty() {
        t += 2_000;
        c.poll(t, &mut h);
        let n = c.pending_output().len().min(2 * rate);
        got += n;
        c.mark_sent(n, t);
    }
    assert!(!c.is_finished(), "at {t} ms");
    assert!(got > 50_000 && t > idle, "{got} bytes in {t} ms");
}

#[test]
fn input_held_while_streaming_is_bounded() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![None]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    let flood = vec![b'x'; 100_000];
    let took = c.recv(&flood, 0, &mut h);
    assert_eq!(took, Config::default().input_buffer);
    assert_eq!(c.recv(&flood, 0, &mut h), 0);
}

#[test]
fn cancel_on_peer_close_mid_stream() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(b"x".to_vec()), None]),
    );
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drain(&mut c, &mut h, 0);
    assert!(!h.log(0).cancelled);
    c.peer_closed();
    assert!(h.log(0).cancelled);
    assert!(c.is_finished());
}

#[test]
fn cancel_on_drop_and_abort_mid_stream() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![None]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drop(c);
    assert!(h.log(0).cancelled);

    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![None]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.abort();
    assert!(h.log(0).cancelled && c.is_finished());
    assert!(c.pending_output().is_empty());
}

#[test]
fn finished_stream_not_cancelled_on_drop() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![Some(b"x".to_vec())]));
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drain(&mut c, &mut h, 0);
    drop(c);
    assert!(h.log(0).ended && !h.log(0).cancelled);
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
fn http10_stream_is_delimited_by_close() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(b"abc".to_vec())]),
    );
    c.recv(b"GET /stream HTTP/1.0\r\n\r\n", 0, &mut h);
    let out = text(&drain(&mut c, &mut h, 0));
    assert!(
        out.ends_with("Content-Type: text/event-stream\r\nConnection: close\r\n\r\nabc"),
        "{out}"
    );
    assert!(c.is_finished());
}

#[test]
fn idle_timeout_closes_silently() {
    // A client that never sends anything has 10 s.
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.poll(9_999, &mut h);
    assert!(!c.is_finished());
    c.poll(10_000, &mut h);
    assert!(c.is_finished());
    assert!(c.pending_output().is_empty());

    // Activity restarts the clock.
    let (mut c, mut h) = (lasting_conn(), TestHandler::default());
    send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 20_000);
    c.poll(49_999, &mut h);
    assert!(!c.is_finished());
    c.poll(50_000, &mut h);
    assert!(c.is_finished());
}

#[test]
fn an_anonymous_connection_ends_at_its_lifetime_however_busy() {
    // A status page polled every 500 ms on one keep-alive connection: answered and kept
    // until 30 s after it opened; the answer past that closes it.
    let (mut c, mut h) = (conn(), TestHandler::default());
    let mut now = 0;
    while now < 30_000 {
        let r = send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", now);
        assert_eq!(
            (r[0].status, r[0].header("connection")),
            (200, None),
            "{now}"
        );
        assert!(!c.is_finished());
        now += 500;
    }
    let r = send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", now);
    assert_eq!(
        (r[0].status, r[0].header("connection")),
        (200, Some("close"))
    );
    assert!(c.is_finished());
    // One idle at its lifetime closes without a word.
    let (mut c, mut h) = (conn(), TestHandler::default());
    send(&mut c, &mut h, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 29_000);
    c.poll(29_999, &mut h);
    assert!(!c.is_finished());
    c.poll(30_000, &mut h);
    assert!(c.is_finished() && c.pending_output().is_empty());
}

#[test]
fn a_request_below_the_minimum_rate_is_behind_and_one_being_answered_is_owed() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    assert!(!c.receiving_behind(1_000));
    assert_eq!(c.owing_nothing_since(), Some(0));
    let head = b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 8192\r\n\r\n";
    c.recv(head, 1_000, &mut h);
    assert_eq!(
        c.owing_nothing_since(),
        Some(1_000),
        "since the request began"
    );
    // At 8 KiB/s the head is on schedule for as long as its bytes last, then behind.
    let on_time = head.len() as u64 * 1000 / 8192;
    assert!(!c.receiving_behind(1_000 + on_time));
    assert!(c.receiving_behind(1_000 + on_time + 1));
    // Half the body 400 ms in is ahead of the rate again.
    c.recv(&[b'z'; 4096], 1_400, &mut h);
    assert!(!c.receiving_behind(1_400));
    // The whole request: nothing is being received, and the answer is owed.
    c.recv(&[b'z'; 4096], 1_500, &mut h);
    assert!(!c.receiving_behind(60_000));
    assert_eq!(c.owing_nothing_since(), None);
    drain(&mut c, &mut h, 1_500);
    assert_eq!(c.owing_nothing_since(), Some(1_500));
}

#[test]
fn half_sent_request_gets_408() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET / HTTP/1.1\r\nHo", 1_000, &mut h);
    // Trickling bytes does not extend the deadline.
    c.recv(b"s", 20_000, &mut h);
    c.poll(30_999, &mut h);
    assert!(c.pending_output().is_empty());
    c.poll(31_000, &mut h);
    let r = replies(&drain(&mut c, &mut h, 31_000));
    assert_eq!(r[0].status, 408);
    assert_eq!(r[0].header("connection"), Some("close"));
    assert_lingers(&mut c);
    assert!(h.seen.is_empty());
}

#[test]
fn a_trickled_body_is_cut_off_at_its_deadline() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(
        b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n",
        0,
        &mut h,
    );
    // One byte every 10 s: each byte keeps the body moving, but the deadline (30 s plus
    // 4 bytes at the minimum rate, from the head) is not moved by them.
    for (i, b) in b"abc".iter().enumerate() {
        let now = 10_000 * (i as u64 + 1);
        c.poll(now - 1, &mut h);
        assert!(c.pending_output().is_empty());
        c.recv(&[*b], now, &mut h);
    }
    c.poll(30_000, &mut h);
    let r = replies(&drain(&mut c, &mut h, 30_000));
    assert_eq!(r[0].status, 408);
    assert!(h.seen.is_empty());
    assert_lingers(&mut c);
}

#[test]
fn a_big_body_gets_time_by_its_length() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    // 80 KiB at the minimum 8 KiB/s: 10 s beyond the 30 s head allowance.
    c.recv(
        b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 81920\r\n\r\n",
        0,
        &mut h,
    );
    let piece = vec![b'z'; 2048];
    for i in 0..39u64 {
        assert_eq!(c.recv(&piece, i * 1000, &mut h), 2048);
        c.poll(i * 1000, &mut h);
        assert!(c.pending_output().is_empty());
    }
    c.recv(&piece, 39_000, &mut h);
    let r = replies(&drain(&mut c, &mut h, 39_000));
    assert_eq!(r[0].status, 200, "{}", text(&r[0].body));
    assert_eq!(h.seen, ["/up"]);
}

#[test]
fn an_early_error_lingers_so_a_client_sending_its_body_reads_it() {
    let config = Config {
        linger_bytes: 10_000,
        ..Config::default()
    };
    let (mut c, mut h) = (Connection::new(PEER, config, 0), TestHandler::default());
    let r = send(
        &mut c,
        &mut h,
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n",
        0,
    );
    assert_eq!(r[0].status, 413);
    // The body the client goes on sending is read and dropped, within the bound.
    for _ in 0..9 {
        assert_eq!(c.recv(&[0; 1000], 1, &mut h), 1000);
        assert!(!c.is_finished());
    }
    // Past the byte bound: reset.
    c.recv(&[0; 1001], 2, &mut h);
    assert!(c.is_finished() && c.is_aborted());
    assert!(c.pending_output().is_empty());
    // Past the time bound: reset too.
    let (mut c, mut h) = (conn(), TestHandler::default());
    send(&mut c, &mut h, b"BROKEN\r\n\r\n", 0);
    c.poll(14_999, &mut h);
    assert!(!c.is_finished());
    c.poll(15_000, &mut h);
    assert!(c.is_finished() && c.is_aborted());
}

#[test]
fn a_refused_head_without_a_body_keeps_the_connection() {
    struct NoSuchPath;
    impl Handler for NoSuchPath {
        fn admit(
            &mut self,
            head: &Request,
            _: Peer,
            _: Option<u8>,
            _: u64,
        ) -> Result<Admission, Response> {
            match head.path() {
                "/there" => Ok(Admission::Anonymous),
                _ => Err(Response::full(404, "text/plain", "no")),
            }
        }
        fn handle(&mut self, req: &mut Request, _: Peer, _: u64) -> Response {
            Response::full(200, "text/plain", req.target.clone())
        }
    }
    let mut c = conn();
    let mut h = NoSuchPath;
    c.recv(
        b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\nGET /there HTTP/1.1\r\nHost: x\r\n\r\n",
        0,
        &mut h,
    );
    let r = replies(&drain(&mut c, &mut h, 0));
    assert_eq!(r.iter().map(|r| r.status).collect::<Vec<_>>(), [404, 200]);
    assert_eq!(r[0].header("connection"), None);
    assert!(!c.is_finished());
}

#[test]
fn a_connection_that_keeps_failing_the_token_check_is_closed() {
    /// Admits the token `ok` as token 3; remembers which token the connection said it proved.
    struct Guard(Vec<Option<u8>>);
    impl Handler for Guard {
        fn admit(
            &mut self,
            head: &Request,
            _: Peer,
            proven: Option<u8>,
            _: u64,
        ) -> Result<Admission, Response> {
            self.0.push(proven);
            match head.headers.get("Authorization") {
                Some("Bearer ok") => Ok(Admission::Authenticated(3)),
                _ => Err(Response::full(401, "text/plain", "who are you")),
            }
        }
        fn handle(&mut self, _: &mut Request, _: Peer, _: u64) -> Response {
            Response::full(200, "text/plain", "hi")
        }
    }
    let (good, bad) = (
        "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ok\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer guess\r\n\r\n",
    );
    let mut c = conn();
    let mut g = Guard(Vec::new());
    // A failure less than the limit, then the token: the count starts again.
    let mut script = String::new();
    for _ in 1..MAX_UNAUTHORIZED {
        script.push_str(bad);
    }
    script.push_str(good);
    for _ in 0..MAX_UNAUTHORIZED {
        script.push_str(bad);
    }
    script.push_str(good);
    c.recv(script.as_bytes(), 0, &mut g);
    let r = replies(&drain(&mut c, &mut g, 0));
    let mut want = vec![401; MAX_UNAUTHORIZED - 1];
    want.push(200);
    want.extend(vec![401; MAX_UNAUTHORIZED]);
    assert_eq!(r.iter().map(|r| r.status).collect::<Vec<_>>(), want);
    // The last failure closes the connection: the token after it is never read.
    assert_eq!(r.last().unwrap().header("connection"), Some("close"));
    assert_eq!(
        g.0.len(),
        2 * MAX_UNAUTHORIZED,
        "nothing after it was judged"
    );
    // Requests after the token proved itself are told which one it was.
    assert_eq!(g.0[MAX_UNAUTHORIZED], Some(3));
    assert_eq!(g.0[0], None);
}

#[test]
fn a_refused_head_is_answered_before_its_body_and_without_continue() {
    struct Guard(usize);
    impl Handler for Guard {
        fn admit(
            &mut self,
            head: &Request,
            _: Peer,
            _: Option<u8>,
            _: u64,
        ) -> Result<Admission, Response> {
            match head.headers.get("Authorization") {
                Some("Bearer ok") => Ok(Admission::Authenticated(0)),
                _ => Err(Response::full(401, "text/plain", "who are you")),
            }
        }
        fn handle(&mut self, req: &mut Request, _: Peer, _: u64) -> Response {
            self.0 += 1;
            // The handler learns how the head it answers was admitted.
            assert_eq!(req.admission, Some(Admission::Authenticated(0)));
            Response::full(200, "text/plain", mem::take(&mut req.body))
        }
    }
    let pool = Pool::new("requests", 1 << 20);
    let mut c = Connection::with_pool(PEER, Config::default(), 0, pool.clone());
    let mut g = Guard(0);
    c.recv(
        b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 900000\r\n\r\n",
        0,
        &mut g,
    );
    let out = text(c.pending_output());
    assert!(out.starts_with("HTTP/1.1 401"), "{out}");
    assert!(!out.contains("100 Continue"));
    assert!(!c.authenticated());
    c.recv(&[b'x'; 8192], 1, &mut g);
    assert_eq!(pool.usage().peak, 0, "no body byte was buffered");
    assert_eq!(g.0, 0);
    // With the token: 100 Continue, the body, the answer.
    let mut c = Connection::with_pool(PEER, Config::default(), 0, pool.clone());
    c.recv(
        b"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ok\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
        0,
        &mut g,
    );
    assert!(text(c.pending_output()).starts_with("HTTP/1.1 100 Continue"));
    let n = c.pending_output().len();
    c.mark_sent(n, 1);
    c.recv(b"abc", 1, &mut g);
    let n = c.pending_output().len();
    c.mark_sent(n, 1);
    assert_eq!(c.pending_output(), b"abc");
    assert!(c.authenticated());
    assert_eq!(pool.usage().used, 0, "the body's bytes were given back");
}

#[test]
fn long_stream_is_not_idle() {
    let (mut c, mut h) = (
        lasting_conn(),
        TestHandler::with_script(vec![None, None, Some(b"late".to_vec())]),
    );
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    drain(&mut c, &mut h, 0);
    h.release(0);
    c.poll(100_000, &mut h);
    assert!(!c.is_finished());
    h.release(0);
    // Output produced after a long quiet spell is not mistaken for a stalled peer.
    let out = drain(&mut c, &mut h, 200_000);
    assert!(text(&out).contains("late"));
    assert!(!c.is_finished());
}

#[test]
fn peer_that_stops_reading_is_aborted() {
    let (mut c, mut h) = (
        conn(),
        TestHandler::with_script(vec![Some(vec![b'z'; 100_000])]),
    );
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.poll(0, &mut h);
    assert!(!c.pending_output().is_empty());
    c.poll(29_999, &mut h);
    assert!(!c.is_finished());
    c.poll(30_000, &mut h);
    assert!(c.is_finished());
    assert!(h.log(0).cancelled);
}

#[test]
fn a_blocked_connection_says_until_when_its_polls_change_nothing() {
    let idle = Config::default().idle_timeout_ms;
    let stream = || {
        (
            conn(),
            TestHandler::with_script(vec![Some(vec![b'z'; 100_000])]),
        )
    };
    let (mut c, mut h) = stream();
    assert_eq!(c.blocked_until(), None, "nothing to send");
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 5, &mut h);
    c.poll(5, &mut h);
    let until = c.blocked_until().expect("the output buffer is full");
    assert_eq!(until, 5 + idle, "the peer's read timeout");
    let before = c.pending_output().to_vec();
    c.poll(until - 1, &mut h);
    assert_eq!(c.pending_output(), before);
    assert_eq!(c.blocked_until(), Some(until));
    c.poll(until, &mut h);
    assert!(
        c.is_finished(),
        "the read timeout fires at the time it named"
    );

    // Room for another piece: the stream is polled again, no skipping until it is full.
    let (mut c, mut h) = stream();
    c.recv(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.poll(0, &mut h);
    c.mark_sent(4096, 1);
    assert_eq!(c.blocked_until(), None);
    c.poll(1, &mut h);
    assert_eq!(c.blocked_until(), Some(1 + idle));

    // A complete body waits too; a lingering close ends sooner than the read timeout.
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n", 0, &mut h);
    c.poll(0, &mut h);
    assert_eq!(c.blocked_until(), Some(idle));
    let mut c = conn();
    c.recv(
        b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
        0,
        &mut h,
    );
    c.poll(0, &mut h);
    let linger = Config::default().linger_ms;
    assert!(linger < idle);
    assert_eq!(c.blocked_until(), Some(linger));
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
fn bad_request_closes_after_error() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let r = send(
        &mut c,
        &mut h,
        b"BROKEN\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
        0,
    );
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status, 400);
    assert_eq!(r[0].header("connection"), Some("close"));
    assert!(text(&r[0].body).starts_with("400 Bad Request: "));
    assert!(h.seen.is_empty());
    assert_lingers(&mut c);
}

#[test]
fn error_after_good_request_keeps_order() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let r = send(
        &mut c,
        &mut h,
        b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/2.0\r\n\r\n",
        0,
    );
    assert_eq!(r.iter().map(|r| r.status).collect::<Vec<_>>(), [200, 505]);
}

#[test]
fn megabyte_header_gets_431_without_buffering() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    c.recv(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ", 0, &mut h);
    let piece = vec![b'a'; 1024];
    for _ in 0..1024 {
        assert_eq!(c.recv(&piece, 0, &mut h), 1024);
    }
    assert!(c.parser.buffered() <= 2 * Limits::default().header_section);
    let r = replies(&drain(&mut c, &mut h, 0));
    assert_eq!(r[0].status, 431);
    assert_lingers(&mut c);
}

#[test]
fn huge_content_length_gets_413_immediately() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let r = send(
        &mut c,
        &mut h,
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n",
        0,
    );
    assert_eq!(r[0].status, 413);
    assert_lingers(&mut c);
}

#[test]
fn every_parser_status_reaches_the_wire() {
    let cases: [(&[u8], u16); 6] = [
        (
            b"GET /x HTTP/1.1\r\nHost: x\r\nA: b\r\n folded\r\n\r\n",
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
            501,
        ),
        (b"GET / HTTP/3.0\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\nHost: x\r\nExpect: x\r\n\r\n", 417),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n",
            413,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400,
        ),
    ];
    for (input, status) in cases {
        let (mut c, mut h) = (conn(), TestHandler::default());
        let r = send(&mut c, &mut h, input, 0);
        assert_eq!(r[0].status, status, "{}", text(input));
        assert_lingers(&mut c);
    }
    let long = format!("GET /{} HTTP/1.1\r\n", "a".repeat(9000));
    let (mut c, mut h) = (conn(), TestHandler::default());
    assert_eq!(send(&mut c, &mut h, long.as_bytes(), 0)[0].status, 414);
}

use crate::testing::Lcg;

#[test]
fn random_bytes_never_panic_and_get_an_error_or_nothing() {
    let mut rng = Lcg(99);
    for _ in 0..3000 {
        let len = 1 + (rng.next_u64() % 400) as usize;
        let input: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let (mut c, mut h) = (conn(), TestHandler::default());
        let mut rest = &input[..];
        let mut out = Vec::new();
        while !rest.is_empty() {
            let piece = (1 + (rng.next_u64() % 64) as usize).min(rest.len());
            let n = c.recv(&rest[..piece], 0, &mut h);
            rest = &rest[n..];
            out.extend(drain(&mut c, &mut h, 0));
            if n == 0 {
                break;
            }
        }
        c.poll(60_000, &mut h);
        out.extend(drain(&mut c, &mut h, 60_000));
        assert!(h.seen.is_empty());
        let s = text(&out);
        assert!(
            s.starts_with("HTTP/1.1 4") || s.starts_with("HTTP/1.1 5") || s.is_empty(),
            "{s}"
        );
        // Whatever state it is left in, the connection ends on its own.
        c.poll(120_000, &mut h);
        assert!(c.is_finished());
    }
}

#[test]
fn mixed_valid_and_broken_requests_keep_framing_and_order() {
    let fragments: [&[u8]; 10] = [
        b"GET /g HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;e\r\nhi\r\n0\r\n\r\n",
        b"POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
        b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /nocontent HTTP/1.1\r\nHost: x\r\n\r\n",
        b"\r\n",
        b"X-Junk: 1\r\n",
        b"\x00\xff garbage",
        b"GET / HTTP/1.1\r\n",
    ];
    let mut rng = Lcg(2024);
    let (mut handled, mut refused, mut continues) = (0, 0, 0);
    for _ in 0..400 {
        let mut input = Vec::new();
        for _ in 0..1 + rng.next_u64() % 8 {
            input.extend_from_slice(fragments[(rng.next_u64() % 10) as usize]);
        }
        let mut h = TestHandler::default();
        for _ in 0..8 {
            h.scripts
                .push_back(vec![Some(b"s1".to_vec()), Some(b"s2".to_vec())]);
        }
        let mut c = conn();
        let (mut rest, mut out, mut now) = (&input[..], Vec::new(), 0);
        for _ in 0..10_000 {
            // Poll before looking at the output: the contract asks for a poll after
            // `mark_sent` (it answers requests held behind a finished body).
            c.poll(now, &mut h);
            if rest.is_empty() && c.pending_output().is_empty() {
                break;
            }
            let piece = (1 + (rng.next_u64() % 40) as usize).min(rest.len());
            let n = c.recv(&rest[..piece], now, &mut h);
            rest = &rest[n..];
            c.poll(now, &mut h);
            let take = (rng.next_u64() as usize % 300).min(c.pending_output().len());
            out.extend_from_slice(&c.pending_output()[..take]);
            c.mark_sent(take, now);
            now += rng.next_u64() % 50;
        }
        assert!(rest.is_empty());
        let r = replies(&out);
        let finals: Vec<&Reply> = r.iter().filter(|r| r.status != 100).collect();
        handled += h.seen.len();
        refused += finals.iter().filter(|r| r.status >= 400).count();
        continues += r.len() - finals.len();
        // One final response per handled request, in order, and at most one error, last.
        assert_eq!(
            finals.iter().filter(|r| r.status < 400).count(),
            h.seen.len()
        );
        if let Some(i) = finals.iter().position(|r| r.status >= 400) {
            assert_eq!(i, finals.len() - 1);
            assert_eq!(finals[i].header("connection"), Some("close"));
            assert_lingers(&mut c);
        }
        for (reply, target) in finals.iter().zip(h.seen.iter()) {
            let want: &[u8] = match target.as_str() {
                "/stream" => b"s1s2",
                "/nocontent" => b"",
                "/g" => b"GET /g ",
                "/p" => b"POST /p abc",
                "/c" => b"POST /c hi",
                "/e" => b"POST /e z",
                other => panic!("unexpected target {other}"),
            };
            assert_eq!(reply.body, want, "{target}");
        }
    }
    // The mix exercised all three outcomes.
    assert!(
        handled > 300 && refused > 100 && continues > 20,
        "{handled} {refused} {continues}"
    );
}

#[test]
fn client_that_pipelines_without_reading_is_throttled() {
    let (mut c, mut h) = (conn(), TestHandler::default());
    let one = b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n";
    let flood: Vec<u8> = one.iter().copied().cycle().take(one.len() * 5000).collect();
    let took = c.recv(&flood, 0, &mut h);
    assert!(took < flood.len());
    let cfg = Config::default();
    assert!(c.pending_output().len() <= cfg.output_buffer + 200);
    assert!(
        h.seen.len() < 1000,
        "{} requests answered ahead",
        h.seen.len()
    );
    // Draining lets the rest through, still in order.
    let mut rest = &flood[took..];
    let mut answered = 0;
    while !rest.is_empty() {
        answered += replies(&drain(&mut c, &mut h, 0)).len();
        let n = c.recv(rest, 0, &mut h);
        rest = &rest[n..];
    }
    answered += replies(&drain(&mut c, &mut h, 0)).len();
    assert_eq!(answered, 5000);
    assert_eq!(h.seen.len(), 5000);
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

#[test]
fn http10_keep_alive_stream_still_closes() {
    let (mut c, mut h) = (conn(), TestHandler::with_script(vec![Some(b"x".to_vec())]));
    c.recv(
        b"GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        0,
        &mut h,
    );
    let out = text(&drain(&mut c, &mut h, 0));
    assert!(
        out.contains("Connection: close\r\n") && !out.contains("chunked"),
        "{out}"
    );
    assert!(c.is_finished());
}
