//! Guest faults end the run with a report (pc, cause, bad address), never a silent hang; a hung
//! call is reported (watchdog off) or reset by the MC watchdog.

mod support;

use std::time::Duration;

use iris::{RigError, RunEnd};
use support::synthetic::*;

fn poll_body(ops: &[u32]) -> Asm {
    let mut p = Asm::default();
    p.ops(ops);
    p
}

fn crash_of(e: RigError) -> iris::GuestCrash {
    match e {
        RigError::Crash(c) => c,
        other => panic!("expected a guest crash, got {other}"),
    }
}

#[test]
fn load_from_unmapped_address_is_reported() {
    // lui t0, 0xa0f0; lw t1, 0x10(t0): physical 0x00f00010 has nothing behind it.
    let poll = poll_body(&[lui(T0, 0xA0F0), lw(T1, 0x10, T0), NOP, jr(RA), NOP]);
    let image = hello_module("hi\n", poll).build();
    let mut rig = boot_synthetic(synthetic_options("unmapped", &image)).unwrap();
    let poll_addr = rig.image().unwrap().poll;
    let c = crash_of(rig.step().unwrap_err());
    assert_eq!(c.call, "irix7_mcp_poll");
    assert_eq!(c.pc, poll_addr + 4, "{c}");
    assert!(c.what.starts_with("read from unmapped memory"), "{c}");
    assert_eq!(c.bad_addr, Some(0x00F0_0010), "{c}");
    assert!(c.bad_is_physical);
    assert_eq!(c.symbol.as_deref(), Some("irix7_mcp_poll+0x4"));
    let text = c.to_string();
    assert!(
        text.contains("guest crash in irix7_mcp_poll: read from unmapped memory"),
        "{text}"
    );
    // The kernel logs it on the console and in the ring too.
    assert!(
        rig.console_text()
            .contains("kernel: guest crash in irix7_mcp_poll")
    );
    // The machine is halted: no more polls, and stop does not call into the module.
    assert!(matches!(rig.step(), Err(RigError::State(_))));
    rig.stop().unwrap();
    assert!(!rig.console_text().contains("module exited"));
}

#[test]
fn store_to_unmapped_address_is_reported() {
    let poll = poll_body(&[lui(T0, 0xBF00), sw(ZERO, 0, T0), NOP, jr(RA), NOP]);
    let image = hello_module("hi\n", poll).build();
    let mut rig = boot_synthetic(synthetic_options("unmapped-w", &image)).unwrap();
    let c = crash_of(rig.step().unwrap_err());
    assert!(c.what.starts_with("write to unmapped memory"), "{c}");
    assert_eq!(
        c.bad_addr.map(|a| a & 0x1FFF_FFFF),
        Some(0x1F00_0000),
        "{c}"
    );
}

#[test]
fn teq_trap_is_a_crash() {
    // teq zero, zero always traps (what a Rust divide-by-zero check does).
    let poll = poll_body(&[NOP, teq(ZERO, ZERO), jr(RA), NOP]);
    let image = hello_module("hi\n", poll).build();
    let mut rig = boot_synthetic(synthetic_options("teq", &image)).unwrap();
    let poll_addr = rig.image().unwrap().poll;
    let c = crash_of(rig.step().unwrap_err());
    assert!(c.what.contains("intno 22"), "{c}");
    assert!(c.what.starts_with("trap"), "{c}");
    // Unicorn reports PC 0 inside the hook; the rig finds the trap in the block.
    assert_eq!(c.block, poll_addr, "{c}");
    assert_eq!(c.pc, poll_addr + 4, "{c}");
}

#[test]
fn break_is_a_crash() {
    let poll = poll_body(&[BREAK, jr(RA), NOP]);
    let image = hello_module("hi\n", poll).build();
    let mut rig = boot_synthetic(synthetic_options("break", &image)).unwrap();
    let c = crash_of(rig.step().unwrap_err());
    assert!(c.what.contains("intno 18"), "{c}");
    assert_eq!(c.pc, rig.image().unwrap().poll, "{c}");
}

#[test]
fn misaligned_load_reports_address_error_with_decoded_address() {
    // Load a word from the module's abi_ptr + 2.
    let mut p = Asm::default();
    p.la(T0, "abi_ptr").ops(&[lw(T1, 2, T0), NOP, jr(RA), NOP]);
    let image = hello_module("hi\n", p).build();
    let mut rig = boot_synthetic(synthetic_options("adel", &image)).unwrap();
    let c = crash_of(rig.step().unwrap_err());
    assert!(c.what.contains("intno 12"), "{c}");
    let data = rig
        .image()
        .unwrap()
        .sections
        .iter()
        .find(|s| s.0 == ".data")
        .unwrap()
        .1;
    assert_eq!(c.bad_addr, Some(data + 2), "{c}");
    assert!(!c.bad_is_physical);
    assert_eq!(c.pc, rig.image().unwrap().poll + 8, "{c}");
}

#[test]
fn crash_in_init_fails_boot() {
    let mut a = Asm::default();
    a.func("irix7_mcp_init")
        .ops(&[lui(T0, 0xA0F0), lw(T1, 0, T0), NOP])
        .ret(0);
    a.func("irix7_mcp_poll").ret(0);
    a.func("irix7_mcp_exit").ret(0);
    let image = ModuleObj::new(a).build();
    let e = boot_synthetic(synthetic_options("init-crash", &image))
        .err()
        .unwrap();
    assert_eq!(crash_of(e.clone()).call, "irix7_mcp_init");
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn hang_is_reported_when_the_watchdog_is_off() {
    let image = hello_module("hi\n", poll_body(&SPIN)).build();
    let opts = iris::RigOptions {
        watchdog_ms: 0,
        hang_insns: 30_000_000,
        ..synthetic_options("hang", &image)
    };
    let mut rig = boot_synthetic(opts).unwrap();
    let poll_addr = rig.image().unwrap().poll;
    match rig.step().unwrap_err() {
        RigError::Hang {
            call,
            insns,
            pc,
            symbol,
        } => {
            assert_eq!(call, "irix7_mcp_poll");
            assert!(insns > 30_000_000, "{insns}");
            assert!(pc == poll_addr || pc == poll_addr + 4, "{pc:#x}");
            assert!(symbol.unwrap().starts_with("irix7_mcp_poll+"));
        }
        other => panic!("expected a hang, got {other}"),
    }
}

#[test]
fn watchdog_resets_a_hung_module_and_init_runs_again() {
    let image = hello_module("hello again\n", poll_body(&SPIN)).build();
    let opts = iris::RigOptions {
        watchdog_ms: 150,
        ..synthetic_options("watchdog", &image)
    };
    let mut rig = boot_synthetic(opts).unwrap();
    let end = rig
        .run_until(Duration::from_secs(20), |r| r.counters().resets >= 1)
        .unwrap();
    assert_eq!(end, RunEnd::Predicate);
    let c = rig.counters();
    assert_eq!(c.watchdog_resets, 1);
    let console = rig.console_text();
    assert!(
        console.contains("kernel: MC watchdog expired ("),
        "{console}"
    );
    assert_eq!(console.matches("sha256 ").count(), 2, "{console}");
    assert_eq!(console.matches("hello again\n").count(), 2, "{console}");
    // A warm reset starts a fresh ring (the kernel keeps the old one as the previous boot's):
    // it holds what was printed since, the tail of the console.
    let (head, ring) = rig.serial_ring();
    assert!(
        (head as usize) < console.len(),
        "{head} of {}",
        console.len()
    );
    assert!(
        console.as_bytes().ends_with(&ring),
        "the ring is the console's tail"
    );
}

#[test]
fn mips4_instruction_is_a_reserved_instruction_crash() {
    // movn t0, t1, t2 (MIPS IV): the R4000 model raises reserved instruction.
    let poll = poll_body(&[0x012A_400B, jr(RA), NOP]);
    let image = hello_module("hi\n", poll).build();
    let mut rig = boot_synthetic(synthetic_options("movn", &image)).unwrap();
    let c = crash_of(rig.step().unwrap_err());
    assert!(c.what.contains("reserved instruction"), "{c}");
}
