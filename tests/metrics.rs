#![cfg(feature = "metrics")]
//! The `metrics` feature end to end: every series the `resiliency::metrics` docs list, read from
//! `metrics-util`'s `DebuggingRecorder` installed as the global recorder, moving as documented.
//!
//! The recorder is installed by [`install`], which every test calls before it creates a site
//! (handles are registered when a site is created). Each test uses sites of its own name, since
//! the tests of this binary run in parallel on one recorder. [`Seen`] flushes the exporter
//! (`resiliency::metrics::flush`) and takes a snapshot of the debugging recorder at once, which
//! reads every value and resets it: a counter is the total the flush gave it (`absolute`), the
//! in-flight gauge the level the flush set, a gauge moved at each change (the state gauge) the sum
//! of every snapshot's moves, and a histogram every sample flushed so far.

use std::collections::HashMap;
use std::future::pending;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use futures::FutureExt;
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use resiliency::breaker::State;
use resiliency::metrics as series;
use resiliency::too_busy::TooBusy;
use resiliency::{breaker, race_retry, too_busy, Breaker, Rejected};
use tokio::sync::oneshot;
use tokio::time::sleep;

mod support;
use support::{current_thread, ms, poll_once, secs, BoxError};

// ---------------------------------------------------------------------------------------------
// Reading the recorder

type Labels = Vec<(String, String)>;

/// Every series seen so far, by name and (sorted) labels.
#[derive(Clone, Default)]
struct Seen {
    /// Counters' totals and gauges' levels: a counter's and the in-flight gauge's as the latest
    /// flush gave them, a moved gauge's the sum of every snapshot's moves.
    values: HashMap<(String, Labels), f64>,
    /// The largest value a snapshot saw (for a gauge that is set rather than moved).
    peaks: HashMap<(String, Labels), f64>,
    /// The value of the latest snapshot in which a gauge was not 0: each snapshot swaps a
    /// gauge's value for 0, so this is the value it was last set to (unless that was 0).
    last_set: HashMap<(String, Labels), f64>,
    histograms: HashMap<(String, Labels), Vec<f64>>,
}

static SNAPSHOTTER: LazyLock<Snapshotter> = LazyLock::new(|| {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("no other recorder in this binary");
    snapshotter
});

static SEEN: LazyLock<Mutex<Seen>> = LazyLock::new(Default::default);

/// Installs the debugging recorder as the global one (once per binary).
fn install() {
    LazyLock::force(&SNAPSHOTTER);
}

fn labels_of(labels: &[(&str, &str)]) -> Labels {
    let mut labels: Labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.sort();
    labels
}

impl Seen {
    /// Flushes, takes a snapshot and adds it up: every series seen so far.
    fn now() -> Seen {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        // Under the lock: no other test's snapshot resets what this flush exports.
        series::flush();
        for (key, _, _, value) in SNAPSHOTTER.snapshot().into_vec() {
            let key = key.key();
            let mut labels: Labels = key
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            labels.sort();
            let id = (key.name().to_string(), labels);
            match value {
                // The flush gave every counter its total.
                DebugValue::Counter(n) => {
                    seen.values.insert(id, n as f64);
                }
                // The flush set the in-flight level.
                DebugValue::Gauge(v) if id.0 == series::TOO_BUSY_IN_FLIGHT => {
                    seen.values.insert(id, v.0);
                }
                DebugValue::Gauge(v) => {
                    let peak = seen.peaks.entry(id.clone()).or_insert(f64::MIN);
                    *peak = peak.max(v.0);
                    if v.0 != 0.0 {
                        seen.last_set.insert(id.clone(), v.0);
                    }
                    *seen.values.entry(id).or_default() += v.0;
                }
                DebugValue::Histogram(samples) => seen
                    .histograms
                    .entry(id)
                    .or_default()
                    .extend(samples.iter().map(|s| s.0)),
            }
        }
        seen.clone()
    }

    /// The value of a registered series; panics when it was never registered.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let id = (name.to_string(), labels_of(labels));
        *self
            .values
            .get(&id)
            .unwrap_or_else(|| panic!("no series {name}{labels:?}"))
    }

    fn peak(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let id = (name.to_string(), labels_of(labels));
        *self
            .peaks
            .get(&id)
            .unwrap_or_else(|| panic!("no series {name}{labels:?}"))
    }

    /// What a gauge that is set was last set to (0 if never set to anything else).
    fn last_set(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let id = (name.to_string(), labels_of(labels));
        self.last_set.get(&id).copied().unwrap_or(0.0)
    }

    fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        let id = (name.to_string(), labels_of(labels));
        self.histograms.get(&id).cloned().unwrap_or_default()
    }

    /// Every series of the site called `site`: (series name, labels).
    fn series_of(&self, site: &str) -> Vec<(String, Labels)> {
        let of_site = |(name, labels): &(String, Labels)| {
            labels
                .iter()
                .any(|(k, v)| k == "name" && v == site)
                .then(|| (name.clone(), labels.clone()))
        };
        let mut all: Vec<_> = self
            .values
            .keys()
            .chain(self.histograms.keys())
            .filter_map(of_site)
            .collect();
        all.sort();
        all.dedup();
        all
    }
}

fn calls(seen: &Seen, name: &str, outcome: &str) -> u64 {
    seen.value(
        series::BREAKER_CALLS,
        &[("name", name), ("outcome", outcome)],
    ) as u64
}

fn state(seen: &Seen, name: &str, state: &str) -> f64 {
    seen.value(series::BREAKER_STATE, &[("name", name), ("state", state)])
}

fn states(seen: &Seen, name: &str) -> [f64; 5] {
    [
        "closed",
        "open",
        "half_open",
        "forced_open",
        "forced_closed",
    ]
    .map(|s| state(seen, name, s))
}

fn transitions(seen: &Seen, name: &str, from: &str, to: &str) -> u64 {
    seen.values
        .get(&(
            series::BREAKER_TRANSITIONS.to_string(),
            labels_of(&[("name", name), ("from", from), ("to", to)]),
        ))
        .copied()
        .unwrap_or(0.0) as u64
}

async fn ok(b: &Breaker) -> Result<(), BoxError> {
    b.call(async { Ok::<_, BoxError>(()) }).await
}

async fn fail(b: &Breaker) -> Result<(), BoxError> {
    b.call(async { Err::<(), BoxError>("down".into()) }).await
}

// ---------------------------------------------------------------------------------------------
// Breakers

#[tokio::test(start_paused = true)]
async fn breaker_calls_count_by_outcome() {
    install();
    let name = "metrics.breaker.outcomes";
    let b = Breaker::builder(name)
        .error_threshold(100)
        .timeout(ms(100))
        .build()
        .unwrap();
    let seen = Seen::now();
    for outcome in ["success", "error", "ignored", "refused", "timed_out"] {
        assert_eq!(
            calls(&seen, name, outcome),
            0,
            "{outcome} registered at zero"
        );
    }

    for _ in 0..3 {
        ok(&b).await.unwrap();
    }
    for _ in 0..2 {
        assert!(fail(&b).await.is_err());
    }
    let ignored = b
        .call_if(|_: &BoxError| false, async {
            Err::<(), BoxError>("not counted".into())
        })
        .await;
    assert!(ignored.is_err());
    let timed_out = b.call(pending::<Result<(), BoxError>>()).await;
    assert!(support::rejected(&timed_out.unwrap_err()).is_timeout());
    let panicked =
        AssertUnwindSafe(b.call(async { panic!("the body panics") as Result<(), BoxError> }))
            .catch_unwind()
            .await;
    assert!(panicked.is_err());
    b.force_open();
    for _ in 0..4 {
        assert!(support::rejected(&ok(&b).await.unwrap_err()).is_circuit_open());
    }
    b.reset();

    let seen = Seen::now();
    assert_eq!(calls(&seen, name, "success"), 3);
    assert_eq!(calls(&seen, name, "error"), 3, "two errors and a panic");
    assert_eq!(calls(&seen, name, "ignored"), 1);
    assert_eq!(calls(&seen, name, "timed_out"), 1);
    assert_eq!(calls(&seen, name, "refused"), 4);
}

/// Slow calls are an outcome of their own, never errors (nor successes); an opening at
/// `slow_call_rate` shows as a transition with no error counted.
#[tokio::test(start_paused = true)]
async fn breaker_slow_calls_are_their_own_outcome() {
    install();
    let name = "metrics.breaker.slow";
    let b = Breaker::builder(name)
        .failure_rate(0.5)
        .min_calls(2)
        .slow_call_duration(ms(50))
        .slow_call_rate(1.0)
        .build()
        .unwrap();
    for _ in 0..2 {
        let slow = b.call(async {
            sleep(ms(60)).await;
            Ok::<_, BoxError>(())
        });
        slow.await.unwrap();
    }
    assert_eq!(b.state(), State::Open);
    let seen = Seen::now();
    assert_eq!(calls(&seen, name, "slow"), 2);
    assert_eq!(calls(&seen, name, "error"), 0);
    assert_eq!(calls(&seen, name, "success"), 0);
    assert_eq!(transitions(&seen, name, "closed", "open"), 1);
}

#[tokio::test(start_paused = true)]
async fn breaker_transitions_move_the_state_gauge() {
    install();
    let name = "metrics.breaker.transitions";
    let b = Breaker::builder(name)
        .error_threshold(2)
        .error_timeout(secs(5))
        .success_threshold(1)
        .build()
        .unwrap();
    assert_eq!(states(&Seen::now(), name), [1.0, 0.0, 0.0, 0.0, 0.0]);

    assert!(fail(&b).await.is_err());
    assert!(fail(&b).await.is_err());
    assert_eq!(b.state(), State::Open);
    let seen = Seen::now();
    assert_eq!(states(&seen, name), [0.0, 1.0, 0.0, 0.0, 0.0]);
    assert_eq!(transitions(&seen, name, "closed", "open"), 1);
    assert!(ok(&b).await.is_err());
    assert_eq!(calls(&Seen::now(), name, "refused"), 1);

    // The probe: open -> half_open when it is admitted, half_open -> closed when it succeeds.
    sleep(secs(5)).await;
    {
        let mut probe = pin!(b.call(async {
            sleep(ms(10)).await;
            Ok::<_, BoxError>(())
        }));
        assert!(poll_once(probe.as_mut()).await.is_pending());
        let seen = Seen::now();
        assert_eq!(states(&seen, name), [0.0, 0.0, 1.0, 0.0, 0.0]);
        assert_eq!(transitions(&seen, name, "open", "half_open"), 1);
        probe.await.unwrap();
    }
    let seen = Seen::now();
    assert_eq!(states(&seen, name), [1.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(transitions(&seen, name, "half_open", "closed"), 1);

    b.force_open();
    assert_eq!(states(&Seen::now(), name), [0.0, 0.0, 0.0, 1.0, 0.0]);
    b.force_closed();
    assert_eq!(states(&Seen::now(), name), [0.0, 0.0, 0.0, 0.0, 1.0]);
    b.reset();
    let seen = Seen::now();
    assert_eq!(states(&seen, name), [1.0, 0.0, 0.0, 0.0, 0.0]);
    for (from, to) in [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
        ("closed", "forced_open"),
        ("forced_open", "forced_closed"),
        ("forced_closed", "closed"),
    ] {
        assert_eq!(transitions(&seen, name, from, to), 1, "{from} -> {to}");
    }
    assert_eq!(transitions(&seen, name, "half_open", "open"), 0);

    // A breaker dropped stops counting; one made again under the name counts again.
    drop(b);
    assert_eq!(states(&Seen::now(), name), [0.0; 5]);
    let again = Breaker::builder(name).build().unwrap();
    again.force_open();
    assert_eq!(states(&Seen::now(), name), [0.0, 0.0, 0.0, 1.0, 0.0]);
}

#[tokio::test(start_paused = true)]
async fn a_keyed_family_is_labelled_by_its_name_and_its_gauge_counts_keys() {
    install();
    let name = "metrics.breaker.keyed";
    let hosts = Breaker::builder(name)
        .error_threshold(1)
        .error_timeout(secs(60))
        .build_keyed()
        .unwrap();
    let keys = ["a.example", "b.example", "c.example", "d.example"];
    for key in keys {
        ok(&hosts.breaker(key)).await.unwrap();
    }
    assert!(fail(&hosts.breaker("a.example")).await.is_err());
    assert!(ok(&hosts.breaker("a.example")).await.is_err());

    let seen = Seen::now();
    assert_eq!(states(&seen, name), [3.0, 1.0, 0.0, 0.0, 0.0]);
    assert_eq!(calls(&seen, name, "success"), 4);
    assert_eq!(calls(&seen, name, "error"), 1);
    assert_eq!(calls(&seen, name, "refused"), 1);
    assert_eq!(transitions(&seen, name, "closed", "open"), 1);
    let family = seen.series_of(name);
    assert!(family.len() >= 11, "{family:?}");
    for (series_name, labels) in &family {
        for (key, value) in labels {
            assert!(
                ["name", "outcome", "state", "from", "to"].contains(&key.as_str()),
                "{series_name} has a label {key}"
            );
            assert!(
                !keys.contains(&value.as_str()),
                "{series_name} names a key: {labels:?}"
            );
        }
    }

    // Eviction: the three closed keys go, the open one stays.
    assert_eq!(hosts.evict_idle() + hosts.evict_idle(), 3);
    assert_eq!(hosts.len(), 1);
    assert_eq!(states(&Seen::now(), name), [0.0, 1.0, 0.0, 0.0, 0.0]);
    // A key used again is a new breaker, counted as closed.
    ok(&hosts.breaker("b.example")).await.unwrap();
    assert_eq!(states(&Seen::now(), name), [1.0, 1.0, 0.0, 0.0, 0.0]);
    drop(hosts);
    assert_eq!(states(&Seen::now(), name), [0.0; 5]);
}

#[breaker(error_threshold = 1, error_timeout = "1s")]
async fn through_the_attribute(fails: bool) -> Result<(), BoxError> {
    if fails {
        Err("down".into())
    } else {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn an_attribute_site_reports_under_its_name() {
    install();
    through_the_attribute(false).await.unwrap();
    assert!(through_the_attribute(true).await.is_err());
    assert!(through_the_attribute(false).await.is_err());
    let name = format!("{}::through_the_attribute", module_path!());
    let seen = Seen::now();
    assert_eq!(calls(&seen, &name, "success"), 1);
    assert_eq!(calls(&seen, &name, "error"), 1);
    assert_eq!(calls(&seen, &name, "refused"), 1);
    assert_eq!(states(&seen, &name), [0.0, 1.0, 0.0, 0.0, 0.0]);
}

/// A recorder with a bug: it panics registering handles (`on_register`), or in every handle it
/// hands out.
/// Its handles panic until the test is over (`armed` false), so that the exporter, which goes on
/// exporting to them, does not fill later tests' output with panics.
struct PanickingRecorder {
    on_register: bool,
    panics: Arc<AtomicUsize>,
    armed: Arc<AtomicBool>,
}

struct PanickingHandle(Arc<AtomicUsize>, Arc<AtomicBool>);

impl PanickingHandle {
    fn panic(&self) {
        if self.1.load(Ordering::Relaxed) {
            self.0.fetch_add(1, Ordering::Relaxed);
            panic!("the recorder panics");
        }
    }
}

impl CounterFn for PanickingHandle {
    fn increment(&self, _: u64) {
        self.panic()
    }
    fn absolute(&self, _: u64) {
        self.panic()
    }
}

impl GaugeFn for PanickingHandle {
    fn increment(&self, _: f64) {
        self.panic()
    }
    fn decrement(&self, _: f64) {
        self.panic()
    }
    fn set(&self, _: f64) {
        self.panic()
    }
}

impl HistogramFn for PanickingHandle {
    fn record(&self, _: f64) {
        self.panic()
    }
}

impl PanickingRecorder {
    fn handle(&self) -> Arc<PanickingHandle> {
        if self.on_register {
            self.panics.fetch_add(1, Ordering::Relaxed);
            panic!("the recorder panics registering");
        }
        Arc::new(PanickingHandle(self.panics.clone(), self.armed.clone()))
    }
}

impl Recorder for PanickingRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {
        self.panics.fetch_add(1, Ordering::Relaxed);
        panic!("the recorder panics describing");
    }
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.handle())
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.handle())
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.handle())
    }
}

/// A breaker whose recorder panics (registering, or on every update) goes through every state as
/// its rules say, and its calls return what they should.
#[tokio::test(start_paused = true)]
async fn a_panicking_recorder_leaves_the_breaker_consistent() {
    install();
    for on_register in [false, true] {
        let panics = Arc::new(AtomicUsize::new(0));
        let armed = Arc::new(AtomicBool::new(true));
        let recorder = PanickingRecorder {
            on_register,
            panics: panics.clone(),
            armed: armed.clone(),
        };
        let name = if on_register {
            "metrics.breaker.panicking_registration"
        } else {
            "metrics.breaker.panicking_updates"
        };
        let b = metrics::with_local_recorder(&recorder, || {
            Breaker::builder(name)
                .error_threshold(1)
                .error_timeout(secs(1))
                .build()
                .unwrap()
        });
        let changes = Arc::new(Mutex::new(Vec::new()));
        let log = changes.clone();
        let id = breaker::subscribe(move |change| {
            if &*change.name == name {
                log.lock().unwrap().push((change.from, change.to));
            }
        });
        ok(&b).await.unwrap();
        assert!(fail(&b).await.is_err());
        assert_eq!(b.state(), State::Open);
        assert!(support::rejected(&ok(&b).await.unwrap_err()).is_circuit_open());
        sleep(secs(1)).await;
        ok(&b).await.unwrap();
        assert_eq!(b.state(), State::Closed);
        b.force_open();
        assert!(ok(&b).await.is_err());
        b.reset();
        ok(&b).await.unwrap();
        breaker::unsubscribe(id);
        // The calls' counts reach the recorder at an export, where the handles panic; the
        // exporter goes on through every one.
        series::flush();
        assert_eq!(
            *changes.lock().unwrap(),
            [
                (State::Closed, State::Open),
                (State::Open, State::HalfOpen),
                (State::HalfOpen, State::Closed),
                (State::Closed, State::ForcedOpen),
                (State::ForcedOpen, State::Closed),
            ]
        );
        assert!(
            panics.load(Ordering::Relaxed) >= 10,
            "the recorder panicked {} times",
            panics.load(Ordering::Relaxed)
        );
        drop(b);
        armed.store(false, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------------------------------------
// too_busy

fn busy_calls(seen: &Seen, name: &str, outcome: &str) -> u64 {
    seen.value(
        series::TOO_BUSY_CALLS,
        &[("name", name), ("outcome", outcome)],
    ) as u64
}

fn busy_refused(seen: &Seen, name: &str, signal: &str) -> u64 {
    seen.value(
        series::TOO_BUSY_REFUSED,
        &[("name", name), ("signal", signal)],
    ) as u64
}

fn in_flight(seen: &Seen, name: &str) -> f64 {
    seen.value(series::TOO_BUSY_IN_FLIGHT, &[("name", name)])
}

#[too_busy(max_in_flight = 2)]
async fn two_at_a_time(release: oneshot::Receiver<()>) -> Result<(), Rejected> {
    let _ = release.await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn too_busy_counts_in_flight_calls_and_refusals_by_signal() {
    install();
    let name = format!("{}::two_at_a_time", module_path!());
    let (a_go, a_wait) = oneshot::channel();
    let (b_go, b_wait) = oneshot::channel();
    let mut a = pin!(two_at_a_time(a_wait));
    let mut b = pin!(two_at_a_time(b_wait));
    assert!(poll_once(a.as_mut()).await.is_pending());
    assert_eq!(in_flight(&Seen::now(), &name), 1.0);
    assert!(poll_once(b.as_mut()).await.is_pending());
    assert_eq!(in_flight(&Seen::now(), &name), 2.0);
    for _ in 0..3 {
        let (_go, wait) = oneshot::channel();
        assert!(two_at_a_time(wait).await.unwrap_err().is_too_busy());
    }
    let seen = Seen::now();
    assert_eq!(busy_calls(&seen, &name, "admitted"), 2);
    assert_eq!(busy_calls(&seen, &name, "refused"), 3);
    assert_eq!(busy_refused(&seen, &name, "in_flight"), 3);
    assert_eq!(busy_refused(&seen, &name, "lag"), 0);
    assert_eq!(busy_refused(&seen, &name, "latency"), 0);

    a_go.send(()).unwrap();
    a.await.unwrap();
    assert_eq!(in_flight(&Seen::now(), &name), 1.0);
    drop(b_go);
    b.await.unwrap();
    // A call dropped while it runs gives its slot back, in the gauge too.
    let (go, wait) = oneshot::channel();
    {
        let mut c = pin!(two_at_a_time(wait));
        assert!(poll_once(c.as_mut()).await.is_pending());
        assert_eq!(in_flight(&Seen::now(), &name), 1.0);
    }
    drop(go);
    let seen = Seen::now();
    assert_eq!(in_flight(&seen, &name), 0.0);
    assert_eq!(busy_calls(&seen, &name, "admitted"), 3);
    // No max_latency: no latency measured, so no samples.
    assert!(seen
        .histogram(series::TOO_BUSY_CALL_DURATION, &[("name", &name)])
        .is_empty());
}

static SLOW: LazyLock<TooBusy> = LazyLock::new(|| {
    TooBusy::builder("metrics.too_busy.latency")
        .max_latency(ms(10))
        .build()
        .unwrap()
});

#[tokio::test(start_paused = true)]
async fn too_busy_records_call_durations_where_it_measures_latency() {
    install();
    let name = "metrics.too_busy.latency";
    let slow = || {
        SLOW.call(async {
            sleep(ms(50)).await;
            Ok::<_, Rejected>(())
        })
    };
    slow().await.unwrap();
    let refused = slow().await.unwrap_err();
    assert!(refused.is_too_busy(), "{refused}");
    let seen = Seen::now();
    assert_eq!(busy_calls(&seen, name, "admitted"), 1);
    assert_eq!(busy_calls(&seen, name, "refused"), 1);
    assert_eq!(busy_refused(&seen, name, "latency"), 1);
    assert_eq!(
        seen.histogram(series::TOO_BUSY_CALL_DURATION, &[("name", name)]),
        [0.05]
    );
    // Without max_in_flight, calls in flight are not counted.
    assert_eq!(in_flight(&seen, name), 0.0);
}

fn has_series(seen: &Seen, series: &str, site: &str) -> bool {
    seen.series_of(site).iter().any(|(name, _)| name == series)
}

/// `resiliency_too_busy_in_flight_limit` is the limit of guards that have one: a guard with no
/// `max_in_flight` exports no such series (not a limit of 0), and one whose limit is switched
/// off at run time reads NaN, no value.
#[tokio::test(start_paused = true)]
async fn the_in_flight_limit_gauge_is_only_for_guards_with_a_limit() {
    install();
    let name = "metrics.too_busy.no_limit";
    let guard = TooBusy::builder(name)
        .max_latency(ms(10))
        .register()
        .unwrap();
    guard.call(async { Ok::<_, Rejected>(()) }).await.unwrap();
    let seen = Seen::now();
    assert_eq!(busy_calls(&seen, name, "admitted"), 1);
    assert!(
        !has_series(&seen, series::TOO_BUSY_IN_FLIGHT_LIMIT, name),
        "{:?}",
        seen.series_of(name)
    );

    let name = "metrics.too_busy.limit_switched_off";
    let guard = TooBusy::builder(name).max_in_flight(4).register().unwrap();
    guard.call(async { Ok::<_, Rejected>(()) }).await.unwrap();
    let limit = |seen: &Seen| seen.last_set(series::TOO_BUSY_IN_FLIGHT_LIMIT, &[("name", name)]);
    assert_eq!(limit(&Seen::now()), 4.0);
    resiliency::settings::set(
        resiliency::settings::Policy::TooBusy,
        name,
        "max_in_flight",
        "off",
    )
    .unwrap();
    assert!(limit(&Seen::now()).is_nan(), "no limit, no value");
    resiliency::settings::set(
        resiliency::settings::Policy::TooBusy,
        name,
        "max_in_flight",
        6,
    )
    .unwrap();
    assert_eq!(limit(&Seen::now()), 6.0);
}

/// A guard that learned its limit (`"auto"`) and is then given a fixed one at run time exports
/// the fixed one, even as calls admitted while it learned finish and close the learner's window.
#[tokio::test(start_paused = true)]
async fn the_in_flight_limit_gauge_follows_a_switch_from_auto_to_a_fixed_limit() {
    install();
    let name = "metrics.too_busy.auto_to_fixed";
    let guard = TooBusy::builder(name)
        .max_in_flight_auto()
        .auto_min(2)
        .auto_initial(10)
        .register()
        .unwrap();
    let limit = |seen: &Seen| seen.last_set(series::TOO_BUSY_IN_FLIGHT_LIMIT, &[("name", name)]);
    assert_eq!(guard.in_flight_limit(), Some(10));
    // Ten calls hold the ten slots (pressing against the learned limit) and more are refused.
    let (release, hold) = tokio::sync::watch::channel(false);
    let mut held = Vec::new();
    for _ in 0..10 {
        let mut hold = hold.clone();
        let mut call = Box::pin(guard.call(async move {
            let _ = hold.wait_for(|go| *go).await;
            Ok::<_, Rejected>(())
        }));
        assert!(poll_once(call.as_mut()).await.is_pending());
        held.push(call);
    }
    for _ in 0..20 {
        let refused = guard.call(async { Ok::<_, Rejected>(()) }).await;
        assert!(refused.unwrap_err().is_too_busy());
    }
    // Long enough for ten calls to close a window.
    sleep(ms(1_500)).await;
    assert_eq!(limit(&Seen::now()), 10.0);

    resiliency::settings::set(
        resiliency::settings::Policy::TooBusy,
        name,
        "max_in_flight",
        50,
    )
    .unwrap();
    assert_eq!(guard.in_flight_limit(), Some(50));
    release.send(true).unwrap();
    for call in held {
        call.await.unwrap();
    }
    assert_eq!(guard.in_flight_limit(), Some(50));
    assert_eq!(
        limit(&Seen::now()),
        50.0,
        "the gauge reads the limit in force"
    );
}

#[too_busy(name = "metrics.too_busy.named", max_in_flight = 2)]
async fn named_guard() -> Result<(), Rejected> {
    Ok(())
}

#[race_retry(name = "metrics.race.named", retries = 1, after = "10ms", total = "1s")]
async fn named_race() -> Result<u32, BoxError> {
    Ok(1)
}

/// A site given a `name` reports under that name, not under the fn's path.
#[tokio::test(start_paused = true)]
async fn named_sites_report_under_their_names() {
    install();
    named_guard().await.unwrap();
    named_race().await.unwrap();
    let seen = Seen::now();
    assert_eq!(busy_calls(&seen, "metrics.too_busy.named", "admitted"), 1);
    assert_eq!(
        seen.last_set(
            series::TOO_BUSY_IN_FLIGHT_LIMIT,
            &[("name", "metrics.too_busy.named")]
        ),
        2.0
    );
    assert_eq!(race_calls(&seen, "metrics.race.named", "success"), 1);
    let by_path = |function: &str| format!("{}::{function}", module_path!());
    assert!(seen.series_of(&by_path("named_guard")).is_empty());
    assert!(seen.series_of(&by_path("named_race")).is_empty());
}

#[race_retry(
    name = "metrics.race.layered",
    retries = 1,
    after = "10ms",
    total = "1s"
)]
async fn layered_race() -> Result<u32, BoxError> {
    Ok(1)
}

/// A `RaceRetryLayer` of a `#[race_retry]` fn's name drives that fn's policy: its calls are
/// counted in the same series, beside the fn's own.
#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn a_layer_of_an_attribute_sites_name_reports_in_its_series() {
    use resiliency::race_retry::{After, RaceRetry};
    use resiliency::tower::RaceRetryLayer;
    use tower::{Layer, Service, ServiceExt};

    install();
    let name = "metrics.race.layered";
    layered_race().await.unwrap();
    let options = RaceRetry::builder(name)
        .retries(1)
        .after(After::Fixed(ms(10)))
        .total(secs(1));
    let layer = RaceRetryLayer::new(options).unwrap();
    assert!(std::ptr::eq(layer.policy(), race_retry::get(name).unwrap()));
    let mut service = layer.layer(tower::service_fn(
        |n: u32| async move { Ok::<_, BoxError>(n) },
    ));
    assert_eq!(service.ready().await.unwrap().call(2).await.unwrap(), 2);
    let seen = Seen::now();
    assert_eq!(
        race_calls(&seen, name, "success"),
        2,
        "the fn's call and the layer's"
    );
}

#[too_busy(max_lag = "20ms")]
async fn on_a_stalled_runtime() -> Result<(), Rejected> {
    Ok(())
}

/// In real time (a paused clock shows no lag): the thread that drives the runtime is blocked, the
/// lag gauge rises above `max_lag`, and every refusal is counted under `signal="lag"`.
#[test]
fn too_busy_reports_the_lag_and_lag_refusals() {
    install();
    let name = format!("{}::on_a_stalled_runtime", module_path!());
    current_thread().block_on(async {
        for _ in 0..15 {
            on_a_stalled_runtime()
                .await
                .expect("an idle runtime refused a call");
            sleep(ms(10)).await;
        }
        let stalls = tokio::spawn(async {
            for _ in 0..3 {
                std::thread::sleep(ms(400));
                sleep(ms(100)).await;
            }
        });
        let (mut accepted, mut refused) = (15u64, 0u64);
        let mut peak = 0.0f64;
        while !stalls.is_finished() {
            match on_a_stalled_runtime().await {
                Ok(()) => accepted += 1,
                Err(rejected) => {
                    assert!(rejected.is_too_busy());
                    refused += 1;
                }
            }
            let seen = Seen::now();
            peak = peak.max(seen.peak(series::TOO_BUSY_LAG, &[]));
            sleep(ms(10)).await;
        }
        stalls.await.unwrap();
        assert!(refused > 0, "no call was refused while the runtime stalled");
        assert!(
            peak > 0.020,
            "the lag gauge peaked at {peak} s during 400 ms stalls"
        );
        let seen = Seen::now();
        assert_eq!(busy_calls(&seen, &name, "admitted"), accepted);
        assert_eq!(busy_calls(&seen, &name, "refused"), refused);
        assert_eq!(busy_refused(&seen, &name, "lag"), refused);
        assert_eq!(busy_refused(&seen, &name, "in_flight"), 0);
    });
}

// ---------------------------------------------------------------------------------------------
// race_retry

/// What attempt k of a call does.
#[derive(Copy, Clone, Debug)]
enum Step {
    /// Answers after this many ms.
    Answer(u64),
    /// Fails after this many ms.
    Fail(u64),
    /// Never ends.
    Hang,
}

use Step::{Answer, Fail, Hang};

/// One call's script: attempt k plays `steps[k - 1]`.
struct Script {
    steps: Vec<Step>,
    next: AtomicUsize,
}

impl Script {
    fn new(steps: &[Step]) -> Self {
        Script {
            steps: steps.to_vec(),
            next: AtomicUsize::new(0),
        }
    }

    async fn attempt(&self) -> Result<u32, BoxError> {
        let k = self.next.fetch_add(1, Ordering::SeqCst);
        match self.steps[k] {
            Answer(after) => {
                sleep(ms(after)).await;
                Ok(k as u32 + 1)
            }
            Fail(after) => {
                sleep(ms(after)).await;
                Err(format!("attempt {} failed", k + 1).into())
            }
            Hang => pending().await,
        }
    }
}

#[race_retry(retries = 2, after = "100ms", total = "450ms", backoff = "off")]
async fn raced(script: &Script) -> Result<u32, BoxError> {
    script.attempt().await
}

#[race_retry(retries = 2, after = "100ms", total = "450ms")]
async fn raced_at_once(panics: bool) -> Result<u32, BoxError> {
    assert!(!panics, "attempt 1 panics");
    Ok(1)
}

/// A call whose attempt 1 answers at its first poll counts as an attempt, a success and a win of
/// attempt 1 (one count on its path, in three series); one whose attempt 1 panics there, as an
/// attempt alone.
#[tokio::test(start_paused = true)]
async fn race_counts_calls_answered_at_once_and_an_attempt_that_panics_at_once() {
    install();
    let name = format!("{}::raced_at_once", module_path!());
    for _ in 0..3 {
        assert_eq!(raced_at_once(false).await.unwrap(), 1);
    }
    let panicked = AssertUnwindSafe(raced_at_once(true)).catch_unwind().await;
    assert!(panicked.is_err());
    let seen = Seen::now();
    assert_eq!(race_calls(&seen, &name, "success"), 3);
    assert_eq!(race_calls(&seen, &name, "error"), 0);
    assert_eq!(wins(&seen, &name, "1"), 3);
    let attempts = seen.value(series::RACE_ATTEMPTS, &[("name", &name)]) as u64;
    assert_eq!(attempts, 4);
}

fn race_calls(seen: &Seen, name: &str, outcome: &str) -> u64 {
    seen.value(series::RACE_CALLS, &[("name", name), ("outcome", outcome)]) as u64
}

fn wins(seen: &Seen, name: &str, attempt: &str) -> u64 {
    seen.value(series::RACE_WINS, &[("name", name), ("attempt", attempt)]) as u64
}

#[tokio::test(start_paused = true)]
async fn race_counts_calls_attempts_and_wins_by_attempt_number() {
    install();
    let name = format!("{}::raced", module_path!());
    assert_eq!(raced(&Script::new(&[Answer(0)])).await.unwrap(), 1);
    assert_eq!(raced(&Script::new(&[Hang, Answer(10)])).await.unwrap(), 2);
    assert_eq!(
        raced(&Script::new(&[Hang, Hang, Answer(10)]))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        raced(&Script::new(&[Hang, Answer(500), Answer(0)]))
            .await
            .unwrap(),
        3
    );
    let deadline = raced(&Script::new(&[Hang, Hang, Hang])).await.unwrap_err();
    assert!(support::rejected(&deadline).is_deadline());
    let failed = raced(&Script::new(&[Fail(0), Fail(0), Fail(0)]))
        .await
        .unwrap_err();
    assert_eq!(failed.to_string(), "attempt 3 failed");

    let seen = Seen::now();
    assert_eq!(race_calls(&seen, &name, "success"), 4);
    assert_eq!(race_calls(&seen, &name, "deadline"), 1);
    assert_eq!(race_calls(&seen, &name, "error"), 1);
    assert_eq!(wins(&seen, &name, "1"), 1);
    assert_eq!(wins(&seen, &name, "2"), 1);
    assert_eq!(wins(&seen, &name, "3"), 2);
    let attempts = seen.value(series::RACE_ATTEMPTS, &[("name", &name)]) as u64;
    assert_eq!(attempts, 1 + 2 + 3 + 3 + 3 + 3);
    let stats = race_retry::stats(&name).unwrap();
    assert_eq!(attempts, 6 + stats.extra_attempts);
    assert_eq!(stats.deadlines, 1);
    assert_eq!(
        seen.value(series::RACE_BUDGET_REFUSED, &[("name", &name)]),
        0.0
    );
    // Win series exist only for the attempt numbers that won.
    let numbers: Vec<String> = seen
        .series_of(&name)
        .into_iter()
        .filter(|(series_name, _)| series_name == series::RACE_WINS)
        .flat_map(|(_, labels)| labels.into_iter().filter(|(k, _)| k == "attempt"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(numbers, ["1", "2", "3"]);
    // A fixed `after`, nothing observed: only the attempts that failed are timed (the last
    // call's three, at once); winners and the attempts cancelled are not.
    assert_eq!(
        seen.histogram(series::RACE_ATTEMPT_DURATION, &[("name", &name)]),
        [0.0; 3]
    );
}

#[race_retry(retries = 2, after = "100ms", total = "450ms", backoff = "off")]
async fn raced_observed(script: &Script) -> Result<u32, BoxError> {
    script.attempt().await
}

#[tokio::test(start_paused = true)]
async fn race_records_the_duration_of_timed_attempts() {
    install();
    let name = format!("{}::raced_observed", module_path!());
    let script = Script::new(&[Hang, Answer(30)]);
    let (answer, attempts) = race_retry::observe(raced_observed(&script)).await;
    assert_eq!(answer.unwrap(), 2);
    let mut observed: Vec<f64> = attempts.iter().map(|a| a.elapsed.as_secs_f64()).collect();
    observed.sort_by(f64::total_cmp);
    assert_eq!(observed, [0.03, 0.13]);
    let mut recorded = Seen::now().histogram(series::RACE_ATTEMPT_DURATION, &[("name", &name)]);
    recorded.sort_by(f64::total_cmp);
    assert_eq!(recorded, observed);
}

#[race_retry(retries = 1, after = "150ms", total = "450ms", backoff = "off")]
async fn in_an_outage() -> Result<u32, BoxError> {
    Err("down".into())
}

/// An outage, 300 calls 10 ms apart: the budget refuses most extra attempts, and the series says
/// as many as `race_retry::stats`.
#[tokio::test(start_paused = true)]
async fn race_counts_budget_refusals() {
    install();
    let name = format!("{}::in_an_outage", module_path!());
    for _ in 0..300 {
        assert!(in_an_outage().await.is_err());
        sleep(ms(10)).await;
    }
    let stats = race_retry::stats(&name).unwrap();
    assert!(stats.budget_refused > 200, "{stats:?}");
    let seen = Seen::now();
    assert_eq!(
        seen.value(series::RACE_BUDGET_REFUSED, &[("name", &name)]) as u64,
        stats.budget_refused
    );
    assert_eq!(
        seen.value(series::RACE_ATTEMPTS, &[("name", &name)]) as u64,
        300 + stats.extra_attempts
    );
    assert_eq!(race_calls(&seen, &name, "error"), 300);
    assert_eq!(race_calls(&seen, &name, "success"), 0);
}

fn not_worth_another(error: &BoxError) -> bool {
    error.to_string() != "fatal"
}

#[race_retry(
    retries = 2,
    after = "100ms",
    total = "450ms",
    retry_if = not_worth_another
)]
async fn raced_fatal(fatal: bool) -> Result<u32, BoxError> {
    sleep(ms(5)).await;
    if fatal {
        Err("fatal".into())
    } else {
        Err("transient".into())
    }
}

/// An error that `retry_if` says is not worth another attempt ends the call: an `error`, with
/// one attempt.
#[tokio::test(start_paused = true)]
async fn race_counts_an_error_not_worth_another_attempt_as_an_error() {
    install();
    let name = format!("{}::raced_fatal", module_path!());
    assert_eq!(raced_fatal(true).await.unwrap_err().to_string(), "fatal");
    let seen = Seen::now();
    assert_eq!(race_calls(&seen, &name, "error"), 1);
    assert_eq!(race_calls(&seen, &name, "deadline"), 0);
    assert_eq!(seen.value(series::RACE_ATTEMPTS, &[("name", &name)]), 1.0);
    assert_eq!(
        seen.histogram(series::RACE_ATTEMPT_DURATION, &[("name", &name)]),
        [0.005]
    );
}

#[race_retry(retries = 1, after = "p50", total = "450ms")]
async fn raced_learning(script: &Script) -> Result<u32, BoxError> {
    script.attempt().await
}

/// `after = "p50"`: the calls sampled for the percentile (all of the first ones) time their
/// winners, and the histogram gets each.
#[tokio::test(start_paused = true)]
async fn race_records_the_winners_of_calls_sampled_for_a_percentile() {
    install();
    let name = format!("{}::raced_learning", module_path!());
    for _ in 0..5 {
        assert_eq!(
            raced_learning(&Script::new(&[Answer(20)])).await.unwrap(),
            1
        );
    }
    let seen = Seen::now();
    assert_eq!(
        seen.histogram(series::RACE_ATTEMPT_DURATION, &[("name", &name)]),
        [0.02; 5]
    );
    assert_eq!(wins(&seen, &name, "1"), 5);
}

// ---------------------------------------------------------------------------------------------
// Blocking calls

#[breaker(
    name = "metrics.blocking.breaker",
    error_threshold = 2,
    error_timeout = "30s"
)]
fn blocking_query(ok: bool) -> Result<(), BoxError> {
    if ok {
        Ok(())
    } else {
        Err("down".into())
    }
}

#[test]
fn blocking_breaker_calls_count_by_outcome() {
    install();
    let name = "metrics.blocking.breaker";
    blocking_query(true).unwrap();
    let panicked = std::panic::catch_unwind(|| {
        breaker::get(name)
            .unwrap()
            .call_blocking(|| -> Result<(), BoxError> { panic!("the body panics") })
    });
    assert!(panicked.is_err());
    blocking_query(false).unwrap_err();
    assert!(support::rejected(&blocking_query(true).unwrap_err()).is_circuit_open());
    let seen = Seen::now();
    assert_eq!(calls(&seen, name, "success"), 1);
    assert_eq!(calls(&seen, name, "error"), 2, "an error and a panic");
    assert_eq!(calls(&seen, name, "refused"), 1);
    assert_eq!(state(&seen, name, "open"), 1.0);
}

#[too_busy(max_in_flight = 1, max_latency = "10s")]
fn blocking_render(nested: bool) -> Result<(), Rejected> {
    if nested {
        assert!(blocking_render(false).unwrap_err().is_too_busy());
    }
    Ok(())
}

#[test]
fn blocking_too_busy_counts_in_flight_calls_refusals_and_durations() {
    install();
    let name = format!("{}::blocking_render", module_path!());
    blocking_render(true).unwrap();
    let seen = Seen::now();
    assert_eq!(busy_calls(&seen, &name, "admitted"), 1);
    assert_eq!(busy_refused(&seen, &name, "in_flight"), 1);
    assert_eq!(in_flight(&seen, &name), 0.0);
    assert_eq!(
        seen.histogram(series::TOO_BUSY_CALL_DURATION, &[("name", &name)])
            .len(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Tower layers: the series of the name, with no code of their own

#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn a_tower_breaker_layer_reports_under_its_name() {
    use tower::{Layer, Service, ServiceExt};

    install();
    let name = "metrics.tower.breaker";
    let layer = resiliency::tower::BreakerLayer::new(Breaker::builder(name).error_threshold(1))
        .unwrap()
        .http_server_errors();
    let mut svc = layer.layer(tower::service_fn(|status: u16| async move {
        Ok::<_, std::convert::Infallible>(
            http::Response::builder().status(status).body(()).unwrap(),
        )
    }));
    let before = Seen::now();
    svc.ready().await.unwrap().call(200).await.unwrap();
    svc.ready().await.unwrap().call(500).await.unwrap();
    assert!(svc.ready().await.unwrap().call(200).await.is_err());
    let seen = Seen::now();
    for outcome in ["success", "error", "refused"] {
        assert_eq!(
            calls(&seen, name, outcome) - calls(&before, name, outcome),
            1,
            "{outcome}"
        );
    }
}

static LEARNING: LazyLock<TooBusy> = LazyLock::new(|| {
    TooBusy::builder("metrics.too_busy.auto")
        .max_in_flight_auto()
        .auto_initial(6)
        .build()
        .unwrap()
});

/// `max_in_flight = "auto"`: the limit gauge starts at `auto_initial` and follows the learned
/// limit (here up: 12 calls at a time press against 6, with no queue behind them).
#[tokio::test(start_paused = true)]
async fn too_busy_auto_sets_the_limit_gauge_as_it_learns() {
    install();
    let name = "metrics.too_busy.auto";
    LazyLock::force(&LEARNING);
    assert_eq!(
        Seen::now().peak(series::TOO_BUSY_IN_FLIGHT_LIMIT, &[("name", name)]),
        6.0
    );
    for _ in 0..40 {
        let calls = (0..12).map(|_| {
            LEARNING.call(async {
                sleep(ms(10)).await;
                Ok::<_, Rejected>(())
            })
        });
        futures::future::join_all(calls).await;
    }
    let limit = LEARNING.in_flight_limit().unwrap();
    assert!(limit > 6, "{limit}");
    assert_eq!(
        Seen::now().peak(series::TOO_BUSY_IN_FLIGHT_LIMIT, &[("name", name)]),
        f64::from(limit)
    );
}

// ---------------------------------------------------------------------------------------------
// Fallbacks

fn cached_metrics(_fails: bool, why: Rejected) -> Result<&'static str, BoxError> {
    assert!(why.is_circuit_open());
    Ok("cached")
}

#[breaker(
    name = "metrics-fallback",
    error_threshold = 1,
    error_timeout = "30s",
    fallback = cached_metrics
)]
async fn with_fallback(fails: bool) -> Result<&'static str, BoxError> {
    if fails {
        Err("down".into())
    } else {
        Ok("fresh")
    }
}

#[tokio::test(start_paused = true)]
async fn a_fallback_counts_as_a_fallback_never_as_a_success() {
    install();
    assert_eq!(with_fallback(false).await.unwrap(), "fresh");
    assert!(with_fallback(true).await.is_err());
    assert_eq!(with_fallback(false).await.unwrap(), "cached");
    assert_eq!(with_fallback(false).await.unwrap(), "cached");
    let seen = Seen::now();
    let name = "metrics-fallback";
    // The guarded calls: one success, one error, two refusals; the fallbacks add no success.
    assert_eq!(calls(&seen, name, "success"), 1);
    assert_eq!(calls(&seen, name, "error"), 1);
    assert_eq!(calls(&seen, name, "refused"), 2);
    assert_eq!(
        seen.value(
            series::FALLBACKS,
            &[("name", name), ("policy", "breaker"), ("cause", "refused")]
        ),
        2.0
    );
}

// ---------------------------------------------------------------------------------------------
// Counts kept per core: threads calling one site concurrently

/// Calls each of two threads makes at once: more than a stripe's buffer of durations holds, so
/// the threads hand full buffers on themselves as well as at the flush.
const CONCURRENT_CALLS: u64 = 100_000;

#[too_busy(max_in_flight = 1000, max_latency = "10s")]
fn concurrent_guarded() -> Result<(), Rejected> {
    Ok(())
}

#[test]
fn two_threads_counting_at_once_lose_nothing() {
    install();
    let name = "metrics.concurrent.breaker";
    let b = Breaker::builder(name).build().unwrap();
    let guard = format!("{}::concurrent_guarded", module_path!());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for i in 0..CONCURRENT_CALLS {
                    let _ = b.call_blocking_if(
                        |_: &BoxError| false,
                        || -> Result<(), BoxError> {
                            if i % 2 == 0 {
                                Ok(())
                            } else {
                                Err("ignored".into())
                            }
                        },
                    );
                    concurrent_guarded().unwrap();
                }
            });
        }
    });
    let seen = Seen::now();
    assert_eq!(calls(&seen, name, "success"), CONCURRENT_CALLS);
    assert_eq!(calls(&seen, name, "ignored"), CONCURRENT_CALLS);
    assert_eq!(calls(&seen, name, "error"), 0);
    assert_eq!(busy_calls(&seen, &guard, "admitted"), 2 * CONCURRENT_CALLS);
    assert_eq!(in_flight(&seen, &guard), 0.0);
    assert_eq!(
        seen.histogram(series::TOO_BUSY_CALL_DURATION, &[("name", &guard)])
            .len() as u64,
        2 * CONCURRENT_CALLS
    );
}
