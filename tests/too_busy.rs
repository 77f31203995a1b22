//! `#[too_busy]` end to end, in real time: runtimes really blocked with `std::thread::sleep`, the
//! in-flight cap (with cancellation), the latency signal and its horizon, signals combined,
//! `on_lag`, `tracing` events, the monitor's life with its runtime, and calls outside tokio.
//!
//! Real time, not `tokio::time::pause()`: the monitor measures how late its timer fires, and a
//! paused clock jumps straight to the next timer, so it never shows a late one. A stall is
//! `std::thread::sleep` on the thread that drives the runtime: the monitor's timer cannot fire
//! during it, and the monitor samples only when the runtime next gets to run it. On a
//! current-thread runtime that is after the stalling task yields and after the `block_on` future
//! (polled first when woken) has had its turn, so a call made right after a stall still sees the
//! old lag; the tests give the monitor a few milliseconds before they look.
//!
//! `too_busy::lag()` and `too_busy::on_lag` are process-wide (the highest lag of every monitor; callbacks
//! run by every monitor) while this binary's tests run in parallel: the tests that read the lag
//! take [`serial`], and callbacks keep only what the test's own thread reports. A guarded call sees
//! the monitor of its own runtime only, so the other tests cannot refuse each other's calls.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::{self, ThreadId};
use std::time::Duration;

use resiliency::{too_busy, Rejected, RejectedKind};
use tokio::sync::oneshot;
use tokio::time::{sleep, Instant};

mod support;
use support::{block_on_without_tokio, current_thread, ms, poll_once, serial, Captured, YieldOnce};

/// Blocks the calling thread, and with it the runtime it drives: its timers fire late.
fn stall(duration: Duration) {
    thread::sleep(duration);
}

/// The full name a `#[too_busy]` fn of this file refuses under.
fn name(function: &str) -> String {
    format!("{}::{function}", module_path!())
}

#[track_caller]
fn assert_lag_refusal(rejected: &Rejected, function: &str, max_lag: &str) {
    assert!(rejected.is_too_busy(), "{rejected:?}");
    assert_eq!(rejected.kind(), RejectedKind::TooBusy);
    assert_eq!(rejected.name(), name(function));
    let message = rejected.to_string();
    let prefix = format!("`{}` is too busy: the runtime lags ", name(function));
    assert!(
        message.starts_with(&prefix) && message.ends_with(&format!("(max_lag {max_lag})")),
        "a lag refusal should name the lag and max_lag: {message:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The lag signal on a really blocked runtime

#[too_busy(max_lag = "20ms")]
async fn on_a_stalled_runtime() -> Result<(), Rejected> {
    Ok(())
}

/// Idle: accepted. Three 400 ms stalls: the lag rises and calls are refused. Stalls over: fast
/// recovery stops the refusals within a few samples.
#[test]
fn a_blocked_current_thread_runtime_refuses_calls_then_recovers_fast() {
    let _serial = serial();
    current_thread().block_on(async {
        // The first call starts this thread's monitor, which samples every 10 ms from then on.
        for _ in 0..15 {
            on_a_stalled_runtime()
                .await
                .expect("an idle runtime refused a call");
            sleep(ms(10)).await;
        }

        // A task blocks the thread three times for 400 ms, 100 ms apart. Samples are capped at
        // 2 * 70 ms (twice the default max_lag) so one stall lifts the smoothed lag to ~47 ms:
        // above 2 * 20 ms, where this fn refuses every call, until a quiet sample cuts it by 2/3.
        let stalls = tokio::spawn(async {
            for _ in 0..3 {
                stall(ms(400));
                sleep(ms(100)).await;
            }
        });
        let mut refusals = Vec::new();
        let mut accepted = 0;
        let mut peak_lag = Duration::ZERO;
        while !stalls.is_finished() {
            match on_a_stalled_runtime().await {
                Ok(()) => accepted += 1,
                Err(rejected) => refusals.push(rejected),
            }
            peak_lag = peak_lag.max(too_busy::lag());
            sleep(ms(10)).await;
        }
        stalls.await.unwrap();
        assert!(
            peak_lag > ms(20),
            "too_busy::lag() never rose above 20 ms during 400 ms stalls (peak {peak_lag:?})"
        );
        assert!(
            !refusals.is_empty(),
            "no call was refused while the runtime stalled ({accepted} accepted, peak lag {peak_lag:?})"
        );
        for rejected in &refusals {
            assert_lag_refusal(rejected, "on_a_stalled_runtime", "20ms");
        }

        // Stalls over: quiet samples cut the lag by 2/3 each, so refusals stop within ~300 ms.
        let ended = Instant::now();
        let mut last_refusal = None;
        let mut accepted_after = 0;
        while ended.elapsed() < ms(800) {
            match on_a_stalled_runtime().await {
                Ok(()) => accepted_after += 1,
                Err(rejected) => {
                    assert_lag_refusal(&rejected, "on_a_stalled_runtime", "20ms");
                    last_refusal = Some(ended.elapsed());
                }
            }
            sleep(ms(10)).await;
        }
        assert!(
            last_refusal.is_none_or(|at| at < ms(400)),
            "still refusing {last_refusal:?} after the stalls ended (lag now {:?})",
            too_busy::lag()
        );
        assert!(accepted_after >= 20, "{accepted_after} calls accepted after the stalls");
        assert!(
            too_busy::lag() < ms(20),
            "the lag stayed at {:?} 0.8 s after the stalls",
            too_busy::lag()
        );
    });
}

#[too_busy(max_lag = "20ms")]
async fn on_a_free_worker() -> Result<ThreadId, Rejected> {
    Ok(thread::current().id())
}

/// A multi-thread runtime with two workers, one blocked for 1.2 s: a caller on the other worker
/// keeps being accepted all along.
///
/// Observed (and printed): although a guarded call ran on the blocked worker, `too_busy::lag()` stays
/// at 1-3 ms during the block. The runtime's monitor task is not pinned to the worker whose call
/// started it: the free worker drives the timer and runs the monitor when its timer fires, so it
/// does not see the blocked worker's lag. That does not matter for shedding here (no call can
/// start on a blocked worker), but `lag()` does not show a single blocked worker.
#[test]
fn a_blocked_worker_does_not_refuse_calls_on_the_free_one() {
    let _serial = serial();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Guarded calls on both workers (they share the runtime's monitor); let it sample a while.
        let mut workers = std::collections::HashSet::new();
        for _ in 0..50 {
            let calls: Vec<_> = (0..8)
                .map(|_| {
                    tokio::spawn(async {
                        sleep(ms(1)).await;
                        on_a_free_worker().await
                    })
                })
                .collect();
            for call in calls {
                workers.insert(call.await.unwrap().expect("an idle runtime refused a call"));
            }
            if workers.len() == 2 {
                break;
            }
        }
        assert_eq!(
            workers.len(),
            2,
            "no guarded call ran on one of the workers"
        );
        sleep(ms(250)).await;

        // A guarded call on the worker about to be blocked, then the block.
        let (blocked_tx, blocked_rx) = oneshot::channel();
        let blocker = tokio::spawn(async move {
            let worker = on_a_free_worker().await.unwrap();
            let _ = blocked_tx.send(worker);
            stall(ms(1200));
        });
        let blocked = blocked_rx.await.unwrap();
        assert!(workers.contains(&blocked));
        let caller = tokio::spawn(async {
            let start = Instant::now();
            let mut results = Vec::new();
            let mut peak_lag = Duration::ZERO;
            while start.elapsed() < ms(1000) {
                results.push(on_a_free_worker().await);
                peak_lag = peak_lag.max(too_busy::lag());
                sleep(ms(10)).await;
            }
            (results, peak_lag)
        });
        let (results, peak_lag) = caller.await.unwrap();
        blocker.await.unwrap();
        sleep(ms(30)).await;
        let lag_after = too_busy::lag();

        let refused: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(
            refused.is_empty(),
            "{} of {} calls on the free worker were refused, e.g. {}",
            refused.len(),
            results.len(),
            refused[0]
        );
        assert!(results.len() >= 40, "only {} calls in 1 s", results.len());
        assert!(
            results.iter().all(|r| *r.as_ref().unwrap() != blocked),
            "a call ran on the blocked worker"
        );
        eprintln!(
            "multi-thread, one worker (which ran a guarded call) blocked 1.2 s: {} calls on the \
             free worker, all accepted; peak too_busy::lag() {peak_lag:?} during the block, \
             {lag_after:?} just after it",
            results.len()
        );
    });
}

// ---------------------------------------------------------------------------------------------
// max_lag above the default cap

#[too_busy(max_lag = "200ms")]
async fn tolerant() -> Result<(), Rejected> {
    Ok(())
}

#[too_busy]
async fn default_threshold() -> Result<(), Rejected> {
    Ok(())
}

/// Sustained overload: the thread blocked 450 ms at a time with only a yield between, so every
/// sample is 350+ ms late. A fn with `max_lag = "200ms"` must shed then (the attribute's rule:
/// refused with probability `(lag - max_lag) / max_lag`, always at twice it), as the default
/// 70 ms one does. (Monitors cap samples at twice the largest `max_lag` in force, not the
/// default's: with a 140 ms cap a fn with `max_lag` of 140 ms or more could never shed.)
#[test]
fn a_per_fn_max_lag_above_twice_the_default_still_sheds_under_sustained_overload() {
    let _serial = serial();
    current_thread().block_on(async {
        tolerant().await.unwrap();
        default_threshold().await.unwrap();
        sleep(ms(150)).await;

        let stalls = tokio::spawn(async {
            for _ in 0..5 {
                stall(ms(450));
                tokio::task::yield_now().await;
            }
        });
        let (mut calls, mut tolerant_refused, mut default_refused) = (0, 0, 0);
        let mut peak_lag = Duration::ZERO;
        while !stalls.is_finished() {
            for _ in 0..20 {
                calls += 1;
                if let Err(rejected) = tolerant().await {
                    assert_lag_refusal(&rejected, "tolerant", "200ms");
                    tolerant_refused += 1;
                }
                if default_threshold().await.is_err() {
                    default_refused += 1;
                }
            }
            peak_lag = peak_lag.max(too_busy::lag());
            tokio::task::yield_now().await;
        }
        stalls.await.unwrap();
        assert!(default_refused > 0, "the default 70 ms fn never shed");
        assert!(
            tolerant_refused > 0,
            "`max_lag = \"200ms\"` never shed under 450 ms stalls: 0 of {calls} refused (the \
             default 70 ms fn: {default_refused}); peak too_busy::lag() {peak_lag:?}: samples are \
             capped at twice the global default max_lag (140 ms), below this fn's max_lag"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// max_in_flight

#[too_busy(max_in_flight = 3)]
async fn three_at_once(release: oneshot::Receiver<()>) -> Result<(), Rejected> {
    let _ = release.await;
    Ok(())
}

#[track_caller]
fn assert_in_flight_refusal<T: std::fmt::Debug>(
    polled: Poll<Result<T, Rejected>>,
    function: &str,
    limit: u32,
) {
    match polled {
        Poll::Ready(Err(rejected)) => {
            assert!(rejected.is_too_busy());
            assert_eq!(rejected.name(), name(function));
            assert_eq!(
                rejected.to_string(),
                format!(
                    "`{}` is too busy: {limit} {} in flight (max_in_flight {limit})",
                    name(function),
                    if limit == 1 { "call is" } else { "calls are" }
                )
            );
        }
        other => panic!("expected a refusal on the first poll, got {other:?}"),
    }
}

/// N calls in flight; the next is refused on its first poll; a finished call frees its place.
#[tokio::test]
async fn max_in_flight_admits_n_calls_and_refuses_the_next_at_once() {
    let mut releases = Vec::new();
    let mut calls = Vec::new();
    for _ in 0..3 {
        let (tx, rx) = oneshot::channel();
        releases.push(tx);
        let mut call = Box::pin(three_at_once(rx));
        assert!(poll_once(call.as_mut()).await.is_pending(), "not admitted");
        calls.push(call);
    }
    let (_keep, rx) = oneshot::channel();
    assert_in_flight_refusal(poll_once(pin!(three_at_once(rx))).await, "three_at_once", 3);

    // One finishes: exactly one more is admitted.
    releases.remove(0).send(()).unwrap();
    calls.remove(0).await.unwrap();
    let (tx, rx) = oneshot::channel();
    let mut replacement = Box::pin(three_at_once(rx));
    assert!(poll_once(replacement.as_mut()).await.is_pending());
    let (_keep, rx) = oneshot::channel();
    assert_in_flight_refusal(poll_once(pin!(three_at_once(rx))).await, "three_at_once", 3);

    // All finish: three new calls are admitted together again.
    tx.send(()).unwrap();
    replacement.await.unwrap();
    for (tx, call) in releases.into_iter().zip(calls) {
        tx.send(()).unwrap();
        call.await.unwrap();
    }
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..3).map(|_| oneshot::channel()).unzip();
    for tx in txs {
        tx.send(()).unwrap();
    }
    let results = futures::future::join_all(rxs.into_iter().map(three_at_once)).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[too_busy(max_in_flight = 2)]
async fn cancellable(
    entered: Option<oneshot::Sender<()>>,
    release: oneshot::Receiver<()>,
) -> Result<(), Rejected> {
    if let Some(entered) = entered {
        let _ = entered.send(());
    }
    let _ = release.await;
    Ok(())
}

async fn assert_admits_exactly_two() {
    let (_a, rx_a) = oneshot::channel();
    let (_b, rx_b) = oneshot::channel();
    let (_c, rx_c) = oneshot::channel();
    let mut a = pin!(cancellable(None, rx_a));
    let mut b = pin!(cancellable(None, rx_b));
    assert!(
        poll_once(a.as_mut()).await.is_pending(),
        "first not admitted"
    );
    assert!(
        poll_once(b.as_mut()).await.is_pending(),
        "second not admitted"
    );
    assert_in_flight_refusal(
        poll_once(pin!(cancellable(None, rx_c))).await,
        "cancellable",
        2,
    );
}

/// A call future dropped mid-flight (by hand, by a timeout, by aborting its task, by a panic in
/// its body) frees its place; one dropped before its first poll never took one.
#[tokio::test]
async fn max_in_flight_is_released_when_a_call_is_cancelled() {
    // Dropped by hand after it was admitted.
    {
        let (_tx, rx) = oneshot::channel();
        let mut held = Box::pin(cancellable(None, rx));
        assert!(poll_once(held.as_mut()).await.is_pending());
        drop(held);
    }
    assert_admits_exactly_two().await;

    // Never polled: it took no place, and dropping it frees none (no underflow).
    let unpolled: Vec<_> = (0..5)
        .map(|_| cancellable(None, oneshot::channel().1))
        .collect();
    drop(unpolled);
    assert_admits_exactly_two().await;

    // Dropped by a timeout.
    let (_tx, rx) = oneshot::channel();
    let timed_out = tokio::time::timeout(ms(20), cancellable(None, rx)).await;
    assert!(timed_out.is_err(), "the call should have timed out");
    assert_admits_exactly_two().await;

    // Its task aborted while it waits inside the body.
    let (entered_tx, entered_rx) = oneshot::channel();
    let (_tx, rx) = oneshot::channel();
    let task = tokio::spawn(cancellable(Some(entered_tx), rx));
    entered_rx.await.unwrap();
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_admits_exactly_two().await;

    // Its body panicked (in a task, which tokio catches).
    let (_tx, rx) = oneshot::channel();
    let panicked = tokio::spawn(may_panic(true, rx));
    assert!(panicked.await.unwrap_err().is_panic());
    let (_tx, rx) = oneshot::channel();
    assert!(
        poll_once(pin!(may_panic(false, rx))).await.is_pending(),
        "the panicked call kept its place"
    );
}

#[too_busy(max_in_flight = 1)]
async fn may_panic(panic: bool, release: oneshot::Receiver<()>) -> Result<(), Rejected> {
    tokio::task::yield_now().await;
    if panic {
        panic!("a bug in the handler");
    }
    let _ = release.await;
    Ok(())
}

static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[too_busy(max_in_flight = 4)]
async fn capped_at_four() -> Result<(), Rejected> {
    let now = ACTIVE.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK.fetch_max(now, Ordering::SeqCst);
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    ACTIVE.fetch_sub(1, Ordering::SeqCst);
    Ok(())
}

/// Hundreds of racing calls on two workers: never more than 4 bodies at once, some refused, and
/// the count back at zero afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_in_flight_holds_under_concurrent_calls() {
    let mut accepted = 0;
    let mut refused = 0;
    for _ in 0..5 {
        let tasks: Vec<_> = (0..200).map(|_| tokio::spawn(capped_at_four())).collect();
        for task in tasks {
            match task.await.unwrap() {
                Ok(()) => accepted += 1,
                Err(rejected) => {
                    assert!(rejected.to_string().contains("4 calls are in flight"));
                    refused += 1;
                }
            }
        }
    }
    assert!(
        PEAK.load(Ordering::SeqCst) <= 4,
        "{} bodies at once",
        PEAK.load(Ordering::SeqCst)
    );
    assert_eq!(ACTIVE.load(Ordering::SeqCst), 0);
    assert!(
        accepted >= 5 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
    // All done: four at once are admitted again.
    let results = futures::future::join_all((0..4).map(|_| capped_at_four())).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

// ---------------------------------------------------------------------------------------------
// max_latency

#[track_caller]
fn assert_latency_refusal<T: std::fmt::Debug>(
    result: Result<T, Rejected>,
    function: &str,
    max_latency: &str,
) {
    let rejected = result.expect_err("expected a latency refusal");
    assert!(rejected.is_too_busy());
    let message = rejected.to_string();
    let prefix = format!("`{}` is too busy: recent calls took ", name(function));
    assert!(
        message.starts_with(&prefix)
            && message.ends_with(&format!("on average (max_latency {max_latency})")),
        "a latency refusal should name the mean and max_latency: {message:?}"
    );
}

#[too_busy(max_latency = "50ms")]
async fn sometimes_slow(delay: Duration) -> Result<(), Rejected> {
    sleep(delay).await;
    Ok(())
}

/// Slow calls push the mean above `max_latency`: the next calls are refused at once. A mean
/// older than 1 s no longer refuses: a call gets through, and being fast it brings the mean under
/// `max_latency` (here it was just above), so the refusals stop.
#[tokio::test]
async fn max_latency_refuses_after_slow_calls_until_the_horizon_lets_one_through() {
    for _ in 0..5 {
        sometimes_slow(Duration::ZERO).await.unwrap();
    }
    // Two 150 ms calls at once (both admitted while the mean is ~0): the mean becomes
    // 0.2 * 150 + 0.8 * (0.2 * 150) = 54 ms.
    let (a, b) = tokio::join!(sometimes_slow(ms(150)), sometimes_slow(ms(150)));
    a.unwrap();
    b.unwrap();
    let started = Instant::now();
    assert_latency_refusal(
        sometimes_slow(Duration::ZERO).await,
        "sometimes_slow",
        "50ms",
    );
    sleep(ms(500)).await;
    assert_latency_refusal(
        sometimes_slow(Duration::ZERO).await,
        "sometimes_slow",
        "50ms",
    );

    // Past the 1 s horizon: one gets through (fast: the mean falls to ~43 ms) ...
    sleep(ms(1100).saturating_sub(started.elapsed())).await;
    sometimes_slow(Duration::ZERO)
        .await
        .expect("a stale latency mean still refused a call after 1 s");
    // ... and the refusals stop.
    for _ in 0..20 {
        sometimes_slow(Duration::ZERO)
            .await
            .expect("refused although the last call was fast and the mean is below max_latency");
    }
}

#[too_busy(max_latency = "50ms")]
async fn once_very_slow(delay: Duration) -> Result<(), Rejected> {
    sleep(delay).await;
    Ok(())
}

/// One call 5x over `max_latency`, then the fn is fast for good: once the horizon has let a fast
/// call through, the refusals should stop within about one more horizon.
///
/// Were a fast call to move the mean by only its weight (0.2) and then refresh it, a sequential
/// caller would get one call per 1 s horizon through, and the mean would need ~8 of them to fall
/// from 250 ms under 50 ms: the fn would be refused for ~8 s after it became fast.
#[tokio::test]
async fn max_latency_refusals_stop_soon_after_the_fn_is_fast_again() {
    once_very_slow(ms(250)).await.unwrap(); // the first sample sets the mean: ~250 ms
    assert_latency_refusal(
        once_very_slow(Duration::ZERO).await,
        "once_very_slow",
        "50ms",
    );
    sleep(ms(1100)).await;
    once_very_slow(Duration::ZERO)
        .await
        .expect("the horizon should let a call through");

    // From now on every call is fast. Call every 20 ms for 1.4 s.
    let fast_since = Instant::now();
    let mut refused_at = Vec::new();
    while fast_since.elapsed() < ms(1400) {
        if once_very_slow(Duration::ZERO).await.is_err() {
            refused_at.push(fast_since.elapsed());
        }
        sleep(ms(20)).await;
    }
    let late: Vec<_> = refused_at.iter().filter(|at| **at > ms(1000)).collect();
    assert!(
        late.is_empty(),
        "the fn has been fast for 1+ s and is still refused ({} of ~70 calls refused, {} after \
         1 s; e.g. at {:?}): with weight 0.2 one fast call per 1 s horizon takes the mean from \
         250 ms to 200 ms, 160 ms, ..., ~8 s to get under 50 ms",
        refused_at.len(),
        late.len(),
        late.last()
    );
}

// ---------------------------------------------------------------------------------------------
// Signals combined

#[too_busy(max_lag = "20ms", max_in_flight = 1, max_latency = "50ms")]
async fn guarded_three_ways(
    hold: Option<oneshot::Receiver<()>>,
    delay: Duration,
) -> Result<(), Rejected> {
    if let Some(hold) = hold {
        let _ = hold.await;
    }
    sleep(delay).await;
    Ok(())
}

/// Each signal refuses in turn, and the refusal says which one did.
#[test]
fn signals_combine_and_the_refusal_names_the_signal() {
    current_thread().block_on(async {
        guarded_three_ways(None, Duration::ZERO).await.unwrap();

        // In flight.
        let (release, hold) = oneshot::channel();
        let mut first = pin!(guarded_three_ways(Some(hold), Duration::ZERO));
        assert!(poll_once(first.as_mut()).await.is_pending());
        assert_in_flight_refusal(
            poll_once(pin!(guarded_three_ways(None, Duration::ZERO))).await,
            "guarded_three_ways",
            1,
        );
        release.send(()).unwrap();
        first.await.unwrap();

        // Latency: one 300 ms call lifts the mean (~0 so far) to 0.2 * 300 = 60 ms.
        guarded_three_ways(None, ms(300)).await.unwrap();
        assert_latency_refusal(
            guarded_three_ways(None, Duration::ZERO).await,
            "guarded_three_ways",
            "50ms",
        );

        // Lag, checked first: one 300 ms stall (a sample of 200+ ms, capped at 140 ms) lifts it
        // to ~47 ms, over twice max_lag. The latency mean is still fresh, but lag refuses first.
        stall(ms(300));
        let deadline = Instant::now() + ms(500);
        let lag_refusal = loop {
            sleep(ms(5)).await;
            match guarded_three_ways(None, Duration::ZERO).await {
                Err(rejected) if rejected.to_string().contains("the runtime lags") => {
                    break rejected
                }
                other => assert!(Instant::now() < deadline, "no lag refusal; last: {other:?}"),
            }
        };
        assert_lag_refusal(&lag_refusal, "guarded_three_ways", "20ms");
    });
}

// ---------------------------------------------------------------------------------------------
// on_lag, tracing, the monitor's life

#[too_busy(max_lag = "20ms")]
async fn watched() -> Result<(), Rejected> {
    Ok(())
}

/// `on_lag(30ms, ..)` is called (from the monitor, on the runtime's thread) once a stall lifts
/// the lag past 30 ms, not while idle, and no more once the lag has fallen back.
#[test]
fn on_lag_fires_when_the_lag_passes_its_threshold() {
    let _serial = serial();
    let me = thread::current().id();
    let fired = Arc::new(Mutex::new(Vec::new()));
    let record = fired.clone();
    too_busy::on_lag(ms(30), move |lag| {
        if thread::current().id() == me {
            record.lock().unwrap().push(lag);
        }
    });
    let fired = move || fired.lock().unwrap().clone();
    current_thread().block_on(async {
        watched().await.unwrap(); // starts the monitor
        sleep(ms(350)).await;
        assert!(
            fired().is_empty(),
            "fired on an idle runtime: {:?}",
            fired()
        );

        stall(ms(400));
        sleep(ms(20)).await; // the monitor samples the stall
        let after_stall = fired();
        assert!(!after_stall.is_empty(), "not called after a 400 ms stall");
        assert!(
            after_stall.iter().all(|lag| *lag >= ms(30)),
            "{after_stall:?}"
        );
        assert!(
            too_busy::lag() >= ms(30),
            "too_busy::lag() {:?}",
            too_busy::lag()
        );

        // Quiet: each sample cuts the lag by 2/3, so it is under 30 ms after one or two.
        sleep(ms(300)).await;
        let settled = fired().len();
        sleep(ms(300)).await;
        assert_eq!(
            fired().len(),
            settled,
            "still called once the lag fell: {:?}",
            fired()
        );
    });
}

#[too_busy(max_in_flight = 1, max_lag = "70ms")]
async fn traced(release: Option<oneshot::Receiver<()>>) -> Result<(), Rejected> {
    if let Some(release) = release {
        let _ = release.await;
    }
    Ok(())
}

/// A refusal is a `debug` event, the lag passing the default max_lag a `warn`, and falling back
/// an `info`, all with target `resiliency::too_busy`.
#[test]
fn refusals_and_lag_crossings_are_tracing_events() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        current_thread().block_on(async {
            let (release, hold) = oneshot::channel();
            let mut first = pin!(traced(Some(hold)));
            assert!(poll_once(first.as_mut()).await.is_pending());
            assert!(traced(None).await.is_err());
            release.send(()).unwrap();
            first.await.unwrap();

            // Two 300 ms stalls with no quiet sample between: 47 ms, then 78 ms > 70 ms.
            sleep(ms(150)).await;
            stall(ms(300));
            sleep(ms(1)).await; // the monitor samples the first stall
            stall(ms(300));
            sleep(ms(20)).await; // ... and the second
            sleep(ms(300)).await; // quiet samples: back below
        });
    });
    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let line = |needle: &str| {
        output
            .lines()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no event {needle:?} in:\n{output}"))
            .to_owned()
    };
    let refused = line("call refused");
    assert!(
        refused.contains("DEBUG") && refused.contains("resiliency::too_busy"),
        "{refused}"
    );
    assert!(refused.contains(&name("traced")), "{refused}");
    let above = line("runtime lag above max_lag");
    assert!(
        above.contains("WARN") && above.contains("resiliency::too_busy"),
        "{above}"
    );
    let below = line("runtime lag back below max_lag");
    assert!(below.contains("INFO"), "{below}");
}

#[too_busy(max_lag = "20ms")]
async fn restarted() -> Result<(), Rejected> {
    Ok(())
}

/// On a current-thread runtime: a guarded call, one stall, and up to 50 ms for the monitor to
/// sample it. Returns the lag as soon as the monitor reports the stall (before a quiet sample
/// brings it down again, which fast recovery does at the next sample) and whether a call was
/// refused then; or the lag after 50 ms and `false` if the monitor never reported it.
async fn stall_and_probe() -> (Duration, bool) {
    restarted()
        .await
        .expect("a fresh runtime refused its first call");
    sleep(ms(150)).await;
    stall(ms(400));
    for _ in 0..50 {
        sleep(ms(1)).await;
        let lag = too_busy::lag();
        if lag >= ms(30) {
            return (lag, restarted().await.is_err());
        }
    }
    (too_busy::lag(), false)
}

/// The monitor lives and dies with its runtime: a dropped runtime's lag no longer counts, and the
/// next runtime on the thread gets a monitor of its own that measures the lag again.
#[test]
fn the_monitor_stops_with_its_runtime_and_starts_on_the_next() {
    let _serial = serial();
    let first = current_thread();
    let (lag, refused) = first.block_on(stall_and_probe());
    assert!(
        lag >= ms(30) && refused,
        "first runtime: lag {lag:?}, refused: {refused}"
    );
    drop(first);
    assert!(
        too_busy::lag() < lag / 2,
        "the dropped runtime's monitor still counts: too_busy::lag() {:?}",
        too_busy::lag()
    );

    let second = current_thread();
    let (lag, refused) = second.block_on(stall_and_probe());
    assert!(
        lag >= ms(30) && refused,
        "the new runtime's lag is not measured: lag {lag:?}, refused: {refused}"
    );
}

/// The same when the first runtime was dropped right after its first guarded call, before it
/// ever ran the monitor task it spawned (a runtime per batch of work, a `block_on` around one
/// call): the next runtime on the thread must still get a working monitor.
#[test]
fn a_runtime_dropped_before_its_monitor_ran_leaves_the_next_one_monitored() {
    let _serial = serial();
    let first = current_thread();
    first.block_on(async { restarted().await.unwrap() }); // returns before the monitor runs
    drop(first);

    let second = current_thread();
    let (lag, refused) = second.block_on(stall_and_probe());
    assert!(
        lag >= ms(30) && refused,
        "the next runtime on this thread is not monitored: too_busy::lag() {lag:?} right after a \
         400 ms stall, refused: {refused}"
    );
}

// ---------------------------------------------------------------------------------------------
// No tokio runtime

#[too_busy]
async fn anywhere() -> Result<&'static str, Rejected> {
    Ok("ran")
}

#[too_busy(max_lag = "1ms", max_in_flight = 1, max_latency = "1s")]
async fn anywhere_capped() -> Result<u32, Rejected> {
    YieldOnce(false).await;
    Ok(7)
}

/// Outside tokio there is no lag signal: calls are accepted and nothing panics; the in-flight cap
/// still holds.
#[test]
fn outside_a_tokio_runtime_calls_are_accepted_without_a_lag_signal() {
    assert!(tokio::runtime::Handle::try_current().is_err());
    assert_eq!(block_on_without_tokio(anywhere()).unwrap(), "ran");
    for _ in 0..100 {
        assert_eq!(block_on_without_tokio(anywhere_capped()).unwrap(), 7);
    }
    // A thread that never saw a runtime.
    let on_thread = thread::spawn(|| block_on_without_tokio(anywhere()))
        .join()
        .unwrap();
    assert_eq!(on_thread.unwrap(), "ran");

    // The in-flight cap, polled by hand.
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    let mut first = pin!(anywhere_capped());
    assert!(first.as_mut().poll(&mut cx).is_pending());
    assert_in_flight_refusal(pin!(anywhere_capped()).poll(&mut cx), "anywhere_capped", 1);
    assert_eq!(block_on_without_tokio(first).unwrap(), 7);
    assert_eq!(block_on_without_tokio(anywhere_capped()).unwrap(), 7);
}

// ---------------------------------------------------------------------------------------------
// A signal is on when it is named

#[too_busy]
async fn bare() -> Result<(), Rejected> {
    Ok(())
}

#[too_busy(max_in_flight = 100)]
async fn in_flight_alone() -> Result<(), Rejected> {
    Ok(())
}

#[too_busy(max_latency = "1s")]
async fn latency_alone() -> Result<(), Rejected> {
    Ok(())
}

#[too_busy(max_in_flight = 100, max_lag = "20ms")]
async fn in_flight_and_lag() -> Result<(), Rejected> {
    Ok(())
}

/// On a runtime that keeps stalling, a bare guard (lag with its defaults) and one that names
/// `max_lag` beside `max_in_flight` refuse for lag; guards that name only `max_in_flight` or only
/// `max_latency` never look at the lag.
#[test]
fn a_signal_is_on_when_it_is_named() {
    let _serial = serial();
    current_thread().block_on(async {
        for _ in 0..5 {
            bare().await.unwrap();
            in_flight_and_lag().await.unwrap();
            sleep(ms(10)).await;
        }
        let (mut bare_refused, mut both_refused) = (0, 0);
        for _ in 0..30 {
            // The runtime stays behind: the monitor gets to sample between stalls, late every time.
            stall(ms(100));
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            for _ in 0..5 {
                if let Err(rejected) = bare().await {
                    assert_lag_refusal(&rejected, "bare", "70ms");
                    bare_refused += 1;
                }
                if let Err(rejected) = in_flight_and_lag().await {
                    assert_lag_refusal(&rejected, "in_flight_and_lag", "20ms");
                    both_refused += 1;
                }
                in_flight_alone()
                    .await
                    .expect("`max_in_flight` alone refused a call for lag");
                latency_alone()
                    .await
                    .expect("`max_latency` alone refused a call for lag");
            }
        }
        // The lag settles near 90 ms: a bare guard (max_lag 70 ms) refuses about 29% of calls,
        // one with max_lag 20 ms all of them once the lag is past 40 ms.
        assert!(
            too_busy::lag() > ms(70),
            "the runtime did not lag: {:?}",
            too_busy::lag()
        );
        assert!(
            bare_refused >= 10,
            "bare #[too_busy] refused {bare_refused} of 150"
        );
        assert!(
            both_refused >= 100,
            "max_lag beside max_in_flight refused {both_refused} of 150"
        );
    });
}

/// After a stall that took the lag to its cap (twice the default `max_lag`), one quiet sample ends
/// the shedding of a fn guarded at a lower `max_lag` under the default smoothing (fast recovery),
/// while toobusy-js's original rule keeps refusing calls for several more samples.
#[test]
fn fast_recovery_needs_one_quiet_sample_where_the_original_rule_needs_several() {
    let max_lag = ms(50);
    // Samples are capped at twice the default max_lag: the highest lag a stall leaves.
    let peak = too_busy::max_lag() * 2;
    // A call is refused with probability (lag - max_lag) / max_lag: sometimes above max_lag,
    // always from twice it.
    let quiet_samples = |smoothing: too_busy::Smoothing| {
        let (mut lag, mut samples) = (peak, 0);
        while lag > max_lag && samples < 20 {
            lag = smoothing.next(lag, Duration::ZERO, too_busy::max_lag());
            samples += 1;
        }
        samples
    };
    assert!(peak >= max_lag * 2, "peak {peak:?} refuses every call");
    assert_eq!(quiet_samples(too_busy::Smoothing::default()), 1);
    let original = quiet_samples(too_busy::Smoothing::toobusy());
    assert!(
        original > 1,
        "the original rule recovered in {original} sample(s)"
    );
}

// ---------------------------------------------------------------------------------------------
// Default names

struct Search;
struct Export;

impl Search {
    #[too_busy(max_in_flight = 1)]
    async fn run(&self, release: oneshot::Receiver<()>) -> Result<(), Rejected> {
        let _ = release.await;
        Ok(())
    }
}

impl Export {
    #[too_busy(max_in_flight = 1)]
    async fn run(&self, release: oneshot::Receiver<()>) -> Result<(), Rejected> {
        let _ = release.await;
        Ok(())
    }
}

/// A method's guard is named after its type as well as its fn (`module::Type::fn`, as under
/// `#[breaker]` and `#[race_retry]`), so two types' methods of one name refuse under different
/// names and keep separate caps.
#[tokio::test]
async fn a_methods_default_name_includes_its_type() {
    let (search_release, search_held) = oneshot::channel();
    let (export_release, export_held) = oneshot::channel();
    let mut search_first = pin!(Search.run(search_held));
    let mut export_first = pin!(Export.run(export_held));
    assert!(poll_once(search_first.as_mut()).await.is_pending());
    assert!(poll_once(export_first.as_mut()).await.is_pending());

    let (_, unused) = oneshot::channel();
    let refused = Search.run(unused).await.unwrap_err();
    assert_eq!(refused.name(), name("Search::run"));
    let (_, unused) = oneshot::channel();
    let refused = Export.run(unused).await.unwrap_err();
    assert_eq!(refused.name(), name("Export::run"));

    search_release.send(()).unwrap();
    export_release.send(()).unwrap();
    search_first.await.unwrap();
    export_first.await.unwrap();
}
