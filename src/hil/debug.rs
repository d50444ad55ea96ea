//! The kernel's debuggable contexts (ABI 15): the cells it runs beside the module, which the
//! debugger stops, inspects and resumes. Every call is a plain request to the kernel: a stop is
//! learnt by polling [`Contexts::events`], never by a callback. The board implements it over the
//! ABI table, host tests over a simulated cell. Errors are the kernel's negative statuses
//! (`E_NOSYS` on a kernel before ABI 15, `E_BUSY` for a context not stopped, `E_RANGE` outside
//! its window).

use alloc::vec::Vec;
use indy::abi::{CtxFrame, CtxInfo, CtxStop};

/// How a context stands, with its last stop when it is not running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtxState {
    Running,
    Stopped(CtxStop),
    Exited(CtxStop),
}

pub trait Contexts {
    /// Stops of every context so far (wrapping): a change means a context stopped.
    fn events(&self) -> Result<u32, i32>;
    /// The contexts, at most `max`.
    fn list(&self, max: usize) -> Result<Vec<CtxInfo>, i32>;
    /// Stops context `id` (it is stopped when this returns).
    fn stop(&self, id: u32) -> Result<(), i32>;
    /// Lets stopped context `id` run on from its frame's pc.
    fn resume(&self, id: u32) -> Result<(), i32>;
    /// Whether context `id` runs, and why it last stopped.
    fn state(&self, id: u32) -> Result<CtxState, i32>;
    /// A stopped context's registers.
    fn regs(&self, id: u32) -> Result<CtxFrame, i32>;
    /// Sets a stopped context's registers (r1–r31, lo, hi, pc).
    fn set_regs(&self, id: u32, frame: &CtxFrame) -> Result<(), i32>;
    /// Reads the context's memory at `va` (at most `indy::abi::CTX_MEM_MAX` bytes).
    fn read(&self, id: u32, va: u32, buf: &mut [u8]) -> Result<(), i32>;
    /// Writes a stopped context's memory at `va`, the instruction cache kept coherent.
    fn write(&self, id: u32, va: u32, data: &[u8]) -> Result<(), i32>;
}

/// A shared binding is one too (sessions hold a handle on the kernel's).
impl<T: Contexts + ?Sized> Contexts for alloc::rc::Rc<T> {
    fn events(&self) -> Result<u32, i32> {
        (**self).events()
    }
    fn list(&self, max: usize) -> Result<Vec<CtxInfo>, i32> {
        (**self).list(max)
    }
    fn stop(&self, id: u32) -> Result<(), i32> {
        (**self).stop(id)
    }
    fn resume(&self, id: u32) -> Result<(), i32> {
        (**self).resume(id)
    }
    fn state(&self, id: u32) -> Result<CtxState, i32> {
        (**self).state(id)
    }
    fn regs(&self, id: u32) -> Result<CtxFrame, i32> {
        (**self).regs(id)
    }
    fn set_regs(&self, id: u32, frame: &CtxFrame) -> Result<(), i32> {
        (**self).set_regs(id, frame)
    }
    fn read(&self, id: u32, va: u32, buf: &mut [u8]) -> Result<(), i32> {
        (**self).read(id, va, buf)
    }
    fn write(&self, id: u32, va: u32, data: &[u8]) -> Result<(), i32> {
        (**self).write(id, va, data)
    }
}
