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
    ctx.services_mut().net.requests += 1;
    assert_ne!(v, super::status_version(&mut ctx));
}

/// The `status` result as a `Value` was built for it before the writer: the bytes
/// serde_json wrote for it are the bytes the writer must write.
fn status_value(st: &crate::services::status::Status) -> Value {
    use crate::services::identity::{BUILD_ID, VERSION};
    let mut v = json!({
        "module": "irix7-mcp",
        "module_version": VERSION,
        "build_id": BUILD_ID,
        "abi": st.abi_version,
        "os_version": st.os_version(),
        "uptime_ms": st.uptime_ms,
        "date": st.date_text(),
        "unix_time": st.unix_time,
        "ram_bytes": st.ram_bytes,
        "ip": st.ip_text(),
        "mac": st.mac_text(),
        "port": st.net.port,
        "policy": &*st.policy,
        "open_connections": st.net.open_connections,
        "requests": st.net.requests,
        "heap": {
            "used": st.heap.used, "peak": st.heap.peak, "size": st.heap.size,
            "budget": st.heap_budget,
        },
        "budgets": st.budgets.iter().map(|b| json!({
            "name": b.name, "limit": b.limit, "used": b.used, "peak": b.peak,
            "refused": b.refused,
        })).collect::<std::vec::Vec<_>>(),
    });
    if let Some(b) = &st.boot {
        let mut flight = json!({"state": b.flight_state()});
        if let Ok(f) = &b.flight {
            flight["build"] = f.build.as_str().into();
            flight["uptime_ms"] = f.uptime_ms.into();
            flight["calls"] = f.calls.iter().map(|c| &*c.tool).collect();
            if !f.panic.is_empty() {
                flight["panic"] = f.panic.as_str().into();
            }
            if f.torn > 0 {
                flight["torn"] = f.torn.into();
            }
        }
        let mut boot = json!({
            "boots": b.boots, "cause": b.cause_name(), "console": b.ring_state(),
            "flight": flight, "previous_uptime_ms": b.prev_uptime_ms,
        });
        if b.deploy {
            boot["deploy"] = true.into();
        }
        if !b.message.is_empty() {
            boot["message"] = b.message.as_str().into();
        }
        if let Some(sha) = &b.prev_sha256 {
            boot["previous_sha256"] = sha
                .iter()
                .map(|x| alloc::format!("{x:02x}"))
                .collect::<String>()
                .into();
        }
        if let Some(by) = b.requested_by() {
            boot["requested_by"] = by.into();
        }
        v["boot"] = boot;
    }
    if let Some(sha256) = st.identity.sha256() {
        let mut image = json!({
            "sha256": sha256,
            "sha256_short": st.identity.sha256_short(),
            "deploy": "ok",
        });
        if let Some((why, refused)) = st.identity.refused() {
            image["deploy"] = why.into();
            image["refused_sha256"] = refused.into();
        }
        v["image"] = image;
    }
    if let Some(c) = &st.cache {
        v["cache"] = json!({
            "hits": c.hits, "misses": c.misses, "evictions": c.evictions,
            "block_size": c.block_size, "capacity": c.capacity, "resident": c.resident,
            "direct_blocks": c.direct_blocks,
        });
    }
    v
}

#[test]
fn status_writes_the_bytes_of_its_value() {
    use crate::services::fs::cache::CacheStats;
    use crate::services::memory::BudgetUse;
    use crate::tools::reach::StatusFigures;
    use indy::abi::{DEPLOY_SHA256_MISMATCH, ImageInfo};
    let (ctx, _) = crate::tools::testing::fake::ctx_and_state();
    let mut st = ctx.status();
    // One cache of the fixed members for the whole test, as a boot has: each change below
    // to what they show must be seen, or the bytes are the last status's.
    let mut fixed = super::status_json::FixedMembers::default();
    let mut same = |st: &crate::services::status::Status| {
        let written = super::status_json(st, fixed.of(st));
        assert_eq!(
            written.text(),
            serde_json::to_string(&status_value(st)).unwrap()
        );
    };
    same(&st);
    st.net.ip = None;
    st.identity.image = None;
    let odd = "7.0 \"quoted\" é".as_bytes();
    st.os_version = [0; 16];
    st.os_version[..odd.len()].copy_from_slice(odd);
    same(&st);
    st.identity.image = Some(ImageInfo {
        sha256: [0xa7; 32],
        deploy: DEPLOY_SHA256_MISMATCH,
        refused_sha256: [0x01; 32],
    });
    st.cache = Some(CacheStats {
        hits: 9,
        misses: u64::MAX,
        block_size: 4096,
        capacity: 16,
        ..CacheStats::default()
    });
    st.budgets = std::vec![
        BudgetUse {
            name: "a",
            limit: 1,
            used: 2,
            peak: 3,
            refused: 4
        },
        BudgetUse {
            name: "shell",
            limit: 10,
            used: 0,
            peak: 0,
            refused: 0
        },
    ];
    same(&st);
    use crate::services::boot::{BootReport, RingDamaged};
    use crate::services::flight::record::{Flight, FlightCall};
    st.boot = Some(alloc::rc::Rc::new(BootReport {
        cause: indy::abi::BOOT_REQUESTED,
        message: String::from("odd \"text\"\n"),
        boots: 3,
        prev_uptime_ms: 4242,
        prev_sha256: Some([0x3c; 32]),
        flight: Ok(Flight {
            build: String::from("b\u{1}"),
            reset_by: String::from("reboot"),
            panic: String::from("oops"),
            uptime_ms: 99,
            torn: 1,
            calls: std::vec![FlightCall {
                tool: "serial.read".into(),
                ..FlightCall::default()
            }],
            ..Flight::default()
        }),
        ring: Some(Err(RingDamaged)),
        deploy: true,
    }));
    same(&st);
    // Every other fixed member, one change at a time, then the figures that move.
    st.abi_version += 1;
    same(&st);
    st.net.ip = Some([10, 0, 0, 9]);
    same(&st);
    st.net.mac[5] ^= 1;
    same(&st);
    st.policy = "observe".into();
    same(&st);
    st.net.port += 1;
    same(&st);
    st.ram_bytes += 4096;
    same(&st);
    st.identity.image = Some(ImageInfo {
        deploy: indy::abi::DEPLOY_OK,
        ..st.identity.image.unwrap()
    });
    same(&st);
    st.net.requests += 1;
    st.uptime_ms += 1;
    same(&st);
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
            "dma.list",
            "debug.attach",
            "debug.detach",
            "debug.break",
            "debug.clear",
            "debug.continue",
            "debug.interrupt",
            "debug.step",
            "debug.regs",
            "debug.read",
            "debug.write"
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
    let pending = ctx.borrow().services().pending;
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
    assert!(ctx.borrow_mut().services_mut().run_due(1249).is_none());
    assert_eq!(state.resets.get(), 0);
    ctx.borrow_mut().services_mut().run_due(1250);
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
    ctx.borrow_mut().services_mut().run_due(3000);
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
            "irix7://flight/previous",
            "irix7://events",
            "irix7://serial",
            "irix7://serial/previous",
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
    ctx.services_mut().fs = Some(fs);
    let mut config = crate::tools::testing::harness::config();
    config.policy = rpc::mcp::Policy::parse_or_observe(policy).0;
    ctx.services_mut().policy = config.policy.text().into();
    let log = ctx.services_mut().audit.clone();
    config.audit = Some(Rc::new(move |r: &rpc::mcp::AuditRecord| {
        let kind = crate::tools::system::audit_ring(r);
        log.borrow_mut()
            .push(kind, &alloc::string::ToString::to_string(r));
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
    assert_eq!(lines.len(), 7, "{text}");
    assert!(
        lines[0].starts_with("# audit lines of calls since boot: 2, 2 kept, 0 dropped"),
        "{text}"
    );
    assert!(
        lines[1].ends_with("stateless fs.write {path=\"/tmp/note\",content=<16 bytes>} -> ok"),
        "{text}"
    );
    assert!(
        lines[2].contains("fs.remove {path=\"/tmp/missing\"} -> E_NOENT"),
        "{text}"
    );
    assert!(lines[3].starts_with("# audit lines of lesser"), "{text}");
    assert!(lines[4].starts_with("# refused-call summaries"), "{text}");
    assert!(lines[5].starts_with("# failed-login summaries"), "{text}");
    assert!(!text.contains("secret"));
    // The shell shows the same lines (and its own call, which is destructive, comes after).
    let r = call(&mut s, "shell.exec", json!({"command": "audit"}));
    let out = r["structuredContent"]["output"]
        .as_str()
        .unwrap_or_default();
    assert!(
        out.contains("fs.write {path=\"/tmp/note\",content=<16 bytes>}"),
        "{r}"
    );
}

#[test]
fn the_policy_shows_in_status_and_bad_values_fail_closed() {
    let mut s = audited("fs.*,status");
    let r = call(&mut s, "status", json!({}));
    assert_eq!(r["structuredContent"]["policy"], "fs.*,status");
    let r = call(&mut s, "echo", json!({"text": "x"}));
    assert_eq!(
        r["content"][0]["text"],
        "E_PERM: echo (observe) is outside mcp.policy=fs.*,status"
    );
    let mut s = audited("fs.*,,status");
    let r = request(&mut s, "resources/read", json!({"uri": "irix7://status"}));
    let text = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("policy      observe (the configured \"fs.*,,status\" is invalid)\n"),
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
            .starts_with("E_PERM: fs.write (operate) is outside mcp.policy=observe")
    );
    let listed = request(&mut s, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .all(|t| t["_meta"]["irix7/privilege"] == "observe")
    );
    assert!(tools.iter().any(|t| t["name"] == "fs.read"));
    // The refusal is counted, and summarised when its window closes.
    s.poll_audit(u64::MAX / 2);
    let text = audit_text(&mut s);
    assert!(
        text.contains("as admin 1 refused calls in 10 s (the last: fs.write -> refused by policy)"),
        "{text}"
    );
}
