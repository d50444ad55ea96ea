//! The kernel ↔ module ABI table: one definition for the module (compiled for the 32-bit guest)
//! and the iris rig (compiled for the 64-bit host, which writes the table into guest memory).
//!
//! Every field is one 32-bit guest word, so the layout is the same on both sides: on the guest a
//! [`GuestFn`] is a real `extern "C"` function pointer and a [`GuestPtr`] a raw pointer; on the
//! host both are plain `u32` guest addresses. `docs/abi.md` describes each entry.

/// The ABI version this table describes. Version 10 added `block_read`; 11 added `irq_list`
/// and `bus_probe`; 12 added `image_info`; 13 added `boot_info`; 14 added `serial_write`; 15
/// added the debuggable contexts (`ctx_*`).
pub const ABI_VERSION: u32 = 15;
/// The oldest kernel ABI the module can run on. Entries newer than this are optional: the
/// module checks the table's `size` before calling one (see [`AbiTable::has`]).
pub const ABI_MIN_VERSION: u32 = 10;

/// Size of the kernel's serial ring in bytes.
pub const SERIAL_RING_SIZE: u32 = 8192;
/// Bytes in one block as `block_read` counts them.
pub const BLOCK_SIZE: u32 = 512;

/// Status codes returned by `init` and ABI calls (negative = error).
pub mod status {
    pub const OK: i32 = 0;
    pub const E_ABI_VERSION: i32 = -1;
    pub const E_ABI_SIZE: i32 = -2;
    pub const E_NOMEM: i32 = -3;
    pub const E_IO: i32 = -5;
    /// The context is not in the state the call needs (running where it must be stopped).
    pub const E_BUSY: i32 = -16;
    pub const E_NODEV: i32 = -19;
    pub const E_INVAL: i32 = -22;
    pub const E_RANGE: i32 = -34;
    /// The kernel's table has no such entry (an older ABI).
    pub const E_NOSYS: i32 = -38;
}

#[cfg(target_pointer_width = "32")]
mod word {
    /// A kernel function as the guest sees it.
    pub type GuestFn<F> = F;
    /// A pointer into guest memory as the guest sees it.
    pub type GuestPtr<T> = *const T;
    /// A mutable pointer into guest memory as the guest sees it.
    pub type GuestMutPtr<T> = *mut T;
}

#[cfg(not(target_pointer_width = "32"))]
mod word {
    use core::marker::PhantomData;
    /// A kernel function: on the host, the guest address of its stub.
    #[repr(transparent)]
    #[derive(Clone, Copy, Debug)]
    pub struct GuestFn<F>(pub u32, pub PhantomData<F>);
    /// A guest pointer: on the host, the guest address.
    #[repr(transparent)]
    #[derive(Clone, Copy, Debug)]
    pub struct GuestPtr<T>(pub u32, pub PhantomData<T>);
    /// A mutable guest pointer: on the host, the guest address.
    pub type GuestMutPtr<T> = GuestPtr<T>;
}

pub use word::{GuestFn, GuestMutPtr, GuestPtr};

/// One process as the kernel lists it (`proc_list`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcInfo {
    pub pid: u32,
    /// 0 running, 1 ready, 2 sleeping, 3 stopped, 4 zombie.
    pub state: u32,
    /// CPU time used, in milliseconds.
    pub cpu_ms: u32,
    /// NUL-padded name.
    pub name: [u8; 20],
}

/// One interrupt source as the kernel lists it (`irq_list`, ABI ≥ 11).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IrqInfo {
    /// NUL-padded name ("enet", "serial", "timer", …).
    pub name: [u8; 16],
    /// Physical address of the status register holding the source (INT2/INT3 `istat`), or 0
    /// when the source is a CPU interrupt line.
    pub reg: u32,
    /// The bit in `reg`, or the CPU's IP line (0–7) when `reg` is 0.
    pub bit: u32,
    /// [`IRQ_ENABLED`] | [`IRQ_PENDING`].
    pub flags: u32,
    /// Interrupts taken since boot (wraps at 2^32).
    pub count: u32,
}

/// `IrqInfo::flags`: the source is unmasked.
pub const IRQ_ENABLED: u32 = 1;
/// `IrqInfo::flags`: the source is asserted now.
pub const IRQ_PENDING: u32 = 2;

/// `ImageInfo::deploy`: the kernel runs the image the boot configuration names.
pub const DEPLOY_OK: u32 = 0;
/// `ImageInfo::deploy`: the configured image's SHA-256 was not the configured one.
pub const DEPLOY_SHA256_MISMATCH: u32 = 1;
/// `ImageInfo::deploy`: the configured image could not be fetched.
pub const DEPLOY_FETCH_FAILED: u32 = 2;
/// `ImageInfo::deploy`: the configured image could not be relocated (not a loadable object).
pub const DEPLOY_LOAD_FAILED: u32 = 3;
/// `ImageInfo::deploy`: the configured image's `irix7_mcp_init` failed.
pub const DEPLOY_INIT_FAILED: u32 = 4;

/// The words the kernel says for a `deploy` value (its console line, the module's `status`).
pub fn deploy_reason(deploy: u32) -> &'static str {
    match deploy {
        DEPLOY_OK => "ok",
        DEPLOY_SHA256_MISMATCH => "sha256 mismatch",
        DEPLOY_FETCH_FAILED => "fetch failed",
        DEPLOY_LOAD_FAILED => "load failed",
        DEPLOY_INIT_FAILED => "init failed",
        _ => "unknown",
    }
}

/// What the kernel knows about the image it runs (`image_info`, ABI ≥ 12): the digest it
/// verified at load, and whether that is the image the boot configuration names or the last
/// good one the kernel fell back to because the configured one was refused.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageInfo {
    /// SHA-256 of the running image, as the kernel verified it before loading.
    pub sha256: [u8; 32],
    /// [`DEPLOY_OK`], or why the configured image was refused and the last good one runs.
    pub deploy: u32,
    /// The digest the boot configuration named for the refused image (zero when `deploy` is
    /// [`DEPLOY_OK`]).
    pub refused_sha256: [u8; 32],
}

/// `BootInfo::cause`: the kernel cannot say (a kernel before ABI 13 has no `boot_info`).
pub const BOOT_UNKNOWN: u32 = 0;
/// `BootInfo::cause`: power was applied; nothing of an earlier boot survives.
pub const BOOT_POWER_ON: u32 = 1;
/// `BootInfo::cause`: the module called `reset` (`system.reset`, the shell's `reboot`, a deploy).
pub const BOOT_REQUESTED: u32 = 2;
/// `BootInfo::cause`: the memory controller's watchdog fired (nothing fed it in time).
pub const BOOT_WATCHDOG: u32 = 3;
/// `BootInfo::cause`: the kernel panicked (the module trapped); `message` says why.
pub const BOOT_PANIC: u32 = 4;
/// `BootInfo::cause`: the configured image was refused at this boot and the last good image
/// runs (`ImageInfo::deploy` says why).
pub const BOOT_REFUSED: u32 = 5;

/// The word for a boot cause (`status`, the banner, the status page).
pub fn boot_cause_name(cause: u32) -> &'static str {
    match cause {
        BOOT_POWER_ON => "power-on",
        BOOT_REQUESTED => "requested",
        BOOT_WATCHDOG => "watchdog",
        BOOT_PANIC => "panic",
        BOOT_REFUSED => "refused",
        _ => "unknown",
    }
}

/// The checksum `BootInfo::prev_ring_sum` holds: the wrapping sum of the ring's bytes.
pub fn ring_sum(ring: &[u8]) -> u32 {
    ring.iter().fold(0u32, |s, &b| s.wrapping_add(u32::from(b)))
}

/// Bytes of the region the kernel keeps for the module's flight record across warm resets.
pub const FLIGHT_REGION_SIZE: u32 = 4096;
/// Bytes of `BootInfo::message`.
pub const BOOT_MESSAGE_LEN: usize = 128;

/// Why this boot happened and what survives of the previous one (`boot_info`, ABI ≥ 13). The
/// kernel writes it before `init`; only `flight`'s bytes are the module's to write.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BootInfo {
    /// [`BOOT_POWER_ON`], [`BOOT_REQUESTED`], [`BOOT_WATCHDOG`], [`BOOT_PANIC`] or
    /// [`BOOT_REFUSED`].
    pub cause: u32,
    /// How long the previous boot ran, in ms (0 after a power-on).
    pub prev_uptime_ms: u32,
    /// Boots since power-on, this one included (1 after a power-on).
    pub boots: u32,
    /// SHA-256 of the image the previous boot ran (zero after a power-on).
    pub prev_sha256: [u8; 32],
    /// NUL-padded: the kernel's panic message for [`BOOT_PANIC`], else empty.
    pub message: [u8; BOOT_MESSAGE_LEN],
    /// The previous boot's serial ring, as it was at the reset (kept across a warm reset).
    pub prev_ring: GuestPtr<u8>,
    /// Its size in bytes; 0 when nothing survived (after a power-on).
    pub prev_ring_size: u32,
    /// Its absolute head: bytes the previous boot wrote; byte `n` is at `n % prev_ring_size`.
    pub prev_ring_head: u32,
    /// The wrapping sum of the previous ring's `prev_ring_size` bytes as its kernel kept it
    /// (updated with each write: plus the new byte, minus the one it overwrote), so a ring
    /// damaged across the reset is told from one that was not ([`ring_sum`]).
    pub prev_ring_sum: u32,
    /// The previous boot's flight record region, as it was at the reset (read-only).
    pub prev_flight: GuestPtr<u8>,
    /// Its size in bytes; 0 when nothing survived.
    pub prev_flight_size: u32,
    /// This boot's flight record region: the module writes it, the kernel keeps it across a
    /// warm reset and hands it over as `prev_flight` at the next boot.
    pub flight: GuestMutPtr<u8>,
    /// Its size in bytes ([`FLIGHT_REGION_SIZE`]; 0: no region).
    pub flight_size: u32,
}

/// Words of a context's register frame ([`CtxFrame`]).
pub const CTX_FRAME_WORDS: usize = 72;
/// Frame word of each register, in GDB's raw order for 32-bit MIPS (the `g` packet's order):
/// `r0..r31` are words 0–31.
pub mod frame {
    pub const SR: usize = 32;
    pub const LO: usize = 33;
    pub const HI: usize = 34;
    pub const BAD: usize = 35;
    pub const CAUSE: usize = 36;
    pub const PC: usize = 37;
    /// `f0`; `f31` is word 69.
    pub const F0: usize = 38;
    pub const FCSR: usize = 70;
    pub const FIR: usize = 71;
}

/// A stopped context's registers: 72 words in GDB's MIPS order ([`frame`]), native
/// (big-endian) words. A soft-float kernel answers zero for the FPU words.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtxFrame {
    pub w: [u32; CTX_FRAME_WORDS],
}

impl Default for CtxFrame {
    fn default() -> Self {
        CtxFrame {
            w: [0; CTX_FRAME_WORDS],
        }
    }
}

/// `CtxInfo::state`: it runs (time-sliced beside the module).
pub const CTX_RUNNING: u32 = 0;
/// `CtxInfo::state`: it is stopped (a breakpoint, an exception or a requested stop).
pub const CTX_STOPPED: u32 = 1;
/// `CtxInfo::state`: it has returned from its entry point; nothing of it runs again.
pub const CTX_EXITED: u32 = 2;

/// One debuggable context as the kernel lists it (`ctx_list`, ABI ≥ 15): a cell the kernel
/// time-slices beside the module, in its own window of memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxInfo {
    /// Its id, never 0 (the module names it so in every `ctx_*` call).
    pub id: u32,
    /// [`CTX_RUNNING`], [`CTX_STOPPED`] or [`CTX_EXITED`].
    pub state: u32,
    /// Reserved, 0.
    pub flags: u32,
    /// Its pc when stopped, else 0.
    pub pc: u32,
    /// Its window of memory (KSEG0 addresses): what `ctx_mem_read`/`ctx_mem_write` reach.
    pub base: u32,
    pub size: u32,
    /// NUL-padded name.
    pub name: [u8; 16],
}

/// `CtxStop::why`: a CPU exception (`exc_code` says which; a `break` is 9).
pub const STOP_EXCEPTION: u32 = 1;
/// `CtxStop::why`: `ctx_stop` asked for it.
pub const STOP_REQUESTED: u32 = 2;
/// `CtxStop::why`: it returned from its entry point.
pub const STOP_EXITED: u32 = 3;

/// MIPS exception codes (`Cause.ExcCode`) a stop may carry.
pub mod exc {
    pub const INT: u32 = 0;
    pub const TLBL: u32 = 2;
    pub const TLBS: u32 = 3;
    pub const ADEL: u32 = 4;
    pub const ADES: u32 = 5;
    pub const IBE: u32 = 6;
    pub const DBE: u32 = 7;
    pub const SYS: u32 = 8;
    pub const BP: u32 = 9;
    pub const RI: u32 = 10;
    pub const CPU: u32 = 11;
    pub const OV: u32 = 12;
    pub const TR: u32 = 13;
    pub const FPE: u32 = 15;
}

/// Why a context last stopped (`ctx_stop_info`, ABI ≥ 15).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxStop {
    /// Which stop of the context this is (1, 2, …).
    pub seq: u32,
    /// [`STOP_EXCEPTION`], [`STOP_REQUESTED`] or [`STOP_EXITED`].
    pub why: u32,
    /// `Cause.ExcCode` for an exception ([`exc`]), else 0.
    pub exc_code: u32,
    /// EPC: the faulting instruction, or the branch when it sat in a delay slot.
    pub pc: u32,
    /// BadVAddr for an address error or TLB exception, else 0.
    pub bad: u32,
    /// Cause: `exc_code << 2`, bit 31 (BD) when the instruction sat in a delay slot.
    pub cause: u32,
}

/// Most bytes one `ctx_mem_read` or `ctx_mem_write` moves.
pub const CTX_MEM_MAX: usize = 4096;

/// The machine status block the kernel keeps up to date (read-only for the module).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MachineStatus {
    /// IPv4 address the kernel knows for the machine (0 if none).
    pub ip: [u8; 4],
    /// Ethernet address, two bytes of padding.
    pub mac: [u8; 8],
    /// Installed RAM in bytes.
    pub ram_bytes: u32,
    /// Milliseconds since the kernel started.
    pub uptime_ms: u32,
    /// Wall-clock time, seconds since 1970-01-01 UTC (from the DS1386).
    pub unix_time: u32,
    /// The OS version string, NUL-padded ("7.0.0").
    pub os_version: [u8; 16],
}

/// The table the kernel hands to `irix7_mcp_init`. Entries are never reordered; new ones go at
/// the end with a version bump, and `size` tells the module how many the kernel filled in.
#[repr(C)]
pub struct AbiTable {
    pub version: u32,
    /// Size of the table in bytes as the kernel built it.
    pub size: u32,
    /// Write bytes to the console (Z85C30 channel B) and the serial ring. Returns bytes written.
    pub console_write: GuestFn<unsafe extern "C" fn(*const u8, usize) -> i32>,
    /// Base of the kernel's serial ring (`serial_ring_size` bytes).
    pub serial_ring: GuestPtr<u8>,
    pub serial_ring_size: u32,
    /// Absolute count of bytes ever written to the ring; byte `n` lives at `n % size`.
    pub serial_head: GuestPtr<u32>,
    /// The machine status block.
    pub machine_status: GuestPtr<MachineStatus>,
    /// Look up an environment variable: `(key, key_len, buf, buf_len)` → value length (which may
    /// exceed `buf_len`: the value was cut), or -1 when absent.
    pub env_get: GuestFn<unsafe extern "C" fn(*const u8, usize, *mut u8, usize) -> i32>,
    /// Read `count` 512-byte blocks from SCSI `target` at `lba` into `buf`: `(target, lba, count,
    /// buf)` → 0 or a negative status (`E_NODEV`, `E_RANGE`, `E_IO`). ABI ≥ 10.
    pub block_read: GuestFn<unsafe extern "C" fn(u32, u32, u32, *mut u8) -> i32>,
    /// Size of SCSI `target` in blocks, or a negative status.
    pub block_count: GuestFn<unsafe extern "C" fn(u32) -> i32>,
    /// Monotonic milliseconds since boot.
    pub clock_ms: GuestFn<unsafe extern "C" fn() -> u64>,
    /// Write back (flush) the data cache over `(addr, len)` before a device reads it.
    pub cache_wback: GuestFn<unsafe extern "C" fn(*const u8, usize)>,
    /// Invalidate the data cache over `(addr, len)` before the CPU reads what a device wrote.
    pub cache_inval: GuestFn<unsafe extern "C" fn(*const u8, usize)>,
    /// Physical address of a kernel virtual address, for DMA descriptors.
    pub virt_to_phys: GuestFn<unsafe extern "C" fn(*const u8) -> u32>,
    /// The module's heap: base and size in bytes, owned by the module until `exit`.
    pub heap_base: GuestMutPtr<u8>,
    pub heap_size: u32,
    /// Reset the machine (does not return).
    pub reset: GuestFn<unsafe extern "C" fn()>,
    /// Power the machine off (does not return).
    pub poweroff: GuestFn<unsafe extern "C" fn()>,
    /// Feed the memory controller's watchdog.
    pub watchdog_kick: GuestFn<unsafe extern "C" fn()>,
    /// Fill up to `max` entries of the process list: `(buf, max)` → number of processes.
    pub proc_list: GuestFn<unsafe extern "C" fn(*mut ProcInfo, usize) -> i32>,
    /// Queue keystrokes on the console input: `(bytes, len)` → bytes queued.
    pub console_input: GuestFn<unsafe extern "C" fn(*const u8, usize) -> i32>,
    /// Fill up to `max` interrupt sources: `(buf, max)` → number of sources. ABI ≥ 11.
    pub irq_list: GuestFn<unsafe extern "C" fn(*mut IrqInfo, usize) -> i32>,
    /// Whether a `width`-byte read of physical `phys` answers: `(phys, width)` → 0, `E_NODEV`
    /// (bus error) or `E_INVAL` (width not 1/2/4 or unaligned). The kernel probes under its
    /// bus-error handler, so a missing device is an answer, not a crash. ABI ≥ 11.
    pub bus_probe: GuestFn<unsafe extern "C" fn(u32, u32) -> i32>,
    /// What the kernel knows about the running image: its digest and the last deploy's
    /// outcome. ABI ≥ 12.
    pub image_info: GuestPtr<ImageInfo>,
    /// Why this boot happened and what survives of the previous one. ABI ≥ 13.
    pub boot_info: GuestPtr<BootInfo>,
    /// Write bytes to the serial line and the serial ring only, never to a console the kernel
    /// draws on the screen: for text a person at the serial line may read but a picture of the
    /// screen must not show (the generated token). Returns bytes written. ABI ≥ 14.
    pub serial_write: GuestFn<unsafe extern "C" fn(*const u8, usize) -> i32>,
    /// Stops of every context ever (wraps at 2^32): the module polls it, and calls
    /// `ctx_stop_info` when it changed. A stop is never a callback into the module. ABI ≥ 15.
    pub ctx_events: GuestPtr<u32>,
    /// Fill up to `max` debuggable contexts: `(buf, max)` → number of contexts. ABI ≥ 15.
    pub ctx_list: GuestFn<unsafe extern "C" fn(*mut CtxInfo, usize) -> i32>,
    /// Stop context `id` (a requested stop); it is stopped when the call returns (one CPU): `(id)`
    /// → 0, or `E_INVAL` for no such context, `E_BUSY` when it has exited. ABI ≥ 15.
    pub ctx_stop: GuestFn<unsafe extern "C" fn(u32) -> i32>,
    /// Let stopped context `id` run on from its frame's pc: `(id)` → 0, `E_BUSY` when it is
    /// running or has exited. ABI ≥ 15.
    pub ctx_resume: GuestFn<unsafe extern "C" fn(u32) -> i32>,
    /// Why context `id` last stopped: `(id, out)` → 1 stopped (`out` filled), 0 running, 2
    /// exited (`out` filled), or a negative status. ABI ≥ 15.
    pub ctx_stop_info: GuestFn<unsafe extern "C" fn(u32, *mut CtxStop) -> i32>,
    /// Copy stopped context `id`'s register frame: `(id, out)` → 0 or `E_BUSY`. ABI ≥ 15.
    pub ctx_regs_get: GuestFn<unsafe extern "C" fn(u32, *mut CtxFrame) -> i32>,
    /// Set stopped context `id`'s registers from a frame (`r0`, `bad`, `cause`, the FPU words
    /// and `fir` are ignored): `(id, frame)` → 0 or `E_BUSY`. ABI ≥ 15.
    pub ctx_regs_set: GuestFn<unsafe extern "C" fn(u32, *const CtxFrame) -> i32>,
    /// Read context `id`'s memory: `(id, va, buf, len)` → bytes read, or `E_RANGE` when any of
    /// `va..va+len` is outside the context's window (`CtxInfo::base`, `size`), at most
    /// [`CTX_MEM_MAX`] a call. ABI ≥ 15.
    pub ctx_mem_read: GuestFn<unsafe extern "C" fn(u32, u32, *mut u8, usize) -> i32>,
    /// Write stopped context `id`'s memory, keeping the instruction cache coherent (code the
    /// context runs next is what was written): `(id, va, data, len)` → bytes written, `E_BUSY`
    /// while it runs, `E_RANGE` outside its window, at most [`CTX_MEM_MAX`] a call. ABI ≥ 15.
    pub ctx_mem_write: GuestFn<unsafe extern "C" fn(u32, u32, *const u8, usize) -> i32>,
}

impl AbiTable {
    /// Whether the kernel's table reaches the entry ending `end` bytes into it (an entry's
    /// `offset_of! + 4`): a table from an older kernel is shorter.
    pub fn has(&self, end: usize) -> bool {
        self.size as usize >= end
    }
}

/// Number of 32-bit words in the table.
pub const ABI_TABLE_WORDS: usize = 35;
/// Size of the table in bytes.
pub const ABI_TABLE_SIZE: u32 = (ABI_TABLE_WORDS * 4) as u32;
/// Size of an ABI 10 table (up to `console_input`): the least the module accepts.
pub const ABI_TABLE_MIN_SIZE: u32 = 21 * 4;

const _: () = assert!(core::mem::size_of::<AbiTable>() == ABI_TABLE_WORDS * 4);
const _: () = assert!(core::mem::size_of::<MachineStatus>() == 40);
const _: () = assert!(core::mem::size_of::<ProcInfo>() == 32);
const _: () = assert!(core::mem::size_of::<IrqInfo>() == 32);
const _: () = assert!(core::mem::size_of::<ImageInfo>() == 68);
const _: () = assert!(core::mem::size_of::<BootInfo>() == 204);
const _: () = assert!(core::mem::size_of::<CtxInfo>() == 40);
const _: () = assert!(core::mem::size_of::<CtxStop>() == 24);
const _: () = assert!(core::mem::size_of::<CtxFrame>() == CTX_FRAME_WORDS * 4);
const _: () = assert!(core::mem::offset_of!(AbiTable, irq_list) == ABI_TABLE_MIN_SIZE as usize);

/// The module's exported entry points (symbols the loader looks up).
pub const SYM_INIT: &str = "irix7_mcp_init";
pub const SYM_POLL: &str = "irix7_mcp_poll";
pub const SYM_EXIT: &str = "irix7_mcp_exit";
