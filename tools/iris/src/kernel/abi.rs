//! The ABI table as the rig builds it in guest memory: one stub address per kernel function
//! (a code hook on the stub range runs the kernel's Rust implementation) and the data pointers.

use core::marker::PhantomData;
use core::mem::offset_of;

use crate::memmap;
use indy::abi::{
    ABI_TABLE_MIN_SIZE, ABI_TABLE_SIZE, ABI_TABLE_WORDS, ABI_VERSION, AbiTable, GuestFn, GuestPtr,
    ImageInfo, MachineStatus, ProcInfo, SERIAL_RING_SIZE,
};

/// The kernel functions of the table, in stub order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbiFn {
    ConsoleWrite,
    EnvGet,
    BlockRead,
    BlockCount,
    ClockMs,
    CacheWback,
    CacheInval,
    VirtToPhys,
    Reset,
    Poweroff,
    WatchdogKick,
    ProcList,
    ConsoleInput,
    IrqList,
    BusProbe,
    SerialWrite,
    CtxList,
    CtxStop,
    CtxResume,
    CtxStopInfo,
    CtxRegsGet,
    CtxRegsSet,
    CtxMemRead,
    CtxMemWrite,
}

impl AbiFn {
    pub const ALL: [AbiFn; 24] = [
        AbiFn::ConsoleWrite,
        AbiFn::EnvGet,
        AbiFn::BlockRead,
        AbiFn::BlockCount,
        AbiFn::ClockMs,
        AbiFn::CacheWback,
        AbiFn::CacheInval,
        AbiFn::VirtToPhys,
        AbiFn::Reset,
        AbiFn::Poweroff,
        AbiFn::WatchdogKick,
        AbiFn::ProcList,
        AbiFn::ConsoleInput,
        AbiFn::IrqList,
        AbiFn::BusProbe,
        AbiFn::SerialWrite,
        AbiFn::CtxList,
        AbiFn::CtxStop,
        AbiFn::CtxResume,
        AbiFn::CtxStopInfo,
        AbiFn::CtxRegsGet,
        AbiFn::CtxRegsSet,
        AbiFn::CtxMemRead,
        AbiFn::CtxMemWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AbiFn::ConsoleWrite => "console_write",
            AbiFn::EnvGet => "env_get",
            AbiFn::BlockRead => "block_read",
            AbiFn::BlockCount => "block_count",
            AbiFn::ClockMs => "clock_ms",
            AbiFn::CacheWback => "cache_wback",
            AbiFn::CacheInval => "cache_inval",
            AbiFn::VirtToPhys => "virt_to_phys",
            AbiFn::Reset => "reset",
            AbiFn::Poweroff => "poweroff",
            AbiFn::WatchdogKick => "watchdog_kick",
            AbiFn::ProcList => "proc_list",
            AbiFn::ConsoleInput => "console_input",
            AbiFn::IrqList => "irq_list",
            AbiFn::BusProbe => "bus_probe",
            AbiFn::SerialWrite => "serial_write",
            AbiFn::CtxList => "ctx_list",
            AbiFn::CtxStop => "ctx_stop",
            AbiFn::CtxResume => "ctx_resume",
            AbiFn::CtxStopInfo => "ctx_stop_info",
            AbiFn::CtxRegsGet => "ctx_regs_get",
            AbiFn::CtxRegsSet => "ctx_regs_set",
            AbiFn::CtxMemRead => "ctx_mem_read",
            AbiFn::CtxMemWrite => "ctx_mem_write",
        }
    }

    pub fn index(self) -> usize {
        Self::ALL.iter().position(|f| *f == self).unwrap_or(0)
    }

    /// The function whose stub is at guest address `va`, if any.
    pub fn from_stub(va: u32) -> Option<AbiFn> {
        let base = memmap::ram_va(memmap::STUB_OFF);
        let off = va.checked_sub(base)?;
        if off % memmap::STUB_SLOT != 0 {
            return None;
        }
        Self::ALL.get((off / memmap::STUB_SLOT) as usize).copied()
    }

    pub fn stub(self) -> u32 {
        memmap::ram_va(memmap::STUB_OFF) + self.index() as u32 * memmap::STUB_SLOT
    }
}

/// What a kernel function hands back in `$v0`/`$v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbiRet {
    Void,
    I32(i32),
    U32(u32),
    /// o32 on big-endian: `$v0` = high word, `$v1` = low word.
    U64(u64),
    /// The call ends the module's run (reset, power-off): the rig stops the CPU.
    NoReturn,
}

fn f<F>(which: AbiFn) -> GuestFn<F> {
    GuestFn(which.stub(), PhantomData)
}

fn p<T>(va: u32) -> GuestPtr<T> {
    GuestPtr(va, PhantomData)
}

/// The table for a machine whose heap is `heap_size` bytes. Written as a struct literal so a new
/// ABI entry does not compile until the rig provides it.
pub fn build_table(heap_size: u32) -> AbiTable {
    AbiTable {
        version: ABI_VERSION,
        size: ABI_TABLE_SIZE,
        console_write: f(AbiFn::ConsoleWrite),
        serial_ring: p(memmap::ram_va(memmap::SERIAL_RING_OFF)),
        serial_ring_size: SERIAL_RING_SIZE,
        serial_head: p(memmap::ram_va(memmap::SERIAL_HEAD_OFF)),
        machine_status: p(memmap::ram_va(memmap::STATUS_OFF)),
        env_get: f(AbiFn::EnvGet),
        block_read: f(AbiFn::BlockRead),
        block_count: f(AbiFn::BlockCount),
        clock_ms: f(AbiFn::ClockMs),
        cache_wback: f(AbiFn::CacheWback),
        cache_inval: f(AbiFn::CacheInval),
        virt_to_phys: f(AbiFn::VirtToPhys),
        heap_base: p(memmap::ram_va(memmap::HEAP_OFF)),
        heap_size,
        reset: f(AbiFn::Reset),
        poweroff: f(AbiFn::Poweroff),
        watchdog_kick: f(AbiFn::WatchdogKick),
        proc_list: f(AbiFn::ProcList),
        console_input: f(AbiFn::ConsoleInput),
        irq_list: f(AbiFn::IrqList),
        bus_probe: f(AbiFn::BusProbe),
        image_info: p(memmap::ram_va(memmap::IMAGE_INFO_OFF)),
        boot_info: p(memmap::ram_va(memmap::BOOT_INFO_OFF)),
        serial_write: f(AbiFn::SerialWrite),
        ctx_events: p(memmap::ram_va(memmap::CTX_EVENTS_OFF)),
        ctx_list: f(AbiFn::CtxList),
        ctx_stop: f(AbiFn::CtxStop),
        ctx_resume: f(AbiFn::CtxResume),
        ctx_stop_info: f(AbiFn::CtxStopInfo),
        ctx_regs_get: f(AbiFn::CtxRegsGet),
        ctx_regs_set: f(AbiFn::CtxRegsSet),
        ctx_mem_read: f(AbiFn::CtxMemRead),
        ctx_mem_write: f(AbiFn::CtxMemWrite),
    }
}

/// The table an older kernel of ABI `version` (10 to [`ABI_VERSION`]) hands over: that version,
/// and only the entries it had, so the module must not call the newer ones.
pub fn table_bytes_as(version: u32, table: AbiTable) -> Vec<u8> {
    let size = match version {
        ..=10 => ABI_TABLE_MIN_SIZE as usize,
        11 => offset_of!(AbiTable, image_info),
        12 => offset_of!(AbiTable, boot_info),
        13 => offset_of!(AbiTable, serial_write),
        14 => offset_of!(AbiTable, ctx_events),
        _ => ABI_TABLE_SIZE as usize,
    };
    let mut b = table_bytes(table);
    b.truncate(size);
    b[..4].copy_from_slice(&version.min(ABI_VERSION).to_be_bytes());
    b[4..8].copy_from_slice(&(size as u32).to_be_bytes());
    b
}

/// The table as guest memory holds it: big-endian words.
pub fn table_bytes(table: AbiTable) -> Vec<u8> {
    // SAFETY: `AbiTable` is `repr(C)` and every field is a `u32` or a `repr(transparent)` wrapper
    // of one (table.rs asserts the size is `ABI_TABLE_WORDS` words), so it has the layout of
    // `[u32; ABI_TABLE_WORDS]`.
    let words: [u32; ABI_TABLE_WORDS] = unsafe { core::mem::transmute(table) };
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// The machine status block as guest memory holds it.
pub fn status_bytes(s: &MachineStatus) -> Vec<u8> {
    let mut b = vec![0u8; core::mem::size_of::<MachineStatus>()];
    let put = |b: &mut Vec<u8>, off: usize, bytes: &[u8]| {
        b[off..off + bytes.len()].copy_from_slice(bytes)
    };
    put(&mut b, offset_of!(MachineStatus, ip), &s.ip);
    put(&mut b, offset_of!(MachineStatus, mac), &s.mac);
    put(
        &mut b,
        offset_of!(MachineStatus, ram_bytes),
        &s.ram_bytes.to_be_bytes(),
    );
    put(
        &mut b,
        offset_of!(MachineStatus, uptime_ms),
        &s.uptime_ms.to_be_bytes(),
    );
    put(
        &mut b,
        offset_of!(MachineStatus, unix_time),
        &s.unix_time.to_be_bytes(),
    );
    put(&mut b, offset_of!(MachineStatus, os_version), &s.os_version);
    b
}

/// The image info block as guest memory holds it.
pub fn image_info_bytes(i: &ImageInfo) -> Vec<u8> {
    let mut b = vec![0u8; core::mem::size_of::<ImageInfo>()];
    b[offset_of!(ImageInfo, sha256)..][..32].copy_from_slice(&i.sha256);
    b[offset_of!(ImageInfo, deploy)..][..4].copy_from_slice(&i.deploy.to_be_bytes());
    b[offset_of!(ImageInfo, refused_sha256)..][..32].copy_from_slice(&i.refused_sha256);
    b
}

/// One process entry as guest memory holds it.
pub fn proc_bytes(p: &ProcInfo) -> Vec<u8> {
    let mut b = vec![0u8; core::mem::size_of::<ProcInfo>()];
    let put = |b: &mut Vec<u8>, off: usize, bytes: &[u8]| {
        b[off..off + bytes.len()].copy_from_slice(bytes)
    };
    put(&mut b, offset_of!(ProcInfo, pid), &p.pid.to_be_bytes());
    put(&mut b, offset_of!(ProcInfo, state), &p.state.to_be_bytes());
    put(
        &mut b,
        offset_of!(ProcInfo, cpu_ms),
        &p.cpu_ms.to_be_bytes(),
    );
    put(&mut b, offset_of!(ProcInfo, name), &p.name);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(b: &[u8], off: usize) -> u32 {
        u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
    }

    #[test]
    fn table_layout_matches_field_offsets() {
        let b = table_bytes(build_table(0x1234_0000));
        assert_eq!(b.len(), ABI_TABLE_SIZE as usize);
        assert_eq!(word(&b, offset_of!(AbiTable, version)), ABI_VERSION);
        assert_eq!(word(&b, offset_of!(AbiTable, size)), ABI_TABLE_SIZE);
        assert_eq!(word(&b, offset_of!(AbiTable, heap_size)), 0x1234_0000);
        assert_eq!(
            word(&b, offset_of!(AbiTable, console_write)),
            AbiFn::ConsoleWrite.stub()
        );
        assert_eq!(
            word(&b, offset_of!(AbiTable, console_input)),
            AbiFn::ConsoleInput.stub()
        );
        assert_eq!(
            word(&b, offset_of!(AbiTable, bus_probe)),
            AbiFn::BusProbe.stub()
        );
        assert_eq!(
            word(&b, offset_of!(AbiTable, image_info)),
            memmap::ram_va(memmap::IMAGE_INFO_OFF)
        );
        let old = table_bytes_as(10, build_table(0x1234_0000));
        assert_eq!(old.len(), 84);
        assert_eq!((word(&old, 0), word(&old, 4)), (10, 84));
        assert_eq!(&old[8..], &b[8..84]);
        assert_eq!(
            word(&b, offset_of!(AbiTable, serial_ring_size)),
            SERIAL_RING_SIZE
        );
        assert_eq!(
            word(&b, offset_of!(AbiTable, heap_base)),
            memmap::ram_va(memmap::HEAP_OFF)
        );
    }

    #[test]
    fn stubs_round_trip() {
        for f in AbiFn::ALL {
            assert_eq!(AbiFn::from_stub(f.stub()), Some(f));
        }
        assert_eq!(AbiFn::from_stub(AbiFn::ClockMs.stub() + 4), None);
        assert!(AbiFn::ALL.len() as u32 <= memmap::STUB_COUNT);
    }

    #[test]
    fn status_is_big_endian() {
        let s = MachineStatus {
            ip: [10, 0, 7, 2],
            mac: [8, 0, 0x69, 1, 2, 3, 0, 0],
            ram_bytes: 64 << 20,
            uptime_ms: 0x0102_0304,
            unix_time: 5,
            os_version: *b"7.0.0\0\0\0\0\0\0\0\0\0\0\0",
        };
        let b = status_bytes(&s);
        assert_eq!(&b[..4], &[10, 0, 7, 2]);
        assert_eq!(word(&b, offset_of!(MachineStatus, uptime_ms)), 0x0102_0304);
        assert_eq!(&b[offset_of!(MachineStatus, os_version)..][..5], b"7.0.0");
    }

    #[test]
    fn image_info_is_big_endian() {
        let i = ImageInfo {
            sha256: [0xAB; 32],
            deploy: indy::abi::DEPLOY_SHA256_MISMATCH,
            refused_sha256: [0xCD; 32],
        };
        let b = image_info_bytes(&i);
        assert_eq!(b.len(), 68);
        assert_eq!(&b[..32], &[0xAB; 32]);
        assert_eq!(word(&b, 32), 1);
        assert_eq!(&b[36..], &[0xCD; 32]);
    }
}
