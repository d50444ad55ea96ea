//! Who is told when a tool call starts and when it ends: the module's flight recorder keeps the
//! calls in flight, so that after a reset it can say what was running. The server knows
//! nothing of what the observer does with it (no board, no memory region): it hands over the
//! call's name, client, era and start time, and later the token the observer gave back.

use alloc::rc::Rc;

/// A tool call as it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallStart {
    /// The tool's name as registered (static: an observer keeps it without a copy).
    pub tool: &'static str,
    /// The client's IPv4 address.
    pub client: [u8; 4],
    /// The protocol version it came in (`2026-07-28`, or the legacy session's).
    pub era: &'static str,
    /// Milliseconds since boot.
    pub at_ms: u64,
}

/// Told of every `tools/call` that reaches its tool (after the name is found), and of its end:
/// its answer written, its stream or task finished or dropped.
pub trait CallObserver {
    /// A call starts; the returned token names it in [`CallObserver::ended`].
    fn started(&self, call: &CallStart) -> u32;
    /// The call `token` ended.
    fn ended(&self, token: u32);
}

/// One call being watched: the observer hears of its end when this is dropped, wherever the
/// call ends (answered at once, streamed, run as a task, or dropped with its connection).
pub(crate) struct CallWatch {
    observer: Rc<dyn CallObserver>,
    token: u32,
}

impl CallWatch {
    /// Starts watching `call`, if the configuration has an observer.
    pub(crate) fn start(
        observer: Option<&Rc<dyn CallObserver>>,
        call: &CallStart,
    ) -> Option<CallWatch> {
        let observer = observer?.clone();
        let token = observer.started(call);
        Some(CallWatch { observer, token })
    }
}

impl Drop for CallWatch {
    fn drop(&mut self) {
        self.observer.ended(self.token);
    }
}
