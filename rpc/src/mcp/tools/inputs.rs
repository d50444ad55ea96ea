//! The legacy bridge for client input: a tool that returns `InputRequired` in a legacy
//! session (which has no `inputResponses` round trip) has each input request sent to the
//! client as a JSON-RPC request on the call's SSE stream. The client POSTs its responses to
//! the session; they are parked here until the call's stream picks them up and restarts the
//! tool with them as `inputResponses`.

use crate::jsonrpc::Id;
use crate::mcp::guard::limits::CallState;
use alloc::rc::{Rc, Weak};
use alloc::string::String;
use alloc::vec::Vec;
use serde_json::Value;

/// Requests in flight to clients, across sessions, bounded.
pub(crate) const MAX_WAITING: usize = 64;

struct Entry {
    session: u64,
    /// The id we sent (a JSON string's contents).
    id: String,
    owner: Weak<CallState>,
    answer: Option<Result<Value, Value>>,
}

/// Answers awaited from clients.
#[derive(Default)]
pub(crate) struct Answers {
    list: Vec<Entry>,
}

impl Answers {
    fn prune(&mut self) {
        self.list.retain(|e| {
            e.owner
                .upgrade()
                .is_some_and(|c| !c.finished.get() && !c.cancelled.get())
        });
    }

    /// Registers a request sent to `session`'s client; false when too many are waiting.
    pub(crate) fn expect(&mut self, session: u64, id: String, owner: &Rc<CallState>) -> bool {
        self.prune();
        if self.list.len() >= MAX_WAITING {
            return false;
        }
        self.list.push(Entry {
            session,
            id,
            owner: Rc::downgrade(owner),
            answer: None,
        });
        true
    }

    /// Parks a client's response; false if nothing waits for it.
    pub(crate) fn deliver(&mut self, session: u64, id: &Id, outcome: Result<Value, Value>) -> bool {
        self.prune();
        let Some(Value::String(sent)) = id.to_value() else {
            return false;
        };
        match self
            .list
            .iter_mut()
            .find(|e| e.session == session && e.id == sent && e.answer.is_none())
        {
            Some(e) => {
                e.answer = Some(outcome);
                true
            }
            None => false,
        }
    }

    /// The answer to request `id`, once it arrived (removing it).
    pub(crate) fn take(&mut self, id: &str) -> Option<Result<Value, Value>> {
        let i = self
            .list
            .iter()
            .position(|e| e.id == id && e.answer.is_some())?;
        self.list.swap_remove(i).answer
    }
}
