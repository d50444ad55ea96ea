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
/// whose headers do not add up (those are left for smoltcp to judge).
pub fn tcp_segment(frame: &[u8]) -> Option<TcpAt> {
    let ip = frame.get(ETH_HEADER..)?;
    if frame.get(12..14)? != ETHERTYPE_IPV4 || ip.len() < 20 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // Version 4, TCP, not a fragment (smoltcp never fragments TCP), lengths consistent.
    let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
    if ip[0] >> 4 != 4 || ip[9] != PROTO_TCP || fragment || ihl < 20 || total > ip.len() {
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
