//! The connection's tests, by what they test (one file each), and what they share: a
//! scripted handler and body, and a reader of the responses a client would see.

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
                    turned_away: false,
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
                };
                Response {
                    status: 200,
                    headers: Headers::default(),
                    body: Body::Spliced(b"[<>]".to_vec(), splice),
                    turned_away: false,
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

mod bodies;
mod malformed;
mod order;
mod refusals;
mod timing;
