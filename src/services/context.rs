//! What the services share: the machine, the mounted filesystem, the screen, the figures the
//! network reports, a promised reset, the machine's events. The tool context wraps it (adding what only some tools may
//! hold) and the shell runs on it.

use crate::hil::framebuffer::Framebuffer;
use crate::hil::platform::Platform;
use crate::services::audit::{self, AuditLog};
use crate::services::boot::BootReport;
use crate::services::debug::debugger::Debugger;
use crate::services::events::{self, Events};
use crate::services::fs::{DiskOpener, Fs, FsError};
use crate::services::memory::MemoryPlan;
use crate::services::power::{self, Action, AlreadyScheduled, Pending};
use crate::services::serial_ring::Span;
use crate::services::serial_wait::Waiters;
use crate::services::status::{HeapUsage, NetUsage, Status};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use core::cell::RefCell;
use irix7_kmem::budget::Pool;

pub struct Services {
    pub platform: Box<dyn Platform>,
    /// The ABI version the kernel offers.
    pub abi_version: u32,
    /// Reads the heap figures (the allocator on the Indy, a fake in host tests).
    pub heap: fn() -> HeapUsage,
    /// The network figures, refreshed by the server on each poll.
    pub net: NetUsage,
    /// A reset or power-off a tool has answered for; the module's `poll` carries it out.
    pub pending: Option<Pending>,
    /// The merged filesystem (EROFS image + RAM overlay), once mounted.
    pub fs: Option<Fs>,
    /// Why `fs` is `None` (no disk, or the image was refused): what the fs tools answer.
    pub fs_error: Option<FsError>,
    /// Opens a SCSI target for raw reads (`block.read`).
    pub open_disk: DiskOpener,
    /// The graphics board (the Newport driver), if one answered at boot.
    pub screen: Option<Box<dyn Framebuffer>>,
    /// The heap budget and the budgets of input-driven work, for the status reports.
    pub memory: MemoryPlan,
    /// The pool every running shell command's output draws on (`shell::output::pool`).
    pub shell_output: Rc<Pool>,
    /// The pool a PNG capture holds its encoder against: one at a time
    /// (`screen::capture::png_pool`).
    pub captures: Rc<Pool>,
    /// The machine's events since boot (`irix7://events`); each is also an audit line.
    pub events: Events,
    /// The audit trail's last lines; shared with the MCP server's audit sink, which fills it.
    pub audit: Rc<RefCell<AuditLog>>,
    /// The tool policy in force (`mcp.policy`), as `status` shows it.
    pub policy: Rc<str>,
    /// The calls waiting on the console now, and how many may (see `services::serial_wait`).
    pub serial_waiters: Waiters,
    /// Where in the serial ring the module wrote its generated token, for readers that mask it.
    pub console_secret: Option<Span>,
    /// Why this boot happened and what survived of the previous one (read once at init).
    pub boot: Rc<BootReport>,
    /// The debugger of the kernel's contexts: its one session, and the faults it watches for.
    pub debugger: Debugger,
}

impl Services {
    /// Keeps an event in the ring, and writes it as an audit line to the console and the
    /// audit trail's ring of machine events.
    pub fn record_event(&mut self, at_ms: u64, kind: events::Kind, detail: &str) {
        let line = alloc::string::ToString::to_string(self.events.push(at_ms, kind, detail));
        // As the board's own lines are: the console keeps what the ring drops.
        self.platform.console_write(b"irix7-mcp: ");
        self.platform.console_write(line.as_bytes());
        self.platform.console_write(b"\n");
        if let Ok(mut log) = self.audit.try_borrow_mut() {
            log.push(audit::Kind::Event, &line);
        }
    }

    /// The boot's events: why it happened, and a refused deploy if the last good image runs.
    pub fn record_boot(&mut self, now_ms: u64) {
        let mut detail = alloc::format!(
            "cause {}, module {} build {}",
            self.boot.cause_name(),
            crate::services::identity::VERSION,
            crate::services::identity::BUILD_ID
        );
        // What the kernel and the previous boot's record add (who asked, how long it ran).
        let story = self.boot.line();
        if story != self.boot.cause_name() {
            detail.push_str("; ");
            detail.push_str(&story);
        }
        self.record_event(now_ms, events::Kind::Boot, &detail);
        let identity = crate::services::identity::Identity {
            image: self.platform.image_info(),
        };
        if let Some(line) = identity.refused_line() {
            self.record_event(now_ms, events::Kind::DeployRefused, &line);
        }
    }

    /// Schedules a reset or power-off (see [`power::schedule`]) and records it as an event
    /// naming the door it came through (`system.reset`, the shell's `reboot`).
    pub fn schedule_power(
        &mut self,
        action: Action,
        now_ms: u64,
        delay_ms: u64,
        by: &'static str,
    ) -> Result<Pending, AlreadyScheduled> {
        let p = power::schedule(&mut self.pending, action, by, now_ms, delay_ms)?;
        let kind = match action {
            Action::Reset => events::Kind::ResetRequested,
            Action::Poweroff => events::Kind::ShutdownRequested,
        };
        let detail = alloc::format!("{by}, in {} ms", p.at_ms.saturating_sub(now_ms));
        self.record_event(now_ms, kind, &detail);
        Ok(p)
    }

    /// Takes a poll's start: a gap since the last one that came near the watchdog is an event.
    pub fn polled(&mut self, now_ms: u64) {
        if let Some(gap) = self.events.polled(now_ms) {
            let detail = alloc::format!(
                "{gap} ms between two polls (the watchdog resets at {} ms)",
                events::WATCHDOG_MS
            );
            self.record_event(now_ms, events::Kind::WatchdogNearMiss, &detail);
        }
        if let Some(faults) = self.debugger.poll(now_ms) {
            for fault in faults {
                self.record_event(now_ms, events::Kind::Context, &fault.line());
            }
        }
    }

    /// Takes the network's figures of this poll: an address given, changed or lost is an event.
    pub fn set_net(&mut self, net: NetUsage, now_ms: u64) {
        let (was, now) = (self.net.ip, net.ip);
        self.net = net;
        if was == now {
            return;
        }
        let detail = match now {
            Some([a, b, c, d]) => alloc::format!("{a}.{b}.{c}.{d}/{}", net.prefix_len),
            None => String::from("lost"),
        };
        self.record_event(now_ms, events::Kind::Address, &detail);
    }

    /// Carries out a promised reset or power-off once it is due (see [`power::run_due`]).
    pub fn run_due(&mut self, now_ms: u64) -> Option<Action> {
        power::run_due(&mut self.pending, &*self.platform, now_ms)
    }

    /// A snapshot of the machine's status.
    pub fn status(&self) -> Status {
        let mut st = Status::collect(
            &*self.platform,
            self.abi_version,
            (self.heap)(),
            self.net,
            self.policy.clone(),
        );
        st.cache = self
            .fs
            .as_ref()
            .and_then(|f| f.lower())
            .map(|e| e.cache_stats());
        st.heap_budget = self.memory.heap_budget;
        st.boot = Some(self.boot.clone());
        st.budgets = self.memory.budgets();
        st
    }
}
