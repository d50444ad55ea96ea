//! The legacy bridge's rounds of client input: a call whose tool asked for input on a session
//! that takes SSE sends the requests on its stream and waits for the answers (see `inputs`).

use crate::json::{Tape, write_value};
use crate::mcp::tools::inputs::Answers;
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::tool::{InputRequired, Started, ToolCall, ToolDef, ToolError};
use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use irix7_kmem::share::Claim;
use serde_json::{Map, Value};

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
    def: ToolDef<C>,
    /// The call needs consent (`mcp.confirm`): each restart goes through the gate again.
    gated: bool,
    /// The arguments' JSON text, read again for each restart.
    args: String,
    caps: Value,
    /// The caller's `ToolCall::sees_secrets` and `holder`, for each restart.
    sees_secrets: bool,
    holder: Claim<u64>,
    shared: Rc<RefCell<Answers>>,
    session: u64,
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
        (sees_secrets, holder): (bool, Claim<u64>),
        shared: Rc<RefCell<Answers>>,
        session: u64,
    ) -> Self {
        Asking {
            def,
            gated,
            args,
            caps,
            sees_secrets,
            holder,
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

    /// Opens a round with the tool's requests: the JSON-RPC requests to send on the stream,
    /// or why the call fails. `ids` (session serial, stream number) name the requests on a
    /// legacy event stream.
    pub(crate) fn round(
        &mut self,
        ir: InputRequired,
        ids: Option<(u64, u64)>,
    ) -> Result<Vec<Vec<u8>>, ToolError> {
        self.rounds += 1;
        self.round_since_ms = None;
        self.state = ir.request_state;
        self.answers = Map::new();
        self.forget_waiting();
        let requests = match ir.input_requests {
            Value::Object(m)
                if !m.is_empty() && m.len() <= MAX_REQUESTS && self.rounds <= MAX_ROUNDS =>
            {
                m
            }
            _ => {
                return Err(ToolError::new(
                    ErrorCode::Internal,
                    "unusable request for client input",
                ));
            }
        };
        let (session, stream) = ids.unwrap_or((self.session, 0));
        let mut events = Vec::new();
        for (key, req) in requests {
            let method = req.get("method").and_then(Value::as_str).unwrap_or("");
            let params = req
                .get("params")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            let id = format!("irix7-{session}-{stream}-{}", self.sent);
            self.sent += 1;
            if !self.shared.borrow_mut().expect(self.session, id.clone()) {
                return Err(ToolError::new(
                    ErrorCode::Busy,
                    "too many requests to clients in flight",
                ));
            }
            let mut msg = Map::new();
            msg.insert("jsonrpc".into(), Value::from("2.0"));
            msg.insert("id".into(), Value::from(id.as_str()));
            msg.insert("method".into(), Value::from(method));
            msg.insert("params".into(), params);
            let mut bytes = Vec::new();
            write_value(&mut bytes, &Value::Object(msg));
            events.push(bytes);
            self.waiting.push((key, id));
        }
        Ok(events)
    }

    /// Collects arrived answers; when all are in, starts the tool again with them through
    /// `start` (the consent gate's `confirm::start`: each restart of a gated call asks
    /// again). `None` while answers are missing (before the deadline) or the context is in
    /// use; else the tool's new start, or why the call fails.
    pub(crate) fn poll(
        &mut self,
        ctx: &RefCell<C>,
        now_ms: u64,
        start: impl FnOnce(&ToolDef<C>, bool, &mut C, &ToolCall<'_>) -> Result<Started<C>, ToolError>,
    ) -> Option<Result<Started<C>, ToolError>> {
        let mut failed = None;
        {
            let mut shared = self.shared.borrow_mut();
            let answers = &mut self.answers;
            self.waiting.retain(|(key, id)| match shared.take(id) {
                Some(Ok(v)) => {
                    answers.insert(key.clone(), v);
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
            return Some(Err(err));
        }
        if !self.waiting.is_empty() {
            let since = *self.round_since_ms.get_or_insert(now_ms);
            if now_ms.saturating_sub(since) < ASK_DEADLINE_MS {
                return None;
            }
            // The waiting entries in `Answers` belong to this call: it forgets them when the
            // result it fails with ends it (see `Drop`).
            let keys: Vec<&str> = self.waiting.iter().map(|(k, _)| k.as_str()).collect();
            return Some(Err(ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "the client did not answer {} within {} s",
                    keys.join(", "),
                    ASK_DEADLINE_MS / 1000
                ),
            )));
        }
        let mut tape = Tape::default();
        let Some(args) = tape.read(&self.args) else {
            return Some(Err(ToolError::new(
                ErrorCode::Internal,
                "the kept arguments do not read",
            )));
        };
        let Ok(mut ctx) = ctx.try_borrow_mut() else {
            return None;
        };
        let call = ToolCall {
            args,
            now_ms,
            client_capabilities: &self.caps,
            input_responses: Some(&self.answers),
            request_state: self.state.as_deref(),
            sees_secrets: self.sees_secrets,
            holder: self.holder,
        };
        Some(start(&self.def, self.gated, &mut ctx, &call))
    }

    /// Forgets the requests of the round that still wait for an answer.
    fn forget_waiting(&mut self) {
        if let Ok(mut shared) = self.shared.try_borrow_mut() {
            for (_, id) in &self.waiting {
                shared.forget(self.session, id);
            }
        }
        self.waiting.clear();
    }
}

impl<C> Drop for Asking<C> {
    /// The call stops asking (answered, failed, cancelled or dropped with its connection):
    /// nothing waits for its requests any more.
    fn drop(&mut self) {
        self.forget_waiting();
    }
}
