//! The time bound of one poll: every heavy tool and resource, run on the real image in the
//! rig, keeps the most guest instructions any single `irix7_mcp_poll` ran (the rig counts them
//! exactly) at or under [`POLL_BOUND`], 0.1 s of the R4400 at 100 MHz. A poll that runs longer
//! keeps every other client waiting, and one past the watchdog's period resets the machine.
//!
//! The rig's figure is the largest poll since boot, so the workloads run from the lightest to
//! the heaviest and the figure is checked (and printed) after each one. Needs `cargo xtask
//! image` and `cargo xtask fixtures`; without them the test says so and returns.

mod support;

use iris::image::find_repo_root;
use serde_json::{Value, json};
use std::io::Write;
use std::net::TcpStream;
use support::guest::{Guest, boot_guest_with};
use support::http::{connect, read_response};
use support::mcp::{mcp_request, messages};

/// The most guest instructions one poll may run: 0.1 s at 100 MHz.
const POLL_BOUND: u64 = 10_000_000;
/// Free RAM above the module, as the device tests use it.
const FREE_RAM: u32 = 0x0800_8000;

/// A kept-alive connection that moves the guest clock on before each request, so a long run
/// stays under the module's rate limit per client.
struct Client<'g> {
    g: &'g Guest,
    s: TcpStream,
    buf: Vec<u8>,
    id: u64,
}

impl<'g> Client<'g> {
    fn new(g: &'g Guest) -> Self {
        Client {
            g,
            s: connect(g.mcp),
            buf: Vec::new(),
            id: 0,
        }
    }

    /// The last JSON-RPC message answering `method` with `params`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.g.rig.advance_clock(60);
        self.id += 1;
        let raw = mcp_request(
            self.id,
            method,
            params.clone(),
            json!({}),
            "application/json, text/event-stream",
        );
        self.s.write_all(raw.as_bytes()).unwrap();
        let r = read_response(&mut self.s, &mut self.buf, false)
            .unwrap_or_else(|| panic!("{method} {params}: connection closed"));
        assert_eq!(r.status, 200, "{method} {params}: {}", r.text());
        messages(&r.body)
            .pop()
            .unwrap_or_else(|| panic!("{method} {params}: no message in {}", r.text()))
    }

    /// A tool call that must succeed; its result.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let m = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let r = m["result"].clone();
        assert_ne!(r["isError"], true, "{tool}: {m}");
        assert!(r.is_object(), "{tool}: {m}");
        r
    }
}

/// Checks the largest poll so far against the bound, printing it beside the workload.
fn check(g: &Guest, workload: &str, failures: &mut Vec<String>) {
    let c = g.rig.counters();
    println!(
        "{workload:<52} max poll {:>11} insns (last {:>9}, {} polls)",
        c.max_poll_insns, c.last_poll_insns, c.polls
    );
    if c.max_poll_insns > POLL_BOUND {
        failures.push(format!("{workload}: {} insns", c.max_poll_insns));
    }
}

#[test]
fn no_poll_runs_more_than_the_bound_under_heavy_requests() {
    let image = find_repo_root().join("target/fixtures/rootfs.erofs");
    if !image.exists() {
        println!("skipped: no fixtures (run `cargo xtask fixtures`)");
        return;
    }
    let Some(g) = boot_guest_with(
        &[],
        move |o| {
            o.no_disk = false;
            o.disks = vec![(2, image)];
        },
        |_| {},
    ) else {
        return;
    };
    let mut failures = Vec::new();
    check(&g, "boot", &mut failures);
    let mut c = Client::new(&g);

    let tools = c.request("tools/list", json!({}));
    assert!(tools["result"]["tools"].as_array().is_some(), "{tools}");
    check(&g, "tools/list", &mut failures);

    for uri in [
        "irix7://status",
        "irix7://net",
        "irix7://mem",
        "irix7://serial",
    ] {
        let m = c.request("resources/read", json!({"uri": uri}));
        assert!(m["result"]["contents"].is_array(), "{uri}: {m}");
        check(&g, &format!("resources/read {uri}"), &mut failures);
    }

    let r = c.call("mem.read", json!({"addr": FREE_RAM, "length": 65536}));
    assert!(r["content"].is_array());
    check(&g, "mem.read 64 KiB", &mut failures);

    let r = c.call("block.read", json!({"lba": 0, "count": 128}));
    assert!(r["content"].is_array());
    check(&g, "block.read 128 blocks", &mut failures);

    let r = c.call("fs.list", json!({"path": "/bigdir", "limit": 1024}));
    assert_eq!(
        r["structuredContent"]["entries"].as_array().map(Vec::len),
        Some(300)
    );
    check(&g, "fs.list /bigdir (300 entries)", &mut failures);

    let r = c.call(
        "fs.read",
        json!({"path": "/big/4mib.bin", "encoding": "base64", "max_output": 8 << 20}),
    );
    let blob = r["content"][0]["resource"]["blob"].as_str().unwrap_or("");
    assert_eq!(blob.len(), (4usize << 20).div_ceil(3) * 4, "all 4 MiB");
    check(&g, "fs.read /big/4mib.bin, 8 MiB max_output", &mut failures);

    let r = c.call("shell.exec", json!({"command": "ls -l /bigdir"}));
    assert_eq!(r["structuredContent"]["exit_status"], 0, "{r}");
    check(&g, "shell.exec ls -l /bigdir", &mut failures);

    let r = c.call(
        "shell.exec",
        json!({"command": "cat /big/4mib.bin", "max_output": 1 << 20}),
    );
    assert_eq!(r["structuredContent"]["exit_status"], 0, "{r}");
    check(
        &g,
        "shell.exec cat /big/4mib.bin (1 MiB kept)",
        &mut failures,
    );

    let r = c.call("shell.exec", json!({"command": "status"}));
    assert_eq!(r["structuredContent"]["exit_status"], 0, "{r}");
    check(&g, "shell.exec status", &mut failures);

    let r = c.call("screen.capture", json!({"scale": 16}));
    assert_eq!(r["structuredContent"]["width"], 80, "{r}");
    check(&g, "screen.capture scale 16", &mut failures);

    let r = c.call("screen.capture", json!({}));
    assert_eq!(r["structuredContent"]["width"], 640, "{r}");
    check(&g, "screen.capture scale 2 (default)", &mut failures);

    let r = c.call("screen.capture", json!({"scale": 1}));
    assert_eq!(r["structuredContent"]["width"], 1280, "{r}");
    check(&g, "screen.capture scale 1, whole screen", &mut failures);

    g.rig.advance_clock(60);
    let bmp = support::http::request(
        g.mcp,
        "GET /screen.bmp HTTP/1.1\r\nHost: indy\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(bmp.status, 200);
    assert_eq!(bmp.body.len(), 54 + 1280 * 1024 * 3);
    check(&g, "GET /screen.bmp", &mut failures);

    let m = c.request("resources/read", json!({"uri": "irix7://screen"}));
    let png = m["result"]["contents"][0]["blob"].as_str().unwrap_or("");
    assert!(!png.is_empty(), "{m}");
    check(&g, "resources/read irix7://screen", &mut failures);

    assert!(
        failures.is_empty(),
        "polls over {POLL_BOUND} instructions: {failures:#?}"
    );
}
