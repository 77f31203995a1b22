//! The future a breaker call returns, [`BreakerCall`], named in the return types of
//! [`Breaker::call`] and [`Breaker::call_if`]. Code rarely spells it out: `.await` the call.
//!
//! The call is admitted at its first poll, its body polled in place and its outcome recorded
//! when the body completes. A small enum says where it stands: new, running (with its permit,
//! and whether the body has waited: the clock is read then), done. The permit carries what the call
//! needs of the breaker's settings (the rule, whether a time applies), read at admission. When a
//! time applies, the body's first wait starts the timer (made on the heap, so a call that
//! answers at once, or has no timeout, makes none and the future stays small) and notes when the
//! call becomes slow (`slow_call_duration`); a success past that counts as a failure. No lock.

use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::breaker::{nanos, Breaker};
use super::record::Outcome;
use super::word::Permit;
use crate::deadline::Scope;
use crate::rejected::{poll_refusal, Reason, Rejected};

pin_project! {
    /// The future of a call through a [`Breaker`]: see [`Breaker::call`]. Code rarely spells it
    /// out: `.await` the call.
    ///
    /// `B` is the breaker's handle (`&Breaker`, or an `Arc<Breaker>` from a keyed family), `F`
    /// the body, `E` its error type, `P` says whether an error counts (every error for
    /// [`Breaker::call`], the predicate given to [`Breaker::call_if`]) and `H` reads how long an
    /// error's upstream asked callers to wait (none but for [`Breaker::call_hinted`]).
    #[must_use = "futures do nothing unless polled"]
    pub struct BreakerCall<B, F, E, P = fn(&E) -> bool, H = fn(&E) -> Option<Duration>>
    where
        B: Deref<Target = Breaker>,
    {
        // `E::from`, taken where the call is made (and its bound checked there, once).
        reject: fn(Rejected) -> E,
        count_if: P,
        hint: H,
        #[pin]
        body: F,
        // When the call becomes slow (ns on the breaker's clock), noted at the body's first
        // wait if `slow_call_duration` applies; 0 for never.
        slow_at: u64,
        // After `body`, so dropped after it: see `Admission`.
        admission: Admission<B>,
    }
}

/// Where a call stands. Small and `Copy`: the timer, the one part of a call that is neither, is
/// a field of its own, touched only once the body waits.
#[derive(Copy, Clone, Debug)]
enum Stage {
    /// Not polled yet: nothing asked of the breaker.
    New,
    /// Admitted: the body runs. `waited` once it has waited, when the clock was read for the
    /// call's times.
    Running { permit: Permit, waited: bool },
    /// Completed (or refused): the outcome is recorded.
    Done,
}

/// The call's breaker, stage and timer: what must be undone if the call ends without an outcome.
///
/// A field of its own, declared after the body, so that Rust drops it after the body: a call
/// dropped while running (cancelled, or abandoned by a caller's own timeout) frees its probe slot
/// only once its body is gone, and counts neither way.
struct Admission<B: Deref<Target = Breaker>> {
    breaker: B,
    stage: Stage,
    /// Started at the body's first wait, if a timeout applies to the call; on the heap, so that
    /// a call that answers at once (or has no timeout) stays small and makes none. Only a
    /// running call holds one (a call that ends frees it then), so the drop below, which tests
    /// the stage alone, frees it: a call that never waited pays for one test when dropped.
    timer: ManuallyDrop<Option<Pin<Box<Sleep>>>>,
}

impl<B: Deref<Target = Breaker>> Drop for Admission<B> {
    // `#[inline]` here and `#[inline(never)]` on `abandon`: a call that ended is dropped with
    // one test, where it is dropped; without them the drop stays out of line, and a closed call
    // through `#[breaker]` costs about 10 more instructions (breaker benchmark, callgrind).
    #[inline]
    fn drop(&mut self) {
        if let Stage::Running { permit, .. } = self.stage {
            abandon(&self.breaker, permit, &mut self.timer);
        }
    }
}

/// A running call dropped: its timer freed, its slot (if a probe's) handed back. Out of line.
#[inline(never)]
fn abandon(breaker: &Breaker, permit: Permit, timer: &mut Option<Pin<Box<Sleep>>>) {
    drop(timer.take());
    breaker.release(permit);
}

impl<B: Deref<Target = Breaker>, F, E: From<Rejected>, P, H> BreakerCall<B, F, E, P, H> {
    /// A call of `body` through `breaker`, admitted (or refused) at its first poll, its errors
    /// counted when `count_if` says so, the wait their upstream asked for read by `hint`.
    pub(crate) fn new(breaker: B, body: F, count_if: P, hint: H) -> Self {
        BreakerCall {
            reject: E::from,
            count_if,
            hint,
            body,
            slow_at: 0,
            admission: Admission {
                breaker,
                stage: Stage::New,
                timer: ManuallyDrop::new(None),
            },
        }
    }

    /// Asks for admission now rather than at the first poll (the `tower` layer, which must not
    /// call its inner service for a refused request): the call, its body made by `body` once
    /// admitted, or the refusal. Should `body` panic, the slot comes back and nothing counts.
    #[cfg(feature = "tower")]
    pub(crate) fn admit_now(
        breaker: B,
        count_if: P,
        hint: H,
        body: impl FnOnce() -> F,
    ) -> Result<Self, Rejected> {
        match breaker.admit() {
            Ok(permit) => {
                let mut admission = Admission {
                    breaker,
                    stage: Stage::Running {
                        permit,
                        waited: false,
                    },
                    timer: ManuallyDrop::new(None),
                };
                // The body is made under the call's deadline, as it is polled: a service's
                // `call` that reads the time left (for a header) starts the clock there.
                let scope = match admission.breaker.limit_ns(permit) {
                    0 => None,
                    ns => Some(Scope::lazy(ns)),
                };
                let body = body();
                let mut slow_at = 0;
                if let Some(started) = scope.and_then(Scope::close) {
                    start_clock(
                        &admission.breaker,
                        permit,
                        &mut admission.timer,
                        &mut slow_at,
                        Some(started),
                    );
                    admission.stage = Stage::Running {
                        permit,
                        waited: true,
                    };
                }
                Ok(BreakerCall {
                    reject: E::from,
                    count_if,
                    hint,
                    body,
                    slow_at,
                    admission,
                })
            }
            Err(rejected) => {
                breaker.meter.refused();
                Err(rejected)
            }
        }
    }
}

impl<B, F, E, P, H, T> Future for BreakerCall<B, F, E, P, H>
where
    B: Deref<Target = Breaker>,
    F: Future<Output = Result<T, E>>,
    P: FnMut(&E) -> bool,
    H: FnMut(&E) -> Option<Duration>,
{
    type Output = Result<T, E>;

    // `#[inline]`: LLVM leaves the poll out of line otherwise, and a closed call through
    // `#[breaker]` costs 22 to 37 more instructions (breaker benchmark, callgrind).
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.as_mut().project();
        let Admission { breaker, stage, .. } = this.admission;
        // Admitted now, the permit stays in a local until the body waits: nothing between here
        // and the end of the poll unwinds past it (the body and `count_if` run under
        // `catch_unwind`), so the stage is written once, `Done` or `Running`.
        let (permit, waited) = match *stage {
            Stage::Running { permit, waited } => (permit, waited),
            // A closed breaker admits here; its other states, out of line.
            Stage::New => match breaker.admit_closed() {
                Some(permit) => (permit, false),
                None => return self.poll_admitting(cx),
            },
            Stage::Done => panic!("a breaker call was polled after it completed"),
        };
        // A call no time limit applies to is polled here; under one, out of line, where the body
        // reads its deadline (`resiliency::deadline`) while it is polled. (Polled here under a
        // scope, a closed call without a timeout would cost about 30 more instructions: breaker
        // benchmark, callgrind.)
        if !permit.untimed() {
            return self.poll_timed(permit, waited, cx);
        }
        let polled = poll_body(this.body, this.count_if, cx);
        // An untimed call never has a timer, nor is it ever slow (`slow_call_duration` makes
        // the word timed too): locals say so, and the checks fold away.
        let (mut no_timer, mut never_slow) = (None, 0);
        let call = Running {
            breaker,
            stage,
            permit,
            waited,
            timer: &mut no_timer,
            slow_at: &mut never_slow,
            reject: *this.reject,
        };
        call.settle(polled, None, this.hint, cx)
    }
}

impl<B, F, E, P, H, T> BreakerCall<B, F, E, P, H>
where
    B: Deref<Target = Breaker>,
    F: Future<Output = Result<T, E>>,
    P: FnMut(&E) -> bool,
    H: FnMut(&E) -> Option<Duration>,
{
    /// The first poll of a call that a closed breaker did not admit at once: admission in the
    /// breaker's other states (refused, or admitted as a probe, a forced-closed or bypassed call,
    /// or a closed one after all), then the poll of a call a time limit may apply to.
    #[inline(never)]
    fn poll_admitting(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let this = self.as_mut().project();
        let Admission { breaker, stage, .. } = this.admission;
        match breaker.admit() {
            Ok(permit) => self.poll_timed(permit, false, cx),
            Err(rejected) => refuse(breaker, stage, *this.reject, rejected, cx),
        }
    }

    /// The poll of a call admitted with `permit` (its body has `waited` before) that a time
    /// limit may apply to: its body polled under its deadline (the timer's once the body has
    /// waited; before that, the limit counted from when the body first reads it, if it does, and
    /// the timer then starts from there). The stage is written when the poll settles: nothing
    /// before that unwinds (the body runs under `catch_unwind`).
    #[inline(never)]
    fn poll_timed(
        self: Pin<&mut Self>,
        permit: Permit,
        waited: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, E>> {
        let this = self.project();
        let Admission {
            breaker,
            stage,
            timer,
        } = this.admission;
        let scope = match &**timer {
            Some(sleep) => Some(Scope::at(Some(sleep.deadline()))),
            None => match breaker.limit_ns(permit) {
                0 => None,
                ns => Some(Scope::lazy(ns)),
            },
        };
        let polled = poll_body(this.body, this.count_if, cx);
        let started = scope.and_then(Scope::close);
        let call = Running {
            breaker,
            stage,
            permit,
            waited,
            timer,
            slow_at: this.slow_at,
            reject: *this.reject,
        };
        call.settle(polled, started, this.hint, cx)
    }
}

/// A call admitted and running: what a poll of its body settles.
struct Running<'a, E> {
    breaker: &'a Breaker,
    stage: &'a mut Stage,
    permit: Permit,
    waited: bool,
    timer: &'a mut Option<Pin<Box<Sleep>>>,
    slow_at: &'a mut u64,
    reject: fn(Rejected) -> E,
}

impl<E> Running<'_, E> {
    /// The call after its body's poll: its outcome recorded when the body is done (with the wait
    /// its upstream asked for if it failed, `hint`), its clock started when it first waits (from
    /// `started`, if the body read its deadline before), the timer's refusal once it fires.
    #[inline(always)]
    fn settle<T, H>(
        self,
        polled: std::thread::Result<Poll<(Result<T, E>, Outcome)>>,
        started: Option<Instant>,
        hint: &mut H,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, E>>
    where
        H: FnMut(&E) -> Option<Duration>,
    {
        let Running {
            breaker,
            stage,
            permit,
            waited,
            timer,
            slow_at,
            reject,
        } = self;
        match polled {
            Ok(Poll::Ready((output, outcome))) => {
                *stage = Stage::Done;
                *timer = None;
                let slow = *slow_at != 0 && breaker.now() >= *slow_at;
                match outcome {
                    Outcome::Success if slow => breaker.record(permit, Outcome::Slow),
                    Outcome::Error => record_error(breaker, permit, &output, hint),
                    outcome => breaker.record(permit, outcome),
                }
                Poll::Ready(output)
            }
            Ok(Poll::Pending) => {
                *stage = Stage::Running {
                    permit,
                    waited: true,
                };
                if !waited {
                    start_clock(breaker, permit, timer, slow_at, started);
                }
                wait(breaker, stage, permit, timer, reject, cx)
            }
            Err(payload) => {
                *stage = Stage::Done;
                *timer = None;
                breaker.record(permit, Outcome::Error);
                panic::resume_unwind(payload)
            }
        }
    }
}

/// Polls the body, and judges its outcome when it is ready. The body and the `count_if`
/// predicate are user code: a panic in either comes back as `Err`, for the caller to count as an
/// error (not while unwinding, where a subscriber that panicked too would abort the process)
/// before it goes on.
// `#[inline(always)]`: called from two places (the untimed poll and `poll_timed`); out of line,
// a closed call costs about 20 more instructions (breaker benchmark, callgrind).
#[allow(clippy::type_complexity)]
#[inline(always)]
fn poll_body<F, P, T, E>(
    body: Pin<&mut F>,
    count_if: &mut P,
    cx: &mut Context<'_>,
) -> std::thread::Result<Poll<(Result<T, E>, Outcome)>>
where
    F: Future<Output = Result<T, E>>,
    P: FnMut(&E) -> bool,
{
    panic::catch_unwind(AssertUnwindSafe(|| match body.poll(cx) {
        Poll::Ready(output) => {
            let outcome = match &output {
                Ok(_) => Outcome::Success,
                Err(error) if count_if(error) => Outcome::Error,
                Err(_) => Outcome::Ignored,
            };
            Poll::Ready((output, outcome))
        }
        Poll::Pending => Poll::Pending,
    }))
}

/// Records an error that counts, with the wait its upstream asked for if `hint` reads one. The
/// reader is user code (a `RetryHint` impl): should it panic, the error counts as an error and
/// the panic goes on to the caller. Out of the success path.
#[cold]
pub(crate) fn record_error<T, E, H>(
    breaker: &Breaker,
    permit: Permit,
    output: &Result<T, E>,
    hint: &mut H,
) where
    H: FnMut(&E) -> Option<Duration>,
{
    let read = match output {
        Err(error) => panic::catch_unwind(AssertUnwindSafe(|| hint(error))),
        Ok(_) => Ok(None),
    };
    match read {
        Ok(Some(wait)) => breaker.record_hinted(permit, wait),
        Ok(None) => breaker.record(permit, Outcome::Error),
        Err(payload) => {
            breaker.record(permit, Outcome::Error);
            panic::resume_unwind(payload)
        }
    }
}

/// A refused call: it ends with the refusal, once the task may go on (see [`poll_refusal`]: if
/// it must yield first, the call stays new and asks again at its next poll).
fn refuse<T, E>(
    breaker: &Breaker,
    stage: &mut Stage,
    reject: fn(Rejected) -> E,
    rejected: Rejected,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>> {
    ready!(poll_refusal(cx));
    *stage = Stage::Done;
    breaker.meter.refused();
    Poll::Ready(Err(reject(rejected)))
}

/// The body's first wait: the timer starts if a timeout applies (should it fail to start, with
/// no tokio time driver, the panic drops the call, which gives its slot back), from `started`
/// if the body read its deadline before (so that the deadline it read is the timer's), and the
/// time the call becomes slow is noted if `slow_call_duration` applies.
fn start_clock(
    breaker: &Breaker,
    permit: Permit,
    timer: &mut Option<Pin<Box<Sleep>>>,
    slow_at: &mut u64,
    started: Option<Instant>,
) {
    if let Some(limit) = breaker.limit(permit) {
        let sleep = match started.and_then(|started| started.checked_add(limit)) {
            Some(at) => tokio::time::sleep_until(at),
            None => tokio::time::sleep(limit),
        };
        *timer = Some(Box::pin(sleep));
    }
    if let Some(after) = breaker.slow_after(permit) {
        *slow_at = breaker.now().saturating_add(nanos(after));
    }
}

/// A poll whose body waits: once the timer (if any) fires, the call ends, counted as an error,
/// with a timeout `Rejected`.
fn wait<T, E>(
    breaker: &Breaker,
    stage: &mut Stage,
    permit: Permit,
    timer: &mut Option<Pin<Box<Sleep>>>,
    reject: fn(Rejected) -> E,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>> {
    let Some(sleep) = timer else {
        return Poll::Pending;
    };
    // Unconstrained by tokio's cooperative budget, as `tokio::time::timeout` polls its timer: a
    // body that spent the budget in this poll must still be cut off when its time is up.
    ready!(Pin::new(&mut tokio::task::unconstrained(sleep.as_mut())).poll(cx));
    *timer = None;
    *stage = Stage::Done;
    breaker.record(permit, Outcome::TimedOut);
    Poll::Ready(Err(reject(Rejected::new(Reason::Timeout {
        circuit: breaker.circuit(),
        after: breaker.limit(permit).unwrap_or_default(),
    }))))
}

impl<B: Deref<Target = Breaker>, F, E, P, H> fmt::Debug for BreakerCall<B, F, E, P, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerCall")
            .field("breaker", &self.admission.breaker.name())
            .field("stage", &self.admission.stage)
            .finish_non_exhaustive()
    }
}
