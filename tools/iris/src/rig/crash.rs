//! Crash reports: what the guest did wrong (memory fault, CPU exception, a jump into the stub
//! area, an emulator stop), where, and the image symbol it happened in.

use super::Rig;
use crate::cpu::{Fault, intno_name, mem_kind_name};
use crate::error::GuestCrash;

impl Rig {
    pub(super) fn symbolize(&self, va: u32) -> Option<String> {
        self.image.as_ref().and_then(|i| i.symbolize(va))
    }

    pub(super) fn crash_report(
        &mut self,
        call: &'static str,
        fault: Option<Fault>,
        error: Option<String>,
    ) -> GuestCrash {
        let mut pc = self.cpu.pc();
        let block = self.cpu.state.last_block.get() as u32;
        let physical = matches!(fault, Some(Fault::Mem { .. }));
        let (what, bad_addr) = match fault {
            Some(Fault::Mem { kind, addr, size }) => (
                format!("{} ({size}-byte access)", mem_kind_name(kind)),
                Some(addr as u32),
            ),
            Some(Fault::Intr { intno, pc: at }) => {
                pc = at as u32;
                let mut ea = None;
                if pc == 0 {
                    // Unicorn reports PC 0 for some exceptions: find the instruction in the block.
                    if let Some((at, bad)) = self.cpu.locate_in_block(block, intno) {
                        pc = at;
                        ea = bad;
                    }
                } else if matches!(intno, 12 | 13 | 26 | 27 | 28) {
                    ea = self.cpu.decode_ea(pc);
                }
                (format!("{}, intno {intno}", intno_name(intno)), ea)
            }
            Some(Fault::BadStub { addr }) => (
                "jump into the ABI stub area between stubs".to_string(),
                Some(addr as u32),
            ),
            None => (
                format!("emulator stopped: {}", error.unwrap_or_default()),
                None,
            ),
        };
        let symbol = self.symbolize(if pc != 0 { pc } else { block });
        let crash = GuestCrash {
            call,
            what,
            pc,
            block,
            bad_addr,
            bad_is_physical: physical,
            ra: self.cpu.reg(31),
            sp: self.cpu.reg(29),
            symbol,
        };
        let line = format!("kernel: {crash}");
        self.klog(&line);
        crash
    }
}
