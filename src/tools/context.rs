//! The one context type the tool tables are instantiated with: the shared [`Services`] and the
//! raw bus. Tool handlers never see it whole: each is generic over the [`reach`](super::reach)
//! traits its family uses, which `Ctx` implements here. The module's own side (the board's
//! poll, the router) reaches the services through [`Ctx::services`].

use super::devices::raw_access::RawAccess;
use super::reach::{
    AuditTrail, BootRecord, ConsoleLine, ConsoleWaiters, Debugging, Disks, Files, MachineEvents,
    MachineFacts, NetFigures, PowerSchedule, RawBusGrant, ScreenBoard, ShellHost, StatusFigures,
};
use super::system::status_json::FixedMembers;
use crate::hil::block::IoError;
use crate::hil::framebuffer::Framebuffer;
use crate::hil::platform::{Console, Machine};
use crate::services::audit::AuditLog;
use crate::services::boot::BootReport;
use crate::services::context::Services;
use crate::services::events::Events;
use crate::services::fs::{Disk, Fs, FsError};
use crate::services::power::{Action, AlreadyScheduled, Pending};
use crate::services::serial_ring::Span;
use crate::services::serial_wait::Waiters;
use crate::services::status::{NetUsage, Status};
use core::cell::RefCell;
use irix7_kmem::budget::Lease;

pub struct Ctx {
    services: Services,
    raw: RawAccess,
    /// `status`'s result members that change only with a boot or the configuration.
    fixed_members: FixedMembers,
}

impl Ctx {
    pub fn new(services: Services, raw: RawAccess) -> Self {
        Ctx {
            services,
            raw,
            fixed_members: FixedMembers::default(),
        }
    }

    /// The services, for the module's side of the context (not a tool's).
    pub fn services(&self) -> &Services {
        &self.services
    }

    pub fn services_mut(&mut self) -> &mut Services {
        &mut self.services
    }
}

impl Debugging for Ctx {
    fn debugger(&mut self) -> &mut crate::services::debug::debugger::Debugger {
        &mut self.services_mut().debugger
    }
}

impl MachineFacts for Ctx {
    fn machine(&self) -> &dyn Machine {
        &*self.services.platform
    }
    fn abi_version(&self) -> u32 {
        self.services.abi_version
    }
}

impl ConsoleLine for Ctx {
    fn console(&self) -> &dyn Console {
        &*self.services.platform
    }
    fn console_secret(&self) -> Option<Span> {
        self.services.console_secret
    }
}

impl BootRecord for Ctx {
    fn boot(&self) -> &BootReport {
        &self.services.boot
    }
}

impl ConsoleWaiters for Ctx {
    fn serial_waiters(&self) -> &Waiters {
        &self.services.serial_waiters
    }
}

impl Files for Ctx {
    fn fs(&mut self) -> Result<&mut Fs, Option<&FsError>> {
        let s = &mut self.services;
        s.fs.as_mut().ok_or(s.fs_error.as_ref())
    }
}

impl Disks for Ctx {
    fn open_disk(&self, target: u32) -> Result<Disk, IoError> {
        (self.services.open_disk)(target)
    }
}

impl ScreenBoard for Ctx {
    fn screen(&mut self) -> Option<&mut dyn Framebuffer> {
        match &mut self.services.screen {
            Some(fb) => Some(&mut **fb),
            None => None,
        }
    }
    fn capture_room(&self) -> Option<Lease> {
        self.services
            .captures
            .take(crate::services::screen::capture::PNG_CAPTURE_BYTES)
    }
}

impl NetFigures for Ctx {
    fn net(&self) -> &NetUsage {
        &self.services.net
    }
}

impl PowerSchedule for Ctx {
    fn schedule_power(
        &mut self,
        action: Action,
        now_ms: u64,
        delay_ms: u64,
        by: &'static str,
    ) -> Result<Pending, AlreadyScheduled> {
        self.services.schedule_power(action, now_ms, delay_ms, by)
    }
}

impl MachineEvents for Ctx {
    fn events(&self) -> &Events {
        &self.services.events
    }
}

impl StatusFigures for Ctx {
    fn status(&self) -> Status {
        self.services.status()
    }
    fn fixed_members(&mut self) -> &mut FixedMembers {
        &mut self.fixed_members
    }
}

impl AuditTrail for Ctx {
    fn audit(&self) -> &RefCell<AuditLog> {
        &self.services.audit
    }
}

impl RawBusGrant for Ctx {
    fn raw(&self) -> &RawAccess {
        &self.raw
    }
}

impl ShellHost for Ctx {
    fn host(&mut self) -> &mut Services {
        &mut self.services
    }
}
