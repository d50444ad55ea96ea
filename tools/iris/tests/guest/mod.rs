//! Boots the real module image in a rig on its own thread, with both server ports forwarded
//! to free host ports, for end-to-end tests that talk TCP to it.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
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
}

/// Boots the image with extra NVRAM variables, or `None` (with the reason printed) when the
/// image has not been built and no `IRIX7_IMAGE` demands one.
pub fn boot(extra_env: &[&str]) -> Option<Guest> {
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
    let abs = path.canonicalize().unwrap();
    let mut env = vec![
        format!("mcp.url=file:{}", abs.display()),
        format!("mcp.sha256={}", sha256_hex(&image)),
        "netaddr=172.31.77.2/24".to_string(),
    ];
    env.extend(extra_env.iter().map(|s| s.to_string()));
    let opts = RigOptions {
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
    let rig = Rig::spawn(opts).expect("the rig boots the image");
    let addrs = rig.forward_addrs().to_vec();
    Some(Guest {
        rig,
        mcp: addrs[0],
        http: addrs[1],
    })
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
