//! The tools an agent calls most, each a small request with a small structured result,
//! measured like the small echo (the bench's `measure` on one kept-alive connection):
//! instructions and allocations per call against their budgets, so the echo probe is not the
//! only small-call figure. Then one of them by layer, to say where its instructions go.
//!
//! A guest of their own: the console line written for `serial.read` would change the screen
//! the thumbnail captures, and the fs calls would warm the LRU the fs figures count.
//!
//! Each call's tool, arguments and last structured result go to [`RESULTS`]: `cargo xtask bench
//! --update-peer-fixtures` makes that file the reference peers' answers (`tools/peers/
//! results.json`, docs/bench.md "The peers").

use crate::client::Client;
use crate::report::Report;
use crate::{PORT, boot_rig, budget, measure, status_of, stop, tool_call};
use iris::Rig;
use iris::breakdown;
use iris::image::find_repo_root;
use serde_json::{Value, json};

/// Bytes `serial.read` returns.
const SERIAL_BYTES: u64 = 1024;
/// The row whose one exchange is broken down by layer.
const BROKEN_DOWN: &str = "status";
/// Where each call's tool, arguments and result go (relative to the repository's root).
const RESULTS: &str = "target/bench/small-calls.json";

/// One small call: JSON key, label, tool and arguments, instruction budget.
struct Call {
    key: &'static str,
    what: &'static str,
    tool: &'static str,
    arguments: Value,
    budget: f64,
}

impl Call {
    fn request(&self) -> Vec<u8> {
        tool_call(self.tool, self.arguments.clone())
    }
}

/// Measures every small call on a fresh guest, prints their instructions, then their
/// allocations, then [`BROKEN_DOWN`] by layer.
pub fn run(image_path: &str, r: &mut Report) {
    let mut rig = boot_rig(image_path);
    let mut c = Client::connect(&mut rig, PORT, 40_006);
    let fs = status_of(&mut rig, &mut c).get("cache").is_some();
    let serial = serial_read_arguments(&mut rig, &mut c);
    let mut calls = vec![Call {
        key: "status",
        what: "tools/call status",
        tool: "status",
        arguments: json!({}),
        budget: budget::STATUS,
    }];
    if fs {
        calls.push(Call {
            key: "fs_stat",
            what: "tools/call fs.stat /etc/motd",
            tool: "fs.stat",
            arguments: json!({"path": "/etc/motd"}),
            budget: budget::FS_STAT,
        });
    }
    calls.push(Call {
        key: "serial_read_1k",
        what: "tools/call serial.read 1 KiB",
        tool: "serial.read",
        arguments: serial,
        budget: budget::SERIAL_READ_1K,
    });
    if fs {
        calls.push(Call {
            key: "fs_list_root",
            what: "tools/call fs.list /",
            tool: "fs.list",
            arguments: json!({"path": "/"}),
            budget: budget::FS_LIST_ROOT,
        });
    }
    calls.push(Call {
        key: "proc_list",
        what: "tools/call proc.list",
        tool: "proc.list",
        arguments: json!({}),
        budget: budget::PROC_LIST,
    });

    println!("small tool calls (a guest of their own, kept-alive connection):");
    if !fs {
        println!(
            "  no filesystem mounted (run `cargo xtask fixtures`): fs.stat and fs.list skipped"
        );
    }
    let mut measured = Vec::new();
    let mut results = Vec::new();
    for call in &calls {
        let m = measure(&mut rig, &mut c, &call.request(), 10);
        check(&c, call);
        results.push(
            json!({"key": call.key, "tool": call.tool, "arguments": call.arguments,
            "result": c.json_body()["result"]["structuredContent"]}),
        );
        r.figure(
            call.key,
            call.what,
            m.insns as f64,
            "insns/request",
            Some(call.budget),
        );
        measured.push((call, m));
    }
    write_results(&results);
    println!("small tool calls: heap allocations per request:");
    for (call, m) in &measured {
        r.figure(
            &format!("allocations_{}", call.key),
            &format!("{}: allocations", call.what),
            m.allocs,
            "allocs/request",
            Some(budget::ALLOCS_SMALL_CALL),
        );
        r.figure(
            &format!("alloc_bytes_{}", call.key),
            &format!("{}: bytes allocated", call.what),
            m.alloc_bytes,
            "bytes/request",
            None,
        );
    }
    // Under a `--profile` filter that matched it, `measure` has printed its layers already.
    if let Some((call, None)) = measured
        .iter()
        .map(|(call, m)| (call, m.profile.as_ref()))
        .find(|(call, _)| call.key == BROKEN_DOWN)
    {
        by_layer(&mut rig, &mut c, call);
    }
    stop(&mut rig);
}

/// Each call's tool, arguments and structured result, in the order measured, to [`RESULTS`].
fn write_results(results: &[Value]) {
    let path = find_repo_root().join(RESULTS);
    let text = serde_json::to_string_pretty(results).expect("JSON") + "\n";
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    println!("  their results: {RESULTS}");
}

/// `serial.read` of 1 KiB of console text: one console write of exactly that many bytes
/// (sixteen 64-byte lines, each 58 bytes of text behind the 6-byte mark `[mcp] `), read back
/// from its offset, so every image reads the same bytes whatever its boot banner. Returns the
/// read's arguments.
fn serial_read_arguments(rig: &mut Rig, c: &mut Client) -> Value {
    let line = format!(
        "{:<57}\n",
        "irix7 bench: a line of console text to read back"
    );
    let text = line.repeat((SERIAL_BYTES / 64) as usize);
    c.exchange(rig, &tool_call("serial.write", json!({"text": text})), 1);
    let result = &c.json_body()["result"]["structuredContent"];
    assert_eq!(
        result["bytes"].as_u64(),
        Some(SERIAL_BYTES),
        "serial.write: {result}"
    );
    let head = result["serial_head"]
        .as_u64()
        .expect("serial.write's serial_head");
    json!({"offset": head - SERIAL_BYTES, "max_bytes": SERIAL_BYTES})
}

/// Fails the bench when a measured call answered with an error, or `serial.read` returned
/// other than 1 KiB: the figure would describe another path.
fn check(c: &Client, call: &Call) {
    let body = c.json_body();
    let result = &body["result"];
    assert!(
        result.is_object() && result["isError"] != true,
        "{} failed: {body}",
        call.what
    );
    if call.key == "serial_read_1k" {
        assert_eq!(
            result["structuredContent"]["bytes"].as_u64(),
            Some(SERIAL_BYTES),
            "{}: {body}",
            call.what
        );
    }
}

/// One more exchange of `call` under the profiler: its self instructions by layer.
fn by_layer(rig: &mut Rig, c: &mut Client, call: &Call) {
    rig.profile_start().expect("profiler");
    let (insns, _) = c.exchange(rig, &call.request(), 1);
    let p = rig.profile_stop().expect("profiler").unwrap_or_default();
    println!(
        "  {} by layer (one exchange, {insns} insns, self instructions):",
        call.what
    );
    print!("{}", breakdown::report(&p, None));
}
