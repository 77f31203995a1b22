//! The rules that turn lag samples into a shedding decision: toobusy-js's smoothing and its
//! probabilistic rejection, with the fix its users proposed (toobusy-js PR #17): each sample capped
//! at twice the threshold, and the inverse smoothing factor while the lag falls, so that recovery
//! after a stall is fast.

use std::time::Duration;

/// How the smoothed lag recovers when samples fall.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Recovery {
    /// toobusy-js PR #17: samples are capped at `2 * max_lag`, and while the lag falls a new sample
    /// weighs `1 - factor`, so one quiet interval undoes most of a stall.
    Fast,
    /// toobusy-js as released: every sample weighs `factor`, rising or falling, with no cap.
    Original,
}

/// Exponential smoothing of lag samples: `lag = factor * sample + (1 - factor) * lag`, with the
/// recovery mode's cap and falling-lag weight.
///
/// ```
/// use std::time::Duration;
/// use resiliency::too_busy::{Recovery, Smoothing};
///
/// let ms = Duration::from_millis;
/// let max_lag = ms(70);
/// let original = Smoothing::toobusy();
/// let fast = Smoothing::default();
/// assert_eq!(fast.recovery(), Recovery::Fast);
/// // One 300 ms stall after a quiet spell:
/// assert_eq!(original.next(ms(0), ms(300), max_lag), ms(100)); // refuses 43% of calls
/// assert_eq!(fast.next(ms(0), ms(300), max_lag), Duration::from_nanos(46_666_667)); // refuses none
/// ```
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Smoothing {
    factor: f64,
    recovery: Recovery,
}

impl Default for Smoothing {
    /// toobusy-js's factor (1/3) with [`Recovery::Fast`].
    fn default() -> Self {
        Smoothing {
            factor: 1.0 / 3.0,
            recovery: Recovery::Fast,
        }
    }
}

impl Smoothing {
    /// toobusy-js as released: factor 1/3, [`Recovery::Original`].
    pub fn toobusy() -> Self {
        Smoothing {
            factor: 1.0 / 3.0,
            recovery: Recovery::Original,
        }
    }

    /// A smoothing with the weight `factor` of a new (rising) sample, in (0, 1]; `None` outside.
    pub fn new(factor: f64, recovery: Recovery) -> Option<Self> {
        (factor > 0.0 && factor <= 1.0).then_some(Smoothing { factor, recovery })
    }

    /// The weight of a new rising sample.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The recovery mode.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// The smoothed lag after `sample`, from the smoothed lag `current`.
    pub fn next(&self, current: Duration, sample: Duration, max_lag: Duration) -> Duration {
        let current = current.as_secs_f64();
        let mut sample = sample.as_secs_f64();
        let weight = match self.recovery {
            Recovery::Original => self.factor,
            Recovery::Fast => {
                sample = sample.min(2.0 * max_lag.as_secs_f64());
                if sample >= current {
                    self.factor
                } else {
                    1.0 - self.factor
                }
            }
        };
        let next = weight * sample + (1.0 - weight) * current;
        Duration::from_nanos((next * 1e9).round() as u64)
    }

    /// The smoothed lag after the monitor's timer ran `sample` late.
    ///
    /// A late sample is one sample ([`next`]: a lone stall moves the lag by `factor` of it, as in
    /// toobusy-js) unless something says the runtime has stayed behind: the sample before it was
    /// late too (both above `max_lag`), or guarded calls kept running while the timer was overdue
    /// (they first found it `first_seen` overdue). Then every `interval` it stayed overdue counts
    /// as one more sample, as a monitor that could have run on time would have taken (see
    /// [`overdue`]).
    ///
    /// [`next`]: Smoothing::next
    /// [`overdue`]: Smoothing::overdue
    pub(crate) fn sampled(
        &self,
        current: Duration,
        previous: Duration,
        sample: Duration,
        first_seen: Option<Duration>,
        interval: Duration,
        max_lag: Duration,
    ) -> Duration {
        let behind = if previous > max_lag && sample > max_lag {
            Duration::ZERO
        } else {
            first_seen.map_or(sample, |seen| seen.min(sample))
        };
        self.repeated(
            current,
            Self::counted(behind, sample, interval),
            sample,
            max_lag,
        )
    }

    /// The smoothed lag to act on while the monitor's timer is overdue (due and not yet run), from
    /// the last smoothed lag `current`: guarded calls first found it `first_seen` overdue, and it is
    /// `overdue` now.
    ///
    /// Under overload the monitor's timer waits in the run queue behind the work it should
    /// measure, so a monitor that only sampled would see overload seconds late. The overdue time
    /// before the first look is one sample, as a stall is (the runtime ran nothing then, so
    /// nothing says it has more work than it can do); every `interval` that passes after it while
    /// calls keep running and the timer still cannot run counts as one more sample of `overdue`,
    /// as a monitor that could run would have taken. Samples go through the same cap and weights
    /// as [`next`]; the result is never below `current`, and at most 32 samples are counted.
    ///
    /// [`next`]: Smoothing::next
    pub(crate) fn overdue(
        &self,
        current: Duration,
        first_seen: Duration,
        overdue: Duration,
        interval: Duration,
        max_lag: Duration,
    ) -> Duration {
        let samples = Self::counted(first_seen, overdue, interval);
        self.repeated(current, samples, overdue, max_lag)
            .max(current)
    }

    /// How many samples a timer overdue by `overdue` counts for, first seen `first_seen` overdue:
    /// one, plus one per `interval` since, at most 32.
    fn counted(first_seen: Duration, overdue: Duration, interval: Duration) -> u32 {
        let since = overdue.saturating_sub(first_seen);
        1 + (since.as_nanos() / interval.as_nanos().max(1)).min(31) as u32
    }

    /// `samples` times [`next`](Smoothing::next) with `sample`.
    fn repeated(
        &self,
        current: Duration,
        samples: u32,
        sample: Duration,
        max_lag: Duration,
    ) -> Duration {
        (0..samples).fold(current, |lag, _| self.next(lag, sample, max_lag))
    }
}

/// The share of calls to refuse at smoothed lag `lag`: 0 up to `max_lag`, rising linearly to 1 at
/// `2 * max_lag` (toobusy-js's rule).
pub(crate) fn shed_probability(lag: Duration, max_lag: Duration) -> f64 {
    if max_lag.is_zero() {
        return if lag.is_zero() { 0.0 } else { 1.0 };
    }
    let over = (lag.as_secs_f64() - max_lag.as_secs_f64()) / max_lag.as_secs_f64();
    over.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn run(smoothing: Smoothing, samples: &[u64]) -> Vec<f64> {
        let mut lag = Duration::ZERO;
        samples
            .iter()
            .map(|&s| {
                lag = smoothing.next(lag, ms(s), ms(70));
                (lag.as_secs_f64() * 1e4).round() / 10.0
            })
            .collect()
    }

    #[test]
    fn sampled_counts_a_lone_stall_once_and_a_runtime_behind_per_interval() {
        let fast = Smoothing::default();
        // A lone 300 ms stall after quiet samples: one capped sample.
        let lone = fast.sampled(ms(0), ms(1), ms(300), None, ms(10), ms(70));
        assert_eq!(lone.as_micros(), 46_666);
        // Calls kept running from 20 ms on while the timer waited: work queued behind it.
        assert!(fast.sampled(ms(0), ms(1), ms(300), Some(ms(20)), ms(10), ms(70)) > ms(139));
        // A second late sample in a row: the runtime stays behind.
        assert!(fast.sampled(ms(47), ms(300), ms(300), None, ms(10), ms(70)) > ms(139));
    }

    #[test]
    fn overdue_counts_one_sample_then_one_per_interval() {
        let fast = Smoothing::default();
        // First seen 300 ms overdue, after a stall: one sample, capped at 140 ms.
        let first = fast.overdue(ms(0), ms(300), ms(300), ms(10), ms(70));
        assert_eq!(first.as_micros(), 46_666);
        // Overdue for 40 ms more while calls ran: four more samples.
        let later = fast.overdue(ms(0), ms(300), ms(340), ms(10), ms(70));
        assert_eq!(later.as_millis(), 121);
    }

    #[test]
    fn original_rule_follows_toobusy_js() {
        // lag = 1/3 * sample + 2/3 * lag, rising and falling alike, no cap.
        assert_eq!(
            run(Smoothing::toobusy(), &[300, 0, 0, 0]),
            [100.0, 66.7, 44.4, 29.6]
        );
        assert_eq!(run(Smoothing::toobusy(), &[900]), [300.0]);
    }

    #[test]
    fn fast_rule_caps_samples_at_twice_max_lag() {
        // 300 ms is capped at 140 ms: 140 / 3.
        assert_eq!(run(Smoothing::default(), &[300]), [46.7]);
        // A long stall cannot push the lag past 2 * max_lag.
        let long = run(Smoothing::default(), &[10_000; 40]);
        assert!(long.iter().all(|&l| l <= 140.0), "{long:?}");
        assert!(*long.last().unwrap() > 139.9);
    }

    #[test]
    fn fast_rule_recovers_with_the_inverse_factor() {
        // Climb to 140 ms, then quiet samples: each falling step keeps only 1/3 of the lag.
        let mut samples = vec![140; 60];
        samples.extend([0, 0, 0]);
        let lags = run(Smoothing::default(), &samples);
        assert_eq!(&lags[60..], [46.7, 15.6, 5.2]);
        let original = run(Smoothing::toobusy(), &samples);
        assert_eq!(&original[60..], [93.3, 62.2, 41.5]);
    }

    #[test]
    fn overdue_timer_counts_every_interval_it_stays_overdue() {
        let fast = Smoothing::default();
        let at = |current, first_seen, overdue, interval| {
            let lag = fast.overdue(
                ms(current),
                ms(first_seen),
                ms(overdue),
                ms(interval),
                ms(70),
            );
            (lag.as_secs_f64() * 1e4).round() / 10.0
        };
        // First seen: one sample, however late (a stall), and a falling one never lowers the lag.
        assert_eq!(at(0, 30, 30, 10), 10.0);
        assert_eq!(at(0, 300, 300, 10), 46.7);
        assert_eq!(at(60, 30, 30, 10), 60.0);
        // Seen overdue from early on (work queued behind it): one sample per interval since.
        assert_eq!(at(0, 0, 100, 100), 55.6);
        assert_eq!(at(0, 1, 100, 20), 86.8);
        assert_eq!(at(0, 5, 399, 100), 112.3);
        // However long: at most the cap, reached after 32 samples.
        assert_eq!(at(0, 0, 1_000_000, 1), 140.0);
        // The original rule has no cap: the samples are the overdue time itself.
        let original = Smoothing::toobusy().overdue(ms(0), ms(0), ms(300), ms(100), ms(70));
        assert_eq!(original.as_millis(), 240);
    }

    #[test]
    fn a_late_sample_counts_per_interval_only_after_another_late_one() {
        let fast = Smoothing::default();
        let sampled = |current, previous, sample, seen: Option<u64>| {
            fast.sampled(
                ms(current),
                ms(previous),
                ms(sample),
                seen.map(ms),
                ms(10),
                ms(70),
            )
        };
        // After an on-time sample, no call saw it overdue: one sample (a lone stall).
        assert_eq!(sampled(0, 1, 300, None), fast.next(ms(0), ms(300), ms(70)));
        // Calls saw it overdue only at the end (the backlog of a stall): one sample.
        assert_eq!(
            sampled(0, 1, 300, Some(300)),
            fast.next(ms(0), ms(300), ms(70))
        );
        // Calls saw it overdue from 100 ms on: 21 samples.
        assert!(sampled(0, 1, 300, Some(100)) > ms(139));
        // After a late one: the runtime stays behind, 31 intervals of 300 ms: the cap.
        assert!(sampled(47, 300, 300, None) > ms(139));
        // Late but not past max_lag: one sample; a quiet sample lowers the lag.
        assert_eq!(sampled(0, 60, 60, None), ms(20));
        assert_eq!(
            sampled(140, 300, 2, Some(1)),
            fast.next(ms(140), ms(2), ms(70))
        );
    }

    #[test]
    fn refusal_share_is_linear_between_max_lag_and_twice_it() {
        assert_eq!(shed_probability(ms(0), ms(70)), 0.0);
        assert_eq!(shed_probability(ms(70), ms(70)), 0.0);
        assert!((shed_probability(ms(84), ms(70)) - 0.2).abs() < 1e-9);
        assert_eq!(shed_probability(ms(140), ms(70)), 1.0);
        assert_eq!(shed_probability(ms(1000), ms(70)), 1.0);
        assert_eq!(shed_probability(ms(1), Duration::ZERO), 1.0);
    }

    #[test]
    fn factor_must_lie_in_zero_one() {
        assert!(Smoothing::new(0.0, Recovery::Fast).is_none());
        assert!(Smoothing::new(1.5, Recovery::Fast).is_none());
        assert!(Smoothing::new(f64::NAN, Recovery::Fast).is_none());
        assert_eq!(
            Smoothing::new(0.5, Recovery::Original).unwrap().factor(),
            0.5
        );
    }
}
