extern crate std;
use super::*;
use crate::http::message::Method;
use alloc::vec;
use std::format;
use std::vec::Vec;

/// Feeds `input` in pieces of `piece` bytes; returns the events and the first error.
fn run(limits: Limits, input: &[u8], piece: usize) -> (Vec<Event>, Option<ParseError>) {
    let mut p = Parser::new(limits);
    let mut events = Vec::new();
    for chunk in input.chunks(piece.max(1)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            match p.feed(rest) {
                Ok((n, ev)) => {
                    assert!(n > 0 || ev.is_some(), "no progress");
                    rest = &rest[n..];
                    if ev == Some(Event::Head) {
                        events.push(Event::Head);
                        match p.proceed() {
                            Ok(ev) => events.extend(ev),
                            Err(e) => return (events, Some(e)),
                        }
                    } else {
                        events.extend(ev);
                    }
                }
                Err(e) => return (events, Some(e)),
            }
        }
    }
    (events, None)
}

/// Runs `input` whole, byte by byte and in 7-byte pieces; all three must agree.
fn parse(input: &[u8]) -> (Vec<Event>, Option<ParseError>) {
    parse_with(Limits::default(), input)
}

fn parse_with(limits: Limits, input: &[u8]) -> (Vec<Event>, Option<ParseError>) {
    let whole = run(limits, input, input.len());
    assert_eq!(run(limits, input, 1), whole, "byte-at-a-time differs");
    assert_eq!(run(limits, input, 7), whole, "7-byte pieces differ");
    whole
}

#[test]
fn a_recycled_box_carries_the_next_request() {
    let mut p = Parser::new(Limits::default());
    let next = |p: &mut Parser, input: &[u8]| {
        assert_eq!(p.feed(input).unwrap(), (input.len(), Some(Event::Head)));
        match p.proceed().unwrap() {
            Some(Event::Request(b)) => b,
            other => panic!("{other:?}"),
        }
    };
    let first = next(&mut p, b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(
        (
            first.request.target.as_str(),
            first.request.headers.get("host")
        ),
        ("/a", Some("x"))
    );
    let at = &*first as *const Parsed;
    let text_at = first.request.target.as_ptr();
    p.recycle(first);
    let second = next(&mut p, b"GET /b HTTP/1.1\r\nHost: y\r\n\r\n");
    assert_eq!(&*second as *const Parsed, at, "the same box");
    assert_eq!(
        second.request.target.as_ptr(),
        text_at,
        "the same target room"
    );
    assert_eq!(second.request.target, "/b");
    assert_eq!(second.request.headers.get("host"), Some("y"));
    assert_eq!(second.request.headers.iter().count(), 1);
    // A big request's room is given back, not kept for the next.
    p.recycle(second);
    let long = alloc::format!(
        "POST /{} HTTP/1.1\r\nHost: y\r\nX: {}\r\nContent-Length: 3000\r\n\r\n",
        "t".repeat(100),
        "v".repeat(2000)
    );
    assert_eq!(p.feed(long.as_bytes()).unwrap().1, Some(Event::Head));
    assert_eq!(p.proceed().unwrap(), None);
    let big = match p.feed(&[b'b'; 3000]).unwrap() {
        (3000, Some(Event::Request(b))) => b,
        other => panic!("{other:?}"),
    };
    assert_eq!(big.request.body.len(), 3000);
    p.recycle(big);
    assert!(p.spare.is_none(), "nothing kept");
}

fn requests(events: Vec<Event>) -> Vec<Parsed> {
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::Request(p) => Some(*p),
            Event::Head => None,
        })
        .collect()
}

fn status(input: &[u8]) -> u16 {
    parse(input).1.map(|e| e.status).unwrap_or(0)
}

#[test]
fn simple_get_byte_at_a_time() {
    let (ev, e) = parse(b"GET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-Y:  z \r\n\r\n");
    assert_eq!(e, None);
    let r = requests(ev);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].request.method, Method::Get);
    assert_eq!(r[0].request.target, "/a?b=1");
    assert_eq!(r[0].request.path(), "/a");
    assert_eq!(r[0].request.headers.get("x-y"), Some("z"));
    assert_eq!(r[0].version, Version::Http11);
    assert!(r[0].keep_alive);
    assert!(r[0].request.body.is_empty());
}

#[test]
fn bare_lf_line_endings_accepted() {
    let (ev, e) = parse(b"GET / HTTP/1.1\nHost: x\n\n");
    assert_eq!(e, None);
    assert_eq!(requests(ev).len(), 1);
}

#[test]
fn content_length_body_and_pipelining() {
    let input = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /2 HTTP/1.1\r\nHost: x\r\n\r\n";
    let (ev, e) = parse(input);
    assert_eq!(e, None);
    let r = requests(ev);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].request.method, Method::Post);
    assert_eq!(r[0].request.body, b"hello");
    assert_eq!(r[1].request.target, "/2");
}

#[test]
fn feed_stops_at_request_boundary() {
    let mut p = Parser::new(Limits::default());
    let input = b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\n";
    let (n, ev) = p.feed(input).unwrap();
    assert_eq!(n, 28);
    assert_eq!(ev, Some(Event::Head));
    assert!(matches!(p.proceed().unwrap(), Some(Event::Request(_))));
    assert!(!p.in_progress());
    let (n2, ev2) = p.feed(&input[n..]).unwrap();
    assert_eq!(n2, input.len() - n);
    assert_eq!(ev2, None);
    assert!(p.in_progress());
}

#[test]
fn leading_empty_lines_skipped_but_bounded() {
    let (ev, e) = parse(b"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!((requests(ev).len(), e), (1, None));
    assert_eq!(status(b"\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n"), 400);
    assert_eq!(status(b"\rGET / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
}

#[test]
fn http10_keep_alive_semantics() {
    let r = requests(parse(b"GET / HTTP/1.0\r\n\r\n").0);
    assert_eq!(r[0].version, Version::Http10);
    assert!(!r[0].keep_alive);
    let r = requests(parse(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").0);
    assert!(r[0].keep_alive);
    let r = requests(parse(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n").0);
    assert!(!r[0].keep_alive);
}

#[test]
fn chunked_body_with_extensions_and_trailers() {
    let input = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;name=\"v a\";x\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n\
        GET /next HTTP/1.1\r\nHost: x\r\n\r\n";
    let (ev, e) = parse(input);
    assert_eq!(e, None);
    let r = requests(ev);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].request.body, b"helloabcdefghijklmnopqrstuvwxyz");
    assert_eq!(r[1].request.target, "/next");
}

#[test]
fn chunked_errors() {
    let h = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    let st = |body: &str| status(format!("{h}{body}").as_bytes());
    assert_eq!(st("z\r\n"), 400);
    assert_eq!(st("5 x\r\n"), 400);
    assert_eq!(st("5\r\nhelloX"), 400);
    assert_eq!(st("5;\x01\r\n"), 400);
    assert_eq!(st("0\r\nbad trailer\r\n\r\n"), 400);
    assert_eq!(st(&format!("{}\r\n", "0".repeat(2000))), 400);
    // Declared chunk bigger than the body limit: refused before its data arrives.
    assert_eq!(st("100001\r\n"), 413);
    assert_eq!(st("ffffffffffffffffffffffff\r\n"), 413);
    // Running total over the limit.
    let limits = Limits {
        body: 8,
        ..Limits::default()
    };
    let input = format!("{h}5\r\nhello\r\n4\r\n");
    assert_eq!(
        parse_with(limits, input.as_bytes()).1.map(|e| e.status),
        Some(413)
    );
    let input = format!("{h}5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n");
    assert_eq!(
        requests(parse_with(limits, input.as_bytes()).0)[0]
            .request
            .body,
        b"helloabc"
    );
}

#[test]
fn trailer_limits() {
    let h = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
    let limits = Limits {
        header_count: 2,
        header_section: 64,
        ..Limits::default()
    };
    let ok = format!("{h}A: 1\r\nB: 2\r\n\r\n");
    assert_eq!(parse_with(limits, ok.as_bytes()).1, None);
    let many = format!("{h}A: 1\r\nB: 2\r\nC: 3\r\n\r\n");
    assert_eq!(
        parse_with(limits, many.as_bytes()).1.map(|e| e.status),
        Some(431)
    );
    let big = format!("{h}A: {}\r\n\r\n", "v".repeat(100));
    assert_eq!(
        parse_with(limits, big.as_bytes()).1.map(|e| e.status),
        Some(431)
    );
}

#[test]
fn transfer_encoding_rules() {
    let te = |v: &str| {
        status(format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {v}\r\n\r\n").as_bytes())
    };
    assert_eq!(te("gzip"), 501);
    assert_eq!(te("gzip, chunked"), 501);
    assert_eq!(te("identity"), 501);
    assert_eq!(te("chunked, chunked"), 400);
    assert_eq!(te(""), 400);
    assert_eq!(te("Chunked"), 0);
    // Two fields, chunked twice.
    assert_eq!(
        status(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
        400
    );
    // Smuggling: CL together with TE.
    assert_eq!(
        status(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
        400
    );
    // TE on HTTP/1.0 is faulty framing.
    assert_eq!(
        status(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        400
    );
}

#[test]
fn content_length_rules() {
    let cl = |v: &str| status(format!("POST / HTTP/1.1\r\nHost: x\r\n{v}\r\n\r\n").as_bytes());
    assert_eq!(cl("Content-Length: 3\r\nContent-Length: 4"), 400);
    assert_eq!(cl("Content-Length: 3, 4"), 400);
    assert_eq!(cl("Content-Length: -1"), 400);
    assert_eq!(cl("Content-Length: +3"), 400);
    assert_eq!(cl("Content-Length: 0x10"), 400);
    assert_eq!(cl("Content-Length:"), 400);
    assert_eq!(cl("Content-Length: 1 2"), 400);
    // Identical duplicates are one value.
    let input =
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok";
    assert_eq!(requests(parse(input).0)[0].request.body, b"ok");
}

#[test]
fn huge_content_length_refused_at_once() {
    // 100 MiB announced: 413 as soon as the head ends, no body byte read.
    let mut p = Parser::new(Limits::default());
    let head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n";
    assert_eq!(p.feed(head).unwrap_err().status, 413);
    assert_eq!(
        status(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
        413
    );
    // Exactly at the limit is fine.
    let limits = Limits {
        body: 4,
        ..Limits::default()
    };
    let ok = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd";
    assert_eq!(parse_with(limits, ok).1, None);
    let over = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n";
    assert_eq!(parse_with(limits, over).1.map(|e| e.status), Some(413));
}

#[test]
fn request_line_limit_414() {
    let limits = Limits {
        request_line: 32,
        ..Limits::default()
    };
    let ok = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(18)); // 32 bytes
    assert_eq!(parse_with(limits, ok.as_bytes()).1, None);
    let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(19));
    assert_eq!(
        parse_with(limits, long.as_bytes()).1.map(|e| e.status),
        Some(414)
    );
    // Refused before the line ends.
    let mut p = Parser::new(limits);
    assert_eq!(p.feed(&[b'G'; 33]).unwrap_err().status, 414);
}

#[test]
fn header_limits_431() {
    let limits = Limits {
        header_count: 3,
        ..Limits::default()
    };
    let three = b"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n";
    assert_eq!(parse_with(limits, three).1, None);
    let four = b"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    assert_eq!(parse_with(limits, four).1.map(|e| e.status), Some(431));
    let limits = Limits {
        header_section: 40,
        ..Limits::default()
    };
    let big = b"GET / HTTP/1.1\r\nHost: x\r\nA: 123456789\r\n\r\n";
    assert_eq!(parse_with(limits, big).1.map(|e| e.status), Some(431));
    // A head of exactly the limit passes, one byte more does not: whole (where a head that
    // arrives in one piece is parsed as it lies) as in pieces (`parse_with` compares them).
    for (section, verdict) in [(big.len(), None), (big.len() - 1, Some(431))] {
        let limits = Limits {
            header_section: section,
            ..Limits::default()
        };
        let got = parse_with(limits, big).1.map(|e| e.status);
        assert_eq!(got, verdict, "header_section {section}");
    }
    // The same for the count of fields, with a body and a pipelined request after the head.
    let two = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\nHost: x\r\n\r\n";
    for (count, verdict) in [(2, None), (1, Some(431))] {
        let limits = Limits {
            header_count: count,
            ..Limits::default()
        };
        let got = parse_with(limits, two).1.map(|e| e.status);
        assert_eq!(got, verdict, "header_count {count}");
    }
}

#[test]
fn megabyte_header_refused_without_buffering() {
    let mut p = Parser::new(Limits::default());
    assert_eq!(
        p.feed(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ").unwrap().1,
        None
    );
    let big = vec![b'a'; 1024 * 1024];
    let mut fed = 0;
    let e = loop {
        match p.feed(&big[fed..fed + 1024]) {
            Ok((n, _)) => fed += n,
            Err(e) => break e,
        }
    };
    assert_eq!(e.status, 431);
    assert!(
        fed <= Limits::default().header_section,
        "buffered {fed} bytes"
    );
    assert!(p.buf.capacity() <= 2 * Limits::default().header_section);
    // Stuck on the error afterwards.
    assert_eq!(p.feed(b"x").unwrap_err().status, 431);
}

#[test]
fn versions() {
    assert_eq!(status(b"GET / HTTP/2.0\r\n\r\n"), 505);
    assert_eq!(status(b"GET / HTTP/1.2\r\nHost: x\r\n\r\n"), 505);
    assert_eq!(status(b"GET / HTTP/0.9\r\n\r\n"), 505);
    assert_eq!(status(b"GET / http/1.1\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/x\r\n\r\n"), 400);
    assert_eq!(status(b"GET /\r\n\r\n"), 400);
}

#[test]
fn syntax_errors_400() {
    assert_eq!(status(b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost : x\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
    assert_eq!(status(b"G\x01T / HTTP/1.1\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: \xff\xfe\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: x\r\nA: b\rc\r\n\r\n"), 400);
}

#[test]
fn header_values_are_utf8_wherever_they_are_in_the_head() {
    let (ev, e) = parse(b"GET / HTTP/1.1\r\nHost: x\r\nX: caf\xc3\xa9\r\nY: \xe2\x9c\x93\r\n\r\n");
    assert_eq!(e, None);
    let r = requests(ev);
    assert_eq!(r[0].request.headers.get("x"), Some("caf\u{e9}"));
    assert_eq!(r[0].request.headers.get("y"), Some("\u{2713}"));
    // One bad value refuses the head, whether it comes first or last.
    assert_eq!(status(b"GET / HTTP/1.1\r\nX: \xc3\r\nHost: x\r\n\r\n"), 400);
    assert_eq!(
        status(b"GET / HTTP/1.1\r\nHost: x\r\nX: ok\r\nZ: \xa9\r\n\r\n"),
        400
    );
}

#[test]
fn host_required_on_11() {
    assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
    assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), 0);
}

#[test]
fn expect_continue() {
    let mut p = Parser::new(Limits::default());
    let head = b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi";
    let (n, ev) = p.feed(head).unwrap();
    assert_eq!((n, ev), (head.len() - 2, Some(Event::Head)));
    assert!(p.expects_continue());
    assert_eq!(p.announced_body(), 2);
    assert_eq!(p.pending_head().map(|r| r.target.as_str()), Some("/"));
    // Nothing of the body is read before the head is admitted.
    assert_eq!(p.feed(b"hi").unwrap(), (0, Some(Event::Head)));
    assert_eq!(p.proceed().unwrap(), None);
    assert!(
        matches!(p.feed(b"hi").unwrap(), (2, Some(Event::Request(r))) if r.request.body == b"hi")
    );
    // No body: nothing to wait for.
    let mut p = Parser::new(Limits::default());
    p.feed(b"GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    assert!(!p.expects_continue());
    assert!(matches!(p.proceed().unwrap(), Some(Event::Request(_))));
    // HTTP/1.0: ignored.
    let mut p = Parser::new(Limits::default());
    p.feed(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")
        .unwrap();
    assert!(!p.expects_continue());
    assert_eq!(
        status(b"GET / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n"),
        417
    );
    // Too big: 413 instead of an invitation to send it.
    let (ev, e) = parse(
        b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n",
    );
    assert!(ev.is_empty());
    assert_eq!(e.map(|e| e.status), Some(413));
}

#[test]
fn bodies_are_charged_to_the_pool_and_refused_past_it() {
    let pool = Pool::new("requests", 40 * 1024);
    let mut p = Parser::with_pool(Limits::default(), pool.clone());
    let head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 30000\r\n\r\n";
    assert_eq!(p.feed(head).unwrap().1, Some(Event::Head));
    assert_eq!(p.proceed().unwrap(), None);
    let (_, ev) = p.feed(&[b'a'; 30000]).unwrap();
    assert!(matches!(ev, Some(Event::Request(_))));
    let lease = p.take_lease().expect("the body's lease");
    assert!(lease.bytes() >= 30000 && lease.bytes() <= 40 * 1024);
    // A second body while the first is still held does not fit.
    let mut q = Parser::with_pool(Limits::default(), pool.clone());
    q.feed(head).unwrap();
    assert_eq!(q.proceed().unwrap_err().status, 503);
    drop(lease);
    assert_eq!(pool.usage().used, 0);
    assert!(pool.usage().refused >= 1);
}

#[test]
fn a_long_body_grows_once_and_a_stalled_one_holds_four_times_what_it_sent() {
    let pool = Pool::new("requests", usize::MAX);
    let mut p = Parser::with_pool(Limits::default(), pool.clone());
    let head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n";
    p.feed(head).unwrap();
    p.proceed().unwrap();
    // Segments as TCP brings them: past the 16 KiB reserve the buffer goes straight to the
    // announced end (doubling would have copied at 16 and 32 KiB and ended at 64 KiB).
    let mut done = None;
    for seg in [b'a'; 60000].chunks(1460) {
        done = p.feed(seg).unwrap().1;
    }
    let Some(Event::Request(r)) = done else {
        panic!("no request");
    };
    assert_eq!(
        (r.request.body.len(), r.request.body.capacity()),
        (60000, 60000)
    );
    assert_eq!(p.take_lease().map(|l| l.bytes()), Some(60000));
    // A client announcing 128 KiB that stops after 20,000 bytes holds four times the
    // 16 KiB it had sent when its buffer grew (the first lease is gone).
    let mut q = Parser::with_pool(Limits::default(), pool.clone());
    q.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 131072\r\n\r\n")
        .unwrap();
    q.proceed().unwrap();
    q.feed(&[b'a'; 16384]).unwrap();
    assert_eq!(pool.usage().used, 16384);
    q.feed(&[b'a'; 20000 - 16384]).unwrap();
    assert_eq!(pool.usage().used, 4 * 16384);
}

#[test]
fn other_methods_kept() {
    let r = requests(parse(b"PATCH /x HTTP/1.1\r\nHost: x\r\n\r\n").0);
    assert_eq!(r[0].request.method, Method::Other("PATCH".into()));
    let r = requests(parse(b"DELETE /mcp HTTP/1.1\r\nHost: x\r\n\r\n").0);
    assert_eq!(r[0].request.method, Method::Delete);
}

#[test]
fn reset_forgets_partial_request() {
    let mut p = Parser::new(Limits::default());
    p.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n")
        .unwrap();
    p.proceed().unwrap();
    p.feed(b"abc").unwrap();
    assert!(p.in_progress());
    p.reset();
    assert!(!p.in_progress());
    let (_, ev) = p.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(ev, Some(Event::Head));
    assert!(matches!(p.proceed().unwrap(), Some(Event::Request(_))));
}

/// A small deterministic generator for the garbage tests (no external RNG needed).
use irix7_kmem::testing::Lcg;

#[test]
fn garbage_never_panics_and_is_refused_with_4xx_or_5xx() {
    let mut rng = Lcg(7);
    let alphabet = b"GET /HTP1.0\r\n:; chunkedContent-Length0123456789abcdef\x00\xff";
    for round in 0..2000 {
        let len = (rng.next_u64() % 300) as usize;
        let input: Vec<u8> = (0..len)
            .map(|_| {
                if round % 2 == 0 {
                    rng.next_u64() as u8
                } else {
                    alphabet[(rng.next_u64() as usize) % alphabet.len()]
                }
            })
            .collect();
        let piece = 1 + (rng.next_u64() % 17) as usize;
        let (_, e) = run(Limits::default(), &input, piece);
        if let Some(e) = e {
            assert!((400..=505).contains(&e.status), "{e:?}");
        }
    }
}
