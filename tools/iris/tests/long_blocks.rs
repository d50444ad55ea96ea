//! Long straight-line code runs (docs/rig.md, "Which Unicorn"). Stock Unicorn 2.1.5's MIPS
//! translator took a TCG temporary per instruction and never gave it back, so a block of a few
//! hundred instructions without a branch overran its temporaries and the rig died with
//! SIGSEGV; a guest exception or a stop inside a branch's delay slot left state behind that the
//! next run read. The rig links a Unicorn with those fixed (tools/xtask/src/unicorn.rs).
//!
//! Generated code (ALU operations, loads and stores over 18 registers and 64 words) runs on
//! the rig's CPU (`iris::cpu::Cpu`, with the rig's counting and fault hooks) and every register,
//! memory word and the exact instruction count are compared with a model of the same code; one
//! test runs such a block as a module's poll through the whole rig.

mod support;

use iris::cpu::Cpu;
use iris::memmap::sext;
use irix7_kmem::testing::Lcg;
use support::synthetic::*;

/// Where the generated code goes: the module area (RAM + 1 MiB, KSEG0).
const CODE: u32 = 0x8810_0000;
/// The 64 words the code loads and stores, through `$gp`.
const DATA: u32 = 0x8820_0000;
/// Poison the model never writes: code that must not run puts it in `$t0`.
const POISON: u32 = 0x0BAD_0BAD;
const GP: u32 = 28;
/// The registers the generated code reads and writes ($t0–$t9 minus none, $s0–$s7).
const REGS: std::ops::RangeInclusive<u32> = 8..=25;
const RAM_BYTES: u32 = 64 << 20;

fn phys(va: u32) -> u64 {
    u64::from(va & 0x1FFF_FFFF)
}

/// The machine state the generated code works on, and a model that runs it.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Model {
    regs: [u32; 32],
    mem: [u32; 64],
}

impl Model {
    fn new(seed: u32) -> Model {
        let mut rng = Lcg(seed.into());
        let mut regs = [0; 32];
        for r in REGS {
            regs[r as usize] = rng.next_u64() as u32;
        }
        regs[GP as usize] = DATA;
        Model { regs, mem: [0; 64] }
    }

    /// Runs one generated (straight-line) instruction.
    fn step(&mut self, w: u32) {
        let (op, rs, rt, rd) = (w >> 26, (w >> 21) & 31, (w >> 16) & 31, (w >> 11) & 31);
        let (sa, funct, imm) = ((w >> 6) & 31, w & 63, w & 0xFFFF);
        let simm = imm as u16 as i16 as i32 as u32;
        let (s, t) = (self.regs[rs as usize], self.regs[rt as usize]);
        let (dst, v) = match (op, funct) {
            (0, 0x00) => (rd, t << sa),
            (0, 0x02) => (rd, t >> sa),
            (0, 0x0D) => return, // break: the tests resume after it
            (0, 0x21) => (rd, s.wrapping_add(t)),
            (0, 0x23) => (rd, s.wrapping_sub(t)),
            (0, 0x24) => (rd, s & t),
            (0, 0x25) => (rd, s | t),
            (0, 0x26) => (rd, s ^ t),
            (0x09, _) => (rt, s.wrapping_add(simm)),
            (0x0D, _) => (rt, s | imm),
            (0x0E, _) => (rt, s ^ imm),
            (0x0F, _) => (rt, imm << 16),
            (0x23, _) => (
                rt,
                self.mem[(s.wrapping_add(simm).wrapping_sub(DATA) / 4) as usize],
            ),
            (0x2B, _) => {
                self.mem[(s.wrapping_add(simm).wrapping_sub(DATA) / 4) as usize] = t;
                return;
            }
            _ => panic!("the model does not know {w:#010x}"),
        };
        if dst != 0 {
            self.regs[dst as usize] = v;
        }
    }

    fn run(&mut self, code: &[u32]) {
        for &w in code {
            self.step(w);
        }
    }
}

fn r_type(rs: u32, rt: u32, rd: u32, sa: u32, funct: u32) -> u32 {
    (rs << 21) | (rt << 16) | (rd << 11) | (sa << 6) | funct
}

fn i_type(op: u32, rs: u32, rt: u32, imm: u32) -> u32 {
    (op << 26) | (rs << 21) | (rt << 16) | (imm & 0xFFFF)
}

/// `n` straight-line instructions: no branch, every one of them changing a register or a word.
fn straight(n: usize, seed: u32) -> Vec<u32> {
    let mut rng = Lcg(seed.into());
    (0..n)
        .map(|_| {
            let mut reg = || 8 + rng.below(18) as u32;
            let (d, s, t) = (reg(), reg(), reg());
            let imm = rng.next_u64() as u32 & 0xFFFF;
            match rng.below(12) {
                0 => r_type(0, t, d, 1 + imm % 31, 0x00),
                1 => r_type(0, t, d, 1 + imm % 31, 0x02),
                2 => r_type(s, t, d, 0, 0x21),
                3 => r_type(s, t, d, 0, 0x23),
                4 => r_type(s, t, d, 0, 0x24),
                5 => r_type(s, t, d, 0, 0x25),
                6 => r_type(s, t, d, 0, 0x26),
                7 => i_type(0x09, s, d, imm),
                8 => i_type(0x0D, s, d, imm),
                9 => i_type(0x0E, s, d, imm),
                10 => i_type(0x23, GP, d, (imm % 64) * 4),
                _ => i_type(0x2B, GP, t, (imm % 64) * 4),
            }
        })
        .collect()
}

fn words_to_bytes(code: &[u32]) -> Vec<u8> {
    code.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// The rig's CPU with `code` at `at` and the model's registers; no slicing stop.
fn cpu_with(model: &Model, at: u32, code: &[u32]) -> Cpu {
    let mut cpu = Cpu::new(RAM_BYTES).expect("the rig's CPU");
    cpu.state.stop_at.set(u64::MAX);
    load(&mut cpu, model, at, code);
    cpu
}

/// `code` at `at`, the model's registers, and its (zeroed) data words.
fn load(cpu: &mut Cpu, model: &Model, at: u32, code: &[u32]) {
    use iris::GuestMemory;
    cpu.mem().write(phys(at), &words_to_bytes(code)).unwrap();
    cpu.mem()
        .write(phys(DATA), &words_to_bytes(&model.mem))
        .unwrap();
    for r in 1..32 {
        cpu.set_reg(r, model.regs[r as usize]).unwrap();
    }
}

/// Runs from `from` until the PC reaches `until`.
fn run(cpu: &mut Cpu, from: u32, until: u32) -> Result<(), String> {
    let r = cpu.uc.emu_start(sext(from), sext(until), 0, 0);
    match (cpu.state.fault.borrow_mut().take(), r) {
        (Some(f), _) => Err(format!("fault: {f:?}")),
        (None, Err(e)) => Err(format!("emu_start: {e:?}")),
        (None, Ok(())) => Ok(()),
    }
}

/// Every register and data word the code touches is what the model computed.
fn assert_state(cpu: &mut Cpu, model: &Model, what: &str) {
    use iris::GuestMemory;
    for r in REGS {
        assert_eq!(
            cpu.reg(r as i32),
            model.regs[r as usize],
            "{what}: register ${r}"
        );
    }
    let mut mem = [0u8; 256];
    cpu.mem().read(phys(DATA), &mut mem).unwrap();
    for (i, w) in mem.chunks(4).enumerate() {
        let got = u32::from_be_bytes(w.try_into().unwrap());
        assert_eq!(got, model.mem[i], "{what}: data word {i}");
    }
}

#[test]
fn straight_runs_of_600_2000_and_10000_instructions_compute_their_registers() {
    for (n, seed) in [(600, 1), (2_000, 2), (10_000, 3)] {
        let code = straight(n, seed);
        let mut model = Model::new(seed);
        let mut cpu = cpu_with(&model, CODE, &code);
        let end = CODE + 4 * n as u32;
        run(&mut cpu, CODE, end).unwrap_or_else(|e| panic!("{n} instructions: {e}"));
        model.run(&code);
        assert_state(&mut cpu, &model, &format!("{n} instructions"));
        assert_eq!(cpu.state.insns.get(), n as u64, "{n}: instructions counted");
    }
}

/// `pre` straight instructions, a `beq $0,$0` over one instruction (which would poison
/// `$t0`), its delay slot, then `post` straight instructions at the target. Returns the code,
/// the state it starts from and the state it ends in.
fn branchy(pre: usize, post: usize, seed: u32) -> (Vec<u32>, Model, Model) {
    let head = straight(pre, seed);
    let slot = straight(1, seed + 100);
    let tail = straight(post, seed + 200);
    let mut code = head.clone();
    code.push(beq(ZERO, ZERO, 2));
    code.extend(&slot);
    code.push(lui(T0, (POISON >> 16) as u16));
    code.extend(&tail);
    let mut model = Model::new(seed);
    model.run(&head);
    model.run(&slot);
    model.run(&tail);
    (code, Model::new(seed), model)
}

#[test]
fn a_long_run_ending_in_a_branch_runs_its_delay_slot_and_lands_on_the_target() {
    // The branch as the 512th instruction of its block (TCG's most per block), and as the last
    // word of a page: either way its delay slot is the first instruction of the next block.
    for (at, pre) in [(CODE, 511), (CODE + 0x1000 - 4 * 700, 699), (CODE, 1_500)] {
        let (code, init, model) = branchy(pre, 2_000, 7);
        let mut cpu = cpu_with(&init, at, &code);
        let end = at + 4 * code.len() as u32;
        run(&mut cpu, at, end).unwrap_or_else(|e| panic!("branch after {pre}: {e}"));
        assert_state(&mut cpu, &model, &format!("branch after {pre}"));
        assert_eq!(
            cpu.state.insns.get(),
            (pre + 2 + 2_000) as u64,
            "branch after {pre}: the skipped instruction is not counted"
        );
    }
}

#[test]
fn a_long_run_resumed_after_an_exception_computes_the_same_registers() {
    let n = 2_000;
    let mut code = straight(n, 11);
    code[700] = BREAK;
    let mut model = Model::new(11);
    let mut cpu = cpu_with(&model, CODE, &code);
    // First a fetch from unmapped memory: a translation abandoned half-way (stock Unicorn kept
    // a temporary of it as the delay-slot flag, and the next block read it).
    let hole = 0x8000_0000 + RAM_BYTES + 0x0800_0000; // just past the end of RAM
    assert!(run(&mut cpu, hole, hole + 8).is_err());
    // Then the long block, stopped by `break` in its middle, resumed after it as the rig
    // resumes after a trap it handled (the hook's PC is stale: break address + 4).
    let end = CODE + 4 * n as u32;
    let e = run(&mut cpu, CODE, end).unwrap_err();
    assert!(e.contains("intno: 18"), "{e}");
    run(&mut cpu, CODE + 4 * 701, end).unwrap();
    model.run(&code);
    assert_state(&mut cpu, &model, "resumed after break");
}

/// A stop (the rig's slice end or watchdog, from the block hook) or a guest exception inside a
/// delay slot, then a fresh run elsewhere, as the rig's reset paths start `init` again: the
/// fresh run starts at its first instruction, with no branch pending from before.
#[test]
fn a_fresh_run_after_a_stop_or_exception_in_a_delay_slot_takes_no_stale_branch() {
    let (code, init, model) = branchy(511, 600, 21);
    let end = CODE + 4 * code.len() as u32;
    let fresh_at = CODE + 0x4000;
    let fresh = straight(700, 22);
    let mut fresh_model = Model::new(22);
    fresh_model.run(&fresh);

    // Resuming where the block hook stopped (the delay slot's block) finishes the branch.
    let mut cpu = cpu_with(&init, CODE, &code);
    cpu.state.stop_at.set(512 + 1);
    run(&mut cpu, CODE, end).unwrap();
    assert_eq!(cpu.pc(), CODE + 4 * 512, "stopped at the delay slot");
    cpu.state.stop_at.set(u64::MAX);
    let stopped = cpu.pc();
    run(&mut cpu, stopped, end).unwrap();
    assert_state(&mut cpu, &model, "resumed in the delay slot");

    // Starting elsewhere after the same stop runs the new code from its start.
    let mut cpu = cpu_with(&init, CODE, &code);
    cpu.state.stop_at.set(512 + 1);
    run(&mut cpu, CODE, end).unwrap();
    cpu.state.stop_at.set(u64::MAX);
    load(&mut cpu, &Model::new(22), fresh_at, &fresh);
    let fresh_end = fresh_at + 4 * fresh.len() as u32;
    run(&mut cpu, fresh_at, fresh_end).unwrap();
    assert_state(
        &mut cpu,
        &fresh_model,
        "fresh run after a stop in a delay slot",
    );

    // The same after `break` in a delay slot (the guest crash and trap paths).
    let mut trap = straight(600, 23);
    trap.extend([beq(ZERO, ZERO, 2), BREAK, lui(T0, (POISON >> 16) as u16)]);
    trap.extend([lui(T0, (POISON >> 16) as u16), BREAK]);
    let mut cpu = cpu_with(&Model::new(23), CODE, &trap);
    let e = run(&mut cpu, CODE, CODE + 4 * trap.len() as u32).unwrap_err();
    assert!(e.contains("intno: 18"), "{e}");
    load(&mut cpu, &Model::new(22), fresh_at, &fresh);
    run(&mut cpu, fresh_at, fresh_end).unwrap();
    assert_state(
        &mut cpu,
        &fresh_model,
        "fresh run after break in a delay slot",
    );
}

/// The whole rig: a module whose poll runs 10,000 straight-line instructions, then stores
/// the registers for the test to read.
#[test]
fn the_rig_runs_a_module_with_a_10000_instruction_block() {
    let n = 10_000;
    let code = straight(n, 31);
    let init = Model::new(31);
    let out = 0x8880_0000u32; // the module heap: the synthetic module does not use it
    let mut poll = Asm::default();
    poll.ops(&[lui(GP, (DATA >> 16) as u16)]);
    for r in REGS {
        let v = init.regs[r as usize];
        poll.ops(&[lui(r, (v >> 16) as u16), ori(r, r, v as u16)]);
    }
    poll.ops(&code);
    poll.ops(&[lui(GP, (out >> 16) as u16)]);
    for r in REGS {
        poll.ops(&[sw(r, (4 * (r - 8)) as i16, GP)]);
    }
    poll.ret(0);
    let image = hello_module("long\n", poll).build();
    let mut rig = boot_synthetic(synthetic_options("long-blocks", &image)).unwrap();
    let before = rig.counters().total_insns;
    rig.step().unwrap();
    let mut model = init.clone();
    model.run(&code);
    let regs = rig.read_phys(phys(out), 4 * 18).unwrap();
    for (i, r) in REGS.enumerate() {
        let got = u32::from_be_bytes(regs[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(got, model.regs[r as usize], "register ${r}");
    }
    assert!(rig.counters().total_insns - before > n as u64);
}
