//! Watching the machine live, on the real image: `serial.read` waits on the console (`until`,
//! `wait_ms`) without the client polling, a bounded number of waiters never starves other
//! clients, `shell.exec` streams its output as it runs, and files, processes and devices are
//! resources (`irix7://fs/{+path}`, `irix7://proc`, `irix7://dev`) in both eras.
//!
//! The shell and resource test needs `cargo xtask fixtures` (it attaches the fixture disk);
//! without it that test says so and returns.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use iris::image::find_repo_root;
use serde_json::{Value, json};
use support::guest::{Guest, HOST, TOKEN, boot_guest, boot_guest_with_disk};
use support::http::{Stream, connect, read_response, request};
use support::mcp::{GuestClient, call_tool, mcp_request, messages, tool_ok};

const ACCEPT: &str = "application/json, text/event-stream";

/// Opens a `serial.read` that waits, on a connection of its own (2026-07-28).
fn open_wait(addr: SocketAddr, args: Value) -> Stream {
    let raw = mcp_request(
        1,
        "tools/call",
        json!({"name": "serial.read", "arguments": args}),
        json!({}),
        ACCEPT,
    );
    Stream::open(addr, &raw)
}

/// Reads a response to its end: an event stream until its last chunk, a JSON answer (on a
/// kept-alive connection) until its `Content-Length`.
fn finish(s: &mut Stream) {
    match s
        .header("content-length")
        .and_then(|l| l.parse::<usize>().ok())
    {
        Some(len) => {
            while s.body.len() < len {
                assert!(s.more(), "closed before the answer's end");
            }
        }
        None => while s.more() {},
    }
}

/// Reads a response to its end; its last JSON-RPC message's `result`.
fn result_of(s: &mut Stream) -> Value {
    finish(s);
    let msgs = messages(&s.body);
    let last = msgs.last().unwrap_or_else(|| {
        panic!(
            "no message in {}",
            String::from_utf8_lossy(&s.body).into_owned()
        )
    });
    last["result"].clone()
}

/// The console's head (bytes ever written) now.
fn console_head(g: &Guest) -> u64 {
    tool_ok(g.mcp, "serial.read", json!({"max_bytes": 1}))["head"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_wait_returns_when_the_text_appears_and_at_the_deadline_when_it_does_not() {
    let Some(g) = boot_guest(&[]) else { return };
    let head = console_head(&g);
    let needle = "watch-banner-5e0d";
    let mut waiter = open_wait(
        g.mcp,
        json!({"offset": head, "until": needle, "wait_ms": 60_000}),
    );
    assert_eq!(waiter.status, 200);
    // A wait is answered as an event stream, so keep-alives can flow.
    assert_eq!(waiter.header("content-type"), Some("text/event-stream"));

    // A second client writes the text.
    let wrote = tool_ok(
        g.mcp,
        "console.write",
        json!({"text": format!("boot done: {needle}")}),
    );
    assert!(wrote["bytes"].as_u64().unwrap() > 0);
    let polls_after_write = g.rig.counters().polls;
    let t = Instant::now();
    let r = result_of(&mut waiter);
    let took = t.elapsed();
    let polls = g.rig.counters().polls.saturating_sub(polls_after_write);
    println!("the wait answered {took:?} and {polls} polls after console.write did");
    assert_ne!(r["isError"], true, "{r}");
    let st = &r["structuredContent"];
    assert_eq!(st["matched"], true, "{st}");
    let at = st["match_offset"].as_u64().unwrap();
    assert!(at >= head, "{st}");
    let data = st["data"].as_str().unwrap();
    assert!(data.ends_with(needle), "data ends at the match: {data:?}");
    assert_eq!(st["next_offset"].as_u64(), Some(at + needle.len() as u64));
    // The counters lag by ~20 ms, and the answer crosses the rig's network: a handful of
    // polls, not a client's polling interval.
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(polls <= 20, "{polls} polls");

    // Text that never comes: the answer comes at the deadline, with what is there.
    let head = console_head(&g);
    let mut waiter = open_wait(
        g.mcp,
        json!({"offset": head, "until": "never-written-91b2", "wait_ms": 4000}),
    );
    let t = Instant::now();
    g.rig.advance_clock(4000);
    let r = result_of(&mut waiter);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "the rig clock's jump ended it"
    );
    let st = &r["structuredContent"];
    assert_eq!(
        (st["matched"].as_bool(), st["eof"].as_bool()),
        (Some(false), Some(true))
    );
    assert!(st.get("match_offset").is_none(), "{st}");

    // Without `until`, the first byte past the offset ends the wait.
    let head = console_head(&g);
    let mut waiter = open_wait(g.mcp, json!({"offset": head, "wait_ms": 60_000}));
    tool_ok(g.mcp, "serial.write", json!({"text": "x"}));
    let st = result_of(&mut waiter)["structuredContent"].clone();
    assert_eq!(st["offset"].as_u64(), Some(head));
    assert!(st["bytes"].as_u64().unwrap() > 0, "{st}");
}

/// A legacy session (its id), initialised on a connection of its own.
fn legacy_session(g: &Guest) -> String {
    g.rig.advance_clock(60);
    let init = request(
        g.mcp,
        &String::from_utf8_lossy(&rpc::testing::McpRequest::initialize("2025-11-25").http(
            "/mcp",
            HOST,
            Some(TOKEN),
        )),
    );
    assert_eq!(init.status, 200, "{}", init.text());
    let sid = init.header("mcp-session-id").unwrap().to_string();
    g.rig.advance_clock(60);
    let done = rpc::testing::McpRequest::legacy(&sid, "notifications/initialized", json!({}))
        .replace_body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let r = request(
        g.mcp,
        &String::from_utf8_lossy(&done.http("/mcp", HOST, Some(TOKEN))),
    );
    assert_eq!(r.status, 202, "{}", r.text());
    sid
}

#[test]
fn idle_waiters_are_bounded_and_other_clients_still_get_answers() {
    let Some(g) = boot_guest(&[]) else { return };
    let head = console_head(&g);
    // Two legacy sessions of one token: the token's share of the waiters (half of the 4 on
    // the rig's heap, whichever of its sessions asks) is what refuses, not its 4 calls.
    let sessions = [legacy_session(&g), legacy_session(&g)];
    let args = json!({"offset": head, "until": "never-written-0c4e", "wait_ms": 300_000});
    let (mut waiting, mut busy) = (Vec::new(), 0);
    for i in 0..100 {
        g.rig.advance_clock(60);
        let sid = &sessions[i % 2];
        let req = rpc::testing::McpRequest::legacy(
            sid,
            "tools/call",
            json!({"name": "serial.read", "arguments": args}),
        )
        .id(i as u64);
        let raw = String::from_utf8_lossy(&req.http("/mcp", HOST, Some(TOKEN))).into_owned();
        let mut s = Stream::open(g.mcp, &raw);
        assert_eq!(s.status, 200, "attempt {i}");
        if waiting.len() < 2 {
            assert_eq!(s.header("content-type"), Some("text/event-stream"));
            waiting.push(s);
            continue;
        }
        // Refused at once, with a result the model can read; the refused client goes away.
        let r = result_of(&mut s);
        assert_eq!(r["isError"], true, "attempt {i}: {r}");
        assert_eq!(
            r["content"][0]["text"],
            "E_BUSY: this token's calls already wait on the console as many times as it may; \
             retry later"
        );
        busy += 1;
    }
    assert_eq!((waiting.len(), busy), (2, 98));

    // Another client is answered promptly while the waiters wait.
    let t = Instant::now();
    let st = tool_ok(g.mcp, "status", json!({}));
    assert!(st["uptime_ms"].as_u64().is_some());
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let mut c = GuestClient::new(&g);
    for _ in 0..5 {
        let t = Instant::now();
        c.ok("status", json!({}));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
    // Idle waiters cost the machine next to nothing: no poll grew long.
    let max = g.rig.counters().max_poll_insns;
    println!("longest poll with 2 waiters: {max} instructions");

    // Silence on a waiting stream gets keep-alives (the rig clock jumps past 5 s).
    g.rig.advance_clock(6_000);
    let w = &mut waiting[0];
    let t = Instant::now();
    while !String::from_utf8_lossy(&w.body).contains(": keep-alive") {
        assert!(w.more(), "the waiter's stream ended");
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    // Closed waiters give their places back: a new wait is taken again.
    drop(waiting);
    let t = Instant::now();
    loop {
        let mut s = open_wait(g.mcp, args.clone());
        if s.header("content-type") == Some("text/event-stream") {
            break;
        }
        let r = result_of(&mut s);
        assert!(
            r["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("E_BUSY"),
            "{r}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "places never came back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The fixture disk, or `None` (said) when `cargo xtask fixtures` has not run.
fn fixture_disk() -> Option<std::path::PathBuf> {
    let p = find_repo_root().join("target/fixtures/rootfs.erofs");
    if !p.exists() {
        println!("skipped: no {} (run `cargo xtask fixtures`)", p.display());
        return None;
    }
    Some(p)
}

#[test]
fn shell_output_streams_in_order_and_files_are_resources() {
    let Some(disk) = fixture_disk() else { return };
    let Some(g) = boot_guest_with_disk(&[], disk) else {
        return;
    };
    let mut c = GuestClient::new(&g);
    let text: String = (0..9000).map(|i| format!("line {i:05}\n")).collect();
    assert!(text.len() > 90_000);
    c.ok("fs.write", json!({"path": "/watch.txt", "content": text}));

    // shell.exec with a progress token: the output comes as progress messages, in order,
    // then the result with all of it.
    g.rig.advance_clock(60);
    let raw = mcp_request(
        7,
        "tools/call",
        json!({"name": "shell.exec", "arguments": {"command": "cat /watch.txt"}}),
        json!({"progressToken": "out-1"}),
        ACCEPT,
    );
    let mut s = Stream::open(g.mcp, &raw);
    assert_eq!(s.header("content-type"), Some("text/event-stream"));
    finish(&mut s);
    let msgs = messages(&s.body);
    let (result, notices) = msgs.split_last().unwrap();
    let mut streamed = String::new();
    for m in notices {
        assert_eq!(m["method"], "notifications/progress", "{m}");
        assert_eq!(m["params"]["progressToken"], "out-1");
        streamed.push_str(m["params"]["message"].as_str().unwrap());
        assert_eq!(
            m["params"]["progress"].as_u64(),
            Some(streamed.len() as u64)
        );
    }
    assert!(notices.len() > 20, "{} messages", notices.len());
    assert_eq!(result["id"], 7);
    let whole = result["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(whole, text);
    assert_eq!(streamed, text, "the messages carry the output in order");

    // The same file as a resource, in both eras; templates listed in both.
    let m = c.request("resources/read", json!({"uri": "irix7://fs/watch.txt"}));
    let item = &m["result"]["contents"][0];
    assert_eq!(item["mimeType"], "text/plain");
    assert_eq!(item["text"].as_str().unwrap(), text);
    let m = c.request("resources/templates/list", json!({}));
    assert_eq!(
        m["result"]["resourceTemplates"][0]["uriTemplate"],
        "irix7://fs/{+path}"
    );
    let sid = legacy_session(&g);
    let legacy = |method: &str, params: Value| {
        g.rig.advance_clock(60);
        let req = rpc::testing::McpRequest::legacy(&sid, method, params);
        let mut st = connect(g.mcp);
        std::io::Write::write_all(&mut st, &req.http("/mcp", HOST, Some(TOKEN))).unwrap();
        let r = read_response(&mut st, &mut Vec::new(), false).unwrap();
        assert_eq!(r.status, 200, "{method}: {}", r.text());
        messages(&r.body).pop().unwrap()
    };
    let m = legacy("resources/read", json!({"uri": "irix7://fs/watch.txt"}));
    assert_eq!(m["result"]["contents"][0]["text"].as_str().unwrap(), text);
    let m = legacy("resources/templates/list", json!({}));
    assert_eq!(
        m["result"]["resourceTemplates"][0]["uriTemplate"],
        "irix7://fs/{+path}"
    );
    let m = legacy("resources/read", json!({"uri": "irix7://fs/no/such/file"}));
    assert_eq!(m["error"]["code"], -32002, "legacy not found: {m}");
    for uri in ["irix7://proc", "irix7://dev"] {
        let m = legacy("resources/read", json!({"uri": uri}));
        let text = m["result"]["contents"][0]["text"].as_str().unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        assert!(v.is_object(), "{uri}: {v}");
    }
    let procs = c.request("resources/read", json!({"uri": "irix7://proc"}));
    let v: Value =
        serde_json::from_str(procs["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert!(v["count"].as_u64().unwrap() > 0, "{v}");
    // A file tool call still works beside: the resource did not hold the filesystem.
    let r = call_tool(g.mcp, "fs.stat", json!({"path": "/watch.txt"}));
    assert_eq!(r["structuredContent"]["size"], text.len());
}
