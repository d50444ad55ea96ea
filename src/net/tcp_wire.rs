//! The `phy` decorator that rewrites every TCP segment on the wire: initial sequence numbers an
//! observer cannot predict (RFC 6528), and the TCP checksum, in one walk of the headers.
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
use alloc::vec::Vec;
use chacha20::ChaCha20;
use chacha20::cipher::{KeyIvInit, StreamCipher};
use core::cell::{Cell, RefCell};
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
const FLAG_SYN: u8 = 0x02;
const FLAG_ACK: u8 = 0x10;
const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_SACK: u8 = 5;

/// The per-connection offsets: the boot's key and the cache. Shared by the RX and TX tokens of
/// one `receive` (smoltcp sends the reply from inside the RX token's call), hence `Cell`s.
pub struct Offsets {
    key: [u8; 32],
    cache: [Cell<Option<(Key, u32)>>; CACHE],
    /// A segment with SYN came in (checksum verified) since [`TcpWire::took_syn`] last asked.
    syn: Cell<bool>,
    /// The connections a socket holds in its handshake (SYN-RECEIVED), as the server last
    /// said ([`TcpWire::set_handshakes`]): a SYN of one of them is a repeat its client sent
    /// because no SYN-ACK came back yet. smoltcp hands a segment to the first socket that
    /// accepts it, and the server puts up a port's next listener as soon as one takes a SYN:
    /// a listener that sits before the socket in its handshake would take the repeat as a
    /// second connection of the same four numbers, whose RSTs then meet the client's ACK.
    /// The repeat is dropped instead; the socket sends its SYN-ACK again by itself.
    handshakes: RefCell<Vec<Key>>,
}

impl Offsets {
    /// Offsets under `key` (32 bytes from the DRBG, drawn once per boot).
    pub fn new(key: [u8; 32]) -> Self {
        Offsets {
            key,
            cache: [const { Cell::new(None) }; CACHE],
            syn: Cell::new(false),
            handshakes: RefCell::new(Vec::new()),
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
    /// False for a TCP segment to drop: its checksum fails, or it is a SYN of a connection in
    /// its handshake.
    pub fn incoming(&self, frame: &mut [u8]) -> bool {
        let Some(at) = tcp_segment(frame) else {
            return true;
        };
        if !checksum::holds(frame, &at) {
            return false;
        }
        let conn = key(frame, &at, Direction::In);
        let off = self.of(conn).wrapping_neg();
        let seg = &mut frame[at.tcp..at.end];
        if seg[FLAGS] & (FLAG_SYN | FLAG_ACK) == FLAG_SYN {
            if self.handshakes.borrow().contains(&conn) {
                return false;
            }
            self.syn.set(true);
        }
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

/// A `phy::Device` whose TCP sequence numbers on the wire carry each connection's offset, and
/// whose TCP checksums it fills in and verifies.
pub struct TcpWire<D> {
    inner: D,
    offsets: Offsets,
}

impl<D> TcpWire<D> {
    pub fn new(inner: D, key: [u8; 32]) -> Self {
        TcpWire {
            inner,
            offsets: Offsets::new(key),
        }
    }

    /// The wrapped device (for its own figures).
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Whether a TCP segment with SYN came in since the last call. Only such a frame can take
    /// a port's listener (to SYN-RECEIVED), so only after one need the server put up the next
    /// listener between received frames; the ACKs of a long answer need not look.
    pub fn took_syn(&self) -> bool {
        self.offsets.syn.replace(false)
    }

    /// Whether any connection is held in its handshake: a socket enters one only through a
    /// SYN ([`TcpWire::took_syn`]), so with none held the list needs no rewriting.
    pub fn holds_handshakes(&self) -> bool {
        !self.offsets.handshakes.borrow().is_empty()
    }

    /// The connections the server's sockets hold in their handshake, each as (local address,
    /// local port, remote address, remote port): a SYN of one of them is kept from the stack.
    /// The list keeps its room (one entry per slot at most); when the heap has none for a new
    /// entry, the handshakes past it are not held back, as before this list existed.
    pub fn set_handshakes(&self, conns: impl Iterator<Item = ([u8; 4], u16, [u8; 4], u16)>) {
        let mut h = self.offsets.handshakes.borrow_mut();
        h.clear();
        for (local, lport, remote, rport) in conns {
            if h.try_reserve(1).is_err() {
                break;
            }
            h.push((
                u32::from_be_bytes(local),
                (u32::from(lport) << 16) | u32::from(rport),
                u32::from_be_bytes(remote),
            ));
        }
    }

    /// The wrapped device, for the tests that drive it from the other end.
    #[cfg(test)]
    fn inner_mut(&mut self) -> &mut D {
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

impl<D> phy::Device for TcpWire<D>
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
mod tests;
