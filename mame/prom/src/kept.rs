//! What the stand-in keeps of a boot across a reset it performs, as the kernel contract asks
//! (`docs/abi.md`, "What survives"): at `reset` it copies this boot's serial ring and flight
//! region into [`layout::KEPT`] with the ring's head and sum, its uptime and image digest, and
//! marks the header; the next boot reads them there. Its own data is set up afresh at the
//! reset vector, but RAM outside it survives (on an Indy, and MAME's soft reset clears none).

use crate::io::{r8, r32, w8, w32};
use crate::layout::{
    KEPT, KEPT_BOOTED, KEPT_BOOTS, KEPT_FLIGHT, KEPT_MAGIC, KEPT_RESET, KEPT_RING, KEPT_RING_HEAD,
    KEPT_RING_SUM, KEPT_SHA256, KEPT_UPTIME,
};
use indy::abi::{self, BootInfo};
use indy::map::kseg0;

fn at(off: u32) -> u32 {
    KEPT.0 + off
}

/// Called by `reset` just before the machine resets: keeps `ring` (written up to `head`), the
/// flight region, the uptime and the running image's digest. Uncached, so nothing waits in the
/// data cache when the reset comes.
pub fn keep(ring: &[u8], head: u32, flight: &[u8], uptime_ms: u32, sha256: &[u8; 32]) {
    for (i, &b) in ring.iter().enumerate() {
        w8(at(KEPT_RING) + i as u32, b);
    }
    for (i, &b) in flight.iter().enumerate() {
        w8(at(KEPT_FLIGHT) + i as u32, b);
    }
    for (i, &b) in sha256.iter().enumerate() {
        w8(at(KEPT_SHA256) + i as u32, b);
    }
    w32(at(KEPT_RING_HEAD), head);
    w32(at(KEPT_RING_SUM), abi::ring_sum(ring));
    w32(at(KEPT_UPTIME), uptime_ms);
    w32(at(KEPT_MAGIC), KEPT_RESET);
}

/// At boot: why this boot happened and what the last one left, into `b`. After a reset the
/// stand-in asked for, the cause is `requested` with the previous ring and flight region;
/// after any other reset while a boot ran (MAME's own), `unknown` with nothing kept (what lies
/// there is not this boot's to vouch for); otherwise a power-on. The header then says a boot
/// runs, so nothing is handed over twice.
pub fn take(b: &mut BootInfo) {
    let magic = r32(at(KEPT_MAGIC));
    let boots = r32(at(KEPT_BOOTS));
    match magic {
        KEPT_RESET => {
            b.cause = abi::BOOT_REQUESTED;
            b.boots = boots.saturating_add(1);
            b.prev_uptime_ms = r32(at(KEPT_UPTIME));
            for (i, d) in b.prev_sha256.iter_mut().enumerate() {
                *d = r8(at(KEPT_SHA256) + i as u32);
            }
            b.prev_ring = kseg0(at(KEPT_RING)) as *const u8;
            b.prev_ring_size = abi::SERIAL_RING_SIZE;
            b.prev_ring_head = r32(at(KEPT_RING_HEAD));
            b.prev_ring_sum = r32(at(KEPT_RING_SUM));
            b.prev_flight = kseg0(at(KEPT_FLIGHT)) as *const u8;
            b.prev_flight_size = abi::FLIGHT_REGION_SIZE;
        }
        KEPT_BOOTED => {
            b.cause = abi::BOOT_UNKNOWN;
            b.boots = boots.saturating_add(1);
        }
        _ => {
            b.cause = abi::BOOT_POWER_ON;
            b.boots = 1;
        }
    }
    w32(at(KEPT_BOOTS), b.boots);
    w32(at(KEPT_MAGIC), KEPT_BOOTED);
}
