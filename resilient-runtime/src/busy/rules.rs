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
/// use resilient_runtime::busy::{Recovery, Smoothing};
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
}

/// The share of calls to refuse at smoothed lag `lag`: 0 up to `max_lag`, rising linearly to 1 at
/// `2 * max_lag` (toobusy-js's rule).
///
/// ```
/// use std::time::Duration;
/// use resilient_runtime::busy::shed_probability;
///
/// let ms = Duration::from_millis;
/// assert_eq!(shed_probability(ms(70), ms(70)), 0.0);
/// assert!((shed_probability(ms(105), ms(70)) - 0.5).abs() < 1e-9);
/// assert_eq!(shed_probability(ms(200), ms(70)), 1.0);
/// ```
pub fn shed_probability(lag: Duration, max_lag: Duration) -> f64 {
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
