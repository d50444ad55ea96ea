//! The result of a `tools/call`, weighed and written: at once when it is light and complete,
//! else piece by piece as its streamed blocks and its structured part allow.

use crate::json::TextEscaper;
use crate::json::write_value as encode_value;
use crate::json::{Tape, Written, escape_json, escape_str, escape_within};
use crate::mcp::guard::outcome::Outcome;
use crate::mcp::tools::schema::Schema;
use crate::mcp::wire::base64::{Base64Stream, Enc};
use crate::mcp::wire::error_code::{ErrorCode, code_of_text};
use crate::mcp::wire::tool::{
    Content, ContentSource, SourcePoll, StreamKind, ToolError, ToolOutput,
};
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

struct Streaming<C> {
    source: Box<dyn ContentSource<C>>,
    enc: Enc,
    closing: &'static [u8],
    /// The emitter's raw buffer holds the source's last piece up to `end`; bytes before `at`
    /// have been encoded.
    at: usize,
    end: usize,
    /// The source said this piece is its last (or failed).
    ended: bool,
}

/// Output room from which a base64 stream, a text block or the structured result's copies
/// are written straight into the response body rather than through the pending buffer (it
/// always fits a group or an escaped character, the padding and the closing).
pub(crate) const DIRECT_MIN: usize = 64;
/// Text blocks longer than this are escaped a piece at a time straight into the body; a
/// shorter one is written whole in one step.
const TEXT_PIECES_FROM: usize = 1024;
/// Room kept for what follows the last piece of text: `"}],"structuredContent":`.
const CLOSING_ROOM: usize = 32;
/// About what the era adds at the end of a result (`resultType` and the server's name and
/// version in `_meta`, about 110 bytes), and `isError`.
const EXTRA_ROOM: usize = 160;

pub(crate) enum EmitPoll {
    Progress,
    Pending,
    /// Progress made by a heavy step: end this poll, go on at the next.
    Yield,
    Done,
}

/// Writes the members an era adds at the end of a result (see [`CallSetup::result_extra`]).
type Extra<'a> = &'a dyn Fn(&mut Vec<u8>);

/// A structured result that weighs more than this ([`Written::weight`]) is checked against the output
/// schema and written a stage per poll (a 300-entry `fs.list` weighs ~1,800 and took 13M guest
/// instructions when checked and written in the poll that ran the tool).
const HEAVY: usize = 512;
/// Bytes of a heavy structured result's JSON escaped or copied per step: the output pacing
/// then bounds the work of a poll.
const TAIL_PIECE: usize = 8 * 1024;

/// Whether a structured result is checked against its tool's output schema before it is sent:
/// in debug builds, which every host test of a tool and every `rpc` test runs (the module's
/// test harness fails a call whose result does not match), and not in the product image, where
/// the check is the module verifying its own output and cost a small call up to a quarter of
/// its instructions (`status` 41,000 of 219,000, `fs.list /` 76,000 of 309,000: docs/bench.md,
/// "The request floor").
pub(crate) const CHECK_RESULTS: bool = cfg!(debug_assertions);

/// Whether a result is heavy enough to be written over several polls.
fn heavy<C>(output: &ToolOutput<C>) -> bool {
    !output.is_error
        && output
            .structured
            .as_ref()
            .is_some_and(|j| j.weight() > HEAVY)
}

/// The structured result's two copies: its JSON escaped into a text block, then the same
/// bytes as `structuredContent`; `at` is how far the current copy has got. Then the end of
/// the result, which goes through the pending buffer (the era's members have no bound).
enum Tail {
    Text { json: Vec<u8>, at: usize },
    Raw { json: Vec<u8>, at: usize },
    Close,
}

/// Where a piece of `json` from `at` ends: on a character boundary, at most `piece` bytes on
/// unless one character is longer.
fn piece_end(json: &[u8], at: usize, piece: usize) -> usize {
    let continues = |i: usize| json.get(i).is_some_and(|b| b & 0xC0 == 0x80);
    let end = at.saturating_add(piece).min(json.len());
    let mut end = at + irix7_kmem::complete_utf8(json.get(at..end).unwrap_or(&[]));
    if end == at && at < json.len() {
        end = at + 1;
        while continues(end) {
            end += 1;
        }
    }
    end
}

/// Writes a `CallToolResult` piece by piece.
pub(crate) struct Emitter<C> {
    blocks: VecDeque<Content<C>>,
    streaming: Option<Streaming<C>>,
    wrote_block: bool,
    started: bool,
    structured: Option<Written>,
    is_error: bool,
    /// The code of an error result, for its audit record.
    code: Option<ErrorCode>,
    late_error: Option<ToolError>,
    raw: Vec<u8>,
    /// Written a stage per poll (see [`HEAVY`]).
    heavy: bool,
    /// A heavy result gives the poll that ran the tool back before its first stage.
    yielded: bool,
    /// A heavy result's schema check, done on a poll of its own (see [`CHECK_RESULTS`]).
    check: bool,
    tail: Option<Tail>,
    /// A text block being escaped a piece at a time, and how far it has got.
    text: Option<(String, usize)>,
}

impl<C> Emitter<C> {
    pub(crate) fn new(output: ToolOutput<C>, output_schema: Option<&Schema>) -> Self {
        let heavy = heavy(&output);
        let code = if output.is_error {
            output.content.iter().find_map(|b| match b {
                Content::Text(t) => code_of_text(t),
                Content::Block(v) => code_of_text(v.get("text")?.as_str()?),
                Content::Stream(..) => None,
            })
        } else {
            None
        };
        let mut em = Emitter {
            blocks: output.content.into(),
            streaming: None,
            wrote_block: false,
            started: false,
            structured: output.structured,
            is_error: output.is_error,
            code,
            late_error: None,
            raw: Vec::new(),
            heavy,
            yielded: false,
            check: heavy && CHECK_RESULTS,
            tail: None,
            text: None,
        };
        if !heavy && CHECK_RESULTS {
            em.check_schema(output_schema);
        }
        em
    }

    /// Replaces a structured result that does not match the output schema with an error.
    fn check_schema(&mut self, output_schema: Option<&Schema>) {
        let mut tape = Tape::default();
        let verdict = match (output_schema, &self.structured, self.is_error) {
            // Checked from the writer's record; read only when it was not recorded.
            (Some(s), Some(json), false) => match json.value().or_else(|| tape.read(json.text())) {
                Some(v) => s.validate(v),
                None => Err(String::from("not JSON")),
            },
            _ => Ok(()),
        };
        if let Err(why) = verdict {
            let err = ToolError::new(
                ErrorCode::Internal,
                format!("structured result does not match outputSchema: {why}"),
            );
            let output = ToolOutput::<C>::error(&err);
            self.blocks = output.content.into();
            self.structured = output.structured;
            self.is_error = output.is_error;
            self.code = Some(ErrorCode::Internal);
            self.heavy = false;
        }
    }

    /// How the call ended, as its audit record says.
    pub(crate) fn outcome(&self) -> Outcome {
        match (self.is_error, self.code) {
            (false, _) => Outcome::Ok,
            (true, Some(code)) => Outcome::Failed(code),
            (true, None) => Outcome::Error,
        }
    }

    /// The next step encodes a base64 stream.
    pub(crate) fn streams_base64(&self) -> bool {
        matches!(
            &self.streaming,
            Some(Streaming {
                enc: Enc::B64(_),
                ..
            })
        )
    }

    /// The next step writes a piece sized by the room it is given, so it goes straight into
    /// the response body when that has [`DIRECT_MIN`] bytes of room.
    pub(crate) fn writes_direct(&self) -> bool {
        self.streams_base64()
            || self.text.is_some()
            || matches!(self.tail, Some(Tail::Text { .. } | Tail::Raw { .. }))
    }

    fn has_streams(&self) -> bool {
        self.blocks.iter().any(|b| matches!(b, Content::Stream(..)))
    }

    fn separator(&mut self, out: &mut Vec<u8>) {
        if self.wrote_block {
            out.push(b',');
        }
        self.wrote_block = true;
    }

    /// One step of the result into `out`, which takes at most `room` more bytes of a base64
    /// stream (at least [`DIRECT_MIN`]; other steps may write more).
    pub(crate) fn advance(
        &mut self,
        ctx: &mut C,
        out: &mut Vec<u8>,
        room: usize,
        chunk: usize,
        extra: Extra<'_>,
        output_schema: Option<&Schema>,
    ) -> EmitPoll {
        if self.heavy && !self.yielded {
            self.yielded = true;
            return EmitPoll::Yield;
        }
        if self.check {
            self.check = false;
            self.check_schema(output_schema);
            return EmitPoll::Yield;
        }
        if !self.started {
            self.started = true;
            out.extend_from_slice(b"{\"content\":[");
            return EmitPoll::Progress;
        }
        if let Some(s) = &mut self.streaming {
            if s.at >= s.end && !s.ended {
                match s.source.read(ctx, &mut self.raw) {
                    Ok((n, poll)) => {
                        (s.at, s.end) = (0, n.min(self.raw.len()));
                        s.ended = poll == SourcePoll::End;
                        if poll == SourcePoll::Pending && n == 0 {
                            return EmitPoll::Pending;
                        }
                    }
                    Err(e) => {
                        self.late_error = Some(e);
                        (s.at, s.end, s.ended) = (0, 0, true);
                    }
                }
            }
            let piece = self.raw.get(s.at..s.end).unwrap_or(&[]);
            s.at += match &mut s.enc {
                Enc::Text(e) => {
                    e.push(piece, out);
                    piece.len()
                }
                Enc::B64(e) => {
                    // Eight bytes to spare for the padding and the closing.
                    let n = e.fits(room.saturating_sub(8)).min(piece.len());
                    e.push(piece.get(..n).unwrap_or(&[]), out);
                    n
                }
            };
            if s.ended && s.at >= s.end {
                match &mut s.enc {
                    Enc::Text(e) => e.finish(out),
                    Enc::B64(e) => e.finish(out),
                }
                out.extend_from_slice(s.closing);
                self.streaming = None;
            }
            return EmitPoll::Progress;
        }
        if let Some((t, at)) = self.text.take() {
            let n = escape_within(
                t.as_bytes().get(at..).unwrap_or(&[]),
                out,
                room.saturating_sub(CLOSING_ROOM),
            );
            if at + n < t.len() {
                self.text = Some((t, at + n));
            } else {
                out.extend_from_slice(b"\"}");
            }
            return EmitPoll::Progress;
        }
        if let Some(block) = self.blocks.pop_front() {
            self.separator(out);
            match block {
                Content::Text(t) if t.len() > TEXT_PIECES_FROM => {
                    out.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
                    self.text = Some((t, 0));
                }
                Content::Text(t) => text_block(&t, out),
                Content::Block(v) => encode_value(out, &v),
                Content::Stream(kind, source) => {
                    let (enc, closing) = stream_header(&kind, out);
                    // Zeroed once; every piece of every stream is read into it.
                    if self.raw.len() != chunk.max(1) {
                        self.raw = alloc::vec![0; chunk.max(1)];
                    }
                    self.streaming = Some(Streaming {
                        source,
                        enc,
                        closing,
                        at: 0,
                        end: 0,
                        ended: false,
                    });
                }
            }
            return EmitPoll::Progress;
        }
        if let Some(err) = self.late_error.take() {
            self.separator(out);
            text_block(&err.to_string(), out);
            self.is_error = true;
            self.code = Some(err.code);
        }
        self.tail_step(out, room, extra)
    }

    pub(crate) fn cancel(&mut self, ctx: &mut C) {
        if let Some(s) = &mut self.streaming {
            s.source.cancel(ctx);
        }
        self.streaming = None;
        self.text = None;
        self.blocks.clear();
    }
}

/// `{"type":"text","text":…}` for `text`.
fn text_block(text: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
    escape_str(text, out);
    out.extend_from_slice(b"\"}");
}

fn stream_header(kind: &StreamKind, out: &mut Vec<u8>) -> (Enc, &'static [u8]) {
    let quoted = |out: &mut Vec<u8>, s: &str| {
        out.push(b'"');
        escape_str(s, out);
        out.push(b'"');
    };
    match kind {
        StreamKind::Text => {
            out.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
            (Enc::Text(TextEscaper::default()), b"\"}")
        }
        StreamKind::Image { mime_type } | StreamKind::Audio { mime_type } => {
            let t: &[u8] = if matches!(kind, StreamKind::Image { .. }) {
                b"image"
            } else {
                b"audio"
            };
            out.extend_from_slice(b"{\"type\":\"");
            out.extend_from_slice(t);
            out.extend_from_slice(b"\",\"mimeType\":");
            quoted(out, mime_type);
            out.extend_from_slice(b",\"data\":\"");
            (Enc::B64(Base64Stream::default()), b"\"}")
        }
        StreamKind::ResourceText { uri, mime_type }
        | StreamKind::ResourceBlob { uri, mime_type } => {
            out.extend_from_slice(b"{\"type\":\"resource\",\"resource\":{\"uri\":");
            quoted(out, uri);
            out.extend_from_slice(b",\"mimeType\":");
            quoted(out, mime_type);
            if matches!(kind, StreamKind::ResourceText { .. }) {
                out.extend_from_slice(b",\"text\":\"");
                (Enc::Text(TextEscaper::default()), b"\"}}")
            } else {
                out.extend_from_slice(b",\"blob\":\"");
                (Enc::B64(Base64Stream::default()), b"\"}}")
            }
        }
    }
}

/// Writes a complete result now, if the output has no streamed blocks.
pub(crate) fn render_now<C>(
    output: ToolOutput<C>,
    output_schema: Option<&Schema>,
    extra: Extra<'_>,
    out: &mut Vec<u8>,
) -> Result<Outcome, ToolOutput<C>> {
    if heavy(&output)
        || output
            .content
            .iter()
            .any(|b| matches!(b, Content::Stream(..)))
    {
        return Err(output);
    }
    let mut em = Emitter::new(output, output_schema);
    // Without streamed blocks every step makes progress without touching the context; the
    // bound only guards against a logic error looping forever.
    for _ in 0..(em.blocks.len() + 7) {
        if let EmitPoll::Done = em.advance_no_ctx(out, extra) {
            break;
        }
    }
    Ok(em.outcome())
}

impl<C> Emitter<C> {
    fn advance_no_ctx(&mut self, out: &mut Vec<u8>, extra: Extra<'_>) -> EmitPoll {
        // `render_now` checked that no block is a stream, so no context is needed.
        if self.has_streams() || self.streaming.is_some() {
            return EmitPoll::Done;
        }
        if !self.started {
            self.started = true;
            out.extend_from_slice(b"{\"content\":[");
            return EmitPoll::Progress;
        }
        match self.blocks.pop_front() {
            Some(Content::Text(t)) => {
                self.separator(out);
                text_block(&t, out);
                return EmitPoll::Progress;
            }
            Some(Content::Block(v)) => {
                self.separator(out);
                encode_value(out, &v);
                return EmitPoll::Progress;
            }
            _ => {}
        }
        self.tail_step(out, usize::MAX, extra)
    }

    /// One step of the end of the result: the structured result as a text block and as
    /// `structuredContent` (serialised once for both), then `isError` and `extra`. A heavy
    /// result serialises on a poll of its own and goes out [`TAIL_PIECE`] bytes a step; each
    /// step of the copies also stays within `room`.
    fn tail_step(&mut self, out: &mut Vec<u8>, room: usize, extra: Extra<'_>) -> EmitPoll {
        let piece = if self.heavy { TAIL_PIECE } else { usize::MAX };
        match self.tail.take() {
            None => {
                let Some(structured) = self.structured.take() else {
                    out.push(b']');
                    self.close(out, extra);
                    return EmitPoll::Done;
                };
                if self.wrote_block {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
                // A light result written at once goes straight into the body twice, escaped
                // and as it is, into room made for both (escaped JSON text takes at most
                // twice its bytes) and the era's closing members: the body grows once.
                if !self.heavy && room == usize::MAX {
                    let json = structured.bytes().len();
                    out.reserve(3 * json + CLOSING_ROOM + EXTRA_ROOM);
                    escape_json(structured.bytes(), out);
                    out.extend_from_slice(b"\"}],\"structuredContent\":");
                    out.extend_from_slice(structured.bytes());
                    self.close(out, extra);
                    return EmitPoll::Done;
                }
                let json = structured.into_bytes();
                self.tail = Some(Tail::Text { json, at: 0 });
                if self.heavy {
                    EmitPoll::Yield
                } else {
                    EmitPoll::Progress
                }
            }
            Some(Tail::Text { json, at }) => {
                let end = piece_end(&json, at, piece);
                let text = json.get(at..end).unwrap_or(&[]);
                // Serialised JSON is UTF-8, and the piece ends on a character boundary.
                let end = at + escape_within(text, out, room.saturating_sub(CLOSING_ROOM));
                if end < json.len() {
                    self.tail = Some(Tail::Text { json, at: end });
                } else {
                    out.extend_from_slice(b"\"}],\"structuredContent\":");
                    self.tail = Some(Tail::Raw { json, at: 0 });
                }
                EmitPoll::Progress
            }
            Some(Tail::Raw { json, at }) => {
                let end = at.saturating_add(piece.min(room)).min(json.len());
                out.extend_from_slice(json.get(at..end).unwrap_or(&[]));
                self.tail = Some(if end < json.len() {
                    Tail::Raw { json, at: end }
                } else {
                    Tail::Close
                });
                EmitPoll::Progress
            }
            Some(Tail::Close) => {
                self.close(out, extra);
                EmitPoll::Done
            }
        }
    }

    fn close(&self, out: &mut Vec<u8>, extra: Extra<'_>) {
        if self.is_error {
            out.extend_from_slice(b",\"isError\":true");
        }
        extra(out);
        out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;
    use alloc::vec::Vec;

    #[test]
    fn pieces_end_on_character_boundaries() {
        let pieces = |s: &str, piece| {
            let mut at = 0;
            let mut out = Vec::new();
            while at < s.len() {
                let end = super::piece_end(s.as_bytes(), at, piece);
                out.push(s[at..end].to_string());
                at = end;
            }
            out
        };
        let s = "ab\u{e9}\u{1F5A5}c";
        assert_eq!(pieces(s, 4), ["ab\u{e9}", "\u{1F5A5}", "c"]);
        assert_eq!(pieces(s, 3), ["ab", "\u{e9}", "\u{1F5A5}", "c"]);
    }
}
