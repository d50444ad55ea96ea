//! System tools: `status`, `echo`, `system.reset`, `system.poweroff`, and the
//! `irix7://status`, `irix7://net`, `irix7://mem`, `irix7://audit` resources.

use super::{Ctx, args};
use crate::services::power::{self, Action};
use crate::services::status::{mem_text, net_text};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rpc::json::{Kind, ObjectWriter};
use rpc::mcp::{
    Annotations, ErrorCode, ResourceContents, ResourceDef, Started, ToolCall, ToolDef, ToolError,
    ToolOutput, WatchDef,
};

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "status",
        title: Some("Machine status"),
        description: "The Indy's status: module and OS version, uptime, date, IP and MAC \
                      address, RAM, module heap, open connections, the tool policy \
                      (mcp.policy). Start here.",
        input_schema: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
        output_schema: Some(STATUS_SCHEMA),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: status,
    },
    ToolDef {
        name: "echo",
        title: Some("Echo"),
        description: "Returns its `text` argument unchanged: a round-trip check of the whole \
                      path (network, HTTP, MCP) to the machine.",
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string","maxLength":65536,
            "description":"Text to send back"}},"required":["text"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start: echo,
    },
    ToolDef {
        name: "system.reset",
        title: Some("Reset the machine"),
        description: "Resets the Indy: answers first, then resets `delay_ms` later (default \
                      250). The module is reloaded at boot and serves again; clients reconnect. \
                      Overlay files written with fs.write are lost.",
        input_schema: DELAY_INPUT,
        output_schema: Some(ACTION_OUTPUT),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &[ErrorCode::Busy],
        start: reset,
    },
    ToolDef {
        name: "system.poweroff",
        title: Some("Power off the machine"),
        description: "Powers the Indy off: answers first, then powers off `delay_ms` later \
                      (default 250). Nothing answers afterwards until someone powers it on.",
        input_schema: DELAY_INPUT,
        output_schema: Some(ACTION_OUTPUT),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: &[ErrorCode::Busy],
        start: poweroff,
    },
];

const DELAY_INPUT: &str = r#"{"type":"object","properties":{
  "delay_ms":{"type":"integer","minimum":100,"maximum":60000,"default":250,
    "description":"Milliseconds between the answer and the action"}},
  "additionalProperties":false}"#;

const ACTION_OUTPUT: &str = r#"{"type":"object","properties":{
  "action":{"type":"string","enum":["reset","poweroff"]},
  "in_ms":{"type":"integer","description":"Milliseconds until the action"}},
  "required":["action","in_ms"]}"#;

const STATUS_SCHEMA: &str = r#"{"type":"object","properties":{
  "module":{"type":"string"},"module_version":{"type":"string"},
  "build_id":{"type":"string","description":"Digest of the module's sources (`dev`: not built by cargo xtask image)"},
  "image":{"type":"object","description":"The running image as the kernel verified it (absent before kernel ABI 12)",
    "properties":{"sha256":{"type":"string"},"sha256_short":{"type":"string"},
    "deploy":{"type":"string","enum":["ok","sha256 mismatch","fetch failed","load failed","init failed","unknown"],
      "description":"ok: the configured image runs; otherwise why it was refused and the last good image runs"},
    "refused_sha256":{"type":"string","description":"The digest the boot configuration named for the refused image"}},
    "required":["sha256","sha256_short","deploy"]},
  "abi":{"type":"integer"},
  "os_version":{"type":"string"},"uptime_ms":{"type":"integer"},"date":{"type":"string"},
  "unix_time":{"type":"integer"},"ram_bytes":{"type":"integer"},"ip":{"type":"string"},
  "mac":{"type":"string"},"port":{"type":"integer"},"open_connections":{"type":"integer"},
  "policy":{"type":"string","description":"The tool policy in force (mcp.policy)"},
  "requests":{"type":"integer"},
  "heap":{"type":"object","properties":{"used":{"type":"integer"},"peak":{"type":"integer"},
    "size":{"type":"integer"}},"required":["used","peak","size"]},
  "cache":{"type":"object","description":"The filesystem's 16-block LRU (absent without one)",
    "properties":{"hits":{"type":"integer"},"misses":{"type":"integer"},
    "evictions":{"type":"integer"},"block_size":{"type":"integer"},
    "capacity":{"type":"integer"},"resident":{"type":"integer"},
    "direct_blocks":{"type":"integer"}}}},
  "required":["module","module_version","build_id","abi","os_version","uptime_ms","date","ip","mac",
    "ram_bytes","heap"]}"#;

pub const RESOURCES: &[ResourceDef<Ctx>] = &[
    ResourceDef {
        uri: "irix7://status",
        name: "status",
        title: Some("Machine status"),
        description: "The machine's status as plain text (what the `status` tool reports). \
                      Subscribable: an update at most every 5 s when a line other than the \
                      clocks changes.",
        mime_type: Some("text/plain"),
        read: read_status,
    },
    ResourceDef {
        uri: "irix7://net",
        name: "net",
        title: Some("Network"),
        description: "The module's network figures as plain text: address, MAC, ports, \
                      connections, requests served.",
        mime_type: Some("text/plain"),
        read: read_net,
    },
    ResourceDef {
        uri: "irix7://mem",
        name: "mem",
        title: Some("Memory"),
        description: "RAM and the module heap's figures as plain text.",
        mime_type: Some("text/plain"),
        read: read_mem,
    },
    ResourceDef {
        uri: "irix7://audit",
        name: "audit",
        title: Some("Audit trail"),
        description: "The last lines of the audit trail as plain text, oldest first: one line \
                      per call of a tool that is not read-only and per failed authentication \
                      (time, client, session, tool, a data-free argument summary, outcome).",
        mime_type: Some("text/plain"),
        read: read_audit,
    },
];

fn status(ctx: &mut Ctx, _call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    Ok(Started::Done(ToolOutput::structured(
        ctx.status().to_json(),
    )))
}

fn echo(_ctx: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    // The schema has already required a string of at most 65,536 characters.
    let Some(text) = call.args.get("text").filter(|t| t.kind() == Kind::String) else {
        return Err(ToolError::new(ErrorCode::Inval, "`text` must be a string"));
    };
    // Written as JSON text, the text copied as the client wrote it: one buffer, where a
    // `Value` would take three allocations (map, key, string). The server adds the text block.
    let members = "\"text\":".len() + text.raw().len();
    let json = ObjectWriter::with_capacity(members).value("text", text);
    Ok(Started::Done(ToolOutput::structured_json(json.finish())))
}

/// Schedules a reset or power-off and answers when it will happen.
fn schedule(ctx: &mut Ctx, action: Action, now_ms: u64, delay_ms: u64) -> Result<u64, ToolError> {
    let p = power::schedule(&mut ctx.pending, action, now_ms, delay_ms)
        .map_err(|e| ToolError::new(ErrorCode::Busy, format!("{e}")))?;
    Ok(p.at_ms.saturating_sub(now_ms))
}

fn scheduled(
    ctx: &mut Ctx,
    call: &ToolCall<'_>,
    action: Action,
) -> Result<Started<Ctx>, ToolError> {
    let delay = args::opt_u64(call, "delay_ms")?.unwrap_or(power::DEFAULT_DELAY_MS);
    let in_ms = schedule(ctx, action, call.now_ms, delay)?;
    Ok(Started::Done(ToolOutput::structured(serde_json::json!({
        "action": action.as_str(),
        "in_ms": in_ms,
    }))))
}

fn reset(ctx: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    scheduled(ctx, call, Action::Reset)
}

fn poweroff(ctx: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    scheduled(ctx, call, Action::Poweroff)
}

fn text_resource(uri: &str, text: String) -> Vec<ResourceContents> {
    vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some(String::from("text/plain")),
        text,
    }]
}

/// `irix7://status` can be subscribed: it changes when any line but the clocks (`uptime`,
/// `date`) does — an address, the heap, the connections, a deploy — announced at most once
/// every five seconds.
pub const WATCHES: &[WatchDef<Ctx>] = &[WatchDef {
    uri: "irix7://status",
    interval_ms: 5_000,
    version: status_version,
}];

/// FNV-1a over the status text without its clock lines.
fn status_version(ctx: &mut Ctx) -> u64 {
    let text = ctx.status().to_text();
    text.lines()
        .filter(|l| !l.starts_with("uptime") && !l.starts_with("date"))
        .flat_map(|l| l.bytes().chain(core::iter::once(b'\n')))
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn read_status(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(text_resource(uri, ctx.status().to_text()))
}

fn read_net(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(text_resource(uri, net_text(&ctx.status())))
}

fn read_mem(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(text_resource(uri, mem_text(&ctx.status())))
}

fn read_audit(ctx: &mut Ctx, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    let text = ctx
        .audit
        .try_borrow()
        .map_err(|_| ToolError::new(ErrorCode::Busy, "the audit log is being written"))?
        .text();
    Ok(text_resource(uri, text))
}

#[cfg(test)]
mod tests {
    use crate::tools::testing::harness::{call, request, server};
    use alloc::string::String;
    use serde_json::{Value, json};
    extern crate std;

    #[test]
    fn the_status_version_ignores_the_clocks_but_not_the_rest() {
        let (mut ctx, state) = crate::tools::testing::fake::ctx_and_state();
        let v = super::status_version(&mut ctx);
        state.now.set(state.now.get() + 3_600_000);
        assert_eq!(v, super::status_version(&mut ctx));
        ctx.net.requests += 1;
        assert_ne!(v, super::status_version(&mut ctx));
    }

    #[test]
    fn status_reports_the_machine() {
        let mut s = server();
        let r = call(&mut s, "status", json!({}));
        let st = &r["structuredContent"];
        assert_eq!(st["module"], "irix7-mcp");
        assert_eq!(st["abi"], 10);
        assert_eq!(st["os_version"], "7.0.0");
        assert_eq!(st["uptime_ms"], 12_345);
        assert_eq!(st["ip"], "172.31.77.2");
        assert_eq!(st["date"], "2026-11-30 00:53:20 UTC");
        assert_eq!(st["heap"]["peak"], 2000);
        // The same JSON as text, for clients that read only text.
        let text = r["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text).unwrap(),
            *st
        );
    }

    #[test]
    fn status_says_which_build_runs_and_why() {
        use crate::services::identity::BUILD_ID;
        use crate::tools::testing::{fake, harness::server_with};
        use indy::abi::{DEPLOY_SHA256_MISMATCH, ImageInfo};
        let (ctx, state) = fake::ctx_and_state();
        let mut s = server_with(ctx);
        let st = call(&mut s, "status", json!({}))["structuredContent"].clone();
        assert_eq!(st["build_id"], BUILD_ID);
        assert_eq!(st["image"]["sha256"], "5b".repeat(32));
        assert_eq!(st["image"]["sha256_short"], "5b".repeat(6));
        assert_eq!(st["image"]["deploy"], "ok");
        assert!(st["image"].get("refused_sha256").is_none(), "{st}");

        // The kernel fell back to the last good image: status says why and what it refused.
        state.image.set(Some(ImageInfo {
            sha256: [0x5b; 32],
            deploy: DEPLOY_SHA256_MISMATCH,
            refused_sha256: [0xee; 32],
        }));
        let st = call(&mut s, "status", json!({}))["structuredContent"].clone();
        assert_eq!(st["image"]["deploy"], "sha256 mismatch");
        assert_eq!(st["image"]["refused_sha256"], "ee".repeat(32));
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://status"}));
        let text = r["result"]["contents"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("build       {BUILD_ID}\n")),
            "{text}"
        );
        assert!(text.contains(&format!("image       sha256 {}\n", "5b".repeat(32))));
        assert!(
            text.contains(&format!(
                "deploy      deploy of {} refused: sha256 mismatch; running the last good image\n",
                "ee".repeat(32)
            )),
            "{text}"
        );

        // A kernel before ABI 12 says nothing about the image.
        state.image.set(None);
        let st = call(&mut s, "status", json!({}))["structuredContent"].clone();
        assert!(st.get("image").is_none(), "{st}");
        assert_eq!(st["build_id"], BUILD_ID);
    }

    #[test]
    fn echo_returns_its_text() {
        let mut s = server();
        // Quotes, a backslash, a control character and non-ASCII: escaped once in the
        // structured result, twice in the text block that carries it.
        let text = "hello, \"Indy\" \\ \u{1} ✓";
        let r = call(&mut s, "echo", json!({ "text": text }));
        assert_eq!(r["structuredContent"], json!({ "text": text }));
        let block: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(block, json!({ "text": text }));
        assert_ne!(r["isError"], true);
    }

    #[test]
    fn a_long_echo_is_answered_whole() {
        let mut s = server();
        let text = "irix7 ".repeat(10_000);
        let r = call(&mut s, "echo", json!({ "text": text }));
        assert_ne!(r["isError"], true);
        assert_eq!(r["structuredContent"], json!({ "text": text }));
    }

    #[test]
    fn echo_without_text_is_a_tool_error() {
        // Schema violations are tool errors, so the model sees them and can correct the call.
        let mut s = server();
        let r = call(&mut s, "echo", json!({}));
        assert_eq!(r["isError"], true);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("E_INVAL: ") && text.contains("text"),
            "{text}"
        );
    }

    #[test]
    fn status_resource_is_text() {
        let mut s = server();
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://status"}));
        let c = &r["result"]["contents"][0];
        assert_eq!(c["mimeType"], "text/plain");
        assert!(
            c["text"]
                .as_str()
                .unwrap()
                .contains("ip          172.31.77.2")
        );
    }

    #[test]
    fn tools_are_listed_in_order() {
        let mut s = server();
        let r = request(&mut s, "tools/list", json!({}));
        let names: std::vec::Vec<&str> = r["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "status",
                "echo",
                "system.reset",
                "system.poweroff",
                "serial.read",
                "serial.write",
                "console.write",
                "input.keys",
                "shell.exec",
                "proc.list",
                "fs.stat",
                "fs.readlink",
                "fs.read",
                "fs.write",
                "fs.list",
                "fs.remove",
                "fs.mkdir",
                "block.read",
                "screen.capture",
                "mem.read",
                "mem.write",
                "mmio.read",
                "mmio.write",
                "dev.list",
                "irq.list",
                "dma.list"
            ]
        );
        let reset = &r["result"]["tools"][2];
        assert_eq!(reset["annotations"]["destructiveHint"], true);
        assert_eq!(reset["annotations"]["readOnlyHint"], false);
    }

    #[test]
    fn reset_answers_first_and_happens_after_the_deadline() {
        let (ctx, state) = crate::tools::testing::fake::ctx_and_state();
        let mut s = crate::tools::testing::harness::server_with(ctx);
        let r = call(&mut s, "system.reset", json!({}));
        assert_eq!(
            r["structuredContent"],
            json!({"action": "reset", "in_ms": 250})
        );
        assert_eq!(state.resets.get(), 0, "the answer comes before the reset");
        let ctx = s.context().clone();
        let pending = ctx.borrow().pending;
        assert_eq!(
            pending.map(|p| (p.action, p.at_ms)),
            Some((super::Action::Reset, 1250)),
            "the harness calls at 1000 ms"
        );
        // A second request, even a power-off, does not replace it.
        let r = call(&mut s, "system.poweroff", json!({"delay_ms": 100}));
        assert_eq!(r["isError"], true);
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("E_BUSY: a reset is already scheduled")
        );
        assert!(ctx.borrow_mut().run_due(1249).is_none());
        assert_eq!(state.resets.get(), 0);
        ctx.borrow_mut().run_due(1250);
        assert_eq!((state.resets.get(), state.poweroffs.get()), (1, 0));
    }

    #[test]
    fn poweroff_takes_a_delay_within_bounds() {
        let (ctx, state) = crate::tools::testing::fake::ctx_and_state();
        let mut s = crate::tools::testing::harness::server_with(ctx);
        let r = call(&mut s, "system.poweroff", json!({"delay_ms": 50}));
        assert_eq!(r["isError"], true, "below the schema minimum");
        let r = call(&mut s, "system.poweroff", json!({"delay_ms": 2000}));
        assert_eq!(r["structuredContent"]["in_ms"], 2000);
        let ctx = s.context().clone();
        ctx.borrow_mut().run_due(3000);
        assert_eq!((state.resets.get(), state.poweroffs.get()), (0, 1));
    }

    #[test]
    fn net_and_mem_resources_are_text() {
        let mut s = server();
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://net"}));
        let text = r["result"]["contents"][0]["text"].as_str().unwrap();
        assert!(text.contains("ip          172.31.77.2/0\n"), "{text}");
        assert!(text.contains("mcp port    7801"), "{text}");
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://mem"}));
        let c = &r["result"]["contents"][0];
        assert_eq!(c["mimeType"], "text/plain");
        let text = c["text"].as_str().unwrap();
        assert!(text.contains("heap used   1000 bytes\n"), "{text}");
        assert!(text.contains("heap free   16776216 bytes\n"), "{text}");
        let r = request(&mut s, "resources/list", json!({}));
        let uris: std::vec::Vec<&str> = r["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            uris,
            [
                "irix7://status",
                "irix7://net",
                "irix7://mem",
                "irix7://audit",
                "irix7://serial",
                "irix7://screen",
                "irix7://proc",
                "irix7://dev"
            ]
        );
    }

    /// A server whose audit sink fills the context's log, as the board's does, under `policy`.
    fn audited(policy: &str) -> rpc::mcp::McpServer<crate::tools::Ctx> {
        use crate::services::fs::overlay::Overlay;
        use alloc::rc::Rc;
        use core::cell::RefCell;
        let (mut ctx, _) = crate::tools::testing::fake::ctx_and_state();
        let mut fs = Overlay::new(None, 1 << 20);
        fs.mkdir("/tmp").unwrap();
        ctx.fs = Some(fs);
        let mut config = rpc::mcp::Config::new("7.0.0", None);
        config.policy = rpc::mcp::Policy::parse_or_read_only(policy).0;
        ctx.policy = String::from(config.policy.text());
        let log = ctx.audit.clone();
        config.audit = Some(Rc::new(move |r: &rpc::mcp::AuditRecord| {
            log.borrow_mut()
                .push(&alloc::string::ToString::to_string(r));
        }));
        let mut n = 0u8;
        let entropy: rpc::mcp::Entropy = alloc::boxed::Box::new(move |b: &mut [u8]| {
            for x in b {
                n = n.wrapping_add(11);
                *x = n;
            }
        });
        let mut s = rpc::mcp::McpServer::new(config, Rc::new(RefCell::new(ctx)), entropy);
        crate::tools::register(&mut s).unwrap();
        s
    }

    fn audit_text(s: &mut rpc::mcp::McpServer<crate::tools::Ctx>) -> String {
        let r = request(s, "resources/read", json!({"uri": "irix7://audit"}));
        String::from(r["result"]["contents"][0]["text"].as_str().unwrap())
    }

    #[test]
    fn writes_are_audited_in_the_resource_and_the_shell_without_their_data() {
        let mut s = audited("full");
        let r = call(
            &mut s,
            "fs.write",
            json!({"path": "/tmp/note", "content": "top secret words"}),
        );
        assert_ne!(r["isError"], true, "{r}");
        let r = call(&mut s, "fs.remove", json!({"path": "/tmp/missing"}));
        assert_eq!(r["isError"], true);
        call(&mut s, "status", json!({}));
        call(&mut s, "fs.read", json!({"path": "/tmp/note"}));
        let text = audit_text(&mut s);
        let lines: std::vec::Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].starts_with("# 2 audit lines since boot, 2 kept, 0 dropped"),
            "{text}"
        );
        assert!(
            lines[1].ends_with("stateless fs.write {content=<16 bytes>,path=\"/tmp/note\"} -> ok"),
            "{text}"
        );
        assert!(
            lines[2].contains("fs.remove {path=\"/tmp/missing\"} -> E_NOENT"),
            "{text}"
        );
        assert!(!text.contains("secret"));
        // The shell shows the same lines (and its own call, which is destructive, comes after).
        let r = call(&mut s, "shell.exec", json!({"command": "audit"}));
        let out = r["structuredContent"]["output"]
            .as_str()
            .unwrap_or_default();
        assert!(out.contains("fs.write {content=<16 bytes>"), "{r}");
    }

    #[test]
    fn the_policy_shows_in_status_and_bad_values_fail_closed() {
        let mut s = audited("fs.*,status");
        let r = call(&mut s, "status", json!({}));
        assert_eq!(r["structuredContent"]["policy"], "fs.*,status");
        let r = call(&mut s, "echo", json!({"text": "x"}));
        assert_eq!(
            r["content"][0]["text"],
            "E_PERM: echo is outside mcp.policy=fs.*,status"
        );
        let mut s = audited("fs.*,,status");
        let r = request(&mut s, "resources/read", json!({"uri": "irix7://status"}));
        let text = r["result"]["contents"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("policy      read-only (the configured \"fs.*,,status\" is invalid)\n"),
            "{text}"
        );
        let r = call(
            &mut s,
            "fs.write",
            json!({"path": "/tmp/x", "content": "y"}),
        );
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("E_PERM: fs.write is outside mcp.policy=read-only")
        );
        let listed = request(&mut s, "tools/list", json!({}));
        let tools = listed["result"]["tools"].as_array().unwrap();
        assert!(
            tools
                .iter()
                .all(|t| t["annotations"]["readOnlyHint"] == true)
        );
        assert!(tools.iter().any(|t| t["name"] == "fs.read"));
        assert!(
            audit_text(&mut s)
                .contains("fs.write {content=<1 bytes>,path=\"/tmp/x\"} -> refused by policy")
        );
    }
}
