//! The rig's network: the virtual wire between the emulated NIC (`devices::hpc3_enet`) and a
//! host-side smoltcp stack, and port forwarding from host 127.0.0.1 ports through that stack to
//! the guest. See `docs/network.md`.

pub mod faults;
pub mod forward;
pub mod host;
pub mod rig_net;
pub mod wire;

pub use faults::WireFaults;
pub use forward::{
    DEFAULT_FORWARDS, Forward, ForwardStats, Forwarder, ForwarderThread, parse_forward,
};
pub use host::{DEFAULT_GUEST_NETADDR, HostNet, PcapFile};
pub use rig_net::RigNet;
pub use wire::{WireEnd, WireStats, wire};
