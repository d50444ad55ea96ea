//! Drives the real MCP server with modern-era requests, as a client on the wire would.
use super::fake;
use crate::tools::{Ctx, register};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use rpc::http::{Body, BodyPoll, Headers, Method, Peer};
use rpc::mcp::McpServer;
use serde_json::{Value, json};

pub fn server() -> McpServer<Ctx> {
    server_with(fake::ctx())
}

/// A server over a given context (e.g. one from [`fake::ctx_with_ring`]).
pub fn server_with(ctx: Ctx) -> McpServer<Ctx> {
    let config = rpc::mcp::Config::new("7.0.0", None);
    let mut counter = 0u8;
    let entropy: rpc::mcp::Entropy = Box::new(move |buf: &mut [u8]| {
        for b in buf {
            counter = counter.wrapping_add(37);
            *b = counter;
        }
    });
    let mut s = McpServer::new(config, Rc::new(RefCell::new(ctx)), entropy);
    register(&mut s).expect("tables register");
    s
}

/// Sends one modern request and returns the JSON-RPC response object.
pub fn request(s: &mut McpServer<Ctx>, method: &str, name: Option<&str>, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut h = Headers::default();
    h.push("Content-Type", "application/json");
    h.push("Accept", "application/json, text/event-stream");
    h.push("MCP-Protocol-Version", "2026-07-28");
    h.push("Mcp-Method", method);
    if let Some(n) = name {
        h.push("Mcp-Name", n);
    }
    let bytes = serde_json::to_vec(&body).unwrap();
    let peer = Peer {
        addr: [127, 0, 0, 1],
        port: 40000,
    };
    let resp = s.handle_parts(&Method::Post, &h, &bytes, peer, 1000);
    assert_eq!(resp.status, 200, "HTTP status for {method}");
    let text = match resp.body {
        Body::Full(b) => b,
        Body::Stream(mut src) => {
            let mut out = Vec::new();
            for _ in 0..10_000 {
                if src.poll(&mut out, 65536, 1000) == BodyPoll::End {
                    break;
                }
            }
            out
        }
        Body::Empty => Vec::new(),
    };
    let text = String::from_utf8(text).unwrap();
    // An SSE body carries the response as the last `data:` line.
    let json_text = match text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
    {
        Some(d) => String::from(d.trim()),
        None => text,
    };
    serde_json::from_str(&json_text).unwrap()
}

/// Calls a tool and returns its `result`.
pub fn call(s: &mut McpServer<Ctx>, tool: &str, args: Value) -> Value {
    let r = request(
        s,
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": args}),
    );
    let result = r
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result: {r}"));
    crate::tools::catalogue::assert_declared(s, tool, &result);
    result
}
