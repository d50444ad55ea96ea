//! What a tool family can reach: one trait per thing a tool may touch ("capability" is the
//! authority table's word, `capabilities.rs`). A handler is generic over the traits its family
//! uses (`fn read<C: Files>(ctx: &mut C, …)`), so what it can touch is in its signature and
//! nothing else is nameable from it; the tables instantiate it once, with
//! [`Ctx`](super::Ctx), which implements them all. docs/architecture.md ("What a tool can
//! reach") lists which family gets which.

use super::devices::raw_access::RawAccess;
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

/// The debugger of the kernel's contexts (`debug.*`).
pub trait Debugging {
    fn debugger(&mut self) -> &mut crate::services::debug::debugger::Debugger;
}

/// What the machine is: its status block, processes, interrupt sources, clock, and the ABI
/// version the kernel offers.
pub trait MachineFacts {
    fn machine(&self) -> &dyn Machine;
    fn abi_version(&self) -> u32;
}

/// The console: output, the kernel's serial ring, keyboard input, and where in the ring the
/// module wrote a secret (so a reader can mask it: `services::serial_ring`).
pub trait ConsoleLine {
    fn console(&self) -> &dyn Console;
    fn console_secret(&self) -> Option<Span>;
}

/// Why this boot happened and what survived of the previous one: its console, its flight
/// record (read once at init).
pub trait BootRecord {
    fn boot(&self) -> &BootReport;
}

/// The calls waiting on the console now, and how many may.
pub trait ConsoleWaiters {
    fn serial_waiters(&self) -> &Waiters;
}

/// The mounted filesystem, or why there is none (`Err(None)`: nothing was mounted).
pub trait Files {
    fn fs(&mut self) -> Result<&mut Fs, Option<&FsError>>;
}

/// Opens a SCSI target for raw sector reads.
pub trait Disks {
    fn open_disk(&self, target: u32) -> Result<Disk, IoError>;
}

/// The graphics board, if one answered at boot.
pub trait ScreenBoard {
    fn screen(&mut self) -> Option<&mut dyn Framebuffer>;
    /// Room for one more PNG capture's encoder, held until the lease drops; `None` while the
    /// captures that may run at once are running.
    fn capture_room(&self) -> Option<Lease>;
}

/// The network figures the server refreshes each poll (address, port, the NIC's rings).
pub trait NetFigures {
    fn net(&self) -> &NetUsage;
}

/// The slot of a promised reset or power-off, which the module's poll carries out; a
/// scheduled one is a machine event, named by the door it came through.
pub trait PowerSchedule {
    fn schedule_power(
        &mut self,
        action: Action,
        now_ms: u64,
        delay_ms: u64,
        by: &'static str,
    ) -> Result<Pending, AlreadyScheduled>;
}

/// The machine's events since boot.
pub trait MachineEvents {
    fn events(&self) -> &Events;
}

/// A snapshot of everything `status` reports, and the members of its result written when
/// what they show last changed.
pub trait StatusFigures {
    fn status(&self) -> Status;
    fn fixed_members(&mut self) -> &mut FixedMembers;
}

/// The audit trail's last lines.
pub trait AuditTrail {
    fn audit(&self) -> &RefCell<AuditLog>;
}

/// Physical memory and registers: the grant is opaque outside `tools::devices`.
pub trait RawBusGrant {
    fn raw(&self) -> &RawAccess;
}

/// The whole machine, for the shell: its builtins read the status, the processes and the
/// filesystem, and `reboot`/`poweroff` schedule the power slot. The broadest capability, and
/// only `shell.exec` has it.
pub trait ShellHost {
    fn host(&mut self) -> &mut Services;
}
