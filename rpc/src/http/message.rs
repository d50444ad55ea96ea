//! The request and response types shared by the HTTP layer (which parses and frames them) and
//! the handlers above it (the MCP endpoint, the status page). No I/O here.

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

/// An HTTP request method. Unknown methods are kept so a handler can answer 405 with `Allow`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Method {
    #[default]
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

/// The HTTP version of a request; only these two are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// Header fields in arrival order. Names are compared case-insensitively. All names and values
/// share one string, and the usual few fields are indexed in the struct itself, so a request's
/// fields cost one allocation, not two each (none once a connection's request is recycled). The
/// fields every request is judged by ([`Field`]) are recognised once, as they are added, so
/// looking one up compares no names. A response's fixed fields (`push_static`) are not copied
/// at all.
#[derive(Clone, Debug, Default)]
pub struct Headers {
    /// Each field's name then its value, one field after another.
    text: String,
    /// Where each of the first fields' name ends and value ends in `text`, while they fit.
    inline: [(u16, u16); INLINE_FIELDS],
    inline_len: usize,
    /// The same for the fields after those (every field once one did not fit inline).
    more: Vec<(usize, usize)>,
    /// For each [`Field`], the index plus one of its first field in `text` (0: none seen).
    first: [usize; KNOWN.len()],
    /// Fields whose name and value are both `'static`; they come before the others.
    statics: [(&'static str, &'static str); STATIC_FIELDS],
    statics_len: usize,
    /// Whole header lines fixed at build time (`Name: value\r\n` each), sent as they are
    /// after the fields: a page's security headers, a few hundred bytes that no answer
    /// should pay a field's check and slot for (their form is checked by the tests of the
    /// code that sets them).
    lines: &'static str,
}

/// Room the first field reserves: a request head's usual fields fit without growing.
const TYPICAL_TEXT: usize = 320;
/// Fields indexed without an allocation: a client's MCP request, a response. (Few enough
/// that a `Response` stays small to move around.)
const INLINE_FIELDS: usize = 8;
/// Static fields held without copying: a response's content type and one more.
const STATIC_FIELDS: usize = 2;

/// The header fields the HTTP layer frames a request by and the MCP endpoint judges it by, in
/// the order of their names' lengths. The endpoint's names are here, not in `mcp`, because
/// they are recognised against this fixed table while the head is parsed (one index, built
/// once; the endpoint reads it through `mcp::request::Head` and compares no names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Host,
    Expect,
    Origin,
    Accept,
    McpName,
    Connection,
    McpMethod,
    ContentType,
    Irix7Policy,
    Authorization,
    ContentLength,
    McpSessionId,
    AcceptEncoding,
    TransferEncoding,
    McpProtocolVersion,
}

/// Each [`Field`] and its name in lower case, in the enum's order (so a field's discriminant
/// indexes this table and [`Headers`]' index of first fields; checked below).
const KNOWN: [(Field, &str); 15] = [
    (Field::Host, "host"),
    (Field::Expect, "expect"),
    (Field::Origin, "origin"),
    (Field::Accept, "accept"),
    (Field::McpName, "mcp-name"),
    (Field::Connection, "connection"),
    (Field::McpMethod, "mcp-method"),
    (Field::ContentType, "content-type"),
    (Field::Irix7Policy, "irix7-policy"),
    (Field::Authorization, "authorization"),
    (Field::ContentLength, "content-length"),
    (Field::McpSessionId, "mcp-session-id"),
    (Field::AcceptEncoding, "accept-encoding"),
    (Field::TransferEncoding, "transfer-encoding"),
    (Field::McpProtocolVersion, "mcp-protocol-version"),
];

const _: () = {
    let mut i = 0;
    while i < KNOWN.len() {
        assert!(KNOWN[i].0 as usize == i, "KNOWN is in the enum's order");
        if i > 0 {
            assert!(
                KNOWN[i - 1].1.len() <= KNOWN[i].1.len(),
                "KNOWN is in the order of its names' lengths (Field::of finds them by it)"
            );
        }
        i += 1;
    }
};

impl Field {
    /// The field a name is, in any case.
    pub fn of(name: &str) -> Option<Field> {
        // The length tells most fields apart: a name is compared with one or two at most,
        // found by its length rather than by a walk of the table (each field of every
        // request is recognised here).
        let candidates: &[(Field, &str)] = match name.len() {
            4 => &KNOWN[0..1],
            6 => &KNOWN[1..4],
            8 => &KNOWN[4..5],
            10 => &KNOWN[5..7],
            12 => &KNOWN[7..9],
            13 => &KNOWN[9..10],
            14 => &KNOWN[10..12],
            15 => &KNOWN[12..13],
            17 => &KNOWN[13..14],
            20 => &KNOWN[14..15],
            _ => &[],
        };
        candidates
            .iter()
            .find(|(_, k)| is_field(name, k))
            .map(|&(field, _)| field)
    }
}

/// Whether `name` is `lower`, one of the [`KNOWN`] names (lower-case letters, digits and `-`),
/// in any case: a byte may differ from `lower`'s only in the case bit, and only where `lower`
/// has a letter (bit 6 set in a letter, clear in a digit and in `-`). A few operations a byte, where
/// `eq_ignore_ascii_case` lowers both sides of every byte.
/// Four bytes at a time: the case bit of each byte of a word is where bit 6 of `lower`'s byte
/// is, shifted within that byte, so the test is the same for a word as for a byte.
fn is_field(name: &str, lower: &str) -> bool {
    let (name, lower) = (name.as_bytes(), lower.as_bytes());
    if name.len() != lower.len() {
        return false;
    }
    let folds = |a: u32, b: u32| a | ((b & 0x4040_4040) >> 1) == b;
    let (words, rest) = name.as_chunks::<4>();
    let (known, known_rest) = lower.as_chunks::<4>();
    words
        .iter()
        .zip(known)
        .all(|(a, b)| folds(u32::from_be_bytes(*a), u32::from_be_bytes(*b)))
        && rest
            .iter()
            .zip(known_rest)
            .all(|(&a, &b)| folds(u32::from(a), u32::from(b)))
}

impl Headers {
    /// The first value of header `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .or_else(|| self.line(name))
    }

    /// The value of `name` among the fixed lines (none on a request: no search then).
    #[inline(never)]
    fn line(&self, name: &str) -> Option<&'static str> {
        if self.lines.is_empty() {
            return None;
        }
        self.lines
            .split("\r\n")
            .filter_map(|line| line.split_once(": "))
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Sets the fixed header lines sent after the fields (see the field `lines`).
    pub fn set_lines(&mut self, lines: &'static str) {
        self.lines = lines;
    }

    /// The fixed header lines, as they are sent.
    pub fn lines(&self) -> &'static str {
        self.lines
    }

    /// The first value of a [`Field`] a request sent, found without comparing names (see
    /// [`Headers::get`]; a response's fixed fields, [`Headers::push_static`], are not looked
    /// up here). Not inlined: a caller looks up several, and one copy of the lookup is enough.
    #[inline(never)]
    pub fn field(&self, field: Field) -> Option<&str> {
        let i = self.first.get(field as usize)?.checked_sub(1)?;
        self.value(i)
    }

    /// Adds a header field.
    pub fn push(&mut self, name: impl AsRef<str>, value: impl AsRef<str>) {
        self.add(name.as_ref(), value.as_ref());
    }

    /// Adds a header field; returns which [`Field`] it is, if one (the parser judges a
    /// request's framing by that).
    pub fn add(&mut self, name: &str, value: &str) -> Option<Field> {
        if self.text.capacity() == 0 {
            self.text.reserve(TYPICAL_TEXT);
        }
        let index = self.inline_len + self.more.len();
        let field = Field::of(name);
        if let Some(first) = field.and_then(|f| self.first.get_mut(f as usize))
            && *first == 0
        {
            *first = index + 1;
        }
        self.text.push_str(name);
        let name_end = self.text.len();
        self.text.push_str(value);
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
        field
    }

    /// Adds a field whose name and value are fixed text: held without a copy (while there is
    /// room), and sent before the fields added with [`Headers::push`].
    pub fn push_static(&mut self, name: &'static str, value: &'static str) {
        match self.statics.get_mut(self.statics_len) {
            Some(slot) => {
                *slot = (name, value);
                self.statics_len += 1;
            }
            None => self.push(name, value),
        }
    }

    /// Forgets every field, keeping the room the text had (a recycled request's).
    pub fn clear(&mut self) {
        self.text.clear();
        self.inline_len = 0;
        self.more.clear();
        self.first = [0; KNOWN.len()];
        self.statics_len = 0;
        self.lines = "";
    }

    /// The room the fields hold on the heap.
    pub fn capacity(&self) -> usize {
        self.text.capacity() + self.more.capacity() * core::mem::size_of::<(usize, usize)>()
    }

    /// The fields (name, value) in the order they were added, the static ones first.
    pub fn iter(&self) -> Fields<'_> {
        Fields {
            headers: self,
            next: 0,
            statics: self.statics.get(..self.statics_len).unwrap_or_default(),
            start: 0,
            rest: &self.text,
        }
    }

    /// The value of the text field `i`.
    fn value(&self, i: usize) -> Option<&str> {
        let (name_end, end) = self.ends(i)?;
        self.text.get(name_end..end)
    }

    /// Where field `i`'s name and value end in `text`.
    fn ends(&self, i: usize) -> Option<(usize, usize)> {
        match self.inline.get(..self.inline_len).and_then(|f| f.get(i)) {
            Some(&(n, e)) => Some((usize::from(n), usize::from(e))),
            None => self.more.get(i.checked_sub(self.inline_len)?).copied(),
        }
    }
}

/// Headers are equal when they list the same fields in the same order, and the same fixed
/// lines.
impl PartialEq for Headers {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter()) && self.lines == other.lines
    }
}

impl Eq for Headers {}

/// The fields of [`Headers`] in order (one plain iterator: chained ones cost the image a
/// copy of their loops for every search over the fields).
pub struct Fields<'a> {
    headers: &'a Headers,
    next: usize,
    /// The static fields not yet yielded.
    statics: &'a [(&'static str, &'static str)],
    /// Where the next field's name starts.
    start: usize,
    /// The text from there: each field is split off its front (cheaper than slicing the
    /// whole text twice a field).
    rest: &'a str,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        if let Some((&(name, value), rest)) = self.statics.split_first() {
            self.statics = rest;
            return Some((name, value));
        }
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// The request target as sent: path plus optional `?query`.
    pub target: String,
    pub headers: Headers,
    pub body: Vec<u8>,
    /// How its head got past [`Handler::admit`]: set by the connection that admitted it, so
    /// the handler need not judge the same head again; `None` for a request built by hand.
    pub admission: Option<Admission>,
    /// An empty buffer with the room of an earlier answer on the same connection: a handler
    /// that writes its answer into it (taking it) allocates nothing for the answer.
    pub answer: Vec<u8>,
    /// Requests its connection carried before it (0 for the first): a handler can tell a
    /// client that keeps its connection from one that opens a connection a request.
    pub earlier: u32,
}

impl Request {
    /// The path part of the target, without the query.
    pub fn path(&self) -> &str {
        let end = self.target.bytes().position(|b| b == b'?');
        self.target
            .get(..end.unwrap_or(self.target.len()))
            .unwrap_or("")
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
    /// A complete body around bytes many answers share (the tool listings): sent from where
    /// they are kept, never copied into each answer.
    Spliced(Vec<u8>, Splice),
    /// Sent with chunked transfer coding as it is produced.
    Stream(Box<dyn BodySource>),
}

/// Shared bytes spliced into an answer's own: the body is the own bytes up to `at`, then
/// `shared[range]`, then the rest of the own bytes.
#[derive(Clone)]
pub struct Splice {
    pub at: usize,
    pub shared: Shared,
    pub range: Range<usize>,
}

/// Where a splice's shared bytes are kept: on the heap, with every answer that shares them
/// (the tool listings), or in the image (the console's assets): either way no answer copies
/// them.
#[derive(Clone)]
pub enum Shared {
    Kept(Rc<Vec<u8>>),
    Image(&'static [u8]),
}

impl Splice {
    /// The shared bytes it splices in.
    pub fn bytes(&self) -> &[u8] {
        let all: &[u8] = match &self.shared {
            Shared::Kept(bytes) => bytes,
            Shared::Image(bytes) => bytes,
        };
        all.get(self.range.clone()).unwrap_or_default()
    }
}

impl Body {
    /// A complete body as one buffer (a spliced one copied together): for the few places
    /// that put answers inside another (a batch).
    pub fn joined(self) -> Body {
        match self {
            Body::Spliced(mut own, splice) => {
                let tail = own.split_off(splice.at.min(own.len()));
                own.extend_from_slice(splice.bytes());
                own.extend_from_slice(&tail);
                Body::Full(own)
            }
            other => other,
        }
    }
}

/// A response as a handler produces it; the HTTP layer adds `Content-Length` or
/// `Transfer-Encoding`, `Connection` and `Date`-free framing.
pub struct Response {
    pub status: u16,
    pub headers: Headers,
    pub body: Body,
    /// The answer turns its request away for load without an error status (a tool result
    /// `E_BUSY`); 429 and 503 do so by their status. The connection then owes its peer no
    /// work, and a server short of slots may let it go first.
    pub turned_away: bool,
}

impl Response {
    /// A response with a complete body and its content type.
    pub fn full(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        Self::complete(status, content_type, body.into())
    }

    /// [`Response::full`] once the body is a buffer: one copy in the image, not one per
    /// place that answers.
    #[inline(never)]
    fn complete(status: u16, content_type: &'static str, body: Vec<u8>) -> Self {
        let mut headers = Headers::default();
        headers.push_static("Content-Type", content_type);
        Response {
            status,
            headers,
            body: Body::Full(body),
            turned_away: false,
        }
    }

    /// A response with no body.
    pub fn empty(status: u16) -> Self {
        Response {
            status,
            headers: Headers::default(),
            body: Body::Empty,
            turned_away: false,
        }
    }
}

/// How a request got past [`Handler::admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// It proved who sent it: a token was checked and matched. The number says which, in
    /// the handler's own numbering, so handling the request need not compare it again.
    Authenticated(u8),
    /// It proved nothing: it needs no credentials (the status page), or none are configured.
    Anonymous,
}

/// The highest rank a [`Handler::rank`] gives: nothing outranks it, so a connection of this
/// rank may take a full port's last slot without another giving way.
pub const RANK_TOP: u8 = u8::MAX;

/// Something that answers requests: the module's router, the MCP endpoint.
pub trait Handler {
    /// Judges a request from its head alone, before any body byte is read or `100 Continue`
    /// is sent (`head.body` is empty): `Err` is the answer (401, 403, 404, 413...), and the
    /// body is then discarded unread. `proven` is the token an earlier request on the same
    /// connection was last admitted with ([`Admission::Authenticated`]): a throttle of failed
    /// logins need not stop a request bearing that same token. The default admits everything anonymously.
    fn admit(
        &mut self,
        head: &Request,
        peer: Peer,
        proven: Option<u8>,
        now_ms: u64,
    ) -> Result<Admission, Response> {
        let _ = (head, peer, proven, now_ms);
        Ok(Admission::Anonymous)
    }

    /// Answer one request. `now_ms` is the monotonic clock; `peer` identifies the client
    /// connection's remote address (for per-client limits). The request is lent: the
    /// connection keeps its buffers for the next one (take what the answer should own).
    fn handle(&mut self, req: &mut Request, peer: Peer, now_ms: u64) -> Response;

    /// How a request admitted with token `token` (as [`Admission::Authenticated`] numbers
    /// them) ranks when a port's slots run short; a connection ranks as its last such request.
    /// A connection that proves a token in its port's last slot takes the slot of the
    /// lowest-ranked connection below it, and is refused when it outranks none and is not of
    /// [`RANK_TOP`] (the module's `HttpServer`). The default ranks every token at the top, so
    /// nothing is taken by rank.
    fn rank(&self, head: &Request, token: u8) -> u8 {
        let _ = (head, token);
        RANK_TOP
    }

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
    use super::{Field, Headers, is_field};
    use alloc::vec::Vec;

    #[test]
    fn a_name_is_told_a_word_at_a_time_as_a_byte_at_a_time() {
        let by_bytes = |name: &[u8], lower: &[u8]| {
            name.len() == lower.len()
                && name
                    .iter()
                    .zip(lower)
                    .all(|(&a, &b)| a | ((b & 0x40) >> 1) == b)
        };
        // Every byte value at every place of every known name, and the names cut short.
        for (_, k) in super::KNOWN {
            for at in 0..k.len() {
                for v in 0..=255u8 {
                    let mut name = k.as_bytes().to_vec();
                    name[at] = v;
                    if let Ok(text) = core::str::from_utf8(&name) {
                        assert_eq!(is_field(text, k), by_bytes(&name, k.as_bytes()), "{name:?}");
                    }
                }
                assert!(!is_field(&k[..at], k));
            }
        }
    }

    #[test]
    fn a_field_name_matches_only_by_the_case_of_its_letters() {
        assert!(is_field("Mcp-Session-Id", "mcp-session-id"));
        assert!(is_field("MCP-SESSION-ID", "mcp-session-id"));
        // `-` and `\r` differ only in the bit that tells a letter's case.
        assert!(!is_field("Mcp\rSession-Id", "mcp-session-id"));
        assert!(!is_field("Mcp\x0dSession\x0dId", "mcp-session-id"));
        // `A`..`Z` become their lower case, nothing else does.
        assert!(!is_field("!ccept", "accept"));
        assert!(!is_field("Accep", "accept"));
        assert!(!is_field("Acceptx", "accept"));
        assert!(!is_field("Bccept", "accept"));
        for (_, k) in super::KNOWN {
            assert!(
                k.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{k}"
            );
            // Every byte that could stand for one of a known name's: only its two cases.
            for (i, b) in k.bytes().enumerate() {
                for x in 0..=255u8 {
                    let mut name = k.as_bytes().to_vec();
                    name[i] = x;
                    let Ok(name) = core::str::from_utf8(&name) else {
                        continue;
                    };
                    let want = x == b || (b.is_ascii_lowercase() && x == b.to_ascii_uppercase());
                    assert_eq!(is_field(name, k), want, "{name:?} {k}");
                }
            }
        }
    }

    #[test]
    fn a_known_field_is_the_first_of_its_name_as_get_finds_it() {
        let mut h = Headers::default();
        assert_eq!(h.add("X-Other", "1"), None);
        assert_eq!(h.add("CONTENT-length", "5"), Some(Field::ContentLength));
        assert_eq!(h.add("Content-Length", "6"), Some(Field::ContentLength));
        assert_eq!(h.add("mcp-session-id", "s"), Some(Field::McpSessionId));
        assert_eq!(h.field(Field::ContentLength), Some("5"));
        assert_eq!(h.field(Field::ContentLength), h.get("content-length"));
        assert_eq!(h.field(Field::McpSessionId), Some("s"));
        assert_eq!(h.field(Field::Host), None);
        for (i, &(field, name)) in super::KNOWN.iter().enumerate() {
            assert_eq!(Field::of(name), Some(field));
            assert_eq!(field as usize, i);
            assert_eq!(Field::of(&name[1..]), None);
            assert_eq!(
                Field::of(&name.to_ascii_uppercase()).map(|f| f as usize),
                Some(i)
            );
        }
        // Cleared, nothing is found, and the next fields are indexed afresh.
        h.clear();
        assert_eq!(h.field(Field::ContentLength), None);
        assert_eq!(h.iter().count(), 0);
        h.push("Host", "a");
        assert_eq!(h.field(Field::Host), Some("a"));
        assert_eq!(h.field(Field::McpSessionId), None);
    }

    #[test]
    fn static_fields_come_first_and_spill_into_the_text() {
        let mut h = Headers::default();
        h.push("Mcp-Session-Id", "abc");
        h.push_static("Content-Type", "application/json");
        h.push_static("Cache-Control", "no-store");
        h.push_static("Retry-After", "1");
        let all: Vec<(&str, &str)> = h.iter().collect();
        assert_eq!(
            all,
            [
                ("Content-Type", "application/json"),
                ("Cache-Control", "no-store"),
                ("Mcp-Session-Id", "abc"),
                ("Retry-After", "1"),
            ]
        );
        assert_eq!(
            h.field(Field::ContentType),
            None,
            "a fixed field is not looked up"
        );
        assert_eq!(h.get("content-type"), Some("application/json"));
        assert_eq!(h.get("retry-after"), Some("1"));
        let mut same = Headers::default();
        for (n, v) in all {
            same.push(n, v);
        }
        assert_eq!(h, same, "equal by their fields");
    }

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
        // A known field far down is found, as the first of its name.
        for i in 30..300 {
            h.push(alloc::format!("X-{i}"), "");
        }
        h.push("mcp-session-id", "late");
        h.push("Mcp-Session-Id", "later");
        assert_eq!(h.field(Field::McpSessionId), Some("late"));
        assert_eq!(h.field(Field::Host), None);
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
