//! The time bound of one poll: every heavy tool and resource, run on the real image in the
//! rig, keeps the most guest instructions any single `irix7_mcp_poll` ran (the rig counts them
//! exactly) at or under [`POLL_BOUND`], 0.1 s of the R4400 at 100 MHz. A poll that runs longer
//! keeps every other client waiting, and one past the watchdog's period resets the machine.
//!
//! The rig's figure is the largest poll since boot, so each workload runs on a guest of its
//! own; its figure is printed and checked. Needs `cargo xtask image` and `cargo xtask
//! fixtures`; without them the test says so and returns.

mod support;

use iris::image::find_repo_root;
use serde_json::json;
use support::guest::{Guest, TOKEN, boot_guest_with_disk};
use support::mcp::GuestClient;

/// The most guest instructions one poll may run: 0.1 s at 100 MHz.
const POLL_BOUND: u64 = 10_000_000;
/// Free RAM above the module, as the device tests use it.
const FREE_RAM: u32 = 0x0800_8000;

/// Boots a fresh guest with the fixture image on target 2, runs `workload` on it and checks
/// the largest poll it ran against the bound, printing the figure; a fresh guest per workload
/// because the rig's figure is the largest since boot.
fn measure(name: &str, failures: &mut Vec<String>, workload: impl FnOnce(&Guest)) {
    let image = find_repo_root().join("target/fixtures/rootfs.erofs");
    let Some(g) = boot_guest_with_disk(&[], image) else {
        return;
    };
    workload(&g);
    let c = g.rig.counters();
    println!(
        "{name:<44} max poll {:>11} insns ({} polls)",
        c.max_poll_insns, c.polls
    );
    if c.max_poll_insns > POLL_BOUND {
        failures.push(format!("{name}: {} insns", c.max_poll_insns));
    }
}

#[test]
fn no_poll_runs_more_than_the_bound_under_heavy_requests() {
    if !find_repo_root()
        .join("target/fixtures/rootfs.erofs")
        .exists()
    {
        println!("skipped: no fixtures (run `cargo xtask fixtures`)");
        return;
    }
    let mut failures = Vec::new();
    let f = &mut failures;

    measure("tools/list", f, |g| {
        let tools = GuestClient::new(g).request("tools/list", json!({}));
        assert!(tools["result"]["tools"].as_array().is_some(), "{tools}");
    });
    for uri in [
        "irix7://status",
        "irix7://net",
        "irix7://mem",
        "irix7://serial",
        "irix7://screen",
    ] {
        measure(&format!("resources/read {uri}"), f, |g| {
            let m = GuestClient::new(g).request("resources/read", json!({"uri": uri}));
            let c = &m["result"]["contents"][0];
            assert!(c["text"].is_string() || c["blob"].is_string(), "{uri}: {m}");
        });
    }
    measure("mem.read 64 KiB", f, |g| {
        let r = GuestClient::new(g).call_ok("mem.read", json!({"addr": FREE_RAM, "length": 65536}));
        assert!(r["content"].is_array());
    });
    measure("block.read 128 blocks", f, |g| {
        let r = GuestClient::new(g).call_ok("block.read", json!({"lba": 0, "count": 128}));
        assert!(r["content"].is_array());
    });
    measure("fs.list /bigdir (300 entries)", f, |g| {
        let r = GuestClient::new(g).call_ok("fs.list", json!({"path": "/bigdir", "limit": 512}));
        let entries = r["structuredContent"]["entries"].as_array().map(Vec::len);
        assert_eq!(entries, Some(300));
    });
    measure("fs.read /big/4mib.bin whole", f, |g| {
        let r = GuestClient::new(g).call_ok(
            "fs.read",
            json!({"path": "/big/4mib.bin", "encoding": "base64", "max_output": 8 << 20}),
        );
        let blob = r["content"][0]["resource"]["blob"].as_str().unwrap_or("");
        assert_eq!(blob.len(), (4usize << 20).div_ceil(3) * 4, "all 4 MiB");
    });
    // The largest request body the module takes (128 KiB): its parse runs in one poll.
    measure("fs.write 120 KB of text (a full request)", f, |g| {
        let text = "irix7 ".repeat(120_000 / 6);
        let r =
            GuestClient::new(g).call_ok("fs.write", json!({"path": "/tmp-big", "content": text}));
        assert_eq!(r["structuredContent"]["size"], 120_000 / 6 * 6, "{r}");
    });
    measure("serial.read 64 KiB", f, |g| {
        let r = GuestClient::new(g).call_ok("serial.read", json!({"max_bytes": 65536}));
        assert!(r["content"].is_array());
    });
    for command in ["ls -l /bigdir", "cat /big/4mib.bin", "status", "ps"] {
        measure(&format!("shell.exec {command}"), f, |g| {
            let r = GuestClient::new(g).call_ok("shell.exec", json!({"command": command}));
            assert_eq!(r["structuredContent"]["exit_status"], 0, "{r}");
        });
    }
    for (scale, width) in [(16, 80), (2, 640), (1, 1280)] {
        measure(&format!("screen.capture scale {scale}"), f, |g| {
            let r = GuestClient::new(g).call_ok("screen.capture", json!({"scale": scale}));
            assert_eq!(r["structuredContent"]["width"], width, "{r}");
        });
    }
    measure("GET /screen.bmp", f, |g| {
        let bmp = support::http::request(
            g.mcp,
            &format!(
                "GET /screen.bmp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
            ),
        );
        assert_eq!(bmp.status, 200);
        assert_eq!(bmp.body.len(), 54 + 1280 * 1024 * 3);
    });

    assert!(
        failures.is_empty(),
        "polls over {POLL_BOUND} instructions: {failures:#?}"
    );
}
