//! The race: the future a raced call returns. It holds the first attempt inline and later ones
//! boxed (a call whose first attempt answers at once allocates nothing), and one timer for the
//! next event (the next staggered start, an attempt's `each` limit, the deadline), made only when
//! the first attempt has to wait.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::observe::{self, Attempt, Outcome};
use super::policy::RaceRetry;
use crate::__private::FromRejected;
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
        running: u32,
        // When the next attempt starts if none succeeds or fails first.
        next_at: Option<Instant>,
        last_error: Option<E>,
        // Failures seen whose replacement attempt has not been started yet.
        pending_launches: u32,
        // No tokio runtime: attempts start only when one fails, and there is no deadline.
        no_timer: bool,
    }

    impl<M, Fut, E, P> PinnedDrop for Race<M, Fut, E, P> {
        // Dropped by its caller (an outer timeout, a `select!`, a client gone) while attempts
        // run: they are cancelled with it, and reported as abandoned.
        fn drop(this: Pin<&mut Self>) {
            let mut this = this.project();
            if let Some(start) = *this.start {
                if *this.running > 0 && (*this.record || reporting()) {
                    let now = Instant::now();
                    let record = *this.record;
                    cancel(&mut this.first, this.extra, this.policy, record, start, now, Outcome::Abandoned);
                }
            }
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
            pending_launches: 0,
            no_timer: false,
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

/// Reports an attempt that ended: to an observer, to `tracing`, and to the latency histogram.
fn ended(
    policy: &RaceRetry,
    record: bool,
    number: u32,
    call_start: Instant,
    started: Instant,
    now: Instant,
    outcome: Outcome,
) {
    let elapsed = now.saturating_duration_since(started);
    if let Some(q) = policy.quantile().filter(|_| record) {
        // Losers count with the time they ran (a lower bound): leaving them out would teach the
        // percentile that slow attempts never happen.
        policy.latencies.record(elapsed, q);
    }
    let started = started.saturating_duration_since(call_start);
    tracing::debug!(
        target: TARGET,
        name = policy.name(),
        attempt = number,
        started_ms = started.as_secs_f64() * 1e3,
        elapsed_ms = elapsed.as_secs_f64() * 1e3,
        ?outcome,
        "attempt ended"
    );
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

impl<M, Fut, T, E, P> Future for Race<M, Fut, E, P>
where
    M: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: FromRejected,
    P: Retryable<E>,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let policy: &'static RaceRetry = this.policy;
        let mut first_polled = false;
        if !*this.begun {
            // The first poll: attempt 1 runs at once. The clock is read only if attempts are
            // reported or recorded, or once attempt 1 has to wait: a call answered without
            // waiting reads no clock and allocates nothing.
            *this.begun = true;
            policy.register();
            policy.budget.deposit();
            *this.record = sampled(policy);
            let record = *this.record;
            if record || reporting() {
                *this.start = Some(Instant::now());
            }
            this.first.set(Some((this.make)()));
            *this.launched = 1;
            *this.running = 1;
            let future = this.first.as_mut().as_pin_mut().expect("set above");
            match future.poll(cx) {
                Poll::Ready(Ok(value)) => {
                    this.first.set(None);
                    *this.running = 0;
                    if let Some(start) = *this.start {
                        ended(
                            policy,
                            record,
                            1,
                            start,
                            start,
                            Instant::now(),
                            Outcome::Won,
                        );
                    }
                    return Poll::Ready(Ok(value));
                }
                Poll::Ready(Err(error)) => {
                    this.first.set(None);
                    *this.running = 0;
                    *this.early = Some(error);
                }
                Poll::Pending => {}
            }
            first_polled = true;
            let start = *this.start.get_or_insert_with(Instant::now);
            *this.next_at = (policy.retries() > 0).then(|| at(start, policy.after()));
        }
        let start = this.start.expect("set at the first poll");
        let record = *this.record;
        let attempts = policy.retries() + 1;

        loop {
            // Poll every running attempt; the first `Ok` wins.
            let mut failed: Vec<(u32, Instant, E)> = Vec::new();
            if let Some(error) = this.early.take() {
                failed.push((1, start, error));
            }
            let mut won: Option<(u32, Instant, T)> = None;
            if let Some(future) = this
                .first
                .as_mut()
                .as_pin_mut()
                .filter(|_| !std::mem::take(&mut first_polled))
            {
                if let Poll::Ready(output) = future.poll(cx) {
                    this.first.set(None);
                    *this.running -= 1;
                    match output {
                        Ok(value) => won = Some((1, start, value)),
                        Err(error) => failed.push((1, start, error)),
                    }
                }
            }
            if won.is_none() {
                for extra in this.extra.iter_mut() {
                    let Some(future) = extra.future.as_mut() else {
                        continue;
                    };
                    if let Poll::Ready(output) = future.as_mut().poll(cx) {
                        extra.future = None;
                        *this.running -= 1;
                        match output {
                            Ok(value) => {
                                won = Some((extra.number, extra.started, value));
                                break;
                            }
                            Err(error) => failed.push((extra.number, extra.started, error)),
                        }
                    }
                }
            }

            let mut read = None;
            let mut clock = || *read.get_or_insert_with(Instant::now);

            // Failures first (in the order they were seen): one not worth another attempt ends
            // the call, unless another attempt won in the same pass.
            for (number, started, error) in failed {
                let retryable = this.retryable.retryable(&error);
                let now = clock();
                if !retryable && won.is_none() {
                    ended(
                        policy,
                        record,
                        number,
                        start,
                        started,
                        now,
                        Outcome::NotRetryable,
                    );
                    cancel(
                        &mut this.first,
                        this.extra,
                        policy,
                        record,
                        start,
                        now,
                        Outcome::Abandoned,
                    );
                    return Poll::Ready(Err(error));
                }
                let outcome = if retryable {
                    Outcome::Failed
                } else {
                    Outcome::NotRetryable
                };
                ended(policy, record, number, start, started, now, outcome);
                *this.last_error = Some(error);
                *this.pending_launches += 1;
            }

            if let Some((number, started, value)) = won {
                let timed = record || reporting();
                let now = if timed { clock() } else { start };
                if timed {
                    ended(policy, record, number, start, started, now, Outcome::Won);
                }
                if number > 1 {
                    policy.won_by_extra.fetch_add(1, Relaxed);
                }
                cancel(
                    &mut this.first,
                    this.extra,
                    policy,
                    record,
                    start,
                    now,
                    Outcome::Lost,
                );
                return Poll::Ready(Ok(value));
            }

            let mut launched_now = false;
            // Each failure starts the next attempt at once (while time and attempts remain).
            while *this.pending_launches > 0 {
                *this.pending_launches -= 1;
                let now = clock();
                if *this.launched < attempts && now < at(start, policy.total()) {
                    launched_now |= launch(&mut this, policy, now);
                }
            }

            if !*this.no_timer {
                let now = clock();
                if now >= at(start, policy.total()) {
                    policy.deadlines.fetch_add(1, Relaxed);
                    cancel(
                        &mut this.first,
                        this.extra,
                        policy,
                        record,
                        start,
                        now,
                        Outcome::Abandoned,
                    );
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
                        this.first.set(None);
                        ended(policy, record, 1, start, start, now, Outcome::TimedOut);
                        timed_out += 1;
                    }
                    for extra in this.extra.iter_mut() {
                        if extra.future.is_some() && now >= at(extra.started, each) {
                            extra.future = None;
                            ended(
                                policy,
                                record,
                                extra.number,
                                start,
                                extra.started,
                                now,
                                Outcome::TimedOut,
                            );
                            timed_out += 1;
                        }
                    }
                    if timed_out > 0 {
                        *this.running -= timed_out;
                        *this.last_error = Some(E::from(Rejected::new(Reason::AttemptTimeout {
                            name: policy.name(),
                            each,
                        })));
                        for _ in 0..timed_out {
                            if *this.launched < attempts && now < at(start, policy.total()) {
                                launched_now |= launch(&mut this, policy, now);
                            }
                        }
                    }
                }
                if this.next_at.is_some_and(|next| now >= next) && *this.launched < attempts {
                    launched_now |= launch(&mut this, policy, now);
                }
            }

            if launched_now {
                continue; // poll the new attempt at once
            }
            if *this.running == 0 {
                // Every attempt failed and no other may start (none left, or the budget is spent).
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
            let mut wake = at(start, policy.total());
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

/// Starts the next attempt at `now`, if the budget allows.
fn launch<M, Fut, T, E, P>(
    this: &mut RaceProj<'_, M, Fut, E, P>,
    policy: &'static RaceRetry,
    now: Instant,
) -> bool
where
    M: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    if !policy.budget.withdraw(policy.since_first(now)) {
        policy.budget_refused.fetch_add(1, Relaxed);
        *this.next_at = None;
        tracing::debug!(
            target: TARGET,
            name = policy.name(),
            attempt = *this.launched + 1,
            "retry budget spent: no extra attempt"
        );
        return false;
    }
    *this.launched += 1;
    *this.running += 1;
    policy.extra_attempts.fetch_add(1, Relaxed);
    this.extra.push(Extra {
        future: Some(Box::pin((this.make)())),
        number: *this.launched,
        started: now,
    });
    *this.next_at = (*this.launched <= policy.retries()).then(|| at(now, policy.after()));
    true
}

/// Cancels (drops) every attempt still running, reporting each with `outcome`.
#[allow(clippy::too_many_arguments)]
fn cancel<Fut>(
    first: &mut Pin<&mut Option<Fut>>,
    extra: &mut Vec<Extra<Fut>>,
    policy: &RaceRetry,
    record: bool,
    start: Instant,
    now: Instant,
    outcome: Outcome,
) {
    if first.is_none() && extra.is_empty() {
        return;
    }
    let timed = record || reporting();
    if first.is_some() {
        first.set(None);
        if timed {
            ended(policy, record, 1, start, start, now, outcome);
        }
    }
    for attempt in extra.drain(..) {
        if attempt.future.is_some() {
            drop(attempt.future);
            if timed {
                ended(
                    policy,
                    record,
                    attempt.number,
                    start,
                    attempt.started,
                    now,
                    outcome,
                );
            }
        }
    }
}
