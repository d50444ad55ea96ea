//! Which addresses an mDNS answer may name. mDNS is heard on the host's own links, so a machine
//! that answers is on one of them: its address must be a unicast address of one of the host's
//! IPv4 networks. Anything else (loopback, link-local, unspecified, multicast, broadcast,
//! reserved, a network's own or broadcast address, or an address of no network of the host)
//! would point the gateway, and the token the operator puts beside it, somewhere the answer
//! chose (review L4).

use std::net::Ipv4Addr;

/// The host's IPv4 networks an answer's address may lie in.
#[derive(Clone, Debug, Default)]
pub struct Lan {
    /// (an address of the host, prefix length), loopback and link-local interfaces left out.
    nets: Vec<(Ipv4Addr, u8)>,
}

impl Lan {
    /// The networks of the host's interfaces now.
    pub fn of_host() -> Lan {
        let nets = if_addrs::get_if_addrs()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|i| match i.addr {
                if_addrs::IfAddr::V4(v4) => Some((v4.ip, v4.prefixlen)),
                if_addrs::IfAddr::V6(_) => None,
            });
        Lan::new(nets)
    }

    /// These networks, each given by one of its addresses and its prefix length.
    pub fn new(nets: impl IntoIterator<Item = (Ipv4Addr, u8)>) -> Lan {
        Lan {
            nets: nets
                .into_iter()
                .filter(|(ip, len)| *len <= 32 && special(*ip).is_none())
                .collect(),
        }
    }

    /// `Ok` if `ip` is a machine's address on one of these networks; else why not, in a few
    /// words (`127.0.0.1 is loopback`).
    pub fn judge(&self, ip: Ipv4Addr) -> Result<(), String> {
        if let Some(class) = special(ip) {
            return Err(format!("{ip} is {class}"));
        }
        let Some(&(_, len)) = self.nets.iter().find(|(net, len)| same_net(ip, *net, *len)) else {
            return Err(format!("{ip} is on none of this host's networks"));
        };
        // /31 and /32 have no network or broadcast address (RFC 3021).
        let host_bits = !mask(len);
        if len < 31 && (u32::from(ip) & host_bits == 0 || u32::from(ip) & host_bits == host_bits) {
            return Err(format!("{ip} is a network or broadcast address of /{len}"));
        }
        Ok(())
    }
}

/// The class of an address no LAN machine answers from, if `ip` is one.
fn special(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(if ip.is_unspecified() || a == 0 {
        "unspecified (0.0.0.0/8)"
    } else if ip.is_loopback() {
        "loopback"
    } else if ip.is_link_local() {
        "link-local (169.254.0.0/16)"
    } else if ip.is_multicast() {
        "multicast"
    } else if ip.is_broadcast() {
        "broadcast"
    } else if a >= 240 {
        "reserved (240.0.0.0/4)"
    } else if ip.is_documentation() {
        "for documentation only"
    } else if a == 198 && (b & 0xfe) == 18 {
        "for benchmarking only (198.18.0.0/15)"
    } else if a == 192 && b == 0 && c == 0 {
        "for protocol assignments (192.0.0.0/24)"
    } else {
        return None;
    })
}

fn mask(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

fn same_net(a: Ipv4Addr, b: Ipv4Addr, len: u8) -> bool {
    (u32::from(a) ^ u32::from(b)) & mask(len) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn lan() -> Lan {
        Lan::new([
            (ip("192.168.1.10"), 24),
            (ip("10.77.0.1"), 24),
            (ip("203.0.113.5"), 24), // a documentation net is no LAN even on an interface
            (ip("127.0.0.1"), 8),
            (ip("169.254.3.4"), 16),
            (ip("198.51.7.9"), 31),
        ])
    }

    #[test]
    fn machines_on_the_hosts_networks_are_taken() {
        for ok in ["192.168.1.20", "192.168.1.254", "10.77.0.2", "198.51.7.8"] {
            assert_eq!(lan().judge(ip(ok)), Ok(()), "{ok}");
        }
    }

    #[test]
    fn loopback_link_local_and_the_rest_are_refused() {
        let why = |s: &str| lan().judge(ip(s)).unwrap_err();
        assert!(why("127.0.0.1").contains("loopback"));
        assert!(why("127.1.2.3").contains("loopback"));
        assert!(
            why("169.254.3.5").contains("link-local"),
            "even on an interface"
        );
        assert!(why("0.0.0.0").contains("unspecified"));
        assert!(why("0.1.2.3").contains("unspecified"));
        assert!(why("224.0.0.251").contains("multicast"));
        assert!(why("239.255.255.250").contains("multicast"));
        assert!(why("255.255.255.255").contains("broadcast"));
        assert!(why("240.0.0.1").contains("reserved"));
        assert!(why("203.0.113.9").contains("documentation"));
        assert!(why("198.18.0.1").contains("benchmarking"));
        assert!(why("192.168.1.255").contains("broadcast address of /24"));
        assert!(why("192.168.1.0").contains("network or broadcast"));
        assert!(why("192.168.2.20").contains("none of this host's networks"));
        assert!(why("8.8.8.8").contains("none of this host's networks"));
        assert!(why("10.0.0.1").contains("none of this host's networks"));
    }

    #[test]
    fn a_host_without_networks_takes_nothing() {
        assert!(Lan::default().judge(ip("192.168.1.20")).is_err());
    }
}
