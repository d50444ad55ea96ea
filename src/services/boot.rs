//! Why this boot happened and what survived of the previous one: the kernel's cause (`boot_info`,
//! ABI ≥ 13), the previous boot's image digest and uptime, its serial ring and its flight
//! record as the kernel kept them across the reset. Read once at `init` (the kernel does not
//! change them while the module runs) and shown by `status`, `irix7://status`, the status page,
//! the banner, `serial.read` with `boot: "previous"`, `irix7://serial/previous` and
//! `irix7://flight/previous`.

use crate::services::duration::format_duration;
use crate::services::flight::record::{ERA_LEGACY, Flight, FlightError};
use crate::services::serial_ring::Span;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use indy::abi::{BOOT_REQUESTED, BOOT_UNKNOWN, boot_cause_name};

/// The previous boot's serial ring, copied at init.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreviousRing {
    /// The ring's bytes as the kernel kept them (its whole size; byte `n` at `n % len`).
    pub bytes: Vec<u8>,
    /// Bytes the previous boot wrote.
    pub head: u32,
    /// Where the previous boot wrote its generated token, as its flight record says.
    pub secret: PreviousSecret,
}

/// Where the previous boot's generated token lies in its ring: what masking it needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PreviousSecret {
    /// Its flight record says: here, or nowhere (`None`: it printed no generated token).
    Known(Option<Span>),
    /// Its flight record did not survive or does not parse, so nothing says where a token
    /// the ring may hold lies: the ring goes only to a caller that may see secrets (masking
    /// fails closed).
    #[default]
    Unknown,
}

/// The previous ring's bytes do not sum to what its kernel kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingDamaged;

/// Everything the module knows about why it is running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootReport {
    /// `indy::abi::BOOT_*`; [`BOOT_UNKNOWN`] on a kernel before ABI 13.
    pub cause: u32,
    /// The kernel's message (a panic's), or empty.
    pub message: String,
    /// Boots since power-on, this one included (0: the kernel cannot say).
    pub boots: u32,
    /// How long the previous boot ran (0 after a power-on).
    pub prev_uptime_ms: u32,
    /// The previous boot's image digest, when something ran before.
    pub prev_sha256: Option<[u8; 32]>,
    /// The previous boot's flight record, or why there is none to believe.
    pub flight: Result<Flight, FlightError>,
    /// The previous boot's console, when it survived: `Err` when its checksum does not hold
    /// (damaged across the reset; not served).
    pub ring: Option<Result<PreviousRing, RingDamaged>>,
    /// A requested reset that brought up another image than the previous boot ran.
    pub deploy: bool,
}

impl Default for BootReport {
    fn default() -> Self {
        BootReport::unknown()
    }
}

impl BootReport {
    /// What a kernel before ABI 13 lets the module say: nothing.
    pub fn unknown() -> Self {
        BootReport {
            cause: BOOT_UNKNOWN,
            message: String::new(),
            boots: 0,
            prev_uptime_ms: 0,
            prev_sha256: None,
            flight: Err(FlightError::Absent),
            ring: None,
            deploy: false,
        }
    }

    pub fn cause_name(&self) -> &'static str {
        boot_cause_name(self.cause)
    }

    /// Who asked for the reset, as the previous boot's flight record says (requested only).
    pub fn requested_by(&self) -> Option<&str> {
        match &self.flight {
            Ok(f) if self.cause == BOOT_REQUESTED && !f.reset_by.is_empty() => Some(&f.reset_by),
            _ => None,
        }
    }

    /// The previous console's state in one word: `ok`, `absent` or `corrupt`.
    pub fn ring_state(&self) -> &'static str {
        match &self.ring {
            Some(Ok(_)) => "ok",
            Some(Err(RingDamaged)) => "corrupt",
            None => "absent",
        }
    }

    /// The flight record's state in one word: `ok`, `absent`, `foreign` or `corrupt`.
    pub fn flight_state(&self) -> &'static str {
        match &self.flight {
            Ok(_) => "ok",
            Err(e) => e.as_str(),
        }
    }

    /// One line for the banner and the text status: `watchdog (previous boot ran 0d 00:01:02,
    /// build 3f2a…, 1 call in flight: serial.read)`.
    pub fn line(&self) -> String {
        let mut s = String::from(self.cause_name());
        if let Some(by) = self.requested_by() {
            let _ = write!(s, " by {by}");
        }
        if self.deploy {
            s.push_str(", a deploy");
        }
        if !self.message.is_empty() {
            let _ = write!(s, ": {}", self.message);
        }
        if self.prev_sha256.is_some() || self.prev_uptime_ms > 0 {
            let _ = write!(
                s,
                " (previous boot ran {}",
                format_duration(self.prev_uptime_ms.into())
            );
            match &self.flight {
                Ok(f) => {
                    let _ = write!(s, ", build {}", f.build);
                    if !f.calls.is_empty() {
                        let _ = write!(s, ", calls in flight:");
                        for c in &f.calls {
                            let _ = write!(s, " {}", c.tool);
                        }
                    }
                    if f.torn > 0 {
                        let _ = write!(s, ", {} torn call slot(s)", f.torn);
                    }
                    if !f.panic.is_empty() {
                        let _ = write!(s, ", module panic: {}", f.panic);
                    }
                }
                Err(e) => {
                    let _ = write!(s, ", flight record {}", e.as_str());
                }
            }
            s.push(')');
        }
        s
    }

    /// `irix7://flight/previous`: the previous boot's flight record as text, or why there is
    /// none to believe.
    pub fn flight_text(&self) -> String {
        let f = match &self.flight {
            Ok(f) => f,
            Err(e) => {
                return format!(
                    "flight record {}: {}\n",
                    e.as_str(),
                    match e {
                        FlightError::Absent => "nothing survived from a previous boot",
                        FlightError::Foreign => "the region holds another layout; not read",
                        FlightError::Corrupt => "its header is torn or damaged; not trusted",
                    }
                );
            }
        };
        let mut s = format!(
            "build       {}\n\
             uptime      {}\n\
             heap        {} / {} bytes\n\
             connections {} open, {} requests served\n\
             headers     {}\n",
            f.build,
            format_duration(f.uptime_ms),
            f.heap_used,
            f.heap_size,
            f.connections,
            f.requests,
            f.seq.wrapping_add(1),
        );
        if !f.reset_by.is_empty() {
            let _ = writeln!(s, "reset by    {}", f.reset_by);
        }
        if !f.panic.is_empty() {
            let _ = writeln!(s, "panic       {}", f.panic);
        }
        let _ = writeln!(
            s,
            "in flight   {} call(s){}",
            f.calls.len(),
            if f.dropped > 0 {
                format!(" and {} not recorded", f.dropped)
            } else {
                String::new()
            }
        );
        if f.torn > 0 {
            let _ = writeln!(
                s,
                "torn        {} call slot(s): a call may have been there; not trusted",
                f.torn
            );
        }
        for c in &f.calls {
            let [a, b, cc, d] = c.client;
            let _ = writeln!(
                s,
                "  {} from {a}.{b}.{cc}.{d} ({}), started at {}",
                c.tool,
                if c.era == ERA_LEGACY {
                    "legacy session"
                } else {
                    "2026-07-28"
                },
                format_duration(c.started_ms.into())
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::flight::record::FlightCall;

    #[test]
    fn torn_slots_are_said_beside_the_calls_that_were_read() {
        let mut b = BootReport {
            cause: indy::abi::BOOT_WATCHDOG,
            prev_uptime_ms: 5_000,
            flight: Ok(Flight {
                build: String::from("b1"),
                calls: alloc::vec![FlightCall {
                    tool: "serial.read".into(),
                    client: [10, 0, 2, 2],
                    ..FlightCall::default()
                }],
                torn: 1,
                ..Flight::default()
            }),
            ..BootReport::unknown()
        };
        let line = b.line();
        assert!(
            line.ends_with("calls in flight: serial.read, 1 torn call slot(s))"),
            "{line}"
        );
        let text = b.flight_text();
        assert!(text.contains("torn        1 call slot(s)"), "{text}");
        assert!(
            text.contains("  serial.read from 10.0.2.2 (2026-07-28)"),
            "{text}"
        );
        b.flight = Err(FlightError::Corrupt);
        assert!(
            b.flight_text()
                .starts_with("flight record corrupt: its header")
        );
    }
}
