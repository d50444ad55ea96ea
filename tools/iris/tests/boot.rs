//! Booting hand-assembled modules on the rig: the kernel's boot lines, console_write through the
//! stub trampolines into the Z85C30 and the serial ring, instruction counting, the scheduler.

mod support;

use iris::RunEnd;
use support::synthetic::*;

#[test]
fn hello_module_boots_and_prints() {
    let image = hello_module("hello from the guest\n", idle_poll()).build();
    let mut rig = boot_synthetic(synthetic_options("hello", &image)).unwrap();
    let console = rig.console_text();
    assert!(
        console.starts_with("IRIX 7 kernel 7.0.0 (iris rig)"),
        "{console}"
    );
    assert!(
        console.contains("loading irix7-mcp from file:m.o\n"),
        "{console}"
    );
    assert!(
        console.contains(&format!(
            "sha256 {} verified\n",
            iris::image::sha256_hex(&image)
        )),
        "{console}"
    );
    assert!(
        console.contains("module testmod 0.0.1 (ABI 10)"),
        "{console}"
    );
    assert!(console.ends_with("hello from the guest\n"), "{console}");
    // The ring holds exactly what the kernel wrote, from kernel entry.
    let (head, ring) = rig.serial_ring();
    assert_eq!(head as usize, console.len());
    assert_eq!(ring, console.as_bytes());
    // init: 4 (prologue, store) + 2 (la) + 1 + 5 (call) + 1 (the stub counts as one) + 1 + 3
    // (epilogue) = 17 instructions.
    let c = rig.counters();
    assert_eq!(c.init_insns, 17);
    assert_eq!(
        rig.kernel_stats()
            .calls_to(iris::kernel::abi::AbiFn::ConsoleWrite),
        1
    );
    assert_eq!(rig.run_for(30).unwrap(), RunEnd::TimeLimit);
    let c = rig.counters();
    assert!(c.polls > 3, "{c:?}");
    assert_eq!(c.last_poll_insns, 2);
    assert_eq!(c.max_poll_insns, 2);
    assert_eq!(c.total_insns, 17 + 2 * c.polls);
    rig.stop().unwrap();
    assert!(rig.console_text().ends_with("kernel: module exited\n"));
}
