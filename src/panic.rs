//! The panic handler. Kernel code is written never to panic on input; if a bug panics anyway,
//! say so on the console and stop taking work: the memory controller's watchdog, no longer fed
//! by `poll`, resets the machine.

use crate::abi::Kernel;
use core::panic::PanicInfo;

static KERNEL: spin::Once<Kernel> = spin::Once::new();

/// Remembers the kernel so a panic can reach the console.
pub fn set_kernel(kernel: Kernel) {
    KERNEL.call_once(|| kernel);
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    if let Some(&k) = KERNEL.get() {
        crate::console::kprintln!(k, "PANIC: {}", info.message());
    }
    loop {
        core::hint::spin_loop();
    }
}
