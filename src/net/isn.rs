//! TCP initial sequence numbers an observer cannot predict (RFC 6528), added on the wire.
//!
//! smoltcp (0.14) draws each connection's ISN from its own sPCG32 generator and has no hook to
//! supply one. The generator is seeded from the DRBG, but it is not cryptographic: a client
//! that opens a few connections can work out its state and predict the ISN of someone else's
//! next connection, which is what blind injection into that connection needs.
//!
//! This `phy` decorator does what RFC 6528 asks, ISN = M + F(local address and port, remote
//! address and port, secret key), with smoltcp's generator as M: every sequence number the
//! module sends gets F of its connection added, and every acknowledgment number and SACK edge
//! it receives gets F taken off (after its checksum is verified here: smoltcp checks none).
//! smoltcp keeps working in its own sequence space and never knows. F is the first word of a
//! ChaCha20 block keyed per boot from the DRBG, with the four-tuple as the nonce: connections
//! from other ports or addresses tell an observer nothing about it. A key for the whole boot,
//! as the RFC has it, because a new key would move the sequence space under open connections.
//!
//! The TCP checksum is handled here too (`net::checksum`; the Seeq computes none): filled in
//! on a sent frame once the offset is in, verified on a received one before the offset comes
//! off, so the headers are walked once for both. A received segment whose checksum fails is
//! dropped before smoltcp sees it, which is what smoltcp does with it after parsing.
//! A received frame is rewritten in the driver's own copy (`WritableRx`), not copied again.
//! F is cached per four-tuple in a small direct-mapped table, so a connection computes its
//! ChaCha20 block about once, not once per segment.

use super::checksum;
use super::frame::{TCP_HEADER, TcpAt, be32, tcp_segment};
use crate::hil::nic::WritableRx;
use chacha20::ChaCha20;
use chacha20::cipher::{KeyIvInit, StreamCipher};
use core::cell::Cell;
use smoltcp::phy::{self, Checksum, DeviceCapabilities};
use smoltcp::time::Instant;

/// A connection as the offset sees it, read from the frame as three words: local address,
/// local port and remote port (local in the high half), remote address. The cache compares
/// these; the ChaCha20 nonce is the same four fields as 12 bytes, built only on a miss.
type Key = (u32, u32, u32);

/// Cached offsets (a power of two).
const CACHE: usize = 16;

const SEQ: usize = 4;
const ACK: usize = 8;
const FLAGS: usize = 13;
const FLAG_ACK: u8 = 0x10;
const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_SACK: u8 = 5;

/// The per-connection offsets: the boot's key and the cache. Shared by the RX and TX tokens of
/// one `receive` (smoltcp sends the reply from inside the RX token's call), hence `Cell`s.
pub struct Offsets {
    key: [u8; 32],
    cache: [Cell<Option<(Key, u32)>>; CACHE],
}

impl Offsets {
    /// Offsets under `key` (32 bytes from the DRBG, drawn once per boot).
    pub fn new(key: [u8; 32]) -> Self {
        Offsets {
            key,
            cache: [const { Cell::new(None) }; CACHE],
        }
    }

    /// F for one connection: the cached word (inline, every frame), or [`Offsets::derive`].
    #[inline(always)]
    fn of(&self, key: Key) -> u32 {
        let (local, ports, _) = key;
        // The low bytes of the local address and of both ports.
        let slot = (local ^ ports ^ (ports >> 16)) as usize % CACHE;
        match self.cache[slot].get() {
            Some((k, off)) if k == key => off,
            _ => self.derive(key, slot),
        }
    }

    /// F computed with ChaCha20 (about once a connection) and cached in `slot`.
    #[cold]
    #[inline(never)]
    fn derive(&self, key: Key, slot: usize) -> u32 {
        let (local, ports, remote) = key;
        let mut nonce = [0u8; 12];
        nonce[0..4].copy_from_slice(&local.to_be_bytes());
        nonce[4..6].copy_from_slice(&((ports >> 16) as u16).to_be_bytes());
        nonce[6..10].copy_from_slice(&remote.to_be_bytes());
        nonce[10..12].copy_from_slice(&(ports as u16).to_be_bytes());
        let mut word = [0u8; 4];
        ChaCha20::new(&self.key.into(), &nonce.into()).apply_keystream(&mut word);
        let off = u32::from_be_bytes(word);
        self.cache[slot].set(Some((key, off)));
        off
    }

    /// Adds F to the sequence number of a frame the stack sends, and fills in its TCP
    /// checksum (which the stack leaves to the device): one walk of the headers for both.
    pub fn outgoing(&self, frame: &mut [u8]) {
        let Some(at) = tcp_segment(frame) else {
            return;
        };
        let off = self.of(key(frame, &at, Direction::Out));
        let seq = at.tcp + SEQ;
        let Some(field) = frame.get_mut(seq..seq + 4) else {
            return;
        };
        let wire = u32::from_be_bytes([field[0], field[1], field[2], field[3]]).wrapping_add(off);
        field.copy_from_slice(&wire.to_be_bytes());
        checksum::fill(frame, &at);
    }

    /// Takes F off the acknowledgment number and SACK edges of a frame the stack receives.
    /// False for a TCP segment whose checksum fails: the frame is to be dropped.
    pub fn incoming(&self, frame: &mut [u8]) -> bool {
        let Some(at) = tcp_segment(frame) else {
            return true;
        };
        if !checksum::holds(frame, &at) {
            return false;
        }
        let off = self.of(key(frame, &at, Direction::In)).wrapping_neg();
        let seg = &mut frame[at.tcp..at.end];
        if seg[FLAGS] & FLAG_ACK != 0 {
            shift(seg, ACK, off);
        }
        let options = usize::from(seg[12] >> 4) * 4;
        if options <= TCP_HEADER || options > seg.len() {
            return true;
        }
        // The options: kind, length, data; NOP and END are one byte. Anything malformed stops
        // the walk (smoltcp drops such a segment anyway).
        let mut i = TCP_HEADER;
        while i < options {
            match seg[i] {
                OPT_END => break,
                OPT_NOP => i += 1,
                kind => {
                    let Some(&len) = seg.get(i + 1) else { break };
                    let len = usize::from(len);
                    if len < 2 || i + len > options {
                        break;
                    }
                    if kind == OPT_SACK {
                        let mut edge = i + 2;
                        while edge + 4 <= i + len {
                            shift(seg, edge, off);
                            edge += 4;
                        }
                    }
                    i += len;
                }
            }
        }
        true
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Out,
    In,
}

/// The connection of a segment, local side first whichever way it goes.
#[inline(always)]
fn key(frame: &[u8], at: &TcpAt, dir: Direction) -> Key {
    let (src, dst) = (be32(frame, at.ip + 12), be32(frame, at.ip + 16));
    // Source port in the high half, destination port in the low.
    let ports = be32(frame, at.tcp);
    match dir {
        Direction::Out => (src, ports, dst),
        Direction::In => (dst, ports.rotate_left(16), src),
    }
}

/// Adds `by` to the 32-bit field at `at` of a received TCP segment. Its checksum is left as
/// it was: it has been verified already, and smoltcp is told not to look at it.
fn shift(seg: &mut [u8], at: usize, by: u32) {
    let old = u32::from_be_bytes([seg[at], seg[at + 1], seg[at + 2], seg[at + 3]]);
    seg[at..at + 4].copy_from_slice(&old.wrapping_add(by).to_be_bytes());
}

/// A `phy::Device` whose TCP sequence numbers on the wire carry each connection's offset.
pub struct IsnOffset<D> {
    inner: D,
    offsets: Offsets,
}

impl<D> IsnOffset<D> {
    pub fn new(inner: D, key: [u8; 32]) -> Self {
        IsnOffset {
            inner,
            offsets: Offsets::new(key),
        }
    }

    /// The wrapped device (for its own figures).
    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }
}

pub struct RxToken<'a, T> {
    inner: T,
    offsets: &'a Offsets,
}

pub struct TxToken<'a, T> {
    inner: T,
    offsets: &'a Offsets,
}

impl<T: WritableRx> phy::RxToken for RxToken<'_, T> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let offsets = self.offsets;
        self.inner.consume_mut(|frame| {
            if offsets.incoming(frame) {
                f(frame)
            } else {
                // smoltcp takes an empty frame as processed and looks no further.
                f(&[])
            }
        })
    }
}

impl<T: phy::TxToken> phy::TxToken for TxToken<'_, T> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let offsets = self.offsets;
        self.inner.consume(len, |frame| {
            let r = f(frame);
            offsets.outgoing(frame);
            r
        })
    }
}

impl<D> phy::Device for IsnOffset<D>
where
    D: phy::Device,
    for<'a> D::RxToken<'a>: WritableRx,
{
    type RxToken<'a>
        = RxToken<'a, D::RxToken<'a>>
    where
        Self: 'a;
    type TxToken<'a>
        = TxToken<'a, D::TxToken<'a>>
    where
        Self: 'a;

    fn receive(&mut self, now: Instant) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let offsets = &self.offsets;
        let (rx, tx) = self.inner.receive(now)?;
        Some((
            RxToken { inner: rx, offsets },
            TxToken { inner: tx, offsets },
        ))
    }

    fn transmit(&mut self, now: Instant) -> Option<Self::TxToken<'_>> {
        let offsets = &self.offsets;
        self.inner
            .transmit(now)
            .map(|inner| TxToken { inner, offsets })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = self.inner.capabilities();
        // Sent segments are summed here after their sequence number has its offset, received
        // ones verified before it comes off (`Offsets::incoming`): smoltcp does neither.
        caps.checksum.tcp = Checksum::None;
        caps
    }
}

#[cfg(test)]
mod tests {
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
        EthernetAddress, EthernetFrame, HardwareAddress, IpAddress, IpCidr, Ipv4Address,
        Ipv4Packet, TcpControl, TcpPacket, TcpRepr, TcpSeqNumber,
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
        let mut server_dev: IsnOffset<Pipe> =
            IsnOffset::new(server_pipe, offsets.unwrap_or_default());
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
        let mut dev = IsnOffset::new(pipe, KEY);
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
}
