//! The session and the RSP stub over a simulated cell: breakpoints and what reads show of them,
//! stepping over branches and from breakpoints, detach undoing everything, GDB's packets and
//! the stub's bounds.

use alloc::string::String;
use alloc::vec::Vec;
use indy::abi::{exc, frame, status};

use super::fake::{BASE, FakeCell, SIZE};
use super::rsp::{FEED_MAX, OUTBOX_CAP, PACKETS_PER_POLL, Rsp};
use super::session::{BREAK, MAX_BREAKPOINTS, Session, Stop};

const NOP: u32 = 0;
/// addiu v0, zero, 1
const LI: u32 = 0x2402_0001;
/// jr ra
const JR_RA: u32 = 0x03E0_0008;

/// Code: BASE+0 li; +4 li; +8 jr ra; +12 nop (slot); +16 li; +20 li.
fn program() -> FakeCell {
    FakeCell::new(&[LI, LI, JR_RA, NOP, LI, LI])
}

fn attached(cell: &FakeCell) -> Session<FakeCell> {
    Session::attach(cell.clone(), 1).unwrap()
}

#[test]
fn attach_stops_the_context_and_knows_only_existing_ones() {
    let cell = program();
    assert!(cell.running());
    let s = attached(&cell);
    assert!(!cell.running());
    assert!(!s.running());
    assert_eq!(
        Session::attach(cell.clone(), 2).err(),
        Some(status::E_INVAL)
    );
    let old = program();
    old.0.borrow_mut().old_kernel = true;
    assert_eq!(Session::attach(old, 1).err(), Some(status::E_NOSYS));
}

#[test]
fn breakpoints_replace_words_that_reads_still_show() {
    let cell = program();
    let mut s = attached(&cell);
    s.add_breakpoint(BASE + 4).unwrap();
    assert_eq!(cell.word(BASE + 4), BREAK);
    let mut buf = [0u8; 12];
    s.read(BASE, &mut buf).unwrap();
    assert_eq!(
        &buf[4..8],
        &LI.to_be_bytes(),
        "the read shows the replaced word"
    );
    // A read that starts inside the word shows its tail.
    let mut tail = [0u8; 2];
    s.read(BASE + 6, &mut tail).unwrap();
    assert_eq!(tail, LI.to_be_bytes()[2..]);
    // A write over a breakpoint changes the word it will put back, not the break.
    s.write(BASE + 4, &NOP.to_be_bytes()).unwrap();
    assert_eq!(cell.word(BASE + 4), BREAK);
    assert!(s.remove_breakpoint(BASE + 4).unwrap());
    assert_eq!(cell.word(BASE + 4), NOP);
    assert!(!s.remove_breakpoint(BASE + 4).unwrap());
    assert_eq!(s.add_breakpoint(BASE + 2), Err(status::E_INVAL));
    assert_eq!(s.add_breakpoint(BASE + SIZE), Err(status::E_RANGE));
}

#[test]
fn breakpoints_are_bounded() {
    let cell = FakeCell::new(&[]);
    let mut s = attached(&cell);
    for i in 0..MAX_BREAKPOINTS as u32 {
        s.add_breakpoint(BASE + 4 * i).unwrap();
    }
    assert_eq!(
        s.add_breakpoint(BASE + 4 * MAX_BREAKPOINTS as u32),
        Err(status::E_RANGE)
    );
    // The same address again is no new breakpoint.
    s.add_breakpoint(BASE).unwrap();
}

#[test]
fn continue_stops_at_a_breakpoint_and_steps_over_it_after() {
    let cell = program();
    let mut s = attached(&cell);
    s.add_breakpoint(BASE + 4).unwrap();
    s.resume().unwrap();
    assert_eq!(s.poll().unwrap(), None, "nothing happened yet");
    cell.arrive(BASE + 4);
    assert_eq!(s.poll().unwrap(), Some(Stop::Breakpoint(BASE + 4)));
    assert_eq!(s.regs().unwrap().w[frame::PC], BASE + 4);
    // Continue from it: the word is put back for one step, then the break again.
    s.resume().unwrap();
    assert_eq!(cell.word(BASE + 4), LI, "lifted for the step");
    assert_eq!(cell.word(BASE + 8), BREAK, "the step's trap");
    cell.arrive(BASE + 8);
    assert_eq!(s.poll().unwrap(), None, "the step over it is not a stop");
    assert!(cell.running(), "resumed after the step");
    assert_eq!(cell.word(BASE + 4), BREAK, "the breakpoint is back");
    assert_eq!(cell.word(BASE + 8), JR_RA, "the trap is gone");
}

#[test]
fn a_step_over_a_jump_stops_at_its_target() {
    let cell = program();
    let mut s = attached(&cell);
    let mut f = s.regs().unwrap();
    f.w[frame::PC] = BASE + 8;
    f.w[31] = BASE + 20;
    s.set_regs(&f).unwrap();
    s.step().unwrap();
    assert_eq!(
        cell.word(BASE + 20),
        BREAK,
        "trap at ra, not after the slot"
    );
    assert_eq!(cell.word(BASE + 16), LI);
    cell.arrive(BASE + 20);
    assert_eq!(s.poll().unwrap(), Some(Stop::Step(BASE + 20)));
    assert_eq!(cell.word(BASE + 20), LI, "the trap is taken down");
}

#[test]
fn a_fault_while_stepping_is_the_fault_and_leaves_no_trap() {
    let cell = program();
    let mut s = attached(&cell);
    s.step().unwrap();
    assert_eq!(cell.word(BASE + 4), BREAK);
    cell.fault(BASE, exc::ADES, 1);
    match s.poll().unwrap() {
        Some(Stop::Exception(stop)) => {
            assert_eq!((stop.exc_code, stop.pc, stop.bad), (exc::ADES, BASE, 1));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(cell.word(BASE + 4), LI);
}

#[test]
fn interrupt_is_a_requested_stop() {
    let cell = program();
    let mut s = attached(&cell);
    s.resume().unwrap();
    s.interrupt().unwrap();
    assert_eq!(s.poll().unwrap(), Some(Stop::Interrupted(BASE)));
}

#[test]
fn detach_puts_every_word_back_and_lets_it_run() {
    let cell = program();
    let mut s = attached(&cell);
    s.add_breakpoint(BASE).unwrap();
    s.add_breakpoint(BASE + 16).unwrap();
    s.step().unwrap();
    s.detach().unwrap();
    assert_eq!(
        (0..6).map(|i| cell.word(BASE + 4 * i)).collect::<Vec<_>>(),
        [LI, LI, JR_RA, NOP, LI, LI]
    );
    assert!(cell.running());
}

/// `$<body>#<sum>`.
fn packet(body: &str) -> String {
    let sum = body.bytes().fold(0u8, |s, b| s.wrapping_add(b));
    alloc::format!("${body}#{sum:02x}")
}

/// Feeds a packet in a poll of its own and returns what the stub said.
fn exchange(rsp: &mut Rsp<FakeCell>, body: &str) -> String {
    let p = packet(body);
    rsp.next_poll();
    assert_eq!(rsp.feed(p.as_bytes()), p.len());
    take(rsp)
}

fn take(rsp: &mut Rsp<FakeCell>) -> String {
    let out = String::from_utf8(rsp.output().to_vec()).unwrap();
    let n = out.len();
    rsp.sent(n);
    out
}

/// The body of the last packet in `out`, its run-length encoding undone (`c*n`: `n - 29`
/// more of `c`).
fn body(out: &str) -> String {
    let start = out.rfind('$').expect("a packet") + 1;
    let end = out[start..].find('#').unwrap() + start;
    let mut plain = String::new();
    let mut chars = out[start..end].chars();
    while let Some(c) = chars.next() {
        if c == '*' {
            let last = plain.chars().last().unwrap();
            let n = chars.next().unwrap() as usize - 29;
            plain.extend(core::iter::repeat_n(last, n));
        } else {
            plain.push(c);
        }
    }
    plain
}

#[test]
fn gdb_reads_registers_big_endian_and_memory_without_breakpoints() {
    let cell = program();
    let mut s = attached(&cell);
    s.add_breakpoint(BASE).unwrap();
    let mut rsp = Rsp::start(s).unwrap();
    let stop = exchange(&mut rsp, "?");
    assert!(
        body(&stop).starts_with('S') || body(&stop).starts_with('T'),
        "{stop}"
    );
    let g = exchange(&mut rsp, "g");
    let regs = body(&g);
    assert_eq!(regs.len(), 72 * 8);
    // r29 (sp) and pc, big-endian.
    assert_eq!(&regs[29 * 8..30 * 8], "88700fe0");
    assert_eq!(&regs[37 * 8..38 * 8], "88700000");
    let m = exchange(&mut rsp, "m88700000,8");
    assert_eq!(body(&m), "2402000124020001", "the breakpoint is not seen");
    let bad = exchange(&mut rsp, "m88701000,4");
    assert!(body(&bad).starts_with('E'), "outside the window: {bad}");
    let xml = exchange(&mut rsp, "qXfer:features:read:target.xml:0,400");
    assert!(xml.contains("org.gnu.gdb.mips.cpu"), "{xml}");
    rsp.close().unwrap();
    assert_eq!(cell.word(BASE), LI);
}

#[test]
fn gdb_s_sign_extended_addresses_name_the_same_memory_and_others_are_errors() {
    // GDB 13 probes binary writes with KSEG0's address sign-extended to 64 bits; a
    // zero-length `X` to it must be answered, not end the session.
    let cell = program();
    let mut rsp = Rsp::start(attached(&cell)).unwrap();
    assert_eq!(body(&exchange(&mut rsp, "Xffffffff887001c8,0:")), "OK");
    let m = exchange(&mut rsp, "mffffffff88700000,4");
    assert_eq!(body(&m), "24020001");
    assert_eq!(
        body(&exchange(&mut rsp, "Mffffffff88700010,4:24020002")),
        "OK"
    );
    assert_eq!(cell.word(BASE + 0x10), 0x2402_0002);
    // Upper bits that do not extend the sign, or a 32-bit address outside the window.
    for bad in [
        "m0000000188700000,4",
        "mffffffff00000004,4",
        "Mffffffff00000004,4:00000000",
    ] {
        assert!(body(&exchange(&mut rsp, bad)).starts_with('E'), "{bad}");
    }
    assert!(!rsp.finished(), "errors, not the end of the session");
    assert_eq!(body(&exchange(&mut rsp, "m88700000,4")), "24020001");
    rsp.close().unwrap();
}

#[test]
fn gdb_breaks_continues_steps_interrupts_and_detaches() {
    let cell = program();
    let mut rsp = Rsp::start(attached(&cell)).unwrap();
    assert_eq!(body(&exchange(&mut rsp, "Z0,88700004,4")), "OK");
    assert_eq!(cell.word(BASE + 4), BREAK);
    assert_eq!(exchange(&mut rsp, "c"), "+", "no reply until it stops");
    rsp.poll();
    assert_eq!(take(&mut rsp), "");
    cell.arrive(BASE + 4);
    rsp.poll();
    let stop = take(&mut rsp);
    assert!(body(&stop).starts_with("T05"), "{stop}");
    assert!(stop.contains("swbreak"), "{stop}");
    assert_eq!(body(&exchange(&mut rsp, "z0,88700004,4")), "OK");
    assert_eq!(cell.word(BASE + 4), LI);
    // vCont;s: one instruction.
    let r = exchange(&mut rsp, "vCont;s:1");
    assert_eq!(cell.word(BASE + 8), BREAK, "{r}");
    cell.arrive(BASE + 8);
    rsp.poll();
    let step = take(&mut rsp);
    assert!(
        ["S05", "T05"].iter().any(|p| body(&step).starts_with(p)),
        "{step}"
    );
    // Ctrl-C while it runs.
    exchange(&mut rsp, "c");
    assert_eq!(rsp.feed(&[0x03]), 1);
    rsp.poll();
    let int = take(&mut rsp);
    assert!(
        body(&int).starts_with("T02") || body(&int).starts_with("S02"),
        "{int}"
    );
    assert_eq!(body(&exchange(&mut rsp, "D")), "OK");
    assert!(rsp.finished());
    rsp.close().unwrap();
    assert!(cell.running(), "detached, it runs on");
}

#[test]
fn a_flood_costs_bounded_memory_and_work_per_poll() {
    let cell = program();
    let mut rsp = Rsp::start(attached(&cell)).unwrap();
    // A debugger that sends 64 KiB of `g` requests and never reads a reply.
    let one = packet("g");
    let flood: Vec<u8> = one.bytes().cycle().take(64 * 1024).collect();
    let mut taken = 0;
    for _ in 0..64 {
        rsp.next_poll();
        let n = rsp.feed(&flood[taken..]);
        assert!(n <= FEED_MAX);
        let packets = flood[taken..taken + n]
            .iter()
            .filter(|&&b| b == b'$')
            .count();
        assert!(packets <= PACKETS_PER_POLL, "{packets} packets in a poll");
        taken += n;
        assert!(rsp.output().len() <= OUTBOX_CAP);
    }
    assert!(
        taken < flood.len(),
        "it stops taking input once replies pile up"
    );
    assert!(!rsp.finished(), "a slow reader is not an error");
    // Once GDB reads again, the stub goes on, a poll's packets at a time.
    let n = rsp.output().len();
    rsp.sent(n);
    rsp.next_poll();
    let first = rsp.feed(&flood[taken..]);
    assert!(first > 0);
    let n = rsp.output().len();
    rsp.sent(n);
    assert_eq!(
        rsp.feed(&flood[taken + first..]),
        0,
        "this poll's packets are spent"
    );
    rsp.close().unwrap();
    assert!(cell.running());
}

#[test]
fn garbage_is_answered_or_ignored_never_fatal_to_the_context() {
    let cell = program();
    let mut rsp = Rsp::start(attached(&cell)).unwrap();
    for junk in [
        &b"$#00"[..],
        b"$zz#zz",
        b"$m,#00",
        b"\xff\xfe$",
        b"$X88700000,4:\x01\x02#00",
        b"$G00#00",
    ] {
        rsp.next_poll();
        rsp.feed(junk);
        let n = rsp.output().len();
        rsp.sent(n);
    }
    let _ = rsp.close();
    assert_eq!(cell.word(BASE), LI);
}

#[test]
fn the_debugger_holds_one_session_and_ends_a_silent_gdb() {
    use super::debugger::{Debugger, IDLE_MS, Kernel};
    use alloc::rc::Rc;
    let cell = program();
    let kernel: Kernel = Rc::new(cell.clone());
    let mut d = Debugger::new(Some(kernel));
    assert_eq!(
        d.gdb(0, 1, 0).err(),
        Some(status::E_INVAL),
        "no session to find"
    );
    d.open_gdb(0, 1, 0).unwrap();
    assert!(!cell.running(), "attached: stopped");
    assert_eq!(d.attach(0, 1, 0).err(), Some(status::E_BUSY));
    assert_eq!(
        d.open_gdb(1, 1, 0).err(),
        Some(status::E_BUSY),
        "another token"
    );
    assert_eq!(d.detach(1).err(), Some(status::E_BUSY));
    assert!(d.poll(IDLE_MS).is_none_or(|f| f.is_empty()));
    assert_eq!(d.holder(), Some((0, 1)));
    d.poll(IDLE_MS + 1);
    assert_eq!(d.holder(), None, "silent too long");
    assert!(cell.running(), "detached");
    assert_eq!(d.gdb(0, 1, 0).err(), Some(status::E_INVAL));
}

#[test]
fn the_debugger_reports_a_fault_once_and_breakpoints_never() {
    use super::debugger::{Debugger, Kernel};
    use alloc::rc::Rc;
    let cell = program();
    let kernel: Kernel = Rc::new(cell.clone());
    let mut d = Debugger::new(Some(kernel));
    assert!(d.poll(0).is_none_or(|f| f.is_empty()));
    cell.fault(BASE + 8, exc::ADEL, 3);
    let faults = d.poll(1).unwrap();
    assert_eq!(faults.len(), 1);
    assert!(faults[0].line().contains("AdEL"), "{}", faults[0].line());
    assert!(d.poll(2).is_none(), "once");
    // An agent's breakpoint is the agent's business, not an event.
    let s = d.attach(7, 1, 3).unwrap();
    s.add_breakpoint(BASE + 4).unwrap();
    s.resume().unwrap();
    cell.arrive(BASE + 4);
    assert!(d.poll(4).is_none_or(|f| f.is_empty()));
    d.detach(7).unwrap();
    assert!(cell.running());
}
