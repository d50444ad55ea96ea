//! The scheduler: one guest call at a time, run in slices with device ticks and watchdog checks
//! between them; `step` is one poll round, `run_until` loops steps until a predicate holds.

use std::time::{Duration, Instant};

use super::{Phase, Rig, SLICE_INSNS};
use crate::error::RigError;
use crate::kernel::KernelRequest;
use crate::memmap::{self, ram_va, sext};
use indy::abi::{BOOT_PANIC, BOOT_REQUESTED, BOOT_WATCHDOG};
use unicorn_engine::unicorn_const::uc_error;

/// Instruction and event counters (exact guest instruction counts from the block hook).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every guest instruction executed since the rig was built.
    pub total_insns: u64,
    /// Instructions the last `irix7_mcp_init` executed.
    pub init_insns: u64,
    /// Instructions of the last completed `irix7_mcp_poll`.
    pub last_poll_insns: u64,
    /// The most instructions any single completed poll executed (the bound on how long one
    /// request can keep the machine from everything else; the watchdog counts poll to poll).
    pub max_poll_insns: u64,
    /// Sum over all completed polls.
    pub poll_insns: u64,
    pub polls: u64,
    /// Machine resets (module request, watchdog or panic).
    pub resets: u64,
    pub watchdog_resets: u64,
    /// `total_insns` when the machine last reset (0: never): instructions since then are the
    /// new boot's, which is how a soak measures the time to serve after a reset.
    pub reset_insns: u64,
}

/// Why a run loop returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The predicate became true.
    Predicate,
    /// The time limit passed.
    TimeLimit,
    /// The module powered the machine off.
    PoweredOff,
}

/// One scheduler round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The module said more work is pending (poll returned > 0).
    pub pending: bool,
    /// A device did something or the machine was reset.
    pub busy: bool,
}

/// How a guest call ended.
pub(super) enum CallEnd {
    Returned(i32),
    Request(KernelRequest),
    DeviceReset(String),
}

impl Rig {
    /// One scheduler round: tick devices, then call `irix7_mcp_poll(now)` once. After an error
    /// (crash, hang, module failure) the machine is halted: later steps fail and `stop` does not
    /// call into the module.
    pub fn step(&mut self) -> Result<Step, RigError> {
        let r = self.step_inner();
        if r.is_err() && self.phase == Phase::Running {
            self.phase = Phase::Halted;
        }
        r
    }

    fn step_inner(&mut self) -> Result<Step, RigError> {
        match self.phase {
            Phase::Running => {}
            Phase::PoweredOff => {
                return Ok(Step {
                    pending: false,
                    busy: false,
                });
            }
            Phase::Halted => {
                return Err(RigError::State(
                    "the machine halted after a fatal error".into(),
                ));
            }
            _ => return Err(RigError::State("step before boot or after stop".into())),
        }
        let (busy, reset) = self.tick_devices();
        if let Some(reason) = reset {
            self.reset_machine(&reason, BOOT_WATCHDOG, "")?;
            return Ok(Step {
                pending: true,
                busy: true,
            });
        }
        let Some(poll) = self.image.as_ref().map(|i| i.poll) else {
            return Err(RigError::State("no image".into()));
        };
        let now = self.clock.now_ms();
        let before = self.cpu.state.insns.get();
        let end = match self.call_guest("irix7_mcp_poll", poll, &[(now >> 32) as u32, now as u32]) {
            // The kernel panics on the module's trap and resets the machine, when told to.
            Err(RigError::Crash(crash)) if self.opts.reboot_on_panic => {
                let why = format!("module trapped: {crash}");
                self.reset_machine(&why, BOOT_PANIC, &why)?;
                return Ok(Step {
                    pending: true,
                    busy: true,
                });
            }
            end => end?,
        };
        match end {
            CallEnd::Returned(s) => {
                let used = self.cpu.state.insns.get() - before;
                self.counters.polls += 1;
                self.counters.last_poll_insns = used;
                self.counters.max_poll_insns = self.counters.max_poll_insns.max(used);
                self.counters.poll_insns += used;
                self.kick_watchdog();
                if s < 0 {
                    self.klog(&format!("kernel: irix7_mcp_poll failed with status {s}"));
                    return Err(RigError::PollFailed(s));
                }
                self.run_cells()?;
                Ok(Step {
                    pending: s > 0,
                    busy,
                })
            }
            CallEnd::Request(KernelRequest::Reset) => {
                self.reset_machine("reset requested by the module", BOOT_REQUESTED, "")?;
                Ok(Step {
                    pending: true,
                    busy: true,
                })
            }
            CallEnd::Request(KernelRequest::Poweroff) => {
                self.power_off();
                Ok(Step {
                    pending: false,
                    busy: true,
                })
            }
            CallEnd::DeviceReset(reason) => {
                self.reset_machine(&reason, BOOT_WATCHDOG, "")?;
                Ok(Step {
                    pending: true,
                    busy: true,
                })
            }
        }
    }

    /// Run the scheduler until `done(self)` holds, the module powers off, or `limit` passes
    /// (host time). Sleeps ~1 ms when the module is idle and no device did anything.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&Rig) -> bool,
    ) -> Result<RunEnd, RigError> {
        let start = Instant::now();
        loop {
            if self.phase == Phase::PoweredOff {
                return Ok(RunEnd::PoweredOff);
            }
            if done(self) {
                return Ok(RunEnd::Predicate);
            }
            if start.elapsed() >= limit {
                return Ok(RunEnd::TimeLimit);
            }
            let step = self.step()?;
            if !step.pending && !step.busy {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Writes the token the module announced during the init that started at console byte
    /// `from` to its files (and says where, unless quiet).
    pub(super) fn take_token(&mut self, from: u64) {
        if let Some(_token) = self.token_files.take_from_init(&self.console, from)
            && !self.opts.quiet
        {
            for p in self.token_files.paths() {
                eprintln!("iris: the module's token is in {}", p.display());
            }
        }
    }

    /// The token the module generated at its last boot, as its init announced it.
    pub fn generated_token(&self) -> Option<&str> {
        self.token_files.current()
    }

    /// Run for `ms` milliseconds of host time (or until power-off).
    pub fn run_for(&mut self, ms: u64) -> Result<RunEnd, RigError> {
        self.run_until(Duration::from_millis(ms), |_| false)
    }

    /// Run until the console shows `needle` (or `limit` passes).
    pub fn run_until_console(&mut self, needle: &str, limit: Duration) -> Result<RunEnd, RigError> {
        self.run_until(limit, |r| r.console.contains(needle))
    }

    /// Advance the rig clock (what `clock_ms`, `poll(now)` and the status block see). The jump
    /// counts as time in which the kernel kept kicking the watchdog between polls, so it does
    /// not fire the watchdog by itself.
    pub fn advance_clock(&self, ms: u64) {
        self.clock.advance(ms);
        self.watchdog.borrow_mut().kick(self.clock.now_ms());
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The hang hook: the next guest call (normally a poll) runs an endless loop instead of the
    /// module, as a hung kernel would. With the watchdog on, the watchdog resets the machine
    /// after `watchdog_ms`; with it off, the call is reported as a hang after `hang_insns`.
    pub fn hang_next_call(&self) {
        self.hang_next.set(true);
    }

    pub fn counters(&self) -> Counters {
        Counters {
            total_insns: self.cpu.state.insns.get(),
            ..self.counters.clone()
        }
    }

    /// Unicorn gave up translating guest code: its translator ran out of TCG temporaries. The
    /// rig's fixed Unicorn ends emu_start with UC_ERR_RESOURCE then, the PC at the block it
    /// was translating, rather than write past its temporaries (docs/rig.md, "Which Unicorn").
    fn translation_failed(&self, call: &'static str) -> RigError {
        let pc = self.cpu.pc();
        let at = match self.symbolize(pc) {
            Some(s) => format!("{pc:#010x} <{s}>"),
            None => format!("{pc:#010x}"),
        };
        RigError::Emulator(format!(
            "Unicorn could not translate the guest code at pc {at} in {call}: its translator ran \
             out of TCG temporaries (UC_ERR_RESOURCE), a limit of the emulator, not a fault of \
             the module"
        ))
    }

    /// Run one guest function to completion (in slices, ticking devices between them).
    pub(super) fn call_guest(
        &mut self,
        call: &'static str,
        entry: u32,
        args: &[u32],
    ) -> Result<CallEnd, RigError> {
        let emu = |e| RigError::Emulator(e);
        let st = self.cpu.state.clone();
        let start = st.insns.get();
        st.fault.borrow_mut().take();
        self.kernel.borrow_mut().request = None;
        let sentinel = ram_va(memmap::RETURN_SENTINEL_OFF);
        for r in 1..32 {
            self.cpu.set_reg(r, 0).map_err(emu)?;
        }
        for (i, a) in args.iter().take(4).enumerate() {
            self.cpu.set_reg(4 + i as i32, *a).map_err(emu)?;
        }
        self.cpu.set_reg(25, entry).map_err(emu)?; // $t9, as PIC callers would set it
        self.cpu
            .set_reg(29, ram_va(memmap::STACK_TOP_OFF) - 32)
            .map_err(emu)?;
        self.cpu.set_reg(31, sentinel).map_err(emu)?;
        let mut pc = if self.hang_next.replace(false) {
            ram_va(memmap::HANG_LOOP_OFF)
        } else if self.trap_next.replace(false) {
            ram_va(memmap::TRAP_OFF)
        } else {
            entry
        };
        loop {
            {
                let mut mem = self.cpu.mem();
                self.kernel.borrow().update_status(&mut mem);
            }
            st.stop_at.set(st.insns.get() + SLICE_INSNS);
            let result = self.cpu.uc.emu_start(sext(pc), sext(sentinel), 0, 0);
            let used = st.insns.get() - start;
            let fault = st.fault.borrow_mut().take();
            if let Some(fault) = fault {
                return Err(RigError::Crash(self.crash_report(call, Some(fault), None)));
            }
            if let Err(e) = result {
                if e == uc_error::RESOURCE {
                    return Err(self.translation_failed(call));
                }
                return Err(RigError::Crash(self.crash_report(
                    call,
                    None,
                    Some(format!("{e:?}")),
                )));
            }
            if let Some(req) = self.kernel.borrow_mut().request.take() {
                return Ok(CallEnd::Request(req));
            }
            pc = self.cpu.pc();
            if pc == sentinel {
                self.kernel.borrow_mut().module_insns += used;
                return Ok(CallEnd::Returned(self.cpu.reg(2) as i32));
            }
            let (_, reset) = self.tick_devices();
            if let Some(reason) = reset {
                return Ok(CallEnd::DeviceReset(reason));
            }
            if !self.watchdog_active() && used > self.opts.hang_insns {
                let symbol = self.symbolize(pc);
                return Err(RigError::Hang {
                    call,
                    insns: used,
                    pc,
                    symbol,
                });
            }
        }
    }
}
