//! The latency histogram of a learner's window: buckets a sixteenth of a power of two wide,
//! so that a percentile read from it is within about 3% of the exact one.

/// Latencies by bucket: [`SUBS`] buckets per power of two from 1 µs, to about 1,100 s.
const SUBS: usize = 16;
const FIRST_OCTAVE: u32 = 10;
const OCTAVES: usize = 31;
pub(super) const BUCKETS: usize = 1 + OCTAVES * SUBS;

/// The bucket of a latency in ns (0: under 1 µs).
pub(super) fn bucket(ns: u64) -> usize {
    if ns < 1 << FIRST_OCTAVE {
        return 0;
    }
    let octave = (63 - ns.leading_zeros()).min(FIRST_OCTAVE + OCTAVES as u32 - 1);
    let sub = ((ns >> (octave - 4)) as usize & (SUBS - 1)).min(SUBS - 1);
    1 + (octave - FIRST_OCTAVE) as usize * SUBS + sub
}

/// The latencies bucket `i` holds, in ns: `[from, to)`.
fn bucket_range(i: usize) -> (f64, f64) {
    if i == 0 {
        return (0.0, (1u64 << FIRST_OCTAVE) as f64);
    }
    let octave = FIRST_OCTAVE + ((i - 1) / SUBS) as u32;
    let sub = ((i - 1) % SUBS) as u64;
    let unit = (1u64 << (octave - 4)) as f64;
    (
        (SUBS as u64 + sub) as f64 * unit,
        (SUBS as u64 + sub + 1) as f64 * unit,
    )
}

/// The latency of rank `rank` (1 for the lowest; a fraction rounds up, and ranks out of range
/// are the lowest or highest) among those counted in `counts`, interpolated within its bucket.
pub(super) fn at_rank(counts: &[u64], rank: f64) -> f64 {
    let total: u64 = counts.iter().sum();
    let rank = rank.ceil().clamp(1.0, total.max(1) as f64);
    let mut below = 0u64;
    for (i, &n) in counts.iter().enumerate() {
        if n > 0 && (below + n) as f64 >= rank {
            let (from, to) = bucket_range(i);
            let within = (rank - below as f64 - 0.5) / n as f64;
            return from + within * (to - from);
        }
        below += n;
    }
    0.0
}

/// The variance of the latencies counted in `counts` around `mean`, each taken at its bucket's
/// middle.
pub(super) fn variance(counts: &[u64], mean: f64) -> f64 {
    let (mut sum, mut n) = (0.0, 0u64);
    for (i, &k) in counts.iter().enumerate() {
        if k > 0 {
            let (from, to) = bucket_range(i);
            let d = (from + to) / 2.0 - mean;
            sum += k as f64 * d * d;
            n += k;
        }
    }
    sum / n.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_what_they_say_and_quantiles_are_close() {
        for ns in [
            0u64,
            1,
            1023,
            1024,
            5_000,
            123_456,
            5_000_000,
            400_000_000,
            u64::MAX,
        ] {
            let (from, to) = bucket_range(bucket(ns));
            let capped = ns >= 1 << (FIRST_OCTAVE + OCTAVES as u32);
            assert!(
                capped || (from <= ns as f64 && (ns as f64) < to),
                "{ns}: {from}..{to}"
            );
        }
        let mut counts = vec![0u64; BUCKETS];
        for i in 1..=1000u64 {
            counts[bucket(i * 1_000_000)] += 1;
        }
        let p10 = at_rank(&counts, 100.0);
        assert!((p10 / 100e6 - 1.0).abs() < 0.04, "{p10}");
        assert_eq!(at_rank(&counts, -3.0), at_rank(&counts, 1.0));
        assert_eq!(at_rank(&counts, 5000.0), at_rank(&counts, 1000.0));
        let p50 = at_rank(&counts, 500.0);
        assert!((p50 / 500e6 - 1.0).abs() < 0.04, "{p50}");
    }
}
