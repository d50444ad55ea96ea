//! The smoltcp interface over a `phy::Device` (the Seeq driver on the Indy, a loopback in
//! tests), with a static address from `netaddr` or DHCPv4.

use crate::net::config::IpConfig;
use alloc::vec::Vec;
use smoltcp::iface::{
    Config, Interface, PollIngressSingleResult, PollResult, SocketHandle, SocketSet,
};
use smoltcp::phy::Device;
use smoltcp::socket::dhcpv4;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, Ipv4Cidr};

/// The interface, its device and every socket.
pub struct NetStack<D: Device> {
    pub device: D,
    pub iface: Interface,
    pub sockets: SocketSet<'static>,
    dhcp: Option<SocketHandle>,
}

/// smoltcp's clock from the kernel's milliseconds.
pub fn instant(now_ms: u64) -> Instant {
    Instant::from_millis(i64::try_from(now_ms).unwrap_or(i64::MAX))
}

impl<D: Device> NetStack<D> {
    /// Brings the interface up. `mac` must be unicast (the env parser guarantees it); `seed`
    /// varies TCP sequence numbers and ports between boots. The socket set has room for
    /// `sockets` sockets without growing; its entries are only those sockets held at once,
    /// because smoltcp walks every entry, empty or not, on each egress pass (one segment a
    /// connection).
    pub fn new(
        mut device: D,
        mac: [u8; 6],
        ip: IpConfig,
        now_ms: u64,
        seed: u64,
        sockets: usize,
    ) -> Self {
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut device, instant(now_ms));
        let mut sockets = SocketSet::new(Vec::with_capacity(sockets));
        let dhcp = match ip {
            IpConfig::Static { cidr, gateway } => {
                iface.update_ip_addrs(|addrs| {
                    let _ = addrs.push(IpCidr::Ipv4(cidr));
                });
                if let Some(gw) = gateway {
                    let _ = iface.routes_mut().add_default_ipv4_route(gw);
                }
                None
            }
            IpConfig::Dhcp => Some(sockets.add(dhcpv4::Socket::new())),
        };
        NetStack {
            device,
            iface,
            sockets,
            dhcp,
        }
    }

    /// What the sockets have to send, out (and the DHCP client's turn). True when socket
    /// state may have changed.
    pub fn egress(&mut self, now_ms: u64) -> bool {
        let now = instant(now_ms);
        let mut changed = false;
        while self
            .iface
            .poll_egress(now, &mut self.device, &mut self.sockets)
            == PollResult::SocketStateChanged
        {
            changed = true;
        }
        self.poll_dhcp();
        changed
    }

    /// Received frames into the sockets only, calling `between` after each (with the device,
    /// which may tell what came in): the server puts up its next listener there, so that every
    /// SYN of a burst finds one. Sending is left to [`NetStack::egress`]: each egress pass
    /// visits every socket, so a poll that answers what it received sends once, after the
    /// answer is in the socket.
    pub fn ingress(
        &mut self,
        now_ms: u64,
        mut between: impl FnMut(&mut SocketSet<'static>, &D),
    ) -> bool {
        let now = instant(now_ms);
        let mut changed = false;
        self.iface.poll_maintenance(now);
        loop {
            match self
                .iface
                .poll_ingress_single(now, &mut self.device, &mut self.sockets)
            {
                PollIngressSingleResult::None => break,
                PollIngressSingleResult::PacketProcessed => {}
                PollIngressSingleResult::SocketStateChanged => changed = true,
            }
            between(&mut self.sockets, &self.device);
        }
        changed
    }

    /// The configured IPv4 address and prefix.
    pub fn ipv4(&self) -> Option<Ipv4Cidr> {
        self.iface.ip_addrs().iter().find_map(|a| match a {
            IpCidr::Ipv4(c) => Some(*c),
            #[allow(unreachable_patterns)]
            _ => None,
        })
    }

    fn poll_dhcp(&mut self) {
        let Some(h) = self.dhcp else { return };
        let event = self.sockets.get_mut::<dhcpv4::Socket>(h).poll();
        match event {
            Some(dhcpv4::Event::Configured(cfg)) => {
                self.iface.update_ip_addrs(|addrs| {
                    addrs.clear();
                    let _ = addrs.push(IpCidr::Ipv4(cfg.address));
                });
                match cfg.router {
                    Some(r) => {
                        let _ = self.iface.routes_mut().add_default_ipv4_route(r);
                    }
                    None => {
                        self.iface.routes_mut().remove_default_ipv4_route();
                    }
                }
            }
            Some(dhcpv4::Event::Deconfigured) => {
                self.iface.update_ip_addrs(|addrs| addrs.clear());
                self.iface.routes_mut().remove_default_ipv4_route();
            }
            None => {}
        }
    }
}
