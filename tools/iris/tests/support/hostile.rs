//! The hostile-load suite's tools: a well-behaved client measuring `echo` latency on its own
//! thread, raw-socket HTTP attackers with deadlines, authenticated MCP requests of both eras,
//! the module's memory figures, spoofed TCP SYN frames for the NIC, and a findings list that
//! lets every attack run (and be reported) before the test fails.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use host_http::Response;
use rpc::testing::McpRequest;
use serde_json::{Value, json};

use super::http::read_response;
use super::mcp::messages;

/// The bearer token the hostile rig is booted with.
pub const TOKEN: &str = "hostile-suite-token-7f3a9c";

/// What the suite found: every check is printed as it runs; failed ones are kept so the test
/// fails once, at the end, with all of them.
#[derive(Default)]
pub struct Findings {
    failed: Vec<String>,
}

impl Findings {
    pub fn check(&mut self, attack: &str, ok: bool, what: impl AsRef<str>) {
        let what = what.as_ref();
        println!("[{}] {attack}: {what}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            self.failed.push(format!("{attack}: {what}"));
        }
    }

    pub fn failed(&self) -> &[String] {
        &self.failed
    }
}

/// A TCP connection with both timeouts set, so no attack can hang the test.
pub fn open(addr: SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// How a connection ended for the client that waited on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A response head arrived: its status.
    Status(u16),
    /// The server closed (EOF or reset) without a response.
    Closed,
    /// Nothing within the deadline; the connection is still open.
    TimedOut,
}

/// Waits up to `deadline` for the first response head on `s`.
pub fn first_status(s: &mut TcpStream, deadline: Duration) -> Outcome {
    let end = Instant::now() + deadline;
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]);
            return head
                .split(' ')
                .nth(1)
                .and_then(|c| c.parse().ok())
                .map_or(Outcome::Closed, Outcome::Status);
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Outcome::TimedOut;
        }
        let _ = s.set_read_timeout(Some(left.max(Duration::from_millis(10))));
        match s.read(&mut b) {
            Ok(0) => return Outcome::Closed,
            Ok(n) => buf.extend_from_slice(&b[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Outcome::Closed,
        }
    }
}

/// Waits up to `deadline` for the server to give up on a stalled connection: it closes or
/// resets it, or answers (a 408 or 400 before its lingering close). The time it took, or `None`
/// when it stayed open and silent.
pub fn time_to_cut(s: &mut TcpStream, deadline: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut b = [0u8; 4096];
    while start.elapsed() < deadline {
        let left = deadline.saturating_sub(start.elapsed());
        let _ = s.set_read_timeout(Some(left.max(Duration::from_millis(10))));
        match s.read(&mut b) {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            _ => return Some(start.elapsed()),
        }
    }
    None
}

/// Sends a complete request and reads one response within `deadline`.
pub fn exchange(addr: SocketAddr, raw: &[u8], deadline: Duration) -> Result<Response, String> {
    let mut s = open(addr, deadline).map_err(|e| format!("connect: {e}"))?;
    s.write_all(raw).map_err(|e| format!("send: {e}"))?;
    let mut buf = Vec::new();
    read_response(&mut s, &mut buf, false)
        .ok_or_else(|| format!("no response within {deadline:?} (closed or timed out)"))
}

/// A modern-era request with the token, answered within `deadline`.
pub fn modern(addr: SocketAddr, req: McpRequest, deadline: Duration) -> Result<Response, String> {
    exchange(addr, &req.http("/mcp", "indy", Some(TOKEN)), deadline)
}

/// The last JSON-RPC message of a response (JSON or SSE).
pub fn last_message(r: &Response) -> Option<Value> {
    messages(&r.body).pop()
}

/// A `tools/call` answer in words: `ok`, `isError <text>`, `error <message>` or the status.
pub fn describe(r: &Response) -> String {
    match last_message(r) {
        Some(m) if m.get("error").is_some() => format!("HTTP {} error {}", r.status, m["error"]),
        Some(m) if m["result"]["isError"] == json!(true) => format!(
            "HTTP {} isError {}",
            r.status,
            m["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .chars()
                .take(160)
                .collect::<String>()
        ),
        Some(_) => format!("HTTP {} ok", r.status),
        None => format!(
            "HTTP {} ({} bytes, no JSON-RPC message)",
            r.status,
            r.body.len()
        ),
    }
}

/// Opens a legacy session of protocol `version` with `token`; its `Mcp-Session-Id`.
pub fn legacy_session(addr: SocketAddr, token: &str, version: &str) -> Result<String, String> {
    let init = McpRequest::initialize(version).http("/mcp", "indy", Some(token));
    let r = exchange(addr, &init, Duration::from_secs(20))?;
    let sid = r
        .header("mcp-session-id")
        .ok_or_else(|| format!("initialize: HTTP {} without a session id", r.status))?
        .to_string();
    let note = McpRequest::legacy(&sid, "notifications/initialized", json!({}))
        .replace_body(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    exchange(
        addr,
        &note.http("/mcp", "indy", Some(token)),
        Duration::from_secs(20),
    )?;
    Ok(sid)
}

/// A request inside legacy session `sid` with `token`, body replaced by `body`.
pub fn legacy(
    addr: SocketAddr,
    token: &str,
    sid: &str,
    method: &str,
    body: Value,
    deadline: Duration,
) -> Result<Response, String> {
    let req = McpRequest::legacy(sid, method, json!({})).replace_body(body);
    exchange(addr, &req.http("/mcp", "indy", Some(token)), deadline)
}

/// The guest's count of open connections (`irix7://net`).
pub fn open_connections(addr: SocketAddr) -> Result<u64, String> {
    let req = McpRequest::modern("resources/read", json!({"uri": "irix7://net"}));
    let r = modern(addr, req, Duration::from_secs(20))?;
    let msg = last_message(&r).ok_or_else(|| format!("irix7://net: HTTP {}", r.status))?;
    let text = msg["result"]["contents"][0]["text"].as_str().unwrap_or("");
    text.lines()
        .find_map(|l| l.strip_prefix("connections"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("irix7://net has no connection count: {text}"))
}

/// The module's memory figures from `irix7://mem`.
#[derive(Debug, Clone, Copy)]
pub struct Heap {
    pub peak: u64,
    pub used: u64,
    /// `heap budget` when the module states one, else `heap size`.
    pub budget: u64,
    pub stated_budget: bool,
}

/// Reads `irix7://mem` (modern `resources/read`).
pub fn heap(addr: SocketAddr) -> Result<Heap, String> {
    let req = McpRequest::modern("resources/read", json!({"uri": "irix7://mem"}));
    let r = modern(addr, req, Duration::from_secs(20))?;
    let msg = last_message(&r).ok_or_else(|| format!("irix7://mem: HTTP {}", r.status))?;
    let text = msg["result"]["contents"][0]["text"]
        .as_str()
        .ok_or_else(|| format!("irix7://mem: {msg}"))?;
    let figure = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l[name.len()..].split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    let (budget, stated_budget) = match figure("heap budget") {
        Some(b) => (Some(b), true),
        None => (figure("heap size"), false),
    };
    match (figure("heap peak"), figure("heap used"), budget) {
        (Some(peak), Some(used), Some(budget)) => Ok(Heap {
            peak,
            used,
            budget,
            stated_budget,
        }),
        _ => Err(format!("irix7://mem lacks the heap lines: {text}")),
    }
}

/// The `status` tool's `uptime_ms`.
pub fn uptime_ms(addr: SocketAddr) -> Result<u64, String> {
    let req = McpRequest::modern("tools/call", json!({"name": "status", "arguments": {}}));
    let r = modern(addr, req, Duration::from_secs(20))?;
    last_message(&r)
        .and_then(|m| m["result"]["structuredContent"]["uptime_ms"].as_u64())
        .ok_or_else(|| format!("status: {}", describe(&r)))
}

/// One `echo` round trip of the well-behaved client.
#[derive(Debug, Clone)]
pub struct Sample {
    pub at: Instant,
    pub latency: Duration,
    /// Why it failed; `None` when the echo came back.
    pub error: Option<String>,
}

/// The well-behaved client: a modern-era `tools/call echo` with `token` on a fresh connection
/// every `PAUSE`, each one timed, until stopped.
pub struct Prober {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: Option<JoinHandle<()>>,
}

impl Prober {
    const PAUSE: Duration = Duration::from_millis(300);
    /// Longest wait for one answer before the sample counts as failed.
    const GIVE_UP: Duration = Duration::from_secs(30);

    pub fn start(addr: SocketAddr, token: &'static str) -> Prober {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (stop_t, samples_t) = (stop.clone(), samples.clone());
        let thread = std::thread::spawn(move || {
            let n = AtomicU64::new(0);
            while !stop_t.load(Ordering::Relaxed) {
                let i = n.fetch_add(1, Ordering::Relaxed);
                let text = format!("probe-{i}");
                let req = McpRequest::modern(
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": text}}),
                )
                .id(i + 1);
                let at = Instant::now();
                let raw = req.http("/mcp", "indy", Some(token));
                let error = match exchange(addr, &raw, Self::GIVE_UP) {
                    Err(e) => Some(e),
                    Ok(r) => match last_message(&r) {
                        Some(m) if m["result"]["structuredContent"]["text"] == json!(text) => None,
                        _ => Some(describe(&r)),
                    },
                };
                let s = Sample {
                    at,
                    latency: at.elapsed(),
                    error,
                };
                if let Ok(mut v) = samples_t.lock() {
                    v.push(s);
                }
                std::thread::sleep(Self::PAUSE);
            }
        });
        Prober {
            stop,
            samples,
            thread: Some(thread),
        }
    }

    /// The samples started at or after `from`.
    pub fn since(&self, from: Instant) -> Vec<Sample> {
        self.samples
            .lock()
            .map(|v| v.iter().filter(|s| s.at >= from).cloned().collect())
            .unwrap_or_default()
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The guest's Ethernet address the hostile rig is booted with (`eaddr`).
pub const GUEST_MAC: [u8; 6] = [0x08, 0x00, 0x69, 0x0e, 0x07, 0x21];

/// An Ethernet frame carrying a TCP SYN (with an MSS option) from a spoofed `src` to the
/// guest: the first packet of a handshake the sender never completes.
pub fn syn_frame(src: ([u8; 4], u16), dst: ([u8; 4], u16), seq: u32) -> Vec<u8> {
    let src_mac = [0x02, 0x66, src.0[0], src.0[1], src.0[2], src.0[3]];
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&GUEST_MAC);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    // IPv4 header: version 4, IHL 5, total length 20 + 24, DF, TTL 64, TCP.
    let mut ip = vec![0x45, 0, 0, 44, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0];
    ip.extend_from_slice(&src.0);
    ip.extend_from_slice(&dst.0);
    let c = checksum(&ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    // TCP header: data offset 6 words (one MSS option), SYN, window 8192.
    let mut tcp = Vec::with_capacity(24);
    tcp.extend_from_slice(&src.1.to_be_bytes());
    tcp.extend_from_slice(&dst.1.to_be_bytes());
    tcp.extend_from_slice(&seq.to_be_bytes());
    tcp.extend_from_slice(&0u32.to_be_bytes());
    tcp.extend_from_slice(&[0x60, 0x02, 0x20, 0x00, 0, 0, 0, 0]);
    tcp.extend_from_slice(&[2, 4, 0x05, 0xb4]);
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&src.0);
    pseudo.extend_from_slice(&dst.0);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
    let c = checksum(&tcp, sum(&pseudo));
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&tcp);
    f.resize(f.len().max(60), 0);
    f
}

/// The ones'-complement sum of 16-bit big-endian words.
fn sum(data: &[u8]) -> u32 {
    data.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

/// The Internet checksum of `data`, starting from a partial sum (the TCP pseudo-header).
fn checksum(data: &[u8], partial: u32) -> u16 {
    let mut s = partial + sum(data);
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Whether a frame's IPv4 and TCP checksums verify (each header summed with its checksum in
/// place folds to zero), the check the guest's stack makes before it looks at a SYN.
pub fn frame_checksums_ok(f: &[u8]) -> bool {
    if f.len() < 34 {
        return false;
    }
    let ip_len = usize::from(f[14] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    let Some(tcp) = f.get(14 + ip_len..14 + total) else {
        return false;
    };
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&f[26..34]);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
    checksum(&f[14..14 + ip_len], 0) == 0 && checksum(tcp, sum(&pseudo)) == 0
}
