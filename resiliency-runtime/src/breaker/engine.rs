//! The breaker's state machine: one atomic word, read once on the closed-state fast path.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{
    AtomicBool, AtomicU64 as Setting, AtomicU64 as Counter, AtomicU8, Ordering,
};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use super::call::{Call, CountIf, EveryError, InlineTimer};
use super::config::{BreakerBuilder, Config, Rule};
use super::events;
use super::window::Window;
use crate::rejected::{Circuit, Reason, Rejected};
use crate::sync::{AtomicU32, AtomicU64};

// The state word: phase | forced | probes in flight | half-open successes | re-open streak | epoch.
const PHASE: u64 = 0b11;
const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
const FORCED: u64 = 0b11 << 2;
const FORCED_OPEN: u64 = 1 << 2;
const FORCED_CLOSED: u64 = 2 << 2;
/// `RESILIENCY_DISABLED`: set once at creation, kept by every change, so that the fast path needs no
/// second check.
const BYPASS: u64 = 3 << 2;
const PROBE: u64 = 1 << 4;
const PROBES: u64 = 0xFFFF << 4;
const SUCCESS: u64 = 1 << 20;
const SUCCESSES: u64 = 0xFFFF << 20;
const STREAK: u64 = 1 << 36;
const STREAKS: u64 = 0xFF << 36;
/// Settings a closed call's admission must see (kept in the word, set by `hot_settings`): a
/// timeout applies; the rule is the rate rule (a success is recorded). A closed breaker with
/// neither admits a call with [`Permit::Fast`], whose success has nothing to do.
const TIMED: u64 = 1 << 44;
const RATE: u64 = 1 << 45;
const FLAGS: u64 = TIMED | RATE;
const EPOCH_SHIFT: u32 = 46;
const EPOCH: u64 = 1 << EPOCH_SHIFT;
/// The word's epoch: the low bits of the count of state changes.
const EPOCH_BITS: u32 = 64 - EPOCH_SHIFT;

fn epoch(word: u64) -> u32 {
    (word >> EPOCH_SHIFT) as u32
}

/// The full epoch whose low bits are `e`, given `floor`, a full epoch read at or before the
/// moment `e` was: the first at or after `floor`. Exact while fewer than 2^18 state changes
/// separate the two reads, which are a few instructions apart (and the published count lags the
/// word by at most a change per thread: see `Breaker`'s `epochs`).
fn lift(floor: u64, e: u32) -> u64 {
    floor + (u64::from(e).wrapping_sub(floor) & ((1 << EPOCH_BITS) - 1))
}

/// The word of a fresh phase: counters cleared, the streak and the flags kept, the epoch moved on.
fn enter(word: u64, phase: u64) -> u64 {
    (word & (FORCED | STREAKS | FLAGS)) | phase | ((word & !(EPOCH - 1)).wrapping_add(EPOCH))
}

/// The state of a breaker, as [`Breaker::state`] reports it and [`StateChange`](super::StateChange)
/// events carry it.
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

fn state_of(word: u64) -> State {
    match (word & FORCED, word & PHASE) {
        (BYPASS, _) => State::Closed,
        (FORCED_OPEN, _) => State::ForcedOpen,
        (FORCED_CLOSED, _) => State::ForcedClosed,
        (_, OPEN) => State::Open,
        (_, HALF_OPEN) => State::HalfOpen,
        _ => State::Closed,
    }
}

/// What a breaker knows right now; see [`Breaker::snapshot`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The state, with an open breaker whose open time has passed reported as half-open.
    pub state: State,
    /// Errors counted in the current window (closed state).
    pub recent_errors: u64,
    /// Calls counted in the current window, under the rate rule.
    pub recent_calls: Option<u64>,
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
    key: Option<Arc<str>>,
    /// The options in force, swapped whole when the settings change.
    config: ArcSwap<Config>,
    base: Instant,
    state: AtomicU64,
    /// The full count of state changes (the word's epoch is its low 18 bits), as published after
    /// each change: never ahead of the word, and behind it only by the changes whose threads have
    /// not yet published (at most one per thread, and any later change publishes past them).
    /// A probe's permit carries the full epoch, so that a probe admitted 2^18 changes ago, when
    /// the word's epoch was the same, is told from one admitted now: a stale probe can free no
    /// live probe's slot, count no success and re-open nothing. A std atomic under loom too:
    /// the models never come near 2^18 changes, where it matters, and modelling it would multiply
    /// their interleavings for nothing.
    epochs: Counter,
    /// Time of the last error (ns since `base`, plus one); the open time counts from it.
    last_error: AtomicU64,
    /// The windows of the rules: counts kept when the settings change but the rule does not.
    window: Window,
    /// True when `timeout` or `half_open_timeout` is set: read beside `state`, so that a call
    /// without a timeout does not visit the configuration.
    timed: AtomicBool,
    /// True under the rate rule, whose window counts successes too.
    rate: AtomicBool,
    /// `timeout` and `half_open_timeout` in ns, 0 for none: what a timed call reads.
    timeout_ns: Setting,
    half_open_timeout_ns: Setting,
    /// Keyed breakers: the eviction generation in which this breaker was last used.
    pub(crate) seen: AtomicU32,
    /// Keyed breakers: set by a sweep about to evict this breaker (and cleared again if a
    /// lookup holds it); a lookup that sees it set looks again.
    pub(crate) evicted: AtomicBool,
    pub(crate) meter: super::meter::Meter,
}

/// Admission to run one call, handed back with its outcome.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Permit {
    /// Closed, under the count rule and no timeout: an error counts in the window of epoch
    /// `epoch`; a success has nothing to do.
    Fast { epoch: u32 },
    /// Closed: the outcome counts in the window of epoch `epoch`.
    Closed { epoch: u32 },
    /// Half-open probe of the full epoch `epoch` (its low 58 bits).
    Probe { epoch: u64 },
    /// Forced closed: runs (bounded by `timeout`), counts nothing.
    Unchecked,
    /// `RESILIENCY_DISABLED`: runs untouched.
    Bypass,
}

impl Permit {
    /// A probe's bit in [`bits`](Self::bits): the one permit that a call dropped before its
    /// outcome hands back.
    pub(crate) const PROBE: u64 = 1 << 3;
    const UNCHECKED: u64 = 1 << 4;
    const BYPASS: u64 = 1 << 5;
    /// Where a probe keeps its full epoch in its bits.
    const PROBE_EPOCH_SHIFT: u32 = 6;

    /// The probe permit of full epoch `full`.
    fn probe(full: u64) -> Permit {
        Permit::Probe {
            epoch: Self::probe_epoch(full),
        }
    }

    /// The part of the full epoch `full` that a probe's permit keeps.
    fn probe_epoch(full: u64) -> u64 {
        full & (u64::MAX >> Self::PROBE_EPOCH_SHIFT)
    }

    /// The permit as bits laid out like the state word's (a closed word's flags and epoch, as
    /// a closed call's admission reads them), with a bit for each other kind; a probe keeps its
    /// full epoch above its bit.
    #[inline(always)]
    pub(crate) fn bits(self) -> u64 {
        let at = |epoch: u32| u64::from(epoch) << EPOCH_SHIFT;
        match self {
            Permit::Fast { epoch } => at(epoch),
            Permit::Closed { epoch } => at(epoch) | TIMED,
            Permit::Probe { epoch } => epoch << Self::PROBE_EPOCH_SHIFT | Self::PROBE,
            Permit::Unchecked => Self::UNCHECKED,
            Permit::Bypass => Self::BYPASS,
        }
    }

    /// The permit [`bits`](Self::bits) made `bits` of (other bits ignored).
    #[inline(always)]
    pub(crate) fn from_bits(bits: u64) -> Permit {
        let epoch = epoch(bits);
        if bits & Self::PROBE != 0 {
            Permit::Probe {
                epoch: bits >> Self::PROBE_EPOCH_SHIFT,
            }
        } else if bits & Self::UNCHECKED != 0 {
            Permit::Unchecked
        } else if bits & Self::BYPASS != 0 {
            Permit::Bypass
        } else if bits & FLAGS != 0 {
            Permit::Closed { epoch }
        } else {
            Permit::Fast { epoch }
        }
    }
}

impl Breaker {
    /// Starts a [`BreakerBuilder`] for a breaker called `name`.
    pub fn builder(name: &str) -> BreakerBuilder {
        BreakerBuilder::new(name)
    }

    pub(crate) fn new(config: Arc<Config>, key: Option<Arc<str>>) -> Self {
        Self::of_family(config, key, None)
    }

    /// A breaker of `family` (its handles shared), or a breaker of its own.
    pub(crate) fn of_family(
        config: Arc<Config>,
        key: Option<Arc<str>>,
        family: Option<&super::keyed::Family>,
    ) -> Self {
        let window = Window::new(config.rule, nanos(config.window));
        let breaker = Breaker {
            name: config.name.clone(),
            timed: AtomicBool::new(false),
            rate: AtomicBool::new(false),
            timeout_ns: Setting::new(0),
            half_open_timeout_ns: Setting::new(0),
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
            seen: AtomicU32::new(0),
            evicted: AtomicBool::new(false),
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

    /// The settings a call reads without visiting the configuration.
    fn hot_settings(&self, config: &Config) {
        let ns = |d: Option<Duration>| d.map_or(0, |d| nanos(d).max(1));
        self.timeout_ns.store(ns(config.timeout), Ordering::Relaxed);
        self.half_open_timeout_ns
            .store(ns(config.half_open_timeout), Ordering::Relaxed);
        self.timed.store(
            config.timeout.is_some() || config.half_open_timeout.is_some(),
            Ordering::Relaxed,
        );
        self.rate
            .store(matches!(config.rule, Rule::Rate { .. }), Ordering::Relaxed);
        let mut flags = 0;
        if config.timeout.is_some() || config.half_open_timeout.is_some() {
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

    /// Runs `body` through the breaker: refused with [`Rejected`] while open, bounded by `timeout`,
    /// and every error counts. See [`call_if`](Self::call_if) to count only some errors.
    ///
    /// The returned future asks the breaker for admission when it is first polled, and records
    /// the outcome when the body completes; dropped before that, it frees its probe slot without
    /// counting.
    pub fn call<F, T, E>(&self, body: F) -> Call<&Self, F, EveryError, InlineTimer, E>
    where
        F: Future<Output = Result<T, E>>,
        E: From<Rejected>,
    {
        Call::new(self, EveryError, InlineTimer::default(), body)
    }

    /// Like [`call`](Self::call), but an error counts only when `counts(&error)` is true. An error
    /// that does not count is neither a failure nor a success: it leaves the window as it was (and
    /// frees its probe slot when half-open).
    pub fn call_if<F, T, E, P>(
        &self,
        counts: P,
        body: F,
    ) -> Call<&Self, F, CountIf<P>, InlineTimer, E>
    where
        F: Future<Output = Result<T, E>>,
        E: From<Rejected>,
        P: FnMut(&E) -> bool,
    {
        Call::new(self, CountIf(counts), InlineTimer::default(), body)
    }

    /// The time limit of a call admitted with `permit`.
    #[inline(always)]
    pub(crate) fn limit(&self, permit: Permit) -> Option<Duration> {
        // A fast permit was admitted with no timeout in force: nothing to read.
        if matches!(permit, Permit::Fast { .. }) || !self.timed.load(Ordering::Relaxed) {
            return None;
        }
        let read = |setting: &Setting| match setting.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        };
        match permit {
            Permit::Fast { .. } => None,
            Permit::Closed { .. } | Permit::Unchecked => read(&self.timeout_ns),
            Permit::Probe { .. } => read(&self.half_open_timeout_ns).or(read(&self.timeout_ns)),
            Permit::Bypass => None,
        }
    }

    #[inline(always)]
    pub(crate) fn admit(&self) -> Result<Permit, Rejected> {
        // A fast permit reads nothing that a transition publishes (its success records nothing,
        // its error reads the state again): a relaxed load, which leaves the caller's own memory
        // to the optimizer.
        let word = self.state.load(Ordering::Relaxed);
        if word & (PHASE | FORCED | FLAGS) == CLOSED {
            return Ok(Permit::Fast { epoch: epoch(word) });
        }
        self.admit_acquired()
    }

    /// A closed breaker's admission, as [`Permit::bits`]: `Some` when the breaker is closed and
    /// not forced, where admitting has no side effect.
    #[inline(always)]
    pub(crate) fn admit_closed(&self) -> Option<u64> {
        // Acquire: a call admitted under the rate rule writes to the window, which must see the
        // clear made before the breaker closed.
        let word = self.state.load(Ordering::Acquire);
        if word & (PHASE | FORCED) == CLOSED {
            // A fast permit has neither flag; either makes it a closed one.
            Some(word & (FLAGS | !(EPOCH - 1)))
        } else {
            None
        }
    }

    /// A closed breaker's admission for a `#[breaker]` site's closed path: `Some` with the state
    /// word when the breaker is closed and not forced (admitting has no side effect) and the path
    /// can serve the call. A site of the count rule (`!rate`) records nothing on a success, so
    /// it cannot serve the rate rule (put in force by a setting); a site of the rate rule records
    /// its successes in the rate window whichever rule is in force (the count rule does not read
    /// that window, which is cleared when the rate rule comes back). An untimed site (`!timed`)
    /// keeps no timer, so it cannot serve a timeout put in force by a setting.
    #[inline(always)]
    pub(crate) fn admit_site(&self, rate: bool, timed: bool) -> Option<u64> {
        // A count rule's success reads and writes nothing that a transition publishes (an error
        // reads the state again): relaxed. A rate rule's writes to the window, which must see
        // the clear made before the breaker closed: acquire.
        let word = self.state.load(if rate {
            Ordering::Acquire
        } else {
            Ordering::Relaxed
        });
        let cannot = if rate { 0 } else { RATE } | if timed { 0 } else { TIMED };
        (word & (PHASE | FORCED | cannot) == CLOSED).then_some(word)
    }

    /// The time limit of a closed call, if a timeout is in force.
    pub(crate) fn closed_limit(&self) -> Option<Duration> {
        self.limit(Permit::Closed { epoch: 0 })
    }

    /// [`Permit::bits`] of the permit given as the state `word` by
    /// [`admit_site`](Self::admit_site).
    #[inline(always)]
    pub(crate) fn untimed_bits(word: u64) -> u64 {
        word & (FLAGS | !(EPOCH - 1))
    }

    /// The rate rule's success of a call admitted in state `word`
    /// ([`admit_site`](Self::admit_site)).
    #[inline(always)]
    pub(crate) fn on_untimed_rate_success(&self, word: u64) {
        self.rate_success_inline(epoch(word));
    }

    /// [`admit`](Self::admit), its permit as [`Permit::bits`].
    #[inline(never)]
    pub(crate) fn admit_other(&self) -> Result<u64, Rejected> {
        match self.admit_closed() {
            Some(bits) => Ok(bits),
            None => self.admit_slow().map(Permit::bits),
        }
    }

    /// Admission for every permit but the fast one: its calls write to the window, which must
    /// see the clear made before the breaker closed.
    #[inline(always)]
    fn admit_acquired(&self) -> Result<Permit, Rejected> {
        let word = self.state.load(Ordering::Acquire);
        if word & (PHASE | FORCED) == CLOSED {
            return Ok(Permit::Closed { epoch: epoch(word) });
        }
        self.admit_slow()
    }

    #[cold]
    fn admit_slow(&self) -> Result<Permit, Rejected> {
        // The full epoch first, then the word: a probe's full epoch is lifted from it.
        let floor = self.epochs.load(Ordering::Acquire);
        let mut word = self.state.load(Ordering::Acquire);
        loop {
            match (word & FORCED, word & PHASE) {
                (BYPASS, _) => return Ok(Permit::Bypass),
                (FORCED_OPEN, _) => {
                    return Err(Rejected::new(Reason::ForcedOpen {
                        circuit: self.circuit(),
                    }))
                }
                (FORCED_CLOSED, _) => return Ok(Permit::Unchecked),
                (_, CLOSED) if word & FLAGS == 0 => return Ok(Permit::Fast { epoch: epoch(word) }),
                (_, CLOSED) => return Ok(Permit::Closed { epoch: epoch(word) }),
                (_, OPEN) => {
                    let now = self.now();
                    let until = self
                        .last_error
                        .load(Ordering::Acquire)
                        .saturating_add(nanos(self.open_for(word)));
                    if now < until {
                        return Err(Rejected::new(Reason::Open {
                            circuit: self.circuit(),
                            retry_in: Duration::from_nanos(until - now),
                        }));
                    }
                    match self.swap(word, enter(word, HALF_OPEN) + PROBE) {
                        Ok(full) => return Ok(Permit::probe(full)),
                        Err(seen) => word = seen,
                    }
                }
                _ => {
                    if (word & PROBES) / PROBE >= u64::from(self.config.load().half_open_calls) {
                        return Err(Rejected::new(Reason::ProbesBusy {
                            circuit: self.circuit(),
                        }));
                    }
                    match self.state.compare_exchange_weak(
                        word,
                        word + PROBE,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Ok(Permit::probe(lift(floor, epoch(word)))),
                        Err(seen) => word = seen,
                    }
                }
            }
        }
    }

    #[inline(always)]
    pub(crate) fn on_success(&self, permit: Permit) {
        match permit {
            // The count rule has nothing to do on a success: no write, no clock.
            Permit::Fast { .. } => {}
            Permit::Closed { epoch: e } => {
                if self.rate.load(Ordering::Relaxed) {
                    self.rate_success(e);
                }
            }
            Permit::Probe { .. } => self.probe_done(permit, true),
            Permit::Unchecked | Permit::Bypass => {}
        }
    }

    /// [`on_success`](Self::on_success) for a permit kept as [`Permit::bits`]: nothing to do but
    /// for a probe or under the rate rule.
    #[inline(always)]
    pub(crate) fn on_success_bits(&self, bits: u64) {
        if bits & (RATE | Permit::PROBE) == 0 {
            return;
        }
        if bits & Permit::PROBE == 0 {
            self.rate_success(epoch(bits));
        } else {
            self.probe_done(Permit::from_bits(bits), true);
        }
    }

    #[inline(never)]
    fn rate_success(&self, e: u32) {
        self.rate_success_inline(e);
    }

    /// A success under the rate rule, of a call admitted in epoch `e`: counted in the window
    /// unless the breaker has moved on since (opened, and closed with a clean window).
    #[inline(always)]
    fn rate_success_inline(&self, e: u32) {
        if epoch(self.state.load(Ordering::Relaxed)) == e {
            self.window.rate.record_success(self);
        }
    }

    pub(crate) fn on_error(&self, permit: Permit) {
        if matches!(permit, Permit::Unchecked | Permit::Bypass) {
            return;
        }
        let now = self.now();
        self.last_error.fetch_max(now, Ordering::AcqRel);
        let floor = self.epochs.load(Ordering::Acquire);
        let word = self.state.load(Ordering::Acquire);
        match permit {
            Permit::Fast { epoch: e } | Permit::Closed { epoch: e }
                if epoch(word) == e && word & PHASE == CLOSED =>
            {
                let window = &self.window;
                let trips = match self.config.load().rule {
                    Rule::Count { .. } => window.count.record_error(now, self.window_floor(now)),
                    Rule::Rate { rate, min_calls } => {
                        window.rate.record_error(now);
                        let (calls, errors) = window.rate.totals(now);
                        calls >= u64::from(min_calls) && errors as f64 >= rate * calls as f64
                    }
                };
                if trips && self.swap(word, enter(word, OPEN)).is_ok() {
                    // Whatever the window held is history once the breaker opens: it closes
                    // with a clean one.
                    window.clear();
                }
            }
            Permit::Probe { .. } => {
                let mut word = word;
                while Self::live(permit, floor, word) {
                    let streak = if word & STREAKS == STREAKS { 0 } else { STREAK };
                    match self.swap(word, enter(word, OPEN) + streak) {
                        Ok(_) => break,
                        Err(seen) => word = seen,
                    }
                }
            }
            _ => {}
        }
    }

    #[inline(always)]
    pub(crate) fn on_ignored(&self, permit: Permit) {
        if let Permit::Probe { .. } = permit {
            self.probe_done(permit, false);
        }
    }

    /// True when `word` is the half-open round that admitted the probe `permit`, with `floor` a
    /// full epoch read before `word`.
    fn live(permit: Permit, floor: u64, word: u64) -> bool {
        matches!(permit, Permit::Probe { epoch: e }
            if word & PHASE == HALF_OPEN && e == Permit::probe_epoch(lift(floor, epoch(word))))
    }

    /// The probe `permit` finished without an error (`success`) or was dropped or ignored
    /// (`!success`).
    fn probe_done(&self, permit: Permit, success: bool) {
        let floor = self.epochs.load(Ordering::Acquire);
        let mut word = self.state.load(Ordering::Acquire);
        while Self::live(permit, floor, word) && word & PROBES != 0 {
            let successes = (word & SUCCESSES) / SUCCESS + u64::from(success);
            if success && successes >= u64::from(self.config.load().success_threshold) {
                // Clear (again) before closing: a call admitted before the breaker opened may have
                // written to the window after it was cleared on opening.
                self.window.clear();
                match self.swap(word, enter(word, CLOSED) & !STREAKS) {
                    Ok(_) => return,
                    Err(seen) => word = seen,
                }
                continue;
            }
            let next = word - PROBE + if success { SUCCESS } else { 0 };
            match self
                .state
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(seen) => word = seen,
            }
        }
    }

    /// Moves from `word` to `next`, publishes the full epoch of `next` and reports the change;
    /// `Ok` carries that full epoch, `Err` the word seen instead.
    fn swap(&self, word: u64, next: u64) -> Result<u64, u64> {
        // Read before the exchange, so never ahead of `word` once the exchange succeeds.
        let floor = self.epochs.load(Ordering::Acquire);
        self.state
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Acquire)?;
        let full = lift(floor, epoch(word))
            + u64::from(epoch(next).wrapping_sub(epoch(word)) & ((1 << EPOCH_BITS) - 1));
        self.epochs.fetch_max(full, Ordering::AcqRel);
        events::changed(self, state_of(word), state_of(next));
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

    /// Closes the breaker, lifts any forcing and forgets every counted error.
    pub fn reset(&self) {
        self.window.clear();
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
        Snapshot {
            state,
            recent_errors,
            recent_calls,
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
    fn window_floor(&self, now: u64) -> u64 {
        now.saturating_sub(nanos(self.config.load().window))
    }

    fn open_for(&self, word: u64) -> Duration {
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
    fn now(&self) -> u64 {
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

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

static DISABLED: AtomicU8 = AtomicU8::new(0);

/// True when `RESILIENCY_DISABLED` is set to `1`, `true`, `yes` or `on` (in any case, surrounding
/// spaces ignored): every breaker then passes calls through untouched (no admission, no timeout,
/// nothing counted), stays [`State::Closed`] and ignores forcing. `0`, `false`, `no`, `off` and
/// the empty string leave breakers on; any other value leaves them on too and is reported once as
/// a `tracing` warning. Read once, on first use.
#[inline]
pub fn disabled() -> bool {
    match DISABLED.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => read_disabled(),
    }
}

#[cold]
fn read_disabled() -> bool {
    let value = std::env::var("RESILIENCY_DISABLED").ok();
    let off = match value.as_deref().map(kill_switch) {
        None => false,
        Some(Some(off)) => off,
        Some(None) => {
            tracing::warn!(
                target: "resiliency::breaker",
                value = value.as_deref(),
                "RESILIENCY_DISABLED is not one of 1, true, yes, on, 0, false, no, off; breakers stay on"
            );
            false
        }
    };
    DISABLED.store(if off { 2 } else { 1 }, Ordering::Relaxed);
    off
}

/// What a value of `RESILIENCY_DISABLED` says: `Some(true)` to disable, `Some(false)` to leave on,
/// `None` when it is not understood.
fn kill_switch(value: &str) -> Option<bool> {
    let value = value.trim();
    let is = |word: &str| value.eq_ignore_ascii_case(word);
    if ["1", "true", "yes", "on"].into_iter().any(is) {
        Some(true)
    } else if value.is_empty() || ["0", "false", "no", "off"].into_iter().any(is) {
        Some(false)
    } else {
        None
    }
}

impl super::window::Clock for Breaker {
    fn now(&self) -> u64 {
        Breaker::now(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        epoch, kill_switch, lift, Permit, CLOSED, EPOCH, EPOCH_BITS, EPOCH_SHIFT, FLAGS, RATE,
        TIMED,
    };

    #[test]
    fn a_full_epoch_is_lifted_from_its_low_bits_and_an_earlier_full_epoch() {
        let turn = 1u64 << EPOCH_BITS;
        for floor in [0, 5, turn - 1, turn, 7 * turn + 3] {
            for ahead in [0, 1, 2, turn / 2, turn - 1] {
                let full = floor + ahead;
                assert_eq!(lift(floor, (full % turn) as u32), full, "{floor} + {ahead}");
            }
        }
    }

    #[test]
    fn a_permit_survives_its_bits_and_keeps_the_low_bits_free() {
        let top = (1u32 << (64 - EPOCH_SHIFT)) - 1;
        for e in [0, 1, 7, 1 << 17, top] {
            for permit in [Permit::Fast { epoch: e }, Permit::Closed { epoch: e }] {
                let bits = permit.bits();
                assert_eq!(bits & 7, 0, "{permit:?}: the stage's bits are free");
                assert_eq!(
                    format!("{:?}", Permit::from_bits(bits)),
                    format!("{permit:?}")
                );
                assert_eq!(epoch(bits), e);
            }
        }
        // A probe keeps its full epoch, far beyond the word's 18 bits.
        for full in [0, 1, 1 << 18, (1 << 18) + 5, 1 << 40, u64::MAX >> 6] {
            let permit = Permit::probe(full);
            let bits = permit.bits();
            assert_eq!(bits & 7, 0, "{permit:?}: the stage's bits are free");
            assert!(matches!(Permit::from_bits(bits), Permit::Probe { epoch } if epoch == full));
        }
        for permit in [Permit::Unchecked, Permit::Bypass] {
            let bits = permit.bits();
            assert_eq!(
                format!("{:?}", Permit::from_bits(bits | 3)),
                format!("{permit:?}")
            );
        }
        // Only a probe has the bit that a dropped call hands back.
        assert_ne!(Permit::Probe { epoch: 1 }.bits() & Permit::PROBE, 0);
        for permit in [
            Permit::Fast { epoch: 1 },
            Permit::Closed { epoch: 1 },
            Permit::Unchecked,
            Permit::Bypass,
        ] {
            assert_eq!(permit.bits() & Permit::PROBE, 0, "{permit:?}");
        }
    }

    #[test]
    fn a_closed_state_word_reads_as_the_permit_its_flags_say() {
        let word = |flags: u64| CLOSED | flags | (5 * EPOCH);
        let untimed = super::Breaker::untimed_bits;
        assert!(matches!(
            Permit::from_bits(untimed(word(0))),
            Permit::Fast { epoch: 5 }
        ));
        assert!(matches!(
            Permit::from_bits(untimed(word(RATE))),
            Permit::Closed { epoch: 5 }
        ));
        assert!(matches!(
            Permit::from_bits(word(FLAGS) & (FLAGS | !(EPOCH - 1))),
            Permit::Closed { epoch: 5 }
        ));
        assert!(matches!(
            Permit::from_bits(word(TIMED) & (FLAGS | !(EPOCH - 1))),
            Permit::Closed { epoch: 5 }
        ));
    }

    #[test]
    fn the_kill_switch_takes_the_spellings_people_write() {
        for on in [
            "1", "true", "TRUE", "True", "yes", "YES", "on", "On", " 1 ", "true\n",
        ] {
            assert_eq!(kill_switch(on), Some(true), "{on:?}");
        }
        for off in ["", "0", "false", "FALSE", "no", "No", "off", "OFF", "  "] {
            assert_eq!(kill_switch(off), Some(false), "{off:?}");
        }
        for unknown in ["2", "disabled", "y", "enable", "tru"] {
            assert_eq!(kill_switch(unknown), None, "{unknown:?}");
        }
    }
}
