//! Who debugs what: at most one session at a time, held by the token that opened it, driven
//! either by GDB (through `/debug/rsp`) or by an agent's `debug.*` calls, never both. A second
//! debugger gets `E_BUSY`. A GDB that stops asking for [`IDLE_MS`] is gone: its session is
//! detached (breakpoints removed, the context running), as when it detaches itself or its
//! connection ends. A reset starts the module afresh, with no session and the kernel's cells
//! reloaded. The debugger also watches every context's stops for faults the machine's events
//! should carry.

use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use indy::abi::{CtxStop, STOP_EXCEPTION, exc, status};

use super::rsp::Rsp;
use super::session::Session;
use crate::hil::debug::{Contexts, CtxState};

/// The kernel's contexts as sessions hold them.
pub type Kernel = Rc<dyn Contexts>;

/// A GDB session with no exchange for this long is ended (the bridge asks at least every
/// second while GDB waits).
pub const IDLE_MS: u64 = 30_000;
/// Most contexts watched for faults.
const WATCHED: usize = 16;

/// What drives the held session.
pub enum Driver {
    Gdb(Rsp<Kernel>),
    Agent(Session<Kernel>),
}

/// The session and whose it is.
pub struct Held {
    /// The token that opened it (0 the administrator, then `mcp.tokens` in order).
    pub owner: u8,
    pub id: u32,
    pub last_ms: u64,
    pub driver: Driver,
}

/// A context's stop worth a machine event: a fault, or its exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub id: u32,
    pub stop: CtxStop,
    pub exited: bool,
}

impl Fault {
    /// One line for the machine's events.
    pub fn line(&self) -> String {
        if self.exited {
            return alloc::format!("context {} exited", self.id);
        }
        let s = &self.stop;
        alloc::format!(
            "context {} stopped: {} at pc {:#010x}, bad address {:#010x}, cause {:#010x}",
            self.id,
            exception_name(s.exc_code),
            s.pc,
            s.bad,
            s.cause
        )
    }
}

/// The name of a MIPS exception code, as the tools and events say it.
pub fn exception_name(code: u32) -> &'static str {
    match code {
        exc::INT => "interrupt",
        exc::TLBL => "TLB miss on load (TLBL)",
        exc::TLBS => "TLB miss on store (TLBS)",
        exc::ADEL => "address error on load or fetch (AdEL)",
        exc::ADES => "address error on store (AdES)",
        exc::IBE => "bus error on fetch (IBE)",
        exc::DBE => "bus error on data (DBE)",
        exc::SYS => "syscall (Sys)",
        exc::BP => "breakpoint (Bp)",
        exc::RI => "reserved instruction (RI)",
        exc::CPU => "coprocessor unusable (CpU)",
        exc::OV => "integer overflow (Ov)",
        exc::TR => "trap (Tr)",
        exc::FPE => "floating-point exception (FPE)",
        _ => "exception",
    }
}

pub struct Debugger {
    kernel: Option<Kernel>,
    held: Option<Held>,
    /// `ctx_events` when the fault watch last looked.
    seen: Option<u32>,
    /// (context, stop seq) of the stops already reported; id 0 is a free slot.
    reported: [(u32, u32); WATCHED],
}

impl Debugger {
    /// A debugger of the kernel's contexts; `None`: a machine with none (host fakes).
    pub fn new(kernel: Option<Kernel>) -> Debugger {
        Debugger {
            kernel,
            held: None,
            seen: None,
            reported: [(0, 0); WATCHED],
        }
    }

    fn kernel(&self) -> Result<Kernel, i32> {
        self.kernel.clone().ok_or(status::E_NOSYS)
    }

    /// The session, if one is held: (owner, context).
    pub fn holder(&self) -> Option<(u8, u32)> {
        self.held.as_ref().map(|h| (h.owner, h.id))
    }

    /// The GDB session of `owner` on context `id`, attached now if there is none.
    pub fn open_gdb(&mut self, owner: u8, id: u32, now_ms: u64) -> Result<&mut Rsp<Kernel>, i32> {
        if self.held.is_none() {
            let session = Session::attach(self.kernel()?, id)?;
            let rsp = Rsp::start(session)?;
            self.held = Some(Held {
                owner,
                id,
                last_ms: now_ms,
                driver: Driver::Gdb(rsp),
            });
        }
        match &mut self.held {
            Some(Held {
                owner: o,
                id: i,
                last_ms,
                driver: Driver::Gdb(rsp),
            }) if *o == owner && *i == id => {
                *last_ms = now_ms;
                Ok(rsp)
            }
            _ => Err(status::E_BUSY),
        }
    }

    /// The GDB session of `owner` on context `id` if it still lasts (`E_INVAL` once it ended:
    /// an exchange in flight never opens a new one).
    pub fn gdb(&mut self, owner: u8, id: u32, now_ms: u64) -> Result<&mut Rsp<Kernel>, i32> {
        if self.held.is_none() {
            return Err(status::E_INVAL);
        }
        self.open_gdb(owner, id, now_ms)
    }

    /// Attaches `owner`'s agent session to context `id` (stopping it).
    pub fn attach(&mut self, owner: u8, id: u32, now_ms: u64) -> Result<&mut Session<Kernel>, i32> {
        if self.held.is_some() {
            return Err(status::E_BUSY);
        }
        let session = Session::attach(self.kernel()?, id)?;
        self.held = Some(Held {
            owner,
            id,
            last_ms: now_ms,
            driver: Driver::Agent(session),
        });
        self.agent(owner, now_ms)
    }

    /// `owner`'s agent session: `E_INVAL` when it has none, `E_BUSY` when another holds one.
    pub fn agent(&mut self, owner: u8, now_ms: u64) -> Result<&mut Session<Kernel>, i32> {
        match &mut self.held {
            Some(Held {
                owner: o,
                last_ms,
                driver: Driver::Agent(s),
                ..
            }) if *o == owner => {
                *last_ms = now_ms;
                Ok(s)
            }
            Some(_) => Err(status::E_BUSY),
            None => Err(status::E_INVAL),
        }
    }

    /// Ends `owner`'s session, whichever drives it: everything it changed is undone.
    pub fn detach(&mut self, owner: u8) -> Result<(), i32> {
        match &self.held {
            Some(h) if h.owner == owner => {}
            Some(_) => return Err(status::E_BUSY),
            None => return Err(status::E_INVAL),
        }
        self.end()
    }

    fn end(&mut self) -> Result<(), i32> {
        match self.held.take().map(|h| h.driver) {
            Some(Driver::Gdb(rsp)) => rsp.close(),
            Some(Driver::Agent(s)) => s.detach(),
            None => Ok(()),
        }
    }

    /// One poll: GDB hears of its context's stop, a GDB gone (detached, or silent for
    /// [`IDLE_MS`]) is detached, and a fault or exit of any context is returned for the
    /// machine's events (`None`: nothing stopped). One read of the kernel's event count when
    /// nothing happened.
    pub fn poll(&mut self, now_ms: u64) -> Option<Vec<Fault>> {
        if let Some(Held {
            last_ms,
            driver: Driver::Gdb(rsp),
            ..
        }) = &mut self.held
        {
            rsp.next_poll();
            rsp.poll();
            // GDB's last answer (to its detach) goes out before the session ends.
            let gone = rsp.finished() && rsp.output().is_empty();
            if gone || now_ms.saturating_sub(*last_ms) > IDLE_MS {
                let _ = self.end();
            }
        }
        // The idle path: one read of the kernel's count, nothing cloned or allocated.
        let events = match self.kernel.as_deref().map(|k| k.events()) {
            None => return None,
            Some(Ok(e)) if self.seen == Some(e) => return None,
            Some(Ok(e)) => e,
            Some(Err(_)) => {
                // A kernel without contexts: never asked again (attach answers E_NOSYS).
                self.kernel = None;
                return None;
            }
        };
        self.seen = Some(events);
        Some(self.watch())
    }

    /// The stops no debugger caused: faults and exits, each reported once (the kernel's
    /// event count changed).
    fn watch(&mut self) -> Vec<Fault> {
        let mut faults = Vec::new();
        let Some(kernel) = self.kernel.clone() else {
            return faults;
        };
        let Ok(contexts) = kernel.list(WATCHED) else {
            return faults;
        };
        for c in contexts {
            let (stop, exited) = match kernel.state(c.id) {
                Ok(CtxState::Stopped(s)) => (s, false),
                Ok(CtxState::Exited(s)) => (s, true),
                _ => continue,
            };
            let fault = stop.why == STOP_EXCEPTION && stop.exc_code != exc::BP;
            let key = (c.id, stop.seq);
            if !(fault || exited) || self.reported.contains(&key) {
                continue;
            }
            let slot = self.reported.iter().position(|r| r.0 == c.id || r.0 == 0);
            if let Some(i) = slot {
                self.reported[i] = key;
            }
            if faults.try_reserve(1).is_err() {
                break;
            }
            faults.push(Fault {
                id: c.id,
                stop,
                exited,
            });
        }
        faults
    }
}
