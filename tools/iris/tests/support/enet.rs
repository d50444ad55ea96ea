//! The module's Seeq driver (compiled for the host) on a test bus that routes
//! registers to the rig's HPC3/Seeq model and DMA to fake guest RAM. The bus keeps the CPU's
//! view of the DMA buffers in a separate copy that only `dma_wback`/`dma_inval` synchronise with
//! RAM, like the Indy's non-coherent cache, so a driver that forgets a cache operation sends or
//! reads stale bytes here too.

use std::cell::RefCell;
use std::rc::Rc;

use iris::devices::hpc3_enet::{self, Hpc3Enet, SeeqChip};
use iris::memory::{GuestMemory, VecMemory};
use iris::net::wire::{WireEnd, wire};
use irix7_mcp::drivers::seeq::{Config, Counters, Seeq};
use irix7_mcp::hil::hpc3_bus::Hpc3Bus;
use smoltcp::phy::{Device, RxToken, TxToken};
use smoltcp::time::Instant;

pub const RAM: u32 = 0x0800_0000;
pub const RAM_LEN: usize = 1 << 20;
pub const DMA_AT: u32 = RAM + 0x1_0000;
pub const MAC: [u8; 6] = [0x08, 0x00, 0x69, 0x0e, 0x07, 0x01];
pub const PEER: [u8; 6] = [0x02, 0x00, 0xac, 0x1f, 0x4d, 0x01];

pub struct Machine {
    pub nic: Hpc3Enet,
    pub mem: VecMemory,
}

pub type Shared = Rc<RefCell<Machine>>;

pub struct TestBus {
    pub m: Shared,
    /// The CPU's cached view of the DMA area.
    pub cache: Vec<u8>,
}

impl Hpc3Bus for TestBus {
    fn read32(&mut self, phys: u32) -> u32 {
        self.m.borrow_mut().nic.read_reg(phys, 4)
    }
    fn write32(&mut self, phys: u32, value: u32) {
        self.m.borrow_mut().nic.write_reg(phys, 4, value)
    }
    fn delay_us(&mut self, _us: u32) {}
    fn dma_phys(&self) -> u32 {
        DMA_AT
    }
    fn dma_len(&self) -> usize {
        self.cache.len()
    }
    fn dma_read32(&mut self, offset: usize) -> u32 {
        self.m
            .borrow_mut()
            .mem
            .read_u32(u64::from(DMA_AT) + offset as u64)
            .unwrap()
    }
    fn dma_write32(&mut self, offset: usize, value: u32) {
        self.m
            .borrow_mut()
            .mem
            .write_u32(u64::from(DMA_AT) + offset as u64, value)
            .unwrap()
    }
    fn dma_write16(&mut self, offset: usize, value: u16) {
        self.m
            .borrow_mut()
            .mem
            .write_u16(u64::from(DMA_AT) + offset as u64, value)
            .unwrap()
    }
    fn dma_bytes(&mut self, offset: usize, len: usize) -> Option<&mut [u8]> {
        self.cache.get_mut(offset..offset.checked_add(len)?)
    }
    fn dma_wback(&mut self, offset: usize, len: usize) {
        let data = &self.cache[offset..offset + len];
        self.m
            .borrow_mut()
            .mem
            .write(u64::from(DMA_AT) + offset as u64, data)
            .unwrap()
    }
    fn dma_inval(&mut self, offset: usize, len: usize) {
        let dst = &mut self.cache[offset..offset + len];
        self.m
            .borrow_mut()
            .mem
            .read(u64::from(DMA_AT) + offset as u64, dst)
            .unwrap()
    }
}

/// The driver on a bus to the NIC model, and the host end of the model's wire.
pub struct DriverBench {
    pub m: Shared,
    pub host: WireEnd,
    pub drv: Seeq<TestBus>,
}

/// A bench with the given chip and ring sizes.
pub fn driver_bench_with(chip: SeeqChip, config: Config) -> DriverBench {
    let (guest, host) = wire(1024);
    let m = Rc::new(RefCell::new(Machine {
        nic: Hpc3Enet::new(guest, chip),
        mem: VecMemory::new(u64::from(RAM), RAM_LEN),
    }));
    let len = Seeq::<TestBus>::dma_len(&config);
    let bus = TestBus {
        m: m.clone(),
        cache: vec![0xEE; len],
    };
    let drv = Seeq::new(bus, MAC, config).unwrap();
    DriverBench { m, host, drv }
}

/// A bench with a Seeq 80C03 and `rx`/`tx` ring slots.
pub fn driver_bench(rx: usize, tx: usize) -> DriverBench {
    driver_bench_with(
        SeeqChip::C80C03,
        Config {
            rx_ring: rx,
            tx_ring: tx,
        },
    )
}

impl DriverBench {
    /// One DMA step of the model.
    pub fn step(&self) {
        let mut g = self.m.borrow_mut();
        let Machine { nic, mem } = &mut *g;
        nic.step(mem);
    }

    pub fn send(&mut self, frame: &[u8]) -> bool {
        match self.drv.transmit(Instant::ZERO) {
            Some(tx) => {
                tx.consume(frame.len(), |b| b.copy_from_slice(frame));
                true
            }
            None => false,
        }
    }

    pub fn recv(&mut self) -> Option<Vec<u8>> {
        self.drv
            .receive(Instant::ZERO)
            .map(|(rx, _tx)| rx.consume(|b| b.to_vec()))
    }

    pub fn recv_all(&mut self) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| self.recv()).collect()
    }

    pub fn stats(&self) -> hpc3_enet::EnetStats {
        self.m.borrow().nic.stats()
    }

    pub fn counters(&self) -> Counters {
        self.drv.counters()
    }

    pub fn poke(&self, phys: u32, bytes: &[u8]) {
        self.m
            .borrow_mut()
            .mem
            .write(u64::from(phys), bytes)
            .unwrap();
    }
}

/// (length, tag) of each frame: what assertions print instead of whole frames.
pub fn summary(frames: &[Vec<u8>]) -> Vec<(usize, u8)> {
    frames
        .iter()
        .map(|f| (f.len(), f.get(14).copied().unwrap_or(0)))
        .collect()
}

/// Asserts two frame lists are equal, printing only summaries on failure.
pub fn assert_frames(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert_eq!(summary(got), summary(want));
    assert!(got == want, "same lengths and tags but different bytes");
}

/// A frame from `src` to `dst` of `len` bytes; byte 14 carries `tag`, the rest a pattern.
pub fn frame(dst: [u8; 6], src: [u8; 6], len: usize, tag: u8) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x88, 0xB5]);
    f[14] = tag;
    f
}
