//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`): a long `tools/call` from a
//! client that declares the extension answers at once with a task handle; the call runs on in
//! the server's poll loop ([`crate::mcp::server::McpServer::poll_tasks`]) with no HTTP request open, and the
//! client polls `tasks/get` (which inlines the result), answers input with `tasks/update` and
//! stops it with `tasks/cancel`. Tasks are bounded in number, result bytes and lifetime
//! (`docs/bounds.md`).

use crate::http::{BodyPoll, BodySource};
use crate::json::{self, ValueRef};
use crate::jsonrpc::{self, Id, RpcError};
use crate::mcp::guard::authority::{Key, Owner};
use crate::mcp::guard::config::{Config, Limits};
use crate::mcp::guard::request::{Cx, Era};
use crate::mcp::tools::call::stream::{CallSetup, CallStream, Framing};
use crate::mcp::tools::schema::Schema;
use crate::mcp::wire::reply;
use crate::mcp::wire::tool::{InputRequired, Started, ToolError};
use crate::mcp::wire::version::TASKS_EXTENSION;
use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use irix7_kmem::budget::{self, Lease};
use irix7_kmem::civil::Date;
use irix7_kmem::share::{Claim, Share, Short};
use serde_json::{Map, Value, json};

mod answer;

/// How a tool takes part in the tasks extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskSupport {
    /// Runs as a task when the client declares the extension and the call does not finish
    /// at once (a quick answer, or one that asks for input first, stays a plain result).
    Optional,
    /// Like `Optional`, but a client without the extension is refused (-32021).
    Required,
    /// Like `Optional`, and input the tool asks for is asked on the task (`input_required`,
    /// answered by `tasks/update`) rather than by a plain `InputRequiredResult`.
    InputInTask,
}

/// A tool the server may run as a task.
#[derive(Clone, Copy, Debug)]
pub struct TaskTool {
    pub name: &'static str,
    pub support: TaskSupport,
}

/// Task status, as the wire names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// A call waiting for the client's answers (`tasks/update`).
struct Asking {
    tool: usize,
    /// The arguments' JSON text, read again when the tool is called with the answers.
    args: String,
    caps: Value,
    /// The caller's `ToolCall::sees_secrets` and `holder`, for the retry.
    sees_secrets: bool,
    holder: Claim<u64>,
    /// Every request asked; those with a key in `responses` are answered (nothing is removed
    /// from a `Map`: that costs kilobytes of image).
    requests: Map<String, Value>,
    responses: Map<String, Value>,
    request_state: Option<String>,
}

/// One task.
pub(crate) struct Task<C: 'static> {
    id: String,
    /// Who started it (`key.owner`): only that owner reads, answers or cancels it (a result
    /// may hold what a lesser role must not see, and a gateway's narrowing of a token is an
    /// owner of its own).
    key: Key,
    created_ms: u64,
    updated_ms: u64,
    status: Status,
    stream: Option<Box<CallStream<C>>>,
    asking: Option<Asking>,
    /// The JSON-RPC response the call wrote, then (once ended) `body` marks its `result` or
    /// `error` member inside it.
    out: Vec<u8>,
    body: core::ops::Range<usize>,
    lease: Option<Lease>,
    request_id: Id,
}

impl<C: 'static> Task<C> {
    fn live(&self) -> bool {
        !self.status.terminal()
    }

    /// Stops the work and gives back everything but the record.
    fn release(&mut self) {
        if let Some(mut s) = self.stream.take() {
            s.cancel();
        }
        self.asking = None;
    }

    fn end(&mut self, status: Status, now_ms: u64) {
        self.release();
        self.status = status;
        self.updated_ms = now_ms;
        if status == Status::Cancelled {
            self.drop_output();
        }
    }

    fn drop_output(&mut self) {
        self.out = Vec::new();
        self.body = 0..0;
        self.lease = None;
    }

    /// Fails the task with a server-made error (`error` member), output dropped.
    fn fail(&mut self, err: &RpcError, now_ms: u64) {
        self.end(Status::Failed, now_ms);
        self.drop_output();
        let mut e = Map::new();
        e.insert("code".into(), Value::from(err.code));
        e.insert("message".into(), Value::from(err.message.as_str()));
        json::write_value(&mut self.out, &Value::Object(e));
        self.body = 0..self.out.len();
    }

    /// The call's response is complete: find its `result` or `error`.
    fn settle(&mut self, now_ms: u64) {
        let head = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},",
            self.request_id.as_json()
        );
        let rest = self.out.get(head.len()..).unwrap_or(&[]);
        let (status, skip) = if rest.starts_with(b"\"result\":") {
            (Status::Completed, 9)
        } else if rest.starts_with(b"\"error\":") {
            (Status::Failed, 8)
        } else {
            let err = RpcError::new(jsonrpc::INTERNAL_ERROR, "the call ended without an answer");
            return self.fail(&err, now_ms);
        };
        self.release();
        self.status = status;
        self.updated_ms = now_ms;
        self.body = head.len() + skip..self.out.len().saturating_sub(1);
    }
}

/// The tasks held, and which tools may run as one.
pub(crate) struct Tasks<C: 'static> {
    list: Vec<Task<C>>,
    serial: u64,
    tools: Vec<TaskTool>,
}

impl<C: 'static> Default for Tasks<C> {
    fn default() -> Self {
        Tasks {
            list: Vec::new(),
            serial: 0,
            tools: Vec::new(),
        }
    }
}

impl<C: 'static> Clone for Tasks<C> {
    /// The same task tools, with no tasks (a fresh server has no clients).
    fn clone(&self) -> Self {
        Tasks {
            tools: self.tools.clone(),
            ..Tasks::default()
        }
    }
}

impl<C: 'static> Tasks<C> {
    fn support(&self, name: &str) -> Option<TaskSupport> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.support)
    }

    fn find(&mut self, id: &str) -> Option<&mut Task<C>> {
        self.list.iter_mut().find(|t| t.id == id)
    }

    /// The claims of the tasks still running (or waiting for input).
    fn live(&self) -> impl Iterator<Item = Claim<Owner>> + Clone + '_ {
        self.list
            .iter()
            .filter(|t| t.live())
            .map(|t| t.key.owner.claim(t.key.client))
    }

    /// Drops the records past their time (a running one is stopped first), then the oldest
    /// ended ones past `records`.
    fn expire(&mut self, now_ms: u64, ttl_ms: u64, records: usize) {
        for t in self.list.iter_mut() {
            if now_ms.saturating_sub(t.created_ms) >= ttl_ms {
                t.release();
            }
        }
        self.list
            .retain(|t| now_ms.saturating_sub(t.created_ms) < ttl_ms);
        while self.list.len() > records {
            let Some(oldest) = self
                .list
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.live())
                .min_by_key(|(_, t)| t.updated_ms)
                .map(|(i, _)| i)
            else {
                break;
            };
            self.list.remove(oldest);
        }
    }

    /// Marks tools that may run as tasks (a name no tool has never matches).
    pub(crate) fn add_tools(&mut self, tools: &[TaskTool]) {
        self.tools.extend_from_slice(tools);
    }

    /// Whether any tool runs as a task (the extension is advertised then).
    pub(crate) fn offered(&self) -> bool {
        !self.tools.is_empty()
    }

    /// Advances every running task by one bounded step and drops expired ones. Called from
    /// the module's poll loop; true when a task moved.
    pub(crate) fn poll(&mut self, limits: &Limits, now_ms: u64) -> bool {
        // Every poll of the module comes here; most have no task.
        if self.list.is_empty() {
            return false;
        }
        self.expire(now_ms, limits.task_ttl_ms, limits.task_records);
        let chunk = limits.stream_chunk;
        let cap = limits.task_result_bytes;
        let mut work = false;
        for t in self.list.iter_mut() {
            if t.stream.is_none() {
                continue;
            }
            let room = match t.lease.as_mut() {
                Some(lease) => t.out.len() <= cap && budget::reserve(&mut t.out, chunk, lease),
                None => false,
            };
            let before = t.out.len();
            let polled = match t.stream.as_mut() {
                Some(stream) if room => stream.poll(&mut t.out, chunk, now_ms),
                _ => BodyPoll::Pending,
            };
            work |= t.out.len() > before;
            if !room || t.out.len() > cap {
                let msg = format!(
                    "E_TOO_LARGE: the result passes the {cap}-byte bound of a task result \
                     (or the tasks' memory is in use); call the tool without the tasks \
                     extension to have it streamed"
                );
                t.fail(&RpcError::new(jsonrpc::INTERNAL_ERROR, msg), now_ms);
                work = true;
            } else if polled == BodyPoll::End {
                t.settle(now_ms);
                t.out.shrink_to_fit();
                if let Some(lease) = t.lease.as_mut() {
                    lease.shrink_to(t.out.capacity());
                }
                work = true;
            }
        }
        work
    }

    /// Whether a call of the tool `name` must be refused for want of the extension.
    pub(crate) fn required(&self, cx: &Cx<'_>, name: &str) -> bool {
        cx.era == Era::Modern
            && self.support(name) == Some(TaskSupport::Required)
            && !negotiated(cx.caps)
    }

    /// Whether this call's answer (`started`) becomes a task; `None` when it stays a plain
    /// answer.
    pub(crate) fn wanted(
        &self,
        cx: &Cx<'_>,
        name: &str,
        started: &Result<Started<C>, ToolError>,
    ) -> bool {
        if cx.era != Era::Modern || !negotiated(cx.caps) {
            return false;
        }
        match (self.support(name), started) {
            (None, _) | (_, Err(_)) => false,
            (Some(_), Ok(Started::Run(_))) => true,
            (Some(TaskSupport::InputInTask), Ok(Started::InputRequired(_))) => true,
            (Some(_), Ok(Started::InputRequired(_))) => false,
            // A complete answer stays one unless it streams (the caller decides).
            (Some(_), Ok(Started::Done(_))) => true,
        }
    }

    /// Whether a call of `name` may become a task (checked before the tool starts).
    pub(crate) fn wanted_at_all(&self, cx: &Cx<'_>, name: &str) -> bool {
        cx.era == Era::Modern && negotiated(cx.caps) && self.support(name).is_some()
    }

    /// The task's limits: `Err` is the `E_BUSY` text.
    pub(crate) fn room(&mut self, cx: &Cx<'_>, limits: &Limits) -> Result<(), String> {
        self.expire(cx.now_ms, limits.task_ttl_ms, limits.task_records);
        let share = Share {
            total: limits.max_tasks,
            per_owner: limits.tasks_per_owner,
        };
        let want = cx.key.owner.claim(cx.key.client);
        match share.admits(want, self.live()) {
            Ok(()) => Ok(()),
            Err(Short::Owner) => Err(format!(
                "tasks of this token are still running (at most {}); \
                 wait for one or cancel it",
                limits.tasks_per_owner
            )),
            Err(Short::Tier) => Err(format!(
                "{} tasks are running, as many as the {} privilege may have; retry later",
                self.live().count(),
                cx.key.owner.rank
            )),
        }
    }

    /// Creates a task for a call whose first answer is `begin`; the `CreateTaskResult` the
    /// caller answers with. `asking` holds what a retry of the tool needs.
    pub(crate) fn start(
        &mut self,
        cx: &Cx<'_>,
        tool: usize,
        args: ValueRef<'_>,
        begin: Begin<C>,
        config: &Config,
        entropy: &mut dyn FnMut(&mut [u8]),
    ) -> Value {
        let mut raw = [0u8; 16];
        entropy(&mut raw);
        // Unguessable (the random part) and unique (the serial: entropy may repeat).
        self.serial += 1;
        let mut id = format!("{:x}-", self.serial);
        for b in raw {
            id.push_str(&format!("{b:02x}"));
        }
        let lease = config.task_budget.take(0);
        let mut task = Task {
            id,
            key: cx.key,
            created_ms: cx.now_ms,
            updated_ms: cx.now_ms,
            status: Status::Working,
            stream: None,
            asking: None,
            out: Vec::new(),
            body: 0..0,
            lease,
            request_id: cx.id.clone(),
        };
        match begin {
            Begin::Run(s) => task.stream = Some(s),
            Begin::Ask(ir) => {
                task.status = Status::InputRequired;
                task.asking = Some(Asking {
                    tool,
                    args: String::from(args.raw()),
                    caps: cx.caps.clone(),
                    sees_secrets: cx.authority.sees_secrets(),
                    holder: cx.key.holder(),
                    requests: object(ir.input_requests),
                    responses: Map::new(),
                    request_state: ir.request_state,
                });
            }
        }
        let mut r = fields(&task, &config.limits);
        r.insert("resultType".into(), Value::from("task"));
        self.list.push(task);
        Value::Object(r)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}

/// Whether the request's client capabilities declare the extension.
fn negotiated(caps: &Value) -> bool {
    caps.get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// The -32021 answer naming the extension.
pub(crate) fn missing_extension() -> RpcError {
    RpcError::with_data(
        reply::MISSING_CAPABILITY,
        format!("Missing required client capability: extension {TASKS_EXTENSION}"),
        json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}),
    )
}

/// Milliseconds since boot as an ISO-8601 UTC time counted from the Unix epoch: the module
/// reads no wall clock, so `createdAt` and `lastUpdatedAt` order events but do not date them.
fn iso(ms: u64) -> String {
    // 32-bit arithmetic past the first split: 64-bit division is a library call on MIPS32.
    let secs = ms / 1000;
    let days = (secs / 86_400) as u32;
    let s = (secs % 86_400) as u32;
    let frac = (ms % 1000) as u32;
    let Date {
        year: y,
        month: m,
        day: d,
    } = Date::from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        frac
    )
}

/// An `inputRequests` value as the map it must be.
fn object(requests: Value) -> Map<String, Value> {
    match requests {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// What [`Tasks::start`] is handed: the call's first answer.
pub(crate) enum Begin<C: 'static> {
    Run(Box<CallStream<C>>),
    Ask(InputRequired),
}

/// The setup of a task's call: a plain JSON answer, nobody listening for progress, the
/// modern era's `result_extra` (see `result::result_extra`) after its members.
pub(crate) fn setup(
    id: &Id,
    output_schema: Option<Rc<Schema>>,
    result_extra: Vec<u8>,
    config: &Config,
) -> CallSetup {
    CallSetup {
        id: id.clone(),
        framing: Framing::Json,
        progress_token: None,
        log_level: None,
        result_extra,
        output_schema,
        chunk: config.limits.stream_chunk,
        audit: None,
        watch: None,
    }
}

/// The members every task answer carries.
fn fields<C>(t: &Task<C>, limits: &Limits) -> Map<String, Value> {
    let mut r = Map::new();
    r.insert("taskId".into(), Value::from(t.id.as_str()));
    r.insert("status".into(), Value::from(t.status.as_str()));
    r.insert("createdAt".into(), Value::from(iso(t.created_ms)));
    r.insert("lastUpdatedAt".into(), Value::from(iso(t.updated_ms)));
    r.insert("ttlMs".into(), Value::from(limits.task_ttl_ms));
    r.insert("pollIntervalMs".into(), Value::from(limits.task_poll_ms));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_iso_8601_from_the_epoch() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_000_001), "1970-01-01T00:16:40.001Z");
        // Day and leap-year arithmetic: 2000-03-01 is day 11017.
        assert_eq!(
            iso(11_017 * 86_400_000 + 3_723_004),
            "2000-03-01T01:02:03.004Z"
        );
        assert_eq!(iso(59 * 86_400_000), "1970-03-01T00:00:00.000Z");
    }

    #[test]
    fn the_extension_is_read_from_the_client_capabilities() {
        assert!(negotiated(&json!({"extensions": {TASKS_EXTENSION: {}}})));
        assert!(!negotiated(&json!({"extensions": {}})));
        assert!(!negotiated(&json!({"tasks": {}})));
        assert!(!negotiated(&Value::Null));
        let e = missing_extension();
        assert_eq!(e.code, -32021);
        assert!(e.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());
    }
}
