//! Adaptive concurrency limits side by side on an I/O-bound server whose dependency halves:
//! `cargo bench -p resilient-benches --bench too_busy_auto`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`), and writes a
//! plot, `benches/out/too_busy_auto.svg`.
//!
//! # The server and its dependency
//!
//! An axum server on 127.0.0.1 whose one handler waits on a dependency of fixed capacity: a gate
//! of `SLOTS` (20) slots, each request holding one for `HOLD` (100 ms, a `tokio::time::sleep`),
//! so the dependency serves `SLOTS / HOLD` = 200 requests per second and a request that finds a
//! free slot is answered in about `HOLD`. The gate is a FIFO of its own rather than tokio's
//! `Semaphore`, so that a change of capacity takes effect at once even with a queue: a `Mutex`
//! over `{ busy, capacity, queue of oneshot senders }`; entering takes a slot if `busy <
//! capacity`, else queues and waits; leaving (a `Drop` guard, so a handler cancelled by a closed
//! connection gives its slot back) frees the slot and hands slots to the queue's head while
//! `busy < capacity`, skipping waiters that were cancelled (a waiter cancelled after being handed
//! a slot gives it back). Every run follows the same capacity schedule, applied by the sampler
//! thread (below) at the phase boundaries:
//!
//! * **phase A**, 0–5 s: 20 slots (200 req/s);
//! * **phase B**, 5–10 s: 10 slots (100 req/s), the dependency's capacity halved;
//! * **phase C**, 10–13 s: 20 slots again.
//!
//! The server is a **current-thread** tokio runtime on its own OS thread, pinned to one CPU, and
//! the load generator runs on a current-thread runtime pinned to the other (the machine this was
//! written on has 2 CPUs): the server does little CPU work, so latency comes from the dependency's
//! queue and not from the two fighting over a core. Each run gets a fresh server and a fresh gate.
//!
//! # The contenders
//!
//! The same handler (count itself in flight, wait for a slot, hold it `HOLD`, answer 200 "done"),
//! returning `impl IntoResponse`, under each limit; every refusal is a `503`:
//!
//! * `none`: no limit.
//! * `fixed 20`: `#[resilient::too_busy(max_in_flight = FIXED_LIMIT)]`, `FIXED_LIMIT` = `SLOTS`: a
//!   fixed limit tuned for phase A.
//! * `lag only`: `#[resilient::too_busy]` with its defaults (the runtime's lag; `max_lag` 70 ms).
//!   An I/O-bound server does not lag, so this one is expected to admit everything.
//! * `tower-acc Vegas`, `tower-acc Gradient2`, `tower-acc AIMD`: tower-acc 0.1.1's
//!   `ConcurrencyLimitLayer` with `Vegas::default()`, `Gradient2::default()`, `Aimd::default()`.
//!   tower-acc's `ConcurrencyLimit` waits for a permit in `poll_ready` (a semaphore), so it
//!   queues rather than refuses; tower's `load_shed` outside it turns "not ready" into an
//!   immediate `Overloaded` error, which axum's `HandleErrorLayer` maps to a 503. The stack is
//!   built once per server and mounted with `Router::route_service`: every request calls a clone
//!   of it, and clones share the limiter (its algorithm and semaphore are behind `Arc`s). (Put on
//!   a handler with `Router::layer` instead, the layer would be applied once per *connection*:
//!   `axum::serve` calls `Router::with_state(())` for each connection, which turns a handler
//!   route into a service then.) The run checks this: the algorithm is wrapped in `Observed`, which
//!   forwards both `Algorithm` methods unchanged and records, after each update, the algorithm's
//!   limit (`max_concurrency()`) and its address; "one limiter" in the checks table says whether
//!   every update of a run reached the same one. tower-acc has no `tracing` feature (nor any
//!   other way to read the limit), so this wrapper is how its limit is plotted. The limit it
//!   enforces can trail the algorithm's for a moment: a lowered limit takes effect as permits
//!   are returned.
//! * `ours auto`: `#[resilient::too_busy(max_in_flight = "auto")]`, the in-flight limit learned
//!   from the guard's own calls; its limit is read with
//!   `resilient::busy::get(site).in_flight_limit()`. The fn is declared once per offered load
//!   (`load_0_5x::ours_auto`, `load_1x::ours_auto`, ...), so that each run starts from a fresh
//!   guard, as each run starts from a fresh tower-acc limiter; `fixed 20` and `lag only` learn
//!   nothing (the in-flight count returns to 0 after each run; the lag monitor belongs to the
//!   server's runtime).
//!
//! # Unloaded latency
//!
//! Measured first: on a `none` server, one warm-up request, then `UNLOADED_REQUESTS` (50)
//! sequential requests; the p50 of their latencies is "unloaded" (about `HOLD` plus the HTTP
//! round trip), and the latency bounds below are multiples of it.
//!
//! # The load generator
//!
//! **Open loop**, per offered load (0.5x, 1x, 2x, 5x of phase A's capacity: 100, 200, 400,
//! 1000 req/s) and contender: a current-thread runtime on its own thread (pinned to the other
//! CPU) starts each request at its scheduled time, whatever happened to earlier requests, for the
//! 13 s of the schedule, each in its own task, and measures its latency from that **scheduled**
//! time to the end of the response body (no coordinated omission; how late the generator started
//! requests is printed as a check that it kept up). Arrivals are Poisson: exponential gaps drawn
//! from a splitmix64 generator seeded with `SEED`, the same sequence for every contender at a
//! load. The client is reqwest over plain HTTP/1 with keep-alive and no limit on connections,
//! and a total timeout of `TIMEOUT` (1 s) per request; timeouts and other errors (reset or refused
//! connections, other statuses) are counted apart. Before each run, 8 requests open pooled
//! connections (the same for every contender), then the server idles 200 ms; after the run, the
//! generator waits for every request to finish or time out before the server is stopped.
//!
//! A sampler thread reads, every `SAMPLE_EVERY` (50 ms) from the run's start, the handlers in
//! flight (an `AtomicUsize` the handler counts itself in, so inside the limit: admitted requests
//! waiting for or holding a slot), the contender's current limit where it has one (`fixed 20`:
//! 20; tower-acc: `Observed`'s record; ours: `busy::get`), and the gate's capacity; it also
//! applies the capacity schedule.
//!
//! # What is printed
//!
//! Per load, contender and phase, over the phase's measured window (A: 1–5 s, B: 7–10 s, the
//! first 2 s after the halving being the allowance for convergence, C: 11–13 s): of the requests
//! **scheduled** in the window, the accepted (200) p50 and p99 (nearest rank), the refused share
//! (503s among the requests sent) and timeouts + errors; and **goodput**, the 200s whose answer
//! arrived in the window, per second, and as a share of the phase's capacity (200/s in A and C,
//! 100/s in B). Goodput counts answers by when they arrived, not by when their request was sent:
//! counted by send time, a contender whose queue grows would be credited with answers the
//! dependency gives after the window, out of the next phase's capacity (a queue built in B is
//! served at twice the pace once C begins), and could pass 100% of a phase's capacity.
//!
//! **Convergence after the halving**, at 2x and 5x: bins of `BIN` (500 ms) from 5 s to 10 s; a
//! bin is good when the accepted p99 of the requests scheduled in it is at most 3x the unloaded
//! latency and its goodput (200s answered in it) at least 90% of phase B's capacity; convergence
//! is the earliest time after 5 s from which every bin up to 10 s is good ("never" if the last
//! one is not). A bin is 5 holds long: the slots answer at a fixed pace, `HOLD`, and the halving
//! leaves the 10 remaining slots in step with one another (they are handed out as the 20 busy
//! ones finish), so a dependency used to the full answers 25 requests per 250 ms on average but
//! 20 in one 250 ms bin and 30 in the next (2 or 3 holds per slot), and a 90% bound on 250 ms bins
//! would fail a perfect limit; over 5 holds, each slot answers 4 or 5 times.
//!
//! **Goals** for `ours auto` (each with its figures beside it):
//!
//! * at 2x and 5x, in phases A and B: goodput at least 90% of the phase's capacity and accepted p99
//!   at most 3x the unloaded latency;
//! * convergence after the halving within 2 s, at 2x and 5x;
//! * against tower-acc's best at each load, the tower-acc algorithm with the highest goodput over
//!   A and B together (as a share of the capacity over those windows; within 2 points, the lower
//!   accepted p99 over A and B): a lower accepted p99 over A and B, at a goodput share no more than
//!   2 points below its, at 2x and 5x;
//! * against `fixed 20` in phase B, the phase it was not tuned for: a lower accepted p99, or a
//!   goodput more than 2% of phase B's capacity above its, at 2x and 5x;
//! * at 0.5x, no refusal in phases A and C (whole), where the load is half the capacity. (In
//!   phase B, 0.5x is all of the halved capacity: with Poisson arrivals a queue then grows without
//!   bound unless something refuses; its refusals are printed beside.)
//!
//! Then the checks per run (requests sent, how late the generator was, how long the run took to
//! drain, the mean in flight and mean limit per phase window, tower-acc's one-limiter check), and
//! the plot: one panel per load 2x and 5x, the limit over time of ours, of tower-acc's best and of
//! `fixed 20`, the gate's capacity as a step line, and ours' handlers in flight.
//!
//! `AUTO_BENCH_QUICK=1` is for development: every time of the schedule (phases, windows, the
//! 2 s convergence goal) is halved, the loads are 0.5x, 2x and 5x, and nothing is published: the
//! tables go to stdout only and the plot to the system's temporary directory.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::error_handling::HandleErrorLayer;
use axum::extract::State;
use axum::handler::Handler;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, MethodRouter};
use axum::Router;
use tokio::sync::oneshot;
use tower::{BoxError, ServiceBuilder};
use tower_acc::{Aimd, Algorithm, ConcurrencyLimitLayer, Gradient2, Vegas};

mod common;
use common::open_loop::{self, request, Kind, Outcome};
use common::outln;
use common::svg::{self, Panel, Stroke};
use common::{load_average, ms, ms_or_dash, pass, percentile, raise_open_files, Server};

/// The dependency's slots in phases A and C (phase B has half).
const SLOTS: u32 = 20;
/// How long a request holds its slot.
const HOLD: Duration = Duration::from_millis(100);
/// `fixed 20`'s limit: the slots of phase A.
const FIXED_LIMIT: u32 = SLOTS;
/// Offered loads, as multiples of phase A's capacity.
const LOADS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];
/// The loads of the convergence figures, the goals and the plot.
const KEY_LOADS: [f64; 2] = [2.0, 5.0];
/// A request not answered within this (from when it was sent) counts as a timeout.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Sequential requests that measure the unloaded latency.
const UNLOADED_REQUESTS: usize = 50;
/// How often the sampler reads the server.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// The bins of the convergence figure: a whole number of holds (see the header).
const BIN: Duration = HOLD.saturating_mul(5);
/// Seed of the Poisson arrivals.
const SEED: u64 = 0x5EED_0A07_0000_0001;
/// Goals: goodput share of capacity, accepted p99 as a multiple of the unloaded latency, and the
/// tie band (a share of capacity) of the comparisons.
const GOAL_GOODPUT: f64 = 0.9;
const GOAL_P99_TIMES: f64 = 3.0;
const TIE: f64 = 0.02;

// ---------------------------------------------------------------------------------------------
// The schedule.

/// One phase of the capacity schedule: from `start` to `end` the gate has `slots`; its figures
/// are taken over the requests scheduled from `measure_from` to `end`.
#[derive(Copy, Clone, Debug)]
struct Phase {
    name: &'static str,
    start: Duration,
    end: Duration,
    measure_from: Duration,
    slots: u32,
}

impl Phase {
    /// The dependency's capacity in this phase, requests per second.
    fn capacity(&self) -> f64 {
        self.slots as f64 / HOLD.as_secs_f64()
    }

    fn window(&self) -> String {
        format!(
            "{}–{} s",
            self.measure_from.as_secs_f64(),
            self.end.as_secs_f64()
        )
    }
}

/// The phases, the loads run and the convergence goal; `AUTO_BENCH_QUICK` halves the times.
struct Plan {
    phases: [Phase; 3],
    loads: Vec<usize>,
    allowance: Duration,
    quick: bool,
}

impl Plan {
    fn from_env() -> Plan {
        let quick = std::env::var("AUTO_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        let scale = if quick { 0.5 } else { 1.0 };
        let s = |seconds: f64| Duration::from_secs_f64(seconds * scale);
        let phase = |name, start, end, measure_from, slots| Phase {
            name,
            start: s(start),
            end: s(end),
            measure_from: s(measure_from),
            slots,
        };
        Plan {
            phases: [
                phase("A", 0.0, 5.0, 1.0, SLOTS),
                phase("B", 5.0, 10.0, 7.0, SLOTS / 2),
                phase("C", 10.0, 13.0, 11.0, SLOTS),
            ],
            loads: if quick {
                vec![0, 2, 3]
            } else {
                vec![0, 1, 2, 3]
            },
            allowance: s(2.0),
            quick,
        }
    }

    /// How long a run sends requests.
    fn run(&self) -> Duration {
        self.phases[2].end
    }

    /// The halving and the phases after it.
    fn halved(&self) -> &Phase {
        &self.phases[1]
    }
}

/// The offsets from the run's start of Poisson arrivals at `rate` per second, up to `run`.
fn poisson(rate: f64, run: Duration, seed: u64) -> Vec<Duration> {
    let mut state = seed;
    let mut t = 0.0;
    let mut out = Vec::new();
    loop {
        // splitmix64, then a uniform in (0, 1].
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        t += -u.ln() / rate;
        if t >= run.as_secs_f64() {
            return out;
        }
        out.push(Duration::from_secs_f64(t));
    }
}

// ---------------------------------------------------------------------------------------------
// The dependency: a FIFO gate whose capacity changes at once.

#[derive(Debug)]
struct Gate {
    state: Mutex<GateState>,
}

#[derive(Debug)]
struct GateState {
    busy: u32,
    capacity: u32,
    queue: VecDeque<oneshot::Sender<()>>,
}

impl Gate {
    fn new(capacity: u32) -> Gate {
        Gate {
            state: Mutex::new(GateState {
                busy: 0,
                capacity,
                queue: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot, waiting in line for one if none is free.
    async fn enter(&self) -> Slot<'_> {
        let granted = {
            let mut state = self.lock();
            if state.busy < state.capacity {
                state.busy += 1;
                return Slot(self);
            }
            let (grant, granted) = oneshot::channel();
            state.queue.push_back(grant);
            granted
        };
        let mut waiting = Waiting {
            gate: self,
            granted: Some(granted),
        };
        let granted = waiting.granted.as_mut().expect("set above");
        granted
            .await
            .expect("a waiter's sender is only dropped by granting it a slot");
        waiting.granted = None;
        Slot(self)
    }

    /// Frees a slot and hands free slots to the head of the line.
    fn leave(&self) {
        let mut state = self.lock();
        state.busy -= 1;
        Self::hand_over(&mut state);
    }

    fn set_capacity(&self, capacity: u32) {
        let mut state = self.lock();
        state.capacity = capacity;
        Self::hand_over(&mut state);
    }

    fn capacity(&self) -> u32 {
        self.lock().capacity
    }

    fn hand_over(state: &mut GateState) {
        while state.busy < state.capacity {
            let Some(grant) = state.queue.pop_front() else {
                break;
            };
            // A waiter cancelled before this has closed its end: skip it.
            if grant.send(()).is_ok() {
                state.busy += 1;
            }
        }
    }
}

/// A slot of the gate, freed when dropped.
struct Slot<'a>(&'a Gate);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// A place in the gate's line. Dropped while waiting (the handler cancelled), it closes its end,
/// and gives back a slot that was handed to it in the meantime.
struct Waiting<'a> {
    gate: &'a Gate,
    granted: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(mut granted) = self.granted.take() {
            granted.close();
            if granted.try_recv().is_ok() {
                self.gate.leave();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The server.

/// One server's state: its dependency, and its handlers in flight.
#[derive(Debug)]
struct App {
    gate: Gate,
    in_flight: AtomicUsize,
}

impl App {
    fn new() -> App {
        App {
            gate: Gate::new(SLOTS),
            in_flight: AtomicUsize::new(0),
        }
    }
}

/// Counts a handler in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Relaxed);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The work of every handler: wait for a slot of the dependency and hold it `HOLD`.
async fn handle(app: &App) -> &'static str {
    let _in_flight = InFlight::enter(&app.in_flight);
    let _slot = app.gate.enter().await;
    tokio::time::sleep(HOLD).await;
    "done"
}

async fn unlimited(State(app): State<Arc<App>>) -> impl IntoResponse {
    handle(&app).await
}

#[resilient::too_busy(max_in_flight = FIXED_LIMIT)]
async fn fixed(State(app): State<Arc<App>>) -> impl IntoResponse {
    handle(&app).await
}

#[resilient::too_busy]
async fn lag_only(State(app): State<Arc<App>>) -> impl IntoResponse {
    handle(&app).await
}

/// `ours auto` under `#[resilient::too_busy(<options>)]`, declared once per load (in `LOADS`'
/// order), each its own guard; `OURS_AUTO_OPTIONS` is the options as written, in parentheses.
macro_rules! ours_auto {
    ($options:tt, $($module:ident),+) => {
        $(
            mod $module {
                use super::*;

                #[resilient::too_busy $options]
                pub(super) async fn ours_auto(State(app): State<Arc<App>>) -> impl IntoResponse {
                    handle(&app).await
                }
            }
        )+

        const OURS_AUTO_OPTIONS: &str = stringify!($options);

        /// The guards' names (`busy::get`), by load.
        const OURS_AUTO_SITES: [&str; LOADS.len()] =
            [$(concat!(module_path!(), "::", stringify!($module), "::ours_auto")),+];

        /// The route of `ours auto` for the load `LOADS[load]`.
        fn ours_auto_route(load: usize) -> MethodRouter<Arc<App>> {
            let mut routes = vec![$(get($module::ours_auto)),+];
            routes.swap_remove(load)
        }
    };
}

#[rustfmt::skip]
ours_auto!((max_in_flight = "auto"), load_0_5x, load_1x, load_2x, load_5x);

/// What tower-acc's algorithm did, as `Observed` records it.
#[derive(Debug, Default)]
struct AccProbe {
    /// `max_concurrency()` after the last update.
    limit: AtomicUsize,
    updates: AtomicU64,
    /// The address of the algorithm the first update reached, and whether another was reached.
    first: AtomicUsize,
    others: AtomicBool,
}

/// A tower-acc algorithm, unchanged, with its limit recorded after each update.
#[derive(Clone, Debug)]
struct Observed<A> {
    algorithm: A,
    probe: Arc<AccProbe>,
}

impl<A: Algorithm> Algorithm for Observed<A> {
    fn max_concurrency(&self) -> usize {
        self.algorithm.max_concurrency()
    }

    fn update(&mut self, rtt: Duration, num_inflight: usize, is_error: bool, is_canceled: bool) {
        self.algorithm
            .update(rtt, num_inflight, is_error, is_canceled);
        let probe = &self.probe;
        probe.limit.store(self.algorithm.max_concurrency(), Relaxed);
        probe.updates.fetch_add(1, Relaxed);
        let here = self as *const Self as usize;
        if let Err(first) = probe.first.compare_exchange(0, here, Relaxed, Relaxed) {
            if first != here {
                probe.others.store(true, Relaxed);
            }
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Algo {
    Vegas,
    Gradient2,
    Aimd,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Contender {
    Unlimited,
    Fixed,
    LagOnly,
    Acc(Algo),
    OursAuto,
}

const CONTENDERS: [Contender; 7] = [
    Contender::Unlimited,
    Contender::Fixed,
    Contender::LagOnly,
    Contender::Acc(Algo::Vegas),
    Contender::Acc(Algo::Gradient2),
    Contender::Acc(Algo::Aimd),
    Contender::OursAuto,
];

impl Contender {
    fn name(self) -> String {
        match self {
            Contender::Unlimited => "none".into(),
            Contender::Fixed => format!("fixed {FIXED_LIMIT}"),
            Contender::LagOnly => "lag only".into(),
            Contender::Acc(Algo::Vegas) => "tower-acc Vegas".into(),
            Contender::Acc(Algo::Gradient2) => "tower-acc Gradient2".into(),
            Contender::Acc(Algo::Aimd) => "tower-acc AIMD".into(),
            Contender::OursAuto => "ours auto".into(),
        }
    }

    fn setup(self) -> String {
        let acc = |algorithm: &str| {
            format!(
                "tower-acc 0.1.1 `ConcurrencyLimitLayer::new({algorithm}::default())` under tower's \
                 `load_shed`, its error a 503 through axum's `HandleErrorLayer`; one limiter per server"
            )
        };
        match self {
            Contender::Unlimited => "the handler alone".into(),
            Contender::Fixed => {
                format!("`#[resilient::too_busy(max_in_flight = {FIXED_LIMIT})]` (the slots of phase A)")
            }
            Contender::LagOnly => "`#[resilient::too_busy]` (defaults: the runtime's lag)".into(),
            Contender::Acc(Algo::Vegas) => acc("Vegas"),
            Contender::Acc(Algo::Gradient2) => acc("Gradient2"),
            Contender::Acc(Algo::Aimd) => acc("Aimd"),
            Contender::OursAuto => {
                format!("`#[resilient::too_busy{OURS_AUTO_OPTIONS}]`, a fresh guard per load")
            }
        }
    }
}

async fn overloaded(_: BoxError) -> StatusCode {
    StatusCode::SERVICE_UNAVAILABLE
}

/// The handler under tower-acc with `algorithm`, behind `load_shed`: built once, so that every
/// request's clone of it shares the one limiter.
fn acc_router<A>(algorithm: A, probe: Arc<AccProbe>, app: Arc<App>) -> Router
where
    A: Algorithm + Clone + Send + Sync + 'static,
{
    probe.limit.store(algorithm.max_concurrency(), Relaxed);
    let limited = ServiceBuilder::new()
        .layer(HandleErrorLayer::new(overloaded))
        .load_shed()
        .layer(ConcurrencyLimitLayer::new(Observed { algorithm, probe }))
        .service(unlimited.with_state(app));
    Router::new().route_service("/", limited)
}

fn router(
    contender: Contender,
    load: usize,
    app: Arc<App>,
    probe: Option<Arc<AccProbe>>,
) -> Router {
    let handler = match contender {
        Contender::Unlimited => get(unlimited),
        Contender::Fixed => get(fixed),
        Contender::LagOnly => get(lag_only),
        Contender::OursAuto => ours_auto_route(load),
        Contender::Acc(algo) => {
            let probe = probe.expect("a tower-acc run has a probe");
            return match algo {
                Algo::Vegas => acc_router(Vegas::default(), probe, app),
                Algo::Gradient2 => acc_router(Gradient2::default(), probe, app),
                Algo::Aimd => acc_router(Aimd::default(), probe, app),
            };
        }
    };
    Router::new().route("/", handler).with_state(app)
}

/// A fresh server of `contender` on its own current-thread runtime and thread, pinned to CPU 0.
fn start_server(
    contender: Contender,
    load: usize,
    app: Arc<App>,
    probe: Option<Arc<AccProbe>>,
) -> Server {
    Server::start(Some(0), move || async move {
        router(contender, load, app, probe)
    })
}

// ---------------------------------------------------------------------------------------------
// The load generator and the sampler.

/// Where a contender's current limit is read.
#[derive(Clone, Debug)]
enum LimitSource {
    None,
    Fixed(u32),
    Ours(&'static str),
    Acc(Arc<AccProbe>),
}

impl LimitSource {
    fn read(&self) -> Option<u32> {
        match self {
            LimitSource::None => None,
            LimitSource::Fixed(limit) => Some(*limit),
            LimitSource::Ours(site) => resilient::busy::get(site).and_then(|g| g.in_flight_limit()),
            LimitSource::Acc(probe) => Some(probe.limit.load(Relaxed) as u32),
        }
    }
}

/// One reading of the sampler.
#[derive(Copy, Clone, Debug)]
struct Sample {
    at: Duration,
    in_flight: usize,
    limit: Option<u32>,
    capacity: u32,
}

/// What one run measured.
struct Run {
    contender: Contender,
    load: usize,
    rate: f64,
    outcomes: Vec<Outcome>,
    samples: Vec<Sample>,
    /// How late the generator started requests, p99 and max.
    send_late_p99: Duration,
    send_late_max: Duration,
    /// From the run's start until the last request had finished.
    wall: Duration,
    /// tower-acc: whether every update reached one and the same limiter.
    one_limiter: Option<bool>,
}

/// The p50, lowest and highest latency of sequential requests to an idle `none` server.
fn unloaded_latency() -> (Duration, Duration, Duration) {
    let server = start_server(Contender::Unlimited, 0, Arc::new(App::new()), None);
    let url = format!("{}/", server.url);
    let mut latencies = std::thread::spawn(move || {
        open_loop::runtime_on(1).block_on(async move {
            let client = open_loop::client(TIMEOUT);
            let get = || async {
                let start = Instant::now();
                let response = client
                    .get(&url)
                    .send()
                    .await
                    .expect("an idle server answers");
                assert_eq!(response.status(), reqwest::StatusCode::OK);
                response.bytes().await.expect("a body");
                start.elapsed()
            };
            get().await; // opens the connection
            let mut latencies = Vec::with_capacity(UNLOADED_REQUESTS);
            for _ in 0..UNLOADED_REQUESTS {
                latencies.push(get().await);
            }
            latencies
        })
    })
    .join()
    .expect("the unloaded client runs");
    latencies.sort();
    (
        percentile(&latencies, 0.5).expect("requests were made"),
        latencies[0],
        latencies[latencies.len() - 1],
    )
}

/// One open-loop run of `schedule` (offsets from the start) against a fresh server of
/// `contender`, its gate following `plan`'s capacity schedule.
fn run(
    plan: &Plan,
    contender: Contender,
    load: usize,
    rate: f64,
    schedule: Arc<[Duration]>,
) -> Run {
    let app = Arc::new(App::new());
    let probe = matches!(contender, Contender::Acc(_)).then(|| Arc::new(AccProbe::default()));
    let limit = match (contender, &probe) {
        (Contender::Fixed, _) => LimitSource::Fixed(FIXED_LIMIT),
        (Contender::OursAuto, _) => LimitSource::Ours(OURS_AUTO_SITES[load]),
        (Contender::Acc(_), Some(probe)) => LimitSource::Acc(probe.clone()),
        _ => LimitSource::None,
    };
    let server = start_server(contender, load, app.clone(), probe.clone());
    let url: Arc<str> = format!("{}/", server.url).into();
    let changes: Vec<(Duration, u32)> = plan.phases[1..]
        .iter()
        .map(|p| (p.start, p.slots))
        .collect();
    let generator = std::thread::spawn(move || {
        open_loop::runtime_on(1).block_on(async move {
            let client = open_loop::client(TIMEOUT);
            open_loop::warm_up(&client, &url).await;

            let sampling = Arc::new(AtomicBool::new(true));
            let t0 = Instant::now();
            let sampler = {
                let (sampling, app) = (sampling.clone(), app.clone());
                std::thread::spawn(move || {
                    let mut samples = Vec::new();
                    let mut changes = changes.into_iter().peekable();
                    let mut next = t0;
                    while sampling.load(Relaxed) {
                        let at = next - t0;
                        while let Some((_, slots)) = changes.next_if(|(from, _)| *from <= at) {
                            app.gate.set_capacity(slots);
                        }
                        samples.push(Sample {
                            at,
                            in_flight: app.in_flight.load(Relaxed),
                            limit: limit.read(),
                            capacity: app.gate.capacity(),
                        });
                        next += SAMPLE_EVERY;
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    }
                    samples
                })
            };
            let mut tasks = tokio::task::JoinSet::new();
            let mut late = Vec::with_capacity(schedule.len());
            for &offset in schedule.iter() {
                let due = t0 + offset;
                if Instant::now() < due {
                    tokio::time::sleep_until(due.into()).await;
                }
                late.push(due.elapsed());
                let (client, url) = (client.clone(), url.clone());
                tasks.spawn(async move { request(&client, &url, due, t0).await });
            }
            let mut outcomes = open_loop::finish(tasks).await;
            let wall = t0.elapsed();
            sampling.store(false, Relaxed);
            let samples = sampler.join().expect("the sampler runs");
            outcomes.sort_by_key(|o| o.at);
            late.sort();
            (outcomes, samples, late, wall)
        })
    });
    let (outcomes, samples, late, wall) = generator.join().expect("the generator runs");
    drop(server);
    Run {
        contender,
        load,
        rate,
        outcomes,
        samples,
        send_late_p99: percentile(&late, 0.99).unwrap_or_default(),
        send_late_max: late.last().copied().unwrap_or_default(),
        wall,
        one_limiter: probe.map(|p| p.updates.load(Relaxed) > 0 && !p.others.load(Relaxed)),
    }
}

// ---------------------------------------------------------------------------------------------
// Figures.

/// Figures of some windows of a run: of the requests scheduled in them, and of the 200s answered
/// in them.
#[derive(Clone, Debug)]
struct Figures {
    sent: usize,
    refused: usize,
    /// Timeouts, errors and statuses other than 200 and 503.
    failed: usize,
    p50: Option<Duration>,
    p99: Option<Duration>,
    /// 200s whose answer arrived in the windows (whenever they were sent).
    answered: usize,
    /// The windows' length, and the requests the dependency could have answered in them.
    seconds: f64,
    possible: f64,
}

impl Figures {
    /// Over `windows`, `(from, to, the dependency's capacity per second)`: the requests
    /// scheduled in them, and the 200s answered in them.
    fn of(run: &Run, windows: &[(Duration, Duration, f64)]) -> Figures {
        let mut accepted = Vec::new();
        let mut f = Figures {
            sent: 0,
            refused: 0,
            failed: 0,
            p50: None,
            p99: None,
            answered: 0,
            seconds: windows.iter().map(|w| (w.1 - w.0).as_secs_f64()).sum(),
            possible: windows
                .iter()
                .map(|w| (w.1 - w.0).as_secs_f64() * w.2)
                .sum(),
        };
        let within = |t: Duration| windows.iter().any(|w| t >= w.0 && t < w.1);
        for o in &run.outcomes {
            if o.kind == Kind::Accepted && within(o.at + o.latency) {
                f.answered += 1;
            }
            if !within(o.at) {
                continue;
            }
            f.sent += 1;
            match o.kind {
                Kind::Accepted => accepted.push(o.latency),
                Kind::Refused => f.refused += 1,
                Kind::OtherStatus | Kind::Timeout | Kind::Error => f.failed += 1,
            }
        }
        accepted.sort();
        f.p50 = percentile(&accepted, 0.5);
        f.p99 = percentile(&accepted, 0.99);
        f
    }

    fn phase(run: &Run, phase: &Phase) -> Figures {
        Figures::of(run, &[(phase.measure_from, phase.end, phase.capacity())])
    }

    /// Phases A and B together.
    fn a_and_b(run: &Run, plan: &Plan) -> Figures {
        let w = |p: &Phase| (p.measure_from, p.end, p.capacity());
        Figures::of(run, &[w(&plan.phases[0]), w(&plan.phases[1])])
    }

    /// 200s answered per second.
    fn goodput(&self) -> f64 {
        self.answered as f64 / self.seconds
    }

    /// Goodput as a share of the dependency's capacity.
    fn share(&self) -> f64 {
        self.answered as f64 / self.possible
    }

    fn refused_share(&self) -> f64 {
        self.refused as f64 / self.sent.max(1) as f64
    }

    /// Meets the goal of goodput and accepted p99 against `bound`.
    fn good(&self, bound: Duration) -> bool {
        self.share() >= GOAL_GOODPUT && self.p99.is_some_and(|p| p <= bound)
    }
}

/// The time after the halving from which every `BIN` up to its end is good (p99 within `bound`,
/// goodput at least `GOAL_GOODPUT` of phase B's capacity); `None` if the last bin is not.
fn convergence(run: &Run, plan: &Plan, bound: Duration) -> Option<Duration> {
    let b = plan.halved();
    let bins = ((b.end - b.start).as_nanos() / BIN.as_nanos()) as u32;
    let good: Vec<bool> = (0..bins)
        .map(|i| {
            let from = b.start + BIN * i;
            Figures::of(run, &[(from, from + BIN, b.capacity())]).good(bound)
        })
        .collect();
    let bad_after = good.iter().rposition(|g| !g);
    match bad_after {
        None => Some(Duration::ZERO),
        Some(last_bad) if last_bad + 1 == good.len() => None,
        Some(last_bad) => Some(BIN * (last_bad as u32 + 1)),
    }
}

/// The mean of the samples taken in `phase`'s measured window, of `value`.
fn mean_in(run: &Run, phase: &Phase, value: impl Fn(&Sample) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = run
        .samples
        .iter()
        .filter(|s| s.at >= phase.measure_from && s.at < phase.end)
        .filter_map(value)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The tower-acc run with the highest goodput share over A and B at `load` (within `TIE`, the
/// lower accepted p99).
fn acc_best<'a>(runs: &'a [Run], plan: &Plan, load: usize) -> Option<&'a Run> {
    let acc: Vec<(&Run, Figures)> = runs
        .iter()
        .filter(|r| r.load == load && matches!(r.contender, Contender::Acc(_)))
        .map(|r| (r, Figures::a_and_b(r, plan)))
        .collect();
    let top = acc.iter().map(|(_, f)| f.share()).fold(f64::MIN, f64::max);
    acc.into_iter()
        .filter(|(_, f)| f.share() >= top - TIE)
        .min_by_key(|(_, f)| f.p99.unwrap_or(Duration::MAX))
        .map(|(r, _)| r)
}

fn pct(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

fn load_name(load: usize) -> String {
    format!("{}x", LOADS[load])
}

// ---------------------------------------------------------------------------------------------
// The plot: hand-written SVG, one panel per key load.

const PLOT_W: f64 = 760.0;
const PANEL_H: f64 = 220.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 90.0;
const GAP: f64 = 70.0;
const CAPACITY_STROKE: Stroke<'static> = Stroke {
    color: "#555",
    width: 2.0,
    dash: Some("6,4"),
};
const FIXED_COLOR: &str = "#ff7f0e";
const ACC_COLOR: &str = "#2ca02c";
const OURS_COLOR: &str = "#1f77b4";
const IN_FLIGHT_STROKE: Stroke<'static> = Stroke {
    color: "#9ecae1",
    width: 1.5,
    dash: None,
};

/// One panel's runs: the load, ours, tower-acc's best and `fixed 20`.
struct PanelRuns<'a> {
    load: usize,
    ours: &'a Run,
    acc_best: Option<&'a Run>,
    fixed: &'a Run,
}

fn plot(panels: &[PanelRuns<'_>], plan: &Plan) -> String {
    let run_end = plan.run().as_secs_f64();
    let in_plot = |s: &&Sample| s.at.as_secs_f64() <= run_end;
    let limit_points = |run: &Run| -> Vec<(f64, Option<f64>)> {
        run.samples
            .iter()
            .filter(in_plot)
            .map(|s| (s.at.as_secs_f64(), s.limit.map(f64::from)))
            .collect()
    };
    // The y axis: up to the highest value plotted, at most 3x the slots (higher values are drawn
    // at the top edge).
    let step = f64::from(SLOTS) / 2.0;
    let highest = panels
        .iter()
        .flat_map(|p| {
            let runs = [Some(p.ours), p.acc_best, Some(p.fixed)];
            runs.into_iter()
                .flatten()
                .flat_map(|r| r.samples.iter().filter(in_plot))
                .flat_map(|s| [s.limit.map(f64::from), Some(s.capacity as f64)])
                .chain(p.ours.samples.iter().map(|s| Some(s.in_flight as f64)))
                .flatten()
                .collect::<Vec<_>>()
        })
        .fold(0.0, f64::max);
    let ceiling = 3.0 * f64::from(SLOTS);
    let top = ((highest * 1.1 / step).ceil() * step).clamp(3.0 * step, ceiling);
    let clipped = highest > top;

    let height = TOP + panels.len() as f64 * (PANEL_H + GAP);
    let width = LEFT + PLOT_W + 30.0;
    let mut svg = svg::open(width, height);
    svg::title(
        &mut svg,
        LEFT,
        22.0,
        &format!(
            "Limits over time: {SLOTS}-slot dependency, {} ms per request, halved from {} s to {} s",
            HOLD.as_millis(),
            plan.halved().start.as_secs_f64(),
            plan.halved().end.as_secs_f64(),
        ),
    );
    let ours_readable = panels
        .iter()
        .any(|p| p.ours.samples.iter().any(|s| s.limit.is_some()));
    let acc_readable = panels.iter().any(|p| p.acc_best.is_some());
    let legend = [
        (CAPACITY_STROKE, "dependency's capacity (slots)".to_string()),
        (
            Stroke::solid(OURS_COLOR),
            if ours_readable {
                "ours auto: limit".into()
            } else {
                "ours auto: limit (not readable: no guard of that name)".into()
            },
        ),
        (
            Stroke::solid(FIXED_COLOR),
            format!("fixed {FIXED_LIMIT}: limit"),
        ),
        (IN_FLIGHT_STROKE, "ours auto: handlers in flight".into()),
        (
            Stroke::solid(ACC_COLOR),
            if acc_readable {
                "tower-acc's best at the load: limit".into()
            } else {
                "tower-acc: no run".into()
            },
        ),
    ];
    for (i, (stroke, label)) in legend.iter().enumerate() {
        let (x, y) = (LEFT + (i % 2) as f64 * 380.0, 44.0 + (i / 2) as f64 * 18.0);
        svg::legend(&mut svg, x, y, *stroke, label);
    }

    let scale = move |v: f64| v / top;
    let tick_labels: Vec<(f64, String)> = (0..=(top / step) as u32)
        .map(|i| f64::from(i) * step)
        .map(|v| (v, format!("{v:.0}")))
        .collect();
    let ticks: Vec<(f64, &str)> = tick_labels.iter().map(|(v, l)| (*v, l.as_str())).collect();
    for (i, p) in panels.iter().enumerate() {
        let title = format!(
            "{}: {:.0} req/s offered{}{}",
            load_name(p.load),
            p.ours.rate,
            p.acc_best.map_or(String::new(), |r| format!(
                "; tower-acc's best here: {}",
                r.contender.name().trim_start_matches("tower-acc ")
            )),
            if clipped {
                format!(" (y clipped at {top:.0})")
            } else {
                String::new()
            },
        );
        let panel = Panel {
            left: LEFT,
            top: TOP + 20.0 + i as f64 * (PANEL_H + GAP),
            width: PLOT_W,
            height: PANEL_H,
            seconds: run_end,
            title: &title,
            scale: &scale,
            ticks: &ticks,
        };
        panel.frame(&mut svg);
        // The capacity as a step line: a vertical at each change.
        let mut capacity: Vec<(f64, Option<f64>)> = Vec::new();
        let mut previous = None;
        for s in p.ours.samples.iter().filter(in_plot) {
            let (t, c) = (s.at.as_secs_f64(), f64::from(s.capacity));
            if let Some(before) = previous.filter(|&b| b != c) {
                capacity.push((t, Some(before)));
            }
            capacity.push((t, Some(c)));
            previous = Some(c);
        }
        let in_flight: Vec<(f64, Option<f64>)> = p
            .ours
            .samples
            .iter()
            .filter(in_plot)
            .map(|s| (s.at.as_secs_f64(), Some(s.in_flight as f64)))
            .collect();
        panel.stroke(&mut svg, IN_FLIGHT_STROKE, &in_flight);
        panel.line(&mut svg, FIXED_COLOR, &limit_points(p.fixed));
        if let Some(acc) = p.acc_best {
            panel.line(&mut svg, ACC_COLOR, &limit_points(acc));
        }
        panel.line(&mut svg, OURS_COLOR, &limit_points(p.ours));
        panel.stroke(&mut svg, CAPACITY_STROKE, &capacity);
    }
    svg::close(&mut svg);
    svg
}

// ---------------------------------------------------------------------------------------------

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let started = Instant::now();
    let plan = Plan::from_env();
    let open_files = raise_open_files();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resilient `#[too_busy]`: adaptive concurrency limits on an I/O-bound server\n");
    if plan.quick {
        outln!("**`AUTO_BENCH_QUICK`: every time halved, fewer loads; not published.**\n");
    }
    outln!(
        "{cores} cores available; open-files limit {open_files}; load average at start: {}.\n",
        load_average()
    );

    let (unloaded, unloaded_min, unloaded_max) = unloaded_latency();
    let bound = unloaded.mul_f64(GOAL_P99_TIMES);
    let [a, b, c] = plan.phases;
    outln!(
        "Dependency: {SLOTS} slots, each request holding one for {} ms: capacity {:.0} req/s in \
         phase A ({}–{} s, {} slots), {:.0} in B ({}–{} s, {} slots), {:.0} in C ({}–{} s, {} \
         slots). Server: axum, one current-thread runtime on CPU 0; load generator on CPU 1. \
         Unloaded latency, {UNLOADED_REQUESTS} sequential requests to `none`: p50 **{}** \
         (lowest {}, highest {}); the latency bound is {GOAL_P99_TIMES}x that, {}. Each run \
         offers Poisson arrivals (seed {SEED:#x}, the same for every contender) for {} s, \
         latency from the scheduled send time, client timeout {} s. Figures per phase over the \
         windows A {}, B {}, C {}: latencies, refusals and errors of the requests sent in the \
         window, goodput of the 200s answered in it.\n",
        HOLD.as_millis(),
        a.capacity(),
        a.start.as_secs_f64(),
        a.end.as_secs_f64(),
        a.slots,
        b.capacity(),
        b.start.as_secs_f64(),
        b.end.as_secs_f64(),
        b.slots,
        c.capacity(),
        c.start.as_secs_f64(),
        c.end.as_secs_f64(),
        c.slots,
        ms(unloaded),
        ms(unloaded_min),
        ms(unloaded_max),
        ms(bound),
        plan.run().as_secs_f64(),
        TIMEOUT.as_secs_f64(),
        a.window(),
        b.window(),
        c.window(),
    );
    outln!("| contender | setup |");
    outln!("|---|---|");
    for contender in CONTENDERS {
        outln!("| {} | {} |", contender.name(), contender.setup());
    }
    outln!();

    let mut runs: Vec<Run> = Vec::new();
    for &load in &plan.loads {
        let rate = LOADS[load] * a.capacity();
        let schedule: Arc<[Duration]> = poisson(rate, plan.run(), SEED).into();
        for contender in CONTENDERS {
            let r = run(&plan, contender, load, rate, schedule.clone());
            eprintln!(
                "too_busy_auto: {} {} done ({:.1} s)",
                load_name(load),
                contender.name(),
                started.elapsed().as_secs_f64()
            );
            runs.push(r);
        }
    }
    let find = |load: usize, contender: Contender| {
        runs.iter()
            .find(|r| r.load == load && r.contender == contender)
    };
    let load_of = |x: f64| {
        LOADS
            .iter()
            .position(|&l| l == x)
            .filter(|l| plan.loads.contains(l))
    };

    for &load in &plan.loads {
        outln!(
            "### {}: {:.0} req/s offered\n",
            load_name(load),
            LOADS[load] * a.capacity()
        );
        outln!(
            "| contender | phase | sent | accepted p50 | accepted p99 | goodput (200s answered/s) | of capacity | refused (503) | timeouts + errors |"
        );
        outln!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for contender in CONTENDERS {
            let Some(r) = find(load, contender) else {
                continue;
            };
            for phase in &plan.phases {
                let f = Figures::phase(r, phase);
                outln!(
                    "| {} | {} ({:.0}/s) | {} | {} | {} | {:.1} | {} | {} | {} |",
                    contender.name(),
                    phase.name,
                    phase.capacity(),
                    f.sent,
                    ms_or_dash(f.p50),
                    ms_or_dash(f.p99),
                    f.goodput(),
                    pct(f.share()),
                    pct(f.refused_share()),
                    f.failed,
                );
            }
        }
        outln!();
    }

    let key_loads: Vec<usize> = KEY_LOADS.iter().filter_map(|&x| load_of(x)).collect();
    outln!("### Convergence after the halving\n");
    outln!(
        "From {} s: the earliest time after it from which every {} ms bin up to {} s has an \
         accepted p99 <= {} ({GOAL_P99_TIMES}x unloaded) over the requests sent in it and a \
         goodput >= {:.0}/s ({:.0}% of phase B's capacity) of 200s answered in it.\n",
        b.start.as_secs_f64(),
        BIN.as_millis(),
        b.end.as_secs_f64(),
        ms(bound),
        GOAL_GOODPUT * b.capacity(),
        100.0 * GOAL_GOODPUT,
    );
    let converged = |r: &Run| match convergence(r, &plan, bound) {
        Some(d) => format!("{:.2} s", d.as_secs_f64()),
        None => "never".into(),
    };
    out_row(
        std::iter::once("contender".to_string()).chain(key_loads.iter().map(|&l| load_name(l))),
    );
    out_row(std::iter::once("---".to_string()).chain(key_loads.iter().map(|_| "---:".into())));
    for contender in CONTENDERS {
        out_row(
            std::iter::once(contender.name()).chain(
                key_loads
                    .iter()
                    .map(|&l| find(l, contender).map_or("—".into(), converged)),
            ),
        );
    }
    outln!();

    // The goals.
    outln!("### Goals: `ours auto`\n");
    outln!("| goal | load | measured | bound | result |");
    outln!("|---|---|---|---|---|");
    for &load in &key_loads {
        let ours = find(load, Contender::OursAuto).expect("every contender ran at each load");
        for phase in &plan.phases[..2] {
            let f = Figures::phase(ours, phase);
            outln!(
                "| goodput and accepted p99, phase {} | {} | {:.1}/s = {} of {:.0}/s; p99 {} | >= {:.0}%; <= {} | {} |",
                phase.name,
                load_name(load),
                f.goodput(),
                pct(f.share()),
                phase.capacity(),
                ms_or_dash(f.p99),
                100.0 * GOAL_GOODPUT,
                ms(bound),
                pass(f.good(bound)),
            );
        }
    }
    for &load in &key_loads {
        let ours = find(load, Contender::OursAuto).expect("every contender ran at each load");
        let c = convergence(ours, &plan, bound);
        outln!(
            "| convergence after the halving | {} | {} | <= {:.1} s | {} |",
            load_name(load),
            converged(ours),
            plan.allowance.as_secs_f64(),
            pass(c.is_some_and(|c| c <= plan.allowance)),
        );
    }
    for &load in &key_loads {
        let ours = find(load, Contender::OursAuto).expect("every contender ran at each load");
        let o = Figures::a_and_b(ours, &plan);
        match acc_best(&runs, &plan, load) {
            Some(best) => {
                let t = Figures::a_and_b(best, &plan);
                let beats = match (o.p99, t.p99) {
                    (Some(op), Some(tp)) => op < tp,
                    (Some(_), None) => true,
                    _ => false,
                };
                let ok = beats && o.share() >= t.share() - TIE;
                outln!(
                    "| beats tower-acc's best (A and B): lower p99 at equal or better goodput | {} | ours p99 {} at {}; {}: p99 {} at {} | p99 < {}; goodput >= {} | {} |",
                    load_name(load),
                    ms_or_dash(o.p99),
                    pct(o.share()),
                    best.contender.name(),
                    ms_or_dash(t.p99),
                    pct(t.share()),
                    ms_or_dash(t.p99),
                    pct(t.share() - TIE),
                    pass(ok),
                );
            }
            None => outln!(
                "| beats tower-acc's best | {} | no tower-acc run | — | {} |",
                load_name(load),
                pass(false)
            ),
        }
    }
    for &load in &key_loads {
        let ours = find(load, Contender::OursAuto).expect("every contender ran at each load");
        let fixed = find(load, Contender::Fixed).expect("every contender ran at each load");
        let (o, f) = (Figures::phase(ours, &b), Figures::phase(fixed, &b));
        let lower_p99 = match (o.p99, f.p99) {
            (Some(op), Some(fp)) => op < fp,
            (Some(_), None) => true,
            _ => false,
        };
        let more_goodput = o.goodput() > f.goodput() + TIE * b.capacity();
        outln!(
            "| beats fixed {FIXED_LIMIT} in phase B: lower p99, or more goodput | {} | ours p99 {}, {:.1}/s; fixed p99 {}, {:.1}/s | p99 < {}, or goodput > {:.1}/s | {} |",
            load_name(load),
            ms_or_dash(o.p99),
            o.goodput(),
            ms_or_dash(f.p99),
            f.goodput(),
            ms_or_dash(f.p99),
            f.goodput() + TIE * b.capacity(),
            pass(lower_p99 || more_goodput),
        );
    }
    if let Some(ours) = load_of(0.5).and_then(|l| find(l, Contender::OursAuto)) {
        // Phases A and C whole: there 0.5x is half the dependency's capacity. In B it is all of
        // it, where a queue grows without bound unless something refuses: shown beside.
        let (below, at) = ([&plan.phases[0], &plan.phases[2]], &plan.phases[1]);
        let refused_in = |phases: &[&Phase]| {
            let (mut refused, mut sent) = (0, 0);
            for o in &ours.outcomes {
                if phases.iter().any(|p| (p.start..p.end).contains(&o.at)) {
                    sent += 1;
                    refused += usize::from(o.kind == Kind::Refused);
                }
            }
            (refused, sent)
        };
        let (refused, sent) = refused_in(&below);
        let (refused_b, sent_b) = refused_in(&[at]);
        outln!(
            "| refuses nothing at half the capacity (phases A and C, whole) | {} | {refused} refused of {sent} (phase B, offered all of its capacity: {refused_b} of {sent_b}) | 0 | {} |",
            load_name(ours.load),
            pass(refused == 0),
        );
    }
    let ours_readable = runs
        .iter()
        .filter(|r| r.contender == Contender::OursAuto)
        .any(|r| r.samples.iter().any(|s| s.limit.is_some()));
    outln!(
        "\ntower-acc's best at a load: the tower-acc algorithm with the highest goodput over A and \
         B together, as a share of the capacity over those windows (within {:.0} points, the lower \
         accepted p99). Ties and bands: {:.0}% of capacity. `ours auto`'s limit {} through \
         `resilient::busy::get`.\n",
        100.0 * TIE,
        100.0 * TIE,
        if ours_readable {
            "was read"
        } else {
            "could not be read (no guard of that name)"
        },
    );

    // The checks.
    outln!("### Checks per run\n");
    outln!(
        "| load | contender | sent | generator late p99 / max | drained in | in flight, mean A / B / C | limit, mean A / B / C | one limiter |"
    );
    outln!("|---|---|---:|---:|---:|---:|---:|---|");
    for r in &runs {
        let means = |value: &dyn Fn(&Sample) -> Option<f64>| {
            plan.phases
                .iter()
                .map(|p| mean_in(r, p, value).map_or("—".into(), |m| format!("{m:.1}")))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        outln!(
            "| {} | {} | {} | {:.1} / {:.1} ms | {:.1} s | {} | {} | {} |",
            load_name(r.load),
            r.contender.name(),
            r.outcomes.len(),
            r.send_late_p99.as_secs_f64() * 1e3,
            r.send_late_max.as_secs_f64() * 1e3,
            r.wall.as_secs_f64(),
            means(&|s| Some(s.in_flight as f64)),
            means(&|s| s.limit.map(f64::from)),
            match r.one_limiter {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "—",
            },
        );
    }
    outln!(
        "\n\"generator late\": how long after its scheduled time the generator started a request \
         (the latencies count it). \"drained in\": from the run's start until the last request \
         finished or timed out. \"in flight\": the handlers admitted and not yet finished \
         (waiting for or holding a slot), sampled every {} ms. \"one limiter\": every update of \
         tower-acc's algorithm in the run reached the same limiter.\n",
        SAMPLE_EVERY.as_millis()
    );

    // The plot.
    let panels: Vec<PanelRuns<'_>> = key_loads
        .iter()
        .map(|&load| PanelRuns {
            load,
            ours: find(load, Contender::OursAuto).expect("every contender ran at each load"),
            acc_best: acc_best(&runs, &plan, load),
            fixed: find(load, Contender::Fixed).expect("every contender ran at each load"),
        })
        .collect();
    let svg = plot(&panels, &plan);
    let (dir, shown) = if plan.quick {
        (std::env::temp_dir(), None)
    } else {
        (
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("out"),
            Some("benches/out/too_busy_auto.svg"),
        )
    };
    let path = dir.join("too_busy_auto.svg");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, svg)) {
        Ok(()) => outln!(
            "Plot: `{}`.",
            shown.map_or_else(|| path.display().to_string(), str::to_owned)
        ),
        Err(e) => outln!("Plot not written ({}): {e}", path.display()),
    }
    outln!(
        "\nWhole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    if !plan.quick {
        common::publish("too_busy_auto");
    }
}

/// One markdown table row of `cells`.
fn out_row(cells: impl Iterator<Item = String>) {
    let mut row = String::from("|");
    for cell in cells {
        let _ = write!(row, " {cell} |");
    }
    outln!("{row}");
}
