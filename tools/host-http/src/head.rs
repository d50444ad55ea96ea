//! A response head (httparse reads it) and how its body is framed.

use crate::{Error, Response};

/// Fields read from one head; the module sends about ten.
const MAX_FIELDS: usize = 64;

/// A response's status line and fields.
#[derive(Debug)]
pub struct Head {
    pub status: u16,
    pub reason: String,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub headers: Vec<(String, String)>,
}

/// Where a response's body ends.
#[derive(Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body: a HEAD's answer, 1xx, 204, 304.
    Empty,
    Length(usize),
    Chunked,
    /// At the end of the connection (neither length nor chunks given).
    Close,
}

impl Head {
    /// The head at the start of `buf` and its length, blank line included; `None` while it is
    /// incomplete.
    pub fn parse(buf: &[u8]) -> Result<Option<(Head, usize)>, Error> {
        let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut r = httparse::Response::new(&mut fields);
        let len = match r.parse(buf).map_err(Error::Head)? {
            httparse::Status::Partial => return Ok(None),
            httparse::Status::Complete(len) => len,
        };
        let head = Head {
            status: r.code.unwrap_or(0),
            reason: r.reason.unwrap_or("").to_string(),
            version: r.version.unwrap_or(1),
            headers: r
                .headers
                .iter()
                .map(|h| {
                    let value = String::from_utf8_lossy(h.value).trim().to_string();
                    (h.name.to_string(), value)
                })
                .collect(),
        };
        Ok(Some((head, len)))
    }

    /// The first field called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        field(&self.headers, name)
    }

    /// The status line as the server sent it (`HTTP/1.0 404 Not Found`).
    pub fn status_line(&self) -> String {
        let line = format!("HTTP/1.{} {} {}", self.version, self.status, self.reason);
        line.trim_end().to_string()
    }

    /// Whether the last transfer coding is chunked.
    pub fn is_chunked(&self) -> bool {
        self.header("transfer-encoding")
            .and_then(|v| v.rsplit(',').next())
            .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"))
    }

    /// How the body is framed (RFC 9112 §6.3). `head_request`: the response answers a HEAD.
    pub fn framing(&self, head_request: bool) -> Result<Framing, Error> {
        if head_request || self.status / 100 == 1 || matches!(self.status, 204 | 304) {
            return Ok(Framing::Empty);
        }
        if self.is_chunked() {
            return Ok(Framing::Chunked);
        }
        match self.header("content-length") {
            Some(v) => v
                .parse()
                .map(Framing::Length)
                .map_err(|_| Error::BadContentLength(v.to_string())),
            None => Ok(Framing::Close),
        }
    }

    pub(crate) fn with_body(self, body: Vec<u8>) -> Response {
        Response {
            status: self.status,
            reason: self.reason,
            version: self.version,
            headers: self.headers,
            body,
        }
    }
}

pub(crate) fn field<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
