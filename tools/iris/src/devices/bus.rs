//! The device trait and the MMIO bus.

use std::collections::BTreeSet;

use crate::memory::GuestMemory;

/// A physical address range a device claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub phys: u32,
    pub len: u32,
}

impl Region {
    pub const fn new(phys: u32, len: u32) -> Region {
        Region { phys, len }
    }

    fn contains(&self, phys: u32) -> bool {
        phys >= self.phys && phys - self.phys < self.len
    }
}

/// Something a device asks of the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineEvent {
    /// Reset the machine (the MC watchdog fired, or a reset register was written).
    Reset(String),
}

/// What a device gets on each access or tick.
pub struct DevCtx<'a> {
    /// The rig clock in milliseconds since boot.
    pub now_ms: u64,
    /// Guest RAM, physical addresses (DMA).
    pub mem: &'a mut dyn GuestMemory,
    pub events: &'a mut Vec<MachineEvent>,
}

impl DevCtx<'_> {
    pub fn request_reset(&mut self, reason: impl Into<String>) {
        self.events.push(MachineEvent::Reset(reason.into()));
    }
}

/// An emulated device. Accesses carry the absolute physical address and the access size in bytes
/// (1, 2, 4 or 8); values are as the CPU sees them (big-endian register semantics already applied
/// by Unicorn: a byte store's value is in bits 7:0).
pub trait Device {
    fn name(&self) -> &str;
    /// The physical ranges this device answers.
    fn regions(&self) -> Vec<Region>;
    fn read(&mut self, ctx: &mut DevCtx<'_>, phys: u32, size: usize) -> u64;
    fn write(&mut self, ctx: &mut DevCtx<'_>, phys: u32, size: usize, value: u64);
    /// Work between guest calls (DMA, timers). Returns true when something happened, so the
    /// scheduler does not sleep.
    fn tick(&mut self, _ctx: &mut DevCtx<'_>) -> bool {
        false
    }
    /// Back to the power-on state (machine reset).
    fn reset(&mut self) {}
}

/// Routes accesses to devices by physical address.
#[derive(Default)]
pub struct Bus {
    devices: Vec<Box<dyn Device>>,
    /// (region, device index), in registration order.
    regions: Vec<(Region, usize)>,
    /// Accesses to mapped pages no device claims: (phys, is_write), first few only.
    pub unclaimed: Vec<(u32, bool)>,
    pub events: Vec<MachineEvent>,
    pub quiet: bool,
}

/// How many unclaimed accesses the bus remembers.
const UNCLAIMED_KEEP: usize = 64;
pub const PAGE: u32 = 0x1000;

impl Bus {
    pub fn new(quiet: bool) -> Bus {
        Bus {
            quiet,
            ..Bus::default()
        }
    }

    /// Add a device; its regions must not overlap any already claimed.
    pub fn add(&mut self, device: Box<dyn Device>) -> Result<(), String> {
        let index = self.devices.len();
        for r in device.regions() {
            if r.len == 0 || r.phys.checked_add(r.len - 1).is_none() {
                return Err(format!(
                    "device {}: bad region {:#x}+{:#x}",
                    device.name(),
                    r.phys,
                    r.len
                ));
            }
            if let Some((other, i)) = self
                .regions
                .iter()
                .find(|(o, _)| o.phys < r.phys + r.len && r.phys < o.phys + o.len)
            {
                return Err(format!(
                    "device {} region {:#x}+{:#x} overlaps {} at {:#x}+{:#x}",
                    device.name(),
                    r.phys,
                    r.len,
                    self.devices[*i].name(),
                    other.phys,
                    other.len
                ));
            }
            self.regions.push((r, index));
        }
        self.devices.push(device);
        Ok(())
    }

    pub fn device_names(&self) -> Vec<String> {
        self.devices.iter().map(|d| d.name().to_string()).collect()
    }

    /// Runs of whole 4 KiB pages covering every claimed region: (phys, len), to `mmio_map`.
    pub fn page_runs(&self) -> Vec<(u32, u32)> {
        let mut pages = BTreeSet::new();
        for (r, _) in &self.regions {
            let first = r.phys / PAGE;
            let last = (r.phys + (r.len - 1)) / PAGE;
            pages.extend(first..=last);
        }
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for p in pages {
            match runs.last_mut() {
                Some((start, len)) if *start + *len == p * PAGE => *len += PAGE,
                _ => runs.push((p * PAGE, PAGE)),
            }
        }
        runs
    }

    fn find(&self, phys: u32) -> Option<usize> {
        self.regions
            .iter()
            .find(|(r, _)| r.contains(phys))
            .map(|(_, i)| *i)
    }

    fn note_unclaimed(&mut self, phys: u32, write: bool) {
        if self.unclaimed.len() < UNCLAIMED_KEEP && !self.unclaimed.contains(&(phys, write)) {
            if !self.quiet {
                let what = if write { "write to" } else { "read from" };
                eprintln!("iris: unclaimed MMIO {what} {phys:#010x}");
            }
            self.unclaimed.push((phys, write));
        }
    }

    pub fn read(&mut self, now_ms: u64, mem: &mut dyn GuestMemory, phys: u32, size: usize) -> u64 {
        let Some(i) = self.find(phys) else {
            self.note_unclaimed(phys, false);
            return 0;
        };
        let mut ctx = DevCtx {
            now_ms,
            mem,
            events: &mut self.events,
        };
        self.devices[i].read(&mut ctx, phys, size)
    }

    pub fn write(
        &mut self,
        now_ms: u64,
        mem: &mut dyn GuestMemory,
        phys: u32,
        size: usize,
        value: u64,
    ) {
        let Some(i) = self.find(phys) else {
            self.note_unclaimed(phys, true);
            return;
        };
        let mut ctx = DevCtx {
            now_ms,
            mem,
            events: &mut self.events,
        };
        self.devices[i].write(&mut ctx, phys, size, value);
    }

    /// Tick every device; true when any did something.
    pub fn tick(&mut self, now_ms: u64, mem: &mut dyn GuestMemory) -> bool {
        let mut busy = false;
        for d in &mut self.devices {
            let mut ctx = DevCtx {
                now_ms,
                mem,
                events: &mut self.events,
            };
            busy |= d.tick(&mut ctx);
        }
        busy
    }

    pub fn reset(&mut self) {
        for d in &mut self.devices {
            d.reset();
        }
        self.events.clear();
    }

    pub fn take_events(&mut self) -> Vec<MachineEvent> {
        std::mem::take(&mut self.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::VecMemory;

    struct Reg {
        at: u32,
        value: u64,
    }

    impl Device for Reg {
        fn name(&self) -> &str {
            "reg"
        }
        fn regions(&self) -> Vec<Region> {
            vec![Region::new(self.at, 4)]
        }
        fn read(&mut self, _: &mut DevCtx<'_>, _: u32, _: usize) -> u64 {
            self.value
        }
        fn write(&mut self, ctx: &mut DevCtx<'_>, _: u32, _: usize, value: u64) {
            self.value = value;
            ctx.mem.write_u32(0x100, value as u32).unwrap();
        }
    }

    #[test]
    fn routes_and_maps_pages() {
        let mut bus = Bus::new(true);
        bus.add(Box::new(Reg {
            at: 0x1FBD_9830,
            value: 7,
        }))
        .unwrap();
        bus.add(Box::new(Reg {
            at: 0x1FBD_9880,
            value: 9,
        }))
        .unwrap();
        bus.add(Box::new(Reg {
            at: 0x1FBD_A000,
            value: 1,
        }))
        .unwrap();
        bus.add(Box::new(Reg {
            at: 0x1FA0_0000,
            value: 1,
        }))
        .unwrap();
        assert!(
            bus.add(Box::new(Reg {
                at: 0x1FBD_9832,
                value: 0
            }))
            .is_err()
        );
        assert_eq!(
            bus.page_runs(),
            vec![(0x1FA0_0000, 0x1000), (0x1FBD_9000, 0x2000)]
        );
        let mut mem = VecMemory::new(0, 0x1000);
        assert_eq!(bus.read(0, &mut mem, 0x1FBD_9880, 4), 9);
        bus.write(0, &mut mem, 0x1FBD_9830, 4, 0xAB);
        assert_eq!(bus.read(0, &mut mem, 0x1FBD_9830, 4), 0xAB);
        assert_eq!(mem.read_u32(0x100).unwrap(), 0xAB);
        assert_eq!(bus.read(0, &mut mem, 0x1FBD_9900, 4), 0);
        assert_eq!(bus.unclaimed, vec![(0x1FBD_9900, false)]);
    }
}
