//! The Indy's physical address map (`docs/hardware.md`, "Address map"): how the R4400 reaches
//! physical addresses, where RAM is, and every device window. The windows are what `mmio.*`
//! may touch and `dev.list` reports; the rig's models claim the same windows. Anything outside
//! them is refused before the bus sees it.

/// Cached, unmapped segment: KSEG0 + phys for RAM the CPU reads and writes.
pub const KSEG0: u32 = 0x8000_0000;
/// Uncached, unmapped segment: KSEG1 + phys for registers and DMA descriptors.
pub const KSEG1: u32 = 0xA000_0000;
/// KSEG0 and KSEG1 reach physical addresses below this (512 MiB); above it only the TLB does.
pub const KSEG_LIMIT: u32 = 0x2000_0000;

/// KSEG0 (cached) address of `phys` (below [`KSEG_LIMIT`]).
pub const fn kseg0(phys: u32) -> u32 {
    KSEG0 | phys
}

/// KSEG1 (uncached) address of `phys` (below [`KSEG_LIMIT`]).
pub const fn kseg1(phys: u32) -> u32 {
    KSEG1 | phys
}

/// Physical address of a KSEG0/KSEG1 address; `None` for KUSEG and KSEG2/3, which are mapped
/// through the TLB and have no fixed translation.
pub const fn unmapped_phys(va: u32) -> Option<u32> {
    match va >> 29 {
        0b100 | 0b101 => Some(va & (KSEG_LIMIT - 1)),
        _ => None,
    }
}

/// Physical base of main memory.
pub const RAM_PHYS: u32 = 0x0800_0000;
/// Most RAM the window at [`RAM_PHYS`] holds; more sits at [`HIGH_RAM_PHYS`].
pub const LOW_RAM_MAX: u32 = 256 << 20;
/// The first 512 KiB of RAM also appear at physical 0.
pub const RAM_ALIAS_SIZE: u32 = 512 * 1024;
/// Where RAM beyond 256 MiB lives: just above what KSEG0/KSEG1 reach.
pub const HIGH_RAM_PHYS: u32 = KSEG_LIMIT;

/// Access widths a window allows, as a bit set of byte counts (1 | 2 | 4).
pub const W1: u8 = 1;
pub const W2: u8 = 2;
pub const W4: u8 = 4;

/// One device window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Stable short name (`dev.list`, error messages).
    pub name: &'static str,
    pub base: u32,
    pub size: u32,
    /// Allowed access widths ([`W1`] | [`W2`] | [`W4`]).
    pub widths: u8,
    pub description: &'static str,
}

impl Window {
    /// Whether `len` bytes at `phys` lie inside the window.
    pub fn holds(&self, phys: u32, len: u32) -> bool {
        phys >= self.base && u64::from(phys - self.base) + u64::from(len) <= u64::from(self.size)
    }

    /// Whether the window allows accesses of `width` bytes.
    pub fn allows(&self, width: u32) -> bool {
        matches!(width, 1 | 2 | 4) && self.widths & width as u8 != 0
    }

    /// Distance from `phys` to the window (0 inside it).
    fn distance(&self, phys: u32) -> u32 {
        if phys < self.base {
            self.base - phys
        } else {
            (phys - self.base).saturating_sub(self.size - 1)
        }
    }
}

const fn w(name: &'static str, base: u32, size: u32, widths: u8, d: &'static str) -> Window {
    Window {
        name,
        base,
        size,
        widths,
        description: d,
    }
}

/// Newport REX3: registers, their GO aliases (+0x800) and the configuration registers.
pub const REX3: Window = w(
    "rex3",
    0x1F0F_0000,
    0x2000,
    W1 | W2 | W4,
    "Newport REX3 graphics (GIO slot 0)",
);
/// The memory controller (`regs::mc`).
pub const MC: Window = w(
    "mc",
    0x1FA0_0000,
    0x1000,
    W4,
    "Memory controller: CPU control, watchdog, memory config",
);
/// HPC3 PBUS DMA channels; also the base of the HPC3's whole register space.
pub const HPC3_PBUS: Window = w(
    "hpc3-pbus",
    0x1FB8_0000,
    0x1_0000,
    W4,
    "HPC3 PBUS DMA channels 0-7",
);
/// HPC3 SCSI DMA channels (`regs::hpc3`).
pub const HPC3_SCSI: Window = w(
    "hpc3-scsi",
    0x1FB9_0000,
    0x4000,
    W4,
    "HPC3 SCSI DMA channels 0-1",
);
/// HPC3 Ethernet DMA channel (`regs::hpc3`).
pub const HPC3_ENET: Window = w(
    "hpc3-enet",
    0x1FB9_4000,
    0x4000,
    W4,
    "HPC3 Ethernet DMA channel (RX, TX)",
);
/// HPC3 interrupt status, GIO_MISC, serial EEPROM.
pub const HPC3_MISC: Window = w(
    "hpc3-misc",
    0x1FBB_0000,
    0x100,
    W4,
    "HPC3 interrupt status, GIO_MISC, EEPROM",
);
/// The first WD33C93 SCSI controller (the disks the kernel's `block_read` reads).
pub const WD33C93: Window = w(
    "wd33c93",
    0x1FBC_4000,
    0x400,
    W1 | W4,
    "WD33C93 SCSI controller 0 behind HPC3",
);
/// Seeq Ethernet controller (`regs::seeq`).
pub const SEEQ: Window = w(
    "seeq",
    0x1FBD_4000,
    0x20,
    W1 | W4,
    "Seeq 80C03 Ethernet controller",
);
/// IOC parallel port.
pub const IOC_PPORT: Window = w("ioc-pport", 0x1FBD_9800, 0x30, W1 | W4, "IOC parallel port");
/// Z85C30 serial controller (`regs::z85c30`).
pub const Z85C30: Window = w(
    "z85c30",
    0x1FBD_9830,
    0x10,
    W1 | W4,
    "Z85C30 serial ports (console on channel B)",
);
/// IOC keyboard/mouse, front panel, system ID, reset.
pub const IOC: Window = w(
    "ioc",
    0x1FBD_9840,
    0x40,
    W1 | W4,
    "IOC keyboard/mouse, panel, system ID, reset",
);
/// INT3 interrupt controller and 8254 timers (`regs::int3`).
pub const INT3: Window = w(
    "int3",
    0x1FBD_9880,
    0x40,
    W1 | W4,
    "INT3 interrupt status and masks, 8254 timers",
);
/// DS1386 clock registers (`regs::ds1386`).
pub const DS1386: Window = w(
    "ds1386",
    0x1FBE_0000,
    0x100,
    W1 | W4,
    "DS1386 real-time clock and watchdog",
);
/// DS1386 user RAM holding the kernel's environment.
pub const NVRAM: Window = w(
    "nvram",
    0x1FBE_0100,
    0x400,
    W1 | W4,
    "DS1386 NVRAM (the kernel's environment)",
);
/// The boot PROM.
pub const PROM: Window = w(
    "prom",
    0x1FC0_0000,
    0x8_0000,
    W1 | W2 | W4,
    "Boot PROM (512 KiB)",
);

/// Every window, by address. They do not overlap.
pub const WINDOWS: &[Window] = &[
    REX3, MC, HPC3_PBUS, HPC3_SCSI, HPC3_ENET, HPC3_MISC, WD33C93, SEEQ, IOC_PPORT, Z85C30, IOC,
    INT3, DS1386, NVRAM, PROM,
];

/// The window holding all `len` bytes at `phys`.
pub fn find(phys: u32, len: u32) -> Option<&'static Window> {
    WINDOWS.iter().find(|w| w.holds(phys, len))
}

/// The window nearest to `phys` (for "no device at …, nearest is …" messages).
pub fn nearest(phys: u32) -> &'static Window {
    let mut best = &WINDOWS[0];
    for w in WINDOWS {
        if w.distance(phys) < best.distance(phys) {
            best = w;
        }
    }
    best
}

/// A window by name.
pub fn by_name(name: &str) -> Option<&'static Window> {
    WINDOWS.iter().find(|w| w.name == name)
}

/// Why a RAM range was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RamError {
    /// At or above [`HIGH_RAM_PHYS`]: only mapped (TLB) addresses reach it.
    HighRam,
    /// Not installed RAM (or straddling the end of a RAM range).
    NotRam,
}

/// Checks that `len` bytes at `phys` are RAM the CPU reaches through KSEG0/KSEG1, given the
/// installed size.
pub fn check_ram(phys: u32, len: u32, ram_bytes: u32) -> Result<(), RamError> {
    if phys >= HIGH_RAM_PHYS {
        return Err(RamError::HighRam);
    }
    let low = ram_bytes.min(LOW_RAM_MAX);
    let inside = |base: u32, size: u32| {
        phys >= base && u64::from(phys - base) + u64::from(len) <= u64::from(size)
    };
    if inside(0, RAM_ALIAS_SIZE.min(low)) || inside(RAM_PHYS, low) {
        Ok(())
    } else {
        Err(RamError::NotRam)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_sorted_and_disjoint() {
        for pair in WINDOWS.windows(2) {
            assert!(
                pair[0].base + pair[0].size <= pair[1].base,
                "{} overlaps {}",
                pair[0].name,
                pair[1].name
            );
        }
        for w in WINDOWS {
            assert!(
                w.widths & W4 != 0,
                "{} must allow word reads (probe)",
                w.name
            );
            assert!(w.base.is_multiple_of(16) && w.size > 0);
            assert!(
                w.base + w.size <= KSEG_LIMIT,
                "{} is out of KSEG1's reach",
                w.name
            );
        }
    }

    #[test]
    fn find_requires_the_whole_access_inside() {
        assert_eq!(find(0x1FB9_5018, 4).map(|w| w.name), Some("hpc3-enet"));
        assert_eq!(find(0x1FBD_9837, 1).map(|w| w.name), Some("z85c30"));
        assert_eq!(find(0x1FBD_401C, 4), Some(&SEEQ));
        assert_eq!(find(0x1FBD_401E, 4), None, "runs past the Seeq window");
        assert_eq!(find(0x1FBD_4020, 4), None);
        assert_eq!(find(0x0800_0000, 4), None, "RAM is not a device");
    }

    #[test]
    fn nearest_names_the_closest_window() {
        assert_eq!(nearest(0x1FBD_4020).name, SEEQ.name);
        assert_eq!(nearest(0x1FB9_8000).name, "hpc3-enet");
        assert_eq!(nearest(0x0000_0000).name, REX3.name);
        assert_eq!(nearest(0xFFFF_FFFF).name, "prom");
        assert_eq!(nearest(0x1FC0_0004).name, "prom");
    }

    #[test]
    fn widths() {
        let mc = by_name("mc").unwrap();
        assert!(mc.allows(4) && !mc.allows(1) && !mc.allows(2) && !mc.allows(3));
        assert!(REX3.allows(2));
    }

    #[test]
    fn kseg_translation() {
        assert_eq!(kseg1(0x1FB9_5018), 0xBFB9_5018);
        assert_eq!(kseg0(0x0800_1000), 0x8800_1000);
        assert_eq!(unmapped_phys(0x8810_0000), Some(0x0810_0000));
        assert_eq!(unmapped_phys(0xA810_0000), Some(0x0810_0000));
        assert_eq!(unmapped_phys(0xBFBD_9837), Some(0x1FBD_9837));
        assert_eq!(unmapped_phys(0x0040_0000), None);
        assert_eq!(unmapped_phys(0xC000_0000), None);
    }

    #[test]
    fn ram_ranges_follow_the_installed_size() {
        let ram = 64 << 20;
        assert_eq!(check_ram(0x0800_1000, 92, ram), Ok(()));
        assert_eq!(check_ram(0x0BFF_FFFC, 4, ram), Ok(()));
        assert_eq!(check_ram(0x0BFF_FFFC, 5, ram), Err(RamError::NotRam));
        assert_eq!(check_ram(0x0C00_0000, 1, ram), Err(RamError::NotRam));
        assert_eq!(check_ram(0, 512 * 1024, ram), Ok(()));
        assert_eq!(check_ram(0x7_FFFF, 2, ram), Err(RamError::NotRam));
        assert_eq!(check_ram(0x1FB9_4000, 4, ram), Err(RamError::NotRam));
        assert_eq!(check_ram(0x2000_0000, 4, ram), Err(RamError::HighRam));
        // 384 MiB installed: only the first 256 MiB are in the low window.
        assert_eq!(check_ram(0x17FF_FFF0, 16, 384 << 20), Ok(()));
        assert_eq!(check_ram(0x1800_0000, 4, 384 << 20), Err(RamError::NotRam));
    }
}
