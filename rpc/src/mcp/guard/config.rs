//! What the module tells the server when it builds it.

use crate::mcp::guard::audit::AuditSink;
use crate::mcp::guard::authority::{Policy, Table, Token};
use crate::mcp::guard::call_watch::CallObserver;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use irix7_kmem::budget::Pool;

/// Limits on what clients can make the server hold or do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Legacy sessions held at once, half of them at most by one owner (token); past either,
    /// an idle session is evicted (`eras::session` says which), and if none may go
    /// `initialize` gets 503.
    pub max_sessions: usize,
    /// A legacy session unused this long is gone (404 on its next request).
    pub session_idle_ms: u64,
    /// Requests per rolling second per owner (a token; an address where no token is asked
    /// for), shared fairly between its connections and sessions. Each item of a legacy batch
    /// counts as one.
    pub requests_per_second: usize,
    /// Failed token checks per rolling second per client address; past it the client gets
    /// 429 without its token being looked at.
    pub auth_failures_per_second: usize,
    /// Items in one legacy batch, and bytes of its answer.
    pub batch_items: usize,
    pub batch_answer_bytes: usize,
    /// Tool calls running at once per owner, shared fairly between its clients.
    pub concurrent_calls: usize,
    /// Owners tracked for rate limits (and addresses for failed logins); the least recently
    /// seen is forgotten when full.
    pub max_clients: usize,
    /// Items per page of `tools/list`, `resources/list`, `resources/templates/list`,
    /// `prompts/list`.
    pub page_size: usize,
    /// `ttlMs` on cacheable modern results.
    pub cache_ttl_ms: u64,
    /// Raw bytes read from a streamed content source per poll.
    pub stream_chunk: usize,
    /// `retry:` advertised on legacy SSE streams.
    pub sse_retry_ms: u64,
    /// Tasks (the tasks extension) running or waiting for input at once, in all (with each
    /// privilege above observe keeping a quarter from those below) and per owner; past either
    /// a call that would become one gets `E_BUSY`.
    pub max_tasks: usize,
    pub tasks_per_owner: usize,
    /// Task records kept (ended ones too); past it the oldest ended record goes first.
    pub task_records: usize,
    /// A task and its result are dropped this long after it was created (`ttlMs`).
    pub task_ttl_ms: u64,
    /// `pollIntervalMs` suggested to clients.
    pub task_poll_ms: u64,
    /// Bytes of one task's result (its JSON); a bigger one fails the task with `E_TOO_LARGE`.
    pub task_result_bytes: usize,
    /// Legacy `GET /mcp` event streams open at once, in all (one per session).
    pub event_streams: usize,
    /// An event stream (`GET /mcp`, `subscriptions/listen`) ends this long after it opened:
    /// a legacy client reconnects and resumes with `Last-Event-ID`, a listen client listens
    /// again. A client that stopped reading while its TCP stack still takes the few bytes a
    /// stream sends holds its place no longer (the streams' `timeout tunnel`).
    pub event_stream_lifetime_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sessions: 16,
            session_idle_ms: 30 * 60 * 1000,
            requests_per_second: 20,
            auth_failures_per_second: 20,
            batch_items: 16,
            batch_answer_bytes: 128 * 1024,
            concurrent_calls: 4,
            max_clients: 32,
            page_size: 100,
            cache_ttl_ms: 0,
            stream_chunk: 4096,
            sse_retry_ms: 3000,
            max_tasks: 8,
            tasks_per_owner: 4,
            task_records: 32,
            task_ttl_ms: 10 * 60 * 1000,
            task_poll_ms: 500,
            task_result_bytes: 64 * 1024,
            event_streams: 4,
            event_stream_lifetime_ms: 15 * 60 * 1000,
        }
    }
}

/// The server's configuration.
#[derive(Clone)]
pub struct Config {
    /// When set, every request needs `Authorization: Bearer <token>`: this one, the
    /// administrator's, or one of [`Self::tokens`]. Never logged or echoed.
    pub token: Option<String>,
    /// The named lesser tokens (`mcp.tokens`), each with its role. Without [`Self::token`]
    /// (`mcp.token=none`) a request without a token is the administrator, and one with
    /// these tokens takes their role.
    pub tokens: Vec<Token>,
    /// The capability table every door is judged by (see [`crate::mcp::guard::authority`]).
    pub capabilities: Table,
    /// The machine's own IPv4 address: `Origin: http://<it>[:port]` is allowed.
    pub own_ip: Option<[u8; 4]>,
    /// Further allowed origins, exact (`https://agent.example:8443`), compared ignoring case.
    pub extra_origins: Vec<String>,
    /// Names the machine is reached by (`mcp.hosts`): a request without an `Origin` must name
    /// one of them, a loopback name or the own address in `Host` (the DNS-rebinding guard).
    pub hosts: Vec<String>,
    /// `serverInfo.version` (the module sends its version and build, `docs/mcp.md`).
    pub version: String,
    /// `instructions` sent to clients.
    pub instructions: Option<String>,
    pub limits: Limits,
    /// What parsed request bodies are charged to (see [`irix7_kmem::budget`]); over it a request
    /// gets 503 with `Retry-After`.
    pub parse_budget: Rc<Pool>,
    /// What task results are charged to (see [`irix7_kmem::budget`]); a result it cannot take
    /// fails its task with `E_TOO_LARGE`.
    pub task_budget: Rc<Pool>,
    /// Which tools are offered (`mcp.policy`); the rest are not listed and answer `E_PERM`.
    pub policy: Policy,
    /// `mcp.confirm`: calls of destructive tools ask the user's consent first (see
    /// [`crate::mcp::tools::confirm`]).
    pub confirm: bool,
    /// Gets a record of every call of a tool not annotated read-only and of every failed
    /// authentication (see [`crate::mcp::guard::audit`]).
    pub audit: Option<AuditSink>,
    /// Told when each tool call starts and ends (the module's flight recorder).
    pub calls: Option<Rc<dyn CallObserver>>,
}

impl Config {
    /// A configuration with default limits, no token and only loopback origins.
    pub fn new(version: impl Into<String>, instructions: Option<String>) -> Self {
        Config {
            token: None,
            tokens: Vec::new(),
            capabilities: Table::default(),
            own_ip: None,
            extra_origins: Vec::new(),
            hosts: Vec::new(),
            version: version.into(),
            instructions,
            limits: Limits::default(),
            parse_budget: Pool::new("parse", usize::MAX),
            task_budget: Pool::new("tasks", 256 * 1024),
            policy: Policy::default(),
            confirm: false,
            audit: None,
            calls: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("tokens", &self.tokens)
            .field("own_ip", &self.own_ip)
            .field("extra_origins", &self.extra_origins)
            .field("hosts", &self.hosts)
            .field("version", &self.version)
            .field("limits", &self.limits)
            .field("parse_budget", &self.parse_budget.limit())
            .field("policy", &self.policy.text())
            .field("confirm", &self.confirm)
            .field("audit", &self.audit.as_ref().map(|_| "<sink>"))
            .finish()
    }
}
