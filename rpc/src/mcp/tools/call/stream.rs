//! A `tools/call` response as a streamed body: it advances the tool one step per poll, sends
//! progress and log notices as SSE events (when the response is an event stream), then writes
//! the result, pulling streamed content blocks through the encoders so big results never sit
//! in memory whole.

use super::asking::Asking;
use super::emit::{DIRECT_MIN, EmitPoll, Emitter};
use crate::http::{BodyPoll, BodySource};
use crate::jsonrpc::{self, Id, RpcError};
use crate::mcp::guard::audit::PendingAudit;
use crate::mcp::guard::call_watch::CallWatch;
use crate::mcp::guard::limits::CallState;
use crate::mcp::guard::outcome::Outcome;
use crate::mcp::tools::confirm;
use crate::mcp::tools::schema::Schema;
use crate::mcp::wire::event_stream::{KEEP_ALIVE_MS, Utf8Sink};
use crate::mcp::wire::tool::{
    InputRequired, LogLevel, Notice, Started, Step, StepIo, ToolOutput, ToolRun,
};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::fmt::Write;
use serde_json::{Map, Value};

/// JSON-RPC error code sent when a call is cancelled before its result started.
const REQUEST_CANCELLED: i32 = -32800;

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
    /// The call's audit record, written when the call ends (see [`crate::mcp::guard::audit`]).
    pub(crate) audit: Option<PendingAudit>,
    /// Tells the call observer when the call ends (see [`crate::mcp::guard::call_watch`]).
    pub(crate) watch: Option<CallWatch>,
}

enum Phase<C> {
    Running(Box<dyn ToolRun<C>>),
    /// Legacy bridge: waiting for the client's answers to requests sent on this stream.
    Asking(Box<Asking<C>>),
    Emitting(Box<Emitter<C>>),
    Finished,
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

    /// Writes the call's audit record and tells the call observer it ended (once; later
    /// calls do nothing).
    fn audit(&mut self, outcome: Outcome) {
        if let Some(a) = self.setup.audit.take() {
            a.finish(outcome);
        }
        self.setup.watch.take();
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
        let ids = match self.setup.framing {
            Framing::Sse { ids, .. } => ids,
            Framing::Json => None,
        };
        match ask.round(ir, ids) {
            Ok(events) => {
                for e in events {
                    self.push_event(&e);
                }
            }
            Err(err) => self.begin_result(ToolOutput::error(&err)),
        }
    }

    /// Collects arrived answers; when all are in, restarts the tool with them.
    fn poll_asking(&mut self, now_ms: u64) -> bool {
        let Phase::Asking(ask) = &mut self.phase else {
            return false;
        };
        let Some(started) = ask.poll(&self.ctx, now_ms, confirm::start) else {
            return false;
        };
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
