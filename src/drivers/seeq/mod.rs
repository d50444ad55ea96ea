//! The Seeq 8003/80C03 Ethernet controller behind the HPC3's Ethernet DMA channel, as a smoltcp
//! `phy::Device`.
//!
//! Start it with a bus and a station address:
//! ```ignore
//! let (mac, _) = env::mac_from_env(kernel.env("eaddr").as_deref());
//! let config = Config::default();
//! let bus = Kseg1Bus::new(kernel, Seeq::<Kseg1Bus<Kernel>>::dma_len(&config))?;
//! let mut nic = Seeq::new(bus, mac, config)?;
//! // iface.poll(now, &mut nic, &mut sockets);
//! ```
//! The driver is polled: `receive`/`transmit` (called by smoltcp) reclaim sent frames and restart
//! a stopped RX channel; [`Seeq::service`] does the same without moving frames.

mod driver;
mod layout;
mod phy;

pub use driver::{Chip, Config, Counters, Error, MAX_FRAME, MAX_RING, MIN_FRAME, Seeq, probe};
pub use layout::{BUF_STRIDE, DMA_ALIGN, RX_BUF_SIZE};
pub use phy::{RxToken, TxToken};
