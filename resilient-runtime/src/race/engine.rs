//! The race: the future a raced call returns. It holds the first attempt inline and later ones
//! boxed (a call whose first attempt answers at once allocates nothing), and one timer for the
//! next event (the next attempt's start, an attempt's `each` limit, the deadline), made only when
//! the call has to wait.
//!
//! The next attempt starts at one instant, `next_at`: `after` after the previous one started, or
//! sooner, when a failure's backoff ends first. Failures not yet replaced are counted (`owed`);
//! each waits its own backoff, drawn when it is the first in line (see `backoff.rs`). The budget's
//! token for an attempt is taken when it starts, or sooner (`paid`) when a failure leaves no
//! attempt running: the replacement is then sure to start unless the deadline comes first, and a
//! refusal ends the call at once instead of after the backoff.
//!
//! User code runs inside a poll (an attempt's body, the closure that makes it, its destructor,
//! `retry_if` on its error) and may panic. The race's state is updated before each such call, so
//! that a panic leaves it consistent, and `busy` says whose code ran: the race's drop then reports
//! that attempt as panicked and cancels the others, and another poll panics at once.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::backoff::Backoff;
use super::observe::{self, Attempt, Outcome};
use super::policy::RaceRetry;
use crate::rejected::FromRejected;
use crate::rejected::{Reason, Rejected};

const TARGET: &str = "resilient::race_retry";

/// How far ahead "never" is: tokio's own (what `sleep(Duration::MAX)` waits).
const NEVER: Duration = Duration::from_secs(86400 * 365 * 30);

/// The instant `d` after `instant`. One past what an `Instant` holds (a setting of
/// `Duration::MAX`) is "never": 30 years on, as for tokio.
fn at(instant: Instant, d: Duration) -> Instant {
    instant
        .checked_add(d)
        .or_else(|| instant.checked_add(NEVER))
        // Unreachable: no clock reads an instant within 30 years of the end of its range.
        .unwrap_or(instant)
}

/// The default `retry_if`: every error is worth another attempt.
#[derive(Copy, Clone, Debug, Default)]
pub struct Always;

/// Whether an error is worth another attempt.
pub trait Retryable<E> {
    /// True when another attempt may succeed where this one failed.
    fn retryable(&self, error: &E) -> bool;
}

impl<E> Retryable<E> for Always {
    #[inline(always)]
    fn retryable(&self, _: &E) -> bool {
        true
    }
}

impl<E, P: Fn(&E) -> bool> Retryable<E> for P {
    fn retryable(&self, error: &E) -> bool {
        self(error)
    }
}

/// An attempt after the first: boxed, as only calls that retry make one.
struct Extra<Fut> {
    future: Option<Pin<Box<Fut>>>,
    number: u32,
    started: Instant,
}

/// `Race::busy` between polls.
const IDLE: u32 = 0;
/// `Race::busy` while the race's own code runs.
const ENGINE: u32 = u32::MAX;

pin_project! {
    /// The future of a raced call ([`RaceRetry::run`]).
    #[must_use = "futures do nothing unless polled"]
    #[project = RaceProj]
    pub struct Race<M, Fut, E, P> {
        policy: &'static RaceRetry,
        make: M,
        retryable: P,
        #[pin]
        first: Option<Fut>,
        extra: Vec<Extra<Fut>>,
        #[pin]
        timer: Option<Sleep>,
        // Set at the first poll when attempts are timed, else when the first attempt waits.
        start: Option<Instant>,
        begun: bool,
        // This call's attempt latencies are recorded (`after = "pNN"`, a sample of the calls).
        record: bool,
        // Attempt 1 failed on the first poll.
        early: Option<E>,
        launched: u32,
        // Attempts whose future is held.
        running: u32,
        // When the next attempt starts (its staggered start, or the end of a failure's backoff),
        // if none succeeds first.
        next_at: Option<Instant>,
        last_error: Option<E>,
        // Failures (errors worth another attempt, attempts past `each`) whose replacement has not
        // started yet: the first in line has its backoff in `next_at`.
        owed: u32,
        // Backoffs drawn so far (the exponent of the next one's bound).
        backoffs: u32,
        // The next attempt's token was taken from the budget ahead of its start.
        paid: bool,
        // No tokio runtime: attempts start only when one fails, and there is no deadline.
        no_timer: bool,
        // Whose code a poll runs: attempt n's (its body, the closure that makes it, its
        // destructor, `retry_if` on its error), the race's own (`ENGINE`), or none (`IDLE`,
        // between polls). A poll that panicked leaves it set.
        busy: u32,
    }

    impl<M, Fut, E, P> PinnedDrop for Race<M, Fut, E, P> {
        // Dropped by its caller (an outer timeout, a `select!`, a client gone) while attempts
        // run, or after a poll panicked: they are cancelled with it, and reported as abandoned
        // (the attempt whose code panicked, as panicked).
        fn drop(this: Pin<&mut Self>) {
            let mut this = this.project();
            let panicked = match std::mem::replace(this.busy, IDLE) {
                IDLE | ENGINE => None,
                number => Some(number),
            };
            let Some(start) = *this.start else {
                return;
            };
            if *this.running == 0 && panicked.is_none() {
                return;
            }
            let reports = Reports { policy: this.policy, record: *this.record, start };
            if !reports.timed() {
                return; // the attempts are dropped with the fields, unreported
            }
            let now = Instant::now();
            if let Some(number) = panicked {
                let extra = this.extra.iter().position(|extra| extra.number == number);
                let started = extra.map_or(start, |index| this.extra[index].started);
                reports.ended(number, started, now, Outcome::Panicked);
                // Dropped first (if still held), so that it is not reported as abandoned too.
                match extra {
                    Some(index) => this.stop_extra(index),
                    None => this.stop_first(),
                };
            }
            this.cancel(reports, true, now, Outcome::Abandoned);
        }
    }
}

impl<M, Fut, E, P> std::fmt::Debug for Race<M, Fut, E, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Race")
            .field("name", &self.policy.name())
            .field("launched", &self.launched)
            .field("running", &self.running)
            .finish_non_exhaustive()
    }
}

impl<M, Fut, E, P> Race<M, Fut, E, P> {
    pub(crate) fn new(policy: &'static RaceRetry, make: M, retryable: P) -> Self {
        Race {
            policy,
            make,
            retryable,
            first: None,
            extra: Vec::new(),
            timer: None,
            start: None,
            begun: false,
            record: false,
            early: None,
            launched: 0,
            running: 0,
            next_at: None,
            last_error: None,
            owed: 0,
            backoffs: 0,
            paid: false,
            no_timer: false,
            busy: IDLE,
        }
    }
}

/// Whether attempts are reported (to an observer, or to a subscriber that may want debug
/// events). The global level hint, not a per-callsite `enabled!`: that one's cached interest can
/// be stale for scoped subscribers on other threads, and a wrong "yes" costs only a clock read.
fn reporting() -> bool {
    observe::active() || tracing::level_filters::LevelFilter::current() >= tracing::Level::DEBUG
}

/// Calls whose attempt latencies are recorded: all of the first `ALWAYS_RECORDED` samples, then
/// one call in `RECORD_EVERY` on each thread (the clock reads and the shared histogram's writes
/// are the cost of `after = "pNN"`).
const ALWAYS_RECORDED: u64 = 256;
const RECORD_EVERY: u32 = 8;

fn sampled(policy: &RaceRetry) -> bool {
    if policy.quantile().is_none() {
        return false;
    }
    if !policy.warmed.load(Relaxed) {
        if policy.latencies.samples() < ALWAYS_RECORDED {
            return true;
        }
        policy.warmed.store(true, Relaxed);
    }
    thread_local! {
        static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    CALLS.with(|calls| {
        let n = calls.get().wrapping_add(1);
        calls.set(n);
        n % RECORD_EVERY == 0
    })
}

/// The refusal of a call whose deadline passed (or that ran out of attempts with no error to
/// return) after `attempts` attempts.
fn deadline(policy: &RaceRetry, attempts: u32) -> Rejected {
    Rejected::new(Reason::Deadline {
        name: policy.name(),
        total: policy.total(),
        attempts,
    })
}

/// Whole microseconds, for `tracing` fields (saturated at `u64::MAX`).
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Where a call reports the attempts that end: to an observer, to `tracing`, and to the latency
/// histogram.
#[derive(Copy, Clone)]
struct Reports {
    policy: &'static RaceRetry,
    record: bool,
    start: Instant,
}

impl Reports {
    /// Whether attempts that are cancelled are reported (which reads the clock).
    fn timed(self) -> bool {
        self.record || reporting()
    }

    /// Reports an attempt that ended.
    fn ended(self, number: u32, started: Instant, now: Instant, outcome: Outcome) {
        let policy = self.policy;
        let elapsed = now.saturating_duration_since(started);
        if let Some(q) = policy.quantile().filter(|_| self.record) {
            // Losers count with the time they ran (a lower bound): leaving them out would teach the
            // percentile that slow attempts never happen.
            policy.latencies.record(elapsed, q);
        }
        let started = started.saturating_duration_since(self.start);
        // Not while a panic unwinds: a subscriber that panicked then would abort the process.
        if !std::thread::panicking() {
            tracing::debug!(
                target: TARGET,
                name = policy.name(),
                attempt = number,
                started_us = micros(started),
                elapsed_us = micros(elapsed),
                ?outcome,
                "attempt ended"
            );
        }
        if observe::active() {
            observe::report(Attempt {
                name: policy.name(),
                number,
                started,
                elapsed,
                outcome,
            });
        }
    }
}

impl<M, Fut, T, E, P> Future for Race<M, Fut, E, P>
where
    M: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: FromRejected,
    P: Retryable<E>,
{
    type Output = Result<T, E>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.as_mut().project();
        assert!(
            *this.busy == IDLE,
            "a raced call was polled again after it panicked"
        );
        let mut first_polled = false;
        if !*this.begun {
            // The common case, inline: attempt 1 answers at once.
            match self.as_mut().begin(cx) {
                Poll::Ready(Ok(value)) => return Poll::Ready(Ok(value)),
                Poll::Ready(Err(error)) => *self.as_mut().project().early = Some(error),
                Poll::Pending => first_polled = true,
            }
        }
        *self.as_mut().project().busy = ENGINE;
        let poll = self.as_mut().race(cx, first_polled);
        *self.project().busy = IDLE;
        poll
    }
}

impl<M, Fut, T, E, P> Race<M, Fut, E, P>
where
    M: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: FromRejected,
    P: Retryable<E>,
{
    /// The first poll: attempt 1 runs at once. The clock is read only if attempts are reported or
    /// recorded, or once attempt 1 has to wait: a call answered without waiting reads no clock and
    /// allocates nothing. Returns attempt 1's poll; an error is left to `race`, which judges it.
    #[inline(always)]
    fn begin(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        let policy: &'static RaceRetry = this.policy;
        *this.begun = true;
        policy.register();
        policy.budget.deposit();
        *this.record = sampled(policy);
        if *this.record || reporting() {
            *this.start = Some(Instant::now());
        }
        *this.launched = 1;
        *this.busy = 1;
        this.first.set(Some((this.make)()));
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
        match &poll {
            Poll::Ready(Ok(_)) => {
                if let Some(start) = *this.start {
                    let reports = Reports {
                        policy,
                        record: *this.record,
                        start,
                    };
                    reports.ended(1, start, Instant::now(), Outcome::Won);
                }
                return poll;
            }
            Poll::Ready(Err(_)) | Poll::Pending => {}
        }
        let start = *this.start.get_or_insert_with(Instant::now);
        *this.next_at = (policy.retries() > 0).then(|| at(start, policy.after()));
        poll
    }

    /// Every poll after attempt 1's first (`first_polled`: attempt 1 was just polled by `begin`).
    #[inline(never)]
    fn race(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut first_polled: bool,
    ) -> Poll<Result<T, E>> {
        let mut this = self.project();
        let policy: &'static RaceRetry = this.policy;
        let start = this.start.expect("set at the first poll");
        let reports = Reports {
            policy,
            record: *this.record,
            start,
        };
        let attempts = policy.retries() + 1;
        let deadline_at = at(start, policy.total());

        loop {
            let mut read = None;
            let mut clock = || *read.get_or_insert_with(Instant::now);

            // Poll every running attempt; the first `Ok` wins. Failures are reported as they are
            // seen; one not worth another attempt ends the call, unless another attempt wins in
            // the same pass.
            let mut won: Option<(u32, Instant, T)> = None;
            let mut fatal: Option<E> = None;
            if let Some(error) = this.early.take() {
                fatal = this.failed(reports, 1, start, error, clock());
            }
            if this.first.is_some() && !std::mem::take(&mut first_polled) {
                *this.busy = 1;
                let poll = this.first.as_mut().as_pin_mut().expect("running").poll(cx);
                if poll.is_ready() {
                    *this.running -= 1;
                    this.first.set(None);
                }
                *this.busy = ENGINE;
                match poll {
                    Poll::Ready(Ok(value)) => won = Some((1, start, value)),
                    Poll::Ready(Err(error)) => {
                        let error = this.failed(reports, 1, start, error, clock());
                        fatal = fatal.or(error);
                    }
                    Poll::Pending => {}
                }
            }
            if won.is_none() {
                for index in 0..this.extra.len() {
                    let extra = &mut this.extra[index];
                    let (number, started) = (extra.number, extra.started);
                    let Some(future) = extra.future.as_mut() else {
                        continue;
                    };
                    *this.busy = number;
                    let poll = future.as_mut().poll(cx);
                    if poll.is_ready() {
                        *this.running -= 1;
                        extra.future = None;
                    }
                    *this.busy = ENGINE;
                    match poll {
                        Poll::Ready(Ok(value)) => {
                            won = Some((number, started, value));
                            break;
                        }
                        Poll::Ready(Err(error)) => {
                            let error = this.failed(reports, number, started, error, clock());
                            fatal = fatal.or(error);
                        }
                        Poll::Pending => {}
                    }
                }
            }

            if let Some((number, started, value)) = won {
                if number > 1 {
                    policy.won_by_extra.fetch_add(1, Relaxed);
                }
                let timed = reports.timed();
                let now = if timed { clock() } else { start };
                if timed {
                    reports.ended(number, started, now, Outcome::Won);
                }
                this.cancel(reports, timed, now, Outcome::Lost);
                return Poll::Ready(Ok(value));
            }
            if let Some(error) = fatal {
                this.cancel(reports, reports.timed(), clock(), Outcome::Abandoned);
                return Poll::Ready(Err(error));
            }

            let mut launched_now = false;
            let now = clock();
            if !*this.no_timer {
                if now >= deadline_at {
                    policy.deadlines.fetch_add(1, Relaxed);
                    this.cancel(reports, reports.timed(), now, Outcome::Abandoned);
                    tracing::debug!(
                        target: TARGET,
                        name = policy.name(),
                        attempts = *this.launched,
                        "deadline passed with no attempt successful"
                    );
                    return Poll::Ready(Err(E::from(deadline(policy, *this.launched))));
                }
                if let Some(each) = policy.each_limit() {
                    let mut timed_out = 0;
                    if this.first.is_some() && now >= at(start, each) {
                        this.stop_first();
                        reports.ended(1, start, now, Outcome::TimedOut);
                        timed_out += 1;
                    }
                    for index in 0..this.extra.len() {
                        let Extra {
                            future,
                            number,
                            started,
                        } = &this.extra[index];
                        let (number, started) = (*number, *started);
                        if future.is_some() && now >= at(started, each) {
                            this.stop_extra(index);
                            reports.ended(number, started, now, Outcome::TimedOut);
                            timed_out += 1;
                        }
                    }
                    if timed_out > 0 {
                        *this.last_error = Some(E::from(Rejected::new(Reason::AttemptTimeout {
                            name: policy.name(),
                            each,
                        })));
                        for _ in 0..timed_out {
                            this.owe(now);
                        }
                    }
                }
            }
            // With nothing else running, a failure's replacement starts unless the deadline comes
            // first: its token is taken now, so that a call the budget refuses ends at once
            // rather than after its backoff.
            if *this.owed > 0 && *this.running == 0 && *this.launched < attempts {
                this.pay(now);
            }
            // The next attempt: at its start (staggered, or after a failure's backoff); without
            // timers, only to replace a failure, at once.
            let due = match *this.next_at {
                Some(_) if *this.no_timer => *this.owed > 0,
                Some(next) => now >= next,
                None => false,
            };
            if due && *this.launched < attempts {
                launched_now |= this.launch(now);
            }

            if launched_now {
                continue; // poll the new attempt at once
            }
            let starting = *this.launched < attempts
                && this
                    .next_at
                    .is_some_and(|next| *this.no_timer || next < deadline_at);
            if *this.running == 0 && !starting {
                // Every attempt failed and no other may start before the deadline (none left, the
                // budget is spent, or the backoff ends too late).
                let error = this
                    .last_error
                    .take()
                    .unwrap_or_else(|| E::from(deadline(policy, *this.launched)));
                return Poll::Ready(Err(error));
            }
            if *this.no_timer {
                return Poll::Pending;
            }

            // Wait for an attempt, or for the next timed event.
            let mut wake = deadline_at;
            if let Some(next) = *this.next_at {
                if *this.launched < attempts {
                    wake = wake.min(next);
                }
            }
            if let Some(each) = policy.each_limit() {
                if this.first.is_some() {
                    wake = wake.min(at(start, each));
                }
                for extra in this.extra.iter() {
                    if extra.future.is_some() {
                        wake = wake.min(at(extra.started, each));
                    }
                }
            }
            match this.timer.as_mut().as_pin_mut() {
                Some(timer) => {
                    if timer.deadline() != wake {
                        timer.reset(wake);
                    }
                }
                None => {
                    if tokio::runtime::Handle::try_current().is_err() {
                        *this.no_timer = true;
                        return Poll::Pending;
                    }
                    this.timer.set(Some(tokio::time::sleep_until(wake)));
                }
            }
            let timer = this.timer.as_mut().as_pin_mut().expect("set above");
            if timer.poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }
}

impl<M, Fut, E, P> RaceProj<'_, M, Fut, E, P> {
    /// Drops attempt 1's future, if held. Its destructor is its code: `busy` names it meanwhile.
    fn stop_first(&mut self) -> bool {
        if self.first.is_none() {
            return false;
        }
        *self.running -= 1;
        *self.busy = 1;
        self.first.set(None);
        *self.busy = ENGINE;
        true
    }

    /// Drops the future of the extra attempt at `index`, if held (as `stop_first`).
    fn stop_extra(&mut self, index: usize) -> bool {
        let extra = &mut self.extra[index];
        let Some(future) = extra.future.take() else {
            return false;
        };
        *self.running -= 1;
        *self.busy = extra.number;
        drop(future);
        *self.busy = ENGINE;
        true
    }

    /// Cancels (drops) every attempt still running, reporting each with `outcome` if `timed`.
    /// Should a destructor panic, the attempts not dropped yet are left to the race's drop.
    fn cancel(&mut self, reports: Reports, timed: bool, now: Instant, outcome: Outcome) {
        if self.stop_first() && timed {
            reports.ended(1, reports.start, now, outcome);
        }
        for index in 0..self.extra.len() {
            if self.stop_extra(index) && timed {
                let extra = &self.extra[index];
                reports.ended(extra.number, extra.started, now, outcome);
            }
        }
    }

    /// Attempt `number` failed with `error` at `now`: reported, and kept as the call's last error
    /// (its replacement is owed), or returned when `retry_if` says it is not worth another.
    fn failed(
        &mut self,
        reports: Reports,
        number: u32,
        started: Instant,
        error: E,
        now: Instant,
    ) -> Option<E>
    where
        P: Retryable<E>,
    {
        *self.busy = number;
        let retryable = self.retryable.retryable(&error);
        *self.busy = ENGINE;
        if retryable {
            reports.ended(number, started, now, Outcome::Failed);
            *self.last_error = Some(error);
            self.owe(now);
            None
        } else {
            reports.ended(number, started, now, Outcome::NotRetryable);
            Some(error)
        }
    }

    /// A failure at `now` is owed a replacement: if it is the first in line, its backoff starts
    /// now (and the next attempt starts at its end, unless the staggered start comes first).
    fn owe(&mut self, now: Instant) {
        *self.owed += 1;
        if *self.owed == 1 && *self.launched <= self.policy.retries() {
            self.back_off(now);
        }
    }

    /// Draws the backoff of the first failure in line, from `now`. Without a tokio runtime there
    /// is no timer to wait with: the replacement starts at once.
    fn back_off(&mut self, now: Instant) {
        let policy: &'static RaceRetry = self.policy;
        let mut wait = Duration::ZERO;
        if policy.backs_off() {
            if !*self.no_timer && tokio::runtime::Handle::try_current().is_err() {
                *self.no_timer = true;
            }
            let bound = policy.backoff_bound(*self.backoffs);
            *self.backoffs += 1;
            if !*self.no_timer && !bound.is_zero() {
                wait = Backoff::draw(bound);
            }
        }
        let end = at(now, wait);
        let next = self.next_at.map_or(end, |next| next.min(end));
        *self.next_at = Some(next);
        if policy.backs_off() && !std::thread::panicking() {
            tracing::debug!(
                target: TARGET,
                name = policy.name(),
                attempt = *self.launched + 1,
                backoff_us = micros(wait),
                starts_in_us = micros(next.saturating_duration_since(now)),
                "backing off after a failure"
            );
        }
    }

    /// Takes the next attempt's token from the budget, if not taken yet. When the budget refuses,
    /// no attempt starts until another fails (and the budget allows it then).
    fn pay(&mut self, now: Instant) -> bool {
        let policy: &'static RaceRetry = self.policy;
        if *self.paid || policy.budget.withdraw(policy.since_first(now)) {
            *self.paid = true;
            return true;
        }
        policy.budget_refused.fetch_add(1, Relaxed);
        *self.next_at = None;
        *self.owed = 0;
        tracing::debug!(
            target: TARGET,
            name = policy.name(),
            attempt = *self.launched + 1,
            "retry budget spent: no extra attempt"
        );
        false
    }

    /// Starts the next attempt at `now`, if the budget allows. It replaces the first failure in
    /// line, if any; the next in line starts its backoff.
    fn launch(&mut self, now: Instant) -> bool
    where
        M: FnMut() -> Fut,
    {
        if !self.pay(now) {
            return false;
        }
        *self.paid = false;
        let policy: &'static RaceRetry = self.policy;
        *self.launched += 1;
        policy.extra_attempts.fetch_add(1, Relaxed);
        let number = *self.launched;
        // In place before the closure that makes it runs: should that panic, the race's drop
        // still finds when the attempt started.
        self.extra.push(Extra {
            future: None,
            number,
            started: now,
        });
        *self.busy = number;
        let future = Box::pin((self.make)());
        *self.busy = ENGINE;
        *self.running += 1;
        if let Some(extra) = self.extra.last_mut() {
            extra.future = Some(future);
        }
        *self.next_at = (number <= policy.retries()).then(|| at(now, policy.after()));
        if *self.owed > 0 {
            *self.owed -= 1;
            if *self.owed > 0 && number <= policy.retries() {
                self.back_off(now);
            }
        }
        true
    }
}
