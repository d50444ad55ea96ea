//! The legacy bridge's rounds of client input: a call whose tool asked for input on a session
//! that takes SSE sends the requests on its stream and waits for the answers (see `inputs`).

use crate::mcp::inputs::Answers;
use crate::mcp::tool::ToolDef;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Map, Value};

/// Rounds of client input one call may ask for before it is failed.
pub(crate) const MAX_ROUNDS: u32 = 8;
/// Input requests per round.
pub(crate) const MAX_REQUESTS: usize = 8;
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
    pub(crate) state: Option<String>,
    /// (input key, request id) still unanswered.
    pub(crate) waiting: Vec<(String, String)>,
    pub(crate) answers: Map<String, Value>,
    pub(crate) rounds: u32,
    pub(crate) sent: u64,
    /// When the current round was first polled: the deadline counts from there.
    pub(crate) round_since_ms: Option<u64>,
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
