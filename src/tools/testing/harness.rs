//! Drives the real MCP server with modern-era requests, as a client on the wire would.
use super::fake;
use crate::tools::{Ctx, register};
use alloc::boxed::Box;
use alloc::rc::Rc;
use core::cell::RefCell;
use rpc::mcp::McpServer;
use rpc::testing::{McpRequest, drain, last_message};
use serde_json::{Value, json};

/// The module's configuration as the board builds it, minus what the environment adds: the
/// module's capability table, no token.
pub fn config() -> rpc::mcp::Config {
    let mut config = rpc::mcp::Config::new("7.0.0", None);
    config.capabilities = crate::tools::capabilities::TABLE;
    config
}

pub fn server() -> McpServer<Ctx> {
    server_with(fake::ctx())
}

/// A server over a given context (e.g. one from [`fake::ctx_with_ring`]).
pub fn server_with(ctx: Ctx) -> McpServer<Ctx> {
    let config = config();
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

/// A server under `policy` (`full`: the default configuration) over a context with a RAM
/// filesystem holding a few files: `/etc/motd`, `/etc/a b` (UTF-8), `/bin` (not UTF-8), `/big`
/// (1 MiB + 1 byte).
pub fn server_with_files(policy: &str) -> McpServer<Ctx> {
    use crate::services::fs::overlay::{Overlay, WriteMode};
    let (mut ctx, _) = fake::ctx_and_state();
    let mut fs = Overlay::new(None, 4 << 20);
    fs.mkdir("/etc").unwrap();
    fs.write("/etc/motd", b"Welcome to IRIX 7\n", WriteMode::Truncate)
        .unwrap();
    fs.write("/etc/a b", "caf\u{e9}".as_bytes(), WriteMode::Truncate)
        .unwrap();
    fs.write(
        "/bin",
        &[0x7f, b'E', b'L', b'F', 0xff, 0],
        WriteMode::Truncate,
    )
    .unwrap();
    fs.write(
        "/big",
        &alloc::vec![b'x'; (1 << 20) + 1],
        WriteMode::Truncate,
    )
    .unwrap();
    ctx.services_mut().fs = Some(fs);
    if policy == "full" {
        return server_with(ctx);
    }
    let mut config = config();
    config.policy = rpc::mcp::Policy::parse_or_observe(policy).0;
    let entropy: rpc::mcp::Entropy = alloc::boxed::Box::new(|b: &mut [u8]| b.fill(3));
    let mut s = rpc::mcp::McpServer::new(config, Rc::new(RefCell::new(ctx)), entropy);
    register(&mut s).unwrap();
    s
}

/// Sends one modern request and returns the JSON-RPC response object.
pub fn request(s: &mut McpServer<Ctx>, method: &str, params: Value) -> Value {
    let mut resp = McpRequest::modern(method, params).send(s, 1000);
    assert_eq!(resp.status, 200, "HTTP status for {method}");
    let (body, ended) = drain(&mut resp, 1000, 10_000);
    assert!(ended, "the answer to {method} did not end");
    // An SSE body carries the response as its last message.
    last_message(&body).unwrap_or_else(|| serde_json::from_slice(&body).unwrap())
}

/// Calls a tool and returns its `result`.
pub fn call(s: &mut McpServer<Ctx>, tool: &str, args: Value) -> Value {
    let r = request(s, "tools/call", json!({"name": tool, "arguments": args}));
    let result = r
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result: {r}"));
    super::declared::assert_declared(s, tool, &result);
    assert_serde_bytes(&result);
    result
}

/// A structured result's text block holds its JSON as the tool wrote it: the bytes serde_json
/// writes for the same value (keys sorted, numbers as it prints them), as they always were.
pub fn assert_serde_bytes(result: &Value) {
    let Some(structured) = result.get("structuredContent") else {
        return;
    };
    let blocks = result["content"].as_array().expect("content");
    let text = blocks.last().and_then(|b| b["text"].as_str());
    let want = serde_json::to_string(structured).unwrap();
    assert_eq!(text, Some(want.as_str()), "written as serde_json writes it");
}
