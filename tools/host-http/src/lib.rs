//! The host side's one HTTP/1.x response reader. The rig's tests, the bench, `cargo xtask
//! deploy` and the rig's image fetch read responses through it; each writes its own request
//! bytes, since the raw-HTTP tests must send exactly what they mean.
//!
//! The core is sans-IO: [`parse`] finds one complete response at the start of a buffer, so the
//! bench can feed it what its own TCP stack received. [`read_response`] does the reading for any
//! `Read`, and keeps what follows the response for the next one on a kept-alive connection.

#![forbid(unsafe_code)]

mod chunked;
mod head;

use std::fmt;
use std::io::{self, Read};

pub use chunked::Dechunker;
pub use head::{Framing, Head};

/// One complete response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub headers: Vec<(String, String)>,
    /// The body, chunks joined.
    pub body: Vec<u8>,
}

impl Response {
    /// The first field called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        head::field(&self.headers, name)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why no response could be read.
#[derive(Debug)]
pub enum Error {
    Io(io::Error),
    /// The connection ended before the response did.
    Closed,
    /// The head is not HTTP/1.x.
    Head(httparse::Error),
    BadContentLength(String),
    /// A chunk's size line, or the line end after its data, is malformed.
    BadChunk,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Closed => f.write_str("the connection ended before the response"),
            Error::Head(e) => write!(f, "malformed response head: {e}"),
            Error::BadContentLength(v) => write!(f, "bad Content-Length `{v}`"),
            Error::BadChunk => f.write_str("malformed chunked body"),
        }
    }
}

impl std::error::Error for Error {}

/// The complete response at the start of `buf` and how many bytes it takes; `None` while it is
/// incomplete. `head_request`: the response answers a HEAD (it has no body whatever its head
/// says). `eof`: nothing more will arrive, which ends a body framed by the connection's close.
pub fn parse(
    buf: &[u8],
    head_request: bool,
    eof: bool,
) -> Result<Option<(Response, usize)>, Error> {
    let Some((head, head_len)) = Head::parse(buf)? else {
        return Ok(None);
    };
    let rest = &buf[head_len..];
    let (body, used) = match head.framing(head_request)? {
        Framing::Empty => (Vec::new(), 0),
        Framing::Length(n) => match rest.get(..n) {
            Some(b) => (b.to_vec(), n),
            None => return Ok(None),
        },
        Framing::Close if eof => (rest.to_vec(), rest.len()),
        Framing::Close => return Ok(None),
        Framing::Chunked => {
            // Walk first, so an incomplete body costs no copy (the bench asks on every step).
            if chunked::walk(rest, |_| {})?.is_none() {
                return Ok(None);
            }
            let mut body = Vec::new();
            let used = chunked::walk(rest, |d| body.extend_from_slice(d))?.unwrap_or(0);
            (body, used)
        }
    };
    Ok(Some((head.with_body(body), head_len + used)))
}

/// How many bytes the complete response at the start of `buf` takes, without building it;
/// `None` while it is incomplete (a body framed by the close always is).
pub fn response_len(buf: &[u8], head_request: bool) -> Result<Option<usize>, Error> {
    let Some((head, head_len)) = Head::parse(buf)? else {
        return Ok(None);
    };
    let rest = &buf[head_len..];
    let used = match head.framing(head_request)? {
        Framing::Empty => Some(0),
        Framing::Length(n) => (rest.len() >= n).then_some(n),
        Framing::Close => None,
        Framing::Chunked => chunked::walk(rest, |_| {})?,
    };
    Ok(used.map(|u| head_len + u))
}

/// Reads one response from `r`. `buf` holds what earlier reads left over and keeps what follows
/// this response, for the next one on a kept-alive connection.
pub fn read_response(
    r: &mut impl Read,
    buf: &mut Vec<u8>,
    head_request: bool,
) -> Result<Response, Error> {
    let mut eof = false;
    loop {
        if let Some((resp, used)) = parse(buf, head_request, eof)? {
            buf.drain(..used);
            return Ok(resp);
        }
        if eof {
            return Err(Error::Closed);
        }
        eof = !fill(r, buf)?;
    }
}

/// Appends one read's bytes to `buf`; false at the end of the stream.
pub fn fill(r: &mut impl Read, buf: &mut Vec<u8>) -> Result<bool, Error> {
    let mut b = [0u8; 16 << 10];
    match r.read(&mut b) {
        Ok(0) => Ok(false),
        Ok(n) => {
            buf.extend_from_slice(&b[..n]);
            Ok(true)
        }
        Err(e) => Err(Error::Io(e)),
    }
}

#[cfg(test)]
mod tests;
