//! Events held back while a registry or the settings store is locked: a `tracing` subscriber
//! (or anything else a handler calls) may set up a site, look a policy up or change a setting,
//! each of which takes those locks again.
//!
//! [`hold`] runs its closure with events held back on this thread; [`emit`] runs an event now,
//! or, under a `hold`, once the outermost `hold` has returned (its locks released). Events keep
//! their order. A panicking event does not lose the ones after it: they run before the panic
//! goes on.

use std::cell::RefCell;

type Event = Box<dyn FnOnce()>;

thread_local! {
    /// The events held back on this thread, while a [`hold`] runs (`None` outside any).
    static HELD: RefCell<Option<Vec<Event>>> = const { RefCell::new(None) };
}

/// Runs `f`, holding back the events [`emit`]ted meanwhile until it returns (or unwinds); nested
/// holds leave them to the outermost.
pub(crate) fn hold<R>(f: impl FnOnce() -> R) -> R {
    let outermost = HELD
        .try_with(|held| {
            let mut held = held.borrow_mut();
            held.is_none().then(|| *held = Some(Vec::new())).is_some()
        })
        .unwrap_or(false);
    if !outermost {
        return f();
    }
    // Emits what was held when `f` returns or unwinds.
    struct Flush;
    impl Drop for Flush {
        fn drop(&mut self) {
            let events = HELD
                .try_with(|held| held.borrow_mut().take())
                .ok()
                .flatten()
                .unwrap_or_default();
            run_all(events);
        }
    }
    let _flush = Flush;
    f()
}

/// Runs `event` now, or after the outermost [`hold`] around this code.
pub(crate) fn emit(event: impl FnOnce() + 'static) {
    let mut event = Some(Box::new(event) as Event);
    let _ = HELD.try_with(|held| {
        if let Some(held) = held.borrow_mut().as_mut() {
            held.push(event.take().expect("taken once"));
        }
    });
    if let Some(event) = event {
        event();
    }
}

/// Runs every event in order; should one panic, the others still run, and the first panic then
/// goes on.
fn run_all(events: Vec<Event>) {
    let mut panicked = None;
    for event in events {
        if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(event)) {
            panicked.get_or_insert(payload);
        }
    }
    if let Some(payload) = panicked {
        if !std::thread::panicking() {
            std::panic::resume_unwind(payload);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;

    #[test]
    fn events_wait_for_the_outermost_hold_and_keep_their_order() {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let log = |n: u32| {
            let seen = seen.clone();
            move || seen.borrow_mut().push(n)
        };
        emit(log(0));
        hold(|| {
            emit(log(1));
            hold(|| emit(log(2)));
            assert_eq!(*seen.borrow(), [0], "held until the outermost hold returns");
            emit(log(3));
        });
        assert_eq!(*seen.borrow(), [0, 1, 2, 3]);
        emit(log(4));
        assert_eq!(*seen.borrow(), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn an_event_may_hold_and_emit_again() {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let inner = seen.clone();
        hold(move || {
            emit(move || {
                let again = inner.clone();
                hold(move || emit(move || again.borrow_mut().push("nested")));
                inner.borrow_mut().push("outer");
            })
        });
        assert_eq!(*seen.borrow(), ["nested", "outer"]);
    }

    #[test]
    fn a_panicking_event_loses_none_of_the_others() {
        let seen = Rc::new(RefCell::new(0));
        let after = seen.clone();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            hold(|| {
                emit(|| panic!("a subscriber panicked"));
                emit(move || *after.borrow_mut() += 1);
            })
        }));
        assert!(result.is_err(), "the panic goes on");
        assert_eq!(*seen.borrow(), 1);
        // Nothing is left held: the next event runs at once.
        let now = seen.clone();
        emit(move || *now.borrow_mut() += 1);
        assert_eq!(*seen.borrow(), 2);
    }

    #[test]
    fn a_hold_that_unwinds_still_emits() {
        let seen = Rc::new(RefCell::new(false));
        let flag = seen.clone();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            hold(|| {
                emit(move || *flag.borrow_mut() = true);
                panic!("set-up failed");
            })
        }));
        assert!(*seen.borrow());
    }
}
