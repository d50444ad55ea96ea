//! The Z85C30 serial controller in the IOC (`docs/hardware.md`, "Z85C30"): two channels, each a
//! control and a data register, one per word with the data in bits 7:0. Channel B is the
//! console.

use crate::map::Z85C30;

/// Channel B (serial 1, the console) control register.
pub const CTRL_B: u32 = Z85C30.base + 0x3;
/// Channel B data register.
pub const DATA_B: u32 = Z85C30.base + 0x7;
/// Channel A (serial 2) control register.
pub const CTRL_A: u32 = Z85C30.base + 0xB;
/// Channel A data register.
pub const DATA_A: u32 = Z85C30.base + 0xF;

/// RR0: a received byte is waiting.
pub const RR0_RX_AVAIL: u8 = 0x01;
/// RR0: the transmit buffer is empty.
pub const RR0_TX_EMPTY: u8 = 0x04;
/// RR0: data carrier detect.
pub const RR0_DCD: u8 = 0x08;
/// RR0: clear to send.
pub const RR0_CTS: u8 = 0x20;
/// RR1: everything has been sent.
pub const RR1_ALL_SENT: u8 = 0x01;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_registers() {
        assert_eq!((CTRL_B, DATA_B), (0x1FBD_9833, 0x1FBD_9837));
        assert_eq!(DATA_A, 0x1FBD_983F);
    }
}
