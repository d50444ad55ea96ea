//! A `tools/call` response as a streamed body: it advances the tool one step per poll, sends
//! progress and log notices as SSE events (when the response is an event stream), then writes
//! the result, pulling streamed content blocks through the encoders so big results never sit
//! in memory whole.

use super::audit::{Outcome, PendingAudit, code_of_text};
use super::base64::Base64Stream;
use super::confirm;
use super::inputs::Answers;
use super::limits::CallState;
use super::resource::{STREAM_MARK, Streamed};
use super::schema::Schema;
use super::tool::{
    Content, ContentSource, InputRequired, LogLevel, Notice, SourcePoll, Started, Step, StepIo,
    StreamKind, Structured, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun,
};
use crate::http::{Body, BodyPoll, BodySource, Response};
use crate::json::{
    Tape, TextEscaper, escape_str, escape_within, write_value as encode_value, write_value_escaped,
};
use crate::jsonrpc::{self, Id, RpcError};
use crate::mcp::ErrorCode;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::RefCell;
use core::fmt::Write;
use serde_json::{Map, Value};

/// JSON-RPC error code sent when a call is cancelled before its result started.
pub(crate) const REQUEST_CANCELLED: i32 = -32800;

/// How the response is framed.
#[derive(Clone, Debug)]
pub(crate) enum Framing {
    /// One JSON-RPC response.
    Json,
    /// Server-sent events. `ids` = (session serial, stream number) for legacy event ids;
    /// `retry_ms` adds a priming event.
    Sse {
        ids: Option<(u64, u64)>,
        retry_ms: Option<u64>,
    },
}

/// Everything about a call's response that is fixed when it starts.
pub(crate) struct CallSetup {
    pub(crate) id: Id,
    pub(crate) framing: Framing,
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_level: Option<LogLevel>,
    /// JSON members (each starting with `,`) added at the end of the result object.
    pub(crate) result_extra: Vec<u8>,
    pub(crate) output_schema: Option<Rc<Schema>>,
    pub(crate) chunk: usize,
    /// The call's audit record, written when the call ends (see [`super::audit`]).
    pub(crate) audit: Option<PendingAudit>,
}

enum Enc {
    Text(TextEscaper),
    B64(Base64Stream),
}

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
const DIRECT_MIN: usize = 64;
/// Text blocks longer than this are escaped a piece at a time straight into the body; a
/// shorter one is written whole in one step.
const TEXT_PIECES_FROM: usize = 1024;
/// Room kept for what follows the last piece of text: `"}],"structuredContent":`.
const CLOSING_ROOM: usize = 32;

enum EmitPoll {
    Progress,
    Pending,
    /// Progress made by a heavy step: end this poll, go on at the next.
    Yield,
    Done,
}

/// Writes the members an era adds at the end of a result (see [`CallSetup::result_extra`]).
pub(crate) type Extra<'a> = &'a dyn Fn(&mut Vec<u8>);

/// A structured result that weighs more than this ([`weight`]) is checked against the output
/// schema and written a stage per poll (a 300-entry `fs.list` weighs ~1,800 and took 13M guest
/// instructions when checked and written in the poll that ran the tool).
const HEAVY: usize = 512;
/// Bytes of a heavy structured result's JSON escaped or copied per step: the output pacing
/// then bounds the work of a poll.
const TAIL_PIECE: usize = 8 * 1024;

/// The JSON nodes of `v` plus one per 64 bytes of its strings, counted up to just past
/// `limit`. A walk on the stack (as deep as the value, as [`encode_value`]'s), so weighing a
/// small result allocates nothing.
fn weight(v: &Value, limit: usize) -> usize {
    fn walk(v: &Value, n: &mut usize, limit: usize) {
        *n += 1;
        match v {
            Value::String(s) => *n += s.len() / 64,
            Value::Array(a) => {
                for item in a {
                    if *n > limit {
                        return;
                    }
                    walk(item, n, limit);
                }
            }
            Value::Object(m) => {
                for item in m.values() {
                    if *n > limit {
                        return;
                    }
                    walk(item, n, limit);
                }
            }
            _ => {}
        }
    }
    let mut n = 0;
    walk(v, &mut n, limit);
    n.min(limit + 1)
}

/// JSON text past this many bytes makes a result heavy: what [`HEAVY`] is in string bytes.
const HEAVY_JSON: usize = HEAVY * 64;

/// Whether a result is heavy enough to be written over several polls.
fn heavy<C>(output: &ToolOutput<C>) -> bool {
    !output.is_error
        && match &output.structured {
            Some(Structured::Value(v)) => weight(v, HEAVY) > HEAVY,
            Some(Structured::Json(json)) => json.text().len() > HEAVY_JSON,
            None => false,
        }
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
struct Emitter<C> {
    blocks: VecDeque<Content<C>>,
    streaming: Option<Streaming<C>>,
    wrote_block: bool,
    started: bool,
    structured: Option<Structured>,
    is_error: bool,
    /// The code of an error result, for its audit record.
    code: Option<ErrorCode>,
    late_error: Option<ToolError>,
    raw: Vec<u8>,
    /// Written a stage per poll (see [`HEAVY`]).
    heavy: bool,
    /// A heavy result gives the poll that ran the tool back before its first stage.
    yielded: bool,
    /// A heavy result's schema check, done on a poll of its own.
    check: bool,
    tail: Option<Tail>,
    /// A text block being escaped a piece at a time, and how far it has got.
    text: Option<(String, usize)>,
}

impl<C> Emitter<C> {
    fn new(output: ToolOutput<C>, output_schema: Option<&Schema>) -> Self {
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
            check: heavy,
            tail: None,
            text: None,
        };
        if !heavy {
            em.check_schema(output_schema);
        }
        em
    }

    /// Replaces a structured result that does not match the output schema with an error.
    fn check_schema(&mut self, output_schema: Option<&Schema>) {
        let mut tape = Tape::default();
        let verdict = match (output_schema, &self.structured, self.is_error) {
            (Some(s), Some(Structured::Value(v)), false) => s.validate(v),
            (Some(s), Some(Structured::Json(json)), false) => {
                match json.value().or_else(|| tape.read(json.text())) {
                    Some(v) => s.validate(v),
                    None => Err(String::from("not JSON")),
                }
            }
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
    fn outcome(&self) -> Outcome {
        match (self.is_error, self.code) {
            (false, _) => Outcome::Ok,
            (true, Some(code)) => Outcome::Failed(code),
            (true, None) => Outcome::Error,
        }
    }

    /// The next step encodes a base64 stream.
    fn streams_base64(&self) -> bool {
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
    fn writes_direct(&self) -> bool {
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
    fn advance(
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

    fn cancel(&mut self, ctx: &mut C) {
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
                // A light result written at once is written twice, escaped and as it is,
                // rather than serialised into a buffer of its own to escape and copy.
                if !self.heavy && room == usize::MAX {
                    match &structured {
                        Structured::Value(v) => write_value_escaped(out, v),
                        Structured::Json(json) => {
                            escape_within(json.text().as_bytes(), out, usize::MAX);
                        }
                    }
                    out.extend_from_slice(b"\"}],\"structuredContent\":");
                    match &structured {
                        Structured::Value(v) => encode_value(out, v),
                        Structured::Json(json) => out.extend_from_slice(json.text().as_bytes()),
                    }
                    self.close(out, extra);
                    return EmitPoll::Done;
                }
                let json = match structured {
                    Structured::Json(json) => json.into_text().into_bytes(),
                    Structured::Value(v) => {
                        // A light result fits the first allocation.
                        let mut json = Vec::with_capacity(if self.heavy { 0 } else { 256 });
                        encode_value(&mut json, &v);
                        json
                    }
                };
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

enum Phase<C> {
    Running(Box<dyn ToolRun<C>>),
    /// Legacy bridge: waiting for the client's answers to requests sent on this stream.
    Asking(Box<Asking<C>>),
    Emitting(Box<Emitter<C>>),
    Finished,
}

/// Rounds of client input one call may ask for before it is failed.
const MAX_ROUNDS: u32 = 8;
/// Input requests per round.
const MAX_REQUESTS: usize = 8;
/// How long one round of client input may stay unanswered. A client that never answers (or
/// vanished) would otherwise hold the call's socket and concurrency slot until its session
/// expires; after this the call ends with `E_TIMEOUT` and lets go of both.
pub(crate) const ASK_DEADLINE_MS: u64 = 60_000;

/// A legacy call waiting for client input (see `inputs`).
pub(crate) struct Asking<C> {
    pub(crate) def: ToolDef<C>,
    /// The call needs consent (`mcp.confirm`): each restart goes through the gate again.
    pub(crate) gated: bool,
    /// The arguments' JSON text, read again for each restart.
    pub(crate) args: String,
    pub(crate) caps: Value,
    pub(crate) shared: Rc<RefCell<Answers>>,
    pub(crate) session: u64,
    state: Option<String>,
    /// (input key, request id) still unanswered.
    waiting: Vec<(String, String)>,
    answers: Map<String, Value>,
    rounds: u32,
    sent: u64,
    /// When the current round was first polled: the deadline counts from there.
    round_since_ms: Option<u64>,
}

impl<C> Asking<C> {
    pub(crate) fn new(
        def: ToolDef<C>,
        gated: bool,
        args: String,
        caps: Value,
        shared: Rc<RefCell<Answers>>,
        session: u64,
    ) -> Self {
        Asking {
            def,
            gated,
            args,
            caps,
            shared,
            session,
            state: None,
            waiting: Vec::new(),
            answers: Map::new(),
            rounds: 0,
            sent: 0,
            round_since_ms: None,
        }
    }
}

/// The response body of a running tool call.
pub(crate) struct CallStream<C: 'static> {
    ctx: Rc<RefCell<C>>,
    phase: Phase<C>,
    setup: CallSetup,
    call: Rc<CallState>,
    pending: Vec<u8>,
    sent: usize,
    last_progress: Option<f64>,
    events: u64,
    notices: Vec<Notice>,
    /// Since when a running call on an event stream has sent nothing (see `keep_alive`).
    quiet_since: Option<u64>,
}

/// Longest silence on a running call's event stream.
pub(crate) const KEEP_ALIVE_MS: u64 = 5_000;

impl<C: 'static> CallStream<C> {
    pub(crate) fn running(
        ctx: Rc<RefCell<C>>,
        run: Box<dyn ToolRun<C>>,
        setup: CallSetup,
        call: Rc<CallState>,
    ) -> Self {
        Self::new(ctx, Phase::Running(run), setup, call)
    }

    /// A finished output that still has streamed blocks to write.
    pub(crate) fn emitting(
        ctx: Rc<RefCell<C>>,
        output: ToolOutput<C>,
        setup: CallSetup,
        call: Rc<CallState>,
    ) -> Self {
        let mut s = Self::new(ctx, Phase::Finished, setup, call);
        s.begin_result(output);
        s
    }

    fn new(ctx: Rc<RefCell<C>>, phase: Phase<C>, setup: CallSetup, call: Rc<CallState>) -> Self {
        let mut s = CallStream {
            ctx,
            phase,
            setup,
            call,
            pending: Vec::new(),
            sent: 0,
            last_progress: None,
            events: 0,
            notices: Vec::new(),
            quiet_since: None,
        };
        if let Framing::Sse {
            retry_ms: Some(ms), ..
        } = s.setup.framing
        {
            s.event_start();
            let _ = write!(Utf8Sink(&mut s.pending), "retry: {ms}\ndata: ");
            s.pending.extend_from_slice(b"\n\n");
        }
        s
    }

    /// Starts an SSE event: `id:` (legacy) and the `data: ` prefix. With a priming event the
    /// `retry:` line goes between them.
    fn event_start(&mut self) {
        if let Framing::Sse { ids, .. } = self.setup.framing {
            if let Some((session, stream)) = ids {
                let n = self.events;
                let _ = writeln!(Utf8Sink(&mut self.pending), "id: {session}-{stream}-{n}");
            }
            self.events += 1;
        }
    }

    fn push_event(&mut self, json: &[u8]) {
        self.event_start();
        self.pending.extend_from_slice(b"data: ");
        self.pending.extend_from_slice(json);
        self.pending.extend_from_slice(b"\n\n");
    }

    fn is_sse(&self) -> bool {
        matches!(self.setup.framing, Framing::Sse { .. })
    }

    fn flush_notices(&mut self) {
        let notices = core::mem::take(&mut self.notices);
        if !self.is_sse() {
            return;
        }
        for n in notices {
            match n {
                Notice::Progress {
                    progress,
                    total,
                    message,
                } => {
                    let Some(token) = self.setup.progress_token.clone() else {
                        continue;
                    };
                    if !progress.is_finite()
                        || self.last_progress.is_some_and(|last| progress <= last)
                    {
                        continue;
                    }
                    self.last_progress = Some(progress);
                    let mut p = Map::new();
                    p.insert("progressToken".into(), token);
                    p.insert("progress".into(), number(progress));
                    if let Some(t) = total.filter(|t| t.is_finite()) {
                        p.insert("total".into(), number(t));
                    }
                    if let Some(m) = message {
                        p.insert("message".into(), Value::from(m));
                    }
                    let bytes = jsonrpc::notification("notifications/progress", &Value::Object(p));
                    self.push_event(&bytes);
                }
                Notice::Log { level, data } => {
                    if self.setup.log_level.is_some_and(|min| level >= min) {
                        let params = serde_json::json!({"level": level.as_str(), "logger": "irix7-mcp", "data": data});
                        let bytes = jsonrpc::notification("notifications/message", &params);
                        self.push_event(&bytes);
                    }
                }
            }
        }
    }

    fn begin_result(&mut self, output: ToolOutput<C>) {
        if self.is_sse() {
            self.event_start();
            self.pending.extend_from_slice(b"data: ");
        }
        self.pending
            .extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        self.pending
            .extend_from_slice(self.setup.id.as_json().as_bytes());
        self.pending.extend_from_slice(b",\"result\":");
        self.phase = Phase::Emitting(Box::new(Emitter::new(
            output,
            self.setup.output_schema.as_deref(),
        )));
    }

    /// A whole answer (an error), framed as the stream is.
    fn push_answer(&mut self, json: &[u8]) {
        if self.is_sse() {
            self.push_event(json);
        } else {
            self.pending.extend_from_slice(json);
        }
    }

    fn end_result(&mut self) {
        self.pending.push(b'}');
        if self.is_sse() {
            self.pending.extend_from_slice(b"\n\n");
        }
        self.phase = Phase::Finished;
    }

    /// Stops the work. `answer` writes what the client should still see (JSON framing, no
    /// result started yet: a -32800 error).
    fn abort(&mut self, answer: bool) {
        let phase = core::mem::replace(&mut self.phase, Phase::Finished);
        let result_started = matches!(phase, Phase::Emitting(_));
        if let Ok(mut ctx) = self.ctx.try_borrow_mut() {
            match phase {
                Phase::Running(mut run) => run.cancel(&mut ctx),
                Phase::Emitting(mut em) => em.cancel(&mut ctx),
                Phase::Asking(_) | Phase::Finished => {}
            }
        }
        if answer && !result_started && !self.is_sse() {
            let err = RpcError::new(REQUEST_CANCELLED, "Request cancelled");
            self.pending
                .extend_from_slice(&jsonrpc::error_response(Some(&self.setup.id), &err));
        }
        self.call.finished.set(true);
        self.audit(Outcome::Cancelled);
    }

    /// Writes the call's audit record (once; later calls do nothing).
    fn audit(&mut self, outcome: Outcome) {
        if let Some(a) = self.setup.audit.take() {
            a.finish(outcome);
        }
    }
}

fn number(f: f64) -> Value {
    if f.abs() < 9.0e15 && (f as i64) as f64 == f {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// `core::fmt::Write` into a byte buffer.
pub(crate) struct Utf8Sink<'a>(pub(crate) &'a mut Vec<u8>);

impl Write for Utf8Sink<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

impl<C: 'static> CallStream<C> {
    /// A legacy call whose tool asked for client input: the requests go out on this (SSE)
    /// stream at once.
    pub(crate) fn asking(
        ctx: Rc<RefCell<C>>,
        asking: Asking<C>,
        first: InputRequired,
        setup: CallSetup,
        call: Rc<CallState>,
    ) -> Self {
        let mut s = Self::new(ctx, Phase::Asking(Box::new(asking)), setup, call);
        s.send_requests(first);
        s
    }

    /// Sends one round of input requests as JSON-RPC requests on the stream.
    fn send_requests(&mut self, ir: InputRequired) {
        let Phase::Asking(ask) = &mut self.phase else {
            return;
        };
        ask.rounds += 1;
        ask.round_since_ms = None;
        ask.state = ir.request_state;
        ask.answers = Map::new();
        ask.waiting.clear();
        let requests = match ir.input_requests {
            Value::Object(m)
                if !m.is_empty() && m.len() <= MAX_REQUESTS && ask.rounds <= MAX_ROUNDS =>
            {
                m
            }
            _ => {
                let err = ToolError::new(ErrorCode::Internal, "unusable request for client input");
                self.begin_result(ToolOutput::error(&err));
                return;
            }
        };
        let (session, stream) = match self.setup.framing {
            Framing::Sse { ids: Some(ids), .. } => ids,
            _ => (ask.session, 0),
        };
        let mut events = Vec::new();
        for (key, req) in requests {
            let method = req.get("method").and_then(Value::as_str).unwrap_or("");
            let params = req
                .get("params")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            let id = format!("irix7-{session}-{stream}-{}", ask.sent);
            ask.sent += 1;
            if !ask
                .shared
                .borrow_mut()
                .expect(ask.session, id.clone(), &self.call)
            {
                let err = ToolError::new(ErrorCode::Busy, "too many requests to clients in flight");
                self.begin_result(ToolOutput::error(&err));
                return;
            }
            let mut msg = Map::new();
            msg.insert("jsonrpc".into(), Value::from("2.0"));
            msg.insert("id".into(), Value::from(id.as_str()));
            msg.insert("method".into(), Value::from(method));
            msg.insert("params".into(), params);
            let mut bytes = Vec::new();
            encode_value(&mut bytes, &Value::Object(msg));
            events.push(bytes);
            ask.waiting.push((key, id));
        }
        for e in events {
            self.push_event(&e);
        }
    }

    /// Collects arrived answers; when all are in, restarts the tool with them.
    fn poll_asking(&mut self, now_ms: u64) -> bool {
        let Phase::Asking(ask) = &mut self.phase else {
            return false;
        };
        let mut failed = None;
        {
            let mut shared = ask.shared.borrow_mut();
            ask.waiting.retain(|(key, id)| match shared.take(id) {
                Some(Ok(v)) => {
                    ask.answers.insert(key.clone(), v);
                    false
                }
                Some(Err(e)) => {
                    let msg = e.get("message").and_then(Value::as_str).unwrap_or("error");
                    failed = Some(ToolError::new(
                        ErrorCode::Client,
                        format!("client refused {key}: {msg}"),
                    ));
                    false
                }
                None => true,
            });
        }
        if let Some(err) = failed {
            self.begin_result(ToolOutput::error(&err));
            return true;
        }
        if !ask.waiting.is_empty() {
            let since = *ask.round_since_ms.get_or_insert(now_ms);
            if now_ms.saturating_sub(since) < ASK_DEADLINE_MS {
                return false;
            }
            // The waiting entries in `Answers` belong to this call: they are pruned once the
            // result below ends it.
            let keys: Vec<&str> = ask.waiting.iter().map(|(k, _)| k.as_str()).collect();
            let err = ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "the client did not answer {} within {} s",
                    keys.join(", "),
                    ASK_DEADLINE_MS / 1000
                ),
            );
            self.begin_result(ToolOutput::error(&err));
            return true;
        }
        let mut tape = Tape::default();
        let Some(args) = tape.read(&ask.args) else {
            let err = ToolError::new(ErrorCode::Internal, "the kept arguments do not read");
            self.begin_result(ToolOutput::error(&err));
            return true;
        };
        let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
            return false;
        };
        let call = ToolCall {
            args,
            now_ms,
            client_capabilities: &ask.caps,
            input_responses: Some(&ask.answers),
            request_state: ask.state.as_deref(),
        };
        let started = confirm::start(&ask.def, ask.gated, &mut ctx, &call);
        drop(ctx);
        match started {
            Err(e) => self.begin_result(ToolOutput::error(&e)),
            Ok(Started::Done(out)) => self.begin_result(out),
            Ok(Started::Run(run)) => self.phase = Phase::Running(run),
            Ok(Started::InputRequired(ir)) => self.send_requests(ir),
        }
        true
    }

    /// While a call runs on an event stream, a comment line after [`KEEP_ALIVE_MS`] without a
    /// byte sent: proxies and SSH tunnels drop a connection idle for long, and a wait on the
    /// console may be idle for minutes. Comments are not events (no id, no message): clients
    /// skip them.
    fn keep_alive(&mut self, wrote: bool, now_ms: u64) {
        if !self.is_sse() {
            return;
        }
        if wrote || !self.pending.is_empty() {
            self.quiet_since = Some(now_ms);
            return;
        }
        let since = *self.quiet_since.get_or_insert(now_ms);
        if now_ms.saturating_sub(since) >= KEEP_ALIVE_MS {
            self.pending.extend_from_slice(b": keep-alive\n\n");
            self.quiet_since = Some(now_ms);
        }
    }

    /// Moves pending bytes into `out` without exceeding `max` bytes for this poll.
    fn flush_into(&mut self, out: &mut Vec<u8>, start: usize, max: usize) {
        let room = max.saturating_sub(out.len() - start);
        let end = self.pending.len().min(self.sent + room);
        out.extend_from_slice(self.pending.get(self.sent..end).unwrap_or(&[]));
        self.sent = end;
        if self.sent >= self.pending.len() {
            self.pending.clear();
            self.sent = 0;
        }
    }
}

impl<C: 'static> BodySource for CallStream<C> {
    fn poll(&mut self, out: &mut Vec<u8>, max: usize, now_ms: u64) -> BodyPoll {
        let start = out.len();
        let wrote = |out: &Vec<u8>| {
            if out.len() > start {
                BodyPoll::Data
            } else {
                BodyPoll::Pending
            }
        };
        loop {
            self.flush_into(out, start, max);
            if !self.pending.is_empty() {
                return BodyPoll::Data;
            }
            if matches!(self.phase, Phase::Finished) {
                self.call.finished.set(true);
                return BodyPoll::End;
            }
            if out.len() - start >= max {
                return BodyPoll::Data;
            }
            if self.call.cancelled.get() {
                self.abort(true);
                continue;
            }
            let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
                return wrote(out);
            };
            match &mut self.phase {
                Phase::Running(run) => {
                    let heard = self.setup.progress_token.is_some()
                        && matches!(self.setup.framing, Framing::Sse { .. });
                    let mut io = StepIo {
                        now_ms,
                        notices: &mut self.notices,
                        heard,
                    };
                    let step = run.step(&mut ctx, &mut io);
                    drop(ctx);
                    self.flush_notices();
                    match step {
                        // One step per poll round, so that one call never starves the
                        // others: notices of this step are handed out, but the answer is
                        // Pending ("come back next round"), not Data ("ask again now").
                        Step::Pending => {
                            self.keep_alive(out.len() > start, now_ms);
                            self.flush_into(out, start, max);
                            return BodyPoll::Pending;
                        }
                        Step::Done(output) => self.begin_result(output),
                        Step::Failed(err) => self.begin_result(ToolOutput::error(&err)),
                        Step::Aborted(err) => {
                            let e = RpcError::new(
                                jsonrpc::INTERNAL_ERROR,
                                alloc::string::ToString::to_string(&err),
                            );
                            self.push_answer(&jsonrpc::error_response(Some(&self.setup.id), &e));
                            self.phase = Phase::Finished;
                            self.call.finished.set(true);
                            self.audit(Outcome::Failed(err.code));
                        }
                    }
                }
                Phase::Asking(_) => {
                    drop(ctx);
                    if !self.poll_asking(now_ms) {
                        return wrote(out);
                    }
                }
                Phase::Emitting(em) => {
                    // Pieces sized by the room go straight into the body (the pending buffer
                    // is empty here), text into the next chunk when this one is nearly full
                    // (base64 then goes through `pending`: fewer chunks measured cheaper);
                    // everything else through `pending`.
                    let room = max.saturating_sub(out.len() - start);
                    let direct = em.writes_direct();
                    if direct && !em.streams_base64() && room < DIRECT_MIN && out.len() > start {
                        return BodyPoll::Data;
                    }
                    let (target, room) = if direct && room >= DIRECT_MIN {
                        (&mut *out, room)
                    } else {
                        (&mut self.pending, usize::MAX)
                    };
                    match em.advance(
                        &mut ctx,
                        target,
                        room,
                        self.setup.chunk,
                        &|out: &mut Vec<u8>| out.extend_from_slice(&self.setup.result_extra),
                        self.setup.output_schema.as_deref(),
                    ) {
                        EmitPoll::Progress => {}
                        EmitPoll::Pending => return wrote(out),
                        // A heavy step ran: the bytes so far go out, the rest next poll.
                        EmitPoll::Yield => {
                            drop(ctx);
                            self.flush_into(out, start, max);
                            return BodyPoll::Pending;
                        }
                        EmitPoll::Done => {
                            let outcome = em.outcome();
                            drop(ctx);
                            self.end_result();
                            self.audit(outcome);
                        }
                    }
                }
                Phase::Finished => {}
            }
        }
    }

    fn cancel(&mut self) {
        self.pending.clear();
        self.sent = 0;
        self.abort(false);
    }
}

impl<C: 'static> Drop for CallStream<C> {
    fn drop(&mut self) {
        if !matches!(self.phase, Phase::Finished) {
            self.abort(false);
        }
        self.call.finished.set(true);
    }
}

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
mod tests {
    use super::ASK_DEADLINE_MS;
    use crate::http::{Body, BodyPoll, Response};
    use crate::mcp::{
        Annotations, Config, InputRequired, LEGACY_VERSIONS, McpServer, Started, ToolCall, ToolDef,
        ToolError, ToolOutput,
    };
    use crate::testing::{McpRequest, drain, last_message, messages};
    use alloc::boxed::Box;
    use alloc::rc::Rc;
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;
    use core::cell::RefCell;
    use serde_json::{Value, json};

    /// Asks the client for a confirmation, then answers with what it said.
    fn confirm(_: &mut (), call: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
        match call.input_responses {
            Some(r) => Ok(Started::Done(ToolOutput::text(r["ok"].to_string()))),
            None => Ok(Started::InputRequired(InputRequired {
                input_requests: json!({"ok": {"method": "elicitation/create",
                    "params": {"message": "go?", "requestedSchema": {"type": "object"}}}}),
                request_state: None,
            })),
        }
    }

    /// A long text with escapes and non-ASCII characters throughout: long enough that the
    /// answer is streamed.
    fn long_text() -> String {
        "plain text \"quoted\" \\ tab\t é€😀 \u{1} ".repeat(1000)
    }

    /// Answers with a long text block and the same text as a (heavy) structured result.
    fn long(_: &mut (), _: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
        let text = long_text();
        let mut out = ToolOutput::structured(json!({ "text": text }));
        out.content = alloc::vec![crate::mcp::Content::text(text)];
        Ok(Started::Done(out))
    }

    const TOOLS: &[ToolDef<()>] = &[
        ToolDef {
            name: "confirm",
            title: None,
            description: "Asks first",
            input_schema: r#"{"type":"object"}"#,
            output_schema: None,
            annotations: Annotations::READ_ONLY,
            requires: &[],
            errors: &[],
            start: confirm,
        },
        ToolDef {
            name: "long",
            title: None,
            description: "Answers at length",
            input_schema: r#"{"type":"object"}"#,
            output_schema: None,
            annotations: Annotations::READ_ONLY,
            requires: &[],
            errors: &[],
            start: long,
        },
    ];

    const T0: u64 = 5_000;

    fn server() -> (McpServer<()>, String) {
        let mut c = Config::new("7.0", None);
        c.limits.requests_per_second = 10_000;
        let mut s = McpServer::new(c, Rc::new(RefCell::new(())), Box::new(|b| b.fill(9)));
        s.register_tools(TOOLS).unwrap();
        let r = McpRequest::initialize(LEGACY_VERSIONS[0])
            .param("capabilities", json!({"elicitation": {}}))
            .send(&mut s, T0);
        let sid = r.headers.get("Mcp-Session-Id").unwrap().to_string();
        (s, sid)
    }

    fn call(s: &mut McpServer<()>, sid: &str, now: u64) -> Response {
        McpRequest::legacy(
            sid,
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        )
        .send(s, now)
    }

    /// One poll of a streamed body: what it said and the bytes it wrote.
    fn poll(r: &mut Response, now: u64) -> (BodyPoll, Vec<u8>) {
        let Body::Stream(src) = &mut r.body else {
            panic!("expected a stream");
        };
        let mut out = Vec::new();
        let p = src.poll(&mut out, 1 << 16, now);
        (p, out)
    }

    #[test]
    fn long_text_is_escaped_into_the_body_within_each_polls_room() {
        let (mut s, sid) = server();
        let mut bodies = Vec::new();
        for max in [64, 100, 777, 4096, 1 << 16] {
            let mut r =
                McpRequest::legacy(&sid, "tools/call", json!({"name": "long"})).send(&mut s, T0);
            let Body::Stream(src) = &mut r.body else {
                panic!("expected a stream");
            };
            let mut out = Vec::new();
            loop {
                let before = out.len();
                let p = src.poll(&mut out, max, T0);
                assert!(out.len() - before <= max, "max {max}");
                if p == BodyPoll::End {
                    break;
                }
            }
            bodies.push(out);
        }
        let v: Value = serde_json::from_slice(&bodies[0]).unwrap();
        let text = long_text();
        let result = &v["result"];
        assert_eq!(result["content"][0]["text"], text.as_str());
        let structured = json!({ "text": text });
        assert_eq!(result["content"][1]["text"], structured.to_string());
        assert_eq!(result["structuredContent"], structured);
        for b in &bodies {
            assert_eq!(b, &bodies[0]);
        }
    }

    #[test]
    fn an_unanswered_request_for_input_ends_the_call_at_the_deadline() {
        let (mut s, sid) = server();
        let mut r = call(&mut s, &sid, T0);
        let (_, sent) = poll(&mut r, T0);
        let asked = messages(&sent);
        assert_eq!(asked[0]["method"], "elicitation/create", "{asked:?}");
        // Just before the deadline the call still waits.
        assert_eq!(
            poll(&mut r, T0 + ASK_DEADLINE_MS - 1),
            (BodyPoll::Pending, Vec::new())
        );
        let (p, out) = poll(&mut r, T0 + ASK_DEADLINE_MS);
        assert_eq!(p, BodyPoll::End);
        let result = messages(&out).pop().unwrap();
        assert_eq!(result["result"]["isError"], true, "{result}");
        let text = result["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(text, "E_TIMEOUT: the client did not answer ok within 60 s");
    }

    #[test]
    fn calls_past_the_deadline_give_their_slots_back() {
        let (mut s, sid) = server();
        let limit = Config::new("7.0", None).limits.concurrent_calls;
        let mut waiting: Vec<Response> = (0..limit).map(|_| call(&mut s, &sid, T0)).collect();
        for r in &mut waiting {
            assert_eq!(poll(r, T0).0, BodyPoll::Data);
        }
        let busy = |s: &mut McpServer<()>, now: u64| {
            let mut r = call(s, &sid, now);
            let last: Value = last_message(&drain(&mut r, now, 100).0).unwrap();
            last["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("E_BUSY"))
        };
        assert!(busy(&mut s, T0 + 1), "the slots are all taken");
        let late = T0 + ASK_DEADLINE_MS;
        for r in &mut waiting {
            while poll(r, late).0 != BodyPoll::End {}
        }
        assert!(!busy(&mut s, late), "the timed-out calls freed their slots");
    }

    use super::SplicedStream;
    use crate::jsonrpc::Id;
    use crate::mcp::reply;
    use crate::mcp::resource::{ResourceContents, Streamed};
    use crate::mcp::{Content, ContentSource, SourcePoll, StreamKind};

    /// Hands out `data` a few bytes per read, saying Pending (no bytes) between pieces, as a
    /// capture does while deflate holds its output; counts its reads and a cancel.
    struct Pieces {
        data: Vec<u8>,
        at: usize,
        idle: bool,
        reads: Rc<RefCell<(u32, bool)>>,
    }

    impl ContentSource<()> for Pieces {
        fn read(&mut self, _: &mut (), buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
            self.reads.borrow_mut().0 += 1;
            self.idle = !self.idle;
            if self.idle {
                return Ok((0, SourcePoll::Pending));
            }
            let n = (self.data.len() - self.at).min(buf.len()).min(5);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok((
                n,
                if self.at == self.data.len() {
                    SourcePoll::End
                } else {
                    SourcePoll::Data
                },
            ))
        }

        fn cancel(&mut self, _: &mut ()) {
            self.reads.borrow_mut().1 = true;
        }
    }

    fn streamed(kind: StreamKind, data: &[u8]) -> (Streamed<()>, Rc<RefCell<(u32, bool)>>) {
        let reads = Rc::new(RefCell::new((0, false)));
        let source = Pieces {
            data: data.to_vec(),
            at: 0,
            idle: false,
            reads: reads.clone(),
        };
        let s = Streamed::of(Content::stream(kind, Box::new(source))).unwrap();
        (s, reads)
    }

    /// The answer a stream of `item` gives, polled with at most `max` bytes per poll: its
    /// bytes and the number of polls.
    fn spliced(item: Streamed<()>, max: usize) -> (Vec<u8>, usize) {
        let id = Id::from_value(&json!(42)).unwrap();
        let result = json!({"contents": [item.item.clone()], "ttlMs": 5});
        let resp = reply::result(&id, &result);
        let mut r = SplicedStream::response(Rc::new(RefCell::new(())), resp, item, 3);
        let Body::Stream(src) = &mut r.body else {
            panic!("expected a stream");
        };
        let (mut out, mut polls) = (Vec::new(), 0);
        loop {
            polls += 1;
            let before = out.len();
            let p = src.poll(&mut out, max, 0);
            assert!(out.len() - before <= max);
            if p == BodyPoll::End {
                return (out, polls);
            }
            assert!(polls < 10_000);
        }
    }

    #[test]
    fn a_streamed_resource_answers_the_same_bytes_as_a_complete_one() {
        let png: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let kind = StreamKind::ResourceBlob {
            uri: "irix7://screen".into(),
            mime_type: "image/png".into(),
        };
        let (item, reads) = streamed(kind, &png);
        let (bytes, polls) = spliced(item, 64);
        let whole = ResourceContents::Blob {
            uri: "irix7://screen".into(),
            mime_type: Some("image/png".into()),
            data: png,
        };
        let id = Id::from_value(&json!(42)).unwrap();
        let want = crate::jsonrpc::result_response(
            &id,
            &json!({"contents": [whole.to_json()], "ttlMs": 5}),
        );
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            String::from_utf8(want).unwrap()
        );
        // A read of at most 3 bytes (the chunk) per step and one idle read per poll: the
        // source was drained over many polls, not in one.
        assert!(polls > 300, "{polls} polls");
        assert!(reads.borrow().0 > 600);
    }

    #[test]
    fn streamed_text_is_escaped_like_a_complete_answer() {
        let text = "line \"one\"\n\u{e9}t\u{e9} \u{1F5A5}\n".repeat(20);
        let kind = StreamKind::ResourceText {
            uri: "irix7://log".into(),
            mime_type: "text/plain".into(),
        };
        let (item, _) = streamed(kind, text.as_bytes());
        let (bytes, _) = spliced(item, 7);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            v["result"]["contents"][0],
            json!({"uri": "irix7://log", "mimeType": "text/plain", "text": text})
        );
    }

    #[test]
    fn a_cancelled_stream_lets_its_source_go() {
        let kind = StreamKind::ResourceBlob {
            uri: "irix7://screen".into(),
            mime_type: "image/png".into(),
        };
        let (item, reads) = streamed(kind, &[1; 100]);
        let id = Id::from_value(&json!(1)).unwrap();
        let resp = reply::result(&id, &json!({"contents": [item.item.clone()]}));
        let mut r = SplicedStream::response(Rc::new(RefCell::new(())), resp, item, 3);
        let Body::Stream(src) = &mut r.body else {
            panic!("expected a stream");
        };
        let mut out = Vec::new();
        src.poll(&mut out, 40, 0);
        assert!(!reads.borrow().1);
        src.cancel();
        assert!(reads.borrow().1, "the source was told");
    }

    #[test]
    fn only_streamed_resource_items_splice() {
        assert!(Streamed::<()>::of(Content::text("x")).is_none());
        let kind = StreamKind::Text;
        let (src, _) = (
            Pieces {
                data: Vec::new(),
                at: 0,
                idle: false,
                reads: Rc::default(),
            },
            (),
        );
        assert!(Streamed::of(Content::stream(kind, Box::new(src))).is_none());
    }

    /// A structured result of `n` numbers (strings when `bad`, against the output schema).
    fn listing(n: u64, bad: bool) -> Value {
        let items: Vec<Value> = (0..n)
            .map(|i| if bad { json!(i.to_string()) } else { json!(i) })
            .collect();
        json!({"items": items, "note": "caf\u{e9} \u{1F5A5}".repeat(900)})
    }

    fn big(_: &mut (), call: &ToolCall<'_>) -> Result<Started<()>, ToolError> {
        let n = call.args.get("n").and_then(|n| n.as_u64()).unwrap_or(0);
        let bad = call.args.get("bad").is_some();
        Ok(Started::Done(ToolOutput::structured(listing(n, bad))))
    }

    const BIG: &[ToolDef<()>] = &[ToolDef {
        name: "big",
        title: None,
        description: "A big structured result",
        input_schema: r#"{"type":"object"}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"items":{"type":"array","items":{"type":"integer"}},"note":{"type":"string"}},"required":["items"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: big,
    }];

    /// Calls `big`; the response, its JSON, and what each poll of its body answered.
    fn call_big(args: Value) -> (Response, Value, Vec<BodyPoll>) {
        let mut c = Config::new("7.0", None);
        c.limits.requests_per_second = 10_000;
        let mut s = McpServer::new(c, Rc::new(RefCell::new(())), Box::new(|b| b.fill(9)));
        s.register_tools(BIG).unwrap();
        let mut r = McpRequest::modern("tools/call", json!({"name": "big", "arguments": args}))
            .accept("application/json")
            .send(&mut s, T0);
        let (mut body, mut polls) = (Vec::new(), Vec::new());
        if let Body::Full(b) = &r.body {
            body = b.clone();
        }
        if let Body::Stream(src) = &mut r.body {
            loop {
                let p = src.poll(&mut body, 1 << 14, T0);
                let end = p == BodyPoll::End;
                polls.push(p);
                if end {
                    break;
                }
                assert!(polls.len() < 1000);
            }
        }
        let v = serde_json::from_slice(&body).unwrap();
        (r, v, polls)
    }

    #[test]
    fn a_heavy_structured_result_is_checked_and_written_over_several_polls() {
        let (r, v, polls) = call_big(json!({"n": 3000}));
        assert!(
            matches!(r.body, Body::Stream(_)),
            "streamed, not built in one poll"
        );
        let result = &v["result"];
        assert_eq!(result["structuredContent"], listing(3000, false));
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(text, serde_json::to_string(&listing(3000, false)).unwrap());
        assert!(result.get("isError").is_none(), "{result}");
        // The poll that ran the tool, the one of the check and the one that serialised the
        // result each end there ("come back next poll"); then 16 KiB pieces go out.
        assert!(
            polls[..3].iter().all(|p| *p == BodyPoll::Pending),
            "{polls:?}"
        );
        let size = text.len() * 2;
        assert!(
            polls.len() > 3 + size / (16 << 10),
            "{polls:?} for {size} bytes"
        );
    }

    #[test]
    fn a_heavy_result_that_breaks_its_schema_is_an_internal_error() {
        let (_, v, _) = call_big(json!({"n": 3000, "bad": true}));
        let result = &v["result"];
        assert_eq!(result["isError"], true, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("E_INTERNAL: structured result does not match outputSchema"),
            "{text}"
        );
    }

    #[test]
    fn a_light_structured_result_is_still_answered_whole() {
        let (r, v, _) = call_big(json!({"n": 3}));
        assert!(matches!(r.body, Body::Full(_)));
        assert_eq!(v["result"]["structuredContent"]["items"], json!([0, 1, 2]));
    }

    #[test]
    fn weight_counts_nodes_and_string_bytes_and_stops_past_the_limit() {
        assert_eq!(super::weight(&json!({"a": [1, 2], "b": "x"}), 100), 5);
        assert_eq!(super::weight(&json!("y".repeat(640)), 100), 11);
        assert_eq!(super::weight(&json!(alloc::vec![0; 500]), 100), 101);
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
