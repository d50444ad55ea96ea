//! Shares: how a pool counted in units (sessions, tasks, calls, waits, streams) is divided
//! between the clients that fill it, so that no lesser holder exhausts it for a greater one
//! and no client of a holder exhausts it for its sibling.
//!
//! Every unit is claimed by an *owner* (a token, or an address where no token is asked for) at
//! a *rank* (its privilege, 0 the lowest) for one of the owner's *clients* (a connection or a
//! session). [`Share::admits`] applies three rules to a new claim, given the claims held:
//! - **tiers**: each rank above the lowest keeps [`Share::reserve`] units that lower ranks
//!   cannot take, so whatever the lower ranks hold, a higher one finds room;
//! - **per owner**: one owner holds at most `per_owner` units;
//! - **max-min within an owner**: a client holding less than its equal part of its owner's
//!   share (`per_owner` over the owner's clients, counting itself) is admitted even when its
//!   owner is at `per_owner` (within the tier's room, and until the owner holds twice
//!   `per_owner`), so a quiet client always fits while a noisy sibling floods.
//!
//! The same rules judge rates ([`fair_rate`]): per owner, with a quiet client's requests let
//! through a full window up to twice the limit.

/// One unit held, or wanted: by whom, at which rank, for which of its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim<O> {
    pub owner: O,
    pub rank: u8,
    pub client: u64,
}

/// Ranks the tiers know (observe, operate, administer): ranks at or above the last are the
/// top tier.
pub const RANKS: u8 = 3;

/// A pool's size and one owner's part of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    pub total: usize,
    pub per_owner: usize,
}

/// Which rule refused a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Short {
    /// Holders of this rank and below hold all the room their tier has.
    Tier,
    /// The owner holds its share, and this client at least its equal part of it.
    Owner,
}

impl Share {
    /// Units each rank above the lowest keeps from the ranks below it: a quarter of the pool,
    /// at least one.
    pub fn reserve(&self) -> usize {
        (self.total / 4).max(1)
    }

    /// Units holders of `rank` and below may hold together. A pool of fewer units than there
    /// are ranks (a console waiter on the smallest heaps) has nothing to reserve: every rank
    /// may hold all of it.
    pub fn room(&self, rank: u8) -> usize {
        if self.total < usize::from(RANKS) {
            return self.total;
        }
        let above = usize::from(RANKS - 1 - rank.min(RANKS - 1));
        self.total.saturating_sub(self.reserve() * above)
    }

    /// Whether `want` may take a unit while `held` are held (see the module doc).
    pub fn admits<O: Copy + Eq>(
        &self,
        want: Claim<O>,
        held: impl Iterator<Item = Claim<O>> + Clone,
    ) -> Result<(), Short> {
        let tier = held.clone().filter(|h| h.rank <= want.rank).count();
        if tier >= self.room(want.rank) {
            return Err(Short::Tier);
        }
        let own = held.clone().filter(|h| h.owner == want.owner);
        let owned = own.clone().count();
        if owned < self.per_owner {
            return Ok(());
        }
        let mine = own.clone().filter(|h| h.client == want.client).count();
        if owned < self.per_owner.saturating_mul(2)
            && below_equal_part(mine, self.per_owner, clients(own, want.client))
        {
            Ok(())
        } else {
            Err(Short::Owner)
        }
    }
}

/// Whether a client holding `mine` of a share of `per_owner` split between `clients` clients
/// is below its equal part.
fn below_equal_part(mine: usize, per_owner: usize, clients: usize) -> bool {
    mine.saturating_mul(clients.max(1)) < per_owner
}

/// The distinct clients among `own`, with `client` counted whether or not it holds any.
fn clients<O>(own: impl Iterator<Item = Claim<O>> + Clone, client: u64) -> usize {
    let mut n = 1;
    for (i, c) in own.clone().enumerate() {
        if c.client != client && !own.clone().take(i).any(|p| p.client == c.client) {
            n += 1;
        }
    }
    n
}

/// Whether one more request of `client` fits an owner's rolling window that holds the clients
/// of `window` (one entry a request) with `limit` a window: below the limit always; at or past
/// it only for a client below its equal part of the limit, and never past twice the limit.
pub fn fair_rate(window: impl Iterator<Item = u64> + Clone, client: u64, limit: usize) -> bool {
    let n = window.clone().count();
    if n < limit {
        return true;
    }
    if n >= limit.saturating_mul(2) {
        return false;
    }
    let mine = window.clone().filter(|&c| c == client).count();
    let claims = window.map(|c| Claim {
        owner: (),
        rank: 0,
        client: c,
    });
    below_equal_part(mine, limit, clients(claims, client))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn claim(owner: u8, rank: u8, client: u64) -> Claim<u8> {
        Claim {
            owner,
            rank,
            client,
        }
    }

    /// Takes units for `want` as long as they are admitted; how many it got.
    fn fill(share: Share, held: &mut Vec<Claim<u8>>, want: Claim<u8>) -> usize {
        let mut n = 0;
        while share.admits(want, held.iter().copied()).is_ok() {
            held.push(want);
            n += 1;
            assert!(n <= share.total * 2, "unbounded");
        }
        n
    }

    #[test]
    fn each_rank_above_the_lowest_keeps_a_reserve() {
        let s = Share {
            total: 8,
            per_owner: 8,
        };
        assert_eq!((s.room(0), s.room(1), s.room(2)), (4, 6, 8));
        let tiny = Share {
            total: 3,
            per_owner: 3,
        };
        assert_eq!((tiny.room(0), tiny.room(1), tiny.room(2)), (1, 2, 3));
        let one = Share {
            total: 1,
            per_owner: 1,
        };
        assert_eq!((one.room(0), one.room(2)), (1, 1));
        // Whatever observers hold, then operators, the administrator still finds its reserve.
        let mut held = Vec::new();
        assert_eq!(fill(s, &mut held, claim(1, 0, 1)), 4);
        assert_eq!(fill(s, &mut held, claim(2, 1, 2)), 2);
        assert_eq!(
            s.admits(claim(3, 0, 3), held.iter().copied()),
            Err(Short::Tier)
        );
        assert_eq!(fill(s, &mut held, claim(0, 2, 9)), 2);
    }

    #[test]
    fn one_owner_holds_its_share_and_a_quiet_client_still_fits() {
        let s = Share {
            total: 16,
            per_owner: 4,
        };
        let mut held = Vec::new();
        // A noisy client takes its owner's whole share, and no more.
        assert_eq!(fill(s, &mut held, claim(5, 2, 1)), 4);
        // A sibling of the same owner holding nothing is below its equal part (4 / 2).
        assert_eq!(fill(s, &mut held, claim(5, 2, 2)), 2);
        // A third is below its part (4 / 3) with one; then the owner holds twice its share,
        // and a fourth gets nothing.
        assert_eq!(fill(s, &mut held, claim(5, 2, 3)), 2);
        assert_eq!(fill(s, &mut held, claim(5, 2, 4)), 0);
        // The noisy one is over its part: still refused.
        assert_eq!(
            s.admits(claim(5, 2, 1), held.iter().copied()),
            Err(Short::Owner)
        );
        // The owner passed its share by the share again at most.
        assert_eq!(held.len(), 2 * s.per_owner);
        // Another owner is untouched.
        assert_eq!(fill(s, &mut held, claim(6, 2, 1)), 4);
    }

    #[test]
    fn a_quiet_client_never_passes_its_tier() {
        let s = Share {
            total: 4,
            per_owner: 2,
        };
        let mut held = Vec::new();
        assert_eq!(fill(s, &mut held, claim(1, 0, 1)), 2);
        // room(0) is 2: the sibling's equal part does not reach into the reserve.
        assert_eq!(
            s.admits(claim(1, 0, 2), held.iter().copied()),
            Err(Short::Tier)
        );
    }

    #[test]
    fn a_full_window_lets_a_quiet_client_through_up_to_twice_the_limit() {
        let noisy = [1u64; 20];
        assert!(fair_rate(noisy[..19].iter().copied(), 1, 20));
        assert!(!fair_rate(noisy.iter().copied(), 1, 20));
        assert!(fair_rate(noisy.iter().copied(), 2, 20));
        let mut w: Vec<u64> = noisy.to_vec();
        let mut quiet = 0;
        while fair_rate(w.iter().copied(), 2, 20) {
            w.push(2);
            quiet += 1;
        }
        // The quiet client gets its equal part (10 of 20); nobody passes 40.
        assert_eq!(quiet, 10);
        let mut many: Vec<u64> = (0..39).collect();
        assert!(fair_rate(many.iter().copied(), 99, 20));
        many.push(39);
        assert!(!fair_rate(many.iter().copied(), 99, 20));
    }
}
