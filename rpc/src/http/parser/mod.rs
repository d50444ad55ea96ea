//! Incremental HTTP/1.1 request parser with hard limits.
//!
//! Bytes arrive in whatever pieces the TCP socket hands over (one byte at a time works). The
//! parser only finds the end of the head itself, bounded by [`Limits`] (a head that arrives
//! whole, as a client's request does, where it lies; else a line at a time into a buffer of
//! its own); the head is then parsed once by `httparse` and its framing fields are checked
//! strictly (`head.rs`), because a lenient reading of `Content-Length`/`Transfer-Encoding` is
//! what request smuggling feeds on.
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
use alloc::vec::Vec;

use super::message::{Admission, Request, Version};
use alloc::rc::Rc;
use chunked::{chunk_size, valid_field_line};
use error::err;
use head::{BodyKind, parse_head};
use irix7_kmem::budget::{self, Lease, Pool};

mod chunked;
mod error;
mod head;
mod limits;
pub(super) mod syntax;

pub use error::ParseError;
pub use limits::Limits;

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
    /// What the body being read is charged to (see [`irix7_kmem::budget`]).
    pool: Rc<Pool>,
    lease: Option<Lease>,
}

/// Room for a head arriving in pieces: a usual client's fits (an agent's about 300 bytes, a
/// browser's 600).
const HEAD_ROOM: usize = 1024;

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
            // The room a head is collected in when it arrives in pieces, made at the first
            // request in one allocation (growing it by doubling from nothing took five, at
            // whichever request of a connection first came in pieces).
            if self.buf.capacity() == 0 {
                self.buf.reserve(HEAD_ROOM.min(self.limits.header_section));
            }
            // A whole head in one piece, within the limits (a client's request, as a rule):
            // parsed where it lies. Anything else is collected a line at a time below, which
            // also answers every breach of a limit.
            if let Some((end, fields)) = whole_head(input, &self.limits) {
                self.fields = fields;
                let head = input.get(..end).unwrap_or(input);
                return Ok((end, self.finish_head(head)?));
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
            // The head is parsed out of the buffer, which keeps its room for the next one.
            let buf = core::mem::take(&mut self.buf);
            let event = self.finish_head(&buf);
            self.buf = buf;
            self.buf.clear();
            return Ok((take, event?));
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

    /// The head of `self.fields` fields is complete in `head`: parse it (into the recycled
    /// request, if there is one) and decide how the body is framed.
    fn finish_head(&mut self, head: &[u8]) -> Result<Option<Event>, ParseError> {
        let mut parsed = match self.spare.take() {
            Some(spare) => spare,
            None => Box::new(Parsed {
                request: Request::default(),
                version: Version::Http11,
                keep_alive: true,
            }),
        };
        let head = parse_head(head, &self.limits, self.fields, &mut parsed.request);
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

/// The length of the head at the start of `input` (through its empty line) and its number of
/// fields, when all of it is there within the limits; else `None`, and the head is collected a
/// line at a time, as it arrives, with the limits judged as it grows. Lines end as they do
/// there: at an LF, a CR before it belonging to the line ending.
fn whole_head(input: &[u8], limits: &Limits) -> Option<(usize, usize)> {
    let window = input.get(..limits.header_section).unwrap_or(input);
    let (mut start, mut fields) = (0, 0);
    for end in memchr::memchr_iter(b'\n', window) {
        let line = window.get(start..end)?;
        if start == 0 {
            let len = line.len() - usize::from(line.last() == Some(&b'\r'));
            if len > limits.request_line {
                return None;
            }
        } else if line.is_empty() || line == b"\r" {
            return Some((end + 1, fields));
        } else {
            fields += 1;
            if fields > limits.header_count {
                return None;
            }
        }
        start = end + 1;
    }
    None
}

/// How much of `input` belongs to the current line, and whether that ends it (an LF).
fn line_piece(input: &[u8]) -> (usize, bool) {
    match input.iter().position(|&b| b == b'\n') {
        Some(i) => (i + 1, true),
        None => (input.len(), false),
    }
}

#[cfg(test)]
mod tests;
