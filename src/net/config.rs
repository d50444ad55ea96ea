//! The Ethernet port's configuration from the kernel environment: the station address from
//! `eaddr`, the IPv4 setup from `netaddr` (+ `netgw`), DHCPv4 when `netaddr` is absent. Pure
//! functions, so every accepted and refused form is tested on the host.

use core::net::Ipv4Addr;
use core::str::FromStr;
use smoltcp::wire::Ipv4Cidr;

/// Station address used when `eaddr` is absent or unusable: SGI's OUI 08:00:69 with a fixed,
/// recognisable tail.
pub const DEFAULT_MAC: [u8; 6] = [0x08, 0x00, 0x69, 0x17, 0x77, 0x01];
/// Prefix length assumed when `netaddr` has no `/prefix`.
pub const DEFAULT_PREFIX: u8 = 24;

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

/// How the interface gets its IPv4 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpConfig {
    Static {
        cidr: Ipv4Cidr,
        gateway: Option<Ipv4Addr>,
    },
    Dhcp,
}

/// Parses `eaddr` (`08:00:69:0a:0b:0c`; one or two hex digits per byte, `:` or `-`).
pub fn parse_mac(text: &str) -> Result<[u8; 6], EnvError> {
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

/// The station address: `eaddr` when it parses, else [`DEFAULT_MAC`] (with the reason).
pub fn mac_from_env(eaddr: Option<&str>) -> ([u8; 6], Option<EnvError>) {
    match eaddr.map(parse_mac) {
        Some(Ok(mac)) => (mac, None),
        Some(Err(e)) => (DEFAULT_MAC, Some(e)),
        None => (DEFAULT_MAC, None),
    }
}

/// The IPv4 setup: static from `netaddr` (and optional `netgw`), DHCPv4 when `netaddr` is
/// absent or empty. A malformed value is an error, not a silent fallback: the caller decides
/// (and logs) what to do with it.
pub fn ip_config(netaddr: Option<&str>, netgw: Option<&str>) -> Result<IpConfig, EnvError> {
    let netaddr = match netaddr.map(str::trim) {
        None | Some("") => return Ok(IpConfig::Dhcp),
        Some(s) => s,
    };
    let (addr, prefix) = match netaddr.split_once('/') {
        Some((a, p)) => {
            let p = p.parse::<u8>().map_err(|_| EnvError::BadNetaddr)?;
            (a, p)
        }
        None => (netaddr, DEFAULT_PREFIX),
    };
    if !(1..=30).contains(&prefix) {
        return Err(EnvError::BadNetaddr);
    }
    let addr = Ipv4Addr::from_str(addr).map_err(|_| EnvError::BadNetaddr)?;
    let cidr = Ipv4Cidr::new(addr, prefix);
    let network = cidr.network().address();
    let broadcast = cidr.broadcast().ok_or(EnvError::NetaddrNotHost)?;
    if !is_unicast(addr) || addr == network || addr == broadcast {
        return Err(EnvError::NetaddrNotHost);
    }
    let gateway = match netgw.map(str::trim) {
        None | Some("") => None,
        Some(g) => {
            let g = Ipv4Addr::from_str(g).map_err(|_| EnvError::BadGateway)?;
            if !cidr.contains_addr(&g) || g == addr || g == network || g == broadcast {
                return Err(EnvError::BadGateway);
            }
            Some(g)
        }
    };
    Ok(IpConfig::Static { cidr, gateway })
}

fn is_unicast(a: Ipv4Addr) -> bool {
    !(a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs() {
        assert_eq!(
            parse_mac("08:00:69:0a:1B:ff"),
            Ok([8, 0, 0x69, 0x0a, 0x1b, 0xff])
        );
        assert_eq!(parse_mac("8:0:69:1:2:3"), Ok([8, 0, 0x69, 1, 2, 3]));
        assert_eq!(parse_mac("08-00-69-01-02-03"), Ok([8, 0, 0x69, 1, 2, 3]));
        assert_eq!(parse_mac("08:00:69:01:02"), Err(EnvError::BadMac));
        assert_eq!(parse_mac("08:00:69:01:02:03:04"), Err(EnvError::BadMac));
        assert_eq!(parse_mac("08:00:69:01:02:3g"), Err(EnvError::BadMac));
        assert_eq!(parse_mac("08:00:69:01:02:123"), Err(EnvError::BadMac));
        assert_eq!(parse_mac("08::69:01:02:03"), Err(EnvError::BadMac));
        assert_eq!(parse_mac("ff:ff:ff:ff:ff:ff"), Err(EnvError::MacNotUnicast));
        assert_eq!(parse_mac("0:0:0:0:0:0"), Err(EnvError::MacNotUnicast));
        assert_eq!(mac_from_env(None), (DEFAULT_MAC, None));
        assert_eq!(
            mac_from_env(Some("junk")),
            (DEFAULT_MAC, Some(EnvError::BadMac))
        );
        assert_eq!(DEFAULT_MAC[..3], [0x08, 0x00, 0x69]);
    }

    fn ip(s: &str) -> Ipv4Addr {
        Ipv4Addr::from_str(s).unwrap()
    }

    #[test]
    fn netaddr_forms() {
        assert_eq!(ip_config(None, None), Ok(IpConfig::Dhcp));
        assert_eq!(ip_config(Some(" "), Some("10.0.0.1")), Ok(IpConfig::Dhcp));
        assert_eq!(
            ip_config(Some("172.31.77.2/24"), Some("172.31.77.1")),
            Ok(IpConfig::Static {
                cidr: Ipv4Cidr::new(ip("172.31.77.2"), 24),
                gateway: Some(ip("172.31.77.1")),
            })
        );
        assert_eq!(
            ip_config(Some("192.0.2.9"), None),
            Ok(IpConfig::Static {
                cidr: Ipv4Cidr::new(ip("192.0.2.9"), DEFAULT_PREFIX),
                gateway: None,
            })
        );
        assert_eq!(
            ip_config(Some("10.1.2.3/8"), None).map(|c| match c {
                IpConfig::Static { cidr, .. } => cidr.prefix_len(),
                IpConfig::Dhcp => 0,
            }),
            Ok(8)
        );
    }

    #[test]
    fn netaddr_refusals() {
        for bad in [
            "1.2.3",
            "1.2.3.4/",
            "1.2.3.4/33",
            "1.2.3.4/0",
            "1.2.3.4/x",
            "a.b.c.d",
        ] {
            assert_eq!(
                ip_config(Some(bad), None),
                Err(EnvError::BadNetaddr),
                "{bad}"
            );
        }
        for bad in [
            "172.31.77.0/24",
            "172.31.77.255/24",
            "0.0.0.0",
            "224.0.0.1",
            "127.0.0.1",
        ] {
            assert_eq!(
                ip_config(Some(bad), None),
                Err(EnvError::NetaddrNotHost),
                "{bad}"
            );
        }
        for gw in ["10.0.0.1", "172.31.77.2", "172.31.77.255", "x"] {
            assert_eq!(
                ip_config(Some("172.31.77.2/24"), Some(gw)),
                Err(EnvError::BadGateway),
                "{gw}"
            );
        }
    }
}
