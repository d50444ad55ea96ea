//! The panic handler. Kernel code is written never to panic on input. The image is built with
//! the `immediate-abort` panic strategy (`docs/image.md`): a panic there is a `break` trap the
//! kernel reports with its address, and this handler is not reached. Builds with the target's
//! default strategy (clippy, experiments) use it: it says so on the console and stops taking
//! work, so the memory controller's watchdog, no longer fed by `poll`, resets the machine.

use crate::board::kernel::Kernel;
use core::panic::PanicInfo;

static KERNEL: spin::Once<Kernel> = spin::Once::new();

/// Remembers the kernel so a panic can reach the console.
pub fn set_kernel(kernel: Kernel) {
    KERNEL.call_once(|| kernel);
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    if let Some(&k) = KERNEL.get() {
        crate::board::console::kprintln!(k, "PANIC: {}", info.message());
    }
    loop {
        core::hint::spin_loop();
    }
}
