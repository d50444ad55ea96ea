//! `cargo xtask bench` runs this: the real module image in the rig, driven in lockstep by a
//! client on the host side of the virtual wire (no host sockets, no threads), so every figure
//! is an exact count of guest instructions for the same exchange of frames.
//!
//! Usage: `bench IMAGE [--profile [FILTER]]` (the rig's boot config is bypassed: the image is
//! named through the NVRAM environment with its digest). With `--profile`, one more exchange of
//! each measured request whose label (`GET /`, `tools/list`, `tools/call fs.read`, …) contains
//! FILTER is run under the rig's profiler and the top 30 functions are printed; the figures
//! themselves are always measured without the profiler.

use iris::image::{find_repo_root, sha256_hex};
use iris::net::host::WireDevice;
use iris::{Rig, RigOptions};
use rpc::testing::McpRequest;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// `--profile`'s filter: `Some("")` profiles every measured exchange.
static PROFILE: OnceLock<Option<String>> = OnceLock::new();
/// Functions a profile prints.
const PROFILE_TOP: usize = 30;
/// The token the benchmarked machine requires (a machine always requires one, unless
/// `mcp.token=none`); the figures include checking it.
const TOKEN: &str = "bench-token-5e0f27a1";

/// The most guest instructions one `irix7_mcp_poll` ran, over every rig the bench booted: how
/// long a single request can keep the machine from everything else.
static MAX_POLL_INSNS: AtomicU64 = AtomicU64::new(0);
/// Budget of that figure (issue 12: no client can hold the machine for longer).
const MAX_POLL_BUDGET: f64 = 10_000_000.0;

/// Stops `rig` after noting its largest poll in [`MAX_POLL_INSNS`].
fn stop(rig: &mut Rig) {
    MAX_POLL_INSNS.fetch_max(rig.counters().max_poll_insns, Ordering::Relaxed);
    rig.stop().expect("stop");
}

/// Guest steps allowed for one exchange before the bench gives up.
const STEP_LIMIT: usize = 200_000;

/// A TCP client on the host end of the wire, stepped together with the guest.
struct Client {
    iface: Interface,
    dev: WireDevice,
    sockets: SocketSet<'static>,
    sock: SocketHandle,
    inbox: Vec<u8>,
    t_ms: i64,
}

impl Client {
    fn connect(rig: &mut Rig, port: u16, local_port: u16) -> Client {
        let net = rig.net().host_net();
        let wire = rig
            .net()
            .host_end()
            .expect("no forwarder in bench mode")
            .clone();
        let mut dev = WireDevice { wire };
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(net.host_mac)));
        config.random_seed = 1;
        let mut iface = Interface::new(config, &mut dev, Instant::ZERO);
        iface.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(IpAddress::Ipv4(net.host_ip), net.prefix));
        });
        let mut sockets = SocketSet::new(Vec::new());
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 1 << 20]),
            tcp::SocketBuffer::new(vec![0; 1 << 20]),
        );
        s.set_ack_delay(None);
        s.set_nagle_enabled(false);
        let sock = sockets.add(s);
        let mut c = Client {
            iface,
            dev,
            sockets,
            sock,
            inbox: Vec::new(),
            t_ms: 0,
        };
        let cx = c.iface.context();
        c.sockets
            .get_mut::<tcp::Socket>(c.sock)
            .connect(
                cx,
                IpEndpoint::new(IpAddress::Ipv4(net.guest_ip), port),
                local_port,
            )
            .expect("connect");
        c.run(rig, |c| c.sockets.get::<tcp::Socket>(c.sock).may_send());
        c
    }

    fn poll(&mut self) {
        self.t_ms += 1;
        self.iface.poll(
            Instant::from_millis(self.t_ms),
            &mut self.dev,
            &mut self.sockets,
        );
        let s = self.sockets.get_mut::<tcp::Socket>(self.sock);
        while s.can_recv() {
            let _ = s.recv(|b| {
                self.inbox.extend_from_slice(b);
                (b.len(), ())
            });
        }
    }

    /// Steps guest and host until `done`; returns the guest instructions spent.
    fn run(&mut self, rig: &mut Rig, done: impl Fn(&Client) -> bool) -> u64 {
        let before = rig.counters().total_insns;
        for _ in 0..STEP_LIMIT {
            self.poll();
            if done(self) {
                return rig.counters().total_insns - before;
            }
            rig.step().expect("guest step");
            self.poll();
        }
        panic!("exchange did not finish in {STEP_LIMIT} steps");
    }

    /// Sends `request` and waits for `n` complete responses; returns (instructions, bytes).
    fn exchange(&mut self, rig: &mut Rig, request: &[u8], n: usize) -> (u64, usize) {
        self.inbox.clear();
        // Pace requests below the module's 20 requests/s per client: the limit is policy, and
        // what is measured here is the cost of serving.
        rig.advance_clock(60);
        let mut sent = 0;
        let before = rig.counters().total_insns;
        while sent < request.len() {
            sent += self
                .sockets
                .get_mut::<tcp::Socket>(self.sock)
                .send_slice(&request[sent..])
                .unwrap_or(0);
            self.poll();
            rig.step().expect("guest step");
        }
        self.run(rig, |c| complete_responses(&c.inbox) >= n);
        (rig.counters().total_insns - before, self.inbox.len())
    }
}

/// Counts complete HTTP responses (Content-Length or chunked) at the start of `buf`.
fn complete_responses(mut buf: &[u8]) -> usize {
    let mut n = 0;
    loop {
        let Some(head_end) = find(buf, b"\r\n\r\n").map(|i| i + 4) else {
            return n;
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let body = &buf[head_end..];
        let used = if let Some(len) = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
        {
            if body.len() < len {
                return n;
            }
            len
        } else {
            // Chunked: walk the chunks.
            let mut pos = 0;
            loop {
                let Some(le) = find(&body[pos..], b"\r\n") else {
                    return n;
                };
                let size = usize::from_str_radix(
                    String::from_utf8_lossy(&body[pos..pos + le])
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim(),
                    16,
                )
                .unwrap_or(0);
                pos += le + 2 + size + 2;
                if pos > body.len() {
                    return n;
                }
                if size == 0 {
                    break pos;
                }
            }
        };
        buf = &body[used..];
        n += 1;
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn mcp_request(method: &str, params: serde_json::Value) -> Vec<u8> {
    McpRequest::modern(method, params).http("/mcp", "indy", Some(TOKEN))
}

/// Mean instructions per exchange over `reps`, after warming up.
fn measure(rig: &mut Rig, c: &mut Client, req: &[u8], reps: u64) -> (u64, usize) {
    for _ in 0..3 {
        c.exchange(rig, req, 1);
    }
    let mut total = 0;
    let mut bytes = 0;
    for _ in 0..reps {
        let (i, b) = c.exchange(rig, req, 1);
        total += i;
        bytes = b;
    }
    profile_exchange(rig, c, req);
    (total / reps, bytes)
}

/// What a request is, for `--profile`: the request line for plain HTTP, else the MCP method and
/// tool name from the headers.
fn label(req: &[u8]) -> String {
    let head = String::from_utf8_lossy(&req[..find(req, b"\r\n\r\n").unwrap_or(req.len())]);
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    match header("Mcp-Method") {
        Some(m) => match header("Mcp-Name") {
            Some(n) => format!("{m} {n}"),
            None => m,
        },
        None => head
            .lines()
            .next()
            .unwrap_or("")
            .trim_end_matches(" HTTP/1.1")
            .to_string(),
    }
}

/// Under `--profile`: one more exchange of `req` with the profiler on, and its top functions.
fn profile_exchange(rig: &mut Rig, c: &mut Client, req: &[u8]) {
    let what = label(req);
    match PROFILE.get() {
        Some(Some(filter)) if what.contains(filter.as_str()) => {}
        _ => return,
    }
    rig.profile_start().expect("profiler");
    let (insns, bytes) = c.exchange(rig, req, 1);
    let p = rig.profile_stop().expect("profiler").unwrap_or_default();
    println!("profile of one `{what}` exchange ({insns} insns, {bytes} response bytes):");
    print!("{}", p.report(PROFILE_TOP));
}

fn verdict(value: f64, budget: f64) -> &'static str {
    if value <= budget { "ok" } else { "OVER BUDGET" }
}

/// The fs benchmark's file: 4 MiB of deterministic bytes in the fixture image.
const FS_FILE: &str = "/big/4mib.bin";

/// A booted rig with the fixture image at SCSI target 2 (the rig's default disk).
fn boot_rig(image_path: &str) -> Rig {
    let image = std::fs::read(image_path).expect("read the image");
    let abs = std::path::Path::new(image_path).canonicalize().unwrap();
    let opts = RigOptions {
        root: Some(find_repo_root()),
        env: vec![
            format!("mcp.url=file:{}", abs.display()),
            format!("mcp.sha256={}", sha256_hex(&image)),
            "netaddr=172.31.77.2/24".into(),
            format!("mcp.token={TOKEN}"),
            // The requests name the machine `indy` in Host.
            "mcp.hosts=indy".into(),
        ],
        quiet: true,
        ..RigOptions::default()
    };
    let mut rig = Rig::new(opts).expect("rig");
    rig.boot().expect("boot");
    rig
}

/// The `status` tool's structured result.
fn status_of(rig: &mut Rig, c: &mut Client) -> serde_json::Value {
    let req = mcp_request(
        "tools/call",
        serde_json::json!({"name": "status", "arguments": {}}),
    );
    c.exchange(rig, &req, 1);
    let text = String::from_utf8_lossy(&c.inbox);
    let json_start = text.find('{').unwrap_or(0);
    let v: serde_json::Value = serde_json::from_str(&text[json_start..]).unwrap_or_default();
    v["result"]["structuredContent"].clone()
}

/// `fs.read` of the first `len` bytes of [`FS_FILE`] in base64; (instructions, response bytes).
fn fs_read(rig: &mut Rig, c: &mut Client, len: u64) -> (u64, usize) {
    let req = mcp_request(
        "tools/call",
        serde_json::json!({"name": "fs.read", "arguments": {
            "path": FS_FILE, "encoding": "base64", "length": len, "max_output": 8 << 20}}),
    );
    let (insns, bytes) = c.exchange(rig, &req, 1);
    let text = String::from_utf8_lossy(&c.inbox);
    assert!(
        !text.contains("\"isError\":true") && text.contains(&format!("\"length\":{len}")),
        "fs.read failed: {}",
        &text[..text.len().min(600)]
    );
    assert!(
        bytes as u64 > len * 4 / 3,
        "the response is shorter than the data"
    );
    profile_exchange(rig, c, &req);
    (insns, bytes)
}

/// Module heap while one fresh guest serves one `fs.read` of `len` bytes: (in use before, peak
/// before, peak after, peak after minus in use before). The difference bounds the read's own peak from above, as
/// the peak counter also covers boot.
fn fs_read_peak(image_path: &str, len: u64) -> (f64, f64, f64, f64) {
    let mut rig = boot_rig(image_path);
    let mut c = Client::connect(&mut rig, 7801, 40_002);
    let before = status_of(&mut rig, &mut c);
    let idle = before["heap"]["used"].as_f64().unwrap_or(f64::NAN);
    let peak_before = before["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    fs_read(&mut rig, &mut c, len);
    let after = status_of(&mut rig, &mut c);
    stop(&mut rig);
    let peak = after["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    (idle, peak_before, peak, peak - idle)
}

/// One `screen.capture` at the default scale; (instructions, response bytes), or `None` when
/// the module has no graphics board (`E_NODEV`).
fn screen_capture(rig: &mut Rig, c: &mut Client) -> Option<(u64, usize)> {
    let req = mcp_request(
        "tools/call",
        serde_json::json!({"name": "screen.capture", "arguments": {}}),
    );
    let (insns, bytes) = c.exchange(rig, &req, 1);
    let text = String::from_utf8_lossy(&c.inbox);
    if text.contains("E_NODEV") {
        return None;
    }
    assert!(
        !text.contains("\"isError\":true") && text.contains("\"width\":640"),
        "screen.capture failed: {}",
        &text[..text.len().min(600)]
    );
    profile_exchange(rig, c, &req);
    Some((insns, bytes))
}

/// One `GET /screen.bmp`; (instructions, response bytes).
fn screen_bmp(rig: &mut Rig, c: &mut Client) -> (u64, usize) {
    let req =
        format!("GET /screen.bmp HTTP/1.1\r\nHost: indy\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    let (insns, bytes) = c.exchange(rig, req.as_bytes(), 1);
    assert!(
        bytes > 1280 * 1024 * 3 && c.inbox.starts_with(b"HTTP/1.1 200"),
        "GET /screen.bmp failed: {}",
        String::from_utf8_lossy(&c.inbox[..c.inbox.len().min(300)])
    );
    profile_exchange(rig, c, req.as_bytes());
    (insns, bytes)
}

/// Module heap while one fresh guest serves one default `screen.capture`: (in use before, peak
/// before, peak after, peak after minus in use before), measured like [`fs_read_peak`].
fn screen_peak(image_path: &str) -> (f64, f64, f64, f64) {
    let mut rig = boot_rig(image_path);
    let mut c = Client::connect(&mut rig, 7801, 40_003);
    let before = status_of(&mut rig, &mut c);
    let idle = before["heap"]["used"].as_f64().unwrap_or(f64::NAN);
    let peak_before = before["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    screen_capture(&mut rig, &mut c).expect("a graphics board");
    let after = status_of(&mut rig, &mut c);
    stop(&mut rig);
    let peak = after["heap"]["peak"].as_f64().unwrap_or(f64::NAN);
    (idle, peak_before, peak, peak - idle)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile = args.iter().position(|a| a == "--profile").map(|i| {
        args.get(i + 1)
            .filter(|f| !f.starts_with("--") && !f.ends_with(".o"))
            .cloned()
            .unwrap_or_default()
    });
    let _ = PROFILE.set(profile.clone());
    let Some(image_path) = args
        .iter()
        .find(|a| !a.starts_with("--") && Some(*a) != profile.as_ref())
        .cloned()
    else {
        eprintln!("usage: bench IMAGE [--profile [FILTER]]");
        return ExitCode::FAILURE;
    };
    let mut rig = boot_rig(&image_path);
    let mut over = 0;
    let mut line = |name: &str, value: f64, unit: &str, budget: Option<f64>| match budget {
        Some(b) => {
            let v = verdict(value, b);
            if v != "ok" {
                over += 1;
            }
            println!("  {name:<44} {value:>14.1} {unit:<18} budget {b:>12.0}  {v}");
        }
        None => println!("  {name:<44} {value:>14.1} {unit}"),
    };
    println!("guest instructions (exact, block hook):");
    line(
        "irix7_mcp_init",
        rig.counters().init_insns as f64,
        "insns",
        None,
    );

    let mut c = Client::connect(&mut rig, 7801, 40_001);
    let get = b"GET / HTTP/1.1\r\nHost: indy\r\n\r\n";
    let (get_insns, _) = measure(&mut rig, &mut c, get, 20);
    line(
        "GET / (kept-alive connection)",
        get_insns as f64,
        "insns/request",
        Some(200_000.0),
    );

    for (what, method, params) in [
        ("server/discover", "server/discover", serde_json::json!({})),
        ("tools/list", "tools/list", serde_json::json!({})),
        (
            "tools/call echo",
            "tools/call",
            serde_json::json!({"name": "echo", "arguments": {"text": "hello"}}),
        ),
    ] {
        let (i, _) = measure(&mut rig, &mut c, &mcp_request(method, params), 10);
        line(what, i as f64, "insns/request", Some(400_000.0));
    }

    // A large echo against a small one: both directions carry the text, so this is the cost of
    // a byte in and out (parse, unescape, escape, send); no budget of its own.
    let small = mcp_request(
        "tools/call",
        serde_json::json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    let text: String = "irix7 ".repeat(10_000);
    let large = mcp_request(
        "tools/call",
        serde_json::json!({"name": "echo", "arguments": {"text": text}}),
    );
    let (i_small, b_small) = measure(&mut rig, &mut c, &small, 5);
    let (i_large, b_large) = measure(&mut rig, &mut c, &large, 5);
    let per_byte = (i_large - i_small) as f64 / (b_large - b_small) as f64;
    line(
        &format!("echo byte ({} KB in and out)", b_large / 1000),
        per_byte,
        "insns/byte",
        None,
    );

    // Peak heap, from the module's own status.
    let (_, _) = c.exchange(
        &mut rig,
        &mcp_request(
            "tools/call",
            serde_json::json!({"name": "status", "arguments": {}}),
        ),
        1,
    );
    let text = String::from_utf8_lossy(&c.inbox);
    let json_start = text.find('{').unwrap_or(0);
    let v: serde_json::Value = serde_json::from_str(&text[json_start..]).unwrap_or_default();
    let heap = &v["result"]["structuredContent"]["heap"];
    println!("module heap:");
    line(
        "in use after the benchmark",
        heap["used"].as_f64().unwrap_or(f64::NAN),
        "bytes",
        None,
    );
    line(
        "peak since boot",
        heap["peak"].as_f64().unwrap_or(f64::NAN),
        "bytes",
        None,
    );

    // Screen capture from the rig's Newport: the default PNG thumbnail and the full BMP.
    println!("screen (the rig's Newport, 1280x1024):");
    match screen_capture(&mut rig, &mut c) {
        None => println!("  the module found no graphics board: screen figures skipped"),
        Some((insns, bytes)) => {
            line(
                "screen.capture default thumbnail (640x512 PNG)",
                insns as f64,
                "insns",
                Some(100_000_000.0),
            );
            line(
                "  response bytes (base64 PNG in JSON)",
                bytes as f64,
                "bytes",
                None,
            );
            let (insns, bytes) = screen_bmp(&mut rig, &mut c);
            line(
                "GET /screen.bmp (1280x1024, 24-bit)",
                insns as f64,
                "insns",
                None,
            );
            line(
                "  per response byte",
                insns as f64 / bytes as f64,
                "insns/byte",
                None,
            );
            let (idle, peak_before, peak, above) = screen_peak(&image_path);
            line("capture: heap in use before", idle, "bytes", None);
            line("capture: peak before", peak_before, "bytes", None);
            line("capture: peak after", peak, "bytes", None);
            line(
                "capture: peak above idle",
                above,
                "bytes",
                Some(2.0 * 1048576.0),
            );
        }
    }

    // fs.read of a 4 MiB file in base64, streamed from the disk through the LRU.
    println!("fs.read {FS_FILE} (base64, fixture image at SCSI target 2):");
    let before = status_of(&mut rig, &mut c);
    if before.get("cache").is_none() {
        println!("  no filesystem mounted (run `cargo xtask fixtures`): fs figures skipped");
        stop(&mut rig);
        line(
            "largest single poll (every rig of the bench)",
            MAX_POLL_INSNS.load(Ordering::Relaxed) as f64,
            "insns",
            Some(MAX_POLL_BUDGET),
        );
        return if over == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let full = 4u64 << 20;
    let (insns, bytes) = fs_read(&mut rig, &mut c, full);
    // The response-byte budget: a small request, a large response, everything counted.
    line(
        &format!("response byte (this read's {} MB)", bytes / 1_000_000),
        insns as f64 / bytes as f64,
        "insns/byte",
        Some(30.0),
    );
    let after = status_of(&mut rig, &mut c);
    line(
        "guest instructions per payload byte",
        insns as f64 / full as f64,
        "insns/byte",
        Some(40.0),
    );
    line("  response bytes", bytes as f64, "bytes", None);
    let cache = |v: &serde_json::Value, k: &str| v["cache"][k].as_f64().unwrap_or(0.0);
    let (hits, misses) = (
        cache(&after, "hits") - cache(&before, "hits"),
        cache(&after, "misses") - cache(&before, "misses"),
    );
    line(
        "LRU hit rate during the read",
        100.0 * hits / (hits + misses).max(1.0),
        "%",
        None,
    );
    line(
        "  LRU lookups (hits + misses)",
        hits + misses,
        "blocks",
        None,
    );
    line(
        "  blocks read around the LRU (bulk data)",
        cache(&after, "direct_blocks") - cache(&before, "direct_blocks"),
        "blocks",
        None,
    );
    let (all_hits, all_misses) = (cache(&after, "hits"), cache(&after, "misses"));
    line(
        "LRU hit rate since boot",
        100.0 * all_hits / (all_hits + all_misses).max(1.0),
        "%",
        None,
    );
    stop(&mut rig);

    println!("module heap during one fs.read of {FS_FILE} (a fresh guest each):");
    for (what, len) in [("1 MiB", 1u64 << 20), ("4 MiB", 4 << 20)] {
        let (idle, peak_before, peak, above) = fs_read_peak(&image_path, len);
        line(
            &format!("{what}: in use before the read"),
            idle,
            "bytes",
            None,
        );
        line(
            &format!("{what}: peak before the read"),
            peak_before,
            "bytes",
            None,
        );
        line(&format!("{what}: peak after the read"), peak, "bytes", None);
        line(
            &format!("{what}: peak above idle"),
            above,
            "bytes",
            Some(1048576.0),
        );
    }
    println!("time bound:");
    line(
        "largest single poll (every rig of the bench)",
        MAX_POLL_INSNS.load(Ordering::Relaxed) as f64,
        "insns",
        Some(MAX_POLL_BUDGET),
    );
    if over == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
