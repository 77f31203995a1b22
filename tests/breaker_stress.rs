//! Several OS threads, each with its own current-thread runtime on the real clock, hammering one
//! shared breaker (an `Arc<Breaker>` and a `#[breaker]` fn) through its transitions.
//!
//! What can be asserted without racing the breaker:
//!
//! * Every state change a subscriber hears is a legal edge, and once all threads are joined (every
//!   call has returned, and subscribers run on the thread that made the change before its call
//!   returns) the edges balance: each state is entered as often as it is left, give or take the
//!   first and the final state.
//! * Probes in flight never exceed `half_open_calls`, checked where every admitted call is known to
//!   be a probe: the breaker was opened with nothing in flight and no probe can close or re-open
//!   it, so a counter bumped inside the call body is a lower bound of the probes holding a slot.
//!   (With random outcomes a closed-state call admitted before the breaker opened may still be
//!   running next to the probes, and probes of an earlier half-open round are stale; neither holds
//!   a slot, but a counter cannot tell them apart.)
//! * The striped rate counters lose nothing: with a window and `min_calls` that never trip,
//!   `snapshot().recent_calls` is exactly the number of completed calls from all threads.
//! * Dropped (cancelled) probes give their slot back: the breaker is never left half-open with
//!   no probe running.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as StdInstant};

use resiliency::breaker::{self, State, SubscriptionId};
use resiliency::{Breaker, Rejected, RejectedKind};

mod support;

// ---------------------------------------------------------------------------------------------
// Calls, outcomes and tallies
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
enum AppError {
    /// An error that counts against the breaker.
    Failed,
    /// An error that `counts` says does not count.
    Skipped,
    Rejected(Rejected),
}

impl From<Rejected> for AppError {
    fn from(r: Rejected) -> Self {
        AppError::Rejected(r)
    }
}

fn counts(error: &AppError) -> bool {
    matches!(error, AppError::Failed)
}

#[derive(Copy, Clone, Debug)]
enum Outcome {
    Ok,
    Failed,
    Skipped,
}

/// How a call body spends its time before it answers.
#[derive(Copy, Clone, Debug)]
enum Hold {
    Instant,
    Yield,
    Sleep(Duration),
}

async fn body(outcome: Outcome, hold: Hold) -> Result<(), AppError> {
    match hold {
        Hold::Instant => {}
        Hold::Yield => tokio::task::yield_now().await,
        Hold::Sleep(d) => tokio::time::sleep(d).await,
    }
    match outcome {
        Outcome::Ok => Ok(()),
        Outcome::Failed => Err(AppError::Failed),
        Outcome::Skipped => Err(AppError::Skipped),
    }
}

/// xorshift64*: small, seedable, good enough to pick outcomes.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct Tally {
    attempts: u64,
    ok: u64,
    failed: u64,
    skipped: u64,
    /// Refused because open (or forced open).
    open: u64,
    /// Refused because every probe slot was taken.
    busy: u64,
    /// Cancelled from outside before answering.
    cancelled: u64,
}

impl Tally {
    fn admitted(&self) -> u64 {
        self.ok + self.failed + self.skipped
    }

    fn refused(&self) -> u64 {
        self.open + self.busy
    }

    fn record(&mut self, result: &Result<(), AppError>) {
        self.attempts += 1;
        match result {
            Ok(()) => self.ok += 1,
            Err(AppError::Failed) => self.failed += 1,
            Err(AppError::Skipped) => self.skipped += 1,
            Err(AppError::Rejected(r)) => match r.kind() {
                RejectedKind::CircuitOpen => self.open += 1,
                RejectedKind::CircuitHalfOpen => self.busy += 1,
                other => panic!("unexpected refusal {other:?}: {r}"),
            },
        }
    }

    fn add(&mut self, other: &Tally) {
        self.attempts += other.attempts;
        self.ok += other.ok;
        self.failed += other.failed;
        self.skipped += other.skipped;
        self.open += other.open;
        self.busy += other.busy;
        self.cancelled += other.cancelled;
    }
}

/// Runs `task(thread, task index)` as `tasks` tokio tasks on each of `threads` OS threads, every
/// thread with its own current-thread runtime on the real clock. Returns one tally per thread.
fn on_threads<F, Fut>(threads: usize, tasks: usize, task: F) -> Vec<Tally>
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Tally> + Send + 'static,
{
    let task = Arc::new(task);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let task = task.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let joins: Vec<_> = (0..tasks).map(|i| tokio::spawn(task(t, i))).collect();
                    let mut tally = Tally::default();
                    for join in joins {
                        tally.add(&join.await.expect("a task panicked"));
                    }
                    tally
                })
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a thread panicked"))
        .collect()
}

fn total(tallies: &[Tally]) -> Tally {
    let mut sum = Tally::default();
    for t in tallies {
        sum.add(t);
    }
    sum
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(f)
}

// ---------------------------------------------------------------------------------------------
// State changes
// ---------------------------------------------------------------------------------------------

/// Collects the state changes of the breaker called `name` until dropped.
struct Changes {
    seen: Arc<Mutex<Vec<(State, State)>>>,
    id: SubscriptionId,
}

impl Changes {
    fn watch(name: &'static str) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let id = breaker::subscribe(move |change| {
            if &*change.name == name {
                log.lock().unwrap().push((change.from, change.to));
            }
        });
        Changes { seen, id }
    }

    fn get(&self) -> Vec<(State, State)> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        breaker::unsubscribe(self.id);
    }
}

/// The edges a breaker takes by itself.
fn natural(from: State, to: State) -> bool {
    matches!(
        (from, to),
        (State::Closed, State::Open)
            | (State::Open, State::HalfOpen)
            | (State::HalfOpen, State::Open)
            | (State::HalfOpen, State::Closed)
    )
}

/// The edges with `force_open`, `force_closed` and `reset` in play: any state may be forced or
/// reset to closed; opening and half-opening stay natural edges (never out of a forced state).
fn legal_with_forcing(from: State, to: State) -> bool {
    natural(from, to) || matches!(to, State::ForcedOpen | State::ForcedClosed | State::Closed)
}

/// Checks the natural changes balance: the chain starts closed, and `now` is what `state()`
/// reports once every call has returned (an open breaker past its open time reads as half-open).
fn assert_balanced(changes: &[(State, State)], now: State) {
    let mut edges: HashMap<(State, State), i64> = HashMap::new();
    for &change in changes {
        *edges.entry(change).or_default() += 1;
    }
    let n = |from, to| edges.get(&(from, to)).copied().unwrap_or(0);
    let to_open = n(State::Closed, State::Open) + n(State::HalfOpen, State::Open);
    let to_half = n(State::Open, State::HalfOpen);
    let to_closed = n(State::HalfOpen, State::Closed);
    let net_closed = to_closed - n(State::Closed, State::Open);
    let net_open = to_open - to_half;
    let net_half = to_half - n(State::HalfOpen, State::Open) - to_closed;
    let balance = (net_closed, net_open, net_half);
    let ok = match now {
        State::Closed => balance == (0, 0, 0),
        State::Open => balance == (-1, 1, 0),
        // Either still open (no call since its open time passed) or half-open.
        State::HalfOpen => balance == (-1, 1, 0) || balance == (-1, 0, 1),
        State::ForcedOpen | State::ForcedClosed => false,
    };
    assert!(
        ok,
        "unbalanced changes {balance:?} ending {now:?}: {edges:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Random traffic through every transition
// ---------------------------------------------------------------------------------------------

const THREADS: usize = 4;
const TASKS: usize = 4;
const RUN_FOR: Duration = Duration::from_millis(600);

/// One task's random traffic for `RUN_FOR`: 30% errors, a few uncounted ones, bodies that answer
/// at once, after a yield or after a short sleep.
async fn random_traffic<C, Fut>(seed: u64, call: C) -> Tally
where
    C: Fn(Outcome, Hold) -> Fut,
    Fut: Future<Output = Result<(), AppError>>,
{
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    let deadline = StdInstant::now() + RUN_FOR;
    while StdInstant::now() < deadline {
        let outcome = match rng.below(100) {
            0..=29 => Outcome::Failed,
            30..=34 => Outcome::Skipped,
            _ => Outcome::Ok,
        };
        let hold = match rng.below(10) {
            0..=5 => Hold::Instant,
            6..=8 => Hold::Yield,
            _ => Hold::Sleep(Duration::from_micros(200 + rng.below(800))),
        };
        let result = call(outcome, hold).await;
        tally.record(&result);
        if matches!(result, Err(AppError::Rejected(_))) {
            // Refusals are cheap; let the other tasks of this thread run.
            tokio::task::yield_now().await;
        }
    }
    tally
}

/// Runs random traffic through `call` from every thread, then checks the tallies and the changes,
/// and that the breaker still closes afterwards.
fn hammer_through_transitions<C, Fut>(
    name: &'static str,
    breaker: impl Fn() -> Arc<Breaker>,
    call: C,
) where
    C: Fn(Outcome, Hold) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), AppError>> + Send + 'static,
{
    let changes = Changes::watch(name);
    let tallies = on_threads(THREADS, TASKS, move |t, i| {
        let call = call.clone();
        async move { random_traffic((t * TASKS + i) as u64 + 1, call).await }
    });
    let breaker = breaker();
    let sum = total(&tallies);
    println!("{name}: per thread {tallies:#?}\n{name}: total {sum:?}");
    for (t, tally) in tallies.iter().enumerate() {
        assert_eq!(
            tally.attempts,
            tally.admitted() + tally.refused(),
            "thread {t}: {tally:?}"
        );
        assert!(
            tally.admitted() > 0,
            "thread {t} never got a call through: {tally:?}"
        );
    }
    assert!(sum.open > 0, "never refused as open: {sum:?}");

    let seen = changes.get();
    for &(from, to) in &seen {
        assert!(
            natural(from, to),
            "illegal change {from:?} -> {to:?} in {seen:?}"
        );
    }
    assert_balanced(&seen, breaker.state());
    let times = |edge| seen.iter().filter(|&&c| c == edge).count();
    let (opened, closed) = (
        times((State::Closed, State::Open)),
        times((State::HalfOpen, State::Closed)),
    );
    let reopened = times((State::HalfOpen, State::Open));
    println!("{name}: opened {opened}, re-opened {reopened}, closed {closed}");
    assert!(
        opened >= 3 && closed >= 3 && reopened >= 1,
        "too few cycles: {seen:?}"
    );

    // Nothing is in flight: the breaker must not be wedged. After its longest open time, two
    // successes (success_threshold = 2) close it, whatever state it was left in.
    std::thread::sleep(Duration::from_millis(25));
    block_on(async {
        for _ in 0..2 {
            let result = breaker.call(async { Ok::<_, AppError>(()) }).await;
            assert!(result.is_ok(), "not admitted after the storm: {result:?}");
        }
    });
    assert_eq!(breaker.state(), State::Closed);
}

fn transitions_builder(name: &str) -> resiliency::BreakerBuilder {
    Breaker::builder(name)
        .error_threshold(3)
        .error_window(Duration::from_millis(20))
        .error_timeout(Duration::from_millis(5))
        .success_threshold(2)
        .half_open_calls(2)
        .backoff(2.0)
        .max_error_timeout(Duration::from_millis(20))
}

#[test]
fn shared_breaker_moves_through_every_state_legally() {
    const NAME: &str = "stress-shared";
    let shared = Arc::new(transitions_builder(NAME).build().unwrap());
    let b = shared.clone();
    hammer_through_transitions(
        NAME,
        move || shared.clone(),
        move |outcome, hold| {
            let b = b.clone();
            async move { b.call_if(counts, body(outcome, hold)).await }
        },
    );
}

#[resiliency::breaker(
    name = "stress-macro",
    error_threshold = 3,
    error_window = "20ms",
    error_timeout = "5ms",
    success_threshold = 2,
    half_open_calls = 2,
    backoff = 2.0,
    max_error_timeout = "20ms",
    count_if = counts
)]
async fn flaky(outcome: Outcome, hold: Hold) -> Result<(), AppError> {
    body(outcome, hold).await
}

#[test]
fn breaker_fn_moves_through_every_state_legally() {
    hammer_through_transitions(
        "stress-macro",
        || breaker::get("stress-macro").expect("registered on first call"),
        flaky,
    );
}

// ---------------------------------------------------------------------------------------------
// Forcing and resetting in the middle of traffic
// ---------------------------------------------------------------------------------------------

#[test]
fn forcing_and_resetting_under_traffic_keeps_changes_legal() {
    const NAME: &str = "stress-forced";
    let changes = Changes::watch(NAME);
    let shared = Arc::new(transitions_builder(NAME).build().unwrap());
    let b = shared.clone();
    let tallies = on_threads(THREADS, TASKS, move |t, i| {
        let b = b.clone();
        async move {
            let seed = (t * TASKS + i) as u64 + 100;
            if t == 0 && i == 0 {
                // The operator: force and reset at random every few hundred microseconds.
                let mut rng = Rng::new(seed);
                let deadline = StdInstant::now() + RUN_FOR;
                while StdInstant::now() < deadline {
                    match rng.below(4) {
                        0 => b.force_open(),
                        1 => b.force_closed(),
                        _ => b.reset(),
                    }
                    tokio::time::sleep(Duration::from_micros(500)).await;
                }
                b.reset();
                Tally::default()
            } else {
                random_traffic(seed, |o, h| b.call_if(counts, body(o, h))).await
            }
        }
    });
    let sum = total(&tallies);
    println!("{NAME}: total {sum:?}");
    assert_eq!(sum.attempts, sum.admitted() + sum.refused());
    let seen = changes.get();
    for &(from, to) in &seen {
        assert!(
            legal_with_forcing(from, to),
            "illegal change {from:?} -> {to:?} in {seen:?}"
        );
    }
    for forced in [State::ForcedOpen, State::ForcedClosed] {
        assert!(
            seen.iter().any(|&(_, to)| to == forced),
            "never {forced:?}: {seen:?}"
        );
    }
    assert_ne!(shared.state(), State::ForcedOpen);
    assert_ne!(shared.state(), State::ForcedClosed);
}

#[test]
fn forced_states_admit_or_refuse_everything_and_count_nothing() {
    const NAME: &str = "stress-forced-counts";
    let changes = Changes::watch(NAME);
    // Trips on the first error, were it counting.
    let shared = Arc::new(
        Breaker::builder(NAME)
            .failure_rate(0.5)
            .min_calls(1)
            .error_window(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );

    shared.force_closed();
    let b = shared.clone();
    let tallies = on_threads(THREADS, TASKS, move |t, i| {
        let b = b.clone();
        async move {
            let mut rng = Rng::new((t * TASKS + i) as u64 + 200);
            let mut tally = Tally::default();
            for _ in 0..2_000 {
                let hold = if rng.chance(10) {
                    Hold::Yield
                } else {
                    Hold::Instant
                };
                tally.record(&b.call(body(Outcome::Failed, hold)).await);
            }
            tally
        }
    });
    let sum = total(&tallies);
    assert_eq!(
        sum.failed, sum.attempts,
        "forced closed refused calls: {sum:?}"
    );
    let snapshot = shared.snapshot();
    assert_eq!(snapshot.state, State::ForcedClosed);
    assert_eq!(
        (snapshot.recent_calls, snapshot.recent_errors),
        (Some(0), 0)
    );

    shared.force_open();
    let b = shared.clone();
    let tallies = on_threads(THREADS, TASKS, move |_, _| {
        let b = b.clone();
        async move {
            let mut tally = Tally::default();
            for _ in 0..2_000 {
                let result = b.call(body(Outcome::Ok, Hold::Instant)).await;
                if let Err(AppError::Rejected(r)) = &result {
                    assert_eq!(r.retry_after(), None, "forced open has no retry time");
                }
                tally.record(&result);
            }
            tally
        }
    });
    let sum = total(&tallies);
    assert_eq!(
        sum.open, sum.attempts,
        "forced open admitted calls: {sum:?}"
    );

    shared.reset();
    assert_eq!(shared.state(), State::Closed);
    assert_eq!(
        changes.get(),
        [
            (State::Closed, State::ForcedClosed),
            (State::ForcedClosed, State::ForcedOpen),
            (State::ForcedOpen, State::Closed),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Probe slots
// ---------------------------------------------------------------------------------------------

#[test]
fn probes_in_flight_never_exceed_half_open_calls() {
    const NAME: &str = "stress-probes";
    const SLOTS: u32 = 3;
    let changes = Changes::watch(NAME);
    // No probe can close it (far more successes needed than the test makes) or re-open it (probes
    // succeed or fail with errors that do not count), so every admitted call below is a probe.
    let shared = Arc::new(
        Breaker::builder(NAME)
            .error_threshold(1)
            .error_timeout(Duration::from_millis(5))
            .half_open_calls(SLOTS)
            .success_threshold(60_000)
            .build()
            .unwrap(),
    );
    block_on(async {
        let _ = shared.call(body(Outcome::Failed, Hold::Instant)).await;
    });
    assert_eq!(shared.state(), State::Open);
    std::thread::sleep(Duration::from_millis(6));
    assert_eq!(shared.state(), State::HalfOpen);

    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let b = shared.clone();
    let (flying, peak) = (in_flight.clone(), most.clone());
    let tallies = on_threads(THREADS, 8, move |t, i| {
        let (b, flying, peak) = (b.clone(), flying.clone(), peak.clone());
        async move {
            let mut rng = Rng::new((t * 8 + i) as u64 + 300);
            let mut tally = Tally::default();
            let deadline = StdInstant::now() + Duration::from_millis(400);
            while StdInstant::now() < deadline {
                // Successes hold their slot for a sleep (so they stay few); uncounted errors
                // release theirs at once or after a yield.
                let (outcome, hold) = match rng.below(3) {
                    0 => (Outcome::Ok, Hold::Sleep(Duration::from_micros(500))),
                    1 => (Outcome::Skipped, Hold::Yield),
                    _ => (Outcome::Skipped, Hold::Instant),
                };
                let (flying, peak) = (&flying, &peak);
                let result = b
                    .call_if(counts, async move {
                        let now = flying.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        let result = body(outcome, hold).await;
                        flying.fetch_sub(1, Ordering::SeqCst);
                        result
                    })
                    .await;
                tally.record(&result);
                if matches!(result, Err(AppError::Rejected(_))) {
                    tokio::task::yield_now().await;
                }
            }
            tally
        }
    });
    let sum = total(&tallies);
    let peak = most.load(Ordering::SeqCst);
    println!("{NAME}: peak {peak} probes in flight; total {sum:?}");
    assert!(
        peak <= SLOTS as usize,
        "{peak} probes in flight, half_open_calls = {SLOTS}"
    );
    assert!(
        peak >= 1 && sum.busy > 0,
        "the slots were never contended: {sum:?}"
    );
    assert_eq!(sum.open, 0, "refused as open while half-open: {sum:?}");
    assert!(sum.ok < 60_000);
    assert_eq!(in_flight.load(Ordering::SeqCst), 0);
    assert_eq!(shared.state(), State::HalfOpen);
    assert_eq!(
        changes.get(),
        [(State::Closed, State::Open), (State::Open, State::HalfOpen)]
    );
}

#[test]
fn cancelled_probe_frees_its_slot() {
    let rt = support::paused_runtime();
    rt.block_on(async {
        let b = Breaker::builder("stress-cancelled")
            .error_threshold(1)
            .error_timeout(Duration::from_millis(5))
            .build()
            .unwrap();
        let open_then_wait = || async {
            let _ = b.call(body(Outcome::Failed, Hold::Instant)).await;
            assert_eq!(b.state(), State::Open);
            tokio::time::advance(Duration::from_millis(5)).await;
            assert_eq!(b.state(), State::HalfOpen);
        };

        // A probe abandoned by a timeout around the call.
        open_then_wait().await;
        let abandoned = tokio::time::timeout(
            Duration::from_millis(1),
            b.call(std::future::pending::<Result<(), AppError>>()),
        )
        .await;
        assert!(abandoned.is_err(), "the pending probe cannot answer");
        assert!(b.call(body(Outcome::Ok, Hold::Instant)).await.is_ok());
        assert_eq!(b.state(), State::Closed);

        // A probe polled once (it holds the slot: a second call is refused), then dropped.
        open_then_wait().await;
        let mut probe = Box::pin(b.call(std::future::pending::<Result<(), AppError>>()));
        tokio::select! {
            biased;
            _ = &mut probe => unreachable!("the probe never answers"),
            () = std::future::ready(()) => {}
        }
        let busy = b.call(body(Outcome::Ok, Hold::Instant)).await.unwrap_err();
        assert!(
            matches!(&busy, AppError::Rejected(r) if r.kind() == RejectedKind::CircuitHalfOpen),
            "{busy:?}"
        );
        drop(probe);
        assert!(b.call(body(Outcome::Ok, Hold::Instant)).await.is_ok());
        assert_eq!(b.state(), State::Closed);
    });
}

#[test]
fn cancelled_probes_under_contention_never_wedge_the_breaker() {
    const NAME: &str = "stress-cancel-storm";
    let changes = Changes::watch(NAME);
    let shared = Arc::new(
        Breaker::builder(NAME)
            .error_threshold(2)
            .error_window(Duration::from_millis(20))
            .error_timeout(Duration::from_millis(3))
            .half_open_calls(1)
            .build()
            .unwrap(),
    );
    let b = shared.clone();
    let tallies = on_threads(THREADS, TASKS, move |t, i| {
        let b = b.clone();
        async move {
            let mut rng = Rng::new((t * TASKS + i) as u64 + 400);
            let mut tally = Tally::default();
            let deadline = StdInstant::now() + Duration::from_millis(400);
            while StdInstant::now() < deadline {
                let outcome = if rng.chance(40) {
                    Outcome::Failed
                } else {
                    Outcome::Ok
                };
                let hold = Hold::Sleep(Duration::from_micros(rng.below(3_000)));
                let patience = Duration::from_micros(rng.below(2_000));
                match tokio::time::timeout(patience, b.call(body(outcome, hold))).await {
                    Ok(result) => {
                        tally.record(&result);
                        if matches!(result, Err(AppError::Rejected(_))) {
                            // A refusal answers at once: without a yield this task would starve
                            // the probe that sleeps on the same thread.
                            tokio::task::yield_now().await;
                        }
                    }
                    Err(_) => {
                        tally.attempts += 1;
                        tally.cancelled += 1;
                    }
                }
            }
            tally
        }
    });
    let sum = total(&tallies);
    println!("{NAME}: total {sum:?}");
    assert!(sum.cancelled > 0 && sum.busy > 0, "no contention: {sum:?}");
    let seen = changes.get();
    assert!(
        seen.contains(&(State::Open, State::HalfOpen)),
        "never half-opened: {seen:?}"
    );
    for &(from, to) in &seen {
        assert!(
            natural(from, to),
            "illegal change {from:?} -> {to:?} in {seen:?}"
        );
    }
    assert_balanced(&seen, shared.state());

    // Every call is done or dropped: a slot must be free once the open time has passed.
    std::thread::sleep(Duration::from_millis(5));
    block_on(async {
        let result = shared.call(body(Outcome::Ok, Hold::Instant)).await;
        assert!(result.is_ok(), "wedged: {result:?}");
    });
    assert_eq!(shared.state(), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// Striped counters
// ---------------------------------------------------------------------------------------------

const CALLS_PER_TASK: u64 = 5_000;

/// Random outcomes, none of which can trip the breaker; returns the tally.
async fn counted_traffic<C, Fut>(seed: u64, call: C) -> Tally
where
    C: Fn(Outcome, Hold) -> Fut,
    Fut: Future<Output = Result<(), AppError>>,
{
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    for _ in 0..CALLS_PER_TASK {
        let outcome = match rng.below(10) {
            0..=3 => Outcome::Failed,
            4 => Outcome::Skipped,
            _ => Outcome::Ok,
        };
        let hold = if rng.chance(5) {
            Hold::Yield
        } else {
            Hold::Instant
        };
        tally.record(&call(outcome, hold).await);
    }
    tally
}

/// Which errors a breaker counts: those its `count_if` says count, or every one.
#[derive(Copy, Clone)]
enum Counting {
    CountIf,
    Every,
}

fn assert_nothing_lost(name: &str, breaker: &Breaker, tallies: &[Tally], counting: Counting) {
    let sum = total(tallies);
    println!("{name}: total {sum:?}");
    assert_eq!(
        sum.attempts,
        THREADS as u64 * 2 * TASKS as u64 * CALLS_PER_TASK
    );
    assert_eq!(sum.refused(), 0, "{sum:?}");
    let snapshot = breaker.snapshot();
    assert_eq!(snapshot.state, State::Closed);
    // Uncounted errors are neither calls nor errors.
    let errors = match counting {
        Counting::CountIf => sum.failed,
        Counting::Every => sum.failed + sum.skipped,
    };
    assert_eq!(
        snapshot.recent_calls,
        Some(sum.ok + errors),
        "{snapshot:?} vs {sum:?}"
    );
    assert_eq!(snapshot.recent_errors, errors, "{snapshot:?} vs {sum:?}");
}

#[test]
fn striped_counters_lose_no_calls() {
    const NAME: &str = "stress-counters";
    let changes = Changes::watch(NAME);
    let shared = Arc::new(
        Breaker::builder(NAME)
            .failure_rate(0.01)
            .min_calls(1_000_000_000)
            .error_window(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );
    let b = shared.clone();
    // More threads than stripes, so some threads share a stripe.
    let tallies = on_threads(THREADS * 2, TASKS, move |t, i| {
        let b = b.clone();
        async move {
            let seed = (t * TASKS + i) as u64 + 500;
            counted_traffic(seed, |o, h| b.call_if(counts, body(o, h))).await
        }
    });
    assert_nothing_lost(NAME, &shared, &tallies, Counting::CountIf);
    assert!(changes.get().is_empty());
}

#[resiliency::breaker(
    name = "stress-counters-macro",
    failure_rate = 0.01,
    min_calls = 1000000000,
    error_window = "1h",
    count_if = counts
)]
async fn counted(outcome: Outcome, hold: Hold) -> Result<(), AppError> {
    body(outcome, hold).await
}

#[test]
fn breaker_fn_counters_lose_no_calls() {
    let tallies = on_threads(THREADS * 2, TASKS, |t, i| {
        counted_traffic((t * TASKS + i) as u64 + 600, counted)
    });
    let breaker = breaker::get("stress-counters-macro").expect("registered on first call");
    assert_nothing_lost(
        "stress-counters-macro",
        &breaker,
        &tallies,
        Counting::CountIf,
    );
}

/// The rate rule through `#[breaker]` without `count_if` (a closed call's success recorded in the
/// window at once): every error counts, and every call lands in the window.
#[resiliency::breaker(
    name = "stress-closed-macro",
    failure_rate = 0.01,
    min_calls = 1000000000,
    error_window = "1h"
)]
async fn counted_closed(outcome: Outcome, hold: Hold) -> Result<(), AppError> {
    body(outcome, hold).await
}

#[test]
fn breaker_fn_rate_rule_counters_lose_no_calls() {
    let tallies = on_threads(THREADS * 2, TASKS, |t, i| {
        counted_traffic((t * TASKS + i) as u64 + 900, counted_closed)
    });
    let breaker = breaker::get("stress-closed-macro").expect("registered on first call");
    assert_nothing_lost("stress-closed-macro", &breaker, &tallies, Counting::Every);
}
