//! Refused calls, counted rather than recorded one each. A call its gates refuse (outside the
//! caller's role or policy, over a limit, with bad arguments) changed nothing, and any token
//! can send them as fast as its rate allows: a line each would flush the administrator's
//! records out of the audit ring and the console. They are counted per owner (a token at its
//! rank) over a window of [`REFUSAL_WINDOW_MS`]; when it closes, each owner gets one summary
//! naming the last refused call, at most [`MAX_OWNERS`] a window, and the refusals of owners
//! past the table are still counted, in one more.

use crate::mcp::guard::audit::{AuditEvent, AuditRecord, REFUSAL_WINDOW_MS};
use crate::mcp::guard::authority::{Owner, Privilege};
use crate::mcp::guard::outcome::Outcome;
use alloc::string::String;
use alloc::vec::Vec;

/// Owners counted one by one in a window.
pub const MAX_OWNERS: usize = 16;

/// One owner's refusals in the open window: its last record stands for them all.
#[derive(Debug)]
struct Tally {
    owner: Option<Owner>,
    calls: u32,
    last: AuditRecord,
}

#[derive(Debug, Default)]
pub(crate) struct Refusals {
    /// When the open window started; `None` while nothing is counted.
    since: Option<u64>,
    by_owner: Vec<Tally>,
    /// Refusals of owners the table had no room for, and the last of them.
    untracked: Option<Tally>,
}

impl Refusals {
    /// Counts the refused call `record` (its outcome set) of `owner`. A window that ended
    /// before `now_ms` is closed first (its records returned).
    pub(crate) fn count(
        &mut self,
        owner: Owner,
        mut record: AuditRecord,
        outcome: Outcome,
        now_ms: u64,
    ) -> Vec<AuditRecord> {
        let closed = self.close_due(now_ms);
        self.since.get_or_insert(now_ms);
        if let AuditEvent::Call { outcome: o, .. } = &mut record.event {
            *o = outcome;
        }
        let found = self.by_owner.iter().position(|t| t.owner == Some(owner));
        let tally = match found {
            Some(i) => self.by_owner.get_mut(i),
            None if self.by_owner.len() < MAX_OWNERS && self.by_owner.try_reserve(1).is_ok() => {
                self.by_owner.push(Tally {
                    owner: Some(owner),
                    calls: 0,
                    last: record.clone(),
                });
                self.by_owner.last_mut()
            }
            None => None,
        };
        let tally = match tally {
            Some(t) => t,
            None => self.untracked.get_or_insert(Tally {
                owner: None,
                calls: 0,
                last: record.clone(),
            }),
        };
        tally.calls = tally.calls.saturating_add(1);
        tally.last = record;
        closed
    }

    /// Whether a window has ended by `now_ms`.
    #[inline]
    pub(crate) fn due(&self, now_ms: u64) -> bool {
        self.since
            .is_some_and(|since| now_ms >= since.saturating_add(REFUSAL_WINDOW_MS))
    }

    /// The summaries of the window, if it has ended by `now_ms`, the window emptied.
    pub(crate) fn close_due(&mut self, now_ms: u64) -> Vec<AuditRecord> {
        let Some(since) = self.since.filter(|_| self.due(now_ms)) else {
            return Vec::new();
        };
        self.since = None;
        let tallies = core::mem::take(&mut self.by_owner);
        let mut records = Vec::new();
        for t in tallies.into_iter().chain(self.untracked.take()) {
            if records.try_reserve(1).is_err() {
                break;
            }
            records.push(summary(since, t));
        }
        records
    }
}

/// The record that stands for a tally's calls: at the window's start, from the last call's
/// client, as its token; refusals of untracked owners are named as nobody's and observe's.
fn summary(since: u64, t: Tally) -> AuditRecord {
    let (last_tool, last_outcome) = match t.last.event {
        AuditEvent::Call { tool, outcome, .. } => (tool, outcome),
        _ => (String::new(), Outcome::Error),
    };
    let tracked = t.owner.is_some();
    AuditRecord {
        at_ms: since,
        client: if tracked { t.last.client } else { [0; 4] },
        who: if tracked {
            t.last.who
        } else {
            Some(String::from("others"))
        },
        rank: t.owner.map_or(Privilege::Observe, |o| o.rank),
        event: AuditEvent::Refusals {
            calls: t.calls,
            last_tool,
            last_outcome,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::guard::audit::Via;
    use crate::mcp::guard::authority::Holder;
    use alloc::string::ToString;

    const T0: u64 = 1_000_000;

    fn owner(i: u8) -> Owner {
        Owner {
            holder: Holder::Token(i),
            rank: Privilege::Observe,
        }
    }

    fn call(who: &str, tool: &str) -> AuditRecord {
        AuditRecord {
            at_ms: T0,
            client: [127, 0, 0, 1],
            who: Some(who.into()),
            rank: Privilege::Observe,
            event: AuditEvent::Call {
                via: Via::Stateless,
                tool: tool.into(),
                args: "{}".into(),
                outcome: Outcome::Ok,
            },
        }
    }

    #[test]
    fn a_flood_of_refusals_is_one_line_per_owner_a_window() {
        let mut r = Refusals::default();
        for i in 0..320u64 {
            let c = call("watcher", "system.reset");
            assert!(
                r.count(owner(1), c, Outcome::RefusedByPolicy, T0 + i)
                    .is_empty()
            );
        }
        let c = call("ci", "fs.write");
        assert!(
            r.count(
                owner(2),
                c,
                Outcome::Failed(crate::mcp::ErrorCode::Busy),
                T0 + 5
            )
            .is_empty()
        );
        assert!(r.close_due(T0 + REFUSAL_WINDOW_MS - 1).is_empty());
        let lines: Vec<String> = r
            .close_due(T0 + REFUSAL_WINDOW_MS)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "audit 1000000 ms 127.0.0.1 as watcher 320 refused calls in 10 s \
                 (the last: system.reset -> refused by policy)",
                "audit 1000000 ms 127.0.0.1 as ci 1 refused calls in 10 s \
                 (the last: fs.write -> E_BUSY)",
            ]
        );
        assert!(!r.due(T0 + 100 * REFUSAL_WINDOW_MS));
    }

    #[test]
    fn owners_past_the_table_are_counted_together() {
        let mut r = Refusals::default();
        for i in 0..40u8 {
            r.count(owner(i), call("t", "x"), Outcome::RefusedByPolicy, T0);
        }
        let closed = r.close_due(T0 + REFUSAL_WINDOW_MS);
        assert_eq!(closed.len(), MAX_OWNERS + 1);
        let last = closed.last().unwrap();
        assert_eq!(last.who.as_deref(), Some("others"));
        let counted: u32 = closed
            .iter()
            .map(|c| match c.event {
                AuditEvent::Refusals { calls, .. } => calls,
                _ => 0,
            })
            .sum();
        assert_eq!(counted, 40);
    }
}
