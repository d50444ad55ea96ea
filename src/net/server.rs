//! The TCP side of the HTTP server: a pool of smoltcp sockets per port, each carrying one
//! `rpc::http::Connection` once a client connects. Every call to [`HttpServer::poll`] moves
//! bytes between sockets and connections without blocking; the connections do the HTTP.

use alloc::vec::Vec;
use rpc::http::{Connection, Handler, Peer};
use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::tcp::{self, State};
use smoltcp::time::Duration;
use smoltcp::wire::IpAddress;

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Ports to listen on (the MCP port, and 80).
    pub ports: Vec<u16>,
    /// Sockets per port: the most clients served at once on that port.
    pub sockets_per_port: usize,
    pub rx_buffer: usize,
    pub tx_buffer: usize,
    /// Drop a TCP connection whose peer stopped answering for this long.
    pub tcp_timeout_ms: u64,
    pub http: rpc::http::Config,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            ports: alloc::vec![7801, 80],
            sockets_per_port: 10,
            rx_buffer: 8 * 1024,
            tx_buffer: 16 * 1024,
            tcp_timeout_ms: 60_000,
            http: rpc::http::Config::default(),
        }
    }
}

struct Slot {
    handle: SocketHandle,
    port: u16,
    conn: Option<Connection>,
    /// The peer's FIN has been passed on to the connection.
    fin_seen: bool,
}

/// Counters for status and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub accepted: u64,
}

/// The listening sockets and the connections on them.
pub struct HttpServer {
    slots: Vec<Slot>,
    http: rpc::http::Config,
    pub stats: ServerStats,
}

impl HttpServer {
    /// Creates the sockets in `sockets` and starts listening.
    pub fn new(sockets: &mut SocketSet<'static>, config: &ServerConfig) -> Self {
        let mut slots = Vec::new();
        for &port in &config.ports {
            for _ in 0..config.sockets_per_port {
                let rx = tcp::SocketBuffer::new(alloc::vec![0; config.rx_buffer]);
                let tx = tcp::SocketBuffer::new(alloc::vec![0; config.tx_buffer]);
                let mut s = tcp::Socket::new(rx, tx);
                s.set_timeout(Some(Duration::from_millis(config.tcp_timeout_ms)));
                s.set_nagle_enabled(false);
                let handle = sockets.add(s);
                slots.push(Slot {
                    handle,
                    port,
                    conn: None,
                    fin_seen: false,
                });
            }
        }
        HttpServer {
            slots,
            http: config.http,
            stats: ServerStats::default(),
        }
    }

    /// Connections open now: sockets past the handshake, including ones accepted by the
    /// stack but not yet handed to a connection in this poll.
    pub fn open_connections(&self, sockets: &SocketSet<'static>) -> usize {
        self.slots
            .iter()
            .filter(|s| {
                s.conn.is_some()
                    || matches!(
                        sockets.get::<tcp::Socket>(s.handle).state(),
                        State::Established | State::CloseWait
                    )
            })
            .count()
    }

    /// One round over every socket. Returns true when any bytes moved or a connection changed.
    pub fn poll(
        &mut self,
        sockets: &mut SocketSet<'static>,
        handler: &mut dyn Handler,
        now_ms: u64,
    ) -> bool {
        let mut work = false;
        for slot in &mut self.slots {
            let sock = sockets.get_mut::<tcp::Socket>(slot.handle);
            work |= Self::poll_slot(slot, sock, &self.http, &mut self.stats, handler, now_ms);
        }
        work
    }

    fn poll_slot(
        slot: &mut Slot,
        sock: &mut tcp::Socket<'static>,
        http: &rpc::http::Config,
        stats: &mut ServerStats,
        handler: &mut dyn Handler,
        now_ms: u64,
    ) -> bool {
        let mut work = false;
        if slot.conn.is_none() {
            match sock.state() {
                // A closed socket listens again; one lingering in TIME-WAIT is reset so that
                // a burst of short connections cannot use up the pool.
                State::Closed | State::TimeWait => {
                    sock.abort();
                    if sock.listen(slot.port).is_err() {
                        return false;
                    }
                }
                State::Established | State::CloseWait => {
                    let peer = match sock.remote_endpoint() {
                        Some(ep) => Peer {
                            addr: ipv4_octets(ep.addr),
                            port: ep.port,
                        },
                        None => Peer {
                            addr: [0; 4],
                            port: 0,
                        },
                    };
                    slot.conn = Some(Connection::new(peer, *http, now_ms));
                    slot.fin_seen = false;
                    stats.accepted += 1;
                    work = true;
                }
                _ => return false,
            }
        }
        let Some(conn) = slot.conn.as_mut() else {
            return work;
        };

        // Received bytes into the connection; what it does not take stays in the socket.
        while sock.can_recv() {
            let taken = sock.recv(|buf| {
                let n = conn.recv(buf, now_ms, handler);
                (n, n)
            });
            match taken {
                Ok(0) | Err(_) => break,
                Ok(_) => work = true,
            }
        }
        if !slot.fin_seen && !sock.may_recv() && sock.recv_queue() == 0 {
            conn.peer_closed();
            slot.fin_seen = true;
            work = true;
        }

        // Responses out, as far as the socket's buffer takes them.
        loop {
            conn.poll(now_ms, handler);
            let out = conn.pending_output();
            if out.is_empty() || !sock.can_send() {
                break;
            }
            match sock.send_slice(out) {
                Ok(0) => break,
                Ok(n) => {
                    conn.mark_sent(n, now_ms);
                    work = true;
                }
                Err(_) => {
                    conn.abort();
                    break;
                }
            }
        }

        if conn.is_finished() {
            sock.close();
            slot.conn = None;
            work = true;
        } else if !sock.is_active() {
            // Reset by the peer or timed out: stop whatever the connection was doing.
            conn.abort();
            slot.conn = None;
            work = true;
        }
        work
    }
}

fn ipv4_octets(addr: IpAddress) -> [u8; 4] {
    match addr {
        IpAddress::Ipv4(a) => a.octets(),
        #[allow(unreachable_patterns)]
        _ => [0; 4],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::config::IpConfig;
    use crate::net::stack::{NetStack, instant};
    use rpc::http::{Request, Response};
    use smoltcp::phy::{Loopback, Medium};
    use smoltcp::wire::{IpEndpoint, Ipv4Address, Ipv4Cidr};
    use std::string::String;
    use std::vec::Vec;

    /// Answers with the request path.
    struct PathEcho;
    impl Handler for PathEcho {
        fn handle(&mut self, req: Request, _peer: Peer, _now: u64) -> Response {
            Response::full(200, "text/plain", req.path().as_bytes().to_vec())
        }
    }

    const IP: Ipv4Address = Ipv4Address::new(10, 7, 0, 1);

    fn setup(per_port: usize) -> (NetStack<Loopback>, HttpServer) {
        let ip = IpConfig::Static {
            cidr: Ipv4Cidr::new(IP, 8),
            gateway: None,
        };
        let mut stack = NetStack::new(
            Loopback::new(Medium::Ethernet),
            [2, 0, 0, 0, 0, 1],
            ip,
            0,
            7,
        );
        let cfg = ServerConfig {
            ports: alloc::vec![7801],
            sockets_per_port: per_port,
            ..Default::default()
        };
        let server = HttpServer::new(&mut stack.sockets, &cfg);
        (stack, server)
    }

    fn client(stack: &mut NetStack<Loopback>, local_port: u16) -> SocketHandle {
        let rx = tcp::SocketBuffer::new(alloc::vec![0; 65536]);
        let tx = tcp::SocketBuffer::new(alloc::vec![0; 65536]);
        let h = stack.sockets.add(tcp::Socket::new(rx, tx));
        let cx = stack.iface.context();
        let s = stack.sockets.get_mut::<tcp::Socket>(h);
        s.connect(cx, IpEndpoint::new(IP.into(), 7801), local_port)
            .unwrap();
        h
    }

    fn run(stack: &mut NetStack<Loopback>, server: &mut HttpServer, now: &mut u64, rounds: usize) {
        for _ in 0..rounds {
            *now += 1;
            stack.poll(*now);
            server.poll(&mut stack.sockets, &mut PathEcho, *now);
            stack.poll(*now);
        }
    }

    fn drain(stack: &mut NetStack<Loopback>, h: SocketHandle) -> String {
        let s = stack.sockets.get_mut::<tcp::Socket>(h);
        let mut out = Vec::new();
        while s.can_recv() {
            s.recv(|b| {
                out.extend_from_slice(b);
                (b.len(), ())
            })
            .unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn pipelined_requests_are_answered_in_order_then_closed() {
        let (mut stack, mut server) = setup(2);
        let mut now = 0;
        run(&mut stack, &mut server, &mut now, 2);
        let c = client(&mut stack, 40001);
        run(&mut stack, &mut server, &mut now, 10);
        let req = "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        stack
            .sockets
            .get_mut::<tcp::Socket>(c)
            .send_slice(req.as_bytes())
            .unwrap();
        run(&mut stack, &mut server, &mut now, 30);
        let text = drain(&mut stack, c);
        let first = text.find("/first").expect("first answered");
        let second = text.find("/second").expect("second answered");
        assert!(first < second, "{text}");
        assert!(text.starts_with("HTTP/1.1 200"));
        assert_eq!(server.stats.accepted, 1);
        // The server closed after `Connection: close`, and the slot listens again.
        assert!(!stack.sockets.get::<tcp::Socket>(c).may_recv());
        assert_eq!(server.open_connections(&stack.sockets), 0);
        let _ = instant(0);
    }

    #[test]
    fn a_full_pool_refuses_extra_clients_and_keeps_serving() {
        let (mut stack, mut server) = setup(3);
        let mut now = 0;
        run(&mut stack, &mut server, &mut now, 2);
        let clients: Vec<_> = (0..5).map(|i| client(&mut stack, 41000 + i)).collect();
        run(&mut stack, &mut server, &mut now, 20);
        assert_eq!(server.open_connections(&stack.sockets), 3);
        let established = clients
            .iter()
            .filter(|&&h| stack.sockets.get::<tcp::Socket>(h).state() == State::Established)
            .count();
        assert_eq!(established, 3);
        for &h in &clients {
            let s = stack.sockets.get_mut::<tcp::Socket>(h);
            if s.state() == State::Established {
                s.send_slice(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
                    .unwrap();
            }
        }
        run(&mut stack, &mut server, &mut now, 20);
        let answered = clients
            .iter()
            .filter(|&&h| drain(&mut stack, h).contains("/ok"))
            .count();
        assert_eq!(answered, 3);
    }
}
