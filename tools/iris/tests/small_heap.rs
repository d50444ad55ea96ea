//! The module on a kernel that gives exactly the heap the ABI promises (1 MiB): it starts,
//! sizes its socket pool and budgets to it, serves the tools, refuses what does not fit with
//! clear answers, and its heap peak stays under the budget it reports. One KiB less and it
//! refuses to start, saying why.

mod support;

use serde_json::{Value, json};
use std::io::Write;
use support::guest::{TOKEN, boot_guest_with};
use support::http::{connect, read_response, request};
use support::mcp::{mcp_request, tool_ok};

/// A figure from `irix7://mem`'s text, e.g. `heap budget 983040 bytes`.
fn mem_figure(text: &str, name: &str) -> usize {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{name}` in:\n{text}"))
}

fn read_mem(addr: std::net::SocketAddr) -> String {
    let raw = mcp_request(
        1,
        "resources/read",
        json!({"uri": "irix7://mem"}),
        json!({}),
        "application/json",
    );
    let r = request(addr, &raw);
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    v["result"]["contents"][0]["text"]
        .as_str()
        .expect("mem text")
        .to_string()
}

#[test]
fn the_module_serves_on_the_heap_the_abi_promises() {
    // The fixture disk (`cargo xtask fixtures`) when it has been built, for a 64 KiB read.
    let disk = iris::image::find_repo_root().join("target/fixtures/rootfs.erofs");
    let has_disk = disk.exists();
    let tweak = move |o: &mut iris::RigOptions| {
        o.heap_kib = Some(1024);
        if has_disk {
            o.no_disk = false;
            o.disks = vec![(2, disk)];
        }
    };
    let Some(g) = boot_guest_with(&[], tweak, |_| {}) else {
        return;
    };
    let mem = read_mem(g.mcp);
    assert_eq!(mem_figure(&mem, "heap size"), 1 << 20, "{mem}");
    let budget = mem_figure(&mem, "heap budget");
    assert!(budget > 0 && budget < 1 << 20, "{mem}");
    assert!(mem.contains("budget requests"), "{mem}");
    assert!(mem.contains("budget parse"), "{mem}");

    // The tools work.
    let echo = tool_ok(g.mcp, "echo", json!({"text": "small"}));
    assert_eq!(echo["text"], "small", "{echo}");
    let status = tool_ok(g.mcp, "status", json!({}));
    assert!(
        status["heap"]["budget"].as_u64().is_some_and(|b| b > 0),
        "{status}"
    );
    let list = request(
        g.mcp,
        &mcp_request(2, "tools/list", json!({}), json!({}), "application/json"),
    );
    assert_eq!(list.status, 200);
    assert_eq!(
        request(g.http, "GET / HTTP/1.1\r\nHost: indy\r\n\r\n").status,
        200
    );

    // Real work, one request after another: a 64 KiB read of the fixture disk (when it has
    // been built), a 16 KiB echo.
    if has_disk {
        let read = support::mcp::call_tool(
            g.mcp,
            "fs.read",
            json!({"path": "/big/4mib.bin", "encoding": "base64", "length": 65536}),
        );
        assert_ne!(read["isError"], true, "{read}");
        let blob = read["content"][0]["resource"]["blob"]
            .as_str()
            .unwrap_or("");
        assert_eq!(
            blob.len(),
            65536 / 3 * 4 + 4,
            "64 KiB in base64: {}",
            blob.len()
        );
    }
    let text = "y".repeat(16 * 1024);
    let echo = tool_ok(g.mcp, "echo", json!({"text": text}));
    assert_eq!(echo["text"].as_str().map(str::len), Some(16 * 1024));
    // An echo over the request budget the plan left (`budget requests … / LIMIT`) is refused
    // whole: from its head when it is over the body limit (413), or 503 E_BUSY when the parse
    // does not fit; and the module goes on serving.
    let body_limit: usize = mem
        .lines()
        .find_map(|l| l.strip_prefix("budget requests"))
        .and_then(|rest| rest.split('/').nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no request budget in:\n{mem}"));
    let big = request(
        g.mcp,
        &support::mcp::tool_request(3, "echo", json!({"text": "z".repeat(body_limit + 1024)})),
    );
    assert!(
        big.status == 413 || big.status == 503 && big.text().contains("E_BUSY"),
        "{} {}\n{mem}",
        big.status,
        big.text()
    );
    let again = tool_ok(g.mcp, "echo", json!({"text": "after"}));
    assert_eq!(again["text"], "after");

    // A body bigger than the request budget is refused from its head (413), not buffered. Two
    // connections a client on this heap: the ones just closed may not have been reaped yet, and
    // a third is refused with 503 until they are.
    let mut r = None;
    for _ in 0..50 {
        let mut s = connect(g.mcp);
        s.write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
                 Expect: 100-continue\r\nContent-Length: 1000000\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
        let answer = read_response(&mut s, &mut Vec::new(), false).expect("an answer");
        if answer.status == 503 && answer.text().contains("too many connections") {
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        }
        r = Some(answer);
        break;
    }
    let r = r.expect("a connection within 5 s");
    assert_eq!(r.status, 413, "{}", r.text());

    // Several clients at once, each asking for the big listing.
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let addr = g.mcp;
            std::thread::spawn(move || {
                let raw = mcp_request(
                    10 + i,
                    "tools/list",
                    json!({}),
                    json!({}),
                    "application/json",
                );
                request(addr, &raw).status
            })
        })
        .collect();
    for t in threads {
        let status = t.join().unwrap();
        assert!(status == 200 || status == 429 || status == 503, "{status}");
    }

    // The heavy tools answer, or refuse with a clear E_ code; none takes the machine down.
    for (tool, args) in [
        ("screen.capture", json!({})),
        ("mem.read", json!({"addr": "0x88000000", "length": 65536})),
        ("fs.list", json!({"path": "/"})),
    ] {
        let r = support::mcp::call_tool(g.mcp, tool, args);
        let refused = r["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("E_"));
        assert!(r["isError"] != true || refused, "{tool}: {r}");
    }
    let bmp = request(
        g.mcp,
        &format!("GET /screen.bmp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"),
    );
    assert!(bmp.status == 200 || bmp.status == 503, "{}", bmp.status);

    let mem = read_mem(g.mcp);
    let peak = mem_figure(&mem, "heap peak");
    assert!(
        peak <= budget,
        "heap peak {peak} over the budget {budget}:\n{mem}"
    );
    println!("1 MiB heap: budget {budget}, peak {peak}\n{mem}");
    let c = g.rig.counters();
    assert_eq!((c.resets, c.watchdog_resets), (0, 0));
    g.rig.stop().unwrap();
}

#[test]
fn less_than_the_promised_heap_is_refused_at_init() {
    let Some(image) = support::image::ProductImage::find_or_skip() else {
        return;
    };
    let copy = image.private_copy();
    let mut opts = support::guest::guest_options(copy.path(), &image, &[], &[7801]);
    opts.heap_kib = Some(1023);
    match iris::Rig::spawn(opts) {
        Err(iris::RigError::InitFailed(code)) => assert_eq!(code, indy::abi::status::E_NOMEM),
        Err(e) => panic!("init should fail with E_NOMEM, not {e:?}"),
        Ok(_) => panic!("the module started on 1023 KiB of heap"),
    }
}
