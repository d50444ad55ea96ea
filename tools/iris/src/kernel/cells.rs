//! The cells the kernel runs beside the module: ABI 15's debuggable contexts. A cell is a small
//! R4400 program in its own window of RAM; the scheduler gives it a slice after each poll
//! (`rig/cells.rs`), and the module stops, inspects and resumes it through the `ctx_*` calls
//! implemented here. Its registers live in a saved Unicorn context between slices, so a
//! pending branch (a delay slot) survives the switch.

use indy::abi::{
    CTX_EXITED, CTX_FRAME_WORDS, CTX_MEM_MAX, CTX_RUNNING, CTX_STOPPED, CtxFrame, CtxInfo, CtxStop,
    STOP_REQUESTED, frame, status,
};
use indy::map::unmapped_phys;
use unicorn_engine::{Context, RegisterMIPS};

use super::abi::{AbiFn, AbiRet};
use crate::memmap::sext;
use crate::memory::GuestMemory;

/// Most contexts `ctx_list` fills (the rig runs at most a few cells).
pub const MAX_CTX: u32 = 16;

/// One cell.
pub struct Cell {
    /// Its id (1, 2, …), never 0.
    pub id: u32,
    pub name: String,
    /// Its window (KSEG0): code, data and stack.
    pub base: u32,
    pub size: u32,
    /// `CTX_RUNNING`, `CTX_STOPPED` or `CTX_EXITED`.
    pub state: u32,
    /// Its last stop (`seq` 0: never stopped).
    pub stop: CtxStop,
    /// Its registers between slices.
    pub ctx: Context,
    /// Guest instructions it has run.
    pub insns: u64,
}

impl Cell {
    /// The PC its saved context resumes at.
    pub fn pc(&self) -> u32 {
        self.ctx.reg_read(RegisterMIPS::PC).unwrap_or(0) as u32
    }

    /// Whether `len` bytes at `va` lie inside its window.
    fn holds(&self, va: u32, len: u32) -> bool {
        va >= self.base
            && va
                .checked_add(len)
                .is_some_and(|end| end <= self.base + self.size)
    }

    /// Its registers in GDB's MIPS order.
    pub fn frame(&self) -> CtxFrame {
        let mut f = CtxFrame::default();
        let r = |id: i32| self.ctx.reg_read(id).unwrap_or(0) as u32;
        for n in 1..32 {
            f.w[n] = r(2 + n as i32);
        }
        f.w[frame::SR] = r(RegisterMIPS::CP0_STATUS as i32);
        f.w[frame::LO] = r(RegisterMIPS::LO as i32);
        f.w[frame::HI] = r(RegisterMIPS::HI as i32);
        f.w[frame::BAD] = self.stop.bad;
        f.w[frame::CAUSE] = self.stop.cause;
        f.w[frame::PC] = self.pc();
        f
    }

    /// Sets its registers from a frame: r1–r31, LO, HI, PC (the rest is read-only or absent on
    /// this soft-float machine).
    pub fn set_frame(&mut self, f: &CtxFrame) -> Result<(), String> {
        let mut w = |id: i32, v: u32| {
            self.ctx
                .reg_write(id, sext(v))
                .map_err(|e| format!("context register {id}: {e:?}"))
        };
        for n in 1..32 {
            w(2 + n as i32, f.w[n])?;
        }
        w(RegisterMIPS::LO as i32, f.w[frame::LO])?;
        w(RegisterMIPS::HI as i32, f.w[frame::HI])?;
        w(RegisterMIPS::PC as i32, f.w[frame::PC])
    }

    /// Records a stop at `pc` (the context resumes there) and counts it.
    pub fn record_stop(&mut self, mut stop: CtxStop, events: &mut u32) {
        let _ = self.ctx.reg_write(RegisterMIPS::PC, sext(stop.pc));
        stop.seq = self.stop.seq.wrapping_add(1);
        self.stop = stop;
        self.state = if stop.why == indy::abi::STOP_EXITED {
            CTX_EXITED
        } else {
            CTX_STOPPED
        };
        *events = events.wrapping_add(1);
    }
}

/// The kernel's cells and what the scheduler must do for them.
#[derive(Default)]
pub struct Cells {
    pub list: Vec<Cell>,
    /// Stops ever (`ctx_events`).
    pub events: u32,
    /// Code written since the last slice (`(va, len)`): translated code to drop before any
    /// cell runs again, since a host-side write does not invalidate it.
    pub dirty: Vec<(u32, u32)>,
}

/// A frame's or a stop's bytes as guest memory holds them (big-endian words).
fn words_be(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn stop_words(s: &CtxStop) -> [u32; 6] {
    [s.seq, s.why, s.exc_code, s.pc, s.bad, s.cause]
}

fn info_bytes(c: &Cell) -> Vec<u8> {
    let mut b = words_be(&[
        c.id,
        c.state,
        0,
        if c.state == CTX_STOPPED { c.pc() } else { 0 },
        c.base,
        c.size,
    ]);
    let mut name = [0u8; 16];
    let n = c.name.len().min(15);
    name[..n].copy_from_slice(&c.name.as_bytes()[..n]);
    b.extend_from_slice(&name);
    b
}

/// The physical address of `len` bytes of module memory at `va` (both ends in one KSEG).
fn module_buf(va: u32, len: usize) -> Option<u64> {
    let phys = unmapped_phys(va)?;
    unmapped_phys(va.checked_add((len as u32).saturating_sub(1))?)?;
    Some(u64::from(phys))
}

impl Cells {
    fn find(&mut self, id: u32) -> Option<&mut Cell> {
        self.list.iter_mut().find(|c| c.id == id)
    }

    /// Runs one `ctx_*` call: `a` holds its argument words.
    pub fn call(&mut self, f: AbiFn, a: [u32; 4], mem: &mut dyn GuestMemory) -> AbiRet {
        AbiRet::I32(match self.call_inner(f, a, mem) {
            Ok(v) | Err(v) => v,
        })
    }

    fn call_inner(&mut self, f: AbiFn, a: [u32; 4], mem: &mut dyn GuestMemory) -> Result<i32, i32> {
        if f == AbiFn::CtxList {
            let max = a[1].min(MAX_CTX) as usize;
            let n = self.list.len().min(max);
            let entry = core::mem::size_of::<CtxInfo>();
            if n > 0 {
                let bp = module_buf(a[0], n * entry).ok_or(status::E_INVAL)?;
                let bytes: Vec<u8> = self.list.iter().take(n).flat_map(info_bytes).collect();
                mem.write(bp, &bytes).map_err(|_| status::E_INVAL)?;
            }
            return Ok(n as i32);
        }
        let events = &mut self.events;
        let Some(cell) = self.list.iter_mut().find(|c| c.id == a[0]) else {
            return Err(status::E_INVAL);
        };
        let stopped = cell.state == CTX_STOPPED;
        match f {
            AbiFn::CtxStop => match cell.state {
                CTX_RUNNING => {
                    let pc = cell.pc();
                    let stop = CtxStop {
                        why: STOP_REQUESTED,
                        pc,
                        ..CtxStop::default()
                    };
                    cell.record_stop(stop, events);
                    Ok(status::OK)
                }
                CTX_STOPPED => Ok(status::OK),
                _ => Err(status::E_BUSY),
            },
            AbiFn::CtxResume => {
                if !stopped {
                    return Err(status::E_BUSY);
                }
                cell.state = CTX_RUNNING;
                Ok(status::OK)
            }
            AbiFn::CtxStopInfo => {
                if cell.state == CTX_RUNNING {
                    return Ok(0);
                }
                let len = core::mem::size_of::<CtxStop>();
                let bp = module_buf(a[1], len).ok_or(status::E_INVAL)?;
                mem.write(bp, &words_be(&stop_words(&cell.stop)))
                    .map_err(|_| status::E_INVAL)?;
                Ok(if cell.state == CTX_EXITED { 2 } else { 1 })
            }
            AbiFn::CtxRegsGet => {
                if !stopped {
                    return Err(status::E_BUSY);
                }
                let bp = module_buf(a[1], CTX_FRAME_WORDS * 4).ok_or(status::E_INVAL)?;
                mem.write(bp, &words_be(&cell.frame().w))
                    .map_err(|_| status::E_INVAL)?;
                Ok(status::OK)
            }
            AbiFn::CtxRegsSet => {
                if !stopped {
                    return Err(status::E_BUSY);
                }
                let bp = module_buf(a[1], CTX_FRAME_WORDS * 4).ok_or(status::E_INVAL)?;
                let mut bytes = vec![0u8; CTX_FRAME_WORDS * 4];
                mem.read(bp, &mut bytes).map_err(|_| status::E_INVAL)?;
                let mut fr = CtxFrame::default();
                for (w, b) in fr.w.iter_mut().zip(bytes.chunks_exact(4)) {
                    *w = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                }
                cell.set_frame(&fr).map_err(|_| status::E_INVAL)?;
                Ok(status::OK)
            }
            AbiFn::CtxMemRead | AbiFn::CtxMemWrite => {
                let (va, buf, len) = (a[1], a[2], a[3] as usize);
                if len > CTX_MEM_MAX || !cell.holds(va, len as u32) {
                    return Err(status::E_RANGE);
                }
                if len == 0 {
                    return Ok(0);
                }
                let write = f == AbiFn::CtxMemWrite;
                if write && !stopped {
                    return Err(status::E_BUSY);
                }
                let cp = module_buf(va, len).ok_or(status::E_RANGE)?;
                let bp = module_buf(buf, len).ok_or(status::E_INVAL)?;
                let mut bytes = vec![0u8; len];
                let (from, to) = if write { (bp, cp) } else { (cp, bp) };
                mem.read(from, &mut bytes).map_err(|_| status::E_INVAL)?;
                mem.write(to, &bytes).map_err(|_| status::E_INVAL)?;
                if write {
                    self.dirty.push((va, len as u32));
                }
                Ok(len as i32)
            }
            _ => Err(status::E_NOSYS),
        }
    }

    /// Forgets every cell (a reset): the next boot loads them afresh.
    pub fn clear(&mut self) {
        self.list.clear();
        self.dirty.clear();
    }

    /// A cell by id, for the rig's tests.
    pub fn get(&mut self, id: u32) -> Option<&mut Cell> {
        self.find(id)
    }
}
