//! The time a guarded call has left, readable by its body: [`deadline`] and [`time_left`].

use std::cell::{Cell, RefCell};
use std::time::Duration;

use tokio::time::Instant;

/// When the code running now will be cut off by the guards around it (the soonest of their
/// deadlines), or `None` outside any guard with a time limit.
///
/// Inside a call guarded by a time limit (`#[timeout]`'s `total`, a breaker's `timeout` or
/// `half_open_timeout`, a raced call's `total` and, for each attempt, `each`; through the attributes, the builders or the
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
    let lazy = LAZY.try_with(Cell::get).unwrap_or(0);
    if lazy != NONE && lazy != FIXED {
        fix(lazy);
    }
    AT.try_with(Cell::get).ok().flatten()
}

/// How long until [`deadline`]: zero once it passed, `None` outside any guard with a time limit.
pub fn time_left() -> Option<Duration> {
    deadline().map(|at| at.saturating_duration_since(Instant::now()))
}

// What the code running now is under, in four thread-locals, so that a guard that answers at
// once touches one word (`LAZY`) on the way in and out:
thread_local! {
    /// The soonest deadline known of the guards around this code.
    static AT: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The innermost guard's time limit in ns, counted from the first time the deadline is read,
    /// while that guard has not started its clock: [`NONE`], a limit, or [`FIXED`] once read.
    static LAZY: Cell<u64> = const { Cell::new(NONE) };
    /// With `LAZY` at `FIXED`: when the limit was read (the guard's clock's start)...
    static STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// ... and `AT` as it was before the limit was folded into it.
    static SAVED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The `SAVED` and `STARTED` of the outer lazy scopes of nested ones, innermost last: kept
    /// here rather than in the [`Scope`], so that a lazy scope is one byte the compiler keeps in
    /// a register across the poll it wraps (scopes end in the reverse order they begin: each
    /// lives within one poll).
    static OUTERS: RefCell<Vec<Outer>> = const { RefCell::new(Vec::new()) };
}

/// No lazy limit.
const NONE: u64 = 0;
/// The innermost lazy limit was read: it is in `AT`, its start in `STARTED`.
const FIXED: u64 = u64::MAX;

/// Reads the innermost lazy limit (`limit` ns) now: its deadline joins `AT`.
#[cold]
fn fix(limit: u64) {
    let now = Instant::now();
    let before = AT.with(Cell::get);
    SAVED.with(|saved| saved.set(before));
    STARTED.with(|started| started.set(Some(now)));
    let own = now.checked_add(Duration::from_nanos(limit));
    AT.with(|at| at.set(sooner(before, own)));
    LAZY.with(|lazy| lazy.set(FIXED));
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
/// put back when it is closed or dropped (a poll that panicked too).
#[derive(Debug)]
#[must_use = "the deadline holds until the scope is closed or dropped"]
pub(crate) struct Scope {
    kind: Kind,
}

// A tag of its own (not a niche in an outer scope's words), so that a lazy scope is one byte the
// compiler keeps track of across the poll it wraps.
#[derive(Debug)]
#[repr(u8)]
enum Kind {
    /// Put back: nothing.
    Done,
    /// A guard with a known deadline: `AT` as it was.
    At { before: Option<Instant> },
    /// A guard with a lazy limit, under no other lazy one: `LAZY` was `NONE`.
    Lazy,
    /// A guard with a lazy limit inside another guard's, whose limit is read by then (`LAZY` was
    /// `FIXED`): that guard's saved `AT` and start are the last in `OUTERS`.
    NestedLazy,
}

/// An outer lazy scope's saved `AT` and start.
type Outer = (Option<Instant>, Option<Instant>);

impl Scope {
    /// Code polled under a guard whose deadline is `at` (`None`: never, the outer one holds).
    pub(crate) fn at(at: Option<Instant>) -> Scope {
        let Ok(lazy) = LAZY.try_with(Cell::get) else {
            return Scope { kind: Kind::Done };
        };
        if lazy != NONE && lazy != FIXED {
            // An outer guard's lazy limit: read now, so that this deadline is measured against
            // it (the outer guard learns its start when its scope ends).
            fix(lazy);
        }
        let before = AT.with(|current| current.replace(sooner(current.get(), at)));
        Scope {
            kind: Kind::At { before },
        }
    }

    /// Code polled under a guard whose limit of `limit_ns` ns (above 0) counts from a start it
    /// has not read yet: the clock is read if the deadline is asked for, and
    /// [`close`](Self::close) says when.
    #[inline]
    pub(crate) fn lazy(limit_ns: u64) -> Scope {
        // Without this thread's thread-locals (a destructor at its exit) nothing is put back.
        match LAZY.try_with(|lazy| lazy.replace(limit_ns.clamp(1, FIXED - 1))) {
            Ok(NONE) => Scope { kind: Kind::Lazy },
            // Built here from a flag, rather than returned by the cold path: a `Scope` returned
            // would come back through memory, and be read back after the poll it wraps.
            Ok(before) if nested_lazy(before) => Scope {
                kind: Kind::NestedLazy,
            },
            _ => Scope { kind: Kind::Done },
        }
    }
}

/// A lazy scope begins inside another guard's lazy scope (`LAZY` was `before`): whether it
/// applies (it does, but at the thread's exit).
#[cold]
#[inline(never)]
fn nested_lazy(before: u64) -> bool {
    if before != FIXED {
        // Read the outer limit now (this one is measured against it): `fix` works on the
        // innermost, so the outer is put back for it, then this one in again.
        let mine = LAZY.with(|lazy| lazy.replace(before));
        fix(before);
        LAZY.with(|lazy| lazy.set(mine));
    }
    let outer = (SAVED.with(Cell::get), STARTED.with(Cell::get));
    let pushed = OUTERS.try_with(|outers| outers.borrow_mut().push(outer));
    if pushed.is_err() {
        // At this thread's exit: this limit does not apply, the outer one is as it was.
        LAZY.with(|lazy| lazy.set(FIXED));
    }
    pushed.is_ok()
}

impl Scope {
    /// When a lazy scope's clock was started by a read of its deadline, if it was.
    #[cfg(test)]
    pub(crate) fn started(&self) -> Option<Instant> {
        match LAZY.with(Cell::get) {
            FIXED => STARTED.with(Cell::get),
            _ => None,
        }
    }

    /// Ends the scope (the deadline as it was is put back), returning when its clock was started
    /// by a read of its deadline, if it was.
    #[inline]
    pub(crate) fn close(mut self) -> Option<Instant> {
        let started = self.restore();
        // Put back above: nothing is left for the drop to do.
        std::mem::forget(self);
        started
    }

    /// Puts the deadline back as it was; for a lazy scope whose limit was read, its start. Reads
    /// only the words it puts back: an outer lazy scope's, only if this one's limit was read.
    #[inline]
    fn restore(&mut self) -> Option<Instant> {
        let started = match self.kind {
            Kind::Done => return None,
            Kind::At { before } => {
                let _ = AT.try_with(|at| at.set(before));
                None
            }
            Kind::Lazy => match LAZY.try_with(|lazy| lazy.replace(NONE)) {
                Ok(FIXED) => Some(unfix(None)),
                _ => None,
            },
            Kind::NestedLazy => end_nested(),
        };
        self.kind = Kind::Done;
        started
    }
}

/// A nested lazy scope ends: the outer one's saved words come back from `OUTERS`; returns its
/// start, if its limit was read.
#[cold]
#[inline(never)]
fn end_nested() -> Option<Instant> {
    let outer = OUTERS
        .try_with(|outers| outers.borrow_mut().pop())
        .ok()
        .flatten();
    match LAZY.try_with(|lazy| lazy.replace(FIXED)) {
        Ok(FIXED) => Some(unfix(outer)),
        _ => None,
    }
}

/// A lazy scope whose limit was read ends: `AT` goes back to what it was before, an outer lazy
/// scope's own start and saved `AT` (if it was read before) back in place. Returns the start.
#[cold]
fn unfix(outer: Option<Outer>) -> Instant {
    let started = STARTED.with(Cell::get);
    AT.with(|at| at.set(SAVED.with(Cell::get)));
    if let Some((saved, outer_started)) = outer {
        SAVED.with(|cell| cell.set(saved));
        STARTED.with(|cell| cell.set(outer_started));
    }
    // Set with `FIXED` by `fix`; the clock is read again should it not be, rather than panic in a
    // destructor.
    started.unwrap_or_else(Instant::now)
}

impl Drop for Scope {
    #[inline]
    fn drop(&mut self) {
        let _ = self.restore();
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

    #[tokio::test(start_paused = true)]
    async fn three_nested_lazy_scopes_each_get_their_start_back() {
        let second = Duration::from_secs(1);
        let outer = Scope::lazy(3_000_000_000);
        tokio::time::advance(second).await;
        let t1 = Instant::now();
        assert_eq!(deadline(), Some(t1 + 3 * second));
        let middle = Scope::lazy(10_000_000_000);
        tokio::time::advance(second).await;
        let t2 = Instant::now();
        assert_eq!(deadline(), Some(t1 + 3 * second));
        let inner = Scope::lazy(500_000_000);
        tokio::time::advance(second).await;
        let t3 = Instant::now();
        assert_eq!(deadline(), Some(t3 + second / 2));
        assert_eq!(inner.close(), Some(t3));
        assert_eq!(deadline(), Some(t1 + 3 * second));
        assert_eq!(middle.started(), Some(t2));
        assert_eq!(middle.close(), Some(t2));
        assert_eq!(outer.started(), Some(t1));
        assert_eq!(deadline(), Some(t1 + 3 * second));
        assert_eq!(outer.close(), Some(t1));
        assert_eq!(deadline(), None);
        assert!(OUTERS.with(|outers| outers.borrow().is_empty()));
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
