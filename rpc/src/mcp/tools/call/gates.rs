//! The gates a `tools/call` of a registered tool passes before the tool starts, one function
//! each, run by [`check`] in the order `docs/mcp.md` ("Tools") states. The first that refuses
//! answers the call. A new gate is one more function here and one more line in [`check`].

use crate::http::Headers;
use crate::json::ValueRef;
use crate::jsonrpc::RpcError;
use crate::mcp::guard::authority::Privilege;
use crate::mcp::guard::config::{Config, Limits};
use crate::mcp::guard::limits::Calls;
use crate::mcp::guard::request::{Cx, Retry, arguments, header_text, retry_params};
use crate::mcp::tools::confirm;
use crate::mcp::tools::registry::ToolEntry;
use crate::mcp::tools::schema::Schema;
use crate::mcp::tools::tasks::{self, Tasks};
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::reply;
use crate::mcp::wire::tool::{ToolDef, ToolError};
use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use serde_json::{Map, Value, json};

/// Why a gate refused a call, as the answer it gets.
pub(crate) enum Refusal {
    /// A JSON-RPC error; the code is what the call's audit record says.
    Error(RpcError, ErrorCode),
    /// An `isError` result.
    Result(ToolError),
    /// An `isError` result of the policy (audited as refused by it).
    Policy(ToolError),
}

/// What the gates let through: the call's arguments and retry state, read where they lie in
/// the request, and whether the tool asks the user first.
pub(crate) struct Passed<'r> {
    pub(crate) args: ValueRef<'r>,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) request_state: Option<Cow<'r, str>>,
    /// The call needs the user's consent (`mcp.confirm`).
    pub(crate) gated: bool,
}

/// Runs the gates in order on a call of `entry`.
pub(crate) fn check<'r, C: 'static>(
    cx: &Cx<'r>,
    entry: &ToolEntry<C>,
    config: &Config,
    calls: &mut Calls,
    tasks: &mut Tasks<C>,
) -> Result<Passed<'r>, Refusal> {
    let def = &entry.def;
    authority(cx, entry)?;
    let args = object_arguments(cx)?;
    capabilities(cx, def)?;
    param_headers(cx, &entry.input, args)?;
    let (input_responses, request_state) = retry(cx)?;
    schema(&entry.input, args)?;
    let opened = opened_door(cx, entry, args)?;
    concurrency(cx, calls, &config.limits)?;
    tasks_extension(cx, tasks, def)?;
    let gated = consent(cx, config, def, entry.cap.privilege.max(opened))?;
    task_room(cx, tasks, &config.limits, def)?;
    Ok(Passed {
        args,
        input_responses,
        request_state,
        gated,
    })
}

/// The caller's authority (`mcp.policy`, its token's role, a gateway's narrowing): a tool
/// outside it is refused before its arguments are looked at.
fn authority<C>(cx: &Cx<'_>, entry: &ToolEntry<C>) -> Result<(), Refusal> {
    cx.authority
        .check(entry.cap, entry.def.name)
        .map_err(|denied| Refusal::Policy(ToolError::new(ErrorCode::Perm, denied.0)))
}

/// `arguments` is an object (or absent). The arguments are validated and handed to the tool
/// where they lie in the request: a big argument is never copied before it is known to be
/// acceptable.
fn object_arguments<'r>(cx: &Cx<'r>) -> Result<ValueRef<'r>, Refusal> {
    arguments(cx.params).map_err(|err| Refusal::Error(err, ErrorCode::InvalidParams))
}

/// The client declared every capability the tool requires.
fn capabilities<C>(cx: &Cx<'_>, def: &ToolDef<C>) -> Result<(), Refusal> {
    let missing: Vec<&str> = def
        .requires
        .iter()
        .copied()
        .filter(|c| cx.caps.get(*c).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut req = Map::new();
    for c in &missing {
        req.insert(String::from(*c), json!({}));
    }
    let err = RpcError::with_data(
        reply::MISSING_CAPABILITY,
        format!("Missing required client capability: {}", missing.join(", ")),
        json!({"requiredCapabilities": req}),
    );
    Err(Refusal::Error(err, ErrorCode::NotSup))
}

/// The `Mcp-Param-*` headers match the arguments they mirror (modern era: only its requests
/// carry headers to check).
fn param_headers(cx: &Cx<'_>, input: &Schema, args: ValueRef<'_>) -> Result<(), Refusal> {
    match cx
        .headers
        .and_then(|h| param_header_mismatch(input, args, h))
    {
        Some(err) => Err(Refusal::Error(err, ErrorCode::InvalidParams)),
        None => Ok(()),
    }
}

/// `inputResponses` and `requestState`, when a retry carries them, have their types.
fn retry<'r>(cx: &Cx<'r>) -> Result<Retry<'r>, Refusal> {
    retry_params(cx.params).map_err(|err| Refusal::Error(err, ErrorCode::InvalidParams))
}

/// The arguments conform to the tool's input schema.
fn schema(input: &Schema, args: ValueRef<'_>) -> Result<(), Refusal> {
    input
        .validate(args)
        .map_err(|why| Refusal::Result(ToolError::new(ErrorCode::Inval, why)))
}

/// The caller's owner runs fewer calls than `Limits::concurrent_calls`.
fn concurrency(cx: &Cx<'_>, calls: &mut Calls, limits: &Limits) -> Result<(), Refusal> {
    if calls.admits(cx.key, limits.concurrent_calls) {
        return Ok(());
    }
    let why = format!(
        "{} tool calls of this token already running",
        limits.concurrent_calls
    );
    Err(Refusal::Result(ToolError::new(ErrorCode::Busy, why)))
}

/// A tool that runs only as a task is refused to a client without the tasks extension.
fn tasks_extension<C>(cx: &Cx<'_>, tasks: &Tasks<C>, def: &ToolDef<C>) -> Result<(), Refusal> {
    if tasks.required(cx, def.name) {
        return Err(Refusal::Error(
            tasks::missing_extension(),
            ErrorCode::NotSup,
        ));
    }
    Ok(())
}

/// The further door the arguments open (a shell builtin) is judged like the tool: the answer
/// is its privilege (observe when it opens none).
fn opened_door<C>(
    cx: &Cx<'_>,
    entry: &ToolEntry<C>,
    args: ValueRef<'_>,
) -> Result<Privilege, Refusal> {
    let Some(door) = entry.opens.and_then(|opens| opens(args)) else {
        return Ok(Privilege::Observe);
    };
    cx.authority
        .check_door(door)
        .map_err(|denied| Refusal::Policy(ToolError::new(ErrorCode::Perm, denied.0)))?;
    let table = cx.authority.table();
    Ok(table
        .judge(door, None)
        .map_or(Privilege::Administer, |c| c.privilege))
}

/// A call that needs the administer privilege (the tool's or the door it opens) under
/// `mcp.confirm` needs a client that can be asked; the answer is whether the call asks the
/// user first.
fn consent<C>(
    cx: &Cx<'_>,
    config: &Config,
    def: &ToolDef<C>,
    privilege: Privilege,
) -> Result<bool, Refusal> {
    let gated = config.confirm && privilege == Privilege::Administer;
    if gated && cx.caps.get("elicitation").is_none() {
        return Err(Refusal::Result(confirm::cannot_ask(def.name)));
    }
    Ok(gated)
}

/// A call that may become a task finds room among the tasks.
fn task_room<C>(
    cx: &Cx<'_>,
    tasks: &mut Tasks<C>,
    limits: &Limits,
    def: &ToolDef<C>,
) -> Result<(), Refusal> {
    if !tasks.wanted_at_all(cx, def.name) {
        return Ok(());
    }
    tasks
        .room(cx, limits)
        .map_err(|why| Refusal::Result(ToolError::new(ErrorCode::Busy, why)))
}

/// A tool argument as its `Mcp-Param-*` header must carry it.
fn header_form(v: ValueRef<'_>) -> Cow<'_, str> {
    match v.as_str() {
        Some(s) => s,
        None => Cow::Borrowed(v.raw()),
    }
}

/// Checks the `Mcp-Param-<Name>` headers of a tool whose input schema marks properties with
/// `x-mcp-header`: a property present in the arguments needs its header, carrying the same
/// value (after trimming and `=?base64?…?=` decoding).
fn param_header_mismatch(
    input: &Schema,
    args: ValueRef<'_>,
    headers: &Headers,
) -> Option<RpcError> {
    for (name, header) in input.headers() {
        let Some(value) = args.get(name) else {
            continue;
        };
        let field = format!("Mcp-Param-{header}");
        let sent = headers.get(&field).and_then(header_text);
        if sent.is_none_or(|h| h != header_form(value)) {
            let msg = format!("Header mismatch: {field} does not match argument {name}");
            return Some(RpcError::new(reply::HEADER_MISMATCH, msg));
        }
    }
    None
}
