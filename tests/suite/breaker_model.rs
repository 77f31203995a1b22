//! A real `Breaker` driven side by side with a small reference model of the documented rules, under
//! tokio's paused clock, with random options and random sequences of calls, clock steps, forcing
//! and resets. After every step the two must agree on admission (and the refusal's kind and
//! `retry_after`), the state, the snapshot and the state changes reported to subscribers.
//!
//! The model is written from the rules in `resiliency_runtime::breaker`'s docs, not from the engine:
//!
//! * Closed, count rule: an error opens the breaker when `error_threshold` errors counted since the
//!   breaker last closed (or was reset), this one included, lie within `error_window`
//!   (`t >= now - error_window`). Successes never reset the count.
//! * Closed, rate rule: calls and errors go into 10 buckets of `error_window / 10`, indexed by the
//!   breaker's clock (ns since creation, plus one); the window is the current bucket and the 9
//!   before. On an error only, the breaker opens when `calls >= min_calls` and
//!   `errors >= failure_rate * calls`. Opening and resetting clear the window.
//! * Open: refused until `last error + open_for`, `open_for = error_timeout * backoff^streak` capped
//!   at `max_error_timeout`; the first call from then on is a probe.
//! * Half-open: a probe error re-opens (streak + 1), `success_threshold` probe successes close
//!   (streak 0, window cleared), an error that does not count only frees the probe's slot.
//! * `force_open` refuses everything, `force_closed` admits everything and records nothing,
//!   `reset` closes, lifts forcing, forgets every counted error and the streak.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};
use resiliency::breaker::{self, State};
use resiliency::{Breaker, Rejected, RejectedKind};

use crate::support;

// ---------------------------------------------------------------------------------------------
// Options and operations
// ---------------------------------------------------------------------------------------------

#[derive(Copy, Clone, Debug)]
enum Rule {
    Count { threshold: u32 },
    Rate { rate: f64, min_calls: u32 },
}

#[derive(Clone, Debug)]
struct Options {
    rule: Rule,
    error_timeout: Duration,
    /// `None`: left to the default, which is `error_timeout`.
    error_window: Option<Duration>,
    success_threshold: u32,
    half_open_calls: u32,
    backoff: f64,
    /// `None`: left to the default, 10 times `error_timeout`.
    max_error_timeout: Option<Duration>,
}

impl Options {
    fn builder(&self, name: &str) -> resiliency::BreakerBuilder {
        let mut b = Breaker::builder(name)
            .error_timeout(self.error_timeout)
            .success_threshold(self.success_threshold)
            .half_open_calls(self.half_open_calls)
            .backoff(self.backoff);
        b = match self.rule {
            Rule::Count { threshold } => b.error_threshold(threshold),
            Rule::Rate { rate, min_calls } => b.failure_rate(rate).min_calls(min_calls),
        };
        if let Some(w) = self.error_window {
            b = b.error_window(w);
        }
        if let Some(m) = self.max_error_timeout {
            b = b.max_error_timeout(m);
        }
        b
    }
}

#[derive(Copy, Clone, Debug)]
enum Op {
    /// A call that returns `Ok`.
    Succeed,
    /// A call that returns an error that counts.
    Fail,
    /// A call through `call_if` whose error does not count.
    Uncounted,
    /// `tokio::time::advance` by this much.
    Advance(Duration),
    /// Advance to the model's half-open moment, plus this many ns (-1, 0, 1); no-op unless open.
    ToHalfOpen(i8),
    /// Advance to the next rate bucket boundary, plus this many ns; no-op under the count rule.
    ToBucketEdge(i8),
    /// Advance to when the oldest error in the window leaves it, plus this many ns.
    ToErrorExpiry(i8),
    ForceOpen,
    ForceClosed,
    Reset,
}

fn duration_choices() -> impl Strategy<Value = Duration> {
    prop::sample::select(vec![
        Duration::from_millis(1),
        Duration::from_millis(3),
        Duration::from_millis(7),
        Duration::from_millis(10),
        Duration::from_millis(50),
        Duration::from_millis(250),
        Duration::from_secs(1),
        Duration::from_millis(2500),
    ])
}

fn options() -> impl Strategy<Value = Options> {
    let rule = prop_oneof![
        (1u32..=5).prop_map(|threshold| Rule::Count { threshold }),
        (prop::sample::select(vec![0.25, 0.5, 1.0]), 1u32..=6)
            .prop_map(|(rate, min_calls)| Rule::Rate { rate, min_calls }),
    ];
    (
        rule,
        duration_choices(),
        prop::option::of(duration_choices()),
        1u32..=3,
        1u32..=2,
        prop::sample::select(vec![1.0, 2.0]),
        prop::option::of(duration_choices()),
    )
        .prop_map(
            |(
                rule,
                error_timeout,
                error_window,
                success_threshold,
                half_open_calls,
                backoff,
                max,
            )| {
                Options {
                    rule,
                    error_timeout,
                    error_window,
                    success_threshold,
                    half_open_calls,
                    backoff,
                    max_error_timeout: max,
                }
            },
        )
}

fn step() -> impl Strategy<Value = Duration> {
    prop_oneof![
        3 => prop::sample::select(vec![
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_micros(1),
            Duration::from_micros(99),
            Duration::from_micros(100),
            Duration::from_millis(1),
            Duration::from_millis(2),
            Duration::from_millis(5),
            Duration::from_millis(10),
            Duration::from_millis(100),
            Duration::from_secs(1),
            Duration::from_secs(3),
        ]),
        1 => (0u64..3_000_000_000).prop_map(Duration::from_nanos),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let offset = || -1i8..=1;
    prop_oneof![
        4 => Just(Op::Succeed),
        5 => Just(Op::Fail),
        1 => Just(Op::Uncounted),
        4 => step().prop_map(Op::Advance),
        2 => offset().prop_map(Op::ToHalfOpen),
        1 => offset().prop_map(Op::ToBucketEdge),
        1 => offset().prop_map(Op::ToErrorExpiry),
        1 => Just(Op::ForceOpen),
        1 => Just(Op::ForceClosed),
        2 => Just(Op::Reset),
    ]
}

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

#[derive(Copy, Clone, Debug, PartialEq)]
enum Phase {
    Closed,
    Open,
    HalfOpen { successes: u32 },
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Forced {
    Open,
    Closed,
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Outcome {
    Ok,
    Counted,
    Uncounted,
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Admission {
    Closed,
    Probe,
    Unchecked,
}

/// Why a call was refused, as far as the public API tells.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Refusal {
    Open { retry_in: Duration },
    ForcedOpen,
    ProbesBusy,
}

const BUCKETS: u64 = 10;

struct Model {
    rule: Rule,
    window: u64,
    error_timeout: u64,
    max_error_timeout: u64,
    backoff: f64,
    success_threshold: u32,
    /// Elapsed ns since the breaker was created.
    now: u64,
    forced: Option<Forced>,
    phase: Phase,
    /// Consecutive failed probes since the breaker last closed.
    streak: u32,
    last_error: u64,
    /// Count rule: times of the errors counted since the breaker last closed or was reset.
    errors: Vec<u64>,
    /// Rate rule: (time, is error) of every call counted since the window was last cleared.
    calls: Vec<(u64, bool)>,
    /// State changes as a subscriber sees them (the raw state: an open breaker stays `Open` until a
    /// call turns it half-open).
    events: Changes,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap()
}

impl Model {
    fn new(o: &Options) -> Self {
        let error_timeout = ns(o.error_timeout);
        let max = o
            .max_error_timeout
            .map_or(error_timeout * 10, ns)
            .max(error_timeout);
        Model {
            rule: o.rule,
            window: ns(o.error_window.unwrap_or(o.error_timeout)),
            error_timeout,
            max_error_timeout: max,
            backoff: o.backoff,
            success_threshold: o.success_threshold,
            now: 0,
            forced: None,
            phase: Phase::Closed,
            streak: 0,
            last_error: 0,
            errors: Vec::new(),
            calls: Vec::new(),
            events: Vec::new(),
        }
    }

    fn open_for(&self) -> u64 {
        if self.streak == 0 || self.backoff == 1.0 {
            return self.error_timeout;
        }
        assert_eq!(self.backoff, 2.0);
        let grown = u128::from(self.error_timeout) << self.streak.min(64);
        grown.min(u128::from(self.max_error_timeout)) as u64
    }

    fn half_opens_at(&self) -> u64 {
        self.last_error + self.open_for()
    }

    /// The state a subscriber last heard of.
    fn raw_state(&self) -> State {
        match (self.forced, self.phase) {
            (Some(Forced::Open), _) => State::ForcedOpen,
            (Some(Forced::Closed), _) => State::ForcedClosed,
            (None, Phase::Closed) => State::Closed,
            (None, Phase::Open) => State::Open,
            (None, Phase::HalfOpen { .. }) => State::HalfOpen,
        }
    }

    /// The state `Breaker::state` reports: open past its open time reads as half-open.
    fn state(&self) -> State {
        match self.raw_state() {
            State::Open if self.now >= self.half_opens_at() => State::HalfOpen,
            s => s,
        }
    }

    fn change(&mut self, f: impl FnOnce(&mut Self)) {
        let from = self.raw_state();
        f(self);
        let to = self.raw_state();
        if from != to {
            self.events.push((from, to));
        }
    }

    /// Rate rule: the bucket a time falls in (the breaker's clock reads elapsed ns plus one).
    fn bucket(&self, t: u64) -> u64 {
        (t + 1) / (self.window / BUCKETS).max(1)
    }

    fn in_rate_window(&self, t: u64) -> bool {
        let (b, current) = (self.bucket(t), self.bucket(self.now));
        b <= current && b + BUCKETS > current
    }

    fn in_count_window(&self, t: u64) -> bool {
        t >= self.now.saturating_sub(self.window)
    }

    /// (calls, errors) in the rate window now.
    fn rate_totals(&self) -> (u64, u64) {
        let mut totals = (0, 0);
        for &(t, error) in &self.calls {
            if self.in_rate_window(t) {
                totals.0 += 1;
                totals.1 += u64::from(error);
            }
        }
        totals
    }

    fn recent_errors(&self) -> u64 {
        match self.rule {
            Rule::Count { .. } => self
                .errors
                .iter()
                .filter(|&&t| self.in_count_window(t))
                .count() as u64,
            Rule::Rate { .. } => self.rate_totals().1,
        }
    }

    fn recent_calls(&self) -> Option<u64> {
        match self.rule {
            Rule::Count { .. } => None,
            Rule::Rate { .. } => Some(self.rate_totals().0),
        }
    }

    fn admit(&mut self) -> Result<Admission, Refusal> {
        match self.forced {
            Some(Forced::Open) => return Err(Refusal::ForcedOpen),
            Some(Forced::Closed) => return Ok(Admission::Unchecked),
            None => {}
        }
        match self.phase {
            Phase::Closed => Ok(Admission::Closed),
            Phase::Open => {
                let at = self.half_opens_at();
                if self.now < at {
                    return Err(Refusal::Open {
                        retry_in: Duration::from_nanos(at - self.now),
                    });
                }
                self.change(|m| m.phase = Phase::HalfOpen { successes: 0 });
                Ok(Admission::Probe)
            }
            // Calls are sequential: no probe is in flight when the next call asks, and
            // `half_open_calls >= 1`, so a slot is always free.
            Phase::HalfOpen { .. } => Ok(Admission::Probe),
        }
    }

    fn open(&mut self) {
        self.change(|m| m.phase = Phase::Open);
        self.calls.clear();
    }

    fn close(&mut self) {
        self.change(|m| {
            m.phase = Phase::Closed;
            m.streak = 0;
        });
        self.errors.clear();
        self.calls.clear();
    }

    fn complete(&mut self, admission: Admission, outcome: Outcome) {
        if outcome == Outcome::Counted && admission != Admission::Unchecked {
            self.last_error = self.last_error.max(self.now);
        }
        match (admission, outcome) {
            (Admission::Unchecked, _) | (_, Outcome::Uncounted) => {}
            (Admission::Closed, outcome) => match self.rule {
                Rule::Count { threshold } => {
                    if outcome == Outcome::Counted {
                        self.errors.push(self.now);
                        let recent = self.recent_errors();
                        if recent >= u64::from(threshold) {
                            self.open();
                        }
                    }
                }
                Rule::Rate { rate, min_calls } => {
                    let error = outcome == Outcome::Counted;
                    self.calls.push((self.now, error));
                    let (calls, errors) = self.rate_totals();
                    if error
                        && calls >= u64::from(min_calls)
                        && errors as f64 >= rate * calls as f64
                    {
                        self.open();
                    }
                }
            },
            (Admission::Probe, Outcome::Ok) => {
                let Phase::HalfOpen { successes } = self.phase else {
                    unreachable!("a probe completes in half-open")
                };
                if successes + 1 >= self.success_threshold {
                    self.close();
                } else {
                    self.phase = Phase::HalfOpen {
                        successes: successes + 1,
                    };
                }
            }
            (Admission::Probe, Outcome::Counted) => {
                self.change(|m| {
                    m.phase = Phase::Open;
                    m.streak += 1;
                });
            }
        }
    }

    fn call(&mut self, outcome: Outcome) -> Result<(), Refusal> {
        let admission = self.admit()?;
        self.complete(admission, outcome);
        Ok(())
    }

    fn force_open(&mut self) {
        self.change(|m| m.forced = Some(Forced::Open));
    }

    fn force_closed(&mut self) {
        self.change(|m| m.forced = Some(Forced::Closed));
    }

    fn reset(&mut self) {
        self.change(|m| {
            m.forced = None;
            m.phase = Phase::Closed;
            m.streak = 0;
        });
        self.errors.clear();
        self.calls.clear();
    }

    /// How far to advance for one of the guided steps, if anything.
    fn guided(&self, op: Op) -> Option<u64> {
        let (target, offset) = match op {
            Op::ToHalfOpen(off) if self.phase == Phase::Open => (self.half_opens_at(), off),
            Op::ToBucketEdge(off) if matches!(self.rule, Rule::Rate { .. }) => {
                let width = (self.window / BUCKETS).max(1);
                // The first elapsed time whose clock reading (elapsed + 1) starts a new bucket.
                ((self.bucket(self.now) + 1) * width - 1, off)
            }
            Op::ToErrorExpiry(off) => match self.rule {
                Rule::Count { .. } => {
                    let oldest = self
                        .errors
                        .iter()
                        .copied()
                        .find(|&t| self.in_count_window(t))?;
                    // Still inside at `oldest + window`, gone one ns later.
                    (oldest + self.window + 1, off)
                }
                Rule::Rate { .. } => {
                    let oldest = self
                        .calls
                        .iter()
                        .map(|&(t, _)| t)
                        .find(|&t| self.in_rate_window(t))?;
                    let width = (self.window / BUCKETS).max(1);
                    ((self.bucket(oldest) + BUCKETS) * width - 1, off)
                }
            },
            _ => return None,
        };
        let target = target.checked_add_signed(i64::from(offset))?;
        target.checked_sub(self.now).filter(|&d| d > 0)
    }
}

// ---------------------------------------------------------------------------------------------
// Driving the real breaker
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
enum AppError {
    Failed,
    Rejected(Rejected),
}

impl From<Rejected> for AppError {
    fn from(r: Rejected) -> Self {
        AppError::Rejected(r)
    }
}

fn refusal(r: &Rejected) -> Refusal {
    match r.kind() {
        RejectedKind::CircuitOpen => match r.retry_after() {
            Some(retry_in) => Refusal::Open { retry_in },
            None => Refusal::ForcedOpen,
        },
        RejectedKind::CircuitHalfOpen => Refusal::ProbesBusy,
        other => panic!("unexpected refusal {other:?}: {r}"),
    }
}

async fn real_call(breaker: &Breaker, outcome: Outcome) -> Result<(), Refusal> {
    let result = match outcome {
        Outcome::Ok => breaker.call(async { Ok::<(), AppError>(()) }).await,
        Outcome::Counted => breaker.call(async { Err(AppError::Failed) }).await,
        Outcome::Uncounted => {
            breaker
                .call_if(|_: &AppError| false, async { Err(AppError::Failed) })
                .await
        }
    };
    match result {
        Ok(()) | Err(AppError::Failed) => Ok(()),
        Err(AppError::Rejected(r)) => Err(refusal(&r)),
    }
}

type Changes = Vec<(State, State)>;

thread_local! {
    /// The state changes of the breaker this thread is checking: (its name, changes so far).
    static CAPTURE: RefCell<Option<(String, Changes)>> = const { RefCell::new(None) };
}

/// Subscribers run on the thread that made the change, which here is the test's own thread.
fn capture_changes() {
    static SUBSCRIBE: Once = Once::new();
    SUBSCRIBE.call_once(|| {
        breaker::subscribe(|change| {
            CAPTURE.with(|c| {
                if let Some((name, seen)) = c.borrow_mut().as_mut() {
                    if *name == *change.name {
                        seen.push((change.from, change.to));
                    }
                }
            })
        });
    });
}

fn take_changes() -> Changes {
    CAPTURE.with(|c| std::mem::take(&mut c.borrow_mut().as_mut().unwrap().1))
}

fn check(options: &Options, ops: &[Op]) -> Result<(), TestCaseError> {
    static CASE: AtomicU64 = AtomicU64::new(0);
    let name = format!("model-{}", CASE.fetch_add(1, Ordering::Relaxed));
    capture_changes();
    CAPTURE.with(|c| *c.borrow_mut() = Some((name.clone(), Vec::new())));

    support::paused_runtime().block_on(async {
        let breaker = options.builder(&name).build().expect("valid options");
        let mut model = Model::new(options);
        let start = tokio::time::Instant::now();
        for (i, &op) in ops.iter().enumerate() {
            let (real, modeled) = match op {
                Op::Succeed | Op::Fail | Op::Uncounted => {
                    let outcome = match op {
                        Op::Succeed => Outcome::Ok,
                        Op::Fail => Outcome::Counted,
                        _ => Outcome::Uncounted,
                    };
                    (
                        Some(real_call(&breaker, outcome).await),
                        Some(model.call(outcome)),
                    )
                }
                Op::Advance(d) => {
                    tokio::time::advance(d).await;
                    model.now += ns(d);
                    (None, None)
                }
                Op::ToHalfOpen(_) | Op::ToBucketEdge(_) | Op::ToErrorExpiry(_) => {
                    if let Some(d) = model.guided(op) {
                        tokio::time::advance(Duration::from_nanos(d)).await;
                        model.now += d;
                    }
                    (None, None)
                }
                Op::ForceOpen => {
                    breaker.force_open();
                    model.force_open();
                    (None, None)
                }
                Op::ForceClosed => {
                    breaker.force_closed();
                    model.force_closed();
                    (None, None)
                }
                Op::Reset => {
                    breaker.reset();
                    model.reset();
                    (None, None)
                }
            };
            let at = format!(
                "after op #{i} {op:?} at t = {:?} (model phase {:?}, streak {}, forced {:?})",
                Duration::from_nanos(model.now),
                model.phase,
                model.streak,
                model.forced
            );
            prop_assert_eq!(
                ns(tokio::time::Instant::now() - start),
                model.now,
                "clock drift {}",
                at
            );
            prop_assert_eq!(real, modeled, "admission {}", at);
            let snapshot = breaker.snapshot();
            prop_assert_eq!(breaker.state(), model.state(), "state {}", at);
            prop_assert_eq!(snapshot.state, model.state(), "snapshot.state {}", at);
            prop_assert_eq!(
                snapshot.open_for,
                Duration::from_nanos(model.open_for()),
                "open_for {}",
                at
            );
            let half_opens_in = (model.forced.is_none()
                && model.phase == Phase::Open
                && model.now < model.half_opens_at())
            .then(|| Duration::from_nanos(model.half_opens_at() - model.now));
            prop_assert_eq!(
                snapshot.half_opens_in,
                half_opens_in,
                "half_opens_in {}",
                at
            );
            // The window is defined while the breaker is closed (forced or not); the rate window is
            // also defined while open, when it must be empty.
            if model.phase == Phase::Closed || matches!(model.rule, Rule::Rate { .. }) {
                prop_assert_eq!(
                    snapshot.recent_errors,
                    model.recent_errors(),
                    "recent_errors {}",
                    at
                );
                prop_assert_eq!(
                    snapshot.recent_calls,
                    model.recent_calls(),
                    "recent_calls {}",
                    at
                );
            }
            prop_assert_eq!(
                take_changes(),
                std::mem::take(&mut model.events),
                "state changes {}",
                at
            );
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn breaker_follows_the_model(
        options in options(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        check(&options, &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Fixed cases: the boundaries the rules spell out, so a regression names itself
// ---------------------------------------------------------------------------------------------

fn count_options(threshold: u32) -> Options {
    Options {
        rule: Rule::Count { threshold },
        error_timeout: Duration::from_millis(10),
        error_window: Some(Duration::from_millis(50)),
        success_threshold: 1,
        half_open_calls: 1,
        backoff: 2.0,
        max_error_timeout: Some(Duration::from_millis(30)),
    }
}

fn assert_model(options: &Options, ops: &[Op]) {
    if let Err(e) = check(options, ops) {
        panic!("{e}");
    }
}

#[test]
fn half_opens_exactly_at_last_error_plus_open_time() {
    use Op::*;
    assert_model(
        &count_options(1),
        &[
            Fail,
            ToHalfOpen(-1),
            Succeed,
            ToHalfOpen(0),
            Fail,
            ToHalfOpen(-1),
            Succeed,
            ToHalfOpen(0),
            Succeed,
        ],
    );
}

#[test]
fn backoff_grows_and_caps_the_open_time() {
    use Op::*;
    assert_model(
        &count_options(1),
        &[
            Fail,
            ToHalfOpen(0),
            Fail,
            ToHalfOpen(0),
            Fail,
            ToHalfOpen(0),
            Fail,
            ToHalfOpen(0),
            Succeed,
            Fail,
        ],
    );
}

#[test]
fn errors_leave_the_count_window_one_ns_after_it_ends() {
    use Op::*;
    assert_model(
        &count_options(2),
        &[
            Fail,
            ToErrorExpiry(-1),
            Fail,
            Reset,
            Advance(Duration::from_millis(1)),
            Fail,
            ToErrorExpiry(0),
            Fail,
        ],
    );
}

#[test]
fn rate_rule_counts_calls_and_forgets_old_buckets() {
    use Op::*;
    let options = Options {
        rule: Rule::Rate {
            rate: 0.5,
            min_calls: 4,
        },
        error_timeout: Duration::from_millis(7),
        error_window: Some(Duration::from_millis(7)),
        ..count_options(1)
    };
    assert_model(
        &options,
        &[
            Succeed,
            Fail,
            ToBucketEdge(0),
            Succeed,
            ToErrorExpiry(-1),
            Fail,
            Succeed,
            Fail,
            ToHalfOpen(0),
            Succeed,
            Fail,
        ],
    );
}

#[test]
fn forcing_admits_or_refuses_everything_and_records_nothing() {
    use Op::*;
    assert_model(
        &count_options(2),
        &[
            Fail,
            ForceClosed,
            Fail,
            Fail,
            ForceOpen,
            Succeed,
            Reset,
            Fail,
            ForceOpen,
            Reset,
            Succeed,
        ],
    );
}

/// `reset` forgets every counted error, including those of the very instant it runs in.
#[test]
fn reset_forgets_errors_of_the_same_instant() {
    use Op::*;
    assert_model(&count_options(2), &[Fail, Reset]);
    assert_model(&count_options(2), &[Fail, Reset, Fail]);
}

/// The rate window's buckets are told apart by a tag of the bucket index; a bucket left untouched
/// for a whole multiple of the tag's period must still read as empty.
#[test]
fn rate_window_forgets_buckets_after_a_long_idle() {
    use Op::*;
    let options = Options {
        rule: Rule::Rate {
            rate: 1.0,
            min_calls: 2,
        },
        error_timeout: Duration::from_millis(10),
        error_window: Some(Duration::from_millis(10)),
        ..count_options(1)
    };
    // 10 buckets of 1 ms; 41,943,040 buckets = 10 * 2^22 (about 11.7 hours) later the old
    // bucket's slot and tag come round again.
    assert_model(
        &options,
        &[Fail, Advance(Duration::from_millis(41_943_040)), Fail],
    );
}

/// `success_threshold` and `half_open_calls` live in 16-bit fields of the state word, so the
/// builder refuses values above 65,535 instead of wrapping.
#[test]
fn success_threshold_above_u16_is_refused() {
    for build in [
        Breaker::builder("model-success-threshold").success_threshold(70_000),
        Breaker::builder("model-success-threshold").half_open_calls(70_000),
    ] {
        let error = build.build().unwrap_err();
        assert!(error.to_string().contains("at most 65535"), "{error}");
    }
    assert!(Breaker::builder("model-success-threshold")
        .success_threshold(65_535)
        .build()
        .is_ok());
}
