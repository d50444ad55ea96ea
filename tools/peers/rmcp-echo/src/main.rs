//! The rmcp reference server of `cargo xtask bench --peers` (docs/bench.md, "The peers"): the
//! module's tool listings, read from `docs/tools.json`, its `echo`, and `status`, `fs.stat`,
//! `serial.read`, `fs.list` and `proc.list` answering fixed results of the module's shape and size
//! (`tools/peers/results.json`, one real result of each taken from the rig bench), served the
//! way rmcp's documentation shows for a stateless streamable-HTTP server answering plain JSON
//! (axum on the multi-threaded tokio runtime, `StreamableHttpService` at `/mcp`).
//!
//! Each call's arguments are deserialised into a typed struct, as rmcp's `#[tool]` handlers take
//! them (`Parameters<T>`: serde, unknown members refused as the schemas'
//! `additionalProperties: false` does), and checked against the schema's bounds, so a peer does
//! the work the module's schema check does before it answers.
//!
//! Usage: `irix7-peer-rmcp TOOLS_JSON RESULTS_JSON PORT HOST`; it serves `127.0.0.1:PORT` and
//! accepts `HOST` in `Host` (the bench's requests name the machine `indy`, as the rig bench's do).

mod arguments;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The tools as listed; `echo` and the tools of [`arguments::check`] run.
#[derive(Clone)]
struct Peer {
    tools: Arc<Vec<Tool>>,
    /// What each small call answers (tool name → structured result): results like the module's,
    /// without a machine to read them from.
    results: Arc<HashMap<String, Value>>,
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
        let name = request.name.as_ref();
        let args = request.arguments.unwrap_or_default();
        // The module answers each result as structured content and as its JSON in a text
        // block, which is what rmcp's `structured` result is.
        let result = match arguments::check(name, args) {
            Ok(arguments::Checked::Echo(text)) => {
                CallToolResult::structured(serde_json::json!({ "text": text }))
            }
            Ok(arguments::Checked::Fixed) => match self.results.get(name) {
                Some(result) => CallToolResult::structured(result.clone()),
                None => error(format!("E_NOTSUP: {name} has no result in RESULTS_JSON")),
            },
            Err(e) => error(e),
        };
        Ok(result.into())
    }
}

fn error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// `RESULTS_JSON`'s entries (`{"tool": …, "result": {…}}`, as `cargo xtask bench
/// --update-peer-fixtures` writes them) as tool name → result.
fn results(text: &str) -> Result<HashMap<String, Value>, String> {
    let entries: Vec<Map<String, Value>> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    entries
        .into_iter()
        .map(|mut e| match (e.remove("tool"), e.remove("result")) {
            (Some(Value::String(tool)), Some(result @ Value::Object(_))) => Ok((tool, result)),
            _ => Err("an entry without a tool name and an object result".into()),
        })
        .collect()
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tools_json, results_json, port, host] = args.as_slice() else {
        return Err("usage: irix7-peer-rmcp TOOLS_JSON RESULTS_JSON PORT HOST".into());
    };
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    let tools: Vec<Tool> =
        serde_json::from_str(&read(tools_json)?).map_err(|e| format!("{tools_json}: {e}"))?;
    let results = results(&read(results_json)?).map_err(|e| format!("{results_json}: {e}"))?;
    let port: u16 = port.parse().map_err(|e| format!("port {port}: {e}"))?;
    serve(
        Peer {
            tools: Arc::new(tools),
            results: Arc::new(results),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read_by_tool_name() {
        let r = results(
            r#"[{"key": "status", "tool": "status", "arguments": {}, "result": {"abi": 12}},
            {"key": "proc_list", "tool": "proc.list", "arguments": {}, "result": {"count": 0}}]"#,
        )
        .unwrap();
        assert_eq!(r["status"]["abi"], 12);
        assert_eq!(r["proc.list"]["count"], 0);
        assert!(results(r#"[{"tool": "status", "result": 1}]"#).is_err());
        assert!(results(r#"[{"result": {}}]"#).is_err());
        assert!(results("{}").is_err());
    }
}
