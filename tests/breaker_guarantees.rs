//! The breaker's guarantees: whatever the code around it does (a body, predicate, subscriber,
//! tracing layer or destructor that panics; a call dropped at any point; no time driver; extreme
//! settings), the breaker's own state stays consistent and no slot is lost.
//!
//! Each scenario runs on a current-thread runtime under paused time and on a multi-thread runtime
//! under real time (its times are short enough for both).

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::{Breaker, Rejected};
use tokio::time::sleep;

use support::{ms, BoxError};

const OPEN_FOR: Duration = Duration::from_millis(20);

/// A registered breaker that opens on one error and half-opens after `OPEN_FOR`.
fn fragile(name: &str) -> Arc<Breaker> {
    Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(OPEN_FOR)
        .register()
        .unwrap()
}

async fn fail(b: &Breaker) {
    let out = b.call(async { Err::<(), BoxError>("down".into()) }).await;
    assert!(out.is_err());
}

async fn succeed(b: &Breaker) -> Result<u32, BoxError> {
    b.call(async { Ok::<_, BoxError>(7) }).await
}

/// Opens `b` and waits until its next call is a probe.
async fn open_then_wait(b: &Breaker) {
    fail(b).await;
    assert_eq!(b.state(), State::Open);
    sleep(OPEN_FOR + ms(2)).await;
    assert_eq!(b.state(), State::HalfOpen);
}

/// After whatever happened, the breaker must still be usable: within a few open times a probe
/// runs, succeeds and closes it.
async fn recovers(b: &Breaker) {
    for _ in 0..10 {
        if succeed(b).await.is_ok() {
            assert_eq!(b.state(), State::Closed, "{b:?}");
            return;
        }
        sleep(OPEN_FOR).await;
    }
    panic!("`{}` refuses every call: {:?}", b.name(), b.snapshot());
}

macro_rules! on_both_runtimes {
    ($($scenario:ident),* $(,)?) => {
        mod current_thread {
            $(
                #[tokio::test(start_paused = true)]
                async fn $scenario() {
                    super::$scenario("current").await
                }
            )*
        }
        mod multi_thread {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario("multi").await
                }
            )*
        }
    };
}

on_both_runtimes!(
    a_probe_whose_count_if_predicate_panics_gives_its_slot_back,
    a_subscriber_that_panics_on_half_open_takes_no_probe_slot,
    a_body_that_panics_counts_as_an_error,
    a_probe_that_panics_reopens_the_breaker,
    a_probe_dropped_before_it_was_polled_takes_no_slot,
    a_keyed_breaker_with_calls_in_flight_is_not_evicted,
);

async fn a_probe_whose_count_if_predicate_panics_gives_its_slot_back(rt: &str) {
    let b = fragile(&format!("guarantees.predicate.{rt}"));
    open_then_wait(&b).await;
    let b2 = b.clone();
    let probe = tokio::spawn(async move {
        b2.call_if(|_: &BoxError| panic!("predicate panics"), async {
            Err::<(), BoxError>("down".into())
        })
        .await
    });
    assert!(probe.await.unwrap_err().is_panic());
    // The panicking predicate counts the probe's error as an error: open again, then a probe.
    assert_eq!(b.state(), State::Open);
    recovers(&b).await;
}

async fn a_subscriber_that_panics_on_half_open_takes_no_probe_slot(rt: &str) {
    let name: &'static str = Box::leak(format!("guarantees.subscriber.{rt}").into_boxed_str());
    let b = fragile(name);
    let panicked = Arc::new(AtomicBool::new(false));
    let flag = panicked.clone();
    let id = breaker::subscribe(move |change| {
        if &*change.name == name
            && change.to == State::HalfOpen
            && !flag.swap(true, Ordering::SeqCst)
        {
            panic!("subscriber panics on open -> half-open");
        }
    });
    open_then_wait(&b).await;
    // The change is announced by the call that becomes the probe; the subscriber's panic stays
    // with the subscriber.
    assert_eq!(succeed(&b).await.unwrap(), 7);
    assert!(panicked.load(Ordering::SeqCst), "the subscriber ran");
    assert_eq!(b.state(), State::Closed);
    breaker::unsubscribe(id);
    open_then_wait(&b).await;
    recovers(&b).await;
}

async fn a_body_that_panics_counts_as_an_error(rt: &str) {
    let b = Breaker::builder(&format!("guarantees.body_panics.{rt}"))
        .error_threshold(2)
        .error_timeout(OPEN_FOR)
        .register()
        .unwrap();
    for i in 0..2 {
        assert_eq!(b.state(), State::Closed, "after {i} panics");
        let b2 = b.clone();
        let call = tokio::spawn(async move {
            b2.call(async {
                sleep(ms(1)).await;
                if true {
                    panic!("the body panics");
                }
                Ok::<(), BoxError>(())
            })
            .await
        });
        let err = call.await.unwrap_err();
        assert!(err.is_panic());
        // The caller sees the body's own panic.
        let payload = err.into_panic();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the body panics"));
    }
    assert_eq!(b.state(), State::Open, "two panics are two errors");
    recovers(&b).await;
}

async fn a_probe_that_panics_reopens_the_breaker(rt: &str) {
    let b = fragile(&format!("guarantees.probe_panics.{rt}"));
    open_then_wait(&b).await;
    let b2 = b.clone();
    let probe = tokio::spawn(async move {
        b2.call(async {
            if true {
                panic!("the probe panics");
            }
            Ok::<(), BoxError>(())
        })
        .await
    });
    assert!(probe.await.unwrap_err().is_panic());
    assert_eq!(b.state(), State::Open, "a probe that panics failed");
    recovers(&b).await;
}

async fn a_probe_dropped_before_it_was_polled_takes_no_slot(rt: &str) {
    let b = fragile(&format!("guarantees.unpolled.{rt}"));
    open_then_wait(&b).await;
    drop(b.call(async { Ok::<_, BoxError>(1) }));
    // One polled, then dropped while pending: its slot comes back.
    let pending = b.call(std::future::pending::<Result<(), BoxError>>());
    let _ = tokio::time::timeout(ms(1), pending).await;
    recovers(&b).await;
}

async fn a_keyed_breaker_with_calls_in_flight_is_not_evicted(rt: &str) {
    let family = Arc::new(
        Breaker::builder(&format!("guarantees.keyed_in_flight.{rt}"))
            .error_threshold(3)
            .error_timeout(Duration::from_secs(60))
            .max_keys(2)
            .build_keyed()
            .unwrap(),
    );
    // Three slow calls on `a` that will fail.
    let mut calls = Vec::new();
    for _ in 0..3 {
        let a = family.breaker("a");
        calls.push(tokio::spawn(async move {
            a.call(async {
                sleep(ms(50)).await;
                Err::<(), BoxError>("down".into())
            })
            .await
        }));
    }
    sleep(ms(5)).await;
    // The family is full after `b`; `c` makes room while `a`'s calls run.
    family.breaker("b");
    family.breaker("c");
    for call in calls {
        assert!(call.await.unwrap().is_err());
    }
    let a = family.breaker("a");
    assert_eq!(
        a.state(),
        State::Open,
        "the three errors landed on `a`'s breaker"
    );
    let refused = a.call(async { Ok::<_, BoxError>(1) }).await.unwrap_err();
    assert!(refused
        .downcast_ref::<Rejected>()
        .unwrap()
        .is_circuit_open());
}

// ---------------------------------------------------------------------------------------------
// Scenarios that need a runtime of their own.

/// A breaker with a `timeout` whose call waits where no timer can start: the call panics with
/// tokio's message at its first wait, and its probe slot comes back. A call that answers on its
/// first poll needs no timer, and runs there.
fn timed_probe_without_timer(name: &str, block_on: impl Fn(&mut dyn FnMut())) {
    let b = Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(OPEN_FOR)
        .timeout(ms(100))
        .register()
        .unwrap();
    let fail_now = || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            support::block_on_without_tokio(b.call(async {
                support::YieldOnce(false).await;
                Err::<(), BoxError>("down".into())
            }))
        }))
    };
    // Answered on the first poll: no timer needed, nothing counted against the breaker.
    block_on(&mut || {
        let answered = support::block_on_without_tokio(b.call(async { Ok::<_, BoxError>(7) }));
        assert_eq!(answered.unwrap(), 7);
    });
    // Closed: the timer cannot start, the call panics; nothing counted.
    block_on(&mut || assert!(fail_now().is_err(), "no timer: the call panics"));
    assert_eq!(b.state(), State::Closed);
    // Opened from a runtime with a timer, then half-open: the probe cannot start its timer.
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async { fail(&b).await });
    assert_eq!(b.state(), State::Open);
    std::thread::sleep(OPEN_FOR + ms(5));
    for _ in 0..3 {
        block_on(&mut || assert!(fail_now().is_err(), "no timer: the probe panics"));
    }
    // The probe's slot came back each time: a runtime with a timer gets its probe.
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async { recovers(&b).await });
}

#[test]
fn a_timed_probe_outside_a_tokio_runtime_gives_its_slot_back() {
    timed_probe_without_timer("guarantees.no_runtime", |f| f());
}

#[test]
fn a_timed_probe_on_a_runtime_without_time_driver_gives_its_slot_back() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    timed_probe_without_timer("guarantees.no_time_driver", |f| {
        let _entered = rt.enter();
        f()
    });
}

/// Counts the bodies alive at once; each takes `DROP_TAKES` to be dropped.
struct Alive(Arc<(AtomicUsize, AtomicUsize)>);

const DROP_TAKES: Duration = Duration::from_millis(60);

impl Alive {
    fn new(counts: &Arc<(AtomicUsize, AtomicUsize)>) -> Self {
        let now = counts.0.fetch_add(1, Ordering::SeqCst) + 1;
        counts.1.fetch_max(now, Ordering::SeqCst);
        Alive(counts.clone())
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        std::thread::sleep(DROP_TAKES);
        self.0 .0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_probe_gives_its_slot_back_only_after_its_body_is_dropped() {
    let b = fragile("guarantees.slow_drop");
    open_then_wait(&b).await;
    let counts = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let body = |counts: Arc<(AtomicUsize, AtomicUsize)>| async move {
        let _alive = Alive::new(&counts);
        std::future::pending::<()>().await;
        Ok::<_, BoxError>(())
    };
    let b1 = b.clone();
    let first = tokio::spawn({
        let counts = counts.clone();
        async move { b1.call(body(counts)).await }
    });
    while counts.0.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    // Cancel the probe: its body takes `DROP_TAKES` to drop, on a worker thread.
    first.abort();
    // Meanwhile, from this thread, keep asking for a probe of our own.
    let started = std::time::Instant::now();
    let mut refused = 0;
    while started.elapsed() < DROP_TAKES * 3 {
        let probe = b.call({
            let counts = counts.clone();
            async move {
                let _alive = Alive::new(&counts);
                Ok::<_, BoxError>(())
            }
        });
        if probe.await.is_ok() {
            break;
        }
        refused += 1;
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        counts.1.load(Ordering::SeqCst),
        1,
        "half_open_calls = 1 let two bodies live at once (refused {refused} times first)"
    );
    assert!(
        refused > 0,
        "the second probe waited for the first body to be gone"
    );
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn error_threshold_is_bounded() {
    let err = Breaker::builder("guarantees.threshold")
        .error_threshold(u32::MAX)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "breaker `guarantees.threshold`: `error_threshold` must be at most 65535, got 4294967295 \
         (the breaker keeps the time of each of the last `error_threshold` errors); \
         for many calls, use the rate rule: `failure_rate = 0.5`"
    );
    assert!(Breaker::builder("guarantees.threshold")
        .error_threshold(65_535)
        .build()
        .is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_keyed_family_pays_for_its_error_window_only_in_keys_that_erred() {
    // 65535 errors' worth of window (512 KiB) per key would be 5 GiB for 10,000 keys: a key's
    // window is allocated at its first error.
    let before = ALLOCATED.load(Ordering::SeqCst);
    let family = Breaker::builder("guarantees.threshold_keyed")
        .error_threshold(65_535)
        .build_keyed()
        .unwrap();
    for key in 0..10_000u32 {
        let b = family.breaker(&key);
        assert!(b.call(async { Ok::<_, BoxError>(()) }).await.is_ok());
    }
    let b = family.breaker(&7u32);
    assert!(b
        .call(async { Err::<(), BoxError>("down".into()) })
        .await
        .is_err());
    assert_eq!(b.snapshot().recent_errors, 1);
    let grown = ALLOCATED.load(Ordering::SeqCst).saturating_sub(before);
    assert!(grown < 100 << 20, "10,000 keys took {} MiB", grown >> 20);
}

/// Counts the bytes allocated by this test binary (all tests), for the memory bound above.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        std::alloc::System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
