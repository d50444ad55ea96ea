//! The TCP side of the HTTP server: a pool of smoltcp sockets per port, each carrying one
//! `rpc::http::Connection` once a client connects. Every call to [`HttpServer::poll`] moves
//! bytes between sockets and connections without blocking; the connections do the HTTP.
//!
//! The pool is fixed, so it is what a hostile client aims at. It is kept open for new clients:
//! - a handshake that is not completed within [`HANDSHAKE_MS`] gives its socket back (a SYN
//!   flood or half-open connections hold nothing for long);
//! - once the module has closed a connection, the socket listens again as soon as the peer
//!   has everything (at once after the peer's FIN, within [`CLOSE_MS`] otherwise);
//! - one client address holds at most `per_client` connections of a port, and connections
//!   that proved no token at most `anonymous_per_port` of them: a new connection past either
//!   cap takes the place of the oldest anonymous one (of the address, or of the port) past
//!   [`GRACE_MS`]; if none may go yet it is on probation, and its first request must prove a
//!   token (then the address's connection readiest to yield gives way) or is answered 503
//!   with `Retry-After` and closed;
//! - when a port has no listening socket left, the connection readiest to yield is reset to
//!   make room: the oldest anonymous one (by age, not idleness: a byte resets idleness), else
//!   the authenticated one that has owed its peer nothing for longest (idle, or receiving a
//!   request slowly); none younger than [`GRACE_MS`] by that measure. Authenticated clients
//!   are never locked out by anonymous ones, nor by a runaway client of their own token;
//! - the connection that takes a port's last slot is the door for higher ranks
//!   ([`Handler::rank`]): the first token it proves must outrank a connection of the port,
//!   which is then reset whatever it is doing (the lowest rank, the oldest first), or be of
//!   the top rank; any other is answered 503 with `Retry-After` and closed. A lesser token's
//!   busy connections never hold every slot against a greater one.
//!
//! A socket's buffers are the bulk of the module's idle heap, so only the slots that need them
//! hold them: each port keeps one listening socket with buffers, a slot gets its socket and
//! buffers when it becomes that listener and gives both back once its connection is over. A
//! spare slot has no socket in the stack's set at all: smoltcp visits every socket of the set
//! for each frame it sends and receives, so idle ones would cost every segment. Nor does it
//! hold an empty entry there (the set is made with room for every slot's socket instead):
//! smoltcp walks the empty entries too, on every egress pass. Between two received frames the
//! stack lets the server put the next listener up ([`HttpServer::refill`]) when the first one
//! carried a SYN, so a burst of SYNs finds one for each while slots are free.

use alloc::rc::Rc;
use alloc::vec::Vec;
use irix7_kmem::budget::Pool;
use rpc::http::{Admission, Connection, Handler, Peer, RANK_TOP, Request, Response};
use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::tcp::{self, State};
use smoltcp::time::Duration;
use smoltcp::wire::IpAddress;

mod pump;

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
    /// Connections one client address may hold on one port.
    pub per_client: usize,
    /// Connections that proved no token a port holds at most: the rest of its slots are
    /// kept for connections that do (all of them when no token is configured).
    pub anonymous_per_port: usize,
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
            per_client: 8,
            anonymous_per_port: 8,
            http: rpc::http::Config {
                limits: rpc::http::Limits {
                    body: MAX_BODY,
                    ..rpc::http::Limits::default()
                },
                ..rpc::http::Config::default()
            },
        }
    }
}

/// The largest request body. A request is parsed, checked and handed to its tool in the poll
/// that completes it, at about 43 guest instructions a body byte (measured on a `fs.write`),
/// so this bounds that poll at about 5.6M instructions; bigger writes go in pieces
/// (`fs.write` with `append` or `offset`).
pub const MAX_BODY: usize = 128 * 1024;

impl ServerConfig {
    /// The pool for a heap of `heap` bytes: the full pool from 4 MiB up; below that fewer
    /// and smaller sockets, so that the module still serves on the 1 MiB the ABI promises.
    pub fn for_heap(heap: usize) -> Self {
        let full = ServerConfig::default();
        if heap >= 4 << 20 {
            return full;
        }
        ServerConfig {
            // Three connections a port: each may hold its buffers and a complete answer
            // (`budget.rs`), and on 1 MiB four a port left the request pools nothing once the
            // tool registry and a disk's block cache count as idle use.
            sockets_per_port: 3,
            per_client: 2,
            anonymous_per_port: 2,
            rx_buffer: 4 * 1024,
            tx_buffer: 8 * 1024,
            http: rpc::http::Config {
                output_buffer: 4 * 1024,
                input_buffer: 4 * 1024,
                limits: rpc::http::Limits {
                    header_section: 8 * 1024,
                    ..full.http.limits
                },
                ..full.http
            },
            ..full
        }
    }

    /// Sockets the server may hold at once: every slot of every port.
    pub fn sockets(&self) -> usize {
        self.ports.len() * self.sockets_per_port
    }

    /// Heap one socket's buffers take (while it listens or carries a connection).
    pub fn socket_bytes(&self) -> usize {
        self.rx_buffer + self.tx_buffer
    }
}

/// Requests answered in one poll at most. The watchdog is kicked once a poll, and no poll may
/// run long (docs/bounds.md): with every request's own work bounded, this bounds the poll.
/// Connections are visited from a rotating start, so a busy one cannot starve the others.
pub const REQUESTS_PER_POLL: usize = 4;

/// Counts the requests a handler answers, and judges the requests of a connection on
/// probation (past a cap): one that proves no token is refused with the probation's reason.
struct Counted<'a> {
    inner: &'a mut dyn Handler,
    handled: usize,
    /// Why the connection being served is on probation, if it is.
    probation: Option<&'static str>,
    /// It proved a token on probation.
    claimed: bool,
    /// It was refused on probation, or in its port's last slot.
    refused: bool,
    /// The connection being served holds its port's last slot and has proved no token yet:
    /// the lowest rank of the port's other connections that did ([`HttpServer::door`]).
    door: Option<Option<u8>>,
    /// It proved a token of this rank in its port's last slot, outranking a holder.
    outranked: Option<u8>,
    /// The rank of the last request that proved a token ([`Handler::rank`]).
    ranked: Option<u8>,
}

impl<'a> Counted<'a> {
    fn new(inner: &'a mut dyn Handler) -> Self {
        Counted {
            inner,
            handled: 0,
            probation: None,
            claimed: false,
            refused: false,
            door: None,
            outranked: None,
            ranked: None,
        }
    }
}

impl Handler for Counted<'_> {
    fn admit(
        &mut self,
        head: &Request,
        peer: Peer,
        proven: Option<u8>,
        now_ms: u64,
    ) -> Result<Admission, Response> {
        let verdict = self.inner.admit(head, peer, proven, now_ms);
        let rank = match verdict {
            Ok(Admission::Authenticated(token)) => Some(self.inner.rank(head, token)),
            _ => None,
        };
        self.ranked = rank.or(self.ranked);
        if let (Some(lowest), Some(rank)) = (self.door, rank) {
            let outranks = lowest.is_some_and(|l| l < rank);
            if !outranks && rank != RANK_TOP {
                self.refused = true;
                return Err(busy(
                    "the port is full: its connections hold tokens of this rank or higher",
                ));
            }
            self.outranked = outranks.then_some(rank);
        }
        let Some(why) = self.probation else {
            return verdict;
        };
        if matches!(verdict, Ok(Admission::Authenticated(_))) {
            self.claimed = true;
            return verdict;
        }
        self.refused = true;
        verdict?;
        Err(busy(why))
    }

    fn handle(&mut self, req: &mut Request, peer: Peer, now_ms: u64) -> Response {
        self.handled += 1;
        self.inner.handle(req, peer, now_ms)
    }

    fn on_port(&mut self, local_port: u16) {
        self.inner.on_port(local_port);
    }
}

/// The 503 a connection refused for want of a slot gets, and when to try again.
fn busy(why: &'static str) -> Response {
    let mut r = rpc::http::response::error(503, why);
    r.headers.push_static("Retry-After", "1");
    r
}

/// A handshake not completed this long after the SYN gives its socket back.
pub const HANDSHAKE_MS: u64 = 3_000;
/// A connection is not reset to make room before this long: an anonymous one after it
/// opened (a client that just connected gets the time to send its request), an
/// authenticated one after it last owed its peer nothing.
pub const GRACE_MS: u64 = 1_000;
/// An authenticated connection receiving its request slower than the minimum body rate
/// (`rpc::http::Config::min_body_rate`) may be reset to make room this long after the
/// request's first byte: a client trickling requests over many connections turns each slot
/// over this fast, so a client sending whole requests soon gets one. The same holds for one
/// whose last answer turned it away for load, after that answer, and for one that wrote a
/// refusal out and only lingers.
pub const SLOW_GRACE_MS: u64 = 100;
/// An authenticated connection whose peer has taken none of the answer it is owed for this
/// long may be reset to make room, after every anonymous and idle one: a client that stops
/// reading (or reads a few bytes every few seconds) cannot keep a slot a reading one needs.
pub const STALLED_GRACE_MS: u64 = 2_000;
/// A reset socket waits at most this long for its RST to leave before it listens again.
pub const RST_MS: u64 = 200;
/// A slot the server took back (a connection reset to make room, a stalled handshake) rests
/// this long before it listens again. The client cut from it reconnects at once, sooner than
/// any client whose SYN the full port refused tries again, and would take the slot straight
/// back; its new SYN is refused like theirs, and the first of anyone's after the rest gets the
/// slot. Without the rest, siblings of a token trickling bodies took back 78 % of the slots
/// they were cut from, and a client of theirs that opens a connection a call waited up to 10 s
/// (`tools/iris/tests/slots.rs`).
pub const REST_MS: u64 = 30;
/// A socket the module closed waits at most this long for the peer to take the last bytes.
pub const CLOSE_MS: u64 = 5_000;

struct Slot {
    /// The slot's socket, with its buffers, while it listens or carries or has just ended a
    /// connection; `None` for a spare slot.
    handle: Option<SocketHandle>,
    port: u16,
    conn: Option<Connection>,
    /// The peer's FIN has been passed on to the connection.
    fin_seen: bool,
    /// The socket's state when last looked at, and since when it has been in it.
    state: State,
    since_ms: u64,
    /// Until when the connection waits on a peer that takes none of its output and has
    /// nothing else to do (`Connection::blocked_until`, kept from the last poll); 0 when not.
    blocked_until: u64,
    /// Until when the connection is idle between requests and a poll changes nothing unless
    /// a byte or a FIN arrives (`Connection::quiet_until`, kept from the last poll); 0 when
    /// not.
    quiet_until: u64,
    /// Why the connection is on probation (past a cap when it was accepted) until it proves
    /// a token; `None` when it is not.
    probation: Option<&'static str>,
    /// The connection took its port's last slot, and has proved no token since
    /// ([`HttpServer::door`]).
    door: bool,
    /// The rank of the connection's last request that proved a token ([`Handler::rank`]).
    rank: Option<u8>,
    /// The server took the slot back at `since_ms`: it listens again [`REST_MS`] after.
    rests: bool,
}

/// The slots a mask names, lowest first.
fn slots_in(mut mask: u64) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        let i = mask.trailing_zeros();
        mask &= mask.wrapping_sub(1);
        (i < u64::BITS).then_some(i as usize)
    })
}

/// Counters for status and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub accepted: u64,
    /// Connections reset to keep the pool open: stalled handshakes, connections that gave
    /// way to a new client or to one that proved a token past its address's cap.
    pub reaped: u64,
}

/// The listening sockets and the connections on them.
pub struct HttpServer {
    slots: Vec<Slot>,
    http: rpc::http::Config,
    /// Each port, and the slot last put up to listen on it.
    listeners: Vec<(u16, Option<usize>)>,
    rx_buffer: usize,
    tx_buffer: usize,
    tcp_timeout_ms: u64,
    per_client: usize,
    anonymous_per_port: usize,
    /// What request bodies are charged to, shared by every connection.
    requests: Rc<Pool>,
    /// The slots that have a socket, bit `i` for slot `i`: the only ones a poll visits (most
    /// of the pool is spare, and a walk of every slot cost each idle poll about 500
    /// instructions).
    live: u64,
    /// The slot the next poll starts at.
    next: usize,
    pub stats: ServerStats,
}

/// Slots a server holds at most (one bit each in [`HttpServer`]'s `live`).
pub const MAX_SLOTS: usize = 64;

impl HttpServer {
    /// The slots, without sockets yet: the first poll puts up each port's listener. The
    /// stack's set must have room for [`ServerConfig::sockets`] more sockets (`NetStack::new`),
    /// so that a slot taking one never grows it. Request bodies are charged to `requests`.
    pub fn new(config: &ServerConfig, requests: Rc<Pool>) -> Self {
        let mut server = HttpServer {
            slots: Vec::new(),
            listeners: config.ports.iter().map(|&p| (p, None)).collect(),
            http: config.http,
            rx_buffer: config.rx_buffer,
            tx_buffer: config.tx_buffer,
            tcp_timeout_ms: config.tcp_timeout_ms,
            per_client: config.per_client.max(1),
            anonymous_per_port: config.anonymous_per_port,
            requests,
            live: 0,
            next: 0,
            stats: ServerStats::default(),
        };
        let per_port = config
            .sockets_per_port
            .min(MAX_SLOTS / config.ports.len().max(1));
        for &port in &config.ports {
            for _ in 0..per_port {
                server.slots.push(Slot {
                    handle: None,
                    port,
                    conn: None,
                    fin_seen: false,
                    state: State::Closed,
                    since_ms: 0,
                    blocked_until: 0,
                    quiet_until: 0,
                    probation: None,
                    door: false,
                    rank: None,
                    rests: false,
                });
            }
        }
        server
    }

    /// A socket over the given buffers, with the server's timeouts.
    fn socket(&self, rx: Vec<u8>, tx: Vec<u8>) -> tcp::Socket<'static> {
        let mut s = tcp::Socket::new(tcp::SocketBuffer::new(rx), tcp::SocketBuffer::new(tx));
        s.set_timeout(Some(Duration::from_millis(self.tcp_timeout_ms)));
        // Probes a silent peer, so one that vanished during a long answer (an SSE
        // stream, a call waiting for its input) is found within the timeout.
        s.set_keep_alive(Some(Duration::from_millis(self.tcp_timeout_ms / 3)));
        s.set_nagle_enabled(false);
        s
    }

    /// Gives closed slot `i` a new socket with buffers (`buffered`), or takes its socket out
    /// of the set. False when the heap has no room for the buffers: the slot stays as it was.
    fn rebuild(&mut self, i: usize, sockets: &mut SocketSet<'static>, buffered: bool) -> bool {
        let zeroed = |n: usize| {
            let mut v = Vec::new();
            v.try_reserve_exact(n).ok()?;
            v.resize(n, 0);
            Some(v)
        };
        let socket = if buffered {
            match (zeroed(self.rx_buffer), zeroed(self.tx_buffer)) {
                (Some(rx), Some(tx)) => Some(self.socket(rx, tx)),
                _ => return false,
            }
        } else {
            None
        };
        let slot = &mut self.slots[i];
        // The old socket (and its buffers) goes first, so its entry is the one reused.
        if let Some(old) = slot.handle.take() {
            sockets.remove(old);
        }
        slot.handle = socket.map(|s| sockets.add(s));
        let bit = 1 << i;
        self.live = if slot.handle.is_some() {
            self.live | bit
        } else {
            self.live & !bit
        };
        true
    }

    /// Whether the slot last put up to listen on `port` still listens (one looked at, not the
    /// pool: this runs after every received frame).
    fn listens(&self, port: u16, sockets: &SocketSet<'static>) -> bool {
        self.listeners
            .iter()
            .any(|&(p, slot)| p == port && self.listening(slot, sockets))
    }

    /// Whether a listener entry's slot still listens (`listen` gives every entry of a port the
    /// same slot, so one entry answers for its port).
    fn listening(&self, slot: Option<usize>, sockets: &SocketSet<'static>) -> bool {
        slot.and_then(|j| self.slots.get(j)?.handle)
            .is_some_and(|h| sockets.get::<tcp::Socket>(h).state() == State::Listen)
    }

    /// Puts up a listener on every port that has none, in a free slot, so that the next SYN
    /// finds one. The stack calls this between received frames (after one that carried a SYN,
    /// the only kind that takes a listener), the poll after its round.
    pub fn refill(&mut self, sockets: &mut SocketSet<'static>, now_ms: u64) {
        for k in 0..self.listeners.len() {
            let (port, slot) = self.listeners[k];
            if self.listening(slot, sockets) {
                continue;
            }
            let free = (0..self.slots.len()).find(|&j| {
                self.slots[j].port == port
                    && self.slots[j].conn.is_none()
                    && self.may_listen(j, sockets, now_ms)
            });
            if let Some(j) = free {
                self.listen(j, sockets, now_ms);
            }
        }
    }

    /// Whether slot `i`'s socket is closed and may listen or give its buffers back: a reset
    /// on its way out is waited for, [`RST_MS`] at most (listening would forget the peer
    /// before the RST is sent, and the peer would wait on a connection that no longer
    /// exists; an RST to an address that never answers ARP, a spoofed SYN, is never sent).
    fn may_listen(&self, i: usize, sockets: &SocketSet<'static>, now_ms: u64) -> bool {
        if self.resting(i, now_ms) {
            return false;
        }
        let slot = &self.slots[i];
        // A spare slot has no socket: nothing to wait for.
        let Some(handle) = slot.handle else {
            return true;
        };
        let sock = sockets.get::<tcp::Socket>(handle);
        sock.state() == State::Closed
            && (sock.remote_endpoint().is_none()
                || (slot.state == State::Closed && now_ms.saturating_sub(slot.since_ms) >= RST_MS))
    }

    /// Whether slot `i` was taken back less than [`REST_MS`] ago.
    fn resting(&self, i: usize, now_ms: u64) -> bool {
        let slot = &self.slots[i];
        slot.rests && now_ms.saturating_sub(slot.since_ms) < REST_MS
    }

    /// Makes closed slot `i` listen, with its buffers. False when there is no room for them.
    fn listen(&mut self, i: usize, sockets: &mut SocketSet<'static>, now_ms: u64) -> bool {
        if self.slots[i].handle.is_none() && !self.rebuild(i, sockets, true) {
            return false;
        }
        let slot = &mut self.slots[i];
        let Some(handle) = slot.handle else {
            return false;
        };
        if sockets
            .get_mut::<tcp::Socket>(handle)
            .listen(slot.port)
            .is_err()
        {
            return false;
        }
        slot.state = State::Listen;
        slot.since_ms = now_ms;
        slot.rests = false;
        let port = slot.port;
        for (p, listener) in &mut self.listeners {
            if *p == port {
                *listener = Some(i);
            }
        }
        true
    }

    /// Connections open now: sockets past the handshake, including ones accepted by the
    /// stack but not yet handed to a connection in this poll.
    pub fn open_connections(&self, sockets: &SocketSet<'static>) -> usize {
        slots_in(self.live)
            .filter(|&i| {
                let s = &self.slots[i];
                s.conn.is_some()
                    || s.handle.is_some_and(|h| {
                        matches!(
                            sockets.get::<tcp::Socket>(h).state(),
                            State::Established | State::CloseWait
                        )
                    })
            })
            .count()
    }

    /// The connections the slots' sockets hold in their handshake (SYN-RECEIVED), as (local
    /// address, local port, remote address, remote port): the device keeps their repeated
    /// SYNs from the stack (`TcpWire::set_handshakes`).
    pub fn handshakes<'s>(
        &'s self,
        sockets: &'s SocketSet<'static>,
    ) -> impl Iterator<Item = ([u8; 4], u16, [u8; 4], u16)> + 's {
        slots_in(self.live).filter_map(move |i| {
            let sock = sockets.get::<tcp::Socket>(self.slots[i].handle?);
            if sock.state() != State::SynReceived {
                return None;
            }
            let (local, remote) = (sock.local_endpoint()?, sock.remote_endpoint()?);
            match (local.addr, remote.addr) {
                (IpAddress::Ipv4(l), IpAddress::Ipv4(r)) => {
                    Some((l.octets(), local.port, r.octets(), remote.port))
                }
            }
        })
    }

    /// One round over every socket. Returns true when any bytes moved or a connection changed.
    pub fn poll(
        &mut self,
        sockets: &mut SocketSet<'static>,
        handler: &mut dyn Handler,
        now_ms: u64,
    ) -> bool {
        let mut work = false;
        let mut counted = Counted::new(handler);
        let n = self.slots.len();
        let start = self.next.min(n);
        // The slots with a socket, from the rotating start to the end, then from the first
        // slot to it.
        let from_start = self.live & u64::MAX.checked_shl(start as u32).unwrap_or(0);
        for i in slots_in(from_start).chain(slots_in(self.live & !from_start)) {
            // Past the poll's share of requests, connections only write what is owed; what
            // they received waits in the socket for the next poll.
            let read = counted.handled < REQUESTS_PER_POLL;
            work |= !read;
            work |= self.poll_slot(i, sockets, &mut counted, now_ms, read);
        }
        work |= counted.handled >= REQUESTS_PER_POLL;
        self.next = (self.next + 1) % n.max(1);
        // Each port once: the listeners name every port (the slots, many to a port, made this
        // a walk of every pair of slots on every poll).
        for k in 0..self.listeners.len() {
            let port = self.listeners[k].0;
            if !self.listeners[..k].iter().any(|&(p, _)| p == port) {
                work |= self.keep_listening(port, sockets, now_ms);
            }
        }
        self.refill(sockets, now_ms);
        work
    }

    /// Resets the connection of slot `i` (the peer gets a RST); the socket listens again once
    /// the RST is out.
    fn reset(&mut self, i: usize, sockets: &mut SocketSet<'static>, now_ms: u64) {
        let slot = &mut self.slots[i];
        if let Some(mut conn) = slot.conn.take() {
            conn.abort();
        }
        if let Some(h) = slot.handle {
            sockets.get_mut::<tcp::Socket>(h).abort();
        }
        slot.state = State::Closed;
        slot.since_ms = now_ms;
    }

    /// [`HttpServer::reset`] of a connection the pool took back (counted in the stats).
    fn reap(&mut self, i: usize, sockets: &mut SocketSet<'static>, now_ms: u64) {
        self.reset(i, sockets, now_ms);
        self.slots[i].rests = true;
        self.stats.reaped += 1;
    }

    /// When no socket of `port` listens and no handshake is under way on it, resets the
    /// connection readiest to yield, so the next client can connect. (A stalled
    /// handshake gives its socket back by itself after [`HANDSHAKE_MS`].)
    fn keep_listening(&mut self, port: u16, sockets: &mut SocketSet<'static>, now_ms: u64) -> bool {
        let on_port = || {
            self.slots
                .iter()
                .enumerate()
                .filter(move |(_, s)| s.port == port)
        };
        if on_port().any(|(_, s)| {
            s.conn.is_none()
                && matches!(s.state, State::Listen | State::SynReceived | State::Closed)
        }) {
            return false;
        }
        self.reap_readiest(sockets, now_ms, |_, s| s.port == port)
    }

    /// Resets the connection readiest to yield ([`yield_order`]) among the slots `among`
    /// picks. Whether there was one.
    fn reap_readiest(
        &mut self,
        sockets: &mut SocketSet<'static>,
        now_ms: u64,
        among: impl Fn(usize, &Slot) -> bool,
    ) -> bool {
        let readiest = self
            .slots
            .iter()
            .enumerate()
            .filter(|&(i, s)| among(i, s))
            .filter_map(|(i, s)| Some((i, yield_order(s.conn.as_ref()?, now_ms)?)))
            .min_by_key(|&(_, order)| order)
            .map(|(i, _)| i);
        match readiest {
            Some(i) => {
                self.reap(i, sockets, now_ms);
                true
            }
            None => false,
        }
    }

    /// Makes room for a client at `peer` connecting on slot `i`'s port when it is past a cap
    /// (its address holds its cap of the port's connections, or the port its cap of anonymous
    /// ones): the oldest anonymous connection of the address, or of the port, past its grace
    /// gives way. When none may yet, the new connection is on probation: the cap's reason.
    fn past_caps(
        &mut self,
        i: usize,
        peer: Peer,
        sockets: &mut SocketSet<'static>,
        now_ms: u64,
    ) -> Option<&'static str> {
        let port = self.slots[i].port;
        let theirs = move |_: usize, s: &Slot| {
            s.port == port && s.conn.as_ref().is_some_and(|c| c.peer().addr == peer.addr)
        };
        let anonymous = move |_: usize, s: &Slot| {
            s.port == port && s.conn.as_ref().is_some_and(|c| !c.authenticated())
        };
        let count = |slots: &[Slot], among: &dyn Fn(usize, &Slot) -> bool| {
            slots
                .iter()
                .enumerate()
                .filter(|&(j, s)| among(j, s))
                .count()
        };
        let anonymous_of_theirs = move |j: usize, s: &Slot| theirs(j, s) && anonymous(j, s);
        if count(&self.slots, &theirs) >= self.per_client
            && !self.reap_readiest(sockets, now_ms, anonymous_of_theirs)
        {
            return Some("too many connections from this address");
        }
        if count(&self.slots, &anonymous) >= self.anonymous_per_port
            && !self.reap_readiest(sockets, now_ms, anonymous)
        {
            return Some("too many connections without a token");
        }
        None
    }

    /// The connection of slot `i` proved a token on probation: if its address is over its
    /// cap, the address's connection readiest to yield gives way (none may yet: then the
    /// address is over its cap by one authenticated connection until one ends).
    fn make_room(&mut self, i: usize, sockets: &mut SocketSet<'static>, now_ms: u64) {
        let Some(addr) = self.slots[i].conn.as_ref().map(|c| c.peer().addr) else {
            return;
        };
        let port = self.slots[i].port;
        let theirs = move |j: usize, s: &Slot| {
            j != i && s.port == port && s.conn.as_ref().is_some_and(|c| c.peer().addr == addr)
        };
        let others = (0..self.slots.len())
            .filter(|&j| theirs(j, &self.slots[j]))
            .count();
        if others >= self.per_client {
            self.reap_readiest(sockets, now_ms, theirs);
        }
    }

    /// Whether slot `i`'s connection is judged as its port's last: it took the last slot and
    /// has proved no token, and every slot of the port still carries a connection. Then the
    /// lowest rank ([`Handler::rank`]) among the port's other connections that proved one
    /// (`None` when none did): a token must outrank it, or be of [`RANK_TOP`], to be served,
    /// so the last slot is always a door for a higher rank than the pool's holders.
    fn door(&self, i: usize) -> Option<Option<u8>> {
        if !self.slots[i].door {
            return None;
        }
        let port = self.slots[i].port;
        let on_port = || self.slots.iter().filter(move |s| s.port == port);
        if on_port().any(|s| s.conn.is_none()) {
            return None;
        }
        Some(on_port().filter_map(|s| s.conn.as_ref().and(s.rank)).min())
    }

    /// Slot `i`'s connection proved a token of `rank` in its port's last slot: the port's
    /// lowest-ranked connection below it gives way (the oldest of that rank), whatever it
    /// is doing, so the next client finds a listener.
    fn reap_outranked(
        &mut self,
        i: usize,
        rank: u8,
        sockets: &mut SocketSet<'static>,
        now_ms: u64,
    ) {
        let port = self.slots[i].port;
        let lowest = self
            .slots
            .iter()
            .enumerate()
            .filter(|&(j, s)| j != i && s.port == port)
            .filter_map(|(j, s)| {
                let theirs = s.rank.filter(|&r| r < rank)?;
                Some((j, (theirs, s.conn.as_ref()?.opened_ms())))
            })
            .min_by_key(|&(_, order)| order)
            .map(|(j, _)| j);
        if let Some(j) = lowest {
            self.reap(j, sockets, now_ms);
        }
    }

    /// One slot's round: a socket without a connection is recycled or gets one; a connection
    /// moves bytes and ends when it is done. Whether anything happened.
    fn poll_slot(
        &mut self,
        i: usize,
        sockets: &mut SocketSet<'static>,
        handler: &mut Counted,
        now_ms: u64,
        read: bool,
    ) -> bool {
        let Some(handle) = self.slots[i].handle else {
            // A spare slot: nothing to do until `refill` makes it the listener.
            return false;
        };
        let sock = sockets.get::<tcp::Socket>(handle);
        let state = sock.state();
        if !self.track_state(i, state, now_ms)
            && (self.stalled(i, sock, now_ms) || self.quiet(i, sock, now_ms))
        {
            return false;
        }
        handler.on_port(self.slots[i].port);
        let mut work = false;
        if self.slots[i].conn.is_none() {
            if !matches!(state, State::Established | State::CloseWait) {
                return self.tend_free_socket(i, state, sockets, now_ms);
            }
            self.accept(i, handle, sockets, now_ms);
            work = true;
        }
        handler.probation = self.slots[i].probation;
        handler.claimed = false;
        handler.refused = false;
        handler.door = self.door(i);
        handler.outranked = None;
        handler.ranked = None;
        let sock = sockets.get_mut::<tcp::Socket>(handle);
        work |= pump::serve(&mut self.slots[i], sock, handler, now_ms, read);
        if handler.claimed {
            self.slots[i].probation = None;
            self.make_room(i, sockets, now_ms);
        }
        if handler.ranked.is_some() {
            self.slots[i].rank = handler.ranked;
            self.slots[i].door = false;
        }
        if let Some(rank) = handler.outranked {
            self.reap_outranked(i, rank, sockets, now_ms);
        }
        if handler.refused
            && let Some(conn) = self.slots[i].conn.as_mut()
        {
            conn.end_after_answer();
        }
        // Judged last, once this poll's changes to the connection are made.
        let slot = &mut self.slots[i];
        slot.quiet_until = slot
            .conn
            .as_ref()
            .and_then(Connection::quiet_until)
            .unwrap_or(0);
        work
    }

    /// Notes the socket's state for slot `i`, and since when it holds. Whether it changed.
    fn track_state(&mut self, i: usize, state: State, now_ms: u64) -> bool {
        let slot = &mut self.slots[i];
        if state == slot.state {
            return false;
        }
        slot.state = state;
        slot.since_ms = now_ms;
        true
    }

    /// A peer that stopped reading: nothing came in, nothing can go out, and the connection
    /// has nothing to do before its next deadline (its read timeout among them). Polling it
    /// would change nothing.
    fn stalled(&self, i: usize, sock: &tcp::Socket, now_ms: u64) -> bool {
        let slot = &self.slots[i];
        now_ms < slot.blocked_until && slot.conn.is_some() && !sock.can_send() && !sock.can_recv()
    }

    /// A connection idle between requests, on a socket with nothing received and no FIN:
    /// polling it before its deadline would change nothing.
    fn quiet(&self, i: usize, sock: &tcp::Socket, now_ms: u64) -> bool {
        let slot = &self.slots[i];
        now_ms < slot.quiet_until && slot.conn.is_some() && !sock.can_recv() && sock.may_recv()
    }

    /// A socket with no connection on it, in `state` other than established: listens again,
    /// gives its buffers back, or is reset when it would hold them for nothing. Whether
    /// anything happened.
    fn tend_free_socket(
        &mut self,
        i: usize,
        state: State,
        sockets: &mut SocketSet<'static>,
        now_ms: u64,
    ) -> bool {
        let waited = now_ms.saturating_sub(self.slots[i].since_ms);
        match state {
            // A closed socket listens again if its port has no listener, else gives its
            // buffers back; one lingering in TIME-WAIT, or whose peer has everything
            // (FIN-WAIT-2) or has closed too (LAST-ACK, CLOSING), is reset (and listens
            // or gives its buffers back once that is sent) so that a burst of short
            // connections cannot use up the pool. A closed socket waiting for its RST to
            // leave is work (the next poll sends it); one resting is not: the kernel's next
            // poll after the rest is soon enough.
            State::Closed if !self.may_listen(i, sockets, now_ms) => !self.resting(i, now_ms),
            State::Closed => {
                let port = self.slots[i].port;
                if !self.listens(port, sockets) {
                    return self.listen(i, sockets, now_ms);
                }
                self.rebuild(i, sockets, false)
            }
            State::TimeWait | State::FinWait2 | State::LastAck | State::Closing => {
                self.reset(i, sockets, now_ms);
                true
            }
            State::SynReceived if waited >= HANDSHAKE_MS => {
                self.reap(i, sockets, now_ms);
                true
            }
            State::FinWait1 if waited >= CLOSE_MS => {
                self.reap(i, sockets, now_ms);
                true
            }
            _ => false,
        }
    }

    /// A client connected on slot `i`: it gets a connection, on probation when it is past a
    /// cap and no anonymous connection could make room ([`HttpServer::past_caps`]).
    fn accept(
        &mut self,
        i: usize,
        handle: SocketHandle,
        sockets: &mut SocketSet<'static>,
        now_ms: u64,
    ) {
        let sock = sockets.get::<tcp::Socket>(handle);
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
        let probation = self.past_caps(i, peer, sockets, now_ms);
        let port = self.slots[i].port;
        let door = self
            .slots
            .iter()
            .enumerate()
            .all(|(j, s)| j == i || s.port != port || s.conn.is_some());
        let slot = &mut self.slots[i];
        slot.conn = Some(Connection::with_pool(
            peer,
            self.http,
            now_ms,
            self.requests.clone(),
        ));
        slot.probation = probation;
        slot.door = door;
        slot.rank = None;
        slot.fin_seen = false;
        slot.blocked_until = 0;
        slot.quiet_until = 0;
        self.stats.accepted += 1;
    }
}

/// How readily a connection gives its slot up, lowest first; `None` when it may not yet.
/// Anonymous ones go first, the oldest first (by age, not idleness: a client polling every
/// half second is never idle, and keep-alive must not make it last), and with them one that
/// wrote a refusal out and only lingers, [`SLOW_GRACE_MS`] after it (a client refused the last
/// slot that keeps its connection open holds nothing for long); then authenticated ones whose
/// last answer turned them away for load (429, 503, a tool's `E_BUSY`: a client over its
/// token's rate or calls on many connections), [`SLOW_GRACE_MS`] after it; then those that
/// owe their peer nothing, the one that has owed nothing for longest first (idle since its
/// last answer, or receiving a request it began long ago: a client trickling its body, or one
/// of a runaway's abandoned connections, yields before one in use); then those whose peer has
/// stopped taking the answer it is owed, the longest stalled first. None yields within
/// [`GRACE_MS`], except an authenticated one receiving its request below the minimum rate,
/// after [`SLOW_GRACE_MS`]; a stalled one after [`STALLED_GRACE_MS`]. A connection whose
/// answer is being produced or taken never yields.
fn yield_order(conn: &Connection, now_ms: u64) -> Option<(u8, u64)> {
    let (class, since, grace) = if let Some(since) = conn.refused_since() {
        (0, since, SLOW_GRACE_MS)
    } else if !conn.authenticated() {
        (0, conn.opened_ms(), GRACE_MS)
    } else if let Some(since) = conn.owing_nothing_since() {
        if conn.turned_away() {
            (1, since, SLOW_GRACE_MS)
        } else {
            let slow = conn.receiving_behind(now_ms);
            (2, since, if slow { SLOW_GRACE_MS } else { GRACE_MS })
        }
    } else {
        (3, conn.peer_stalled_since()?, STALLED_GRACE_MS)
    };
    (now_ms.saturating_sub(since) >= grace).then_some((class, since))
}

fn ipv4_octets(addr: IpAddress) -> [u8; 4] {
    match addr {
        IpAddress::Ipv4(a) => a.octets(),
        #[allow(unreachable_patterns)]
        _ => [0; 4],
    }
}

#[cfg(test)]
mod tests;
