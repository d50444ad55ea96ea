//! One HTTP/1.1 server connection: bytes in, bytes out, no socket and no clock.
//!
//! The module's poll loop owns one [`Connection`] per TCP connection and drives it:
//!
//! 1. hand received bytes to [`Connection::recv`]; it returns how many it took (the rest stays
//!    in the socket, which is the backpressure on a client that pipelines faster than it reads);
//! 2. once the peer's FIN was seen and every received byte was passed in, call
//!    [`Connection::peer_closed`]; on a reset call [`Connection::abort`];
//! 3. call [`Connection::poll`] every round: it advances streamed bodies, answers requests that
//!    waited behind them, and applies the timeouts;
//! 4. write [`Connection::pending_output`] to the socket and report what it took with
//!    [`Connection::mark_sent`] (then `poll` again to refill);
//! 5. when [`Connection::is_finished`], close the socket and drop the connection.
//!
//! Requests are answered strictly in order. Only one response is produced at a time: while a
//! body is being written, later requests stay unparsed in a bounded hold buffer. Streamed
//! bodies are pulled only while the bounded output buffer has room. A complete body
//! (`Body::Full`) is not copied into the output buffer at all: once the head is out,
//! [`Connection::pending_output`] hands out the body's own bytes (one copy fewer of every
//! complete answer), and the shared bytes of a `Body::Spliced` from where they are kept (a
//! `tools/list` answer is ~28 KB of listings that are never copied per request).
//!
//! This file is the state machine (reading, admitting, answering in order, the timeouts);
//! `output.rs` is the output side it drives, which writes the answers out.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::mem;

use super::message::{Admission, Handler, Method, Peer, Response, Version};
use super::parser::{Event, Limits, Parsed, Parser};
use super::response;
use alloc::rc::Rc;
use irix7_kmem::budget::Pool;
use output::{KEPT_ANSWER, Output};

mod output;

/// Per-connection settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub limits: Limits,
    /// Close a connection that has nothing in flight and saw no traffic for this long; also
    /// abort one whose peer has not taken any pending output for this long.
    pub idle_timeout_ms: u64,
    /// Close a connection whose peer has sent nothing at all for this long after it opened
    /// (a silent client holds a slot for less time than a kept-alive one between requests).
    pub first_byte_timeout_ms: u64,
    /// Answer 408 and close when a request head has not been received completely this long
    /// after its first byte (slow-loris heads). A body gets the same time plus its length at
    /// `min_body_rate`, counted from its head: a deadline, not reset by each byte, so a
    /// client trickling a body cannot hold the connection for ever.
    pub request_timeout_ms: u64,
    /// Bytes per second a body must at least arrive at (see `request_timeout_ms`).
    pub min_body_rate: usize,
    /// Bytes per second a peer must at least take an answer at once output waits on it: the
    /// time output may wait on a peer in all (since it last took everything) is
    /// `idle_timeout_ms` plus what it took at this rate, not reset by each byte it takes, so
    /// a client reading a few bytes every few seconds cannot hold its connection for ever.
    pub min_send_rate: usize,
    /// A connection that has not authenticated is kept alive this long after it opened at
    /// most: past it, its next answer closes it, and it closes once idle. Keep-alive cannot
    /// make an anonymous connection last (the server also reaps the oldest ones first).
    pub anonymous_lifetime_ms: u64,
    /// After an error answered before the request was read to its end, received bytes are
    /// read and discarded for at most this long and this many bytes, so that a client that
    /// sends its whole body before reading gets to read the error ("lingering close"). Past
    /// either bound the connection is reset.
    pub linger_ms: u64,
    pub linger_bytes: usize,
    /// Output bytes buffered at most before streamed bodies are paused (a response head or
    /// one chunk may exceed it by its own size).
    pub output_buffer: usize,
    /// Received bytes held at most while an earlier response is still being written.
    pub input_buffer: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: Limits::default(),
            idle_timeout_ms: 30_000,
            first_byte_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
            min_body_rate: 8 * 1024,
            min_send_rate: 1024,
            anonymous_lifetime_ms: 30_000,
            linger_ms: 15_000,
            linger_bytes: 8 * 1024 * 1024,
            output_buffer: 16 * 1024,
            input_buffer: 16 * 1024,
        }
    }
}

/// The discarding after an early error (see [`Config::linger_ms`]).
struct Linger {
    until_ms: u64,
    bytes_left: usize,
}

/// The state of one HTTP connection. See the module docs for how to drive it.
pub struct Connection {
    config: Config,
    peer: Peer,
    parser: Parser,
    /// Received but unparsed bytes, kept while a response is in progress.
    held: Vec<u8>,
    /// The answers being written out.
    output: Output,
    /// No further requests are read; the connection ends once the output is drained.
    closing: bool,
    peer_closed: bool,
    aborted: bool,
    last_activity_ms: u64,
    /// When the connection opened.
    opened_ms: u64,
    /// When the first byte of the request being received arrived.
    request_started_ms: Option<u64>,
    /// Bytes of the request being received taken so far (head and body).
    request_bytes: usize,
    /// When the body being received must be complete.
    body_deadline_ms: Option<u64>,
    linger: Option<Linger>,
    /// The token the last request that proved its credentials on this connection bore (see
    /// [`Admission`]).
    proven: Option<u8>,
    /// Requests refused as unauthorized (401) since the last one admitted: past
    /// [`MAX_UNAUTHORIZED`] the connection is closed, so guessing costs a connection a few
    /// guesses.
    unauthorized: u8,
    /// The peer has not sent a byte yet.
    silent: bool,
    /// The last answer turned the request away for load (429, 503): the connection does no
    /// work its peer is owed, so the server lets it go first among the authenticated ones
    /// when it needs the slot (a client over its owner's rate on many connections holds none
    /// of them for long).
    turned_away: bool,
    /// Requests handed to the handler so far (`Request::earlier`).
    answered: u32,
}

/// What a connection keeps between requests outside any pool, at most: the parser's recycled
/// request and an answer's room.
pub const KEPT: usize = super::parser::KEPT + KEPT_ANSWER;

/// Requests in a row a connection may have refused as unauthorized; the last of them is
/// answered and the connection closed.
pub const MAX_UNAUTHORIZED: usize = 4;

impl Connection {
    /// A connection whose request bodies are limited only by [`Limits::body`].
    pub fn new(peer: Peer, config: Config, now_ms: u64) -> Self {
        Self::with_pool(peer, config, now_ms, Pool::new("requests", usize::MAX))
    }

    /// A connection that charges the request bodies it buffers to `pool` (see
    /// [`irix7_kmem::budget`]); a body the pool cannot take is answered 503 with `Retry-After`.
    pub fn with_pool(peer: Peer, config: Config, now_ms: u64, pool: Rc<Pool>) -> Self {
        Connection {
            config,
            peer,
            parser: Parser::with_pool(config.limits, pool),
            held: Vec::new(),
            output: Output::default(),
            closing: false,
            peer_closed: false,
            aborted: false,
            last_activity_ms: now_ms,
            opened_ms: now_ms,
            request_started_ms: None,
            request_bytes: 0,
            body_deadline_ms: None,
            linger: None,
            proven: None,
            unauthorized: 0,
            silent: true,
            turned_away: false,
            answered: 0,
        }
    }

    pub fn peer(&self) -> Peer {
        self.peer
    }

    /// Whether a request on this connection was admitted as [`Admission::Authenticated`]
    /// (the server keeps such connections over anonymous ones when slots run short).
    pub fn authenticated(&self) -> bool {
        self.proven.is_some()
    }

    /// Reads no further request: the connection ends once the answers owed are out (a
    /// server that refused the request it just answered, and wants its slot back).
    pub fn end_after_answer(&mut self) {
        self.closing = true;
        self.held = Vec::new();
    }

    /// When the connection last received or sent anything.
    pub fn last_activity_ms(&self) -> u64 {
        self.last_activity_ms
    }

    /// When the connection opened: its age is what orders anonymous ones for reaping (any
    /// byte resets idleness, so idleness would spare a client that keeps polling).
    pub fn opened_ms(&self) -> u64 {
        self.opened_ms
    }

    /// Since when the connection has owed its peer nothing: the first byte of the request
    /// being received (however slowly it comes), else its last activity. `None` while an
    /// answer is being produced or written, or requests wait behind one: resetting it then
    /// would lose work the peer is owed.
    pub fn owing_nothing_since(&self) -> Option<u64> {
        let owes = self.output.writing() || self.output.pending() > 0 || !self.held.is_empty();
        if owes || self.closing {
            return None;
        }
        Some(self.request_started_ms.unwrap_or(self.last_activity_ms))
    }

    /// Since when the connection has been discarding what its peer sends after a refusal it
    /// wrote out in full (see [`Config::linger_ms`]): it serves nothing more, and lingers
    /// only so that closing does not cut the answer off. `None` otherwise.
    pub fn refused_since(&self) -> Option<u64> {
        let linger = self.linger.as_ref()?;
        let written = !self.output.writing() && self.output.pending() == 0;
        written.then(|| linger.until_ms.saturating_sub(self.config.linger_ms))
    }

    /// Since when the peer has taken none of the output it is owed; `None` when nothing waits
    /// on it.
    pub fn peer_stalled_since(&self) -> Option<u64> {
        self.output.waiting_since()
    }

    /// Whether the request being received has come slower than [`Config::min_body_rate`]
    /// since its first byte: a client trickling it, whom the server lets go first when it
    /// needs the slot.
    pub fn receiving_behind(&self, now_ms: u64) -> bool {
        self.request_started_ms.is_some_and(|start| {
            let due = now_ms.saturating_sub(start) as u128 * self.config.min_body_rate as u128;
            (self.request_bytes as u128) * 1000 < due
        })
    }

    /// Whether the last answer turned its request away for load (429, 503).
    pub fn turned_away(&self) -> bool {
        self.turned_away
    }

    /// Whether an anonymous connection outlived [`Config::anonymous_lifetime_ms`].
    fn expired(&self, now_ms: u64) -> bool {
        self.proven.is_none()
            && now_ms.saturating_sub(self.opened_ms) >= self.config.anonymous_lifetime_ms
    }

    /// Takes received bytes: parses them and answers complete requests through `handler`.
    /// Returns how many bytes were taken; fewer than given means "hold the rest in the socket
    /// and offer it again later". Once the connection is closing, input is taken and dropped.
    pub fn recv(&mut self, bytes: &[u8], now_ms: u64, handler: &mut dyn Handler) -> usize {
        if self.closing || self.aborted {
            self.discard(bytes.len());
            return bytes.len();
        }
        if !bytes.is_empty() {
            self.last_activity_ms = now_ms;
            self.silent = false;
        }
        self.pump(now_ms, handler);
        let mut rest = bytes;
        while !rest.is_empty() && !self.closing {
            if !self.output.writing() && self.held.is_empty() && self.out_room() > 0 {
                let n = self.parse(rest, now_ms, handler);
                if n == 0 {
                    break;
                }
                rest = &rest[n..];
                self.pump(now_ms, handler);
            } else {
                let room = self.config.input_buffer.saturating_sub(self.held.len());
                if room == 0 {
                    break;
                }
                let n = room.min(rest.len());
                self.held.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
            }
        }
        if self.closing {
            self.discard(rest.len());
            return bytes.len();
        }
        bytes.len() - rest.len()
    }

    /// Counts bytes dropped while closing against the lingering bound.
    fn discard(&mut self, n: usize) {
        if let Some(l) = self.linger.as_mut() {
            if n > l.bytes_left {
                self.abort();
            } else {
                l.bytes_left -= n;
            }
        }
    }

    /// Advances the connection: streamed bodies, requests waiting behind them, timeouts.
    pub fn poll(&mut self, now_ms: u64, handler: &mut dyn Handler) {
        if self.is_finished() {
            return;
        }
        self.pump(now_ms, handler);
        if self.linger.as_ref().is_some_and(|l| now_ms >= l.until_ms) {
            self.abort();
            return;
        }
        if let Some(start) = self.request_started_ms {
            let late = match self.body_deadline_ms {
                Some(deadline) if self.parser.reading_body() => now_ms >= deadline,
                _ => now_ms.saturating_sub(start) >= self.config.request_timeout_ms,
            };
            if late {
                self.parser.reset();
                self.refuse(408, "request not completed in time", now_ms);
                return;
            }
        }
        if let Some(waited) = self.output.waited(now_ms) {
            let behind = self.send_deadline().is_some_and(|d| now_ms >= d);
            if waited >= self.config.idle_timeout_ms || behind {
                // The peer stopped reading, or reads too slowly to ever finish.
                self.abort();
            }
        } else {
            let idle = !self.output.writing() && !self.parser.in_progress() && self.held.is_empty();
            // A connection that never sent a byte gets less time than one between requests.
            let allowed = if self.silent {
                self.config.first_byte_timeout_ms
            } else {
                self.config.idle_timeout_ms
            };
            if idle
                && (now_ms.saturating_sub(self.last_activity_ms) >= allowed || self.expired(now_ms))
            {
                self.closing = true;
            }
        }
    }

    /// For an idle connection (no request begun, nothing to write, nothing held back): until
    /// when [`Connection::poll`] changes nothing as long as no byte arrives, its idle timeout
    /// or an anonymous connection's lifetime. None when a poll may do more. The server skips
    /// such a connection's poll until then: kept-alive clients between requests are most
    /// connections, and each poll of one cost about 800 instructions.
    pub fn quiet_until(&self) -> Option<u64> {
        let busy = self.closing
            || self.aborted
            || self.linger.is_some()
            || self.request_started_ms.is_some()
            || self.output.writing()
            || self.output.pending() > 0
            || self.parser.in_progress()
            || !self.held.is_empty();
        if busy {
            return None;
        }
        let allowed = if self.silent {
            self.config.first_byte_timeout_ms
        } else {
            self.config.idle_timeout_ms
        };
        let idle_end = self.last_activity_ms.saturating_add(allowed);
        Some(match self.proven {
            Some(_) => idle_end,
            None => idle_end.min(
                self.opened_ms
                    .saturating_add(self.config.anonymous_lifetime_ms),
            ),
        })
    }

    /// For a connection whose output waits on a socket that takes none of it: until when
    /// [`Connection::poll`] changes nothing as long as no byte arrives and none is sent (the
    /// earliest of the peer's read timeout, a lingering close's end and the request's
    /// deadline). None when a poll may do more (a streamed body with room to fill, a held
    /// request to answer). The server skips such a connection's poll until then.
    pub fn blocked_until(&self) -> Option<u64> {
        let since = self.output.waiting_since()?;
        let idle = !self.aborted
            && self.output.pending() > 0
            && match self.output.body_blocked(self.config.output_buffer) {
                Some(blocked) => blocked,
                None => self.closing || self.held.is_empty() || self.out_room() == 0,
            };
        if !idle {
            return None;
        }
        let mut until = since.saturating_add(self.config.idle_timeout_ms);
        if let Some(deadline) = self.send_deadline() {
            until = until.min(deadline);
        }
        if let Some(l) = &self.linger {
            until = until.min(l.until_ms);
        }
        if let Some(start) = self.request_started_ms {
            until = until.min(match self.body_deadline_ms {
                Some(deadline) if self.parser.reading_body() => deadline,
                _ => start.saturating_add(self.config.request_timeout_ms),
            });
        }
        Some(until)
    }

    /// When a peer reading below [`Config::min_send_rate`] is given up on.
    fn send_deadline(&self) -> Option<u64> {
        self.output
            .behind_deadline(self.config.idle_timeout_ms, self.config.min_send_rate)
    }

    /// The peer sent FIN (call after every received byte went through [`Connection::recv`]):
    /// no more requests come. A partial request is dropped, requests held behind the current
    /// response are not answered, a streamed body in progress is cancelled; output already
    /// produced is still flushed, then the connection is finished.
    pub fn peer_closed(&mut self) {
        if self.peer_closed {
            return;
        }
        self.peer_closed = true;
        self.closing = true;
        self.linger = None;
        self.held = Vec::new();
        self.parser.reset();
        self.request_started_ms = None;
        self.output.cancel_stream();
    }

    /// The connection is gone (reset, or the caller gives up on it): cancel a streamed body
    /// and drop everything.
    pub fn abort(&mut self) {
        self.output.abort();
        self.aborted = true;
        self.closing = true;
        self.linger = None;
        self.held = Vec::new();
    }

    /// Whether the connection was given up on ([`Connection::abort`], or a bound passed): the
    /// socket should be reset rather than closed.
    pub fn is_aborted(&self) -> bool {
        self.aborted
    }

    /// Whether the socket should be closed now (everything owed to the peer was handed out).
    pub fn is_finished(&self) -> bool {
        self.aborted
            || (self.closing
                && !self.output.writing()
                && self.output.pending() == 0
                && self.linger.is_none())
    }

    /// Output waiting to be written to the socket: the output buffer, or once that is empty,
    /// the rest of a complete body.
    pub fn pending_output(&self) -> &[u8] {
        self.output.pending_output()
    }

    /// The socket took the first `n` bytes of [`Connection::pending_output`]. Call
    /// [`Connection::poll`] afterwards to refill the buffer.
    pub fn mark_sent(&mut self, n: usize, now_ms: u64) {
        if self.output.mark_sent(n, now_ms) {
            self.last_activity_ms = now_ms;
        }
    }

    /// Room left in the output buffer.
    fn out_room(&self) -> usize {
        self.output.room(self.config.output_buffer)
    }

    /// Writes the head of `resp` and sets its body up for writing; an answer that closes the
    /// connection ends reading.
    fn start(&mut self, resp: Response, head: bool, version: Version, keep_alive: bool) {
        self.turned_away = resp.turned_away || matches!(resp.status, 429 | 503);
        if self.output.start(resp, head, version, keep_alive) {
            self.closing = true;
            self.held = Vec::new();
        }
    }

    /// Writes as much of the current body as fits, then answers held requests while the
    /// output has room and nothing else is being written.
    fn pump(&mut self, now_ms: u64, handler: &mut dyn Handler) {
        loop {
            if !self.output.fill(self.config.output_buffer, now_ms) {
                return;
            }
            if self.closing || self.held.is_empty() || self.out_room() == 0 {
                return;
            }
            let mut held = mem::take(&mut self.held);
            let n = self.parse(&held, now_ms, handler);
            if !self.closing {
                held.drain(..n.min(held.len()));
                self.held = held;
            }
            if n == 0 {
                return;
            }
        }
    }

    /// Feeds the parser and acts on what it reports. Returns the bytes consumed.
    fn parse(&mut self, input: &[u8], now_ms: u64, handler: &mut dyn Handler) -> usize {
        match self.parser.feed(input) {
            Ok((n, event)) => {
                if !self.closing && self.parser.in_progress() {
                    if self.request_started_ms.is_none() {
                        self.request_bytes = 0;
                    }
                    self.request_started_ms.get_or_insert(now_ms);
                    self.request_bytes = self.request_bytes.saturating_add(n);
                }
                match event {
                    None => {}
                    Some(Event::Head) => self.admit(now_ms, handler),
                    Some(Event::Request(parsed)) => self.dispatch(parsed, now_ms, handler),
                }
                n
            }
            Err(e) => {
                self.refuse(e.status, e.message, now_ms);
                input.len()
            }
        }
    }

    /// A head is complete: the handler admits it or answers it before the body is read.
    fn admit(&mut self, now_ms: u64, handler: &mut dyn Handler) {
        let Some(head) = self.parser.pending_head() else {
            return;
        };
        match handler.admit(head, self.peer, self.proven, now_ms) {
            Ok(admission) => {
                self.unauthorized = 0;
                if let Admission::Authenticated(token) = admission {
                    self.proven = Some(token);
                }
                self.parser.admitted(admission);
                let expect_continue = self.parser.expects_continue();
                let body_len = self.parser.announced_body();
                match self.parser.proceed() {
                    Ok(Some(Event::Request(parsed))) => self.dispatch(parsed, now_ms, handler),
                    Ok(_) => {
                        if expect_continue {
                            self.output.write_continue();
                        }
                        let start = self.request_started_ms.unwrap_or(now_ms);
                        let body_ms =
                            body_len as u64 * 1000 / self.config.min_body_rate.max(1) as u64;
                        self.body_deadline_ms =
                            Some(start + self.config.request_timeout_ms + body_ms);
                    }
                    Err(e) => self.refuse(e.status, e.message, now_ms),
                }
            }
            // A refused request without a body is answered like any other (the connection
            // stays open, unless it keeps failing the token check); one with a body is
            // answered and closed, its body discarded unread.
            Err(resp) if resp.status == 401 && self.count_unauthorized() => {
                self.parser.reset();
                self.reject(resp, now_ms);
            }
            Err(resp) if self.parser.announced_body() == 0 => match self.parser.proceed() {
                Ok(Some(Event::Request(parsed))) => {
                    self.request_started_ms = None;
                    let head = parsed.request.method == Method::Head;
                    let keep_alive =
                        parsed.keep_alive && !self.peer_closed && !self.expired(now_ms);
                    let version = parsed.version;
                    self.parser.recycle(parsed);
                    self.start(resp, head, version, keep_alive);
                }
                _ => self.reject(resp, now_ms),
            },
            Err(resp) => {
                self.parser.reset();
                self.reject(resp, now_ms);
            }
        }
    }

    /// Counts a request refused as unauthorized: whether the connection has failed too often
    /// to stay open.
    fn count_unauthorized(&mut self) -> bool {
        self.unauthorized = self.unauthorized.saturating_add(1);
        usize::from(self.unauthorized) >= MAX_UNAUTHORIZED
    }

    fn dispatch(&mut self, mut parsed: Box<Parsed>, now_ms: u64, handler: &mut dyn Handler) {
        self.request_started_ms = None;
        self.body_deadline_ms = None;
        // The body stays charged to the request budget until the handler is done with it.
        let lease = self.parser.take_lease();
        let head = parsed.request.method == Method::Head;
        let version = parsed.version;
        let keep_alive = parsed.keep_alive && !self.peer_closed && !self.expired(now_ms);
        parsed.request.answer = self.output.lend_answer();
        parsed.request.earlier = self.answered;
        self.answered = self.answered.saturating_add(1);
        let resp = handler.handle(&mut parsed.request, self.peer, now_ms);
        drop(lease);
        // Room the handler did not take stays for the next answer.
        self.output
            .return_answer(mem::take(&mut parsed.request.answer));
        self.parser.recycle(parsed);
        self.start(resp, head, version, keep_alive);
    }

    /// Answers a request that could not be read, and closes.
    fn refuse(&mut self, status: u16, message: &str, now_ms: u64) {
        let mut resp = response::error(status, message);
        if status == 503 {
            resp.headers.push_static("Retry-After", "1");
        }
        self.reject(resp, now_ms);
    }

    /// Answers a request that will not be read to its end, then closes once the client has
    /// had the chance to read the answer (see [`Config::linger_ms`]).
    fn reject(&mut self, resp: Response, now_ms: u64) {
        self.request_started_ms = None;
        self.body_deadline_ms = None;
        self.start(resp, false, Version::Http11, false);
        if !self.peer_closed && !self.aborted {
            self.linger = Some(Linger {
                until_ms: now_ms + self.config.linger_ms,
                bytes_left: self.config.linger_bytes,
            });
        }
    }
}

impl Drop for Connection {
    /// A connection dropped mid-stream stops the work behind the stream.
    fn drop(&mut self) {
        self.output.cancel_stream();
    }
}

#[cfg(test)]
mod tests;
