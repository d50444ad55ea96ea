//! The HPC3 Ethernet DMA descriptor and receive buffer (`docs/hardware.md`, "Descriptors").
//! A descriptor is three big-endian words, `pbuf`, `cntinfo`, `pnext`; the CPU writes all of
//! it, the HPC rewrites only the halfword at [`HPC_HALF`] (the low half of `cntinfo`).

/// Byte offset of `pbuf`: the physical address of the buffer.
pub const PBUF: u32 = 0;
/// Byte offset of `cntinfo`: the flags below and the byte count.
pub const CNTINFO: u32 = 4;
/// Byte offset of `pnext`: the physical address of the next descriptor (the ring is circular).
pub const PNEXT: u32 = 8;
/// Byte offset of the only halfword the HPC writes back (`cntinfo` bits 15:0).
pub const HPC_HALF: u32 = 6;

/// End of chain (EOX on TX, EOR on RX): the channel stops after this descriptor.
pub const DESC_EOX: u32 = 1 << 31;
/// End of packet.
pub const DESC_EOXP: u32 = 1 << 30;
/// Interrupt on completion.
pub const DESC_XIE: u32 = 1 << 29;
/// Software-only "TX slot in use" (Linux's convention; the HPC ignores it).
pub const DESC_XIU: u32 = 1 << 24;
/// The HPC has sent this TX frame.
pub const DESC_ETXD: u32 = 1 << 15;
/// The RX buffer is empty and owned by the HPC; it clears this when it stores a frame.
pub const DESC_OWN: u32 = 1 << 14;
/// Byte count: RX buffer size (written back as bytes left), TX frame length (written back 0).
pub const DESC_BCNT: u32 = 0x3FFF;

/// Bytes the HPC stores before a received frame.
pub const RX_PAD: usize = 2;
/// Bytes of an RX buffer that are not frame: the pad and the status byte after the frame.
pub const RX_OVERHEAD: usize = RX_PAD + 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hpc_half_holds_the_flags_it_writes() {
        assert_eq!(HPC_HALF, CNTINFO + 2);
        assert_eq!((DESC_ETXD | DESC_OWN | DESC_BCNT) >> 16, 0);
        assert_eq!(RX_OVERHEAD, 3);
    }
}
