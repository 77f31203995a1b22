//! The future a guarded call returns ([`TooBusy::call`]). Code rarely spells it out: `.await` the
//! call.
//!
//! A [`TooBusyCall`] asks for admission at its first poll, and holds what it was given (a slot, the
//! time it started) until it completes or is dropped.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::admission::Held;
use super::too_busy::{Refuse, TooBusy};
use crate::rejected::{poll_refusal, Rejected};

#[derive(Copy, Clone, Debug)]
enum Stage {
    New,
    /// Admitted: what it holds.
    Running(Held),
    Done,
}

/// A call's place in its guard: what it holds while its body runs.
struct Admission {
    guard: &'static TooBusy,
    stage: Stage,
}

impl Admission {
    /// The call completed; `failed` when its output is a failure.
    #[inline(always)]
    fn finish(&mut self, failed: impl FnOnce() -> bool) {
        if let Stage::Running(held) = self.stage {
            self.stage = Stage::Done;
            self.guard.done(held, held.learn && failed());
        }
    }
}

impl Drop for Admission {
    /// A call dropped while running (cancelled, or its body panicked) counts as over from here.
    // Small and inlined into every call's drop glue, where it folds away for a call that
    // completed or was never admitted.
    #[inline(always)]
    fn drop(&mut self) {
        if let Stage::Running(held) = self.stage {
            self.guard.abandoned(held);
        }
    }
}

pin_project! {
    /// The future of a call through a [`TooBusy`] guard.
    #[must_use = "futures do nothing unless polled"]
    pub struct TooBusyCall<F, O> {
        // `O`'s `Refuse` functions, taken where the call is made (and its bound checked, once),
        // behind one pointer.
        output: fn(Output<'_, O>) -> Result<O, bool>,
        #[pin]
        body: F,
        // After `body`: fields are dropped in declaration order, so a call dropped while its body
        // runs gives its slot back (and counts its time) only once the body is gone.
        admission: Admission,
    }
}

/// What a call asks of its output type's [`Refuse`]: a refusal (`Ok`), or whether an output is a
/// failure (`Err`).
enum Output<'a, O> {
    Refuse(Rejected),
    Failed(&'a O),
}

fn output<O: Refuse>(ask: Output<'_, O>) -> Result<O, bool> {
    match ask {
        Output::Refuse(rejected) => Ok(O::refused(rejected)),
        Output::Failed(output) => Err(output.failed()),
    }
}

impl<F, O> TooBusyCall<F, O>
where
    F: Future<Output = O>,
    O: Refuse,
{
    /// A call through `guard`, admitted (or refused) at its first poll.
    pub(super) fn new(guard: &'static TooBusy, body: F) -> Self {
        TooBusyCall {
            output: output::<O>,
            body,
            admission: Admission {
                guard,
                stage: Stage::New,
            },
        }
    }

    /// A call admitted already, holding `held`, its body made by `body` now. The slot is held
    /// before the body is made: a `body` that panics drops it, giving the slot back.
    #[cfg(feature = "tower")]
    #[inline(always)]
    pub(super) fn admitted(guard: &'static TooBusy, held: Held, body: impl FnOnce() -> F) -> Self {
        let admission = Admission {
            guard,
            stage: Stage::Running(held),
        };
        TooBusyCall {
            output: output::<O>,
            body: body(),
            admission,
        }
    }
}

impl<F, O> Future for TooBusyCall<F, O>
where
    F: Future<Output = O>,
{
    type Output = O;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O> {
        let this = self.project();
        match this.admission.stage {
            Stage::Running(_) => {}
            Stage::New => match this.admission.guard.admit() {
                Ok(held) => {
                    this.admission.stage = Stage::Running(held);
                    this.admission.guard.meter().admitted(held.slot);
                }
                Err(rejected) => {
                    let rejected = std::task::ready!(standing(this.admission.guard, rejected, cx));
                    this.admission.stage = Stage::Done;
                    if let Ok(refused) = (this.output)(Output::Refuse(rejected)) {
                        return Poll::Ready(refused);
                    }
                    unreachable!("a refusal is an output")
                }
            },
            Stage::Done => panic!("a `#[too_busy]` call was polled after it completed"),
        }
        let output = std::task::ready!(this.body.poll(cx));
        let ask = *this.output;
        this.admission
            .finish(|| ask(Output::Failed(&output)).err().unwrap_or(true));
        Poll::Ready(output)
    }
}

/// A refusal that stands, counted: the task yields first when its cooperative budget is spent
/// (the call stays new, asks again at its next poll, and is counted only then).
#[cold]
#[inline(never)]
fn standing(guard: &TooBusy, rejected: Rejected, cx: &mut Context<'_>) -> Poll<Rejected> {
    std::task::ready!(poll_refusal(cx));
    Poll::Ready(guard.refused(rejected))
}

impl<F, O> fmt::Debug for TooBusyCall<F, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TooBusyCall")
            .field("guard", &self.admission.guard.name())
            .field("stage", &self.admission.stage)
            .finish_non_exhaustive()
    }
}
