//! HPC3 DMA channel registers (`docs/hardware.md`, "HPC3 Ethernet DMA"), as Linux's `hpc3.h`
//! lays them out: each channel has a pointer pair (current buffer, next descriptor) and, 4 KiB
//! further on, its byte count and control registers. The Ethernet channel's configuration
//! registers sit after its RX control.

use crate::map::{HPC3_ENET, HPC3_PBUS, HPC3_SCSI};

const ENET: u32 = HPC3_ENET.base;

/// RX current buffer pointer.
pub const ERX_CBP: u32 = ENET;
/// RX next-descriptor pointer: where the channel fetches its next descriptor.
pub const ERX_NDBP: u32 = ENET + 0x0004;
/// RX byte count (read-only).
pub const ERX_BC: u32 = ENET + 0x1000;
/// RX control: Seeq RX status in bits 5:0, [`CTRL_ENDIAN`], [`CTRL_ACTIVE`], [`RXCTRL_RBO`].
pub const ERX_CTRL: u32 = ENET + 0x1004;
/// Ethernet reset / IRQ register ([`RESET_CRESET`], [`RESET_CLRIRQ`], [`RESET_LOOPBACK`]).
pub const ERESET: u32 = ENET + 0x1014;
/// Ethernet DMA configuration.
pub const EDMA_CFG: u32 = ENET + 0x1018;
/// Ethernet PIO configuration.
pub const EPIO_CFG: u32 = ENET + 0x101C;
/// TX current buffer pointer.
pub const ETX_CBP: u32 = ENET + 0x2000;
/// TX next-descriptor pointer.
pub const ETX_NDBP: u32 = ENET + 0x2004;
/// TX byte count.
pub const ETX_BC: u32 = ENET + 0x3000;
/// TX control: Seeq TX status in bits 3:0, [`CTRL_ENDIAN`], [`CTRL_ACTIVE`].
pub const ETX_CTRL: u32 = ENET + 0x3004;

/// Seeq status bits the RX control register mirrors.
pub const RXCTRL_STATUS: u32 = 0x3F;
/// Seeq status bits the TX control register mirrors.
pub const TXCTRL_STATUS: u32 = 0x0F;
/// RX/TX control: descriptors and buffers are little-endian (kept 0: bytes land in order).
pub const CTRL_ENDIAN: u32 = 1 << 8;
/// RX/TX control: the channel runs (write 1 to start; reads 0 when stopped).
pub const CTRL_ACTIVE: u32 = 1 << 9;
/// RX control: the receive buffer overflowed.
pub const RXCTRL_RBO: u32 = 1 << 11;

/// Reset register: channel reset.
pub const RESET_CRESET: u32 = 0x1;
/// Reset register: clear the interrupt (reads back as "IRQ pending").
pub const RESET_CLRIRQ: u32 = 0x2;
/// Reset register: internal loopback.
pub const RESET_LOOPBACK: u32 = 0x4;

/// The DMA configuration Linux and NetBSD use (includes the 8003 bug-fix bits).
pub const DMA_CFG_VALUE: u32 = 0x3E026;
/// The PIO configuration Linux uses.
pub const PIO_CFG_VALUE: u32 = 0x161;

/// One DMA channel's registers, for listing them (`dma.list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaChannel {
    pub name: &'static str,
    /// Current buffer pointer.
    pub cbp: u32,
    /// Next-descriptor pointer.
    pub ndbp: u32,
    /// Byte count; PBUS channels have none.
    pub bc: Option<u32>,
    /// Control.
    pub ctrl: u32,
}

/// A SCSI or Ethernet half-channel: pointers at `base`, count and control 4 KiB on.
const fn counted(name: &'static str, base: u32) -> DmaChannel {
    DmaChannel {
        name,
        cbp: base,
        ndbp: base + 4,
        bc: Some(base + 0x1000),
        ctrl: base + 0x1004,
    }
}

/// PBUS channel `n`: pointers at 8 KiB steps, control 4 KiB on, no byte count.
const fn pbus(name: &'static str, n: u32) -> DmaChannel {
    let base = HPC3_PBUS.base + 0x2000 * n;
    DmaChannel {
        name,
        cbp: base,
        ndbp: base + 4,
        bc: None,
        ctrl: base + 0x1000,
    }
}

/// The Ethernet receive channel.
pub const ENET_RX: DmaChannel = counted("enet-rx", ERX_CBP);
/// The Ethernet transmit channel.
pub const ENET_TX: DmaChannel = counted("enet-tx", ETX_CBP);

/// Every HPC3 DMA channel.
pub const CHANNELS: &[DmaChannel] = &[
    ENET_RX,
    ENET_TX,
    counted("scsi0", HPC3_SCSI.base),
    counted("scsi1", HPC3_SCSI.base + 0x2000),
    pbus("pbus0", 0),
    pbus("pbus1", 1),
    pbus("pbus2", 2),
    pbus("pbus3", 3),
    pbus("pbus4", 4),
    pbus("pbus5", 5),
    pbus("pbus6", 6),
    pbus("pbus7", 7),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map;

    #[test]
    fn ethernet_channels_match_the_register_names() {
        assert_eq!(
            (ENET_RX.ndbp, ENET_RX.bc, ENET_RX.ctrl),
            (ERX_NDBP, Some(ERX_BC), ERX_CTRL)
        );
        assert_eq!(
            (ENET_TX.ndbp, ENET_TX.bc, ENET_TX.ctrl),
            (ETX_NDBP, Some(ETX_BC), ETX_CTRL)
        );
        assert_eq!(ERX_CTRL, 0x1FB9_5004);
        assert_eq!(EPIO_CFG, 0x1FB9_501C);
        assert_eq!(ETX_CTRL, 0x1FB9_7004);
    }

    #[test]
    fn every_register_is_in_its_window() {
        for c in CHANNELS {
            let w = map::find(c.cbp, 4).map(|w| w.name);
            for r in [Some(c.ndbp), c.bc, Some(c.ctrl)].into_iter().flatten() {
                assert_eq!(map::find(r, 4).map(|w| w.name), w, "{}", c.name);
            }
        }
        let pbus7 = CHANNELS[CHANNELS.len() - 1];
        assert_eq!((pbus7.cbp, pbus7.ctrl), (0x1FB8_E000, 0x1FB8_F000));
        assert_eq!(CHANNELS[3].ctrl, 0x1FB9_3004);
    }
}
