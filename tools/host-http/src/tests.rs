use super::*;

fn whole(buf: &[u8]) -> Response {
    let (r, used) = parse(buf, false, false).unwrap().expect("complete");
    assert_eq!(used, buf.len());
    r
}

#[test]
fn content_length_bodies_end_at_their_length() {
    let two = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    let (r, used) = parse(two, false, false).unwrap().unwrap();
    assert_eq!(
        (r.status, r.reason.as_str(), r.body.as_slice()),
        (200, "OK", &b"{}"[..])
    );
    assert_eq!(response_len(two, false).unwrap(), Some(used));
    let next = whole(&two[used..]);
    assert_eq!(next.status, 404);
    assert!(parse(&two[..used - 1], false, false).unwrap().is_none());
    assert_eq!(response_len(&two[..used - 1], false).unwrap(), None);
}

#[test]
fn chunked_bodies_are_joined_with_extensions_and_trailers() {
    let r = whole(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n",
    );
    assert_eq!(r.text(), "hello!");
    let bare = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    assert_eq!(whole(bare).body, b"{}");
    for cut in 1..bare.len() {
        assert!(
            parse(&bare[..cut], false, false).unwrap().is_none(),
            "{cut}"
        );
    }
}

#[test]
fn malformed_chunks_are_errors() {
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for body in [&b"zz\r\n"[..], b"2\r\nabcd\r\n"] {
        let buf = [&head[..], body].concat();
        assert!(
            matches!(parse(&buf, false, false), Err(Error::BadChunk)),
            "{body:?}"
        );
    }
}

#[test]
fn heads_without_a_body() {
    let r = whole(b"HTTP/1.1 204 No Content\r\n\r\n");
    assert!(r.body.is_empty());
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
    let (r, used) = parse(head, true, false).unwrap().unwrap();
    assert_eq!((r.header("content-length"), used), (Some("9"), head.len()));
}

#[test]
fn a_body_without_framing_ends_with_the_connection() {
    let buf = b"HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nmissing";
    assert!(parse(buf, false, false).unwrap().is_none());
    let (r, _) = parse(buf, false, true).unwrap().unwrap();
    assert_eq!(r.text(), "missing");
    let (head, _) = Head::parse(buf).unwrap().unwrap();
    assert_eq!(head.status_line(), "HTTP/1.0 404 Not Found");
    assert_eq!(head.header("SERVER"), Some("x"));
}

#[test]
fn read_response_keeps_what_follows() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n";
    let mut r = &wire[..];
    let mut buf = Vec::new();
    assert_eq!(read_response(&mut r, &mut buf, false).unwrap().body, b"a");
    assert_eq!(read_response(&mut r, &mut buf, false).unwrap().body, b"b");
    assert!(matches!(
        read_response(&mut r, &mut buf, false),
        Err(Error::Closed)
    ));
}

#[test]
fn a_dechunker_takes_complete_chunks_only() {
    let mut d = Dechunker::default();
    let mut out = Vec::new();
    assert_eq!(d.feed(b"3\r\nab", &mut out).unwrap(), 0);
    assert_eq!(d.feed(b"3\r\nabc\r\n2\r", &mut out).unwrap(), 8);
    assert_eq!(out, b"abc");
    assert_eq!(d.feed(b"0\r\n\r\nrest", &mut out).unwrap(), 5);
    assert!(d.done());
    assert_eq!(d.feed(b"1\r\nx\r\n", &mut out).unwrap(), 0);
}
