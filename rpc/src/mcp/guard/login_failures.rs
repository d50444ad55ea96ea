//! Failed logins, counted rather than recorded one each: anyone who can reach the port can
//! fail a login, as fast as the network carries requests, and a line per failure would flush
//! the audit trail (and crowd the serial console) in seconds. Failures are counted per client
//! address over a window of [`LOGIN_WINDOW_MS`]; when it closes, each address gets one summary
//! record, a bounded number of them per window, and whatever is not shown by address
//! (addresses past the table, or past the lines a window may write) is still counted, in one
//! more record.

use crate::mcp::guard::audit::{
    AuditEvent, AuditRecord, AuthFailure, FailureCount, LOGIN_WINDOW_MS,
};
use crate::mcp::guard::authority::Privilege;
use alloc::vec::Vec;

/// Addresses counted one by one in a window; failures from more are counted together.
pub const MAX_ADDRESSES: usize = 32;
/// Summaries of single addresses written per window (the addresses with the most failures);
/// the rest are folded into the one record of other addresses. With it, a window writes at
/// most `SHOWN + 1` lines, whoever floods.
pub const SHOWN: usize = 8;

/// One window's failures.
#[derive(Debug, Default)]
pub(crate) struct LoginFailures {
    /// When the open window started; `None` while no failure is counted.
    since: Option<u64>,
    by_address: Vec<([u8; 4], FailureCount)>,
    /// Failures from addresses the table had no room for.
    untracked: FailureCount,
}

impl LoginFailures {
    /// Counts one failure from `client` at `now_ms`. A window that ended before `now_ms` is
    /// closed first (its records returned), so no window counts past its end.
    pub(crate) fn count(
        &mut self,
        client: [u8; 4],
        why: AuthFailure,
        now_ms: u64,
    ) -> Vec<AuditRecord> {
        let closed = self.close_due(now_ms);
        self.since.get_or_insert(now_ms);
        let slot = match self.by_address.iter().position(|(a, _)| *a == client) {
            Some(i) => self.by_address.get_mut(i).map(|(_, c)| c),
            None if self.by_address.len() < MAX_ADDRESSES
                && self.by_address.try_reserve(1).is_ok() =>
            {
                self.by_address.push((client, FailureCount::default()));
                self.by_address.last_mut().map(|(_, c)| c)
            }
            None => None,
        };
        slot.unwrap_or(&mut self.untracked).add(why);
        closed
    }

    /// Whether a window has ended by `now_ms`: the poll loop asks every poll, so this is all
    /// an idle table costs it.
    #[inline]
    pub(crate) fn due(&self, now_ms: u64) -> bool {
        self.since
            .is_some_and(|since| now_ms >= since.saturating_add(LOGIN_WINDOW_MS))
    }

    /// The records of the window, if it has ended by `now_ms` (none otherwise), the window
    /// emptied.
    pub(crate) fn close_due(&mut self, now_ms: u64) -> Vec<AuditRecord> {
        match self.since {
            Some(since) if self.due(now_ms) => self.close(since),
            _ => Vec::new(),
        }
    }

    fn close(&mut self, since: u64) -> Vec<AuditRecord> {
        self.since = None;
        let mut table = core::mem::take(&mut self.by_address);
        // The `SHOWN` addresses with the most failures to the front, most first (selected in
        // place: a few passes over 32 entries).
        for front in 0..SHOWN.min(table.len()) {
            let most =
                (front..table.len()).max_by_key(|&i| table.get(i).map_or(0, |e| e.1.failures));
            if let Some(i) = most {
                table.swap(front, i);
            }
        }
        let untracked = core::mem::take(&mut self.untracked);
        let mut others = untracked;
        let mut folded = 0u32;
        let mut records = Vec::new();
        for (i, (client, count)) in table.into_iter().enumerate() {
            if i < SHOWN && records.try_reserve(1).is_ok() {
                records.push(AuditRecord {
                    at_ms: since,
                    client,
                    who: None,
                    rank: Privilege::Observe,
                    event: AuditEvent::LoginFailures(count),
                });
            } else {
                others.merge(&count);
                folded += 1;
            }
        }
        if others.failures > 0 && records.try_reserve(1).is_ok() {
            records.push(AuditRecord {
                at_ms: since,
                client: [0; 4],
                who: None,
                rank: Privilege::Observe,
                event: AuditEvent::LoginFailuresElsewhere {
                    count: others,
                    addresses: folded,
                    untracked: untracked.failures > 0,
                },
            });
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::{String, ToString};

    const T0: u64 = 1_000_000;

    fn addr(i: usize) -> [u8; 4] {
        [10, 0, (i / 256) as u8, (i % 256) as u8]
    }

    fn lines(records: &[AuditRecord]) -> Vec<String> {
        records.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn one_summary_per_address_when_the_window_closes() {
        let mut f = LoginFailures::default();
        for i in 0..200u64 {
            let why = match i {
                0 => AuthFailure::Missing,
                1..20 => AuthFailure::Wrong,
                _ => AuthFailure::Throttled,
            };
            assert!(f.count(addr(1), why, T0 + i * 10).is_empty());
        }
        assert!(f.count(addr(2), AuthFailure::Wrong, T0 + 5_000).is_empty());
        // Nothing is written while the window is open.
        assert!(f.close_due(T0 + LOGIN_WINDOW_MS - 1).is_empty());
        let closed = f.close_due(T0 + LOGIN_WINDOW_MS);
        assert_eq!(
            lines(&closed),
            [
                "audit 1000000 ms 10.0.0.1 200 failed logins in 10 s \
                 (wrong token 19, missing token 1, throttled 180)",
                "audit 1000000 ms 10.0.0.2 1 failed logins in 10 s \
                 (wrong token 1, missing token 0, throttled 0)",
            ]
        );
        assert!(f.close_due(T0 + 10 * LOGIN_WINDOW_MS).is_empty());
        // The next failure opens a new window; one counted late closes the old one first.
        assert!(f.count(addr(1), AuthFailure::Wrong, T0 + 20_000).is_empty());
        let closed = f.count(addr(1), AuthFailure::Wrong, T0 + 30_000);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].event.failed_logins(), 1);
        assert_eq!(closed[0].at_ms, T0 + 20_000);
    }

    #[test]
    fn many_addresses_are_all_counted_in_a_bounded_number_of_lines() {
        let mut f = LoginFailures::default();
        // 100 addresses, the later ones failing more often; each failing from 1 to 100 times.
        let mut all = 0u32;
        for i in 0..100usize {
            for _ in 0..=i {
                f.count(addr(i), AuthFailure::Wrong, T0 + i as u64);
                all += 1;
            }
        }
        let closed = f.close_due(T0 + LOGIN_WINDOW_MS);
        assert_eq!(closed.len(), SHOWN + 1, "{:#?}", lines(&closed));
        // The addresses shown are those of the table with the most failures: the 33rd and
        // later addresses found the table full, and are counted with the rest.
        let shown: Vec<[u8; 4]> = closed[..SHOWN].iter().map(|r| r.client).collect();
        let want: Vec<[u8; 4]> = (MAX_ADDRESSES - SHOWN..MAX_ADDRESSES)
            .rev()
            .map(addr)
            .collect();
        assert_eq!(shown, want);
        let counted: u32 = closed.iter().map(|r| r.event.failed_logins()).sum();
        assert_eq!(counted, all);
        assert_eq!(
            closed[SHOWN].event,
            AuditEvent::LoginFailuresElsewhere {
                count: FailureCount {
                    failures: all
                        - closed[..SHOWN]
                            .iter()
                            .map(|r| r.event.failed_logins())
                            .sum::<u32>(),
                    missing: 0,
                    wrong: all
                        - closed[..SHOWN]
                            .iter()
                            .map(|r| r.event.failed_logins())
                            .sum::<u32>(),
                    throttled: 0,
                },
                addresses: (MAX_ADDRESSES - SHOWN) as u32,
                untracked: true,
            }
        );
        assert!(closed.iter().all(|r| r.event.is_login_failures()));
        // A window whose addresses all fit says no more than it knows.
        let mut f = LoginFailures::default();
        for i in 0..SHOWN + 2 {
            f.count(addr(i), AuthFailure::Missing, T0);
        }
        let closed = f.close_due(T0 + LOGIN_WINDOW_MS);
        assert_eq!(closed.len(), SHOWN + 1);
        assert!(lines(&closed)[SHOWN].ends_with("from 2 more addresses"));
    }
}
