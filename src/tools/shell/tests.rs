//! `shell.exec` through the real MCP server.

use crate::services::fs::overlay::{Overlay, WriteMode};
use crate::tools::Ctx;
use crate::tools::testing::fake;
use crate::tools::testing::harness::{call, server, server_with};
use alloc::string::String;
use alloc::vec::Vec;
use rpc::http::{Body, BodyPoll, Response};
use rpc::mcp::McpServer;
use rpc::testing::{McpRequest, messages};
use serde_json::{Value, json};

/// A context with a RAM-only filesystem holding a few files.
fn ctx_with_files() -> Ctx {
    let (mut ctx, _) = fake::ctx_and_state();
    let mut fs = Overlay::new(None, 16 << 20);
    fs.mkdir("/etc").unwrap();
    fs.write("/etc/motd", b"Welcome to IRIX 7\n", WriteMode::Truncate)
        .unwrap();
    fs.write("/etc/hosts", b"127.0.0.1 localhost\n", WriteMode::Truncate)
        .unwrap();
    fs.mkdir("/var").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    fs.write("/var/big", &big, WriteMode::Truncate).unwrap();
    ctx.services_mut().fs = Some(fs);
    ctx
}

fn exec(s: &mut McpServer<Ctx>, command: &str) -> Value {
    call(s, "shell.exec", json!({ "command": command }))
}

/// The structured result of a command that ran.
fn run(s: &mut McpServer<Ctx>, command: &str) -> Value {
    let r = exec(s, command);
    assert_ne!(r["isError"], true, "{command}: {r}");
    r["structuredContent"].clone()
}

fn output(s: &mut McpServer<Ctx>, command: &str) -> String {
    let st = run(s, command);
    assert_eq!(st["exit_status"], 0, "{command}: {st}");
    String::from(st["output"].as_str().unwrap())
}

#[test]
fn quick_builtins() {
    let mut s = server();
    assert_eq!(
        output(&mut s, "echo hello   'big  world'"),
        "hello big  world\n"
    );
    assert_eq!(output(&mut s, "echo -n x"), "x");
    assert_eq!(output(&mut s, "uname"), "IRIX\n");
    assert_eq!(output(&mut s, "uname -sr"), "IRIX 7.0.0\n");
    let all = output(&mut s, "uname -a");
    assert!(all.starts_with("IRIX indy 7.0.0 irix7-mcp-") && all.ends_with(" IP22\n"));
    assert_eq!(output(&mut s, "uptime"), "up 0d 00:00:12.345\n");
    assert!(output(&mut s, "time").starts_with("2026-11-30 00:53:20 UTC (unix 1796000000)\n"));
    assert!(output(&mut s, "status").contains("ip          172.31.77.2"));
    assert!(output(&mut s, "net").contains("mcp port    7801"));
    assert!(output(&mut s, "mem").contains("heap peak   2000 bytes"));
    let ps = output(&mut s, "ps");
    assert!(ps.starts_with("  PID STATE"), "{ps}");
    assert!(ps.contains("    5 running       1500 mcpd\n"), "{ps}");
    let help = output(&mut s, "help");
    for b in crate::services::shell::builtins::BUILTINS {
        assert!(help.contains(b.usage), "help lists {}", b.name);
    }
}

#[test]
fn the_result_carries_the_output_as_text_and_structured() {
    let mut s = server();
    let r = exec(&mut s, "echo hi");
    assert_eq!(r["content"][0]["text"], "hi\n");
    assert_eq!(
        r["structuredContent"],
        json!({"command": "echo hi", "exit_status": 0, "output": "hi\n",
               "output_bytes": 3, "truncated": false})
    );
}

#[test]
fn usage_errors_are_exit_status_2() {
    let mut s = server();
    for cmd in [
        "uname -x",
        "uptime now",
        "sleep",
        "sleep abc",
        "cat",
        "ls -z",
    ] {
        let st = run(&mut s, cmd);
        assert_eq!(st["exit_status"], 2, "{cmd}: {st}");
        assert!(st["output"].as_str().unwrap().contains("usage: "), "{cmd}");
    }
    let st = run(&mut s, "sleep 3601");
    assert_eq!(st["exit_status"], 1);
}

#[test]
fn unknown_commands_and_bad_lines_are_tool_errors() {
    let mut s = server();
    let r = exec(&mut s, "rm -rf /");
    assert_eq!(r["isError"], true);
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("E_NOT_FOUND: unknown command `rm`; builtins: help, echo,"),
        "{text}"
    );
    assert!(text.contains("`help`"), "{text}");
    let r = exec(&mut s, "echo 'open");
    assert_eq!(r["content"][0]["text"], "E_INVAL: unclosed ' quote");
    let r = exec(&mut s, "ls | cat");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_INVAL: `|` is not supported")
    );
    let r = exec(&mut s, "   ");
    assert_eq!(
        r["content"][0]["text"],
        "E_INVAL: empty command; try `help`"
    );
}

#[test]
fn ls_lists_the_merged_filesystem() {
    let mut s = server_with(ctx_with_files());
    assert_eq!(output(&mut s, "ls"), "etc\nvar\n");
    assert_eq!(output(&mut s, "ls /etc"), "hosts\nmotd\n");
    let long = output(&mut s, "ls -l /etc");
    assert!(
        long.contains(" 20 hosts\n") && long.contains(" 18 motd\n"),
        "{long}"
    );
    assert!(long.starts_with('-'), "{long}");
    assert_eq!(output(&mut s, "ls /etc/motd"), "/etc/motd\n");
    assert_eq!(
        output(&mut s, "ls /etc /var"),
        "/etc:\nhosts\nmotd\n\n/var:\nbig\n"
    );
    let st = run(&mut s, "ls /nope /etc");
    assert_eq!(st["exit_status"], 1);
    let out = st["output"].as_str().unwrap();
    assert!(out.starts_with("ls: /nope: E_NOENT"), "{out}");
    assert!(out.ends_with("/etc:\nhosts\nmotd\n"), "{out}");
}

#[test]
fn ls_pages_through_big_directories_up_to_its_limit() {
    let mut ctx = ctx_with_files();
    let fs = ctx.services_mut().fs.as_mut().unwrap();
    fs.mkdir("/many").unwrap();
    for i in 0..4100 {
        fs.write(&std::format!("/many/f{i:05}"), b"", WriteMode::Truncate)
            .unwrap();
    }
    let mut s = server_with(ctx);
    let r = exec(&mut s, "ls /many");
    assert_eq!(r["structuredContent"]["exit_status"], 0);
    let out = r["content"][0]["text"].as_str().unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4097);
    assert_eq!(lines[0], "f00000");
    assert_eq!(lines[4095], "f04095");
    assert_eq!(lines[4096], "... 4 more entries (ls lists at most 4096)");
    // Two directories, each paged, keep their order and headers.
    let out = output(&mut s, "ls /var /etc");
    assert_eq!(out, "/var:\nbig\n\n/etc:\nhosts\nmotd\n");
    assert!(output(&mut s, "mem").contains("overlay     "));
}

#[test]
fn cat_prints_files_and_reports_failures() {
    let mut s = server_with(ctx_with_files());
    assert_eq!(
        output(&mut s, "cat /etc/motd /etc/hosts"),
        "Welcome to IRIX 7\n127.0.0.1 localhost\n"
    );
    let st = run(&mut s, "cat /etc/motd /missing /etc");
    assert_eq!(st["exit_status"], 1);
    let out = st["output"].as_str().unwrap();
    assert!(
        out.starts_with("Welcome to IRIX 7\ncat: /missing: E_NOENT"),
        "{out}"
    );
    assert!(out.contains("cat: /etc: E_ISDIR"), "{out}");
}

#[test]
fn ls_and_cat_without_a_filesystem() {
    let mut s = server();
    let st = run(&mut s, "ls");
    assert_eq!(
        (st["exit_status"].as_i64(), st["output"].as_str()),
        (Some(1), Some("ls: no filesystem mounted\n"))
    );
    let st = run(&mut s, "cat /etc/motd");
    assert_eq!(st["exit_status"], 1);
}

#[test]
fn big_output_is_capped_and_only_streamed() {
    let mut s = server_with(ctx_with_files());
    let r = call(
        &mut s,
        "shell.exec",
        json!({"command": "cat /var/big /etc/motd", "max_output": 100_000}),
    );
    let st = &r["structuredContent"];
    assert_eq!(st["exit_status"], 0);
    assert_eq!(st["truncated"], true);
    assert_eq!(st["output_bytes"], 100_000);
    assert!(
        st.get("output").is_none(),
        "over 16 KiB: only in the text block"
    );
    let text = r["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), 100_000);
    assert!(text.starts_with("abcdefghijklmnopqrstuvwxyzabc"));
    // The whole file fits in the default cap.
    let r = exec(&mut s, "cat /var/big");
    assert_eq!(r["structuredContent"]["output_bytes"], 300_000);
    assert_eq!(r["structuredContent"]["truncated"], false);
    assert_eq!(r["content"][0]["text"].as_str().unwrap().len(), 300_000);
    // Exactly at the cap is not truncated.
    let r = call(
        &mut s,
        "shell.exec",
        json!({"command": "cat /etc/motd", "max_output": 18}),
    );
    assert_eq!(r["structuredContent"]["truncated"], false);
}

#[test]
fn reboot_and_poweroff_are_scheduled_after_the_answer() {
    let (ctx, state) = fake::ctx_and_state();
    let mut s = server_with(ctx);
    assert_eq!(output(&mut s, "reboot"), "rebooting in 250 ms\n");
    assert_eq!(state.resets.get(), 0);
    let st = run(&mut s, "poweroff");
    assert_eq!(st["exit_status"], 1, "a reset is already pending");
    let ctx = s.context().clone();
    ctx.borrow_mut().services_mut().run_due(1250);
    assert_eq!((state.resets.get(), state.poweroffs.get()), (1, 0));
}

// ---- Long commands over SSE, with the clock under the test's control ----

/// Starts a modern `shell.exec` call with a progress token; the response is an SSE stream.
fn start_sse(s: &mut McpServer<Ctx>, command: &str, now: u64) -> Response {
    let r = McpRequest::modern(
        "tools/call",
        json!({"name": "shell.exec", "arguments": {"command": command}}),
    )
    .id(7)
    .meta("progressToken", json!("p1"))
    .send(s, now);
    assert_eq!(r.status, 200);
    assert_eq!(r.headers.get("Content-Type"), Some("text/event-stream"));
    r
}

/// Polls the body once at `now`; returns the JSON messages completed so far and whether the
/// body ended.
fn poll(r: &mut Response, buf: &mut Vec<u8>, now: u64) -> bool {
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream")
    };
    src.poll(buf, 65536, now) == BodyPoll::End
}

fn progress_values(msgs: &[Value]) -> Vec<(f64, f64)> {
    msgs.iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p1");
            (
                m["params"]["progress"].as_f64().unwrap(),
                m["params"]["total"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn sleep_runs_across_polls_with_increasing_progress() {
    let mut s = server();
    let mut r = start_sse(&mut s, "sleep 5", 10_000);
    let mut buf = Vec::new();
    let mut ended = false;
    // Poll every 50 ms of clock: progress is sent at most every 100 ms.
    let mut now = 10_000;
    while !ended && now <= 20_000 {
        ended = poll(&mut r, &mut buf, now);
        now += 50;
    }
    assert!(ended, "sleep 5 ends");
    assert!(now > 15_000, "not before 5 s passed (ended at {now})");
    let msgs = messages(&buf);
    let progress = progress_values(&msgs);
    assert!(progress.len() >= 40, "{} progress notices", progress.len());
    assert!(progress.len() <= 51, "throttled: {}", progress.len());
    assert!(progress.windows(2).all(|w| w[0].0 < w[1].0), "increasing");
    assert!(progress.iter().all(|p| p.1 == 5000.0 && p.0 < 5000.0));
    let last = msgs.last().unwrap();
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["structuredContent"]["exit_status"], 0);
}

#[test]
fn cancelling_a_sleep_stops_it() {
    let mut s = server();
    let mut r = start_sse(&mut s, "sleep 5", 0);
    let mut buf = Vec::new();
    for t in (0..1000).step_by(100) {
        assert!(!poll(&mut r, &mut buf, t));
    }
    assert!(!progress_values(&messages(&buf)).is_empty());
    let Body::Stream(src) = &mut r.body else {
        panic!()
    };
    src.cancel();
    let seen = buf.len();
    // Past the sleep's end nothing more comes: no result, the stream is over.
    assert!(poll(&mut r, &mut buf, 60_000));
    assert_eq!(buf.len(), seen);
    assert!(
        messages(&buf).iter().all(|m| m.get("result").is_none()),
        "no result after cancel"
    );
    drop(r);
    // The cancelled call no longer counts against the 4 calls a client may run at once.
    let running: Vec<Response> = (0..4).map(|_| start_sse(&mut s, "sleep 5", 0)).collect();
    let r = exec(&mut s, "echo fifth");
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("E_BUSY")
    );
    drop(running);
}

#[test]
fn a_big_cat_streams_its_output_in_order_before_the_result() {
    let mut s = server_with(ctx_with_files());
    let mut r = start_sse(&mut s, "cat /etc/motd /var/big /etc/hosts", 0);
    let mut buf = Vec::new();
    let mut polls = 0;
    let mut now = 0;
    while !poll(&mut r, &mut buf, now) {
        polls += 1;
        now += 100;
        assert!(polls < 1000);
    }
    let msgs = messages(&buf);
    let (result, notices) = msgs.split_last().unwrap();
    let mut streamed = String::new();
    let mut last = 0.0;
    for m in notices {
        assert_eq!(m["method"], "notifications/progress", "{m}");
        let p = &m["params"];
        let text = p["message"].as_str().unwrap();
        // 64 KiB a step from cat, at most 4 KiB a message: many messages, each counting the
        // output bytes sent so far.
        assert!(!text.is_empty() && text.len() <= 4096);
        streamed.push_str(text);
        let progress = p["progress"].as_f64().unwrap();
        assert!(progress > last);
        assert_eq!(progress, streamed.len() as f64);
        assert!(p.get("total").is_none());
        last = progress;
    }
    assert!(notices.len() >= 74, "{} messages", notices.len());
    let whole = result["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(whole.len(), 300_000 + 18 + 20);
    assert_eq!(
        streamed, whole,
        "the messages carry the whole output, in order"
    );
    assert!(whole.starts_with("Welcome to IRIX 7\nabcdef"));
    assert_eq!(result["result"]["structuredContent"]["exit_status"], 0);
}

#[test]
fn without_a_progress_token_the_output_comes_only_in_the_result() {
    let mut s = server_with(ctx_with_files());
    let st = run(&mut s, "cat /var/big");
    assert_eq!(st["output_bytes"], 300_000);
    assert_eq!(st["exit_status"], 0);
}

#[test]
fn streamed_pieces_keep_characters_whole() {
    let (mut ctx, _) = fake::ctx_and_state();
    let mut fs = Overlay::new(None, 16 << 20);
    // 3-byte characters: 4096 is not a multiple of 3, so pieces must be cut short.
    let text = "\u{20ac}".repeat(5000);
    fs.write("/euro", text.as_bytes(), WriteMode::Truncate)
        .unwrap();
    ctx.services_mut().fs = Some(fs);
    let mut s = server_with(ctx);
    let mut r = start_sse(&mut s, "cat /euro", 0);
    let mut buf = Vec::new();
    let mut now = 0;
    while !poll(&mut r, &mut buf, now) {
        now += 100;
        assert!(now < 100_000);
    }
    let msgs = messages(&buf);
    let (_, notices) = msgs.split_last().unwrap();
    let streamed: String = notices
        .iter()
        .map(|m| m["params"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, text, "no U+FFFD from a cut character");
}

#[test]
fn concurrent_outputs_past_the_shared_budget_are_refused_with_busy() {
    // 300 000 bytes held in a buffer that doubles from 64 KiB: 512 KiB charged per call. Two
    // fit under 1.2 MB, three do not.
    let mut ctx = ctx_with_files();
    let pool = crate::services::shell::output::pool(8 * 1_200_000);
    ctx.services_mut().shell_output = pool.clone();
    let mut s = server_with(ctx);
    let start = |s: &mut McpServer<Ctx>| {
        McpRequest::modern(
            "tools/call",
            json!({"name": "shell.exec", "arguments": {"command": "cat /var/big"}}),
        )
        .send(s, 0)
    };
    let mut calls: Vec<(Response, Vec<u8>, bool)> =
        (0..3).map(|_| (start(&mut s), Vec::new(), false)).collect();
    // Step all three side by side until each has its whole answer; nothing streams out of a
    // body before its command is done, so all three outputs are held at once.
    for now in 0..1000 {
        for (r, buf, ended) in calls.iter_mut().filter(|c| !c.2) {
            *ended = poll(r, buf, now);
        }
        if calls.iter().all(|c| c.2) {
            break;
        }
    }
    let results: Vec<Value> = calls
        .iter()
        .map(|(_, buf, ended)| {
            assert!(ended);
            messages(buf).pop().unwrap()["result"].clone()
        })
        .collect();
    let refused: Vec<&Value> = results.iter().filter(|r| r["isError"] == true).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    let text = refused[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("E_BUSY: shell output budget exhausted: running commands hold ")
            && text.contains(" of 1200000 bytes"),
        "{text}"
    );
    for r in results.iter().filter(|r| r["isError"] != true) {
        assert_eq!(r["structuredContent"]["output_bytes"], 300_000);
    }
    // Everything was given back once the answers went out; the peak stayed under the limit.
    let u = pool.usage();
    assert_eq!((u.used, u.limit, u.refused), (0, 1_200_000, 1));
    assert!(u.peak <= u.limit && u.peak >= 2 * 300_000, "{u:?}");
    // With the budget free again the same command runs.
    let r = call(&mut s, "shell.exec", json!({"command": "cat /var/big"}));
    assert_eq!(r["structuredContent"]["output_bytes"], 300_000, "{r}");
    assert_eq!(pool.usage().used, 0);
}

#[test]
fn pieces_end_on_whole_characters_until_the_command_ends() {
    use super::{STREAM_PIECE, next_piece};
    let euro = "\u{20ac}".as_bytes();
    // Half a character printed so far: nothing yet; once the command ended, what there is.
    assert_eq!(next_piece(&euro[..2], false), b"");
    assert_eq!(next_piece(&euro[..2], true), &euro[..2]);
    let text = "\u{20ac}".repeat(2000);
    let p = next_piece(text.as_bytes(), false);
    assert!(core::str::from_utf8(p).is_ok());
    assert_eq!(
        p.len(),
        STREAM_PIECE - STREAM_PIECE % 3,
        "cut before the split character"
    );
    assert_eq!(
        next_piece(text.as_bytes(), true).len(),
        p.len(),
        "also when ended"
    );
    // Printed so far up to the middle of a character: the piece stops before it.
    let bytes = "ab\u{20ac}".as_bytes();
    assert_eq!(next_piece(&bytes[..4], false), b"ab");
    assert_eq!(next_piece(&bytes[..5], false), &bytes[..5]);
    assert_eq!(next_piece(b"", true), b"");
}
