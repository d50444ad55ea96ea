//! A plain HTTP/1.1 client over TCP for the guest's server: one response at a time
//! (Content-Length or chunked) on kept-alive connections, and SSE streams read as they come.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::mcp::messages;

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
