//! The legacy bridge for client input: a tool that returns `InputRequired` in a legacy
//! session (which has no `inputResponses` round trip) has each input request sent to the
//! client as a JSON-RPC request on the call's SSE stream. The client POSTs its responses to
//! the session; they are parked here until the call's stream picks them up and restarts the
//! tool with them as `inputResponses`. The requests a call still waits for are its own: it
//! forgets them when it stops asking (`asking`), whether answered, failed or cancelled.

use crate::jsonrpc::Id;
use alloc::string::String;
use alloc::vec::Vec;
use serde_json::Value;

/// Requests in flight to clients, across sessions, bounded.
pub(crate) const MAX_WAITING: usize = 64;

struct Entry {
    session: u64,
    /// The id we sent (a JSON string's contents).
    id: String,
    answer: Option<Result<Value, Value>>,
}

/// Answers awaited from clients.
#[derive(Default)]
pub(crate) struct Answers {
    list: Vec<Entry>,
}

impl Answers {
    /// Registers a request sent to `session`'s client; false when too many are waiting.
    pub(crate) fn expect(&mut self, session: u64, id: String) -> bool {
        if self.list.len() >= MAX_WAITING {
            return false;
        }
        self.list.push(Entry {
            session,
            id,
            answer: None,
        });
        true
    }

    /// Drops request `id` sent to `session`'s client, answered or not: the call that sent it
    /// no longer waits.
    pub(crate) fn forget(&mut self, session: u64, id: &str) {
        self.list.retain(|e| e.session != session || e.id != id);
    }

    /// Parks a client's response; false if nothing waits for it.
    pub(crate) fn deliver(&mut self, session: u64, id: &Id, outcome: Result<Value, Value>) -> bool {
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

    /// Requests waiting or answered and not yet taken.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
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
