//! The output side of a connection: a response's head is written into the output buffer;
//! a complete body is then handed out from its own buffers (and a spliced one's shared bytes
//! from where they are kept), a streamed body is pulled into the buffer while it has room
//! (chunked when its length is unknown); the connection closes after an answer that says so.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::mem;

use crate::http::message::{Body, BodyPoll, BodySource, Field, Response, Splice, Version};
use crate::http::parser::syntax::list;
use crate::http::response::{
    self, CHUNK_OVERHEAD, CONTINUE, ConnectionHeader, Framing, LAST_CHUNK,
};

/// A response body being written out.
enum Writing {
    /// Sent from its own buffers, after the head in the output buffer.
    Full(Complete),
    Stream {
        source: Box<dyn BodySource>,
        chunked: bool,
    },
}

/// A complete body: its own bytes with shared ones perhaps spliced in; `pos` bytes are sent.
struct Complete {
    own: Vec<u8>,
    splice: Option<Splice>,
    pos: usize,
    /// All its bytes.
    len: usize,
}

impl Complete {
    fn new(own: Vec<u8>, splice: Option<Splice>) -> Self {
        let len = own.len() + splice.as_ref().map_or(0, |s| s.bytes().len());
        Complete {
            own,
            splice,
            pos: 0,
            len,
        }
    }

    /// Whether every byte was handed out.
    fn sent(&self) -> bool {
        self.pos >= self.len
    }

    /// The unsent bytes of the piece being sent (the own bytes before the splice, the shared
    /// ones, the own bytes after).
    fn rest(&self) -> &[u8] {
        let pos = self.pos;
        match &self.splice {
            None => self.own.get(pos..),
            Some(s) if pos < s.at => self.own.get(pos..s.at),
            Some(s) => {
                let shared = s.bytes();
                match pos.checked_sub(s.at) {
                    Some(i) if i < shared.len() => shared.get(i..),
                    _ => self.own.get(pos - shared.len()..),
                }
            }
        }
        .unwrap_or_default()
    }
}

/// Pulling a stream in pieces smaller than this (when the buffer is not empty) would only make
/// tiny chunks; wait for the peer to take more first.
const MIN_PIECE: usize = 512;

/// The output room a streamed body waits for before it is polled again (while the buffer is
/// not empty): a piece and, chunked, its framing.
fn room_for_piece(chunked: bool, cap: usize) -> usize {
    let overhead = if chunked {
        CHUNK_OVERHEAD + LAST_CHUNK.len()
    } else {
        0
    };
    overhead + MIN_PIECE.min(cap / 2).max(1)
}

/// The most room of a sent answer a connection keeps for the next (a status page, a small
/// tool result); a bigger answer gives its memory back.
pub(super) const KEPT_ANSWER: usize = 4096;

/// What a connection owes its peer: the output buffer, the body being written after it, and
/// the room of a sent answer kept for the next.
#[derive(Default)]
pub(super) struct Output {
    /// `buf[pos..]` is not sent yet.
    buf: Vec<u8>,
    pos: usize,
    writing: Option<Writing>,
    /// Since when unsent output has waited without the peer taking any of it.
    waiting_since: Option<u64>,
    /// Since the peer last took everything it was owed: how long output waited on it before
    /// the current wait, and how many bytes it took (see [`Output::behind_deadline`]).
    stalled_ms: u64,
    taken: usize,
    /// An answer's room, kept once it was sent (up to [`KEPT_ANSWER`]) and lent to the next
    /// request as its `answer`.
    answer: Vec<u8>,
}

impl Output {
    /// Output waiting to be written to the socket: the output buffer, or once that is empty,
    /// the rest of a complete body.
    pub(super) fn pending_output(&self) -> &[u8] {
        match self.buf.get(self.pos..) {
            Some(out) if !out.is_empty() => out,
            _ => match &self.writing {
                Some(Writing::Full(body)) => body.rest(),
                _ => &[],
            },
        }
    }

    /// The socket took the first `n` bytes of [`Output::pending_output`]. Returns whether it
    /// took any.
    pub(super) fn mark_sent(&mut self, n: usize, now_ms: u64) -> bool {
        let n = n.min(self.pending_output().len());
        if n == 0 {
            return false;
        }
        if let Some(since) = self.waiting_since {
            self.stalled_ms = self.stalled_ms.saturating_add(now_ms.saturating_sub(since));
        }
        self.taken = self.taken.saturating_add(n);
        self.mark_taken(n, now_ms);
        if self.pending() == 0 {
            self.caught_up();
        }
        true
    }

    /// The peer took everything: its slowness so far is forgiven.
    fn caught_up(&mut self) {
        self.stalled_ms = 0;
        self.taken = 0;
    }

    /// When the peer, reading slower than `min_rate` bytes a second since it last caught up
    /// (after `grace_ms` of waiting in all), will have fallen behind for good: the time output
    /// may have waited on it grows with what it takes, not with each byte it takes (a reader
    /// taking a few bytes every few seconds would otherwise hold its answer for ever). None
    /// when nothing waits.
    pub(super) fn behind_deadline(&self, grace_ms: u64, min_rate: usize) -> Option<u64> {
        let since = self.waiting_since?;
        let allowed = grace_ms
            .saturating_add((self.taken as u64).saturating_mul(1000) / min_rate.max(1) as u64);
        Some(since.saturating_add(allowed.saturating_sub(self.stalled_ms)))
    }

    /// Moves past the `n` bytes the peer took, from the buffer or else the complete body.
    fn mark_taken(&mut self, n: usize, now_ms: u64) {
        if self.pos == self.buf.len() {
            if let Some(Writing::Full(body)) = self.writing.as_mut() {
                body.pos += n;
                let sent = body.pos >= body.len;
                self.waiting_since = (!sent).then_some(now_ms);
                if sent && let Some(Writing::Full(body)) = self.writing.take() {
                    self.keep_answer(body.own);
                }
            }
            return;
        }
        self.pos += n;
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            // A complete body may still wait behind the buffer.
            self.waiting_since = (self.pending() > 0).then_some(now_ms);
        } else {
            self.waiting_since = Some(now_ms);
            if self.pos >= 4096 && self.pos * 2 >= self.buf.len() {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
        }
    }

    /// Unsent bytes: the output buffer's and a complete body's.
    pub(super) fn pending(&self) -> usize {
        let body = match &self.writing {
            Some(Writing::Full(body)) => body.len.saturating_sub(body.pos),
            _ => 0,
        };
        self.buf.len() - self.pos + body
    }

    /// Room left under `cap`, the output buffer's bound.
    pub(super) fn room(&self, cap: usize) -> usize {
        cap.saturating_sub(self.pending())
    }

    /// Whether a response body is being written.
    pub(super) fn writing(&self) -> bool {
        self.writing.is_some()
    }

    /// Since when unsent output has waited for the peer.
    pub(super) fn waiting_since(&self) -> Option<u64> {
        self.waiting_since
    }

    /// How long unsent output has waited for the peer, counted from now if it just began to;
    /// None when nothing is unsent.
    pub(super) fn waited(&mut self, now_ms: u64) -> Option<u64> {
        if self.pending() > 0 {
            let since = *self.waiting_since.get_or_insert(now_ms);
            Some(now_ms.saturating_sub(since))
        } else {
            self.waiting_since = None;
            self.caught_up();
            None
        }
    }

    /// Whether the body being written can only go on once the peer takes output: a complete
    /// one until it is all handed out, a streamed one until there is room under `cap` for a
    /// piece. None when no body is being written.
    pub(super) fn body_blocked(&self, cap: usize) -> Option<bool> {
        match &self.writing {
            Some(Writing::Full(c)) => Some(!c.sent()),
            Some(Writing::Stream { chunked, .. }) => {
                Some(self.room(cap) < room_for_piece(*chunked, cap))
            }
            None => None,
        }
    }

    /// The kept answer room, lent to a request.
    pub(super) fn lend_answer(&mut self) -> Vec<u8> {
        mem::take(&mut self.answer)
    }

    /// Room a handler did not take, kept for the next answer.
    pub(super) fn return_answer(&mut self, room: Vec<u8>) {
        self.answer = room;
    }

    /// The capacity of the kept answer room.
    #[cfg(test)]
    pub(super) fn kept_answer(&self) -> usize {
        self.answer.capacity()
    }

    /// Keeps a sent answer's room for the next request's answer (in place of any other),
    /// if it is small.
    fn keep_answer(&mut self, mut body: Vec<u8>) {
        if body.capacity() <= KEPT_ANSWER {
            body.clear();
            self.answer = body;
        }
    }

    pub(super) fn cancel_stream(&mut self) {
        if let Some(Writing::Stream { source, .. }) = self.writing.as_mut() {
            source.cancel();
            self.writing = None;
        }
    }

    /// Cancels a streamed body and drops everything unsent.
    pub(super) fn abort(&mut self) {
        self.cancel_stream();
        self.writing = None;
        self.buf = Vec::new();
        self.pos = 0;
    }

    /// Tells the client to send the body it announced.
    pub(super) fn write_continue(&mut self) {
        self.buf.extend_from_slice(CONTINUE);
    }

    /// Moves streamed body bytes into the output buffer while it has room under `cap` (a
    /// complete body is sent from its own buffer). Returns true when no body is in progress any
    /// more.
    pub(super) fn fill(&mut self, cap: usize, now_ms: u64) -> bool {
        let done = match self.writing.as_mut() {
            None => return true,
            Some(Writing::Full(body)) => body.pos >= body.len,
            Some(Writing::Stream { source, chunked }) => {
                let overhead = if *chunked {
                    CHUNK_OVERHEAD + LAST_CHUNK.len()
                } else {
                    0
                };
                loop {
                    let pending = self.buf.len() - self.pos;
                    let room = cap.saturating_sub(pending);
                    if pending > 0 && room < room_for_piece(*chunked, cap) {
                        break false;
                    }
                    let max = room.saturating_sub(overhead).max(1);
                    // The body is polled straight into the output buffer.
                    let chunk = chunked.then(|| response::open_chunk(&mut self.buf, max));
                    let before = self.buf.len();
                    let poll = source.poll(&mut self.buf, max, now_ms);
                    let got = self.buf.len() - before;
                    if let Some(chunk) = chunk {
                        response::close_chunk(&mut self.buf, chunk);
                    }
                    match poll {
                        BodyPoll::Data if got > 0 => continue,
                        BodyPoll::Data | BodyPoll::Pending => break false,
                        BodyPoll::End => {
                            if *chunked {
                                self.buf.extend_from_slice(LAST_CHUNK);
                            }
                            break true;
                        }
                    }
                }
            }
        };
        if done {
            self.writing = None;
        }
        done
    }

    /// Writes the head of `resp` and sets its body up for writing. Returns whether the
    /// connection closes after this answer.
    pub(super) fn start(
        &mut self,
        resp: Response,
        head: bool,
        version: Version,
        keep_alive: bool,
    ) -> bool {
        let status = response::final_status(resp.status);
        let plan = response::plan(status, head, version, &resp.body);
        let handler_close = resp
            .headers
            .field(Field::Connection)
            .is_some_and(|v| list(v).any(|t| t.eq_ignore_ascii_case("close")));
        let close = !keep_alive || handler_close || plan.framing == Framing::UntilClose;
        let connection = if close {
            ConnectionHeader::Close
        } else if version == Version::Http10 {
            ConnectionHeader::KeepAlive
        } else {
            ConnectionHeader::Omit
        };
        response::write_head(
            &mut self.buf,
            status,
            &resp.headers,
            plan.framing,
            connection,
        );
        self.writing = match resp.body {
            Body::Full(own) if plan.send_body && !own.is_empty() => {
                Some(Writing::Full(Complete::new(own, None)))
            }
            Body::Spliced(own, splice) if plan.send_body => {
                Some(Writing::Full(Complete::new(own, Some(splice))))
            }
            Body::Stream(source) if plan.send_body => Some(Writing::Stream {
                source,
                chunked: plan.framing == Framing::Chunked,
            }),
            Body::Stream(mut source) => {
                source.cancel();
                None
            }
            // An answer to HEAD: its room is not kept.
            Body::Full(_) | Body::Spliced(..) | Body::Empty => None,
        };
        close
    }
}
