//! A simulated cell for the host tests and the `gdb_rsp` fuzz target: a window of memory, a frame, and a state the test
//! moves by hand (it "arrives" at an address, which stops it there when a `break` is written
//! there), counting events as the kernel does.

use alloc::rc::Rc;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;

use indy::abi::{
    CTX_MEM_MAX, CTX_RUNNING, CTX_STOPPED, CtxFrame, CtxInfo, CtxStop, STOP_EXCEPTION,
    STOP_REQUESTED, exc, frame, status,
};

use super::session::BREAK;
use crate::hil::debug::{Contexts, CtxState};

pub const BASE: u32 = 0x8870_0000;
pub const SIZE: u32 = 0x1000;

pub struct Sim {
    pub mem: Vec<u8>,
    pub frame: CtxFrame,
    pub state: u32,
    pub stop: CtxStop,
    pub events: u32,
    pub resumes: u32,
    /// Answer E_NOSYS to everything (a kernel before ABI 15).
    pub old_kernel: bool,
}

#[derive(Clone)]
pub struct FakeCell(pub Rc<RefCell<Sim>>);

impl FakeCell {
    /// A running cell whose code is `words` at [`BASE`], pc at BASE.
    pub fn new(words: &[u32]) -> FakeCell {
        let mut mem = vec![0u8; SIZE as usize];
        for (i, w) in words.iter().enumerate() {
            mem[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
        }
        let mut f = CtxFrame::default();
        f.w[frame::PC] = BASE;
        f.w[29] = BASE + SIZE - 32;
        FakeCell(Rc::new(RefCell::new(Sim {
            mem,
            frame: f,
            state: CTX_RUNNING,
            stop: CtxStop::default(),
            events: 0,
            resumes: 0,
            old_kernel: false,
        })))
    }

    pub fn word(&self, va: u32) -> u32 {
        let s = self.0.borrow();
        let i = (va - BASE) as usize;
        let b = &s.mem[i..i + 4];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn running(&self) -> bool {
        self.0.borrow().state == CTX_RUNNING
    }

    fn record(s: &mut Sim, stop: CtxStop) {
        s.frame.w[frame::PC] = stop.pc;
        s.frame.w[frame::CAUSE] = stop.cause;
        s.stop = CtxStop {
            seq: s.stop.seq + 1,
            ..stop
        };
        s.state = CTX_STOPPED;
        s.events += 1;
    }

    /// The running cell reaches `pc`: it stops there if a `break` is there.
    pub fn arrive(&self, pc: u32) {
        let brk = self.word(pc) == BREAK;
        let mut s = self.0.borrow_mut();
        assert_eq!(s.state, CTX_RUNNING, "arrive while stopped");
        s.frame.w[frame::PC] = pc;
        if brk {
            let stop = CtxStop {
                why: STOP_EXCEPTION,
                exc_code: exc::BP,
                pc,
                cause: exc::BP << 2,
                ..CtxStop::default()
            };
            FakeCell::record(&mut s, stop);
        }
    }

    /// The running cell faults at `pc`.
    pub fn fault(&self, pc: u32, exc_code: u32, bad: u32) {
        let mut s = self.0.borrow_mut();
        let stop = CtxStop {
            why: STOP_EXCEPTION,
            exc_code,
            pc,
            bad,
            cause: exc_code << 2,
            ..CtxStop::default()
        };
        FakeCell::record(&mut s, stop);
    }

    fn window(va: u32, len: usize) -> Result<usize, i32> {
        if len > CTX_MEM_MAX || va < BASE || u64::from(va) + len as u64 > u64::from(BASE + SIZE) {
            return Err(status::E_RANGE);
        }
        Ok((va - BASE) as usize)
    }

    fn abi(&self) -> Result<(), i32> {
        if self.0.borrow().old_kernel {
            Err(status::E_NOSYS)
        } else {
            Ok(())
        }
    }
}

impl Contexts for FakeCell {
    fn events(&self) -> Result<u32, i32> {
        self.abi()?;
        Ok(self.0.borrow().events)
    }

    fn list(&self, max: usize) -> Result<Vec<CtxInfo>, i32> {
        self.abi()?;
        let s = self.0.borrow();
        let info = CtxInfo {
            id: 1,
            state: s.state,
            base: BASE,
            size: SIZE,
            ..CtxInfo::default()
        };
        Ok([info].into_iter().take(max).collect())
    }

    fn stop(&self, id: u32) -> Result<(), i32> {
        self.abi()?;
        if id != 1 {
            return Err(status::E_INVAL);
        }
        let mut s = self.0.borrow_mut();
        if s.state == CTX_RUNNING {
            let pc = s.frame.w[frame::PC];
            let stop = CtxStop {
                why: STOP_REQUESTED,
                pc,
                ..CtxStop::default()
            };
            FakeCell::record(&mut s, stop);
        }
        Ok(())
    }

    fn resume(&self, id: u32) -> Result<(), i32> {
        self.abi()?;
        let mut s = self.0.borrow_mut();
        if id != 1 || s.state != CTX_STOPPED {
            return Err(status::E_BUSY);
        }
        s.state = CTX_RUNNING;
        s.resumes += 1;
        Ok(())
    }

    fn state(&self, _id: u32) -> Result<CtxState, i32> {
        self.abi()?;
        let s = self.0.borrow();
        Ok(match s.state {
            CTX_RUNNING => CtxState::Running,
            CTX_STOPPED => CtxState::Stopped(s.stop),
            _ => CtxState::Exited(s.stop),
        })
    }

    fn regs(&self, _id: u32) -> Result<CtxFrame, i32> {
        self.abi()?;
        let s = self.0.borrow();
        if s.state != CTX_STOPPED {
            return Err(status::E_BUSY);
        }
        Ok(s.frame)
    }

    fn set_regs(&self, _id: u32, f: &CtxFrame) -> Result<(), i32> {
        self.abi()?;
        let mut s = self.0.borrow_mut();
        if s.state != CTX_STOPPED {
            return Err(status::E_BUSY);
        }
        s.frame.w[1..frame::SR].copy_from_slice(&f.w[1..frame::SR]);
        s.frame.w[frame::LO] = f.w[frame::LO];
        s.frame.w[frame::HI] = f.w[frame::HI];
        s.frame.w[frame::PC] = f.w[frame::PC];
        Ok(())
    }

    fn read(&self, _id: u32, va: u32, buf: &mut [u8]) -> Result<(), i32> {
        self.abi()?;
        let i = FakeCell::window(va, buf.len())?;
        buf.copy_from_slice(&self.0.borrow().mem[i..i + buf.len()]);
        Ok(())
    }

    fn write(&self, _id: u32, va: u32, data: &[u8]) -> Result<(), i32> {
        self.abi()?;
        let i = FakeCell::window(va, data.len())?;
        let mut s = self.0.borrow_mut();
        if s.state != CTX_STOPPED {
            return Err(status::E_BUSY);
        }
        s.mem[i..i + data.len()].copy_from_slice(data);
        Ok(())
    }
}
