//! MCP over HTTP, both eras on one endpoint: 2026-07-28 (stateless, `server/discover`) and
//! the session-based 2025-11-25 family (`initialize`). See `docs/mcp.md` for the decisions.

/// `Clone` and `Copy` for a table row generic over the server context `C`. Its fields are
/// `&'static` data and `fn` pointers, which copy whatever `C` is; `#[derive]` would demand
/// `C: Copy`, which the module's context is not.
macro_rules! copy_for_any_context {
    ($row:ident) => {
        impl<C> Clone for $row<C> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<C> Copy for $row<C> {}
    };
}

// The layers, bottom first: a folder imports only itself and the folders before it here,
// never the files on top nor a name through this façade (`cargo xtask layers` checks it).
// The protocol's own words.
pub(crate) mod wire;
// Who may ask and how much, and what is written down.
pub(crate) mod guard;
// What a client may call.
pub(crate) mod tools;
// What a client may read.
pub(crate) mod resources;
// The stateless era and the session-based one.
pub(crate) mod eras;

// On top, the server, one `McpServer` over four files: its façade (`server`), its door
// (`admission`), its routing (`dispatch`) and a `tools/call` (`call_tool`).
mod admission;
mod call_tool;
mod dispatch;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
mod server;

#[cfg(test)]
mod tests;

pub use guard::authority;
pub use tools::confirm;
pub use wire::base64::base64;

pub use eras::subscriptions::WatchDef;
pub use guard::arg_summary::summarise_args;
pub use guard::audit::{AuditEvent, AuditRecord, AuditSink, AuthFailure, FailureCount, Via};
pub use guard::authority::{Authority, Cap, Capability, Door, Policy, PolicyError, Privilege};
pub use guard::call_watch::{CallObserver, CallStart};
pub use guard::config::{Config, Limits};
pub use guard::outcome::Outcome;
pub use resources::catalog::{
    OpenFn, ReadFn, ResourceContents, ResourceDef, StreamDef, TemplateDef, TemplateReadFn,
    TemplateStreamDef,
};
pub use server::{Entropy, McpServer};
pub use tools::prompt::{GetFn, PromptArg, PromptCall, PromptDef, PromptReply};
pub use tools::registry::{RegistryError, Reserved, ToolRegistry};
pub use tools::tasks::{TaskSupport, TaskTool};
pub use wire::annotations::Annotations;
pub use wire::error_code::ErrorCode;
pub use wire::reply::{
    BUSY, HEADER_MISMATCH, MISSING_CAPABILITY, RESOURCE_NOT_FOUND_LEGACY, SESSION_NOT_FOUND,
    UNSUPPORTED_VERSION,
};
pub use wire::tool::{
    Content, ContentSource, InputRequired, LogLevel, SourcePoll, StartFn, Started, Step, StepIo,
    StreamKind, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun, append_zeroed,
};
pub use wire::version::{LEGACY_VERSIONS, MODERN_VERSION, SERVER_NAME, TASKS_EXTENSION};
