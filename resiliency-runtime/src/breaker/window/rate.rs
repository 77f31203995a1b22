//! The rate rule's window: calls and errors in time buckets, one stripe of buckets per thread
//! (threads alive with the lowest numbers have one each, others share one), successes placed in batches
//! without a clock read.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{self, Acquire, Relaxed, Release};
use std::sync::OnceLock;

const BUCKETS: u64 = 10;
const TAG_SHIFT: u32 = 42;
const COUNT_MAX: u64 = (1 << TAG_SHIFT) - 1;
const TAG_MASK: u64 = (1 << 22) - 1;

/// Calls and errors in `BUCKETS` time buckets that together span the window. Each thread writes to
/// its own stripe, so two threads completing calls at once do not fight over one cache line: the
/// threads numbered below `stripe_count()` (`crate::thread_number`: the lowest numbers free, so
/// the first threads alive at once) have a stripe each, of which they are the only writers of
/// successes; every other thread writes to one more stripe, shared.
pub(crate) struct RateWindow {
    bucket_ns: AtomicU64,
    stripes: OnceLock<Box<[Stripe]>>,
}

/// A stripe's buckets. Each bucket is two words, calls and errors, each the bucket's index (low 22
/// bits) above a 42-bit count: 4.4 * 10^12 calls per bucket and stripe, which no traffic reaches
/// within one bucket. A bucket that did would take no more calls, and no more errors either, so
/// that its rate stays the rate of the calls it holds. An error is added to the calls word before
/// the errors word, and the window reads the errors word first, so a bucket never shows an error
/// without its call.
///
/// A 22-bit tag alone would let a bucket written 10 * 2^22 buckets ago pass for a current one, so
/// each stripe also keeps the latest bucket index it wrote: a stripe idle for a whole window is
/// skipped, and the first write after such an idle clears its stale buckets. Every word a reader
/// trusts is thus less than two windows old, far from any wrap of the tag.
///
/// Successes are counted without a clock read: the `successes` beyond those `taken` (pending,
/// since bucket `since`) are attributed to the buckets in a batch (every `BATCH` successes, and
/// whenever the window is read), spread evenly over the buckets from `since` to the moment of
/// the flush. `successes` only grows, and on a stripe of its own a thread adds to it with a load
/// and a store, no locked add (it is its only writer); a flush takes what is pending by moving
/// `taken` up to it, so that two flushes never take the same successes and none is lost.
#[repr(align(128))]
struct Stripe {
    buckets: [Bucket; BUCKETS as usize],
    latest: AtomicU64,
    successes: AtomicU64,
    taken: AtomicU64,
    since: AtomicU64,
}

#[derive(Default)]
struct Bucket {
    calls: AtomicU64,
    errors: AtomicU64,
}

impl Bucket {
    fn clear(&self) {
        self.calls.store(0, Relaxed);
        self.errors.store(0, Relaxed);
    }
}

/// Adds `n` to the count of `word` for the bucket tagged `tag` (a word of another tag counts as
/// 0); false when the count is full, which leaves it as it is.
fn bump(word: &AtomicU64, tag: u64, n: u64, ordering: Ordering) -> bool {
    let mut current = word.load(Relaxed);
    loop {
        let old = if current >> TAG_SHIFT == tag {
            current & COUNT_MAX
        } else {
            0
        };
        if old + n > COUNT_MAX {
            return false;
        }
        match word.compare_exchange_weak(current, tag << TAG_SHIFT | (old + n), ordering, Relaxed) {
            Ok(_) => return true,
            Err(seen) => current = seen,
        }
    }
}

/// The count of `word` for the bucket tagged `tag`.
fn count(word: u64, tag: u64) -> u64 {
    if word >> TAG_SHIFT == tag {
        word & COUNT_MAX
    } else {
        0
    }
}

/// The breaker's clock, read by the rate window only at the edges of a batch of successes.
pub(crate) trait Clock {
    /// Ns since the breaker's base, plus one.
    fn now(&self) -> u64;
}

impl<F: Fn() -> u64> Clock for F {
    fn now(&self) -> u64 {
        self()
    }
}

/// Successes per thread between two clock reads under the rate rule.
const BATCH: u64 = 64;

/// Where thread `number` records among `stripes` stripes: its own (the index, `true`) for the
/// threads numbered below `stripes - 1`, the last one, shared, for every other thread.
#[inline(always)]
fn place(number: usize, stripes: usize) -> (usize, bool) {
    let shared = stripes - 1;
    if number < shared {
        (number, true)
    } else {
        (shared, false)
    }
}

/// Stripes of their own per rate window (one more is shared): decided once per process, and never
/// below 4, because `available_parallelism` of a thread pinned to one CPU (thread-per-core
/// runtimes) says 1.
fn stripe_count() -> usize {
    static STRIPES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *STRIPES.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(4, 16)
            .next_power_of_two()
    })
}

impl RateWindow {
    pub(super) fn new(window_ns: u64) -> Self {
        RateWindow {
            bucket_ns: AtomicU64::new((window_ns / BUCKETS).max(1)),
            stripes: OnceLock::new(),
        }
    }

    /// A new window length (the counts are cleared with it).
    pub(super) fn resize(&self, window_ns: u64) {
        self.bucket_ns.store((window_ns / BUCKETS).max(1), Relaxed);
    }

    fn bucket_ns(&self) -> u64 {
        self.bucket_ns.load(Relaxed)
    }

    /// Makes the stripes now (the breaker is built under the rate rule, or changes to it), so
    /// that the threads' first calls do not.
    pub(super) fn allocate(&self) {
        self.stripes();
    }

    /// The stripes, made on first use.
    #[inline(always)]
    fn stripes(&self) -> &[Stripe] {
        self.stripes.get_or_init(|| {
            (0..=stripe_count())
                .map(|_| Stripe {
                    buckets: Default::default(),
                    latest: AtomicU64::new(0),
                    successes: AtomicU64::new(0),
                    taken: AtomicU64::new(0),
                    since: AtomicU64::new(0),
                })
                .collect()
        })
    }

    /// This thread's stripe, and whether it is its own (else the one others share).
    #[inline(always)]
    fn stripe(&self) -> (&Stripe, bool) {
        let stripes = self.stripes();
        let (index, own) = place(crate::thread_number::this_thread(), stripes.len());
        (&stripes[index], own)
    }

    /// Records one success; reads the clock (`clock.now()`, ns since the breaker's base) only
    /// when this thread starts or completes a batch, out of line.
    #[inline(always)]
    pub(crate) fn record_success(&self, clock: &impl Clock) {
        let (stripe, own) = self.stripe();
        self.success_on(stripe, own, clock);
    }

    /// One success on `stripe`, this thread's `own` (its only writer of successes) or shared.
    #[inline(always)]
    fn success_on(&self, stripe: &Stripe, own: bool, clock: &impl Clock) {
        let successes = if own {
            // Its only writer: no locked add.
            let successes = stripe.successes.load(Relaxed) + 1;
            stripe.successes.store(successes, Relaxed);
            successes
        } else {
            stripe.successes.fetch_add(1, Relaxed) + 1
        };
        // Pending with this one: a flush may have taken it already (0), it may start a batch
        // (1), or complete one (`BATCH`), each out of line, found in one test.
        let pending = successes.saturating_sub(stripe.taken.load(Relaxed));
        if pending.wrapping_sub(2) >= BATCH - 2 {
            self.batch_edge(stripe, pending, clock);
        }
    }

    /// A batch starts (`pending` is 1, or 0: taken by a flush at once) or is complete: where its
    /// successes begin, or where they go.
    #[cold]
    #[inline(never)]
    fn batch_edge(&self, stripe: &Stripe, pending: u64, clock: &impl Clock) {
        let index = clock.now() / self.bucket_ns();
        if pending <= 1 {
            stripe.since.store(index, Relaxed);
        } else {
            self.flush(stripe, index);
        }
    }

    /// Records one call at `now`, exactly (a slow success, counted as a call with its clock).
    pub(crate) fn record_call(&self, now: u64) {
        self.add(self.stripe().0, now / self.bucket_ns(), 1, 0);
    }

    /// Records one error at `now`, exactly.
    pub(crate) fn record_error(&self, now: u64) {
        self.add(self.stripe().0, now / self.bucket_ns(), 1, 1);
    }

    /// Attributes a stripe's pending successes, spread evenly from their first bucket to `index`.
    fn flush(&self, stripe: &Stripe, index: u64) {
        let successes = stripe.successes.load(Relaxed);
        let taken = stripe.taken.fetch_max(successes, Relaxed);
        let Some(n) = successes.checked_sub(taken).filter(|&n| n > 0) else {
            return;
        };
        let since = stripe.since.load(Relaxed).min(index);
        let span = index - since + 1;
        let (share, extra) = (n / span, n % span);
        for i in since.max((index + 1).saturating_sub(BUCKETS))..=index {
            // The remainder goes to the newest buckets.
            let calls = share + u64::from(index - i < extra);
            if calls > 0 {
                self.add(stripe, i, calls, 0);
            }
        }
    }

    /// Adds `calls` calls, `errors` of them failed, to bucket `index` of `stripe`.
    fn add(&self, stripe: &Stripe, index: u64, calls: u64, errors: u64) {
        let tag = index & TAG_MASK;
        let latest = stripe.latest.load(Relaxed);
        if latest < index {
            if index >= latest + BUCKETS {
                // Idle for a whole window: what the buckets hold is history, even a word whose
                // 22-bit tag happens to match. (A thread sharing this stripe that writes in this
                // very instant may lose that one count.)
                for bucket in &stripe.buckets {
                    bucket.clear();
                }
            }
            stripe.latest.fetch_max(index, Relaxed);
        }
        let bucket = &stripe.buckets[(index % BUCKETS) as usize];
        // Release: a reader that sees the errors sees their calls.
        if bump(&bucket.calls, tag, calls, Relaxed) && errors > 0 {
            bump(&bucket.errors, tag, errors, Release);
        }
    }

    /// (calls, errors) in the buckets that make up the window ending at `now`, after attributing
    /// every thread's pending successes.
    pub(crate) fn totals(&self, now: u64) -> (u64, u64) {
        let index = now / self.bucket_ns();
        let stripes = self.stripes();
        for stripe in stripes {
            self.flush(stripe, index);
        }
        let first = (index + 1).saturating_sub(BUCKETS);
        let (mut calls, mut errors) = (0, 0);
        for stripe in stripes {
            if stripe.latest.load(Relaxed) < first {
                continue;
            }
            for i in first..=index {
                let (bucket, tag) = (&stripe.buckets[(i % BUCKETS) as usize], i & TAG_MASK);
                errors += count(bucket.errors.load(Acquire), tag);
                calls += count(bucket.calls.load(Relaxed), tag);
            }
        }
        (calls, errors)
    }

    /// Records one slow call at `now` (a window of slow calls counts them as its errors).
    pub(crate) fn record_slow(&self, now: u64) {
        self.add(self.stripe().0, now / self.bucket_ns(), 0, 1);
    }

    /// Forgets every call: done when the breaker opens or is reset, so that it closes with a clean
    /// window.
    pub(crate) fn clear(&self) {
        for stripe in self.stripes.get().into_iter().flatten() {
            for bucket in &stripe.buckets {
                bucket.clear();
            }
            stripe.latest.store(0, Relaxed);
            // Pending successes are dropped by taking them, leaving the count to its writer.
            stripe
                .taken
                .fetch_max(stripe.successes.load(Relaxed), Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const MS: u64 = 1_000_000;

    #[test]
    fn successes_in_one_bucket_are_exact() {
        let w = RateWindow::new(10 * MS); // buckets of 1 ms
        for _ in 0..5 {
            w.record_success(&|| 3 * MS + 1);
        }
        w.record_error(3 * MS + 2);
        assert_eq!(w.totals(3 * MS + 3), (6, 1));
    }

    #[test]
    fn a_batch_is_spread_over_the_buckets_it_spans() {
        let w = RateWindow::new(10 * MS);
        for _ in 0..4 {
            w.record_success(&|| MS); // the batch starts in bucket 1
        }
        // Read in bucket 4: 4 successes over buckets 1..=4, one each.
        assert_eq!(w.totals(4 * MS), (4, 0));
        // Bucket 1 leaves the window at bucket 11: 3 remain.
        assert_eq!(w.totals(11 * MS), (3, 0));
    }

    #[test]
    fn a_full_batch_flushes_itself() {
        let w = RateWindow::new(10 * MS);
        let reads = Cell::new(0);
        for _ in 0..BATCH {
            w.record_success(&|| {
                reads.set(reads.get() + 1);
                MS
            });
        }
        assert_eq!(
            reads.get(),
            2,
            "one read to start the batch, one to flush it"
        );
        let (stripe, _) = w.stripe();
        assert_eq!(stripe.successes.load(Relaxed), BATCH);
        assert_eq!(stripe.taken.load(Relaxed), BATCH, "all taken");
        assert_eq!(w.totals(MS), (BATCH, 0));
    }

    #[test]
    fn successes_flushed_while_they_are_recorded_are_each_counted_once() {
        // More writers than stripes of their own, so that the shared stripe is written too, and
        // readers flushing all along: every success is counted, none twice.
        let w = RateWindow::new(10 * MS);
        let writers = stripe_count() + 2;
        let per_writer = 20_000;
        std::thread::scope(|scope| {
            for _ in 0..writers {
                scope.spawn(|| {
                    for _ in 0..per_writer {
                        w.record_success(&|| MS);
                    }
                });
            }
            for _ in 0..2 {
                scope.spawn(|| {
                    for _ in 0..2_000 {
                        std::hint::black_box(w.totals(MS));
                    }
                });
            }
        });
        assert_eq!(w.totals(MS), (writers as u64 * per_writer, 0));
    }

    #[test]
    fn the_first_threads_have_a_stripe_each_and_later_ones_share_the_last() {
        assert_eq!(place(0, 5), (0, true));
        assert_eq!(place(3, 5), (3, true));
        assert_eq!(place(4, 5), (4, false));
        assert_eq!(place(9, 5), (4, false));
    }

    #[test]
    fn successes_on_the_shared_stripe_count_and_batch_as_on_an_own_one() {
        let w = RateWindow::new(10 * MS);
        let shared = w.stripes().last().expect("a shared stripe");
        let reads = Cell::new(0);
        for _ in 0..BATCH + 3 {
            w.success_on(shared, false, &|| {
                reads.set(reads.get() + 1);
                MS
            });
        }
        // One read to start a batch, one to flush it, one to start the next.
        assert_eq!(reads.get(), 3);
        assert_eq!(shared.successes.load(Relaxed), BATCH + 3);
        assert_eq!(w.totals(MS), (BATCH + 3, 0));
    }

    #[test]
    fn a_batch_counts_from_the_bucket_it_started_in() {
        let w = RateWindow::new(10 * MS);
        for _ in 0..4 {
            w.record_success(&|| 5 * MS); // the batch starts in bucket 5
        }
        // Read in bucket 6: two each in buckets 5 and 6, both still in the window at 14.
        assert_eq!(w.totals(6 * MS), (4, 0));
        assert_eq!(w.totals(14 * MS), (4, 0));
        assert_eq!(w.totals(15 * MS), (2, 0));
    }

    #[test]
    fn calls_and_slow_calls_recorded_one_by_one_count_in_their_bucket() {
        let w = RateWindow::new(10 * MS);
        w.record_call(3 * MS);
        w.record_call(5 * MS);
        w.record_slow(5 * MS);
        assert_eq!(w.totals(5 * MS), (2, 1));
        // Bucket 3 leaves the window at 13.
        assert_eq!(w.totals(13 * MS), (1, 1));
        assert_eq!(w.totals(15 * MS), (0, 0));
    }

    #[test]
    fn clearing_drops_pending_successes_and_later_ones_count() {
        let w = RateWindow::new(10 * MS);
        for _ in 0..5 {
            w.record_success(&|| MS);
        }
        w.clear();
        assert_eq!(w.totals(MS), (0, 0));
        for _ in 0..3 {
            w.record_success(&|| MS);
        }
        assert_eq!(w.totals(MS), (3, 0));
    }

    #[test]
    fn a_batch_older_than_the_window_counts_only_its_share_inside() {
        let w = RateWindow::new(10 * MS);
        for _ in 0..20 {
            w.record_success(&|| 0);
        }
        // 20 successes spread over buckets 0..=19: the window at 19 holds buckets 10..=19.
        assert_eq!(w.totals(19 * MS), (10, 0));
    }

    #[test]
    fn a_bucket_counts_far_beyond_millions_of_calls() {
        let w = RateWindow::new(10 * MS);
        w.add(w.stripe().0, 3, 3_000_000_000, 1_000_000_000);
        for _ in 0..BATCH * 2 {
            w.record_success(&|| 3 * MS);
        }
        w.record_error(3 * MS);
        assert_eq!(
            w.totals(3 * MS),
            (3_000_000_000 + 2 * BATCH + 1, 1_000_000_001)
        );
    }

    #[test]
    fn a_full_bucket_takes_no_more_errors_than_calls() {
        let w = RateWindow::new(10 * MS);
        w.add(w.stripe().0, 3, COUNT_MAX - 1, 0);
        w.record_error(3 * MS);
        // Full: the next error counts neither as a call nor as an error.
        w.record_error(3 * MS);
        assert_eq!(w.totals(3 * MS), (COUNT_MAX, 1));
    }
}
