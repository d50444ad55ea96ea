//! The panic handler. Kernel code is written never to panic on input. The image is built with
//! the `immediate-abort` panic strategy (`docs/image.md`): a panic there is a `break` trap the
//! kernel reports with its address (and, as a kernel panic, as the next boot's cause), and this
//! handler is not reached. Builds with the target's default strategy (clippy, experiments) use
//! it: it stamps the message and location on the flight record (`board::flight`), so the next
//! boot can tell, says so on the console and stops taking work, so the memory controller's
//! watchdog, no longer fed by `poll`, resets the machine.

use crate::board::kernel::Kernel;
use crate::services::flight::record::PANIC_LEN;
use core::fmt::Write;
use core::panic::PanicInfo;

static KERNEL: spin::Once<Kernel> = spin::Once::new();

/// Remembers the kernel so a panic can reach the console.
pub fn set_kernel(kernel: Kernel) {
    KERNEL.call_once(|| kernel);
}

/// A fixed buffer the panic text is formatted into (no heap: it may be what failed).
struct Text {
    buf: [u8; PANIC_LEN],
    len: usize,
}

impl Write for Text {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = PANIC_LEN - self.len;
        let n = s.floor_char_boundary(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    let mut text = Text {
        buf: [0; PANIC_LEN],
        len: 0,
    };
    let _ = write!(text, "{}", info.message());
    if let Some(at) = info.location() {
        let _ = write!(text, " at {}:{}:{}", at.file(), at.line(), at.column());
    }
    // Only whole characters were written.
    let said = core::str::from_utf8(&text.buf[..text.len]).unwrap_or("panic");
    crate::board::flight::stamp_panic(said);
    if let Some(&k) = KERNEL.get() {
        crate::board::console::kprintln!(k, "PANIC: {said}");
    }
    loop {
        core::hint::spin_loop();
    }
}
