//! Port forwarding without privileges: a non-blocking `TcpListener` on 127.0.0.1 per forward;
//! each accepted connection gets a TCP socket in the host-side smoltcp stack, connected over
//! the virtual wire to the guest's IP and port, and bytes are pumped both ways. When one side
//! closes, the other is closed once everything it sent has been delivered.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration as StdDuration;

use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr};

use super::faults::{Dice, WireFaults};
use super::host::{HostDevice, HostNet, PcapFile, host_device};
use super::wire::WireEnd;

/// One forward: host 127.0.0.1:`host_port` → guest `guest_port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forward {
    /// 0 lets the OS pick a free port (tests read it back from [`Forwarder::local_addrs`]).
    pub host_port: u16,
    pub guest_port: u16,
}

/// The old iris rig's forwards: MCP on 7801, and the same server on guest port 80 as host 8088.
pub const DEFAULT_FORWARDS: [Forward; 2] = [
    Forward {
        host_port: 7801,
        guest_port: 7801,
    },
    Forward {
        host_port: 8088,
        guest_port: 80,
    },
];

/// Parses `--forward HOST:GUEST` (both ports 1..=65535; HOST may be 0 for any free port).
pub fn parse_forward(text: &str) -> Result<Forward, String> {
    let (h, g) = text
        .split_once(':')
        .ok_or_else(|| format!("--forward {text:?}: want HOST:GUEST"))?;
    let host_port = h
        .trim()
        .parse::<u16>()
        .map_err(|_| format!("--forward {text:?}: bad host port"))?;
    let guest_port = g
        .trim()
        .parse::<u16>()
        .map_err(|_| format!("--forward {text:?}: bad guest port"))?;
    if guest_port == 0 {
        return Err(format!("--forward {text:?}: guest port 0"));
    }
    Ok(Forward {
        host_port,
        guest_port,
    })
}

/// Bytes each direction of one connection buffers (socket buffer and pump buffer each).
const CONN_BUF: usize = 64 * 1024;
/// Connections open at once; more are refused (closed at once) until some finish.
pub const MAX_CONNS: usize = 256;
/// A guest that neither answers a SYN nor acknowledges data for this long loses the connection.
const GUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a closing connection may wait for its last segments before it is dropped.
const LINGER: Duration = Duration::from_secs(5);
/// A guest whose listening sockets are all busy answers a SYN with a reset. Like a listen
/// backlog, the forwarder tries again for this long before it gives the host connection up.
const CONNECT_RETRY: Duration = Duration::from_secs(10);
/// A refused connection tries again after a pause drawn from this range (ms), as clients'
/// reconnect loops differ. With one fixed pause every waiting connection kept its phase, and
/// a freed slot went to the same few phases: in `tools/iris/tests/slots.rs` a connection
/// whose phase followed another's closely lost 458 races in a row while 520 slots were freed.
const RETRY_BACKOFF_MS: std::ops::Range<u64> = 10..30;
const EPHEMERAL: std::ops::RangeInclusive<u16> = 49152..=65535;

/// Counts since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForwardStats {
    pub accepted: u64,
    /// Connections refused because [`MAX_CONNS`] were open.
    pub refused: u64,
    pub closed: u64,
    /// Connection attempts repeated after the guest reset them (all its sockets busy).
    pub retries: u64,
    pub bytes_to_guest: u64,
    pub bytes_to_host: u64,
    pub open: usize,
}

struct Conn {
    stream: TcpStream,
    handle: SocketHandle,
    local_port: u16,
    guest_port: u16,
    connect_started: Instant,
    retry_at: Option<Instant>,
    to_guest: Vec<u8>,
    to_host: Vec<u8>,
    host_eof: bool,
    fin_sent: bool,
    host_write_closed: bool,
    established: bool,
    /// Set when the connection is over; it is dropped once its socket is closed or after
    /// [`LINGER`].
    closing_since: Option<Instant>,
}

/// The host-side stack and every forward.
pub struct Forwarder {
    iface: Interface,
    device: HostDevice,
    /// The wire under `device`, for the thread to sleep on.
    wire: WireEnd,
    sockets: SocketSet<'static>,
    net: HostNet,
    listeners: Vec<(TcpListener, Forward)>,
    conns: Vec<Conn>,
    next_port: u16,
    started: std::time::Instant,
    stats: ForwardStats,
    /// Draws each retry's pause.
    jitter: Dice,
}

impl Forwarder {
    /// Binds a listener on 127.0.0.1 for every forward and brings up the host stack on `wire`,
    /// every frame on it written to `capture`.
    pub fn new(
        wire: WireEnd,
        net: HostNet,
        forwards: &[Forward],
        capture: PcapFile,
    ) -> io::Result<Forwarder> {
        Forwarder::with_faults(wire, net, forwards, capture, &WireFaults::default())
    }

    /// [`Forwarder::new`] over a wire with `faults`.
    pub fn with_faults(
        wire: WireEnd,
        net: HostNet,
        forwards: &[Forward],
        capture: PcapFile,
        faults: &WireFaults,
    ) -> io::Result<Forwarder> {
        let mut listeners = Vec::new();
        for f in forwards {
            let l = TcpListener::bind((Ipv4Addr::LOCALHOST, f.host_port)).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "forward 127.0.0.1:{} -> guest {}: {e}",
                        f.host_port, f.guest_port
                    ),
                )
            })?;
            l.set_nonblocking(true)?;
            listeners.push((l, *f));
        }
        let mut device = host_device(wire.clone(), capture, faults);
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(net.host_mac)));
        let seed = u64::from(std::process::id()) ^ 0x1715_2026;
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut device, Instant::ZERO);
        iface.update_ip_addrs(|addrs| {
            let _ = addrs.push(IpCidr::new(IpAddress::Ipv4(net.host_ip), net.prefix));
        });
        Ok(Forwarder {
            iface,
            device,
            wire,
            sockets: SocketSet::new(Vec::new()),
            net,
            listeners,
            conns: Vec::new(),
            next_port: *EPHEMERAL.start(),
            started: std::time::Instant::now(),
            stats: ForwardStats::default(),
            jitter: Dice::new(seed, 0),
        })
    }

    /// The listening addresses, in the order of the forwards.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|(l, _)| l.local_addr().ok())
            .collect()
    }

    pub fn net(&self) -> HostNet {
        self.net
    }

    pub fn stats(&self) -> ForwardStats {
        ForwardStats {
            open: self.conns.len(),
            ..self.stats
        }
    }

    fn now(&self) -> Instant {
        Instant::from_micros(self.started.elapsed().as_micros() as i64)
    }

    /// One non-blocking round: accept, run the stack, pump every connection, run the stack
    /// again to send what the pumps queued. Returns true when anything happened.
    pub fn poll(&mut self) -> bool {
        let now = self.now();
        let mut busy = self.accept();
        busy |= self.iface.poll(now, &mut self.device, &mut self.sockets) != PollResult::None;
        let mut i = 0;
        while i < self.conns.len() {
            if self.retry_refused(i, now) {
                i += 1;
                continue;
            }
            let (moved, done) = self.pump(i, now);
            busy |= moved;
            if done {
                let c = self.conns.swap_remove(i);
                self.sockets.remove(c.handle);
                self.stats.closed += 1;
            } else {
                i += 1;
            }
        }
        busy |= self.iface.poll(now, &mut self.device, &mut self.sockets) != PollResult::None;
        busy
    }

    /// How long the stack can wait before its next timer (retransmission etc.).
    pub fn poll_delay(&mut self) -> Option<StdDuration> {
        let now = self.now();
        self.iface
            .poll_delay(now, &self.sockets)
            .map(|d| StdDuration::from_micros(d.total_micros()))
    }

    fn accept(&mut self) -> bool {
        let mut busy = false;
        for li in 0..self.listeners.len() {
            loop {
                let (stream, guest_port) = match self.listeners[li].0.accept() {
                    Ok((s, _)) => (s, self.listeners[li].1.guest_port),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => break,
                };
                busy = true;
                let now = self.now();
                if self.conns.len() >= MAX_CONNS || self.open(stream, guest_port, now).is_err() {
                    self.stats.refused += 1;
                }
            }
        }
        busy
    }

    fn pick_port(&mut self) -> u16 {
        loop {
            let p = self.next_port;
            self.next_port = if p == *EPHEMERAL.end() {
                *EPHEMERAL.start()
            } else {
                p + 1
            };
            if !self.conns.iter().any(|c| c.local_port == p) {
                return p;
            }
        }
    }

    fn open(&mut self, stream: TcpStream, guest_port: u16, now: Instant) -> Result<(), ()> {
        stream.set_nonblocking(true).map_err(|_| ())?;
        let _ = stream.set_nodelay(true);
        let mut sock = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; CONN_BUF]),
            tcp::SocketBuffer::new(vec![0; CONN_BUF]),
        );
        sock.set_timeout(Some(GUEST_TIMEOUT));
        sock.set_nagle_enabled(false);
        let local_port = self.pick_port();
        sock.connect(
            self.iface.context(),
            (IpAddress::Ipv4(self.net.guest_ip), guest_port),
            local_port,
        )
        .map_err(|_| ())?;
        let handle = self.sockets.add(sock);
        self.conns.push(Conn {
            stream,
            handle,
            local_port,
            guest_port,
            connect_started: now,
            retry_at: None,
            to_guest: Vec::new(),
            to_host: Vec::new(),
            host_eof: false,
            fin_sent: false,
            host_write_closed: false,
            established: false,
            closing_since: None,
        });
        self.stats.accepted += 1;
        Ok(())
    }

    /// Reconnects connection `i` if the guest reset it before it was established, within
    /// [`CONNECT_RETRY`] of the first attempt. Returns true while a retry is in progress (the
    /// connection is not pumped meanwhile).
    fn retry_refused(&mut self, i: usize, now: Instant) -> bool {
        let c = &self.conns[i];
        let refused = !c.established
            && c.closing_since.is_none()
            && self.sockets.get::<tcp::Socket>(c.handle).state() == tcp::State::Closed;
        if !refused || now - c.connect_started >= CONNECT_RETRY {
            return false;
        }
        match c.retry_at {
            None => {
                let pause = self.retry_pause();
                self.conns[i].retry_at = Some(now + pause);
                return true;
            }
            Some(t) if now < t => return true,
            Some(_) => {}
        }
        let port = self.pick_port();
        let (handle, guest_port) = (self.conns[i].handle, self.conns[i].guest_port);
        let remote = (IpAddress::Ipv4(self.net.guest_ip), guest_port);
        let sock = self.sockets.get_mut::<tcp::Socket>(handle);
        let c = &mut self.conns[i];
        c.retry_at = None;
        if sock.connect(self.iface.context(), remote, port).is_ok() {
            c.local_port = port;
            self.stats.retries += 1;
        }
        true
    }

    /// The pause before a refused connection's next try, from [`RETRY_BACKOFF_MS`].
    fn retry_pause(&mut self) -> Duration {
        let span = RETRY_BACKOFF_MS.end - RETRY_BACKOFF_MS.start;
        Duration::from_millis(RETRY_BACKOFF_MS.start + self.jitter.draw() % span)
    }

    /// Moves bytes for connection `i`. Returns (anything moved, connection finished).
    fn pump(&mut self, i: usize, now: Instant) -> (bool, bool) {
        let c = &mut self.conns[i];
        let sock = self.sockets.get_mut::<tcp::Socket>(c.handle);
        let state = sock.state();
        if let Some(since) = c.closing_since {
            let closed = matches!(state, tcp::State::Closed | tcp::State::TimeWait);
            if closed || now - since >= LINGER {
                sock.abort();
                return (true, true);
            }
        }
        let mut moved = false;
        if sock.may_send() {
            c.established = true;
        }

        // Host → pump buffer.
        if !c.host_eof && c.to_guest.len() < CONN_BUF {
            let mut buf = [0u8; 16 * 1024];
            let room = (CONN_BUF - c.to_guest.len()).min(buf.len());
            match c.stream.read(&mut buf[..room]) {
                Ok(0) => {
                    c.host_eof = true;
                    moved = true;
                }
                Ok(n) => {
                    c.to_guest.extend_from_slice(&buf[..n]);
                    moved = true;
                }
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    sock.abort();
                    c.closing_since.get_or_insert(now);
                    return (true, false);
                }
            }
        }
        // Pump buffer → guest.
        if !c.to_guest.is_empty()
            && sock.can_send()
            && let Ok(n) = sock.send_slice(&c.to_guest)
        {
            c.to_guest.drain(..n);
            self.stats.bytes_to_guest += n as u64;
            moved |= n > 0;
        }
        if c.host_eof && c.to_guest.is_empty() && !c.fin_sent {
            sock.close();
            c.fin_sent = true;
        }

        // Guest → pump buffer.
        while sock.can_recv() && c.to_host.len() < CONN_BUF {
            let room = CONN_BUF - c.to_host.len();
            let got = sock.recv(|data| {
                let n = data.len().min(room);
                (n, data[..n].to_vec())
            });
            match got {
                Ok(bytes) if !bytes.is_empty() => {
                    c.to_host.extend_from_slice(&bytes);
                    moved = true;
                }
                _ => break,
            }
        }
        // Pump buffer → host.
        if !c.to_host.is_empty() {
            match c.stream.write(&c.to_host) {
                Ok(n) => {
                    c.to_host.drain(..n);
                    self.stats.bytes_to_host += n as u64;
                    moved |= n > 0;
                }
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    sock.abort();
                    c.closing_since.get_or_insert(now);
                    return (true, false);
                }
            }
        }

        // The guest has closed (FIN received, or reset/timed out): tell the host once drained.
        let guest_done = (c.established && !sock.may_recv()) || state == tcp::State::Closed;
        if guest_done && c.to_host.is_empty() && !c.host_write_closed {
            let _ = c.stream.shutdown(Shutdown::Write);
            c.host_write_closed = true;
            moved = true;
        }
        // A reset or refused connection: nothing more will come from the guest.
        let guest_gone = state == tcp::State::Closed;
        if c.host_write_closed && ((c.host_eof && c.fin_sent) || guest_gone) {
            c.closing_since.get_or_insert(now);
        }
        (moved, false)
    }
}

/// A forwarder running on its own thread, so host connections are served while the guest
/// computes. Dropping it stops the thread.
pub struct ForwarderThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    addrs: Vec<SocketAddr>,
    net: HostNet,
    stats: Arc<Mutex<ForwardStats>>,
}

impl ForwarderThread {
    pub fn spawn(mut fwd: Forwarder) -> ForwarderThread {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(fwd.stats()));
        let addrs = fwd.local_addrs();
        let net = fwd.net();
        let handle = {
            let stop = stop.clone();
            let stats = stats.clone();
            std::thread::Builder::new()
                .name("iris-forward".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let busy = fwd.poll();
                        if let Ok(mut s) = stats.lock() {
                            *s = fwd.stats();
                        }
                        if !busy {
                            // Host sockets are non-blocking, so wake at least every millisecond.
                            let wait = fwd
                                .poll_delay()
                                .unwrap_or(StdDuration::MAX)
                                .min(StdDuration::from_millis(1));
                            fwd.wire.wait_for_frames(wait);
                        }
                    }
                })
                .expect("spawning the forwarder thread")
        };
        ForwarderThread {
            stop,
            handle: Some(handle),
            addrs,
            net,
            stats,
        }
    }

    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    pub fn net(&self) -> HostNet {
        self.net
    }

    pub fn stats(&self) -> ForwardStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }
}

impl Drop for ForwarderThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_flags() {
        assert_eq!(
            parse_forward("7801:7801"),
            Ok(Forward {
                host_port: 7801,
                guest_port: 7801
            })
        );
        assert_eq!(
            parse_forward("0:80"),
            Ok(Forward {
                host_port: 0,
                guest_port: 80
            })
        );
        assert!(parse_forward("8088").is_err());
        assert!(parse_forward("8088:0").is_err());
        assert!(parse_forward("70000:80").is_err());
        assert!(parse_forward("a:80").is_err());
    }
}
