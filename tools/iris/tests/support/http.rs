//! A plain HTTP/1.1 client over TCP for the guest's server: one response at a time
//! (Content-Length or chunked) on kept-alive connections, and SSE streams read as they come.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use host_http::{Dechunker, Head, Response};

use rpc::testing::messages;

/// A client connection with a read timeout, so a broken server fails the test instead of
/// hanging it.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Reads exactly one response from a kept-alive connection (`buf` keeps what follows it);
/// `None` when the server closed the connection first or the response is malformed.
pub fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>, head_request: bool) -> Option<Response> {
    host_http::read_response(s, buf, head_request).ok()
}

/// A connection kept across requests, as the SDKs' clients keep theirs: opened when first
/// needed, and once more when the server has ended it since the last request.
pub struct Kept {
    addr: SocketAddr,
    conn: Option<(TcpStream, Vec<u8>)>,
}

impl Kept {
    pub fn new(addr: SocketAddr) -> Kept {
        Kept { addr, conn: None }
    }

    /// Sends `raw` and reads its response; `None` when neither the kept connection nor a new
    /// one answered.
    pub fn exchange(&mut self, raw: &[u8]) -> Option<Response> {
        for _ in 0..2 {
            let (s, buf) = match &mut self.conn {
                Some(c) => c,
                None => self.conn.insert((connect(self.addr), Vec::new())),
            };
            let answer = s
                .write_all(raw)
                .ok()
                .and_then(|()| read_response(s, buf, false));
            if answer.is_some() {
                return answer;
            }
            self.conn = None;
        }
        None
    }
}

/// Sends a request and reads its response on a fresh connection.
pub fn request(addr: SocketAddr, raw: &str) -> Response {
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

/// A response whose body arrives bit by bit (an SSE stream): the head is parsed, the body is
/// de-chunked as it comes.
pub struct Stream {
    pub s: TcpStream,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    raw: Vec<u8>,
    /// The chunked body's decoder; `None` for a body that is not chunked.
    chunks: Option<Dechunker>,
    pub body: Vec<u8>,
    pub ended: bool,
}

impl Stream {
    /// Sends `raw` and reads the response head.
    pub fn open(addr: SocketAddr, raw: &str) -> Stream {
        let mut s = connect(addr);
        s.write_all(raw.as_bytes()).unwrap();
        let mut buf = Vec::new();
        let (head, head_len) = loop {
            if let Some(head) = Head::parse(&buf).expect("an HTTP response head") {
                break head;
            }
            let more = host_http::fill(&mut s, &mut buf).unwrap_or(false);
            assert!(more, "closed before the response head");
        };
        buf.drain(..head_len);
        let mut st = Stream {
            s,
            chunks: head.is_chunked().then(Dechunker::default),
            status: head.status,
            headers: head.headers,
            raw: buf,
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
        if self.ended || !host_http::fill(&mut self.s, &mut self.raw).unwrap_or(false) {
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
        let Some(chunks) = &mut self.chunks else {
            self.body.append(&mut self.raw);
            return;
        };
        match chunks.feed(&self.raw, &mut self.body) {
            Ok(used) => {
                self.raw.drain(..used);
                self.ended = chunks.done();
            }
            Err(_) => self.ended = true,
        }
    }
}
