#![cfg(feature = "metrics")]
//! The `metrics` feature's exporter on its own: values reach the recorder within
//! [`EXPORT_PERIOD`] with no `flush` (nothing in this binary calls it), with no runtime or one
//! without a time driver, and the exporter goes on past a recorder that panics.
//!
//! The debugging recorder is the global one; a snapshot resets the counters it reads, and the
//! exporter gives them their totals again at each export, so [`seen`] keeps the largest total
//! each snapshot showed (a counter's total never goes down).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use metrics::{Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder};
use metrics::{SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use resiliency::metrics::{self as series, EXPORT_PERIOD};
use resiliency::{too_busy, Breaker, Rejected};

mod support;
use support::BoxError;

static SNAPSHOTTER: LazyLock<Snapshotter> = LazyLock::new(|| {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("no other recorder in this binary");
    snapshotter
});

/// A series: its name and sorted labels.
type Series = (String, Vec<(String, String)>);

/// Every counter's largest total seen.
static TOTALS: LazyLock<Mutex<HashMap<Series, u64>>> = LazyLock::new(Default::default);

/// The total of the counter `name{labels}` the recorder has shown so far (0 if none).
fn seen(name: &str, labels: &[(&str, &str)]) -> u64 {
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    for (key, _, _, value) in SNAPSHOTTER.snapshot().into_vec() {
        if let DebugValue::Counter(n) = value {
            let key = key.key();
            let mut labels: Vec<_> = key
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            labels.sort();
            let total = totals.entry((key.name().to_string(), labels)).or_default();
            *total = (*total).max(n);
        }
    }
    let mut wanted: Vec<_> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    wanted.sort();
    totals
        .get(&(name.to_string(), wanted))
        .copied()
        .unwrap_or(0)
}

/// How late a value may reach the recorder past the period, for a loaded machine to wake the
/// exporter's thread and this test's.
const SLACK: Duration = Duration::from_millis(400);

/// Waits until the counter `name{labels}` shows `total`, returning how long that took; fails
/// once a period and the slack have gone by.
fn reaches(name: &str, labels: &[(&str, &str)], total: u64) -> Duration {
    let start = Instant::now();
    loop {
        let now = seen(name, labels);
        if now == total {
            return start.elapsed();
        }
        assert!(
            start.elapsed() <= EXPORT_PERIOD + SLACK,
            "{name}{labels:?} shows {now}, not {total}, {:?} after the calls",
            start.elapsed()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for a breaker's count of `outcome` to reach `total`.
fn breaker_reaches(name: &str, outcome: &str, total: u64) -> Duration {
    reaches(
        series::BREAKER_CALLS,
        &[("name", name), ("outcome", outcome)],
        total,
    )
}

#[too_busy(max_in_flight = 4)]
fn guarded() -> Result<(), Rejected> {
    Ok(())
}

/// Blocking calls on a thread with no runtime: their counts reach the recorder within the
/// period, with no `flush`.
#[test]
fn a_value_reaches_the_recorder_within_the_period_without_a_runtime_or_flush() {
    LazyLock::force(&SNAPSHOTTER);
    let name = "export.no_runtime";
    let b = Breaker::builder(name).build().unwrap();
    for round in 1..=3u64 {
        for _ in 0..5 {
            b.call_blocking(|| Ok::<_, BoxError>(())).unwrap();
            guarded().unwrap();
        }
        let took = breaker_reaches(name, "success", 5 * round);
        assert!(took <= EXPORT_PERIOD + SLACK, "{took:?}");
        let guard = format!("{}::guarded", module_path!());
        reaches(
            series::TOO_BUSY_CALLS,
            &[("name", &guard), ("outcome", "admitted")],
            5 * round,
        );
    }
}

/// Calls on a runtime without a time driver: counted and exported as on any other.
#[test]
fn a_runtime_without_a_time_driver_exports_too() {
    LazyLock::force(&SNAPSHOTTER);
    let name = "export.no_time_driver";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let b = Breaker::builder(name).build().unwrap();
    runtime.block_on(async {
        for _ in 0..3 {
            b.call(async { Ok::<_, BoxError>(()) }).await.unwrap();
        }
    });
    breaker_reaches(name, "success", 3);
}

/// A recorder whose counters panic at every update.
struct PanickingRecorder(Arc<AtomicUsize>);

struct PanickingCounter(Arc<AtomicUsize>);

impl CounterFn for PanickingCounter {
    fn increment(&self, _: u64) {
        self.0.fetch_add(1, Ordering::Relaxed);
        panic!("the recorder panics");
    }
    fn absolute(&self, _: u64) {
        self.0.fetch_add(1, Ordering::Relaxed);
        panic!("the recorder panics");
    }
}

impl Recorder for PanickingRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(PanickingCounter(self.0.clone())))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// The exporter's thread meets counters that panic at every export, and goes on: another
/// site's values still reach the recorder within the period.
#[test]
fn the_exporter_survives_a_recorder_that_panics() {
    LazyLock::force(&SNAPSHOTTER);
    let panics = Arc::new(AtomicUsize::new(0));
    let recorder = PanickingRecorder(panics.clone());
    let broken = metrics::with_local_recorder(&recorder, || {
        Breaker::builder("export.panicking").build().unwrap()
    });
    broken.call_blocking(|| Ok::<_, BoxError>(())).unwrap();
    let start = Instant::now();
    while panics.load(Ordering::Relaxed) < 2 {
        assert!(
            start.elapsed() <= 2 * EXPORT_PERIOD + SLACK,
            "the exporter never exported to the panicking recorder"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Two periods seen through panics: the exporter is still there for the next values.
    let name = "export.after_panics";
    let b = Breaker::builder(name).build().unwrap();
    b.call_blocking(|| Ok::<_, BoxError>(())).unwrap();
    breaker_reaches(name, "success", 1);
}
