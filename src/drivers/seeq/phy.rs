//! The driver as a smoltcp `phy::Device`. The RX token copies its frame out and returns the
//! descriptor before the stack runs, because smoltcp transmits replies from inside the RX
//! callback (the copy is the driver's, so it is handed out writable too: `WritableRx`); the TX
//! token builds the frame directly in the DMA buffer. The Seeq computes no checksums;
//! `net::tcp_wire` wraps the device to fill in the TCP one and verify it on received frames.

use super::driver::{MAX_FRAME, RingInfo, RxState, Seeq, TxState};
use crate::hil::hpc3_bus::Hpc3Bus;
use crate::hil::nic::WritableRx;
use core::cell::RefCell;
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

/// One received frame, still in its RX buffer.
pub struct RxToken<'a, B: Hpc3Bus> {
    bus: &'a RefCell<B>,
    info: &'a RingInfo,
    rx: &'a mut RxState,
    len: usize,
}

/// Permission to queue one frame.
pub struct TxToken<'a, B: Hpc3Bus> {
    bus: &'a RefCell<B>,
    info: &'a RingInfo,
    tx: &'a mut TxState,
}

impl<B: Hpc3Bus> phy::RxToken for RxToken<'_, B> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        self.consume_mut(|frame| f(frame))
    }
}

impl<B: Hpc3Bus> WritableRx for RxToken<'_, B> {
    fn consume_mut<R, F: FnOnce(&mut [u8]) -> R>(self, f: F) -> R {
        let frame = {
            let mut bus = self.bus.borrow_mut();
            self.rx.take(&mut *bus, self.info, self.len)
        };
        f(frame)
    }
}

impl<B: Hpc3Bus> phy::TxToken for TxToken<'_, B> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut bus = self.bus.borrow_mut();
        self.tx.send(&mut *bus, self.info, len, f)
    }
}

impl<B: Hpc3Bus> phy::Device for Seeq<B> {
    type RxToken<'a>
        = RxToken<'a, B>
    where
        Self: 'a;
    type TxToken<'a>
        = TxToken<'a, B>
    where
        Self: 'a;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken<'_, B>, TxToken<'_, B>)> {
        let bus = self.bus.get_mut();
        self.tx.reclaim(bus, &self.info);
        let len = self.rx.next_frame(bus, &self.info)?;
        Some((
            RxToken {
                bus: &self.bus,
                info: &self.info,
                rx: &mut self.rx,
                len,
            },
            TxToken {
                bus: &self.bus,
                info: &self.info,
                tx: &mut self.tx,
            },
        ))
    }

    /// No reclaim unless the ring is full (`has_slot`): smoltcp asks for a token for every
    /// frame it sends, and `receive`, called at least once every poll, reclaims and restarts
    /// a stopped channel anyway.
    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_, B>> {
        let bus = self.bus.get_mut();
        if !self.tx.has_slot(bus, &self.info) {
            return None;
        }
        Some(TxToken {
            bus: &self.bus,
            info: &self.info,
            tx: &mut self.tx,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MAX_FRAME;
        caps.max_burst_size = Some(self.info.layout.tx_n);
        caps
    }
}
