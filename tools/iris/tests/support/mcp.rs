//! MCP over the HTTP client: the modern-era request envelope and tool calls.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};

use host_http::Response;
use rpc::testing::McpRequest;
pub use rpc::testing::messages;

use super::guest::{Guest, HOST, TOKEN};
use super::http::{connect, read_response, request};

/// A modern-era (2026-07-28) JSON-RPC request as raw HTTP, built by `rpc::testing` (the one
/// builder every test suite uses): `extra_meta` merged into `_meta` (e.g. a `progressToken`),
/// `accept` as the Accept header, the tests' `clientInfo`, and the suite's token and Host
/// (`guest::TOKEN`, `guest::HOST`; `with_bearer` swaps in another token).
pub fn mcp_request(
    id: u64,
    method: &str,
    params: serde_json::Value,
    extra_meta: serde_json::Value,
    accept: &str,
) -> String {
    let mut req = McpRequest::modern(method, params)
        .id(id)
        .accept(accept)
        .meta(
            "io.modelcontextprotocol/clientInfo",
            serde_json::json!({"name": "iris-tests", "version": "1"}),
        );
    if let Some(extra) = extra_meta.as_object() {
        for (k, v) in extra {
            req = req.meta(k, v.clone());
        }
    }
    String::from_utf8_lossy(&req.http("/mcp", HOST, Some(TOKEN))).into_owned()
}

/// A `tools/call` request answered as JSON.
pub fn tool_request(id: u64, tool: &str, args: serde_json::Value) -> String {
    mcp_request(
        id,
        "tools/call",
        serde_json::json!({"name": tool, "arguments": args}),
        serde_json::json!({}),
        "application/json, text/event-stream",
    )
}

/// Calls a tool on a fresh connection; the JSON-RPC `result` (with `isError` when it failed).
pub fn call_tool(addr: SocketAddr, tool: &str, args: serde_json::Value) -> serde_json::Value {
    tool_result(tool, request(addr, &tool_request(1, tool, args)))
}

/// `call_tool` with a bearer token, for a guest booted with `mcp.token` set.
pub fn call_tool_with_token(
    addr: SocketAddr,
    token: &str,
    tool: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    let raw = with_bearer(&tool_request(1, tool, args), token);
    tool_result(tool, request(addr, &raw))
}

/// A raw request carrying `Authorization: Bearer <token>`: the suite's token replaced, or the
/// header added when the request had none.
pub fn with_bearer(raw: &str, token: &str) -> String {
    let suite = format!("\r\nAuthorization: Bearer {TOKEN}\r\n");
    let mine = format!("\r\nAuthorization: Bearer {token}\r\n");
    if raw.contains(&suite) {
        return raw.replacen(&suite, &mine, 1);
    }
    raw.replacen("\r\nHost:", &format!("{mine}Host:"), 1)
}

/// A raw request without the suite's token (for tests of what a client without it gets).
pub fn without_bearer(raw: &str) -> String {
    raw.replacen(&format!("\r\nAuthorization: Bearer {TOKEN}\r\n"), "\r\n", 1)
}

/// The JSON-RPC `result` of a tool call's response (with `isError` when the tool failed);
/// `tool` names the call in the panic when the response is not one.
pub fn tool_result(tool: &str, r: Response) -> serde_json::Value {
    assert_eq!(r.status, 200, "{tool}: {}", r.text());
    let msg = messages(&r.body)
        .pop()
        .unwrap_or_else(|| panic!("{tool}: no JSON-RPC message in {}", r.text()));
    msg.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{tool}: no result in {msg}"))
}

/// A tool result that must not be an error, returned whole.
pub fn expect_success(tool: &str, result: serde_json::Value) -> serde_json::Value {
    assert_ne!(
        result["isError"],
        serde_json::json!(true),
        "{tool} failed: {result}"
    );
    result
}

/// Calls a tool that must succeed; its structured result.
pub fn tool_ok(addr: SocketAddr, tool: &str, args: serde_json::Value) -> serde_json::Value {
    expect_success(tool, call_tool(addr, tool, args))["structuredContent"].clone()
}

/// The text of a tool result's first content block.
pub fn first_text(result: &serde_json::Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

/// A kept-alive MCP connection (2026-07-28, the suite's token) that moves the guest clock on
/// 60 ms before each request, so a walk of hundreds of requests stays under the module's
/// requests-per-second limit per client.
pub struct GuestClient<'g> {
    g: &'g Guest,
    s: TcpStream,
    buf: Vec<u8>,
    id: u64,
}

impl<'g> GuestClient<'g> {
    pub fn new(g: &'g Guest) -> Self {
        GuestClient {
            g,
            s: connect(g.mcp),
            buf: Vec::new(),
            id: 0,
        }
    }

    /// The last JSON-RPC message of the 200 answer to `method` with `params`.
    pub fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.request_meta(method, params, serde_json::json!({}))
    }

    /// [`Self::request`] with `meta` merged into `_meta` (e.g. client capabilities).
    pub fn request_meta(
        &mut self,
        method: &str,
        params: serde_json::Value,
        meta: serde_json::Value,
    ) -> serde_json::Value {
        self.g.rig.advance_clock(60);
        self.id += 1;
        let accept = "application/json, text/event-stream";
        let raw = mcp_request(self.id, method, params.clone(), meta, accept);
        self.s.write_all(raw.as_bytes()).unwrap();
        let r = read_response(&mut self.s, &mut self.buf, false)
            .unwrap_or_else(|| panic!("{method} {params}: connection closed"));
        assert_eq!(r.status, 200, "{method} {params}: {}", r.text());
        messages(&r.body)
            .pop()
            .unwrap_or_else(|| panic!("{method} {params}: no message in {}", r.text()))
    }

    /// A tool's result (with `isError` when it failed).
    pub fn call(&mut self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        let params = serde_json::json!({"name": tool, "arguments": args});
        let m = self.request("tools/call", params);
        m.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool} {args}: no result in {m}"))
    }

    /// A call that must succeed: its whole result.
    pub fn call_ok(&mut self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        let r = self.call(tool, args);
        expect_success(tool, r)
    }

    /// A call that must succeed: its structured result.
    pub fn ok(&mut self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        self.call_ok(tool, args)["structuredContent"].clone()
    }

    /// A call that must fail: the text of its error.
    pub fn err(&mut self, tool: &str, args: serde_json::Value) -> String {
        let r = self.call(tool, args.clone());
        assert_eq!(r["isError"], true, "{tool} {args} should fail: {r}");
        r["content"][0]["text"].as_str().unwrap_or("").to_string()
    }
}
