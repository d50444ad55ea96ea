//! The gateway's MCP server (rmcp, both protocol eras): `lab.list`, and every tool the lab's
//! machines offer, listed once with a required `machine` argument and forwarded to that
//! machine after its policy and the agent's role allow it (docs/gateway.md says why an
//! argument and not `<machine>.<tool>` names); and `lab://events`, the machines' events
//! relayed, subscribable in both eras.

use crate::audit::Audit;
use crate::events::{self, LabEvents};
use crate::lab::{self, Lab, MachineSpec};
use crate::machine::{CallError, Machine};
use crate::privilege;
use crate::{redact, rigs};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock as Content, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, ServerNotification,
    SubscribeRequestParams, SubscriptionFilter, Tool, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler, model::CallToolResponse};
use rpc::mcp::authority::Privilege;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

pub const LAB_LIST: &str = "lab.list";
/// Most refused registrations remembered (so each is logged once).
const REPORTED_MAX: usize = 256;
/// Between two reads of every machine's events.
const RELAY_EVERY: Duration = Duration::from_secs(2);
/// Legacy sessions subscribed to `lab://events` at most; a further subscribe is refused.
const SUBSCRIBERS_MAX: usize = 64;
/// The capability a machine's events need (its `irix7://events`).
const EVENTS_CAPABILITY: &str = "events.read";

/// Everything the handler needs; one per gateway, shared by every request.
pub struct Gateway {
    machines: RwLock<Vec<Arc<Machine>>>,
    /// Machines from the lab file (the registered rigs are added to these at each rescan).
    configured: Vec<MachineSpec>,
    rigs: Option<PathBuf>,
    /// What the agent may do on any machine: tools needing more are neither listed nor
    /// forwarded, and every request tells the machine this ceiling.
    role: Privilege,
    /// Registrations refused so far, each logged once (a rescan runs at every `lab.list`).
    reported: Mutex<BTreeSet<String>>,
    audit: Audit,
    probe_timeout: Duration,
    call_timeout: Duration,
    /// The machines' events, relayed (`lab://events`).
    events: LabEvents,
    /// The legacy sessions subscribed to `lab://events`, by session id.
    subscribers: Mutex<Vec<(String, Peer<RoleServer>)>>,
}

impl Gateway {
    pub fn new(lab: &Lab) -> Arc<Gateway> {
        let g = Arc::new(Gateway {
            machines: RwLock::new(Vec::new()),
            configured: lab.machines.clone(),
            rigs: lab.rigs.clone(),
            role: lab.agent_role,
            reported: Mutex::new(BTreeSet::new()),
            audit: Audit::new(&lab.audit_log),
            probe_timeout: lab.probe_timeout,
            call_timeout: lab.call_timeout,
            events: LabEvents::default(),
            subscribers: Mutex::new(Vec::new()),
        });
        g.rescan();
        g
    }

    fn machines(&self) -> Vec<Arc<Machine>> {
        self.machines
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every machine's tokens, current and connected with: what must never reach the agent.
    fn tokens(machines: &[Arc<Machine>]) -> Vec<String> {
        machines.iter().flat_map(|m| m.tokens_to_redact()).collect()
    }

    /// The lab file's machines plus the rigs registered now; machines already known keep
    /// their connection and probe, rigs that went away go. A registration naming a configured
    /// machine's address (however spelt) is refused: it would escape that machine's policy.
    pub fn rescan(self: &Arc<Self>) {
        let mut specs = self.configured.clone();
        if let Some(dir) = &self.rigs {
            let found = rigs::registered(dir);
            let mut refused = found.refused;
            for r in found.rigs {
                if let Some(s) = specs.iter().find(|s| lab::same_machine(&s.url, &r.url)) {
                    // A rig the lab file names as it registers (`cargo xtask lab`) is no news.
                    if url::Url::parse(&s.url).map(|u| u.to_string()).ok() != Some(r.url.clone()) {
                        refused.push(format!(
                            "{}: {} is machine `{}` of the lab file",
                            r.name, r.url, s.name
                        ));
                    }
                } else if specs.len() < lab::MACHINES_MAX && !specs.iter().any(|s| s.name == r.name)
                {
                    specs.push(r);
                }
            }
            self.report(refused);
        }
        let mut cur = self.machines.write().unwrap_or_else(|p| p.into_inner());
        let weak = Arc::downgrade(self);
        let tokens: Arc<dyn Fn() -> Vec<String> + Send + Sync> = Arc::new(move || {
            weak.upgrade()
                .map(|g| Gateway::tokens(&g.machines()))
                .unwrap_or_default()
        });
        let next: Vec<Arc<Machine>> = specs
            .into_iter()
            .map(|s| {
                cur.iter()
                    .find(|m| m.spec.name == s.name && m.spec.url == s.url)
                    .cloned()
                    .unwrap_or_else(|| {
                        Arc::new(Machine::new(
                            s,
                            self.role,
                            tokens.clone(),
                            self.probe_timeout,
                            self.call_timeout,
                        ))
                    })
            })
            .collect();
        *cur = next;
    }

    /// Logs each refused registration the first time it is seen (bounded: a directory
    /// rewritten in a loop cannot grow the set past `REPORTED_MAX`).
    fn report(&self, refused: Vec<String>) {
        let mut seen = self.reported.lock().unwrap_or_else(|p| p.into_inner());
        for why in refused {
            if seen.len() >= REPORTED_MAX {
                seen.clear();
            }
            if seen.insert(why.clone()) {
                eprintln!("irix7-gateway: rig registration refused: {why}");
            }
        }
    }

    /// Probes every machine at once; each is bounded by the probe timeout, so one dead
    /// machine costs the listing that timeout and nothing more.
    pub async fn probe_all(self: &Arc<Self>) -> Vec<Value> {
        self.rescan();
        let machines = self.machines();
        let t = self.probe_timeout;
        futures::future::join_all(machines.iter().map(|m| m.refresh(t))).await;
        machines.iter().map(|m| m.row()).collect()
    }

    /// Relays the machines' events from now on: reads every machine's `irix7://events`
    /// every [`RELAY_EVERY`], each read bounded by the probe timeout.
    pub fn start_relay(self: &Arc<Self>) {
        let g = self.clone();
        tokio::spawn(async move {
            loop {
                g.relay_once().await;
                tokio::time::sleep(RELAY_EVERY).await;
            }
        });
    }

    /// One round of the relay: every machine whose lab policy allows its events, read in
    /// parallel; new events go into `lab://events` and wake its subscribers.
    pub async fn relay_once(self: &Arc<Self>) {
        self.rescan();
        let machines: Vec<Arc<Machine>> = self
            .machines()
            .into_iter()
            .filter(|m| m.spec.policy.check(EVENTS_CAPABILITY).is_ok())
            .collect();
        let t = self.probe_timeout;
        let reads = futures::future::join_all(machines.iter().map(|m| m.read_events(t))).await;
        let mut added = 0;
        for (m, r) in machines.iter().zip(reads) {
            match r {
                Ok(Some(v)) => {
                    // The module writes the details itself; redacted all the same.
                    let mut v = v;
                    redact::redact_value(&mut v, &m.tokens_to_redact());
                    added += self.events.ingest(&m.spec.name, &v);
                }
                // The machine refuses its events to the gateway's token: nothing to relay.
                Ok(None) => {}
                Err(e) => self.events.unreachable(&m.spec.name, &e),
            }
        }
        if added > 0 {
            self.notify_subscribers().await;
        }
    }

    /// Tells each legacy subscriber that `lab://events` changed; drops those gone.
    async fn notify_subscribers(&self) {
        let peers = self
            .subscribers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut gone = Vec::new();
        for (sid, p) in &peers {
            let n = ResourceUpdatedNotificationParam::new(events::URI);
            if p.notify_resource_updated(n).await.is_err() {
                gone.push(sid.clone());
            }
        }
        if !gone.is_empty() {
            let mut subs = self.subscribers.lock().unwrap_or_else(|p| p.into_inner());
            subs.retain(|(sid, _)| !gone.contains(sid));
        }
    }

    fn events_resource() -> Resource {
        Resource::new(events::URI, "events")
            .with_title("Lab events")
            .with_description(
                "Every machine's events (its irix7://events: boot with its cause, reset and \
                 shutdown requested, refused deploy, watchdog near-miss, address), relayed as \
                 the gateway reads them every 2 s, and `unreachable` when a machine stops \
                 answering. JSON: `events` oldest first ({seq, at_ms, machine, kind, detail, \
                 machine_seq, machine_at_ms}), `total`, `dropped` from the ring of 256. \
                 Subscribable in both eras.",
            )
            .with_mime_type("application/json")
    }

    fn machine(&self, name: &str) -> Option<Arc<Machine>> {
        self.machines().into_iter().find(|m| m.spec.name == name)
    }

    /// The forwarded tools: each tool name any machine offers, once, with `machine` added to
    /// its input schema as an enum of the machines that offer it, whose policy allows it and
    /// where it needs no more than the agent's role.
    fn forwarded_tools(&self) -> Vec<Tool> {
        let mut by_name: BTreeMap<String, (Tool, Vec<String>)> = BTreeMap::new();
        let mut order = Vec::new();
        for m in self.machines() {
            for t in m.tools() {
                if m.spec.policy.check(&t.name).is_err() || privilege::of_tool(&t) > self.role {
                    continue;
                }
                let e = by_name.entry(t.name.to_string()).or_insert_with(|| {
                    order.push(t.name.to_string());
                    (t.clone(), Vec::new())
                });
                e.1.push(m.spec.name.clone());
            }
        }
        order
            .into_iter()
            .filter_map(|n| by_name.remove(&n))
            .map(|(mut t, names)| {
                let mut schema = (*t.input_schema).clone();
                with_machine_argument(&mut schema, &names);
                t.input_schema = Arc::new(schema);
                t
            })
            .collect()
    }

    fn lab_list_tool() -> Tool {
        let schema: Map<String, Value> = json!({"type": "object", "properties": {}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut t = Tool::new(
            LAB_LIST,
            "Every machine of the lab, probed now in parallel (status, with a timeout): name, \
             reachable, build id, image digest, uptime, last error. Call it first; every other \
             tool takes the machine's name in `machine`.",
            schema,
        );
        let mut a = ToolAnnotations::new();
        a.read_only_hint = Some(true);
        a.open_world_hint = Some(false);
        t.annotations = Some(a);
        t
    }

    async fn lab_list(self: &Arc<Self>) -> CallToolResult {
        let rows = self.probe_all().await;
        let up = rows.iter().filter(|r| r["reachable"] == true).count();
        let mut text = format!("{up} of {} machines reachable\n", rows.len());
        for r in &rows {
            text.push_str(&format!(
                "{}: {} build {} uptime {} ms{}{}\n",
                r["name"].as_str().unwrap_or(""),
                if r["reachable"] == true { "up" } else { "DOWN" },
                r["build_id"].as_str().unwrap_or("-"),
                r["uptime_ms"]
                    .as_u64()
                    .map_or("-".into(), |u| u.to_string()),
                last_boot(&r["last_boot"]),
                r["last_error"]
                    .as_str()
                    .map_or(String::new(), |e| format!(" ({e})")),
            ));
        }
        let mut res = CallToolResult::success(vec![Content::text(text)]);
        res.structured_content = Some(json!({ "machines": rows }));
        // Build ids and transport errors come from the machines and the network.
        self.redacted(res)
    }

    /// Why `tool` may not be forwarded to `machine`: the machine's policy in the lab file, or
    /// a privilege above the agent's role.
    async fn refusal(&self, machine: &Machine, tool: &str) -> Option<String> {
        let name = &machine.spec.name;
        if let Err(why) = machine.spec.policy.check(tool) {
            return Some(format!("`{tool}` on `{name}`: {why}"));
        }
        if self.role == Privilege::Administer {
            return None;
        }
        let needs = self.privilege(machine, tool).await;
        (needs > self.role).then(|| {
            format!(
                "`{tool}` on `{name}` needs the {} privilege; the lab gives this agent {}",
                needs.as_str(),
                self.role.as_str()
            )
        })
    }

    /// What `tool` needs on `machine`, from its listing; a tool the listing does not hold
    /// (never probed, or not offered) is looked up once more after a probe, else it needs
    /// administer.
    async fn privilege(&self, machine: &Machine, tool: &str) -> Privilege {
        let find = || {
            machine
                .tools()
                .iter()
                .find(|t| t.name == tool)
                .map(privilege::of_tool)
        };
        if let Some(p) = find() {
            return p;
        }
        machine.refresh(self.probe_timeout).await;
        find().unwrap_or(Privilege::Administer)
    }

    /// One forwarded call: policy, the machine, the result with every token redacted, and an
    /// audit line whatever happens.
    async fn forward(
        self: &Arc<Self>,
        mut params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let start = Instant::now();
        let tool = params.name.to_string();
        let mut args = params.arguments.take().unwrap_or_default();
        let arg_bytes = serde_json::to_string(&args).map(|s| s.len()).unwrap_or(0);
        let name = match args.remove("machine") {
            Some(Value::String(s)) => s,
            _ => {
                return tool_error(
                    "E_INVAL",
                    &format!(
                        "`{tool}` needs `machine`: the name of a lab machine (lab.list lists them)"
                    ),
                );
            }
        };
        let machine = match self.machine(&name) {
            Some(m) => m,
            None => {
                self.rescan();
                match self.machine(&name) {
                    Some(m) => m,
                    None => {
                        self.audit
                            .record(&name, &tool, "unknown machine", 0, arg_bytes);
                        return tool_error(
                            "E_NOT_FOUND",
                            &format!(
                                "no machine `{}` in the lab (lab.list lists them)",
                                clip(&name)
                            ),
                        );
                    }
                }
            }
        };
        if let Some(why) = self.refusal(&machine, &tool).await {
            self.audit.record(&name, &tool, "denied", 0, arg_bytes);
            return tool_error("E_DENIED", &why);
        }
        params.arguments = Some(args);
        let r = machine.call(params, &ctx).await.map_err(|e| match e {
            CallError::Unreachable(m) => CallError::Unreachable(crate::machine::short(&m)),
            CallError::Lost(m) => CallError::Lost(crate::machine::short(&m)),
            other => other,
        });
        let ms = start.elapsed().as_millis();
        let (outcome, result) = match r {
            Ok(res) => {
                let outcome = if res.is_error == Some(true) {
                    "tool error"
                } else {
                    "ok"
                };
                (outcome.to_string(), res)
            }
            Err(CallError::Unreachable(e)) => (
                format!("unreachable: {e}"),
                tool_error(
                    "E_UNREACHABLE",
                    &format!("machine `{name}` is unreachable: {e}"),
                ),
            ),
            Err(CallError::Lost(e)) => (
                format!("lost: {e}"),
                tool_error(
                    "E_MACHINE_LOST",
                    &format!(
                        "machine `{name}` dropped the call to `{tool}` ({e}): it may have reset or \
                         stopped; the gateway reconnects on the next call"
                    ),
                ),
            ),
            Err(CallError::Timeout(t)) => (
                "timeout".into(),
                tool_error(
                    "E_TIMEOUT",
                    &format!(
                        "machine `{name}` sent neither an answer nor progress for `{tool}` within {} s",
                        t.as_secs()
                    ),
                ),
            ),
            Err(CallError::Cancelled) => (
                "cancelled".into(),
                tool_error("E_CANCELLED", "cancelled by the client"),
            ),
            Err(CallError::Rpc(e)) => (
                format!("rpc error {}", e.code.0),
                tool_error(
                    "E_RPC",
                    &format!("machine `{name}` refused `{tool}`: {}", e.message),
                ),
            ),
        };
        self.audit.record(&name, &tool, &outcome, ms, arg_bytes);
        self.redacted(result)
    }

    fn redacted(&self, res: CallToolResult) -> CallToolResult {
        let tokens = Gateway::tokens(&self.machines());
        let Ok(mut v) = serde_json::to_value(&res) else {
            return res;
        };
        redact::redact_value(&mut v, &tokens);
        serde_json::from_value(v).unwrap_or(res)
    }
}

/// A tool result that is an error for the agent to read (`E_<CODE>: message`).
/// `, last boot: watchdog, 3 min ago` from a row's `last_boot` (`unknown` when the machine
/// does not say why), or nothing when the machine was not reached.
fn last_boot(b: &Value) -> String {
    let Some(age) = b["age_ms"].as_u64() else {
        return String::new();
    };
    let cause = b["cause"].as_str().unwrap_or("unknown");
    format!(", last boot: {cause}, {} ago", ago(age))
}

/// A duration as a person says it: `40 s`, `3 min`, `5 h`, `2 d`.
fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

/// The legacy session a request came in (its `Mcp-Session-Id`).
fn session_id(ctx: &RequestContext<RoleServer>) -> String {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

fn tool_error(code: &str, message: &str) -> CallToolResult {
    CallToolResult::error(vec![Content::text(format!("{code}: {message}"))])
}

/// A name an agent sent, cut to a length worth echoing back.
fn clip(s: &str) -> String {
    s.chars().take(lab::NAME_MAX + 8).collect()
}

/// Adds the required `machine` argument (an enum of `names`) to a tool's input schema.
fn with_machine_argument(schema: &mut Map<String, Value>, names: &[String]) {
    let props = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = props {
        p.insert(
            "machine".into(),
            json!({
                "type": "string",
                "enum": names,
                "description": "The lab machine to run this on (lab.list lists them)",
            }),
        );
    }
    let req = schema
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(r) = req
        && !r.iter().any(|x| x == "machine")
    {
        r.push(json!("machine"));
    }
    schema.insert("type".into(), json!("object"));
}

/// The rmcp handler: a cheap handle on the shared gateway.
#[derive(Clone)]
pub struct Handler(pub Arc<Gateway>);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        ServerConfig::new(caps)
            .with_server_info(Implementation::new(
                "irix7-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "A lab of irix7-mcp machines (SGI Indys and rigs). Call lab.list to see them; \
                 every other tool runs on the machine named in its `machine` argument. \
                 lab://events relays the machines' events (boots and their causes, resets); \
                 subscribe to it to hear them.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Machines never probed yet offer no tools: probe them once (bounded by the timeout).
        if self.0.machines().iter().any(|m| m.probe().at_ms == 0) {
            self.0.probe_all().await;
        }
        let mut tools = vec![Gateway::lab_list_tool()];
        tools.extend(self.0.forwarded_tools());
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Gateway::events_resource(),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != events::URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", clip(&request.uri)),
                None,
            ));
        }
        let text = self.0.events.json().to_string();
        let mut c = ResourceContents::text(text, events::URI);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut c {
            *mime_type = Some("application/json".into());
        }
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![c],
        )))
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if request.uri != events::URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", clip(&request.uri)),
                None,
            ));
        }
        let sid = session_id(&context);
        let mut subs = self.0.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        subs.retain(|(s, p)| !p.is_transport_closed() && *s != sid);
        if subs.len() >= SUBSCRIBERS_MAX {
            return Err(ErrorData::internal_error(
                format!("{SUBSCRIBERS_MAX} sessions already subscribe"),
                None,
            ));
        }
        subs.push((sid, context.peer));
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let sid = session_id(&context);
        let mut subs = self.0.subscribers.lock().unwrap_or_else(|p| p.into_inner());
        subs.retain(|(s, _)| *s != sid);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut f = SubscriptionFilter::new();
        f.resource_subscriptions = requested
            .resource_subscriptions
            .as_ref()
            .map(|uris| uris.iter().filter(|u| *u == events::URI).cloned().collect());
        Some(f)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let wants = context
            .accepted()
            .resource_subscriptions
            .as_ref()
            .is_some_and(|u| !u.is_empty());
        let mut rx = self.0.events.watch();
        rx.mark_unchanged();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                changed = rx.changed(), if wants => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    let n = ServerNotification::ResourceUpdatedNotification(
                        rmcp::model::Notification::new(ResourceUpdatedNotificationParam::new(
                            events::URI,
                        )),
                    );
                    if context.sink().send(n).await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let res = if request.name == LAB_LIST {
            self.0.lab_list().await
        } else {
            self.0.forward(request, context).await
        };
        Ok(CallToolResponse::Complete(res))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::MetaObject;
    use std::path::Path;

    fn tool(name: &str, privilege: Option<&str>) -> Tool {
        let mut t = Tool::new(name.to_string(), "t", Map::new());
        t.meta = privilege.map(|p| {
            let mut m = Map::new();
            m.insert(rpc::mcp::authority::PRIVILEGE_META.into(), json!(p));
            MetaObject(m)
        });
        t
    }

    /// `lab.list` shows what machines and the network said (build ids, transport errors that
    /// quote the URL): a token in any of it is redacted like in a forwarded result.
    #[tokio::test]
    async fn lab_list_is_redacted() {
        const T: &str = "0123456789abcdef0123456789abcdef";
        let dir = std::env::temp_dir().join(format!("irix7-gw-list-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("m.token"), T).unwrap();
        let lab = Lab::parse(
            &format!(
                "audit_log = \"audit.log\"\nprobe_timeout_s = 1\n\
                 [machines.m]\nurl = \"http://127.0.0.1:1/{T}\"\ntoken_file = \"m.token\"\n"
            ),
            &dir,
        )
        .unwrap();
        let g = Gateway::new(&lab);
        let res = serde_json::to_string(&g.lab_list().await).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!res.contains(T), "{res}");
        assert!(res.contains(redact::MARK), "{res}");
    }

    /// An agent of role operate, on a machine whose lab entry denies `fs.remove`: tools above
    /// operate, or that do not say what they need, are neither listed nor forwarded.
    #[tokio::test]
    async fn the_agent_role_and_the_policy_decide_what_is_listed_and_forwarded() {
        let lab = Lab::parse(
            "agent_role = \"operate\"\naudit_log = \"/dev/null\"\n\
             [machines.m]\nurl = \"http://127.0.0.1:1/mcp\"\ndeny = [\"fs.remove\"]\n",
            Path::new("."),
        )
        .unwrap();
        let g = Gateway::new(&lab);
        let m = g.machine("m").unwrap();
        m.set_tools(vec![
            tool("status", Some("observe")),
            tool("fs.write", Some("operate")),
            tool("fs.remove", Some("operate")),
            tool("system.reset", Some("administer")),
            tool("mystery", None),
            tool("odd", Some("root")),
        ]);
        let listed: Vec<String> = g
            .forwarded_tools()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(listed, ["status", "fs.write"]);
        assert_eq!(g.refusal(&m, "status").await, None);
        assert_eq!(g.refusal(&m, "fs.write").await, None);
        let why = |t: &'static str| {
            let g = g.clone();
            let m = m.clone();
            async move { g.refusal(&m, t).await.unwrap_or_default() }
        };
        assert!(why("fs.remove").await.contains("deny `fs.remove`"));
        for t in ["system.reset", "mystery", "odd", "not-listed"] {
            let w = why(t).await;
            assert!(
                w.contains("needs the administer privilege; the lab gives this agent operate"),
                "{t}: {w}"
            );
        }
    }

    #[test]
    fn the_last_boot_is_said_with_its_cause_and_age_and_softly_without() {
        let b = json!({"cause": "watchdog", "age_ms": 185_000});
        assert_eq!(last_boot(&b), ", last boot: watchdog, 3 min ago");
        let b = json!({"cause": null, "age_ms": 4_000});
        assert_eq!(last_boot(&b), ", last boot: unknown, 4 s ago");
        assert_eq!(last_boot(&Value::Null), "");
        assert_eq!(ago(7_200_000), "2 h");
        assert_eq!(ago(3 * 86_400_000), "3 d");
    }

    #[test]
    fn machine_argument_is_required_and_enumerated() {
        let mut s: Map<String, Value> = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        })
        .as_object()
        .cloned()
        .unwrap();
        with_machine_argument(&mut s, &["rig1".into(), "bench".into()]);
        assert_eq!(s["properties"]["machine"]["enum"], json!(["rig1", "bench"]));
        assert_eq!(s["required"], json!(["text", "machine"]));
        let mut empty = Map::new();
        with_machine_argument(&mut empty, &["a".into()]);
        assert_eq!(empty["required"], json!(["machine"]));
        assert_eq!(empty["type"], "object");
    }
}
