//! The INT3 interrupt controller's status registers (`docs/hardware.md`, "Interrupts"), byte
//! registers at +3 of their words. Each has its mask register 4 bytes on.

use crate::map::INT3;

/// Local 0 status: SCSI 0/1 (bits 1, 2), Ethernet (3), graphics DMA (4), parallel port (5).
pub const ISTAT0: u32 = INT3.base + 0x03;
/// Local 1 status: front panel (1), HPC3 DMA (4), video.
pub const ISTAT1: u32 = INT3.base + 0x0B;
/// Mapped (local 2) status: vertical retrace (0), keyboard (4), serial (5).
pub const MAPPED: u32 = INT3.base + 0x13;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_status_and_mask() {
        assert_eq!(ISTAT0, 0x1FBD_9883);
        assert_eq!(MAPPED, 0x1FBD_9893);
    }
}
