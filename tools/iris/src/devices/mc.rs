//! The memory controller (MC): CPUCTRL0 and the watchdog that resets the Indy (`docs/hardware.md`,
//! "MC watchdog"). The real watchdog fires [`indy::regs::mc::WATCHDOG_PERIOD_MS`] after the last kick; the rig's
//! period is configurable so tests need not wait that long.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::{DevCtx, Device, Region};

use indy::map::MC;
use indy::regs::mc::{CPUCTRL0, CPUCTRL0_WATCHDOG, WATCHDOG, WATCHDOG_TICK_US, WATCHDOG_TICKS};

/// The watchdog state, shared by the MC device and the kernel (`watchdog_kick`).
#[derive(Debug, Clone)]
pub struct Watchdog {
    /// Milliseconds from the last kick to expiry; 0 = the watchdog never fires.
    pub period_ms: u64,
    pub enabled: bool,
    pub last_kick_ms: u64,
    pub kicks: u64,
}

impl Watchdog {
    pub fn new(period_ms: u64) -> Watchdog {
        Watchdog {
            period_ms,
            enabled: false,
            last_kick_ms: 0,
            kicks: 0,
        }
    }

    pub fn kick(&mut self, now_ms: u64) {
        self.last_kick_ms = now_ms;
        self.kicks += 1;
    }

    /// Milliseconds since the last kick when that is past the period, else `None`.
    pub fn expired(&self, now_ms: u64) -> Option<u64> {
        let idle = now_ms.saturating_sub(self.last_kick_ms);
        (self.enabled && self.period_ms > 0 && idle >= self.period_ms).then_some(idle)
    }
}

pub struct MemoryController {
    watchdog: Rc<RefCell<Watchdog>>,
    regs: HashMap<u32, u32>,
}

impl MemoryController {
    pub fn new(watchdog: Rc<RefCell<Watchdog>>) -> MemoryController {
        MemoryController {
            watchdog,
            regs: HashMap::new(),
        }
    }
}

impl Device for MemoryController {
    fn name(&self) -> &str {
        "mc"
    }

    fn regions(&self) -> Vec<Region> {
        vec![Region::new(MC.base, MC.size)]
    }

    fn read(&mut self, ctx: &mut DevCtx<'_>, phys: u32, _size: usize) -> u64 {
        let reg = phys & !3;
        let v = match reg {
            CPUCTRL0 => {
                let base = self.regs.get(&reg).copied().unwrap_or(0) & !CPUCTRL0_WATCHDOG;
                base | if self.watchdog.borrow().enabled {
                    CPUCTRL0_WATCHDOG
                } else {
                    0
                }
            }
            WATCHDOG => {
                let wd = self.watchdog.borrow();
                let ticks = ctx.now_ms.saturating_sub(wd.last_kick_ms) * 1000 / WATCHDOG_TICK_US;
                ticks.min(WATCHDOG_TICKS - 1) as u32
            }
            _ => self.regs.get(&reg).copied().unwrap_or(0),
        };
        u64::from(v)
    }

    fn write(&mut self, ctx: &mut DevCtx<'_>, phys: u32, _size: usize, value: u64) {
        let reg = phys & !3;
        let v = value as u32;
        match reg {
            CPUCTRL0 => {
                let mut wd = self.watchdog.borrow_mut();
                let enable = v & CPUCTRL0_WATCHDOG != 0;
                if enable && !wd.enabled {
                    wd.last_kick_ms = ctx.now_ms;
                }
                wd.enabled = enable;
                self.regs.insert(reg, v);
            }
            WATCHDOG => self.watchdog.borrow_mut().kick(ctx.now_ms),
            _ => {
                self.regs.insert(reg, v);
            }
        }
    }

    fn tick(&mut self, ctx: &mut DevCtx<'_>) -> bool {
        let expired = self.watchdog.borrow().expired(ctx.now_ms);
        if let Some(idle) = expired {
            // Fire once; the reset re-arms it.
            self.watchdog.borrow_mut().kick(ctx.now_ms);
            ctx.request_reset(format!(
                "MC watchdog expired ({idle} ms since the last kick)"
            ));
            return true;
        }
        false
    }

    fn reset(&mut self) {
        self.regs.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::MachineEvent;
    use crate::memory::VecMemory;

    #[test]
    fn fires_after_period_unless_kicked() {
        let wd = Rc::new(RefCell::new(Watchdog::new(100)));
        let mut mc = MemoryController::new(wd.clone());
        let (mut mem, mut ev) = (VecMemory::new(0, 4), Vec::new());
        let mut at = |now_ms: u64, f: &mut dyn FnMut(&mut MemoryController, &mut DevCtx<'_>)| {
            let mut c = DevCtx {
                now_ms,
                mem: &mut mem,
                events: &mut ev,
            };
            f(&mut mc, &mut c);
        };
        // Disabled: never fires.
        at(1000, &mut |m, c| assert!(!m.tick(c)));
        at(1000, &mut |m, c| {
            m.write(c, CPUCTRL0, 4, u64::from(CPUCTRL0_WATCHDOG))
        });
        at(1050, &mut |m, c| {
            assert_eq!(
                m.read(c, CPUCTRL0, 4) as u32 & CPUCTRL0_WATCHDOG,
                CPUCTRL0_WATCHDOG
            )
        });
        at(1099, &mut |m, c| assert!(!m.tick(c)));
        at(1099, &mut |m, c| m.write(c, WATCHDOG, 4, 0));
        at(1150, &mut |m, c| {
            assert_eq!(m.read(c, WATCHDOG, 4), 51 * 1000 / 64)
        });
        at(1198, &mut |m, c| assert!(!m.tick(c)));
        at(1199, &mut |m, c| assert!(m.tick(c)));
        assert_eq!(
            ev,
            vec![MachineEvent::Reset(
                "MC watchdog expired (100 ms since the last kick)".into()
            )]
        );
    }
}
