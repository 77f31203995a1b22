//! What the attributes' `fallback = path` calls into: the split of a refusal from the body's own
//! errors, the fallback's output taken whether it is a value or a future, the fallback's copies
//! of the fn's arguments, and the report of each fallback taken (`tracing`, `metrics`). The
//! attributes' docs describe the argument; everything here is for generated code.
//!
//! The report is a `tracing` event (debug, target `resiliency::fallback`, message "the call fell
//! back") with the fields `policy` (`breaker`, `too_busy`, `race_retry`), `name` (the site's)
//! and `cause`, and with `metrics` the counter `resiliency_fallbacks_total` with those labels.
//! `cause` is [`Cause::as_str`]: `refused` under `fallback_on = "refusals"` (the default), and
//! `error` under `fallback_on = "errors"`, for every `Err`, a refusal included.

use std::fmt;
use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use crate::race_retry::MakeAttempt;
use crate::{Rejected, RetryHint};

/// A guarded call's error, the policy's refusal kept apart from the body's own errors: what a
/// fallback for refusals tells apart (the body's errors go to the caller as they are), and the
/// `tower` layers (an inner service's error, a breaker layer's counted response and its hint).
#[derive(Debug)]
pub enum Failure<E> {
    /// The policy refused the call (its `Rejected`): the fallback's case.
    Refused(Rejected),
    /// The body's error (or the inner service's).
    Error(E),
}

impl<E> From<Rejected> for Failure<E> {
    #[inline]
    fn from(rejected: Rejected) -> Self {
        Failure::Refused(rejected)
    }
}

pin_project_lite::pin_project! {
    /// The body of a guarded `async fn` (or one attempt of a raced one), its errors kept apart
    /// from the policy's refusals: [`refusals`].
    #[derive(Debug)]
    pub struct Refusals<F> {
        #[pin]
        body: F,
    }
}

impl<F, T, E> Future for Refusals<F>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, Failure<E>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project()
            .body
            .poll(cx)
            .map(|out| out.map_err(Failure::Error))
    }
}

/// The body of a guarded `async fn`, its errors kept apart from the policy's refusals.
#[inline(always)]
pub fn refusals<T, E, F>(body: F) -> Refusals<F>
where
    F: Future<Output = Result<T, E>>,
{
    Refusals { body }
}

/// The body of a guarded blocking fn, its errors kept apart from the policy's refusals.
#[inline(always)]
pub fn refusals_blocking<T, E, F>(body: F) -> impl FnOnce() -> Result<T, Failure<E>>
where
    F: FnOnce() -> Result<T, E>,
{
    move || body().map_err(Failure::Error)
}

/// The attempts of a raced `async fn`, each one's errors kept apart from the race's refusal.
#[derive(Debug)]
pub struct RefusalAttempts<M>(M);

/// The attempts `make` makes, each one's errors kept apart from the race's refusal.
#[inline(always)]
pub fn refusal_attempts<M>(make: M) -> RefusalAttempts<M> {
    RefusalAttempts(make)
}

impl<M, Fut, T, E> MakeAttempt<Refusals<Fut>> for RefusalAttempts<M>
where
    M: MakeAttempt<Fut>,
    Fut: Future<Output = Result<T, E>>,
{
    #[inline(always)]
    fn make(&mut self, attempt: u32) -> Refusals<Fut> {
        refusals(self.0.make(attempt))
    }
}

/// A `count_if` predicate typed by the body it judges (passed first, so that the compiler knows
/// the error type before it reads a closure's parameter).
#[inline(always)]
pub fn counts_for<F, T, E, P>(_body: &F, counts: P) -> P
where
    F: Future<Output = Result<T, E>>,
    P: FnMut(&E) -> bool,
{
    counts
}

/// [`counts_for`] for the body of a blocking fn.
#[inline(always)]
pub fn counts_for_blocking<F, T, E, P>(_body: &F, counts: P) -> P
where
    F: FnOnce() -> Result<T, E>,
    P: FnMut(&E) -> bool,
{
    counts
}

/// A `retry_if` predicate typed by the attempts it judges (see [`counts_for`]).
#[inline(always)]
pub fn retry_if_for<M, Fut, T, E, P>(_make: &M, retryable: P) -> P
where
    M: MakeAttempt<Fut>,
    Fut: Future<Output = Result<T, E>>,
    P: Fn(&E) -> bool,
{
    retryable
}

/// A `count_if` predicate over the body's errors, as one over [`Failure`]: a refusal counts as it
/// would without the fallback.
#[inline(always)]
pub fn on_error<E>(mut counts: impl FnMut(&E) -> bool) -> impl FnMut(&Failure<E>) -> bool {
    move |failure| match failure {
        Failure::Error(error) => counts(error),
        Failure::Refused(_) => true,
    }
}

/// A `retry_if` predicate over the attempts' errors, as one over [`Failure`].
#[inline(always)]
pub fn on_error_fn<E>(retryable: impl Fn(&E) -> bool) -> impl Fn(&Failure<E>) -> bool {
    move |failure| match failure {
        Failure::Error(error) => retryable(error),
        Failure::Refused(_) => true,
    }
}

/// A refusal's hint, or the body's error's (when its type has one).
impl<E: RetryHint> RetryHint for Failure<E> {
    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Failure::Refused(rejected) => rejected.retry_after(),
            Failure::Error(error) => error.retry_after(),
        }
    }
}

/// The output of a fallback of a fn returning `R`: `R` itself (a sync fallback) or a future of
/// it (an `async` one). The marker keeps the two apart (`Now` or `Later`).
#[diagnostic::on_unimplemented(
    message = "the fallback returns `{Self}`, but the fn returns `{R}`",
    label = "the fallback must return `{R}`, or a future of it (an `async fn`)",
    note = "a fallback takes the fn's arguments and the reason (the `Rejected`, or with `fallback_on = \"errors\"` the fn's error type), and returns what the fn returns"
)]
pub trait FallbackOutput<R, Marker> {
    /// The future that gives the fallback's value.
    type Future: Future<Output = R>;

    /// The fallback's value, as a future.
    fn into_output(self) -> Self::Future;
}

/// A fallback's value, given at once.
#[derive(Debug)]
pub enum Now {}

/// A fallback's future.
#[derive(Debug)]
pub enum Later {}

impl<R> FallbackOutput<R, Now> for R {
    type Future = Ready<R>;

    #[inline(always)]
    fn into_output(self) -> Ready<R> {
        std::future::ready(self)
    }
}

impl<F: Future> FallbackOutput<F::Output, Later> for F {
    type Future = F;

    #[inline(always)]
    fn into_output(self) -> F {
        self
    }
}

/// A fallback's output as a future of the fn's return type `R`.
#[inline(always)]
pub fn output<R, M, O: FallbackOutput<R, M>>(output: O) -> impl Future<Output = R> {
    output.into_output()
}

/// The fallback of a blocking fn returns the fn's return type itself.
#[diagnostic::on_unimplemented(
    message = "the fallback returns `{Self}`, but the blocking fn returns `{R}`",
    label = "the fallback of a blocking fn must return `{R}` (a blocking fn cannot wait for a future)",
    note = "a fallback takes the fn's arguments and the reason (the `Rejected`, or with `fallback_on = \"errors\"` the fn's error type), and returns what the fn returns"
)]
pub trait BlockingOutput<R> {
    /// The fallback's value.
    fn into_output(self) -> R;
}

impl<R> BlockingOutput<R> for R {
    #[inline(always)]
    fn into_output(self) -> R {
        self
    }
}

/// A blocking fallback's output, checked against the fn's return type `R`.
#[inline(always)]
pub fn blocking_output<R, O: BlockingOutput<R>>(output: O) -> R {
    output.into_output()
}

/// The fallback's copy of an argument, made before the call takes the argument: `&T` and `&self`
/// are copied, owned values cloned.
#[diagnostic::on_unimplemented(
    message = "`fallback` is called with the fn's arguments after the call, and `{Self}` cannot be cloned",
    label = "this argument is cloned before the call, for the fallback",
    note = "take it by reference (`&T`), share it in an `Arc`, or make it `Clone` (for a generic type, add a `Clone` bound)"
)]
pub trait FallbackArg: Clone {}

impl<T: Clone> FallbackArg for T {}

/// The fallback's copy of an argument.
#[inline(always)]
pub fn fallback_arg<T: FallbackArg>(value: &T) -> T {
    value.clone()
}

/// Why a fallback was taken: the `cause` of its `tracing` event and metric.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// `refused`: the policy refused the call (`fallback_on = "refusals"`, the default).
    Refused,
    /// `error`: the call returned an `Err` (`fallback_on = "errors"`): the body's error or the
    /// policy's refusal, converted to the fn's error type.
    Error,
}

impl Cause {
    /// The cause's label in metrics and tracing.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Refused => "refused",
            Cause::Error => "error",
        }
    }
}

/// One fn's fallback, as its reports name it: the policy it stands in for and the site's name
/// (found at its first fallback).
pub struct FallbackSite {
    policy: &'static str,
    name: fn() -> &'static str,
    resolved: OnceLock<&'static str>,
    counts: meter::Counts,
}

impl FallbackSite {
    /// The fallback of the fn whose `policy` site is called `name()`.
    pub const fn new(policy: &'static str, name: fn() -> &'static str) -> Self {
        FallbackSite {
            policy,
            name,
            resolved: OnceLock::new(),
            counts: meter::Counts::new(),
        }
    }

    /// Reports a fallback taken, then gives `reason` back for the fallback's call. Counted as a
    /// fallback (`resiliency_fallbacks_total`), never as a success of the guarded call, whose own
    /// refusal or error the policy has counted already.
    #[cold]
    pub fn taken<R>(&'static self, cause: Cause, reason: R) -> R {
        let name = *self.resolved.get_or_init(self.name);
        tracing::debug!(
            target: "resiliency::fallback",
            policy = self.policy,
            name,
            cause = cause.as_str(),
            "the call fell back"
        );
        self.counts.taken(self.policy, name, cause);
        reason
    }
}

impl fmt::Debug for FallbackSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackSite")
            .field("policy", &self.policy)
            .field("name", &self.resolved.get())
            .finish_non_exhaustive()
    }
}

/// A fallback site's counts: `resiliency_fallbacks_total` with the `metrics` feature, nothing
/// without.
#[cfg(feature = "metrics")]
mod meter {
    use std::sync::{Arc, OnceLock};

    use metrics::Counter;

    use super::Cause;
    use crate::metrics::{register, Count, Export, Sites, FALLBACKS};

    /// The count of one policy's, name's and cause's fallbacks, shared by the sites of them.
    pub(super) struct Fallbacks(Count);

    impl Export for Fallbacks {
        fn export(&self) {
            self.0.export();
        }
    }

    static SITES: Sites<Fallbacks> = Sites::new();

    /// A site's counts by cause (refused, error), each registered at its first fallback.
    pub(super) struct Counts([OnceLock<Arc<Fallbacks>>; 2]);

    impl Counts {
        pub(super) const fn new() -> Self {
            Counts([OnceLock::new(), OnceLock::new()])
        }

        pub(super) fn taken(&self, policy: &'static str, name: &'static str, cause: Cause) {
            let at = match cause {
                Cause::Refused => 0,
                Cause::Error => 1,
            };
            let cause = cause.as_str();
            self.0[at]
                .get_or_init(|| {
                    SITES.get(
                        &format!("{policy}\n{name}\n{cause}"),
                        || {},
                        |_| {
                            Fallbacks(Count::new(register(
                                || {
                                    metrics::counter!(
                                        FALLBACKS,
                                        "policy" => policy,
                                        "name" => name,
                                        "cause" => cause
                                    )
                                },
                                Counter::noop,
                            )))
                        },
                    )
                })
                .0
                .add();
        }
    }
}

/// A fallback site's counts: `resiliency_fallbacks_total` with the `metrics` feature, nothing
/// without.
#[cfg(not(feature = "metrics"))]
mod meter {
    use super::Cause;

    pub(super) struct Counts;

    impl Counts {
        pub(super) const fn new() -> Self {
            Counts
        }

        #[inline(always)]
        pub(super) fn taken(&self, _policy: &'static str, _name: &'static str, _cause: Cause) {}
    }
}
