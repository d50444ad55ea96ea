//! The machine announces itself on its network with multicast DNS and DNS-SD (RFC 6762,
//! RFC 6763): service `_mcp._tcp`, instance and host `<name>` (`mcp.name`, by default
//! `indy-` and the MAC's last three bytes), with TXT strings that tell a client (and the lab
//! gateway, docs/gateway.md) the path, the protocol eras, the version, the build and whether a
//! token is needed. An agent on the LAN then finds `http://<name>.local:<port>/mcp` without
//! being told the address.
//!
//! What it does: answers queries for the service type, the instance, its SRV and TXT and the
//! host's A record, with the records a client needs next as additional records; answers QU
//! and legacy (not port 5353) queries by unicast; announces everything twice, a second apart,
//! when the address is first known or changes (RFC 6762 §8.3). What it does not: probing for
//! name conflicts (§8.1) — the default name is made unique by the MAC — and known-answer
//! suppression (answers are small and rate-limited instead).
//!
//! Bounds: one UDP socket with [`RX_DATAGRAMS`] datagrams of buffer, at most
//! [`QUERIES_PER_POLL`] queries read a poll, an answer at most [`ANSWER_MAX`] bytes, at most
//! one multicast answer per [`MULTICAST_GAP_MS`] for the same records and at most
//! [`ANSWERS_PER_SECOND`] answers a second of any kind (so alternating questions cannot get
//! around the gap); queries from outside the interface's
//! subnet are dropped (§11), so the module is no amplifier for spoofed sources elsewhere.

pub mod message;

use crate::net::stack::NetStack;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use message::{Reply, Service, Wanted};
use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::phy::Device;
use smoltcp::socket::udp;
use smoltcp::wire::{IpAddress, IpEndpoint, Ipv4Address, Ipv4Cidr};

pub const PORT: u16 = 5353;
pub const GROUP: Ipv4Address = Ipv4Address::new(224, 0, 0, 251);
/// Datagrams the socket holds each way (queries are small; 4 × 512 bytes of payload).
pub const RX_DATAGRAMS: usize = 4;
const RX_BYTES: usize = 2048;
const TX_DATAGRAMS: usize = 2;
/// The largest answer (an announcement with a long name and TXT is about 300 bytes).
pub const ANSWER_MAX: usize = 1024;
pub const QUERIES_PER_POLL: usize = 4;
pub const MULTICAST_GAP_MS: u64 = 1000;
pub const ANSWERS_PER_SECOND: u32 = 10;
/// Announcements after the address is known, this far apart.
const ANNOUNCEMENTS: u8 = 2;
const ANNOUNCE_GAP_MS: u64 = 1000;

/// The longest `mcp.name`: one DNS label.
pub const NAME_MAX: usize = 63;

/// The instance and host name from `mcp.name`, or the default from the MAC. Err carries the
/// refused value's problem, for the console (the default is used then).
pub fn choose_name(env: Option<&str>, mac: [u8; 6]) -> (String, Option<&'static str>) {
    let default = format!("indy-{:02x}{:02x}{:02x}", mac[3], mac[4], mac[5]);
    let Some(v) = env.map(str::trim).filter(|v| !v.is_empty()) else {
        return (default, None);
    };
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '-';
    let why = if v.len() > NAME_MAX {
        Some("longer than 63 characters")
    } else if !v.chars().all(ok_char) {
        Some("only letters, digits and '-' are allowed")
    } else if v.starts_with('-') || v.ends_with('-') {
        Some("it may not start or end with '-'")
    } else {
        None
    };
    match why {
        None => (String::from(v), None),
        Some(why) => (default, Some(why)),
    }
}

/// The responder: its socket and what it last sent.
pub struct Responder {
    socket: SocketHandle,
    service: Service,
    /// The address the announcements were (or are being) made for.
    announced: Option<[u8; 4]>,
    announcements_left: u8,
    next_announcement_ms: u64,
    /// The last multicast answer: what it carried and when.
    last_multicast: Option<(Wanted, u64)>,
    /// Answers (not announcements) sent in the current second.
    answer_second: u64,
    answers_sent: u32,
    query: Vec<u8>,
    answer: Vec<u8>,
}

impl Responder {
    /// Joins the mDNS group and opens the socket. Err when the stack refuses either (the module
    /// then runs without announcing itself; the board says so).
    pub fn new<D: Device>(
        stack: &mut NetStack<D>,
        name: String,
        port: u16,
        txt: Vec<String>,
    ) -> Result<Self, &'static str> {
        stack
            .iface
            .join_multicast_group(GROUP)
            .map_err(|_| "the interface cannot join 224.0.0.251")?;
        let rx = udp::PacketBuffer::new(
            vec![udp::PacketMetadata::EMPTY; RX_DATAGRAMS],
            vec![0; RX_BYTES],
        );
        let tx = udp::PacketBuffer::new(
            vec![udp::PacketMetadata::EMPTY; TX_DATAGRAMS],
            vec![0; ANSWER_MAX * TX_DATAGRAMS],
        );
        let mut socket = udp::Socket::new(rx, tx);
        socket.bind(PORT).map_err(|_| "port 5353 is taken")?;
        Ok(Responder {
            socket: stack.sockets.add(socket),
            service: Service {
                name,
                port,
                ipv4: [0; 4],
                txt,
            },
            announced: None,
            announcements_left: 0,
            next_announcement_ms: 0,
            last_multicast: None,
            answer_second: 0,
            answers_sent: 0,
            query: vec![0; RX_BYTES],
            answer: vec![0; ANSWER_MAX],
        })
    }

    /// The name announced (`<name>.local` is one of the machine's names for the Host check).
    pub fn name(&self) -> &str {
        &self.service.name
    }

    /// Answers what came in and makes due announcements. True when it sent something.
    pub fn poll(&mut self, sockets: &mut SocketSet<'_>, ip: Option<Ipv4Cidr>, now_ms: u64) -> bool {
        let socket = sockets.get_mut::<udp::Socket>(self.socket);
        let Some(cidr) = ip else {
            // No address: nothing can be answered; drop what queued up.
            while socket.recv().is_ok() {}
            return false;
        };
        let addr = cidr.address().octets();
        if self.announced != Some(addr) {
            self.announced = Some(addr);
            self.service.ipv4 = addr;
            self.announcements_left = ANNOUNCEMENTS;
            self.next_announcement_ms = now_ms;
        }
        let mut sent = false;
        if self.announcements_left > 0 && now_ms >= self.next_announcement_ms {
            if let Some(n) =
                message::write_answer(&self.service, None, Reply::Multicast, &mut self.answer)
            {
                sent |= socket
                    .send_slice(&self.answer[..n], IpEndpoint::new(GROUP.into(), PORT))
                    .is_ok();
            }
            self.announcements_left -= 1;
            self.next_announcement_ms = now_ms + ANNOUNCE_GAP_MS;
        }
        // Most polls have no query: that is told without a receive.
        for _ in 0..QUERIES_PER_POLL {
            if !socket.can_recv() {
                break;
            }
            let Ok((n, meta)) = socket.recv_slice(&mut self.query) else {
                break;
            };
            let IpAddress::Ipv4(src) = meta.endpoint.addr;
            if !cidr.contains_addr(&src) || src == cidr.address() {
                continue;
            }
            let msg = &self.query[..n];
            let Some(q) = message::read_query(msg, &self.service) else {
                continue;
            };
            let reply = if meta.endpoint.port != PORT {
                Reply::Legacy
            } else if q.unicast {
                Reply::Unicast
            } else {
                Reply::Multicast
            };
            let second = now_ms / 1000;
            if second != self.answer_second {
                (self.answer_second, self.answers_sent) = (second, 0);
            }
            if self.answers_sent >= ANSWERS_PER_SECOND {
                continue;
            }
            let to = match reply {
                Reply::Multicast => {
                    let recent = self.last_multicast.is_some_and(|(w, at)| {
                        w == q.wanted && now_ms.saturating_sub(at) < MULTICAST_GAP_MS
                    });
                    if recent {
                        continue;
                    }
                    self.last_multicast = Some((q.wanted, now_ms));
                    IpEndpoint::new(GROUP.into(), PORT)
                }
                Reply::Unicast | Reply::Legacy => meta.endpoint,
            };
            self.answers_sent += 1;
            if let Some(len) =
                message::write_answer(&self.service, Some((&q, msg)), reply, &mut self.answer)
            {
                sent |= socket.send_slice(&self.answer[..len], to).is_ok();
            }
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_comes_from_mcp_name_or_the_mac() {
        let mac = [8, 0, 0x69, 0x0a, 0x1b, 0x2c];
        assert_eq!(choose_name(None, mac), (String::from("indy-0a1b2c"), None));
        assert_eq!(
            choose_name(Some(" bench-2 "), mac),
            (String::from("bench-2"), None)
        );
        for bad in ["bad name", "-x", "x-", "ä", &"a".repeat(64)] {
            let (name, why) = choose_name(Some(bad), mac);
            assert_eq!(name, "indy-0a1b2c", "{bad}");
            assert!(why.is_some(), "{bad}");
        }
    }
}
