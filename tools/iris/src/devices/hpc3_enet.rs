//! The HPC3 Ethernet DMA channel and the Seeq 80C03 (or 8003) behind it (`docs/hardware.md`,
//! "HPC3 Ethernet DMA", "Descriptors", "Seeq").
//!
//! Registers answer at once; DMA happens in [`Hpc3Enet::tick`], which the scheduler calls
//! between guest calls: TX walks the descriptor chain from the next-descriptor pointer while
//! ACTIVE and puts each finished frame on the wire; RX stores frames from the wire into the
//! guest's buffers (2 pad bytes, the frame, a status byte), writes back only the halfword at
//! descriptor +6, and drops ACTIVE after an EOR descriptor. Frames wait on the wire while the
//! channel has no buffer (so the rig loses nothing by accident); [`Hpc3Enet::inject_rx_storm`]
//! delivers a burst with no CPU in between, so the ring overruns and RBO is set as on hardware.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use super::{DevCtx, Device, Region};
use crate::memory::GuestMemory;
use crate::net::wire::WireEnd;
use indy::map::{HPC3_ENET, SEEQ};
use indy::regs::enet_desc::*;
use indy::regs::hpc3::*;
use indy::regs::seeq::{
    self, RXCMD_MATCH_ALL, RXCMD_MATCH_MASK, RXCMD_MATCH_MULTICAST, RXCMD_MATCH_STATION_BCAST,
    RXSTAT_GOOD, RXSTAT_OVERFLOW, TXCMD_BANK1, TXCMD_BANK2, TXSTAT_SENT,
};

/// Shortest frame a receiver accepts (64 bytes with FCS); shorter ones are runts on the wire.
pub const MIN_WIRE_FRAME: usize = 60;
/// Longest frame the model sends (the wire's limit).
pub const MAX_WIRE_FRAME: usize = crate::net::wire::MAX_FRAME;
/// Descriptors one tick walks at most per channel: a chain without EOX cannot hang the rig.
const MAX_DESC_PER_TICK: usize = 1024;

/// Which Seeq the model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeeqChip {
    /// Register 0 reads 0 (collision counter): what the Indy has and MAME models.
    C80C03,
    /// Register 0 reads 0xFF.
    S8003,
}

/// What the model has done, for tests and `dev.list`-style reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnetStats {
    pub rx_frames: u64,
    /// Frames the station/broadcast/multicast filter refused.
    pub rx_filtered: u64,
    /// Frames lost because the RX channel was stopped or had no buffer (RBO).
    pub rx_overflow_drops: u64,
    /// Frames longer than the RX buffer (stored cut, status without the good bit).
    pub rx_too_long: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Frames shorter than 60 bytes: a real receiver discards them, so the model does too.
    pub tx_runts: u64,
    pub tx_too_long: u64,
    /// Frames the wire refused (its queue was full).
    pub tx_wire_drops: u64,
    /// DMA to or from an address outside RAM (the channel stops).
    pub dma_faults: u64,
}

/// Queues frames for [`Hpc3Enet::inject_rx_storm`] at the model's next tick, from any thread
/// (the model itself lives inside the rig's device bus).
#[derive(Clone, Default)]
pub struct StormHandle {
    pending: Arc<Mutex<Vec<Vec<u8>>>>,
    results: Arc<Mutex<Vec<StormResult>>>,
}

impl StormHandle {
    /// Delivers `frames` as one burst at the next tick.
    pub fn inject(&self, frames: Vec<Vec<u8>>) {
        if let Ok(mut p) = self.pending.lock() {
            p.extend(frames);
        }
    }

    /// Outcomes of the bursts delivered so far, oldest first.
    pub fn results(&self) -> Vec<StormResult> {
        self.results.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn take(&self) -> Vec<Vec<u8>> {
        self.pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }

    fn record(&self, r: StormResult) {
        if let Ok(mut v) = self.results.lock() {
            v.push(r);
        }
    }
}

/// Outcome of [`Hpc3Enet::inject_rx_storm`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StormResult {
    pub stored: usize,
    pub lost: usize,
}

#[derive(Debug, Default)]
struct Channel {
    cbp: u32,
    ndbp: u32,
    bc: u32,
    /// Control bits the CPU wrote that the model keeps (ENDIAN etc.), without ACTIVE/status.
    ctrl: u32,
    active: bool,
    /// Seeq status bits shown in control bits 5:0 (RX) / 3:0 (TX).
    status: u8,
}

/// The HPC3 Ethernet channel + Seeq, attached to one end of a virtual wire.
pub struct Hpc3Enet {
    chip: SeeqChip,
    wire: WireEnd,
    rx: Channel,
    tx: Channel,
    rbo: bool,
    irq: bool,
    reset_reg: u32,
    dma_cfg: u32,
    pio_cfg: u32,
    station: [u8; 6],
    bank1: [u8; 6],
    bank2: [u8; 6],
    rx_cmd: u8,
    tx_cmd: u8,
    /// A TX frame spanning several descriptors (until EOXP).
    tx_partial: Vec<u8>,
    stats: EnetStats,
    storm: StormHandle,
    /// Interrupts raised since power-on, shared with the rig's kernel (`irq_list`).
    irqs_raised: Rc<Cell<u64>>,
}

impl Hpc3Enet {
    pub fn new(wire: WireEnd, chip: SeeqChip) -> Hpc3Enet {
        Hpc3Enet {
            chip,
            wire,
            rx: Channel::default(),
            tx: Channel::default(),
            rbo: false,
            irq: false,
            reset_reg: 0,
            dma_cfg: 0,
            pio_cfg: 0,
            station: [0; 6],
            bank1: [0; 6],
            bank2: [0; 6],
            rx_cmd: 0,
            tx_cmd: 0,
            tx_partial: Vec::new(),
            stats: EnetStats::default(),
            storm: StormHandle::default(),
            irqs_raised: Rc::default(),
        }
    }

    /// The count of interrupts the model has raised (a completed descriptor with XIE).
    pub fn irq_counter(&self) -> Rc<Cell<u64>> {
        self.irqs_raised.clone()
    }

    fn raise_irq(&mut self) {
        self.irq = true;
        self.irqs_raised.set(self.irqs_raised.get() + 1);
    }

    /// A handle that injects overflow storms at the next tick.
    pub fn storm_handle(&self) -> StormHandle {
        self.storm.clone()
    }

    pub fn stats(&self) -> EnetStats {
        self.stats
    }

    /// The station address the guest programmed.
    pub fn station(&self) -> [u8; 6] {
        self.station
    }

    /// Whether the Ethernet interrupt is pending (a descriptor with XIE completed).
    pub fn irq_pending(&self) -> bool {
        self.irq
    }

    pub fn rx_active(&self) -> bool {
        self.rx.active
    }

    pub fn tx_active(&self) -> bool {
        self.tx.active
    }

    pub fn wire(&self) -> &WireEnd {
        &self.wire
    }

    /// Reads the register at `phys` (32-bit HPC3 registers; Seeq registers as words or as the
    /// byte at +3).
    pub fn read_reg(&mut self, phys: u32, size: usize) -> u32 {
        if SEEQ.holds(phys, 1) {
            return match seeq_reg(phys, size) {
                Some(n) => u32::from(self.seeq_read(n)),
                None => 0,
            };
        }
        if size != 4 {
            return 0;
        }
        match phys {
            ERX_CBP => self.rx.cbp,
            ERX_NDBP => self.rx.ndbp,
            ERX_BC => self.rx.bc,
            ERX_CTRL => {
                self.rx.ctrl
                    | (u32::from(self.rx.status) & RXCTRL_STATUS)
                    | if self.rx.active { CTRL_ACTIVE } else { 0 }
                    | if self.rbo { RXCTRL_RBO } else { 0 }
            }
            ERESET => self.reset_reg | if self.irq { RESET_CLRIRQ } else { 0 },
            EDMA_CFG => self.dma_cfg,
            EPIO_CFG => self.pio_cfg,
            ETX_CBP => self.tx.cbp,
            ETX_NDBP => self.tx.ndbp,
            ETX_BC => self.tx.bc,
            ETX_CTRL => {
                self.tx.ctrl
                    | (u32::from(self.tx.status) & TXCTRL_STATUS)
                    | if self.tx.active { CTRL_ACTIVE } else { 0 }
            }
            _ => 0,
        }
    }

    /// Writes the register at `phys`.
    pub fn write_reg(&mut self, phys: u32, size: usize, value: u32) {
        if SEEQ.holds(phys, 1) {
            if let Some(n) = seeq_reg(phys, size) {
                self.seeq_write(n, value as u8);
            }
            return;
        }
        if size != 4 {
            return;
        }
        match phys {
            ERX_NDBP => self.rx.ndbp = value,
            ERX_CTRL => {
                self.rx.ctrl = value & CTRL_ENDIAN;
                self.rx.active = value & CTRL_ACTIVE != 0;
                if self.rx.active {
                    self.rbo = false;
                }
            }
            ERESET => {
                if value & RESET_CLRIRQ != 0 {
                    self.irq = false;
                }
                if value & RESET_CRESET != 0 {
                    self.channel_reset();
                }
                self.reset_reg = value & RESET_LOOPBACK;
            }
            EDMA_CFG => self.dma_cfg = value,
            EPIO_CFG => self.pio_cfg = value,
            ETX_NDBP => self.tx.ndbp = value,
            ETX_CTRL => {
                self.tx.ctrl = value & CTRL_ENDIAN;
                self.tx.active = value & CTRL_ACTIVE != 0;
            }
            _ => {}
        }
    }

    /// CRESET: both channels stop, status and RBO clear.
    fn channel_reset(&mut self) {
        self.rx.active = false;
        self.tx.active = false;
        self.rx.status = 0;
        self.tx.status = 0;
        self.rbo = false;
        self.tx_partial.clear();
    }

    fn seeq_read(&mut self, n: u32) -> u8 {
        match n {
            // The 80C03's collision counters (the model has no collisions).
            n if n < seeq::STATION_LEN => match self.chip {
                SeeqChip::C80C03 => 0,
                SeeqChip::S8003 => 0xFF,
            },
            seeq::RXCMD => self.rx.status,
            seeq::TXCMD => self.tx.status,
            _ => 0,
        }
    }

    fn seeq_write(&mut self, n: u32, value: u8) {
        let bank = if self.chip == SeeqChip::S8003 {
            0
        } else if self.tx_cmd & TXCMD_BANK2 != 0 {
            2
        } else if self.tx_cmd & TXCMD_BANK1 != 0 {
            1
        } else {
            0
        };
        match (n, bank) {
            (seeq::RXCMD, _) => self.rx_cmd = value,
            (seeq::TXCMD, _) => self.tx_cmd = value,
            (n, 0) if n < seeq::STATION_LEN => self.station[n as usize] = value,
            (n, 1) if n < seeq::STATION_LEN => self.bank1[n as usize] = value,
            (n, _) if n < seeq::STATION_LEN => self.bank2[n as usize] = value,
            _ => {}
        }
    }

    /// The 80C03 control register (bank 2, register 3) as last written.
    pub fn control_80c03(&self) -> u8 {
        self.bank2[seeq::CONTROL as usize]
    }

    /// Whether the Seeq's address filter takes a frame with destination `dst`.
    fn accepts(&self, frame: &[u8]) -> bool {
        let Some(dst) = frame.get(0..6) else {
            return false;
        };
        let broadcast = dst == [0xFF; 6];
        let multicast = dst[0] & 1 != 0 && !broadcast;
        match self.rx_cmd & RXCMD_MATCH_MASK {
            RXCMD_MATCH_ALL => true,
            RXCMD_MATCH_STATION_BCAST => broadcast || dst == self.station,
            RXCMD_MATCH_MULTICAST => broadcast || multicast || dst == self.station,
            _ => false,
        }
    }

    /// Stores one frame into the descriptor at the RX next-descriptor pointer. `Ok(false)` when
    /// the channel has no buffer for it (stopped, or the descriptor is not owned by the HPC).
    fn store_rx(&mut self, mem: &mut dyn GuestMemory, frame: &[u8]) -> Result<bool, ()> {
        if !self.rx.active {
            return Ok(false);
        }
        let d = u64::from(self.rx.ndbp);
        let pbuf = mem.read_u32(d + u64::from(PBUF)).map_err(|_| ())?;
        let cnt = mem.read_u32(d + u64::from(CNTINFO)).map_err(|_| ())?;
        let pnext = mem.read_u32(d + u64::from(PNEXT)).map_err(|_| ())?;
        if cnt & DESC_OWN == 0 {
            // The CPU has not given this buffer back: the Seeq's FIFO overflows.
            self.rx.active = false;
            self.rbo = true;
            return Ok(false);
        }
        let size = (cnt & DESC_BCNT) as usize;
        let room = size.saturating_sub(RX_OVERHEAD);
        let (stored, status) = if frame.len() <= room {
            (frame.len(), RXSTAT_GOOD)
        } else {
            self.stats.rx_too_long += 1;
            (room, RXSTAT_OVERFLOW)
        };
        if size >= RX_OVERHEAD {
            let mut bytes = Vec::with_capacity(stored + RX_OVERHEAD);
            bytes.extend_from_slice(&[0; RX_PAD]);
            bytes.extend_from_slice(&frame[..stored]);
            bytes.push(status);
            mem.write(u64::from(pbuf), &bytes).map_err(|_| ())?;
        }
        let left = size.saturating_sub(stored + RX_OVERHEAD) as u32;
        // Only the halfword at +6: OWN and ETXD clear, BCNT = bytes left.
        mem.write_u16(d + u64::from(HPC_HALF), (left & DESC_BCNT) as u16)
            .map_err(|_| ())?;
        self.rx.cbp = pbuf;
        self.rx.bc = left;
        self.rx.status = status;
        self.stats.rx_frames += 1;
        if cnt & DESC_XIE != 0 {
            self.raise_irq();
        }
        self.rx.ndbp = pnext;
        if cnt & DESC_EOX != 0 {
            self.rx.active = false;
        }
        Ok(true)
    }

    /// Moves frames from the wire into the RX ring while it has buffers.
    fn run_rx(&mut self, mem: &mut dyn GuestMemory) -> bool {
        let mut moved = false;
        while self.rx.active {
            let Some(frame) = self.wire.recv() else {
                break;
            };
            moved = true;
            if !self.accepts(&frame) {
                self.stats.rx_filtered += 1;
                continue;
            }
            match self.store_rx(mem, &frame) {
                Ok(true) => {}
                // Stopped on a descriptor the CPU still holds: this frame is lost.
                Ok(false) => self.stats.rx_overflow_drops += 1,
                Err(()) => {
                    self.stats.dma_faults += 1;
                    self.rx.active = false;
                }
            }
        }
        moved
    }

    /// Walks the TX chain while ACTIVE: each descriptor's bytes join the current frame, EOXP
    /// ends it, ETXD is set and the count cleared, EOX stops the channel.
    fn run_tx(&mut self, mem: &mut dyn GuestMemory) -> bool {
        let mut walked = 0;
        while self.tx.active && walked < MAX_DESC_PER_TICK {
            walked += 1;
            if self.tx_descriptor(mem).is_err() {
                self.stats.dma_faults += 1;
                self.tx.active = false;
                self.tx_partial.clear();
            }
        }
        walked > 0
    }

    fn tx_descriptor(&mut self, mem: &mut dyn GuestMemory) -> Result<(), ()> {
        let d = u64::from(self.tx.ndbp);
        let pbuf = mem.read_u32(d + u64::from(PBUF)).map_err(|_| ())?;
        let cnt = mem.read_u32(d + u64::from(CNTINFO)).map_err(|_| ())?;
        let pnext = mem.read_u32(d + u64::from(PNEXT)).map_err(|_| ())?;
        let len = (cnt & DESC_BCNT) as usize;
        if len > 0 && self.tx_partial.len() <= MAX_WIRE_FRAME {
            let mut buf = vec![0; len];
            mem.read(u64::from(pbuf), &mut buf).map_err(|_| ())?;
            self.tx_partial.extend_from_slice(&buf);
        }
        // Only the halfword at +6: ETXD set, count 0.
        mem.write_u16(d + u64::from(HPC_HALF), DESC_ETXD as u16)
            .map_err(|_| ())?;
        self.tx.cbp = pbuf;
        self.tx.bc = 0;
        if cnt & DESC_EOXP != 0 {
            let frame = std::mem::take(&mut self.tx_partial);
            self.send_frame(frame);
            self.tx.status = TXSTAT_SENT;
            if cnt & DESC_XIE != 0 {
                self.raise_irq();
            }
        }
        self.tx.ndbp = pnext;
        if cnt & DESC_EOX != 0 {
            self.tx.active = false;
        }
        Ok(())
    }

    fn send_frame(&mut self, frame: Vec<u8>) {
        if frame.len() < MIN_WIRE_FRAME {
            self.stats.tx_runts += 1;
            return;
        }
        if frame.len() > MAX_WIRE_FRAME {
            self.stats.tx_too_long += 1;
            return;
        }
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += frame.len() as u64;
        if !self.wire.send(frame) {
            self.stats.tx_wire_drops += 1;
        }
    }

    /// One DMA step: TX first (so replies to this tick's frames go out next tick), then RX.
    /// Returns true when a frame moved or a descriptor was processed.
    pub fn step(&mut self, mem: &mut dyn GuestMemory) -> bool {
        let tx = self.run_tx(mem);
        let rx = self.run_rx(mem);
        tx || rx
    }

    /// Delivers `frames` at once, with no CPU in between: each is stored if the channel is
    /// running and owns the next buffer, otherwise lost with RBO set and the channel stopped —
    /// a receive overflow as the driver sees it on hardware.
    pub fn inject_rx_storm(
        &mut self,
        mem: &mut dyn GuestMemory,
        frames: impl IntoIterator<Item = Vec<u8>>,
    ) -> StormResult {
        let mut r = StormResult::default();
        for frame in frames {
            if !self.accepts(&frame) {
                self.stats.rx_filtered += 1;
                continue;
            }
            match self.store_rx(mem, &frame) {
                Ok(true) => r.stored += 1,
                Ok(false) | Err(()) => {
                    r.lost += 1;
                    self.stats.rx_overflow_drops += 1;
                    self.rx.active = false;
                    self.rbo = true;
                }
            }
        }
        r
    }
}

/// Seeq register number for an access: a word at +4n, or the byte at +4n+3.
fn seeq_reg(phys: u32, size: usize) -> Option<u32> {
    let off = phys - SEEQ.base;
    match (size, off % 4) {
        (4, 0) | (1, 3) => Some(off / 4),
        _ => None,
    }
}

impl Device for Hpc3Enet {
    fn name(&self) -> &str {
        "hpc3-enet"
    }

    fn regions(&self) -> Vec<Region> {
        vec![
            Region::new(HPC3_ENET.base, HPC3_ENET.size),
            Region::new(SEEQ.base, SEEQ.size),
        ]
    }

    fn read(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, size: usize) -> u64 {
        u64::from(self.read_reg(phys, size))
    }

    fn write(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, size: usize, value: u64) {
        self.write_reg(phys, size, value as u32);
    }

    fn tick(&mut self, ctx: &mut DevCtx<'_>) -> bool {
        let storm = self.storm.take();
        let stormed = !storm.is_empty();
        if stormed {
            let r = self.inject_rx_storm(ctx.mem, storm);
            self.storm.record(r);
        }
        self.step(ctx.mem) || stormed
    }

    /// Power-on state; the wire and the storm handle stay attached.
    fn reset(&mut self) {
        let (wire, storm) = (self.wire.clone(), self.storm.clone());
        *self = Hpc3Enet::new(wire, self.chip);
        self.storm = storm;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::VecMemory;
    use crate::net::wire::wire;

    const RAM: u64 = 0x0800_0000;
    const MAC: [u8; 6] = [8, 0, 0x69, 1, 2, 3];

    fn frame(dst: [u8; 6], len: usize, fill: u8) -> Vec<u8> {
        let mut f = vec![fill; len];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f
    }

    fn setup() -> (Hpc3Enet, WireEnd, VecMemory) {
        let (g, h) = wire(64);
        let mut nic = Hpc3Enet::new(g, SeeqChip::C80C03);
        for (i, b) in MAC.iter().enumerate() {
            nic.write_reg(seeq::reg(i as u32) + 3, 1, u32::from(*b));
        }
        nic.write_reg(
            seeq::reg(seeq::RXCMD),
            4,
            u32::from(RXCMD_MATCH_STATION_BCAST | seeq::RXCMD_IRQS),
        );
        (nic, h, VecMemory::new(RAM, 0x10000))
    }

    /// Two RX descriptors at RAM+0x100 (buffers of `size` at RAM+0x1000/0x2000), EOR on the
    /// second.
    fn rx_ring(mem: &mut VecMemory, size: u32) {
        for i in 0..2u64 {
            let d = RAM + 0x100 + 16 * i;
            mem.write_u32(d, (RAM + 0x1000 * (i + 1)) as u32).unwrap();
            let eor = if i == 1 { DESC_EOX } else { 0 };
            mem.write_u32(d + 4, DESC_OWN | DESC_EOXP | DESC_XIE | eor | size)
                .unwrap();
            mem.write_u32(d + 8, (RAM + 0x100 + 16 * ((i + 1) % 2)) as u32)
                .unwrap();
        }
    }

    #[test]
    fn identity_and_station() {
        let (mut nic, _h, _m) = setup();
        assert_eq!(nic.read_reg(SEEQ.base, 4), 0);
        assert_eq!(nic.station(), MAC);
        let (g, _h) = wire(1);
        let mut old = Hpc3Enet::new(g, SeeqChip::S8003);
        assert_eq!(old.read_reg(SEEQ.base + 3, 1), 0xFF);
        // Bank 2 writes on the 80C03 leave the station address alone.
        nic.write_reg(seeq::reg(seeq::TXCMD), 4, 0x4F);
        nic.write_reg(seeq::reg(seeq::CONTROL), 4, 0x37);
        assert_eq!(nic.control_80c03(), 0x37);
        assert_eq!(nic.station(), MAC);
    }

    #[test]
    fn rx_stores_layout_filters_and_stops_at_eor() {
        let (mut nic, host, mut mem) = setup();
        rx_ring(&mut mem, 1584);
        nic.write_reg(ERX_NDBP, 4, (RAM + 0x100) as u32);
        nic.write_reg(ERX_CTRL, 4, CTRL_ACTIVE);
        host.send(frame([9, 9, 9, 9, 9, 9], 80, 0xAA)); // not for us
        host.send(frame(MAC, 100, 0x11));
        host.send(frame([0xFF; 6], 64, 0x22));
        host.send(frame(MAC, 70, 0x33)); // no buffer left: waits on the wire
        assert!(nic.step(&mut mem));
        assert_eq!(nic.stats().rx_filtered, 1);
        assert_eq!(nic.stats().rx_frames, 2);
        assert!(!nic.rx_active(), "EOR stops the channel");
        assert_eq!(nic.read_reg(ERX_CTRL, 4) & RXCTRL_RBO, 0);
        assert_eq!(host.stats().to_guest.dropped, 0);
        assert_eq!(nic.wire().pending(), 1);
        // Descriptor 0: flag half untouched, OWN clear, left = 1584 - 103.
        let c0 = mem.read_u32(RAM + 0x104).unwrap();
        assert_eq!(c0, DESC_EOXP | DESC_XIE | (1584 - 103));
        let mut buf = vec![0; 103];
        mem.read(RAM + 0x1000, &mut buf).unwrap();
        assert_eq!(&buf[..2], &[0, 0]);
        assert_eq!(&buf[2..8], &MAC);
        assert_eq!(buf[102], RXSTAT_GOOD);
        assert!(nic.irq_pending());
        nic.write_reg(ERESET, 4, RESET_CLRIRQ);
        assert!(!nic.irq_pending());
    }

    #[test]
    fn rx_frame_longer_than_buffer_is_cut_and_bad() {
        let (mut nic, host, mut mem) = setup();
        rx_ring(&mut mem, 64);
        nic.write_reg(ERX_NDBP, 4, (RAM + 0x100) as u32);
        nic.write_reg(ERX_CTRL, 4, CTRL_ACTIVE);
        host.send(frame(MAC, 100, 0x11));
        nic.step(&mut mem);
        assert_eq!(nic.stats().rx_too_long, 1);
        assert_eq!(mem.read_u32(RAM + 0x104).unwrap() & DESC_BCNT, 0);
        let mut status = [0u8];
        mem.read(RAM + 0x1000 + 2 + 61, &mut status).unwrap();
        assert_eq!(status[0], RXSTAT_OVERFLOW);
    }

    #[test]
    fn storm_overruns_and_sets_rbo() {
        let (mut nic, _host, mut mem) = setup();
        rx_ring(&mut mem, 1584);
        nic.write_reg(ERX_NDBP, 4, (RAM + 0x100) as u32);
        nic.write_reg(ERX_CTRL, 4, CTRL_ACTIVE);
        let r = nic.inject_rx_storm(&mut mem, (0..10).map(|i| frame(MAC, 64, i)));
        assert_eq!(r, StormResult { stored: 2, lost: 8 });
        let ctrl = nic.read_reg(ERX_CTRL, 4);
        assert_eq!(ctrl & (CTRL_ACTIVE | RXCTRL_RBO), RXCTRL_RBO);
        nic.write_reg(ERX_CTRL, 4, CTRL_ACTIVE);
        assert_eq!(nic.read_reg(ERX_CTRL, 4) & RXCTRL_RBO, 0);
        // Descriptor 0 is not owned any more: the next frame overflows at once.
        let r = nic.inject_rx_storm(&mut mem, [frame(MAC, 64, 0)]);
        assert_eq!(r, StormResult { stored: 0, lost: 1 });
    }

    #[test]
    fn tx_walks_chain_sets_etxd_and_drops_runts() {
        let (mut nic, host, mut mem) = setup();
        // Three descriptors: a 60-byte frame, a 2-descriptor 100-byte frame, a 20-byte runt.
        let descs: [(u32, u32); 4] = [
            (60, DESC_EOXP),
            (40, 0),
            (60, DESC_EOXP),
            (20, DESC_EOXP | DESC_EOX | DESC_XIE),
        ];
        for (i, (len, flags)) in descs.iter().enumerate() {
            let d = RAM + 0x200 + 16 * i as u64;
            let buf = RAM + 0x3000 + 0x100 * i as u64;
            mem.write(buf, &vec![i as u8 + 1; *len as usize]).unwrap();
            mem.write_u32(d, buf as u32).unwrap();
            mem.write_u32(d + 4, (1 << 24) | flags | len).unwrap();
            mem.write_u32(d + 8, (d + 16) as u32).unwrap();
        }
        nic.write_reg(ETX_NDBP, 4, (RAM + 0x200) as u32);
        assert!(!nic.step(&mut mem), "not active yet");
        nic.write_reg(ETX_CTRL, 4, CTRL_ACTIVE);
        assert!(nic.step(&mut mem));
        assert!(!nic.tx_active());
        assert_eq!(nic.read_reg(ETX_CTRL, 4) & CTRL_ACTIVE, 0);
        assert_eq!(host.recv(), Some(vec![1; 60]));
        let mut second = vec![2; 40];
        second.extend(vec![3; 60]);
        assert_eq!(host.recv(), Some(second));
        assert_eq!(host.recv(), None);
        assert_eq!(nic.stats().tx_runts, 1);
        for i in 0..4u64 {
            let cnt = mem.read_u32(RAM + 0x204 + 16 * i).unwrap();
            assert_eq!(cnt & 0xFFFF, DESC_ETXD, "descriptor {i}");
            assert_ne!(cnt & (1 << 24), 0, "flag half kept");
        }
        assert_eq!(nic.read_reg(ETX_NDBP, 4), (RAM + 0x240) as u32);
        assert!(nic.irq_pending());
    }

    #[test]
    fn dma_outside_ram_stops_the_channel() {
        let (mut nic, _host, mut mem) = setup();
        nic.write_reg(ETX_NDBP, 4, 0x1000_0000);
        nic.write_reg(ETX_CTRL, 4, CTRL_ACTIVE);
        nic.step(&mut mem);
        assert!(!nic.tx_active());
        assert_eq!(nic.stats().dma_faults, 1);
    }
}
