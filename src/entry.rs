//! The module's entry points, called by the kernel: `init` once with the ABI table, `poll`
//! from the kernel's scheduler loop, `exit` before the kernel unloads the module or resets.

use crate::abi::Kernel;
use crate::abi::table::{ABI_MIN_VERSION, ABI_TABLE_SIZE, AbiTable, status};
use crate::console::kprintln;
use crate::modinfo::VERSION;
use spin::Mutex;

/// The smallest heap the module agrees to start with.
const HEAP_MIN: usize = 1 << 20;

/// Everything the module owns while loaded.
struct Module {
    kernel: Kernel,
}

impl Module {
    /// One non-blocking step. Returns > 0 when work is pending, 0 when idle.
    fn poll(&mut self, _now_ms: u64) -> i32 {
        self.kernel.watchdog_kick();
        0
    }
}

static MODULE: Mutex<Option<Module>> = Mutex::new(None);

/// Checks the table, takes the heap, prints the banner. Returns 0 or a negative status.
///
/// # Safety
/// `table` points to the kernel's ABI table, valid until `irix7_mcp_exit` returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn irix7_mcp_init(table: *const AbiTable) -> i32 {
    if table.is_null() {
        return status::E_INVAL;
    }
    // SAFETY: the kernel passes a valid table (contract above). Read the header first: an older
    // kernel's table may be shorter than ours.
    let (version, size) = unsafe { ((*table).version, (*table).size) };
    if version < ABI_MIN_VERSION {
        return status::E_ABI_VERSION;
    }
    if size < ABI_TABLE_SIZE {
        return status::E_ABI_SIZE;
    }
    // SAFETY: version and size say the whole table is there, and it lives until exit.
    let kernel = unsafe { Kernel::new(&*table) };
    crate::panic::set_kernel(kernel);

    let mut module = MODULE.lock();
    if module.is_some() {
        kprintln!(kernel, "init called twice; refused");
        return status::E_INVAL;
    }
    let (heap_base, heap_size) = kernel.heap_region();
    if heap_base.is_null() || heap_size < HEAP_MIN {
        kprintln!(
            kernel,
            "heap of {heap_size} bytes is too small (need {HEAP_MIN})"
        );
        return status::E_NOMEM;
    }
    // SAFETY: the region is the module's until exit, and nothing was allocated before.
    unsafe { crate::heap::init(heap_base, heap_size) };

    {
        use core::fmt::Write as _;
        let mut c = crate::console::Console(kernel);
        let _ = writeln!(c, "irix7-mcp {VERSION}, ABI {version}");
    }
    *module = Some(Module { kernel });
    status::OK
}

/// One non-blocking step of the module's work. Returns > 0 when more work is pending (call
/// again soon), 0 when idle, < 0 when the module is not initialised.
#[unsafe(no_mangle)]
pub extern "C" fn irix7_mcp_poll(now_ms: u64) -> i32 {
    match MODULE.lock().as_mut() {
        Some(m) => m.poll(now_ms),
        None => status::E_INVAL,
    }
}

/// Releases the hardware. The heap region goes back to the kernel with the module.
#[unsafe(no_mangle)]
pub extern "C" fn irix7_mcp_exit() {
    if let Some(m) = MODULE.lock().take() {
        kprintln!(m.kernel, "exit");
    }
}
