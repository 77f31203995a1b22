//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use resiliency::Rejected;

/// The error type of most test fns: anything, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The `Rejected` inside a boxed error; panics with the error when it is something else.
pub fn rejected(error: &BoxError) -> &Rejected {
    error
        .downcast_ref::<Rejected>()
        .unwrap_or_else(|| panic!("expected a Rejected, got {error:?}"))
}

/// An executor that is not tokio (`futures`' own): polls on the calling thread, parks until woken.
pub fn block_on_without_tokio<F: Future>(fut: F) -> F::Output {
    futures::executor::block_on(fut)
}

/// Polls `fut` once, with the calling task's context.
pub async fn poll_once<F: Future>(mut fut: Pin<&mut F>) -> Poll<F::Output> {
    futures::poll!(fut.as_mut())
}

/// A current-thread tokio runtime with every driver enabled.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A current-thread runtime with the time driver, its clock paused (tokio's `test-util`).
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Runs the tests of one binary that call it one at a time (those that read or set process-wide
/// state such as `too_busy::lag()`); a test that panicked does not poison the others.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Pending once (waking itself), then ready: a body that really awaits, without tokio.
pub struct YieldOnce(pub bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// A `tracing` writer that keeps what it is given, for tests to read.
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// A `tracing` subscriber that writes every event, at every level and without colours, here.
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish()
    }

    /// What was written so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The methods of a `tracing::Subscriber` that keeps no spans (all but `event`), for a test's own
/// subscriber: `impl tracing::Subscriber for S { no_spans!(); fn event(..) { .. } }`.
macro_rules! no_spans {
    () => {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    };
}
#[allow(unused_imports)] // Only the binaries with a subscriber of their own name it.
pub(crate) use no_spans;

/// A `tracing` subscriber with a bug: it panics on the events that `panics_on` picks (given the
/// event and how many it picked before), and counts those it picked.
pub struct PanickingSubscriber {
    panics_on: fn(&tracing::Event<'_>, usize) -> bool,
    pub picked: std::sync::atomic::AtomicUsize,
}

impl PanickingSubscriber {
    pub fn new(panics_on: fn(&tracing::Event<'_>, usize) -> bool) -> Self {
        PanickingSubscriber {
            panics_on,
            picked: Default::default(),
        }
    }
}

impl tracing::Subscriber for PanickingSubscriber {
    no_spans!();

    fn event(&self, event: &tracing::Event<'_>) {
        let before = self.picked.load(std::sync::atomic::Ordering::SeqCst);
        if (self.panics_on)(event, before) {
            self.picked
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            panic!("expected: a bug in a tracing subscriber");
        }
    }
}

/// The event's message, as text.
pub fn message(event: &tracing::Event<'_>) -> String {
    struct Message(String);
    impl tracing::field::Visit for Message {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }
    let mut message = Message(String::new());
    event.record(&mut message);
    message.0
}

/// The error of the raced test fns: which attempt failed, and how.
#[derive(Debug)]
pub enum RaceError {
    /// Attempt `n` failed; another attempt may succeed.
    Attempt(u32),
    /// Attempt `n` failed for good (a `retry_if` that says no, or a judge that panics on it).
    Fatal(u32),
    /// A policy refused.
    Rejected(Rejected),
}

impl From<Rejected> for RaceError {
    fn from(rejected: Rejected) -> Self {
        RaceError::Rejected(rejected)
    }
}

impl RaceError {
    pub fn rejected(&self) -> &Rejected {
        match self {
            RaceError::Rejected(rejected) => rejected,
            other => panic!("expected a Rejected, got {other:?}"),
        }
    }

    pub fn failed_attempt(&self) -> u32 {
        match self {
            RaceError::Attempt(n) => *n,
            other => panic!("expected an attempt's error, got {other:?}"),
        }
    }
}

/// One Prometheus scrape: every sample line, by series name and its labels (sorted), with its
/// value.
pub type Scrape =
    std::collections::BTreeMap<(String, std::collections::BTreeMap<String, String>), f64>;

/// The samples of a Prometheus text exposition (`/metrics`).
pub fn parse_scrape(text: &str) -> Scrape {
    let mut samples = Scrape::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (series, ""),
        };
        let labels = labels
            .split(',')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap();
                (k.to_string(), v.trim_matches('"').to_string())
            })
            .collect();
        samples.insert((name.to_string(), labels), value.parse().unwrap());
    }
    samples
}

/// The value of series `name` with exactly `labels`, if the scrape has it.
pub fn sample(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    scrape.get(&(name.to_string(), labels)).copied()
}
