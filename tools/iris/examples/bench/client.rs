//! The bench's client: one smoltcp interface on the host end of the virtual wire, stepped in
//! lockstep with the guest. Its main connection sends the measured requests; other connections
//! can be opened beside it and left with an answer they stop reading (a client mid-transfer).

use iris::Rig;
use iris::net::host::WireDevice;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint};

/// Guest steps allowed for one exchange before the bench gives up.
const STEP_LIMIT: usize = 200_000;
/// Receive buffer of a connection that stops reading: small, so its window closes early and
/// the module is left holding the rest of the answer.
const STALLED_RX: usize = 16 << 10;

/// A TCP client on the host end of the wire, stepped together with the guest.
pub struct Client {
    iface: Interface,
    dev: WireDevice,
    sockets: SocketSet<'static>,
    sock: SocketHandle,
    pub inbox: Vec<u8>,
    t_ms: i64,
}

impl Client {
    pub fn connect(rig: &mut Rig, port: u16, local_port: u16) -> Client {
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
        let sock = sockets.add(socket(1 << 20));
        let mut c = Client {
            iface,
            dev,
            sockets,
            sock,
            inbox: Vec::new(),
            t_ms: 0,
        };
        c.open(rig, c.sock, port, local_port);
        c
    }

    /// Connects socket `h` to the guest's `port` and waits for the handshake.
    fn open(&mut self, rig: &mut Rig, h: SocketHandle, port: u16, local_port: u16) {
        let guest = rig.net().host_net().guest_ip;
        let cx = self.iface.context();
        self.sockets
            .get_mut::<tcp::Socket>(h)
            .connect(
                cx,
                IpEndpoint::new(IpAddress::Ipv4(guest), port),
                local_port,
            )
            .expect("connect");
        self.run(rig, |c| c.sockets.get::<tcp::Socket>(h).may_send());
    }

    /// Opens another connection, sends `request` on it and steps until the module has filled
    /// its small receive window: the answer is mid-transfer and the client reads no more of
    /// it. Returns how many bytes arrived.
    pub fn stall(&mut self, rig: &mut Rig, port: u16, local_port: u16, request: &[u8]) -> usize {
        let h = self.sockets.add(socket(STALLED_RX));
        self.open(rig, h, port, local_port);
        rig.advance_clock(60);
        let sent = self
            .sockets
            .get_mut::<tcp::Socket>(h)
            .send_slice(request)
            .unwrap_or(0);
        assert_eq!(sent, request.len(), "the stalled request did not fit");
        self.run(rig, |c| {
            let s = c.sockets.get::<tcp::Socket>(h);
            s.recv_queue() == s.recv_capacity()
        });
        self.sockets.get::<tcp::Socket>(h).recv_queue()
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
    pub fn exchange(&mut self, rig: &mut Rig, request: &[u8], n: usize) -> (u64, usize) {
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

    /// The last exchange's response body as JSON, chunks joined (`Null` when it is not JSON).
    pub fn json_body(&self) -> serde_json::Value {
        match host_http::parse(&self.inbox, false, false) {
            Ok(Some((r, _))) => serde_json::from_slice(&r.body).unwrap_or_default(),
            _ => serde_json::Value::Null,
        }
    }
}

fn socket(rx: usize) -> tcp::Socket<'static> {
    let mut s = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; rx]),
        tcp::SocketBuffer::new(vec![0; 1 << 20]),
    );
    s.set_ack_delay(None);
    s.set_nagle_enabled(false);
    s
}

/// Counts complete HTTP responses (Content-Length or chunked) at the start of `buf`.
fn complete_responses(mut buf: &[u8]) -> usize {
    let mut n = 0;
    while let Ok(Some(used)) = host_http::response_len(buf, false) {
        buf = &buf[used..];
        n += 1;
    }
    n
}

/// Where `n` first occurs in `h` (the bench labels its requests by their head).
pub fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}
