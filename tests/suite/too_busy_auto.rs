//! `#[too_busy(max_in_flight = "auto")]` under a paused clock, against a dependency with a fixed
//! number of slots (a FIFO queue in front of them, as a connection pool): the limit it learns,
//! how it follows the dependency's capacity down and back up, low load, failure spikes, bounds,
//! settings changed live, and the guarantees (panicking bodies, cancelled calls, a subscriber
//! that panics as a window closes, a runtime without a time driver).

use crate::support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resiliency::settings::{self, Policy};
use resiliency::too_busy::TooBusy;
use resiliency::{too_busy, Rejected};
use tokio::sync::oneshot;
use tokio::time::{sleep, sleep_until, Instant};

/// A dependency with `capacity` slots, each call holding one for `hold` (or, `uneven`, 400 ms
/// for every third call and 5 ms for the others; either times `slower`); calls beyond them wait
/// in a FIFO queue. The capacity changes at once, queue or not.
struct Dependency {
    state: Mutex<Slots>,
    hold: Duration,
    uneven: bool,
    slower: AtomicU32,
    calls: AtomicUsize,
}

struct Slots {
    busy: usize,
    capacity: usize,
    queue: VecDeque<oneshot::Sender<()>>,
}

impl Dependency {
    fn new(capacity: usize, hold: Duration) -> &'static Self {
        Dependency::leak(capacity, hold, false)
    }

    /// No capacity limit to speak of, and uneven latency: 400 ms or 5 ms.
    fn uneven() -> &'static Self {
        Dependency::leak(100_000, HOLD, true)
    }

    fn leak(capacity: usize, hold: Duration, uneven: bool) -> &'static Self {
        Box::leak(Box::new(Dependency {
            state: Mutex::new(Slots {
                busy: 0,
                capacity,
                queue: VecDeque::new(),
            }),
            hold,
            uneven,
            slower: AtomicU32::new(1),
            calls: AtomicUsize::new(0),
        }))
    }

    fn hold(&self) -> Duration {
        let n = self.calls.fetch_add(1, SeqCst);
        let hold = match (self.uneven, n % 3) {
            (false, _) => self.hold,
            (true, 0) => Duration::from_millis(400),
            (true, _) => Duration::from_millis(5),
        };
        hold * self.slower.load(SeqCst)
    }

    async fn call(&'static self) {
        let waiting = {
            let mut slots = self.state.lock().unwrap();
            if slots.busy < slots.capacity {
                slots.busy += 1;
                None
            } else {
                let (tx, rx) = oneshot::channel();
                slots.queue.push_back(tx);
                Some(rx)
            }
        };
        if let Some(turn) = waiting {
            // The slot is handed over by the call that leaves it.
            turn.await.unwrap();
        }
        let _slot = Leave(self);
        sleep(self.hold()).await;
    }

    fn set_capacity(&self, capacity: usize) {
        let mut slots = self.state.lock().unwrap();
        slots.capacity = capacity;
        hand_over(&mut slots);
    }
}

/// Gives free slots to the calls waiting.
fn hand_over(slots: &mut Slots) {
    while slots.busy < slots.capacity {
        let Some(next) = slots.queue.pop_front() else {
            return;
        };
        slots.busy += 1;
        if next.send(()).is_err() {
            slots.busy -= 1; // that caller is gone
        }
    }
}

struct Leave(&'static Dependency);

impl Drop for Leave {
    fn drop(&mut self) {
        let mut slots = self.0.state.lock().unwrap();
        slots.busy -= 1;
        hand_over(&mut slots);
    }
}

/// The site name of the `#[too_busy]` fn whose path ends with `suffix`, once a call set it up.
fn site(suffix: &str) -> Option<String> {
    settings::sites()
        .into_iter()
        .find(|(policy, name)| *policy == Policy::TooBusy && name.ends_with(suffix))
        .map(|(_, name)| name)
}

/// That fn's guard, once a call set it up.
fn guard_if(suffix: &str) -> Option<&'static TooBusy> {
    resiliency::too_busy::get(&site(suffix)?)
}

fn guard_of(suffix: &str) -> &'static TooBusy {
    guard_if(suffix).unwrap_or_else(|| panic!("no site `{suffix}`"))
}

/// What an open-loop run saw: per call, when it was sent (s since the start), whether it was
/// admitted, and its latency; and the limit every 100 ms.
#[derive(Default)]
struct Run {
    calls: Vec<(f64, bool, Duration)>,
    limits: Vec<(f64, u32)>,
}

impl Run {
    fn between(&self, from: f64, to: f64) -> impl Iterator<Item = &(f64, bool, Duration)> {
        self.calls
            .iter()
            .filter(move |(at, _, _)| (from..to).contains(at))
    }

    /// Admitted calls per second sent in `[from, to)`.
    fn goodput(&self, from: f64, to: f64) -> f64 {
        self.between(from, to).filter(|c| c.1).count() as f64 / (to - from)
    }

    fn refused(&self, from: f64, to: f64) -> usize {
        self.between(from, to).filter(|c| !c.1).count()
    }

    /// The 99th percentile latency of admitted calls sent in `[from, to)`.
    fn p99(&self, from: f64, to: f64) -> Duration {
        let mut latencies: Vec<_> = self
            .between(from, to)
            .filter(|c| c.1)
            .map(|c| c.2)
            .collect();
        latencies.sort();
        latencies[(latencies.len() * 99).div_ceil(100).saturating_sub(1)]
    }

    fn limits(&self, from: f64, to: f64) -> Vec<u32> {
        self.limits
            .iter()
            .filter(|(at, _)| (from..to).contains(at))
            .map(|l| l.1)
            .collect()
    }
}

/// Sends calls at `rate` per second (evenly spaced; `burst` at a time) for `seconds`, each in
/// its own task (each `call()` says whether it was admitted), reading the limit of `guard()` every 100 ms and calling `at(t)` as time passes.
async fn open_loop<F, Fut>(
    seconds: f64,
    rate: f64,
    burst: usize,
    call: F,
    guard: impl Fn() -> Option<&'static TooBusy>,
    mut at: impl FnMut(f64),
) -> Run
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut limits = Vec::new();
    let gap = Duration::from_secs_f64(burst as f64 / rate);
    let mut next_limit = 0.0;
    let mut tasks = Vec::new();
    let mut i = 0u32;
    loop {
        let send = start + gap * i;
        let t = (send - start).as_secs_f64();
        if t >= seconds {
            break;
        }
        sleep_until(send).await;
        at(t);
        while next_limit <= t {
            if let Some(limit) = guard().and_then(TooBusy::in_flight_limit) {
                limits.push((next_limit, limit));
            }
            next_limit += 0.1;
        }
        for _ in 0..burst {
            let call = call();
            let calls = calls.clone();
            tasks.push(tokio::spawn(async move {
                let began = Instant::now();
                let admitted = call.await;
                calls.lock().unwrap().push((t, admitted, began.elapsed()));
            }));
        }
        i += 1;
    }
    for task in tasks {
        task.await.unwrap();
    }
    let calls = std::mem::take(&mut *calls.lock().unwrap());
    Run { calls, limits }
}

const HOLD: Duration = Duration::from_millis(100);

#[too_busy(max_in_flight = "auto")]
async fn query(dependency: &'static Dependency) -> Result<(), Rejected> {
    dependency.call().await;
    Ok(())
}

/// 20 slots of 100 ms (200 calls/s) offered 400 calls/s: 0–10 s at 20 slots, 10–20 s at 10,
/// 20–30 s at 20 again.
#[test]
fn learns_the_capacity_follows_it_down_and_back_up() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        let dependency = Dependency::new(20, HOLD);
        let run = open_loop(
            30.0,
            400.0,
            1,
            move || async move { query(dependency).await.is_ok() },
            || guard_if("::query"),
            |t| {
                if (10.0..20.0).contains(&t) {
                    dependency.set_capacity(10);
                } else if t >= 20.0 {
                    dependency.set_capacity(20);
                }
            },
        )
        .await;
        let unloaded = HOLD;
        for (from, to, capacity) in [(2.0, 10.0, 200.0), (12.0, 20.0, 100.0), (22.0, 30.0, 200.0)] {
            let goodput = run.goodput(from, to);
            let p99 = run.p99(from, to);
            let limits = run.limits(from, to);
            assert!(
                goodput >= 0.9 * capacity,
                "{from}–{to} s: goodput {goodput}/s of {capacity}/s; limits {limits:?}"
            );
            assert!(
                p99 <= unloaded * 5 / 2,
                "{from}–{to} s: accepted p99 {p99:?}; limits {limits:?}"
            );
        }
        // Within 2 s of the halving, the limit has come down to near the 10 slots, and stays
        // there.
        let after = run.limits(12.0, 20.0);
        assert!(after.iter().all(|&l| l <= 20), "{after:?}");
        let recovered = run.limits(22.0, 30.0);
        assert!(
            recovered.iter().filter(|&&l| l >= 20).count() * 10 >= recovered.len() * 9,
            "{recovered:?}"
        );
    });
}

#[too_busy(max_in_flight = "auto")]
async fn uneven(dependency: &'static Dependency) -> Result<(), Rejected> {
    dependency.call().await;
    Ok(())
}

/// No capacity limit, and latency uneven by nature (a third of calls 400 ms, the others 5 ms),
/// at 500 calls/s: about 70 calls in flight, nothing waiting. Once the limit has grown from 20
/// to what the calls in flight need, at most 2% are refused.
#[test]
fn uneven_latency_with_nothing_queueing_is_not_a_queue() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        let dependency = Dependency::uneven();
        let run = open_loop(
            20.0,
            500.0,
            1,
            move || async move { uneven(dependency).await.is_ok() },
            || guard_if("::uneven"),
            |_| {},
        )
        .await;
        let refused = run.refused(2.0, 20.0);
        let sent = run.between(2.0, 20.0).count();
        assert!(
            refused * 50 <= sent,
            "{refused} refused of {sent}; limits {:?}",
            run.limits(0.0, 20.0)
        );
    });
}

#[too_busy(max_in_flight = "auto")]
async fn slowing(dependency: &'static Dependency) -> Result<(), Rejected> {
    dependency.call().await;
    Ok(())
}

/// 20 slots of 100 ms offered 400 calls/s, whose holds double for good at 10 s: the same
/// slots, half the calls per second. The limit is not pinned low: from 3 s after the change,
/// goodput is the slowed capacity's (100 calls/s).
#[test]
fn a_dependency_slower_for_good_is_followed_within_three_seconds() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        let dependency = Dependency::new(20, HOLD);
        let run = open_loop(
            20.0,
            400.0,
            1,
            move || async move { slowing(dependency).await.is_ok() },
            || guard_if("::slowing"),
            |t| {
                dependency
                    .slower
                    .store(if t < 10.0 { 1 } else { 2 }, SeqCst)
            },
        )
        .await;
        let goodput = run.goodput(13.0, 19.0);
        let limits = run.limits(9.0, 20.0);
        assert!(goodput >= 90.0, "goodput {goodput}/s; limits {limits:?}");
        assert!(run.limits(13.0, 20.0).iter().all(|&l| l > 10), "{limits:?}");
    });
}

#[too_busy(max_in_flight = "auto")]
async fn quiet(dependency: &'static Dependency) -> Result<(), Rejected> {
    dependency.call().await;
    Ok(())
}

/// Half the capacity, in bursts of 5 calls every 50 ms: nothing is refused, the limit stays
/// where it started.
#[test]
fn low_load_refuses_nothing() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        let dependency = Dependency::new(20, HOLD);
        let run = open_loop(
            20.0,
            100.0,
            5,
            move || async move { quiet(dependency).await.is_ok() },
            || guard_if("::quiet"),
            |_| {},
        )
        .await;
        assert_eq!(run.refused(0.0, 20.0), 0);
        assert!(run.limits(0.0, 20.0).iter().all(|&l| l == 20));
    });
}

static FAILING: AtomicBool = AtomicBool::new(false);
static CALLS: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug)]
enum AppError {
    NotFound,
    Busy,
}

impl From<Rejected> for AppError {
    fn from(_: Rejected) -> Self {
        AppError::Busy
    }
}

#[too_busy(max_in_flight = "auto", auto_initial = 40)]
async fn flaky(dependency: &'static Dependency) -> Result<(), AppError> {
    dependency.call().await;
    // One call in three fails as a matter of course (a handler's 404s); while `FAILING`, all do.
    let n = CALLS.fetch_add(1, SeqCst);
    if FAILING.load(SeqCst) || n.is_multiple_of(3) {
        return Err(AppError::NotFound);
    }
    Ok(())
}

/// A steady share of errors moves nothing; a spike (every call failing, 3–4 s) cuts the limit.
#[test]
fn a_failure_spike_cuts_the_limit_and_a_steady_share_does_not() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        // Plenty of slots: latency never rises, only failures can move the limit down.
        let dependency = Dependency::new(1000, HOLD);
        let run = open_loop(
            6.0,
            300.0,
            1,
            move || async move { !matches!(flaky(dependency).await, Err(AppError::Busy)) },
            || guard_if("::flaky"),
            |t| FAILING.store((3.0..4.0).contains(&t), SeqCst),
        )
        .await;
        // A third failing moves nothing down (the limit may grow: calls press against it).
        let before = run.limits(0.5, 3.0);
        assert!(before.iter().all(|&l| l >= 40), "{before:?}");
        let during = run.limits(3.3, 4.2);
        let last = *before.last().unwrap();
        assert!(during.iter().any(|&l| l < last), "{before:?} {during:?}");
    });
}

#[too_busy(max_in_flight = "auto", auto_min = 2, auto_max = 12)]
async fn bounded(dependency: &'static Dependency) -> Result<(), Rejected> {
    dependency.call().await;
    Ok(())
}

/// `auto_max` holds against a dependency that could take far more, `auto_min` against one that
/// takes one call at a time; `auto_initial`'s default is clamped into the bounds.
#[test]
fn the_learned_limit_stays_within_its_bounds() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        let dependency = Dependency::new(1000, HOLD);
        // One slot from 4 s on: ten calls a second, so windows are long (enough calls to
        // judge) and the limit comes down over a few of them.
        let run = open_loop(
            16.0,
            400.0,
            1,
            move || async move { bounded(dependency).await.is_ok() },
            || guard_if("::bounded"),
            |t| dependency.set_capacity(if t < 4.0 { 1000 } else { 1 }),
        )
        .await;
        let limits = run.limits(0.0, 16.0);
        assert_eq!(limits[0], 12, "{limits:?}");
        assert!(limits.iter().all(|&l| (2..=12).contains(&l)), "{limits:?}");
        assert_eq!(*run.limits(15.0, 16.0).last().unwrap(), 2, "{limits:?}");
    });
}

#[too_busy(max_in_flight = 8)]
async fn switched(dependency: &'static Dependency) -> Result<(), Rejected> {
    dependency.call().await;
    Ok(())
}

/// A fixed limit switched to "auto" at run time, its bounds set, and back; a bound set for every
/// site is inert where the limit is fixed; a bad value is refused with what is valid.
#[test]
fn settings_switch_a_live_site_to_auto_and_back() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        let dependency = Dependency::new(1000, HOLD);
        switched(dependency).await.unwrap();
        let guard = guard_of("::switched");
        let site = settings::sites()
            .into_iter()
            .find(|s| s.1.ends_with("::switched"))
            .unwrap()
            .1;
        assert_eq!(guard.in_flight_limit(), Some(8));
        settings::set(Policy::TooBusy, "*", "auto_min", 2).unwrap();
        assert_eq!(guard.in_flight_limit(), Some(8));
        settings::set(Policy::TooBusy, &site, "auto_max", 16).unwrap();
        assert_eq!(guard.in_flight_limit(), Some(8));
        settings::set(Policy::TooBusy, &site, "max_in_flight", "auto").unwrap();
        assert!(guard.learns_in_flight_limit());
        // `auto_initial`'s default, 20, within the `auto_max` of 16.
        assert_eq!(guard.in_flight_limit(), Some(16));
        let refused = settings::set(Policy::TooBusy, &site, "max_in_flight", "sometimes")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("\"auto\" to learn it"), "{refused}");
        let refused = settings::set(Policy::TooBusy, &site, "auto_min", 32)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("`auto_max` (16) must be at least `auto_min` (32)"),
            "{refused}"
        );
        assert_eq!(guard.in_flight_limit(), Some(16));
        settings::set(Policy::TooBusy, &site, "max_in_flight", 5).unwrap();
        assert!(!guard.learns_in_flight_limit());
        assert_eq!(guard.in_flight_limit(), Some(5));
        settings::unset(Policy::TooBusy, &site, "max_in_flight").unwrap();
        settings::unset(Policy::TooBusy, "*", "auto_min").unwrap();
        settings::unset(Policy::TooBusy, &site, "auto_max").unwrap();
        assert_eq!(guard.in_flight_limit(), Some(8));
    });
}

// The guarantees, with the limit learned.

#[too_busy(max_in_flight = "auto", auto_min = 1, auto_initial = 2)]
async fn fragile(hold: Duration, panics: bool) -> Result<(), Rejected> {
    sleep(hold).await;
    assert!(!panics, "expected: a body that panics");
    Ok(())
}

/// A body that panics and a call dropped while it runs give their slots back, count as failed
/// calls in their window, and leave the learner working: a limit of 2 keeps refusing the third.
#[test]
fn panicking_and_cancelled_calls_give_their_slots_back_and_count_as_failures() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        for round in 0..30 {
            let panicked = tokio::spawn(fragile(Duration::from_millis(10), true)).await;
            assert!(panicked.unwrap_err().is_panic());
            let cancelled = tokio::time::timeout(
                Duration::from_millis(5),
                fragile(Duration::from_secs(1), false),
            )
            .await;
            assert!(cancelled.is_err());
            fragile(Duration::from_millis(10), false).await.unwrap();
            let guard = guard_of("::fragile");
            assert_eq!(guard.in_flight(), 0, "round {round}");
        }
        let guard = guard_of("::fragile");
        let limit = guard.in_flight_limit().unwrap();
        let calls: Vec<_> = (0..=limit)
            .map(|_| fragile(Duration::from_millis(10), false))
            .collect();
        let outcomes = futures::future::join_all(calls).await;
        assert_eq!(
            outcomes.iter().filter(|o| o.is_err()).count(),
            1,
            "limit {limit}"
        );
        assert_eq!(guard.in_flight(), 0);
    });
}

#[too_busy(max_in_flight = "auto", auto_min = 1)]
async fn observed(hold: Duration, panics: bool) -> Result<(), Rejected> {
    sleep(hold).await;
    assert!(!panics, "expected: a body that panics");
    Ok(())
}

/// A `tracing` subscriber that panics on the event of a learned limit, raised in the drop of a
/// call whose body panicked (the window closes there): the process goes on, the slot comes
/// back, the limit is in force.
#[test]
fn a_subscriber_that_panics_as_a_window_closes_in_an_unwinding_call_loses_only_its_event() {
    let _serial = support::serial();
    let subscriber = Arc::new(support::PanickingSubscriber::new(|event, _| {
        support::message(event).contains("in-flight limit learned")
    }));
    let _default = tracing::subscriber::set_default(subscriber.clone());
    support::paused_runtime().block_on(async {
        // Calls beyond the limit, half of them failing (the usual here, so the failures move
        // nothing; the calls pressing against the limit do): many of the calls that close the
        // windows are unwinding from their bodies' panics.
        for _ in 0..40 {
            let calls: Vec<_> = (0..30)
                .map(|i| async move {
                    std::panic::AssertUnwindSafe(observed(Duration::from_millis(20), i % 2 == 0))
                        .catch_unwind()
                        .await
                })
                .collect();
            futures::future::join_all(calls).await;
            sleep(Duration::from_millis(20)).await;
        }
    });
    let guard = guard_of("::observed");
    assert_eq!(guard.in_flight(), 0);
    assert!(subscriber.picked.load(SeqCst) > 0, "no window closed");
    // The limit learned while the events were lost is in force.
    assert_ne!(guard.in_flight_limit(), Some(20));
}

use futures::FutureExt as _;

#[too_busy(max_in_flight = "auto")]
async fn timeless() -> Result<(), Rejected> {
    tokio::task::yield_now().await;
    std::thread::sleep(Duration::from_millis(2));
    Ok(())
}

/// A runtime without a time driver: the learner reads the clock only (no timer), so calls are
/// admitted, windows close and the slots come back.
#[test]
fn a_runtime_without_timers_learns_as_any() {
    let _serial = support::serial();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        for _ in 0..100 {
            timeless().await.unwrap();
        }
    });
    let guard = guard_of("::timeless");
    assert_eq!(guard.in_flight(), 0);
    assert!(guard.learns_in_flight_limit());
    assert_eq!(guard.in_flight_limit(), Some(20));
}

#[too_busy(max_in_flight = "auto", max_latency = "50ms")]
async fn combined(hold: Duration) -> Result<(), Rejected> {
    sleep(hold).await;
    Ok(())
}

/// The learned limit combines with the other signals as a fixed one does: here `max_latency`
/// refuses while the recent mean is above it, far below the learned limit, and says so.
#[test]
fn a_learned_limit_combines_with_max_latency() {
    let _serial = support::serial();
    support::paused_runtime().block_on(async {
        combined(Duration::from_millis(80)).await.unwrap();
        let refused = combined(Duration::from_millis(1)).await.unwrap_err();
        assert!(refused.is_too_busy());
        assert!(refused.to_string().contains("max_latency"), "{refused}");
        let guard = guard_of("::combined");
        assert!(guard.learns_in_flight_limit());
        assert_eq!(guard.in_flight_limit(), Some(20));
        assert_eq!(guard.in_flight(), 0);
    });
}
