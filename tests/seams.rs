//! The seam matrix's own tests (see `tests/README.md`): one test per pair of features that meet in
//! one call and had no test elsewhere, named `first__second` and grouped by the first feature.
//!
//! Every test calls [`init`] first: it installs, once for the binary, a `metrics` debugging
//! recorder and a global `tracing` subscriber that hands each event to the current thread's hook
//! ([`hook::on_event`]), so that no callsite of this binary is ever cached as disabled and no
//! test's subscriber sees another's events. Sites have names of their own (the registry is
//! process-wide); time is tokio's paused clock.
#![allow(non_snake_case)] // `feature_a__feature_b`

mod support;

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::task::Poll;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use resiliency::breaker::{self, State};
use resiliency::settings::{self, Policy};
use resiliency::tower::{BreakerLayer, RaceRetryLayer};
use resiliency::{time_left, Breaker, Rejected, RetryHint};
use support::{ms, poll_once, rejected, secs, BoxError};
use tokio::time::{advance, sleep, Instant};
use tower::{service_fn, Layer, Service, ServiceExt};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Installs the recorder and the subscriber (once per binary); every test calls it first.
fn init() {
    LazyLock::force(&SNAPSHOTTER);
    hook::install();
}

/// The error of most sites here: an upstream down, one that asks for a wait, or a refusal.
#[derive(Debug)]
enum ApiError {
    Down,
    Throttled(Duration),
    Refused(Rejected),
}

impl From<Rejected> for ApiError {
    fn from(rejected: Rejected) -> Self {
        ApiError::Refused(rejected)
    }
}

impl RetryHint for ApiError {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Down => None,
            ApiError::Throttled(wait) => Some(*wait),
            ApiError::Refused(rejected) => rejected.retry_after(),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    fn refusal(&self) -> &Rejected {
        match self {
            ApiError::Refused(rejected) => rejected,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

/// Spends the task's cooperative budget (without yielding), so that the next refusal yields.
async fn spend_budget() {
    while tokio::task::coop::has_budget_remaining() {
        tokio::task::coop::consume_budget().await;
    }
}

/// Awaits `fut`, counting its polls.
async fn polls_of<F: Future>(fut: F) -> (F::Output, u32) {
    let mut fut = pin!(fut);
    let mut polls = 0;
    let out = std::future::poll_fn(|cx| {
        polls += 1;
        fut.as_mut().poll(cx)
    })
    .await;
    (out, polls)
}

/// Runs `test` on a thread of its own and fails if it takes more than 5 s (a deadlock).
fn within_5s(test: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(secs(5)) {
        Ok(()) => thread.join().unwrap(),
        // The thread panicked: its panic is the failure.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(thread.join().unwrap_err())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("not done within 5 s: a deadlock, or a call never cut off")
        }
    }
}

mod hook {
    //! A global subscriber that hands every event to the current thread's hook.
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::Rc;
    use std::sync::Once;

    type Hook = Rc<dyn Fn(&Event)>;

    thread_local! {
        static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// An event as a hook sees it: its message and its other fields, as text.
    pub struct Event {
        pub message: String,
        pub fields: HashMap<String, String>,
    }

    impl Event {
        pub fn field(&self, name: &str) -> Option<&str> {
            self.fields.get(name).map(String::as_str)
        }

        /// A breaker's state-change event (`opened`, `half-open`, `closed`) for `name`.
        pub fn is_breaker(&self, name: &str, change: &str) -> bool {
            self.message == format!("circuit breaker {change}") && self.field("name") == Some(name)
        }
    }

    struct Global;

    impl tracing::Subscriber for Global {
        crate::support::no_spans!();

        fn event(&self, event: &tracing::Event<'_>) {
            let Some(hook) = HOOK.try_with(|h| h.borrow().clone()).ok().flatten() else {
                return;
            };
            struct Fields(HashMap<String, String>);
            impl tracing::field::Visit for Fields {
                fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                    self.0.insert(field.name().to_string(), value.to_string());
                }
                fn record_debug(
                    &mut self,
                    field: &tracing::field::Field,
                    value: &dyn std::fmt::Debug,
                ) {
                    self.0
                        .insert(field.name().to_string(), format!("{value:?}"));
                }
            }
            let mut fields = Fields(HashMap::new());
            event.record(&mut fields);
            let message = fields.0.remove("message").unwrap_or_default();
            hook(&Event {
                message,
                fields: fields.0,
            });
        }
    }

    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| tracing::subscriber::set_global_default(Global).unwrap());
    }

    /// Hands this thread's events to `hook` until the guard is dropped.
    pub fn on_event(hook: impl Fn(&Event) + 'static) -> Guard {
        HOOK.with(|h| *h.borrow_mut() = Some(Rc::new(hook)));
        Guard
    }

    pub struct Guard;

    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = HOOK.try_with(|h| h.borrow_mut().take());
        }
    }
}

// The metrics recorder, read as tests/metrics.rs reads it: a flush, then a snapshot, which reads
// and resets every value: a counter is its total as the flush gave it, the in-flight gauge its
// level as the flush set it, a gauge moved at each change the sum of the snapshots' moves.
static SNAPSHOTTER: LazyLock<Snapshotter> = LazyLock::new(|| {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("no other recorder here");
    snapshotter
});

type Series = (String, Vec<(String, String)>);
static SEEN: LazyLock<Mutex<HashMap<Series, f64>>> = LazyLock::new(Default::default);

/// The value of a counter (its total) or a gauge (its level) so far.
fn metric(name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    // Under the lock: no other test's snapshot resets what this flush exports.
    resiliency::metrics::flush();
    for (key, _, _, value) in SNAPSHOTTER.snapshot().into_vec() {
        let key = key.key();
        let mut labels: Vec<_> = key
            .labels()
            .map(|l| (l.key().to_string(), l.value().to_string()))
            .collect();
        labels.sort();
        let id = (key.name().to_string(), labels);
        match value {
            DebugValue::Counter(n) => {
                seen.insert(id, n as f64);
            }
            DebugValue::Gauge(v) if id.0 == resiliency::metrics::TOO_BUSY_IN_FLIGHT => {
                seen.insert(id, v.0);
            }
            DebugValue::Gauge(v) => *seen.entry(id).or_default() += v.0,
            DebugValue::Histogram(_) => {}
        }
    }
    let mut labels: Vec<_> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.sort();
    seen.get(&(name.to_string(), labels))
        .copied()
        .unwrap_or(0.0)
}

fn transitions(name: &str, from: &str, to: &str) -> f64 {
    metric(
        resiliency::metrics::BREAKER_TRANSITIONS,
        &[("name", name), ("from", from), ("to", to)],
    )
}

fn state_gauge(name: &str, state: &str) -> f64 {
    metric(
        resiliency::metrics::BREAKER_STATE,
        &[("name", name), ("state", state)],
    )
}

fn breaker_calls(name: &str, outcome: &str) -> f64 {
    metric(
        resiliency::metrics::BREAKER_CALLS,
        &[("name", name), ("outcome", outcome)],
    )
}

fn family(name: &str) -> Arc<resiliency::KeyedBreaker> {
    breaker::get_keyed(name).unwrap_or_else(|| panic!("no keyed family {name}"))
}

fn is_circuit_open(error: &BoxError) -> bool {
    Rejected::find_in(&**error).is_some_and(Rejected::is_circuit_open)
}

// ---------------------------------------------------------------------------------------------
// Settings at run time

#[resiliency::breaker(
    name = "seams.settings.coop",
    error_threshold = 5,
    error_timeout = "1h"
)]
async fn settings_coop(fail: bool, ran: &AtomicU32) -> Result<(), BoxError> {
    ran.fetch_add(1, Ordering::SeqCst);
    if fail {
        Err("down".into())
    } else {
        Ok(())
    }
}

/// A threshold lowered at run time opens the breaker at the first error; its refusals yield
/// when the budget is spent, then refuse without running the body.
#[tokio::test(start_paused = true)]
async fn settings__coop_budget() {
    init();
    let ran = AtomicU32::new(0);
    settings_coop(false, &ran).await.unwrap();
    settings::set(Policy::Breaker, "seams.settings.coop", "error_threshold", 1).unwrap();
    assert!(settings_coop(true, &ran).await.is_err());
    assert_eq!(
        breaker::get("seams.settings.coop").unwrap().state(),
        State::Open,
        "one error opens it at the threshold set at run time"
    );
    spend_budget().await;
    let (refused, polls) = polls_of(settings_coop(false, &ran)).await;
    assert!(is_circuit_open(&refused.unwrap_err()));
    assert_eq!(polls, 2, "the refusal yields once, then refuses");
    assert_eq!(ran.load(Ordering::SeqCst), 2, "the refused body never ran");
}

#[resiliency::breaker(name = "seams.settings.deadline", timeout = "2s")]
async fn settings_deadline() -> Result<Option<Duration>, Rejected> {
    Ok(time_left())
}

#[resiliency::race_retry(
    name = "seams.settings.deadline_race",
    retries = 1,
    after = "100ms",
    total = "1s"
)]
async fn settings_deadline_race() -> Result<Option<Duration>, Rejected> {
    Ok(time_left())
}

/// `timeout` and `total` set at run time are the deadline the body reads.
#[tokio::test(start_paused = true)]
async fn settings__deadlines() {
    init();
    let (site, race) = ("seams.settings.deadline", "seams.settings.deadline_race");
    assert_eq!(settings_deadline().await.unwrap(), Some(secs(2)));
    settings::set(Policy::Breaker, site, "timeout", "300ms").unwrap();
    assert_eq!(settings_deadline().await.unwrap(), Some(ms(300)));
    settings::set(Policy::Breaker, site, "timeout", "off").unwrap();
    assert_eq!(
        settings_deadline().await.unwrap(),
        None,
        "no timeout, no deadline"
    );
    settings::unset(Policy::Breaker, site, "timeout").unwrap();
    assert_eq!(settings_deadline().await.unwrap(), Some(secs(2)));

    assert_eq!(settings_deadline_race().await.unwrap(), Some(secs(1)));
    settings::set(Policy::RaceRetry, race, "total", "400ms").unwrap();
    assert_eq!(settings_deadline_race().await.unwrap(), Some(ms(400)));
}

async fn settings_fallback_cached(n: u32, why: Rejected) -> Result<u32, ApiError> {
    assert!(why.is_circuit_open(), "{why}");
    Ok(n + 1000)
}

#[resiliency::breaker(
    name = "seams.settings.fallback",
    error_threshold = 3,
    error_timeout = "1h",
    fallback = settings_fallback_cached
)]
async fn settings_fallback(n: u32) -> Result<u32, ApiError> {
    if n == 0 {
        Err(ApiError::Down)
    } else {
        Ok(n)
    }
}

/// A threshold lowered at run time opens the breaker sooner, and the fallback answers then.
#[tokio::test(start_paused = true)]
async fn settings__fallbacks() {
    init();
    assert_eq!(settings_fallback(1).await.unwrap(), 1);
    settings::set(
        Policy::Breaker,
        "seams.settings.fallback",
        "error_threshold",
        1,
    )
    .unwrap();
    assert!(matches!(settings_fallback(0).await, Err(ApiError::Down)));
    assert_eq!(
        settings_fallback(2).await.unwrap(),
        1002,
        "open after one error: the fallback answers"
    );
}

// ---------------------------------------------------------------------------------------------
// Registry

#[resiliency::breaker(
    name = "seams.registry.slow",
    error_threshold = 2,
    error_timeout = "1h",
    slow_call_duration = "100ms"
)]
async fn registry_slow(wait: u64) -> Result<u64, BoxError> {
    sleep(ms(wait)).await;
    Ok(wait)
}

/// Slow calls through a registered breaker and an attribute of its name count in one window.
#[tokio::test(start_paused = true)]
async fn registry__slow_calls() {
    init();
    let name = "seams.registry.slow";
    let registered = Breaker::builder(name)
        .error_threshold(2)
        .error_timeout(secs(3600))
        .slow_call_duration(ms(100))
        .register()
        .unwrap();
    assert_eq!(
        registry_slow(150).await.unwrap(),
        150,
        "a slow call's result"
    );
    assert_eq!(registered.state(), State::Closed, "one slow call of two");
    registered
        .call(async {
            sleep(ms(150)).await;
            Ok::<_, BoxError>(())
        })
        .await
        .unwrap();
    assert_eq!(
        registered.state(),
        State::Open,
        "the second, from code, opens it"
    );
    assert!(std::ptr::eq(&*breaker::get(name).unwrap(), &*registered));
    assert!(is_circuit_open(&registry_slow(1).await.unwrap_err()));
}

// ---------------------------------------------------------------------------------------------
// Tracing subscribers

#[resiliency::breaker(
    name = "seams.tracing.coop",
    error_threshold = 1,
    error_timeout = "10s"
)]
async fn tracing_coop(ok: bool) -> Result<u32, BoxError> {
    if ok {
        Ok(1)
    } else {
        Err("down".into())
    }
}

/// A refusal that yielded for the budget asks again at its next poll: past the open time it is
/// the probe, and a subscriber that panics on that half-open loses only its event.
#[tokio::test(start_paused = true)]
async fn tracing__coop_budget() {
    init();
    let name = "seams.tracing.coop";
    let panicked = Arc::new(AtomicU32::new(0));
    let seen = panicked.clone();
    let _hook = hook::on_event(move |event| {
        if event.is_breaker(name, "half-open") {
            seen.fetch_add(1, Ordering::SeqCst);
            panic!("expected: a subscriber that panics on half-open");
        }
    });
    assert!(tracing_coop(false).await.is_err());
    spend_budget().await;
    let mut call = pin!(tracing_coop(true));
    assert!(
        poll_once(call.as_mut()).await.is_pending(),
        "refused: it yields first"
    );
    advance(secs(10)).await;
    let Poll::Ready(answer) = poll_once(call.as_mut()).await else {
        panic!("the probe answers at once")
    };
    assert_eq!(answer.unwrap(), 1, "the probe ran");
    assert_eq!(panicked.load(Ordering::SeqCst), 1);
    assert_eq!(breaker::get(name).unwrap().state(), State::Closed);
}

#[resiliency::breaker(name = "seams.tracing.deadline_inner", timeout = "10ms")]
async fn tracing_deadline_inner() -> Result<Option<Duration>, Rejected> {
    Ok(time_left())
}

#[resiliency::breaker(name = "seams.tracing.deadline_outer", timeout = "2s")]
async fn tracing_deadline_outer() -> Result<(Option<Duration>, Option<Duration>), Rejected> {
    let before = time_left();
    tracing::info!("seams: the outer body's event");
    Ok((before, time_left()))
}

/// A subscriber runs inside the body's deadline, and a guarded call it makes has its own, put
/// back when it returns.
#[test]
fn tracing__deadlines() {
    init();
    within_5s(|| {
        support::paused_runtime().block_on(async {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let record = seen.clone();
            let _hook = hook::on_event(move |event| {
                if event.message == "seams: the outer body's event" {
                    let inner = futures::executor::block_on(tracing_deadline_inner());
                    record.lock().unwrap().push((time_left(), inner.unwrap()));
                }
            });
            let (before, after) = tracing_deadline_outer().await.unwrap();
            assert_eq!(before, Some(secs(2)));
            assert_eq!(
                after,
                Some(secs(2)),
                "the inner call put the outer deadline back"
            );
            assert_eq!(
                *seen.lock().unwrap(),
                [(Some(secs(2)), Some(ms(10)))],
                "the subscriber sees the body's deadline; its own call the tighter one"
            );
            assert_eq!(time_left(), None);
        })
    });
}

#[resiliency::breaker(name = "seams.tracing.hint", error_threshold = 1, error_timeout = "5s")]
async fn tracing_hint(throttled: bool) -> Result<u32, ApiError> {
    if throttled {
        Err(ApiError::Throttled(secs(30)))
    } else {
        Ok(1)
    }
}

/// A subscriber that panics on the opening leaves the hint's open time in force.
#[tokio::test(start_paused = true)]
async fn tracing__hints() {
    init();
    let name = "seams.tracing.hint";
    let panicked = Arc::new(AtomicU32::new(0));
    let seen = panicked.clone();
    let _hook = hook::on_event(move |event| {
        if event.is_breaker(name, "opened") {
            seen.fetch_add(1, Ordering::SeqCst);
            panic!("expected: a subscriber that panics on opened");
        }
    });
    assert!(matches!(
        tracing_hint(true).await,
        Err(ApiError::Throttled(_))
    ));
    assert_eq!(panicked.load(Ordering::SeqCst), 1);
    let refused = tracing_hint(false).await.unwrap_err();
    assert_eq!(refused.refusal().retry_after(), Some(secs(30)));
    advance(secs(29)).await;
    assert!(tracing_hint(false).await.is_err(), "still open at 29 s");
    advance(secs(1)).await;
    assert_eq!(tracing_hint(false).await.unwrap(), 1);
}

#[resiliency::breaker(
    name = "seams.tracing.slow",
    failure_rate = 0.5,
    min_calls = 2,
    error_timeout = "1h",
    slow_call_duration = "50ms",
    slow_call_rate = 1.0
)]
async fn tracing_slow(wait: u64) -> Result<u64, BoxError> {
    sleep(ms(wait)).await;
    Ok(wait)
}

/// An opening at `slow_call_rate` says so (`cause`), and a subscriber may look the breaker up as
/// it is told.
#[tokio::test(start_paused = true)]
async fn tracing__slow_calls() {
    init();
    let name = "seams.tracing.slow";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let _hook = hook::on_event(move |event| {
        if event.is_breaker(name, "opened") {
            let state = breaker::get(name).map(|b| b.state());
            let cause = event.field("cause").map(str::to_owned);
            record.lock().unwrap().push((cause, state));
        }
    });
    assert_eq!(tracing_slow(60).await.unwrap(), 60);
    assert_eq!(
        tracing_slow(70).await.unwrap(),
        70,
        "slow calls keep their results"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [(Some("slow_calls".to_string()), Some(State::Open))]
    );
    assert!(is_circuit_open(&tracing_slow(1).await.unwrap_err()));
}

/// A subscriber that panics on a `BreakerLayer` breaker's opening: the response still comes
/// back, and the breaker refuses the next request without calling the service.
#[tokio::test(start_paused = true)]
async fn tracing__tower_layers() {
    init();
    let name = "seams.tracing.tower";
    let panicked = Arc::new(AtomicU32::new(0));
    let seen = panicked.clone();
    let _hook = hook::on_event(move |event| {
        if event.is_breaker(name, "opened") {
            seen.fetch_add(1, Ordering::SeqCst);
            panic!("expected: a subscriber that panics on opened");
        }
    });
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let layer = BreakerLayer::new(Breaker::builder(name).error_threshold(2)).unwrap();
    let mut svc = layer.layer(service_fn(move |_: ()| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Err::<u32, _>(std::io::Error::other("upstream down")) }
    }));
    for _ in 0..2 {
        let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
        assert!(error.downcast_ref::<std::io::Error>().is_some(), "{error}");
    }
    assert_eq!(panicked.load(Ordering::SeqCst), 1);
    assert_eq!(svc.breaker().state(), State::Open);
    let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
    assert!(is_circuit_open(&error));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[resiliency::breaker(
    name = "seams.tracing.blocking",
    error_threshold = 1,
    error_timeout = "1h"
)]
fn tracing_blocking(fail: bool) -> Result<u32, BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(1)
    }
}

#[resiliency::breaker(name = "seams.tracing.blocking_other")]
fn tracing_blocking_other() -> Result<u32, BoxError> {
    Ok(7)
}

/// A subscriber that calls another guarded blocking fn (set up there, at its first call) as a
/// blocking breaker opens: both calls end as they should, nothing deadlocks.
#[test]
fn tracing__blocking() {
    init();
    within_5s(|| {
        let name = "seams.tracing.blocking";
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let _hook = hook::on_event(move |event| {
            if event.is_breaker(name, "opened") {
                record
                    .lock()
                    .unwrap()
                    .push(tracing_blocking_other().map_err(|e| e.to_string()));
            }
        });
        assert_eq!(tracing_blocking(true).unwrap_err().to_string(), "down");
        assert_eq!(*seen.lock().unwrap(), [Ok(7)]);
        assert_eq!(breaker::get(name).unwrap().state(), State::Open);
        assert!(is_circuit_open(&tracing_blocking(false).unwrap_err()));
    });
}

/// A subscriber that panics on every change of a breaker: the metrics still count each one.
#[tokio::test(start_paused = true)]
async fn tracing__metrics() {
    init();
    let name = "seams.tracing.metrics";
    let _hook = hook::on_event(move |event| {
        if event.field("name") == Some(name) {
            panic!("expected: a subscriber that panics on every change");
        }
    });
    let b = Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(secs(5))
        .build()
        .unwrap();
    assert!(b
        .call(async { Err::<(), BoxError>("down".into()) })
        .await
        .is_err());
    assert_eq!(b.state(), State::Open);
    assert_eq!(transitions(name, "closed", "open"), 1.0);
    assert_eq!(
        (state_gauge(name, "closed"), state_gauge(name, "open")),
        (0.0, 1.0)
    );
    assert_eq!(breaker_calls(name, "error"), 1.0);
    sleep(secs(5)).await;
    b.call(async { Ok::<(), BoxError>(()) }).await.unwrap();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(transitions(name, "open", "half_open"), 1.0);
    assert_eq!(transitions(name, "half_open", "closed"), 1.0);
    assert_eq!(
        (state_gauge(name, "closed"), state_gauge(name, "open")),
        (1.0, 0.0)
    );
    assert_eq!(breaker_calls(name, "success"), 1.0);
}

#[resiliency::breaker(name = "seams.tracing.keyed", key = host, error_threshold = 1, error_timeout = "1h")]
async fn tracing_keyed(host: &str, fail: bool) -> Result<String, BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(host.to_string())
    }
}

/// A subscriber that panics on one key's opening (the event names the key): that key opens,
/// the caller gets its error, the other keys go on.
#[tokio::test(start_paused = true)]
async fn tracing__keyed() {
    init();
    let name = "seams.tracing.keyed";
    let keys = Arc::new(Mutex::new(Vec::new()));
    let seen = keys.clone();
    let _hook = hook::on_event(move |event| {
        if event.is_breaker(name, "opened") {
            seen.lock()
                .unwrap()
                .push(event.field("key").map(str::to_owned));
            panic!("expected: a subscriber that panics on opened");
        }
    });
    assert_eq!(
        tracing_keyed("a", true).await.unwrap_err().to_string(),
        "down"
    );
    assert_eq!(*keys.lock().unwrap(), [Some("a".to_string())]);
    let refused = tracing_keyed("a", false).await.unwrap_err();
    assert_eq!(rejected(&refused).key(), Some("a"));
    assert_eq!(tracing_keyed("b", false).await.unwrap(), "b");
    let hosts = family(name);
    assert_eq!(hosts.get("a").unwrap().state(), State::Open);
    assert_eq!(hosts.get("b").unwrap().state(), State::Closed);
}

fn tracing_fallback_cached(_fail: bool, why: Rejected) -> Result<u32, ApiError> {
    assert!(why.is_circuit_open(), "{why}");
    Ok(99)
}

#[resiliency::breaker(
    name = "seams.tracing.fallback",
    error_threshold = 1,
    error_timeout = "1h",
    fallback = tracing_fallback_cached
)]
async fn tracing_fallback(fail: bool) -> Result<u32, ApiError> {
    if fail {
        Err(ApiError::Down)
    } else {
        Ok(1)
    }
}

/// A subscriber that panics on the fallback's event: whatever the caller then sees, the breaker
/// is as the refused call left it, and the next call falls back.
#[tokio::test(start_paused = true)]
async fn tracing__fallbacks() {
    use futures::FutureExt;
    init();
    let name = "seams.tracing.fallback";
    assert!(matches!(tracing_fallback(true).await, Err(ApiError::Down)));
    let site = breaker::get(name).unwrap();
    let before = site.snapshot();
    let panicked = Arc::new(AtomicU32::new(0));
    let seen = panicked.clone();
    {
        let _hook = hook::on_event(move |event| {
            if event.message == "the call fell back" && event.field("name") == Some(name) {
                seen.fetch_add(1, Ordering::SeqCst);
                panic!("expected: a subscriber that panics on a fallback");
            }
        });
        let answer = std::panic::AssertUnwindSafe(tracing_fallback(false))
            .catch_unwind()
            .await;
        if let Ok(answer) = answer {
            assert_eq!(answer.unwrap(), 99, "if it answers, it is the fallback");
        }
    }
    assert_eq!(
        panicked.load(Ordering::SeqCst),
        1,
        "the fallback was reported"
    );
    assert_eq!(site.state(), State::Open);
    let after = site.snapshot();
    assert_eq!(
        (after.recent_errors, after.recent_slow),
        (before.recent_errors, before.recent_slow)
    );
    assert_eq!(tracing_fallback(false).await.unwrap(), 99);
}

// ---------------------------------------------------------------------------------------------
// Cooperative budget

#[resiliency::breaker(
    name = "seams.coop.deadline_inner",
    error_threshold = 1,
    error_timeout = "1h"
)]
async fn coop_deadline_inner() -> Result<(), BoxError> {
    Err("down".into())
}

#[resiliency::breaker(
    name = "seams.coop.deadline_outer",
    timeout = "1s",
    error_threshold = 100
)]
async fn coop_deadline_outer(seen: &Mutex<Vec<Option<Duration>>>) -> Result<(), BoxError> {
    loop {
        // Nothing but refusals: only they make the body yield.
        let refused = coop_deadline_inner().await.unwrap_err();
        assert!(is_circuit_open(&refused));
        seen.lock().unwrap().push(time_left());
    }
}

/// A loop of refusals under a `timeout`: each yield puts the deadline back, and the timeout
/// still ends the call once the clock passes it.
#[test]
fn coop_budget__deadlines() {
    init();
    within_5s(|| {
        support::paused_runtime().block_on(async {
            assert!(coop_deadline_inner().await.is_err()); // opens it
            let seen = Mutex::new(Vec::new());
            let clock = tokio::spawn(advance(ms(1500))); // runs when the loop first yields
            let start = Instant::now();
            let error = coop_deadline_outer(&seen).await.unwrap_err();
            assert!(rejected(&error).is_timeout(), "{error}");
            assert_eq!(start.elapsed(), ms(1500));
            clock.await.unwrap();
            let seen = seen.into_inner().unwrap();
            assert!(
                seen.len() > 128,
                "the loop yielded: {} refusals",
                seen.len()
            );
            assert_eq!(seen[0], Some(secs(1)));
            // After the first yield the clock has moved past the deadline: the body still reads
            // it (as zero left) until the timeout ends the call at the end of that poll.
            assert_eq!(
                seen[200],
                Some(Duration::ZERO),
                "after a yield, the deadline is back"
            );
            assert!(seen.iter().all(|left| left.is_some_and(|d| d <= secs(1))));
        })
    });
}

#[resiliency::breaker(name = "seams.coop.deadline_budgeted", timeout = "1s")]
async fn coop_deadline_budgeted() -> Result<(), BoxError> {
    loop {
        // Always ready, as a busy channel is: it takes from the budget, and yields when spent.
        tokio::task::coop::consume_budget().await;
    }
}

/// The same with tokio's own budgeted resources in the body, on the real clock: the timeout
/// ends the call, as `tokio::time::timeout` does (it polls its timer unconstrained when the
/// body spent the budget). `#[race_retry]`'s `total` does end such a call.
#[test]
fn coop_budget__deadlines_of_a_body_that_spends_the_budget() {
    init();
    within_5s(|| {
        support::current_thread().block_on(async {
            let error = coop_deadline_budgeted().await.unwrap_err();
            assert!(rejected(&error).is_timeout(), "{error}");
            let at_once = tokio::time::timeout(ms(10), async {
                loop {
                    tokio::task::coop::consume_budget().await;
                }
            });
            assert!(at_once.await.is_err(), "tokio's own timeout fires");
        })
    });
}

#[resiliency::breaker(name = "seams.coop.hint", error_threshold = 1, error_timeout = "5s")]
async fn coop_hint(throttled: bool) -> Result<u32, ApiError> {
    if throttled {
        Err(ApiError::Throttled(secs(30)))
    } else {
        Ok(1)
    }
}

/// A refusal that yielded asks again at its next poll: its `retry_after` is the hinted open
/// time left then, and once that has passed it is the probe.
#[tokio::test(start_paused = true)]
async fn coop_budget__hints() {
    init();
    assert!(coop_hint(true).await.is_err()); // open for the 30 s asked
    spend_budget().await;
    let mut call = pin!(coop_hint(false));
    assert!(poll_once(call.as_mut()).await.is_pending());
    advance(secs(10)).await;
    let Poll::Ready(refused) = poll_once(call.as_mut()).await else {
        panic!("refused once the task may go on")
    };
    assert_eq!(refused.unwrap_err().refusal().retry_after(), Some(secs(20)));

    spend_budget().await;
    let mut call = pin!(coop_hint(false));
    assert!(poll_once(call.as_mut()).await.is_pending());
    advance(secs(20)).await;
    let Poll::Ready(answer) = poll_once(call.as_mut()).await else {
        panic!("the probe answers at once")
    };
    assert_eq!(answer.unwrap(), 1);
}

static COOP_FALLBACKS: AtomicU32 = AtomicU32::new(0);

fn coop_fallback_cached(n: u32, why: Rejected) -> Result<u32, ApiError> {
    assert!(why.is_circuit_open(), "{why}");
    COOP_FALLBACKS.fetch_add(1, Ordering::SeqCst);
    Ok(n + 100)
}

#[resiliency::breaker(
    name = "seams.coop.fallback",
    error_threshold = 1,
    error_timeout = "1h",
    fallback = coop_fallback_cached
)]
async fn coop_fallback(n: u32) -> Result<u32, ApiError> {
    if n == 0 {
        Err(ApiError::Down)
    } else {
        Ok(n)
    }
}

/// A refusal with a fallback yields first when the budget is spent, and the fallback is called
/// once, after the yield.
#[tokio::test(start_paused = true)]
async fn coop_budget__fallbacks() {
    init();
    assert!(matches!(coop_fallback(0).await, Err(ApiError::Down)));
    spend_budget().await;
    let mut call = pin!(coop_fallback(5));
    assert!(poll_once(call.as_mut()).await.is_pending());
    assert_eq!(
        COOP_FALLBACKS.load(Ordering::SeqCst),
        0,
        "not before the yield"
    );
    tokio::task::yield_now().await; // the test's task yields too: a fresh budget
    let Poll::Ready(answer) = poll_once(call.as_mut()).await else {
        panic!("the fallback answers once the task may go on")
    };
    assert_eq!(answer.unwrap(), 105);
    assert_eq!(COOP_FALLBACKS.load(Ordering::SeqCst), 1);
}

#[resiliency::breaker(name = "seams.coop.keyed", key = host, error_threshold = 1, error_timeout = "1h")]
async fn coop_keyed(host: &str, fail: bool) -> Result<String, BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(host.to_string())
    }
}

/// With the budget spent, an open key's refusal yields and names its key; a closed key's call
/// runs.
#[tokio::test(start_paused = true)]
async fn coop_budget__keyed() {
    init();
    assert!(coop_keyed("a", true).await.is_err());
    spend_budget().await;
    assert_eq!(coop_keyed("b", false).await.unwrap(), "b");
    spend_budget().await;
    let (refused, polls) = polls_of(coop_keyed("a", false)).await;
    let refused = refused.unwrap_err();
    assert_eq!(polls, 2, "it yields once, then refuses");
    assert!(rejected(&refused).is_circuit_open());
    assert_eq!(rejected(&refused).key(), Some("a"));
    let hosts = family("seams.coop.keyed");
    assert_eq!(hosts.get("a").unwrap().state(), State::Open);
    assert_eq!(hosts.get("b").unwrap().state(), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// Deadlines

#[resiliency::breaker(
    name = "seams.deadline.slow",
    timeout = "1s",
    slow_call_duration = "200ms",
    error_threshold = 2,
    error_timeout = "1h"
)]
async fn deadline_slow(wait: u64) -> Result<(Option<Duration>, Option<Duration>), BoxError> {
    let before = time_left();
    sleep(ms(wait)).await;
    Ok((before, time_left()))
}

/// A slow call under `timeout` is not cut short: it reads its deadline moving and counts as
/// slow; one that runs into the timeout counts once, as an error.
#[tokio::test(start_paused = true)]
async fn deadlines__slow_calls() {
    init();
    let name = "seams.deadline.slow";
    assert_eq!(
        deadline_slow(300).await.unwrap(),
        (Some(secs(1)), Some(ms(700)))
    );
    let site = breaker::get(name).unwrap();
    assert_eq!(site.state(), State::Closed, "one slow call of two");
    site.reset();
    let error = deadline_slow(5_000).await.unwrap_err();
    assert!(rejected(&error).is_timeout());
    assert_eq!(site.state(), State::Closed, "a timed-out call counts once");
    assert_eq!(
        deadline_slow(250).await.unwrap(),
        (Some(secs(1)), Some(ms(750)))
    );
    assert_eq!(
        site.state(),
        State::Open,
        "the timeout and a slow call: two"
    );
}

#[resiliency::breaker(
    name = "seams.deadline.keyed",
    key = host,
    timeout = "500ms",
    error_threshold = 1,
    error_timeout = "1m"
)]
async fn deadline_keyed(host: &str) -> Result<Option<Duration>, BoxError> {
    if host == "hangs" {
        std::future::pending::<()>().await;
    }
    Ok(time_left())
}

/// Every key's call has the family's deadline; a key that times out opens alone.
#[tokio::test(start_paused = true)]
async fn deadlines__keyed() {
    init();
    assert_eq!(deadline_keyed("a").await.unwrap(), Some(ms(500)));
    let error = deadline_keyed("hangs").await.unwrap_err();
    assert!(rejected(&error).is_timeout());
    assert_eq!(rejected(&error).key(), Some("hangs"));
    let hosts = family("seams.deadline.keyed");
    assert_eq!(hosts.get("hangs").unwrap().state(), State::Open);
    assert_eq!(hosts.get("a").unwrap().state(), State::Closed);
    assert_eq!(deadline_keyed("a").await.unwrap(), Some(ms(500)));
}

#[resiliency::breaker(name = "seams.deadline.blocking", error_threshold = 5)]
fn deadline_blocking() -> Result<Option<Duration>, BoxError> {
    Ok(time_left())
}

#[resiliency::breaker(name = "seams.deadline.blocking_outer", timeout = "1s")]
async fn deadline_blocking_outer() -> Result<Option<Duration>, BoxError> {
    deadline_blocking()
}

#[resiliency::breaker(name = "seams.deadline.shared", timeout = "1s")]
async fn deadline_shared_async() -> Result<Option<Duration>, BoxError> {
    Ok(time_left())
}

#[resiliency::breaker(name = "seams.deadline.shared")]
fn deadline_shared_blocking() -> Result<Option<Duration>, BoxError> {
    Ok(time_left())
}

/// A blocking fn has no deadline of its own, even on a breaker whose async calls have a
/// `timeout`; under an async guard it reads that guard's.
#[tokio::test(start_paused = true)]
async fn deadlines__blocking() {
    init();
    assert_eq!(deadline_blocking().unwrap(), None);
    assert_eq!(deadline_blocking_outer().await.unwrap(), Some(secs(1)));
    assert_eq!(deadline_shared_async().await.unwrap(), Some(secs(1)));
    assert_eq!(
        deadline_shared_blocking().unwrap(),
        None,
        "the shared breaker's timeout does not apply to blocking calls"
    );
}

// ---------------------------------------------------------------------------------------------
// Hints

#[resiliency::breaker(
    name = "seams.hint.slow",
    error_threshold = 2,
    error_timeout = "5s",
    slow_call_duration = "100ms"
)]
async fn hint_slow(wait: u64, hint: Option<u64>) -> Result<u64, ApiError> {
    sleep(ms(wait)).await;
    match hint {
        Some(wait) => Err(ApiError::Throttled(secs(wait))),
        None => Err(ApiError::Down),
    }
}

/// A slow error with a hint counts once, and its hint holds the breaker open when the next
/// error opens it.
#[tokio::test(start_paused = true)]
async fn hints__slow_calls() {
    init();
    assert!(matches!(
        hint_slow(200, Some(30)).await,
        Err(ApiError::Throttled(_))
    ));
    let site = breaker::get("seams.hint.slow").unwrap();
    assert_eq!(site.state(), State::Closed, "a slow error is one error");
    assert!(matches!(hint_slow(0, None).await, Err(ApiError::Down)));
    assert_eq!(site.state(), State::Open);
    let refused = hint_slow(0, None).await.unwrap_err();
    assert_eq!(
        refused.refusal().retry_after(),
        Some(secs(30)),
        "the slow error's hint, not error_timeout"
    );
    advance(secs(29)).await;
    assert!(hint_slow(0, None)
        .await
        .unwrap_err()
        .refusal()
        .is_circuit_open());
}

#[resiliency::breaker(name = "seams.hint.keyed", key = host, error_threshold = 1, error_timeout = "5s")]
async fn hint_keyed(host: &str, throttled: bool) -> Result<String, ApiError> {
    if throttled {
        Err(ApiError::Throttled(secs(30)))
    } else {
        Ok(host.to_string())
    }
}

/// A hint holds open the key whose call read it, and no other.
#[tokio::test(start_paused = true)]
async fn hints__keyed() {
    init();
    assert!(hint_keyed("a", true).await.is_err());
    assert_eq!(hint_keyed("b", false).await.unwrap(), "b");
    let refused = hint_keyed("a", false).await.unwrap_err();
    assert_eq!(refused.refusal().key(), Some("a"));
    assert_eq!(refused.refusal().retry_after(), Some(secs(30)));
    advance(secs(10)).await;
    let refused = hint_keyed("a", false).await.unwrap_err();
    assert_eq!(
        refused.refusal().retry_after(),
        Some(secs(20)),
        "past error_timeout"
    );
    assert_eq!(hint_keyed("b", false).await.unwrap(), "b");
    advance(secs(20)).await;
    assert_eq!(hint_keyed("a", false).await.unwrap(), "a");
}

/// The state gauge and the transitions follow the hinted open time, not `error_timeout`.
#[tokio::test(start_paused = true)]
async fn hints__metrics() {
    init();
    let name = "seams.hint.metrics";
    let b = Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(secs(1))
        .build()
        .unwrap();
    let throttled = b.call_hinted(async { Err::<(), _>(ApiError::Throttled(secs(10))) });
    assert!(throttled.await.is_err());
    sleep(secs(5)).await;
    assert!(b
        .call_hinted(async { Ok::<(), ApiError>(()) })
        .await
        .is_err());
    assert_eq!(state_gauge(name, "open"), 1.0);
    assert_eq!(transitions(name, "open", "half_open"), 0.0);
    assert_eq!(breaker_calls(name, "refused"), 1.0);
    sleep(secs(5)).await;
    b.call_hinted(async { Ok::<(), ApiError>(()) })
        .await
        .unwrap();
    assert_eq!(transitions(name, "open", "half_open"), 1.0);
    assert_eq!(transitions(name, "half_open", "closed"), 1.0);
    assert_eq!(state_gauge(name, "closed"), 1.0);
}

// ---------------------------------------------------------------------------------------------
// Slow calls

static SLOW_FALLBACKS: AtomicU32 = AtomicU32::new(0);

async fn slow_fallback_cached(wait: u64, why: Rejected) -> Result<u64, BoxError> {
    assert!(why.is_circuit_open(), "{why}");
    SLOW_FALLBACKS.fetch_add(1, Ordering::SeqCst);
    Ok(wait + 1_000_000)
}

#[resiliency::breaker(
    name = "seams.slow.fallback",
    error_threshold = 1,
    error_timeout = "1h",
    slow_call_duration = "100ms",
    fallback = slow_fallback_cached
)]
async fn slow_fallback(wait: u64) -> Result<u64, BoxError> {
    sleep(ms(wait)).await;
    Ok(wait)
}

/// The slow call that opens the breaker returns its own result; the calls it then refuses take
/// the fallback.
#[tokio::test(start_paused = true)]
async fn slow_calls__fallbacks() {
    init();
    assert_eq!(slow_fallback(200).await.unwrap(), 200);
    assert_eq!(SLOW_FALLBACKS.load(Ordering::SeqCst), 0);
    let site = breaker::get("seams.slow.fallback").unwrap();
    assert_eq!(site.state(), State::Open);
    assert_eq!(slow_fallback(1).await.unwrap(), 1_000_001);
    assert_eq!(SLOW_FALLBACKS.load(Ordering::SeqCst), 1);
}

#[resiliency::breaker(
    name = "seams.slow.keyed",
    key = host,
    error_threshold = 1,
    error_timeout = "1h",
    slow_call_duration = "100ms"
)]
async fn slow_keyed(host: &str, wait: u64) -> Result<u64, BoxError> {
    sleep(ms(wait)).await;
    Ok(wait)
}

/// A slow key opens alone.
#[tokio::test(start_paused = true)]
async fn slow_calls__keyed() {
    init();
    assert_eq!(slow_keyed("slow", 200).await.unwrap(), 200);
    assert_eq!(slow_keyed("fast", 10).await.unwrap(), 10);
    let hosts = family("seams.slow.keyed");
    assert_eq!(hosts.get("slow").unwrap().state(), State::Open);
    assert_eq!(hosts.get("fast").unwrap().state(), State::Closed);
    let refused = slow_keyed("slow", 1).await.unwrap_err();
    assert_eq!(rejected(&refused).key(), Some("slow"));
    assert_eq!(slow_keyed("fast", 1).await.unwrap(), 1);
}

/// Slow responses through a `BreakerLayer` are returned, and open its breaker.
#[tokio::test(start_paused = true)]
async fn slow_calls__tower_layers() {
    init();
    let name = "seams.slow.tower";
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let layer = BreakerLayer::new(
        Breaker::builder(name)
            .error_threshold(2)
            .error_timeout(secs(3600))
            .slow_call_duration(ms(100)),
    )
    .unwrap();
    let mut svc = layer.layer(service_fn(move |wait: u64| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move {
            sleep(ms(wait)).await;
            Ok::<_, BoxError>(wait)
        }
    }));
    assert_eq!(svc.ready().await.unwrap().call(150).await.unwrap(), 150);
    assert_eq!(svc.breaker().state(), State::Closed);
    assert_eq!(svc.ready().await.unwrap().call(150).await.unwrap(), 150);
    assert_eq!(svc.breaker().state(), State::Open, "two slow responses");
    let error = svc.ready().await.unwrap().call(1).await.unwrap_err();
    assert!(is_circuit_open(&error));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

// ---------------------------------------------------------------------------------------------
// Fallbacks

fn fallback_keyed_cached(host: &str, fail: bool, why: Rejected) -> Result<String, ApiError> {
    assert!(!fail);
    Ok(format!(
        "cached {host} (key {})",
        why.key().unwrap_or("none")
    ))
}

#[resiliency::breaker(
    name = "seams.fallback.keyed",
    key = host,
    error_threshold = 1,
    error_timeout = "1h",
    fallback = fallback_keyed_cached
)]
async fn fallback_keyed(host: &str, fail: bool) -> Result<String, ApiError> {
    if fail {
        Err(ApiError::Down)
    } else {
        Ok(format!("fresh {host}"))
    }
}

/// An open key falls back, with its key in the reason; the other keys are called.
#[tokio::test(start_paused = true)]
async fn fallbacks__keyed() {
    init();
    assert!(matches!(
        fallback_keyed("a", true).await,
        Err(ApiError::Down)
    ));
    assert_eq!(
        fallback_keyed("a", false).await.unwrap(),
        "cached a (key a)"
    );
    assert_eq!(fallback_keyed("b", false).await.unwrap(), "fresh b");
}

fn fallback_tower_cached(why: Rejected) -> Result<u32, ApiError> {
    assert!(why.is_circuit_open(), "{why}");
    Ok(99)
}

#[resiliency::breaker(name = "seams.fallback.tower", error_threshold = 2, fallback = fallback_tower_cached)]
async fn fallback_tower() -> Result<u32, ApiError> {
    Ok(1)
}

/// A `BreakerLayer`'s errors open the breaker it shares with an attribute by name: the
/// attribute's calls fall back.
#[tokio::test(start_paused = true)]
async fn fallbacks__tower_layers() {
    init();
    let name = "seams.fallback.tower";
    let layer = BreakerLayer::new(Breaker::builder(name).error_threshold(2)).unwrap();
    let mut svc = layer.layer(service_fn(|_: ()| async {
        Err::<u32, _>(std::io::Error::other("upstream down"))
    }));
    assert_eq!(fallback_tower().await.unwrap(), 1);
    for _ in 0..2 {
        assert!(svc.ready().await.unwrap().call(()).await.is_err());
    }
    assert_eq!(breaker::get(name).unwrap().state(), State::Open);
    assert_eq!(fallback_tower().await.unwrap(), 99);
}

// ---------------------------------------------------------------------------------------------
// Keyed families

#[resiliency::breaker(name = "seams.keyed.blocking", key = host, error_threshold = 1, error_timeout = "1h")]
fn keyed_blocking(host: &str, fail: bool) -> Result<String, BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(host.to_string())
    }
}

/// A blocking fn with `key`: one breaker per key, as for an async fn.
#[test]
fn keyed__blocking() {
    init();
    assert!(keyed_blocking("a", true).is_err());
    let refused = keyed_blocking("a", false).unwrap_err();
    assert!(rejected(&refused).is_circuit_open());
    assert_eq!(rejected(&refused).key(), Some("a"));
    assert_eq!(keyed_blocking("b", false).unwrap(), "b");
    let hosts = family("seams.keyed.blocking");
    assert_eq!(hosts.get("a").unwrap().state(), State::Open);
    assert_eq!(hosts.get("b").unwrap().state(), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// Tower layers

#[resiliency::breaker(
    name = "seams.tower.blocking",
    error_threshold = 2,
    error_timeout = "1h"
)]
fn tower_blocking(fail: bool) -> Result<u32, BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(1)
    }
}

/// A `BreakerLayer` and a blocking fn of one name share one window: an error through each opens
/// it, and both refuse.
#[tokio::test(start_paused = true)]
async fn tower_layers__blocking() {
    init();
    let name = "seams.tower.blocking";
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let layer = BreakerLayer::new(
        Breaker::builder(name)
            .error_threshold(2)
            .error_timeout(secs(3600)),
    )
    .unwrap();
    let mut svc = layer.layer(service_fn(move |_: ()| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Err::<u32, _>(std::io::Error::other("upstream down")) }
    }));
    assert!(svc.ready().await.unwrap().call(()).await.is_err());
    assert!(tower_blocking(true).is_err());
    assert_eq!(svc.breaker().state(), State::Open, "one error through each");
    assert!(is_circuit_open(&tower_blocking(false).unwrap_err()));
    assert!(is_circuit_open(
        &svc.ready().await.unwrap().call(()).await.unwrap_err()
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------------------------
// Attempts in flight (`max_attempts_in_flight`)

/// What attempt `n` (from 0) of a capped race does.
#[derive(Copy, Clone, Debug)]
enum Step {
    /// `Ok(n)` after this many ms.
    Answer(u64),
    /// `Err(ApiError::Down)` after this many ms.
    Fail(u64),
    /// `Err(ApiError::Throttled(wait ms))` after this many ms.
    Throttle(u64, u64),
    /// Never ends.
    Hang,
}

/// The attempts of one raced call: each one's number and start (from the call's start), the
/// time it had left as it was made, and the most that ran at once. Attempts past `steps` hang.
struct Attempts {
    t0: Instant,
    steps: Vec<Step>,
    started: Mutex<Vec<(u32, Duration)>>,
    time_left: Mutex<Vec<Option<Duration>>>,
    running: AtomicU32,
    peak: AtomicU32,
}

impl Attempts {
    fn new(steps: &[Step]) -> Self {
        Attempts {
            t0: Instant::now(),
            steps: steps.to_vec(),
            started: Mutex::new(Vec::new()),
            time_left: Mutex::new(Vec::new()),
            running: AtomicU32::new(0),
            peak: AtomicU32::new(0),
        }
    }

    /// Attempt `n` (its `attempt = n`).
    async fn attempt(&self, n: u32) -> Result<u32, ApiError> {
        self.started.lock().unwrap().push((n, self.t0.elapsed()));
        self.time_left.lock().unwrap().push(time_left());
        let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(running, Ordering::SeqCst);
        let _running = Running(&self.running);
        match self.steps.get(n as usize).copied().unwrap_or(Step::Hang) {
            Step::Answer(after) => {
                sleep(ms(after)).await;
                Ok(n)
            }
            Step::Fail(after) => {
                sleep(ms(after)).await;
                Err(ApiError::Down)
            }
            Step::Throttle(after, wait) => {
                sleep(ms(after)).await;
                Err(ApiError::Throttled(ms(wait)))
            }
            Step::Hang => std::future::pending().await,
        }
    }

    /// (attempt number from 0, start) of each attempt made, in the order they started.
    fn started(&self) -> Vec<(u32, Duration)> {
        self.started.lock().unwrap().clone()
    }

    /// When each attempt started.
    fn starts(&self) -> Vec<Duration> {
        self.started().into_iter().map(|(_, at)| at).collect()
    }

    fn peak(&self) -> u32 {
        self.peak.load(Ordering::SeqCst)
    }
}

/// Counts an attempt running until dropped.
struct Running<'a>(&'a AtomicU32);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[resiliency::race_retry(
    name = "seams.cap.deadline",
    retries = 1,
    after = "50ms",
    total = "2s",
    each = "800ms",
    backoff = "off",
    max_attempts_in_flight = 1,
    attempt = n
)]
async fn cap_deadline(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// An attempt that waited for its slot is made under its own deadline: `each` counts from its
/// start (300 ms), not from when it was due (50 ms).
#[tokio::test(start_paused = true)]
async fn attempt_cap__deadlines() {
    init();
    let attempts = Attempts::new(&[Step::Fail(300), Step::Answer(10)]);
    assert_eq!(cap_deadline(&attempts).await.unwrap(), 1);
    assert_eq!(attempts.starts(), [ms(0), ms(300)]);
    assert_eq!(
        *attempts.time_left.lock().unwrap(),
        [Some(ms(800)), Some(ms(800))]
    );
    assert_eq!(time_left(), None);
}

#[resiliency::race_retry(
    name = "seams.cap.budget",
    retries = 1,
    after = "50ms",
    total = "1s",
    budget = 0.001,
    backoff = "off",
    max_attempts_in_flight = 1,
    attempt = n
)]
async fn cap_budget(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// The budget pays for an attempt as it starts, not while it waits for a slot: 20 calls at once
/// whose attempt 1 answers at 200 ms (each one's replacement due at 50 ms, waiting) take no token
/// and are refused none, though the budget (its floor alone, at this share) holds fewer than 20;
/// a call whose attempt 1 fails then still gets its replacement.
#[tokio::test(start_paused = true)]
async fn attempt_cap__budget() {
    init();
    let name = "seams.cap.budget";
    let calls: Vec<_> = (0..20)
        .map(|_| Attempts::new(&[Step::Answer(200)]))
        .collect();
    let answers = futures::future::join_all(calls.iter().map(cap_budget)).await;
    assert!(answers.into_iter().all(|answer| answer.unwrap() == 0));
    assert!(calls.iter().all(|call| call.starts() == [ms(0)]));
    let stats = resiliency::race_retry::stats(name).unwrap();
    assert_eq!((stats.extra_attempts, stats.budget_refused), (0, 0));

    let attempts = Attempts::new(&[Step::Fail(0), Step::Answer(5)]);
    assert_eq!(cap_budget(&attempts).await.unwrap(), 1);
    let stats = resiliency::race_retry::stats(name).unwrap();
    assert_eq!((stats.extra_attempts, stats.budget_refused), (1, 0));
}

#[resiliency::race_retry(
    name = "seams.cap.backoff",
    retries = 2,
    after = "100ms",
    total = "5s",
    budget = "off",
    backoff = "40ms",
    backoff_factor = 1,
    max_attempts_in_flight = 1,
    attempt = n
)]
async fn cap_backoff(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// A replacement that waited for its slot past its staggered start starts as the slot frees
/// (attempt 1, due at 100 ms, at attempt 0's failure at 150 ms); one whose staggered start is
/// still to come waits its backoff after the failure (attempt 2, within 40 ms of attempt 1's
/// failure at 160 ms, and on the paused clock's next millisecond), not always at once. Over 50
/// calls, never two attempts at once.
#[tokio::test(start_paused = true)]
async fn attempt_cap__backoff() {
    init();
    let mut waits = Vec::new();
    for _ in 0..50 {
        let attempts = Attempts::new(&[Step::Fail(150), Step::Fail(10), Step::Answer(1)]);
        assert_eq!(cap_backoff(&attempts).await.unwrap(), 2);
        let starts = attempts.starts();
        assert_eq!((starts[0], starts[1], attempts.peak()), (ms(0), ms(150), 1));
        waits.push(starts[2] - ms(160));
    }
    assert!(waits.iter().all(|wait| *wait <= ms(41)), "{waits:?}");
    assert!(waits.iter().any(|wait| *wait >= ms(20)), "{waits:?}");
    assert!(waits.iter().any(|wait| *wait < ms(20)), "{waits:?}");
}

#[resiliency::race_retry(
    name = "seams.cap.hint",
    retries = 2,
    after = "100ms",
    total = "2s",
    backoff = "off",
    max_attempts_in_flight = 1,
    attempt = n
)]
async fn cap_hint(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// A Retry-After hint holds back the attempt that waited for its slot: attempt 1, due at 100 ms,
/// waits for attempt 0, which fails at 300 ms asking for 100 ms more, and starts at 400 ms,
/// though its slot was free and its staggered start past. A wait that would end past `total`
/// ends the call at once with that error.
#[tokio::test(start_paused = true)]
async fn attempt_cap__hints() {
    init();
    let attempts = Attempts::new(&[Step::Throttle(300, 100), Step::Answer(5)]);
    assert_eq!(cap_hint(&attempts).await.unwrap(), 1);
    assert_eq!(attempts.starts(), [ms(0), ms(400)]);

    let attempts = Attempts::new(&[Step::Throttle(10, 5000)]);
    let start = Instant::now();
    assert!(matches!(
        cap_hint(&attempts).await,
        Err(ApiError::Throttled(_))
    ));
    assert_eq!((start.elapsed(), attempts.starts()), (ms(10), vec![ms(0)]));
}

#[resiliency::race_retry(
    name = "seams.cap.numbers",
    retries = 3,
    after = "100ms",
    total = "2s",
    backoff = "off",
    max_attempts_in_flight = 2,
    attempt = n
)]
async fn cap_numbers(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// Attempts keep their numbers in the order they start, waiting or not: with two slots, attempt
/// 2 (due at 200 ms) starts at 250 ms as attempt 0 fails, and attempt 3 as attempt 2 fails; the
/// reports count from 1.
#[tokio::test(start_paused = true)]
async fn attempt_cap__attempt_numbers() {
    init();
    let attempts = Attempts::new(&[
        Step::Fail(250),
        Step::Hang,
        Step::Fail(10),
        Step::Answer(10),
    ]);
    let (answer, seen) = resiliency::race_retry::observe(cap_numbers(&attempts)).await;
    assert_eq!(answer.unwrap(), 3);
    assert_eq!(
        attempts.started(),
        [(0, ms(0)), (1, ms(100)), (2, ms(250)), (3, ms(260))]
    );
    assert_eq!(attempts.peak(), 2);
    let mut reported: Vec<_> = seen
        .iter()
        .map(|a| (a.number, a.started, format!("{:?}", a.outcome)))
        .collect();
    reported.sort();
    assert_eq!(
        reported,
        [
            (1, ms(0), "Failed".to_owned()),
            (2, ms(100), "Lost".to_owned()),
            (3, ms(250), "Failed".to_owned()),
            (4, ms(260), "Won".to_owned()),
        ]
    );
}

fn cap_fallback_cached(attempts: &Attempts, why: Rejected) -> Result<u32, ApiError> {
    assert!(why.is_deadline(), "{why}");
    assert!(why.to_string().contains("1 attempt"), "{why}");
    assert_eq!(attempts.starts(), [ms(0)]);
    Ok(99)
}

#[resiliency::race_retry(
    name = "seams.cap.fallback",
    retries = 2,
    after = "100ms",
    total = "500ms",
    max_attempts_in_flight = 1,
    attempt = n,
    fallback = cap_fallback_cached
)]
async fn cap_fallback(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// A race whose one attempt holds its slot to the deadline falls back, the refusal counting the
/// one attempt made.
#[tokio::test(start_paused = true)]
async fn attempt_cap__fallbacks() {
    init();
    let attempts = Attempts::new(&[Step::Hang]);
    let start = Instant::now();
    assert_eq!(cap_fallback(&attempts).await.unwrap(), 99);
    assert_eq!(start.elapsed(), ms(500));
    assert_eq!(attempts.running.load(Ordering::SeqCst), 0);
}

#[resiliency::race_retry(
    name = "seams.cap.metrics",
    retries = 2,
    after = "100ms",
    total = "1s",
    backoff = "off",
    max_attempts_in_flight = 1,
    attempt = n
)]
async fn cap_metrics(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// The metrics count the attempts that started, not those that were due: attempts 1 and 2 were
/// due at 100 and 200 ms while attempt 0 held the slot; attempt 1 started at its failure and won.
#[tokio::test(start_paused = true)]
async fn attempt_cap__metrics() {
    init();
    let name = "seams.cap.metrics";
    let attempts = Attempts::new(&[Step::Fail(250), Step::Answer(10)]);
    assert_eq!(cap_metrics(&attempts).await.unwrap(), 1);
    assert_eq!(attempts.starts(), [ms(0), ms(250)]);
    let race = resiliency::metrics::RACE_ATTEMPTS;
    assert_eq!(metric(race, &[("name", name)]), 2.0);
    let wins = resiliency::metrics::RACE_WINS;
    assert_eq!(metric(wins, &[("name", name), ("attempt", "2")]), 1.0);
    let calls = resiliency::metrics::RACE_CALLS;
    assert_eq!(
        metric(calls, &[("name", name), ("outcome", "success")]),
        1.0
    );
}

#[resiliency::race_retry(
    name = "seams.cap.settings",
    retries = 2,
    after = "100ms",
    total = "1s",
    backoff = "off",
    attempt = n
)]
async fn cap_settings(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// A cap set by name while a call runs two attempts holds for that call at once: attempt 2, due
/// at 200 ms, starts only when neither of the two runs (at 400 ms), and the call answers.
#[tokio::test(start_paused = true)]
async fn attempt_cap__settings() {
    init();
    let name = "seams.cap.settings";
    let attempts = Arc::new(Attempts::new(&[
        Step::Fail(250),
        Step::Fail(300),
        Step::Answer(10),
    ]));
    let call = tokio::spawn({
        let attempts = attempts.clone();
        async move { cap_settings(&attempts).await.unwrap() }
    });
    sleep(ms(150)).await;
    settings::set(Policy::RaceRetry, name, "max_attempts_in_flight", 1).unwrap();
    assert_eq!(call.await.unwrap(), 2);
    assert_eq!(attempts.started(), [(0, ms(0)), (1, ms(100)), (2, ms(400))]);
    settings::unset(Policy::RaceRetry, name, "max_attempts_in_flight").unwrap();
}

#[resiliency::race_retry(
    name = "seams.cap.registry",
    retries = 2,
    after = "100ms",
    total = "1s",
    attempt = n
)]
async fn cap_registry(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// A name registered with a cap keeps it: a layer of that name with another cap, or none, is a
/// `ConfigError` naming the setting; the attribute's site of that name (which gives none) uses
/// the registered policy, one attempt at a time.
#[tokio::test(start_paused = true)]
async fn attempt_cap__registry() {
    init();
    let name = "seams.cap.registry";
    let options = || {
        resiliency::race_retry::RaceRetry::builder(name)
            .retries(2)
            .after(ms(100))
            .total(secs(1))
    };
    let policy = options().max_attempts_in_flight(1).register().unwrap();
    assert_eq!(policy.max_attempts_in_flight(), Some(1));
    let error = RaceRetryLayer::new(options().max_attempts_in_flight(2)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "race_retry `seams.cap.registry`: `max_attempts_in_flight` = 2 from the layer differs \
         from 1 from `register`"
    );
    let error = RaceRetryLayer::new(options()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`max_attempts_in_flight` = the default"),
        "{error}"
    );
    let attempts = Attempts::new(&[Step::Hang]);
    assert!(cap_registry(&attempts)
        .await
        .unwrap_err()
        .refusal()
        .is_deadline());
    assert_eq!(attempts.starts(), [ms(0)]);
}

#[resiliency::race_retry(
    name = "seams.cap.tracing",
    retries = 2,
    after = "100ms",
    total = "5s",
    budget = "off",
    backoff = "40ms",
    backoff_factor = 1,
    max_attempts_in_flight = 1,
    attempt = n
)]
async fn cap_tracing(attempts: &Attempts) -> Result<u32, ApiError> {
    attempts.attempt(n).await
}

/// Each "backing off" event of a capped race says when the replacement starts, and a subscriber
/// may look the policy up as it is told: attempt 1 (due at 100 ms) starts at once when attempt 0
/// fails at 150 ms, as the event says, and attempt 2 after its backoff, as its event says.
#[tokio::test(start_paused = true)]
async fn attempt_cap__tracing() {
    init();
    let name = "seams.cap.tracing";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let _hook = hook::on_event(move |event| {
        if event.message == "backing off after a failure" && event.field("name") == Some(name) {
            let cap = resiliency::race_retry::get(name).and_then(|p| p.max_attempts_in_flight());
            let starts_in: u64 = event.field("starts_in_us").unwrap().parse().unwrap();
            record
                .lock()
                .unwrap()
                .push((cap, Duration::from_micros(starts_in)));
        }
    });
    let attempts = Attempts::new(&[Step::Fail(150), Step::Fail(10), Step::Answer(1)]);
    assert_eq!(cap_tracing(&attempts).await.unwrap(), 2);
    let seen = seen.lock().unwrap().clone();
    let [(cap, first), (_, second)] = seen[..] else {
        panic!("two backoff events: {seen:?}");
    };
    assert_eq!((cap, first), (Some(1), Duration::ZERO));
    let starts = attempts.starts();
    assert_eq!(starts[1], ms(150));
    let told = ms(160) + second;
    assert!(
        starts[2] >= told && starts[2] <= told + ms(1),
        "started at {:?}, told {told:?}",
        starts[2]
    );
}

// ---------------------------------------------------------------------------------------------
// Time limit (`#[timeout]`): its row of the matrix

#[resiliency::timeout(name = "seams.timeout.coop", total = "50ms")]
async fn timeout_coop_budgeted() -> Result<(), BoxError> {
    loop {
        // Always ready, as a busy channel is: it takes from the budget, and yields when spent.
        tokio::task::coop::consume_budget().await;
    }
}

/// A body that spends tokio's cooperative budget in every poll is still cut off, on the real
/// clock: the timer is polled unconstrained, as `tokio::time::timeout` polls its own.
#[test]
fn timeout__coop_budget() {
    init();
    within_5s(|| {
        support::current_thread().block_on(async {
            let started = std::time::Instant::now();
            let error = timeout_coop_budgeted().await.unwrap_err();
            assert!(rejected(&error).is_timeout(), "{error}");
            assert!(started.elapsed() >= ms(50));
        })
    });
}

const ZERO: Duration = Duration::ZERO;

#[resiliency::timeout(name = "seams.timeout.tracing", total = ZERO)]
async fn timeout_tracing_unusable() -> Result<u32, BoxError> {
    sleep(ms(10)).await;
    Ok(1)
}

#[resiliency::timeout(name = "seams.timeout.tracing_other", total = "1s")]
async fn timeout_tracing_other() -> Result<u32, BoxError> {
    Ok(2)
}

/// A site whose `total` is refused at its first call logs an error while it is set up; a
/// subscriber that then calls another `#[timeout]` fn and looks time limits up (the registry's
/// lock is held while a site is set up) neither deadlocks nor panics, and the site runs with no
/// limit rather than fail its calls.
#[test]
fn timeout__tracing() {
    init();
    within_5s(|| {
        support::paused_runtime().block_on(async {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let record = seen.clone();
            let _hook = hook::on_event(move |event| {
                if event.field("setting") == Some("total") {
                    let other = support::block_on_without_tokio(timeout_tracing_other());
                    let found = resiliency::timeout::get("seams.timeout.tracing").map(|t| t.name());
                    record.lock().unwrap().push((other.unwrap(), found));
                }
            });
            assert_eq!(timeout_tracing_unusable().await.unwrap(), 1);
            let seen = seen.lock().unwrap().clone();
            assert_eq!(seen.len(), 1, "{seen:?}");
            assert_eq!(seen[0].0, 2);
        })
    });
}

#[resiliency::breaker(
    name = "seams.timeout.hints",
    error_threshold = 1,
    error_timeout = "1s"
)]
#[resiliency::timeout(name = "seams.timeout.hints_limit", total = "100ms")]
async fn timeout_hint(throttled: bool, wait: u64) -> Result<u32, ApiError> {
    sleep(ms(wait)).await;
    if throttled {
        Err(ApiError::Throttled(secs(5)))
    } else {
        Ok(1)
    }
}

/// An error's `RetryHint` passes through a time limit unchanged (the breaker around it holds open
/// as long as asked); a call cut off carries no hint (the breaker's own `error_timeout` holds).
#[tokio::test(start_paused = true)]
async fn timeout__hints() {
    init();
    assert!(matches!(
        timeout_hint(true, 10).await.unwrap_err(),
        ApiError::Throttled(_)
    ));
    let refused = timeout_hint(false, 10).await.unwrap_err();
    assert_eq!(refused.refusal().retry_after(), Some(secs(5)));
    sleep(secs(5)).await;
    // Half-open: the probe is cut off, which re-opens it for `error_timeout` alone.
    let cut = timeout_hint(false, 500).await.unwrap_err();
    assert!(cut.refusal().is_timeout() && cut.refusal().retry_after().is_none());
    let refused = timeout_hint(false, 10).await.unwrap_err();
    let left = refused.refusal().retry_after().unwrap();
    assert!(left <= secs(1), "{left:?}");
}

#[resiliency::breaker(
    name = "seams.timeout.slow",
    slow_call_duration = "50ms",
    error_threshold = 100
)]
#[resiliency::timeout(total = "100ms")]
async fn timeout_slow(wait: u64) -> Result<u64, BoxError> {
    sleep(ms(wait)).await;
    Ok(wait)
}

/// Under a breaker with `slow_call_duration`, a call slower than it but within the time limit is
/// a slow success; one the time limit cuts off is an error, never a slow call.
#[tokio::test(start_paused = true)]
async fn timeout__slow_calls() {
    init();
    let name = "seams.timeout.slow";
    assert_eq!(timeout_slow(70).await.unwrap(), 70);
    assert!(rejected(&timeout_slow(150).await.unwrap_err()).is_timeout());
    assert_eq!(timeout_slow(10).await.unwrap(), 10);
    assert_eq!(breaker_calls(name, "slow"), 1.0);
    assert_eq!(breaker_calls(name, "error"), 1.0);
    assert_eq!(breaker_calls(name, "success"), 1.0);
}

#[resiliency::breaker(name = "seams.timeout.keyed", key = host, error_threshold = 1, error_timeout = "1h")]
#[resiliency::timeout(total = "100ms")]
async fn timeout_keyed(host: &str, wait: u64) -> Result<String, BoxError> {
    sleep(ms(wait)).await;
    Ok(host.to_string())
}

/// A key whose calls run out of time opens its own breaker only.
#[tokio::test(start_paused = true)]
async fn timeout__keyed() {
    init();
    assert!(rejected(&timeout_keyed("slow", 500).await.unwrap_err()).is_timeout());
    assert!(is_circuit_open(
        &timeout_keyed("slow", 1).await.unwrap_err()
    ));
    assert_eq!(timeout_keyed("fast", 1).await.unwrap(), "fast");
    let hosts = family("seams.timeout.keyed");
    assert_eq!(hosts.get("slow").unwrap().state(), State::Open);
    assert_eq!(hosts.get("fast").unwrap().state(), State::Closed);
}

/// A `TimeoutLayer` inside a `BreakerLayer`: each response cut off is an error the breaker
/// counts, and the inner service reads the sooner of the two deadlines.
#[tokio::test(start_paused = true)]
async fn timeout__tower_layers() {
    init();
    use resiliency::timeout::Timeout;
    use resiliency::tower::TimeoutLayer;
    let breaker = BreakerLayer::new(
        Breaker::builder("seams.timeout.tower")
            .error_threshold(2)
            .timeout(secs(1)),
    )
    .unwrap();
    let limit =
        TimeoutLayer::new(Timeout::builder("seams.timeout.tower_limit").total(ms(100))).unwrap();
    let mut svc = breaker.layer(limit.layer(service_fn(|wait: u64| async move {
        let left = time_left();
        sleep(ms(wait)).await;
        Ok::<_, std::io::Error>(left)
    })));
    assert_eq!(
        svc.ready().await.unwrap().call(1).await.unwrap(),
        Some(ms(100))
    );
    for _ in 0..2 {
        let error = svc.ready().await.unwrap().call(500).await.unwrap_err();
        assert!(rejected(&error).is_timeout(), "{error}");
    }
    let refused = svc.ready().await.unwrap().call(1).await.unwrap_err();
    assert!(is_circuit_open(&refused), "{refused}");
}

#[resiliency::timeout(name = "seams.timeout.metrics", total = "100ms")]
async fn timeout_metered(wait: u64, fail: bool) -> Result<u64, BoxError> {
    sleep(ms(wait)).await;
    if fail {
        Err("down".into())
    } else {
        Ok(wait)
    }
}

/// Each call that ends counts once: `completed` (an `Ok` or an `Err` in time) or `timed_out`;
/// a call dropped counts nothing.
#[tokio::test(start_paused = true)]
async fn timeout__metrics() {
    init();
    let name = "seams.timeout.metrics";
    let calls = |outcome| {
        metric(
            resiliency::metrics::TIMEOUT_CALLS,
            &[("name", name), ("outcome", outcome)],
        )
    };
    timeout_metered(1, false).await.unwrap();
    timeout_metered(1, true).await.unwrap_err();
    timeout_metered(500, false).await.unwrap_err();
    let mut dropped = Box::pin(timeout_metered(50, false));
    assert!(poll_once(dropped.as_mut()).await.is_pending());
    drop(dropped);
    assert_eq!((calls("completed"), calls("timed_out")), (2.0, 1.0));
}

#[resiliency::timeout(name = "seams.timeout.cap_outer", total = "250ms")]
#[resiliency::race_retry(
    name = "seams.timeout.cap_race",
    retries = 3,
    after = "100ms",
    total = "10s",
    max_attempts_in_flight = 1
)]
async fn timeout_cap_outer(attempts: &AtomicU32) -> Result<u32, BoxError> {
    attempts.fetch_add(1, Ordering::SeqCst);
    sleep(secs(60)).await;
    Ok(1)
}

#[resiliency::race_retry(
    name = "seams.timeout.cap_each",
    retries = 2,
    after = "5s",
    total = "10s",
    max_attempts_in_flight = 1,
    backoff = "off"
)]
#[resiliency::timeout(name = "seams.timeout.cap_limit", total = "100ms")]
async fn timeout_cap_each(attempts: &AtomicU32) -> Result<u32, BoxError> {
    let n = attempts.fetch_add(1, Ordering::SeqCst);
    sleep(if n < 2 { secs(60) } else { ms(1) }).await;
    Ok(n)
}

/// Above a race capped at one attempt in flight, the time limit ends the whole race (the one
/// attempt running, dropped); below it, each attempt is bounded: an attempt cut off is an error,
/// and the next starts at once, in its slot.
#[tokio::test(start_paused = true)]
async fn timeout__attempt_cap() {
    init();
    let attempts = AtomicU32::new(0);
    let started = Instant::now();
    let error = timeout_cap_outer(&attempts).await.unwrap_err();
    assert!(rejected(&error).is_timeout(), "{error}");
    assert_eq!(started.elapsed(), ms(250));
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "the cap held the staggered ones"
    );

    let attempts = AtomicU32::new(0);
    let started = Instant::now();
    assert_eq!(timeout_cap_each(&attempts).await.unwrap(), 2);
    assert_eq!(started.elapsed(), ms(201));
}

// ---------------------------------------------------------------------------------------------
// Rate limit (`#[rate_limit]`): its row of the matrix

#[resiliency::rate_limit(name = "seams.rate.coop", rate = "1/h", burst = 1)]
async fn rate_coop() -> Result<(), BoxError> {
    Ok(())
}

/// A loop that meets nothing but rate-limit refusals yields to the runtime now and then (each
/// refusal takes from tokio's cooperative budget), so a timer on the same thread fires.
#[test]
fn rate_limit__coop_budget() {
    init();
    within_5s(|| {
        support::current_thread().block_on(async {
            rate_coop().await.unwrap();
            let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = fired.clone();
            tokio::spawn(async move { flag.store(true, Ordering::SeqCst) });
            let mut refusals = 0u32;
            while !fired.load(Ordering::SeqCst) {
                assert!(rejected(&rate_coop().await.unwrap_err()).is_rate_limited());
                refusals += 1;
            }
            assert!(refusals >= 1);
        })
    });
}

#[resiliency::rate_limit(name = "seams.rate.tracing", rate = "1/h", burst = 1)]
async fn rate_tracing() -> Result<(), BoxError> {
    Ok(())
}

/// A subscriber that, on a refusal's event, looks the limit up and calls through it again: the
/// refusal's event is emitted with no lock held, so neither deadlocks.
#[tokio::test(start_paused = true)]
async fn rate_limit__tracing() {
    init();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let inside = std::cell::Cell::new(false);
    let _hook = hook::on_event(move |event| {
        if event.message == "call refused"
            && event.field("name") == Some("seams.rate.tracing")
            && !inside.replace(true)
        {
            let limit = resiliency::rate_limit::get("seams.rate.tracing").unwrap();
            let again = limit.call_blocking(|| Ok::<(), BoxError>(()));
            record
                .lock()
                .unwrap()
                .push((again.is_err(), Some(limit.available())));
            inside.set(false);
        }
    });
    rate_tracing().await.unwrap();
    assert!(rejected(&rate_tracing().await.unwrap_err()).is_rate_limited());
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(seen
        .iter()
        .all(|(refused, available)| *refused && *available == Some(0)));
}

#[resiliency::breaker(name = "seams.rate.hints", error_threshold = 1, error_timeout = "10s")]
#[resiliency::rate_limit(name = "seams.rate.hints_limit", rate = "1/m", burst = 1)]
async fn rate_hint() -> Result<(), BoxError> {
    Ok(())
}

/// A refusal carries its permit's time as a hint: a breaker around the limit (the order the docs
/// advise against) counts it as an error and stays open as long as it says, not its own
/// `error_timeout`; a race above the limit waits that long for its next attempt.
#[tokio::test(start_paused = true)]
async fn rate_limit__hints() {
    init();
    rate_hint().await.unwrap();
    let refused = rate_hint().await.unwrap_err();
    assert!(rejected(&refused).is_rate_limited());
    let open = rate_hint().await.unwrap_err();
    assert!(is_circuit_open(&open), "{open}");
    let retry = rejected(&open).retry_after().unwrap();
    assert!(
        retry > secs(50),
        "held open for the permit's time: {retry:?}"
    );
}

#[resiliency::race_retry(name = "seams.rate.race", retries = 2, after = "4s", total = "5s")]
#[resiliency::rate_limit(name = "seams.rate.race_limit", rate = "1/s", burst = 1)]
async fn rate_race(log: &Mutex<Vec<Duration>>, start: Instant) -> Result<(), BoxError> {
    log.lock().unwrap().push(start.elapsed());
    Err("down".into())
}

#[tokio::test(start_paused = true)]
async fn rate_limit__race_waits_for_the_permit() {
    init();
    let log = Mutex::new(Vec::new());
    let start = Instant::now();
    let _ = rate_race(&log, start).await;
    let log = log.lock().unwrap().clone();
    // The first attempt ran; the next, refused by the limit, waited for its permit (a hint of
    // 1 s), and ran then.
    assert_eq!(log[0], Duration::ZERO);
    assert!(log.len() >= 2 && log[1] >= secs(1), "{log:?}");
}

#[resiliency::rate_limit(
    name = "seams.rate.slow_limit",
    rate = "10/s",
    burst = 1,
    max_wait = "500ms"
)]
#[resiliency::breaker(
    name = "seams.rate.slow",
    slow_call_duration = "50ms",
    error_threshold = 100
)]
async fn rate_slow() -> Result<(), BoxError> {
    sleep(ms(10)).await;
    Ok(())
}

/// The limit outside the breaker: a call that waited for its permit is timed by the breaker from
/// when it runs, so its wait never makes it slow.
#[tokio::test(start_paused = true)]
async fn rate_limit__slow_calls() {
    init();
    let (a, b, c) = tokio::join!(rate_slow(), rate_slow(), rate_slow());
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    assert_eq!(breaker_calls("seams.rate.slow", "slow"), 0.0);
    assert_eq!(breaker_calls("seams.rate.slow", "success"), 3.0);
}

#[resiliency::rate_limit(name = "seams.rate.keyed_limit", rate = "1/h", burst = 2)]
#[resiliency::breaker(name = "seams.rate.keyed", key = host, error_threshold = 1)]
async fn rate_keyed(host: &str) -> Result<String, BoxError> {
    Err(format!("{host} down").into())
}

/// A limit above a keyed breaker: refused calls never reach the key's breaker, which counts only
/// the calls that ran.
#[tokio::test(start_paused = true)]
async fn rate_limit__keyed() {
    init();
    assert!(rate_keyed("a").await.is_err());
    assert!(rate_keyed("b").await.is_err());
    let refused = rate_keyed("c").await.unwrap_err();
    assert!(rejected(&refused).is_rate_limited());
    let hosts = family("seams.rate.keyed");
    assert_eq!(hosts.get("a").unwrap().state(), State::Open);
    assert!(
        hosts.get("c").is_none(),
        "the refused call made no breaker for its key"
    );
}

/// A `RateLimitLayer` outside a `BreakerLayer`: refused requests never reach the breaker.
#[tokio::test(start_paused = true)]
async fn rate_limit__tower_layers() {
    init();
    use resiliency::rate_limit::{Rate, RateLimit};
    use resiliency::tower::RateLimitLayer;
    let limit = RateLimitLayer::new(
        RateLimit::builder("seams.rate.tower")
            .rate(Rate::per_second(1))
            .burst(1),
    )
    .unwrap();
    let breaker =
        BreakerLayer::new(Breaker::builder("seams.rate.tower_breaker").error_threshold(2)).unwrap();
    let mut svc = limit.layer(breaker.layer(service_fn(|_: ()| async {
        Err::<(), _>(std::io::Error::other("down"))
    })));
    assert_eq!(
        svc.ready()
            .await
            .unwrap()
            .call(())
            .await
            .unwrap_err()
            .to_string(),
        "down"
    );
    for _ in 0..3 {
        let error = svc.ready().await.unwrap().call(()).await.unwrap_err();
        assert!(rejected(&error).is_rate_limited());
    }
    assert_eq!(
        breaker::get("seams.rate.tower_breaker").unwrap().state(),
        State::Closed
    );
}

#[resiliency::rate_limit(
    name = "seams.rate.metrics",
    rate = "2/s",
    burst = 1,
    max_wait = "600ms"
)]
async fn rate_metered() -> Result<(), BoxError> {
    Ok(())
}

/// Each call counts once: `admitted` at once, `waited` after its wait, `refused`.
#[tokio::test(start_paused = true)]
async fn rate_limit__metrics() {
    init();
    let name = "seams.rate.metrics";
    let calls = |outcome| {
        metric(
            resiliency::metrics::RATE_LIMIT_CALLS,
            &[("name", name), ("outcome", outcome)],
        )
    };
    let (a, b, c) = tokio::join!(rate_metered(), rate_metered(), rate_metered());
    assert!(a.is_ok() && b.is_ok());
    assert!(rejected(&c.unwrap_err()).is_rate_limited());
    assert_eq!(
        (calls("admitted"), calls("waited"), calls("refused")),
        (1.0, 1.0, 1.0)
    );
}

#[resiliency::race_retry(
    name = "seams.rate.cap",
    retries = 2,
    after = "50ms",
    total = "5s",
    max_attempts_in_flight = 1
)]
#[resiliency::rate_limit(
    name = "seams.rate.cap_limit",
    rate = "5/s",
    burst = 1,
    max_wait = "1s"
)]
async fn rate_cap(attempts: &AtomicU32) -> Result<u32, BoxError> {
    let n = attempts.fetch_add(1, Ordering::SeqCst);
    if n == 0 {
        Err("first".into())
    } else {
        Ok(n)
    }
}

/// Attempts capped at one in flight, each taking a permit: the second attempt waits for its
/// permit inside its slot, then runs.
#[tokio::test(start_paused = true)]
async fn rate_limit__attempt_cap() {
    init();
    let attempts = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(rate_cap(&attempts).await.unwrap(), 1);
    assert!(start.elapsed() >= ms(200), "{:?}", start.elapsed());
}
