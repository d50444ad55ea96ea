//! Where the R4400 goes after one instruction, for stepping with breakpoints (the CPU cannot
//! single-step): MIPS II branches and jumps, with their delay slots. A branch and its slot run
//! as one step, so the next stop is the branch's target when it is taken, else the instruction
//! after the slot (a likely branch not taken skips its slot: the same address).

/// The address control reaches after the instruction `insn` at `pc` (and its delay slot, for a
/// branch or jump), with the general registers `r` as they are before it runs.
pub fn next_pc(insn: u32, pc: u32, r: &[u32; 32]) -> u32 {
    let op = insn >> 26;
    let rs = r[((insn >> 21) & 31) as usize];
    let rt_field = (insn >> 16) & 31;
    let rt = r[rt_field as usize];
    let after_slot = pc.wrapping_add(8);
    let target = pc
        .wrapping_add(4)
        .wrapping_add(((insn as u16 as i16 as i32) << 2) as u32);
    let branch = |taken: bool| if taken { target } else { after_slot };
    match op {
        // SPECIAL: jr, jalr.
        0 if matches!(insn & 0x3F, 0x08 | 0x09) => rs,
        // REGIMM: bltz, bgez and their likely and linking forms.
        1 => match rt_field {
            0x00 | 0x02 | 0x10 | 0x12 => branch((rs as i32) < 0),
            0x01 | 0x03 | 0x11 | 0x13 => branch((rs as i32) >= 0),
            _ => pc.wrapping_add(4),
        },
        // j, jal: the 256 MiB region of the delay slot.
        2 | 3 => (pc.wrapping_add(4) & 0xF000_0000) | ((insn & 0x03FF_FFFF) << 2),
        4 | 0x14 => branch(rs == rt),
        5 | 0x15 => branch(rs != rt),
        6 | 0x16 => branch((rs as i32) <= 0),
        7 | 0x17 => branch((rs as i32) > 0),
        _ => pc.wrapping_add(4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PC: u32 = 0x8870_0100;

    fn regs(pairs: &[(usize, u32)]) -> [u32; 32] {
        let mut r = [0; 32];
        for &(i, v) in pairs {
            r[i] = v;
        }
        r
    }

    #[test]
    fn plain_instructions_go_on() {
        let r = regs(&[]);
        assert_eq!(next_pc(0x2402_0001, PC, &r), PC + 4); // li v0,1
        assert_eq!(next_pc(0x0000_000D, PC, &r), PC + 4); // break
        assert_eq!(next_pc(0x8FBF_001C, PC, &r), PC + 4); // lw ra,28(sp)
    }

    #[test]
    fn jumps_and_register_jumps() {
        let r = regs(&[(31, 0x8870_0040), (25, 0x8870_008C)]);
        assert_eq!(next_pc(0x03E0_0008, PC, &r), 0x8870_0040); // jr ra
        assert_eq!(next_pc(0x0320_F809, PC, &r), 0x8870_008C); // jalr t9
        // j 0x88700030: instr_index 0x021C000C in the delay slot's region.
        assert_eq!(
            next_pc(0x0800_0000 | (0x0870_0030 >> 2), PC, &r),
            0x8870_0030
        );
        assert_eq!(
            next_pc(0x0C00_0000 | (0x0870_0200 >> 2), PC, &r),
            0x8870_0200
        );
    }

    #[test]
    fn conditional_branches_by_their_operands() {
        // beq a0,zero,-4 (0x1080FFFC): back 3 words from the slot.
        let beqz = 0x1080_FFFC;
        assert_eq!(next_pc(beqz, PC, &regs(&[(4, 0)])), PC + 4 - 16);
        assert_eq!(next_pc(beqz, PC, &regs(&[(4, 7)])), PC + 8);
        // bne a0,a1,+2
        let bne = 0x1485_0002;
        assert_eq!(next_pc(bne, PC, &regs(&[(4, 1), (5, 2)])), PC + 12);
        assert_eq!(next_pc(bne, PC, &regs(&[(4, 2), (5, 2)])), PC + 8);
        // blez, bgtz on a signed a0
        assert_eq!(
            next_pc(0x1880_0004, PC, &regs(&[(4, 0xFFFF_FFFF)])),
            PC + 20
        );
        assert_eq!(next_pc(0x1C80_0004, PC, &regs(&[(4, 0xFFFF_FFFF)])), PC + 8);
        // bltz / bgez / bgezal
        assert_eq!(
            next_pc(0x0480_0004, PC, &regs(&[(4, 0x8000_0000)])),
            PC + 20
        );
        assert_eq!(next_pc(0x0481_0004, PC, &regs(&[(4, 0x8000_0000)])), PC + 8);
        assert_eq!(next_pc(0x0491_0004, PC, &regs(&[(4, 0)])), PC + 20);
        // beql not taken: its slot is skipped, the same address as after it.
        assert_eq!(next_pc(0x5085_0004, PC, &regs(&[(4, 1)])), PC + 8);
        assert_eq!(next_pc(0x5085_0004, PC, &regs(&[])), PC + 20);
    }
}
