use super::*;
use crate::net::frame::test_frames::tcp_frame;
use alloc::collections::VecDeque;
use alloc::rc::Rc;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::Medium;
use smoltcp::socket::tcp;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, HardwareAddress, IpAddress, IpCidr, Ipv4Address, Ipv4Packet,
    TcpControl, TcpPacket, TcpRepr, TcpSeqNumber,
};

const MODULE: Ipv4Address = Ipv4Address::new(10, 7, 0, 1);
const PEER: Ipv4Address = Ipv4Address::new(10, 7, 0, 200);
const KEY: [u8; 32] = [0x5a; 32];

/// A frame from `src` to `dst` with a correct checksum.
fn frame(
    (src, sport): (Ipv4Address, u16),
    (dst, dport): (Ipv4Address, u16),
    seq: u32,
    ack: Option<u32>,
    sack: Sack,
) -> Vec<u8> {
    let tcp = TcpRepr {
        src_port: sport,
        dst_port: dport,
        control: TcpControl::None,
        seq_number: TcpSeqNumber(seq as i32),
        ack_number: ack.map(|a| TcpSeqNumber(a as i32)),
        window_len: 4096,
        window_scale: None,
        max_seg_size: None,
        sack_permitted: false,
        sack_ranges: sack,
        timestamp: None,
        payload: b"some bytes",
    };
    tcp_frame(&tcp, src, dst, true)
}

type Sack = [Option<(u32, u32)>; 3];

/// The segment's sequence, acknowledgment and SACK numbers, and whether its checksum holds.
fn parse(buf: &[u8]) -> (u32, Option<u32>, Sack, bool) {
    let f = EthernetFrame::new_checked(buf).unwrap();
    let p = Ipv4Packet::new_checked(f.payload()).unwrap();
    let t = TcpPacket::new_checked(p.payload()).unwrap();
    let ok = t.verify_checksum(
        &IpAddress::Ipv4(p.src_addr()),
        &IpAddress::Ipv4(p.dst_addr()),
    );
    let ack = t.ack().then(|| t.ack_number().0 as u32);
    let sack = t.selective_ack_ranges().unwrap();
    (t.seq_number().0 as u32, ack, sack, ok)
}

#[test]
fn sent_sequence_numbers_carry_the_offset_and_received_acks_lose_it() {
    let offsets = Offsets::new(KEY);
    let mut out = frame((MODULE, 7801), (PEER, 40001), 1000, Some(77), [None; 3]);
    offsets.outgoing(&mut out);
    let (wire_seq, ack, _, ok) = parse(&out);
    assert!(ok, "the checksum follows the new sequence number");
    assert_eq!(ack, Some(77), "the peer's numbers are left alone");
    let f = wire_seq.wrapping_sub(1000);
    assert_ne!(f, 0);

    // The peer acknowledges and SACKs in the wire's numbers; the stack sees its own.
    let sack = [
        Some((wire_seq.wrapping_add(20), wire_seq.wrapping_add(30))),
        Some((wire_seq.wrapping_add(40), wire_seq.wrapping_add(50))),
        None,
    ];
    let mut back = frame(
        (PEER, 40001),
        (MODULE, 7801),
        77,
        Some(wire_seq.wrapping_add(10)),
        sack,
    );
    assert!(
        offsets.incoming(&mut back),
        "an intact segment goes on to the stack"
    );
    let (seq, ack, sack, _) = parse(&back);
    assert_eq!(seq, 77);
    assert_eq!(ack, Some(1010));
    assert_eq!(sack, [Some((1020, 1030)), Some((1040, 1050)), None]);
}

#[test]
fn the_offset_depends_on_the_connection_and_the_key() {
    let wire = |key: [u8; 32], port: u16, peer: Ipv4Address| {
        let mut f = frame((MODULE, 7801), (peer, port), 0, None, [None; 3]);
        Offsets::new(key).outgoing(&mut f);
        parse(&f).0
    };
    let a = wire(KEY, 40001, PEER);
    assert_eq!(a, wire(KEY, 40001, PEER), "one connection, one offset");
    assert_ne!(
        a,
        wire(KEY, 40002, PEER),
        "the next port of the same client"
    );
    assert_ne!(a, wire(KEY, 40001, Ipv4Address::new(10, 7, 0, 201)));
    assert_ne!(a, wire([0xa5; 32], 40001, PEER), "another boot");
    // Cached or not, the same value: a second connection in the same cache slot.
    let offsets = Offsets::new(KEY);
    for port in [40001, 40001 + 16 * 256, 40001] {
        let mut f = frame((MODULE, 7801), (PEER, port), 0, None, [None; 3]);
        offsets.outgoing(&mut f);
        assert_eq!(parse(&f).0, wire(KEY, port, PEER));
    }
}

#[test]
fn a_corrupt_segment_is_refused_and_other_frames_are_untouched() {
    let offsets = Offsets::new(KEY);
    for at in [14 + 12, 14 + 20 + 8, 14 + 20 + 16, 14 + 20 + 20] {
        // A source address, acknowledgment, checksum and payload bit.
        let mut f = frame((PEER, 40001), (MODULE, 7801), 5, Some(9), [None; 3]);
        f[at] ^= 0x40;
        assert!(!offsets.incoming(&mut f), "a flipped bit at {at}");
    }

    let mut arp = vec![0u8; 60];
    arp[12] = 0x08;
    arp[13] = 0x06;
    let before = arp.clone();
    assert!(offsets.incoming(&mut arp));
    offsets.outgoing(&mut arp);
    assert_eq!(arp, before);

    // Options that run past the header, a zero-length option: the walk stops, no panic.
    for bad in [[5u8, 40, 0, 0], [8, 0, 1, 1], [5, 10, 1, 1]] {
        let mut f = frame((PEER, 40001), (MODULE, 7801), 5, Some(9), [None; 3]);
        let tcp = 14 + 20;
        f[tcp + 12] = 6 << 4; // 24-byte header: 4 bytes of options
        f[tcp + 20..tcp + 24].copy_from_slice(&bad);
        offsets.incoming(&mut f);
    }
}

#[test]
fn a_received_syn_is_told_once_and_nothing_else_is() {
    let wire = TcpWire::new((), KEY);
    let mut ack = frame((PEER, 40001), (MODULE, 7801), 5, Some(9), [None; 3]);
    assert!(wire.offsets.incoming(&mut ack));
    assert!(!wire.took_syn(), "an ACK takes no listener");
    let mut syn = frame((PEER, 40002), (MODULE, 7801), 5, None, [None; 3]);
    let tcp = 14 + 20;
    syn[tcp + FLAGS] |= FLAG_SYN;
    let mut bad = syn.clone();
    bad[tcp + 16] ^= 1;
    assert!(!wire.offsets.incoming(&mut bad));
    assert!(
        !wire.took_syn(),
        "a SYN whose checksum fails never reaches smoltcp"
    );
    syn[tcp + 16..tcp + 18].fill(0);
    let at = crate::net::frame::tcp_segment(&syn).unwrap();
    crate::net::checksum::fill(&mut syn, &at);
    assert!(wire.offsets.incoming(&mut syn));
    assert!(wire.took_syn());
    assert!(!wire.took_syn(), "told once");
}

#[test]
fn a_syn_of_a_connection_in_its_handshake_is_kept_from_the_stack() {
    let wire = TcpWire::new((), KEY);
    let tcp = 14 + 20;
    let syn = |port: u16| {
        let mut f = frame((PEER, port), (MODULE, 7801), 77, None, [None; 3]);
        f[tcp + FLAGS] |= FLAG_SYN;
        f[tcp + 16..tcp + 18].fill(0);
        let at = crate::net::frame::tcp_segment(&f).unwrap();
        crate::net::checksum::fill(&mut f, &at);
        f
    };
    // A socket holds 40003's handshake: its client's repeated SYN must not reach a listener.
    let held = (MODULE.octets(), 7801, PEER.octets(), 40003);
    assert!(!wire.holds_handshakes());
    wire.set_handshakes([held].into_iter());
    assert!(wire.holds_handshakes());
    assert!(
        !wire.offsets.incoming(&mut syn(40003)),
        "a repeat is dropped"
    );
    assert!(!wire.took_syn(), "and takes no listener");
    assert!(
        wire.offsets.incoming(&mut syn(40004)),
        "another connection passes"
    );
    assert!(wire.took_syn());
    // Its ACK passes: only the SYN is held back.
    let mut ack = frame((PEER, 40003), (MODULE, 7801), 78, Some(9), [None; 3]);
    assert!(wire.offsets.incoming(&mut ack));
    // Once the handshake is over (or its socket given back), a SYN is a new attempt.
    wire.set_handshakes(core::iter::empty());
    assert!(!wire.holds_handshakes());
    assert!(wire.offsets.incoming(&mut syn(40003)));
    assert!(wire.took_syn());
}

/// Frames in flight one way, as a queue.
type Queue = Rc<RefCell<VecDeque<Vec<u8>>>>;

/// One end of a wire between two smoltcp interfaces, handing received frames out writable as
/// the Seeq does.
struct Pipe {
    rx: Queue,
    tx: Queue,
    /// Every frame this end sent, for the test to read.
    sent: Queue,
}

struct PipeRx(Vec<u8>);
struct PipeTx(Queue, Queue);

impl phy::RxToken for PipeRx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl WritableRx for PipeRx {
    fn consume_mut<R, F: FnOnce(&mut [u8]) -> R>(mut self, f: F) -> R {
        f(&mut self.0)
    }
}

impl phy::TxToken for PipeTx {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut buf = vec![0u8; len];
        let r = f(&mut buf);
        self.1.borrow_mut().push_back(buf.clone());
        self.0.borrow_mut().push_back(buf);
        r
    }
}

impl phy::Device for Pipe {
    type RxToken<'a> = PipeRx;
    type TxToken<'a> = PipeTx;

    fn receive(&mut self, _: Instant) -> Option<(PipeRx, PipeTx)> {
        let frame = self.rx.borrow_mut().pop_front()?;
        Some((PipeRx(frame), PipeTx(self.tx.clone(), self.sent.clone())))
    }

    fn transmit(&mut self, _: Instant) -> Option<PipeTx> {
        Some(PipeTx(self.tx.clone(), self.sent.clone()))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps
    }
}

fn iface<D: phy::Device>(dev: &mut D, mac: u8, ip: Ipv4Address, seed: u64) -> Interface {
    let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress([
        2, 0, 0, 0, 0, mac,
    ])));
    config.random_seed = seed;
    let mut i = Interface::new(config, dev, Instant::from_millis(0));
    i.update_ip_addrs(|a| {
        a.push(IpCidr::new(ip.into(), 24)).unwrap();
    });
    i
}

fn tcp_socket() -> tcp::Socket<'static> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 4096]),
        tcp::SocketBuffer::new(vec![0; 4096]),
    )
}

/// A server stack (with or without the offsets) answers two connections from one client;
/// returns the ISNs of the server's SYN-ACKs on the wire and what the client read.
fn serve_two(offsets: Option<[u8; 32]>) -> (Vec<u32>, Vec<u8>) {
    let (a, b, sent) = (Queue::default(), Queue::default(), Queue::default());
    let server_pipe = Pipe {
        rx: a.clone(),
        tx: b.clone(),
        sent: sent.clone(),
    };
    let mut client_dev = Pipe {
        rx: b,
        tx: a,
        sent: Queue::default(),
    };
    let mut server_dev: TcpWire<Pipe> = TcpWire::new(server_pipe, offsets.unwrap_or_default());
    let with = offsets.is_some();
    let mut server = if with {
        iface(&mut server_dev, 1, MODULE, 42)
    } else {
        iface(server_dev.inner_mut(), 1, MODULE, 42)
    };
    let mut client = iface(&mut client_dev, 2, PEER, 7);
    let (mut ss, mut cs) = (SocketSet::new(vec![]), SocketSet::new(vec![]));
    let mut read = Vec::new();
    for port in [40001u16, 40002] {
        let l = ss.add(tcp_socket());
        ss.get_mut::<tcp::Socket>(l).listen(7801).unwrap();
        let c = cs.add(tcp_socket());
        cs.get_mut::<tcp::Socket>(c)
            .connect(client.context(), (MODULE, 7801), port)
            .unwrap();
        for step in 0..40 {
            let now = Instant::from_millis(step);
            client.poll(now, &mut client_dev, &mut cs);
            if with {
                server.poll(now, &mut server_dev, &mut ss);
            } else {
                server.poll(now, server_dev.inner_mut(), &mut ss);
            }
            let s = ss.get_mut::<tcp::Socket>(l);
            let mut got = [0u8; 64];
            if s.can_send()
                && let Ok(n @ 1..) = s.recv_slice(&mut got)
            {
                s.send_slice(&got[..n]).unwrap();
                s.close();
            }
            let cl = cs.get_mut::<tcp::Socket>(c);
            if cl.can_send() && step == 5 {
                cl.send_slice(b"ping ").unwrap();
            }
            if cl.can_recv() {
                cl.recv(|d| {
                    read.extend_from_slice(d);
                    (d.len(), ())
                })
                .unwrap();
            }
        }
    }
    let isns = sent
        .borrow()
        .iter()
        .filter_map(|f| {
            let e = EthernetFrame::new_checked(&f[..]).ok()?;
            let p = Ipv4Packet::new_checked(e.payload()).ok()?;
            let t = TcpPacket::new_checked(p.payload()).ok()?;
            (t.syn() && t.ack()).then(|| t.seq_number().0 as u32)
        })
        .collect();
    (isns, read)
}

#[test]
fn two_stacks_talk_through_the_offsets_and_the_wire_isns_move() {
    let (plain, plain_read) = serve_two(None);
    let (offset, read) = serve_two(Some(KEY));
    assert_eq!(plain_read, b"ping ping ");
    assert_eq!(
        read, plain_read,
        "the connections work the same through the offsets"
    );
    assert_eq!((plain.len(), offset.len()), (2, 2));
    // The same seed: smoltcp drew the same ISNs; on the wire each moved by its own F.
    let f0 = offset[0].wrapping_sub(plain[0]);
    let f1 = offset[1].wrapping_sub(plain[1]);
    assert_ne!(f0, 0);
    assert_ne!(f0, f1, "each connection has its own offset");
}

#[test]
fn a_segment_whose_checksum_fails_never_reaches_smoltcp() {
    let (rx, sent) = (Queue::default(), Queue::default());
    let pipe = Pipe {
        rx: rx.clone(),
        tx: Queue::default(),
        sent: sent.clone(),
    };
    let mut dev = TcpWire::new(pipe, KEY);
    // The MAC `tcp_frame` addresses its frames to.
    let mut server = iface(&mut dev, 2, MODULE, 42);
    let mut ss = SocketSet::new(vec![]);
    let l = ss.add(tcp_socket());
    ss.get_mut::<tcp::Socket>(l).listen(7801).unwrap();
    let syn = TcpRepr {
        src_port: 40001,
        dst_port: 7801,
        control: TcpControl::Syn,
        seq_number: TcpSeqNumber(100),
        ack_number: None,
        window_len: 4096,
        window_scale: None,
        max_seg_size: Some(1460),
        sack_permitted: false,
        sack_ranges: [None; 3],
        timestamp: None,
        payload: &[],
    };
    // smoltcp no longer checks the sum itself: a SYN with a flipped window bit would open
    // a connection if the decorator let it through.
    let mut bad = tcp_frame(&syn, PEER, MODULE, true);
    bad[14 + 20 + 14] ^= 0x01;
    rx.borrow_mut().push_back(bad);
    server.poll(Instant::from_millis(0), &mut dev, &mut ss);
    assert_eq!(ss.get::<tcp::Socket>(l).state(), tcp::State::Listen);
    assert!(sent.borrow().is_empty(), "nothing answers a corrupt SYN");

    rx.borrow_mut()
        .push_back(tcp_frame(&syn, PEER, MODULE, true));
    server.poll(Instant::from_millis(1), &mut dev, &mut ss);
    assert_eq!(ss.get::<tcp::Socket>(l).state(), tcp::State::SynReceived);
    assert!(!sent.borrow().is_empty(), "the intact SYN is answered");
}
