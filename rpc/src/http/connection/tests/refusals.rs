//! Errors and refusals: a refused head, a failing token, bad and oversized requests, every
//! parser status on the wire, and the lingering close after an error.

use super::*;

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
