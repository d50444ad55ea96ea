//! A rig running on its own thread, for end-to-end tests that talk to it over TCP. Unicorn is
//! not `Send`, so the rig is built inside the thread; the handle shares the console log and a
//! stop flag.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::console::ConsoleLog;
use crate::error::RigError;
use crate::rig::{Counters, Rig, RigOptions, RunEnd, Survivor};

/// Extra setup run on the rig's thread before boot (e.g. adding devices).
pub type Setup = Box<dyn FnOnce(&mut Rig) -> Result<(), RigError> + Send>;

pub struct RigHandle {
    console: Arc<ConsoleLog>,
    stop: Arc<AtomicBool>,
    counters: Arc<Mutex<Counters>>,
    /// Milliseconds the rig thread adds to its clock at its next step.
    advance_ms: Arc<AtomicU64>,
    /// Set to make the rig thread's next guest call hang (`Rig::hang_next_call`).
    hang: Arc<AtomicBool>,
    /// Set to make the rig thread's next guest call trap (`Rig::trap_next_call`).
    trap: Arc<AtomicBool>,
    /// Damage for the rig thread to apply at the next warm reset (`Rig::corrupt_at_next_reset`).
    corrupt: Arc<Mutex<Vec<Survivor>>>,
    thread: Option<JoinHandle<Result<RunEnd, RigError>>>,
    forward_addrs: Vec<SocketAddr>,
}

impl Rig {
    /// Build and boot a rig on a new thread; returns once boot finished (or failed).
    pub fn spawn(opts: RigOptions) -> Result<RigHandle, RigError> {
        Rig::spawn_with(opts, Box::new(|_| Ok(())))
    }

    /// Like `spawn`, running `setup` on the rig before boot.
    pub fn spawn_with(opts: RigOptions, setup: Setup) -> Result<RigHandle, RigError> {
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Mutex::new(Counters::default()));
        let (tx, rx) = mpsc::channel::<Result<(Arc<ConsoleLog>, Vec<SocketAddr>), RigError>>();
        let advance_ms = Arc::new(AtomicU64::new(0));
        let hang = Arc::new(AtomicBool::new(false));
        let (stop_t, counters_t, advance_t) = (stop.clone(), counters.clone(), advance_ms.clone());
        let hang_t = hang.clone();
        let trap = Arc::new(AtomicBool::new(false));
        let corrupt = Arc::new(Mutex::new(Vec::new()));
        let (trap_t, corrupt_t) = (trap.clone(), corrupt.clone());
        let thread = std::thread::Builder::new()
            .name("iris".into())
            .spawn(move || {
                let mut rig = match Rig::new(opts) {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                let booted = setup(&mut rig).and_then(|_| rig.boot());
                if let Err(e) = booted {
                    let _ = tx.send(Err(e.clone()));
                    return Err(e);
                }
                let _ = tx.send(Ok((rig.console(), rig.net().forward_addrs())));
                let mut last_publish = Instant::now();
                let end = rig.run_until(Duration::MAX, |r| {
                    let ms = advance_t.swap(0, Ordering::Relaxed);
                    if ms > 0 {
                        r.advance_clock(ms);
                    }
                    if hang_t.swap(false, Ordering::Relaxed) {
                        r.hang_next_call();
                    }
                    if trap_t.swap(false, Ordering::Relaxed) {
                        r.trap_next_call();
                    }
                    if let Ok(mut c) = corrupt_t.lock() {
                        for what in c.drain(..) {
                            r.corrupt_at_next_reset(what);
                        }
                    }
                    if last_publish.elapsed() >= Duration::from_millis(20) {
                        if let Ok(mut c) = counters_t.lock() {
                            *c = r.counters();
                        }
                        last_publish = Instant::now();
                    }
                    stop_t.load(Ordering::Relaxed)
                });
                if let Ok(mut c) = counters_t.lock() {
                    *c = rig.counters();
                }
                let end = end?;
                rig.stop()?;
                Ok(end)
            })
            .map_err(|e| RigError::State(format!("cannot start the rig thread: {e}")))?;
        match rx.recv() {
            Ok(Ok((console, forward_addrs))) => Ok(RigHandle {
                console,
                stop,
                counters,
                advance_ms,
                hang,
                trap,
                corrupt,
                thread: Some(thread),
                forward_addrs,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(match thread.join() {
                Ok(Err(e)) => e,
                _ => RigError::State("the rig thread died during boot".into()),
            }),
        }
    }
}

impl RigHandle {
    /// Where the rig's port forwards listen, in the order of `RigOptions::forwards`.
    pub fn forward_addrs(&self) -> &[SocketAddr] {
        &self.forward_addrs
    }

    pub fn console_text(&self) -> String {
        self.console.text()
    }

    pub fn console(&self) -> Arc<ConsoleLog> {
        self.console.clone()
    }

    /// Wait until the console shows `needle`; false on timeout or when the rig ended.
    pub fn wait_for_console(&self, needle: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.console.contains(needle) {
                return true;
            }
            if self.is_finished() {
                return self.console.contains(needle);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Moves the rig clock forward (timeouts fire without waiting). The rig thread takes the
    /// jump at its next step; this returns once it has, so what the caller does next starts
    /// after the jump. (A connection opened just before a jump it did not wait for could see
    /// its handshake given up: the module gives up a handshake 3 s old by its clock.)
    pub fn advance_clock(&self, ms: u64) {
        self.advance_ms.fetch_add(ms, Ordering::Relaxed);
        let asked = Instant::now();
        while self.advance_ms.load(Ordering::Relaxed) != 0
            && !self.is_finished()
            && asked.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Makes the rig's next guest call stop on a trap (the trap hook); applied at the next step.
    pub fn trap_next_call(&self) {
        self.trap.store(true, Ordering::Relaxed);
    }

    /// Damages `what` at the next warm reset (the corruption hook); applied at the next step.
    pub fn corrupt_at_next_reset(&self, what: Survivor) {
        if let Ok(mut c) = self.corrupt.lock() {
            c.push(what);
        }
    }

    /// Makes the rig's next guest call spin forever (the hang hook); applied at the next step.
    pub fn hang_next_call(&self) {
        self.hang.store(true, Ordering::Relaxed);
    }

    /// Counters as of the last ~20 ms.
    pub fn counters(&self) -> Counters {
        self.counters.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stop the rig (the module's exit runs) and wait for its thread.
    pub fn stop(mut self) -> Result<RunEnd, RigError> {
        self.stop.store(true, Ordering::Relaxed);
        self.join_inner()
    }

    /// Wait for the rig to end by itself (power-off or error).
    pub fn join(mut self) -> Result<RunEnd, RigError> {
        self.join_inner()
    }

    fn join_inner(&mut self) -> Result<RunEnd, RigError> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(RigError::State("the rig thread panicked".into()))),
            None => Err(RigError::State("already joined".into())),
        }
    }
}

impl Drop for RigHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
