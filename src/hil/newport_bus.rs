//! The narrow interface between the Newport driver and the machine: sized reads and writes at
//! offsets from the REX3 base. On the Indy it is `board::newport_bus::Kseg1Rex3`; in host tests
//! the iris rig's Newport model.

/// Register access to the REX3 window. Offsets are bytes from 1F0F_0000, naturally aligned.
pub trait NewportBus {
    fn read32(&mut self, off: u32) -> u32;
    fn write32(&mut self, off: u32, value: u32);
    fn read16(&mut self, off: u32) -> u16;
    fn write16(&mut self, off: u32, value: u16);
    fn read8(&mut self, off: u32) -> u8;
    fn write8(&mut self, off: u32, value: u8);
}
