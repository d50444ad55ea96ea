//! The address formats of the PROM environment the kernel hands on (`docs/hardware.md`, "PROM
//! environment"): `eaddr`, the station address, and `netaddr` (+ `netgw`), the IPv4 setup. The
//! module configures its interface from them and the rig places its host stack beside the
//! guest with them, so both read them with these functions.

use core::fmt;
use core::net::Ipv4Addr;

/// Prefix length assumed when `netaddr` has no `/prefix`.
pub const DEFAULT_PREFIX: u8 = 24;
/// Prefix lengths `netaddr` may have: /31 and /32 leave no other host on the wire.
pub const PREFIXES: core::ops::RangeInclusive<u8> = 1..=30;

/// Why a variable was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvError {
    /// `eaddr` is not six hex bytes separated by `:` (or `-`).
    BadMac,
    /// `eaddr` is a group (multicast/broadcast) or all-zero address.
    MacNotUnicast,
    /// `netaddr` is not `a.b.c.d` or `a.b.c.d/prefix` with prefix 1..=30.
    BadNetaddr,
    /// `netaddr` is not a usable host address in its subnet.
    NetaddrNotHost,
    /// `netgw` is not an address inside the `netaddr` subnet.
    BadGateway,
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EnvError::BadMac => "not six hex bytes separated by ':' or '-'",
            EnvError::MacNotUnicast => "not a unicast station address",
            EnvError::BadNetaddr => "not a.b.c.d or a.b.c.d/prefix with prefix 1..=30",
            EnvError::NetaddrNotHost => "not a host address in its subnet",
            EnvError::BadGateway => "not another host address in the netaddr subnet",
        })
    }
}

/// Parses `eaddr` (`08:00:69:0a:0b:0c`; one or two hex digits per byte, `:` or `-`).
pub fn parse_eaddr(text: &str) -> Result<[u8; 6], EnvError> {
    let text = text.trim();
    let sep = if text.contains('-') { '-' } else { ':' };
    let mut mac = [0u8; 6];
    let mut parts = text.split(sep);
    for byte in mac.iter_mut() {
        let part = parts.next().ok_or(EnvError::BadMac)?;
        if part.is_empty() || part.len() > 2 {
            return Err(EnvError::BadMac);
        }
        *byte = u8::from_str_radix(part, 16).map_err(|_| EnvError::BadMac)?;
    }
    if parts.next().is_some() {
        return Err(EnvError::BadMac);
    }
    if mac[0] & 1 != 0 || mac == [0; 6] {
        return Err(EnvError::MacNotUnicast);
    }
    Ok(mac)
}

/// A host address and its subnet, as `netaddr` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Netaddr {
    pub addr: Ipv4Addr,
    /// 1..=30.
    pub prefix: u8,
}

impl Netaddr {
    fn mask(&self) -> u32 {
        u32::MAX << (32 - u32::from(self.prefix))
    }

    /// The subnet's network address (all host bits 0).
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.addr.to_bits() & self.mask())
    }

    /// The subnet's broadcast address (all host bits 1).
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.addr.to_bits() | !self.mask())
    }

    /// Whether `a` is a host address of the subnet (neither its network nor its broadcast).
    pub fn is_host(&self, a: Ipv4Addr) -> bool {
        a.to_bits() & self.mask() == self.network().to_bits()
            && a != self.network()
            && a != self.broadcast()
    }

    /// Parses `netgw`: another host of the subnet.
    pub fn gateway(&self, text: &str) -> Result<Ipv4Addr, EnvError> {
        let g: Ipv4Addr = text.trim().parse().map_err(|_| EnvError::BadGateway)?;
        if !self.is_host(g) || g == self.addr {
            return Err(EnvError::BadGateway);
        }
        Ok(g)
    }
}

/// Parses `netaddr`: `a.b.c.d/prefix`, or `a.b.c.d` with [`DEFAULT_PREFIX`].
pub fn parse_netaddr(text: &str) -> Result<Netaddr, EnvError> {
    let text = text.trim();
    let (addr, prefix) = match text.split_once('/') {
        Some((a, p)) => (a, p.parse::<u8>().map_err(|_| EnvError::BadNetaddr)?),
        None => (text, DEFAULT_PREFIX),
    };
    if !PREFIXES.contains(&prefix) {
        return Err(EnvError::BadNetaddr);
    }
    let addr: Ipv4Addr = addr.parse().map_err(|_| EnvError::BadNetaddr)?;
    let n = Netaddr { addr, prefix };
    let unicast = !(addr.is_unspecified()
        || addr.is_broadcast()
        || addr.is_multicast()
        || addr.is_loopback());
    if !unicast || !n.is_host(addr) {
        return Err(EnvError::NetaddrNotHost);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eaddr_forms() {
        assert_eq!(
            parse_eaddr("08:00:69:0a:1B:ff"),
            Ok([8, 0, 0x69, 0x0a, 0x1b, 0xff])
        );
        assert_eq!(parse_eaddr(" 8:0:69:1:2:3 "), Ok([8, 0, 0x69, 1, 2, 3]));
        assert_eq!(parse_eaddr("08-00-69-01-02-03"), Ok([8, 0, 0x69, 1, 2, 3]));
        for bad in [
            "08:00:69:01:02",
            "08:00:69:01:02:03:04",
            "08:00:69:01:02:3g",
            "08:00:69:01:02:123",
            "08::69:01:02:03",
            "",
        ] {
            assert_eq!(parse_eaddr(bad), Err(EnvError::BadMac), "{bad}");
        }
        assert_eq!(
            parse_eaddr("ff:ff:ff:ff:ff:ff"),
            Err(EnvError::MacNotUnicast)
        );
        assert_eq!(parse_eaddr("0:0:0:0:0:0"), Err(EnvError::MacNotUnicast));
    }

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn netaddr_forms() {
        let n = parse_netaddr(" 172.31.77.2/24 ").unwrap();
        assert_eq!((n.addr, n.prefix), (ip("172.31.77.2"), 24));
        assert_eq!(n.network(), ip("172.31.77.0"));
        assert_eq!(n.broadcast(), ip("172.31.77.255"));
        assert_eq!(
            parse_netaddr("192.0.2.9").map(|n| n.prefix),
            Ok(DEFAULT_PREFIX)
        );
        assert_eq!(parse_netaddr("10.1.2.3/8").map(|n| n.prefix), Ok(8));
        let n = parse_netaddr("192.168.3.77/28").unwrap();
        assert_eq!(n.network(), ip("192.168.3.64"));
        assert_eq!(n.broadcast(), ip("192.168.3.79"));
        assert_eq!(parse_netaddr("10.0.0.1/30").map(|n| n.prefix), Ok(30));
    }

    #[test]
    fn netaddr_refusals() {
        for bad in [
            "1.2.3",
            "1.2.3.4/",
            "1.2.3.4/33",
            "1.2.3.4/31",
            "1.2.3.4/0",
            "1.2.3.4/x",
            "a.b.c.d",
            "",
        ] {
            assert_eq!(parse_netaddr(bad), Err(EnvError::BadNetaddr), "{bad}");
        }
        for bad in [
            "172.31.77.0/24",
            "172.31.77.255/24",
            "0.0.0.0",
            "224.0.0.1",
            "127.0.0.1",
        ] {
            assert_eq!(parse_netaddr(bad), Err(EnvError::NetaddrNotHost), "{bad}");
        }
    }

    #[test]
    fn gateways() {
        let n = parse_netaddr("172.31.77.2/24").unwrap();
        assert_eq!(n.gateway(" 172.31.77.1"), Ok(ip("172.31.77.1")));
        for gw in [
            "10.0.0.1",
            "172.31.77.2",
            "172.31.77.255",
            "172.31.77.0",
            "x",
        ] {
            assert_eq!(n.gateway(gw), Err(EnvError::BadGateway), "{gw}");
        }
    }
}
