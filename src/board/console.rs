//! `core::fmt` output to the kernel console, for the banner and module messages.

use crate::board::kernel::Kernel;
use core::fmt;

/// Formats straight into `console_write`, so no heap is needed (the panic path uses it too).
pub struct Console(pub Kernel);

impl fmt::Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.console_write(s.as_bytes());
        Ok(())
    }
}

impl Console {
    /// A console on a fresh line that starts with the module's name (`kprintln!`'s start, one
    /// call rather than its code at every line).
    #[inline(never)]
    pub fn line(kernel: Kernel) -> Console {
        if !kernel.at_line_start() {
            kernel.console_write(b"\n");
        }
        kernel.console_write(b"irix7-mcp: ");
        Console(kernel)
    }
}

/// Writes one formatted line to the console, prefixed with the module's name, on a line of its
/// own: a line a client left open (`console.write` with `newline: false`) is ended first, so
/// the module's line never reads as the end of the client's text.
macro_rules! kprintln {
    ($kernel:expr, $($arg:tt)*) => {{
        use core::fmt::Write as _;
        let mut c = $crate::board::console::Console::line($kernel);
        let _ = c.write_fmt(format_args!($($arg)*));
        let _ = c.write_str("\n");
    }};
}
pub(crate) use kprintln;
