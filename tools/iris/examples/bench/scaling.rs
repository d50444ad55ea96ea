//! How cost grows with work (issue 18): the same request measured while the module holds more
//! state, or for more of a resource, each figure printed against its reference with whether
//! it stays within ±5 %.

use crate::client::Client;
use crate::report::Report;
use crate::{
    PORT, TOKEN, boot_rig, fs_read, identity_request, mcp_request, measure, screen_bmp_request,
};
use iris::Rig;
use rpc::testing::{LEGACY_VERSION, McpRequest};

/// Stalled connections beside the measured one.
const STALLED: u16 = 4;
/// Bytes of each `fs.read` that compares the start of the file with its end.
const FS_SPAN: u64 = 512 << 10;

/// `tools/list` cost per listed tool: the full list minus a page after the last tool (the
/// request, the envelope and an empty `tools` array), over the number of tools; and the same
/// per listing byte; all identity-coded (`full` is the identity listing's figure).
pub fn tools_list(rig: &mut Rig, c: &mut Client, r: &mut Report, full: f64) {
    c.exchange(
        rig,
        &identity_request("tools/list", serde_json::json!({})),
        1,
    );
    let body = c.json_body();
    let tools = body["result"]["tools"].as_array().map_or(0, Vec::len);
    let full_bytes = c.inbox.len();
    assert!(tools > 0, "tools/list listed no tool");
    let empty_req = identity_request("tools/list", serde_json::json!({"cursor": cursor(tools)}));
    let empty = measure(rig, c, &empty_req, 10);
    assert!(
        c.json_body()["result"]["tools"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "the page after the last tool is not empty"
    );
    println!("tools/list ({tools} tools, {full_bytes} response bytes):");
    r.figure(
        "tools_list_empty_page",
        "tools/list, the page after the last tool",
        empty.insns as f64,
        "insns/request",
        None,
    );
    r.figure(
        "tools_list_per_tool",
        "  (full list - empty page) / tools",
        (full - empty.insns as f64) / tools as f64,
        "insns/tool",
        None,
    );
    r.figure(
        "tools_list_per_listing_byte",
        "  (full list - empty page) / extra bytes",
        (full - empty.insns as f64) / (full_bytes - empty.bytes) as f64,
        "insns/byte",
        None,
    );
}

/// The module's pagination cursor of the page starting at `offset` (base64url of `o<offset>`,
/// `rpc::mcp::cursor`).
fn cursor(offset: usize) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("o{offset}"))
}

/// `fs.read` per response byte at the start and near the end of the file on a warm guest, and
/// at the start on a fresh guest (LRU cold), against the start.
pub fn fs_positions(rig: &mut Rig, c: &mut Client, r: &mut Report, image_path: &str) {
    let per_byte = |(i, b): (u64, usize)| i as f64 / b as f64;
    let start = per_byte(fs_read(rig, c, 0, FS_SPAN));
    let end = per_byte(fs_read(rig, c, (4 << 20) - FS_SPAN, FS_SPAN));
    let mut cold_rig = boot_rig(image_path);
    let mut cold_client = Client::connect(&mut cold_rig, PORT, 40_004);
    let cold = per_byte(fs_read(&mut cold_rig, &mut cold_client, 0, FS_SPAN));
    crate::stop(&mut cold_rig);
    let kib = FS_SPAN >> 10;
    r.figure(
        "fs_read_per_byte_start",
        &format!("fs.read {kib} KiB at offset 0, per response byte"),
        start,
        "insns/byte",
        None,
    );
    r.scaling(
        "fs_read_per_byte_end",
        &format!("  the last {kib} KiB of the file"),
        end,
        "insns/byte",
        start,
    );
    r.scaling(
        "fs_read_per_byte_cold",
        "  at offset 0 on a fresh guest (LRU cold)",
        cold,
        "insns/byte",
        start,
    );
}

/// `server/discover` with legacy sessions open: 10, then after 100 `initialize` calls (the
/// module keeps at most `Limits::max_sessions`, 16; the least recently used are evicted).
/// `opened` sessions are open already.
pub fn sessions(rig: &mut Rig, c: &mut Client, r: &mut Report, none: f64, mut opened: usize) {
    let discover = mcp_request("server/discover", serde_json::json!({}));
    let init = McpRequest::initialize(LEGACY_VERSION).http("/mcp", "indy", Some(TOKEN));
    for (key, n) in [
        ("discover_with_10_sessions", 10),
        ("discover_after_100_sessions", 100),
    ] {
        while opened < n {
            c.exchange(rig, &init, 1);
            assert!(
                c.inbox.starts_with(b"HTTP/1.1 200"),
                "initialize failed: {}",
                String::from_utf8_lossy(&c.inbox[..c.inbox.len().min(300)])
            );
            opened += 1;
        }
        let m = measure(rig, c, &discover, 10);
        r.scaling(
            key,
            &format!("server/discover after {n} legacy initializes"),
            m.insns as f64,
            "insns/request",
            none,
        );
    }
}

/// A small request while [`STALLED`] other connections each hold a `GET /screen.bmp` they
/// stopped reading (their window closed partway through the 3.9 MB answer), against the same
/// request just before on the same guest: the figures before it leave state behind (the
/// legacy sessions [`sessions`] opened), which both measurements must share.
pub fn stalled(rig: &mut Rig, c: &mut Client, r: &mut Report, req: &[u8]) {
    let alone = measure(rig, c, req, 10).insns as f64;
    let bmp = screen_bmp_request();
    let mut got = Vec::new();
    for i in 0..STALLED {
        got.push(c.stall(rig, PORT, 40_010 + i, &bmp));
    }
    let m = measure(rig, c, req, 10);
    r.scaling(
        "echo_small_with_4_stalled",
        &format!("small echo while {STALLED} connections are mid-transfer"),
        m.insns as f64,
        "insns/request",
        alone,
    );
    println!(
        "    (each stalled connection received {got:?} bytes of its BMP, then stopped reading)"
    );
}
