//! Where two features meet in one call: each test here is a case that once failed at such a
//! seam (the registry and a tracing subscriber, tokio's budget and the refusal count, slow calls
//! and the breaker's epochs, deadlines and retries, hints and `reset`, settings changed while
//! calls are in flight or keys are held). `tests/README.md` lists every pair and its tests.

use crate::support;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use resiliency::breaker::{self, State};
use resiliency::race_retry::{numbered, After, RaceRetry};
use resiliency::settings::{self, Overrides, Policy};
use resiliency::too_busy::{self, TooBusy};
use resiliency::{race_retry, Breaker, Rejected, RetryHint};
use support::{ms, secs, BoxError};

/// A subscriber that counts the events of `target` whose message is `message`, and keeps every
/// event's message and fields as text.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<(String, String, tracing::Level)>>>);

impl Events {
    fn count(&self, target: &str, message: &str) -> usize {
        let seen = self.0.lock().unwrap();
        seen.iter()
            .filter(|(t, m, _)| t == target && m.contains(message))
            .count()
    }

    fn find(&self, message: &str) -> Vec<(String, tracing::Level)> {
        let seen = self.0.lock().unwrap();
        seen.iter()
            .filter(|(_, m, _)| m.contains(message))
            .map(|(_, m, l)| (m.clone(), *l))
            .collect()
    }
}

struct Text(String);

impl tracing::field::Visit for Text {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        use std::fmt::Write;
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl tracing::Subscriber for Events {
    support::no_spans!();

    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        let meta = event.metadata();
        self.0
            .lock()
            .unwrap()
            .push((meta.target().to_owned(), text.0, *meta.level()));
    }
}

/// Runs `f` on a thread of its own, failing the test should it not return within 10 s (a
/// deadlock fails rather than hangs).
fn within_10s<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(secs(10))
        .expect("did not return within 10 s: a deadlock")
}

// ---- the cooperative budget x the refusal count (too_busy, metrics, the auto learner) ----

/// A body that never ends: holds its slot.
async fn forever() -> Result<(), Rejected> {
    std::future::pending().await
}

#[resiliency::too_busy(name = "seams.budget.attribute", max_in_flight = 1)]
async fn one_at_a_time(hold: bool) -> Result<(), Rejected> {
    if hold {
        forever().await
    } else {
        Ok(())
    }
}

/// Makes `n` refused calls with `call` on a current-thread runtime whose task spends its budget
/// (the calls are the loop's only awaits), under a subscriber that counts them.
fn refusals_counted<F, Fut>(
    n: usize,
    call: F,
    hold: impl Future<Output = ()> + Send + 'static,
) -> usize
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), Rejected>>,
{
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(events.clone());
    let rt = support::current_thread();
    rt.block_on(async {
        let holder = tokio::spawn(hold);
        tokio::task::yield_now().await;
        for _ in 0..n {
            let refused = call().await.unwrap_err();
            assert!(refused.is_too_busy(), "{refused}");
        }
        holder.abort();
    });
    events.count("resiliency::too_busy", "call refused")
}

#[test]
fn a_refusal_that_yields_to_the_budget_is_counted_once_through_the_builder() {
    static GUARD: std::sync::LazyLock<&'static TooBusy> = std::sync::LazyLock::new(|| {
        TooBusy::builder("seams.budget.builder")
            .max_in_flight(1)
            .register()
            .unwrap()
    });
    let guard: &'static TooBusy = &GUARD;
    let counted = refusals_counted(
        1_000,
        || guard.call(async { Ok::<(), Rejected>(()) }),
        async move {
            let _ = guard.call(forever()).await;
        },
    );
    assert_eq!(counted, 1_000, "each refusal counted once");
}

#[test]
fn a_refusal_that_yields_to_the_budget_is_counted_once_through_the_attribute() {
    let counted = refusals_counted(1_000, || one_at_a_time(false), async {
        let _ = one_at_a_time(true).await;
    });
    assert_eq!(counted, 1_000, "each refusal counted once");
}

// ---- too_busy x tracing: shedding said once at warn, its end once at info ----

#[test]
fn a_guard_that_starts_refusing_says_so_once_at_warn_and_once_at_info_when_it_stops() {
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(events.clone());
    let guard: &'static TooBusy = TooBusy::builder("seams.episode")
        .max_in_flight(1)
        .register()
        .unwrap();
    support::paused_runtime().block_on(async {
        let holder = tokio::spawn(guard.call(forever()));
        tokio::task::yield_now().await;
        for _ in 0..50 {
            assert!(guard.call(async { Ok::<(), Rejected>(()) }).await.is_err());
        }
        let started = events.find("load shedding started");
        assert_eq!(
            started.len(),
            1,
            "one line, not one per refusal: {started:?}"
        );
        assert_eq!(started[0].1, tracing::Level::WARN);
        assert!(
            started[0]
                .0
                .contains("1 call is in flight (max_in_flight 1)"),
            "the signal in words: {}",
            started[0].0
        );
        holder.abort();
        let _ = holder.await;
        // Admitted, but within the quiet time: the episode goes on.
        assert!(guard.call(async { Ok::<(), Rejected>(()) }).await.is_ok());
        assert!(events.find("load shedding stopped").is_empty());
        tokio::time::sleep(secs(11)).await;
        assert!(guard.call(async { Ok::<(), Rejected>(()) }).await.is_ok());
        assert!(guard.call(async { Ok::<(), Rejected>(()) }).await.is_ok());
        let stopped = events.find("load shedding stopped");
        assert_eq!(stopped.len(), 1, "{stopped:?}");
        assert_eq!(stopped[0].1, tracing::Level::INFO);
        assert!(stopped[0].0.contains("refused=50"), "{}", stopped[0].0);
    });
}

// ---- slow calls x the breaker's epochs (open, close, reset) ----

/// Starts `n` calls that each take `each` on `breaker`, and returns their handles.
fn slow_calls(
    breaker: &Arc<Breaker>,
    n: usize,
    each: Duration,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let breaker = breaker.clone();
            tokio::spawn(async move {
                let _ = breaker
                    .call(async move {
                        tokio::time::sleep(each).await;
                        Ok::<_, BoxError>(())
                    })
                    .await;
            })
        })
        .collect()
}

/// Starts `n` calls that each take `each`, runs `meanwhile` once they are admitted, and waits for
/// them to end.
async fn across(
    breaker: &Arc<Breaker>,
    n: usize,
    each: Duration,
    meanwhile: impl FnOnce(&Breaker),
) {
    let calls = slow_calls(breaker, n, each);
    tokio::task::yield_now().await;
    meanwhile(breaker);
    for call in calls {
        call.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn slow_calls_admitted_before_a_reset_count_in_no_window_after_it_rate_rule() {
    let breaker = Arc::new(
        Breaker::builder("seams.slow.rate")
            .failure_rate(0.5)
            .min_calls(10)
            .slow_call_duration(ms(100))
            .slow_call_rate(0.5)
            .build()
            .unwrap(),
    );
    across(&breaker, 10, ms(500), |b| {
        b.force_open();
        b.reset();
    })
    .await;
    let snapshot = breaker.snapshot();
    assert_eq!((snapshot.recent_slow, snapshot.recent_calls), (0, Some(0)));
    // Now 1 slow call of 10 is a tenth: below the rate.
    let mut calls = slow_calls(&breaker, 1, ms(500));
    calls.extend(slow_calls(&breaker, 9, ms(1)));
    for call in calls {
        call.await.unwrap();
    }
    let snapshot = breaker.snapshot();
    assert_eq!((snapshot.recent_slow, snapshot.recent_calls), (1, Some(10)));
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn slow_calls_admitted_before_a_reset_count_in_no_window_after_it_count_rule() {
    let breaker = Arc::new(
        Breaker::builder("seams.slow.count")
            .error_threshold(3)
            .slow_call_duration(ms(100))
            .build()
            .unwrap(),
    );
    across(&breaker, 5, ms(500), Breaker::reset).await;
    let snapshot = breaker.snapshot();
    assert_eq!((snapshot.recent_slow, snapshot.recent_errors), (0, 0));
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn slow_calls_admitted_before_an_open_count_in_no_window_after_the_close() {
    let breaker = Arc::new(
        Breaker::builder("seams.slow.reopen")
            .failure_rate(0.5)
            .min_calls(4)
            .error_timeout(secs(1))
            .slow_call_duration(ms(100))
            .slow_call_rate(0.5)
            .build()
            .unwrap(),
    );
    across(&breaker, 10, secs(3), |b| {
        for _ in 0..2 {
            b.force_open();
            b.reset();
        }
    })
    .await;
    let snapshot = breaker.snapshot();
    assert_eq!((snapshot.recent_slow, snapshot.recent_calls), (0, Some(0)));
    for call in slow_calls(&breaker, 4, ms(1)) {
        call.await.unwrap();
    }
    assert_eq!(breaker.state(), State::Closed, "{:?}", breaker.snapshot());
}

// ---- the registry x tracing subscribers: a subscriber may set up sites and look them up ----

#[resiliency::too_busy(name = "seams.subscriber.other", max_in_flight = 4)]
async fn other_guarded() -> Result<u32, Rejected> {
    Ok(7)
}

const ZERO: u32 = 0;

/// Its `max_in_flight` breaks a rule (checked at its first call): its set-up logs an error.
#[resiliency::too_busy(name = "seams.subscriber.first", max_in_flight = ZERO)]
async fn first_guarded() -> Result<u32, Rejected> {
    Ok(1)
}

/// On every `resiliency::settings` event: looks policies up and calls another guarded fn for
/// the first time, as a subscriber that reports what it saw might.
struct Meddling(Arc<AtomicUsize>);

impl tracing::Subscriber for Meddling {
    support::no_spans!();

    fn event(&self, event: &tracing::Event<'_>) {
        if event.metadata().target() != "resiliency::settings" {
            return;
        }
        let _ = too_busy::get("seams.subscriber.first");
        let _ = race_retry::names();
        let _ = breaker::names();
        let _ = settings::sites();
        // Answers at its first poll (no runtime needed).
        let answer = futures::FutureExt::now_or_never(other_guarded());
        assert_eq!(answer.unwrap().unwrap(), 7);
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_subscriber_may_call_guarded_fns_and_look_policies_up_while_a_site_is_set_up() {
    let seen = Arc::new(AtomicUsize::new(0));
    let subscriber = Meddling(seen.clone());
    let answer = within_10s(move || {
        tracing::subscriber::with_default(subscriber, || {
            futures::executor::block_on(first_guarded())
        })
    });
    assert_eq!(answer.unwrap(), 1);
    assert!(
        seen.load(Ordering::SeqCst) >= 1,
        "the subscriber saw the set-up's error"
    );
}

#[test]
fn a_subscriber_may_register_breakers_while_one_is_registered() {
    struct Registering(Arc<AtomicUsize>);
    impl tracing::Subscriber for Registering {
        support::no_spans!();
        fn event(&self, event: &tracing::Event<'_>) {
            if event.metadata().target() != "resiliency::settings" {
                return;
            }
            let _ = breaker::get("seams.subscriber.breaker");
            let _ = Breaker::builder("seams.subscriber.breaker.other").register();
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    // An override that breaks a rule with the builder's options: logged at set-up.
    settings::set(Policy::Breaker, "seams.subscriber.breaker", "min_calls", 5).unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let subscriber = Registering(seen.clone());
    within_10s(move || {
        tracing::subscriber::with_default(subscriber, || {
            Breaker::builder("seams.subscriber.breaker")
                .register()
                .unwrap();
        })
    });
    assert!(seen.load(Ordering::SeqCst) >= 1);
    assert!(breaker::get("seams.subscriber.breaker.other").is_some());
}

// ---- the registry x settings: a registration waits for the settings of the first ----

#[test]
fn two_threads_registering_a_name_both_get_its_overrides() {
    for round in 0..200 {
        let name: &'static str = Box::leak(format!("seams.register.{round}").into_boxed_str());
        settings::set(Policy::Breaker, name, "error_timeout", "42s").unwrap();
        let start = Arc::new(std::sync::Barrier::new(2));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let start = start.clone();
                std::thread::spawn(move || {
                    start.wait();
                    Breaker::builder(name).register().unwrap().error_timeout()
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(thread.join().unwrap(), secs(42), "round {round}");
        }
    }
}

// ---- deadlines x retries, deadlines x tower layers ----

#[tokio::test(start_paused = true)]
async fn every_attempt_of_a_race_is_made_under_its_deadline() {
    static RACE: std::sync::LazyLock<RaceRetry> = std::sync::LazyLock::new(|| {
        RaceRetry::builder("seams.race.deadline")
            .retries(2)
            .after(After::Fixed(ms(150)))
            .total(ms(600))
            .build()
            .unwrap()
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let result: Result<(), BoxError> = RACE
        .run(numbered(move |attempt: u32| {
            // Read as the attempt is made, as a client building its request's header would.
            log.lock().unwrap().push((attempt, resiliency::time_left()));
            async move {
                tokio::time::sleep(secs(10)).await;
                Ok(())
            }
        }))
        .await;
    assert!(result.is_err(), "no attempt ends within the deadline");
    assert_eq!(
        *seen.lock().unwrap(),
        [(0, Some(ms(600))), (1, Some(ms(450))), (2, Some(ms(300)))]
    );
}

#[tokio::test(start_paused = true)]
async fn under_a_breaker_layer_with_a_timeout_the_inner_call_sees_its_deadline() {
    use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
    let layer = resiliency::tower::BreakerLayer::new(
        Breaker::builder("seams.layer.deadline").timeout(ms(900)),
    )
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut svc = ServiceBuilder::new()
        .layer(layer)
        .service(service_fn(move |wait: Duration| {
            // The service's `call`: where a client puts the time left in its request.
            log.lock().unwrap().push(resiliency::time_left());
            async move {
                tokio::time::sleep(wait).await;
                Ok::<_, std::io::Error>(())
            }
        }));
    svc.ready().await.unwrap().call(ms(10)).await.unwrap();
    // The timer counts from where `call` read it: a body that takes longer is cut off there.
    let late = svc.ready().await.unwrap().call(secs(5)).await.unwrap_err();
    assert!(
        late.downcast_ref::<Rejected>()
            .is_some_and(Rejected::is_timeout),
        "{late}"
    );
    assert_eq!(*seen.lock().unwrap(), [Some(ms(900)), Some(ms(900))]);
}

// ---- hints x reset, hints x settings ----

#[derive(Debug)]
struct Throttled(Duration);

impl std::fmt::Display for Throttled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "throttled for {:?}", self.0)
    }
}

impl std::error::Error for Throttled {}

impl From<Rejected> for Throttled {
    fn from(_: Rejected) -> Self {
        Throttled(Duration::ZERO)
    }
}

impl RetryHint for Throttled {
    fn retry_after(&self) -> Option<Duration> {
        Some(self.0).filter(|d| !d.is_zero())
    }
}

#[tokio::test(start_paused = true)]
async fn reset_forgets_a_retry_after_hint() {
    let breaker = Breaker::builder("seams.hint.reset")
        .error_threshold(1)
        .error_timeout(secs(5))
        .build()
        .unwrap();
    let _ = breaker
        .call_hinted(async { Err::<(), _>(Throttled(secs(40))) })
        .await;
    assert_eq!(breaker.snapshot().half_opens_in, Some(secs(40)));
    breaker.reset();
    let _ = breaker
        .call_hinted(async { Err::<(), _>(Throttled(Duration::ZERO)) })
        .await;
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(
        breaker.snapshot().half_opens_in,
        Some(secs(5)),
        "open for `error_timeout` from the error after the reset"
    );
}

#[resiliency::breaker(
    name = "seams.hint.cap.attribute",
    error_threshold = 1,
    error_timeout = "5s",
    max_error_timeout = "20s"
)]
async fn capped(hint: Duration) -> Result<(), Throttled> {
    Err(Throttled(hint))
}

#[tokio::test(start_paused = true)]
async fn max_error_timeout_alone_caps_a_hint() {
    // The attribute, the builder and the settings all take it without `backoff`.
    let _ = capped(secs(3_600)).await;
    let site = breaker::get("seams.hint.cap.attribute").unwrap();
    assert_eq!(site.snapshot().half_opens_in, Some(secs(20)));

    let built = Breaker::builder("seams.hint.cap.builder")
        .error_threshold(1)
        .error_timeout(secs(5))
        .max_error_timeout(secs(30))
        .register()
        .unwrap();
    let _ = built
        .call_hinted(async { Err::<(), _>(Throttled(secs(3_600))) })
        .await;
    assert_eq!(built.snapshot().half_opens_in, Some(secs(30)));
    // Without backoff, re-opens still last `error_timeout`.
    tokio::time::sleep(secs(30)).await;
    let _ = built
        .call_hinted(async { Err::<(), _>(Throttled(Duration::ZERO)) })
        .await;
    assert_eq!(built.snapshot().half_opens_in, Some(secs(5)));
    // And by name, alone.
    settings::set(
        Policy::Breaker,
        "seams.hint.cap.builder",
        "max_error_timeout",
        "1m",
    )
    .unwrap();
}

// ---- settings changed while calls are in flight or keys are held ----

#[tokio::test(start_paused = true)]
async fn a_lowered_max_keys_holds_at_once_for_keys_that_hold_nothing() {
    let name = "seams.keys.lowered";
    let family = Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(secs(60))
        .max_keys(100)
        .register_keyed()
        .unwrap();
    for i in 0..100 {
        let _ = family.breaker(&format!("host-{i}"));
    }
    // Two keys hold state worth keeping: open breakers.
    for key in ["host-0", "host-1"] {
        let _ = family
            .breaker(key)
            .call(async { Err::<(), BoxError>("down".into()) })
            .await;
    }
    assert_eq!(family.len(), 100);
    settings::set(Policy::Breaker, name, "max_keys", 10).unwrap();
    assert!(
        family.len() <= 10,
        "{} keys held, max_keys 10",
        family.len()
    );
    for key in ["host-0", "host-1"] {
        assert_eq!(family.breaker(key).state(), State::Open, "kept: {key}");
    }
    for i in 100..200 {
        let _ = family.breaker(&format!("host-{i}"));
        assert!(
            family.len() <= 10,
            "{} keys held, max_keys 10",
            family.len()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_lowered_max_in_flight_holds_at_once_with_calls_in_flight() {
    let guard: &'static TooBusy = TooBusy::builder("seams.in_flight.lowered")
        .max_in_flight(10)
        .register()
        .unwrap();
    let release = Arc::new(tokio::sync::Notify::new());
    let mut running = Vec::new();
    for _ in 0..8 {
        let release = release.clone();
        running.push(tokio::spawn(guard.call(async move {
            release.notified().await;
            Ok::<(), Rejected>(())
        })));
    }
    tokio::task::yield_now().await;
    assert_eq!(guard.in_flight(), 8);
    settings::set(
        Policy::TooBusy,
        "seams.in_flight.lowered",
        "max_in_flight",
        5,
    )
    .unwrap();
    // 8 in flight, limit 5: refused until 4 have ended.
    assert!(guard.call(async { Ok::<(), Rejected>(()) }).await.is_err());
    release.notify_waiters();
    for call in running {
        call.await.unwrap().unwrap();
    }
    assert_eq!(
        guard.in_flight(),
        0,
        "every slot came back across the change"
    );
    assert!(guard.call(async { Ok::<(), Rejected>(()) }).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_lowered_half_open_calls_holds_at_once_with_probes_in_flight() {
    let name = "seams.probes.lowered";
    let breaker = Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(secs(1))
        .half_open_calls(4)
        .success_threshold(4)
        .register()
        .unwrap();
    let _ = breaker
        .call(async { Err::<(), BoxError>("down".into()) })
        .await;
    tokio::time::sleep(secs(1)).await;
    let release = Arc::new(tokio::sync::Notify::new());
    let mut probes = Vec::new();
    for _ in 0..3 {
        let (breaker, release) = (breaker.clone(), release.clone());
        probes.push(tokio::spawn(async move {
            breaker
                .call(async move {
                    release.notified().await;
                    Ok::<(), BoxError>(())
                })
                .await
        }));
    }
    tokio::task::yield_now().await;
    settings::set(Policy::Breaker, name, "half_open_calls", 2).unwrap();
    settings::set(Policy::Breaker, name, "success_threshold", 2).unwrap();
    let refused = breaker.call(async { Ok::<(), BoxError>(()) }).await;
    assert!(refused.is_err(), "3 probes in flight, half_open_calls 2");
    release.notify_waiters();
    for probe in probes {
        probe.await.unwrap().unwrap();
    }
    // Successes of probes admitted before the change count toward the new threshold.
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn calls_admitted_under_one_rule_count_in_no_window_of_the_next() {
    let name = "seams.rule.change";
    let breaker = Breaker::builder(name)
        .error_threshold(5)
        .register()
        .unwrap();
    let release = Arc::new(tokio::sync::Notify::new());
    let mut failing = Vec::new();
    for _ in 0..4 {
        let (breaker, release) = (breaker.clone(), release.clone());
        failing.push(tokio::spawn(async move {
            let _ = breaker
                .call(async move {
                    release.notified().await;
                    Err::<(), BoxError>("down".into())
                })
                .await;
        }));
    }
    tokio::task::yield_now().await;
    // To the rate rule, 2 calls at least: the 4 errors of calls admitted under the count rule
    // would open it at once, with no call of its own counted.
    settings::set(Policy::Breaker, name, "failure_rate", 0.5).unwrap();
    settings::set(Policy::Breaker, name, "min_calls", 2).unwrap();
    release.notify_waiters();
    for call in failing {
        call.await.unwrap();
    }
    let snapshot = breaker.snapshot();
    assert_eq!(snapshot.state, State::Closed);
    assert_eq!(
        (snapshot.recent_errors, snapshot.recent_calls),
        (0, Some(0))
    );
}

#[tokio::test(start_paused = true)]
async fn a_timeout_set_while_calls_are_in_flight_applies_from_the_next_call() {
    let name = "seams.timeout.change";
    let breaker = Breaker::builder(name).register().unwrap();
    let before = {
        let breaker = breaker.clone();
        tokio::spawn(async move {
            breaker
                .call(async {
                    tokio::time::sleep(secs(5)).await;
                    Ok::<_, BoxError>(())
                })
                .await
        })
    };
    tokio::task::yield_now().await;
    settings::set(Policy::Breaker, name, "timeout", "1s").unwrap();
    let after = breaker
        .call(async {
            tokio::time::sleep(secs(5)).await;
            Ok::<_, BoxError>(())
        })
        .await;
    assert!(after.is_err_and(|e| Rejected::find_in(&*e).is_some_and(Rejected::is_timeout)));
    assert!(
        before.await.unwrap().is_ok(),
        "a call admitted before the change runs as admitted"
    );
}

// ---- start-up: what can be judged alone is judged when the settings are loaded ----

#[test]
fn a_value_out_of_range_for_a_site_not_set_up_is_refused_at_load_with_its_line() {
    // The file layer is the process's: one test at a time replaces it.
    let _serial = support::serial();
    let text =
        "[breaker.\"seams.load.never_called\"]\nerror_timeout = \"30s\"\nerror_threshold = 0\n";
    let overrides = Overrides::from_toml("seams.toml", text).unwrap();
    let refused = settings::load("seams.toml", &overrides).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "seams.toml:3: breaker `seams.load.never_called`, `error_threshold`: `error_threshold` \
         must be at least 1, e.g. `error_threshold = 3`"
    );
    for (setting, value) in [
        ("failure_rate", "1.5"),
        ("error_timeout", "\"0s\""),
        ("backoff", "0.5"),
    ] {
        let text = format!("[breaker.\"*\"]\n{setting} = {value}\n");
        let overrides = Overrides::from_toml("seams.toml", &text).unwrap();
        let refused = settings::load("seams.toml", &overrides).unwrap_err();
        assert!(
            refused.to_string().starts_with("seams.toml:2:"),
            "{setting}: {refused}"
        );
    }
    let refused = settings::set(Policy::RaceRetry, "seams.never", "budget", 7.0).unwrap_err();
    assert!(refused.to_string().contains("`budget`"), "{refused}");
}

#[test]
fn a_misspelt_site_in_a_file_is_warned_about_as_in_the_environment() {
    // The file layer is the process's: one test at a time replaces it.
    let _serial = support::serial();
    let events = Events::default();
    let _guard = tracing::subscriber::set_default(events.clone());
    Breaker::builder("seams.upstream").register().unwrap();
    let text = "[breaker.\"seams.upstrem\"]\nerror_threshold = 4\n";
    settings::load(
        "seams-misspelt.toml",
        &Overrides::from_toml("seams-misspelt.toml", text).unwrap(),
    )
    .unwrap();
    let warned = events.find("a settings file names no live site but one a letter or two off");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0].1, tracing::Level::WARN);
    assert!(
        warned[0].0.contains("did_you_mean=seams.upstream"),
        "{}",
        warned[0].0
    );
    // Once: loading the same file again warns no more.
    settings::load(
        "seams-misspelt.toml",
        &Overrides::from_toml("seams-misspelt.toml", text).unwrap(),
    )
    .unwrap();
    assert_eq!(events.find("a letter or two off").len(), 1);
    settings::load("seams-misspelt.toml", &Overrides::new()).unwrap();
}

#[test]
fn a_settings_file_loads_in_one_call() {
    // The file layer is the process's: one test at a time replaces it.
    let _serial = support::serial();
    let dir = std::env::temp_dir().join(format!("resiliency-seams-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("one-call.toml");
    std::fs::write(&path, "[race_retry.\"seams.one_call\"]\ntotal = \"0ms\"\n").unwrap();
    let refused = settings::load_toml(&path).unwrap_err().to_string();
    assert!(
        refused.contains("one-call.toml:2: race_retry `seams.one_call`, `total`"),
        "{refused}"
    );
    let missing = settings::load_toml(dir.join("missing.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("missing.toml") && missing.contains("cannot be read"),
        "{missing}"
    );
    std::fs::write(
        &path,
        "[race_retry.\"seams.one_call\"]\ntotal = \"300ms\"\n",
    )
    .unwrap();
    settings::load_toml(&path).unwrap();
    assert!(settings::unmatched()
        .iter()
        .any(|(_, site, setting, _)| site == "seams.one_call" && *setting == "total"));
    settings::load("cleared", &Overrides::new()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(start_paused = true)]
async fn a_lowered_total_reaches_a_race_in_flight_at_its_next_step() {
    let name = "seams.race.total.lowered";
    let race: &'static RaceRetry = RaceRetry::builder(name)
        .retries(2)
        .after(After::Fixed(ms(100)))
        .total(secs(1))
        .register()
        .unwrap();
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(race.run(|| async {
        tokio::time::sleep(secs(10)).await;
        Ok::<(), BoxError>(())
    }));
    tokio::time::sleep(ms(50)).await;
    settings::set(Policy::RaceRetry, name, "total", "150ms").unwrap();
    let error = call.await.unwrap().unwrap_err();
    assert!(
        Rejected::find_in(&*error).is_some_and(Rejected::is_deadline),
        "{error}"
    );
    // Woken at 100 ms to start attempt 2, the call reads the new `total` and ends at 150 ms.
    assert_eq!(started.elapsed(), ms(150));
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_duration_set_while_calls_are_in_flight_applies_from_their_first_wait() {
    let name = "seams.slow.set";
    let breaker = Breaker::builder(name)
        .failure_rate(0.5)
        .min_calls(100)
        .register()
        .unwrap();
    let release = Arc::new(tokio::sync::Notify::new());
    // Admitted with no time setting in force: runs without one.
    let admitted_before = {
        let (breaker, release) = (breaker.clone(), release.clone());
        tokio::spawn(async move {
            breaker
                .call(async move {
                    release.notified().await;
                    Ok::<(), BoxError>(())
                })
                .await
        })
    };
    tokio::task::yield_now().await;
    settings::set(Policy::Breaker, name, "slow_call_duration", "100ms").unwrap();
    let admitted_after = breaker.call(async {
        tokio::time::sleep(ms(500)).await;
        Ok::<(), BoxError>(())
    });
    admitted_after.await.unwrap();
    release.notify_waiters();
    admitted_before.await.unwrap().unwrap();
    assert_eq!(
        breaker.snapshot().recent_slow,
        1,
        "only the call admitted after the change"
    );
}

#[tokio::test(start_paused = true)]
async fn a_lowered_max_keys_holds_at_once_even_just_after_a_full_family_found_nothing_to_evict() {
    let name = "seams.keys.lowered.gated";
    let family = Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(secs(60))
        .max_keys(10)
        .register_keyed()
        .unwrap();
    for i in 0..10 {
        let _ = family
            .breaker(&format!("host-{i}"))
            .call(async { Err::<(), BoxError>("down".into()) })
            .await;
    }
    // Full of open breakers: a new key finds nothing to evict, and the family waits a while
    // before it looks again.
    let _ = family.breaker("host-new");
    assert_eq!(family.len(), 10);
    for i in 0..10 {
        family.breaker(&format!("host-{i}")).reset();
    }
    settings::set(Policy::Breaker, name, "max_keys", 5).unwrap();
    assert!(family.len() <= 5, "{} keys held, max_keys 5", family.len());
}
