//! A host test server for the MCP endpoint: std TCP sockets, the real `rpc::http`
//! connection state machine, the conformance fixtures. For running the official conformance
//! suites and real clients against the rpc crate before the module runs in the rig.
//!
//! `cargo run -p irix7-rpc-conformance --example conformance_server -- 7801 [TOKEN]`
//! serves `http://127.0.0.1:7801/mcp` (loopback only).

fn main() {
    serve::run();
}

mod serve {
    use rpc::http::{self, Connection, Handler, Peer, Request, Response};
    use rpc::mcp::{Config, McpServer};
    use std::cell::RefCell;
    use std::io::{ErrorKind, Read, Write};
    use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
    use std::rc::Rc;
    use std::time::{Duration, Instant};

    /// Routes `/mcp` to the MCP server and answers everything else with 404.
    struct Router {
        mcp: McpServer<()>,
    }

    impl Handler for Router {
        fn handle(&mut self, req: &mut Request, peer: Peer, now_ms: u64) -> Response {
            if req.path() == "/mcp" {
                self.mcp.handle(req, peer, now_ms)
            } else {
                http::route::not_found()
            }
        }
    }

    struct Client {
        stream: TcpStream,
        conn: Connection,
        /// Received bytes the connection has not taken yet.
        unread: Vec<u8>,
        eof: bool,
    }

    fn peer_of(addr: SocketAddr) -> Peer {
        let ip = match addr.ip() {
            IpAddr::V4(v4) => v4.octets(),
            IpAddr::V6(_) => [127, 0, 0, 1],
        };
        Peer {
            addr: ip,
            port: addr.port(),
        }
    }

    /// Session ids from the OS clock and a counter; fine for a local test server.
    fn entropy() -> rpc::mcp::Entropy {
        let mut state: u64 = Instant::now().elapsed().as_nanos() as u64 ^ 0x9e37_79b9_7f4a_7c15;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        state ^= seed;
        Box::new(move |buf: &mut [u8]| {
            for b in buf.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = state as u8;
            }
        })
    }

    pub fn run() {
        let mut args = std::env::args().skip(1);
        let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(7801);
        let token = args.next();
        let mut config = Config::new("0.0-host", Some("irix7-mcp conformance fixtures".into()));
        config.token = token;
        // The suites fire requests faster than a person: keep the limits but raise the rate.
        config.limits.requests_per_second = 1000;
        let mut mcp = McpServer::new(config, Rc::new(RefCell::new(())), entropy());
        if let Err(e) = rpc_conformance::register(&mut mcp) {
            eprintln!("fixtures: {e}");
            std::process::exit(1);
        }
        let mut router = Router { mcp };
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        eprintln!("serving http://127.0.0.1:{port}/mcp");
        let start = Instant::now();
        let mut clients: Vec<Client> = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let now = start.elapsed().as_millis() as u64;
            let mut busy = false;
            while let Ok((stream, addr)) = listener.accept() {
                let _ = stream.set_nonblocking(true);
                let _ = stream.set_nodelay(true);
                let conn = Connection::new(peer_of(addr), http::Config::default(), now);
                clients.push(Client {
                    stream,
                    conn,
                    unread: Vec::new(),
                    eof: false,
                });
                busy = true;
            }
            for c in clients.iter_mut() {
                if !c.eof && c.unread.len() < buf.len() {
                    match c.stream.read(&mut buf) {
                        Ok(0) => c.eof = true,
                        Ok(n) => {
                            c.unread.extend_from_slice(&buf[..n]);
                            busy = true;
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(_) => c.conn.abort(),
                    }
                }
                if !c.unread.is_empty() {
                    let taken = c.conn.recv(&c.unread, now, &mut router);
                    c.unread.drain(..taken.min(c.unread.len()));
                }
                if c.eof && c.unread.is_empty() {
                    c.conn.peer_closed();
                }
                c.conn.poll(now, &mut router);
                loop {
                    let out = c.conn.pending_output();
                    if out.is_empty() {
                        break;
                    }
                    match c.stream.write(out) {
                        Ok(n) => {
                            c.conn.mark_sent(n, now);
                            c.conn.poll(now, &mut router);
                            busy = true;
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => {
                            c.conn.abort();
                            break;
                        }
                    }
                }
            }
            // Tool calls running as tasks advance with no request open.
            busy |= router.mcp.poll_tasks(now);
            clients.retain(|c| {
                let done = c.conn.is_finished();
                if done {
                    let _ = c.stream.shutdown(std::net::Shutdown::Both);
                }
                !done
            });
            if !busy {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}
