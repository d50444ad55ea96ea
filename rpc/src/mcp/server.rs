//! The MCP endpoint: one `McpServer` answers every request for `/mcp`. It has it checked at
//! the door (Origin and the bearer token: `admission.rs`), decides the era of each POST (a
//! `_meta` envelope is the 2026-07-28 stateless protocol; `initialize` or an
//! `Mcp-Session-Id` is the legacy session protocol), and hands the message to that era's
//! handler (`dispatch.rs`).

use crate::http::coding;
use crate::http::{Admission, Field, Handler, Headers, Method, Peer, Request, Response};
use crate::json::Tape;
use crate::jsonrpc::{self, Incoming, Message, Refusal, RpcError};
use crate::mcp::eras::get_stream;
use crate::mcp::eras::session::Sessions;
use crate::mcp::eras::subscriptions::Subscriptions;
use crate::mcp::guard::audit::AuthFailure;
use crate::mcp::guard::authority::{self, Client, Owner, Privilege};
use crate::mcp::guard::authority::{Door, EVENT_STREAM_ROUTE, Policy, SESSION_END_ROUTE, Token};
use crate::mcp::guard::config::Config;
use crate::mcp::guard::limits::{Calls, Windows};
use crate::mcp::guard::login_failures::LoginFailures;
use crate::mcp::guard::refusals::Refusals;
use crate::mcp::guard::request::{Exchange, Head};
use crate::mcp::resources::catalog::{ResourceCatalog, ResourceDef, TemplateDef};
use crate::mcp::tools::inputs::Answers;
use crate::mcp::tools::prompt::PromptDef;
use crate::mcp::tools::registry::{RegistryError, ToolRegistry};
use crate::mcp::tools::result::result_extra;
use crate::mcp::wire::reply;
use crate::mcp::wire::version::{LEGACY_VERSIONS, META_CAPS, META_VERSION};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

/// Entries the spare tape starts with: room for the `params` of any small request, so none
/// grows it.
const TAPE_START: usize = 64;

/// Fills a buffer with unpredictable bytes (session ids).
pub type Entropy = Box<dyn FnMut(&mut [u8])>;

/// The MCP server. `C` is the module's context (subsystems) that tool, resource and prompt
/// functions get as `&mut C`; it is shared with streamed responses, hence `Rc<RefCell<_>>`.
pub struct McpServer<C: 'static> {
    pub(super) config: Config,
    pub(super) ctx: Rc<RefCell<C>>,
    pub(super) tools: ToolRegistry<C>,
    pub(super) resources: ResourceCatalog<C>,
    pub(super) prompts: Vec<PromptDef<C>>,
    pub(super) sessions: Sessions,
    /// Requests per rolling second, by owner.
    pub(super) rates: Windows<Owner>,
    /// Failed token checks by client address, for the throttle.
    pub(super) auth_failures: Windows<[u8; 4]>,
    /// Failed token checks counted for the audit trail, summarised per window.
    pub(super) login_failures: LoginFailures,
    /// Calls refused before their tool started, counted for the audit trail per owner.
    pub(super) refusals: Refusals,
    pub(super) calls: Calls,
    pub(super) entropy: Entropy,
    /// Legacy bridge: client answers awaited by calls (see `inputs`).
    pub(super) answers: Rc<RefCell<Answers>>,
    /// Tool calls running as tasks (the tasks extension).
    pub(super) tasks: crate::mcp::tools::tasks::Tasks<C>,
    /// Watchable resources and the sessions' subscriptions (`resources/subscribe`).
    pub(super) subscriptions: Subscriptions<C>,
    /// `config.instructions` as a JSON string, escaped once: every `server/discover` sends it.
    /// The only copy (the config's is moved out), so the text costs no heap twice.
    pub(super) instructions_json: Option<Box<[u8]>>,
    /// What every modern tool result ends with (`resultType` and the server's name and
    /// version in `_meta`), written once: it depends on the configured version only.
    pub(super) modern_extra: Box<[u8]>,
    /// The room of the tape each request's `params` are read onto (see [`Tape`]), kept
    /// between requests: lent to each request's [`Exchange`], so none allocates to read its
    /// `params`, and given back emptied, so none carries anything to the next.
    spare_tape: Tape,
    /// `config.policy`, shared with each request's authority.
    pub(super) policy: Rc<Policy>,
    /// `config.tokens`, shared with the authority of each request that names one.
    pub(super) tokens: Vec<Rc<Token>>,
    /// The administrator (`config.token`, or any request when `/mcp` is open).
    pub(super) admin: Rc<Token>,
    /// Each token's rank without a narrowing, numbered as [`Admission::Authenticated`]
    /// numbers them (the administrator first): the table and roles are fixed at init, so a
    /// request does not walk the table for it.
    pub(super) ranks: Box<[Privilege]>,
}

impl<C: 'static> McpServer<C> {
    /// A server with no tools, resources or prompts yet.
    pub fn new(mut config: Config, ctx: Rc<RefCell<C>>, entropy: Entropy) -> Self {
        let mut tools = ToolRegistry::default();
        tools.set_table(config.capabilities);
        tools.set_policy(config.policy.clone());
        let policy = Rc::new(config.policy.clone());
        // The administrator's secret stays in `config.token` only.
        let admin = Rc::new(Token::admin(String::new()));
        let tokens: Vec<Rc<Token>> = config.tokens.iter().cloned().map(Rc::new).collect();
        let ranks = core::iter::once(&admin)
            .chain(&tokens)
            .map(|t| authority::rank(config.capabilities, t, None))
            .collect();
        let instructions_json = config.instructions.take().map(|text| {
            let mut out = Vec::with_capacity(text.len() + 2);
            out.push(b'"');
            crate::json::escape_str(&text, &mut out);
            out.push(b'"');
            out.into_boxed_slice()
        });
        let modern = crate::mcp::guard::request::Era::Modern;
        let modern_extra = result_extra(modern, &config.version).into_boxed_slice();
        McpServer {
            config,
            ctx,
            tools,
            resources: ResourceCatalog::default(),
            prompts: Vec::new(),
            sessions: Sessions::default(),
            rates: Windows::default(),
            auth_failures: Windows::default(),
            login_failures: LoginFailures::default(),
            refusals: Refusals::default(),
            calls: Calls::default(),
            entropy,
            answers: Rc::new(RefCell::new(Answers::default())),
            tasks: crate::mcp::tools::tasks::Tasks::default(),
            subscriptions: Subscriptions::default(),
            instructions_json,
            modern_extra,
            spare_tape: Tape::with_capacity(TAPE_START),
            policy,
            tokens,
            admin,
            ranks,
        }
    }

    /// A fresh server (no sessions, calls or counters) offering what `self` offers: its tools,
    /// resources and prompts, copied rather than registered again (registration parses and
    /// renders every schema). For harnesses that need a new server per case.
    pub fn with_catalog_of(
        other: &Self,
        config: Config,
        ctx: Rc<RefCell<C>>,
        entropy: Entropy,
    ) -> Self {
        let mut tools = other.tools.clone();
        if *tools.policy() != config.policy {
            tools.set_policy(config.policy.clone());
        }
        McpServer {
            tools,
            resources: other.resources.clone(),
            prompts: other.prompts.clone(),
            subscriptions: other.subscriptions.clone(),
            tasks: other.tasks.clone(),
            ..McpServer::new(config, ctx, entropy)
        }
    }

    /// Adds a tool family's table (all or nothing).
    pub fn register_tools(
        &mut self,
        table: &[crate::mcp::wire::tool::ToolDef<C>],
    ) -> Result<(), RegistryError> {
        self.tools.register(table)
    }

    /// Deflates each page of the tool listing once (see [`ToolRegistry::pack`]), so that
    /// `tools/list` can be answered `deflate`-coded: call it once every tool is registered.
    pub fn pack_listings(&mut self) {
        self.tools.pack(self.config.limits.page_size, coding::LEVEL);
    }

    /// Keeps a tool-name prefix back for a later milestone (see [`crate::mcp::tools::registry::Reserved`]).
    pub fn reserve_tools(
        &mut self,
        r: crate::mcp::tools::registry::Reserved,
    ) -> Result<(), RegistryError> {
        self.tools.reserve(r)
    }

    /// The tools and reservations, for rendering the catalogue.
    pub fn tools(&self) -> &ToolRegistry<C> {
        &self.tools
    }

    pub fn register_resources(&mut self, table: &[ResourceDef<C>]) {
        self.resources.register(table);
    }

    /// Adds streamed readers of resources (see [`crate::mcp::resources::catalog::StreamDef`]).
    pub fn register_resource_streams(
        &mut self,
        table: &[crate::mcp::resources::catalog::StreamDef<C>],
    ) {
        self.resources.register_streams(table);
    }

    pub fn register_templates(&mut self, table: &[TemplateDef<C>]) {
        self.resources.register_templates(table);
    }

    /// Adds streamed readers of templated resources (see [`crate::mcp::resources::catalog::TemplateStreamDef`]).
    pub fn register_template_streams(
        &mut self,
        table: &[crate::mcp::resources::catalog::TemplateStreamDef<C>],
    ) {
        self.resources.register_template_streams(table);
    }

    pub fn register_prompts(&mut self, table: &[PromptDef<C>]) {
        for p in table {
            if !self.prompts.iter().any(|q| q.name == p.name) {
                self.prompts.push(*p);
            }
        }
    }

    /// Makes resources subscribable (a later duplicate URI is ignored), at most 32.
    pub fn register_watches(&mut self, table: &[crate::mcp::eras::subscriptions::WatchDef<C>]) {
        self.subscriptions.register(table);
    }

    /// Marks tools that may run as tasks (a name no tool has never matches).
    pub fn add_task_tools(&mut self, tools: &[crate::mcp::tools::tasks::TaskTool]) {
        self.tasks.add_tools(tools);
    }

    /// Advances every running task by one bounded step and drops expired ones. Called from
    /// the module's poll loop; true when a task moved.
    pub fn poll_tasks(&mut self, now_ms: u64) -> bool {
        self.tasks.poll(&self.config.limits, now_ms)
    }

    /// The shared context.
    pub fn context(&self) -> &Rc<RefCell<C>> {
        &self.ctx
    }

    /// Answers one request given as its parts: the entry point for fuzzing (no `Request`
    /// needs to be built) and what `Handler::handle` calls.
    pub fn handle_parts(
        &mut self,
        method: &Method,
        headers: &Headers,
        body: &[u8],
        peer: Peer,
        now_ms: u64,
    ) -> Response {
        let head = Head::of(headers);
        if let Err(refused) = self.authorize_head(&head) {
            // Reached only by callers that skip `admit` (harnesses): `admit` refused it first.
            if refused.status == 401 {
                self.audit_auth(peer, now_ms, auth_failure(headers));
            }
            return refused;
        }
        let authority = match self.authority_of(&head, peer, None) {
            Ok(a) => a,
            Err(refused) => return refused,
        };
        let ex = Exchange {
            owner: authority.owner(),
            authority,
            lent: Cell::default(),
            tape: Cell::new(core::mem::take(&mut self.spare_tape)),
            packed: Cell::default(),
            peer,
            now_ms,
            kept: true,
        };
        self.exchange(method, headers, &head, body, &ex)
    }

    /// Answers an authorized request with `ex` (which the spare tape is lent to), and takes the
    /// tape back. An answer that can go out `deflate`-coded (a policy-wide `tools/list`) is
    /// coded here, as `Accept-Encoding` asks, once it is known to be the whole answer to this
    /// request (not an item of a batch, not an event of a stream).
    fn exchange(
        &mut self,
        method: &Method,
        headers: &Headers,
        head: &Head<'_>,
        body: &[u8],
        ex: &Exchange,
    ) -> Response {
        let r = self.answer(method, headers, head, body, ex);
        self.spare_tape = ex.tape.take();
        let accept = headers.field(Field::AcceptEncoding);
        coding::code(r, ex.packed.take(), accept)
    }

    /// Answers an authorized request: `ex` says what it may do.
    fn answer(
        &mut self,
        method: &Method,
        headers: &Headers,
        head: &Head<'_>,
        body: &[u8],
        ex: &Exchange,
    ) -> Response {
        let now_ms = ex.now_ms;
        self.subscriptions
            .touch_streamed(&mut self.sessions, now_ms);
        for serial in self
            .sessions
            .expire(now_ms, self.config.limits.session_idle_ms)
        {
            self.calls.cancel_all(Client::Session(serial));
            self.subscriptions.forget(serial);
        }
        let route = match method {
            Method::Get => Some(EVENT_STREAM_ROUTE),
            Method::Delete => Some(SESSION_END_ROUTE),
            _ => None,
        };
        if let Some(Err(denied)) = route.map(|r| ex.authority.check_door(Door::Route(r))) {
            let err = RpcError::new(
                jsonrpc::INVALID_REQUEST,
                alloc::format!("Forbidden: {}", denied.0),
            );
            return reply::error(403, None, &err);
        }
        match method {
            Method::Post => self.post(headers, head, body, ex),
            Method::Delete => self.delete(headers, ex.owner),
            Method::Get => get_stream::get(
                &self.subscriptions,
                &mut self.sessions,
                &self.ctx,
                &self.config.limits,
                headers,
                ex.owner,
                now_ms,
            ),
            _ => reply::not_allowed("GET, POST, DELETE"),
        }
    }

    fn post(&mut self, headers: &Headers, head: &Head<'_>, body: &[u8], ex: &Exchange) -> Response {
        if let Some(ct) = head.content_type() {
            let main = ct.split(';').next().unwrap_or("").trim_ascii();
            if !main.eq_ignore_ascii_case("application/json") {
                let err = RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "Content-Type must be application/json",
                );
                return reply::error(415, None, &err);
            }
        }
        // The tape lent to this request for its `params`; emptied after (and trimmed, if a
        // big request grew it), so it goes back to the server with nothing in it.
        let mut tape = ex.tape.take();
        let r = self.parsed(headers, head, body, &mut tape, ex);
        tape.clear();
        ex.tape.set(tape);
        r
    }

    /// The spare tape's room, for the tests of its give-back.
    #[cfg(test)]
    pub(super) fn tape_capacity(&self) -> usize {
        self.spare_tape.capacity()
    }

    /// Answers a POST body read onto `tape`.
    fn parsed(
        &mut self,
        headers: &Headers,
        head: &Head<'_>,
        body: &[u8],
        tape: &mut Tape,
        ex: &Exchange,
    ) -> Response {
        // The parsed messages stay charged to the budget until the answer is built.
        let parsed = jsonrpc::parse_within(body, &self.config.parse_budget, tape);
        let (incoming, _lease) = match parsed {
            Ok(parsed) => parsed,
            Err(Refusal::Invalid(f)) => return reply::error(400, f.id.as_ref(), &f.error),
            Err(Refusal::OverBudget) => {
                let mut r = reply::error(
                    503,
                    None,
                    &reply::busy_error("request memory budget exhausted; retry later"),
                );
                r.headers.push("Retry-After", "1");
                return r;
            }
        };
        let first = match &incoming {
            Incoming::Single(Ok(m)) => Some(m),
            _ => None,
        };
        if is_modern(first, head) {
            self.modern(incoming, headers, head, ex)
        } else {
            self.legacy(incoming, headers, ex)
        }
    }

    /// `DELETE /mcp`: ends `owner`'s session (another owner's is not found).
    fn delete(&mut self, headers: &Headers, owner: Owner) -> Response {
        let version = headers.get("MCP-Protocol-Version").map(str::trim);
        if version.is_some_and(|v| !LEGACY_VERSIONS.contains(&v)) {
            return reply::not_allowed("POST");
        }
        let Some(id) = headers.get("Mcp-Session-Id").map(str::trim) else {
            return reply::not_allowed("POST");
        };
        match self.sessions.remove(id, owner) {
            Some(s) => {
                self.calls.cancel_all(Client::Session(s.serial));
                self.subscriptions.forget(s.serial);
                Response::empty(200)
            }
            None => reply::error(
                404,
                None,
                &RpcError::new(reply::SESSION_NOT_FOUND, "Session not found"),
            ),
        }
    }
}

impl<C: 'static> Handler for McpServer<C> {
    fn admit(
        &mut self,
        head: &Request,
        peer: Peer,
        proven: Option<u8>,
        now_ms: u64,
    ) -> Result<Admission, Response> {
        McpServer::admit(self, &head.headers, peer, proven, now_ms)
    }

    /// A request this server's `admit` passed with a token (its Origin and token checked,
    /// failures counted) is not judged again; any other is (an anonymous admission may be
    /// another handler's, and without a token only the Origin is checked).
    fn handle(&mut self, req: &mut Request, peer: Peer, now_ms: u64) -> Response {
        let Some(Admission::Authenticated(token)) = req.admission else {
            return self.handle_parts(&req.method, &req.headers, &req.body, peer, now_ms);
        };
        let head = Head::of(&req.headers);
        let authority = match self.authority_of(&head, peer, Some(token)) {
            Ok(a) => a,
            Err(refused) => return refused,
        };
        let ex = Exchange {
            owner: authority.owner(),
            authority,
            lent: Cell::new(core::mem::take(&mut req.answer)),
            tape: Cell::new(core::mem::take(&mut self.spare_tape)),
            packed: Cell::default(),
            peer,
            now_ms,
            kept: req.earlier > 0,
        };
        let r = self.exchange(&req.method, &req.headers, &head, &req.body, &ex);
        // Not taken: back to the connection for its next request.
        req.answer = ex.lent.take();
        r
    }
}

/// Why a request with this `Authorization` failed the token check.
pub(super) fn auth_failure(headers: &Headers) -> AuthFailure {
    let bearer = headers.get("Authorization").is_some_and(|v| {
        v.trim()
            .get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("bearer "))
    });
    if bearer {
        AuthFailure::Wrong
    } else {
        AuthFailure::Missing
    }
}

/// The modern era is recognised by its envelope; without one, `initialize`, a session id
/// or a legacy version header mean legacy, and anything else is judged as modern (so a bare
/// request learns which `_meta` keys it lacks).
fn is_modern(msg: Option<&Message>, head: &Head<'_>) -> bool {
    let initialize = msg.is_some_and(|m| m.method() == Some("initialize"));
    let version = head.version().map(str::trim);
    let legacy_head =
        head.session().is_some() || version.is_some_and(|v| LEGACY_VERSIONS.contains(&v));
    // Nothing says legacy: modern, whatever the envelope (so `_meta` need not be looked at).
    if !initialize && !legacy_head {
        return true;
    }
    msg.is_some_and(|m| {
        m.params()
            .and_then(|p| p.get("_meta"))
            .is_some_and(|meta| meta.contains_key(META_VERSION) || meta.contains_key(META_CAPS))
    })
}

#[cfg(test)]
mod tests {
    use super::{Head, LEGACY_VERSIONS, is_modern};
    use crate::http::Headers;
    use crate::json::Tape;
    use crate::jsonrpc::{Incoming, Message, parse};
    use crate::mcp::wire::version::MODERN_VERSION;

    fn body(method: &str, meta: bool) -> alloc::string::String {
        let params = if meta {
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#
        } else {
            "{}"
        };
        alloc::format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
    }

    fn message<'a>(body: &'a str, tape: &'a mut Tape) -> Message<'a> {
        match parse(body.as_bytes(), tape) {
            Ok(Incoming::Single(Ok(m))) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_era_is_the_envelope_s_else_what_the_head_says() {
        for meta in [false, true] {
            for method in ["initialize", "tools/list"] {
                for session in [false, true] {
                    for version in [None, Some(LEGACY_VERSIONS[0]), Some(MODERN_VERSION)] {
                        let mut h = Headers::default();
                        if session {
                            h.push("Mcp-Session-Id", "s");
                        }
                        if let Some(v) = version {
                            h.push("MCP-Protocol-Version", v);
                        }
                        let body = body(method, meta);
                        let mut tape = Tape::default();
                        let m = message(&body, &mut tape);
                        let legacy = method == "initialize"
                            || session
                            || version == Some(LEGACY_VERSIONS[0]);
                        let want = meta || !legacy;
                        let case = (meta, method, session, version);
                        assert_eq!(is_modern(Some(&m), &Head::of(&h)), want, "{case:?}");
                        // Without a single message (a batch) only the head counts.
                        let bare = !session && version != Some(LEGACY_VERSIONS[0]);
                        assert_eq!(is_modern(None, &Head::of(&h)), bare, "{case:?}");
                    }
                }
            }
        }
    }
}
