//! Register addresses and bit names of the HPC3 Ethernet channel and the Seeq 8003/80C03
//! (indy-hardware.md §1.2–1.4). All addresses are physical.

/// HPC3 RX current buffer pointer.
pub const ERX_CBP: u32 = 0x1FB9_4000;
/// HPC3 RX next-descriptor pointer: where the channel fetches its next descriptor.
pub const ERX_NDBP: u32 = 0x1FB9_4004;
/// HPC3 RX byte count (read-only).
pub const ERX_BC: u32 = 0x1FB9_5000;
/// HPC3 RX control: Seeq status in bits 5:0, ACTIVE, RBO.
pub const ERX_CTRL: u32 = 0x1FB9_5004;
/// HPC3 Ethernet reset / IRQ register.
pub const ERESET: u32 = 0x1FB9_5014;
/// HPC3 Ethernet DMA configuration.
pub const EDMA_CFG: u32 = 0x1FB9_5018;
/// HPC3 Ethernet PIO configuration.
pub const EPIO_CFG: u32 = 0x1FB9_501C;
/// HPC3 TX current buffer pointer.
pub const ETX_CBP: u32 = 0x1FB9_6000;
/// HPC3 TX next-descriptor pointer.
pub const ETX_NDBP: u32 = 0x1FB9_6004;
/// HPC3 TX byte count.
pub const ETX_BC: u32 = 0x1FB9_7000;
/// HPC3 TX control: Seeq status in bits 3:0, ACTIVE.
pub const ETX_CTRL: u32 = 0x1FB9_7004;

/// Seeq register `n` lives in the word at `SEEQ_BASE + 4n`, data in bits 7:0.
pub const SEEQ_BASE: u32 = 0x1FBD_4000;
/// Seeq RX command (write) / RX status (read).
pub const SEEQ_RXCMD: u32 = 6;
/// Seeq TX command (write) / TX status (read).
pub const SEEQ_TXCMD: u32 = 7;
/// 80C03 bank-2 register: frame gap.
pub const SEEQ_FRAME_GAP: u32 = 2;
/// 80C03 bank-2 register: control.
pub const SEEQ_CONTROL: u32 = 3;

/// Physical address of Seeq register `n`.
pub const fn seeq(n: u32) -> u32 {
    SEEQ_BASE + 4 * n
}

/// Reset register: channel reset.
pub const RESET_CRESET: u32 = 0x1;
/// Reset register: clear the interrupt (reads back as "IRQ pending").
pub const RESET_CLRIRQ: u32 = 0x2;

/// The DMA configuration Linux and NetBSD use (includes the 8003 bug-fix bits).
pub const DMA_CFG_VALUE: u32 = 0x3E026;
/// The PIO configuration Linux uses.
pub const PIO_CFG_VALUE: u32 = 0x161;

/// RX/TX control: the channel runs (write 1 to start; reads 0 when stopped).
pub const CTRL_ACTIVE: u32 = 1 << 9;
/// RX control: the receive buffer overflowed.
pub const RXCTRL_RBO: u32 = 1 << 11;

/// Descriptor cntinfo: end of chain (EOX on TX, EOR on RX). The channel stops after it.
pub const DESC_EOX: u32 = 1 << 31;
/// Descriptor cntinfo: end of packet.
pub const DESC_EOXP: u32 = 1 << 30;
/// Descriptor cntinfo: interrupt on completion.
pub const DESC_XIE: u32 = 1 << 29;
/// Descriptor cntinfo: software-only "TX slot in use".
pub const DESC_XIU: u32 = 1 << 24;
/// Descriptor cntinfo: the HPC has sent this TX frame.
pub const DESC_ETXD: u32 = 1 << 15;
/// Descriptor cntinfo: RX buffer is empty and owned by the HPC.
pub const DESC_OWN: u32 = 1 << 14;
/// Descriptor cntinfo: byte count field.
pub const DESC_BCNT: u32 = 0x3FFF;

/// RX status byte / Seeq RX status: a good frame.
pub const RXSTAT_GOOD: u8 = 0x20;

/// Seeq RX command: receive station address and broadcast frames.
pub const RXCMD_MATCH_STATION_BCAST: u32 = 0x80;
/// Seeq RX command: interrupt enables for every receive condition.
pub const RXCMD_IRQS: u32 = 0x3E;

/// Seeq TX command on the 8003: all interrupt enables, bank 0.
pub const TXCMD_8003: u32 = 0x0F;
/// Seeq TX command on the 80C03: all interrupt enables, bank 2 selected.
pub const TXCMD_80C03: u32 = 0x4F;
/// 80C03 control register value Linux uses (XCNT|ACCNT|SFLAG|ESHORT|ENCARR).
pub const CONTROL_80C03: u32 = 0x37;
/// 80C03 control: collision counter clear, toggled after transmissions.
pub const CONTROL_XCNT: u32 = 0x01;
