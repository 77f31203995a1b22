//! State changes as `tracing` events and through subscriptions (Semian's `subscribe`).

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::breaker::{Breaker, State};

/// A breaker changed state. Delivered to every [`subscribe`]d callback and logged as a `tracing`
/// event with target `resiliency::breaker`: "circuit breaker opened" (level warn; to open or
/// forced open), "circuit breaker half-open" or "circuit breaker closed" (level info; to closed or
/// forced closed), with the fields `name`, `key` (a keyed breaker's), `from` and `to` (each
/// [`State`]'s Display) and, on "circuit breaker opened", `cause` ([`OpenCause::as_str`]; absent
/// for a breaker forced open).
///
/// The event says why the breaker opened, not which error opened it: the breaker sees how a
/// call ended (an error that `count_if` counts, a timeout, a slow call), while the error itself
/// goes back to its caller unchanged, to be logged where it is handled. (Semian's open event
/// carries the last error's message.)
///
/// Its Display is `name: from -> to`, with ` [key]` after a keyed breaker's name and
/// ` (cause)` after a change to open: `payments: closed -> open (errors)`,
/// `upstreams [api.example.com]: open -> half-open`.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resiliency::breaker::{self, Breaker};
///
/// type BoxError = Box<dyn std::error::Error + Send + Sync>;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let id = breaker::subscribe(move |change| {
///     if change.name.starts_with("docs-display") {
///         log.lock().unwrap().push(change.to_string());
///     }
/// });
/// let b = Breaker::builder("docs-display").error_threshold(1).build().unwrap();
/// let _ = b.call(async { Err::<(), BoxError>("down".into()) }).await;
/// b.reset();
/// let keyed = Breaker::builder("docs-display-keyed").build_keyed().unwrap();
/// keyed.breaker("api.example.com").force_open();
/// breaker::unsubscribe(id);
/// assert_eq!(
///     *seen.lock().unwrap(),
///     [
///         "docs-display: closed -> open (errors)",
///         "docs-display: open -> closed",
///         "docs-display-keyed [api.example.com]: closed -> forced open",
///     ]
/// );
/// # }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StateChange {
    /// The breaker's name.
    pub name: Arc<str>,
    /// The key, for a breaker of a keyed family.
    pub key: Option<Arc<str>>,
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// Why it opened, for a change to [`State::Open`]; `None` for any other change.
    pub cause: Option<OpenCause>,
}

/// Why a breaker opened: in [`StateChange::cause`], and as the `cause` field of the `tracing`
/// event "circuit breaker opened".
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpenCause {
    /// Its rule was met by errors: `error_threshold` errors within `error_window`, or
    /// `failure_rate` (slow calls count as errors here unless `slow_call_rate` is set).
    Errors,
    /// Slow calls reached `slow_call_rate` of the window's calls.
    SlowCalls,
    /// A half-open probe failed (an error, a timeout, or a slow call).
    ProbeFailed,
}

impl OpenCause {
    /// The cause as a label value: `errors`, `slow_calls`, `probe_failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenCause::Errors => "errors",
            OpenCause::SlowCalls => "slow_calls",
            OpenCause::ProbeFailed => "probe_failed",
        }
    }
}

impl std::fmt::Display for OpenCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for StateChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        if let Some(key) = &self.key {
            write!(f, " [{key}]")?;
        }
        write!(f, ": {} -> {}", self.from, self.to)?;
        if let Some(cause) = self.cause {
            write!(f, " ({cause})")?;
        }
        Ok(())
    }
}

/// Identifies a subscription; pass it to [`unsubscribe`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

type Callback = Arc<dyn Fn(&StateChange) + Send + Sync>;

static SUBSCRIBERS: RwLock<Vec<(SubscriptionId, Callback)>> = RwLock::new(Vec::new());
static ANY: AtomicBool = AtomicBool::new(false);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Calls `callback` on every state change of every breaker, from the thread that made the change,
/// after the change is made. Keep it short; it runs on the path of the call that caused the
/// change. A callback that panics loses only its own announcement: the panic is caught (and
/// logged as an error), the change stands, and the other callbacks and the call go on.
///
/// There is no timer behind a breaker: an open breaker whose open time has passed reports
/// [`State::HalfOpen`] from [`Breaker::state`](super::Breaker::state) at once, but the
/// `open -> half-open` change is announced when the next call arrives and becomes the probe.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use resiliency::breaker::{self, Breaker, State};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let id = breaker::subscribe(move |change| {
///     if &*change.name == "docs-subscribe" {
///         log.lock().unwrap().push((change.from, change.to));
///     }
/// });
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let b = Breaker::builder("docs-subscribe").build().unwrap();
/// b.force_open();
/// b.reset();
/// # });
/// breaker::unsubscribe(id);
/// assert_eq!(
///     *seen.lock().unwrap(),
///     [(State::Closed, State::ForcedOpen), (State::ForcedOpen, State::Closed)]
/// );
/// ```
pub fn subscribe<F>(callback: F) -> SubscriptionId
where
    F: Fn(&StateChange) + Send + Sync + 'static,
{
    let id = SubscriptionId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let mut subscribers = SUBSCRIBERS.write().unwrap_or_else(|e| e.into_inner());
    subscribers.push((id, Arc::new(callback)));
    ANY.store(true, Ordering::Release);
    id
}

/// Removes a subscription; returns false when it was already gone.
pub fn unsubscribe(id: SubscriptionId) -> bool {
    let mut subscribers = SUBSCRIBERS.write().unwrap_or_else(|e| e.into_inner());
    let before = subscribers.len();
    subscribers.retain(|(other, _)| *other != id);
    ANY.store(!subscribers.is_empty(), Ordering::Release);
    subscribers.len() != before
}

/// Announces a change: a `tracing` event, then every subscription. Both are user code (a layer,
/// a callback) and run after the change is made, each isolated: one that panics loses its own
/// announcement, never the breaker's state or another subscriber's.
/// `cause` says why, for a change to open.
pub(crate) fn changed(breaker: &Breaker, from: State, to: State, cause: Option<OpenCause>) {
    if from == to {
        return;
    }
    breaker.meter.changed(from, to);
    let _ = panic::catch_unwind(AssertUnwindSafe(|| trace(breaker, from, to, cause)));
    if !ANY.load(Ordering::Acquire) {
        return;
    }
    let callbacks: Vec<Callback> = SUBSCRIBERS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(_, callback)| callback.clone())
        .collect();
    let circuit = breaker.circuit();
    let change = StateChange {
        name: circuit.name,
        key: circuit.key.map(|key| key.to_arc()),
        from,
        to,
        cause,
    };
    for callback in callbacks {
        if panic::catch_unwind(AssertUnwindSafe(|| callback(&change))).is_err() {
            let _ = panic::catch_unwind(
                || tracing::error!(target: "resiliency::breaker", name = &*change.name, key = change.key.as_deref(), %change, "a breaker subscriber panicked; the change stands"),
            );
        }
    }
}

fn trace(breaker: &Breaker, from: State, to: State, cause: Option<OpenCause>) {
    let name = breaker.name();
    let key = breaker.key();
    match to {
        State::Open | State::ForcedOpen => {
            let cause = cause.map(OpenCause::as_str);
            tracing::warn!(target: "resiliency::breaker", name, key, %from, %to, cause, "circuit breaker opened")
        }
        State::HalfOpen => {
            tracing::info!(target: "resiliency::breaker", name, key, %from, %to, "circuit breaker half-open")
        }
        State::Closed | State::ForcedClosed => {
            tracing::info!(target: "resiliency::breaker", name, key, %from, %to, "circuit breaker closed")
        }
    }
}
