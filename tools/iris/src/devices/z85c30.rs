//! Zilog Z85C30 serial controller in the IOC: channel B is the console ("d", ttyS0). Polled
//! model: transmit is always ready (RR0 bit 2), each byte written to the data register goes to
//! the console log at once, received bytes come from the console input queue.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use super::{DevCtx, Device, Region};
use crate::console::ConsoleLog;

use indy::map::Z85C30;
use indy::regs::z85c30::*;

#[derive(Default)]
struct Channel {
    /// Register selected by the last WR0 write (0 = none pending).
    pointer: u8,
    wr: [u8; 16],
}

pub struct Z85c30 {
    console: Arc<ConsoleLog>,
    rx: Rc<RefCell<VecDeque<u8>>>,
    chan: [Channel; 2],
    /// Bytes channel A transmitted (nothing is attached to serial 2).
    pub channel_a_out: Vec<u8>,
}

impl Z85c30 {
    pub fn new(console: Arc<ConsoleLog>, rx: Rc<RefCell<VecDeque<u8>>>) -> Z85c30 {
        Z85c30 {
            console,
            rx,
            chan: Default::default(),
            channel_a_out: Vec::new(),
        }
    }

    fn rr(&self, ch: usize, reg: u8) -> u8 {
        match reg {
            0 => {
                let mut v = RR0_TX_EMPTY | RR0_DCD | RR0_CTS;
                if ch == 1 && !self.rx.borrow().is_empty() {
                    v |= RR0_RX_AVAIL;
                }
                v
            }
            1 => RR1_ALL_SENT,
            _ => self.chan[ch].wr[usize::from(reg & 15)],
        }
    }
}

/// (channel index: 0 = A, 1 = B; is data register) of a register word.
fn decode(phys: u32) -> Option<(usize, bool)> {
    match phys & !3 {
        a if a == CTRL_B & !3 => Some((1, false)),
        a if a == DATA_B & !3 => Some((1, true)),
        a if a == CTRL_A & !3 => Some((0, false)),
        a if a == DATA_A & !3 => Some((0, true)),
        _ => None,
    }
}

impl Device for Z85c30 {
    fn name(&self) -> &str {
        "z85c30"
    }

    fn regions(&self) -> Vec<Region> {
        vec![Region::new(Z85C30.base, Z85C30.size)]
    }

    fn read(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, _size: usize) -> u64 {
        let Some((ch, data)) = decode(phys) else {
            return 0;
        };
        if data {
            if ch == 1 {
                return u64::from(self.rx.borrow_mut().pop_front().unwrap_or(0));
            }
            return 0;
        }
        let reg = std::mem::take(&mut self.chan[ch].pointer);
        u64::from(self.rr(ch, reg))
    }

    fn write(&mut self, _ctx: &mut DevCtx<'_>, phys: u32, _size: usize, value: u64) {
        let Some((ch, data)) = decode(phys) else {
            return;
        };
        let byte = value as u8;
        if data {
            if ch == 1 {
                self.console.transmit(&[byte]);
            } else {
                self.channel_a_out.push(byte);
            }
            return;
        }
        let c = &mut self.chan[ch];
        if c.pointer == 0 {
            // WR0: bits 2:0 select a register, command 1 ("point high") adds 8.
            let reg = (byte & 7) | if (byte >> 3) & 7 == 1 { 8 } else { 0 };
            if reg != 0 {
                c.pointer = reg;
            }
        } else {
            let reg = usize::from(std::mem::take(&mut c.pointer));
            c.wr[reg] = byte;
        }
    }

    fn reset(&mut self) {
        self.chan = Default::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::VecMemory;

    fn ctx<'a>(mem: &'a mut VecMemory, ev: &'a mut Vec<super::super::MachineEvent>) -> DevCtx<'a> {
        DevCtx {
            now_ms: 0,
            mem,
            events: ev,
        }
    }

    #[test]
    fn polled_transmit_and_receive() {
        let log = Arc::new(ConsoleLog::new(false));
        let rx = Rc::new(RefCell::new(VecDeque::new()));
        let mut z = Z85c30::new(log.clone(), rx.clone());
        let (mut mem, mut ev) = (VecMemory::new(0, 4), Vec::new());
        let mut c = ctx(&mut mem, &mut ev);
        let rr0 = z.read(&mut c, CTRL_B, 1) as u8;
        assert_ne!(rr0 & RR0_TX_EMPTY, 0);
        assert_eq!(rr0 & RR0_RX_AVAIL, 0);
        for b in b"hi\n" {
            z.write(&mut c, DATA_B, 1, u64::from(*b));
        }
        assert_eq!(log.text(), "hi\n");
        z.write(&mut c, DATA_A, 1, u64::from(b'x'));
        assert_eq!(log.text(), "hi\n");
        rx.borrow_mut().extend(b"k");
        assert_ne!(z.read(&mut c, CTRL_B, 1) as u8 & RR0_RX_AVAIL, 0);
        assert_eq!(z.read(&mut c, DATA_B, 1), u64::from(b'k'));
        // Register pointer: select RR1, read it, then back to RR0.
        z.write(&mut c, CTRL_B, 1, 1);
        assert_eq!(z.read(&mut c, CTRL_B, 1) as u8, RR1_ALL_SENT);
        assert_ne!(z.read(&mut c, CTRL_B, 1) as u8 & RR0_TX_EMPTY, 0);
        // Write WR12 (baud low) via the pointer and read it back as RR12.
        z.write(&mut c, CTRL_B, 1, 0x0C | 0x08);
        z.write(&mut c, CTRL_B, 1, 0x0A);
        z.write(&mut c, CTRL_B, 1, 0x0C | 0x08);
        assert_eq!(z.read(&mut c, CTRL_B, 1), 0x0A);
    }
}
