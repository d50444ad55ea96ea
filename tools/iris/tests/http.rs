//! The module's HTTP server end to end: the real MIPS image in the rig, reached through the
//! rig's port forwarding with plain TCP clients.

mod support;

use host_http::Response;
use std::io::Write;
use std::time::Duration;
use support::guest::{TOKEN, boot_guest};
use support::http::{closed_by_server, connect, read_response, request};
use support::mcp::with_bearer;

const GET: &str = "GET / HTTP/1.1\r\nHost: indy\r\n\r\n";

fn uptime_ms(page: &Response) -> u64 {
    // "<td>uptime</td><td>0d 00:00:03.056</td>"
    let text = page.text();
    let at = text.find("<td>uptime</td><td>").expect("uptime row") + 19;
    let v = &text[at..at + 15];
    let (d, rest) = v.split_once("d ").unwrap();
    let parts: Vec<&str> = rest.split([':', '.']).collect();
    let n = |i: usize| parts[i].parse::<u64>().unwrap();
    ((d.parse::<u64>().unwrap() * 24 + n(0)) * 60 + n(1)) * 60_000 + n(2) * 1000 + n(3)
}

#[test]
fn status_page_on_both_ports_with_live_uptime() {
    let Some(g) = boot_guest(&[]) else { return };
    // Open, the page says what runs and where MCP is, and nothing more.
    let open = request(g.mcp, GET);
    assert_eq!(open.status, 200);
    assert!(open.text().contains("MCP on port 7801, token required"));
    for hidden in ["172.31.77.2", "08:00:69:", "MiB", "UTC", "heap"] {
        assert!(!open.text().contains(hidden), "{hidden} on the open page");
    }
    // With the token, the details.
    let a = request(g.mcp, &with_bearer(GET, TOKEN));
    assert_eq!(a.status, 200);
    assert!(a.header("content-type").unwrap().starts_with("text/html"));
    for field in [
        "irix7-mcp 0.1.0, ABI 15",
        "172.31.77.2",
        "08:00:69:",
        "64 MiB",
        "UTC",
        "/mcp",
    ] {
        assert!(a.text().contains(field), "{field} missing from the page");
    }
    std::thread::sleep(Duration::from_millis(50));
    let b = request(g.http, GET);
    assert_eq!(b.status, 200);
    assert!(uptime_ms(&b) > uptime_ms(&a), "uptime must advance");
    let head = request(g.http, "HEAD / HTTP/1.1\r\nHost: indy\r\n\r\n");
    assert_eq!(head.status, 200);
    // HEAD announces the length a GET would have and sends no body.
    assert!(
        head.header("content-length")
            .is_some_and(|l| l.parse::<usize>().unwrap() > 400)
    );
    assert!(head.body.is_empty());
    g.rig.stop().unwrap();
}

#[test]
fn two_hundred_keep_alive_requests_on_one_connection() {
    let Some(g) = boot_guest(&[]) else { return };
    let mut s = connect(g.mcp);
    let mut buf = Vec::new();
    for i in 0..200 {
        s.write_all(GET.as_bytes()).unwrap();
        let r = read_response(&mut s, &mut buf, false)
            .unwrap_or_else(|| panic!("request {i} unanswered"));
        assert_eq!(r.status, 200, "request {i}");
    }
    g.rig.stop().unwrap();
}

#[test]
fn eight_concurrent_connections_all_answered() {
    let Some(g) = boot_guest(&[]) else { return };
    let addr = g.mcp;
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = connect(addr);
                let mut buf = Vec::new();
                (0..10)
                    .filter(|_| {
                        s.write_all(GET.as_bytes()).unwrap();
                        read_response(&mut s, &mut buf, false).is_some_and(|r| r.status == 200)
                    })
                    .count()
            })
        })
        .collect();
    let answered: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(answered, 80);
    g.rig.stop().unwrap();
}

#[test]
fn pipelined_requests_answered_in_order() {
    let Some(g) = boot_guest(&[]) else { return };
    let mut s = connect(g.mcp);
    let batch = "GET / HTTP/1.1\r\nHost: indy\r\n\r\n\
                 GET /nothing-here HTTP/1.1\r\nHost: indy\r\n\r\n\
                 DELETE / HTTP/1.1\r\nHost: indy\r\n\r\n\
                 HEAD / HTTP/1.1\r\nHost: indy\r\nConnection: close\r\n\r\n";
    s.write_all(batch.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let r1 = read_response(&mut s, &mut buf, false).unwrap();
    let r2 = read_response(&mut s, &mut buf, false).unwrap();
    let r3 = read_response(&mut s, &mut buf, false).unwrap();
    let r4 = read_response(&mut s, &mut buf, true).unwrap();
    assert_eq!(
        [r1.status, r2.status, r3.status, r4.status],
        [200, 404, 405, 200]
    );
    assert_eq!(r3.header("allow"), Some("GET, HEAD"));
    assert!(closed_by_server(&mut s), "Connection: close honoured");
    g.rig.stop().unwrap();
}

/// Sends `raw` (ignoring a write cut short by the server's close) and returns the status.
fn bad(addr: std::net::SocketAddr, raw: &[u8]) -> Option<u16> {
    let mut s = connect(addr);
    let _ = s.write_all(raw);
    let mut buf = Vec::new();
    read_response(&mut s, &mut buf, false).map(|r| r.status)
}

#[test]
fn bad_input_gets_its_error_while_another_connection_keeps_working() {
    let Some(g) = boot_guest(&[]) else { return };
    let mut good = connect(g.mcp);
    let mut good_buf = Vec::new();
    let mut still_good = |what: &str| {
        good.write_all(GET.as_bytes()).unwrap();
        let r = read_response(&mut good, &mut good_buf, false);
        assert_eq!(
            r.map(|r| r.status),
            Some(200),
            "second connection after {what}"
        );
    };
    still_good("start");

    assert_eq!(bad(g.mcp, b"\x00\x01\x02 garbage \xff\r\n\r\n"), Some(400));
    still_good("garbage");

    let mut big = b"GET / HTTP/1.1\r\nHost: indy\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 1 << 20));
    big.extend_from_slice(b"\r\n\r\n");
    assert_eq!(bad(g.mcp, &big), Some(431));
    still_good("a 1 MiB header");

    let huge = format!(
        "POST /mcp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Content-Length: 104857600\r\n\r\n{{"
    );
    assert_eq!(bad(g.mcp, huge.as_bytes()), Some(413));
    still_good("a 100 MiB Content-Length");

    // A request that never finishes: the rig clock jumps past the request timeout.
    let mut slow = connect(g.mcp);
    slow.write_all(b"GET / HTTP/1.1\r\nHost: ind").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    g.rig.advance_clock(31_000);
    let mut buf = Vec::new();
    let r = read_response(&mut slow, &mut buf, false);
    assert_eq!(r.map(|r| r.status), Some(408));
    assert!(closed_by_server(&mut slow));
    // The jump also idled the good connection out; a new one works.
    good = connect(g.mcp);
    good_buf.clear();
    still_good_fresh(&mut good, &mut good_buf);

    // 50 connections at once: each is answered or closed, and the server keeps serving.
    let mut many: Vec<_> = (0..50)
        .map(|_| std::net::TcpStream::connect(g.mcp).ok())
        .collect();
    for s in many.iter_mut().flatten() {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = s.write_all(GET.as_bytes());
    }
    let mut answered = 0;
    let started = std::time::Instant::now();
    for s in many.iter_mut().flatten() {
        let mut buf = Vec::new();
        // None: closed or reset, which is allowed when the socket pool is full; 503 with
        // Retry-After: one address over its share of the pool (every client here has the
        // rig forwarder's address).
        if let Some(r) = read_response(s, &mut buf, false) {
            if r.status == 503 {
                assert_eq!(r.header("retry-after"), Some("1"));
            } else {
                assert_eq!(r.status, 200);
                answered += 1;
            }
        }
    }
    // Every client was answered or closed: none was left hanging until its read timeout.
    assert!(started.elapsed() < Duration::from_secs(15), "a client hung");
    assert!(answered >= 1, "none of 50 answered");
    println!("{answered} of 50 simultaneous clients answered, the rest closed");
    drop(many);
    std::thread::sleep(Duration::from_millis(200));
    let mut fresh = connect(g.mcp);
    let mut fresh_buf = Vec::new();
    still_good_fresh(&mut fresh, &mut fresh_buf);
    g.rig.stop().unwrap();
}

fn still_good_fresh(s: &mut std::net::TcpStream, buf: &mut Vec<u8>) {
    s.write_all(GET.as_bytes()).unwrap();
    let r = read_response(s, buf, false);
    assert_eq!(r.map(|r| r.status), Some(200));
}
