//! The tool catalogue against the booted product image: the guest's real `tools/list` (every
//! page, over HTTP) equals the host registry's listing as `docs/tools.json` records it (a host
//! test of the module keeps that file equal to the registry), and the debugger finds nothing to
//! attach to on a guest without cells, and answers `E_NOSYS` on a kernel before ABI 15.

mod support;

use iris::image::find_repo_root;
use serde_json::{Value, json};
use std::io::Write;
use std::net::SocketAddr;
use support::guest::boot_guest;
use support::http::{connect, read_response};
use support::mcp::{call_tool, first_text, mcp_request, messages};

/// Every tool the guest lists, following `nextCursor`.
fn guest_listing(addr: SocketAddr) -> Vec<Value> {
    let mut s = connect(addr);
    let mut buf = Vec::new();
    let mut tools = Vec::new();
    let mut params = json!({});
    for id in 1..=20 {
        let req = mcp_request(id, "tools/list", params, json!({}), "application/json");
        s.write_all(req.as_bytes()).expect("send tools/list");
        let r = read_response(&mut s, &mut buf, false).expect("tools/list answers");
        assert_eq!(r.status, 200, "{}", r.text());
        let msg = messages(&r.body).pop().expect("a JSON-RPC message");
        let result = &msg["result"];
        let page = result["tools"].as_array().expect("a tools array");
        tools.extend(page.iter().cloned());
        match result["nextCursor"].as_str() {
            Some(c) => params = json!({ "cursor": c }),
            None => return tools,
        }
    }
    panic!("tools/list did not end within 20 pages");
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

#[test]
fn the_guests_tools_list_is_the_host_registrys() {
    let path = find_repo_root().join("docs/tools.json");
    let text = std::fs::read_to_string(&path).expect("docs/tools.json (run `cargo xtask docs`)");
    let want: Vec<Value> = serde_json::from_str(&text).expect("docs/tools.json is a JSON array");
    let Some(g) = boot_guest(&[]) else { return };
    let got = guest_listing(g.mcp);
    assert_eq!(
        names(&got),
        names(&want),
        "tool names and order differ from the registry (rebuild the image, or run `cargo xtask docs`)"
    );
    for (g, w) in got.iter().zip(&want) {
        // Name, title, description, both schemas and the annotations, exactly.
        assert_eq!(g, w, "{} differs from the host registry", w["name"]);
    }
}

#[test]
fn the_debugger_finds_no_context_on_a_guest_without_cells() {
    let Some(g) = boot_guest(&[]) else { return };
    // ABI 15, but the rig runs no cell: there is nothing to attach to.
    let r = call_tool(g.mcp, "debug.attach", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        first_text(&r).starts_with("E_INVAL: no such context"),
        "{r}"
    );
    let r = call_tool(g.mcp, "debug.step", json!({}));
    assert!(first_text(&r).starts_with("E_INVAL: "), "{r}");
}

#[test]
fn the_debugger_is_nosys_on_a_kernel_before_abi_15() {
    let Some(g) = support::guest::boot_guest_with(&[], |_| {}, |r| r.offer_abi(14)) else {
        return;
    };
    let r = call_tool(g.mcp, "debug.attach", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(first_text(&r).starts_with("E_NOSYS: "), "{r}");
}
