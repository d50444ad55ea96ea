//! The kernel stand-in: what the IRIX 7 kernel does for the module (`docs/abi.md`), on MAME's
//! Indy. It asks the Lua script for the image and the boot environment, checks the image's
//! SHA-256 against `mcp.sha256` and relocates it with the rig's loader (`irix7-loader`), fills
//! the ABI table, calls `irix7_mcp_init`, then polls the module for good.

use crate::arena::{ARENA, Global};
use crate::io::{flush_and_set, halt, put_dec, put_hex, puts, r8, r32, set_state, w8, w32};
use crate::ram::{cache_inval, cache_wback, in_ram, sync_icache};
use crate::{boot_env, cell, clock, layout, mailbox, power};
use alloc::boxed::Box;
use indy::abi::{self, AbiTable, BootInfo, ImageInfo, IrqInfo, MachineStatus, ProcInfo, status};
use indy::map::{DS1386, KSEG_LIMIT, kseg0, unmapped_phys};

const RING: usize = abi::SERIAL_RING_SIZE as usize;
static SERIAL_RING: Global<[u8; RING]> = Global::new([0; RING]);
static SERIAL_HEAD: Global<u32> = Global::new(0);
static STATUS: Global<MachineStatus> = Global::new(MachineStatus {
    ip: [0; 4],
    mac: [0; 8],
    ram_bytes: 0,
    uptime_ms: 0,
    unix_time: 0,
    os_version: *b"7.0.0\0\0\0\0\0\0\0\0\0\0\0",
});
static IMAGE_INFO: Global<ImageInfo> = Global::new(ImageInfo {
    sha256: [0; 32],
    deploy: abi::DEPLOY_OK,
    refused_sha256: [0; 32],
});
/// Why this boot happened and what the last one left (`kept::take` fills it at boot).
static BOOT_INFO: Global<BootInfo> = Global::new(BootInfo {
    cause: abi::BOOT_UNKNOWN,
    prev_uptime_ms: 0,
    boots: 0,
    prev_sha256: [0; 32],
    message: [0; abi::BOOT_MESSAGE_LEN],
    prev_ring: core::ptr::null(),
    prev_ring_size: 0,
    prev_ring_head: 0,
    prev_ring_sum: 0,
    prev_flight: core::ptr::null(),
    prev_flight_size: 0,
    flight: core::ptr::null_mut(),
    flight_size: 0,
});
static FLIGHT: Global<[u8; abi::FLIGHT_REGION_SIZE as usize]> =
    Global::new([0; abi::FLIGHT_REGION_SIZE as usize]);
static CLOCK: Global<Option<clock::Extender>> = Global::new(None);
static BOOT_UNIX: Global<u32> = Global::new(0);
/// The extended RPSS count at boot.
static BOOT_TICKS: Global<u64> = Global::new(0);
/// Keystrokes queued for the console (`console_input`); at most 4096 (`docs/abi.md`).
static INPUT: Global<(u32, [u8; 4096])> = Global::new((0, [0; 4096]));

/// The environment the script delivered.
fn env() -> &'static [u8] {
    let len = r32(mailbox::PHYS + mailbox::ENV_LEN).min(layout::ENV.1);
    // SAFETY: the script wrote `len` bytes at ENV, inside RAM the stand-in reserves for it.
    unsafe { core::slice::from_raw_parts(kseg0(layout::ENV.0) as *const u8, len as usize) }
}

/// Milliseconds since this boot (the RPSS counter runs on across a reset, so its value at boot
/// is taken off).
fn ms_now() -> u64 {
    let ext = CLOCK.get().get_or_insert_with(clock::Extender::default);
    let ticks = ext.extend(r32(clock::RPSS));
    ticks.saturating_sub(*BOOT_TICKS.get()) / clock::RPSS_PER_MS
}

fn ds1386_unix() -> Option<u32> {
    let mut regs = [0u8; 11];
    for (n, r) in regs.iter_mut().enumerate() {
        *r = r8(DS1386.base + 4 * n as u32 + 3);
    }
    clock::unix_time(&regs)
}

fn console_out(bytes: &[u8]) {
    let ring = SERIAL_RING.get();
    let head = SERIAL_HEAD.get();
    for &b in bytes {
        ring[*head as usize % RING] = b;
        *head = head.wrapping_add(1);
    }
    puts(bytes);
}

unsafe extern "C" fn console_write(p: *const u8, len: usize) -> i32 {
    let len = len.min(1 << 20);
    if !in_ram(p, len) {
        return status::E_INVAL;
    }
    // SAFETY: checked to lie in RAM above.
    console_out(unsafe { core::slice::from_raw_parts(p, len) });
    len as i32
}

unsafe extern "C" fn env_get(k: *const u8, klen: usize, buf: *mut u8, blen: usize) -> i32 {
    if klen > 256 || !in_ram(k, klen) || !in_ram(buf, blen) {
        return status::E_INVAL;
    }
    // SAFETY: both checked to lie in RAM above.
    let key = unsafe { core::slice::from_raw_parts(k, klen) };
    match boot_env::lookup(env(), key) {
        Some(v) => {
            let n = v.len().min(blen);
            // SAFETY: `buf` holds `blen` bytes of RAM.
            unsafe { core::ptr::copy_nonoverlapping(v.as_ptr(), buf, n) };
            v.len() as i32
        }
        None => -1,
    }
}

unsafe extern "C" fn block_read(_: u32, _: u32, _: u32, _: *mut u8) -> i32 {
    status::E_NODEV
}

unsafe extern "C" fn block_count(_: u32) -> i32 {
    status::E_NODEV
}

unsafe extern "C" fn clock_ms() -> u64 {
    ms_now()
}

unsafe extern "C" fn virt_to_phys(p: *const u8) -> u32 {
    match unmapped_phys(p as u32) {
        Some(phys) if phys < KSEG_LIMIT => phys,
        _ => u32::MAX,
    }
}

/// Spins for [`power::TAKE_EFFECT_MS`].
fn wait_for_effect() {
    let t0 = ms_now();
    while ms_now().saturating_sub(t0) < power::TAKE_EFFECT_MS {}
}

unsafe extern "C" fn reset() {
    console_out(b"kernel: reset through MC CPU control 0 SYSINIT\n");
    crate::kept::keep(
        SERIAL_RING.get(),
        *SERIAL_HEAD.get(),
        FLIGHT.get(),
        ms_now().min(u64::from(u32::MAX)) as u32,
        &IMAGE_INFO.get().sha256,
    );
    w32(
        power::CPUCTRL0,
        r32(power::CPUCTRL0) | power::CPUCTRL0_SYSINIT,
    );
    wait_for_effect();
    puts(b"kernel: SYSINIT did not reset the machine; restarting at the reset vector\n");
    // Start over at the reset vector: the stand-in asks the script for the image again.
    // SAFETY: the PROM's reset code sets up everything it needs from scratch.
    unsafe { core::arch::asm!("lui $t9, 0xbfc0", "jr $t9", "nop", options(noreturn)) }
}

unsafe extern "C" fn poweroff() {
    puts(b"kernel: power off through the IOC2 front panel\n");
    // As Linux does: mask the DS1386's watchdog alarm first, so it cannot wake the machine.
    w8(power::RTC_CMD, r8(power::RTC_CMD) | power::RTC_WAM);
    w8(power::RTC_WSEC, 0);
    w8(power::RTC_WHSEC, 0);
    w8(power::PANEL, !power::PANEL_POWERON);
    wait_for_effect();
    puts(b"kernel: the power stayed on; halted\n");
    flush_and_set(mailbox::STATE_HALTED);
    halt()
}

unsafe extern "C" fn watchdog_kick() {
    w32(indy::regs::mc::WATCHDOG, 0);
}

unsafe extern "C" fn proc_list(out: *mut ProcInfo, max: usize) -> i32 {
    if max == 0 {
        return 0;
    }
    if !in_ram(out as *const u8, core::mem::size_of::<ProcInfo>()) {
        return status::E_INVAL;
    }
    let mut name = [0u8; 20];
    name[..6].copy_from_slice(b"kernel");
    let info = ProcInfo {
        pid: 0,
        state: 0,
        cpu_ms: ms_now() as u32,
        name,
    };
    // SAFETY: checked to lie in RAM above.
    unsafe { out.write(info) };
    1
}

unsafe extern "C" fn console_input(p: *const u8, len: usize) -> i32 {
    if !in_ram(p, len) {
        return status::E_INVAL;
    }
    let (used, buf) = INPUT.get();
    let n = len.min(buf.len() - *used as usize);
    // SAFETY: checked to lie in RAM above.
    let src = unsafe { core::slice::from_raw_parts(p, n) };
    buf[*used as usize..*used as usize + n].copy_from_slice(src);
    *used += n as u32;
    n as i32
}

unsafe extern "C" fn irq_list(_: *mut IrqInfo, _: usize) -> i32 {
    0
}

unsafe extern "C" fn bus_probe(phys: u32, width: u32) -> i32 {
    if !matches!(width, 1 | 2 | 4) || !phys.is_multiple_of(width) {
        return status::E_INVAL;
    }
    // No bus-error handler yet: answer for RAM and the windows the map names, refuse the rest
    // (`mem.read` probes RAM before it reads).
    if indy::map::check_ram(phys, width, crate::mc::RAM_BYTES).is_ok()
        || indy::map::find(phys, width).is_some()
    {
        0
    } else {
        status::E_NODEV
    }
}

fn fail(what: &[u8]) -> ! {
    puts(b"kernel: ");
    puts(what);
    puts(b"; halted\n");
    flush_and_set(mailbox::STATE_FAILED);
    halt()
}

/// Loads the cell the script delivered with the image, if any: afresh at every boot, so a
/// reset leaves no breakpoint or stopped cell behind. A cell that cannot be read is refused
/// and the module runs without it.
fn load_cell() {
    let len = r32(mailbox::PHYS + mailbox::CELL_LEN);
    if len == 0 {
        return;
    }
    if len > layout::CELL_IMAGE.1 {
        puts(b"cell refused: larger than its staging area\n");
        return;
    }
    // SAFETY: the script wrote `len` bytes at CELL_IMAGE, inside RAM reserved for it.
    let elf = unsafe {
        core::slice::from_raw_parts(kseg0(layout::CELL_IMAGE.0) as *const u8, len as usize)
    };
    match cell::load(elf) {
        Ok(entry) => cell::report(entry),
        Err(e) => {
            puts(b"cell refused: ");
            puts(e.as_bytes());
            puts(b"\n");
        }
    }
}

/// Asks the script for the image, loads it and serves.
pub fn boot() -> ! {
    *ARENA.next.get() = 0;
    *SERIAL_HEAD.get() = 0;
    *CLOCK.get() = None;
    *BOOT_TICKS.get() = 0;
    let first = CLOCK
        .get()
        .get_or_insert_with(clock::Extender::default)
        .extend(r32(clock::RPSS));
    *BOOT_TICKS.get() = first;
    crate::kept::take(BOOT_INFO.get());
    puts(b"IRIX 7 kernel stand-in 7.0.0 (MAME indy_4610)\n");
    crate::newport_init::newport_init();
    puts(b"newport: 1280x1024 timing, DID 1 = CI8 at CMAP 0x100, gamma ramp, test picture\n");
    let mb = mailbox::PHYS;
    w32(mb + mailbox::DELIVERY, mailbox::WANT_IMAGE);
    let t0 = ms_now();
    while r32(mb + mailbox::DELIVERY) != mailbox::DELIVERED {
        if ms_now().saturating_sub(t0) > 30_000 {
            fail(b"no image delivered in 30 s");
        }
    }
    let env = env();
    let len = r32(mb + mailbox::IMAGE_LEN);
    if len == 0 || len > layout::IMAGE.1 {
        fail(b"delivered image is empty or too large");
    }
    // SAFETY: the script wrote `len` bytes at IMAGE, inside RAM reserved for it.
    let image =
        unsafe { core::slice::from_raw_parts(kseg0(layout::IMAGE.0) as *const u8, len as usize) };
    puts(b"loading irix7-mcp from ");
    puts(boot_env::lookup(env, b"mcp.url").unwrap_or(b"?"));
    puts(b" (");
    put_dec(len);
    puts(b" bytes)\n");
    let Some(want) = boot_env::lookup(env, b"mcp.sha256") else {
        fail(b"the boot environment has no mcp.sha256");
    };
    let want = core::str::from_utf8(want).unwrap_or("");
    let Some(want_bytes) = boot_env::digest_bytes(want.as_bytes()) else {
        fail(b"mcp.sha256 is not 64 hex digits");
    };
    match irix7_loader::verify(image, want) {
        Ok(d) => {
            puts(b"sha256 ");
            puts(d.as_bytes());
            puts(b" verified\n");
        }
        Err(e) => {
            puts(b"sha256 ");
            puts(e.actual.as_bytes());
            puts(b" is not mcp.sha256 ");
            puts(e.expected.as_bytes());
            puts(b"\n");
            fail(b"sha256 mismatch");
        }
    }
    IMAGE_INFO.get().sha256 = want_bytes;
    let base = kseg0(layout::MODULE.0);
    let loaded = match irix7_loader::load(image, base, layout::MODULE.1) {
        Ok(l) => l,
        Err(e) => {
            let msg = alloc::format!("load failed: {e}");
            fail(msg.as_bytes());
        }
    };
    // SAFETY: MODULE is RAM reserved for the module, `bytes` fits (the loader checked `max`).
    unsafe {
        core::ptr::copy_nonoverlapping(loaded.bytes.as_ptr(), base as *mut u8, loaded.bytes.len())
    };
    sync_icache(base as *const u8, loaded.bytes.len());
    puts(b"module ");
    puts(loaded.modinfo.name.as_bytes());
    puts(b" ");
    puts(loaded.modinfo.version.as_bytes());
    puts(b" (ABI ");
    put_dec(loaded.modinfo.abi);
    puts(b") at ");
    put_hex(base);
    puts(b", ");
    put_dec(loaded.bytes.len() as u32);
    puts(b" bytes\n");

    load_cell();

    let st = STATUS.get();
    st.ram_bytes = crate::mc::RAM_BYTES;
    if let Some(mac) = boot_env::lookup(env, b"eaddr")
        .and_then(|v| core::str::from_utf8(v).ok())
        .and_then(|v| indy::prom_env::parse_eaddr(v).ok())
    {
        st.mac[..6].copy_from_slice(&mac);
    }
    if let Some(n) = boot_env::lookup(env, b"netaddr")
        .and_then(|v| core::str::from_utf8(v).ok())
        .and_then(|v| indy::prom_env::parse_netaddr(v).ok())
    {
        st.ip = n.addr.octets();
    }
    *BOOT_UNIX.get() = ds1386_unix().unwrap_or(0);
    st.unix_time = *BOOT_UNIX.get();

    let table: &'static AbiTable = Box::leak(Box::new(AbiTable {
        version: abi::ABI_VERSION,
        size: core::mem::size_of::<AbiTable>() as u32,
        console_write,
        serial_ring: SERIAL_RING.get().as_ptr(),
        serial_ring_size: abi::SERIAL_RING_SIZE,
        serial_head: SERIAL_HEAD.get() as *const u32,
        machine_status: STATUS.get() as *const MachineStatus,
        env_get,
        block_read,
        block_count,
        clock_ms,
        cache_wback,
        cache_inval,
        virt_to_phys,
        heap_base: kseg0(layout::HEAP.0) as *mut u8,
        heap_size: layout::HEAP.1,
        reset,
        poweroff,
        watchdog_kick,
        proc_list,
        console_input,
        irq_list,
        bus_probe,
        image_info: IMAGE_INFO.get() as *const ImageInfo,
        boot_info: {
            let b = BOOT_INFO.get();
            b.flight = FLIGHT.get().as_mut_ptr();
            b.flight_size = abi::FLIGHT_REGION_SIZE;
            b as *const BootInfo
        },
        // This kernel draws nothing of its console on the screen: the serial line is all of it.
        serial_write: console_write,
        ctx_events: cell::events(),
        ctx_list: cell::ctx_list,
        ctx_stop: cell::ctx_stop,
        ctx_resume: cell::ctx_resume,
        ctx_stop_info: cell::ctx_stop_info,
        ctx_regs_get: cell::ctx_regs_get,
        ctx_regs_set: cell::ctx_regs_set,
        ctx_mem_read: cell::ctx_mem_read,
        ctx_mem_write: cell::ctx_mem_write,
    }));
    // SAFETY: the loader found these symbols in the image's text, relocated at `base`.
    let init: extern "C" fn(*const AbiTable) -> i32 = unsafe { core::mem::transmute(loaded.init) };
    let poll: extern "C" fn(u64) -> i32 = unsafe { core::mem::transmute(loaded.poll) };
    let rc = init(table);
    if rc != status::OK {
        puts(b"kernel: init returned ");
        put_hex(rc as u32);
        puts(b"\n");
        fail(b"init failed");
    }
    puts(b"kernel: module initialised, polling\n");
    set_state(mailbox::STATE_SERVING);
    let boot_ms = ms_now();
    loop {
        let now = ms_now();
        st.uptime_ms = now as u32;
        st.unix_time = (*BOOT_UNIX.get()).wrapping_add(((now - boot_ms) / 1000) as u32);
        w32(
            mb + mailbox::POLLS,
            r32(mb + mailbox::POLLS).wrapping_add(1),
        );
        let _ = poll(now);
        cell::slice();
    }
}
