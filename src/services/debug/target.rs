//! The session as gdbstub's target: one thread (the context), registers and memory, resume,
//! step and software breakpoints, all through [`Session`]. A refused request (a context that
//! runs, an address outside its window) is an error packet to GDB, never the session's end;
//! only a failed resume or step is fatal, since GDB would wait for a stop that cannot come.

use gdbstub::common::Signal;
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::base::singlethread::{
    SingleThreadBase, SingleThreadResume, SingleThreadResumeOps, SingleThreadSingleStep,
    SingleThreadSingleStepOps,
};
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, SwBreakpoint, SwBreakpointOps,
};
use gdbstub::target::{Target, TargetError, TargetResult};
use indy::abi::status;

use super::arch::{MipsBe, Regs, narrow};
use super::session::Session;
use crate::hil::debug::Contexts;

/// GDB's errno for a refused access (EFAULT).
const EFAULT: u8 = 14;

/// A session GDB drives.
pub struct CellTarget<C: Contexts> {
    pub session: Session<C>,
}

fn refused<E>(_status: i32) -> TargetError<E> {
    TargetError::Errno(EFAULT)
}

/// GDB's address as the machine's, or the error packet for one it cannot be.
fn address<E>(addr: u64) -> Result<u32, TargetError<E>> {
    narrow(addr).ok_or(TargetError::Errno(EFAULT))
}

impl<C: Contexts> Target for CellTarget<C> {
    type Arch = MipsBe;
    /// The kernel's status that ended the session.
    type Error = i32;

    fn base_ops(&mut self) -> BaseOps<'_, MipsBe, i32> {
        BaseOps::SingleThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    /// Breakpoints are the session's own: gdbstub must not invent any.
    fn guard_rail_implicit_sw_breakpoints(&self) -> bool {
        true
    }
}

impl<C: Contexts> SingleThreadBase for CellTarget<C> {
    fn read_registers(&mut self, regs: &mut Regs) -> TargetResult<(), Self> {
        regs.0 = self.session.regs().map_err(refused)?;
        Ok(())
    }

    fn write_registers(&mut self, regs: &Regs) -> TargetResult<(), Self> {
        self.session.set_regs(&regs.0).map_err(refused)
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8]) -> TargetResult<usize, Self> {
        self.session.read(address(start)?, data).map_err(refused)?;
        Ok(data.len())
    }

    fn write_addrs(&mut self, start: u64, data: &[u8]) -> TargetResult<(), Self> {
        self.session.write(address(start)?, data).map_err(refused)
    }

    fn support_resume(&mut self) -> Option<SingleThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl<C: Contexts> SingleThreadResume for CellTarget<C> {
    /// A signal cannot be delivered to a cell: it is ignored.
    fn resume(&mut self, _signal: Option<Signal>) -> Result<(), i32> {
        self.session.resume()
    }

    fn support_single_step(&mut self) -> Option<SingleThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl<C: Contexts> SingleThreadSingleStep for CellTarget<C> {
    fn step(&mut self, _signal: Option<Signal>) -> Result<(), i32> {
        self.session.step()
    }
}

impl<C: Contexts> Breakpoints for CellTarget<C> {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl<C: Contexts> SwBreakpoint for CellTarget<C> {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        match self.session.add_breakpoint(address(addr)?) {
            Ok(()) => Ok(true),
            Err(status::E_RANGE) if self.session.breakpoints().count() > 0 => Ok(false),
            Err(e) => Err(refused(e)),
        }
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        self.session
            .remove_breakpoint(address(addr)?)
            .map_err(refused)
    }
}
