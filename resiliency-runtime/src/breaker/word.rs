//! The breaker's state word, the one bit layout of the breaker: phase, forcing, probes in flight,
//! half-open successes, re-open streak, the two settings a closed call must see (a timeout
//! applies; the rate rule), and the epoch (the low bits of the count of state changes). And
//! [`Permit`], what admission hands a call: the word that admitted a closed call, or a probe's
//! full epoch.

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
/// One probe in flight, and the field that counts them.
pub(super) const PROBE: u64 = 1 << 4;
pub(super) const PROBES: u64 = 0xFFFF << 4;
/// One half-open success, and the field that counts them.
pub(super) const SUCCESS: u64 = 1 << 20;
pub(super) const SUCCESSES: u64 = 0xFFFF << 20;
/// One consecutive re-open, and the field that counts them (for `backoff`).
pub(super) const STREAK: u64 = 1 << 36;
pub(super) const STREAKS: u64 = 0xFF << 36;
/// A time applies (`timeout`, `half_open_timeout` or `slow_call_duration` is set): a closed call
/// without it never reads the clock nor the settings of time.
pub(super) const TIMED: u64 = 1 << 44;
/// The rate rule is in force: a closed call's success is recorded in its window.
pub(super) const RATE: u64 = 1 << 45;
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

/// Admission to run one call, handed back with its outcome.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Permit {
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
    /// Whether no time limit can apply to the call (a closed call whose word says none applies,
    /// or a bypassed one): known without reading a setting.
    #[inline(always)]
    pub(crate) fn untimed(self) -> bool {
        match self {
            Permit::Closed(word) => word & TIMED == 0,
            Permit::Bypass => true,
            Permit::Probe(_) | Permit::Unchecked => false,
        }
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
