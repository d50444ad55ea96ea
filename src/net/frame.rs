//! Where the TCP segment sits in an Ethernet frame, for the `phy` decorators that touch TCP
//! headers on their way to and from the wire (the checksum, the sequence-number offset).

const ETH_HEADER: usize = 14;
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const PROTO_TCP: u8 = 6;
/// The fixed part of a TCP header.
pub const TCP_HEADER: usize = 20;

/// The place of an unfragmented IPv4 TCP segment in a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpAt {
    /// Offset of the IPv4 header (the addresses are at +12 and +16).
    pub ip: usize,
    /// Offset of the TCP header.
    pub tcp: usize,
    /// Offset one past the segment (the IPv4 total length; padding after it is not TCP).
    pub end: usize,
}

impl TcpAt {
    /// The TCP length the checksum's pseudo-header counts.
    pub fn tcp_len(&self) -> usize {
        self.end - self.tcp
    }
}

/// Finds the TCP segment of an Ethernet + IPv4 frame, or None for other frames and for frames
/// whose headers do not add up (those are left for smoltcp to judge). Inlined into its two
/// callers, which run for every frame.
#[inline(always)]
pub fn tcp_segment(frame: &[u8]) -> Option<TcpAt> {
    let ip = frame.get(ETH_HEADER..)?;
    if frame.get(12..14)? != ETHERTYPE_IPV4 || ip.len() < 20 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // Version 4, TCP, lengths consistent. A fragment counts: smoltcp sends none, and it is
    // built without reassembly, so it takes a received fragment's payload for a whole segment
    // (and its checksum is judged here, `net::checksum::holds`, as smoltcp would judge it).
    if ip[0] >> 4 != 4 || ip[9] != PROTO_TCP || ihl < 20 || total > ip.len() {
        return None;
    }
    if total < ihl + TCP_HEADER {
        return None;
    }
    Some(TcpAt {
        ip: ETH_HEADER,
        tcp: ETH_HEADER + ihl,
        end: ETH_HEADER + total,
    })
}

/// The big-endian word at `i` of a frame whose headers `tcp_segment` found (0 past its end).
/// Always inlined: the size-optimised build left a closure doing this out of line, a call
/// for every address and port word of every frame.
#[inline(always)]
pub fn be32(frame: &[u8], i: usize) -> u32 {
    match frame.get(i..i + 4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Frames as smoltcp builds them, for the tests of the decorators.
#[cfg(test)]
pub(crate) mod test_frames {
    use alloc::vec;
    use alloc::vec::Vec;
    use smoltcp::phy::{Checksum, ChecksumCapabilities};
    use smoltcp::wire::{
        EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpProtocol, Ipv4Address,
        Ipv4Packet, Ipv4Repr, TcpPacket, TcpRepr,
    };

    /// `tcp` from `src` to `dst` in IPv4 in Ethernet, its checksum computed or, with
    /// `computed` false, left to the device as smoltcp leaves it.
    pub fn tcp_frame(tcp: &TcpRepr, src: Ipv4Address, dst: Ipv4Address, computed: bool) -> Vec<u8> {
        let ip = Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol::Tcp,
            payload_len: tcp.buffer_len(),
            hop_limit: 64,
        };
        let eth = EthernetRepr {
            src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
            ethertype: EthernetProtocol::Ipv4,
        };
        let mut caps = ChecksumCapabilities::default();
        if !computed {
            caps.tcp = Checksum::Rx;
        }
        let mut buf = vec![0u8; 14 + 20 + tcp.buffer_len()];
        let mut f = EthernetFrame::new_unchecked(&mut buf[..]);
        eth.emit(&mut f);
        let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
        ip.emit(&mut p, &caps);
        let mut t = TcpPacket::new_unchecked(p.payload_mut());
        tcp.emit(&mut t, &src.into(), &dst.into(), &caps);
        buf
    }
}
