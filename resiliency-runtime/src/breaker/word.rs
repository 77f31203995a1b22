//! The breaker's state word, the one bit layout of the breaker: phase, forcing, the two settings
//! a closed call must see (a timeout applies; the rate rule), probes in flight, half-open
//! successes, re-open streak, and the epoch (the low bits of the count of state changes). And
//! [`Permit`], what admission hands a call: the word that admitted a closed call, or a probe's
//! full epoch, in one word whose low bits say which.
//!
//! The phase, the forcing and the two settings share the low byte: a closed call's admission,
//! the test that no time applies to it and the test that its success needs no recording are each
//! one test of an 8-bit mask.

use super::breaker::State;

/// Closed, open or half-open.
pub(super) const PHASE: u64 = 0b11;
pub(super) const CLOSED: u64 = 0;
pub(super) const OPEN: u64 = 1;
pub(super) const HALF_OPEN: u64 = 2;
/// Forced open, forced closed, or bypassed.
pub(super) const FORCED: u64 = 0b11 << 2;
pub(super) const FORCED_OPEN: u64 = 1 << 2;
pub(super) const FORCED_CLOSED: u64 = 2 << 2;
/// `RESILIENCY_DISABLED`: set once at creation, kept by every change, so that admission needs no
/// second check.
pub(super) const BYPASS: u64 = 3 << 2;
/// A time applies (`timeout`, `half_open_timeout` or `slow_call_duration` is set): a closed call
/// without it never reads the clock nor the settings of time.
pub(super) const TIMED: u64 = 1 << 4;
/// The rate rule is in force: a closed call's success is recorded in its window.
pub(super) const RATE: u64 = 1 << 5;
/// One probe in flight, and the field that counts them.
pub(super) const PROBE: u64 = 1 << 6;
pub(super) const PROBES: u64 = 0xFFFF << 6;
/// One half-open success, and the field that counts them.
pub(super) const SUCCESS: u64 = 1 << 22;
pub(super) const SUCCESSES: u64 = 0xFFFF << 22;
/// One consecutive re-open, and the field that counts them (for `backoff`).
pub(super) const STREAK: u64 = 1 << 38;
pub(super) const STREAKS: u64 = 0xFF << 38;
/// The settings kept in the word, set by `Breaker::hot_settings`.
pub(super) const FLAGS: u64 = TIMED | RATE;
const EPOCH_SHIFT: u32 = 46;
/// One state change: the epoch is the word's top bits.
pub(super) const EPOCH: u64 = 1 << EPOCH_SHIFT;
/// The bits of the word's epoch.
pub(super) const EPOCH_BITS: u32 = 64 - EPOCH_SHIFT;

/// The word's epoch: the low bits of the count of state changes.
pub(super) fn epoch(word: u64) -> u32 {
    (word >> EPOCH_SHIFT) as u32
}

/// The full epoch whose low bits are `e`, given `floor`, a full epoch read at or before the
/// moment `e` was: the first at or after `floor`. Exact while fewer than 2^18 state changes
/// separate the two reads, which are a few instructions apart (and the published count lags the
/// word by at most a change per thread: see `Breaker`'s `epochs`).
pub(super) fn lift(floor: u64, e: u32) -> u64 {
    floor + (u64::from(e).wrapping_sub(floor) & ((1 << EPOCH_BITS) - 1))
}

/// The word of a fresh phase: counters cleared, forcing, the streak and the flags kept, the epoch
/// moved on.
pub(super) fn enter(word: u64, phase: u64) -> u64 {
    (word & (FORCED | STREAKS | FLAGS)) | phase | ((word & !(EPOCH - 1)).wrapping_add(EPOCH))
}

/// The state a word says (an open time that passed is still open).
pub(super) fn state_of(word: u64) -> State {
    match (word & FORCED, word & PHASE) {
        (BYPASS, _) => State::Closed,
        (FORCED_OPEN, _) => State::ForcedOpen,
        (FORCED_CLOSED, _) => State::ForcedClosed,
        (_, OPEN) => State::Open,
        (_, HALF_OPEN) => State::HalfOpen,
        _ => State::Closed,
    }
}

/// Admission to run one call, handed back with its outcome: one word, whose phase and forcing
/// bits say which kind of call it admits (see [`Admitted`]). A closed call's permit is the word
/// that admitted it, flags included, so that the two questions its every call asks (does a time
/// apply? is a success recorded?) are one test each.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) struct Permit(u64);

/// What a [`Permit`] admits.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// Closed: the state word that admitted the call. Its epoch says which window the outcome
    /// counts in, its flags whether a timeout applies ([`TIMED`]) and whether a success is
    /// recorded ([`RATE`]).
    Closed(u64),
    /// A half-open probe, admitted in this full epoch: its slot comes back when it ends, however
    /// it ends.
    Probe(u64),
    /// Forced closed: runs (bounded by `timeout`), counts nothing.
    Unchecked,
    /// `RESILIENCY_DISABLED`: runs untouched.
    Bypass,
}

impl Permit {
    /// A closed call, admitted by `word` (closed, not forced).
    #[inline(always)]
    pub(crate) fn closed(word: u64) -> Self {
        debug_assert_eq!(word & (PHASE | FORCED), CLOSED);
        Permit(word)
    }

    /// A half-open probe of the round whose full epoch is `full`.
    pub(crate) fn probe(full: u64) -> Self {
        Permit((full << 4) | HALF_OPEN)
    }

    /// A forced-closed call.
    pub(crate) const UNCHECKED: Self = Permit(FORCED_CLOSED);

    /// A bypassed call (`RESILIENCY_DISABLED`).
    pub(crate) const BYPASS: Self = Permit(BYPASS);

    /// What the permit admits.
    pub(crate) fn admitted(self) -> Admitted {
        match self.0 & (PHASE | FORCED) {
            CLOSED => Admitted::Closed(self.0),
            HALF_OPEN => Admitted::Probe(self.0 >> 4),
            FORCED_CLOSED => Admitted::Unchecked,
            _ => Admitted::Bypass,
        }
    }

    /// Whether the permit admits a closed call no time limit applies to: known without reading
    /// a setting, in one test.
    #[inline(always)]
    pub(crate) fn untimed(self) -> bool {
        self.0 & (PHASE | FORCED | TIMED) == 0
    }

    /// Whether the permit admits a closed call whose success is recorded only in the meter (the
    /// count rule): one test.
    #[inline(always)]
    pub(crate) fn success_uncounted(self) -> bool {
        self.0 & (PHASE | FORCED | RATE) == 0
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.admitted().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_epoch_is_lifted_from_its_low_bits_and_an_earlier_full_epoch() {
        let turn = 1u64 << EPOCH_BITS;
        for floor in [0, 5, turn - 1, turn, 7 * turn + 3] {
            for ahead in [0, 1, 2, turn / 2, turn - 1] {
                let full = floor + ahead;
                assert_eq!(lift(floor, (full % turn) as u32), full, "{floor} + {ahead}");
            }
        }
    }

    #[test]
    fn a_permit_says_what_it_admits() {
        let closed = CLOSED | TIMED | RATE | (5 * EPOCH);
        assert_eq!(Permit::closed(closed).admitted(), Admitted::Closed(closed));
        for full in [0, 1, 1 << 40, (1 << 60) - 1] {
            assert_eq!(Permit::probe(full).admitted(), Admitted::Probe(full));
        }
        assert_eq!(Permit::UNCHECKED.admitted(), Admitted::Unchecked);
        assert_eq!(Permit::BYPASS.admitted(), Admitted::Bypass);
        // Only a closed permit is untimed or has its success uncounted, each by its own flag.
        assert!(Permit::closed(CLOSED | RATE).untimed());
        assert!(!Permit::closed(CLOSED | TIMED).untimed());
        assert!(Permit::closed(CLOSED | TIMED).success_uncounted());
        assert!(!Permit::closed(CLOSED | RATE).success_uncounted());
        for other in [Permit::probe(3), Permit::UNCHECKED, Permit::BYPASS] {
            assert!(!other.untimed() && !other.success_uncounted(), "{other:?}");
        }
    }

    #[test]
    fn the_fields_do_not_overlap() {
        let fields = [
            PHASE,
            FORCED,
            PROBES,
            SUCCESSES,
            STREAKS,
            TIMED,
            RATE,
            !(EPOCH - 1),
        ];
        for (i, a) in fields.iter().enumerate() {
            for b in &fields[i + 1..] {
                assert_eq!(a & b, 0, "{a:#x} & {b:#x}");
            }
        }
        assert_eq!(fields.iter().fold(0, |all, f| all | f), u64::MAX);
    }

    #[test]
    fn entering_a_phase_keeps_forcing_streak_and_flags_and_moves_the_epoch() {
        let word = OPEN | FORCED_OPEN | (3 * PROBE) | (2 * SUCCESS) | STREAK | RATE | (7 * EPOCH);
        let next = enter(word, HALF_OPEN);
        assert_eq!(next & PHASE, HALF_OPEN);
        assert_eq!(next & (PROBES | SUCCESSES), 0);
        assert_eq!(
            next & (FORCED | STREAKS | FLAGS),
            FORCED_OPEN | STREAK | RATE
        );
        assert_eq!(epoch(next), 8);
        // The epoch wraps within its bits.
        assert_eq!(epoch(enter(!(EPOCH - 1), CLOSED)), 0);
    }
}
