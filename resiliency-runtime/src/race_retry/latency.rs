//! Recent latencies of one function, for `after = "pNN"`: a log-linear histogram (8 sub-buckets
//! per power of two of microseconds, each spanning at most 12.5% of its values; a percentile is
//! interpolated by rank within its bucket) in two generations. Recording is one relaxed `fetch_add`; every `RECOMPUTE` samples the recorder
//! computes the percentile from both generations and publishes it, and every `GENERATION` samples
//! the older generation is cleared, so the percentile follows the last `GENERATION` to
//! `2 * GENERATION` samples.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

const SUB: usize = 8;
const GROUPS: usize = 32;
const BUCKETS: usize = SUB * GROUPS;
/// Samples per generation.
const GENERATION: u64 = 1024;
/// Samples between two recomputations of the percentile.
const RECOMPUTE: u64 = 16;
/// Samples needed before the percentile is trusted.
pub(crate) const MIN_SAMPLES: u64 = 32;

/// On cache lines of its own: recording calls write it, while every call reads the settings of
/// the policy around it.
#[repr(align(128))]
pub(crate) struct Latencies {
    counts: [[AtomicU32; BUCKETS]; 2],
    /// Samples recorded so far; `samples / GENERATION % 2` is the generation being filled.
    samples: AtomicU64,
    /// The published percentile in ns; 0 while there are fewer than `MIN_SAMPLES` samples.
    percentile_ns: AtomicU64,
}

impl std::fmt::Debug for Latencies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Latencies")
            .field("samples", &self.samples.load(Relaxed))
            .field("percentile", &self.percentile())
            .finish()
    }
}

/// The bucket of a latency in microseconds.
fn bucket(us: u64) -> usize {
    if us < SUB as u64 {
        return us as usize;
    }
    let power = 63 - us.leading_zeros() as usize; // us >= 2^power
    let shift = power - 3; // SUB = 2^3 sub-buckets between 2^power and 2^(power + 1)
    let sub = ((us >> shift) as usize) & (SUB - 1);
    ((power - 2) * SUB + sub).min(BUCKETS - 1)
}

/// The upper bound of a bucket, in microseconds.
fn upper(bucket: usize) -> u64 {
    if bucket < SUB {
        return bucket as u64 + 1;
    }
    let power = bucket / SUB + 2;
    let sub = (bucket % SUB) as u64;
    let shift = power - 3;
    ((SUB as u64 + sub + 1) << shift).max(1)
}

impl Latencies {
    pub(crate) const fn new() -> Self {
        Latencies {
            counts: [
                [const { AtomicU32::new(0) }; BUCKETS],
                [const { AtomicU32::new(0) }; BUCKETS],
            ],
            samples: AtomicU64::new(0),
            percentile_ns: AtomicU64::new(0),
        }
    }

    /// Records one latency; `quantile` in (0, 1) is the percentile to publish.
    pub(crate) fn record(&self, latency: Duration, quantile: f64) {
        let n = self.samples.fetch_add(1, Relaxed) + 1;
        let generation = ((n - 1) / GENERATION % 2) as usize;
        let us = latency.as_micros().min(u64::MAX as u128) as u64;
        self.counts[generation][bucket(us)].fetch_add(1, Relaxed);
        if n.is_multiple_of(GENERATION) {
            // The other generation is filled next: clear it (the one just filled stays).
            for count in &self.counts[1 - generation] {
                count.store(0, Relaxed);
            }
        }
        if n >= MIN_SAMPLES && n.is_multiple_of(RECOMPUTE) {
            self.recompute(quantile);
        }
    }

    fn recompute(&self, quantile: f64) {
        let mut totals = [0u64; BUCKETS];
        for generation in &self.counts {
            for (total, count) in totals.iter_mut().zip(generation) {
                *total += u64::from(count.load(Relaxed));
            }
        }
        let all: u64 = totals.iter().sum();
        if all == 0 {
            return;
        }
        let rank = ((quantile * all as f64).ceil() as u64).clamp(1, all);
        let mut seen = 0;
        for (i, &total) in totals.iter().enumerate() {
            if seen + total >= rank {
                // Linear within the bucket, by rank: a bucket spans up to 12.5% of its values.
                let lower = if i == 0 { 0 } else { upper(i - 1) } as f64;
                let within = (rank - seen) as f64 / total as f64;
                let us = lower + (upper(i) as f64 - lower) * within;
                self.percentile_ns
                    .store(((us * 1000.0) as u64).max(1), Relaxed);
                return;
            }
            seen += total;
        }
    }

    /// The published percentile, once enough samples were seen.
    pub(crate) fn percentile(&self) -> Option<Duration> {
        match self.percentile_ns.load(Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// Samples recorded so far.
    pub(crate) fn samples(&self) -> u64 {
        self.samples.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_their_values_within_an_eighth() {
        for us in [
            0,
            1,
            7,
            8,
            9,
            15,
            16,
            100,
            999,
            1000,
            12_345,
            1_000_000,
            10_000_000_000,
        ] {
            let b = bucket(us);
            assert!(
                upper(b) > us || b == BUCKETS - 1,
                "{us} -> bucket {b} up to {}",
                upper(b)
            );
            if b > 0 && b < BUCKETS - 1 {
                assert!(
                    upper(b - 1) <= us,
                    "{us} -> bucket {b}, previous up to {}",
                    upper(b - 1)
                );
                assert!(upper(b) as f64 <= (us as f64 * 1.126).max(us as f64 + 1.0));
            }
        }
    }

    #[test]
    fn percentile_of_a_known_spread() {
        let l = Latencies::new();
        // 96 fast (10 ms), 4 slow (1 s), twice over.
        for _ in 0..2 {
            for i in 0..100 {
                let ms = if i % 25 == 0 { 1000 } else { 10 };
                l.record(Duration::from_millis(ms), 0.95);
            }
        }
        let p95 = l.percentile().expect("enough samples");
        assert!(
            p95 >= Duration::from_micros(9_000) && p95 <= Duration::from_micros(11_300),
            "{p95:?}"
        );
        // 95 fast, 5 slow: the 99th percentile is slow.
        let l99 = Latencies::new();
        for _ in 0..2 {
            for i in 0..100 {
                let ms = if i % 20 == 0 { 1000 } else { 10 };
                l99.record(Duration::from_millis(ms), 0.99);
            }
        }
        assert!(l99.percentile().unwrap() >= Duration::from_millis(900));
    }

    #[test]
    fn too_few_samples_publish_nothing() {
        let l = Latencies::new();
        for _ in 0..MIN_SAMPLES - 1 {
            l.record(Duration::from_millis(5), 0.5);
        }
        assert_eq!(l.percentile(), None);
    }

    #[test]
    fn old_generations_are_forgotten() {
        let l = Latencies::new();
        for _ in 0..GENERATION * 2 {
            l.record(Duration::from_secs(1), 0.5);
        }
        for _ in 0..GENERATION * 2 {
            l.record(Duration::from_millis(1), 0.5);
        }
        assert!(l.percentile().unwrap() <= Duration::from_micros(1130));
    }
}
