//! A `resources/read` answer whose item streams from a source, spliced into the rendered
//! answer a bounded piece per poll.

use crate::http::{Body, BodyPoll, BodySource, Response};
use crate::json::TextEscaper;
use crate::json::escape_str;
use crate::mcp::resources::catalog::{STREAM_MARK, Streamed};
use crate::mcp::wire::base64::{Base64Stream, Enc};
use crate::mcp::wire::tool::{ContentSource, SourcePoll};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;

/// A complete JSON answer with one string member streamed from a source: the answer was
/// rendered with [`STREAM_MARK`] in that member, and goes out as the bytes before the mark,
/// the source's bytes (base64, or JSON-escaped text), then the bytes after it. A
/// `resources/read` of a screen capture answers this way, a bounded piece per poll.
pub(crate) struct SplicedStream<C: 'static> {
    ctx: Rc<RefCell<C>>,
    head: Vec<u8>,
    source: Option<Box<dyn ContentSource<C>>>,
    enc: Enc,
    tail: Vec<u8>,
    /// The source's pieces are read into it (a stream chunk long, zeroed once).
    raw: Vec<u8>,
    pending: Vec<u8>,
    sent: usize,
}

impl<C: 'static> SplicedStream<C> {
    /// Splits `rendered` at the mark; `None` when the mark is not in it (it always is when
    /// `rendered` holds `item.item`).
    pub(crate) fn new(
        ctx: Rc<RefCell<C>>,
        rendered: &[u8],
        item: Streamed<C>,
        chunk: usize,
    ) -> Option<Self> {
        let mut mark = Vec::new();
        escape_str(STREAM_MARK, &mut mark);
        let at = rendered.windows(mark.len()).position(|w| w == &mark[..])?;
        Some(SplicedStream {
            ctx,
            head: rendered.get(..at)?.to_vec(),
            source: Some(item.source),
            enc: if item.text {
                Enc::Text(TextEscaper::default())
            } else {
                Enc::B64(Base64Stream::default())
            },
            tail: rendered.get(at + mark.len()..)?.to_vec(),
            raw: alloc::vec![0; chunk.max(1)],
            pending: Vec::new(),
            sent: 0,
        })
    }

    /// A response whose full JSON body `resp` holds `item`'s mark, as a streamed response
    /// (`resp` unchanged when it does not hold it, e.g. an error answer).
    pub(crate) fn response(
        ctx: Rc<RefCell<C>>,
        mut resp: Response,
        item: Streamed<C>,
        chunk: usize,
    ) -> Response {
        if let Body::Full(bytes) = &resp.body
            && let Some(s) = SplicedStream::new(ctx, bytes, item, chunk)
        {
            resp.body = Body::Stream(Box::new(s));
        }
        resp
    }
}

impl<C: 'static> BodySource for SplicedStream<C> {
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, _now_ms: u64) -> BodyPoll {
        let start = out.len();
        if !self.head.is_empty() {
            self.pending = core::mem::take(&mut self.head);
        }
        loop {
            let room = max.saturating_sub(out.len() - start);
            let end = self.pending.len().min(self.sent + room);
            out.extend_from_slice(self.pending.get(self.sent..end).unwrap_or(&[]));
            self.sent = end;
            if self.sent < self.pending.len() {
                return BodyPoll::Data;
            }
            self.pending.clear();
            self.sent = 0;
            let Some(source) = self.source.as_mut() else {
                if self.tail.is_empty() {
                    return BodyPoll::End;
                }
                self.pending = core::mem::take(&mut self.tail);
                continue;
            };
            if out.len() - start >= max {
                return BodyPoll::Data;
            }
            let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
                return if out.len() > start {
                    BodyPoll::Data
                } else {
                    BodyPoll::Pending
                };
            };
            let r = source.read(&mut ctx, &mut self.raw);
            drop(ctx);
            let n = *r.as_ref().map(|(n, _)| n).unwrap_or(&0);
            let piece = self.raw.get(..n).unwrap_or(&[]);
            match &mut self.enc {
                Enc::Text(e) => e.push(piece, &mut self.pending),
                Enc::B64(e) => e.push(piece, &mut self.pending),
            }
            match r.map(|(_, poll)| poll) {
                Ok(SourcePoll::Data) => {}
                // One piece per poll round when the source says so, so other clients run.
                Ok(SourcePoll::Pending) if self.pending.is_empty() => {
                    return if out.len() > start {
                        BodyPoll::Data
                    } else {
                        BodyPoll::Pending
                    };
                }
                Ok(SourcePoll::Pending) => {}
                Ok(SourcePoll::End) => {
                    match &mut self.enc {
                        Enc::Text(e) => e.finish(&mut self.pending),
                        Enc::B64(e) => e.finish(&mut self.pending),
                    }
                    self.source = None;
                }
                // The head is out, so no error answer can follow: the body ends without its
                // tail, which a client cannot mistake for a complete (truncated) item.
                Err(_) => {
                    self.cancel();
                    return BodyPoll::End;
                }
            }
        }
    }

    fn cancel(&mut self) {
        if let Some(mut source) = self.source.take()
            && let Ok(mut ctx) = self.ctx.try_borrow_mut()
        {
            source.cancel(&mut ctx);
        }
        self.pending.clear();
        self.tail.clear();
        self.head.clear();
    }
}

#[cfg(test)]
mod tests;
