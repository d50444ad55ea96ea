//! The rmcp reference server of `cargo xtask bench --peers` (docs/bench.md, "The peers"): the
//! module's 26 tool listings, read from `docs/tools.json`, its `echo`, and a `status` answering
//! a fixed object of the module's `status` shape and size (`tools/peers/status.json`), served the
//! way rmcp's documentation shows for a stateless streamable-HTTP server answering plain JSON
//! (axum on the multi-threaded tokio runtime, `StreamableHttpService` at `/mcp`).
//!
//! Usage: `irix7-peer-rmcp TOOLS_JSON STATUS_JSON PORT HOST`; it serves `127.0.0.1:PORT` and
//! accepts `HOST` in `Host` (the bench's requests name the machine `indy`, as the rig bench's do).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;

/// The tools as listed; only `echo` and `status` run.
#[derive(Clone)]
struct Peer {
    tools: Arc<Vec<Tool>>,
    /// What `status` answers: a structured result like the module's, without a machine to
    /// read it from.
    status: Arc<serde_json::Value>,
}

impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str());
        // The module's echo answers `{"text": …}` as structured content and as its JSON in a
        // text block, which is what rmcp's `structured` result is.
        let result = match (request.name.as_ref(), text) {
            ("echo", Some(text)) => CallToolResult::structured(serde_json::json!({ "text": text })),
            ("echo", None) => {
                CallToolResult::error(vec![ContentBlock::text("E_INVAL: `text` is required")])
            }
            ("status", _) => CallToolResult::structured(self.status.as_ref().clone()),
            (name, _) => CallToolResult::error(vec![ContentBlock::text(format!(
                "E_NOTSUP: {name} is only listed by this peer"
            ))]),
        };
        Ok(result.into())
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tools_json, status_json, port, host] = args.as_slice() else {
        return Err("usage: irix7-peer-rmcp TOOLS_JSON STATUS_JSON PORT HOST".into());
    };
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    let tools: Vec<Tool> =
        serde_json::from_str(&read(tools_json)?).map_err(|e| format!("{tools_json}: {e}"))?;
    let status: serde_json::Value =
        serde_json::from_str(&read(status_json)?).map_err(|e| format!("{status_json}: {e}"))?;
    if !status.is_object() {
        return Err(format!("{status_json}: not a JSON object"));
    }
    let port: u16 = port.parse().map_err(|e| format!("port {port}: {e}"))?;
    serve(
        Peer {
            tools: Arc::new(tools),
            status: Arc::new(status),
        },
        port,
        host.clone(),
    )
}

#[tokio::main]
async fn serve(peer: Peer, port: u16, host: String) -> Result<(), String> {
    let service: StreamableHttpService<Peer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(peer.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_allowed_hosts([host]),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("listen on 127.0.0.1:{port}: {e}"))?;
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
