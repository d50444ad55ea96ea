//! One debugging session of one context: its software breakpoints (the words they replaced),
//! stepping by a temporary breakpoint at the next PC, and the stops it learns by polling. A
//! session owns everything it changed in the context and [`Session::detach`] undoes it all:
//! every word put back, the context running. Memory it reads shows the replaced words, not the
//! `break`s, so a debugger never sees its own breakpoints.

use alloc::vec::Vec;
use indy::abi::{CTX_MEM_MAX, CtxFrame, CtxStop, STOP_EXCEPTION, exc, frame, status};

use super::next_pc::next_pc;
use crate::hil::debug::{Contexts, CtxState};

/// The `break` word a software breakpoint writes.
pub const BREAK: u32 = 0x0000_000D;
/// Most contexts a session looks among for its own.
const MAX_CONTEXTS: usize = 16;
/// Most breakpoints of one session.
pub const MAX_BREAKPOINTS: usize = 64;

/// Why a context stopped, as a debugger reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// At one of the session's breakpoints.
    Breakpoint(u32),
    /// A step completed; the context stands at this pc.
    Step(u32),
    /// The debugger interrupted it.
    Interrupted(u32),
    /// A CPU exception (a fault, or a `break` that is not the session's).
    Exception(CtxStop),
    /// It returned from its entry: nothing of it runs again.
    Exited,
}

/// The temporary breakpoint of a step in flight.
#[derive(Clone, Copy, Debug)]
struct StepTrap {
    at: u32,
    /// The word it replaced; `None` when a breakpoint of the session was already there.
    saved: Option<u32>,
    /// A breakpoint of the session at the step's start, lifted for the step and put back.
    lifted: Option<u32>,
    /// Resume once the step is done (a continue from a breakpoint steps over it first).
    then_continue: bool,
}

/// A session: the context it debugs, through the kernel's `C`.
pub struct Session<C: Contexts> {
    pub kernel: C,
    pub id: u32,
    /// (address, replaced word), at most [`MAX_BREAKPOINTS`].
    breakpoints: Vec<(u32, u32)>,
    step: Option<StepTrap>,
    /// `ctx_events` when last looked at.
    events: u32,
    running: bool,
}

impl<C: Contexts> Session<C> {
    /// Attaches to context `id` and stops it.
    pub fn attach(kernel: C, id: u32) -> Result<Session<C>, i32> {
        let known = kernel.list(MAX_CONTEXTS)?;
        if !known.iter().any(|c| c.id == id) {
            return Err(status::E_INVAL);
        }
        let mut breakpoints = Vec::new();
        breakpoints
            .try_reserve_exact(MAX_BREAKPOINTS)
            .map_err(|_| status::E_NOMEM)?;
        if let CtxState::Running = kernel.state(id)? {
            kernel.stop(id)?;
        }
        let events = kernel.events()?;
        Ok(Session {
            kernel,
            id,
            breakpoints,
            step: None,
            events,
            running: false,
        })
    }

    /// Whether the context runs (as far as the last poll knows).
    pub fn running(&self) -> bool {
        self.running
    }

    fn word(&self, va: u32) -> Result<u32, i32> {
        let mut b = [0u8; 4];
        self.kernel.read(self.id, va, &mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    fn put_word(&self, va: u32, w: u32) -> Result<(), i32> {
        self.kernel.write(self.id, va, &w.to_be_bytes())
    }

    /// The context's registers (stopped only).
    pub fn regs(&self) -> Result<CtxFrame, i32> {
        self.kernel.regs(self.id)
    }

    /// Sets the context's registers (stopped only).
    pub fn set_regs(&self, f: &CtxFrame) -> Result<(), i32> {
        self.kernel.set_regs(self.id, f)
    }

    /// The word a breakpoint or the step's trap replaced at `at`, if memory holds a `break`
    /// of the session there.
    fn replaced(&self, at: u32) -> Option<u32> {
        if let Some(s) = self.step {
            if s.at == at && s.saved.is_some() {
                return s.saved;
            }
            if s.lifted == Some(at) {
                // Lifted for the step: memory holds the word itself.
                return None;
            }
        }
        self.breakpoints.iter().find(|b| b.0 == at).map(|b| b.1)
    }

    /// Reads the context's memory, showing replaced words instead of breakpoints.
    pub fn read(&self, va: u32, buf: &mut [u8]) -> Result<(), i32> {
        for (i, chunk) in buf.chunks_mut(CTX_MEM_MAX).enumerate() {
            let at = va.wrapping_add((i * CTX_MEM_MAX) as u32);
            self.kernel.read(self.id, at, chunk)?;
        }
        let end = u64::from(va) + buf.len() as u64;
        let spots = self
            .breakpoints
            .iter()
            .map(|b| b.0)
            .chain(self.step.map(|s| s.at));
        for at in spots {
            let Some(word) = self.replaced(at) else {
                continue;
            };
            for (k, b) in word.to_be_bytes().into_iter().enumerate() {
                let a = u64::from(at) + k as u64;
                if a >= u64::from(va) && a < end {
                    buf[(a - u64::from(va)) as usize] = b;
                }
            }
        }
        Ok(())
    }

    /// Writes the context's memory (stopped only). Bytes that land on a breakpoint become
    /// the word it will put back; the `break` stays.
    pub fn write(&mut self, va: u32, data: &[u8]) -> Result<(), i32> {
        if data.len() > CTX_MEM_MAX {
            return Err(status::E_RANGE);
        }
        let mut out = Vec::new();
        out.try_reserve_exact(data.len())
            .map_err(|_| status::E_NOMEM)?;
        out.extend_from_slice(data);
        let end = u64::from(va) + data.len() as u64;
        for bp in self.breakpoints.iter_mut() {
            let mut saved = bp.1.to_be_bytes();
            let brk = BREAK.to_be_bytes();
            let mut touched = false;
            for k in 0..4 {
                let a = u64::from(bp.0) + k as u64;
                if a >= u64::from(va) && a < end {
                    let i = (a - u64::from(va)) as usize;
                    saved[k] = out[i];
                    out[i] = brk[k];
                    touched = true;
                }
            }
            if touched {
                bp.1 = u32::from_be_bytes(saved);
            }
        }
        self.kernel.write(self.id, va, &out)
    }

    /// Sets a breakpoint at `at` (stopped only; word-aligned, in the context's window).
    pub fn add_breakpoint(&mut self, at: u32) -> Result<(), i32> {
        if !at.is_multiple_of(4) {
            return Err(status::E_INVAL);
        }
        if self.breakpoints.iter().any(|b| b.0 == at) {
            return Ok(());
        }
        if self.breakpoints.len() >= MAX_BREAKPOINTS {
            return Err(status::E_RANGE);
        }
        let saved = self.word(at)?;
        self.put_word(at, BREAK)?;
        self.breakpoints.push((at, saved));
        Ok(())
    }

    /// Removes the breakpoint at `at`, putting its word back; `false` when there was none.
    pub fn remove_breakpoint(&mut self, at: u32) -> Result<bool, i32> {
        let Some(i) = self.breakpoints.iter().position(|b| b.0 == at) else {
            return Ok(false);
        };
        self.put_word(at, self.breakpoints[i].1)?;
        self.breakpoints.swap_remove(i);
        Ok(true)
    }

    /// The session's breakpoints.
    pub fn breakpoints(&self) -> impl Iterator<Item = u32> + '_ {
        self.breakpoints.iter().map(|b| b.0)
    }

    /// Lets the context run. From a breakpoint it first steps over it (the breakpoint stays).
    pub fn resume(&mut self) -> Result<(), i32> {
        let pc = self.regs()?.w[frame::PC];
        if self.breakpoints.iter().any(|b| b.0 == pc) {
            return self.start_step(true);
        }
        self.kernel.resume(self.id)?;
        self.running = true;
        Ok(())
    }

    /// Runs one instruction (a branch with its delay slot), then stops.
    pub fn step(&mut self) -> Result<(), i32> {
        self.start_step(false)
    }

    fn start_step(&mut self, then_continue: bool) -> Result<(), i32> {
        let f = self.regs()?;
        let pc = f.w[frame::PC];
        let lifted = self
            .breakpoints
            .iter()
            .find(|b| b.0 == pc)
            .map(|&(at, saved)| (at, saved));
        let insn = match lifted {
            Some((_, saved)) => saved,
            None => self.word(pc)?,
        };
        let mut r = [0u32; 32];
        r.copy_from_slice(&f.w[..32]);
        let at = next_pc(insn, pc, &r);
        if let Some((bp, saved)) = lifted {
            self.put_word(bp, saved)?;
        }
        let saved = if self.breakpoints.iter().any(|b| b.0 == at) && lifted.map(|l| l.0) != Some(at)
        {
            None
        } else {
            let w = match lifted {
                Some((bp, saved)) if bp == at => saved,
                _ => self.word(at)?,
            };
            if let Err(e) = self.put_word(at, BREAK) {
                if let Some((bp, _)) = lifted {
                    self.put_word(bp, BREAK)?;
                }
                return Err(e);
            }
            Some(w)
        };
        self.step = Some(StepTrap {
            at,
            saved,
            lifted: lifted.map(|l| l.0),
            then_continue,
        });
        self.kernel.resume(self.id)?;
        self.running = true;
        Ok(())
    }

    /// Stops the context; the next [`Session::poll`] reports it.
    pub fn interrupt(&mut self) -> Result<(), i32> {
        if self.running {
            self.kernel.stop(self.id)?;
        }
        Ok(())
    }

    /// Takes down the step's trap and puts a lifted breakpoint back.
    fn end_step(&mut self) -> Result<Option<StepTrap>, i32> {
        let Some(s) = self.step.take() else {
            return Ok(None);
        };
        if let Some(w) = s.saved {
            self.put_word(s.at, w)?;
        }
        if let Some(bp) = s.lifted {
            self.put_word(bp, BREAK)?;
        }
        Ok(Some(s))
    }

    /// Whether the context stopped since the last look, and why: one read of the kernel's
    /// event count while nothing happened.
    pub fn poll(&mut self) -> Result<Option<Stop>, i32> {
        if !self.running {
            return Ok(None);
        }
        let events = self.kernel.events()?;
        if events == self.events {
            return Ok(None);
        }
        self.events = events;
        let stop = match self.kernel.state(self.id)? {
            CtxState::Running => return Ok(None),
            CtxState::Exited(_) => {
                self.running = false;
                self.step = None;
                return Ok(Some(Stop::Exited));
            }
            CtxState::Stopped(stop) => stop,
        };
        self.running = false;
        let trap = self.end_step()?;
        let at_break = stop.why == STOP_EXCEPTION && stop.exc_code == exc::BP;
        let pc = stop.pc;
        if let Some(t) = trap
            && at_break
            && pc == t.at
        {
            if t.then_continue {
                self.resume()?;
                return Ok(None);
            }
            return Ok(Some(Stop::Step(pc)));
        }
        if at_break && self.breakpoints.iter().any(|b| b.0 == pc) {
            return Ok(Some(Stop::Breakpoint(pc)));
        }
        if stop.why == indy::abi::STOP_REQUESTED {
            return Ok(Some(Stop::Interrupted(pc)));
        }
        Ok(Some(Stop::Exception(stop)))
    }

    /// Ends the session: every word it replaced put back, the context running.
    pub fn detach(mut self) -> Result<(), i32> {
        if let CtxState::Running = self.kernel.state(self.id)? {
            self.kernel.stop(self.id)?;
        }
        self.end_step()?;
        let mut first_error = Ok(());
        for &(at, saved) in &self.breakpoints {
            if let Err(e) = self.put_word(at, saved) {
                first_error = first_error.and(Err(e));
            }
        }
        self.breakpoints.clear();
        if let CtxState::Stopped(_) = self.kernel.state(self.id)? {
            self.kernel.resume(self.id)?;
        }
        first_error
    }
}
