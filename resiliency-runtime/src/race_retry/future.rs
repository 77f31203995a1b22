//! The future a raced call returns ([`RaceRetry::run`], [`RaceRetry::run_if`]), and [`Always`],
//! the `retry_if` of [`RaceRetry::run`]'s. Code rarely spells them out: `.await` the call.
//!
//! [`RaceRetry::run`]: super::RaceRetry::run
//! [`RaceRetry::run_if`]: super::RaceRetry::run_if
//
// The race is a small state machine (`Phase`) over pieces that each own one concern:
//
// * `Attempts` (`attempts.rs`): the attempts in flight (started, polled, cancelled) and the user
//   code that makes them and judges their errors, with `busy`, whose code runs;
// * `Schedule` (`timers.rs`): when the next attempt starts (staggered, after a failure's backoff),
//   the budget token taken ahead of it, and the one timer, for the next event (the next attempt's
//   start, an attempt's `each` limit, the deadline), made only when the call has to wait;
// * `Reporter` (`reporter.rs`): what the call records (counters, latencies, budget, events).
//
// The first poll (`begin`, inline) runs attempt 1; a call it answers reads no clock and allocates
// nothing. Every later poll runs `race`: poll the attempts, check the deadline and `each`, start
// the next attempt when due, else wait.
//
// User code may panic inside a poll. The race's state is updated before each call into it, so
// that a panic leaves it consistent: the race's drop then reports the attempt whose code ran as
// panicked and cancels the others, and another poll panics at once.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::attempts::{Attempts, Cursor, Limits, ENGINE, IDLE};
use super::observe::Outcome;
use super::race_retry::RaceRetry;
use super::reporter::{self, reporting, Reporter};
use super::timers::{at, poll_until, Schedule};
use crate::deadline::Scope;
use crate::rejected::FromRejected;

use super::make::MakeAttempt;
pub use super::retryable::{Always, Hinted, Retryable};

/// The deadline of a call that started at `start` (none without a `total`).
fn race_deadline(policy: &RaceRetry, start: Instant) -> Option<Instant> {
    let total = policy.total();
    (!total.is_zero()).then(|| at(start, total))
}

/// Where a race is.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Phase {
    /// Not polled yet: no attempt made.
    New,
    /// Attempt 1 was polled; attempts run, or start, until one wins or the call ends.
    Racing,
    /// The call returned its output.
    Done,
}

/// What only a call that goes on racing after its first poll needs: a call answered at once
/// never makes it.
struct Racing<E> {
    // The one timer, made on the first wait; on the heap, so that the call's future stays small
    // and its drop cheap (see `Race`'s).
    timer: Option<Pin<Box<Sleep>>>,
    schedule: Schedule,
    last_error: Option<E>,
}

#[cold]
#[inline(never)]
fn polled_after_done() -> ! {
    panic!("a raced call was polled after it completed")
}

/// What the first poll left to `race` of attempt 1.
enum First<E> {
    /// Nothing: poll it (if held) with the others.
    Due,
    /// Polled just now, pending.
    Polled,
    /// Failed with this error, not judged yet.
    Failed(E),
}

/// The clock, read at most once per pass, when first needed.
#[derive(Default)]
struct Clock(Option<Instant>);

impl Clock {
    fn now(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}

pin_project! {
    /// The future of a raced call ([`RaceRetry::run`]).
    #[must_use = "futures do nothing unless polled"]
    #[project = RaceProj]
    pub struct Race<M, Fut, E, P> {
        policy: &'static RaceRetry,
        #[pin]
        attempts: Attempts<M, Fut, P>,
        phase: Phase,
        // From the first poll on, if attempt 1 did not end the call then, until the call ends
        // (or the drop): held only in `Phase::Racing`, as are the extra attempts, so that the
        // drop tests the phase alone.
        racing: ManuallyDrop<Option<Racing<E>>>,
        // Set at the first poll when attempts are timed, else when the first attempt waits.
        start: Option<Instant>,
        // This call's attempt latencies are recorded (`after = "pNN"`, a sample of the calls).
        record: bool,
    }

    impl<M, Fut, E, P> PinnedDrop for Race<M, Fut, E, P> {
        // Dropped by its caller (an outer timeout, a `select!`, a client gone) while it races,
        // or after a poll panicked: its attempts are cancelled with it (`abandon`). A call that
        // ended, or was never polled, holds none: `#[inline]` here and `#[inline(never)]` on
        // `abandon`, so that it is dropped with one test where it is dropped.
        #[inline]
        fn drop(this: Pin<&mut Self>) {
            if this.phase == Phase::Racing || this.attempts.busy != IDLE {
                this.abandon();
            }
        }
    }
}

impl<M, Fut, E, P> Race<M, Fut, E, P> {
    /// The drop of a race that races, or whose poll panicked: the attempts are cancelled, and
    /// reported as abandoned (the attempt whose code panicked, as panicked), then the racing
    /// state and the extra attempts are freed.
    #[cold]
    #[inline(never)]
    fn abandon(self: Pin<&mut Self>) {
        // Freed as this ends, whatever panics: a destructor of the user's while cancelling.
        let mut race = Free(self);
        race.0.as_mut().cancel_all();
    }

    /// `abandon`'s cancelling and reporting.
    fn cancel_all(self: Pin<&mut Self>) {
        let mut this = self.project();
        let panicked = match this.attempts.as_mut().take_busy() {
            IDLE | ENGINE => None,
            number => Some(number),
        };
        if panicked == Some(1) && *this.phase == Phase::Done {
            // Attempt 1 panicked in its first poll, which counts it as it ends.
            this.policy.meter().started();
        }
        let Some(start) = *this.start else {
            return;
        };
        if this.attempts.running == 0 && panicked.is_none() {
            return;
        }
        let reporter = Reporter {
            policy: this.policy,
            record: *this.record,
            start,
        };
        if !reporter.timed() {
            return; // the attempts are dropped with the fields, unreported
        }
        let now = Instant::now();
        if let Some(number) = panicked {
            this.attempts.as_mut().panicked(number, reporter, now);
        }
        this.attempts
            .as_mut()
            .cancel(reporter, true, now, Outcome::Abandoned);
    }
}

/// A race whose racing state and extra attempts are freed when this is dropped.
struct Free<'a, M, Fut, E, P>(Pin<&'a mut Race<M, Fut, E, P>>);

impl<M, Fut, E, P> Drop for Free<'_, M, Fut, E, P> {
    fn drop(&mut self) {
        let this = self.0.as_mut().project();
        // Both taken before either is dropped: should a destructor (the user's) panic, the
        // other is still dropped as the panic unwinds.
        let racing = this.racing.take();
        let extra = this.attempts.take_extra();
        drop(extra);
        drop(racing);
    }
}

impl<M, Fut, E, P> std::fmt::Debug for Race<M, Fut, E, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Race")
            .field("name", &self.policy.name())
            .field("launched", &self.attempts.launched)
            .field("running", &self.attempts.running)
            .finish_non_exhaustive()
    }
}

impl<M, Fut, E, P> Race<M, Fut, E, P> {
    pub(crate) fn new(policy: &'static RaceRetry, make: M, retryable: P) -> Self {
        Race {
            policy,
            attempts: Attempts::new(make, retryable),
            phase: Phase::New,
            racing: ManuallyDrop::new(None),
            start: None,
            record: false,
        }
    }
}

impl<M, Fut, T, E, P> Future for Race<M, Fut, E, P>
where
    M: MakeAttempt<Fut>,
    Fut: Future<Output = Result<T, E>>,
    E: FromRejected,
    P: Retryable<E>,
{
    type Output = Result<T, E>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.as_mut().project();
        assert!(
            this.attempts.busy == IDLE,
            "a raced call was polled again after it panicked"
        );
        let first = match *this.phase {
            // The common case, inline: attempt 1 answers at once.
            Phase::New => match self.as_mut().begin(cx) {
                Poll::Ready(Ok(value)) => return Poll::Ready(Ok(value)),
                Poll::Ready(Err(error)) => First::Failed(error),
                Poll::Pending => First::Polled,
            },
            Phase::Racing => First::Due,
            Phase::Done => polled_after_done(),
        };
        let mut this = self.project();
        this.attempts.as_mut().set_busy(ENGINE);
        let Racing {
            timer,
            schedule,
            last_error,
        } = this.racing.as_mut().expect("set at the first poll");
        let mut racer = Racer {
            policy: this.policy,
            attempts: this.attempts.as_mut(),
            timer,
            schedule,
            last_error,
            record: *this.record,
            start: this.start.expect("set at the first poll"),
        };
        let poll = racer.race(cx, first);
        this.attempts.as_mut().set_busy(IDLE);
        if poll.is_ready() {
            *this.phase = Phase::Done;
            // Every attempt's future is dropped by now: freeing them runs no user code.
            drop(this.attempts.take_extra());
            drop(this.racing.take());
        }
        poll
    }
}

impl<M, Fut, T, E, P> Race<M, Fut, E, P>
where
    M: MakeAttempt<Fut>,
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
        // Done unless attempt 1 is seen to wait or fail (one store on the common path). A panic
        // in its code leaves `busy` set, which the next poll checks first.
        *this.phase = Phase::Done;
        *this.record = reporter::open(policy);
        if *this.record || reporting() {
            *this.start = Some(Instant::now());
        }
        // Attempt 1 reads its deadline (`resiliency::deadline`) from the start, which the clock
        // gives when it is first read, if it was not read above.
        let limit = policy.first_limit_ns();
        let (poll, read_at) = match *this.start {
            None if limit > 0 => {
                let scope = Scope::lazy(limit);
                let poll = this.attempts.as_mut().poll_first(cx);
                (poll, scope.close())
            }
            start => {
                let deadline = |start: Instant| start.checked_add(Duration::from_nanos(limit));
                let scope = start
                    .filter(|_| limit > 0)
                    .map(|start| Scope::at(deadline(start)));
                (this.attempts.as_mut().poll_first_under(cx, scope), None)
            }
        };
        if let Poll::Ready(Ok(_)) = &poll {
            policy.meter().answered_at_once();
            if let Some(start) = *this.start {
                let record = *this.record;
                let reporter = Reporter {
                    policy,
                    record,
                    start,
                };
                reporter.ended(1, start, Instant::now(), Outcome::Won);
            }
            return poll;
        }
        policy.meter().started();
        let start = *this
            .start
            .get_or_insert_with(|| read_at.unwrap_or_else(Instant::now));
        let mut schedule = Schedule::default();
        schedule.next_at = (policy.retries() > 0).then(|| at(start, policy.after()));
        *this.phase = Phase::Racing;
        *this.racing = ManuallyDrop::new(Some(Racing {
            timer: None,
            schedule,
            last_error: None,
        }));
        poll
    }
}

/// A poll of a call that races: its attempts, and its racing state.
struct Racer<'a, M, Fut, E, P> {
    policy: &'static RaceRetry,
    attempts: Pin<&'a mut Attempts<M, Fut, P>>,
    timer: &'a mut Option<Pin<Box<Sleep>>>,
    schedule: &'a mut Schedule,
    last_error: &'a mut Option<E>,
    record: bool,
    start: Instant,
}

impl<M, Fut, T, E, P> Racer<'_, M, Fut, E, P>
where
    M: MakeAttempt<Fut>,
    Fut: Future<Output = Result<T, E>>,
    E: FromRejected,
    P: Retryable<E>,
{
    /// Every poll after attempt 1's first: poll the attempts, end the call at the deadline,
    /// start the next attempt when due, else wait for an attempt or the next timed event.
    #[inline(never)]
    fn race(&mut self, cx: &mut Context<'_>, mut first: First<E>) -> Poll<Result<T, E>> {
        let start = self.start;
        let reporter = Reporter {
            policy: self.policy,
            record: self.record,
            start,
        };
        let deadline_at = at(start, self.policy.total());
        loop {
            let mut clock = Clock::default();
            let first = std::mem::replace(&mut first, First::Due);
            if let Some(output) = self.settle(cx, reporter, first, &mut clock) {
                return Poll::Ready(output);
            }
            let now = clock.now();
            if let Some(error) = self.expire(reporter, deadline_at, now) {
                return Poll::Ready(Err(error));
            }
            if self.advance(reporter, now) {
                continue; // poll the new attempt at once
            }
            if let Some(error) = self.finished(deadline_at) {
                return Poll::Ready(Err(error));
            }
            if self.schedule.no_timer {
                return Poll::Pending;
            }
            let wake = self.wake(start, deadline_at);
            match poll_until(self.timer, cx, wake) {
                Some(Poll::Ready(())) => {}
                Some(Poll::Pending) => return Poll::Pending,
                None => {
                    self.schedule.no_timer = true;
                    return Poll::Pending;
                }
            }
        }
    }

    /// Polls every running attempt; the first `Ok` wins, and the others are cancelled. Failures
    /// are reported as they are seen; one not worth another attempt ends the call, unless another
    /// attempt wins in the same pass.
    fn settle(
        &mut self,
        cx: &mut Context<'_>,
        reporter: Reporter,
        first: First<E>,
        clock: &mut Clock,
    ) -> Option<Result<T, E>> {
        let mut cursor = Cursor::new(!matches!(first, First::Due));
        let mut fatal = None;
        if let First::Failed(error) = first {
            fatal = self.failed(reporter, 1, reporter.start, error, clock.now());
        }
        let start = reporter.start;
        let limits = Limits {
            deadline: race_deadline(self.policy, start),
            each: self.policy.each(),
        };
        while let Some((number, started, output)) =
            self.attempts
                .as_mut()
                .poll_next(cx, &mut cursor, start, limits)
        {
            match output {
                Ok(value) => {
                    reporter.won(number);
                    let timed = reporter.timed();
                    let now = if timed { clock.now() } else { start };
                    if timed {
                        reporter.ended(number, started, now, Outcome::Won);
                    }
                    self.attempts
                        .as_mut()
                        .cancel(reporter, timed, now, Outcome::Lost);
                    return Some(Ok(value));
                }
                Err(error) => {
                    let error = self.failed(reporter, number, started, error, clock.now());
                    fatal = fatal.or(error);
                }
            }
        }
        let error = fatal?;
        reporter.policy.meter().failed(false);
        let (timed, now) = (reporter.timed(), clock.now());
        self.attempts
            .as_mut()
            .cancel(reporter, timed, now, Outcome::Abandoned);
        Some(Err(error))
    }

    /// Attempt `number` failed with `error` at `now`: reported, and kept as the call's last error
    /// (its replacement is owed), or returned when `retry_if` says it is not worth another.
    fn failed(
        &mut self,
        reporter: Reporter,
        number: u32,
        started: Instant,
        error: E,
        now: Instant,
    ) -> Option<E> {
        if !self.attempts.as_mut().judge(number, &error) {
            reporter.ended(number, started, now, Outcome::NotRetryable);
            return Some(error);
        }
        reporter.ended(number, started, now, Outcome::Failed);
        let hint = self.attempts.as_mut().hint(number, &error);
        *self.last_error = Some(error);
        self.schedule.owe(reporter, self.attempts.launched, now);
        if let Some(hint) = hint {
            self.schedule.hold(reporter, at(now, hint));
        }
        None
    }

    /// At `now`: the error that ends the call if its deadline passed; attempts past `each` are
    /// dropped, as failures. Without timers, neither applies.
    fn expire(&mut self, reporter: Reporter, deadline_at: Instant, now: Instant) -> Option<E> {
        if self.schedule.no_timer {
            return None;
        }
        if now >= deadline_at {
            reporter.count_deadline();
            let timed = reporter.timed();
            self.attempts
                .as_mut()
                .cancel(reporter, timed, now, Outcome::Abandoned);
            let rejected = reporter.deadline_passed(self.attempts.launched);
            return Some(E::from(rejected));
        }
        let each = self.policy.each()?;
        let timed_out = self.attempts.as_mut().time_out(each, reporter, now);
        if timed_out > 0 {
            *self.last_error = Some(E::from(reporter.timed_out(each)));
            for _ in 0..timed_out {
                self.schedule.owe(reporter, self.attempts.launched, now);
            }
        }
        None
    }

    /// Starts the next attempt if it is due at `now`, a slot is free (`max_attempts_in_flight`)
    /// and the budget allows: whether it did.
    fn advance(&mut self, reporter: Reporter, now: Instant) -> bool {
        let more = self.attempts.more(self.policy.retries() + 1);
        // With nothing else running, a failure's replacement starts unless the deadline comes
        // first: its token is taken now, so that a call the budget refuses ends at once
        // rather than after its backoff.
        if self.schedule.owed > 0 && self.attempts.running == 0 && more {
            self.schedule.pay(reporter, self.attempts.launched, now);
        }
        if !(more && self.schedule.due(now) && self.slot_free()) {
            return false;
        }
        if !self.schedule.pay(reporter, self.attempts.launched, now) {
            return false;
        }
        reporter.extra_started();
        let limits = Limits {
            deadline: race_deadline(self.policy, reporter.start),
            each: self.policy.each(),
        };
        let number = self.attempts.as_mut().launch(now, limits);
        self.schedule.started(reporter, number, now);
        true
    }

    /// The error that ends the call when every attempt failed and no other may start before the
    /// deadline (none left, the budget is spent, or the backoff ends too late).
    fn finished(&mut self, deadline_at: Instant) -> Option<E> {
        let more = self.attempts.more(self.policy.retries() + 1);
        if self.attempts.running > 0 || self.schedule.starting(more, deadline_at) {
            return None;
        }
        let launched = self.attempts.launched;
        let policy = self.policy;
        let error = self.last_error.take();
        policy.meter().failed(error.is_none());
        Some(error.unwrap_or_else(|| E::from(reporter::deadline(policy, launched))))
    }

    /// Whether fewer attempts run than `max_attempts_in_flight`: an attempt that is due starts
    /// only then (else when one of those running ends, which wakes the call).
    fn slot_free(&self) -> bool {
        self.attempts.running < self.policy.slots()
    }

    /// When to wake if no attempt does: the deadline, the next attempt's start (with a slot
    /// free for it), or the first attempt running (attempt 1 since `start`) to reach `each`,
    /// whichever comes first.
    fn wake(&self, start: Instant, deadline_at: Instant) -> Instant {
        let mut wake = deadline_at;
        if let Some(next) = self.schedule.next_at {
            if self.attempts.more(self.policy.retries() + 1) && self.slot_free() {
                wake = wake.min(next);
            }
        }
        let each = self.policy.each();
        let limit = each.and_then(|each| self.attempts.limit(start, each));
        limit.map_or(wake, |limit| wake.min(limit))
    }
}
