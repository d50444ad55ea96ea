//! The Ethernet port's configuration from the kernel environment: the station address from
//! `eaddr`, the IPv4 setup from `netaddr` (+ `netgw`), DHCPv4 when `netaddr` is absent. The
//! formats are parsed by `indy::prom_env` (which the rig uses too); this file decides what the
//! module does with the result.

use core::net::Ipv4Addr;
use indy::prom_env::{EnvError, parse_eaddr, parse_netaddr};
use smoltcp::wire::Ipv4Cidr;

/// Station address used when `eaddr` is absent or unusable: SGI's OUI 08:00:69 with a fixed,
/// recognisable tail.
pub const DEFAULT_MAC: [u8; 6] = [0x08, 0x00, 0x69, 0x17, 0x77, 0x01];

/// How the interface gets its IPv4 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpConfig {
    Static {
        cidr: Ipv4Cidr,
        gateway: Option<Ipv4Addr>,
    },
    Dhcp,
}

/// The station address: `eaddr` when it parses, else [`DEFAULT_MAC`] (with the reason).
pub fn mac_from_env(eaddr: Option<&str>) -> ([u8; 6], Option<EnvError>) {
    match eaddr.map(parse_eaddr) {
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
    let n = parse_netaddr(netaddr)?;
    let gateway = match netgw.map(str::trim) {
        None | Some("") => None,
        Some(g) => Some(n.gateway(g)?),
    };
    Ok(IpConfig::Static {
        cidr: Ipv4Cidr::new(n.addr, n.prefix),
        gateway,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs() {
        assert_eq!(
            mac_from_env(Some("8:0:69:1:2:3")),
            ([8, 0, 0x69, 1, 2, 3], None)
        );
        assert_eq!(mac_from_env(None), (DEFAULT_MAC, None));
        assert_eq!(
            mac_from_env(Some("junk")),
            (DEFAULT_MAC, Some(EnvError::BadMac))
        );
        assert_eq!(
            mac_from_env(Some("ff:ff:ff:ff:ff:ff")),
            (DEFAULT_MAC, Some(EnvError::MacNotUnicast))
        );
        assert_eq!(DEFAULT_MAC[..3], [0x08, 0x00, 0x69]);
    }

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
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
                cidr: Ipv4Cidr::new(ip("192.0.2.9"), indy::prom_env::DEFAULT_PREFIX),
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
    fn refusals_are_errors_not_fallbacks() {
        // The forms themselves are indy::prom_env's tests; here: each kind of refusal reaches
        // the caller.
        assert_eq!(
            ip_config(Some("1.2.3.4/31"), None),
            Err(EnvError::BadNetaddr)
        );
        assert_eq!(
            ip_config(Some("172.31.77.255/24"), None),
            Err(EnvError::NetaddrNotHost)
        );
        assert_eq!(
            ip_config(Some("172.31.77.2/24"), Some("10.0.0.1")),
            Err(EnvError::BadGateway)
        );
    }
}
