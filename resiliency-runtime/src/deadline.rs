//! The time a guarded call has left, readable by its body: [`deadline`] and [`time_left`].

use std::cell::Cell;
use std::time::Duration;

use tokio::time::Instant;

/// When the code running now will be cut off by the guards around it (the soonest of their
/// deadlines), or `None` outside any guard with a time limit.
///
/// Inside a call guarded by a time limit (a breaker's `timeout` or `half_open_timeout`, a raced
/// call's `total` and, for each attempt, `each`; through the attributes, the builders or the
/// `tower` layers alike), the body can read when the call will be cut off, and pass it on: as an
/// upstream's timeout header, a database statement timeout, a gRPC deadline. Nested guards give
/// the tighter deadline: a race with a `total` of 10 s under a breaker's `timeout` of 1 s sees the
/// breaker's.
///
/// ```
/// use std::time::Duration;
/// use resiliency::{breaker, race_retry, Rejected};
///
/// #[breaker(timeout = "2s")]
/// async fn fetch(id: u64) -> Result<String, Rejected> {
///     // What an upstream call would send as its timeout header.
///     let left = resiliency::time_left().expect("under a timeout");
///     Ok(format!("GET /item/{id} x-timeout-ms: {}", left.as_millis()))
/// }
///
/// #[race_retry(retries = 1, after = "100ms", total = "500ms")]
/// async fn inner() -> Result<Duration, Rejected> {
///     Ok(resiliency::time_left().expect("under a deadline"))
/// }
///
/// #[breaker(timeout = "300ms")]
/// async fn outer() -> Result<Duration, Rejected> {
///     inner().await
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// assert_eq!(fetch(7).await.unwrap(), "GET /item/7 x-timeout-ms: 2000");
/// // The race's 500 ms, under the breaker's 300 ms: the tighter one.
/// assert_eq!(outer().await.unwrap(), Duration::from_millis(300));
/// assert_eq!(resiliency::deadline(), None); // outside any guard
/// # }
/// ```
///
/// The deadline belongs to the code the guard polls: set while the guard polls its body (each
/// attempt of a race under its own), put back as it was when the poll returns, panics included.
/// A task the body spawns does not inherit it (pass it on, as an `Instant`, if it should), nor
/// does a thread; a blocking fn under `#[breaker]` has no `timeout`, so none. Reading it costs a
/// thread-local read, and a clock read the first time a call's deadline is asked for before the
/// call has waited (a guard starts its clock when its body first waits, so that a call that
/// answers at once reads no clock).
pub fn deadline() -> Option<Instant> {
    CURRENT
        .try_with(|current| {
            let mut now = current.get();
            let at = now.read();
            current.set(now);
            at
        })
        .ok()
        .flatten()
}

/// How long until [`deadline`]: zero once it passed, `None` outside any guard with a time limit.
pub fn time_left() -> Option<Duration> {
    deadline().map(|at| at.saturating_duration_since(Instant::now()))
}

/// What the code running now is under.
#[derive(Clone, Copy, Debug, Default)]
struct Current {
    /// The soonest deadline known of the guards around this code.
    at: Option<Instant>,
    /// The innermost guard's time limit in ns, counted from the first time it is read, while that
    /// guard has not started its clock; 0 for none.
    lazy: u64,
    /// When the innermost guard's lazy limit was first read: its clock's start.
    started: Option<Instant>,
}

impl Current {
    /// The deadline, fixing a lazy limit from now.
    fn read(&mut self) -> Option<Instant> {
        if self.lazy != 0 {
            let limit = Duration::from_nanos(std::mem::take(&mut self.lazy));
            let now = Instant::now();
            self.started = Some(now);
            self.at = sooner(self.at, now.checked_add(limit));
        }
        self.at
    }
}

thread_local! {
    static CURRENT: Cell<Current> = const {
        Cell::new(Current { at: None, lazy: 0, started: None })
    };
}

/// The sooner of two deadlines, `None` being never.
fn sooner(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The deadline of the code a guard polls, for as long as this lives: the deadline as it was is
/// put back when it is dropped (a poll that panicked too).
#[derive(Debug)]
#[must_use = "the deadline holds until the scope is dropped"]
pub(crate) struct Scope {
    restore: Current,
    live: bool,
}

impl Scope {
    /// Code polled under a guard whose deadline is `at` (`None`: never, the outer one holds).
    // `#[inline(never)]` here and on `lazy` and `close`: the thread-local is then reached from
    // its own crate, directly; inlined into a guard's poll (generic, compiled in the user's
    // crate) it is reached through `LocalKey`'s accessor, and a closed call with a `timeout`
    // costs about 70 more instructions (breaker benchmark, callgrind).
    #[inline(never)]
    pub(crate) fn at(at: Option<Instant>) -> Scope {
        Scope::enter(|outer| Current {
            at: sooner(outer, at),
            lazy: 0,
            started: None,
        })
    }

    /// Code polled under a guard whose limit of `limit_ns` ns (above 0) counts from a start it
    /// has not read yet: the clock is read if the deadline is asked for, and
    /// [`close`](Self::close) says when.
    #[inline(never)]
    pub(crate) fn lazy(limit_ns: u64) -> Scope {
        Scope::enter(|outer| Current {
            at: outer,
            lazy: limit_ns,
            started: None,
        })
    }

    #[inline]
    fn enter(inner: impl FnOnce(Option<Instant>) -> Current) -> Scope {
        let restore = CURRENT.try_with(|current| {
            // An outer guard's lazy limit is fixed now: the inner one must be measured
            // against it, and the outer one learns its start when its scope ends.
            let mut outer = current.get();
            let at = outer.read();
            current.set(inner(at));
            outer
        });
        match restore {
            Ok(restore) => Scope {
                restore,
                live: true,
            },
            Err(_) => Scope {
                restore: Current::default(),
                live: false,
            },
        }
    }

    /// When a lazy scope's clock was started by a read of its deadline, if it was.
    #[cfg(test)]
    pub(crate) fn started(&self) -> Option<Instant> {
        CURRENT
            .try_with(|current| current.get().started)
            .ok()
            .flatten()
    }

    /// Ends the scope (the deadline as it was is put back), returning when its clock was started
    /// by a read of its deadline, if it was.
    #[inline(never)]
    pub(crate) fn close(mut self) -> Option<Instant> {
        if !std::mem::take(&mut self.live) {
            return None;
        }
        let restore = self.restore;
        CURRENT
            .try_with(|current| current.replace(restore).started)
            .ok()
            .flatten()
    }
}

impl Drop for Scope {
    #[inline]
    fn drop(&mut self) {
        if self.live {
            let restore = self.restore;
            let _ = CURRENT.try_with(|current| current.set(restore));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn scopes_nest_to_the_sooner_and_restore() {
        assert_eq!(deadline(), None);
        let now = Instant::now();
        {
            let _outer = Scope::at(Some(now + Duration::from_secs(2)));
            assert_eq!(deadline(), Some(now + Duration::from_secs(2)));
            {
                let _inner = Scope::at(Some(now + Duration::from_secs(5)));
                assert_eq!(deadline(), Some(now + Duration::from_secs(2)));
            }
            {
                let _inner = Scope::at(Some(now + Duration::from_secs(1)));
                assert_eq!(deadline(), Some(now + Duration::from_secs(1)));
            }
            assert_eq!(deadline(), Some(now + Duration::from_secs(2)));
        }
        assert_eq!(deadline(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lazy_scope_starts_its_clock_when_read() {
        let scope = Scope::lazy(3_000_000_000);
        assert_eq!(scope.started(), None);
        tokio::time::advance(Duration::from_secs(1)).await;
        let read_at = Instant::now();
        assert_eq!(deadline(), Some(read_at + Duration::from_secs(3)));
        assert_eq!(scope.started(), Some(read_at));
        // Read again later: the same deadline.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(deadline(), Some(read_at + Duration::from_secs(3)));
        assert_eq!(time_left(), Some(Duration::from_secs(2)));
        drop(scope);
        assert_eq!(deadline(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn an_inner_scope_fixes_a_lazy_outer_one() {
        let outer = Scope::lazy(3_000_000_000);
        let now = Instant::now();
        {
            let _inner = Scope::lazy(10_000_000_000);
            assert_eq!(deadline(), Some(now + Duration::from_secs(3)));
        }
        assert_eq!(outer.started(), Some(now));
        assert_eq!(deadline(), Some(now + Duration::from_secs(3)));
    }

    #[test]
    fn a_panic_inside_restores_the_deadline() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let _guard = rt.enter();
        let caught = std::panic::catch_unwind(|| {
            let _scope = Scope::at(Some(Instant::now()));
            panic!("the body panicked");
        });
        assert!(caught.is_err());
        assert_eq!(deadline(), None);
    }
}
