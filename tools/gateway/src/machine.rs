//! One machine of the lab as the gateway sees it: its MCP client connection (rmcp,
//! 2026-07-28 stateless, reconnected after a failure or when its token file changes), what the
//! last probe found, the tools it offers, and the forwarding of one call with progress and
//! cancellation passed through.

use crate::lab::MachineSpec;
use crate::neighbour::{self, Mac};
use crate::policy;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientConfig, ClientRequest, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ReadResourceRequestParams, ResourceContents, ServerResult, Tool,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient, RoleServer,
    RunningService, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use rpc::mcp::authority::Privilege;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a failed connect answers for the machine before the next attempt.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Largest token file read: tokens are tens of characters.
const TOKEN_FILE_MAX: u64 = 4096;
/// Most tools cached per machine (the module has 26).
const TOOLS_MAX: usize = 256;
/// Characters of a boot cause kept (the module's are one word).
const CAUSE_MAX: usize = 64;
/// Largest JSON response accepted from a machine: a 4 MiB `fs.read` in base64 plus framing.
const RESPONSE_MAX: usize = 8 << 20;

/// A forwarded call in flight, by the progress token the gateway sent the machine: where its
/// progress goes (the agent's peer and the agent's own token, if it asked) and when the
/// machine last said something about it.
struct Route {
    agent: Option<(Peer<RoleServer>, ProgressToken)>,
    last: Instant,
}

type Routes = Arc<Mutex<HashMap<ProgressToken, Route>>>;

/// A call the machine has been silent about this long gets the machine's `status` asked:
/// a machine that reset does not close the connections it had (its TCP state is simply gone).
const WATCH_EVERY: Duration = Duration::from_secs(2);
/// Watchdog probes in a row that may fail before the call counts as lost.
const WATCH_FAILURES: u32 = 2;

/// The gateway as an MCP client of one machine: relays progress notices to the agent whose
/// call they belong to.
#[derive(Clone)]
struct Upstream {
    routes: Routes,
    tokens: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
}

impl ClientHandler for Upstream {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route = {
            let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
            match routes.get_mut(&params.progress_token) {
                Some(r) => {
                    r.last = Instant::now();
                    r.agent.clone()
                }
                None => None,
            }
        };
        if let Some((peer, token)) = route {
            let mut p = params;
            p.progress_token = token;
            if let Some(m) = p.message.as_mut()
                && let Some(r) = crate::redact::redact_str(m, &(self.tokens)())
            {
                *m = r;
            }
            let _ = peer.notify_progress(p).await;
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut c = ClientConfig::default();
        c.client_info.name = "irix7-gateway".into();
        c.client_info.version = env!("CARGO_PKG_VERSION").into();
        c
    }
}

/// What the last probe of a machine found.
#[derive(Clone, Debug, Default)]
pub struct Probe {
    pub reachable: bool,
    pub build_id: Option<String>,
    pub sha256: Option<String>,
    pub uptime_ms: Option<u64>,
    /// Why the machine last booted (`status`'s `boot.cause`; absent from a module that does
    /// not say), at most [`CAUSE_MAX`] characters.
    pub boot_cause: Option<String>,
    /// How long ago it booted (`boot.uptime_ms`, else the uptime).
    pub boot_age_ms: Option<u64>,
    pub last_error: Option<String>,
    /// Unix milliseconds of the probe.
    pub at_ms: u128,
    /// How long the probe took.
    pub took_ms: u128,
}

struct Conn {
    service: RunningService<RoleClient, Upstream>,
    token: Option<String>,
}

pub struct Machine {
    pub spec: MachineSpec,
    conn: tokio::sync::Mutex<Option<Arc<Conn>>>,
    /// The last failed connect: calls within `RETRY_AFTER` of it fail at once with its error
    /// instead of queueing behind one another for a connect timeout each.
    failed: Mutex<Option<(Instant, String)>>,
    probe: Mutex<Probe>,
    tools: Mutex<Vec<Tool>>,
    /// The highest uptime any `status` showed since the machine last booted: one lower means
    /// it rebooted in between.
    uptime: Mutex<Option<u64>>,
    routes: Routes,
    tokens: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
    /// The tokens connections were made with, newest last (at most `USED_TOKENS_MAX`): a call
    /// on a connection runs with its token whatever the file says by the time it answers.
    used_tokens: Mutex<Vec<String>>,
    /// The `Irix7-Policy` value every request to the machine carries: the agent's role and
    /// this machine's allow/deny, which the machine enforces on every door.
    narrowing: String,
    connect_timeout: Duration,
    call_timeout: Duration,
}

/// How many tokens a machine connected with are still redacted: those of the connections
/// calls may still be running on.
const USED_TOKENS_MAX: usize = 4;

/// Why a forwarded call has no result from the machine.
#[derive(Debug)]
pub enum CallError {
    /// No connection could be made (the message says why).
    Unreachable(String),
    /// The connection went away during the call: the machine reset, stopped or was unplugged.
    Lost(String),
    /// No answer nor progress within the call timeout.
    Timeout(Duration),
    /// The agent cancelled the call.
    Cancelled,
    /// The machine answered with a JSON-RPC error.
    Rpc(rmcp::ErrorData),
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Longest error text kept or shown: rmcp's transport errors name its generic types at length.
const ERROR_MAX: usize = 240;

/// `e` cut to `ERROR_MAX` characters.
pub fn short(e: &str) -> String {
    if e.chars().count() <= ERROR_MAX {
        return e.to_string();
    }
    let mut s: String = e.chars().take(ERROR_MAX).collect();
    s.push('…');
    s
}

/// The token in `path`, trimmed; `Err` when it cannot be read or is empty (a rig that has not
/// booted yet, or a reset machine whose new token is not written yet).
pub fn read_token(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(TOKEN_FILE_MAX).read_to_string(&mut text))
        .map_err(|e| format!("token file {}: {e}", path.display()))?;
    let t = text.trim();
    if t.is_empty() {
        return Err(format!("token file {} is empty", path.display()));
    }
    Ok(t.to_string())
}

impl Machine {
    pub fn new(
        spec: MachineSpec,
        role: Privilege,
        tokens: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
        connect_timeout: Duration,
        call_timeout: Duration,
    ) -> Machine {
        Machine {
            narrowing: spec.policy.narrowing(role),
            spec,
            conn: tokio::sync::Mutex::new(None),
            failed: Mutex::new(None),
            probe: Mutex::new(Probe::default()),
            tools: Mutex::new(Vec::new()),
            uptime: Mutex::new(None),
            routes: Arc::default(),
            tokens,
            used_tokens: Mutex::default(),
            connect_timeout,
            call_timeout,
        }
    }

    /// The machine's current token, if it has a token file that can be read.
    pub fn current_token(&self) -> Option<String> {
        self.spec
            .token_file
            .as_deref()
            .and_then(|p| read_token(p).ok())
    }

    /// Every token of this machine an answer must not show: the file's current one and those
    /// the gateway connected with (a token file may change while a call runs).
    pub fn tokens_to_redact(&self) -> Vec<String> {
        let mut all = self
            .used_tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(t) = self.current_token()
            && !all.contains(&t)
        {
            all.push(t);
        }
        all
    }

    /// Remembers a token a connection is made with.
    fn used(&self, token: &str) {
        let mut used = self.used_tokens.lock().unwrap_or_else(|p| p.into_inner());
        used.retain(|t| t != token);
        used.push(token.to_string());
        let extra = used.len().saturating_sub(USED_TOKENS_MAX);
        used.drain(..extra);
    }

    pub fn probe(&self) -> Probe {
        self.probe.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn tools(&self) -> Vec<Tool> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stands in for a probe's `tools/list`.
    #[cfg(test)]
    pub fn set_tools(&self, tools: Vec<Tool>) {
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = tools;
    }

    fn set_error(&self, e: &str) {
        let mut p = self.probe.lock().unwrap_or_else(|p| p.into_inner());
        p.reachable = false;
        p.last_error = Some(short(e));
        p.at_ms = now_ms();
    }

    /// The live connection, made now if there is none or the token file changed since.
    async fn connection(&self) -> Result<Arc<Conn>, String> {
        let token = match &self.spec.token_file {
            Some(p) => Some(read_token(p)?),
            None => None,
        };
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref()
            && c.token == token
            && !c.service.is_transport_closed()
        {
            return Ok(c.clone());
        }
        *slot = None;
        if let Some((at, e)) = self
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            && at.elapsed() < RETRY_AFTER
        {
            return Err(e.clone());
        }
        let r = self.connect(token).await;
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = match &r {
            Ok(_) => None,
            Err(e) => Some((Instant::now(), e.clone())),
        };
        let conn = Arc::new(r?);
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// A new client connection (`server/discover` first), bounded by the connect timeout.
    async fn connect(&self, token: Option<String>) -> Result<Conn, String> {
        if let Some(pinned) = self.spec.mac {
            self.check_mac(pinned).await?;
        }
        let mut cfg = StreamableHttpClientTransportConfig::with_uri(self.spec.url.as_str())
            .max_json_response_size(RESPONSE_MAX);
        cfg.allow_stateless = true;
        if let Some(t) = &token {
            self.used(t);
            cfg = cfg.auth_header(t.clone());
        }
        let narrowing = HeaderValue::from_str(&self.narrowing)
            .map_err(|e| format!("{}: {e}", policy::HEADER))?;
        cfg = cfg.custom_headers(HashMap::from([(
            HeaderName::from_bytes(policy::HEADER.as_bytes())
                .map_err(|e| format!("{}: {e}", policy::HEADER))?,
            narrowing,
        )]));
        let upstream = Upstream {
            routes: self.routes.clone(),
            tokens: self.tokens.clone(),
        };
        let start = upstream.serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(cfg),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        );
        let service = match tokio::time::timeout(self.connect_timeout, start).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("connect {}: {e}", self.spec.url)),
            Err(_) => {
                return Err(format!(
                    "connect {}: no answer within {} ms",
                    self.spec.url,
                    self.connect_timeout.as_millis()
                ));
            }
        };
        Ok(Conn { service, token })
    }

    /// For a machine pinned to a MAC (adopted from the LAN, `adopt.rs`): one TCP connection to
    /// its address, after which the host's neighbour table must hold the pinned MAC for it,
    /// before any request (and so its token) is sent. Another MAC, or none, refuses.
    async fn check_mac(&self, pinned: Mac) -> Result<(), String> {
        let url = &self.spec.url;
        let target = url::Url::parse(url).ok().and_then(|u| {
            let ip = match u.host()? {
                url::Host::Ipv4(ip) => ip,
                _ => return None,
            };
            Some((ip, u.port_or_known_default()?))
        });
        let Some((ip, port)) = target else {
            return Err(format!(
                "{url}: pinned to MAC {pinned}, but names no IPv4 address to check it at"
            ));
        };
        match tokio::time::timeout(
            self.connect_timeout,
            tokio::net::TcpStream::connect((ip, port)),
        )
        .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("connect {url}: {e}")),
            Err(_) => return Err(format!("connect {url}: no answer")),
        }
        match neighbour::known(ip) {
            Some(m) if m == pinned => Ok(()),
            Some(m) => Err(format!(
                "{ip} answers from MAC {m}, not the pinned {pinned}: its token is not sent \
                 (if its card changed, adopt it anew)"
            )),
            None => Err(format!(
                "no MAC for {ip} in the host's neighbour table to check the pinned {pinned}: \
                 its token is not sent"
            )),
        }
    }

    /// Drops the connection if it is still `conn` (a failed call's), so the next call makes a
    /// new one.
    async fn forget(&self, conn: &Arc<Conn>) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *slot = None;
        }
    }

    /// Connects if needed, calls `status` and, when the build changed or none is known,
    /// `tools/list`; records what it found. Bounded by the probe timeout.
    pub async fn refresh(&self, timeout: Duration) -> Probe {
        let start = Instant::now();
        let r = tokio::time::timeout(timeout, self.refresh_inner()).await;
        let err = match r {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => {
                // A connection that hangs (its machine reset under it) is not used again.
                *self.conn.lock().await = None;
                Some(format!("no answer within {} ms", timeout.as_millis()))
            }
        };
        let mut p = self.probe.lock().unwrap_or_else(|p| p.into_inner());
        p.at_ms = now_ms();
        p.took_ms = start.elapsed().as_millis();
        match err {
            None => {
                p.reachable = true;
                p.last_error = None;
            }
            Some(e) => {
                p.reachable = false;
                p.last_error = Some(short(&e));
            }
        }
        p.clone()
    }

    async fn refresh_inner(&self) -> Result<(), String> {
        let conn = self.connection().await?;
        let status = match conn
            .service
            .call_tool(CallToolRequestParams::new("status"))
            .await
        {
            Ok(s) => s,
            Err(e) => {
                self.forget(&conn).await;
                return Err(format!("status: {e}"));
            }
        };
        let s = status.structured_content.unwrap_or(Value::Null);
        let build_id = s["build_id"].as_str().map(str::to_string);
        let changed = {
            let mut p = self.probe.lock().unwrap_or_else(|p| p.into_inner());
            let changed = p.build_id != build_id;
            p.build_id = build_id;
            p.sha256 = s["image"]["sha256"].as_str().map(str::to_string);
            p.uptime_ms = s["uptime_ms"].as_u64();
            p.boot_cause = s["boot"]["cause"]
                .as_str()
                .map(|c| c.chars().take(CAUSE_MAX).collect());
            p.boot_age_ms = s["boot"]["uptime_ms"].as_u64().or(p.uptime_ms);
            changed
        };
        self.saw_uptime(s["uptime_ms"].as_u64());
        if changed
            || self
                .tools
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
        {
            match conn.service.list_all_tools().await {
                Ok(mut t) => {
                    t.truncate(TOOLS_MAX);
                    *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = t;
                }
                Err(e) => {
                    self.forget(&conn).await;
                    return Err(format!("tools/list: {e}"));
                }
            }
        }
        Ok(())
    }

    /// The machine's `irix7://events` (JSON), bounded by `timeout`; `None` when the machine
    /// answered but refused (a token whose role lacks `events.read`). A failure drops a
    /// connection that hangs, as a probe's does.
    pub async fn read_events(&self, timeout: Duration) -> Result<Option<Value>, String> {
        let read = async {
            let conn = self.connection().await?;
            let params = ReadResourceRequestParams::new(crate::events::MACHINE_URI);
            match conn.service.read_resource(params).await {
                Ok(r) => Ok(Some(r)),
                Err(ServiceError::McpError(_)) => Ok(None),
                Err(e) => {
                    self.forget(&conn).await;
                    Err(format!("{}: {e}", crate::events::MACHINE_URI))
                }
            }
        };
        let r = match tokio::time::timeout(timeout, read).await {
            Ok(Ok(Some(r))) => r,
            Ok(Ok(None)) => return Ok(None),
            Ok(Err(e)) => return Err(short(&e)),
            Err(_) => {
                *self.conn.lock().await = None;
                return Err(format!("no answer within {} ms", timeout.as_millis()));
            }
        };
        let text = r.contents.into_iter().find_map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => Some(text),
            _ => None,
        });
        serde_json::from_str(&text.unwrap_or_default())
            .map(Some)
            .map_err(|e| format!("events: {e}"))
    }

    /// Forwards one `tools/call` (already checked against the policy) and answers the
    /// machine's result; progress goes to the agent under its own token, and the agent's
    /// cancellation is sent on to the machine.
    pub async fn call(
        &self,
        params: CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, CallError> {
        let conn = match self.connection().await {
            Ok(c) => c,
            Err(e) => {
                self.set_error(&e);
                return Err(CallError::Unreachable(e));
            }
        };
        let options = {
            let mut o = PeerRequestOptions::no_options();
            o.timeout = Some(self.call_timeout);
            o.reset_timeout_on_progress = true;
            o
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match conn
            .service
            .send_request_with_option(request, options)
            .await
        {
            Ok(h) => h,
            Err(e) => {
                self.forget(&conn).await;
                self.set_error(&e.to_string());
                return Err(CallError::Lost(e.to_string()));
            }
        };
        let upstream_token = handle.progress_token.clone();
        let id = handle.id.clone();
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                upstream_token.clone(),
                Route {
                    agent: ctx.meta.get_progress_token().map(|t| (ctx.peer.clone(), t)),
                    last: Instant::now(),
                },
            );
        let outcome = tokio::select! {
            r = handle.await_response() => Ok(Some(r)),
            _ = ctx.ct.cancelled() => Ok(None),
            why = self.watch(&conn, &upstream_token) => Err(why),
        };
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&upstream_token);
        let outcome = match outcome {
            Ok(o) => o,
            Err(why) => {
                self.forget(&conn).await;
                self.set_error(&why);
                return Err(CallError::Lost(why));
            }
        };
        let result = match outcome {
            None => {
                let _ = conn
                    .service
                    .notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some("cancelled by the agent".into()),
                    ))
                    .await;
                return Err(CallError::Cancelled);
            }
            Some(r) => r,
        };
        match result {
            Ok(ServerResult::CallToolResult(r)) => Ok(r),
            Ok(other) => Err(CallError::Lost(format!(
                "unexpected answer to tools/call: {}",
                serde_json::to_string(&other).unwrap_or_default()
            ))),
            Err(ServiceError::McpError(e)) => Err(CallError::Rpc(e)),
            Err(ServiceError::Timeout { timeout }) => {
                // A connection that went silent this long is not trusted again.
                self.forget(&conn).await;
                Err(CallError::Timeout(timeout))
            }
            Err(e) => {
                self.forget(&conn).await;
                self.set_error(&e.to_string());
                Err(CallError::Lost(e.to_string()))
            }
        }
    }

    /// Notes an uptime `status` showed; true if it is below an earlier one (a reboot).
    fn saw_uptime(&self, uptime: Option<u64>) -> bool {
        let Some(u) = uptime else { return false };
        let mut cur = self.uptime.lock().unwrap_or_else(|p| p.into_inner());
        let rebooted = cur.is_some_and(|c| u < c);
        *cur = Some(u);
        rebooted
    }

    /// Runs beside a forwarded call and returns (ending the call) once the machine has
    /// rebooted or stopped answering: every `WATCH_EVERY` the call has had no progress, it
    /// asks the machine's `status` on the same client; an uptime below an earlier one, or
    /// `WATCH_FAILURES` failed probes in a row, mean the call is lost.
    async fn watch(&self, conn: &Conn, token: &ProgressToken) -> String {
        let mut failures = 0;
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let quiet = self
                .routes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(token)
                .is_none_or(|r| r.last.elapsed() >= WATCH_EVERY);
            if !quiet {
                continue;
            }
            let status = tokio::time::timeout(
                self.connect_timeout,
                conn.service.call_tool(CallToolRequestParams::new("status")),
            )
            .await;
            match status {
                Ok(Ok(r)) => {
                    failures = 0;
                    let s = r.structured_content.unwrap_or(Value::Null);
                    if self.saw_uptime(s["uptime_ms"].as_u64()) {
                        return "the machine rebooted during the call".into();
                    }
                }
                Ok(Err(_)) | Err(_) => {
                    failures += 1;
                    if failures >= WATCH_FAILURES {
                        return "the machine stopped answering".into();
                    }
                }
            }
        }
    }

    /// The row of `lab.list` for this machine.
    pub fn row(&self) -> Value {
        let p = self.probe();
        json!({
            "name": self.spec.name,
            "url": self.spec.url,
            "reachable": p.reachable,
            "build_id": p.build_id,
            "sha256": p.sha256,
            "uptime_ms": p.uptime_ms,
            "last_boot": p.boot_age_ms.map(|age| json!({"cause": p.boot_cause, "age_ms": age})),
            "last_error": p.last_error,
            "probed_at_ms": p.at_ms,
            "probe_ms": p.took_ms,
            "tools": self.tools.lock().unwrap_or_else(|p| p.into_inner()).len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn machine() -> Machine {
        Machine::new(
            MachineSpec {
                name: "m".into(),
                url: "http://127.0.0.1:1/mcp".into(),
                token_file: None,
                mac: None,
                policy: Policy::default(),
            },
            Privilege::Administer,
            Arc::new(Vec::new),
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn a_lower_uptime_is_a_reboot() {
        let m = machine();
        assert!(!m.saw_uptime(None));
        assert!(
            !m.saw_uptime(Some(5_000)),
            "the first reading proves nothing"
        );
        assert!(!m.saw_uptime(Some(7_000)));
        assert!(
            m.saw_uptime(Some(1_200)),
            "uptime went back: the machine rebooted"
        );
        assert!(
            !m.saw_uptime(Some(3_000)),
            "the new boot is the reference now"
        );
    }

    #[test]
    fn errors_are_cut_and_token_files_read_trimmed() {
        let long = "x".repeat(1000);
        assert_eq!(short(&long).chars().count(), ERROR_MAX + 1);
        assert_eq!(short("brief"), "brief");
        let dir = std::env::temp_dir().join(format!("irix7-gw-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("token");
        std::fs::write(&p, "  abc123\n").unwrap();
        assert_eq!(read_token(&p).unwrap(), "abc123");
        std::fs::write(&p, "\n").unwrap();
        assert!(read_token(&p).unwrap_err().contains("empty"));
        assert!(read_token(&dir.join("absent")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A machine pinned to a MAC the host cannot confirm (loopback has no neighbour entry) is
    /// connected to once, sent nothing, and refused: its token never leaves the gateway.
    #[tokio::test]
    async fn a_pinned_mac_that_does_not_answer_gets_no_token() {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let heard = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(2), sock.read_to_end(&mut got)).await;
            got
        });
        let dir = std::env::temp_dir().join(format!("irix7-gw-mac-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "secret-secret-secret\n").unwrap();
        let m = Machine::new(
            MachineSpec {
                name: "m".into(),
                url: format!("http://127.0.0.1:{port}/mcp"),
                token_file: Some(token),
                mac: Some("08:00:69:4d:41:45".parse().unwrap()),
                policy: Policy::default(),
            },
            Privilege::Administer,
            Arc::new(Vec::new),
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let e = m.connection().await.err().expect("refused");
        assert!(
            e.contains("neighbour table") && e.contains("not sent"),
            "{e}"
        );
        assert!(heard.await.unwrap().is_empty(), "nothing was sent");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The machine sees the agent's role and the lab's allow/deny on the request itself.
    #[tokio::test]
    async fn every_request_carries_the_narrowing_header() {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let head = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            String::from_utf8_lossy(&buf).to_ascii_lowercase()
        });
        let m = Machine::new(
            MachineSpec {
                name: "m".into(),
                url: format!("http://127.0.0.1:{port}/mcp"),
                token_file: None,
                mac: None,
                policy: Policy::new(vec!["fs.*".into()], vec!["fs.remove".into()]).unwrap(),
            },
            Privilege::Operate,
            Arc::new(Vec::new),
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        let p = m.refresh(Duration::from_secs(2)).await;
        assert!(!p.reachable, "nothing answered");
        let head = head.await.unwrap();
        assert!(head.starts_with("post /mcp "), "{head}");
        assert!(
            head.contains("\r\nirix7-policy: operate,fs.*,!fs.remove\r\n"),
            "{head}"
        );
    }

    #[tokio::test]
    async fn a_refused_machine_fails_fast_and_is_not_reached_again_at_once() {
        let m = machine();
        let t = Instant::now();
        let p = m.refresh(Duration::from_secs(2)).await;
        assert!(!p.reachable);
        assert!(
            p.last_error
                .as_deref()
                .unwrap_or("")
                .contains("127.0.0.1:1"),
            "{p:?}"
        );
        // Within RETRY_AFTER the same error comes back without another connect.
        let e = m.connection().await.err().unwrap();
        assert!(e.contains("127.0.0.1:1"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    /// A token file that changes under a call (a reset, or a forged console line) leaves the
    /// token the connection was made with redacted.
    #[tokio::test]
    async fn the_token_connected_with_stays_redacted_after_the_file_changes() {
        let dir = std::env::temp_dir().join(format!("gw-used-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "realrealrealreal\n").unwrap();
        let mut m = machine();
        m.spec.token_file = Some(file.clone());
        // The connect is refused (nothing listens), but it was made with the file's token.
        let _ = m.refresh(Duration::from_secs(2)).await;
        std::fs::write(&file, "fakefakefakefake\n").unwrap();
        assert_eq!(
            m.tokens_to_redact(),
            ["realrealrealreal", "fakefakefakefake"]
        );
        // Only the last few are kept.
        for n in 0..6 {
            m.used(&format!("token{n}"));
        }
        let kept = m.tokens_to_redact();
        assert_eq!(
            kept,
            ["token2", "token3", "token4", "token5", "fakefakefakefake"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
