//! Cheap random numbers for the policies (whether `#[too_busy]` sheds a call, how long a race backs
//! off): a thread-local xorshift, so that no call takes a lock. Not of cryptographic quality, and
//! not meant to be.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

thread_local! {
    /// This thread's xorshift state; 0 until its first draw.
    static STATE: Cell<u64> = const { Cell::new(0) };
}

/// Where threads' seeds come from: each thread takes the next (then mixes it), so that no two
/// threads draw the same sequence.
static SEEDS: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

/// A uniform `u64` (xorshift64: every value but 0).
pub(crate) fn next_u64() -> u64 {
    STATE.with(|state| {
        let mut x = state.get();
        if x == 0 {
            // A distinct odd seed per thread.
            x = SEEDS
                .fetch_add(0x9E37_79B9_7F4A_7C15, Relaxed)
                .wrapping_mul(0xBF58_476D_1CE4_E5B9)
                | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x
    })
}

/// A uniform number in [0, 1).
pub(crate) fn random() -> f64 {
    (next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Seeds this thread's generator (0 means a fresh seed at the next draw), for tests that need
/// one sequence.
#[cfg(test)]
pub(crate) fn seed(seed: u64) {
    STATE.with(|state| state.set(seed));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_sequence_and_draws_are_in_range() {
        seed(42);
        let first: Vec<u64> = (0..4).map(|_| next_u64()).collect();
        seed(42);
        let again: Vec<u64> = (0..4).map(|_| next_u64()).collect();
        assert_eq!(first, again);
        seed(0);
        let draws: Vec<f64> = (0..10_000).map(|_| random()).collect();
        assert!(draws.iter().all(|r| (0.0..1.0).contains(r)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((0.45..0.55).contains(&mean), "{mean}");
    }

    #[test]
    fn threads_draw_different_sequences() {
        let here = next_u64();
        let there = std::thread::spawn(next_u64).join().unwrap();
        assert_ne!(here, there);
    }
}
