//! The request and response types shared by the HTTP layer (which parses and frames them) and
//! the handlers above it (the MCP endpoint, the status page). No I/O here.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// An HTTP request method. Unknown methods are kept so a handler can answer 405 with `Allow`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Other(String),
}

impl Method {
    /// The method for a request-line token (methods are case-sensitive).
    pub fn from_token(token: &str) -> Self {
        match token {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            other => Method::Other(String::from(other)),
        }
    }

    /// The method's token as it appears on the request line and in `Allow`.
    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other(s) => s.as_str(),
        }
    }
}

/// Header fields in arrival order. Names are compared case-insensitively. All names and values
/// share one string, and the usual few fields are indexed in the struct itself, so a request's
/// or a response's fields cost one allocation, not two each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    /// Each field's name then its value, one field after another.
    text: String,
    /// Where each of the first fields' name ends and value ends in `text`, while they fit.
    inline: [(u16, u16); INLINE_FIELDS],
    inline_len: usize,
    /// The same for the fields after those (every field once one did not fit inline).
    more: Vec<(usize, usize)>,
}

/// Room the first field reserves: a request head's usual fields fit without growing.
const TYPICAL_TEXT: usize = 320;
/// Fields indexed without an allocation: a client's MCP request, a response. (Few enough
/// that a `Response` stays small to move around.)
const INLINE_FIELDS: usize = 8;

impl Headers {
    /// The first value of header `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Adds a header field.
    pub fn push(&mut self, name: impl AsRef<str>, value: impl AsRef<str>) {
        if self.text.is_empty() {
            self.text.reserve(TYPICAL_TEXT);
        }
        self.text.push_str(name.as_ref());
        let name_end = self.text.len();
        self.text.push_str(value.as_ref());
        let end = self.text.len();
        let slot = match (u16::try_from(name_end), u16::try_from(end)) {
            (Ok(n), Ok(e)) if self.more.is_empty() => self
                .inline
                .get_mut(self.inline_len)
                .map(|slot| (slot, (n, e))),
            _ => None,
        };
        match slot {
            Some((slot, ends)) => {
                *slot = ends;
                self.inline_len += 1;
            }
            None => self.more.push((name_end, end)),
        }
    }

    /// The fields (name, value) in the order they were added.
    pub fn iter(&self) -> Fields<'_> {
        Fields {
            headers: self,
            next: 0,
            start: 0,
            rest: &self.text,
        }
    }

    /// Where field `i`'s name and value end in `text`.
    fn ends(&self, i: usize) -> Option<(usize, usize)> {
        match self.inline.get(..self.inline_len).and_then(|f| f.get(i)) {
            Some(&(n, e)) => Some((usize::from(n), usize::from(e))),
            None => self.more.get(i.checked_sub(self.inline_len)?).copied(),
        }
    }
}

/// The fields of [`Headers`] in order (one plain iterator: chained ones cost the image a
/// copy of their loops for every search over the fields).
pub struct Fields<'a> {
    headers: &'a Headers,
    next: usize,
    /// Where the next field's name starts.
    start: usize,
    /// The text from there: each field is split off its front (cheaper than slicing the
    /// whole text twice a field).
    rest: &'a str,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let (name_end, end) = self.headers.ends(self.next)?;
        let (name, tail) = self
            .rest
            .split_at_checked(name_end.checked_sub(self.start)?)?;
        let (value, rest) = tail.split_at_checked(end.checked_sub(name_end)?)?;
        self.next += 1;
        self.start = end;
        self.rest = rest;
        Some((name, value))
    }
}

/// One complete request: the body has been received in full (and de-chunked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// The request target as sent: path plus optional `?query`.
    pub target: String,
    pub headers: Headers,
    pub body: Vec<u8>,
    /// How its head got past [`Handler::admit`]: set by the connection that admitted it, so
    /// the handler need not judge the same head again; `None` for a request built by hand.
    pub admission: Option<Admission>,
}

impl Request {
    /// The path part of the target, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// What a streamed body source reports when asked for more bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum BodyPoll {
    /// Some bytes were appended to the buffer; ask again.
    Data,
    /// Nothing to send yet (work continues on a later poll).
    Pending,
    /// The body is complete (bytes may have been appended in this call too).
    End,
}

/// A response body produced piece by piece across polls (SSE streams, big tool results).
pub trait BodySource {
    /// Append at most `max` bytes to `out`. `now_ms` is the monotonic clock.
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, now_ms: u64) -> BodyPoll;
    /// The peer went away before the end: stop the work behind the body.
    fn cancel(&mut self) {}
}

/// A response body.
pub enum Body {
    Empty,
    Full(Vec<u8>),
    /// Sent with chunked transfer coding as it is produced.
    Stream(Box<dyn BodySource>),
}

/// A response as a handler produces it; the HTTP layer adds `Content-Length` or
/// `Transfer-Encoding`, `Connection` and `Date`-free framing.
pub struct Response {
    pub status: u16,
    pub headers: Headers,
    pub body: Body,
}

impl Response {
    /// A response with a complete body and its content type.
    pub fn full(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        let mut headers = Headers::default();
        headers.push("Content-Type", content_type);
        Response {
            status,
            headers,
            body: Body::Full(body.into()),
        }
    }

    /// A response with no body.
    pub fn empty(status: u16) -> Self {
        Response {
            status,
            headers: Headers::default(),
            body: Body::Empty,
        }
    }
}

/// How a request got past [`Handler::admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// It proved who sent it (the bearer token, or no token is configured).
    Authenticated,
    /// It needs no credentials (the status page).
    Anonymous,
}

/// Something that answers requests: the module's router, the MCP endpoint.
pub trait Handler {
    /// Judges a request from its head alone, before any body byte is read or `100 Continue`
    /// is sent (`head.body` is empty): `Err` is the answer (401, 403, 404, 413...), and the
    /// body is then discarded unread. The default admits everything anonymously.
    fn admit(&mut self, head: &Request, peer: Peer, now_ms: u64) -> Result<Admission, Response> {
        let _ = (head, peer, now_ms);
        Ok(Admission::Anonymous)
    }

    /// Answer one request. `now_ms` is the monotonic clock; `peer` identifies the client
    /// connection's remote address (for per-client limits).
    fn handle(&mut self, req: Request, peer: Peer, now_ms: u64) -> Response;

    /// The connection served next arrived on this local port: a server listening on several
    /// ports calls it before each connection's turn, so a handler can answer differently per
    /// port (the module serves only its status page on port 80). The default ignores it.
    fn on_port(&mut self, local_port: u16) {
        let _ = local_port;
    }
}

/// The remote end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Peer {
    pub addr: [u8; 4],
    pub port: u16,
}

#[cfg(test)]
mod tests {
    use super::Headers;
    use alloc::vec::Vec;

    #[test]
    fn fields_past_the_inline_ones_keep_their_order() {
        let mut h = Headers::default();
        let names: Vec<alloc::string::String> = (0..30).map(|i| alloc::format!("X-{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            h.push(n, alloc::format!("v{i}"));
        }
        let all: Vec<(&str, &str)> = h.iter().collect();
        assert_eq!(all.len(), 30);
        for (i, (n, v)) in all.iter().enumerate() {
            assert_eq!(
                (*n, *v),
                (names[i].as_str(), alloc::format!("v{i}").as_str())
            );
        }
        assert_eq!(h.get("x-29"), Some("v29"));
        assert_eq!(h.get("x-7"), Some("v7"));
        assert_eq!(h.get("x-8"), Some("v8"));
    }

    #[test]
    fn fields_past_what_a_short_offset_holds_are_kept_in_order() {
        let mut h = Headers::default();
        let long = "y".repeat(70_000);
        h.push("A", "1");
        h.push("Long", &long);
        h.push("B", "2");
        let all: Vec<(&str, &str)> = h.iter().collect();
        assert_eq!(all, [("A", "1"), ("Long", long.as_str()), ("B", "2")]);
    }

    #[test]
    fn fields_keep_their_order_and_the_first_of_a_name_is_found() {
        let mut h = Headers::default();
        assert_eq!(h.get("Host"), None);
        h.push("Host", "indy");
        h.push("X-Empty", "");
        h.push("host", "other");
        h.push("Accept", "text/event-stream, application/json ✓");
        assert_eq!(h.get("HOST"), Some("indy"));
        assert_eq!(h.get("x-empty"), Some(""));
        assert_eq!(h.get("Accep"), None);
        let all: Vec<(&str, &str)> = h.iter().collect();
        assert_eq!(
            all,
            [
                ("Host", "indy"),
                ("X-Empty", ""),
                ("host", "other"),
                ("Accept", "text/event-stream, application/json ✓"),
            ]
        );
    }
}
