//! Writes HTTP/1.1 responses: status line, headers and body framing.
//!
//! Handlers describe a response with [`Response`]; the framing headers (`Content-Length`,
//! `Transfer-Encoding`, `Connection`) are this module's job, so whatever a handler put there
//! itself is dropped rather than sent twice. Header fields that could split the response
//! (CR/LF in a value, a name that is not a token) are dropped too.

use alloc::format;
use alloc::vec::Vec;

use super::message::{Body, Field, Headers, Response, Version};
use super::parser::syntax::is_tchar;

/// The interim response sent for `Expect: 100-continue`.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The terminating chunk of a chunked body (no trailers).
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Bytes a chunk adds around its data at most: up to 8 hex digits and two CRLFs.
pub const CHUNK_OVERHEAD: usize = 8 + 2 + 2;

/// How a response body is delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length: n`.
    Length(usize),
    /// `Transfer-Encoding: chunked` (streamed bodies to HTTP/1.1 clients).
    Chunked,
    /// No length: the body ends when the connection closes (streamed bodies to HTTP/1.0).
    UntilClose,
    /// No framing header at all (204, 304, HEAD of a stream to HTTP/1.0).
    None,
}

/// What the `Connection` header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionHeader {
    /// Nothing: the HTTP/1.1 default (keep-alive).
    Omit,
    /// `Connection: keep-alive`, for HTTP/1.0 clients that asked for it.
    KeepAlive,
    /// `Connection: close`: this is the last response on the connection.
    Close,
}

/// The framing decision for one response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub framing: Framing,
    /// Whether body bytes follow the head (false for HEAD, 204, 304).
    pub send_body: bool,
}

/// Decides framing: HEAD gets the headers a GET would have (the length of a full body, the
/// chunked coding of a stream) and no body; 204 and 304 never carry one.
pub fn plan(status: u16, head_request: bool, version: Version, body: &Body) -> Plan {
    if status == 204 || status == 304 {
        return Plan {
            framing: Framing::None,
            send_body: false,
        };
    }
    let framing = match (body, version) {
        (Body::Empty, _) => Framing::Length(0),
        (Body::Full(b), _) => Framing::Length(b.len()),
        (Body::Spliced(b, s), _) => Framing::Length(b.len() + s.bytes().len()),
        (Body::Stream(_), Version::Http11) => Framing::Chunked,
        (Body::Stream(_), Version::Http10) if head_request => Framing::None,
        (Body::Stream(_), Version::Http10) => Framing::UntilClose,
    };
    Plan {
        framing,
        send_body: !head_request,
    }
}

/// A status a handler may answer with: 200–599; anything else becomes 500.
pub fn final_status(status: u16) -> u16 {
    if (200..=599).contains(&status) {
        status
    } else {
        500
    }
}

/// The registered reason phrases (a table searched, smaller in the image than a `match`).
const REASONS: [(u16, &str); 36] = [
    (100, "Continue"),
    (101, "Switching Protocols"),
    (200, "OK"),
    (201, "Created"),
    (202, "Accepted"),
    (204, "No Content"),
    (206, "Partial Content"),
    (301, "Moved Permanently"),
    (302, "Found"),
    (303, "See Other"),
    (304, "Not Modified"),
    (307, "Temporary Redirect"),
    (308, "Permanent Redirect"),
    (400, "Bad Request"),
    (401, "Unauthorized"),
    (403, "Forbidden"),
    (404, "Not Found"),
    (405, "Method Not Allowed"),
    (406, "Not Acceptable"),
    (408, "Request Timeout"),
    (409, "Conflict"),
    (410, "Gone"),
    (411, "Length Required"),
    (413, "Content Too Large"),
    (414, "URI Too Long"),
    (415, "Unsupported Media Type"),
    (417, "Expectation Failed"),
    (422, "Unprocessable Content"),
    (429, "Too Many Requests"),
    (431, "Request Header Fields Too Large"),
    (500, "Internal Server Error"),
    (501, "Not Implemented"),
    (502, "Bad Gateway"),
    (503, "Service Unavailable"),
    (504, "Gateway Timeout"),
    (505, "HTTP Version Not Supported"),
];

/// The reason phrase for a status code ("" for codes without a registered phrase).
pub fn reason(status: u16) -> &'static str {
    REASONS
        .iter()
        .find(|(code, _)| *code == status)
        .map_or("", |(_, phrase)| phrase)
}

/// Whether a handler's header field is fit to send: a token name, a value without CR, LF or
/// NUL, and not one of the framing fields this module writes itself.
fn sendable(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(is_tchar)
        && !value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
        && !matches!(
            Field::of(name),
            Some(Field::ContentLength | Field::TransferEncoding | Field::Connection)
        )
}

/// Appends the status line, the handler's headers and the framing headers, straight onto
/// `out` (no line is formatted into a string of its own first).
pub fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    headers: &Headers,
    framing: Framing,
    connection: ConnectionHeader,
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    write_number(out, usize::from(status), 10);
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers.iter().filter(|(n, v)| sendable(n, v)) {
        for part in [name.as_bytes(), b": ", value.as_bytes(), b"\r\n"] {
            out.extend_from_slice(part);
        }
    }
    if !headers.lines().is_empty() {
        out.extend_from_slice(headers.lines().as_bytes());
    }
    match framing {
        Framing::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            write_number(out, n, 10);
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::UntilClose | Framing::None => {}
    }
    match connection {
        ConnectionHeader::Omit => {}
        ConnectionHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        ConnectionHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in `base` (10 or 16, lowercase) without formatting machinery.
fn write_number(out: &mut Vec<u8>, mut n: usize, base: usize) {
    // Enough for a 64-bit number in decimal.
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        if let Some(d) = buf.get_mut(at) {
            *d = HEX.get(n % base).copied().unwrap_or(b'0');
        }
        n /= base;
        if n == 0 || at == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(at..).unwrap_or(&[]));
}

/// A chunk being written in place: its data is appended straight after room for its size,
/// which is filled in when the data is complete, so a streamed body is not built elsewhere
/// and copied into the output.
pub struct OpenChunk {
    at: usize,
    width: usize,
}

/// Starts a chunk of at most `max` bytes at the end of `out`.
pub fn open_chunk(out: &mut Vec<u8>, max: usize) -> OpenChunk {
    let at = out.len();
    let width = hex_width(max);
    out.resize(at + width, b'0');
    out.extend_from_slice(b"\r\n");
    OpenChunk { at, width }
}

/// Ends the chunk with the data appended since [`open_chunk`]; no data leaves nothing (an
/// empty chunk would end the body). A size of another width than the room moves the data to
/// fit: that only happens to data under a sixteenth of the room (or beyond the promise).
pub fn close_chunk(out: &mut Vec<u8>, chunk: OpenChunk) {
    let OpenChunk { at, width } = chunk;
    let len = out.len().saturating_sub(at + width + 2);
    if len == 0 {
        out.truncate(at);
        return;
    }
    let digits = hex_width(len);
    if digits != width {
        let end = at + digits + 2 + len;
        out.resize(end.max(out.len()), 0);
        out.copy_within(at + width..at + width + 2 + len, at + digits);
        out.truncate(end);
    }
    let mut n = len;
    for d in out
        .get_mut(at..at + digits)
        .unwrap_or_default()
        .iter_mut()
        .rev()
    {
        *d = HEX.get(n % 16).copied().unwrap_or(b'0');
        n /= 16;
    }
    out.extend_from_slice(b"\r\n");
}

/// Hex digits of `n` (at least one).
fn hex_width(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()).div_ceil(4).max(1) as usize
}

/// The plain-text response for a refused request, e.g. `431 Request Header Fields Too
/// Large: too many header fields`.
pub fn error(status: u16, detail: &str) -> Response {
    let body = format!("{} {}: {}\n", status, reason(status), detail);
    Response::full(status, "text/plain; charset=utf-8", body.into_bytes())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::http::message::{BodyPoll, BodySource};
    use alloc::boxed::Box;
    use std::string::String;

    struct Nothing;
    impl BodySource for Nothing {
        fn poll(&mut self, _: &mut Vec<u8>, _: usize, _: u64) -> BodyPoll {
            BodyPoll::End
        }
    }

    fn head(status: u16, headers: &Headers, framing: Framing, c: ConnectionHeader) -> String {
        let mut out = Vec::new();
        write_head(&mut out, status, headers, framing, c);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn status_line_and_framing_headers() {
        let mut h = Headers::default();
        h.push("Content-Type", "application/json");
        assert_eq!(
            head(200, &h, Framing::Length(5), ConnectionHeader::Omit),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n"
        );
        assert_eq!(
            head(
                404,
                &Headers::default(),
                Framing::Chunked,
                ConnectionHeader::Close
            ),
            "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            head(
                200,
                &Headers::default(),
                Framing::UntilClose,
                ConnectionHeader::KeepAlive
            ),
            "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n"
        );
        assert_eq!(
            head(
                299,
                &Headers::default(),
                Framing::None,
                ConnectionHeader::Omit
            ),
            "HTTP/1.1 299 \r\n\r\n"
        );
    }

    #[test]
    fn fixed_lines_follow_the_fields_as_they_are() {
        let mut h = Headers::default();
        h.push_static("Content-Type", "text/css");
        h.set_lines("X-Frame-Options: DENY\r\nX-Content-Type-Options: nosniff\r\n");
        assert_eq!(
            head(200, &h, Framing::Length(0), ConnectionHeader::Omit),
            "HTTP/1.1 200 OK\r\nContent-Type: text/css\r\nX-Frame-Options: DENY\r\n\
             X-Content-Type-Options: nosniff\r\nContent-Length: 0\r\n\r\n"
        );
        assert_eq!(h.get("x-content-type-options"), Some("nosniff"));
        assert_eq!(h.get("Content-Type"), Some("text/css"));
        assert_eq!(h.get("Set-Cookie"), None);
        h.clear();
        assert_eq!(h.lines(), "");
    }

    #[test]
    fn handler_framing_and_unsafe_headers_dropped() {
        let mut h = Headers::default();
        h.push("content-length", "99");
        h.push("Transfer-Encoding", "gzip");
        h.push("Connection", "upgrade");
        h.push("X-Split", "a\r\nSet-Cookie: evil");
        h.push("Bad Name", "v");
        h.push("", "v");
        h.push("X-Ok", "fine");
        assert_eq!(
            head(200, &h, Framing::Length(0), ConnectionHeader::Omit),
            "HTTP/1.1 200 OK\r\nX-Ok: fine\r\nContent-Length: 0\r\n\r\n"
        );
    }

    #[test]
    fn plans() {
        let full = Body::Full(b"abc".to_vec());
        let stream = Body::Stream(Box::new(Nothing));
        let v11 = Version::Http11;
        let v10 = Version::Http10;
        let p = |s, h, v, b| plan(s, h, v, b);
        assert_eq!(
            p(200, false, v11, &full),
            Plan {
                framing: Framing::Length(3),
                send_body: true
            }
        );
        assert_eq!(
            p(200, true, v11, &full),
            Plan {
                framing: Framing::Length(3),
                send_body: false
            }
        );
        assert_eq!(
            p(200, false, v11, &Body::Empty),
            Plan {
                framing: Framing::Length(0),
                send_body: true
            }
        );
        assert_eq!(
            p(200, false, v11, &stream),
            Plan {
                framing: Framing::Chunked,
                send_body: true
            }
        );
        assert_eq!(
            p(200, true, v11, &stream),
            Plan {
                framing: Framing::Chunked,
                send_body: false
            }
        );
        assert_eq!(
            p(200, false, v10, &stream),
            Plan {
                framing: Framing::UntilClose,
                send_body: true
            }
        );
        assert_eq!(
            p(200, true, v10, &stream),
            Plan {
                framing: Framing::None,
                send_body: false
            }
        );
        assert_eq!(
            p(204, false, v11, &full),
            Plan {
                framing: Framing::None,
                send_body: false
            }
        );
        assert_eq!(
            p(304, false, v11, &stream),
            Plan {
                framing: Framing::None,
                send_body: false
            }
        );
    }

    #[test]
    fn chunks_are_framed_in_place_at_any_size() {
        for (max, len) in [
            (26, 26),
            (4096, 26),
            (4096, 4096),
            (16, 300),
            (0, 1),
            (1, 0),
        ] {
            let mut out = b"head".to_vec();
            let chunk = open_chunk(&mut out, max);
            out.extend(core::iter::repeat_n(b'x', len));
            close_chunk(&mut out, chunk);
            out.extend_from_slice(LAST_CHUNK);
            let mut want = b"head".to_vec();
            if len > 0 {
                want.extend_from_slice(format!("{len:x}\r\n").as_bytes());
                want.extend(core::iter::repeat_n(b'x', len));
                want.extend_from_slice(b"\r\n");
            }
            want.extend_from_slice(b"0\r\n\r\n");
            assert_eq!(out, want, "max {max} len {len}");
        }
    }

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        for n in [0, 9, 10, 255, 4096, 65_535, 1_000_000, usize::MAX] {
            let (mut dec, mut hex) = (Vec::new(), Vec::new());
            write_number(&mut dec, n, 10);
            write_number(&mut hex, n, 16);
            assert_eq!(dec, format!("{n}").into_bytes());
            assert_eq!(hex, format!("{n:x}").into_bytes());
        }
    }

    #[test]
    fn statuses() {
        assert_eq!(final_status(100), 500);
        assert_eq!(final_status(1000), 500);
        assert_eq!(final_status(0), 500);
        assert_eq!(final_status(404), 404);
        assert_eq!(reason(413), "Content Too Large");
        assert_eq!(reason(505), "HTTP Version Not Supported");
        let e = error(431, "too many header fields");
        assert_eq!(e.status, 431);
        assert!(
            matches!(e.body, Body::Full(ref b) if b == b"431 Request Header Fields Too Large: too many header fields\n")
        );
    }
}
