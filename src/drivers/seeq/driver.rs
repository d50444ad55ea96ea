//! The Seeq 8003/80C03 behind the HPC3 Ethernet DMA channel: probe, init, the RX and TX rings
//! (`docs/hardware.md`, "Descriptors" and "Seeq"; the sequences are in `docs/network.md`).
//! Everything goes through [`Hpc3Bus`], so this file has no hardware access.

use super::layout::{BUF_STRIDE, Layout, RX_BUF_SIZE, TX_LEAD, after, before};
use crate::hil::hpc3_bus::Hpc3Bus;
use crate::hil::nic::RingPositions;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;
use indy::regs::enet_desc::*;
use indy::regs::hpc3::*;
use indy::regs::seeq::{
    self, CONTROL_80C03, CONTROL_XCNT, RXCMD_IRQS, RXCMD_MATCH_MULTICAST, RXSTAT_GOOD, TXCMD_80C03,
    TXCMD_8003,
};

/// Smallest frame on the wire without FCS; the 8003 does not pad, so the driver does.
pub const MIN_FRAME: usize = 60;
/// Largest frame the driver sends (Ethernet header + 1500, no FCS).
pub const MAX_FRAME: usize = 1514;
// It fits its TX buffer after the lead.
const _: () = assert!(TX_LEAD + MAX_FRAME <= BUF_STRIDE);
/// Shortest RX frame worth handing up (an Ethernet header).
const MIN_RX_FRAME: usize = 14;
/// Longest RX frame the buffer layout can describe (2 pad bytes + frame + status byte).
const MAX_RX_FRAME: usize = RX_BUF_SIZE - 3;
/// Largest ring the driver builds.
pub const MAX_RING: usize = 256;

/// Which chip the probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chip {
    Seeq8003,
    /// Register 0 reads 0 after reset: the 80C03 (what MAME models the Indy with).
    Seeq80C03,
}

/// Ring sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// RX descriptors (2..=[`MAX_RING`]).
    pub rx_ring: usize,
    /// TX descriptors (2..=[`MAX_RING`]).
    pub tx_ring: usize,
}

impl Default for Config {
    /// 16 RX buffers hold almost three full 8 KiB receive windows arriving between two polls;
    /// 16 TX slots keep a whole 16 KiB send window in flight (with 8, big responses cost 2-4 %
    /// more instructions per byte in smaller polls). Each slot is 1,680 bytes of DMA area out
    /// of the module's heap: these are the sizes Linux's `sgiseeq` uses.
    fn default() -> Self {
        Config {
            rx_ring: 16,
            tx_ring: 16,
        }
    }
}

/// Why the driver could not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A ring size outside 2..=[`MAX_RING`].
    BadRingSize,
    /// The bus's DMA area is shorter than [`Seeq::dma_len`] asks for.
    DmaAreaTooSmall,
    /// The DMA area does not start on a 16-byte boundary (descriptors need it).
    DmaAreaMisaligned,
}

/// What the driver has seen since init (for `status`, `dev.list`, `irix7://net`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames handed up to the stack.
    pub rx_frames: u64,
    /// Bytes of the frames handed up.
    pub rx_bytes: u64,
    /// Frames whose status byte lacked the good-frame bit.
    pub rx_errors: u64,
    /// Frames with a length the buffer layout cannot hold.
    pub rx_bad_length: u64,
    /// Our own frames, which the 8003 receives back.
    pub rx_own: u64,
    /// Times the RX channel was found stopped with RBO set (the HPC ran out of buffers).
    pub rx_overflows: u64,
    /// Times the RX channel was restarted (end of ring or overflow).
    pub rx_restarts: u64,
    /// Frames the HPC reported sent (reclaimed).
    pub tx_frames: u64,
    /// Bytes queued for sending, padding included.
    pub tx_bytes: u64,
    /// Frames dropped because every TX slot was in flight.
    pub tx_ring_full: u64,
    /// Frames dropped because the stack asked for more than [`MAX_FRAME`] bytes.
    pub tx_oversize: u64,
    /// Times the TX channel was (re)started.
    pub tx_kicks: u64,
}

/// Static facts every ring operation needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct RingInfo {
    pub mac: [u8; 6],
    pub chip: Chip,
    pub layout: Layout,
    pub dma_phys: u32,
}

impl RingInfo {
    fn phys(&self, offset: usize) -> u32 {
        self.dma_phys.wrapping_add(offset as u32)
    }
}

/// The RX ring: `next` is the descriptor the CPU looks at next, `eor` the one carrying EOR.
pub(super) struct RxState {
    next: usize,
    eor: usize,
    /// Frames are copied out here so the descriptor can go back to the HPC before the stack
    /// (which may transmit a reply from inside its receive callback) runs.
    scratch: Vec<u8>,
    pub counters: Counters,
}

/// The TX ring: `next` is the next free slot, `oldest` the oldest frame in flight.
pub(super) struct TxState {
    next: usize,
    oldest: usize,
    in_flight: usize,
    /// Where the stack writes a frame that will be dropped (no slot).
    scratch: Vec<u8>,
    pub counters: Counters,
}

/// The Seeq Ethernet driver. Implements smoltcp's `phy::Device` (see `phy.rs`).
pub struct Seeq<B: Hpc3Bus> {
    pub(super) bus: RefCell<B>,
    pub(super) info: RingInfo,
    pub(super) rx: RxState,
    pub(super) tx: TxState,
}

fn seeq_write<B: Hpc3Bus>(bus: &mut B, reg: u32, value: u8) {
    bus.write32(seeq::reg(reg), u32::from(value));
}

/// Resets the Ethernet channel: CRESET|CLRIRQ, at least 20 µs, then release.
fn reset_channel<B: Hpc3Bus>(bus: &mut B) {
    bus.write32(ERESET, RESET_CRESET | RESET_CLRIRQ);
    bus.delay_us(20);
    bus.write32(ERESET, 0);
}

/// Programs the HPC3 configuration, resets the channel and identifies the chip.
pub fn probe<B: Hpc3Bus>(bus: &mut B) -> Chip {
    bus.write32(EPIO_CFG, PIO_CFG_VALUE);
    bus.write32(EDMA_CFG, DMA_CFG_VALUE);
    reset_channel(bus);
    if bus.read32(seeq::reg(seeq::STATION)) & 0xFF == 0 {
        Chip::Seeq80C03
    } else {
        Chip::Seeq8003
    }
}

impl<B: Hpc3Bus> Seeq<B> {
    /// Bytes of DMA area the driver needs for `config` (give the bus at least this much).
    pub fn dma_len(config: &Config) -> usize {
        Layout {
            rx_n: config.rx_ring,
            tx_n: config.tx_ring,
        }
        .total()
    }

    /// Probes and initialises the chip, builds both rings and starts receiving.
    pub fn new(mut bus: B, mac: [u8; 6], config: Config) -> Result<Self, Error> {
        let ring_ok = |n: usize| (2..=MAX_RING).contains(&n);
        if !ring_ok(config.rx_ring) || !ring_ok(config.tx_ring) {
            return Err(Error::BadRingSize);
        }
        let layout = Layout {
            rx_n: config.rx_ring,
            tx_n: config.tx_ring,
        };
        if bus.dma_len() < layout.total() {
            return Err(Error::DmaAreaTooSmall);
        }
        if !bus.dma_phys().is_multiple_of(16) {
            return Err(Error::DmaAreaMisaligned);
        }
        let chip = probe(&mut bus);
        let info = RingInfo {
            mac,
            chip,
            layout,
            dma_phys: bus.dma_phys(),
        };
        init(&mut bus, &info);
        Ok(Seeq {
            bus: RefCell::new(bus),
            info,
            rx: RxState {
                next: 0,
                eor: layout.rx_n - 1,
                scratch: vec![0; MAX_RX_FRAME],
                counters: Counters::default(),
            },
            tx: TxState {
                next: 0,
                oldest: 0,
                in_flight: 0,
                scratch: vec![0; MAX_FRAME],
                counters: Counters::default(),
            },
        })
    }

    pub fn mac(&self) -> [u8; 6] {
        self.info.mac
    }

    pub fn chip(&self) -> Chip {
        self.info.chip
    }

    /// RX and TX counters merged.
    pub fn counters(&self) -> Counters {
        let (r, t) = (&self.rx.counters, &self.tx.counters);
        Counters {
            tx_frames: t.tx_frames,
            tx_bytes: t.tx_bytes,
            tx_ring_full: t.tx_ring_full,
            tx_oversize: t.tx_oversize,
            tx_kicks: t.tx_kicks,
            ..*r
        }
    }

    /// Frames queued for transmission and not yet reclaimed.
    pub fn tx_in_flight(&self) -> usize {
        self.tx.in_flight
    }

    /// The ring indices, cheap enough to read on every poll.
    pub fn ring_positions(&self) -> RingPositions {
        let l = &self.info.layout;
        RingPositions {
            rx_next: self.rx.next as u32,
            rx_size: l.rx_n as u32,
            tx_next: self.tx.next as u32,
            tx_oldest: self.tx.oldest as u32,
            tx_in_flight: self.tx.in_flight as u32,
            tx_size: l.tx_n as u32,
            rx_ring_phys: self.info.phys(l.rx_desc(0)),
            tx_ring_phys: self.info.phys(l.tx_desc(0)),
        }
    }

    /// Housekeeping without moving frames: reclaims sent TX slots, restarts a stalled TX
    /// channel, and restarts the RX channel when it stopped with nothing left to read.
    pub fn service(&mut self) {
        let bus = self.bus.get_mut();
        self.tx.reclaim(bus, &self.info);
        self.rx.restart_if_idle(bus, &self.info);
    }

    /// The bus, for tests and diagnostics (`mmio.read` goes through the same registers).
    pub fn bus_mut(&mut self) -> &mut B {
        self.bus.get_mut()
    }

    /// Stops both DMA channels and resets the chip (before the module unloads).
    pub fn shutdown(&mut self) {
        let bus = self.bus.get_mut();
        bus.write32(ERX_CTRL, 0);
        bus.write32(ETX_CTRL, 0);
        reset_channel(bus);
    }
}

impl<B: Hpc3Bus> Drop for Seeq<B> {
    /// The HPC must not keep writing into buffers that are about to be freed.
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The Linux init sequence (`docs/network.md`, "Init").
fn init<B: Hpc3Bus>(bus: &mut B, info: &RingInfo) {
    let l = &info.layout;
    bus.write32(ERX_CTRL, 0);
    bus.write32(ETX_CTRL, 0);
    reset_channel(bus);

    seeq_write(bus, seeq::TXCMD, 0);
    for (n, byte) in info.mac.iter().enumerate() {
        seeq_write(bus, seeq::STATION + n as u32, *byte);
    }

    for i in 0..l.tx_n {
        let d = l.tx_desc(i);
        bus.dma_write32(d, info.phys(l.tx_frame(i)));
        bus.dma_write32(d + 4, DESC_EOX | DESC_ETXD);
        bus.dma_write32(d + 8, info.phys(l.tx_desc((i + 1) % l.tx_n)));
        bus.dma_write32(d + 12, 0);
    }
    for i in 0..l.rx_n {
        let d = l.rx_desc(i);
        let eor = if i + 1 == l.rx_n { DESC_EOX } else { 0 };
        bus.dma_write32(d, info.phys(l.rx_buf(i)));
        bus.dma_write32(d + 4, rx_cntinfo() | eor);
        bus.dma_write32(d + 8, info.phys(l.rx_desc((i + 1) % l.rx_n)));
        bus.dma_write32(d + 12, 0);
        // The CPU never writes RX buffers; drop any stale cached copy once.
        bus.dma_inval(l.rx_buf(i), RX_BUF_SIZE);
    }

    match info.chip {
        Chip::Seeq8003 => seeq_write(bus, seeq::TXCMD, TXCMD_8003),
        Chip::Seeq80C03 => {
            seeq_write(bus, seeq::TXCMD, TXCMD_80C03);
            seeq_write(bus, seeq::CONTROL, CONTROL_80C03);
            seeq_write(bus, seeq::FRAME_GAP, 0);
        }
    }
    bus.write32(ERX_NDBP, info.phys(l.rx_desc(0)));
    bus.write32(ETX_NDBP, info.phys(l.tx_desc(0)));
    seeq_write(bus, seeq::RXCMD, RXCMD_MATCH_MULTICAST | RXCMD_IRQS);
    bus.write32(ERX_CTRL, CTRL_ACTIVE);
}

/// cntinfo of an empty RX descriptor handed to the HPC (EOR added separately).
fn rx_cntinfo() -> u32 {
    DESC_OWN | DESC_EOXP | DESC_XIE | RX_BUF_SIZE as u32
}

impl RxState {
    /// Looks at `next`: returns the length of the next good frame, recycling bad and own frames
    /// on the way. Returns `None` when the ring is empty, after restarting a stopped channel.
    pub(super) fn next_frame<B: Hpc3Bus>(&mut self, bus: &mut B, info: &RingInfo) -> Option<usize> {
        // Bounded: the HPC could refill descriptors as fast as this loop recycles them.
        for _ in 0..info.layout.rx_n {
            let d = info.layout.rx_desc(self.next);
            let cnt = bus.dma_read32(d + 4);
            if cnt & DESC_OWN != 0 {
                self.restart_if_idle(bus, info);
                return None;
            }
            match self.check(bus, info, cnt) {
                Some(len) => return Some(len),
                None => self.recycle(bus, info),
            }
        }
        None
    }

    /// Validates the filled buffer at `next`; counts why a frame is refused.
    fn check<B: Hpc3Bus>(&mut self, bus: &mut B, info: &RingInfo, cnt: u32) -> Option<usize> {
        let left = (cnt & DESC_BCNT) as usize;
        let len = match RX_BUF_SIZE.checked_sub(left + 3) {
            Some(len) if (MIN_RX_FRAME..=MAX_RX_FRAME).contains(&len) => len,
            _ => {
                self.counters.rx_bad_length += 1;
                return None;
            }
        };
        let buf = info.layout.rx_buf(self.next);
        bus.dma_inval(buf, len + 3);
        let bytes = bus.dma_bytes(buf, len + 3)?;
        let status = bytes.get(2 + len).copied().unwrap_or(0);
        if status & RXSTAT_GOOD == 0 {
            self.counters.rx_errors += 1;
            return None;
        }
        if bytes.get(8..14) == Some(&info.mac[..]) {
            self.counters.rx_own += 1;
            return None;
        }
        Some(len)
    }

    /// Copies the frame at `next` (of `len` bytes, already checked) out, gives the descriptor
    /// back and returns the copy.
    pub(super) fn take<B: Hpc3Bus>(
        &mut self,
        bus: &mut B,
        info: &RingInfo,
        len: usize,
    ) -> &mut [u8] {
        let buf = info.layout.rx_buf(self.next);
        let len = len.min(self.scratch.len());
        let copied = match (bus.dma_bytes(buf + 2, len), self.scratch.get_mut(..len)) {
            (Some(src), Some(dst)) => {
                dst.copy_from_slice(src);
                len
            }
            _ => 0,
        };
        self.counters.rx_frames += 1;
        self.counters.rx_bytes += copied as u64;
        self.recycle(bus, info);
        self.scratch.get_mut(..copied).unwrap_or(&mut [])
    }

    /// Hands descriptor `next` back to the HPC as the new ring end, takes EOR off the old end,
    /// and advances.
    fn recycle<B: Hpc3Bus>(&mut self, bus: &mut B, info: &RingInfo) {
        let l = &info.layout;
        bus.dma_write32(l.rx_desc(self.next) + 4, rx_cntinfo() | DESC_EOX);
        if self.eor != self.next {
            // Only the CPU's half: the HPC may be writing the other half of this descriptor.
            let upper = ((rx_cntinfo() & !DESC_EOX) >> 16) as u16;
            bus.dma_write16(l.rx_desc(self.eor) + 4, upper);
        }
        self.eor = self.next;
        self.next = after(self.next, l.rx_n);
    }

    /// Restarts the RX channel at `next` if it stopped (end of ring or overflow) and `next` is
    /// empty — frames still waiting must be read first or the HPC would overwrite them.
    fn restart_if_idle<B: Hpc3Bus>(&mut self, bus: &mut B, info: &RingInfo) {
        let ctrl = bus.read32(ERX_CTRL);
        if ctrl & CTRL_ACTIVE != 0 {
            return;
        }
        let d = info.layout.rx_desc(self.next);
        if bus.dma_read32(d + 4) & DESC_OWN == 0 {
            return;
        }
        if ctrl & RXCTRL_RBO != 0 {
            self.counters.rx_overflows += 1;
        }
        bus.write32(ERX_NDBP, info.phys(d));
        seeq_write(bus, seeq::RXCMD, RXCMD_MATCH_MULTICAST | RXCMD_IRQS);
        bus.write32(ERX_CTRL, CTRL_ACTIVE);
        self.counters.rx_restarts += 1;
    }
}

impl TxState {
    /// Whether a slot is free (after reclaiming what the HPC has sent).
    pub(super) fn has_slot<B: Hpc3Bus>(&mut self, bus: &mut B, info: &RingInfo) -> bool {
        if self.in_flight == info.layout.tx_n {
            self.reclaim(bus, info);
        }
        self.in_flight < info.layout.tx_n
    }

    /// Lets `f` build a `len`-byte frame in the next slot and queues it; drops it (counted)
    /// when there is no slot or `len` is over [`MAX_FRAME`].
    pub(super) fn send<B: Hpc3Bus, R>(
        &mut self,
        bus: &mut B,
        info: &RingInfo,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        if len > MAX_FRAME {
            self.counters.tx_oversize += 1;
            // The stack never asks for more than the MTU; honour the call without sending.
            return f(&mut vec![0; len]);
        }
        if !self.has_slot(bus, info) {
            self.counters.tx_ring_full += 1;
            return f(&mut self.scratch[..len]);
        }
        let l = &info.layout;
        let i = self.next;
        let buf = l.tx_frame(i);
        let wire_len = len.max(MIN_FRAME);
        let Some(bytes) = bus.dma_bytes(buf, wire_len) else {
            self.counters.tx_ring_full += 1;
            return f(&mut self.scratch[..len]);
        };
        let (frame, pad) = bytes.split_at_mut(len);
        let r = f(frame);
        // Only a short frame has padding (a full one skips the call of memset).
        if !pad.is_empty() {
            pad.fill(0);
        }
        bus.dma_wback(buf, wire_len);

        let d = l.tx_desc(i);
        bus.dma_write32(
            d + 4,
            wire_len as u32 | DESC_XIU | DESC_EOXP | DESC_XIE | DESC_EOX,
        );
        if self.in_flight > 0 {
            // Chain the previous frame to this one, only now that this one is complete.
            let prev = before(i, l.tx_n);
            let upper = ((DESC_XIU | DESC_EOXP | DESC_XIE) >> 16) as u16;
            bus.dma_write16(l.tx_desc(prev) + 4, upper);
        }
        self.next = after(i, l.tx_n);
        self.in_flight += 1;
        self.counters.tx_bytes += wire_len as u64;
        // The HPC may have stopped at the previous EOX before it saw it cleared.
        if bus.read32(ETX_CTRL) & CTRL_ACTIVE == 0 {
            self.kick(bus, info);
        }
        r
    }

    /// Reclaims sent slots (XIU+ETXD) and restarts the channel if it is idle with frames left.
    pub(super) fn reclaim<B: Hpc3Bus>(&mut self, bus: &mut B, info: &RingInfo) {
        let l = &info.layout;
        let mut done = 0;
        while self.in_flight > 0 {
            let d = l.tx_desc(self.oldest);
            let cnt = bus.dma_read32(d + 4);
            if cnt & (DESC_XIU | DESC_ETXD) != (DESC_XIU | DESC_ETXD) {
                break;
            }
            let upper = (((cnt & !(DESC_XIU | DESC_XIE)) | DESC_EOX) >> 16) as u16;
            bus.dma_write16(d + 4, upper);
            self.oldest = after(self.oldest, l.tx_n);
            self.in_flight -= 1;
            done += 1;
        }
        self.counters.tx_frames += done;
        if done > 0 && info.chip == Chip::Seeq80C03 {
            // Clear the collision counters (the TX command left bank 2 selected).
            seeq_write(bus, seeq::CONTROL, CONTROL_80C03 & !CONTROL_XCNT);
            seeq_write(bus, seeq::CONTROL, CONTROL_80C03);
        }
        if self.in_flight > 0 && bus.read32(ETX_CTRL) & CTRL_ACTIVE == 0 {
            self.kick(bus, info);
        }
    }

    /// Points the idle channel at the oldest unsent frame and starts it.
    fn kick<B: Hpc3Bus>(&mut self, bus: &mut B, info: &RingInfo) {
        let l = &info.layout;
        let mut i = self.oldest;
        for _ in 0..self.in_flight {
            let cnt = bus.dma_read32(l.tx_desc(i) + 4);
            if cnt & DESC_XIU != 0 && cnt & DESC_ETXD == 0 {
                bus.write32(ETX_NDBP, info.phys(l.tx_desc(i)));
                bus.write32(ETX_CTRL, CTRL_ACTIVE);
                self.counters.tx_kicks += 1;
                return;
            }
            i = after(i, l.tx_n);
        }
    }
}
