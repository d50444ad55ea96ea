//! The flight recorder on the board: the kernel's region that survives a warm reset, the
//! recorder that fills it (at every tool call's start and end, as the server's call observer,
//! and at most once a second from `poll`), and the panic handler's way in. The record's bytes
//! are `services::flight::record`'s.

use crate::board::kernel::Kernel;
use crate::services::flight::record::{self, RECORD_LEN};
use crate::services::flight::recorder::{Figures, Recorder};
use core::cell::{Cell, RefCell};
use rpc::mcp::{CallObserver, CallStart, MODERN_VERSION};

/// The kernel's flight region for this boot.
#[derive(Clone, Copy)]
pub struct FlightRegion {
    base: *mut u8,
}

// SAFETY: the module runs on one CPU and the kernel calls it from one thread.
unsafe impl Send for FlightRegion {}
unsafe impl Sync for FlightRegion {}

static REGION: spin::Once<FlightRegion> = spin::Once::new();

impl FlightRegion {
    /// This boot's region as the kernel gives it, if it gives one big enough for a record.
    pub fn of(kernel: Kernel) -> Option<FlightRegion> {
        let info = kernel.boot_info()?;
        let base = info.flight;
        if base.is_null() || (info.flight_size as usize) < RECORD_LEN {
            return None;
        }
        let region = FlightRegion { base };
        REGION.call_once(|| region);
        Some(region)
    }

    /// Stores a record.
    pub fn store(&self, rec: &[u8; RECORD_LEN]) {
        // SAFETY: the region is the module's to write, at least `RECORD_LEN` bytes (checked
        // in `of`), for the module's lifetime; nothing else writes it while the module runs.
        unsafe { core::ptr::copy_nonoverlapping(rec.as_ptr(), self.base, RECORD_LEN) }
    }

    fn load(&self) -> [u8; RECORD_LEN] {
        let mut rec = [0u8; RECORD_LEN];
        // SAFETY: as in `store`.
        unsafe { core::ptr::copy_nonoverlapping(self.base, rec.as_mut_ptr(), RECORD_LEN) };
        rec
    }
}

/// Stamps a panic's text on the last record (the panic handler; no allocation).
pub fn stamp_panic(text: &str) {
    if let Some(region) = REGION.get() {
        let mut rec = region.load();
        record::stamp_panic(&mut rec, text);
        region.store(&rec);
    }
}

/// The recorder and where it writes.
pub struct FlightLog {
    region: Option<FlightRegion>,
    recorder: RefCell<Recorder>,
    /// Connections open and requests served, as the last poll saw them.
    net: Cell<(usize, u64)>,
    figures: fn() -> (usize, usize),
}

impl FlightLog {
    /// `heap` gives (used, size) of the heap.
    pub fn new(kernel: Kernel, build: &str, heap: fn() -> (usize, usize)) -> FlightLog {
        FlightLog {
            region: FlightRegion::of(kernel),
            recorder: RefCell::new(Recorder::new(build)),
            net: Cell::new((0, 0)),
            figures: heap,
        }
    }

    /// Where this boot wrote its generated token into the serial ring.
    pub fn secret(&self, start: u32, end: u32) {
        if let Ok(mut r) = self.recorder.try_borrow_mut() {
            r.secret(start, end);
        }
    }

    fn write(&self, now_ms: u64) {
        let Some(region) = self.region else {
            return;
        };
        let Ok(mut r) = self.recorder.try_borrow_mut() else {
            return;
        };
        let (heap_used, heap_size) = (self.figures)();
        let (connections, requests) = self.net.get();
        region.store(r.record(Figures {
            uptime_ms: now_ms,
            heap_used,
            heap_size,
            connections,
            requests,
        }));
    }

    /// From `poll`: the network figures, and a write when one is due.
    pub fn poll(&self, now_ms: u64, connections: usize, requests: u64) {
        self.net.set((connections, requests));
        let due = self.recorder.try_borrow().is_ok_and(|r| r.due(now_ms));
        if due {
            self.write(now_ms);
        }
    }

    /// A reset `by` asked for is about to happen: said in the record first.
    pub fn reset_requested(&self, by: &str, now_ms: u64) {
        if let Ok(mut r) = self.recorder.try_borrow_mut() {
            r.reset_requested(by);
        }
        self.write(now_ms);
    }
}

impl CallObserver for FlightLog {
    fn started(&self, call: &CallStart) -> u32 {
        let legacy = call.era != MODERN_VERSION;
        let token = match self.recorder.try_borrow_mut() {
            Ok(mut r) => r.call_started(call.tool, call.client, legacy, call.at_ms),
            Err(_) => 0,
        };
        self.write(call.at_ms);
        token
    }

    /// The end reaches the region with the next periodic write (or the next call's start):
    /// one write a call, not two.
    fn ended(&self, token: u32) {
        if let Ok(mut r) = self.recorder.try_borrow_mut() {
            r.call_ended(token);
        }
    }
}
