//! The tasks methods a client calls once a task runs: `tasks/get` (which inlines the
//! result), `tasks/update` (which answers its input and starts its tool again) and
//! `tasks/cancel`, each only for the token that started the task.

use super::{Asking, Status, Tasks, fields, missing_extension, negotiated, object, setup};
use crate::http::Response;
use crate::json::Tape;
use crate::jsonrpc::RpcError;
use crate::mcp::guard::config::Config;
use crate::mcp::guard::limits::CallState;
use crate::mcp::guard::request::{Cx, Era};
use crate::mcp::tools::call::stream::CallStream;
use crate::mcp::tools::registry::ToolRegistry;
use crate::mcp::tools::result::{Json, fail, finish, finish_members, result_extra};
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::tool::{Started, ToolCall, ToolError, ToolOutput};
use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Map, Value, json};

impl<C: 'static> Tasks<C> {
    /// `tasks/get`, `tasks/update` and `tasks/cancel`. An update that completes a task's
    /// answers starts its tool again, from `tools` with `ctx`.
    pub(crate) fn answer(
        &mut self,
        method: &str,
        cx: &Cx<'_>,
        config: &Config,
        tools: &ToolRegistry<C>,
        ctx: &Rc<RefCell<C>>,
    ) -> Response {
        if !negotiated(cx.caps) {
            return fail(cx, missing_extension());
        }
        let Some(id) = cx.params.get("taskId").and_then(|t| t.as_str()) else {
            return fail(
                cx,
                RpcError::invalid_params("Invalid params: taskId is required"),
            );
        };
        let id = &*id;
        let limits = &config.limits;
        self.expire(cx.now_ms, limits.task_ttl_ms, limits.task_records);
        // Another owner's task is answered as unknown: its id tells that owner nothing.
        if !self
            .list
            .iter()
            .any(|t| t.id == id && t.key.owner == cx.key.owner)
        {
            let msg = format!("Invalid params: no task {id} (unknown, or expired)");
            return fail(cx, RpcError::invalid_params(msg));
        }
        match method {
            "tasks/get" => self.get(cx, id, config),
            "tasks/cancel" => {
                if let Some(t) = self.find(id)
                    && t.live()
                {
                    t.end(Status::Cancelled, cx.now_ms);
                }
                finish(config, cx, method, json!({}))
            }
            _ => self.update(cx, id, config, tools, ctx),
        }
    }

    fn get(&self, cx: &Cx<'_>, id: &str, config: &Config) -> Response {
        let Some(t) = self.list.iter().find(|t| t.id == id) else {
            return fail(cx, RpcError::invalid_params("Invalid params: no such task"));
        };
        let mut r = fields(t, &config.limits);
        if let Some(a) = &t.asking {
            let mut pending = Map::new();
            for (k, v) in &a.requests {
                if !a.responses.contains_key(k) {
                    pending.insert(k.clone(), v.clone());
                }
            }
            r.insert("inputRequests".into(), Value::Object(pending));
        }
        let key = match t.status {
            Status::Completed => "result",
            Status::Failed => "error",
            _ => return finish(config, cx, "tasks/get", Value::Object(r)),
        };
        let raw = t.out.get(t.body.clone()).unwrap_or(b"{}");
        // The task's fields in `Map` order, with the result spliced in where its key sorts.
        let mut members: Vec<(&str, Json<'_>)> = r
            .iter()
            .map(|(k, v)| (k.as_str(), Json::Value(v)))
            .collect();
        let at = members.partition_point(|(k, _)| *k < key);
        members.insert(at, (key, Json::Raw(raw)));
        finish_members(config, cx, "tasks/get", &members, raw.len())
    }

    /// `tasks/update`: takes the answers to pending input requests (unknown keys are
    /// ignored); once every request is answered the tool is called again with them all.
    fn update(
        &mut self,
        cx: &Cx<'_>,
        id: &str,
        config: &Config,
        tools: &ToolRegistry<C>,
        ctx: &Rc<RefCell<C>>,
    ) -> Response {
        let responses = match cx.params.get("inputResponses").and_then(|r| r.to_value()) {
            Some(Value::Object(m)) => m,
            _ => {
                let msg = "Invalid params: inputResponses must be an object";
                return fail(cx, RpcError::invalid_params(msg));
            }
        };
        let now = cx.now_ms;
        let Some(t) = self.find(id) else {
            return fail(cx, RpcError::invalid_params("Invalid params: no such task"));
        };
        let ready = match t.asking.as_mut() {
            Some(a) => {
                for (k, v) in responses {
                    if a.requests.contains_key(&k) {
                        a.responses.insert(k, v);
                    }
                }
                a.requests.keys().all(|k| a.responses.contains_key(k))
            }
            None => false,
        };
        if ready {
            t.updated_ms = now;
            self.resume(id, now, config, tools, ctx);
        }
        finish(config, cx, "tasks/update", json!({}))
    }

    /// Calls an answered task's tool again with the answers.
    fn resume(
        &mut self,
        id: &str,
        now_ms: u64,
        config: &Config,
        tools: &ToolRegistry<C>,
        ctx: &Rc<RefCell<C>>,
    ) {
        let Some(pos) = self.list.iter().position(|t| t.id == id) else {
            return;
        };
        let Some(a) = self.list[pos].asking.take() else {
            return;
        };
        let Some(entry) = tools.entry(a.tool) else {
            return;
        };
        let (start, schema) = (entry.def.start, entry.output.clone());
        let mut tape = Tape::default();
        let started = match (ctx.try_borrow_mut(), tape.read(&a.args)) {
            (Ok(mut ctx), Some(args)) => {
                let call = ToolCall {
                    args,
                    now_ms,
                    client_capabilities: &a.caps,
                    input_responses: Some(&a.responses),
                    request_state: a.request_state.as_deref(),
                    sees_secrets: a.sees_secrets,
                    holder: a.holder,
                };
                start(&mut ctx, &call)
            }
            (Err(_), _) => Err(ToolError::new(ErrorCode::Busy, "server context in use")),
            (_, None) => Err(ToolError::new(
                ErrorCode::Internal,
                "the kept arguments do not read",
            )),
        };
        let request_id = self.list[pos].request_id.clone();
        let extra = result_extra(Era::Modern, &config.version);
        let setup = setup(&request_id, schema, extra, config);
        let state = CallState::new(self.list[pos].key, request_id);
        let t = &mut self.list[pos];
        t.status = Status::Working;
        t.stream = Some(Box::new(match started {
            Ok(Started::InputRequired(ir)) => {
                t.status = Status::InputRequired;
                t.asking = Some(Asking {
                    requests: object(ir.input_requests),
                    responses: Map::new(),
                    request_state: ir.request_state,
                    ..a
                });
                return;
            }
            Ok(Started::Run(run)) => CallStream::running(ctx.clone(), run, setup, state),
            Ok(Started::Done(out)) => CallStream::emitting(ctx.clone(), out, setup, state),
            Err(e) => CallStream::emitting(ctx.clone(), ToolOutput::error(&e), setup, state),
        }));
    }
}
