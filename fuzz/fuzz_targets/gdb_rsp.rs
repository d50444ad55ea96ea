//! Arbitrary bytes as what GDB sends the cell debugger's stub, over a simulated cell: fed in
//! pieces as `/debug/rsp` exchanges would, with the reader draining or not and the cell
//! stopping or not between them. Nothing may panic, no poll may take more than its bound or
//! grow the outbox past its cap, and closing the session leaves the cell running.

#![no_main]

use irix7_mcp::services::debug::fake::{BASE, FakeCell};
use irix7_mcp::services::debug::rsp::{FEED_MAX, OUTBOX_CAP, Rsp};
use irix7_mcp::services::debug::session::Session;
use libfuzzer_sys::fuzz_target;

/// li v0,1; li v0,1; jr ra; nop; li v0,1; beq zero,zero,-1; nop
const CODE: [u32; 7] = [
    0x2402_0001,
    0x2402_0001,
    0x03E0_0008,
    0,
    0x2402_0001,
    0x1000_FFFF,
    0,
];

fuzz_target!(|data: &[u8]| {
    irix7_fuzz::budget::case(|| {
        let cell = FakeCell::new(&CODE);
        let Ok(session) = Session::attach(cell.clone(), 1) else {
            return;
        };
        let Ok(mut rsp) = Rsp::start(session) else {
            return;
        };
        // The first byte of each piece steers the harness; the rest is GDB's.
        for piece in data.chunks(97) {
            let (steer, bytes) = (piece[0], &piece[1..]);
            if steer & 4 == 0 {
                rsp.next_poll();
            }
            let taken = rsp.feed(bytes);
            assert!(taken <= FEED_MAX && taken <= bytes.len());
            assert!(rsp.output().len() <= OUTBOX_CAP);
            if steer & 1 == 0 {
                let n = rsp.output().len();
                rsp.sent(n);
            }
            if steer & 2 != 0 && cell.running() {
                cell.arrive(BASE + 4 * u32::from(steer >> 4 & 7));
            }
            rsp.poll();
            if rsp.finished() {
                break;
            }
        }
        let _ = rsp.close();
        assert!(cell.running(), "a closed session leaves the cell running");
    });
});
