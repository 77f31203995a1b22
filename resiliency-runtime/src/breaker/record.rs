//! Outcomes: how a call admitted with a [`Permit`] ended, recorded in the window or in the
//! half-open round that admitted it, and counted by the breaker's meter.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::breaker::{nanos, Breaker};
use super::builder::Rule;
use super::events::OpenCause;
use super::window::RateWindow;
use super::word::*;

/// How a call ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    /// An error that counts, or a body (or `count_if`) that panicked.
    Error,
    /// An error that `count_if` did not count: neither a failure nor a success.
    Ignored,
    /// Past its time limit: counts as an error.
    TimedOut,
    /// A success slower than `slow_call_duration`: counts as an error, its result returned.
    Slow,
}

impl Breaker {
    /// Records how the call admitted with `permit` ended. The common case, a closed call's
    /// success, writes nothing under the count rule and one batch slot under the rate rule.
    // `#[inline(always)]` here (a count-rule success is one test) and `#[inline]` on
    // `record_counted`: the closed success is most of what a closed breaker adds to a call, and
    // when LLVM leaves it out of line (across crates, or as too large once the rate rule's
    // success is inlined into it), a closed call under the count rule costs 7 more instructions
    // (breaker benchmark, callgrind).
    #[inline(always)]
    pub(crate) fn record(&self, permit: Permit, outcome: Outcome) {
        if let (Outcome::Success, true) = (outcome, permit.success_uncounted()) {
            self.meter.success();
            return;
        }
        self.record_counted(permit, outcome);
    }

    /// Records an outcome that counts: a closed call's success under the rate rule, here, and
    /// every other outcome, out of line.
    #[inline]
    fn record_counted(&self, permit: Permit, outcome: Outcome) {
        if let (Outcome::Success, Admitted::Closed(word)) = (outcome, permit.admitted()) {
            self.rate_success(epoch(word));
            self.meter.success();
            return;
        }
        self.record_other(permit, outcome);
    }

    /// Records an error that counts, whose upstream asked callers to wait `hint`: should the
    /// breaker open (at this error, or at a later one while the wait lasts), it stays open at
    /// least that long, up to `max_error_timeout`.
    pub(crate) fn record_hinted(&self, permit: Permit, hint: Duration) {
        self.error(permit, Some(hint));
        self.meter.error();
    }

    /// Hands back the slot of a probe that ended without an outcome (dropped while it ran):
    /// nothing is counted. Runs no user code: freeing a slot never changes the state.
    pub(crate) fn release(&self, permit: Permit) {
        if let Admitted::Probe(_) = permit.admitted() {
            self.probe_done(permit, false);
        }
    }

    fn record_other(&self, permit: Permit, outcome: Outcome) {
        match outcome {
            Outcome::Success => {
                self.probe_done(permit, true);
                self.meter.success();
            }
            Outcome::Error => {
                self.error(permit, None);
                self.meter.error();
            }
            Outcome::TimedOut => {
                self.error(permit, None);
                self.meter.timed_out();
            }
            Outcome::Slow => {
                self.slow(permit);
                self.meter.slow();
            }
            Outcome::Ignored => {
                self.release(permit);
                self.meter.ignored();
            }
        }
    }

    /// A success under the rate rule, of a call admitted in epoch `e`: counted in the window
    /// unless the breaker has moved on since (opened, and closed with a clean window).
    // `#[inline]`: 7 to 8 fewer instructions per call under the rate rule, 2 to 3 more under the
    // count rule (breaker benchmark, callgrind).
    #[inline]
    fn rate_success(&self, e: u32) {
        if epoch(self.state.load(Ordering::Relaxed)) == e {
            self.window.rate.record_success(self);
        }
    }

    /// An error of the call admitted with `permit`: it moves the last error's time (which the
    /// open time counts from); a closed call's counts in its window and may open the breaker, a
    /// live probe's re-opens it. With a `hint` (the wait the upstream asked for), the last error's
    /// time moves further, so that an open time counted from it lasts at least the hint.
    fn error(&self, permit: Permit, hint: Option<Duration>) {
        if matches!(permit.admitted(), Admitted::Unchecked | Admitted::Bypass) {
            return;
        }
        let now = self.now();
        // The full epoch first, then the word: a probe's full epoch is lifted from it.
        let floor = self.epochs.load(Ordering::Acquire);
        let word = self.state.load(Ordering::Acquire);
        let until = match hint {
            None => now,
            Some(hint) => now.saturating_add(nanos(self.hint_past_open_time(
                hint,
                live(permit, floor, word),
                word,
            ))),
        };
        // Set before the state below, so that a call that sees the breaker open sees how long.
        self.last_error.fetch_max(until, Ordering::AcqRel);
        match permit.admitted() {
            Admitted::Closed(admitted) if counts_in_window(admitted, word) => {
                let window = &self.window;
                let trips = match self.config.load().rule {
                    Rule::Count { .. } => window.count.record_error(now, self.window_floor(now)),
                    Rule::Rate { rate, min_calls } => {
                        window.rate.record_error(now);
                        let (calls, errors) = window.rate.totals(now);
                        calls >= u64::from(min_calls) && errors as f64 >= rate * calls as f64
                    }
                };
                if trips
                    && self
                        .swap_for(word, enter(word, OPEN), Some(OpenCause::Errors))
                        .is_ok()
                {
                    // Whatever the window held is history once the breaker opens: it closes
                    // with a clean one.
                    window.clear();
                }
            }
            Admitted::Probe(_) => {
                let mut word = word;
                while live(permit, floor, word) {
                    let streak = if word & STREAKS == STREAKS { 0 } else { STREAK };
                    match self.swap_for(
                        word,
                        enter(word, OPEN) + streak,
                        Some(OpenCause::ProbeFailed),
                    ) {
                        Ok(_) => break,
                        Err(seen) => word = seen,
                    }
                }
            }
            _ => {}
        }
    }

    /// A slow call (a success past `slow_call_duration`), noted in the window of slow calls. With
    /// `slow_call_rate` (rate rule), a closed call's counts as a success, and opens the breaker
    /// when slow calls reach that share of the window's calls (and `min_calls`); otherwise it
    /// counts as an error (a slow probe re-opens the breaker either way).
    fn slow(&self, permit: Permit) {
        if matches!(permit.admitted(), Admitted::Unchecked | Admitted::Bypass) {
            return;
        }
        let now = self.now();
        let config = self.config.load();
        let word = self.state.load(Ordering::Acquire);
        // Noted only in the window of the closed state that admitted it: a call admitted before
        // the breaker opened (or was reset) that ends slow after it closed belongs to no window
        // of the new state, as its errors and successes do not.
        let counts = matches!(permit.admitted(), Admitted::Closed(admitted) if counts_in_window(admitted, word));
        let slow_window = self.window.slow(nanos(config.window));
        if counts {
            slow_window.record_slow(now);
        }
        let (Admitted::Closed(_), Some(slow_rate), Rule::Rate { min_calls, .. }) =
            (permit.admitted(), config.slow_call_rate, config.rule)
        else {
            return self.error(permit, None);
        };
        if !counts {
            return;
        }
        self.window.rate.record_call(now);
        self.open_at_slow_rate(word, slow_window, now, slow_rate, min_calls);
    }

    /// Opens the closed breaker (`word`) when slow calls are at least `slow_rate` of the window's
    /// calls, and there are at least `min_calls`.
    fn open_at_slow_rate(
        &self,
        word: u64,
        slow_window: &RateWindow,
        now: u64,
        slow_rate: f64,
        min_calls: u32,
    ) {
        let (calls, _) = self.window.rate.totals(now);
        let (_, slow) = slow_window.totals(now);
        if calls >= u64::from(min_calls) && slow as f64 >= slow_rate * calls as f64 {
            // Open from now, as from an error: the time is set before the state, so that a call
            // that sees the breaker open sees how long.
            self.last_error.fetch_max(now, Ordering::AcqRel);
            if self
                .swap_for(word, enter(word, OPEN), Some(OpenCause::SlowCalls))
                .is_ok()
            {
                self.window.clear();
            }
        }
    }

    /// How far past now a `hint` moves the last error's time, so that the open time counted from
    /// it lasts the hint (at most `max_error_timeout`): the hint past the open time that applies,
    /// `error_timeout`, or for a live probe that fails (`reopens`) the time `backoff` grows it to.
    /// The breaker thus stays open for the longer of the two, never their sum.
    fn hint_past_open_time(&self, hint: Duration, reopens: bool, word: u64) -> Duration {
        let config = self.config.load();
        let next = if reopens && word & STREAKS != STREAKS {
            word + STREAK
        } else {
            word
        };
        hint.min(config.max_error_timeout.max(config.error_timeout))
            .saturating_sub(self.open_for(next))
    }

    /// The probe `permit` finished without an error (`success`), or was dropped or ignored
    /// (`!success`): its slot comes back, and enough successes close the breaker.
    fn probe_done(&self, permit: Permit, success: bool) {
        let floor = self.epochs.load(Ordering::Acquire);
        let mut word = self.state.load(Ordering::Acquire);
        while live(permit, floor, word) && word & PROBES != 0 {
            let successes = (word & SUCCESSES) / SUCCESS + u64::from(success);
            if success && successes >= u64::from(self.config.load().success_threshold) {
                // Clear (again) before closing: a call admitted before the breaker opened may have
                // written to the window after it was cleared on opening.
                self.window.clear();
                match self.swap(word, enter(word, CLOSED) & !STREAKS) {
                    Ok(_) => return,
                    Err(seen) => word = seen,
                }
                continue;
            }
            let next = word - PROBE + if success { SUCCESS } else { 0 };
            match self
                .state
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(seen) => word = seen,
            }
        }
    }
}

/// True when a closed call admitted with the word `admitted` counts in the window of the breaker
/// now at `word`: still closed since (the same epoch), under the same rule. A call admitted before
/// the breaker opened, was reset, or changed rule (count to rate or back) belongs to no window of
/// the state now: its errors and slowness are not counted, as its success is not.
fn counts_in_window(admitted: u64, word: u64) -> bool {
    epoch(word) == epoch(admitted) && word & PHASE == CLOSED && (word ^ admitted) & RATE == 0
}

/// True when `word` is the half-open round that admitted the probe `permit`, with `floor` a full
/// epoch read before `word`.
fn live(permit: Permit, floor: u64, word: u64) -> bool {
    matches!(permit.admitted(), Admitted::Probe(e) if word & PHASE == HALF_OPEN && e == lift(floor, epoch(word)))
}
