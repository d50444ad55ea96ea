//! Puts the network into a rig: the HPC3/Seeq model on the device bus, one end of a virtual
//! wire in it, and (when forwards are asked for) the forwarder on its own thread at the other.

use std::cell::Cell;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;

use crate::config::Env;
use crate::devices::Bus;
use crate::devices::hpc3_enet::{Hpc3Enet, SeeqChip, StormHandle};

use super::faults::WireFaults;
use super::forward::{Forward, ForwardStats, Forwarder, ForwarderThread};
use super::host::{DEFAULT_GUEST_NETADDR, HostNet, PcapFile};
use super::wire::{DEFAULT_CAPACITY, WireEnd, WireStats, wire};

/// The rig's network as the rig and its tests see it.
pub struct RigNet {
    host_net: HostNet,
    host_end: WireEnd,
    forwarder: Option<ForwarderThread>,
    storm: StormHandle,
    enet_irqs: Rc<Cell<u64>>,
}

impl RigNet {
    /// Adds the NIC to `bus` and starts forwarding `forwards` (none: the host end stays idle).
    /// The host stack's addresses follow the guest's `netaddr` (default
    /// [`DEFAULT_GUEST_NETADDR`]).
    /// With `pcap`, the forwarder writes every frame on the wire to that file.
    /// With `faults`, the host end of the wire loses, corrupts, reorders, duplicates or delays
    /// frames as they ask.
    pub fn attach(
        bus: &mut Bus,
        env: &Env,
        forwards: &[Forward],
        pcap: Option<&Path>,
        faults: Option<&WireFaults>,
    ) -> Result<RigNet, String> {
        let netaddr = env
            .get("netaddr")
            .filter(|v| !v.trim().is_empty())
            .unwrap_or(DEFAULT_GUEST_NETADDR);
        let host_net = HostNet::from_netaddr(netaddr)
            .map_err(|e| format!("netaddr: {e} (the rig needs a static netaddr)"))?;
        let (guest_end, host_end) = wire(DEFAULT_CAPACITY);
        let nic = Hpc3Enet::new(guest_end, SeeqChip::C80C03);
        let storm = nic.storm_handle();
        let enet_irqs = nic.irq_counter();
        bus.add(Box::new(nic))?;
        let capture = match pcap {
            // The capture sits in the forwarder's stack, so without one there is nothing to see.
            Some(_) if forwards.is_empty() => {
                return Err("--pcap needs at least one forward".into());
            }
            Some(p) => PcapFile::create(p).map_err(|e| format!("pcap {}: {e}", p.display()))?,
            None => PcapFile::none(),
        };
        if faults.is_some() && forwards.is_empty() {
            // The faults sit in the forwarder's stack too.
            return Err("--wire-faults needs at least one forward".into());
        }
        let forwarder = if forwards.is_empty() {
            None
        } else {
            let faults = faults.copied().unwrap_or_default();
            let f = Forwarder::with_faults(host_end.clone(), host_net, forwards, capture, &faults)
                .map_err(|e| e.to_string())?;
            Some(ForwarderThread::spawn(f))
        };
        Ok(RigNet {
            host_net,
            host_end,
            forwarder,
            storm,
            enet_irqs,
        })
    }

    /// Where the forwards listen (127.0.0.1:port), in the order they were given.
    pub fn forward_addrs(&self) -> Vec<SocketAddr> {
        self.forwarder
            .as_ref()
            .map(|f| f.local_addrs().to_vec())
            .unwrap_or_default()
    }

    pub fn host_net(&self) -> HostNet {
        self.host_net
    }

    pub fn forward_stats(&self) -> Option<ForwardStats> {
        self.forwarder.as_ref().map(ForwarderThread::stats)
    }

    pub fn wire_stats(&self) -> WireStats {
        self.host_end.stats()
    }

    /// The host end of the wire, for tests that exchange raw frames (only when no forwarder
    /// runs: it would take the frames first).
    pub fn host_end(&self) -> Option<&WireEnd> {
        self.forwarder.is_none().then_some(&self.host_end)
    }

    /// The count of interrupts the NIC model has raised (for the kernel's `irq_list`).
    pub fn enet_irq_counter(&self) -> Rc<Cell<u64>> {
        self.enet_irqs.clone()
    }

    /// Injects an RX overflow storm at the NIC's next tick.
    pub fn storm(&self) -> &StormHandle {
        &self.storm
    }
}
