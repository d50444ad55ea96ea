//! Why this boot happened and what the kernel kept of the previous one (`boot_info`, ABI 13):
//! the state the kernel carries across warm resets, and the block as guest memory holds it.

use core::mem::offset_of;

use crate::memmap;
use indy::abi::{BOOT_MESSAGE_LEN, BOOT_POWER_ON, BootInfo, FLIGHT_REGION_SIZE, SERIAL_RING_SIZE};

/// What the kernel knows about this boot and keeps of the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootState {
    pub cause: u32,
    /// The panic message, for a panic.
    pub message: String,
    pub boots: u32,
    pub prev_uptime_ms: u32,
    pub prev_sha256: [u8; 32],
    pub prev_ring_head: u32,
    pub prev_ring_sum: u32,
    /// Whether the previous boot's ring and flight region were kept (not after a power-on).
    pub kept: bool,
}

impl BootState {
    pub fn power_on() -> BootState {
        BootState {
            cause: BOOT_POWER_ON,
            message: String::new(),
            boots: 1,
            prev_uptime_ms: 0,
            prev_sha256: [0; 32],
            prev_ring_head: 0,
            prev_ring_sum: 0,
            kept: false,
        }
    }
}

/// The block as guest memory holds it: big-endian words, the survivors' KSEG0 addresses.
pub fn boot_info_bytes(s: &BootState) -> Vec<u8> {
    let mut b = vec![0u8; core::mem::size_of::<BootInfo>()];
    let mut word = |off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_be_bytes());
    word(offset_of!(BootInfo, cause), s.cause);
    word(offset_of!(BootInfo, prev_uptime_ms), s.prev_uptime_ms);
    word(offset_of!(BootInfo, boots), s.boots);
    let kept = |v: u32| if s.kept { v } else { 0 };
    word(
        offset_of!(BootInfo, prev_ring),
        kept(memmap::ram_va(memmap::PREV_RING_OFF)),
    );
    word(offset_of!(BootInfo, prev_ring_size), kept(SERIAL_RING_SIZE));
    word(offset_of!(BootInfo, prev_ring_head), kept(s.prev_ring_head));
    word(offset_of!(BootInfo, prev_ring_sum), kept(s.prev_ring_sum));
    word(
        offset_of!(BootInfo, prev_flight),
        kept(memmap::ram_va(memmap::PREV_FLIGHT_OFF)),
    );
    word(
        offset_of!(BootInfo, prev_flight_size),
        kept(FLIGHT_REGION_SIZE),
    );
    word(
        offset_of!(BootInfo, flight),
        memmap::ram_va(memmap::FLIGHT_OFF),
    );
    word(offset_of!(BootInfo, flight_size), FLIGHT_REGION_SIZE);
    b[offset_of!(BootInfo, prev_sha256)..][..32].copy_from_slice(&s.prev_sha256);
    let msg = s.message.as_bytes();
    let n = msg.len().min(BOOT_MESSAGE_LEN - 1);
    b[offset_of!(BootInfo, message)..][..n].copy_from_slice(&msg[..n]);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_power_on_hands_over_nothing_kept() {
        let b = boot_info_bytes(&BootState::power_on());
        assert_eq!(b.len(), 204);
        let word = |off: usize| u32::from_be_bytes(b[off..off + 4].try_into().unwrap());
        assert_eq!(word(offset_of!(BootInfo, cause)), BOOT_POWER_ON);
        assert_eq!(word(offset_of!(BootInfo, prev_ring)), 0);
        assert_eq!(word(offset_of!(BootInfo, prev_flight_size)), 0);
        assert_eq!(word(offset_of!(BootInfo, flight_size)), FLIGHT_REGION_SIZE);
    }

    #[test]
    fn a_long_message_is_cut_and_stays_terminated() {
        let s = BootState {
            message: "x".repeat(300),
            kept: true,
            ..BootState::power_on()
        };
        let b = boot_info_bytes(&s);
        let at = offset_of!(BootInfo, message);
        assert_eq!(b[at + BOOT_MESSAGE_LEN - 1], 0);
        assert_eq!(b[at + BOOT_MESSAGE_LEN - 2], b'x');
    }
}
