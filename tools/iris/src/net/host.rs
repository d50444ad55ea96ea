//! The host side of the emulated Ethernet: the addresses the host-side smoltcp stack uses on
//! the virtual wire, and the wire's host end as a smoltcp `phy::Device`, optionally faulty
//! (`--wire-faults`) and captured to a pcap file (`--pcap`): when a network test fails, the
//! frames on the wire are the first thing to look at.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::Ipv4Addr;
use std::path::Path;

use smoltcp::phy::{self, DeviceCapabilities, Medium, PcapMode, PcapSink, PcapWriter};
use smoltcp::time::Instant;

use super::faults::{Faulty, WireFaults, faulty};
use super::wire::WireEnd;
use indy::prom_env::{self, Netaddr};

/// The guest's address when the environment names none: a private /24 that only exists inside
/// the rig process (the wire is in memory; nothing is routed anywhere).
pub const DEFAULT_GUEST_NETADDR: &str = "172.31.77.2/24";
/// The host stack's Ethernet address (locally administered, unicast).
pub const HOST_MAC: [u8; 6] = [0x02, 0x00, 0xAC, 0x1F, 0x4D, 0x01];
/// Ethernet frame size the host stack sends at most (1500-byte IP MTU).
pub const HOST_MTU: usize = 1514;

/// Addresses on the virtual wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostNet {
    pub guest_ip: Ipv4Addr,
    pub host_ip: Ipv4Addr,
    pub prefix: u8,
    pub host_mac: [u8; 6],
}

impl HostNet {
    /// The host takes the first address of the guest's subnet (the second if the guest has the
    /// first), so any `netaddr` the guest is given works without further configuration.
    pub fn for_guest(guest: Netaddr) -> HostNet {
        let first = u32::from(guest.network()) + 1;
        let host = if u32::from(guest.addr) == first {
            first + 1
        } else {
            first
        };
        HostNet {
            guest_ip: guest.addr,
            host_ip: Ipv4Addr::from(host),
            prefix: guest.prefix,
            host_mac: HOST_MAC,
        }
    }

    /// From the guest's `netaddr`, read as the module reads it.
    pub fn from_netaddr(netaddr: &str) -> Result<HostNet, String> {
        prom_env::parse_netaddr(netaddr)
            .map(HostNet::for_guest)
            .map_err(|e| format!("netaddr {netaddr:?}: {e}"))
    }
}

impl Default for HostNet {
    fn default() -> HostNet {
        HostNet::from_netaddr(DEFAULT_GUEST_NETADDR).expect("the default netaddr is valid")
    }
}

/// The host end as the forwarder's stack sees it: the wire's faults (`--wire-faults`; none by
/// default) between the stack and the capture, the capture (which does nothing without a file)
/// right at the wire. So the capture holds what the guest sent, before the wire damaged it,
/// and what the guest was handed, after: the module's view of the wire.
pub type HostDevice = Faulty<PcapWriter<WireDevice, PcapFile>>;

/// The host end of `wire`, captured to `capture`, with `faults`.
pub fn host_device(wire: WireEnd, capture: PcapFile, faults: &WireFaults) -> HostDevice {
    faulty(
        PcapWriter::new(WireDevice { wire }, capture, PcapMode::Both),
        faults,
    )
}

/// Where the capture goes: a pcap file, or nowhere.
pub struct PcapFile(Option<BufWriter<File>>);

impl PcapFile {
    /// No capture.
    pub fn none() -> PcapFile {
        PcapFile(None)
    }

    /// Creates (truncates) `path` for the capture.
    pub fn create(path: &Path) -> std::io::Result<PcapFile> {
        Ok(PcapFile(Some(BufWriter::new(File::create(path)?))))
    }
}

impl PcapSink for PcapFile {
    fn write(&mut self, data: &[u8]) {
        if let Some(w) = &mut self.0
            && let Err(e) = w.write_all(data)
        {
            eprintln!("iris: pcap capture stopped: {e}");
            self.0 = None;
        }
    }

    /// Called after each frame, so the file is complete up to the last frame even when the rig
    /// is killed.
    fn flush(&mut self) {
        if let Some(w) = &mut self.0 {
            let _ = Write::flush(w);
        }
    }
}

/// The wire's host end as a smoltcp device: frames in from the guest, frames out to it.
pub struct WireDevice {
    pub wire: WireEnd,
}

pub struct WireRx(Vec<u8>);

pub struct WireTx<'a>(&'a WireEnd);

impl phy::RxToken for WireRx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for WireTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        // A full queue drops the frame (counted by the wire), like a congested switch port.
        self.0.send(frame);
        r
    }
}

impl phy::Device for WireDevice {
    type RxToken<'a> = WireRx;
    type TxToken<'a> = WireTx<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(WireRx, WireTx<'_>)> {
        let frame = self.wire.recv()?;
        Some((WireRx(frame), WireTx(&self.wire)))
    }

    fn transmit(&mut self, _now: Instant) -> Option<WireTx<'_>> {
        self.wire.can_send().then_some(WireTx(&self.wire))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = HOST_MTU;
        caps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::wire::wire;
    use smoltcp::phy::{Device, RxToken, TxToken};

    /// Frames in a pcap file smoltcp wrote (native byte order, 24-byte header, 16-byte records).
    fn captured(path: &Path) -> Vec<Vec<u8>> {
        let bytes = std::fs::read(path).unwrap();
        let mut at = 24;
        let mut frames = Vec::new();
        while at + 16 <= bytes.len() {
            let len = u32::from_ne_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
            frames.push(bytes[at + 16..at + 16 + len].to_vec());
            at += 16 + len;
        }
        frames
    }

    #[test]
    fn the_capture_sees_what_the_guest_sent_and_what_it_was_handed() {
        let path = std::env::temp_dir().join(format!("iris-host-{}.pcap", std::process::id()));
        let (guest, host) = wire(16);
        let faults = WireFaults::parse("loss=100").unwrap();
        let mut dev = host_device(host, PcapFile::create(&path).unwrap(), &faults);
        guest.send(vec![1; 60]);
        assert!(
            dev.receive(Instant::ZERO).is_none(),
            "lost on its way to the host"
        );
        if let Some(tx) = dev.transmit(Instant::ZERO) {
            tx.consume(60, |b| b.fill(2));
        }
        assert_eq!(guest.recv(), None, "lost on its way to the guest");
        drop(dev);
        assert_eq!(captured(&path), [vec![1; 60]], "only the guest's frame");

        let (guest, host) = wire(16);
        let faults = WireFaults::parse("corrupt=100").unwrap();
        let mut dev = host_device(host, PcapFile::create(&path).unwrap(), &faults);
        guest.send(vec![1; 60]);
        let (rx, _) = dev.receive(Instant::ZERO).unwrap();
        assert_ne!(
            rx.consume(<[u8]>::to_vec),
            vec![1; 60],
            "damaged for the host"
        );
        dev.transmit(Instant::ZERO)
            .unwrap()
            .consume(60, |b| b.fill(2));
        let sent = guest.recv().unwrap();
        assert_ne!(sent, vec![2; 60], "damaged for the guest");
        drop(dev);
        assert_eq!(
            captured(&path),
            [vec![1; 60], sent],
            "as sent, as handed over"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn host_address_follows_the_guest() {
        let n = HostNet::default();
        assert_eq!(n.guest_ip, Ipv4Addr::new(172, 31, 77, 2));
        assert_eq!(n.host_ip, Ipv4Addr::new(172, 31, 77, 1));
        assert_eq!(n.prefix, 24);
        let n = HostNet::from_netaddr("10.0.7.1").unwrap();
        assert_eq!(n.host_ip, Ipv4Addr::new(10, 0, 7, 2));
        let n = HostNet::from_netaddr("192.168.3.77/28").unwrap();
        assert_eq!(n.host_ip, Ipv4Addr::new(192, 168, 3, 65));
        assert!(HostNet::from_netaddr("172.31.77.0/24").is_err());
        assert!(HostNet::from_netaddr("172.31.77.255/24").is_err());
        assert!(HostNet::from_netaddr("172.31.77.2/31").is_err());
        assert!(HostNet::from_netaddr("x").is_err());
    }
}
