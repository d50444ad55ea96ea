//! `tools/call`, the other half of routing (`dispatch.rs`): a call's tool is found and its
//! audit record and observer started, its gates run (`tools::call::gates`), and it answers at
//! once, as a task, or as a stream, with its result checked against the tool's output schema.

use crate::http::{Body, Response};
use crate::json::ValueRef;
use crate::jsonrpc::{self, Id, RpcError};
use crate::mcp::guard::audit::{Caller, PendingAudit};
use crate::mcp::guard::authority::{Client, Key};
use crate::mcp::guard::call_watch::{CallStart, CallWatch};
use crate::mcp::guard::limits::CallState;
use crate::mcp::guard::outcome::Outcome;
use crate::mcp::guard::request::{Cx, Era, input_unsupported};
use crate::mcp::server::McpServer;
use crate::mcp::tools::call::asking::Asking;
use crate::mcp::tools::call::emit::render_now;
use crate::mcp::tools::call::gates::{self, Passed, Refusal};
use crate::mcp::tools::call::stream::{CallSetup, CallStream, Framing};
use crate::mcp::tools::confirm;
use crate::mcp::tools::result::{fail, finish};
use crate::mcp::tools::schema::Schema;
use crate::mcp::tools::tasks::{self, Begin};
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::reply;
use crate::mcp::wire::tool::{Started, ToolCall, ToolError, ToolOutput};
use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::Cell;

impl<C: 'static> McpServer<C> {
    /// A complete tool result, sent at once into the buffer `lent` (see `Exchange::lent`),
    /// and how it ended (for the audit record).
    fn tool_result(
        &self,
        lent: &Cell<Vec<u8>>,
        id: &Id,
        era: Era,
        output: ToolOutput<C>,
        schema: Option<&Schema>,
    ) -> Result<(Response, Outcome), ToolOutput<C>> {
        // The result is rendered after the envelope's head in the body itself: no copy. It
        // goes into the buffer the connection lent, whose room a small result fits.
        let mut out = lent.take();
        out.clear();
        out.reserve(1024);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(id.as_json().as_bytes());
        out.extend_from_slice(b",\"result\":");
        let extra = |out: &mut Vec<u8>| {
            if era == Era::Modern {
                out.extend_from_slice(&self.modern_extra);
            }
        };
        match render_now(output, schema, &extra, &mut out) {
            Ok(outcome) => {
                out.push(b'}');
                Ok((reply::json(200, out), outcome))
            }
            Err(output) => {
                // Streamed instead: the buffer stays lent for whatever answers.
                lent.set(out);
                Err(output)
            }
        }
    }

    fn tool_error(&self, lent: &Cell<Vec<u8>>, id: &Id, era: Era, err: &ToolError) -> Response {
        match self.tool_result(lent, id, era, ToolOutput::error(err), None) {
            Ok((r, _)) => r,
            Err(_) => reply::error(
                200,
                Some(id),
                &RpcError::new(jsonrpc::INTERNAL_ERROR, "unrenderable result"),
            ),
        }
    }

    /// The answer to a call a gate refused, and the outcome its audit record gets.
    fn refuse(&self, cx: &Cx<'_>, refusal: Refusal) -> (Response, Option<Outcome>) {
        match refusal {
            Refusal::Error(err, code) => (fail(cx, err), Some(Outcome::Failed(code))),
            Refusal::Result(err) => {
                let r = self.tool_error(cx.lent, cx.id, cx.era, &err);
                (r, Some(Outcome::Failed(err.code)))
            }
            Refusal::Policy(err) => {
                let r = self.tool_error(cx.lent, cx.id, cx.era, &err);
                (r, Some(Outcome::RefusedByPolicy))
            }
        }
    }

    /// The `E_BUSY` answer to a tool call over a limit: an `isError` result.
    pub(super) fn busy_result(
        &self,
        lent: &Cell<Vec<u8>>,
        id: &Id,
        era: Era,
        why: &str,
    ) -> Response {
        let mut r = self.tool_error(lent, id, era, &ToolError::new(ErrorCode::Busy, why));
        r.turned_away = true;
        r
    }

    pub(super) fn call_tool(&mut self, cx: &Cx<'_>) -> Response {
        let Some(name) = cx.params.get("name").and_then(|n| n.as_str()) else {
            return fail(
                cx,
                RpcError::invalid_params("Invalid params: name is required"),
            );
        };
        let name = &*name;
        let Some((index, entry)) = self.tools.find(name) else {
            if let Some(r) = self.tools.reserved_for(name) {
                let err = ToolError::new(ErrorCode::NoSys, format!("{name} is {}", r.why));
                return self.tool_error(cx.lent, cx.id, cx.era, &err);
            }
            return fail(
                cx,
                RpcError::invalid_params(format!("Invalid params: unknown tool {name}")),
            );
        };
        let caller = Caller {
            at_ms: cx.now_ms,
            client: cx.client,
            session_tag: cx.session_tag.as_ref().map(|t| &t[..]),
            who: cx.authority.token_name(),
            rank: cx.key.owner.rank,
        };
        let mut audit = PendingAudit::of_call(
            self.config.audit.as_ref(),
            caller,
            &entry.def,
            entry.cap.privilege,
            cx.params,
        );
        let start = CallStart {
            tool: entry.def.name,
            client: cx.client,
            era: cx.era.version(),
            at_ms: cx.now_ms,
        };
        let mut watch = CallWatch::start(self.config.calls.as_ref(), &start);
        let (response, outcome) = self.call_found(cx, index, &mut audit, &mut watch);
        if let (Some(a), Some(outcome)) = (audit, outcome) {
            a.finish(outcome);
        }
        response
    }

    /// Turns a call's first answer into a task when it should be one (see
    /// [`tasks::Tasks::wanted`]); `Err` hands `started` back for a plain answer. A streamed
    /// result's audit record goes with the task and is written when it ends.
    fn task_or_plain(
        &mut self,
        cx: &Cx<'_>,
        tool: usize,
        args: ValueRef<'_>,
        started: Result<Started<C>, ToolError>,
        output_schema: Option<Rc<Schema>>,
        (audit, watch): (&mut Option<PendingAudit>, &mut Option<CallWatch>),
    ) -> Result<(Response, Option<Outcome>), Result<Started<C>, ToolError>> {
        let name = self.tools.entry(tool).map(|e| e.def.name).unwrap_or("");
        if !self.tasks.wanted(cx, name, &started) {
            return Err(started);
        }
        let state = CallState::new(cx.key, cx.id.clone());
        let setup = CallSetup {
            audit: audit.take(),
            watch: watch.take(),
            ..tasks::setup(
                cx.id,
                output_schema.clone(),
                self.modern_extra.to_vec(),
                &self.config,
            )
        };
        let begin = match started {
            Ok(Started::Run(run)) => Begin::Run(Box::new(CallStream::running(
                self.ctx.clone(),
                run,
                setup,
                state,
            ))),
            Ok(Started::InputRequired(ir)) => Begin::Ask(ir),
            Ok(Started::Done(output)) => {
                match self.tool_result(cx.lent, cx.id, cx.era, output, output_schema.as_deref()) {
                    Ok((r, outcome)) => {
                        *audit = setup.audit;
                        *watch = setup.watch;
                        return Ok((r, Some(outcome)));
                    }
                    Err(output) => Begin::Run(Box::new(CallStream::emitting(
                        self.ctx.clone(),
                        output,
                        setup,
                        state,
                    ))),
                }
            }
            Err(e) => {
                *audit = setup.audit;
                *watch = setup.watch;
                return Err(Err(e));
            }
        };
        let created = self
            .tasks
            .start(cx, tool, args, begin, &self.config, &mut *self.entropy);
        Ok((finish(&self.config, cx, "tools/call", created), None))
    }

    /// Runs a call of the tool at `index` in the registry once it passes the gates. The
    /// outcome is `None` when the result streams: the stream took `audit` and writes it when
    /// the call ends.
    fn call_found(
        &mut self,
        cx: &Cx<'_>,
        index: usize,
        audit: &mut Option<PendingAudit>,
        watch: &mut Option<CallWatch>,
    ) -> (Response, Option<Outcome>) {
        let failed = |code| Some(Outcome::Failed(code));
        let Some(entry) = self.tools.entry(index) else {
            let err = ToolError::new(ErrorCode::Internal, "no such registry entry");
            return (
                self.tool_error(cx.lent, cx.id, cx.era, &err),
                failed(err.code),
            );
        };
        let def = entry.def;
        let output_schema = entry.output.clone();
        let gates = gates::check(cx, entry, &self.config, &mut self.calls, &mut self.tasks);
        let Passed {
            args,
            input_responses,
            request_state,
            gated,
        } = match gates {
            Ok(passed) => passed,
            Err(refusal) => {
                // Counted into its owner's summary, not written as a line of its own.
                let (r, outcome) = self.refuse(cx, refusal);
                if let (Some(a), Some(outcome)) = (audit.take(), outcome) {
                    let closed =
                        self.refusals
                            .count(cx.key.owner, a.into_record(), outcome, cx.now_ms);
                    self.audit_all(&closed);
                }
                return (r, None);
            }
        };
        let started = {
            let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
                let r = self.busy_result(cx.lent, cx.id, cx.era, "server context in use");
                return (r, failed(ErrorCode::Busy));
            };
            let call = ToolCall {
                args,
                now_ms: cx.now_ms,
                client_capabilities: cx.caps,
                input_responses: input_responses.as_ref(),
                request_state: request_state.as_deref(),
                sees_secrets: cx.authority.sees_secrets(),
                holder: cx.key.holder(),
            };
            confirm::start(&def, gated, &mut ctx, &call)
        };
        let started = match self.task_or_plain(
            cx,
            index,
            args,
            started,
            output_schema.clone(),
            (audit, watch),
        ) {
            Ok(answer) => return answer,
            Err(started) => started,
        };
        let sse = (cx.progress_token.is_some() || cx.log_level.is_some()) && cx.accept_sse();
        let chunk = self.config.limits.stream_chunk;
        let setup = |framing| CallSetup {
            id: cx.id.clone(),
            framing,
            progress_token: cx.progress_token.clone(),
            log_level: cx.log_level,
            result_extra: match cx.era {
                Era::Modern => self.modern_extra.to_vec(),
                Era::Legacy(_) => Vec::new(),
            },
            output_schema: output_schema.clone(),
            chunk,
            audit: None,
            watch: None,
        };
        // Only a call that goes on streaming is tracked: one answered at once costs nothing.
        let tracked = || CallState::new(cx.key, cx.id.clone());
        // A result that streams takes the audit record and writes it when the call ends; the
        // call observer hears of its end then too.
        let mut streamed = |framing, audit: &mut Option<PendingAudit>| CallSetup {
            audit: audit.take(),
            watch: watch.take(),
            ..setup(framing)
        };
        match started {
            Err(e) if e.code == ErrorCode::InvalidParams => (
                fail(cx, RpcError::invalid_params(e.message)),
                failed(ErrorCode::InvalidParams),
            ),
            Err(e) => (self.tool_error(cx.lent, cx.id, cx.era, &e), failed(e.code)),
            // Asking the client is not an outcome: the call ends on the retry that answers.
            Ok(Started::InputRequired(ir)) => match (cx.era, cx.key) {
                (Era::Modern, _) => {
                    let r = finish(&self.config, cx, "tools/call", ir.to_json());
                    audit.take();
                    (r, None)
                }
                // Legacy: ask the client with requests on the call's SSE stream.
                (
                    Era::Legacy(_),
                    Key {
                        client: Client::Session(serial),
                        ..
                    },
                ) if cx.accept_sse() => {
                    let call = tracked();
                    self.calls.add(&call);
                    let shared = self.answers.clone();
                    let caps = cx.caps.clone();
                    let raw = String::from(args.raw());
                    let caller = (cx.authority.sees_secrets(), cx.key.holder());
                    let ask = Asking::new(def, gated, raw, caps, caller, shared, serial);
                    let framing = Framing::Sse {
                        ids: cx.sse_ids,
                        retry_ms: cx.sse_retry_ms,
                    };
                    let setup = streamed(framing, audit);
                    let s = CallStream::asking(self.ctx.clone(), ask, ir, setup, call);
                    (reply::stream(true, Body::Stream(Box::new(s))), None)
                }
                (Era::Legacy(_), _) => {
                    let err = input_unsupported();
                    (
                        self.tool_error(cx.lent, cx.id, cx.era, &err),
                        failed(err.code),
                    )
                }
            },
            Ok(Started::Done(output)) => {
                match self.tool_result(cx.lent, cx.id, cx.era, output, output_schema.as_deref()) {
                    Ok((r, outcome)) => (r, Some(outcome)),
                    Err(output) => {
                        let call = tracked();
                        self.calls.add(&call);
                        let setup = streamed(Framing::Json, audit);
                        let s = CallStream::emitting(self.ctx.clone(), output, setup, call);
                        (reply::stream(false, Body::Stream(Box::new(s))), None)
                    }
                }
            }
            Ok(Started::Run(run)) => {
                let call = tracked();
                self.calls.add(&call);
                let sse = sse || (run.waits() && cx.accept_sse());
                let framing = if sse {
                    Framing::Sse {
                        ids: cx.sse_ids,
                        retry_ms: cx.sse_retry_ms,
                    }
                } else {
                    Framing::Json
                };
                let setup = streamed(framing, audit);
                let s = CallStream::running(self.ctx.clone(), run, setup, call);
                (reply::stream(sse, Body::Stream(Box::new(s))), None)
            }
        }
    }
}
