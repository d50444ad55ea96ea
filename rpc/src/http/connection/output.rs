//! The output side of a [`Connection`]: a response's head is written into the output buffer;
//! a complete body is then handed out from its own buffers (and a spliced one's shared bytes
//! from where they are kept), a streamed body is pulled into the buffer while it has room
//! (chunked when its length is unknown); the connection closes after an answer that says so.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::Connection;
use crate::http::message::{Body, BodyPoll, BodySource, Field, Response, Splice, Version};
use crate::http::parser::syntax::list;
use crate::http::response::{self, CHUNK_OVERHEAD, ConnectionHeader, Framing, LAST_CHUNK};

/// A response body being written out.
pub(super) enum Writing {
    /// Sent from its own buffers, after the head in the output buffer.
    Full(Complete),
    Stream {
        source: Box<dyn BodySource>,
        chunked: bool,
    },
}

/// A complete body: its own bytes with shared ones perhaps spliced in; `pos` bytes are sent.
pub(super) struct Complete {
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
    pub(super) fn sent(&self) -> bool {
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
pub(super) fn room_for_piece(chunked: bool, cap: usize) -> usize {
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

impl Connection {
    /// Output waiting to be written to the socket: the output buffer, or once that is empty,
    /// the rest of a complete body.
    pub fn pending_output(&self) -> &[u8] {
        match self.out.get(self.out_pos..) {
            Some(out) if !out.is_empty() => out,
            _ => match &self.writing {
                Some(Writing::Full(body)) => body.rest(),
                _ => &[],
            },
        }
    }

    /// The socket took the first `n` bytes of [`Connection::pending_output`]. Call
    /// [`Connection::poll`] afterwards to refill the buffer.
    pub fn mark_sent(&mut self, n: usize, now_ms: u64) {
        let n = n.min(self.pending_output().len());
        if n == 0 {
            return;
        }
        self.last_activity_ms = now_ms;
        if self.out_pos == self.out.len() {
            if let Some(Writing::Full(body)) = self.writing.as_mut() {
                body.pos += n;
                let sent = body.pos >= body.len;
                self.out_waiting_since = (!sent).then_some(now_ms);
                if sent && let Some(Writing::Full(body)) = self.writing.take() {
                    self.keep_answer(body.own);
                }
            }
            return;
        }
        self.out_pos += n;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            self.out_waiting_since = None;
        } else {
            self.out_waiting_since = Some(now_ms);
            if self.out_pos >= 4096 && self.out_pos * 2 >= self.out.len() {
                self.out.drain(..self.out_pos);
                self.out_pos = 0;
            }
        }
    }

    /// Unsent bytes: the output buffer's and a complete body's.
    pub(super) fn pending(&self) -> usize {
        let body = match &self.writing {
            Some(Writing::Full(body)) => body.len.saturating_sub(body.pos),
            _ => 0,
        };
        self.out.len() - self.out_pos + body
    }

    pub(super) fn out_room(&self) -> usize {
        self.config.output_buffer.saturating_sub(self.pending())
    }

    /// Keeps a sent answer's room for the next request's answer (in place of any other),
    /// if it is small.
    pub(super) fn keep_answer(&mut self, mut body: Vec<u8>) {
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

    /// Moves streamed body bytes into the output buffer while it has room (a complete body
    /// is sent from its own buffer). Returns true when no body is in progress any more.
    pub(super) fn fill(&mut self, now_ms: u64) -> bool {
        let cap = self.config.output_buffer;
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
                    let pending = self.out.len() - self.out_pos;
                    let room = cap.saturating_sub(pending);
                    if pending > 0 && room < room_for_piece(*chunked, cap) {
                        break false;
                    }
                    let max = room.saturating_sub(overhead).max(1);
                    // The body is polled straight into the output buffer.
                    let chunk = chunked.then(|| response::open_chunk(&mut self.out, max));
                    let before = self.out.len();
                    let poll = source.poll(&mut self.out, max, now_ms);
                    let got = self.out.len() - before;
                    if let Some(chunk) = chunk {
                        response::close_chunk(&mut self.out, chunk);
                    }
                    match poll {
                        BodyPoll::Data if got > 0 => continue,
                        BodyPoll::Data | BodyPoll::Pending => break false,
                        BodyPoll::End => {
                            if *chunked {
                                self.out.extend_from_slice(LAST_CHUNK);
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

    /// Writes the head of `resp` and sets its body up for writing.
    pub(super) fn start(&mut self, resp: Response, head: bool, version: Version, keep_alive: bool) {
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
            &mut self.out,
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
        if close {
            self.closing = true;
            self.held = Vec::new();
        }
    }
}
