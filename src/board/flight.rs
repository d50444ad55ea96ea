//! The flight recorder on the board: the kernel's region that survives a warm reset, the
//! recorder that fills it (a call's slot at every tool call's start and end, as the server's
//! call observer; the header at most once a second from `poll`), and the panic handler's way
//! in. The record's bytes are `services::flight::record`'s; this file only copies them.

use crate::board::kernel::Kernel;
use crate::services::flight::record::{self, HEADER_LEN, RECORD_LEN};
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

    /// Writes `bytes` at offset `at` of the record; nothing when they would end past it.
    pub fn write(&self, at: usize, bytes: &[u8]) {
        if at
            .checked_add(bytes.len())
            .is_none_or(|end| end > RECORD_LEN)
        {
            return;
        }
        // SAFETY: the region is the module's to write, at least `RECORD_LEN` bytes (checked
        // in `of`), for the module's lifetime, and `at..at + len` lies within `RECORD_LEN`
        // (checked above); nothing else writes it while the module runs.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(at), bytes.len()) }
    }

    fn header(&self) -> [u8; HEADER_LEN] {
        let mut header = [0u8; HEADER_LEN];
        // SAFETY: as in `write`; the header is the record's first `HEADER_LEN` bytes.
        unsafe { core::ptr::copy_nonoverlapping(self.base, header.as_mut_ptr(), HEADER_LEN) };
        header
    }
}

/// Stamps a panic's text on the last header (the panic handler; no allocation).
pub fn stamp_panic(text: &str) {
    if let Some(region) = REGION.get() {
        let mut header = region.header();
        record::stamp_panic(&mut header, text);
        region.write(0, &header);
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
    /// `heap` gives (used, size) of the heap. Writes the whole record at once, so the region
    /// names no call this boot did not start.
    pub fn new(
        kernel: Kernel,
        build: &str,
        heap: fn() -> (usize, usize),
        now_ms: u64,
    ) -> FlightLog {
        let log = FlightLog {
            region: FlightRegion::of(kernel),
            recorder: RefCell::new(Recorder::new(build)),
            net: Cell::new((0, 0)),
            figures: heap,
        };
        if let Some(region) = log.region {
            let first = log.recorder.borrow_mut().first(log.figures(now_ms));
            region.write(0, &first);
        }
        log
    }

    /// Where this boot wrote its generated token into the serial ring.
    pub fn secret(&self, start: u32, end: u32) {
        if let Ok(mut r) = self.recorder.try_borrow_mut() {
            r.secret(start, end);
        }
    }

    fn figures(&self, now_ms: u64) -> Figures {
        let (heap_used, heap_size) = (self.figures)();
        let (connections, requests) = self.net.get();
        Figures {
            uptime_ms: now_ms,
            heap_used,
            heap_size,
            connections,
            requests,
        }
    }

    /// Rewrites the header.
    fn write_header(&self, now_ms: u64) {
        let Some(region) = self.region else {
            return;
        };
        let figures = self.figures(now_ms);
        if let Ok(mut r) = self.recorder.try_borrow_mut() {
            region.write(0, r.header(figures));
        }
    }

    /// From `poll`: the network figures, and a header write when one is due.
    pub fn poll(&self, now_ms: u64, connections: usize, requests: u64) {
        self.net.set((connections, requests));
        let due = self.recorder.try_borrow().is_ok_and(|r| r.due(now_ms));
        if due {
            self.write_header(now_ms);
        }
    }

    /// A reset `by` asked for is about to happen: said in the record first.
    pub fn reset_requested(&self, by: &str, now_ms: u64) {
        if let Ok(mut r) = self.recorder.try_borrow_mut() {
            r.reset_requested(by);
        }
        self.write_header(now_ms);
    }
}

impl CallObserver for FlightLog {
    /// Writes the call's slot before the call runs (or, for a call beyond the slots, the
    /// header that counts it).
    fn started(&self, call: &CallStart) -> u32 {
        let legacy = call.era != MODERN_VERSION;
        let Ok(mut r) = self.recorder.try_borrow_mut() else {
            return 0;
        };
        let (token, slot) = r.call_started(call.tool, call.client, legacy, call.at_ms);
        drop(r);
        match (slot, self.region) {
            (Some(s), Some(region)) => region.write(s.at, &s.bytes),
            (None, _) => self.write_header(call.at_ms),
            (Some(_), None) => {}
        }
        token
    }

    /// Clears the call's slot: the record holds exactly the calls in flight.
    fn ended(&self, token: u32) {
        let slot = match self.recorder.try_borrow_mut() {
            Ok(mut r) => r.call_ended(token),
            Err(_) => None,
        };
        if let (Some(s), Some(region)) = (slot, self.region) {
            region.write(s.at, &s.bytes);
        }
    }
}
