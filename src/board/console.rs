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

/// Writes one formatted line to the console, prefixed with the module's name.
macro_rules! kprintln {
    ($kernel:expr, $($arg:tt)*) => {{
        use core::fmt::Write as _;
        let mut c = $crate::board::console::Console($kernel);
        let _ = c.write_str("irix7-mcp: ");
        let _ = c.write_fmt(format_args!($($arg)*));
        let _ = c.write_str("\n");
    }};
}
pub(crate) use kprintln;
