//! When things happen in a call: the next attempt's start (staggered, or at the end of a
//! failure's backoff), the budget token taken ahead of it, and the one timer the call waits on.
//!
//! The next attempt starts at one instant, `next_at`: `after` after the previous one started, or
//! sooner, when a failure's backoff ends first. Failures not yet replaced are counted (`owed`);
//! each waits its own backoff, drawn when it is the first in line (see `backoff.rs`). The budget's
//! token for an attempt is taken when it starts, or sooner (`paid`) when a failure leaves no
//! attempt running: the replacement is then sure to start unless the deadline comes first, and a
//! refusal ends the call at once instead of after the backoff.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::backoff::Backoff;
use super::reporter::Reporter;

/// How far ahead "never" is: tokio's own (what `sleep(Duration::MAX)` waits).
const NEVER: Duration = Duration::from_secs(86400 * 365 * 30);

/// The instant `d` after `instant`. One past what an `Instant` holds (a setting of
/// `Duration::MAX`) is "never": 30 years on, as for tokio.
pub(super) fn at(instant: Instant, d: Duration) -> Instant {
    instant
        .checked_add(d)
        .or_else(|| instant.checked_add(NEVER))
        // Unreachable: no clock reads an instant within 30 years of the end of its range.
        .unwrap_or(instant)
}

/// Polls `timer`, set to fire at `wake` (made on the first wait). `None` when there is no tokio
/// runtime to make one on.
pub(super) fn poll_until(
    timer: &mut Option<Pin<Box<Sleep>>>,
    cx: &mut Context<'_>,
    wake: Instant,
) -> Option<Poll<()>> {
    let timer = match timer {
        Some(timer) => {
            if timer.deadline() != wake {
                timer.as_mut().reset(wake);
            }
            timer
        }
        None => {
            tokio::runtime::Handle::try_current().ok()?;
            timer.insert(Box::pin(tokio::time::sleep_until(wake)))
        }
    };
    Some(timer.as_mut().poll(cx))
}

/// A call's schedule of attempts to come.
#[derive(Debug, Default)]
pub(super) struct Schedule {
    // When the next attempt starts (its staggered start, or the end of a failure's backoff),
    // if none succeeds first.
    pub(super) next_at: Option<Instant>,
    // Failures (errors worth another attempt, attempts past `each`) whose replacement has not
    // started yet: the first in line has its backoff in `next_at`. Both counts are at most the
    // attempts a call makes (`MAX_RETRIES` + 1), so 16 bits hold them (and keep the future small).
    pub(super) owed: u16,
    // Backoffs drawn so far (the exponent of the next one's bound).
    backoffs: u16,
    // The next attempt's token was taken from the budget ahead of its start.
    paid: bool,
    // No tokio runtime: attempts start only when one fails, and there is no deadline.
    pub(super) no_timer: bool,
    // No attempt starts before this: an upstream asked callers to wait (`Retry-After`).
    not_before: Option<Instant>,
}

impl Schedule {
    /// A failure at `now`, with `launched` attempts started, is owed a replacement: if it is the
    /// first in line, its backoff starts now (and the next attempt starts at its end, unless the
    /// staggered start comes first).
    pub(super) fn owe(&mut self, reporter: Reporter, launched: u32, now: Instant) {
        self.owed += 1;
        if self.owed == 1 && launched <= reporter.policy.retries() {
            self.back_off(reporter, launched, now);
        }
    }

    /// Draws the backoff of the first failure in line, from `now`. Without a tokio runtime there
    /// is no timer to wait with: the replacement starts at once.
    fn back_off(&mut self, reporter: Reporter, launched: u32, now: Instant) {
        let policy = reporter.policy;
        let mut wait = Duration::ZERO;
        if policy.backs_off() {
            if !self.no_timer && tokio::runtime::Handle::try_current().is_err() {
                self.no_timer = true;
            }
            let bound = policy.backoff_bound(u32::from(self.backoffs));
            self.backoffs += 1;
            if !self.no_timer && !bound.is_zero() {
                wait = Backoff::draw(bound);
            }
        }
        let end = at(now, wait);
        let next = self.next_at.map_or(end, |next| next.min(end));
        let next = self.not_before.map_or(next, |held| next.max(held));
        self.next_at = Some(next);
        if policy.backs_off() {
            reporter.backing_off(launched + 1, wait, next.saturating_duration_since(now));
        }
    }

    /// An upstream asked callers to wait until `until`: no attempt starts before (the next one's
    /// start moves there, if it was sooner).
    pub(super) fn hold(&mut self, reporter: Reporter, until: Instant) {
        let until = self.not_before.map_or(until, |held| held.max(until));
        self.not_before = Some(until);
        self.next_at = self.next_at.map(|next| next.max(until));
        reporter.held(until);
    }

    /// Takes the next attempt's token from the budget, if not taken yet (`launched` attempts have
    /// started). When the budget refuses, no attempt starts until another fails (and the budget
    /// allows it then).
    pub(super) fn pay(&mut self, reporter: Reporter, launched: u32, now: Instant) -> bool {
        if self.paid || reporter.withdraw(launched + 1, now) {
            self.paid = true;
            return true;
        }
        self.next_at = None;
        self.owed = 0;
        false
    }

    /// Attempt `number` started at `now`, paid for: it replaces the first failure in line, if
    /// any; the next in line starts its backoff.
    pub(super) fn started(&mut self, reporter: Reporter, number: u32, now: Instant) {
        let policy = reporter.policy;
        self.paid = false;
        self.next_at = (number <= policy.retries()).then(|| {
            let next = at(now, policy.after());
            self.not_before.map_or(next, |held| next.max(held))
        });
        if self.owed > 0 {
            self.owed -= 1;
            if self.owed > 0 && number <= policy.retries() {
                self.back_off(reporter, number, now);
            }
        }
    }

    /// Whether the next attempt is due at `now`: at its start (staggered, or after a failure's
    /// backoff); without timers, only to replace a failure, at once.
    pub(super) fn due(&self, now: Instant) -> bool {
        match self.next_at {
            Some(_) if self.no_timer => self.owed > 0,
            Some(next) => now >= next,
            None => false,
        }
    }

    /// Whether another attempt is to start (if `more` may) before `deadline_at`.
    pub(super) fn starting(&self, more: bool, deadline_at: Instant) -> bool {
        more && self
            .next_at
            .is_some_and(|next| self.no_timer || next < deadline_at)
    }
}
