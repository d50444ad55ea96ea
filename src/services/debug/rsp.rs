//! GDB's remote serial protocol over a session: bytes from GDB in, bytes for GDB out, driven a
//! bounded step per poll. gdbstub parses and dispatches the packets; this file owns the
//! bounds. Its memory is fixed at the start (a 4 KiB packet buffer and an outbox of 8.25 KiB,
//! both reserved up front). A poll takes at most [`PACKETS_PER_POLL`] packets (gdbstub spends
//! some 80,000 R4400 instructions on a `g`, more on a long `m`: the figure keeps a poll far
//! inside its 10 M budget whatever GDB sends) and [`FEED_MAX`] bytes, and only while the
//! outbox has room for the largest reply: a debugger that floods packets waits in its TCP
//! window, and one that stops reading stops being served, never growing anything.

use alloc::vec::Vec;
use gdbstub::common::Signal;
use gdbstub::conn::Connection;
use gdbstub::stub::state_machine::GdbStubStateMachine;
use gdbstub::stub::{GdbStubBuilder, SingleThreadStopReason};
use indy::abi::{exc, status};

use super::session::{Session, Stop};
use super::target::CellTarget;
use crate::hil::debug::Contexts;

/// The packet buffer: the longest packet GDB may send (it learns it from `PacketSize`).
pub const PACKET_SIZE: usize = 4096;
/// The outbox: two of the longest replies and their framing.
pub const OUTBOX_CAP: usize = 2 * PACKET_SIZE + 256;
/// Room the outbox must have before another input byte is taken (it may complete a packet
/// whose reply is up to a packet's size, hex-encoded memory included).
const REPLY_ROOM: usize = PACKET_SIZE + 64;
/// Most input bytes one poll takes.
pub const FEED_MAX: usize = 2 * PACKET_SIZE;
/// Most packets one poll takes (each `$` that starts one counts).
pub const PACKETS_PER_POLL: usize = 4;

/// What the stub has for GDB, bounded by [`OUTBOX_CAP`].
pub struct Outbox {
    bytes: Vec<u8>,
}

/// The outbox is full: the reply does not fit (the stub ends the session).
#[derive(Debug)]
pub struct OutboxFull;

impl Connection for Outbox {
    type Error = OutboxFull;

    fn write(&mut self, byte: u8) -> Result<(), OutboxFull> {
        if self.bytes.len() >= OUTBOX_CAP {
            return Err(OutboxFull);
        }
        // Never allocates: the capacity was reserved when the outbox was made.
        self.bytes.push(byte);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), OutboxFull> {
        Ok(())
    }
}

type Machine<C> = GdbStubStateMachine<'static, CellTarget<C>, Outbox>;

/// A stop as GDB hears it.
fn stop_reason(stop: Stop) -> SingleThreadStopReason<u64> {
    match stop {
        Stop::Breakpoint(_) => SingleThreadStopReason::SwBreak(()),
        Stop::Step(_) => SingleThreadStopReason::DoneStep,
        Stop::Interrupted(_) => SingleThreadStopReason::Signal(Signal::SIGINT),
        Stop::Exited => SingleThreadStopReason::Exited(0),
        Stop::Exception(s) => SingleThreadStopReason::Signal(match s.exc_code {
            exc::ADEL | exc::ADES | exc::TLBL | exc::TLBS => Signal::SIGSEGV,
            exc::IBE | exc::DBE => Signal::SIGBUS,
            exc::RI | exc::CPU => Signal::SIGILL,
            exc::OV | exc::FPE => Signal::SIGFPE,
            _ => Signal::SIGTRAP,
        }),
    }
}

/// A GDB connection to one session.
pub struct Rsp<C: Contexts> {
    /// `None` once GDB disconnected or the protocol failed.
    machine: Option<Machine<C>>,
    target: CellTarget<C>,
    /// Packets this poll may still take ([`Rsp::next_poll`] refills it).
    packets_left: usize,
}

impl<C: Contexts> Rsp<C> {
    /// Starts serving GDB on `session`; on failure the session is detached (undone).
    pub fn start(session: Session<C>) -> Result<Rsp<C>, i32> {
        let mut target = CellTarget { session };
        let mut bytes = Vec::new();
        // Both buffers reserved before gdbstub allocates its packet buffer (which it does
        // infallibly): with the room there, that allocation does not fail.
        let room = bytes
            .try_reserve_exact(OUTBOX_CAP)
            .and_then(|_| Vec::<u8>::new().try_reserve_exact(PACKET_SIZE));
        let built = room.ok().and_then(|_| {
            GdbStubBuilder::new(Outbox { bytes })
                .packet_buffer_size(PACKET_SIZE)
                .build()
                .ok()
        });
        let Some(stub) = built else {
            let _ = target.session.detach();
            return Err(status::E_NOMEM);
        };
        match stub.run_state_machine(&mut target) {
            Ok(machine) => Ok(Rsp {
                machine: Some(machine),
                target,
                packets_left: PACKETS_PER_POLL,
            }),
            Err(_) => {
                let _ = target.session.detach();
                Err(status::E_IO)
            }
        }
    }

    fn outbox(&mut self) -> Option<&mut Outbox> {
        Some(match self.machine.as_mut()? {
            GdbStubStateMachine::Idle(m) => m.borrow_conn(),
            GdbStubStateMachine::Running(m) => m.borrow_conn(),
            GdbStubStateMachine::CtrlCInterrupt(m) => m.borrow_conn(),
            GdbStubStateMachine::Disconnected(m) => m.borrow_conn(),
        })
    }

    /// Bytes waiting for GDB.
    pub fn output(&mut self) -> &[u8] {
        self.outbox().map_or(&[], |o| o.bytes.as_slice())
    }

    /// Drops the first `n` bytes of the output (they were sent).
    pub fn sent(&mut self, n: usize) {
        if let Some(o) = self.outbox() {
            let n = n.min(o.bytes.len());
            o.bytes.drain(..n);
        }
    }

    /// Whether GDB has gone (detached, killed, or the protocol failed): [`Rsp::close`] next.
    pub fn finished(&self) -> bool {
        matches!(
            self.machine,
            None | Some(GdbStubStateMachine::Disconnected(_))
        )
    }

    /// Whether GDB waits for the context to stop (it resumed or stepped it).
    pub fn waiting_for_stop(&self) -> bool {
        matches!(
            self.machine,
            Some(GdbStubStateMachine::Running(_) | GdbStubStateMachine::CtrlCInterrupt(_))
        )
    }

    /// A new poll of the module: [`PACKETS_PER_POLL`] more packets may be taken.
    pub fn next_poll(&mut self) {
        self.packets_left = PACKETS_PER_POLL;
    }

    /// Takes GDB's bytes, as many as this poll may still: returns how many were taken (the
    /// rest stays with the caller, e.g. in the request's body or the socket).
    pub fn feed(&mut self, input: &[u8]) -> usize {
        let mut taken = 0;
        for &byte in input.iter().take(FEED_MAX) {
            let room = self
                .outbox()
                .map_or(0, |o| OUTBOX_CAP.saturating_sub(o.bytes.len()));
            if room < REPLY_ROOM || self.finished() {
                break;
            }
            if byte == b'$' {
                if self.packets_left == 0 {
                    break;
                }
                self.packets_left -= 1;
            }
            self.byte(byte);
            taken += 1;
        }
        taken
    }

    fn byte(&mut self, byte: u8) {
        let Some(machine) = self.machine.take() else {
            return;
        };
        let target = &mut self.target;
        let next = match machine {
            GdbStubStateMachine::Idle(m) => m.incoming_data(target, byte),
            GdbStubStateMachine::Running(m) => m.incoming_data(target, byte),
            GdbStubStateMachine::CtrlCInterrupt(m) => Ok(GdbStubStateMachine::CtrlCInterrupt(m)),
            d @ GdbStubStateMachine::Disconnected(_) => Ok(d),
        };
        self.machine = next.ok();
        self.interrupt_if_asked();
    }

    /// GDB's Ctrl-C: stop the context; the stop is reported when the poll sees it.
    fn interrupt_if_asked(&mut self) {
        if !matches!(self.machine, Some(GdbStubStateMachine::CtrlCInterrupt(_))) {
            return;
        }
        if let Some(GdbStubStateMachine::CtrlCInterrupt(m)) = self.machine.take() {
            let target = &mut self.target;
            let ok = target.session.interrupt().is_ok();
            let next = m.interrupt_handled(target, None::<SingleThreadStopReason<u64>>);
            self.machine = next.ok().filter(|_| ok);
        }
    }

    /// Reports the context's stop to GDB when it stopped: one read of the kernel's event count
    /// while it runs on.
    pub fn poll(&mut self) {
        let Some(GdbStubStateMachine::Running(_)) = &self.machine else {
            return;
        };
        let stop = match self.target.session.poll() {
            Ok(Some(stop)) => stop,
            Ok(None) => return,
            Err(_) => {
                self.machine = None;
                return;
            }
        };
        if let Some(GdbStubStateMachine::Running(m)) = self.machine.take() {
            self.machine = m.report_stop(&mut self.target, stop_reason(stop)).ok();
        }
    }

    /// Ends the connection: the session is detached (its breakpoints removed, the context
    /// running again).
    pub fn close(self) -> Result<(), i32> {
        self.target.session.detach()
    }
}
