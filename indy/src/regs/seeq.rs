//! The Seeq 8003 / 80C03 Ethernet controller behind the HPC3 (`docs/hardware.md`, "Seeq").
//! Register `n` is the word at [`reg`]`(n)`, its data in bits 7:0 (the byte at +3).

use crate::map::SEEQ;

/// Physical address of Seeq register `n`.
pub const fn reg(n: u32) -> u32 {
    SEEQ.base + 4 * n
}

/// Registers 0–5: the station address (write, bank 0); the 80C03's collision counters (read).
pub const STATION: u32 = 0;
/// Number of station-address registers.
pub const STATION_LEN: u32 = 6;
/// 80C03 bank-2 register: frame gap.
pub const FRAME_GAP: u32 = 2;
/// 80C03 bank-2 register: control.
pub const CONTROL: u32 = 3;
/// RX command (write) / RX status (read).
pub const RXCMD: u32 = 6;
/// TX command (write) / TX status (read).
pub const TXCMD: u32 = 7;

/// RX status (and the status byte after a received frame): overflow.
pub const RXSTAT_OVERFLOW: u8 = 0x01;
/// RX status: a good frame.
pub const RXSTAT_GOOD: u8 = 0x20;
/// TX status: the frame was sent.
pub const TXSTAT_SENT: u8 = 0x08;

/// RX command bits 7:6: which frames the address filter takes.
pub const RXCMD_MATCH_MASK: u8 = 0xC0;
/// RX command: every frame.
pub const RXCMD_MATCH_ALL: u8 = 0x40;
/// RX command: station address and broadcast frames.
pub const RXCMD_MATCH_STATION_BCAST: u8 = 0x80;
/// RX command: station, broadcast and every multicast frame.
pub const RXCMD_MATCH_MULTICAST: u8 = 0xC0;
/// RX command: interrupt enables for every receive condition.
pub const RXCMD_IRQS: u8 = 0x3E;

/// TX command on the 80C03: registers 0–5 select bank 1.
pub const TXCMD_BANK1: u8 = 0x20;
/// TX command on the 80C03: registers 0–5 select bank 2 (frame gap, control).
pub const TXCMD_BANK2: u8 = 0x40;
/// TX command on the 8003: all interrupt enables, bank 0.
pub const TXCMD_8003: u8 = 0x0F;
/// TX command on the 80C03: all interrupt enables, bank 2 selected.
pub const TXCMD_80C03: u8 = TXCMD_BANK2 | TXCMD_8003;

/// 80C03 control: collision counter clear, toggled after transmissions.
pub const CONTROL_XCNT: u8 = 0x01;
/// 80C03 control value Linux uses (XCNT|ACCNT|SFLAG|ESHORT|ENCARR).
pub const CONTROL_80C03: u8 = 0x37;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_are_words() {
        assert_eq!(reg(STATION), 0x1FBD_4000);
        assert_eq!(reg(TXCMD), 0x1FBD_401C);
        assert_eq!(TXCMD_80C03, 0x4F);
    }
}
