//! The future of one call through a breaker, written by hand: admitted on its first poll, the
//! body polled in place, the outcome recorded when it is ready. No allocation, no lock, and no
//! timer unless a timeout applies.

use std::future::Future;
use std::ops::Deref;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;

use super::engine::{Breaker, Permit};
use crate::rejected::{Reason, Rejected};

mod sealed {
    /// Keeps [`Counts`](super::Counts) and [`Timer`](super::Timer) to the types of this module.
    pub trait Sealed {}
}

impl sealed::Sealed for EveryError {}
impl<P> sealed::Sealed for CountIf<P> {}
impl sealed::Sealed for HeapTimer {}
impl sealed::Sealed for InlineTimer {}

/// Decides whether an error counts: [`Breaker::call`] counts every error, `call_if` asks a
/// predicate. Sealed.
pub trait Counts<E, T = ()>: sealed::Sealed {
    /// True when `error` counts as a failure.
    fn counts(&mut self, error: &E) -> bool;

    /// True when the success `ok` counts as a failure all the same (a 5xx response, for the
    /// `tower` layer's classifiers). Never, unless the outcome is judged whole.
    #[inline(always)]
    fn counts_ok(&mut self, ok: &T) -> bool {
        let _ = ok;
        false
    }
}

/// Every error counts.
#[derive(Copy, Clone, Debug, Default)]
pub struct EveryError;

impl<E, T> Counts<E, T> for EveryError {
    #[inline]
    fn counts(&mut self, _: &E) -> bool {
        true
    }
}

/// Errors count when the predicate says so.
#[derive(Copy, Clone, Debug)]
pub struct CountIf<P>(pub(crate) P);

impl<E, T, P: FnMut(&E) -> bool> Counts<E, T> for CountIf<P> {
    #[inline]
    fn counts(&mut self, error: &E) -> bool {
        (self.0)(error)
    }
}

/// An outcome judged whole, successes too (the `tower` layer's classifiers): the body's value
/// is the inner service's own `Result`, its error only a refusal.
#[cfg(feature = "tower")]
#[derive(Clone, Debug)]
pub(crate) struct Judge<J>(pub(crate) J);

/// Whether a body's value counts as a failure.
#[cfg(feature = "tower")]
pub(crate) trait JudgeOk<T> {
    fn fails(&mut self, ok: &T) -> bool;
}

#[cfg(feature = "tower")]
impl<J> sealed::Sealed for Judge<J> {}

#[cfg(feature = "tower")]
impl<E, T, J: JudgeOk<T>> Counts<E, T> for Judge<J> {
    #[inline]
    fn counts(&mut self, _: &E) -> bool {
        true
    }

    #[inline]
    fn counts_ok(&mut self, ok: &T) -> bool {
        self.0.fails(ok)
    }
}

/// Where a call keeps its timer, if a timeout applies. Sealed.
pub trait Timer: sealed::Sealed {
    /// Starts the timer for `limit`.
    fn start(self: Pin<&mut Self>, limit: Duration);
    /// True once the timer has fired; registers the waker otherwise.
    fn expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> bool;
}

/// A timer kept on the heap, allocated only when a timeout applies: the future stays small for
/// breakers without one.
#[derive(Debug, Default)]
pub struct HeapTimer(Option<Pin<Box<Sleep>>>);

impl Timer for HeapTimer {
    fn start(self: Pin<&mut Self>, limit: Duration) {
        self.get_mut().0 = Some(Box::pin(tokio::time::sleep(limit)));
    }

    #[inline]
    fn expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> bool {
        match &mut self.get_mut().0 {
            Some(sleep) => sleep.as_mut().poll(cx).is_ready(),
            None => false,
        }
    }
}

pin_project! {
    /// A timer kept inside the future, for breakers with a timeout: no allocation per call.
    #[derive(Debug, Default)]
    pub struct InlineTimer {
        #[pin]
        sleep: Option<Sleep>,
    }
}

impl Timer for InlineTimer {
    fn start(self: Pin<&mut Self>, limit: Duration) {
        self.project().sleep.set(Some(tokio::time::sleep(limit)));
    }

    #[inline]
    fn expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> bool {
        match self.project().sleep.as_pin_mut() {
            Some(sleep) => sleep.poll(cx).is_ready(),
            None => false,
        }
    }
}

#[derive(Copy, Clone, Debug)]
enum Stage {
    /// Not polled yet: nothing asked of the breaker.
    New,
    /// Admitted before its first poll (`Call::admit_now`).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    Admitted(Permit),
    /// Admitted; the body runs and has not waited yet.
    Running(Permit),
    /// The body has waited once: its timer, if a timeout applies, runs.
    Waiting(Permit),
    /// Finished; the outcome is recorded.
    Done,
}

/// The call's admission: what its breaker must be told if the call ends without an outcome.
///
/// A field of its own, declared after the body, so that Rust drops it after the body: a call
/// dropped while running (cancelled, or abandoned by a caller's own timeout) frees its probe slot
/// only once its body is gone, and counts neither way.
struct Admission<B: Deref<Target = Breaker>> {
    breaker: B,
    stage: Stage,
}

impl<B: Deref<Target = Breaker>> Drop for Admission<B> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Stage::Running(permit) | Stage::Waiting(permit) | Stage::Admitted(permit) =
            self.stage
        {
            // Runs no user code: freeing a slot never changes the state.
            self.breaker.on_ignored(permit);
        }
    }
}

/// How a completed body counts.
#[derive(Copy, Clone)]
pub(super) enum Counted {
    Success,
    Error,
    Ignored,
}

impl Counted {
    /// Records the outcome of the call admitted with `permit` (and, with the `metrics` feature,
    /// counts it): what every call through a breaker, async or blocking, ends with.
    #[inline(always)]
    pub(super) fn record(self, breaker: &Breaker, permit: Permit) {
        // The closed count rule's success: nothing to record (but its metric).
        if let (Counted::Success, Permit::Fast { .. }) = (self, permit) {
            #[cfg(feature = "metrics")]
            breaker.metrics.success();
            return;
        }
        match self {
            Counted::Success => breaker.on_success(permit),
            Counted::Error => breaker.on_error(permit),
            Counted::Ignored => breaker.on_ignored(permit),
        }
        #[cfg(feature = "metrics")]
        match self {
            Counted::Success => breaker.metrics.success(),
            Counted::Error => breaker.metrics.error(),
            Counted::Ignored => breaker.metrics.ignored(),
        }
    }
}

pin_project! {
    /// The future of a call through a [`Breaker`]: see [`Breaker::call`].
    #[must_use = "futures do nothing unless polled"]
    pub struct Call<B, F, C, T, E>
    where
        B: Deref<Target = Breaker>,
    {
        // `E::from`, taken where the call is made (and its bound checked, once).
        reject: fn(Rejected) -> E,
        counts: C,
        #[pin]
        timer: T,
        #[pin]
        body: F,
        // After `body`: see `Admission`.
        admission: Admission<B>,
    }
}

impl<B: Deref<Target = Breaker>, F, C, T, E> Call<B, F, C, T, E> {
    pub(crate) fn new(breaker: B, counts: C, timer: T, body: F) -> Self
    where
        E: From<Rejected>,
    {
        Call {
            reject: E::from,
            counts,
            timer,
            body,
            admission: Admission {
                breaker,
                stage: Stage::New,
            },
        }
    }
}

impl<B: Deref<Target = Breaker>, F, C, T, E> Call<B, F, C, T, E> {
    /// Asks for admission now rather than at the first poll (the `tower` layer, which must not
    /// call its inner service for a refused request): the call, its body made by `body` once
    /// admitted, or the refusal. Should `body` panic, the slot comes back and nothing counts.
    #[cfg(feature = "tower")]
    pub(crate) fn admit_now(
        breaker: B,
        counts: C,
        timer: T,
        body: impl FnOnce() -> F,
    ) -> Result<Self, Rejected>
    where
        E: From<Rejected>,
    {
        match breaker.admit() {
            Ok(permit) => {
                let admission = Admission {
                    breaker,
                    stage: Stage::Admitted(permit),
                };
                Ok(Call {
                    reject: E::from,
                    counts,
                    timer,
                    body: body(),
                    admission,
                })
            }
            Err(rejected) => {
                #[cfg(feature = "metrics")]
                breaker.metrics.refused();
                Err(rejected)
            }
        }
    }
}

impl<B, F, C, T, R, E> Future for Call<B, F, C, T, E>
where
    B: Deref<Target = Breaker>,
    F: Future<Output = Result<R, E>>,
    C: Counts<E, R>,
    T: Timer,
{
    type Output = Result<R, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let admission = this.admission;
        let permit = match admission.stage {
            Stage::Running(permit) | Stage::Waiting(permit) => permit,
            Stage::New | Stage::Admitted(_) => {
                let permit = match admission.stage {
                    Stage::Admitted(permit) => permit,
                    _ => match admission.breaker.admit() {
                        Ok(permit) => permit,
                        Err(rejected) => {
                            admission.stage = Stage::Done;
                            #[cfg(feature = "metrics")]
                            admission.breaker.metrics.refused();
                            return Poll::Ready(Err((this.reject)(rejected)));
                        }
                    },
                };
                admission.stage = Stage::Running(permit);
                permit
            }
            Stage::Done => panic!("a breaker call was polled after it completed"),
        };
        // The body and the `count_if` predicate are user code: a panic in either counts as an
        // error, recorded here (not while unwinding, where a subscriber that panicked too would
        // abort the process), and then goes on to the caller.
        let body = this.body;
        let counts = this.counts;
        let polled = panic::catch_unwind(AssertUnwindSafe(|| match body.poll(cx) {
            Poll::Ready(outcome) => {
                let counted = match &outcome {
                    Ok(ok) if counts.counts_ok(ok) => Counted::Error,
                    Ok(_) => Counted::Success,
                    Err(error) if counts.counts(error) => Counted::Error,
                    Err(_) => Counted::Ignored,
                };
                Poll::Ready((outcome, counted))
            }
            Poll::Pending => Poll::Pending,
        }));
        let breaker = &*admission.breaker;
        match polled {
            Ok(Poll::Ready((outcome, counted))) => {
                admission.stage = Stage::Done;
                counted.record(breaker, permit);
                return Poll::Ready(outcome);
            }
            Ok(Poll::Pending) => {}
            Err(payload) => {
                admission.stage = Stage::Done;
                Counted::Error.record(breaker, permit);
                panic::resume_unwind(payload);
            }
        }
        // A body that answers on its first poll needs no timer: it starts at the first wait.
        // Admitted before: should it fail to start (no tokio time driver), the panic drops the
        // call and the slot comes back.
        if let Stage::Running(_) = admission.stage {
            admission.stage = Stage::Waiting(permit);
            if let Some(limit) = breaker.limit(permit) {
                this.timer.as_mut().start(limit);
            }
        }
        if this.timer.expired(cx) {
            admission.stage = Stage::Done;
            breaker.on_error(permit);
            #[cfg(feature = "metrics")]
            breaker.metrics.timed_out();
            let after = breaker.limit(permit).unwrap_or_default();
            return Poll::Ready(Err((this.reject)(Rejected::new(Reason::Timeout {
                circuit: breaker.circuit(),
                after,
            }))));
        }
        Poll::Pending
    }
}

impl<B, F, C, T, E> std::fmt::Debug for Call<B, F, C, T, E>
where
    B: Deref<Target = Breaker>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("breaker", &self.admission.breaker.name())
            .field("stage", &self.admission.stage)
            .finish_non_exhaustive()
    }
}
