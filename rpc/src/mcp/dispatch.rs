//! Method dispatch shared by both eras: what each method answers, and how results are
//! decorated for the era (`resultType`, `_meta.serverInfo`, cache hints in 2026-07-28).

use super::audit::{Outcome, PendingAudit, Via};
use super::call::{Asking, CallSetup, CallStream, Framing, SplicedStream, render_now};
use super::confirm;
use super::cursor;
use super::limits::{CallState, Key};
use super::prompt::{PromptCall, PromptReply};
use super::reply;
use super::request::{Cx, Era, header_text};
use super::resource::{ResourceContents, Streamed};
use super::schema::Schema;
use super::server::{META_SERVER_INFO, MODERN_VERSION, McpServer, SERVER_NAME};
use super::tool::{Started, ToolCall, ToolDef, ToolError, ToolOutput};
use crate::http::{Body, Headers, Response};
use crate::json::{ValueRef, escape_str, write_value};
use crate::jsonrpc::{self, Id, RpcError};
use crate::mcp::ErrorCode;
use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use serde_json::{Map, Value, json};

/// `inputResponses` and `requestState` of a request retried after `InputRequired` (built
/// only when a retry carries them).
type Retry<'a> = (Option<Map<String, Value>>, Option<Cow<'a, str>>);

fn retry_params(params: ValueRef<'_>) -> Result<Retry<'_>, RpcError> {
    let responses = match params.get("inputResponses") {
        None => None,
        Some(m) if m.is_object() && m.members().all(|(_, v)| v.is_object()) => match m.to_value() {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        },
        Some(_) => {
            let msg = "Invalid params: inputResponses must map keys to objects";
            return Err(RpcError::invalid_params(msg));
        }
    };
    let state = match params.get("requestState").map(|s| s.as_str()) {
        None => None,
        Some(Some(s)) => Some(s),
        Some(None) => {
            let msg = "Invalid params: requestState must be a string";
            return Err(RpcError::invalid_params(msg));
        }
    };
    Ok((responses, state))
}

/// The answer to a request that needs client input where it cannot be asked for (a legacy
/// client that does not take SSE, or a prompt).
fn input_unsupported() -> ToolError {
    ToolError::new(
        ErrorCode::NotSup,
        "this needs client input: use protocol 2026-07-28, or accept text/event-stream",
    )
}

/// The `arguments` of `tools/call` and `prompts/get`: an object, or `{}` when absent or null.
fn arguments(params: ValueRef<'_>) -> Result<ValueRef<'_>, RpcError> {
    match params.get("arguments").filter(|a| !a.is_null()) {
        None => Ok(ValueRef::empty_object()),
        Some(a) if a.is_object() => Ok(a),
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: arguments must be an object",
        )),
    }
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

/// Results that carry `ttlMs`/`cacheScope` in the modern era.
const CACHEABLE: [&str; 6] = [
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
];

/// A member of a result that [`McpServer::finish_members`] writes.
pub(crate) enum Json<'a> {
    /// A value, serialised.
    Value(&'a Value),
    /// JSON text, copied.
    Raw(&'a [u8]),
    /// An array of the comma-joined JSON items given.
    Items(&'a [u8]),
    /// A string, escaped.
    Str(&'a str),
    /// An array of strings.
    Strs(&'a [&'a str]),
    /// The server's capabilities (modern era).
    Capabilities,
    /// The `_meta` of a modern result.
    Meta,
}

impl<C: 'static> McpServer<C> {
    /// The server's capabilities as JSON, written out: `server/discover` sends them with
    /// every answer.
    pub(crate) fn write_capabilities(&self, modern: bool, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"completions\":{},");
        if modern && self.offers_tasks() {
            out.extend_from_slice(b"\"extensions\":{\"");
            out.extend_from_slice(super::tasks::TASKS_EXTENSION.as_bytes());
            out.extend_from_slice(b"\":{}},");
        }
        out.extend_from_slice(b"\"logging\":{},\"prompts\":{},\"resources\":");
        // Legacy: on the session's GET stream; modern: on `subscriptions/listen` streams.
        if self.can_subscribe() {
            out.extend_from_slice(b"{\"subscribe\":true}");
        } else {
            out.extend_from_slice(b"{}");
        }
        out.extend_from_slice(b",\"tools\":{}}");
    }

    fn server_info(&self) -> Value {
        json!({"name": SERVER_NAME, "version": self.config.version})
    }

    /// JSON members the modern era adds to every result.
    pub(crate) fn modern_result_extra(&self) -> Vec<u8> {
        result_extra(Era::Modern, &self.config.version)
    }

    pub(crate) fn finish(&self, cx: &Cx<'_>, method: &str, result: Value) -> Response {
        let Value::Object(mut r) = result else {
            return reply::result(cx.id, &result);
        };
        self.stamp_modern(cx, method, &mut r);
        reply::result(cx.id, &Value::Object(r))
    }

    /// Adds what a 2026-07-28 result carries besides the method's own members: `resultType`
    /// (unless the method set one), the cache hints of cacheable methods, and the server's
    /// info in `_meta`. A legacy result is left as it is.
    fn stamp_modern(&self, cx: &Cx<'_>, method: &str, r: &mut Map<String, Value>) {
        if cx.era != Era::Modern {
            return;
        }
        r.entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        if CACHEABLE.contains(&method) {
            r.insert("ttlMs".into(), Value::from(self.config.limits.cache_ttl_ms));
            r.insert("cacheScope".into(), Value::from("private"));
        }
        let meta = r
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.insert(META_SERVER_INFO.into(), self.server_info());
        }
    }

    /// Like [`Self::finish`] for a result given as its `members`, sorted by name: they and
    /// the members [`Self::stamp_modern`] would add are written straight into the response
    /// body in the order a `Map` serialises them, so no `Map` is built, stamped and serialised
    /// for the small cacheable answers sent most. `size` is about the bytes the members take.
    pub(crate) fn finish_members(
        &self,
        cx: &Cx<'_>,
        method: &str,
        members: &[(&str, Json<'_>)],
        size: usize,
    ) -> Response {
        let ttl = Value::from(self.config.limits.cache_ttl_ms);
        let cacheable = CACHEABLE.contains(&method);
        let modern = cx.era == Era::Modern;
        let own_result_type = members.iter().any(|(k, _)| *k == "resultType");
        let own_meta = members.iter().any(|(k, _)| *k == "_meta");
        let stamps = [
            ("_meta", Json::Meta, modern && !own_meta),
            ("cacheScope", Json::Str("private"), modern && cacheable),
            (
                "resultType",
                Json::Str("complete"),
                modern && !own_result_type,
            ),
            ("ttlMs", Json::Value(&ttl), modern && cacheable),
        ];
        let mut stamps = stamps
            .iter()
            .filter(|s| s.2)
            .map(|(k, v, _)| (*k, v))
            .peekable();
        let mut own = members.iter().map(|(k, v)| (*k, v)).peekable();
        let mut out = Vec::with_capacity(size + 320);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(cx.id.as_json().as_bytes());
        out.extend_from_slice(b",\"result\":{");
        let mut first = true;
        loop {
            let next = match (own.peek(), stamps.peek()) {
                (Some(a), Some(b)) if b.0 < a.0 => stamps.next(),
                (Some(_), _) => own.next(),
                (None, _) => stamps.next(),
            };
            let Some((key, json)) = next else { break };
            if !first {
                out.push(b',');
            }
            first = false;
            out.push(b'"');
            escape_str(key, &mut out);
            out.extend_from_slice(b"\":");
            self.write_json(json, &mut out);
        }
        out.extend_from_slice(b"}}");
        reply::json(200, out)
    }

    fn write_json(&self, json: &Json<'_>, out: &mut Vec<u8>) {
        match json {
            Json::Value(v) => write_value(out, v),
            Json::Raw(raw) => out.extend_from_slice(raw),
            Json::Items(items) => {
                out.push(b'[');
                out.extend_from_slice(items);
                out.push(b']');
            }
            Json::Str(s) => {
                out.push(b'"');
                escape_str(s, out);
                out.push(b'"');
            }
            Json::Strs(items) => {
                out.push(b'[');
                for (i, s) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.write_json(&Json::Str(s), out);
                }
                out.push(b']');
            }
            Json::Capabilities => self.write_capabilities(true, out),
            Json::Meta => write_meta(&self.config.version, out),
        }
    }

    pub(crate) fn fail(&self, cx: &Cx<'_>, err: RpcError) -> Response {
        let status = match (cx.era, err.code) {
            (Era::Modern, jsonrpc::METHOD_NOT_FOUND) => 404,
            (Era::Modern, reply::MISSING_CAPABILITY | reply::HEADER_MISMATCH) => 400,
            _ => 200,
        };
        reply::error(status, Some(cx.id), &err)
    }

    pub(crate) fn dispatch(&mut self, method: &str, cx: &Cx<'_>) -> Response {
        let r = match method {
            "server/discover" if cx.era == Era::Modern => return self.discover(cx),
            "subscriptions/listen" if cx.era == Era::Modern && self.can_subscribe() => {
                return self.listen(cx);
            }
            "tools/list" => return self.list_tools(cx),
            "tools/call" => return self.call_tool(cx),
            "tasks/get" | "tasks/update" | "tasks/cancel" if cx.era == Era::Modern => {
                return self.task_method(method, cx);
            }
            "resources/list" => self.list(cx, "resources", |s| {
                s.resources.resources.iter().map(|r| r.listing()).collect()
            }),
            "resources/templates/list" => self.list(cx, "resourceTemplates", |s| {
                s.resources.templates.iter().map(|t| t.listing()).collect()
            }),
            "resources/read" => return self.read_resource(cx),
            "prompts/list" => self.list(cx, "prompts", |s| {
                s.prompts.iter().map(|p| p.listing()).collect()
            }),
            "prompts/get" => self.get_prompt(cx),
            "completion/complete" => {
                Ok(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
            }
            _ => Err(RpcError::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        };
        match r {
            Ok(v) => self.finish(cx, method, v),
            Err(e) => self.fail(cx, e),
        }
    }

    /// `tools/list` from the listings serialised at registration: the answer is written
    /// around an empty `"tools":[]` and the page, one slice of the registry's listings, is
    /// spliced in there when the answer is sent, so no listing is copied, cloned or
    /// serialised per request.
    fn list_tools(&self, cx: &Cx<'_>) -> Response {
        // Only the cursor matters here: no clone of the whole params (`_meta` and all).
        let listed = self.tools.listed();
        let page_size = self.config.limits.page_size;
        let (page, next) = match cursor::page(listed, cx.params, page_size) {
            Ok(p) => p,
            Err(e) => return self.fail(cx, e),
        };
        let tools = ("tools", Json::Items(b""));
        let mut resp = match &next {
            Some(n) => {
                let members = [("nextCursor", Json::Str(n)), tools];
                self.finish_members(cx, "tools/list", &members, 0)
            }
            None => self.finish_members(cx, "tools/list", &[tools], 0),
        };
        // `tools` is the last array of the answer (after it come plain keys and numbers):
        // the last `[]` is its.
        if let Body::Full(own) = &mut resp.body
            && let Some(at) = own.windows(2).rposition(|w| w == b"[]")
        {
            let splice = crate::http::Splice {
                at: at + 1,
                shared: self.tools.shared_listings().clone(),
                range: self.tools.page_range(page),
            };
            resp.body = Body::Spliced(core::mem::take(own), splice);
        }
        resp
    }

    /// `server/discover`, written out: nothing in it is built as a `Value`.
    fn discover(&self, cx: &Cx<'_>) -> Response {
        let versions = ("supportedVersions", Json::Strs(&[MODERN_VERSION]));
        let caps = ("capabilities", Json::Capabilities);
        match &self.instructions_json {
            Some(text) => {
                let members = [caps, ("instructions", Json::Raw(text)), versions];
                self.finish_members(cx, "server/discover", &members, text.len())
            }
            None => self.finish_members(cx, "server/discover", &[caps, versions], 0),
        }
    }

    fn list(
        &self,
        cx: &Cx<'_>,
        field: &str,
        items: impl Fn(&Self) -> Vec<Value>,
    ) -> Result<Value, RpcError> {
        let all = items(self);
        let (page, next) = cursor::page(&all, cx.params, self.config.limits.page_size)?;
        let mut r = Map::new();
        r.insert(field.into(), Value::Array(page.to_vec()));
        if let Some(n) = next {
            r.insert("nextCursor".into(), Value::from(n));
        }
        Ok(Value::Object(r))
    }

    /// `resources/read`: a resource with a streamed reader answers with its item's data
    /// streamed into the result, a bounded piece per poll; any other is read whole.
    fn read_resource(&mut self, cx: &Cx<'_>) -> Response {
        let uri = cx.params.get("uri").and_then(|u| u.as_str());
        let uri = uri.as_deref();
        if let Some((uri, open)) = uri.and_then(|u| Some((u, self.resources.stream_for(u)?))) {
            let opened = match self.ctx.try_borrow_mut() {
                Ok(mut ctx) => open(&mut ctx, uri),
                Err(_) => Err(ToolError::new(ErrorCode::Busy, "server context in use")),
            };
            let item = match opened.map(Streamed::of) {
                Ok(Some(item)) => item,
                Ok(None) => {
                    let e = ToolError::new(ErrorCode::Internal, "not a streamed resource item");
                    return self.fail(
                        cx,
                        RpcError::new(
                            jsonrpc::INTERNAL_ERROR,
                            alloc::string::ToString::to_string(&e),
                        ),
                    );
                }
                Err(e) if e.code == ErrorCode::NotFound => {
                    let err = resource_not_found(cx.era, uri);
                    return self.fail(cx, err);
                }
                Err(e) => {
                    return self.fail(
                        cx,
                        RpcError::new(
                            jsonrpc::INTERNAL_ERROR,
                            alloc::string::ToString::to_string(&e),
                        ),
                    );
                }
            };
            let result = json!({"contents": [item.item.clone()]});
            let resp = self.finish(cx, "resources/read", result);
            return SplicedStream::response(
                self.ctx.clone(),
                resp,
                item,
                self.config.limits.stream_chunk,
            );
        }
        match self.read_resource_whole(cx) {
            Ok(v) => self.finish(cx, "resources/read", v),
            Err(e) => self.fail(cx, e),
        }
    }

    fn read_resource_whole(&mut self, cx: &Cx<'_>) -> Result<Value, RpcError> {
        let Some(uri) = cx.params.get("uri").and_then(|u| u.as_str()) else {
            return Err(RpcError::invalid_params("Invalid params: uri is required"));
        };
        let uri = &*uri;
        let result = {
            let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
                return Err(RpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    "E_BUSY: server context in use",
                ));
            };
            if let Some(def) = self.resources.resources.iter().find(|r| r.uri == uri) {
                Some((def.read)(&mut ctx, uri))
            } else {
                self.resources
                    .templates
                    .iter()
                    .find_map(|t| t.matches(uri).map(|vars| (t.read)(&mut ctx, uri, &vars)))
            }
        };
        let not_found = || resource_not_found(cx.era, uri);
        match result {
            None => Err(not_found()),
            Some(Err(e)) if e.code == ErrorCode::NotFound => Err(not_found()),
            Some(Err(e)) => Err(RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                alloc::string::ToString::to_string(&e),
            )),
            Some(Ok(contents)) if contents.is_empty() => Err(not_found()),
            Some(Ok(contents)) => {
                let list: Vec<Value> = contents.iter().map(ResourceContents::to_json).collect();
                Ok(json!({"contents": list}))
            }
        }
    }

    fn get_prompt(&mut self, cx: &Cx<'_>) -> Result<Value, RpcError> {
        let Some(name) = cx.params.get("name").and_then(|n| n.as_str()) else {
            return Err(RpcError::invalid_params("Invalid params: name is required"));
        };
        let Some(def) = self.prompts.iter().find(|p| p.name == name).copied() else {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: unknown prompt {name}"
            )));
        };
        let args = arguments(cx.params)?;
        if let Some(a) = def
            .arguments
            .iter()
            .find(|a| a.required && !args.contains_key(a.name))
        {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: missing argument {}",
                a.name
            )));
        }
        let (input_responses, request_state) = retry_params(cx.params)?;
        let call = PromptCall {
            args,
            client_capabilities: cx.caps,
            input_responses: input_responses.as_ref(),
            request_state: request_state.as_deref(),
        };
        let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
            return Err(RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                "E_BUSY: server context in use",
            ));
        };
        let internal = |e: &ToolError| {
            RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                alloc::string::ToString::to_string(e),
            )
        };
        match (def.get)(&mut ctx, &call) {
            Ok(PromptReply::Done(v)) => Ok(v),
            Ok(PromptReply::InputRequired(ir)) if cx.era == Era::Modern => Ok(ir.to_json()),
            Ok(PromptReply::InputRequired(_)) => Err(internal(&input_unsupported())),
            Err(e) => Err(internal(&e)),
        }
    }

    /// A complete tool result, sent at once, and how it ended (for the audit record).
    pub(crate) fn tool_result(
        &self,
        id: &Id,
        era: Era,
        output: ToolOutput<C>,
        schema: Option<&Schema>,
    ) -> Result<(Response, Outcome), ToolOutput<C>> {
        // The result is rendered after the envelope's head in the body itself: no copy. It
        // goes into the buffer the connection lent, whose room a small result fits.
        let mut out = self.lent.take();
        out.clear();
        out.reserve(1024);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(id.as_json().as_bytes());
        out.extend_from_slice(b",\"result\":");
        let version = &self.config.version;
        let extra = |out: &mut Vec<u8>| write_result_extra(era, version, out);
        match render_now(output, schema, &extra, &mut out) {
            Ok(outcome) => {
                out.push(b'}');
                Ok((reply::json(200, out), outcome))
            }
            Err(output) => {
                // Streamed instead: the buffer stays lent for whatever answers.
                self.lent.set(out);
                Err(output)
            }
        }
    }

    fn tool_error(&self, id: &Id, era: Era, err: &ToolError) -> Response {
        match self.tool_result(id, era, ToolOutput::error(err), None) {
            Ok((r, _)) => r,
            Err(_) => reply::error(
                200,
                Some(id),
                &RpcError::new(jsonrpc::INTERNAL_ERROR, "unrenderable result"),
            ),
        }
    }

    /// The `E_BUSY` answer to a tool call over a limit: an `isError` result.
    pub(crate) fn busy_result(&self, id: &Id, era: Era, why: &str) -> Response {
        self.tool_error(id, era, &ToolError::new(ErrorCode::Busy, why))
    }

    fn call_tool(&mut self, cx: &Cx<'_>) -> Response {
        let Some(name) = cx.params.get("name").and_then(|n| n.as_str()) else {
            return self.fail(
                cx,
                RpcError::invalid_params("Invalid params: name is required"),
            );
        };
        let name = &*name;
        let Some((index, entry)) = self.tools.find(name) else {
            if let Some(r) = self.tools.reserved_for(name) {
                let err = ToolError::new(ErrorCode::NoSys, format!("{name} is {}", r.why));
                return self.tool_error(cx.id, cx.era, &err);
            }
            return self.fail(
                cx,
                RpcError::invalid_params(format!("Invalid params: unknown tool {name}")),
            );
        };
        let def = entry.def;
        let mut audit = self.audit_start(cx, &def);
        let (response, outcome) = if self.tools.offers(&def) {
            self.call_offered(cx, index, &mut audit)
        } else {
            let why = format!(
                "{} is outside mcp.policy={}",
                def.name,
                self.tools.policy().text()
            );
            let err = ToolError::new(ErrorCode::Perm, why);
            let r = self.tool_error(cx.id, cx.era, &err);
            (r, Some(Outcome::RefusedByPolicy))
        };
        if let (Some(a), Some(outcome)) = (audit, outcome) {
            a.finish(outcome);
        }
        response
    }

    /// The audit record a call of `def` starts, if calls of it are audited: those of tools
    /// not annotated read-only, when the configuration has a sink.
    fn audit_start(&self, cx: &Cx<'_>, def: &ToolDef<C>) -> Option<PendingAudit> {
        if def.annotations.read_only {
            return None;
        }
        let sink = self.config.audit.clone()?;
        let via = match cx.session_tag {
            Some(tag) => Via::Session(String::from_utf8_lossy(&tag).into_owned()),
            None => Via::Stateless,
        };
        let args = cx.params.get("arguments");
        let args = args
            .filter(ValueRef::is_object)
            .unwrap_or(ValueRef::empty_object());
        Some(PendingAudit::new(
            sink, cx.now_ms, cx.client, via, def.name, args,
        ))
    }

    /// Runs a call of the tool at `index` in the registry, which the policy offers. The outcome
    /// is `None` when the result streams: the stream took `audit` and writes it when the call
    /// ends.
    fn call_offered(
        &mut self,
        cx: &Cx<'_>,
        index: usize,
        audit: &mut Option<PendingAudit>,
    ) -> (Response, Option<Outcome>) {
        let failed = |code| Some(Outcome::Failed(code));
        let Some(entry) = self.tools.entry(index) else {
            let err = ToolError::new(ErrorCode::Internal, "no such registry entry");
            return (self.tool_error(cx.id, cx.era, &err), failed(err.code));
        };
        let def = entry.def;
        // The arguments are validated and handed to the tool where they lie in the request:
        // a big argument is never copied before it is known to be acceptable.
        let args = match arguments(cx.params) {
            Ok(a) => a,
            Err(err) => return (self.fail(cx, err), failed(ErrorCode::InvalidParams)),
        };
        let missing: Vec<&str> = def
            .requires
            .iter()
            .copied()
            .filter(|c| cx.caps.get(*c).is_none())
            .collect();
        if !missing.is_empty() {
            let mut req = Map::new();
            for c in &missing {
                req.insert(String::from(*c), json!({}));
            }
            let err = RpcError::with_data(
                reply::MISSING_CAPABILITY,
                format!("Missing required client capability: {}", missing.join(", ")),
                json!({"requiredCapabilities": req}),
            );
            return (self.fail(cx, err), failed(ErrorCode::NotSup));
        }
        if let Some(err) = cx
            .headers
            .and_then(|h| param_header_mismatch(&entry.input, args, h))
        {
            return (self.fail(cx, err), failed(ErrorCode::InvalidParams));
        }
        let (input_responses, request_state) = match retry_params(cx.params) {
            Ok(r) => r,
            Err(e) => return (self.fail(cx, e), failed(ErrorCode::InvalidParams)),
        };
        if let Err(why) = entry.input.validate(args) {
            let err = ToolError::new(ErrorCode::Inval, why);
            return (self.tool_error(cx.id, cx.era, &err), failed(err.code));
        }
        let busy =
            |s: &Self, why: &str| (s.busy_result(cx.id, cx.era, why), failed(ErrorCode::Busy));
        if self.calls.active(cx.key) >= self.config.limits.concurrent_calls {
            let why = format!(
                "{} tool calls already running",
                self.config.limits.concurrent_calls
            );
            return busy(self, &why);
        }
        // The tasks extension (see `tasks`): refused without it, or bounded with it.
        if self.task_required(cx, def.name) {
            let err = super::tasks::missing_extension();
            return (self.fail(cx, err), failed(ErrorCode::NotSup));
        }
        let gated = self.config.confirm && def.annotations.destructive;
        if gated && cx.caps.get("elicitation").is_none() {
            let err = confirm::cannot_ask(def.name);
            return (self.tool_error(cx.id, cx.era, &err), failed(err.code));
        }
        let output_schema = entry.output.clone();
        if self.task_wanted_at_all(cx, def.name)
            && let Err(why) = self.task_room(cx)
        {
            return busy(self, &why);
        }
        let started = {
            let Ok(mut ctx) = self.ctx.try_borrow_mut() else {
                return busy(self, "server context in use");
            };
            let call = ToolCall {
                args,
                now_ms: cx.now_ms,
                client_capabilities: cx.caps,
                input_responses: input_responses.as_ref(),
                request_state: request_state.as_deref(),
            };
            confirm::start(&def, gated, &mut ctx, &call)
        };
        let started =
            match self.task_or_plain(cx, index, args, started, output_schema.clone(), audit) {
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
            result_extra: result_extra(cx.era, &self.config.version),
            output_schema: output_schema.clone(),
            chunk,
            audit: None,
        };
        // Only a call that goes on streaming is tracked: one answered at once costs nothing.
        let tracked = || CallState::new(cx.key, cx.id.clone());
        // A result that streams takes the audit record and writes it when the call ends.
        let streamed = |framing, audit: &mut Option<PendingAudit>| CallSetup {
            audit: audit.take(),
            ..setup(framing)
        };
        match started {
            Err(e) if e.code == ErrorCode::InvalidParams => (
                self.fail(cx, RpcError::invalid_params(e.message)),
                failed(ErrorCode::InvalidParams),
            ),
            Err(e) => (self.tool_error(cx.id, cx.era, &e), failed(e.code)),
            // Asking the client is not an outcome: the call ends on the retry that answers.
            Ok(Started::InputRequired(ir)) => match (cx.era, cx.key) {
                (Era::Modern, _) => {
                    let r = self.finish(cx, "tools/call", ir.to_json());
                    audit.take();
                    (r, None)
                }
                // Legacy: ask the client with requests on the call's SSE stream.
                (Era::Legacy(_), Key::Session(serial)) if cx.accept_sse() => {
                    let call = tracked();
                    self.calls.add(&call);
                    let shared = self.answers.clone();
                    let caps = cx.caps.clone();
                    let ask =
                        Asking::new(def, gated, String::from(args.raw()), caps, shared, serial);
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
                    (self.tool_error(cx.id, cx.era, &err), failed(err.code))
                }
            },
            Ok(Started::Done(output)) => {
                match self.tool_result(cx.id, cx.era, output, output_schema.as_deref()) {
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

/// `{"io.modelcontextprotocol/serverInfo":{"name":…,"version":…}}`, the `_meta` of every
/// modern result.
fn write_meta(version: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"");
    out.extend_from_slice(META_SERVER_INFO.as_bytes());
    out.extend_from_slice(b"\":{\"name\":\"");
    escape_str(SERVER_NAME, out);
    out.extend_from_slice(b"\",\"version\":\"");
    escape_str(version, out);
    out.extend_from_slice(b"\"}}");
}

/// The JSON members an era adds to every tool result (none in legacy), written out rather
/// than built as a `Map` and serialised.
fn result_extra(era: Era, version: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(match era {
        Era::Modern => 110 + version.len(),
        Era::Legacy(_) => 0,
    });
    write_result_extra(era, version, &mut out);
    out
}

/// Appends [`result_extra`]'s members to `out`: an answer written at once needs no copy.
fn write_result_extra(era: Era, version: &str, out: &mut Vec<u8>) {
    if let Era::Modern = era {
        out.extend_from_slice(b",\"resultType\":\"complete\",\"_meta\":");
        write_meta(version, out);
    }
}

/// The protocol's answer to a read of a resource that does not exist, in each era.
fn resource_not_found(era: Era, uri: &str) -> RpcError {
    match era {
        Era::Modern => RpcError::with_data(
            jsonrpc::INVALID_PARAMS,
            "Resource not found",
            json!({"uri": uri}),
        ),
        Era::Legacy(_) => RpcError::with_data(
            reply::RESOURCE_NOT_FOUND_LEGACY,
            "Resource not found",
            json!({"uri": uri}),
        ),
    }
}
