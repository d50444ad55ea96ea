//! Audit records: one per call of a tool that is not annotated read-only, and summaries of
//! failed authentications (counted per address and window: see `login_failures`). The server hands each to the [`AuditSink`] in its configuration; what
//! becomes of them (a console line, a ring) is the module's business. A record never carries
//! file data, payloads or tokens: arguments are summarised (see `arg_summary`).

use crate::json::ValueRef;
use crate::mcp::guard::arg_summary::summarise_args;
use crate::mcp::guard::authority::Privilege;
use crate::mcp::guard::outcome::Outcome;
use crate::mcp::wire::tool::ToolDef;
use alloc::rc::Rc;
use alloc::string::String;
use core::fmt;

/// Receives audit records as they happen.
pub type AuditSink = Rc<dyn Fn(&AuditRecord)>;

/// Which era and session a call came in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// 2026-07-28: no session.
    Stateless,
    /// A legacy session, named by the first characters of its id (enough to tell sessions
    /// apart in a log, too few to take one over).
    Session(String),
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Via::Stateless => f.write_str("stateless"),
            Via::Session(prefix) => write!(f, "session {prefix}"),
        }
    }
}

/// Why authentication failed. The token presented is never recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// No `Authorization` header, or not a bearer one.
    Missing,
    /// A bearer token that is not the machine's.
    Wrong,
    /// Too many failures from this address in the last second: refused unlooked-at.
    Throttled,
}

/// How long failed logins are counted before they are summarised (see `login_failures`).
pub const LOGIN_WINDOW_MS: u64 = 10_000;

/// How long refused calls are counted before they are summarised (see `refusals`).
pub const REFUSAL_WINDOW_MS: u64 = 10_000;

/// Failed logins counted over a window (see `login_failures`): in all, and by why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailureCount {
    pub failures: u32,
    pub missing: u32,
    pub wrong: u32,
    pub throttled: u32,
}

impl FailureCount {
    pub(crate) fn add(&mut self, why: AuthFailure) {
        self.failures = self.failures.saturating_add(1);
        let by = match why {
            AuthFailure::Missing => &mut self.missing,
            AuthFailure::Wrong => &mut self.wrong,
            AuthFailure::Throttled => &mut self.throttled,
        };
        *by = by.saturating_add(1);
    }

    pub(crate) fn merge(&mut self, other: &FailureCount) {
        self.failures = self.failures.saturating_add(other.failures);
        self.missing = self.missing.saturating_add(other.missing);
        self.wrong = self.wrong.saturating_add(other.wrong);
        self.throttled = self.throttled.saturating_add(other.throttled);
    }
}

/// `<N> failed logins in 10 s (wrong token <n>, missing token <n>, throttled <n>)`.
impl fmt::Display for FailureCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed logins in {} s (wrong token {}, missing token {}, throttled {})",
            self.failures,
            LOGIN_WINDOW_MS / 1000,
            self.wrong,
            self.missing,
            self.throttled
        )
    }
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditEvent {
    Call {
        via: Via,
        tool: String,
        /// See [`crate::mcp::guard::arg_summary::summarise_args`].
        args: String,
        outcome: Outcome,
    },
    /// The failed logins of one client address in one window, counted.
    LoginFailures(FailureCount),
    /// The failed logins of one window from addresses not summarised one by one: `addresses`
    /// that were counted but past the lines a window writes, and, when `untracked`, more that
    /// the table had no room for.
    LoginFailuresElsewhere {
        count: FailureCount,
        addresses: u32,
        untracked: bool,
    },
    /// Calls of one owner refused before their tool started, over a window (see
    /// `refusals`): how many, and the last one's tool and outcome.
    Refusals {
        calls: u32,
        last_tool: String,
        last_outcome: Outcome,
    },
}

impl AuditEvent {
    /// Whether the event is a summary of failed logins (anyone can cause one), not a call
    /// that passed the token check.
    pub fn is_login_failures(&self) -> bool {
        matches!(
            self,
            AuditEvent::LoginFailures(_) | AuditEvent::LoginFailuresElsewhere { .. }
        )
    }

    pub fn is_refusals(&self) -> bool {
        matches!(self, AuditEvent::Refusals { .. })
    }

    /// Failed logins the event counts.
    pub fn failed_logins(&self) -> u32 {
        match self {
            AuditEvent::Call { .. } | AuditEvent::Refusals { .. } => 0,
            AuditEvent::LoginFailures(c) | AuditEvent::LoginFailuresElsewhere { count: c, .. } => {
                c.failures
            }
        }
    }
}

/// One audit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    /// The monotonic clock, in milliseconds: when the call started, or the failures' window.
    pub at_ms: u64,
    /// The client's IPv4 address.
    pub client: [u8; 4],
    /// Who the caller is beyond its address: the name of the token a call presented, when
    /// the server knows one (`None` today: one token, and failed logins present none).
    pub who: Option<String>,
    /// The privilege its owner ranks at (observe for failed logins): the module keeps each
    /// rank's lines where a lesser rank's cannot push them out.
    pub rank: Privilege,
    pub event: AuditEvent,
}

/// The one-line form: `audit <ms> ms <client> <via> <tool> <args> -> <outcome>`,
/// `audit <ms> ms <client> <N> failed logins in 10 s (…)`, or `audit <ms> ms others <N>
/// failed logins in 10 s (…) from <M> more addresses`. A caller's name, when known, follows
/// the client as `as <who>`.
impl fmt::Display for AuditRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.client;
        write!(f, "audit {} ms ", self.at_ms)?;
        match &self.event {
            AuditEvent::LoginFailuresElsewhere { .. } => f.write_str("others ")?,
            _ => write!(f, "{a}.{b}.{c}.{d} ")?,
        }
        if let Some(who) = &self.who {
            write!(f, "as {who} ")?;
        }
        match &self.event {
            AuditEvent::Call {
                via,
                tool,
                args,
                outcome,
            } => write!(f, "{via} {tool} {args} -> {outcome}"),
            AuditEvent::LoginFailures(count) => write!(f, "{count}"),
            AuditEvent::Refusals {
                calls,
                last_tool,
                last_outcome,
            } => write!(
                f,
                "{calls} refused calls in {} s (the last: {last_tool} -> {last_outcome})",
                REFUSAL_WINDOW_MS / 1000
            ),
            AuditEvent::LoginFailuresElsewhere {
                count,
                addresses,
                untracked,
            } => {
                let more = if *untracked { " and others" } else { "" };
                write!(f, "{count} from {addresses} more addresses{more}")
            }
        }
    }
}

/// Who made a call, and when: what its record names besides the tool and its arguments.
pub(crate) struct Caller<'a> {
    pub(crate) at_ms: u64,
    pub(crate) client: [u8; 4],
    /// The first bytes of its legacy session's id, when it came in one.
    pub(crate) session_tag: Option<&'a [u8]>,
    /// The name of the token it presented.
    pub(crate) who: &'a str,
    /// The privilege its owner ranks at.
    pub(crate) rank: Privilege,
}

/// A call's record, waiting for its outcome: a call whose result streams ends later, and its
/// line is written then (with the time the call started).
pub(crate) struct PendingAudit {
    sink: AuditSink,
    record: AuditRecord,
}

impl PendingAudit {
    /// The record a call of `def`, a tool that needs `privilege`, starts, if calls of it are
    /// audited: those of tools that need more than observe (raw reads of memory or sectors
    /// included), or are not annotated read-only, when the configuration has a sink. It names
    /// the caller's token and summarises the `arguments` of `params`.
    pub(crate) fn of_call<C>(
        sink: Option<&AuditSink>,
        caller: Caller<'_>,
        def: &ToolDef<C>,
        privilege: Privilege,
        params: ValueRef<'_>,
    ) -> Option<PendingAudit> {
        if def.annotations.read_only && privilege == Privilege::Observe {
            return None;
        }
        let sink = sink?.clone();
        let via = match caller.session_tag {
            Some(tag) => Via::Session(String::from_utf8_lossy(tag).into_owned()),
            None => Via::Stateless,
        };
        let args = params.get("arguments");
        let args = args
            .filter(ValueRef::is_object)
            .unwrap_or(ValueRef::empty_object());
        let mut pending = PendingAudit::new(sink, caller.at_ms, caller.client, via, def.name, args);
        pending.record.who = Some(String::from(caller.who));
        pending.record.rank = caller.rank;
        Some(pending)
    }

    pub(crate) fn new(
        sink: AuditSink,
        at_ms: u64,
        client: [u8; 4],
        via: Via,
        tool: &str,
        args: ValueRef<'_>,
    ) -> Self {
        PendingAudit {
            sink,
            record: AuditRecord {
                at_ms,
                client,
                who: None,
                rank: Privilege::Observe,
                event: AuditEvent::Call {
                    via,
                    tool: String::from(tool),
                    args: summarise_args(args),
                    outcome: Outcome::Ok,
                },
            },
        }
    }

    /// Hands the record, with its outcome, to the sink.
    /// The record, without writing it (a refused call is counted instead, see `refusals`).
    pub(crate) fn into_record(self) -> AuditRecord {
        self.record
    }

    pub(crate) fn finish(mut self, outcome: Outcome) {
        if let AuditEvent::Call { outcome: o, .. } = &mut self.record.event {
            *o = outcome;
        }
        (self.sink)(&self.record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::wire::error_code::ErrorCode;
    use alloc::string::ToString;

    #[test]
    fn lines_name_client_session_tool_and_outcome() {
        let r = AuditRecord {
            at_ms: 1234,
            client: [10, 0, 2, 2],
            who: None,
            rank: Privilege::Observe,
            event: AuditEvent::Call {
                via: Via::Session("3fa9c1d2".into()),
                tool: "fs.write".into(),
                args: "{path=\"/x\"}".into(),
                outcome: Outcome::Failed(ErrorCode::NoSpc),
            },
        };
        assert_eq!(
            r.to_string(),
            "audit 1234 ms 10.0.2.2 session 3fa9c1d2 fs.write {path=\"/x\"} -> E_NOSPC"
        );
        let count = FailureCount {
            failures: 200,
            missing: 1,
            wrong: 19,
            throttled: 180,
        };
        let r = AuditRecord {
            at_ms: 5,
            client: [192, 168, 1, 9],
            who: None,
            rank: Privilege::Observe,
            event: AuditEvent::LoginFailures(count),
        };
        assert_eq!(
            r.to_string(),
            "audit 5 ms 192.168.1.9 200 failed logins in 10 s \
             (wrong token 19, missing token 1, throttled 180)"
        );
        let r = AuditRecord {
            at_ms: 5,
            client: [0; 4],
            who: None,
            rank: Privilege::Observe,
            event: AuditEvent::LoginFailuresElsewhere {
                count,
                addresses: 3,
                untracked: true,
            },
        };
        assert!(
            r.to_string()
                .starts_with("audit 5 ms others 200 failed logins in 10 s")
        );
        assert!(r.to_string().ends_with(" from 3 more addresses and others"));
        // A caller's name, once the server knows one, follows the address.
        let r = AuditRecord {
            at_ms: 7,
            client: [10, 0, 2, 2],
            who: Some("agent".into()),
            rank: Privilege::Observe,
            event: AuditEvent::Call {
                via: Via::Stateless,
                tool: "fs.write".into(),
                args: "{}".into(),
                outcome: Outcome::Ok,
            },
        };
        assert_eq!(
            r.to_string(),
            "audit 7 ms 10.0.2.2 as agent stateless fs.write {} -> ok"
        );
    }
}
