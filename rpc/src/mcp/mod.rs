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

mod arg_summary;
mod audit;
pub mod authority;
mod base64;
mod call;
mod call_watch;
mod config;
pub mod confirm;
mod cursor;
mod dispatch;
pub use self::base64::base64;
mod error_code;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
mod get_stream;
mod inputs;
mod legacy;
mod limits;
mod login_failures;
mod modern;
mod prompt;
mod registry;
mod reply;
mod request;
mod resource;
mod resource_read;
mod resource_stream;
mod result;
mod schema;
mod security;
mod server;
mod session;
mod subscriptions;
mod tasks;
mod tool;
mod version;

#[cfg(test)]
mod tests;

pub use arg_summary::summarise_args;
pub use audit::{AuditEvent, AuditRecord, AuditSink, AuthFailure, FailureCount, Outcome, Via};
pub use authority::{Authority, Cap, Capability, Door, Policy, PolicyError, Privilege};
pub use call_watch::{CallObserver, CallStart};
pub use config::{Config, Limits};
pub use error_code::ErrorCode;
pub use prompt::{GetFn, PromptArg, PromptCall, PromptDef, PromptReply};
pub use registry::{RegistryError, Reserved, ToolRegistry};
pub use reply::{
    BUSY, HEADER_MISMATCH, MISSING_CAPABILITY, RESOURCE_NOT_FOUND_LEGACY, SESSION_NOT_FOUND,
    UNSUPPORTED_VERSION,
};
pub use resource::{
    OpenFn, ReadFn, ResourceContents, ResourceDef, StreamDef, TemplateDef, TemplateReadFn,
    TemplateStreamDef,
};
pub use server::{Entropy, McpServer};
pub use subscriptions::WatchDef;
pub use tasks::{TaskSupport, TaskTool};
pub use tool::{
    Annotations, Content, ContentSource, InputRequired, LogLevel, SourcePoll, StartFn, Started,
    Step, StepIo, StreamKind, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun, append_zeroed,
};
pub use version::{LEGACY_VERSIONS, MODERN_VERSION, SERVER_NAME, TASKS_EXTENSION};
