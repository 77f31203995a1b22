//! The future a call under a rate limit returns, [`RateLimitCall`], named in the return type of
//! [`RateLimit::call`]. Code rarely spells it out: `.await` the call.
//!
//! Admission is at the first poll: a permit free now (one compare-and-swap), a permit reserved
//! after a wait (a timer, made on the heap, and a reservation that a call dropped while it waits
//! gives back), or a refusal. A small enum says where the call stands.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tokio::time::Sleep;

use super::rate_limit::{later, Admit, RateLimit};
use crate::rejected::{poll_refusal, FromRejected, Rejected};

pin_project! {
    /// The future of a call under a [`RateLimit`]: see [`RateLimit::call`]. Code rarely spells it
    /// out: `.await` the call.
    ///
    /// `F` is the body and `E` its error type.
    #[must_use = "futures do nothing unless polled"]
    pub struct RateLimitCall<'a, F, E> {
        // `E::from`, taken where the call is made (and its bound checked there, once).
        reject: fn(Rejected) -> E,
        stage: Stage,
        #[pin]
        body: F,
        // After `body`: a permit reserved and not yet used is given back once the body is gone.
        reserved: Reservation<'a>,
    }
}

/// Where a call stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Stage {
    /// Not polled yet: nothing asked of the limit.
    New,
    /// Its permit is reserved; it runs when the timer fires.
    Waiting,
    /// Admitted: the body runs.
    Running,
    /// Answered or refused.
    Done,
}

/// The limit, and a permit reserved for a call that waits: its timer, and the arrival time its
/// reservation set, given back if the call is dropped before the wait is over.
struct Reservation<'a> {
    limit: &'a RateLimit,
    /// The hash of the call's key, for a keyed call.
    key: Option<u64>,
    wait: Option<(Pin<Box<Sleep>>, u64)>,
}

impl Drop for Reservation<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some((_, tat)) = self.wait.take() {
            self.limit.give_back(self.key, tat);
        }
    }
}

impl<'a, F, E: FromRejected> RateLimitCall<'a, F, E> {
    /// A call of `body` under `limit`, for the key hashed `key` (`None`: unkeyed).
    pub(crate) fn new(limit: &'a RateLimit, key: Option<u64>, body: F) -> Self {
        RateLimitCall {
            reject: E::from,
            stage: Stage::New,
            body,
            reserved: Reservation {
                limit,
                key,
                wait: None,
            },
        }
    }
}

impl<'a, F, E> RateLimitCall<'a, F, E> {
    /// Asks for a permit now rather than at the first poll (the `tower` layer, which must not call
    /// its inner service for a refused request): the call, its body made by `body` once admitted
    /// (at once, or to be polled once its wait is over), or the refusal.
    #[cfg(feature = "tower")]
    pub(crate) fn admit_now(
        limit: &'a RateLimit,
        key: Option<u64>,
        reject: fn(Rejected) -> E,
        body: impl FnOnce() -> F,
    ) -> Result<Self, Rejected> {
        let mut reserved = Reservation {
            limit,
            key,
            wait: None,
        };
        let stage = reserved.ask().map_err(|retry_ns| limit.refusal(retry_ns))?;
        // Made while a permit waited for is reserved: should `body` panic, it is given back.
        let body = body();
        Ok(RateLimitCall {
            reject,
            stage,
            body,
            reserved,
        })
    }
}

impl Reservation<'_> {
    /// Asks the limit for a permit: the stage the call goes on in (running, or waiting with its
    /// timer and reservation held here), or the time until its permit frees when it is refused
    /// (its permit too far, or past the deadline of a guard around it, then given back).
    fn ask(&mut self) -> Result<Stage, u64> {
        match self.limit.admit(self.key, true) {
            Admit::Now => {
                self.limit.meter().admitted();
                Ok(Stage::Running)
            }
            Admit::Wait { wait_ns, tat } => {
                let at = later(wait_ns);
                if crate::deadline().is_some_and(|deadline| deadline < at) {
                    // The caller gives up before the permit frees: refused now.
                    self.limit.give_back(self.key, tat);
                    return Err(wait_ns);
                }
                // A runtime without a time driver panics here, with tokio's message; the
                // reservation is given back as the call is dropped.
                self.wait = Some((Box::pin(tokio::time::sleep_until(at)), tat));
                Ok(Stage::Waiting)
            }
            Admit::Refused { retry_ns } => Err(retry_ns),
        }
    }
}

impl<F, E> fmt::Debug for RateLimitCall<'_, F, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitCall")
            .field("name", &self.reserved.limit.name())
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

impl<F, T, E> Future for RateLimitCall<'_, F, E>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let limit = this.reserved.limit;
        loop {
            match *this.stage {
                Stage::New => match this.reserved.ask() {
                    Ok(stage) => *this.stage = stage,
                    Err(retry_ns) => return refuse(this.stage, *this.reject, limit, retry_ns, cx),
                },
                Stage::Waiting => {
                    let (timer, _) = this.reserved.wait.as_mut().expect("a waiting call's timer");
                    ready!(timer.as_mut().poll(cx));
                    // The permit is the call's now: nothing to give back.
                    this.reserved.wait = None;
                    limit.meter().waited();
                    *this.stage = Stage::Running;
                }
                Stage::Running => {
                    let output = ready!(this.body.poll(cx));
                    *this.stage = Stage::Done;
                    return Poll::Ready(output);
                }
                Stage::Done => panic!("a `#[rate_limit]` call was polled after it completed"),
            }
        }
    }
}

/// A refusal, once tokio's cooperative budget allows it (a loop that meets nothing but refusals
/// yields now and then): asked again at the next poll otherwise.
fn refuse<T, E>(
    stage: &mut Stage,
    reject: fn(Rejected) -> E,
    limit: &RateLimit,
    retry_ns: u64,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>> {
    ready!(poll_refusal(cx));
    *stage = Stage::Done;
    Poll::Ready(Err(reject(limit.refusal(retry_ns))))
}
