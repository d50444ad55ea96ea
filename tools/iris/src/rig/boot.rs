//! The kernel's side of the module's life: boot (load the image the boot configuration names,
//! verify its SHA-256, relocate it, call init; the last good image when that fails), the
//! watchdog, resets (asked for by the module or fired by the watchdog, each a fresh load and
//! init), power-off and exit.

use super::last_good::{Refusal, digest_bytes};
use super::scheduler::CallEnd;
use super::{MAX_RESETS_IN_INIT, Phase, Rig, Survivor};
use crate::config::{BootConfig, load_boot_config};
use crate::cpu::uc_err;
use crate::error::RigError;
use crate::image;
use crate::kernel::abi::image_info_bytes;
use crate::kernel::boot_info::{BootState, boot_info_bytes};
use crate::kernel::{KernelRequest, OS_VERSION};
use crate::loader;
use crate::memmap::{self, ram_va};
use crate::memory::GuestMemory;
use indy::abi::{
    BOOT_REFUSED, BOOT_REQUESTED, BOOT_WATCHDOG, DEPLOY_FETCH_FAILED, DEPLOY_INIT_FAILED,
    DEPLOY_LOAD_FAILED, DEPLOY_SHA256_MISMATCH, FLIGHT_REGION_SIZE, ImageInfo, SERIAL_RING_SIZE,
    deploy_reason, ring_sum,
};
use indy::map::RAM_PHYS;

impl Rig {
    /// Kernel entry: start the serial ring, print the boot lines, load the image named by the
    /// boot configuration (verifying its SHA-256) and call `irix7_mcp_init`.
    pub fn boot(&mut self) -> Result<(), RigError> {
        if self.phase != Phase::Built {
            return Err(RigError::State("boot called twice".into()));
        }
        self.map_mmio()?;
        {
            let mut mem = self.cpu.mem();
            let mut k = self.kernel.borrow_mut();
            k.ring
                .clear(&mut mem)
                .map_err(|e| RigError::Emulator(e.to_string()))?;
            // Power-on: nothing of an earlier boot survives.
            let fault = |e: crate::memory::MemFault| RigError::Emulator(e.to_string());
            for off in [
                memmap::PREV_RING_OFF,
                memmap::PREV_FLIGHT_OFF,
                memmap::FLIGHT_OFF,
            ] {
                let len = if off == memmap::PREV_RING_OFF {
                    SERIAL_RING_SIZE
                } else {
                    FLIGHT_REGION_SIZE
                };
                mem.write(u64::from(RAM_PHYS + off), &vec![0; len as usize])
                    .map_err(fault)?;
            }
            k.boot = BootState::power_on();
        }
        let ram_mib = self.opts.ram_mib;
        self.klog(&format!("IRIX 7 kernel {OS_VERSION} (iris rig): SGI Indy IP24, R4400 (emulated), {ram_mib} MB RAM"));
        let disks: Vec<String> = self
            .kernel
            .borrow()
            .disks
            .list()
            .map(|(t, d)| {
                format!(
                    "scsi target {t}: {} ({} blocks)",
                    d.path.display(),
                    d.blocks
                )
            })
            .collect();
        for d in disks {
            self.klog(&d);
        }
        self.arm_watchdog();
        self.phase = Phase::Running;
        let r = self.load_and_init();
        if r.is_err() {
            self.phase = Phase::Halted;
        }
        r
    }

    /// Call the module's `irix7_mcp_exit` and stop. Safe to call more than once.
    pub fn stop(&mut self) -> Result<(), RigError> {
        if self.phase != Phase::Running {
            self.phase = Phase::Stopped;
            return Ok(());
        }
        self.phase = Phase::Stopped;
        let Some(exit) = self.image.as_ref().map(|i| i.exit) else {
            return Ok(());
        };
        self.call_guest("irix7_mcp_exit", exit, &[])?;
        self.klog("kernel: module exited");
        Ok(())
    }

    fn arm_watchdog(&mut self) {
        let mut wd = self.watchdog.borrow_mut();
        wd.enabled = wd.period_ms > 0;
        wd.last_kick_ms = self.clock.now_ms();
    }

    /// The boot configuration. An unreadable or malformed one stops the boot: it names no
    /// image to refuse, so there is no deploy to fall back from.
    fn boot_config(&mut self) -> Result<BootConfig, RigError> {
        let env = self.kernel.borrow().env.clone();
        load_boot_config(&self.config_path, &env).map_err(|e| {
            self.klog(&format!("kernel: {e}"));
            e.into()
        })
    }

    /// Fetch and verify the image the boot configuration names: its bytes and digest, or why
    /// it is refused.
    fn fetch_configured(&mut self, cfg: &BootConfig) -> Result<(Vec<u8>, String), Refusal> {
        self.klog(&format!("loading irix7-mcp from {}", cfg.url));
        let refuse = |deploy, e: image::ImageError| Refusal::new(deploy, &cfg.sha256, e.into());
        let data = image::fetch(&cfg.url, &self.root, cfg.tls_pin.as_deref()).map_err(|e| {
            self.klog(&format!("kernel: {e}"));
            refuse(DEPLOY_FETCH_FAILED, e)
        })?;
        let digest = image::verify(&data, &cfg.sha256).map_err(|e| {
            self.klog(&format!("kernel: {e}"));
            refuse(DEPLOY_SHA256_MISMATCH, e)
        })?;
        self.klog(&format!("sha256 {digest} verified"));
        Ok((data, digest))
    }

    /// Relocate a verified image into the module area, and write the ABI table and the image
    /// info block (`info`) the module reads.
    fn load_module(&mut self, data: &[u8], info: &ImageInfo) -> Result<(), RigError> {
        let img = loader::load(data, ram_va(memmap::MODULE_OFF), memmap::MODULE_MAX)
            .inspect_err(|e| self.klog(&format!("kernel: loader: {e}")))?;
        let base_phys = u64::from(RAM_PHYS + memmap::MODULE_OFF);
        let heap_size = self.kernel.borrow().heap_size();
        {
            let mut mem = self.cpu.mem();
            let zero = vec![0u8; memmap::MODULE_MAX as usize];
            let fault = |e: crate::memory::MemFault| RigError::Emulator(e.to_string());
            mem.write(base_phys, &zero).map_err(fault)?;
            mem.write(base_phys, &img.bytes).map_err(fault)?;
            mem.write(
                u64::from(RAM_PHYS + memmap::ABI_TABLE_OFF),
                &self.kernel.borrow().table_image(),
            )
            .map_err(fault)?;
            mem.write(
                u64::from(RAM_PHYS + memmap::IMAGE_INFO_OFF),
                &image_info_bytes(info),
            )
            .map_err(fault)?;
            mem.write(
                u64::from(RAM_PHYS + memmap::BOOT_INFO_OFF),
                &boot_info_bytes(&self.kernel.borrow().boot),
            )
            .map_err(fault)?;
        }
        self.running_sha256 = info.sha256;
        self.cpu
            .uc
            .ctl_flush_tb()
            .map_err(|e| RigError::Emulator(uc_err("flush TB", e)))?;
        let m = &img.modinfo;
        let line = format!(
            "module {} {} (ABI {}): {} bytes at {:#010x}, heap {} KiB at {:#010x}",
            m.name,
            m.version,
            m.abi,
            img.bytes.len(),
            img.base,
            heap_size / 1024,
            ram_va(memmap::HEAP_OFF)
        );
        self.image = Some(img);
        self.klog(&line);
        self.load_cell()
    }

    /// Relocate an image and run its init.
    fn load_and_call_init(&mut self, data: &[u8], info: &ImageInfo) -> Result<CallEnd, RigError> {
        self.load_module(data, info)?;
        let Some(init) = self.image.as_ref().map(|i| i.init) else {
            return Err(RigError::State("no image".into()));
        };
        let before = self.cpu.state.insns.get();
        let printed = self.console.total();
        let end = self.call_guest("irix7_mcp_init", init, &[ram_va(memmap::ABI_TABLE_OFF)]);
        self.counters.init_insns = self.cpu.state.insns.get() - before;
        // Before any poll: no client has reached the console yet.
        self.take_token(printed);
        end
    }

    /// Boot the configured image; when it cannot be fetched, verified, loaded or initialised,
    /// boot the last good image instead (`docs/abi.md`, "Last good image"). Returns how init
    /// ended, or the configured image's error when there is nothing to fall back to.
    fn boot_configured_or_last_good(&mut self) -> Result<CallEnd, RigError> {
        let cfg = self.boot_config()?;
        let refusal = match self.fetch_configured(&cfg) {
            Ok((data, digest)) => {
                let info = ImageInfo {
                    sha256: digest_bytes(&digest),
                    ..ImageInfo::default()
                };
                match self.load_and_call_init(&data, &info) {
                    Ok(CallEnd::Returned(0)) => {
                        self.last_good.remember(data, digest);
                        return Ok(CallEnd::Returned(0));
                    }
                    Ok(CallEnd::Returned(s)) => {
                        self.klog(&format!("kernel: irix7_mcp_init failed with status {s}"));
                        Refusal::new(DEPLOY_INIT_FAILED, &digest, RigError::InitFailed(s))
                    }
                    Ok(other) => return Ok(other),
                    Err(e @ RigError::Load(_)) => Refusal::new(DEPLOY_LOAD_FAILED, &digest, e),
                    Err(e) => Refusal::new(DEPLOY_INIT_FAILED, &digest, e),
                }
            }
            Err(r) => r,
        };
        let Some((data, good)) = self.last_good.recall() else {
            return Err(*refusal.error);
        };
        self.klog(&format!(
            "deploy of {} refused: {}; running last good {good}",
            refusal.digest,
            deploy_reason(refusal.deploy)
        ));
        // The refused image may have started devices before it failed.
        self.bus.borrow_mut().reset();
        self.kernel.borrow_mut().boot.cause = BOOT_REFUSED;
        let info = ImageInfo {
            sha256: digest_bytes(&good),
            deploy: refusal.deploy,
            refused_sha256: digest_bytes(&refusal.digest),
        };
        let end = self.load_and_call_init(&data, &info)?;
        if let CallEnd::Returned(s) = end
            && s != 0
        {
            self.klog(&format!(
                "kernel: irix7_mcp_init of the last good image failed with status {s}"
            ));
            return Err(RigError::InitFailed(s));
        }
        Ok(end)
    }

    /// Load the module and run its init, again after each reset it asks for.
    fn load_and_init(&mut self) -> Result<(), RigError> {
        for _ in 0..MAX_RESETS_IN_INIT {
            match self.boot_configured_or_last_good()? {
                CallEnd::Returned(0) => {
                    self.kick_watchdog();
                    return Ok(());
                }
                CallEnd::Returned(s) => return Err(RigError::InitFailed(s)),
                CallEnd::Request(KernelRequest::Poweroff) => {
                    self.power_off();
                    return Ok(());
                }
                CallEnd::Request(KernelRequest::Reset) => {
                    self.note_reset("reset requested by the module", BOOT_REQUESTED, "")
                }
                CallEnd::DeviceReset(reason) => self.note_reset(&reason, BOOT_WATCHDOG, ""),
            }
        }
        Err(RigError::ResetLoop(MAX_RESETS_IN_INIT))
    }

    /// A warm reset: the kernel keeps the previous boot's serial ring and flight region (DRAM
    /// is not cleared), says why in the next boot's `boot_info` (`cause`, a panic's `message`),
    /// and starts the new boot's ring empty.
    fn note_reset(&mut self, reason: &str, cause: u32, message: &str) {
        self.klog(&format!("kernel: {reason}: resetting the machine"));
        if !self.opts.quiet {
            eprintln!("iris: {reason}: resetting the machine");
        }
        self.counters.resets += 1;
        self.counters.reset_insns = self.cpu.state.insns.get();
        if cause == BOOT_WATCHDOG {
            self.counters.watchdog_resets += 1;
        }
        if let Err(e) = self.keep_survivors(cause, message) {
            eprintln!("iris: kernel: could not keep the previous boot: {e}");
        }
        self.bus.borrow_mut().reset();
        // `clock_ms` counts from boot: the new boot starts it at 0 (the watchdog is re-armed
        // on the restarted clock).
        self.clock.restart();
        self.arm_watchdog();
    }

    /// Copies this boot's ring and flight region to where the next boot finds them, clears
    /// the ring and the region for it, records the cause, then applies the corruption hook.
    fn keep_survivors(&mut self, cause: u32, message: &str) -> Result<(), crate::memory::MemFault> {
        let uptime = self.clock.now_ms().min(u64::from(u32::MAX)) as u32;
        let sha = self.running_sha256;
        let mut mem = self.cpu.mem();
        let mut k = self.kernel.borrow_mut();
        let mut ring = vec![0u8; SERIAL_RING_SIZE as usize];
        mem.read(k.ring.ring_phys, &mut ring)?;
        let head = mem.read_u32(k.ring.head_phys)?;
        mem.write(u64::from(RAM_PHYS + memmap::PREV_RING_OFF), &ring)?;
        let mut flight = vec![0u8; FLIGHT_REGION_SIZE as usize];
        mem.read(u64::from(RAM_PHYS + memmap::FLIGHT_OFF), &mut flight)?;
        mem.write(u64::from(RAM_PHYS + memmap::PREV_FLIGHT_OFF), &flight)?;
        mem.write(
            u64::from(RAM_PHYS + memmap::FLIGHT_OFF),
            &vec![0; FLIGHT_REGION_SIZE as usize],
        )?;
        k.ring.clear(&mut mem)?;
        let boots = k.boot.boots.saturating_add(1);
        k.boot = BootState {
            cause,
            message: String::from(message),
            boots,
            prev_uptime_ms: uptime,
            prev_sha256: sha,
            prev_ring_head: head,
            prev_ring_sum: ring_sum(&ring),
            kept: true,
        };
        for what in self.corrupt_next.borrow_mut().drain(..) {
            let (off, at) = match what {
                Survivor::Ring => (
                    memmap::PREV_RING_OFF,
                    head.wrapping_sub(2) % SERIAL_RING_SIZE,
                ),
                // Inside the record's header, past the magic: it reads as corrupt.
                Survivor::Flight => (memmap::PREV_FLIGHT_OFF, 20),
                // The first slot's start time (past the 260-byte header): that slot is torn.
                Survivor::FlightSlot => (memmap::PREV_FLIGHT_OFF, 260 + 8),
            };
            let phys = u64::from(RAM_PHYS + off + at);
            let mut b = [0u8; 1];
            mem.read(phys, &mut b)?;
            mem.write(phys, &[b[0] ^ 0x5A])?;
        }
        Ok(())
    }

    pub(super) fn reset_machine(
        &mut self,
        reason: &str,
        cause: u32,
        message: &str,
    ) -> Result<(), RigError> {
        self.note_reset(reason, cause, message);
        self.load_and_init()
    }

    pub(super) fn power_off(&mut self) {
        self.klog("kernel: power off");
        self.phase = Phase::PoweredOff;
    }

    pub(super) fn kick_watchdog(&mut self) {
        self.watchdog.borrow_mut().kick(self.clock.now_ms());
    }

    pub(super) fn watchdog_active(&self) -> bool {
        let wd = self.watchdog.borrow();
        wd.enabled && wd.period_ms > 0
    }
}
