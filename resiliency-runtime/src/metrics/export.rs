//! The exporter: every metered series registers itself here, and the exporter hands the
//! recorder their values in bulk, every [`EXPORT_PERIOD`] from a thread of its own and at each
//! [`flush`]: a counter's total (`absolute`), a level (`set`), the samples buffered since the
//! last export (`record`). A call's path only adds to its thread's stripe.

use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

use super::quietly;
use super::striped::{Buffered, Striped, StripedLevel};

/// How often the exporter hands every series' values to the recorder: no value the recorder
/// shows is older than this (wall-clock time, whatever runtime the calls ran on, paused or not).
pub const EXPORT_PERIOD: Duration = Duration::from_secs(1);

/// Series whose values the exporter hands to the recorder.
pub(crate) trait Export: Send + Sync {
    /// Hands every value to the recorder; a recorder that panics loses that update alone.
    fn export(&self);
}

/// A counter: a striped count and its recorder handle, which gets the total.
pub(crate) struct Count {
    count: Striped,
    handle: ::metrics::Counter,
}

impl Count {
    pub(crate) fn new(handle: ::metrics::Counter) -> Self {
        Count {
            count: Striped::new(),
            handle,
        }
    }

    /// One more: an atomic add on this thread's stripe.
    #[inline(always)]
    pub(crate) fn add(&self) {
        self.count.add(1);
    }
}

impl Count {
    /// Hands the recorder the total plus `more`, counted elsewhere (events a site counts once
    /// for several series).
    pub(crate) fn export_with(&self, more: u64) {
        let total = self.count.total().wrapping_add(more);
        quietly(|| self.handle.absolute(total));
    }
}

impl Export for Count {
    fn export(&self) {
        self.export_with(0);
    }
}

/// A gauge that moves up and down: a striped level and its recorder handle, which gets the sum.
pub(crate) struct Level {
    level: StripedLevel,
    handle: ::metrics::Gauge,
}

impl Level {
    pub(crate) fn new(handle: ::metrics::Gauge) -> Self {
        Level {
            level: StripedLevel::new(),
            handle,
        }
    }

    #[inline(always)]
    pub(crate) fn up(&self) {
        self.level.up();
    }

    #[inline(always)]
    pub(crate) fn down(&self) {
        self.level.down();
    }
}

impl Export for Level {
    fn export(&self) {
        let level = self.level.level() as f64;
        quietly(|| self.handle.set(level));
    }
}

/// A histogram: samples buffered per stripe, and its recorder handle, which gets them.
pub(crate) struct Samples {
    samples: Buffered,
    handle: ::metrics::Histogram,
}

impl Samples {
    pub(crate) fn new(handle: ::metrics::Histogram) -> Self {
        Samples {
            samples: Buffered::new(),
            handle,
        }
    }

    /// Buffers `sample`; the call that fills its stripe's buffer hands the buffer to the
    /// recorder itself, so a buffer never holds more than [`Buffered::CAP`] samples.
    #[inline(always)]
    pub(crate) fn record(&self, sample: f64) {
        self.samples.push(sample, |full| self.hand_on(full));
    }

    #[cold]
    fn hand_on(&self, samples: &[f64]) {
        quietly(|| samples.iter().for_each(|&s| self.handle.record(s)));
    }
}

impl Export for Samples {
    fn export(&self) {
        self.samples.drain(|samples| self.hand_on(samples));
    }
}

/// Every series registered, and the lock that makes exports one at a time (so that a level
/// set by an export is never overwritten by an older one's).
struct Exporter {
    series: Mutex<Vec<Arc<dyn Export>>>,
    exporting: Mutex<()>,
    thread: Once,
}

static EXPORTER: Exporter = Exporter {
    series: Mutex::new(Vec::new()),
    exporting: Mutex::new(()),
    thread: Once::new(),
};

/// Registers `series` with the exporter, which hands its values to the recorder from now on;
/// the first registration starts the exporter's thread.
pub(crate) fn enroll(series: Arc<dyn Export>) {
    EXPORTER
        .series
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(series);
    EXPORTER.thread.call_once(start);
}

/// Starts the exporter's thread, which exports every [`EXPORT_PERIOD`] until the process ends.
/// Where no thread can be started, values reach the recorder at each [`flush`].
fn start() {
    let _ = std::thread::Builder::new()
        .name("resiliency-metrics".into())
        .spawn(|| {
            let mut next = Instant::now();
            loop {
                next += EXPORT_PERIOD;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    // An export ran past its period (a recorder that blocked): start afresh.
                    next = now;
                }
                flush();
            }
        });
}

/// Hands every series' current values to the installed recorder now: counters' totals, the
/// in-flight gauges' levels and every sample buffered. Without it, the exporter's thread does
/// the same every [`EXPORT_PERIOD`]; call it where a value must be exact at once: in a
/// `/metrics` handler before rendering, in tests, before the process exits.
///
/// A recorder that panics loses the update it panicked in, and nothing else.
pub fn flush() {
    let _one_at_a_time = EXPORTER
        .exporting
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    // A copy of the list, so that a site registered meanwhile (even by the recorder) waits for
    // no export.
    let series: Vec<Arc<dyn Export>> = EXPORTER
        .series
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for series in &series {
        series.export();
    }
}
