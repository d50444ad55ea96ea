//! Boots the real module image in a rig on its own thread, with both server ports forwarded
//! to free host ports, for end-to-end tests that talk TCP to it.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use iris::image::{find_repo_root, sha256_hex};
use iris::net::Forward;
use iris::{Rig, RigHandle, RigOptions};

/// The product image `cargo xtask image` builds (`IRIX7_IMAGE` names another).
pub fn image_path() -> PathBuf {
    std::env::var_os("IRIX7_IMAGE")
        .map(PathBuf::from)
        .unwrap_or_else(|| find_repo_root().join("target/image/irix7-mcp.o"))
}

/// A running guest and the host addresses of its MCP port and port 80.
pub struct Guest {
    pub rig: RigHandle,
    pub mcp: SocketAddr,
    pub http: SocketAddr,
    _image: PrivateImage,
}

/// Boots the image with extra NVRAM variables, or `None` (with the reason printed) when the
/// image has not been built and no `IRIX7_IMAGE` demands one.
pub fn boot(extra_env: &[&str]) -> Option<Guest> {
    boot_with(extra_env, |_| {})
}

/// Like `boot`, with `tweak` adjusting the rig options (watchdog period, disks) before boot.
/// The guest loads a private copy of the image, so a reset (which loads and verifies the image
/// again) is not disturbed by a rebuild of `target/image` meanwhile.
pub fn boot_with(extra_env: &[&str], tweak: impl FnOnce(&mut RigOptions)) -> Option<Guest> {
    let path = image_path();
    let image = match std::fs::read(&path) {
        Ok(b) => b,
        Err(_) if std::env::var_os("IRIX7_IMAGE").is_none() => {
            println!(
                "skipped: no module image at {} (run `cargo xtask image`)",
                path.display()
            );
            return None;
        }
        Err(e) => panic!("IRIX7_IMAGE {}: {e}", path.display()),
    };
    let copy = PrivateImage::new(&image);
    let mut env = vec![
        format!("mcp.url=file:{}", copy.0.display()),
        format!("mcp.sha256={}", sha256_hex(&image)),
        "netaddr=172.31.77.2/24".to_string(),
    ];
    env.extend(extra_env.iter().map(|s| s.to_string()));
    let mut opts = RigOptions {
        root: Some(find_repo_root()),
        env,
        quiet: true,
        no_disk: true,
        forwards: vec![
            Forward {
                host_port: 0,
                guest_port: 7801,
            },
            Forward {
                host_port: 0,
                guest_port: 80,
            },
        ],
        ..RigOptions::default()
    };
    tweak(&mut opts);
    let rig = Rig::spawn(opts).expect("the rig boots the image");
    let addrs = rig.forward_addrs().to_vec();
    Some(Guest {
        rig,
        mcp: addrs[0],
        http: addrs[1],
        _image: copy,
    })
}

/// A copy of the image in the temporary directory, removed when the guest is dropped.
pub struct PrivateImage(PathBuf);

impl PrivateImage {
    fn new(bytes: &[u8]) -> PrivateImage {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "iris-guest-{}-{}.o",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, bytes).expect("write the image copy");
        PrivateImage(path)
    }
}

impl Drop for PrivateImage {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A client connection with a read timeout, so a broken server fails the test instead of
/// hanging it.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// One parsed response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads exactly one response (Content-Length or chunked) from a kept-alive connection;
/// `None` when the server closed the connection first.
pub fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>, head_request: bool) -> Option<Resp> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if !fill(s, buf) {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end);
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
    };
    if head_request {
        return Some(resp);
    }
    if let Some(len) = resp
        .header("content-length")
        .and_then(|l| l.parse::<usize>().ok())
    {
        while buf.len() < len {
            if !fill(s, buf) {
                return None;
            }
        }
        resp.body = buf.drain(..len).collect();
    } else if resp
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let line_end = loop {
                if let Some(i) = find(buf, b"\r\n") {
                    break i;
                }
                if !fill(s, buf) {
                    return None;
                }
            };
            let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            buf.drain(..line_end + 2);
            while buf.len() < size + 2 {
                if !fill(s, buf) {
                    return None;
                }
            }
            resp.body.extend(buf.drain(..size));
            buf.drain(..2);
            if size == 0 {
                break;
            }
        }
    }
    Some(resp)
}

/// Sends a request and reads its response on a fresh connection.
pub fn request(addr: SocketAddr, raw: &str) -> Resp {
    let mut s = connect(addr);
    s.write_all(raw.as_bytes()).unwrap();
    let mut buf = Vec::new();
    read_response(&mut s, &mut buf, raw.starts_with("HEAD")).expect("a response")
}

/// True when the server closed the connection (EOF or reset) within the read timeout.
pub fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut b = [0u8; 16384];
    match s.read(&mut b) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&b[..n]);
            true
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// The stateless MCP era the helpers below speak.
pub const MODERN: &str = "2026-07-28";

/// A modern-era (2026-07-28) JSON-RPC request as raw HTTP: the `_meta` fields and the
/// `Mcp-Method`/`Mcp-Name` headers the server checks, `extra_meta` merged into `_meta` (e.g. a
/// `progressToken`), and `accept` as the Accept header.
pub fn mcp_request(
    id: u64,
    method: &str,
    mut params: serde_json::Value,
    extra_meta: serde_json::Value,
    accept: &str,
) -> String {
    let mut meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "iris-tests", "version": "1"},
    });
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
        m.extend(extra.clone());
    }
    params["_meta"] = meta;
    let name = params
        .get("name")
        .and_then(|n| n.as_str())
        .map(|n| format!("Mcp-Name: {n}\r\n"))
        .unwrap_or_default();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: indy\r\nContent-Type: application/json\r\n\
         Accept: {accept}\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: {method}\r\n{name}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A `tools/call` request answered as JSON.
pub fn tool_request(id: u64, tool: &str, args: serde_json::Value) -> String {
    mcp_request(
        id,
        "tools/call",
        serde_json::json!({"name": tool, "arguments": args}),
        serde_json::json!({}),
        "application/json, text/event-stream",
    )
}

/// The JSON-RPC messages in a response body: one JSON object, or each SSE `data:` line.
pub fn messages(body: &[u8]) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(body);
    if let Ok(v) = serde_json::from_str(&text) {
        return vec![v];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// Calls a tool on a fresh connection; the JSON-RPC `result` (with `isError` when it failed).
pub fn call_tool(addr: SocketAddr, tool: &str, args: serde_json::Value) -> serde_json::Value {
    let r = request(addr, &tool_request(1, tool, args));
    assert_eq!(r.status, 200, "{tool}: {}", r.text());
    let msg = messages(&r.body)
        .pop()
        .unwrap_or_else(|| panic!("{tool}: no JSON-RPC message in {}", r.text()));
    msg.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{tool}: no result in {msg}"))
}

/// Calls a tool that must succeed; its structured result.
pub fn tool_ok(addr: SocketAddr, tool: &str, args: serde_json::Value) -> serde_json::Value {
    let r = call_tool(addr, tool, args);
    assert_ne!(r["isError"], serde_json::json!(true), "{tool} failed: {r}");
    r["structuredContent"].clone()
}

/// The text of a tool result's first content block.
pub fn first_text(result: &serde_json::Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

/// A response whose body arrives bit by bit (an SSE stream): the head is parsed, the body is
/// de-chunked as it comes.
pub struct Stream {
    pub s: TcpStream,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    raw: Vec<u8>,
    chunked: bool,
    pub body: Vec<u8>,
    pub ended: bool,
}

impl Stream {
    /// Sends `raw` and reads the response head.
    pub fn open(addr: SocketAddr, raw: &str) -> Stream {
        let mut s = connect(addr);
        s.write_all(raw.as_bytes()).unwrap();
        let mut buf = Vec::new();
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            assert!(fill(&mut s, &mut buf), "closed before the response head");
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end);
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| {
                l.split_once(':')
                    .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            })
            .collect();
        let chunked = headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
        });
        let mut st = Stream {
            s,
            status,
            headers,
            raw: buf,
            chunked,
            body: Vec::new(),
            ended: false,
        };
        st.dechunk();
        st
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Reads more of the body (blocking up to the read timeout); false at the end.
    pub fn more(&mut self) -> bool {
        if self.ended || !fill(&mut self.s, &mut self.raw) {
            self.ended = true;
            return false;
        }
        self.dechunk();
        true
    }

    /// The complete SSE events so far, parsed from their `data:` lines.
    pub fn events(&self) -> Vec<serde_json::Value> {
        let text = String::from_utf8_lossy(&self.body);
        let complete = text.rfind("\n\n").map_or("", |i| &text[..i]);
        messages(complete.as_bytes())
    }

    fn dechunk(&mut self) {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return;
        }
        while let Some(line_end) = find(&self.raw, b"\r\n") {
            let size_text = String::from_utf8_lossy(&self.raw[..line_end]).into_owned();
            let Ok(size) =
                usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            else {
                self.ended = true;
                return;
            };
            if self.raw.len() < line_end + 2 + size + 2 {
                return;
            }
            self.raw.drain(..line_end + 2);
            self.body.extend(self.raw.drain(..size));
            self.raw.drain(..2);
            if size == 0 {
                self.ended = true;
                return;
            }
        }
    }
}
