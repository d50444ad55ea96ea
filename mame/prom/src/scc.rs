//! Channel B of the Z85C30 (the Indy's console port, `ioc2:rs232b` in MAME) as an 8N1 serial
//! port driven by the baud-rate generator from PCLK (10 MHz on the Indy's IOC2).

/// The SCC's PCLK.
pub const PCLK_HZ: u32 = 10_000_000;
/// The console's speed: the Indy PROM's, and the default of MAME's null modem.
pub const BAUD: u32 = 9600;
/// The clock divides by 16 per bit (WR4's x16 mode).
pub const CLOCK_MODE: u32 = 16;

/// The baud-rate generator's time constant: baud = PCLK / (2 × mode × (TC + 2)), rounded.
pub const fn time_constant(pclk: u32, baud: u32, mode: u32) -> u16 {
    let div = 2 * mode * baud;
    let tc = (pclk + div / 2) / div;
    (tc - 2) as u16
}

/// The baud rate a time constant gives.
pub const fn baud_of(pclk: u32, tc: u16, mode: u32) -> u32 {
    pclk / (2 * mode * (tc as u32 + 2))
}

/// Writes that set channel B up, in order: (register, value). Each goes to the control
/// port as a pointer write (WR0) then the value; WR0 itself is written directly.
pub const fn init_sequence() -> [(u8, u8); 11] {
    let tc = time_constant(PCLK_HZ, BAUD, CLOCK_MODE);
    [
        (9, 0x40),  // reset channel B
        (4, 0x44),  // x16 clock, one stop bit, no parity
        (3, 0xC0),  // receive 8 bits, receiver off
        (5, 0xE2),  // DTR, transmit 8 bits, RTS; transmitter off
        (11, 0x50), // receive and transmit clocks from the baud-rate generator
        (12, tc as u8),
        (13, (tc >> 8) as u8),
        (14, 0x02), // generator source PCLK, generator off
        (14, 0x03), // generator on
        (3, 0xC1),  // receiver on
        (5, 0xEA),  // transmitter on
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_constant_for_9600_baud_from_10_mhz() {
        let tc = time_constant(PCLK_HZ, BAUD, CLOCK_MODE);
        assert_eq!(tc, 31);
        let actual = baud_of(PCLK_HZ, tc, CLOCK_MODE);
        assert_eq!(actual, 9469);
        // Within the 2 % an 8N1 receiver tolerates.
        assert!(actual.abs_diff(BAUD) * 50 < BAUD);
    }

    #[test]
    fn sequence_resets_first_and_enables_the_transmitter_last() {
        let seq = init_sequence();
        assert_eq!(seq[0], (9, 0x40));
        assert_eq!(seq[seq.len() - 1], (5, 0xEA));
        assert_eq!(seq[5], (12, 31));
        assert_eq!(seq[6], (13, 0));
    }
}
