//! The [`Breaker`]: its state word and settings, its transitions (every change of the word that
//! moves the epoch goes through `swap`, which announces it), forcing, and what it reports
//! (state, snapshot, idle time). Admission is in `admit.rs`, outcomes in `record.rs`, the word's
//! layout in `word.rs`.

use std::fmt;
use std::sync::atomic::{AtomicU64 as Setting, AtomicU64 as Counter, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use super::builder::{BreakerBuilder, Config, Rule};
use super::disabled::disabled;
use super::events;
use super::window::Window;
use super::word::*;
use super::Key;
use crate::rejected::Circuit;
use crate::sync::AtomicU64;

/// The state of a breaker, as [`Breaker::state`] reports it and [`StateChange`](super::StateChange)
/// events carry it.
///
/// Its Display, used in `StateChange`'s and in the `from` and `to` fields of the `tracing`
/// events, is lowercase: `closed`, `open`, `half-open`, `forced open`, `forced closed`.
///
/// ```
/// use resiliency::breaker::State;
///
/// assert_eq!(State::Closed.to_string(), "closed");
/// assert_eq!(State::Open.to_string(), "open");
/// assert_eq!(State::HalfOpen.to_string(), "half-open");
/// assert_eq!(State::ForcedOpen.to_string(), "forced open");
/// assert_eq!(State::ForcedClosed.to_string(), "forced closed");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls run; errors are counted.
    Closed,
    /// Calls are refused until `error_timeout` has passed since the last error.
    Open,
    /// A limited number of probe calls run; an error re-opens, enough successes close.
    HalfOpen,
    /// Forced open from code: every call is refused until [`Breaker::reset`].
    ForcedOpen,
    /// Forced closed from code: every call runs and nothing is counted until [`Breaker::reset`].
    ForcedClosed,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half-open",
            State::ForcedOpen => "forced open",
            State::ForcedClosed => "forced closed",
        })
    }
}

/// What a breaker knows right now; see [`Breaker::snapshot`].
///
/// The window is cleared when the breaker opens by its rule, so that it closes with a clean one,
/// and a call counts only in the window of the closed state that admitted it: while it is open,
/// `recent_errors` and `recent_slow` are 0 and `recent_calls` `Some(0)` (rate rule).
/// resilience4j keeps the window's counts while open. See [the rules](super#rules).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The state, with an open breaker whose open time has passed reported as half-open.
    pub state: State,
    /// Errors counted in the current window (closed state).
    pub recent_errors: u64,
    /// Calls counted in the current window, under the rate rule.
    pub recent_calls: Option<u64>,
    /// Slow calls (`slow_call_duration`) in the current window, apart from the errors: with
    /// `slow_call_rate` they are successes and count toward their own rate; without it they count
    /// as failures too, and `recent_errors` includes them. A slow error is an error only. 0
    /// without `slow_call_duration`.
    pub recent_slow: u64,
    /// The open time that applies now (`error_timeout`, grown by `backoff` after failed probes).
    pub open_for: Duration,
    /// Time left until an open breaker half-opens.
    pub half_opens_in: Option<Duration>,
}

/// A circuit breaker with Semian's semantics, usable from code or through `#[breaker]`.
///
/// Closed, it runs calls and counts errors; when the rule is met (`error_threshold` errors within
/// `error_window`, or a `failure_rate` over at least `min_calls` calls) it opens and refuses calls
/// until `error_timeout` has passed since the last error. Then it half-opens: up to
/// `half_open_calls` probes run at once, one error re-opens it and `success_threshold` successes
/// close it.
///
/// ```
/// use std::time::Duration;
/// use resiliency::{breaker::State, Breaker};
///
/// type BoxError = Box<dyn std::error::Error + Send + Sync>;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let breaker = Breaker::builder("search")
///     .error_threshold(2)
///     .error_timeout(Duration::from_secs(5))
///     .build()
///     .unwrap();
/// for _ in 0..2 {
///     let _ = breaker.call(async { Err::<(), BoxError>("search is down".into()) }).await;
/// }
/// assert_eq!(breaker.state(), State::Open);
/// let refused = breaker.call(async { Ok::<_, BoxError>(1) }).await.unwrap_err();
/// assert!(refused.to_string().starts_with("circuit breaker `search` is open"));
///
/// tokio::time::sleep(Duration::from_secs(5)).await;
/// assert_eq!(breaker.state(), State::HalfOpen);
/// assert_eq!(breaker.call(async { Ok::<_, BoxError>(1) }).await.unwrap(), 1);
/// assert_eq!(breaker.state(), State::Closed);
/// # }
/// ```
pub struct Breaker {
    name: Arc<str>,
    /// A keyed family's breakers: the key, which the family's lookups compare.
    pub(crate) key: Option<Key>,
    /// The options in force, swapped whole when the settings change.
    pub(super) config: ArcSwap<Config>,
    base: Instant,
    pub(super) state: AtomicU64,
    /// The full count of state changes (the word's epoch is its low 18 bits), as published after
    /// each change: never ahead of the word, and behind it only by the changes whose threads have
    /// not yet published (at most one per thread, and any later change publishes past them).
    /// A probe's permit carries the full epoch, so that a probe admitted 2^18 changes ago, when
    /// the word's epoch was the same, is told from one admitted now: a stale probe can free no
    /// live probe's slot, count no success and re-open nothing. A std atomic under loom too:
    /// the models never come near 2^18 changes, where it matters, and modelling it would multiply
    /// their interleavings for nothing.
    pub(super) epochs: Counter,
    /// Time of the last error (ns since `base`, plus one); the open time counts from it.
    pub(super) last_error: AtomicU64,
    /// The windows of the rules: counts kept when the settings change but the rule does not.
    pub(super) window: Window,
    /// `timeout` and `half_open_timeout` in ns, 0 for none: what a call admitted with the word's
    /// `TIMED` flag (or a probe, or a forced-closed call) reads at its first wait.
    pub(super) timeout_ns: Setting,
    pub(super) half_open_timeout_ns: Setting,
    /// `slow_call_duration` in ns, 0 for none: read with the time limits.
    pub(super) slow_call_ns: Setting,
    pub(crate) meter: super::meter::Meter,
}

impl Breaker {
    /// Starts a [`BreakerBuilder`] for a breaker called `name`.
    pub fn builder(name: &str) -> BreakerBuilder {
        BreakerBuilder::new(name)
    }

    pub(crate) fn new(config: Arc<Config>, key: Option<Key>) -> Self {
        Self::of_family(config, key, None)
    }

    /// A breaker of `family` (its handles shared), or a breaker of its own.
    pub(crate) fn of_family(
        config: Arc<Config>,
        key: Option<Key>,
        family: Option<&super::keyed::Family>,
    ) -> Self {
        let window = Window::new(config.rule, nanos(config.window));
        let breaker = Breaker {
            name: config.name.clone(),
            timeout_ns: Setting::new(0),
            half_open_timeout_ns: Setting::new(0),
            slow_call_ns: Setting::new(0),
            config: ArcSwap::new(config.clone()),
            meter: match family {
                Some(family) => super::meter::Meter::of(family.meter.clone()),
                None => super::meter::Meter::new(&config.name),
            },
            key,
            base: Instant::now(),
            state: AtomicU64::new(if disabled() { BYPASS } else { 0 }),
            epochs: Counter::new(0),
            last_error: AtomicU64::new(0),
            window,
        };
        breaker.hot_settings(&config);
        breaker
    }

    /// Puts `config` in force, keeping the state: an open breaker stays open (its open time now
    /// `config`'s), and the window's counts are kept unless the rule changes.
    pub(crate) fn reconfigure(&self, config: Arc<Config>) {
        let old = self.config.load();
        let same_rule = old.rule == config.rule
            && (matches!(config.rule, Rule::Count { .. }) || old.window == config.window);
        self.config.store(config.clone());
        if !same_rule {
            self.window.reset(config.rule, nanos(config.window));
        }
        self.hot_settings(&config);
    }

    /// The settings a call reads without visiting the configuration: the word's flags, and the
    /// time limits.
    fn hot_settings(&self, config: &Config) {
        let ns = |d: Option<Duration>| d.map_or(0, |d| nanos(d).max(1));
        self.timeout_ns.store(ns(config.timeout), Ordering::Relaxed);
        self.half_open_timeout_ns
            .store(ns(config.half_open_timeout), Ordering::Relaxed);
        self.slow_call_ns
            .store(ns(config.slow_call_duration), Ordering::Relaxed);
        let mut flags = 0;
        if config.timeout.is_some()
            || config.half_open_timeout.is_some()
            || config.slow_call_duration.is_some()
        {
            flags |= TIMED;
        }
        if matches!(config.rule, Rule::Rate { .. }) {
            flags |= RATE;
        }
        // Not a change of state: no event, and a transition racing this keeps the flags
        // (`enter`), so whichever lands last leaves them right.
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                Some((word & !FLAGS) | flags)
            });
    }

    /// Moves from `word` to `next`, publishes the full epoch of `next` and reports the change;
    /// `Ok` carries that full epoch, `Err` the word seen instead.
    pub(super) fn swap(&self, word: u64, next: u64) -> Result<u64, u64> {
        self.swap_for(word, next, None)
    }

    /// [`swap`](Self::swap) into open, announced with its `cause`.
    pub(super) fn swap_for(
        &self,
        word: u64,
        next: u64,
        cause: Option<events::OpenCause>,
    ) -> Result<u64, u64> {
        // Read before the exchange, so never ahead of `word` once the exchange succeeds.
        let floor = self.epochs.load(Ordering::Acquire);
        self.state
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Acquire)?;
        let full = lift(floor, epoch(word))
            + u64::from(epoch(next).wrapping_sub(epoch(word)) & ((1 << EPOCH_BITS) - 1));
        self.epochs.fetch_max(full, Ordering::AcqRel);
        events::changed(self, state_of(word), state_of(next), cause);
        Ok(full)
    }

    /// Changes the state word by `f`, unless the breaker is bypassed.
    fn update(&self, f: impl Fn(u64) -> u64) {
        let mut word = self.state.load(Ordering::Acquire);
        while word & FORCED != BYPASS {
            match self.swap(word, f(word)) {
                Ok(_) => return,
                Err(seen) => word = seen,
            }
        }
    }

    /// Forces the breaker open: every call is refused until [`reset`](Self::reset).
    pub fn force_open(&self) {
        self.update(|w| (w & !FORCED) | FORCED_OPEN);
    }

    /// Forces the breaker closed: every call runs and nothing is counted until
    /// [`reset`](Self::reset). The `timeout` still applies.
    pub fn force_closed(&self) {
        self.update(|w| (w & !FORCED) | FORCED_CLOSED);
    }

    /// Closes the breaker, lifts any forcing and forgets every counted error, slow call and
    /// `Retry-After` hint: the next error counts as the first since the breaker was built.
    pub fn reset(&self) {
        self.window.clear();
        // Before the state: an error of a call admitted after the reset is never lost.
        self.last_error.store(0, Ordering::Release);
        self.update(|w| enter(w & !(FORCED | STREAKS), CLOSED));
    }

    /// The state now. An open breaker whose open time has passed reports [`State::HalfOpen`]: the
    /// next call will be a probe.
    pub fn state(&self) -> State {
        self.snapshot().state
    }

    /// The state and the counts of the current window.
    pub fn snapshot(&self) -> Snapshot {
        let word = self.state.load(Ordering::Acquire);
        let now = self.now();
        let open_for = self.open_for(word);
        let until = self
            .last_error
            .load(Ordering::Acquire)
            .saturating_add(nanos(open_for));
        let mut state = state_of(word);
        let mut half_opens_in = None;
        if state == State::Open {
            if now >= until {
                state = State::HalfOpen;
            } else {
                half_opens_in = Some(Duration::from_nanos(until - now));
            }
        }
        let (recent_errors, recent_calls) = match self.config.load().rule {
            Rule::Count { .. } => (self.window.count.recent(self.window_floor(now)), None),
            Rule::Rate { .. } => {
                let (calls, errors) = self.window.rate.totals(now);
                (errors, Some(calls))
            }
        };
        let recent_slow = self.window.recent_slow(now);
        Snapshot {
            state,
            recent_errors,
            recent_calls,
            recent_slow,
            open_for,
            half_opens_in,
        }
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key of a breaker that belongs to a keyed family.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The configured open time (`error_timeout`, or the one derived from `capacity`).
    pub fn error_timeout(&self) -> Duration {
        self.config.load().error_timeout
    }

    /// The `timeout` in force, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.config.load().timeout
    }

    /// The phase, probes in flight and half-open successes of the state word, for the loom models.
    #[cfg(all(test, resiliency_loom))]
    pub(crate) fn word_fields(&self) -> (u64, u64, u64) {
        let word = self.state.load(Ordering::SeqCst);
        (
            word & PHASE,
            (word & PROBES) / PROBE,
            (word & SUCCESSES) / SUCCESS,
        )
    }

    /// How long, if no call comes, until nothing here is worth keeping: zero when nothing is
    /// now (closed, not forced, no error in the window; open, its open time passed, so that the
    /// next call would be a probe; half-open with no probe in flight; or bypassed by
    /// `RESILIENCY_DISABLED`); `None` while forced, or while probes are in flight.
    pub(crate) fn idle_in(&self) -> Option<Duration> {
        let word = self.state.load(Ordering::Acquire);
        let since_last_error = |span: Duration| {
            let until = self
                .last_error
                .load(Ordering::Acquire)
                .saturating_add(nanos(span));
            Duration::from_nanos(until.saturating_sub(self.now()))
        };
        match (word & FORCED, word & PHASE) {
            (BYPASS, _) => Some(Duration::ZERO),
            (FORCED_OPEN | FORCED_CLOSED, _) => None,
            (_, OPEN) => Some(since_last_error(self.open_for(word))),
            (_, HALF_OPEN) => (word & PROBES == 0).then_some(Duration::ZERO),
            _ if self.snapshot().recent_errors == 0 => Some(Duration::ZERO),
            // Every error leaves the window by the last one's time plus the window (a bucket of
            // the rate rule's may take a little longer).
            _ => Some(since_last_error(self.config.load().window).max(Duration::from_millis(1))),
        }
    }

    /// The oldest error time still inside the window ending at `now`.
    pub(super) fn window_floor(&self, now: u64) -> u64 {
        now.saturating_sub(nanos(self.config.load().window))
    }

    pub(super) fn open_for(&self, word: u64) -> Duration {
        let streak = ((word & STREAKS) / STREAK) as i32;
        let config = self.config.load();
        let base = config.error_timeout;
        if streak == 0 || config.backoff == 1.0 {
            return base;
        }
        let grown = base.as_secs_f64() * config.backoff.powi(streak);
        Duration::try_from_secs_f64(grown)
            .unwrap_or(Duration::MAX)
            .min(config.max_error_timeout)
    }

    /// Now, in ns since this breaker's base instant, plus one (so that 0 means "never").
    pub(super) fn now(&self) -> u64 {
        nanos(Instant::now().saturating_duration_since(self.base)) + 1
    }

    /// The state of the word, as its last change announced it (an open time that passed is
    /// still open).
    #[cfg(feature = "metrics")]
    pub(crate) fn announced(&self) -> State {
        state_of(self.state.load(Ordering::Acquire))
    }

    pub(crate) fn circuit(&self) -> Circuit {
        Circuit {
            name: self.name.clone(),
            key: self.key.clone(),
        }
    }
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker")
            .field("name", &self.name())
            .field("key", &self.key())
            .field("state", &state_of(self.state.load(Ordering::Relaxed)))
            .finish_non_exhaustive()
    }
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl super::window::Clock for Breaker {
    fn now(&self) -> u64 {
        Breaker::now(self)
    }
}
