//! Reads what the kernel says about this boot (`boot_info`, ABI ≥ 13) into the services'
//! [`BootReport`]: the cause, the previous boot's digest and uptime, and copies of its serial
//! ring and flight record, taken once at init (the kernel does not change them afterwards).

use crate::board::kernel::Kernel;
use crate::services::boot::{BootReport, PreviousRing, PreviousSecret, RingDamaged};
use crate::services::flight::record::{self, FlightError};
use crate::services::identity::Identity;
use crate::services::serial_ring::Span;
use alloc::string::String;
use indy::abi::{BOOT_REQUESTED, BootInfo, ring_sum};

/// Everything the kernel kept of the previous boot, checked and copied.
pub fn read(kernel: Kernel, identity: &Identity) -> BootReport {
    let Some(info) = kernel.boot_info() else {
        return BootReport::unknown();
    };
    let flight = kernel
        .previous_copy(
            info.prev_flight,
            info.prev_flight_size,
            Kernel::PREVIOUS_FLIGHT_MAX,
        )
        .map_or(Err(FlightError::Absent), |bytes| record::parse(&bytes));
    let secret = match &flight {
        Ok(f) => PreviousSecret::Known(f.secret.map(|(start, end)| Span { start, end })),
        Err(_) => PreviousSecret::Unknown,
    };
    let ring = previous_ring(kernel, &info).map(|(bytes, head)| {
        if ring_sum(&bytes) != info.prev_ring_sum {
            return Err(RingDamaged);
        }
        Ok(PreviousRing {
            bytes,
            head,
            secret,
        })
    });
    let prev_sha256 = (info.prev_sha256 != [0; 32]).then_some(info.prev_sha256);
    let deploy = info.cause == BOOT_REQUESTED
        && matches!((prev_sha256, identity.image), (Some(p), Some(i)) if p != i.sha256);
    let message = crate::hil::platform::c_str(&info.message);
    BootReport {
        cause: info.cause,
        message: String::from(message),
        boots: info.boots,
        prev_uptime_ms: info.prev_uptime_ms,
        prev_sha256,
        flight,
        ring,
        deploy,
    }
}

fn previous_ring(kernel: Kernel, info: &BootInfo) -> Option<(alloc::vec::Vec<u8>, u32)> {
    // A ring of another size than the kernel's own is not one this module reads.
    if info.prev_ring_size != Kernel::PREVIOUS_RING_MAX {
        return None;
    }
    let bytes = kernel.previous_copy(
        info.prev_ring,
        info.prev_ring_size,
        Kernel::PREVIOUS_RING_MAX,
    )?;
    Some((bytes, info.prev_ring_head))
}
