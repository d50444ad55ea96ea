//! A complete request head: parsed once by `httparse` into the request, and its framing
//! fields (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, `Expect`) judged
//! strictly, each as it is stored.

use alloc::vec;

use super::error::{ParseError, err};
use super::limits::Limits;
use super::syntax::list;
use crate::http::message::{Field, Method, Request, Version};

#[derive(Clone, Copy, Debug)]
pub(super) enum BodyKind {
    Length(usize),
    Chunked,
}

/// What a head says about framing (its method, target and fields go into the request).
pub(super) struct Head {
    pub(super) version: Version,
    pub(super) keep_alive: bool,
    pub(super) expect_continue: bool,
    pub(super) body: BodyKind,
}

/// Header fields parsed without allocating slots for them (a browser sends about a dozen).
const INLINE_FIELDS: usize = 24;

/// Parses a complete head (ending in an empty line) of `fields` lines after the request line
/// into `request` (whose target and fields are empty) and checks its framing headers.
pub(super) fn parse_head(
    buf: &[u8],
    limits: &Limits,
    fields: usize,
    request: &mut Request,
) -> Result<Head, ParseError> {
    // A head has at most one field a line: a usual one fits the slots on the stack.
    let mut inline = [httparse::EMPTY_HEADER; INLINE_FIELDS];
    let mut spilled;
    let slots = if fields <= INLINE_FIELDS {
        &mut inline[..limits.header_count.min(INLINE_FIELDS)]
    } else {
        spilled = vec![httparse::EMPTY_HEADER; limits.header_count];
        &mut spilled[..]
    };
    let mut req = httparse::Request::new(slots);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n == buf.len() => {}
        Ok(_) => return Err(err(400, "malformed request head")),
        Err(httparse::Error::TooManyHeaders) => return Err(err(431, "too many header fields")),
        Err(httparse::Error::Version) => return Err(version_error(buf)),
        Err(httparse::Error::HeaderName | httparse::Error::HeaderValue) => {
            return Err(err(400, "malformed header field"));
        }
        Err(_) => return Err(err(400, "malformed request line")),
    }
    let version = match req.version {
        Some(0) => Version::Http10,
        Some(1) => Version::Http11,
        _ => return Err(err(505, "HTTP version not supported")),
    };
    request.method = Method::from_token(req.method.unwrap_or(""));
    request.target.push_str(req.path.unwrap_or(""));
    let headers = &mut request.headers;

    let mut host = 0;
    let mut content_length: Option<u64> = None;
    let mut transfer_encoding = false;
    let mut codings = 0usize;
    let mut unknown_coding = false;
    let mut last_is_chunked = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut expect_continue = false;
    // A usual head is checked to be UTF-8 once, not value by value.
    let text = core::str::from_utf8(buf).ok();
    // Each field is recognised once, as it is stored, and judged by what it is.
    for h in req.headers.iter() {
        let at = (h.value.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
        let value = match text.and_then(|t| t.get(at..)?.get(..h.value.len())) {
            Some(v) => v,
            None => {
                core::str::from_utf8(h.value).map_err(|_| err(400, "header value is not UTF-8"))?
            }
        };
        match headers.add(h.name, value) {
            Some(Field::Host) => host += 1,
            Some(Field::ContentLength) => {
                for part in list(value) {
                    let n = decimal(part).ok_or(err(400, "malformed Content-Length"))?;
                    if content_length.is_some_and(|prev| prev != n) {
                        return Err(err(400, "conflicting Content-Length values"));
                    }
                    content_length = Some(n);
                }
                if content_length.is_none() {
                    return Err(err(400, "empty Content-Length"));
                }
            }
            Some(Field::TransferEncoding) => {
                transfer_encoding = true;
                for coding in list(value) {
                    codings += 1;
                    last_is_chunked = coding.eq_ignore_ascii_case("chunked");
                    unknown_coding |= !last_is_chunked;
                }
            }
            Some(Field::Connection) => {
                for token in list(value) {
                    close |= token.eq_ignore_ascii_case("close");
                    keep_alive_token |= token.eq_ignore_ascii_case("keep-alive");
                }
            }
            Some(Field::Expect) => {
                for token in list(value) {
                    if !token.eq_ignore_ascii_case("100-continue") {
                        return Err(err(417, "unsupported expectation"));
                    }
                    expect_continue = true;
                }
            }
            _ => {}
        }
    }
    if version == Version::Http11 && host != 1 {
        return Err(err(400, "HTTP/1.1 request needs exactly one Host"));
    }
    let body = if transfer_encoding {
        if version == Version::Http10 {
            return Err(err(400, "Transfer-Encoding in an HTTP/1.0 request"));
        }
        if content_length.is_some() {
            return Err(err(400, "both Content-Length and Transfer-Encoding"));
        }
        if unknown_coding {
            return Err(err(501, "unsupported transfer coding"));
        }
        if codings != 1 || !last_is_chunked {
            return Err(err(400, "malformed Transfer-Encoding"));
        }
        BodyKind::Chunked
    } else {
        let n = content_length.unwrap_or(0);
        if n > limits.body as u64 {
            return Err(err(413, "body over the size limit"));
        }
        // Fits: at most the body limit, a usize.
        BodyKind::Length(n as usize)
    };
    let keep_alive = match version {
        Version::Http11 => !close,
        Version::Http10 => keep_alive_token && !close,
    };
    // RFC 9110 §10.1.1: 100-continue means nothing from an HTTP/1.0 client.
    let expect_continue = expect_continue && version == Version::Http11;
    Ok(Head {
        version,
        keep_alive,
        expect_continue,
        body,
    })
}

/// Tells a well-formed but unsupported version (505) from garbage (400).
fn version_error(buf: &[u8]) -> ParseError {
    let line = buf
        .split(|&b| b == b'\n')
        .find(|l| !l.is_empty() && *l != b"\r");
    let line = line.unwrap_or(b"");
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or(b"");
    let well_formed = version.strip_prefix(b"HTTP/").is_some_and(|v| {
        !v.is_empty()
            && v.iter().all(|&b| b.is_ascii_digit() || b == b'.')
            && v.first().is_some_and(u8::is_ascii_digit)
            && v.last().is_some_and(u8::is_ascii_digit)
    });
    if well_formed {
        err(505, "HTTP version not supported")
    } else {
        err(400, "malformed HTTP version")
    }
}

/// A `Content-Length` value: digits only; anything too big for u64 saturates (it is over
/// every limit anyway).
fn decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |n, b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}
