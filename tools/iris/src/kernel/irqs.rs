//! The kernel's interrupt sources for `irq_list` (ABI 11), from the rig's device models.
//!
//! The rig delivers no interrupts (the module polls), so a count is what the model raised: the
//! Ethernet model counts each completed descriptor with XIE, the CPU timer follows the rig
//! clock at [`HZ`]. Sources the rig does not model are listed masked with a count of 0.

use indy::abi::{IRQ_ENABLED, IRQ_PENDING, IrqInfo};
use indy::regs::int3::{ISTAT0, ISTAT1, MAPPED};

/// Clock interrupts per second of the rig's kernel (CPU count/compare, IP7).
pub const HZ: u64 = 100;

/// What the kernel knows at the time of the call.
pub struct IrqState {
    pub uptime_ms: u64,
    /// Interrupts the Ethernet model raised since boot.
    pub enet_raised: u64,
    /// Whether the Ethernet interrupt is asserted now.
    pub enet_pending: bool,
}

fn info(name: &str, reg: u32, bit: u32, flags: u32, count: u64) -> IrqInfo {
    let mut n = [0u8; 16];
    let len = name.len().min(15);
    n[..len].copy_from_slice(&name.as_bytes()[..len]);
    IrqInfo {
        name: n,
        reg,
        bit,
        flags,
        count: count as u32,
    }
}

/// Every source, in a stable order.
pub fn list(s: &IrqState) -> Vec<IrqInfo> {
    let enet_flags = IRQ_ENABLED | if s.enet_pending { IRQ_PENDING } else { 0 };
    vec![
        info("timer", 0, 7, IRQ_ENABLED, s.uptime_ms * HZ / 1000),
        info("buserr", 0, 6, IRQ_ENABLED, 0),
        info("enet", ISTAT0, 3, enet_flags, s.enet_raised),
        info("scsi0", ISTAT0, 1, 0, 0),
        info("scsi1", ISTAT0, 2, 0, 0),
        info("gfxdma", ISTAT0, 4, 0, 0),
        info("pport", ISTAT0, 5, 0, 0),
        info("panel", ISTAT1, 1, 0, 0),
        info("hpc3dma", ISTAT1, 4, 0, 0),
        info("vretrace", MAPPED, 0, 0, 0),
        info("keyboard", MAPPED, 4, 0, 0),
        info("serial", MAPPED, 5, 0, 0),
    ]
}

/// One entry as guest memory holds it (big-endian words).
pub fn irq_bytes(i: &IrqInfo) -> Vec<u8> {
    let mut b = i.name.to_vec();
    for w in [i.reg, i.bit, i.flags, i.count] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn counts_follow_the_machine() {
        let l = list(&IrqState {
            uptime_ms: 2500,
            enet_raised: 9,
            enet_pending: true,
        });
        let by = |n: &str| l.iter().find(|i| i.name.starts_with(n.as_bytes())).unwrap();
        assert_eq!(by("timer").count, 250);
        assert_eq!(by("enet").count, 9);
        assert_eq!(by("enet").flags, IRQ_ENABLED | IRQ_PENDING);
        assert_eq!(by("enet").reg, ISTAT0);
        assert_eq!(by("serial").flags, 0);
    }

    #[test]
    fn bytes_follow_the_struct_layout() {
        let i = info("enet", ISTAT0, 3, 1, 0x0102_0304);
        let b = irq_bytes(&i);
        assert_eq!(b.len(), size_of::<IrqInfo>());
        assert_eq!(&b[..5], b"enet\0");
        let at = |o: usize| u32::from_be_bytes(b[o..o + 4].try_into().unwrap());
        assert_eq!(at(offset_of!(IrqInfo, reg)), ISTAT0);
        assert_eq!(at(offset_of!(IrqInfo, bit)), 3);
        assert_eq!(at(offset_of!(IrqInfo, count)), 0x0102_0304);
    }
}
