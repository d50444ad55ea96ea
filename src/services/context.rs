//! What the services share: the machine, the mounted filesystem, the screen, the figures the
//! network reports, a promised reset. The tool context wraps it (adding what only some tools may
//! hold) and the shell runs on it.

use crate::hil::framebuffer::Framebuffer;
use crate::hil::platform::Platform;
use crate::services::audit::AuditLog;
use crate::services::boot::BootReport;
use crate::services::fs::{DiskOpener, Fs, FsError};
use crate::services::memory::MemoryPlan;
use crate::services::power::{self, Action, Pending};
use crate::services::serial_ring::Span;
use crate::services::serial_wait::Waiters;
use crate::services::status::{HeapUsage, NetUsage, Status};
use alloc::boxed::Box;
use alloc::rc::Rc;
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
}

impl Services {
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
