//! The future a call under a time limit returns, [`TimeoutCall`], named in the return type of
//! [`Timeout::call`]. Code rarely spells it out: `.await` the call.
//!
//! A small enum says where the call stands: new, waiting (with its deadline), done. The clock is
//! read when the body first waits (or earlier, if the body reads its deadline); only then is the
//! timer armed, in place: a call that answers on its first poll reads no clock and registers no
//! timer. The body is polled before the timer, so a body that answers as the time runs out keeps
//! its answer, as with `tokio::time::timeout`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::timeout::Timeout;
use crate::deadline::Scope;
use crate::rejected::{FromRejected, Reason, Rejected};

pin_project! {
    /// The body, until the call ends: dropped then, before the call returns.
    #[project = BodyProj]
    #[project_replace = BodyGone]
    enum Body<F> {
        Running {
            #[pin]
            future: F,
        },
        Gone,
    }
}

pin_project! {
    /// The timer, armed at the body's first wait; disarmed (and deregistered) when the call
    /// ends.
    #[project = TimerProj]
    enum Timer {
        Idle,
        Armed {
            #[pin]
            sleep: Sleep,
        },
    }
}

pin_project! {
    /// The future of a call under a [`Timeout`]: see [`Timeout::call`]. Code rarely spells it
    /// out: `.await` the call.
    ///
    /// `F` is the body and `E` its error type.
    #[must_use = "futures do nothing unless polled"]
    pub struct TimeoutCall<'a, F, E> {
        // `E::from`, taken where the call is made (and its bound checked there, once).
        reject: fn(Rejected) -> E,
        limit: &'a Timeout,
        stage: Stage,
        #[pin]
        timer: Timer,
        #[pin]
        body: Body<F>,
    }
}

/// Where a call stands.
#[derive(Copy, Clone, Debug)]
enum Stage {
    /// Not polled yet.
    New,
    /// The body has waited: its deadline (`None`: too far for an `Instant`, never, and no timer)
    /// and the `total` it was given.
    Waiting {
        deadline: Option<Instant>,
        total_ns: u64,
    },
    /// Answered or timed out.
    Done,
}

impl<'a, F, E: FromRejected> TimeoutCall<'a, F, E> {
    pub(super) fn new(limit: &'a Timeout, body: F) -> Self {
        TimeoutCall {
            reject: E::from,
            limit,
            stage: Stage::New,
            timer: Timer::Idle,
            body: Body::Running { future: body },
        }
    }
}

impl<F, E> fmt::Debug for TimeoutCall<'_, F, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutCall")
            .field("name", &self.limit.name())
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

impl<F, T, E> Future for TimeoutCall<'_, F, E>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let BodyProj::Running { future } = this.body.as_mut().project() else {
            panic!("a `#[timeout]` call was polled after it completed");
        };
        // Whether the body had budget left before this poll: read once the timer runs, so a call
        // that answers at once does not pay for it.
        let mut had_budget = false;
        let total_ns = match *this.stage {
            Stage::New => {
                let total_ns = this.limit.total_ns();
                // The deadline counts from the body's first wait; a body that reads it sooner
                // starts the clock then.
                let scope = Scope::lazy(total_ns);
                let poll = future.poll(cx);
                let started = scope.close();
                if let Poll::Ready(output) = poll {
                    return finish(this.stage, this.body, this.limit, output);
                }
                arm(this.stage, this.timer.as_mut(), started, total_ns);
                total_ns
            }
            Stage::Waiting { deadline, total_ns } => {
                had_budget = tokio::task::coop::has_budget_remaining();
                let scope = Scope::at(deadline);
                let poll = future.poll(cx);
                drop(scope);
                if let Poll::Ready(output) = poll {
                    this.timer.set(Timer::Idle);
                    return finish(this.stage, this.body, this.limit, output);
                }
                total_ns
            }
            Stage::Done => unreachable!("a done call has no body"),
        };
        let TimerProj::Armed { sleep } = this.timer.as_mut().project() else {
            return Poll::Pending;
        };
        // As `tokio::time::timeout` polls its timer: unconstrained by tokio's cooperative budget
        // when the body spent it in this poll, so that a busy body is still cut off in time.
        let fired = if had_budget && !tokio::task::coop::has_budget_remaining() {
            Pin::new(&mut tokio::task::unconstrained(sleep))
                .poll(cx)
                .is_ready()
        } else {
            sleep.poll(cx).is_ready()
        };
        if !fired {
            return Poll::Pending;
        }
        this.timer.set(Timer::Idle);
        *this.stage = Stage::Done;
        // The body goes now, before the caller sees the error.
        this.body.project_replace(Body::Gone);
        Poll::Ready(Err((this.reject)(timed_out(this.limit, total_ns))))
    }
}

/// The body's first wait: its deadline, counted from `started` (when it read the deadline) or
/// now, and the timer armed for it (none for a deadline too far for an `Instant`). A runtime
/// without a time driver panics here, with tokio's message, as `tokio::time::timeout` does; the
/// body is dropped with the call.
#[inline(never)]
fn arm(stage: &mut Stage, mut timer: Pin<&mut Timer>, started: Option<Instant>, total_ns: u64) {
    let start = started.unwrap_or_else(Instant::now);
    let deadline = start.checked_add(Duration::from_nanos(total_ns));
    *stage = Stage::Waiting { deadline, total_ns };
    if let Some(at) = deadline {
        timer.set(Timer::Armed {
            sleep: tokio::time::sleep_until(at),
        });
    }
}

/// The body answered in time: it is dropped, and the answer returned.
#[inline]
fn finish<F, T>(stage: &mut Stage, body: Pin<&mut Body<F>>, limit: &Timeout, output: T) -> Poll<T> {
    *stage = Stage::Done;
    body.project_replace(Body::Gone);
    limit.meter().completed();
    Poll::Ready(output)
}

/// A call ran out of time: counted, told to `tracing` (debug), and its refusal.
#[cold]
#[inline(never)]
fn timed_out(limit: &Timeout, total_ns: u64) -> Rejected {
    limit.meter().timed_out();
    let (name, total) = (limit.name(), Duration::from_nanos(total_ns));
    tracing::debug!(
        target: "resiliency::timeout",
        name,
        total_ms = total.as_millis() as u64,
        "call timed out"
    );
    Rejected::new(Reason::Elapsed { name, total })
}
