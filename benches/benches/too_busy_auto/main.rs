//! Adaptive concurrency limits side by side over a matrix of dependencies, over real HTTP:
//! `cargo bench -p resiliency-benches --bench too_busy_auto`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`), and writes a
//! plot, `benches/out/too_busy_auto.svg`.
//!
//! A learned limit is only as good as the signal it learns from, and a signal that mistakes
//! uneven latency for overload refuses healthy traffic. So `max_in_flight = "auto"` is judged
//! here on many dependencies, not one: four latency shapes, with and without a capacity limit,
//! with capacity that halves or holds that double mid-run, and with calls that fail at once.
//!
//! # The dependency
//!
//! An axum server on 127.0.0.1 whose one handler waits on a dependency (`dependency.rs`). Each
//! request carries its index in the run's schedule (`/?i=N`), and its **hold** and whether it
//! **fails at once** are drawn from a seeded hash of that index: request `i` of a run gets the
//! same hold and the same fate under every contender, so the contenders face exactly the same
//! calls. The latency **shapes**:
//!
//! * **constant**: 20 ms without a capacity limit, 100 ms in a pool;
//! * **bimodal**: 400 ms with probability 1/3, else 5 ms (mean 136.7 ms): a mix of slow and fast
//!   calls that a latency signal must not read as a queue;
//! * **lognormal**: median 10 ms (50 ms in a pool), σ 1 (p99 10x the median);
//! * **Pareto**: minimum 5 ms, α 1.5 (infinite variance), capped at 2 s.
//!
//! And the **capacity regimes**: no limit (every call is served at once, whatever the load: the
//! hold is a `tokio::time::sleep`), or a **pool**, a FIFO gate of slots that a call holds for its
//! hold. The gate is a FIFO of its own rather than tokio's `Semaphore`, so that a change of
//! capacity takes effect at once even with a queue: a `Mutex` over `{ busy, capacity, queue of
//! oneshot senders }`; leaving (a `Drop` guard, so a handler cancelled by a closed connection
//! gives its slot back) hands slots to the head of the line, skipping waiters that were
//! cancelled. A pool's capacity is `slots / E[hold]` calls per second (E[hold] from the shape's
//! parameters). A call that fails at once answers 502 without touching the dependency (no slot,
//! no hold).
//!
//! # The scenarios
//!
//! Names as `AUTO_BENCH_ONLY` takes them (`scenario.rs`); loads in req/s, or as a multiple of the
//! first phase's capacity of the calls that need the dependency (failing calls take no slot, so
//! the rate is that over the healthy share). A run is 8 s, its figures from 1 s on, unless its
//! phases say otherwise.
//!
//! * `nocap-constant`, `nocap-bimodal`, `nocap-lognormal`, `nocap-pareto`: no capacity limit,
//!   each shape, at 500 req/s (and 100 req/s for lognormal). A limiter here should refuse nothing:
//!   there is nothing to protect.
//! * `nocap-failing`: no capacity limit, lognormal holds, and a fifth of calls fail at once (502):
//!   failures that are fast and unrelated to load must not be read as overload.
//! * `pool-constant`: 20 slots held 100 ms (200/s), at 0.5x, 2x and 5x. `pool-bimodal`: 20 slots,
//!   bimodal holds (146/s), at 2x, 3x and 5x. `pool-lognormal`: 20 slots, lognormal holds of
//!   median 50 ms (243/s), at 3x.
//! * `pool-1-slot`, `pool-2-slots` (both at 5x) and `pool-4-slots` (at 3x): a pool of a few slots
//!   held 100 ms (10/s, 20/s, 40/s), where the default `auto_initial` (20) starts far above the
//!   capacity and every window is long (few calls complete in it).
//! * `pool-halving`: 20 slots held 100 ms, halved to 10 slots from 4 s to 8 s of an 11 s run, at
//!   2x and 5x; phases A (measured 1–4 s), B (6–8 s: 2 s to adapt) and C (9–11 s).
//! * `pool-slowdown`: 20 slots whose holds go from 100 ms to 200 ms at 4 s, for good, in a 10 s
//!   run at 2x of the first phase (4x of the slowed one): the same slots, so the same capacity in
//!   calls in flight, but half the calls per second; phases A (measured 1–4 s) and B (7–10 s: 3 s
//!   to adapt).
//! * `pool-failing`: 20 slots held 100 ms, a fifth of calls fail at once, at 2x.
//! * `pool-growing`: 10 slots held 100 ms that become 20 at 4 s, for good, in a 10 s run at 4x of
//!   the first phase (2x of the grown one); phases A (measured 1–4 s) and B (6–10 s: 2 s to
//!   adapt). A limit that only learned to cut would leave half the slots idle.
//!
//! # The server and the contenders
//!
//! The server is a **current-thread** tokio runtime on its own OS thread, pinned to CPU 0, and the
//! load generator a current-thread runtime pinned to CPU 1 (the machine this was written on has
//! 2): the server does little CPU work, so latency comes from the dependency and not from the two
//! fighting over a core. Every run gets a fresh server, a fresh dependency and fresh guards.
//!
//! The same handler (count itself in flight, fail at once or wait for a slot and hold it, answer
//! 200 "done") returns `impl IntoResponse` (its body a `Result<&str, (StatusCode, &str)>`) under
//! each limit; every refusal is a `503`:
//!
//! * `none`: no limit.
//! * `fixed`: `#[resiliency::too_busy(max_in_flight = fixed_limit())]`, a limit tuned for the first
//!   phase, set before each run: a pool's slots; without a capacity limit, 1.5x the highest
//!   in-flight count sampled in the unguarded run at the same load (`none` runs first), rounded up:
//!   what a user sizing a limit from what they saw would pick. (1.5x the *mean* would be crossed
//!   by Poisson noise alone a few percent of the time at the smaller loads.)
//! * `lag only`: `#[resiliency::too_busy]` with its defaults (the runtime's lag; `max_lag` 70 ms).
//!   An I/O-bound server does not lag, so this one is expected to admit everything.
//! * `tower-acc Vegas`, `tower-acc Gradient2`, `tower-acc AIMD`: tower-acc 0.1.1's
//!   `ConcurrencyLimitLayer` with `Vegas::default()`, `Gradient2::default()`, `Aimd::default()`
//!   and its default classifier. tower-acc's `ConcurrencyLimit` waits for a permit in
//!   `poll_ready` (a semaphore), so it queues rather than refuses; tower's `load_shed` outside it
//!   turns "not ready" into an immediate `Overloaded` error, which axum's `HandleErrorLayer` maps
//!   to a 503. The stack is built once per server and mounted with `Router::route_service`: every
//!   request calls a clone of it, and clones share the limiter (its algorithm and semaphore are
//!   behind `Arc`s). (Put on a handler with `Router::layer` instead, the layer would be applied
//!   once per *connection*: `axum::serve` calls `Router::with_state(())` for each connection,
//!   which turns a handler route into a service then.) The run checks this: the algorithm is
//!   wrapped in `Observed`, which forwards both `Algorithm` methods unchanged and records, after
//!   each update, the algorithm's limit (`max_concurrency()`) and its address; "one limiter" in
//!   the checks table says whether every update of a run reached the same one. tower-acc has no
//!   other way to read the limit, so this wrapper is how its limit is plotted.
//! * `ours auto`: `#[resiliency::too_busy(max_in_flight = "auto")]`, the in-flight limit learned
//!   from the guard's own calls; its limit is read with
//!   `resiliency::too_busy::get(site).in_flight_limit()`. `ours auto` and `fixed` are declared once per
//!   run slot (a scenario and load: `server::s01::ours_auto`, ...), so that each run starts from a
//!   fresh guard, as each run starts from a fresh tower-acc limiter; `lag only` learns nothing
//!   (the lag monitor belongs to the server's runtime, which each run makes afresh).
//!
//! **What each limiter sees of a fast failure.** Under `#[too_busy]`, a handler returning
//! `impl IntoResponse` has its body's output turned into an axum `Response`
//! (`__private::into_response`); the guard refuses through `too_busy::Refuse for Response` (a 503
//! with `Retry-After`) and counts a completed call as **failed** when the response's status is a
//! 5xx (`Refuse::failed`: `status().is_server_error()`). So the 502 of a fast failure is a failed
//! call, with its (short) latency, for `max_in_flight = "auto"`; so is a call dropped before it
//! finished (a client that timed out closes its connection and hyper drops the handler). The
//! guard's own 503s are refusals, not calls. tower-acc's default classifier calls a result an
//! error only when it is an `Err`, and the handler service always answers `Ok(Response)`: it sees
//! the 502 as a success, with its short round trip; a dropped call is "canceled", which Vegas,
//! Gradient2 and AIMD ignore.
//!
//! # Unloaded latency
//!
//! Measured per scenario before its runs, for each phase whose holds differ (the slowdown's B is
//! measured apart): on a fresh `none` server, `UNLOADED_REQUESTS` (200) requests of indices that
//! do not fail, in `UNLOADED_LANES` (4) lanes of one request at a time (at most 4 in flight, fewer
//! than any pool's free slots, so no call queues; 4 lanes make the 100 ms holds take 5 s rather
//! than 20), after one warm-up request per lane. Its p99 (nearest rank: the second highest of
//! 200), enough to see the tail of an uneven shape, is the reference of the latency goals.
//!
//! # The load generator
//!
//! **Open loop**: a current-thread runtime on its own thread (pinned to CPU 1) starts each request
//! at its scheduled time, whatever happened to earlier requests, each in its own task, and
//! measures its latency from that **scheduled** time to the end of the response body (no
//! coordinated omission; how late the generator started requests is printed as a check that it
//! kept up). Arrivals are Poisson: exponential gaps drawn from a splitmix64 generator seeded with
//! `SEED`, the same sequence for every contender at a load. The client is reqwest over plain
//! HTTP/1 with keep-alive and no limit on connections, and a total timeout of `TIMEOUT` (2.5 s,
//! above the Pareto cap) per request; timeouts and other errors (reset or refused connections)
//! are counted apart, and so are the 502s. Before each run, 8 requests open pooled connections
//! (the same for every contender), then the server idles 200 ms; after the run, the generator
//! waits for every request to finish or time out before the server is stopped.
//!
//! A sampler thread reads, every `SAMPLE_EVERY` (50 ms) from the run's start, the handlers in
//! flight (an `AtomicUsize` the handler counts itself in, so inside the limit: admitted requests
//! failing, waiting for or holding a slot), the contender's current limit where it has one, and
//! the gate's slots; it also applies each phase's state (slots, hold factor) as the phase starts.
//!
//! # What is printed
//!
//! Per scenario, load, contender and phase, over the phase's measured window: of the requests
//! **scheduled** in the window, the accepted (200) p50 and p99 (nearest rank) and the p99 over the
//! unloaded p99, the refused share (503), the 502 share and timeouts + errors; and **goodput**,
//! the 200s whose answer arrived in the window, per second, and as a share of the phase's
//! capacity (a pool) or of the unguarded run's goodput in the same window (no capacity limit).
//! Goodput counts answers by when they arrived, not by when their request was sent: counted by
//! send time, a contender whose queue grows would be credited with answers the dependency gives
//! after the window, out of the next phase's capacity, and could pass 100% of a phase's capacity.
//!
//! **Convergence after a change**, for every contender: bins from the change to the end of the
//! changed phase; the earliest time from which every bin is good. A bin is a whole number of
//! holds: after a halving, 500 ms (5 holds: the slots left answer in step with one another, so a
//! dependency used to the full answers 25 calls per 250 ms on average but 20 in one 250 ms bin
//! and 30 in the next, and a 90% bound on 250 ms bins would fail a perfect limit); after the
//! slowdown, 400 ms (2 slowed holds). A bin is good when its goodput is at least 90% of the
//! changed capacity and, after a halving, the accepted p99 of the requests sent in it is within
//! 2.5x the unloaded p99.
//!
//! **Goals** for `ours auto`, each with its figures beside it:
//!
//! * (a) no capacity limit, any shape, at most 500 req/s: goodput at least 95% of the unguarded
//!   run's;
//! * (b) pools of constant or mixed (bimodal) holds overloaded 2x to 5x (`pool-constant`,
//!   `pool-bimodal`, the small pools, `pool-halving`, `pool-slowdown`, `pool-failing`,
//!   `pool-growing`), in every phase: goodput
//!   at least 90% of capacity, accepted p99 at most 2.5x the unloaded p99, and at most the
//!   accepted p99 of tower-acc's best in that phase (the algorithm with the highest goodput, within
//!   2% of capacity the lowest p99);
//! * (c) fast failures with the rest healthy (`nocap-failing`): ours refuses (503) at most 0.5% of
//!   the calls the unguarded run answered 200 (request by request, over the whole run; ours'
//!   refusals in all are printed beside);
//! * (d) permanent slowdown: back to 90% of the slowed capacity within 3 s of the change;
//! * (e) capacity halving: followed within 2 s;
//! * (f) pools of 1, 2 and 4 slots: the limit, its mean over the measured window, at most 3 times
//!   the slots (goal (b) applies to them too);
//! * (g) capacity grown: back to 90% of the grown capacity within 2 s.
//!
//! Then the checks per run (requests sent, how late the generator was, how long the run took to
//! drain, the mean in flight and mean limit per phase window, tower-acc's one-limiter check), and
//! the plot: one panel per scenario of interest (`nocap-bimodal`, `nocap-failing`,
//! `pool-bimodal` 5x, `pool-halving` 5x, `pool-slowdown` 2x, `pool-failing` 2x) with the limit
//! over time of ours, of tower-acc's best in the run and of `fixed`, ours' handlers in flight,
//! and the gate's slots as a step line.
//!
//! `AUTO_BENCH_QUICK=1` is for development: every time of the schedule (phases, windows,
//! allowances) is halved, each scenario runs one load, and nothing is published: the tables go
//! to stdout only and the plot to the system's temporary directory. `AUTO_BENCH_ONLY=a,b` runs
//! those scenarios alone and publishes nothing either. `AUTO_BENCH_TRACE=1` prints ours' limit,
//! handlers in flight and the gate's slots every 200 ms of each run to stderr. A full run takes
//! about 20 minutes.

#[path = "../common/mod.rs"]
mod common;
mod dependency;
mod figures;
mod plot;
mod report;
mod run;
mod scenario;
mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{outln, raise_open_files};
use figures::{peak_in_flight, LoadRuns, ScenarioRuns};
use run::{RunSpec, Unloaded};
use scenario::{Load, Plan, Scenario};
use server::{Contender, CONTENDERS, FIXED_HEADROOM};

/// Seed of the Poisson arrivals.
pub(crate) const SEED: u64 = 0x5EED_0A07_0000_0001;

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let started = Instant::now();
    let plan = Plan::from_env();
    assert!(
        Plan::full_pairs() <= server::RUN_SLOTS,
        "declare a run slot in `server.rs` for each scenario and load ({} needed)",
        Plan::full_pairs()
    );
    let open_files = raise_open_files();
    report::intro(&plan, open_files);
    let mut slots = 0..server::RUN_SLOTS;
    let results: Vec<ScenarioRuns<'_>> = plan
        .scenarios
        .iter()
        .map(|scenario| {
            let result = run_scenario(scenario, &mut slots, started);
            report::scenario(&result);
            result
        })
        .collect();
    report::convergence(&results);
    report::goals(&results);
    report::checks(&results);
    write_plot(&plan, &results);
    outln!(
        "\nWhole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        common::load_average()
    );
    if plan.publishes() {
        common::publish("too_busy_auto");
    }
}

/// The unloaded latency, then every load of `scenario`, each in a run slot of its own.
fn run_scenario<'a>(
    scenario: &'a Scenario,
    slots: &mut impl Iterator<Item = usize>,
    started: Instant,
) -> ScenarioRuns<'a> {
    let unloaded = unloaded_per_phase(scenario);
    let loads = scenario
        .loads
        .iter()
        .map(|&load| {
            let slot = slots.next().expect("a run slot per scenario and load");
            run_load(scenario, load, slot, started)
        })
        .collect();
    ScenarioRuns {
        scenario,
        unloaded,
        loads,
    }
}

/// The unloaded latency of each phase; measured once per hold factor (the slots do not matter,
/// no unloaded call waits for one).
fn unloaded_per_phase(scenario: &Scenario) -> Vec<Unloaded> {
    let mut unloaded: Vec<Unloaded> = Vec::new();
    for (i, phase) in scenario.phases.iter().enumerate() {
        let same = scenario.phases[..i]
            .iter()
            .position(|p| p.scale == phase.scale);
        let u = match same {
            Some(j) => unloaded[j],
            None => run::unloaded(scenario, phase),
        };
        unloaded.push(u);
    }
    unloaded
}

/// The seven contenders at `load`, one after another on the same schedule; `none` first, whose
/// in-flight count sets `fixed`'s limit where the dependency has no capacity limit.
fn run_load(scenario: &Scenario, load: Load, slot: usize, started: Instant) -> LoadRuns {
    let rate = scenario.rate(load);
    let schedule: Arc<[Duration]> = dependency::poisson(rate, scenario.length(), SEED).into();
    let first = scenario.first();
    let mut fixed_limit = first.slots.unwrap_or(1);
    let mut unguarded_peak = None;
    let mut runs = Vec::with_capacity(CONTENDERS.len());
    for contender in CONTENDERS {
        let run = run::run(RunSpec {
            scenario,
            contender,
            slot,
            fixed_limit,
            schedule: schedule.clone(),
        });
        if contender == Contender::Unlimited && first.slots.is_none() {
            let peak = peak_in_flight(&run, first);
            unguarded_peak = Some(peak);
            fixed_limit = ((FIXED_HEADROOM * peak as f64).ceil() as u32).max(1);
        }
        eprintln!(
            "too_busy_auto: {} {} {} done ({:.1} s)",
            scenario.name,
            scenario.load_name(load),
            contender.name(),
            started.elapsed().as_secs_f64()
        );
        runs.push(run);
    }
    LoadRuns {
        load,
        runs,
        unguarded_peak,
    }
}

/// Writes the plot: to `benches/out` when the run publishes, else to the temporary directory.
fn write_plot(plan: &Plan, results: &[ScenarioRuns<'_>]) {
    let Some(svg) = plot::plot(results) else {
        outln!("No plot: none of the plotted scenarios ran.");
        return;
    };
    let (dir, shown) = if plan.publishes() {
        (
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("out"),
            Some("benches/out/too_busy_auto.svg"),
        )
    } else {
        (std::env::temp_dir(), None)
    };
    let path = dir.join("too_busy_auto.svg");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, svg)) {
        Ok(()) => outln!(
            "Plot: `{}`.",
            shown.map_or_else(|| path.display().to_string(), str::to_owned)
        ),
        Err(e) => outln!("Plot not written ({}): {e}", path.display()),
    }
}
