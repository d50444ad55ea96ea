//! The protocol versions this server speaks and the names it answers with: what both eras'
//! handlers and the result writers read, kept apart so none of them needs the server.

/// The stateless protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Session-based versions, newest first. `initialize` never answers anything else.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// `serverInfo.name`.
pub const SERVER_NAME: &str = "irix7-mcp";

pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The tasks extension's key in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
