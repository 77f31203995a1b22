//! The attempts of a call: the first held inline and later ones boxed (a call whose first attempt
//! answers at once allocates nothing), with the user code that makes them and judges their errors.
//!
//! User code runs inside a poll (an attempt's body, the closure that makes it, its destructor,
//! `retry_if` on its error) and may panic. `busy` says whose code runs, set before each such call:
//! the race's drop then reports that attempt as panicked and cancels the others.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Instant;

use super::make::MakeAttempt;
use super::observe::Outcome;
use super::reporter::Reporter;
use super::retryable::Retryable;
use super::timers::at;
use crate::deadline::Scope;

/// `busy` between polls.
pub(super) const IDLE: u32 = 0;
/// `busy` while the race's own code runs.
pub(super) const ENGINE: u32 = u32::MAX;

/// An attempt after the first: boxed, as only calls that retry make one.
pub(super) struct Extra<Fut> {
    future: Option<Pin<Box<Fut>>>,
    number: u32,
    started: Instant,
}

/// The time limits of a call's attempts: the call's deadline (`total`) and each attempt's
/// (`each`), which the attempts read through `resiliency::deadline` while they are polled.
#[derive(Copy, Clone, Debug)]
pub(super) struct Limits {
    pub(super) deadline: Option<Instant>,
    pub(super) each: Option<Duration>,
}

impl Limits {
    /// The deadline of an attempt that started at `started`, while it is polled.
    fn scope(self, started: Instant) -> Scope {
        let each = self.each.map(|each| at(started, each));
        Scope::at(match (self.deadline, each) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }
}

/// Where [`Attempts::poll_next`] resumes: 0 is attempt 1, `i + 1` the extra attempt at `i`.
#[derive(Copy, Clone)]
pub(super) struct Cursor(usize);

impl Cursor {
    /// From the first attempt, or past it when it was polled already.
    pub(super) fn new(skip_first: bool) -> Self {
        Cursor(usize::from(skip_first))
    }
}

pin_project! {
    /// The attempts in flight, and those started so far.
    pub(super) struct Attempts<M, Fut, P> {
        make: M,
        retryable: P,
        #[pin]
        first: Option<Fut>,
        // Freed by the race (`take_extra`) when it ends or is dropped while it races: only a
        // call that races holds any, so that the drop of one that did not tests nothing here.
        extra: ManuallyDrop<Vec<Extra<Fut>>>,
        pub(super) launched: u32,
        // Attempts whose future is held.
        pub(super) running: u32,
        // Whose code a poll runs: attempt n's (its body, the closure that makes it, its
        // destructor, `retry_if` on its error), the race's own (`ENGINE`), or none (`IDLE`,
        // between polls). A poll that panicked leaves it set.
        pub(super) busy: u32,
    }
}

impl<M, Fut, P> Attempts<M, Fut, P> {
    pub(super) fn new(make: M, retryable: P) -> Self {
        Attempts {
            make,
            retryable,
            first: None,
            extra: ManuallyDrop::new(Vec::new()),
            launched: 0,
            running: 0,
            busy: IDLE,
        }
    }

    /// Sets whose code runs (`IDLE`, `ENGINE` or an attempt's number).
    pub(super) fn set_busy(self: Pin<&mut Self>, who: u32) {
        *self.project().busy = who;
    }

    /// Whose code ran, left `IDLE`.
    pub(super) fn take_busy(self: Pin<&mut Self>) -> u32 {
        std::mem::replace(self.project().busy, IDLE)
    }

    /// The extra attempts, left none: for the race to drop, when it ends or is dropped.
    pub(super) fn take_extra(self: Pin<&mut Self>) -> Vec<Extra<Fut>> {
        std::mem::take(&mut **self.project().extra)
    }

    /// Whether attempts may start (fewer than `attempts` have).
    pub(super) fn more(&self, attempts: u32) -> bool {
        self.launched < attempts
    }

    /// Whether `error` of attempt `number` is worth another attempt (`retry_if`, its code).
    pub(super) fn judge<E>(self: Pin<&mut Self>, number: u32, error: &E) -> bool
    where
        P: Retryable<E>,
    {
        let this = self.project();
        *this.busy = number;
        let retryable = this.retryable.retryable(error);
        *this.busy = ENGINE;
        retryable
    }

    /// The wait the upstream asked for with attempt `number`'s `error` (its `RetryHint`, the
    /// user's code: `busy` names the attempt meanwhile).
    pub(super) fn hint<E>(self: Pin<&mut Self>, number: u32, error: &E) -> Option<Duration>
    where
        P: Retryable<E>,
    {
        let this = self.project();
        *this.busy = number;
        let hint = this.retryable.retry_after(error);
        *this.busy = ENGINE;
        hint
    }

    /// Drops attempt 1's future, if held. Its destructor is its code: `busy` names it meanwhile.
    fn stop_first(self: Pin<&mut Self>) -> bool {
        let mut this = self.project();
        if this.first.is_none() {
            return false;
        }
        *this.running -= 1;
        *this.busy = 1;
        this.first.set(None);
        *this.busy = ENGINE;
        true
    }

    /// Drops the future of the extra attempt at `index`, if held (as `stop_first`).
    fn stop_extra(self: Pin<&mut Self>, index: usize) -> bool {
        let this = self.project();
        let extra = &mut this.extra[index];
        let Some(future) = extra.future.take() else {
            return false;
        };
        *this.running -= 1;
        *this.busy = extra.number;
        drop(future);
        *this.busy = ENGINE;
        true
    }

    /// Cancels (drops) every attempt still running, reporting each with `outcome` if `timed`.
    /// Should a destructor panic, the attempts not dropped yet are left to the race's drop.
    pub(super) fn cancel(
        mut self: Pin<&mut Self>,
        reporter: Reporter,
        timed: bool,
        now: Instant,
        outcome: Outcome,
    ) {
        if self.as_mut().stop_first() && timed {
            reporter.ended(1, reporter.start, now, outcome);
        }
        for index in 0..self.extra.len() {
            if self.as_mut().stop_extra(index) && timed {
                let extra = &self.extra[index];
                reporter.ended(extra.number, extra.started, now, outcome);
            }
        }
    }

    /// Attempt `number`, whose code panicked, is reported as such and dropped first (if still
    /// held), so that it is not reported as abandoned too.
    pub(super) fn panicked(self: Pin<&mut Self>, number: u32, reporter: Reporter, now: Instant) {
        let extra = self.extra.iter().position(|extra| extra.number == number);
        let started = extra.map_or(reporter.start, |index| self.extra[index].started);
        reporter.ended(number, started, now, Outcome::Panicked);
        match extra {
            Some(index) => self.stop_extra(index),
            None => self.stop_first(),
        };
    }

    /// Drops the attempts running past `each` at `now`, reported as timed out; returns how many.
    pub(super) fn time_out(
        mut self: Pin<&mut Self>,
        each: Duration,
        reporter: Reporter,
        now: Instant,
    ) -> u32 {
        let mut timed_out = 0;
        if self.first.is_some() && now >= at(reporter.start, each) {
            self.as_mut().stop_first();
            reporter.ended(1, reporter.start, now, Outcome::TimedOut);
            timed_out += 1;
        }
        for index in 0..self.extra.len() {
            let Extra {
                future,
                number,
                started,
            } = &self.extra[index];
            let (number, started) = (*number, *started);
            if future.is_some() && now >= at(started, each) {
                self.as_mut().stop_extra(index);
                reporter.ended(number, started, now, Outcome::TimedOut);
                timed_out += 1;
            }
        }
        timed_out
    }

    /// The earliest instant an attempt running (attempt 1 since `start`) reaches `each`.
    pub(super) fn limit(&self, start: Instant, each: Duration) -> Option<Instant> {
        let first = self.first.is_some().then(|| at(start, each));
        let extra = self.extra.iter().filter(|extra| extra.future.is_some());
        extra
            .map(|extra| at(extra.started, each))
            .chain(first)
            .min()
    }
}

impl<M, Fut, T, E, P> Attempts<M, Fut, P>
where
    M: MakeAttempt<Fut>,
    Fut: Future<Output = Result<T, E>>,
{
    /// Makes and polls attempt 1 (its code: `busy` names it meanwhile, and is `IDLE` after).
    #[inline(always)]
    pub(super) fn poll_first(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        *this.launched = 1;
        *this.busy = 1;
        this.first.set(Some(this.make.make(0)));
        *this.running = 1;
        let poll = this
            .first
            .as_mut()
            .as_pin_mut()
            .expect("set above")
            .poll(cx);
        if poll.is_ready() {
            *this.running = 0;
            this.first.set(None);
        }
        *this.busy = IDLE;
        poll
    }

    /// As [`poll_first`](Self::poll_first), under `scope` (the deadline of a call whose clock
    /// started before, or none): apart, so that the common case keeps its inlined one.
    #[inline(never)]
    pub(super) fn poll_first_under(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        scope: Option<Scope>,
    ) -> Poll<Result<T, E>> {
        let poll = self.poll_first(cx);
        drop(scope);
        poll
    }

    /// Polls the attempts running from `cursor` on, up to the first that is ready: returns its
    /// number, when it started (attempt 1 at `start`) and its output, the cursor past it.
    pub(super) fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        cursor: &mut Cursor,
        start: Instant,
        limits: Limits,
    ) -> Option<(u32, Instant, Result<T, E>)> {
        let mut this = self.project();
        if cursor.0 == 0 {
            cursor.0 = 1;
            if let Some(future) = this.first.as_mut().as_pin_mut() {
                *this.busy = 1;
                let scope = limits.scope(start);
                let poll = future.poll(cx);
                drop(scope);
                if poll.is_ready() {
                    *this.running -= 1;
                    this.first.set(None);
                }
                *this.busy = ENGINE;
                if let Poll::Ready(result) = poll {
                    return Some((1, start, result));
                }
            }
        }
        while let Some(extra) = this.extra.get_mut(cursor.0 - 1) {
            cursor.0 += 1;
            let Some(future) = extra.future.as_mut() else {
                continue;
            };
            *this.busy = extra.number;
            let scope = limits.scope(extra.started);
            let poll = future.as_mut().poll(cx);
            drop(scope);
            if poll.is_ready() {
                *this.running -= 1;
                extra.future = None;
            }
            *this.busy = ENGINE;
            if let Poll::Ready(result) = poll {
                return Some((extra.number, extra.started, result));
            }
        }
        None
    }

    /// Starts the next attempt at `now`, made under its deadline (`limits`), as attempt 1 is:
    /// code that runs as the attempt is made reads the time it has. Returns its number.
    pub(super) fn launch(self: Pin<&mut Self>, now: Instant, limits: Limits) -> u32 {
        let this = self.project();
        *this.launched += 1;
        let number = *this.launched;
        // In place before the closure that makes it runs: should that panic, the race's drop
        // still finds when the attempt started.
        this.extra.push(Extra {
            future: None,
            number,
            started: now,
        });
        *this.busy = number;
        let scope = limits.scope(now);
        let future = Box::pin(this.make.make(number - 1));
        drop(scope);
        *this.busy = ENGINE;
        *this.running += 1;
        if let Some(extra) = this.extra.last_mut() {
            extra.future = Some(future);
        }
        number
    }
}
