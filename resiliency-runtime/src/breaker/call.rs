//! The futures of one call through a breaker, written by hand: the body polled in place, the
//! outcome recorded when it is ready. No allocation, no lock, and no timer unless a timeout
//! applies and the body waits.
//!
//! * [`Call`]: admitted at its first poll, in any state (`Breaker::call`, the `tower` layer, and
//!   `#[breaker]` when its closed path cannot serve the call).
//! * [`Closed`] and [`ClosedTimed`]: `#[breaker]`'s closed path, for a call that a closed breaker
//!   admitted where it was made; nothing to hand back when dropped, so no stage is kept.

use std::future::Future;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ops::Deref;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::Sleep;

use super::engine::{Breaker, Permit};
use crate::rejected::{poll_refusal, FromRejected, Reason, Rejected};

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

/// How a call turns a refusal into its error type: a function kept in the call
/// (`fn(Rejected) -> E`, its bound checked where the call is made), or [`ViaFrom`], which keeps
/// nothing and calls `E::from`. Sealed.
pub trait Reject<E>: sealed::Sealed {
    /// The error for `rejected`.
    fn reject(&self, rejected: Rejected) -> E;
}

impl<E> sealed::Sealed for fn(Rejected) -> E {}

impl<E> Reject<E> for fn(Rejected) -> E {
    #[inline]
    fn reject(&self, rejected: Rejected) -> E {
        self(rejected)
    }
}

/// Refusals become the error type through `E::from`, nothing kept in the call: see [`Reject`].
#[derive(Copy, Clone, Debug, Default)]
pub struct ViaFrom;

impl sealed::Sealed for ViaFrom {}

impl<E: FromRejected> Reject<E> for ViaFrom {
    #[inline]
    fn reject(&self, rejected: Rejected) -> E {
        E::from(rejected)
    }
}

/// A sealed trait that answers one question with a constant, and the two marker types that answer
/// it yes and no.
macro_rules! question {
    (
        $(#[$doc:meta])* $trait:ident::$answer:ident;
        $(#[$yes_doc:meta])* yes: $yes:ident;
        $(#[$no_doc:meta])* no: $no:ident;
    ) => {
        $(#[$doc])*
        pub trait $trait: sealed::Sealed {
            #[doc = concat!("True for [`", stringify!($yes), "`].")]
            const $answer: bool;
        }

        $(#[$yes_doc])*
        #[derive(Copy, Clone, Debug, Default)]
        pub struct $yes;

        $(#[$no_doc])*
        #[derive(Copy, Clone, Debug, Default)]
        pub struct $no;

        impl sealed::Sealed for $yes {}
        impl sealed::Sealed for $no {}

        impl $trait for $yes {
            const $answer: bool = true;
        }

        impl $trait for $no {
            const $answer: bool = false;
        }
    };
}

question! {
    /// Whether a call's first poll, under a closed breaker, is compiled inline where the call is
    /// awaited ([`FirstInline`]), or goes out of line with every other poll ([`FirstOutOfLine`]):
    /// for a call that runs only when the breaker is not closed, or has a timeout its site did
    /// not configure (`#[breaker]`'s other arm), whose code would only weigh on the closed path
    /// beside it. Sealed.
    FirstPoll::INLINE;
    /// The first poll of a closed breaker's call is compiled inline: see [`FirstPoll`].
    yes: FirstInline;
    /// Every poll goes out of line: see [`FirstPoll`].
    no: FirstOutOfLine;
}

/// Where a call keeps its timer, if a timeout applies. Sealed.
pub trait Timer: sealed::Sealed {
    /// Starts the timer for `limit`.
    fn start(self: Pin<&mut Self>, limit: Duration);
    /// True once the timer has fired; registers the waker otherwise.
    fn expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> bool;
    /// Stops the timer, if it was started. The call's drop calls it when its body has waited.
    fn stop(self: Pin<&mut Self>);
}

/// A timer kept on the heap, allocated only when a timeout applies: the future stays small for
/// breakers without one.
///
/// It has no drop glue of its own: the call that holds it stops it (frees the `Sleep`) when its
/// body has waited, so that the drop of a call that answered at once tests one word.
#[derive(Debug, Default)]
pub struct HeapTimer(ManuallyDrop<Option<Pin<Box<Sleep>>>>);

/// Drops what it is given, out of line: what a call holds only on its cold paths (a timer, a
/// probe's permit) is freed through functions like this one, which take values rather than the
/// call's address, so that the call's fields stay the optimizer's to forward.
#[cold]
#[inline(never)]
fn free<T>(value: T) {
    drop(value);
}

/// A timer on the heap, made out of line: the call's own address never leaves it.
#[inline(never)]
fn heap_sleep(limit: Duration) -> Pin<Box<Sleep>> {
    Box::pin(tokio::time::sleep(limit))
}

impl Timer for HeapTimer {
    #[inline(always)]
    fn start(self: Pin<&mut Self>, limit: Duration) {
        let this = self.get_mut();
        if this.0.is_some() {
            free(ManuallyDrop::into_inner(mem::take(&mut this.0)));
        }
        this.0 = ManuallyDrop::new(Some(heap_sleep(limit)));
    }

    #[inline]
    fn expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> bool {
        match &mut *self.get_mut().0 {
            Some(sleep) => sleep.as_mut().poll(cx).is_ready(),
            None => false,
        }
    }

    #[inline]
    fn stop(self: Pin<&mut Self>) {
        let this = self.get_mut();
        if this.0.is_some() {
            free(ManuallyDrop::into_inner(mem::take(&mut this.0)));
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

impl InlineTimer {
    /// True once started.
    fn started(&self) -> bool {
        self.sleep.is_some()
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

    #[cold]
    #[inline(never)]
    fn stop(self: Pin<&mut Self>) {
        self.project().sleep.set(None);
    }
}

/// Where a call stands, with its permit, in one word: two bits of stage and a bit that says the
/// body has waited, below the permit's [`Permit::bits`]. A call writes it when it first waits and
/// when it completes; its drop tests it against one mask.
#[derive(Copy, Clone, PartialEq, Eq)]
struct Stage(u64);

impl Stage {
    /// Not polled yet: nothing asked of the breaker.
    const NEW: Stage = Stage(0);
    /// Finished, at its first poll; the outcome is recorded.
    const DONE: Stage = Stage(1);
    /// Admitted, not polled yet (`Call::admit_now`), or in its first poll.
    const ADMITTED: u64 = 2;
    /// Admitted, and the body has waited: its timer, if a timeout applies, runs.
    const WAITING: u64 = 3;
    const KIND: u64 = 3;
    /// The body has waited (and may hold a timer), in every stage from then on.
    const WAITED: u64 = 4;
    /// Finished after waiting: its timer is still to stop.
    const DONE_WAITED: Stage = Stage(1 | Self::WAITED);
    /// The bits that make the drop of a call do anything: a timer to stop, or a probe's permit in
    /// a live stage.
    const DROP_WORK: u64 = Self::WAITED | Permit::PROBE;

    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    #[inline(always)]
    fn admitted(permit: Permit) -> Stage {
        Stage(Self::ADMITTED | permit.bits())
    }

    /// This admitted stage, now waiting.
    #[inline(always)]
    fn waiting(self) -> Stage {
        Stage(self.0 | Self::WAITING | Self::WAITED)
    }

    fn kind(self) -> u64 {
        self.0 & Self::KIND
    }

    fn permit(self) -> Permit {
        Permit::from_bits(self.0)
    }

    /// True when dropping the call now must hand its permit back.
    fn releases(self) -> bool {
        self.0 & Permit::PROBE != 0
    }
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind() {
            0 => f.write_str("New"),
            1 => f.write_str("Done"),
            Self::ADMITTED => f.debug_tuple("Admitted").field(&self.permit()).finish(),
            _ => f.debug_tuple("Waiting").field(&self.permit()).finish(),
        }
    }
}

pin_project! {
    /// The call's admission and its timer: what must be undone if the call ends without an
    /// outcome.
    ///
    /// A field of its own, declared after the body, so that Rust drops it after the body: a call
    /// dropped while running (cancelled, or abandoned by a caller's own timeout) frees its probe
    /// slot only once its body is gone, and counts neither way.
    struct Admission<B, T>
    where
        B: Deref<Target = Breaker>,
        T: Timer,
    {
        breaker: B,
        stage: Stage,
        #[pin]
        timer: T,
    }

    impl<B, T> PinnedDrop for Admission<B, T>
    where
        B: Deref<Target = Breaker>,
        T: Timer,
    {
        #[inline(always)]
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if this.stage.0 & Stage::DROP_WORK != 0 {
                this.timer.stop();
                if this.stage.releases() {
                    release(this.breaker, *this.stage);
                }
            }
        }
    }
}

/// Hands the probe slot of a call dropped at `stage` back. Runs no user code: freeing a slot never
/// changes the state.
#[cold]
#[inline(never)]
fn release(breaker: &Breaker, stage: Stage) {
    breaker.on_ignored(stage.permit());
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
            breaker.meter.success();
            return;
        }
        match self {
            Counted::Success => breaker.on_success(permit),
            Counted::Error => breaker.on_error(permit),
            Counted::Ignored => breaker.on_ignored(permit),
        }
        match self {
            Counted::Success => breaker.meter.success(),
            Counted::Error => breaker.meter.error(),
            Counted::Ignored => breaker.meter.ignored(),
        }
    }
}

pin_project! {
    /// The future of a call through a [`Breaker`]: see [`Breaker::call`].
    #[must_use = "futures do nothing unless polled"]
    pub struct Call<B, F, C, T, E, M = FirstInline, J = fn(Rejected) -> E>
    where
        B: Deref<Target = Breaker>,
        T: Timer,
    {
        // How a refusal becomes an `E`.
        reject: J,
        counts: C,
        #[pin]
        body: F,
        // After `body`: see `Admission`.
        #[pin]
        admission: Admission<B, T>,
        // The first poll's place (`M`), and the error type.
        types: PhantomData<(M, fn() -> E)>,
    }
}

impl<B: Deref<Target = Breaker>, F, C, T: Timer, E, M> Call<B, F, C, T, E, M> {
    pub(crate) fn new(breaker: B, counts: C, timer: T, body: F) -> Self
    where
        E: From<Rejected>,
    {
        Self::with_reject(breaker, counts, timer, body, E::from)
    }
}

impl<B: Deref<Target = Breaker>, F, C, T: Timer, E, M, J> Call<B, F, C, T, E, M, J> {
    /// A call whose refusals become errors through `reject`.
    pub(crate) fn with_reject(breaker: B, counts: C, timer: T, body: F, reject: J) -> Self {
        Call {
            reject,
            counts,
            body,
            admission: Admission {
                breaker,
                stage: Stage::NEW,
                timer,
            },
            types: PhantomData,
        }
    }
}

impl<B: Deref<Target = Breaker>, F, C, T: Timer, E, M> Call<B, F, C, T, E, M> {
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
                    stage: Stage::admitted(permit),
                    timer,
                };
                Ok(Call {
                    reject: E::from,
                    counts,
                    body: body(),
                    admission,
                    types: PhantomData,
                })
            }
            Err(rejected) => {
                breaker.meter.refused();
                Err(rejected)
            }
        }
    }
}

impl<B, F, C, T, R, E, M, J> Future for Call<B, F, C, T, E, M, J>
where
    B: Deref<Target = Breaker>,
    F: Future<Output = Result<R, E>>,
    J: Reject<E>,
    C: Counts<E, R>,
    T: Timer,
    M: FirstPoll,
{
    type Output = Result<R, E>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The first poll of a call that a closed breaker admits, and whose body answers with a
        // success: nothing to write but the stage, nothing to record but the rate rule's
        // success. Every other poll goes out of line, so that this path keeps few registers.
        let this = self.as_mut().project();
        let admission = this.admission.project();
        if M::INLINE && *admission.stage == Stage::NEW {
            if let Some(bits) = admission.breaker.admit_closed() {
                return match poll_body(this.body, this.counts, cx) {
                    Ok(Poll::Ready((outcome, Counted::Success))) => {
                        *admission.stage = Stage::DONE;
                        admission.breaker.on_success_bits(bits);
                        admission.breaker.meter.success();
                        Poll::Ready(outcome)
                    }
                    polled => self.first_poll_rest(Stage(Stage::ADMITTED | bits), polled, cx),
                };
            }
        }
        // Out of line but for the body's poll: the admission, and what follows the poll. A body
        // that cannot wait leaves no `Pending` here for the optimizer to keep.
        let stage = match self.as_mut().begin(cx) {
            Ok(stage) => stage,
            Err(refused) => return refused,
        };
        let this = self.as_mut().project();
        match poll_body(this.body, this.counts, cx) {
            Ok(Poll::Pending) => self.waits(stage, cx),
            polled => Poll::Ready(self.ends(stage, polled)),
        }
    }
}

impl<B, F, C, T, R, E, M, J> Call<B, F, C, T, E, M, J>
where
    B: Deref<Target = Breaker>,
    F: Future<Output = Result<R, E>>,
    J: Reject<E>,
    C: Counts<E, R>,
    T: Timer,
{
    /// The rest of a first poll admitted at `stage`, given what the body's poll gave: an error,
    /// an outcome that does not count, a wait, or a panic.
    #[inline(never)]
    fn first_poll_rest(
        self: Pin<&mut Self>,
        stage: Stage,
        polled: Polled<R, E>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<R, E>> {
        let this = self.project();
        let admission = this.admission.project();
        let breaker = &**admission.breaker;
        settle(
            breaker,
            stage,
            admission.stage,
            admission.timer,
            this.reject,
            polled,
            cx,
        )
    }

    /// Before the body's poll, out of line: the stage the call is at, admitted now if it was
    /// new (`Err` with the refusal, or `Pending` when the task must yield before it refuses:
    /// see [`poll_refusal`]; the call then stays new and asks again at its next poll).
    #[inline(never)]
    fn begin(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Result<Stage, Poll<Result<R, E>>> {
        let this = self.project();
        let admission = this.admission.project();
        let stage = *admission.stage;
        if stage == Stage::NEW {
            return match admission.breaker.admit_other() {
                Ok(bits) => Ok(Stage(Stage::ADMITTED | bits)),
                Err(rejected) => {
                    if poll_refusal(cx).is_pending() {
                        return Err(Poll::Pending);
                    }
                    *admission.stage = Stage::DONE;
                    admission.breaker.meter.refused();
                    Err(Poll::Ready(Err(this.reject.reject(rejected))))
                }
            };
        }
        // Admitted (the first poll) or waiting.
        if stage.kind() & Stage::ADMITTED == 0 {
            panic!("a breaker call was polled after it completed");
        }
        Ok(stage)
    }

    /// After a poll of the body at `stage` that completed or panicked, out of line.
    #[inline(never)]
    fn ends(self: Pin<&mut Self>, stage: Stage, polled: Polled<R, E>) -> Result<R, E> {
        let at = self.project().admission.project();
        let breaker = &**at.breaker;
        *at.stage = Stage(Stage::DONE.0 | stage.0 & Stage::WAITED);
        match polled {
            Ok(Poll::Ready((outcome, counted))) => {
                finish(breaker, stage, counted);
                outcome
            }
            Ok(Poll::Pending) => unreachable!("`ends` follows a completed poll"),
            Err(payload) => {
                record(breaker, stage, Counted::Error);
                panic::resume_unwind(payload)
            }
        }
    }

    /// After a poll of the body at `stage` that waits, out of line.
    #[inline(never)]
    fn waits(self: Pin<&mut Self>, stage: Stage, cx: &mut Context<'_>) -> Poll<Result<R, E>> {
        let this = self.project();
        let admission = this.admission.project();
        settle(
            admission.breaker,
            stage,
            admission.stage,
            admission.timer,
            this.reject,
            Ok(Poll::Pending),
            cx,
        )
    }
}

/// What polling the body gave: its outcome and how it counts, a wait, or a panic's payload.
type Polled<R, E> = std::thread::Result<Poll<(Result<R, E>, Counted)>>;

/// Ends a poll of a call at `stage` (admitted or waiting), given what its body's poll gave:
/// records a completed outcome, starts the timer at the first wait, checks it at every wait, and
/// counts a panic as an error before it goes on.
#[inline(always)]
fn settle<T: Timer, R, E>(
    breaker: &Breaker,
    stage: Stage,
    at: &mut Stage,
    mut timer: Pin<&mut T>,
    reject: &impl Reject<E>,
    polled: Polled<R, E>,
    cx: &mut Context<'_>,
) -> Poll<Result<R, E>> {
    let done = Stage(Stage::DONE.0 | stage.0 & Stage::WAITED);
    match polled {
        Ok(Poll::Ready((outcome, counted))) => {
            *at = done;
            finish(breaker, stage, counted);
            Poll::Ready(outcome)
        }
        Ok(Poll::Pending) => {
            if stage.kind() == Stage::ADMITTED {
                // A body that answers on its first poll needs no timer: it starts at the first
                // wait. The stage says "waiting" first: should the timer fail to start (no tokio
                // time driver), the panic drops the call and the slot comes back.
                *at = stage.waiting();
                if let Some(limit) = breaker.limit(stage.permit()) {
                    timer.as_mut().start(limit);
                }
            }
            expire(breaker, at, timer, reject, cx)
        }
        Err(payload) => {
            *at = done;
            record(breaker, stage, Counted::Error);
            panic::resume_unwind(payload)
        }
    }
}

question! {
    /// The rule a [`Closed`] call was admitted under: whether its success is recorded. Sealed.
    ClosedRule::RATE;
    /// The rate rule: a success is recorded in the window.
    yes: RateRule;
    /// The count rule: a success records nothing.
    no: CountRule;
}

pin_project! {
    /// The future of a call that a closed breaker admitted as it was made, under rule `K` with
    /// no timeout in force: the body, polled in place, and its outcome recorded when it is ready.
    /// No stage, no timer, nothing to hand back if it is dropped (a closed breaker takes no
    /// slot).
    ///
    /// Made by `#[breaker]`'s expansion only (`__private::Site::admit_closed`), which awaits it
    /// where it is made: admitted then, which is its first poll.
    #[must_use = "futures do nothing unless polled"]
    pub struct Closed<B, F, C, K> {
        breaker: B,
        // The state word that admitted it (`Breaker::admit_site`): its
        // epoch.
        word: u64,
        counts: C,
        rule: PhantomData<K>,
        #[pin]
        body: F,
    }
}

impl<B: Deref<Target = Breaker>, F, C, K> Closed<B, F, C, K> {
    /// The call of `body`, admitted by `breaker` in state `word`.
    pub(crate) fn new(breaker: B, word: u64, counts: C, body: F) -> Self {
        Closed {
            breaker,
            word,
            counts,
            rule: PhantomData,
            body,
        }
    }
}

impl<B, F, C, K, R, E> Future for Closed<B, F, C, K>
where
    B: Deref<Target = Breaker>,
    F: Future<Output = Result<R, E>>,
    C: Counts<E, R>,
    K: ClosedRule,
{
    type Output = Result<R, E>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let polled = poll_body(this.body, this.counts, cx);
        closed_end::<K, R, E>(this.breaker, *this.word, polled)
    }
}

/// The end of a poll of a closed call's body, admitted in state `word` under rule `K`: a success
/// records nothing under the count rule and goes to the window, inline, under the rate rule;
/// any other outcome is recorded out of line; a panic counts as an error and goes on. `Pending`
/// is left to the caller.
#[inline(always)]
fn closed_end<K: ClosedRule, R, E>(
    breaker: &Breaker,
    word: u64,
    polled: Polled<R, E>,
) -> Poll<Result<R, E>> {
    match polled {
        Ok(Poll::Ready((outcome, Counted::Success))) => {
            if K::RATE {
                breaker.on_untimed_rate_success(word);
            }
            breaker.meter.success();
            Poll::Ready(outcome)
        }
        Ok(Poll::Ready((outcome, counted))) => {
            Poll::Ready(settle_closed(breaker, word, counted, outcome))
        }
        Ok(Poll::Pending) => Poll::Pending,
        Err(payload) => {
            record(breaker, Stage(Breaker::untimed_bits(word)), Counted::Error);
            panic::resume_unwind(payload)
        }
    }
}

pin_project! {
    /// [`Closed`] for a site with a timeout: its timer, kept inside the future, starts at the
    /// body's first wait (if a timeout is in force then), so a call that answers at once makes
    /// none. An expired call counts as an error and ends with a timeout `Rejected`. Made by
    /// `#[breaker(timeout = ..)]`'s expansion only (`__private::Site::admit_closed_timed`).
    #[must_use = "futures do nothing unless polled"]
    pub struct ClosedTimed<B, F, K, E> {
        breaker: B,
        // The state word that admitted it: its epoch and flags.
        word: u64,
        // `E::from`, taken where the call is made (and its bound checked there, once).
        reject: fn(Rejected) -> E,
        rule: PhantomData<K>,
        #[pin]
        timer: InlineTimer,
        #[pin]
        body: F,
    }
}

impl<B: Deref<Target = Breaker>, F, K, E> ClosedTimed<B, F, K, E> {
    /// The call of `body`, admitted by `breaker` in state `word`.
    pub(crate) fn new(breaker: B, word: u64, body: F) -> Self
    where
        E: From<Rejected>,
    {
        ClosedTimed {
            breaker,
            word,
            reject: E::from,
            rule: PhantomData,
            timer: InlineTimer::default(),
            body,
        }
    }
}

impl<B, F, K, R, E> Future for ClosedTimed<B, F, K, E>
where
    B: Deref<Target = Breaker>,
    F: Future<Output = Result<R, E>>,
    K: ClosedRule,
{
    type Output = Result<R, E>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let polled = poll_body(this.body, &mut EveryError, cx);
        match closed_end::<K, R, E>(this.breaker, *this.word, polled) {
            Poll::Pending => closed_wait(this.breaker, *this.word, this.timer, this.reject, cx),
            ready => ready,
        }
    }
}

/// A poll of a [`ClosedTimed`] call whose body waits, out of line: starts the timer at the first
/// wait, and ends the call once it has fired.
#[inline(never)]
fn closed_wait<R, E>(
    breaker: &Breaker,
    word: u64,
    mut timer: Pin<&mut InlineTimer>,
    reject: &fn(Rejected) -> E,
    cx: &mut Context<'_>,
) -> Poll<Result<R, E>> {
    if !timer.started() {
        match breaker.closed_limit() {
            Some(limit) => timer.as_mut().start(limit),
            None => return Poll::Pending,
        }
    }
    if !timer.expired(cx) {
        return Poll::Pending;
    }
    let permit = Permit::from_bits(Breaker::untimed_bits(word));
    breaker.on_error(permit);
    breaker.meter.timed_out();
    let after = breaker.closed_limit().unwrap_or_default();
    Poll::Ready(Err(reject(Rejected::new(Reason::Timeout {
        circuit: breaker.circuit(),
        after,
    }))))
}

/// Records the error or ignored outcome of a call admitted in state `word` (a [`Closed`] call),
/// out of line, and hands the outcome back: so that nothing of the caller's lives across the call.
#[inline(never)]
fn settle_closed<O>(breaker: &Breaker, word: u64, counted: Counted, outcome: O) -> O {
    record(breaker, Stage(Breaker::untimed_bits(word)), counted);
    outcome
}

/// The `Debug` of a closed call, `name`, admitted by `breaker` in state `word`.
fn debug_closed(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    breaker: &Breaker,
    word: u64,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("breaker", &breaker.name())
        .field("permit", &Permit::from_bits(Breaker::untimed_bits(word)))
        .finish_non_exhaustive()
}

impl<B: Deref<Target = Breaker>, F, K, E> std::fmt::Debug for ClosedTimed<B, F, K, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_closed(f, "ClosedTimed", &self.breaker, self.word)
    }
}

impl<B: Deref<Target = Breaker>, F, C, K> std::fmt::Debug for Closed<B, F, C, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_closed(f, "Closed", &self.breaker, self.word)
    }
}

/// Polls the body, and judges its outcome when it is ready. The body and the `count_if`
/// predicate are user code: a panic in either comes back as `Err`, for the caller to count as an
/// error here (not while unwinding, where a subscriber that panicked too would abort the
/// process) before it goes on.
#[inline(always)]
fn poll_body<F, C, R, E>(body: Pin<&mut F>, counts: &mut C, cx: &mut Context<'_>) -> Polled<R, E>
where
    F: Future<Output = Result<R, E>>,
    C: Counts<E, R>,
{
    panic::catch_unwind(AssertUnwindSafe(|| match body.poll(cx) {
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
    }))
}

/// The end of a poll whose body is still waiting: the timeout, if its timer has fired.
#[inline(always)]
fn expire<T: Timer, R, E>(
    breaker: &Breaker,
    stage: &mut Stage,
    timer: Pin<&mut T>,
    reject: &impl Reject<E>,
    cx: &mut Context<'_>,
) -> Poll<Result<R, E>> {
    if !timer.expired(cx) {
        return Poll::Pending;
    }
    let permit = stage.permit();
    *stage = Stage::DONE_WAITED;
    breaker.on_error(permit);
    breaker.meter.timed_out();
    let after = breaker.limit(permit).unwrap_or_default();
    Poll::Ready(Err(reject.reject(Rejected::new(Reason::Timeout {
        circuit: breaker.circuit(),
        after,
    }))))
}

/// Records the outcome of a call admitted at `stage`: a success inline (the closed count rule's
/// has nothing to record, the rate rule's goes to its window), anything else out of line.
#[inline(always)]
fn finish(breaker: &Breaker, stage: Stage, counted: Counted) {
    if let Counted::Success = counted {
        breaker.on_success_bits(stage.0);
        breaker.meter.success();
    } else {
        record(breaker, stage, counted);
    }
}

/// Records an error or an ignored outcome of a call admitted at `stage`.
#[inline(never)]
fn record(breaker: &Breaker, stage: Stage, counted: Counted) {
    counted.record(breaker, stage.permit());
}

impl<B, F, C, T, E, M, J> std::fmt::Debug for Call<B, F, C, T, E, M, J>
where
    B: Deref<Target = Breaker>,
    T: Timer,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("breaker", &self.admission.breaker.name())
            .field("stage", &self.admission.stage)
            .finish_non_exhaustive()
    }
}
