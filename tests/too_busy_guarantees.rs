//! What `#[too_busy]` (and `resiliency::too_busy::TooBusy`) guarantee whatever user code does: a body
//! that panics or is dropped mid-flight, a body whose destructor takes its time, an `on_lag`
//! callback that panics, a runtime without a time driver, a paused clock that is advanced, threads
//! that come and go, settings at their extremes. Each test proves one line of the `# Guarantees`
//! sections of `#[too_busy]` and of `resiliency::too_busy`.
//!
//! The tests share process-wide state (`too_busy::on_lag` callbacks, `too_busy::set_interval`, a panic
//! hook that counts tokio's "timers are disabled" panics), so they run one at a time ([`serial`]),
//! and callbacks act only on the test's own thread.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, LazyLock, OnceLock};
use std::task::Poll;
use std::thread;
use std::time::Duration;

use resiliency::too_busy::TooBusy;
use resiliency::{too_busy, Rejected};
use tokio::sync::oneshot;
use tokio::time::sleep;

mod support;
use support::{current_thread, ms, poll_once, serial, Captured};

/// A current-thread runtime whose clock starts paused.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

fn multi_thread(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `f` with a `tracing` subscriber (all levels) on this thread; returns what it logged.
fn traced<R>(f: impl FnOnce() -> R) -> (R, String) {
    let captured = Captured::default();
    let result = tracing::subscriber::with_default(captured.subscriber(), f);
    let output = captured.text();
    (result, output)
}

/// Lines of `output` that contain `needle`.
fn lines_with<'a>(output: &'a str, needle: &str) -> Vec<&'a str> {
    output.lines().filter(|l| l.contains(needle)).collect()
}

/// Restores `too_busy::interval` as it was when made, when dropped (even if the test fails).
struct DefaultInterval(Duration);

impl DefaultInterval {
    fn keep() -> Self {
        DefaultInterval(too_busy::interval())
    }
}

impl Drop for DefaultInterval {
    fn drop(&mut self) {
        too_busy::set_interval(self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// A body that is dropped mid-flight, or panics

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static DROPPING: AtomicBool = AtomicBool::new(false);

/// State of a body that takes 50 ms to drop (a connection closed by hand, a file flushed).
struct SlowToDrop;

impl SlowToDrop {
    fn enter() -> Self {
        let live = LIVE.fetch_add(1, SeqCst) + 1;
        PEAK.fetch_max(live, SeqCst);
        SlowToDrop
    }
}

impl Drop for SlowToDrop {
    fn drop(&mut self) {
        DROPPING.store(true, SeqCst);
        thread::sleep(ms(50));
        LIVE.fetch_sub(1, SeqCst);
    }
}

#[too_busy(max_in_flight = 1)]
async fn exclusive(entered: Option<oneshot::Sender<()>>) -> Result<(), Rejected> {
    let _state = SlowToDrop::enter();
    if let Some(entered) = entered {
        let _ = entered.send(());
    }
    std::future::pending::<()>().await;
    Ok(())
}

/// `max_in_flight = 1`, a call aborted on one worker while its body's destructor runs for 50 ms,
/// and a second call meanwhile on another thread: the second is refused, because the first still
/// holds its slot until its body is gone. Never two bodies alive at once.
#[test]
fn a_cancelled_call_keeps_its_slot_until_its_body_is_dropped() {
    let _serial = serial();
    multi_thread(2).block_on(async {
        let (entered_tx, entered_rx) = oneshot::channel();
        let first = tokio::spawn(exclusive(Some(entered_tx)));
        entered_rx.await.unwrap();
        DROPPING.store(false, SeqCst);
        first.abort();
        // The worker that cancels `first` is now in its body's 50 ms destructor.
        while !DROPPING.load(SeqCst) {
            thread::sleep(ms(1));
        }
        let second = poll_once(pin!(exclusive(None))).await;
        let peak = PEAK.load(SeqCst);
        assert!(first.await.unwrap_err().is_cancelled());
        assert_eq!(
            peak, 1,
            "max_in_flight = 1 let a second body start while the cancelled one was still being \
             dropped (second call: {second:?})"
        );
        match second {
            Poll::Ready(Err(rejected)) => assert!(rejected.is_too_busy(), "{rejected}"),
            other => panic!("the second call was not refused: {other:?}"),
        }
        // The first is gone: its slot is back.
        assert!(poll_once(pin!(exclusive(None))).await.is_pending());
        assert_eq!(LIVE.load(SeqCst), 0);
    });
}

static BUGGY: LazyLock<TooBusy> = LazyLock::new(|| {
    TooBusy::builder("buggy")
        .max_in_flight(1)
        .max_latency(Duration::from_millis(20))
        .build()
        .unwrap()
});

/// What a body's destructor saw of its own guard.
static IN_FLIGHT_WHILE_DROPPED: AtomicUsize = AtomicUsize::new(usize::MAX);

struct WatchesItsSlot;

impl Drop for WatchesItsSlot {
    fn drop(&mut self) {
        IN_FLIGHT_WHILE_DROPPED.store(BUGGY.in_flight() as usize, SeqCst);
    }
}

/// A body that panics after 60 ms (three times `max_latency`): the task catches the panic; the
/// slot is still held while the body's locals are dropped, and given back after; the 60 ms count
/// toward `max_latency`, so the next call is refused for latency.
#[test]
fn a_panicking_body_gives_its_slot_back_once_dropped_and_counts_toward_max_latency() {
    let _serial = serial();
    paused().block_on(async {
        let panicked = tokio::spawn(BUGGY.call(async {
            let _watch = WatchesItsSlot;
            sleep(ms(60)).await;
            if true {
                panic!("a bug in the handler");
            }
            Ok::<(), Rejected>(())
        }));
        assert!(panicked.await.unwrap_err().is_panic());
        assert_eq!(
            IN_FLIGHT_WHILE_DROPPED.load(SeqCst),
            1,
            "the slot was given back before the panicked body was dropped"
        );
        assert_eq!(BUGGY.in_flight(), 0, "the panicked call kept its slot");
        assert!(
            BUGGY.recent_latency() >= ms(60),
            "a body that panicked after 60 ms did not count toward max_latency (mean {:?})",
            BUGGY.recent_latency()
        );
        let next = BUGGY.call(async { Ok::<(), Rejected>(()) }).await;
        let rejected = next.expect_err("refused for latency");
        assert!(
            rejected.to_string().contains("max_latency 20ms"),
            "{rejected}"
        );
    });
}

#[too_busy(max_latency = "20ms")]
async fn slow_dependency() -> Result<(), Rejected> {
    sleep(Duration::from_secs(3600)).await;
    Ok(())
}

/// Ten calls at once, abandoned by their callers at 60 ms (three times `max_latency`): each
/// counts with the time it ran, so the next call is refused at once for latency.
#[test]
fn abandoned_calls_count_toward_max_latency() {
    let _serial = serial();
    paused().block_on(async {
        let callers: Vec<_> = (0..10)
            .map(|_| tokio::spawn(tokio::time::timeout(ms(60), slow_dependency())))
            .collect();
        for caller in callers {
            assert!(caller.await.unwrap().is_err(), "the caller did not give up");
        }
        match tokio::time::timeout(ms(60), slow_dependency()).await {
            Ok(Err(rejected)) => assert!(
                rejected.to_string().contains("max_latency 20ms"),
                "{rejected}"
            ),
            Ok(Ok(())) => unreachable!(),
            Err(_) => panic!(
                "ten calls dropped at 3x max_latency left the latency signal untouched: the next \
                 call was admitted"
            ),
        }
    });
}

// ---------------------------------------------------------------------------------------------
// A runtime without a time driver

/// Counts panics whose message says timers are disabled; keeps them, and those a test expects
/// (their message starts with `expected:`), off stderr; others go to the default hook.
fn timer_panics() -> &'static AtomicUsize {
    static COUNT: OnceLock<&'static AtomicUsize> = OnceLock::new();
    COUNT.get_or_init(|| {
        let count: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if message.contains("timers are disabled") {
                count.fetch_add(1, SeqCst);
            } else if !message.starts_with("expected:") {
                previous(info);
            }
        }));
        count
    })
}

#[too_busy]
async fn without_timers_lag() -> Result<(), Rejected> {
    tokio::task::yield_now().await; // lets the runtime run its other tasks (the monitor)
    Ok(())
}

// The other signals, each beside the lag signal (named), which the runtime cannot serve.
#[too_busy(max_in_flight = 1, max_lag = "70ms")]
async fn without_timers(hold: Option<oneshot::Receiver<()>>) -> Result<(), Rejected> {
    if let Some(hold) = hold {
        let _ = hold.await;
    }
    tokio::task::yield_now().await; // lets the runtime run its other tasks (the monitor)
    Ok(())
}

#[too_busy(max_latency = "5ms", max_lag = "70ms")]
async fn without_timers_slow(work: Duration) -> Result<(), Rejected> {
    thread::sleep(work);
    tokio::task::yield_now().await;
    Ok(())
}

/// 200 guarded calls on a current-thread runtime built without `enable_time`: no panic reaches
/// the panic hook (the detection's is caught quietly), one warning, and `max_in_flight` and `max_latency` still refuse.
#[test]
fn a_runtime_without_timers_stands_the_lag_signal_down_once_and_keeps_the_others() {
    let _serial = serial();
    let panics = timer_panics();
    let before = panics.load(SeqCst);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let ((), output) = traced(|| {
        runtime.block_on(async {
            for i in 0..100 {
                without_timers_lag()
                    .await
                    .unwrap_or_else(|e| panic!("call {i} refused: {e}"));
                without_timers(None)
                    .await
                    .unwrap_or_else(|e| panic!("call {i} refused: {e}"));
            }
            // max_in_flight still refuses.
            let (release, hold) = oneshot::channel();
            let mut first = pin!(without_timers(Some(hold)));
            assert!(poll_once(first.as_mut()).await.is_pending());
            match poll_once(pin!(without_timers(None))).await {
                Poll::Ready(Err(rejected)) => {
                    assert!(
                        rejected.to_string().contains("max_in_flight 1"),
                        "{rejected}"
                    )
                }
                other => panic!("max_in_flight did not refuse: {other:?}"),
            }
            release.send(()).unwrap();
            first.await.unwrap();
            // So does max_latency.
            without_timers_slow(ms(20)).await.unwrap();
            let rejected = without_timers_slow(Duration::ZERO).await.unwrap_err();
            assert!(
                rejected.to_string().contains("max_latency 5ms"),
                "{rejected}"
            );
        })
    });
    drop(runtime);
    // The detection's panic is caught with the hook in place never told: nothing is printed.
    let panicked = panics.load(SeqCst) - before;
    assert_eq!(
        panicked, 0,
        "200 guarded calls on a runtime without timers: {panicked} panics reached the hook"
    );
    let warnings = lines_with(&output, "no time driver");
    assert_eq!(warnings.len(), 1, "{output}");
    assert!(
        warnings[0].contains("WARN") && warnings[0].contains("resiliency::too_busy"),
        "{}",
        warnings[0]
    );
}

// ---------------------------------------------------------------------------------------------
// on_lag callbacks that panic

#[too_busy(max_lag = "20ms")]
async fn watched() -> Result<(), Rejected> {
    Ok(())
}

/// An `on_lag` callback that panics every time: the monitor keeps its smoothed lag, so a stall
/// still refuses calls; the panic is reported once.
#[test]
fn a_panicking_on_lag_callback_leaves_shedding_on() {
    let _serial = serial();
    let _restore = DefaultInterval::keep();
    // A wide interval, so that the calls below come well before the next (quiet) sample.
    too_busy::set_interval(ms(100));
    let me = thread::current().id();
    let called = Arc::new(AtomicUsize::new(0));
    let count = called.clone();
    too_busy::on_lag(ms(30), move |lag| {
        if thread::current().id() == me {
            count.fetch_add(1, SeqCst);
            panic!("a bug in an on_lag callback (lag {lag:?})");
        }
    });
    let (refused, output) = traced(|| {
        current_thread().block_on(async {
            watched().await.unwrap(); // starts the monitor
            sleep(ms(250)).await;
            let mut refused = [0; 2];
            for round in &mut refused {
                // A 400 ms stall: a sample of 300+ ms lifts the lag past 40 ms (twice max_lag),
                // where every call is refused, and the callback runs (and panics).
                thread::sleep(ms(400));
                sleep(ms(20)).await;
                *round = (0..12).filter(|_| is_err(watched())).count();
                sleep(ms(600)).await; // quiet samples bring the lag back down
            }
            refused
        })
    });
    let calls = called.load(SeqCst);
    assert!(calls >= 2, "the callback ran {calls} times");
    assert_eq!(
        refused,
        [12, 12],
        "calls refused right after each stall (of 12): a panicking on_lag callback turned \
         shedding off"
    );
    let reports = lines_with(&output, "on_lag callback panicked");
    assert_eq!(reports.len(), 1, "{output}");
    assert!(
        reports[0].contains("resiliency::too_busy"),
        "{}",
        reports[0]
    );
}

static CAPPED: LazyLock<TooBusy> =
    LazyLock::new(|| TooBusy::builder("capped").max_in_flight(1).build().unwrap());

/// A subscriber that panics on every event: the monitor, whose every sample is an event, keeps
/// sampling and keeps its lag through a stall; a refusal (a `debug` event) panics in the caller,
/// and the in-flight count stays right.
#[test]
fn a_panicking_subscriber_neither_ends_the_monitor_nor_leaks_a_slot() {
    let _serial = serial();
    let _restore = DefaultInterval::keep();
    timer_panics(); // keeps the expected panics off stderr
    too_busy::set_interval(ms(100));
    // A subscriber that panics on every event of `resiliency::too_busy`.
    let panics = support::PanickingSubscriber::new(|event, _| {
        event.metadata().target() == "resiliency::too_busy"
    });
    tracing::subscriber::with_default(panics, || {
        current_thread().block_on(async {
            watched().await.unwrap(); // starts the monitor
            sleep(ms(250)).await; // samples, each an event that panics
            thread::sleep(ms(400));
            sleep(ms(20)).await;
            assert!(
                too_busy::lag() >= ms(30),
                "the monitor stopped: lag {:?} right after a 400 ms stall",
                too_busy::lag()
            );

            let (release, hold) = oneshot::channel::<()>();
            let mut first = pin!(CAPPED.call(async {
                let _ = hold.await;
                Ok::<(), Rejected>(())
            }));
            assert!(poll_once(first.as_mut()).await.is_pending());
            let refused = std::panic::catch_unwind(|| is_err(CAPPED.call(async { Ok(()) })));
            assert!(
                refused.is_err(),
                "the refusal's event did not reach the subscriber"
            );
            assert_eq!(CAPPED.in_flight(), 1);
            release.send(()).unwrap();
            first.await.unwrap();
            assert_eq!(CAPPED.in_flight(), 0);
        })
    });
}

/// Polls a call that completes on its first poll (as a body with no await does).
fn is_err(call: impl Future<Output = Result<(), Rejected>>) -> bool {
    let waker = futures::task::noop_waker_ref();
    match pin!(call).poll(&mut std::task::Context::from_waker(waker)) {
        Poll::Ready(result) => result.is_err(),
        Poll::Pending => panic!("not ready on its first poll"),
    }
}

// ---------------------------------------------------------------------------------------------
// A paused clock

#[too_busy(max_lag = "20ms")]
async fn under_a_test_clock() -> Result<(), Rejected> {
    Ok(())
}

/// Under `tokio::time::pause()`, `advance(1s)` is no lag: the runtime did run on time.
#[test]
fn advancing_a_paused_clock_is_not_lag() {
    let _serial = serial();
    paused().block_on(async {
        under_a_test_clock().await.unwrap(); // starts the monitor
        sleep(ms(100)).await;
        let mut refused = Vec::new();
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(1)).await;
            for _ in 0..20 {
                refused.push(under_a_test_clock().await.is_err());
                tokio::task::yield_now().await;
            }
            sleep(ms(30)).await;
        }
        let count = refused.iter().filter(|r| **r).count();
        assert_eq!(
            count,
            0,
            "{count} of {} calls refused after advancing a paused clock",
            refused.len()
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Threads that come and go

#[too_busy(max_lag = "1s")]
async fn from_any_thread() -> Result<(), Rejected> {
    Ok(())
}

/// 300 short-lived threads that each run a guarded call through `Handle::block_on`, 50 calls on
/// `spawn_blocking` threads, 20 on workers replaced after `block_in_place`: the runtime is left
/// with one monitor task.
#[test]
fn threads_that_come_and_go_leave_one_monitor_task() {
    let _serial = serial();
    let runtime = multi_thread(2);
    let handle = runtime.handle().clone();
    runtime.block_on(async {
        from_any_thread().await.unwrap();
        sleep(ms(30)).await;
    });
    let alive = || handle.metrics().num_alive_tasks();
    let at_start = alive();
    assert!(
        at_start <= 1,
        "{at_start} tasks alive after one guarded call"
    );

    for _ in 0..30 {
        let threads: Vec<_> = (0..10)
            .map(|_| {
                let handle = handle.clone();
                thread::spawn(move || handle.block_on(from_any_thread()).unwrap())
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }
    runtime.block_on(async {
        for _ in 0..50 {
            tokio::task::spawn_blocking(|| {
                tokio::runtime::Handle::current()
                    .block_on(from_any_thread())
                    .unwrap()
            })
            .await
            .unwrap();
        }
        for _ in 0..20 {
            tokio::spawn(async {
                tokio::task::block_in_place(|| thread::sleep(ms(1)));
                from_any_thread().await.unwrap();
            })
            .await
            .unwrap();
        }
        // A few intervals: monitors of threads that are gone have had the time to wake.
        sleep(too_busy::interval() * 5).await;
    });
    let at_end = alive();
    assert!(
        at_end <= 1,
        "{at_end} tasks alive after 370 guarded calls from threads that came and went"
    );
}

// ---------------------------------------------------------------------------------------------
// Settings at their extremes

/// 584.5 years: its nanoseconds do not fit in a u64 (they wrap to 290 ms).
const CENTURIES: Duration = Duration::from_secs(18_446_744_074);

static LENIENT: LazyLock<TooBusy> = LazyLock::new(|| {
    TooBusy::builder("lenient")
        .max_lag(CENTURIES)
        .max_latency(CENTURIES)
        .build()
        .unwrap()
});

/// `max_lag` and `max_latency` too long for nanoseconds in a u64 are as good as infinite, and an
/// `interval` of `Duration::MAX` panics nowhere.
#[test]
fn settings_at_their_extremes_neither_panic_nor_wrap() {
    let _serial = serial();
    let _restore = DefaultInterval::keep();
    paused().block_on(async {
        // Calls of 400 ms, above the 290 ms that 584 years wrap to.
        for _ in 0..3 {
            LENIENT
                .call(async {
                    sleep(ms(400)).await;
                    Ok::<(), Rejected>(())
                })
                .await
                .expect("refused with max_latency of 584 years");
        }
        LENIENT
            .call(async { Ok::<(), Rejected>(()) })
            .await
            .expect("refused with max_latency of 584 years");
    });

    too_busy::set_interval(Duration::MAX);
    assert_eq!(too_busy::interval(), Duration::from_nanos(u64::MAX));
    current_thread().block_on(async {
        from_any_thread().await.unwrap(); // starts a monitor that sleeps "forever"
        sleep(ms(30)).await;
        thread::sleep(ms(30));
        for _ in 0..100 {
            from_any_thread().await.unwrap();
            tokio::task::yield_now().await;
        }
    });
}
