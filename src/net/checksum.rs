//! The TCP checksum, on the module's side of the `net::tcp_wire` decorator (which tells smoltcp the
//! device handles it both ways): filled in on a sent frame right after its sequence number
//! gets its offset, and verified on a received one before smoltcp sees it. Every payload byte
//! passes through one of these sums; `irix7_kmem::ones_sum` sums aligned 32-bit words with an
//! end-around carry, a fraction of the R4400 instructions per byte of smoltcp's generic
//! 16-bit loop.

use super::frame::{TcpAt, be32};
use irix7_kmem::ones_sum;

const PROTO_TCP: u8 = 6;
/// Offset of the checksum in the TCP header.
const TCP_CHECKSUM: usize = 16;

/// Fills in the TCP checksum of the segment at `at` of an Ethernet + IPv4 frame (as
/// `frame::tcp_segment` found it).
pub fn fill(frame: &mut [u8], at: &TcpAt) {
    let sum = pseudo_header(frame, at);
    let segment = &mut frame[at.tcp..at.end];
    segment[TCP_CHECKSUM] = 0;
    segment[TCP_CHECKSUM + 1] = 0;
    let c = !fold(ones_sum(sum, segment));
    segment[TCP_CHECKSUM..TCP_CHECKSUM + 2].copy_from_slice(&c.to_be_bytes());
}

/// Whether the received segment at `at` sums to all ones with its pseudo-header: the test
/// smoltcp's `TcpRepr::parse` makes, over the same bytes (the IPv4 payload).
pub fn holds(frame: &[u8], at: &TcpAt) -> bool {
    fold(ones_sum(pseudo_header(frame, at), &frame[at.tcp..at.end])) == 0xffff
}

/// The pseudo-header's sum: protocol, TCP length, source and destination addresses (two
/// words added here: a call of `ones_sum` for eight bytes cost twice as much, every frame).
#[inline(always)]
fn pseudo_header(frame: &[u8], at: &TcpAt) -> u32 {
    let sum = u32::from(PROTO_TCP) + at.tcp_len() as u32;
    add(add(sum, be32(frame, at.ip + 12)), be32(frame, at.ip + 16))
}

/// One's complement addition in 32 bits (the end-around carry `ones_sum` keeps).
#[inline(always)]
fn add(sum: u32, word: u32) -> u32 {
    let (s, carry) = sum.overflowing_add(word);
    s + u32::from(carry)
}

/// Folds a 32-bit one's complement sum to 16 bits.
fn fold(sum: u32) -> u16 {
    let s = (sum >> 16) + (sum & 0xffff);
    let s = (s >> 16) + (s & 0xffff);
    s as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::frame::tcp_segment;
    use crate::net::frame::test_frames::tcp_frame;
    use smoltcp::wire::{Ipv4Address, TcpControl, TcpRepr, TcpSeqNumber};
    use std::vec;
    use std::vec::Vec;

    /// [`fill`] where the frame has a TCP segment; other frames are left as they are.
    fn fill_tcp_checksum(frame: &mut [u8]) {
        if let Some(at) = tcp_segment(frame) {
            fill(frame, &at);
        }
    }

    /// A frame as smoltcp builds it with the checksum computed (`computed`) or left to the
    /// device (zero).
    fn frame(payload: &[u8], computed: bool) -> Vec<u8> {
        let src = Ipv4Address::new(10, 7, 0, 1);
        let dst = Ipv4Address::new(10, 7, 0, 200);
        let tcp = TcpRepr {
            src_port: 7801,
            dst_port: 40001,
            control: TcpControl::Psh,
            seq_number: TcpSeqNumber(0x1234_5678),
            ack_number: Some(TcpSeqNumber(0x0abc_def0)),
            window_len: 4096,
            window_scale: None,
            max_seg_size: None,
            sack_permitted: false,
            sack_ranges: [None, None, None],
            timestamp: None,
            payload,
        };
        tcp_frame(&tcp, src, dst, computed)
    }

    #[test]
    fn matches_smoltcp_for_every_payload_length() {
        for len in 0..80 {
            let payload: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let want = frame(&payload, true);
            let mut got = frame(&payload, false);
            assert_ne!(got, want, "the checksum was left out ({len})");
            fill_tcp_checksum(&mut got);
            assert_eq!(got, want, "payload of {len} bytes");
        }
        let big: Vec<u8> = (0..1460).map(|i| 0xff - (i % 7) as u8).collect();
        let mut got = frame(&big, false);
        fill_tcp_checksum(&mut got);
        assert_eq!(got, frame(&big, true));
    }

    #[test]
    fn holds_where_smoltcp_would_accept_the_segment() {
        for len in [0, 1, 2, 3, 17, 80, 1460] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 91 + 3) as u8).collect();
            let good = frame(&payload, true);
            let at = tcp_segment(&good).unwrap();
            assert!(holds(&good, &at), "payload of {len} bytes");
            // Every bit the sum covers: the addresses, the TCP header and the payload.
            for byte in (14 + 12..14 + 20).chain(at.tcp..at.end) {
                let mut bad = good.clone();
                bad[byte] ^= 0x08;
                assert!(!holds(&bad, &at), "a flipped bit in byte {byte} of {len}");
            }
        }
        // A fragment's payload is judged as the whole segment smoltcp takes it for.
        let mut fragment = frame(b"hello", true);
        fragment[14 + 6] = 0x20; // more fragments
        let at = tcp_segment(&fragment).unwrap();
        assert!(holds(&fragment, &at));
        fragment[at.end - 1] ^= 1;
        assert!(!holds(&fragment, &at));
    }

    #[test]
    fn other_and_broken_frames_are_left_alone() {
        let mut arp = vec![0u8; 60];
        arp[12] = 0x08;
        arp[13] = 0x06;
        let before = arp.clone();
        fill_tcp_checksum(&mut arp);
        assert_eq!(arp, before);
        // An IPv4 total length beyond the frame.
        let mut f = frame(b"hello", false);
        f[14 + 2] = 0xff;
        let before = f.clone();
        fill_tcp_checksum(&mut f);
        assert_eq!(f, before);
        // Too short to hold the headers.
        let mut short = frame(b"", false);
        short.truncate(30);
        let before = short.clone();
        fill_tcp_checksum(&mut short);
        assert_eq!(short, before);
    }
}
