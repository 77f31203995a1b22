//! The two drivers of the cost benchmarks: how a call's future is made and polled.
//!
//! In both, the call's future is written once, where it is polled: `pin!(make())` evaluates the
//! call (an `async fn`'s call, or a tower service's `ready()` / `call(x)`) straight into a pinned
//! slot of the calling loop's frame, and the future is never moved again. No future is passed by
//! value to a function that is not inlined: a by-value copy of a future right after it was
//! written (what a non-inlined `fn ready<F>(f: F)` does) reads it back before the stores that
//! wrote it have left the store buffer, stalls on store forwarding, and adds time that belongs to
//! the harness, more to a large future than to a small one. Both drivers park the thread on
//! `Pending` until the waker unparks it (only a contended `tokio::sync::Mutex` inside
//! tower-resilience returns `Pending` here), as a runtime's worker with nothing else to run would.
//!
//! * [`Driver::Inlined`]: the future is polled in an `#[inline(always)]` loop, so its `poll` can
//!   be inlined into the calling loop: the best case, where the optimizer sees the whole call.
//! * [`Driver::Polled`]: the future is polled through one `#[inline(never)]`
//!   [`poll_in_place`] taking `Pin<&mut F>`, as an executor polls a task: the future's
//!   construction and its `poll` are compiled apart, so its state goes through memory between
//!   the two, as it does under a real runtime.

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use tower::{Service, ServiceExt as _};

/// How a call's future is polled (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// Polled in an `#[inline(always)]` loop.
    Inlined,
    /// Polled through the non-inlined [`poll_in_place`], as an executor polls a task.
    Polled,
}

impl Driver {
    /// Both drivers, in table order.
    pub const ALL: [Driver; 2] = [Driver::Inlined, Driver::Polled];

    /// `inlined` or `polled`, as `BENCH_DRIVER` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Driver::Inlined => "inlined",
            Driver::Polled => "polled",
        }
    }

    /// The driver `BENCH_DRIVER` names.
    pub fn parse(name: &str) -> Option<Driver> {
        Driver::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// Polls the future where it lies, as an executor polls a task: never inlined, so that the
/// future's `poll` is compiled apart from the code that made it.
#[inline(never)]
pub fn poll_in_place<F: Future>(future: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    future.poll(cx)
}

/// A driver, as a type, so that each loop is compiled for one of them.
trait Drive {
    /// One call: `make()` writes the future into a pinned slot of this frame; it is polled there
    /// until it is ready, the thread parking on `Pending`.
    fn call<F: Future>(waker: &Waker, make: impl FnOnce() -> F) -> F::Output;
}

struct Inlined;
struct Polled;

impl Drive for Inlined {
    #[inline(always)]
    fn call<F: Future>(waker: &Waker, make: impl FnOnce() -> F) -> F::Output {
        let mut future = pin!(make());
        let mut cx = Context::from_waker(waker);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            std::thread::park();
        }
    }
}

impl Drive for Polled {
    #[inline(always)]
    fn call<F: Future>(waker: &Waker, make: impl FnOnce() -> F) -> F::Output {
        let mut future = pin!(make());
        let mut cx = Context::from_waker(waker);
        loop {
            if let Poll::Ready(output) = poll_in_place(future.as_mut(), &mut cx) {
                return output;
            }
            std::thread::park();
        }
    }
}

/// `n` calls `make(i)` for `i` in `0..n`, each future made in place and polled to completion by
/// `driver`; the outputs go to `black_box`.
#[inline(always)]
pub fn calls<F: Future>(driver: Driver, waker: &Waker, n: u64, make: impl FnMut(u64) -> F) {
    match driver {
        Driver::Inlined => calls_with::<Inlined, F>(waker, n, make),
        Driver::Polled => calls_with::<Polled, F>(waker, n, make),
    }
}

#[inline(always)]
fn calls_with<D: Drive, F: Future>(waker: &Waker, n: u64, mut make: impl FnMut(u64) -> F) {
    for i in 0..n {
        let _ = black_box(D::call(waker, || make(black_box(i))));
    }
}

/// `n` requests `i` in `0..n` to `service`, each as a tower service is called: `ready()`, then
/// `call(i)`, both futures made in place and polled to completion by `driver`; the outputs go
/// to `black_box`.
#[inline(always)]
pub fn service_calls<S: Service<u64>>(driver: Driver, waker: &Waker, n: u64, service: &mut S) {
    match driver {
        Driver::Inlined => service_calls_with::<Inlined, S>(waker, n, service),
        Driver::Polled => service_calls_with::<Polled, S>(waker, n, service),
    }
}

#[inline(always)]
fn service_calls_with<D: Drive, S: Service<u64>>(waker: &Waker, n: u64, service: &mut S) {
    for i in 0..n {
        let answer = match D::call(waker, || service.ready()) {
            Ok(ready) => D::call(waker, || ready.call(black_box(i))),
            Err(e) => Err(e),
        };
        let _ = black_box(answer);
    }
}
