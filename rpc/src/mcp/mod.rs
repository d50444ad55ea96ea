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

// The layers, bottom first: a folder imports only the folders above it in this list (and
// `server` and `dispatch`, on top, import them all). `cargo xtask layers` checks the order.
mod dispatch;
pub(crate) mod eras;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
pub(crate) mod guard;
pub(crate) mod resources;
mod server;
pub(crate) mod tools;
pub(crate) mod wire;

#[cfg(test)]
mod tests;

pub use guard::authority;
pub use tools::confirm;
pub use wire::base64::base64;

pub use eras::subscriptions::WatchDef;
pub use guard::arg_summary::summarise_args;
pub use guard::audit::{
    AuditEvent, AuditRecord, AuditSink, AuthFailure, FailureCount, Outcome, Via,
};
pub use guard::authority::{Authority, Cap, Capability, Door, Policy, PolicyError, Privilege};
pub use guard::call_watch::{CallObserver, CallStart};
pub use guard::config::{Config, Limits};
pub use resources::catalog::{
    OpenFn, ReadFn, ResourceContents, ResourceDef, StreamDef, TemplateDef, TemplateReadFn,
    TemplateStreamDef,
};
pub use server::{Entropy, McpServer};
pub use tools::prompt::{GetFn, PromptArg, PromptCall, PromptDef, PromptReply};
pub use tools::registry::{RegistryError, Reserved, ToolRegistry};
pub use tools::tasks::{TaskSupport, TaskTool};
pub use wire::error_code::ErrorCode;
pub use wire::reply::{
    BUSY, HEADER_MISMATCH, MISSING_CAPABILITY, RESOURCE_NOT_FOUND_LEGACY, SESSION_NOT_FOUND,
    UNSUPPORTED_VERSION,
};
pub use wire::tool::{
    Annotations, Content, ContentSource, InputRequired, LogLevel, SourcePoll, StartFn, Started,
    Step, StepIo, StreamKind, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun, append_zeroed,
};
pub use wire::version::{LEGACY_VERSIONS, MODERN_VERSION, SERVER_NAME, TASKS_EXTENSION};
