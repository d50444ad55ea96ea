//! A plain register file for the Indy device windows the rig does not model (SCSI, PBUS DMA,
//! IOC, INT3, DS1386, PROM, …): reads return what was last written there, 0 at power-on. It
//! claims every window of the Indy's device map (`indy::map::WINDOWS`) the other models leave, so
//! a `mmio.read` anywhere the module allows reaches a device instead of crashing the guest with
//! an unmapped access.

use std::collections::HashMap;

use super::{DevCtx, Device, Region};
use indy::map::{HPC3_ENET, MC, REX3, SEEQ, WINDOWS, Window, Z85C30};

/// Windows other models answer: the HPC3 Ethernet channel and Seeq, the Z85C30, the MC and the
/// Newport board (REX3).
const MODELLED: &[Window] = &[HPC3_ENET, SEEQ, Z85C30, MC, REX3];

/// The module's windows this device answers.
pub fn regions() -> Vec<Region> {
    WINDOWS
        .iter()
        .filter(|w| !MODELLED.contains(w))
        .map(|w| Region::new(w.base, w.size))
        .collect()
}

/// Bytes last written, by physical address.
#[derive(Default)]
pub struct RegisterFile {
    bytes: HashMap<u32, u8>,
}

impl Device for RegisterFile {
    fn name(&self) -> &str {
        "register file (unmodelled windows)"
    }

    fn regions(&self) -> Vec<Region> {
        regions()
    }

    fn read(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, size: usize) -> u64 {
        (0..size as u32).fold(0u64, |v, i| {
            v << 8 | u64::from(self.bytes.get(&(phys + i)).copied().unwrap_or(0))
        })
    }

    fn write(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, size: usize, value: u64) {
        for i in 0..size as u32 {
            let shift = 8 * (size as u32 - 1 - i);
            self.bytes.insert(phys + i, (value >> shift) as u8);
        }
    }

    fn reset(&mut self) {
        self.bytes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::Bus;
    use crate::memory::VecMemory;

    #[test]
    fn claims_every_unmodelled_window_and_nothing_modelled() {
        let r = regions();
        let holds = |p: u32| r.iter().any(|g| p >= g.phys && p - g.phys < g.len);
        for p in [
            0x1FB9_0000,
            0x1FBD_9800,
            0x1FBD_9883,
            0x1FBE_0030,
            0x1FC0_0000,
            0x1FBC_4003,
        ] {
            assert!(holds(p), "{p:#x} unclaimed");
        }
        for p in [
            0x1FB9_5018,
            0x1FBD_4000,
            0x1FBD_9837,
            0x1FA0_0014,
            0x1F0F_1338,
        ] {
            assert!(!holds(p), "{p:#x} belongs to a model");
        }
    }

    #[test]
    fn reads_return_what_was_written_big_endian() {
        let mut bus = Bus::new(true);
        bus.add(Box::new(RegisterFile::default())).unwrap();
        let mut mem = VecMemory::new(0, 0x100);
        assert_eq!(bus.read(0, &mut mem, 0x1FBE_0030, 4), 0);
        bus.write(0, &mut mem, 0x1FBE_0030, 4, 0x1122_3344);
        assert_eq!(bus.read(0, &mut mem, 0x1FBE_0030, 4), 0x1122_3344);
        assert_eq!(bus.read(0, &mut mem, 0x1FBE_0033, 1), 0x44);
        assert_eq!(bus.read(0, &mut mem, 0x1FBE_0030, 2), 0x1122);
        bus.write(0, &mut mem, 0x1FBE_0033, 1, 0x99);
        assert_eq!(bus.read(0, &mut mem, 0x1FBE_0030, 4), 0x1122_3399);
        bus.reset();
        assert_eq!(bus.read(0, &mut mem, 0x1FBE_0030, 4), 0);
        assert!(bus.unclaimed.is_empty());
    }
}
