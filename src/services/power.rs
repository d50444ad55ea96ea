//! A reset or power-off that a tool has promised: the tool answers first, and the module's
//! `poll` carries the action out once its deadline has passed, so the answer has left the
//! machine before the machine goes away.

use crate::hil::platform::Power;
use core::fmt;

/// Delay between scheduling and acting unless the caller asks for another: enough for the
/// response to be written and the TCP segment to leave (the rig and a LAN answer in well
/// under a millisecond; a lost segment's first retransmission would need more, which is why
/// callers may ask for up to a minute).
pub const DEFAULT_DELAY_MS: u64 = 250;
/// Shortest delay allowed: the answer must get out first.
pub const MIN_DELAY_MS: u64 = 100;
/// Longest delay allowed.
pub const MAX_DELAY_MS: u64 = 60_000;

/// What the machine will do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Reset,
    Poweroff,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Reset => "reset",
            Action::Poweroff => "poweroff",
        }
    }
}

/// A scheduled action and when it is due (monotonic milliseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub action: Action,
    pub at_ms: u64,
    /// The door that asked (`system.reset`, the shell's `reboot`): the flight record says it,
    /// so the next boot can.
    pub by: &'static str,
}

/// A second action was asked for while one is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyScheduled {
    pub pending: Pending,
    /// Milliseconds until it happens, from the time of the refused request.
    pub in_ms: u64,
}

impl fmt::Display for AlreadyScheduled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a {} is already scheduled in {} ms",
            self.pending.action.as_str(),
            self.in_ms
        )
    }
}

/// Schedules `action` `delay_ms` after `now_ms` (clamped to the allowed range). The first
/// scheduled action stands: a second request while one is pending is refused (the tools answer
/// `E_BUSY`), so two clients cannot push a reset further and further away, nor turn a reset
/// into a power-off.
pub fn schedule(
    slot: &mut Option<Pending>,
    action: Action,
    by: &'static str,
    now_ms: u64,
    delay_ms: u64,
) -> Result<Pending, AlreadyScheduled> {
    if let Some(p) = slot {
        return Err(AlreadyScheduled {
            pending: *p,
            in_ms: p.at_ms.saturating_sub(now_ms),
        });
    }
    let delay = delay_ms.clamp(MIN_DELAY_MS, MAX_DELAY_MS);
    let p = Pending {
        action,
        at_ms: now_ms.saturating_add(delay),
        by,
    };
    *slot = Some(p);
    Ok(p)
}

/// Takes the pending action if its deadline has passed.
pub fn take_due(slot: &mut Option<Pending>, now_ms: u64) -> Option<Action> {
    match slot {
        Some(p) if now_ms >= p.at_ms => slot.take().map(|p| p.action),
        _ => None,
    }
}

/// Carries out a due action on the platform; called by the module's `poll` after the server
/// has written its responses. Returns the action taken (on the Indy a reset never returns).
pub fn run_due(slot: &mut Option<Pending>, power: &dyn Power, now_ms: u64) -> Option<Action> {
    let action = take_due(slot, now_ms)?;
    match action {
        Action::Reset => power.reset(),
        Action::Poweroff => power.poweroff(),
    }
    Some(action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_only_after_the_deadline_and_only_once() {
        let mut slot = None;
        let p = schedule(&mut slot, Action::Reset, "test", 1000, DEFAULT_DELAY_MS).unwrap();
        assert_eq!(p.at_ms, 1250);
        assert_eq!(take_due(&mut slot, 1000), None);
        assert_eq!(take_due(&mut slot, 1249), None);
        assert_eq!(take_due(&mut slot, 1250), Some(Action::Reset));
        assert_eq!(take_due(&mut slot, 5000), None);
    }

    #[test]
    fn the_delay_is_clamped() {
        let mut slot = None;
        assert_eq!(
            schedule(&mut slot, Action::Poweroff, "test", 10, 0)
                .unwrap()
                .at_ms,
            10 + MIN_DELAY_MS
        );
        let mut slot = None;
        assert_eq!(
            schedule(&mut slot, Action::Reset, "test", 10, u64::MAX)
                .unwrap()
                .at_ms,
            10 + MAX_DELAY_MS
        );
    }

    #[test]
    fn the_first_scheduled_action_stands() {
        let mut slot = None;
        schedule(&mut slot, Action::Reset, "test", 0, 200).unwrap();
        let e = schedule(&mut slot, Action::Poweroff, "test", 50, 100).unwrap_err();
        assert_eq!(e.to_string(), "a reset is already scheduled in 150 ms");
        assert_eq!(take_due(&mut slot, 200), Some(Action::Reset));
    }

    #[test]
    fn run_due_calls_the_platform() {
        #[derive(Default)]
        struct Counts {
            resets: core::cell::Cell<u32>,
            poweroffs: core::cell::Cell<u32>,
        }
        impl Power for Counts {
            fn reset(&self) {
                self.resets.set(self.resets.get() + 1);
            }
            fn poweroff(&self) {
                self.poweroffs.set(self.poweroffs.get() + 1);
            }
        }
        let power = Counts::default();
        let mut slot = None;
        schedule(&mut slot, Action::Reset, "test", 0, 100).unwrap();
        assert_eq!(run_due(&mut slot, &power, 99), None);
        assert_eq!(power.resets.get(), 0);
        assert_eq!(run_due(&mut slot, &power, 100), Some(Action::Reset));
        assert_eq!(power.resets.get(), 1);
        assert_eq!(run_due(&mut slot, &power, 200), None);
        assert_eq!(power.resets.get(), 1);
        schedule(&mut slot, Action::Poweroff, "test", 300, 100).unwrap();
        assert_eq!(run_due(&mut slot, &power, 400), Some(Action::Poweroff));
        assert_eq!((power.resets.get(), power.poweroffs.get()), (1, 1));
    }
}
