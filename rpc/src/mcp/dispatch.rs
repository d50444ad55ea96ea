//! Routing, the part of `McpServer` that is not its façade (`server.rs`) nor its door
//! (`admission.rs`): each era's POST after its checks (`modern`, `legacy`), then each method
//! to what answers it; a `tools/call` goes on to `call_tool.rs`.

use crate::http::{Body, Headers, Response};
use crate::jsonrpc::{self, Incoming, Message, ParseFailure, RpcError};
use crate::mcp::eras::get_stream;
use crate::mcp::eras::legacy;
use crate::mcp::eras::modern;
use crate::mcp::guard::authority::{Client, Door, Key, Owner};
use crate::mcp::guard::request::{Cx, Era, Exchange, Head};
use crate::mcp::resources::catalog::{ResourceDef, TemplateDef};
use crate::mcp::resources::read;
use crate::mcp::server::McpServer;
use crate::mcp::tools::prompt;
use crate::mcp::tools::result::{Json, Offers, fail, finish, finish_members};
use crate::mcp::wire::cursor;
use crate::mcp::wire::reply;
use crate::mcp::wire::version::MODERN_VERSION;
use alloc::format;
use alloc::rc::Rc;
use alloc::vec::Vec;
use serde_json::{Map, Value, json};

impl<C: 'static> McpServer<C> {
    /// What the server offers beyond the fixed capabilities.
    fn offers(&self) -> Offers {
        Offers {
            tasks: self.tasks.offered(),
            subscribe: self.subscriptions.offered(),
        }
    }

    /// A POST of the session-based era: `initialize`, or a message of the session it names
    /// (see `legacy`).
    pub(super) fn legacy(
        &mut self,
        incoming: Incoming,
        headers: &Headers,
        ex: &Exchange,
    ) -> Response {
        let now_ms = ex.now_ms;
        if let Incoming::Single(Ok(m)) = &incoming
            && m.method() == Some("initialize")
        {
            return self.initialize(m, ex);
        }
        let limits = self.config.limits;
        let admitted = legacy::session(&mut self.sessions, &incoming, headers, ex.owner, now_ms);
        let legacy::Admitted { serial, version } = match admitted {
            Ok(admitted) => admitted,
            Err(refused) => return refused,
        };
        let within_rate = self.within_rate(ex.owner, Client::Session(serial), now_ms);
        match incoming {
            Incoming::Single(Err(f)) => reply::error(400, f.id.as_ref(), &f.error),
            Incoming::Single(Ok(msg)) => {
                if !within_rate {
                    let why = reply::OVER_RATE;
                    return match (&msg, msg.method()) {
                        // Cancellations and answers to our own requests reduce work: never
                        // refused.
                        (Message::Response { .. }, _) | (_, Some("notifications/cancelled")) => {
                            self.legacy_message(serial, &msg, headers, ex)
                        }
                        (Message::Request { id, .. }, Some("tools/call")) => {
                            self.busy_result(&ex.lent, id, Era::Legacy(version), why)
                        }
                        _ => reply::busy(msg.id(), why),
                    };
                }
                self.legacy_message(serial, &msg, headers, ex)
            }
            Incoming::Batch(items) => {
                if let Some(refused) =
                    legacy::batch_refused(version, items.len(), &limits, within_rate)
                {
                    return refused;
                }
                self.batch(serial, items, headers, ex)
            }
        }
    }

    /// 2025-03-26 batches: each request is answered in a JSON array; a batch of only
    /// notifications gets 202. Tool calls cannot be batched here: their results may stream,
    /// so a batched `tools/call` gets -32600 asking for it to be sent alone, as does any other
    /// request whose answer streams. Every item after the first (counted by the caller)
    /// counts against the session's rate, and the answer is capped in bytes: items past
    /// either limit are answered with an error instead of being run.
    fn batch(
        &mut self,
        serial: u64,
        items: Vec<Result<Message, ParseFailure>>,
        headers: &Headers,
        ex: &Exchange,
    ) -> Response {
        let now_ms = ex.now_ms;
        let limits = self.config.limits;
        let mut answer = legacy::BatchAnswer::new();
        for (i, item) in items.into_iter().enumerate() {
            let over_rate = i > 0 && !self.within_rate(ex.owner, Client::Session(serial), now_ms);
            let bytes = match legacy::batch_item(item, over_rate, answer.bytes(), &limits) {
                Ok(m) => {
                    let r = self.legacy_message(serial, &m, headers, ex);
                    legacy::batch_item_answer(&m, r)
                }
                Err(refused) => Some(refused),
            };
            answer.push(bytes);
        }
        answer.finish()
    }

    /// A message of session `serial`: answered by the era, or dispatched.
    fn legacy_message(
        &mut self,
        serial: u64,
        msg: &Message,
        headers: &Headers,
        ex: &Exchange,
    ) -> Response {
        let (peer, now_ms) = (ex.peer, ex.now_ms);
        let routed = legacy::message(
            serial,
            ex.owner,
            msg,
            &mut self.sessions,
            &self.answers,
            &mut self.calls,
            &self.config.limits,
        );
        let req = match routed {
            Ok(req) => req,
            Err(answered) => return answered,
        };
        let cx = req.cx(serial, headers, peer, now_ms, ex);
        if let Some(on) = match req.method {
            "resources/subscribe" if self.subscriptions.offered() => Some(true),
            "resources/unsubscribe" if self.subscriptions.offered() => Some(false),
            _ => None,
        } {
            return self.subscriptions.subscribe(serial, &cx, on);
        }
        self.dispatch(req.method, &cx)
    }

    /// Counts a request of `owner`'s `client` against the owner's per-second limit, shared
    /// fairly between its clients (see `limits::RateWindow`).
    fn within_rate(&mut self, owner: Owner, client: Client, now_ms: u64) -> bool {
        let limits = &self.config.limits;
        self.rates.admit(
            owner,
            client.id(),
            now_ms,
            limits.requests_per_second,
            limits.max_clients,
        )
    }

    /// `initialize`: a new session of `owner`, an older one evicted if its share or the table
    /// is full.
    fn initialize(&mut self, msg: &Message, ex: &Exchange) -> Response {
        let (owner, now_ms) = (ex.owner, ex.now_ms);
        let Message::Request { id, params, .. } = msg else {
            return legacy::initialize_not_a_request();
        };
        if !self.within_rate(owner, ex.rate_client(), now_ms) {
            return reply::busy(Some(id), reply::OVER_RATE);
        }
        let limits = self.config.limits;
        let (version, caps) = match legacy::opening(id, *params) {
            Ok(opening) => opening,
            Err(refused) => return refused,
        };
        let calls = &mut self.calls;
        let created = self.sessions.create(
            limits.max_sessions,
            owner,
            &mut *self.entropy,
            version,
            caps.unwrap_or_else(|| json!({})),
            now_ms,
            |serial| calls.busy(Client::Session(serial)),
        );
        let (session_id, evicted) = match created {
            Ok((s, evicted)) => (s.id.clone(), evicted),
            Err(_) => return legacy::sessions_full(id),
        };
        if let Some(serial) = evicted {
            self.calls.cancel_all(Client::Session(serial));
            self.subscriptions.forget(serial);
        }
        let instructions = self.instructions_json.as_deref();
        legacy::initialized(
            id,
            version,
            session_id,
            self.offers(),
            &self.config.version,
            instructions,
        )
    }

    /// A 2026-07-28 POST: its envelope checked (see `modern`), then the client's rate.
    pub(super) fn modern(
        &mut self,
        incoming: Incoming,
        headers: &Headers,
        head: &Head<'_>,
        ex: &Exchange,
    ) -> Response {
        let (peer, now_ms) = (ex.peer, ex.now_ms);
        let msg = match modern::message(incoming) {
            Ok(msg) => msg,
            Err(refused) => return refused,
        };
        let req = match modern::envelope(&msg, head) {
            Ok(req) => req,
            Err(refused) => return refused,
        };
        if !self.within_rate(ex.owner, ex.rate_client(), now_ms) {
            return match (req.id, req.method) {
                (Some(id), "tools/call") => {
                    self.busy_result(&ex.lent, id, Era::Modern, reply::OVER_RATE)
                }
                _ => reply::busy(req.id, reply::OVER_RATE),
            };
        }
        let Some(id) = req.id else {
            // Notifications (cancellation is closing the stream in this era) need no answer.
            return reply::accepted();
        };
        let cx = Cx {
            era: Era::Modern,
            id,
            params: req.params,
            caps: &req.caps,
            accept: head.accept(),
            progress_token: req.meta.get("progressToken").and_then(|t| t.to_value()),
            log_level: req.log_level,
            key: Key {
                owner: ex.owner,
                client: Client::Connection(peer.addr, peer.port),
            },
            sse_ids: None,
            sse_retry_ms: None,
            now_ms,
            headers: Some(headers),
            client: peer.addr,
            session_tag: None,
            authority: ex.authority.clone(),
            lent: &ex.lent,
            packed: &ex.packed,
        };
        self.dispatch(req.method, &cx)
    }

    fn dispatch(&mut self, method: &str, cx: &Cx<'_>) -> Response {
        let r = match method {
            "server/discover" if cx.era == Era::Modern => return self.discover(cx),
            "subscriptions/listen" if cx.era == Era::Modern && self.subscriptions.offered() => {
                return get_stream::listen(&self.subscriptions, &self.ctx, &self.config.limits, cx);
            }
            "tools/list" => return self.list_tools(cx),
            "tools/call" => return self.call_tool(cx),
            "tasks/get" | "tasks/update" | "tasks/cancel" if cx.era == Era::Modern => {
                return self
                    .tasks
                    .answer(method, cx, &self.config, &self.tools, &self.ctx);
            }
            "resources/list" => self.list(cx, "resources", |s| {
                let may =
                    |r: &&ResourceDef<C>| cx.authority.check_door(Door::Resource(r.uri)).is_ok();
                s.resources
                    .resources
                    .iter()
                    .filter(may)
                    .map(|r| r.listing())
                    .collect()
            }),
            "resources/templates/list" => self.list(cx, "resourceTemplates", |s| {
                let may = |t: &&TemplateDef<C>| {
                    cx.authority
                        .check_door(Door::Template(t.uri_template))
                        .is_ok()
                };
                s.resources
                    .templates
                    .iter()
                    .filter(may)
                    .map(|t| t.listing())
                    .collect()
            }),
            "resources/read" => {
                return read::read(&self.resources, &self.ctx, &self.config, cx);
            }
            "prompts/list" => self.list(cx, "prompts", |s| {
                s.prompts.iter().map(|p| p.listing()).collect()
            }),
            "prompts/get" => prompt::get(&self.prompts, &self.ctx, cx),
            "completion/complete" => {
                Ok(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
            }
            _ => Err(RpcError::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        };
        match r {
            Ok(v) => finish(&self.config, cx, method, v),
            Err(e) => fail(cx, e),
        }
    }

    /// `tools/list` from the listings serialised at registration: the answer is written
    /// around an empty `"tools":[]` and the page, one slice of the registry's listings, is
    /// spliced in there when the answer is sent, so no listing is copied, cloned or
    /// serialised per request.
    ///
    /// A caller narrower than the policy (a lesser token, a gateway's narrowing) gets the
    /// tools it may call, copied out of the same listings. A policy-wide page leaves its
    /// listings deflated ahead of time in `cx.packed` too, for the entry point to send them
    /// coded when the client asks ([`crate::http::coding::code`]).
    fn list_tools(&self, cx: &Cx<'_>) -> Response {
        let narrowed;
        let listed = if cx.authority.is_policy_wide() {
            self.tools.listed()
        } else {
            narrowed = self.tools.listed_for(&cx.authority);
            &narrowed[..]
        };
        // Only the cursor matters here: no clone of the whole params (`_meta` and all).
        let page_size = self.config.limits.page_size;
        let (page, next) = match cursor::page(listed, cx.params, page_size) {
            Ok(p) => p,
            Err(e) => return fail(cx, e),
        };
        let tools = ("tools", Json::Items(b""));
        let mut resp = match &next {
            Some(n) => {
                let members = [("nextCursor", Json::Str(n)), tools];
                finish_members(&self.config, cx, "tools/list", &members, 0)
            }
            None => finish_members(&self.config, cx, "tools/list", &[tools], 0),
        };
        // `tools` is the last array of the answer (after it come plain keys and numbers):
        // the last `[]` is its.
        if let Body::Full(own) = &mut resp.body
            && let Some(at) = own.windows(2).rposition(|w| w == b"[]")
        {
            let (shared, range) = if cx.authority.is_policy_wide() {
                let shared = self.tools.shared_listings().clone();
                let range = self.tools.page_range(page);
                cx.packed.set(self.tools.packed(&range).cloned());
                (shared, range)
            } else {
                let own = self.tools.copied_listings(page);
                let len = own.len();
                (Rc::new(own), 0..len)
            };
            let splice = crate::http::Splice {
                at: at + 1,
                shared: crate::http::Shared::Kept(shared),
                range,
            };
            resp.body = Body::Spliced(core::mem::take(own), splice);
        }
        resp
    }

    /// `server/discover`, written out: nothing in it is built as a `Value`.
    fn discover(&self, cx: &Cx<'_>) -> Response {
        let versions = ("supportedVersions", Json::Strs(&[MODERN_VERSION]));
        let caps = ("capabilities", Json::Capabilities(self.offers()));
        match &self.instructions_json {
            Some(text) => {
                let members = [caps, ("instructions", Json::Raw(text)), versions];
                finish_members(&self.config, cx, "server/discover", &members, text.len())
            }
            None => finish_members(&self.config, cx, "server/discover", &[caps, versions], 0),
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
}
