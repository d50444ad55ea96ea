//! Hardware addresses: what the host's neighbour table says a LAN address answered from. A
//! machine adopted from the LAN is pinned to the MAC it had then (the lab file's `mac`), so a
//! later answer under its name from another card shows as such (docs/gateway.md).

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;
use std::time::Duration;

/// An Ethernet address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// Its last three bytes: what a module's default name carries (`indy-4d4145`).
    pub fn tail(&self) -> [u8; 3] {
        [self.0[3], self.0[4], self.0[5]]
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl FromStr for Mac {
    type Err = String;

    /// Six pairs of hex digits joined by `:` (either case).
    fn from_str(s: &str) -> Result<Mac, String> {
        let bad = || {
            format!(
                "MAC `{}`: six pairs of hex digits joined by `:`",
                s.escape_debug()
            )
        };
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut out {
            let p = parts.next().ok_or_else(bad)?;
            if p.len() != 2 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad());
            }
            *byte = u8::from_str_radix(p, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Mac(out))
    }
}

/// The MAC the host's neighbour table holds for `ip` now (Linux), if any. Reads only: nothing
/// is sent to `ip`.
pub fn known(ip: Ipv4Addr) -> Option<Mac> {
    let table = std::fs::read_to_string("/proc/net/arp").ok()?;
    in_table(&table, ip)
}

/// One TCP connection attempt to `ip:port` (which puts the machine in the neighbour table),
/// then its MAC. Only for an address the operator agreed to adopt.
pub fn probe(ip: Ipv4Addr, port: u16) -> Option<Mac> {
    let _ = std::net::TcpStream::connect_timeout(&(ip, port).into(), Duration::from_secs(1));
    known(ip)
}

/// `ip`'s complete entry in a `/proc/net/arp` table: `IP address  HW type  Flags  HW address
/// Mask  Device`, one line each after the header; an incomplete entry (all zeros) is none.
fn in_table(table: &str, ip: Ipv4Addr) -> Option<Mac> {
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.first()?.parse::<Ipv4Addr>().ok()? != ip {
            return None;
        }
        let mac: Mac = cols.get(3)?.parse().ok()?;
        (mac.0 != [0; 6]).then_some(mac)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_parse_and_print_one_way() {
        let m: Mac = "08:00:69:4D:41:45".parse().unwrap();
        assert_eq!(m.to_string(), "08:00:69:4d:41:45");
        assert_eq!(m.tail(), [0x4d, 0x41, 0x45]);
        for bad in [
            "",
            "08:00:69:4d:41",
            "08:00:69:4d:41:45:00",
            "08-00-69-4d-41-45",
            "8:00:69:4d:41:45",
            "08:00:69:4d:41:4g",
            "+8:00:69:4d:41:45",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_table_gives_complete_entries_only() {
        let table = "IP address       HW type     Flags       HW address            Mask     Device\n\
                     10.0.0.7         0x1         0x2         08:00:69:4d:41:45     *        eth0\n\
                     10.0.0.8         0x1         0x0         00:00:00:00:00:00     *        eth0\n\
                     10.0.0.9         0x1         0x2         garbage               *        eth0\n";
        let at = |ip: &str| in_table(table, ip.parse().unwrap());
        assert_eq!(at("10.0.0.7").unwrap().to_string(), "08:00:69:4d:41:45");
        assert_eq!(at("10.0.0.8"), None, "incomplete");
        assert_eq!(at("10.0.0.9"), None);
        assert_eq!(at("10.0.0.70"), None);
    }
}
