//! Incremental HTTP/1.1 request parser with hard limits.
//!
//! Bytes arrive in whatever pieces the TCP socket hands over (one byte at a time works). The
//! parser only finds the end of the head itself, bounded by [`Limits`]; the head is then parsed
//! once by `httparse` and the framing headers are checked here, strictly, because a lenient
//! reading of `Content-Length`/`Transfer-Encoding` is what request smuggling feeds on.
//!
//! Status codes for bad input (the connection is closed after the error response):
//! - request line longer than [`Limits::request_line`] → **414** (the target is what makes a
//!   request line long, so 414 tells the client what to shorten);
//! - header section over [`Limits::header_section`] bytes or more than
//!   [`Limits::header_count`] fields (trailers included) → **431**;
//! - body over [`Limits::body`]: judged from `Content-Length` before any body byte is read, and
//!   from each chunk-size line before its data → **413**;
//! - a transfer coding other than `chunked` → **501**;
//! - an HTTP version other than 1.0/1.1 → **505**;
//! - an `Expect` other than `100-continue` → **417**;
//! - everything else malformed (syntax, missing `Host` on 1.1, conflicting `Content-Length`,
//!   `Content-Length` together with `Transfer-Encoding`, `Transfer-Encoding` on 1.0) → **400**.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use super::message::{Admission, Field, Method, Request};
use crate::budget::{self, Lease, Pool};
use alloc::rc::Rc;

/// Hard limits on one request. Every byte the parser keeps is bounded by one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line, without its line ending (→ 414).
    pub request_line: usize,
    /// Most header fields in the head, and separately in the chunked trailer (→ 431).
    pub header_count: usize,
    /// Most bytes of the head (request line included), and separately of the trailer (→ 431).
    pub header_section: usize,
    /// Largest body after de-chunking (→ 413).
    pub body: usize,
    /// Longest chunk-size line, extensions included (→ 400).
    pub chunk_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_line: 8 * 1024,
            header_count: 64,
            header_section: 16 * 1024,
            body: 1024 * 1024,
            chunk_line: 1024,
        }
    }
}

/// The HTTP version of a request; only these two are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// A complete request plus what the connection needs to frame the answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed {
    pub request: Request,
    pub version: Version,
    /// Whether the client allows the connection to stay open after the response
    /// (1.1: unless `Connection: close`; 1.0: only with `Connection: keep-alive`).
    pub keep_alive: bool,
}

/// What the parser reports when it has something to say.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A request head is complete ([`Parser::head`]). The parser reads nothing more until the
    /// caller decides: [`Parser::proceed`] to read the body (and send `100 Continue` if
    /// [`Parser::expects_continue`]), or refuse the request from its head alone — so an
    /// unauthorised client never gets a body buffered.
    Head,
    /// One complete request.
    Request(Box<Parsed>),
}

/// Why a request was refused: the status to answer with and a short explanation for the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub status: u16,
    pub message: &'static str,
}

const fn err(status: u16, message: &'static str) -> ParseError {
    ParseError { status, message }
}

/// A body the request memory budget (or the heap) cannot take now.
const BUSY: ParseError = err(503, "request memory budget exhausted; retry later");

#[derive(Debug)]
enum State {
    /// Collecting the request line and header fields in `buf`.
    Head,
    /// The head is complete; waiting for [`Parser::proceed`].
    Admit {
        body: BodyKind,
        expect_continue: bool,
    },
    /// Reading a `Content-Length` body.
    Body { remaining: usize },
    /// Collecting a chunk-size line in `buf`.
    ChunkSize,
    /// Reading chunk data.
    ChunkData { remaining: usize },
    /// Expecting the line ending after chunk data.
    ChunkEnd { cr: bool },
    /// Collecting trailer fields (discarded) after the last chunk.
    Trailer,
    /// A request was refused; the parser stays stuck on that error.
    Failed(ParseError),
}

/// The request parser for one connection. Feed it bytes; it yields [`Event`]s.
pub struct Parser {
    limits: Limits,
    state: State,
    /// The head, a chunk-size line or a trailer line being collected.
    buf: Vec<u8>,
    /// Where the current unfinished line starts in `buf` (head only).
    line_start: usize,
    /// Header (or trailer) fields seen so far.
    fields: usize,
    /// Trailer bytes seen so far.
    trailer_bytes: usize,
    /// Empty-line bytes skipped before a request line; `skip_cr` if the last was a CR.
    skipped: usize,
    skip_cr: bool,
    /// The request whose body is being read.
    pending: Option<Box<Parsed>>,
    /// The box of the last request handed out, emptied and given back ([`Parser::recycle`]):
    /// the next request is parsed into it rather than into a new allocation.
    spare: Option<Box<Parsed>>,
    /// What the body being read is charged to (see [`crate::budget`]).
    pool: Rc<Pool>,
    lease: Option<Lease>,
}

/// How many bytes of empty lines are tolerated before a request line (RFC 9112 §2.2 asks
/// servers to ignore at least one; some clients send a CRLF after a POST body).
const MAX_SKIPPED: usize = 8;

/// Room a recycled request keeps at most for its target, fields and body together: a usual
/// MCP request is parsed into it without an allocation; a bigger one gives its room back.
/// It is held outside any pool (a body that fits in it is not charged to the request pool).
pub const KEPT: usize = 3 * 1024;

/// How much body memory is reserved up front, whatever `Content-Length` claims: a client that
/// announces 1 MiB and sends nothing must not pin 1 MiB.
const BODY_RESERVE: usize = 16 * 1024;

impl Parser {
    /// A parser whose bodies are limited only by [`Limits::body`].
    pub fn new(limits: Limits) -> Self {
        Self::with_pool(limits, Pool::new("requests", usize::MAX))
    }

    /// A parser that charges the bodies it buffers to `pool` (shared by every connection), and
    /// refuses a body the pool cannot take with 503.
    pub fn with_pool(limits: Limits, pool: Rc<Pool>) -> Self {
        Parser {
            limits,
            state: State::Head,
            buf: Vec::new(),
            line_start: 0,
            fields: 0,
            trailer_bytes: 0,
            skipped: 0,
            skip_cr: false,
            pending: None,
            spare: None,
            pool,
            lease: None,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether part of a request has been received (for the request timeout).
    pub fn in_progress(&self) -> bool {
        match self.state {
            State::Head => !self.buf.is_empty(),
            State::Failed(_) => false,
            _ => true,
        }
    }

    /// Whether the head is complete and the body (or its trailer) is being received.
    pub fn reading_body(&self) -> bool {
        !matches!(
            self.state,
            State::Head | State::Admit { .. } | State::Failed(_)
        )
    }

    /// The request whose head was just reported by [`Event::Head`] (its body still empty).
    pub fn pending_head(&self) -> Option<&Request> {
        match self.state {
            State::Admit { .. } => self.pending.as_ref().map(|p| &p.request),
            _ => None,
        }
    }

    /// Notes on the request whose head was just reported how the handler admitted it.
    pub fn admitted(&mut self, admission: Admission) {
        if let (State::Admit { .. }, Some(p)) = (&self.state, self.pending.as_mut()) {
            p.request.admission = Some(admission);
        }
    }

    /// Whether the admitted request asked for `100 Continue` before sending its body.
    pub fn expects_continue(&self) -> bool {
        matches!(
            self.state,
            State::Admit {
                expect_continue: true,
                ..
            }
        )
    }

    /// How many body bytes the admitted request may still bring: its `Content-Length`, or the
    /// body limit for a chunked body.
    pub fn announced_body(&self) -> usize {
        match self.state {
            State::Admit {
                body: BodyKind::Length(n),
                ..
            } => n,
            State::Admit { .. } => self.limits.body,
            _ => 0,
        }
    }

    /// The head reported by [`Event::Head`] was accepted: read the body. Returns the request
    /// at once when it has none. 503 when the body cannot be charged to the pool.
    pub fn proceed(&mut self) -> Result<Option<Event>, ParseError> {
        let r = self.start_body();
        if let Err(e) = r {
            self.fail(e);
        }
        r
    }

    /// The bytes the body in progress holds against the pool; the caller keeps them charged
    /// until it is done with the request.
    pub fn take_lease(&mut self) -> Option<Lease> {
        self.lease.take()
    }

    /// Bytes of memory the head/line buffer holds (tests check limits are not exceeded).
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.capacity()
    }

    /// Takes back a box [`Event::Request`] handed out, once its request was answered: the
    /// next request is parsed into it, into the room its target, fields and body had (unless
    /// that is over [`KEPT`]: a big request does not pin its memory). Its `answer` is the
    /// caller's to have taken.
    pub fn recycle(&mut self, mut parsed: Box<Parsed>) {
        let r = &mut parsed.request;
        r.target.clear();
        r.headers.clear();
        r.body.clear();
        r.admission = None;
        let room = r.target.capacity() + r.headers.capacity() + r.body.capacity();
        self.spare = (room <= KEPT).then_some(parsed);
    }

    /// Forgets a partial request (the peer went away, or its head was refused).
    pub fn reset(&mut self) {
        *self = Parser::with_pool(self.limits, self.pool.clone());
    }

    fn fail(&mut self, e: ParseError) {
        self.state = State::Failed(e);
        self.buf = Vec::new();
        self.pending = None;
        self.lease = None;
    }

    /// Consumes bytes from `input` until it runs out or an event happens. Returns how many
    /// bytes were consumed; the rest belongs to later calls (e.g. the next pipelined request).
    /// After an error every later call returns the same error.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), ParseError> {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        let mut used = 0;
        while used < input.len() {
            let step = match self.step(&input[used..]) {
                Ok(step) => step,
                Err(e) => {
                    self.fail(e);
                    return Err(e);
                }
            };
            used += step.0;
            if step.1.is_some() {
                return Ok((used, step.1));
            }
        }
        Ok((used, None))
    }

    /// One step on non-empty `input`: consumes at least one byte unless it reports an event.
    fn step(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), ParseError> {
        match self.state {
            State::Head => self.head(input),
            // Nothing is read until the head is admitted.
            State::Admit { .. } => Ok((0, Some(Event::Head))),
            State::Body { remaining } => {
                let take = remaining.min(input.len());
                self.append_body(&input[..take], remaining)?;
                if take == remaining {
                    Ok((take, Some(self.complete()?)))
                } else {
                    self.state = State::Body {
                        remaining: remaining - take,
                    };
                    Ok((take, None))
                }
            }
            State::ChunkSize => {
                let (take, line) = line_piece(input);
                if self.buf.len() + take > self.limits.chunk_line {
                    return Err(err(400, "chunk-size line too long"));
                }
                self.buf.extend_from_slice(&input[..take]);
                if line {
                    let size = chunk_size(&self.buf)?;
                    self.buf.clear();
                    let have = self.body_mut()?.len();
                    if size > (self.limits.body - have.min(self.limits.body)) as u64 {
                        return Err(err(413, "chunked body over the size limit"));
                    }
                    // `size` fits in usize: it is at most the body limit.
                    let size = size as usize;
                    self.state = if size == 0 {
                        self.fields = 0;
                        self.trailer_bytes = 0;
                        State::Trailer
                    } else {
                        State::ChunkData { remaining: size }
                    };
                }
                Ok((take, None))
            }
            State::ChunkData { remaining } => {
                let take = remaining.min(input.len());
                self.append_body(&input[..take], 0)?;
                self.state = if take == remaining {
                    State::ChunkEnd { cr: false }
                } else {
                    State::ChunkData {
                        remaining: remaining - take,
                    }
                };
                Ok((take, None))
            }
            State::ChunkEnd { cr } => {
                match (input[0], cr) {
                    (b'\r', false) => self.state = State::ChunkEnd { cr: true },
                    (b'\n', _) => self.state = State::ChunkSize,
                    _ => return Err(err(400, "chunk data not followed by a line ending")),
                }
                Ok((1, None))
            }
            State::Trailer => self.trailer(input),
            State::Failed(e) => Err(e),
        }
    }

    fn body_mut(&mut self) -> Result<&mut Vec<u8>, ParseError> {
        match self.pending.as_mut() {
            Some(p) => Ok(&mut p.request.body),
            None => Err(err(500, "parser lost its request")),
        }
    }

    /// Appends body bytes, growing the buffer only as far as the pool and the heap allow.
    /// `ahead` is how many bytes are announced from these on (0 for a chunked body): when the
    /// buffer must grow, it grows at once to the announced end if that is within four times
    /// what has arrived (else to four times that), so a body past the up-front reserve is
    /// copied once rather than once per doubling, while a client that stops sending still
    /// holds at most four times what it sent. A pool without room for that much could not
    /// take the whole body either.
    fn append_body(&mut self, bytes: &[u8], ahead: usize) -> Result<(), ParseError> {
        let body = self.body_mut()?;
        let held = body.len();
        let extra = match bytes.len() > body.capacity() - held {
            true => ahead.min(held.saturating_mul(3)).max(bytes.len()),
            false => bytes.len(),
        };
        self.reserve_body(extra)?;
        self.body_mut()?.extend_from_slice(bytes);
        Ok(())
    }

    fn reserve_body(&mut self, extra: usize) -> Result<(), ParseError> {
        let lease = match self.lease.as_mut() {
            Some(l) => l,
            None => self.lease.insert(self.pool.take(0).ok_or(BUSY)?),
        };
        let body = match self.pending.as_mut() {
            Some(p) => &mut p.request.body,
            None => return Err(err(500, "parser lost its request")),
        };
        if budget::reserve(body, extra, lease) {
            Ok(())
        } else {
            Err(BUSY)
        }
    }

    /// The body is complete: hand the request out and get ready for the next one.
    fn complete(&mut self) -> Result<Event, ParseError> {
        self.state = State::Head;
        self.buf.clear();
        self.line_start = 0;
        self.fields = 0;
        self.skipped = 0;
        self.skip_cr = false;
        match self.pending.take() {
            Some(p) => Ok(Event::Request(p)),
            None => Err(err(500, "parser lost its request")),
        }
    }

    fn head(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), ParseError> {
        if self.buf.is_empty() {
            // Empty lines before the request line are skipped, a bounded number of them.
            match (input[0], self.skip_cr) {
                (b'\r', false) | (b'\n', _) => {
                    self.skipped += 1;
                    self.skip_cr = input[0] == b'\r';
                    if self.skipped > MAX_SKIPPED {
                        return Err(err(400, "too many empty lines before the request"));
                    }
                    return Ok((1, None));
                }
                (_, true) => return Err(err(400, "bare CR before the request line")),
                _ => {}
            }
        }
        let (take, line) = line_piece(input);
        let request_line = self.line_start == 0;
        if request_line {
            // Length without the line ending; a CR that may be the start of one is not counted.
            let mut len = self.buf.len() + take;
            let mut last = input.get(take.wrapping_sub(1));
            if line {
                len -= 1;
                last = if take >= 2 {
                    input.get(take - 2)
                } else {
                    self.buf.last()
                };
            }
            if last == Some(&b'\r') {
                len -= 1;
            }
            if len > self.limits.request_line {
                return Err(err(414, "request line too long"));
            }
        }
        if self.buf.len() + take > self.limits.header_section {
            return Err(err(431, "header section too large"));
        }
        self.buf.extend_from_slice(&input[..take]);
        if !line {
            return Ok((take, None));
        }
        let content = &self.buf[self.line_start..self.buf.len() - 1];
        let empty = content.is_empty() || content == b"\r";
        if empty {
            return Ok((take, self.finish_head()?));
        }
        if !request_line {
            self.fields += 1;
            if self.fields > self.limits.header_count {
                return Err(err(431, "too many header fields"));
            }
        }
        self.line_start = self.buf.len();
        Ok((take, None))
    }

    /// The head is complete in `buf`: parse it (into the recycled request, if there is one)
    /// and decide how the body is framed.
    fn finish_head(&mut self) -> Result<Option<Event>, ParseError> {
        let mut parsed = match self.spare.take() {
            Some(spare) => spare,
            None => Box::new(Parsed {
                request: Request::default(),
                version: Version::Http11,
                keep_alive: true,
            }),
        };
        let head = parse_head(&self.buf, &self.limits, self.fields, &mut parsed.request);
        self.buf.clear();
        self.line_start = 0;
        self.fields = 0;
        let head = match head {
            Ok(head) => head,
            Err(e) => {
                self.recycle(parsed);
                return Err(e);
            }
        };
        parsed.version = head.version;
        parsed.keep_alive = head.keep_alive;
        self.pending = Some(parsed);
        self.state = State::Admit {
            expect_continue: head.expect_continue && !matches!(head.body, BodyKind::Length(0)),
            body: head.body,
        };
        Ok(Some(Event::Head))
    }

    fn start_body(&mut self) -> Result<Option<Event>, ParseError> {
        let State::Admit { body, .. } = self.state else {
            return Ok(None);
        };
        // A lease the caller did not take belongs to an earlier request.
        self.lease = None;
        match body {
            BodyKind::Length(0) => Ok(Some(self.complete()?)),
            BodyKind::Length(n) => {
                self.reserve_body(n.min(BODY_RESERVE))?;
                self.state = State::Body { remaining: n };
                Ok(None)
            }
            BodyKind::Chunked => {
                self.state = State::ChunkSize;
                Ok(None)
            }
        }
    }

    fn trailer(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), ParseError> {
        let (take, line) = line_piece(input);
        if self.trailer_bytes + take > self.limits.header_section {
            return Err(err(431, "trailer section too large"));
        }
        self.trailer_bytes += take;
        self.buf.extend_from_slice(&input[..take]);
        if !line {
            return Ok((take, None));
        }
        let mut content = &self.buf[..self.buf.len() - 1];
        if let Some(stripped) = content.strip_suffix(b"\r") {
            content = stripped;
        }
        if content.is_empty() {
            return Ok((take, Some(self.complete()?)));
        }
        if !valid_field_line(content) {
            return Err(err(400, "malformed trailer field"));
        }
        self.fields += 1;
        if self.fields > self.limits.header_count {
            return Err(err(431, "too many trailer fields"));
        }
        self.buf.clear();
        Ok((take, None))
    }
}

/// How much of `input` belongs to the current line, and whether that ends it (an LF).
fn line_piece(input: &[u8]) -> (usize, bool) {
    match input.iter().position(|&b| b == b'\n') {
        Some(i) => (i + 1, true),
        None => (input.len(), false),
    }
}

#[derive(Clone, Copy, Debug)]
enum BodyKind {
    Length(usize),
    Chunked,
}

/// What a head says about framing (its method, target and fields go into the request).
struct Head {
    version: Version,
    keep_alive: bool,
    expect_continue: bool,
    body: BodyKind,
}

/// Header fields parsed without allocating slots for them (a browser sends about a dozen).
const INLINE_FIELDS: usize = 24;

/// Parses a complete head (ending in an empty line) of `fields` lines after the request line
/// into `request` (whose target and fields are empty) and checks its framing headers.
fn parse_head(
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

/// The non-empty elements of a comma-separated header list, trimmed.
pub(crate) fn list(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|s| s.trim_matches([' ', '\t']))
        .filter(|s| !s.is_empty())
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

/// Parses a chunk-size line (`1*HEXDIG [ BWS ; extensions ] CRLF`, bare LF accepted). Sizes
/// too big for u64 saturate; extensions are checked for stray control bytes and ignored.
fn chunk_size(line: &[u8]) -> Result<u64, ParseError> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(err(400, "malformed chunk size"));
    }
    let mut size = 0u64;
    for &b in &line[..digits] {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => b - b'A' + 10,
        };
        size = size.saturating_mul(16).saturating_add(u64::from(d));
    }
    let rest = &line[digits..];
    let ext_start = rest.iter().position(|&b| b != b' ' && b != b'\t');
    if let Some(i) = ext_start {
        let ext = &rest[i..];
        if ext[0] != b';' || ext.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(err(400, "malformed chunk extension"));
        }
    } else if !rest.is_empty() {
        // Whitespace after the size with no extension following it.
        return Err(err(400, "malformed chunk size"));
    }
    Ok(size)
}

/// A trailer field line: `token ":" value` with no control bytes but HTAB.
fn valid_field_line(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    !name.is_empty()
        && name.iter().all(|&b| is_tchar(b))
        && value
            .iter()
            .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// RFC 9110 token characters.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
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
            status(
                format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {v}\r\n\r\n").as_bytes(),
            )
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
            status(
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"
            ),
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
        let (ev, e) =
            parse(b"GET / HTTP/1.1\r\nHost: x\r\nX: caf\xc3\xa9\r\nY: \xe2\x9c\x93\r\n\r\n");
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
        let head =
            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi";
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
        let (ev, e) = parse(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n");
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
    use crate::testing::Lcg;

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
}
