//! Port forwarding end to end without Unicorn: host TCP clients → forwarder thread → host-side
//! smoltcp → virtual wire → HPC3/Seeq model → fake RAM → the module's Seeq driver → a guest-side
//! smoltcp stack running echo servers (a stand-in for the module's HTTP server).

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant as StdInstant};

use iris::devices::hpc3_enet::SeeqChip;
use iris::net::{Forward, Forwarder, ForwarderThread, HostNet, PcapFile};
use irix7_mcp::drivers::seeq::Config as NicConfig;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr};
use support::enet::*;

const ECHO_PORT: u16 = 7801;

/// The guest side: the module's driver under a smoltcp interface with echo sockets.
struct EchoGuest {
    bench: DriverBench,
    iface: Interface,
    sockets: SocketSet<'static>,
    handles: Vec<SocketHandle>,
    start: StdInstant,
}

impl EchoGuest {
    fn new(bench: DriverBench, net: HostNet, listeners: usize) -> EchoGuest {
        let mut bench = bench;
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(MAC)));
        config.random_seed = 7;
        let mut iface = Interface::new(config, &mut bench.drv, Instant::ZERO);
        iface.update_ip_addrs(|a| {
            a.push(IpCidr::new(IpAddress::Ipv4(net.guest_ip), net.prefix))
                .unwrap();
        });
        let mut sockets = SocketSet::new(Vec::new());
        let handles = (0..listeners)
            .map(|_| {
                let s = tcp::Socket::new(
                    tcp::SocketBuffer::new(vec![0; 8192]),
                    tcp::SocketBuffer::new(vec![0; 8192]),
                );
                sockets.add(s)
            })
            .collect();
        EchoGuest {
            bench,
            iface,
            sockets,
            handles,
            start: StdInstant::now(),
        }
    }

    /// One round: NIC DMA, the stack, the echo servers.
    fn run_once(&mut self) {
        let now = Instant::from_micros(self.start.elapsed().as_micros() as i64);
        self.bench.step();
        self.iface.poll(now, &mut self.bench.drv, &mut self.sockets);
        for h in &self.handles {
            let s = self.sockets.get_mut::<tcp::Socket>(*h);
            if !s.is_open() {
                s.listen(ECHO_PORT).unwrap();
            }
            while s.can_recv() && s.can_send() {
                let space = s.send_capacity() - s.send_queue();
                let data = s.recv(|b| {
                    let n = b.len().min(space);
                    (n, b[..n].to_vec())
                });
                match data {
                    Ok(d) if !d.is_empty() => {
                        s.send_slice(&d).unwrap();
                    }
                    _ => break,
                }
            }
            if s.state() == tcp::State::CloseWait && !s.can_recv() && s.send_queue() == 0 {
                s.close();
            }
        }
        self.iface.poll(now, &mut self.bench.drv, &mut self.sockets);
        self.bench.step();
    }

    /// Runs the guest until `done` has received `n` results or `limit` passes.
    fn run_until<T>(&mut self, done: &mpsc::Receiver<T>, n: usize, limit: Duration) -> Vec<T> {
        let deadline = StdInstant::now() + limit;
        let mut results = Vec::new();
        while results.len() < n && StdInstant::now() < deadline {
            self.run_once();
            results.extend(done.try_iter());
            std::thread::sleep(Duration::from_micros(200));
        }
        results
    }
}

/// A guest with `listeners` echo sockets behind a forwarder of `forwards`.
fn setup(forwards: &[Forward], listeners: usize) -> (EchoGuest, ForwarderThread) {
    setup_captured(forwards, listeners, PcapFile::none())
}

/// `setup` with the wire captured to `capture`.
fn setup_captured(
    forwards: &[Forward],
    listeners: usize,
    capture: PcapFile,
) -> (EchoGuest, ForwarderThread) {
    let net = HostNet::default();
    let bench = driver_bench_with(
        SeeqChip::C80C03,
        NicConfig {
            rx_ring: 32,
            tx_ring: 16,
        },
    );
    let fwd = Forwarder::new(bench.host.clone(), net, forwards, capture).unwrap();
    let thread = ForwarderThread::spawn(fwd);
    (EchoGuest::new(bench, net, listeners), thread)
}

/// Sends `payload`, half-closes, reads everything back until the guest closes.
fn echo_client(addr: SocketAddr, payload: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let reader = {
        let mut r = s.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            r.read_to_end(&mut got)
                .map(|_| got)
                .map_err(|e| e.to_string())
        })
    };
    s.write_all(&payload).map_err(|e| e.to_string())?;
    s.shutdown(Shutdown::Write).map_err(|e| e.to_string())?;
    reader.join().unwrap()
}

#[test]
fn many_concurrent_clients_echo_through_the_forwarder() {
    let (mut guest, fwd) = setup(
        &[Forward {
            host_port: 0,
            guest_port: ECHO_PORT,
        }],
        64,
    );
    let addr = fwd.local_addrs()[0];
    let (tx, rx) = mpsc::channel();
    const CLIENTS: usize = 60;
    for i in 0..CLIENTS {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let payload: Vec<u8> = format!("client {i} says hello\n")
                .repeat(40 + i)
                .into_bytes();
            let r = echo_client(addr, payload.clone());
            tx.send((i, r.map(|got| got == payload))).unwrap();
        });
    }
    let results = guest.run_until(&rx, CLIENTS, Duration::from_secs(60));
    assert_eq!(results.len(), CLIENTS, "all clients finished");
    for (i, r) in &results {
        assert_eq!(r, &Ok(true), "client {i}");
    }
    // Every connection is torn down on both sides.
    let deadline = StdInstant::now() + Duration::from_secs(10);
    while fwd.stats().open > 0 && StdInstant::now() < deadline {
        guest.run_once();
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = fwd.stats();
    assert_eq!(
        (st.accepted, st.closed, st.open, st.refused),
        (CLIENTS as u64, CLIENTS as u64, 0, 0)
    );
    let c = guest.bench.counters();
    assert!(c.rx_frames > 0 && c.tx_frames > 0);
    assert_eq!(c.rx_errors + c.rx_bad_length + c.tx_ring_full, 0);
}

#[test]
fn a_large_transfer_crosses_many_windows() {
    let (mut guest, fwd) = setup(
        &[Forward {
            host_port: 0,
            guest_port: ECHO_PORT,
        }],
        4,
    );
    let addr = fwd.local_addrs()[0];
    let (tx, rx) = mpsc::channel();
    let payload: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    {
        let payload = payload.clone();
        std::thread::spawn(move || tx.send(echo_client(addr, payload)).unwrap());
    }
    let results = guest.run_until(&rx, 1, Duration::from_secs(120));
    let got = results
        .into_iter()
        .next()
        .expect("the client finished")
        .unwrap();
    assert_eq!(got.len(), payload.len());
    assert!(got == payload);
}

#[test]
fn a_closed_guest_port_closes_the_host_connection() {
    let (mut guest, fwd) = setup(
        &[Forward {
            host_port: 0,
            guest_port: 80,
        }],
        4,
    );
    let addr = fwd.local_addrs()[0];
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = [0u8; 16];
        let r = match s.read(&mut buf) {
            Ok(0) => Ok(()),
            Ok(n) => Err(format!("{n} unexpected bytes")),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(()),
            Err(e) => Err(e.to_string()),
        };
        tx.send(r).unwrap();
    });
    // The forwarder retries a refused connect for 10 s (a listen backlog), then gives up.
    let results = guest.run_until(&rx, 1, Duration::from_secs(30));
    assert_eq!(results, vec![Ok(())]);
    assert!(fwd.stats().retries > 10);
    let deadline = StdInstant::now() + Duration::from_secs(10);
    while fwd.stats().open > 0 && StdInstant::now() < deadline {
        guest.run_once();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(fwd.stats().open, 0);
}

#[test]
fn clients_beyond_the_guests_sockets_wait_their_turn() {
    // Four listening sockets on the guest (the module has a small pool too): the others are
    // reset at first and get through on a retry.
    let (mut guest, fwd) = setup(
        &[Forward {
            host_port: 0,
            guest_port: ECHO_PORT,
        }],
        4,
    );
    let addr = fwd.local_addrs()[0];
    let (tx, rx) = mpsc::channel();
    const CLIENTS: usize = 40;
    for i in 0..CLIENTS {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let payload = format!("queued client {i}\n").repeat(200).into_bytes();
            let r = echo_client(addr, payload.clone());
            tx.send((i, r.map(|got| got == payload))).unwrap();
        });
    }
    let results = guest.run_until(&rx, CLIENTS, Duration::from_secs(60));
    assert_eq!(results.len(), CLIENTS, "all clients finished");
    for (i, r) in &results {
        assert_eq!(r, &Ok(true), "client {i}");
    }
    assert!(
        fwd.stats().retries > 0,
        "some connects were refused and retried"
    );
}

/// The frames of a pcap file (native byte order, as smoltcp writes it), after checking the
/// global header says Ethernet and every record is whole.
fn pcap_frames(bytes: &[u8]) -> Vec<Vec<u8>> {
    let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
    let u16_at = |at: usize| u16::from_ne_bytes(bytes[at..at + 2].try_into().unwrap());
    assert!(bytes.len() >= 24, "no global header");
    assert_eq!(u32_at(0), 0xa1b2_c3d4, "pcap magic");
    assert_eq!((u16_at(4), u16_at(6)), (2, 4), "pcap version");
    assert_eq!(u32_at(20), 1, "link type Ethernet");
    let mut frames = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        assert!(at + 16 <= bytes.len(), "a record header cut short at {at}");
        let (captured, original) = (u32_at(at + 8) as usize, u32_at(at + 12) as usize);
        assert_eq!(captured, original, "no frame is truncated");
        at += 16;
        assert!(at + captured <= bytes.len(), "a record cut short at {at}");
        frames.push(bytes[at..at + captured].to_vec());
        at += captured;
    }
    frames
}

#[test]
fn the_wire_is_captured_as_pcap() {
    let path = std::env::temp_dir().join(format!("iris-wire-{}.pcap", std::process::id()));
    let (mut guest, fwd) = setup_captured(
        &[Forward {
            host_port: 0,
            guest_port: ECHO_PORT,
        }],
        1,
        PcapFile::create(&path).unwrap(),
    );
    let addr = fwd.local_addrs()[0];
    let (tx, rx) = mpsc::channel();
    let payload = b"captured on the virtual wire\n".to_vec();
    {
        let payload = payload.clone();
        std::thread::spawn(move || tx.send(echo_client(addr, payload)).unwrap());
    }
    let results = guest.run_until(&rx, 1, Duration::from_secs(30));
    assert_eq!(results, [Ok(payload.clone())]);
    // Stopping the forwarder ends the capture: the file is complete.
    drop(fwd);
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let frames = pcap_frames(&bytes);
    let carries = |f: &&Vec<u8>| f.windows(payload.len()).any(|w| w == payload.as_slice());
    // The payload crosses both ways: to the echo server and back.
    let to_guest = frames
        .iter()
        .filter(carries)
        .filter(|f| f[..6] == MAC)
        .count();
    let from_guest = frames
        .iter()
        .filter(carries)
        .filter(|f| f[6..12] == MAC)
        .count();
    assert!(
        to_guest > 0 && from_guest > 0,
        "payload {to_guest}x to and {from_guest}x from the guest in {} frames",
        frames.len()
    );
}
