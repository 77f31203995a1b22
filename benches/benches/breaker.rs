//! The breaker benchmark: `cargo bench -p resiliency-benches --bench breaker`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`):
//!
//! 1. **Closed-state success path.** One trivial `async fn` returning `Result<u64, E>` called
//!    plainly, under `#[breaker]` (count rule, default options), `#[breaker(timeout = "1s")]`
//!    (count rule with a timeout), `#[breaker(failure_rate = 0.5, min_calls = 20)]` (rate rule)
//!    and `#[breaker(failure_rate = 0.5, min_calls = 20, timeout = "1s")]`, and under the peers
//!    `recloser` (`AsyncRecloser::call`), `failsafe` (its futures API,
//!    `futures::CircuitBreaker::call`), each of these two also under `tokio::time::timeout(1s)`
//!    (what a user of theirs writes for a time limit), and `tower-resilience-circuitbreaker` (a
//!    tower `Service` layered around `service_fn`, called as tower services are: `ready()`, then
//!    `call(i)`), each with its default configuration. Every contender runs on both drivers (below), on 1 thread
//!    and on 2 OS threads sharing one breaker, and its instructions per call are counted by
//!    callgrind. "added" is a contender's figure minus its baseline's on the same driver and
//!    thread count: the plain `async fn` for ours, recloser and failsafe; the same work as a plain
//!    `tower::service_fn`, called the same way (`ready()`, then `call(i)`), for
//!    tower-resilience. A reference line, the plain work as an inner `async` block awaited by the
//!    `async fn` (the shape of every attribute's expansion, with no policy in it), shows what
//!    that shape alone adds.
//! 2. **Keyed registry.** A `KeyedBreaker` holding 1,000,000 keys: ns per lookup of a random
//!    existing key, and bytes per key counted by the global allocator below.
//!
//! The keyed goals: a lookup of a random key among 1,000,000 in under 150 ns, and under 256 bytes
//! per key: a lookup that touches one or two cache lines of the registry's.
//!
//! The closed path's goals: the count and the rate rule add at most 1/5 of the fastest peer's added time, on
//! the worst driver (the one where ours is the largest share of the fastest peer on that driver),
//! for 1 and 2 threads; with `timeout`, the count rule adds at most 1/8 (the rate rule 1/5) of the
//! fastest peer's under `tokio::time::timeout`; the count rule without a timeout adds at most 55
//! instructions per call, on each driver.
//!
//! # How calls are driven
//!
//! Nothing in these calls waits for I/O or a timer (the `timeout` variants make a timer that
//! never fires, the breakers stay closed), so each call's future is polled to completion on the
//! calling thread by one of two drivers (`common::drive`), the same for every contender. In both
//! the call's future is made in place (`pin!(make(i))`: the call writes it straight into a pinned
//! slot of the calling loop) and never moved: a future passed by value to a function that is not
//! inlined is copied right after it was written, which stalls on store forwarding and adds time
//! to the harness's account, more for a larger future. `inlined` polls it in an
//! `#[inline(always)]` loop; `polled` polls it through one `#[inline(never)]`
//! `poll_in_place(Pin<&mut F>, &mut Context)`, as an executor polls a task. A tower service's
//! call is two futures, `ready()` and `call(i)`, each made in place and driven so. The workers
//! are plain OS threads, each inside the context of a current-thread tokio runtime of its own
//! (entered, never running: the `timeout` variants make their timer with its time driver), so no
//! scheduler runs between calls. The waker unparks the thread and is made once per runner, so it
//! costs no call anything; it matters only for tower-resilience, whose `tokio::sync::Mutex`
//! (usable without a runtime) returns `Pending` when contended: the thread then parks until the
//! holder wakes it, as a runtime's worker would. (Busy-polling with a no-op waker instead makes
//! every re-poll take the semaphore's internal lock and slows the holder by orders of magnitude,
//! which says nothing about tower-resilience under a real runtime.) Every breaker is built by one
//! call on the unpinned main thread before sampling: the runtime sizes a rate window's stripes by
//! the CPUs the building thread may use.
//!
//! # How time is measured
//!
//! A sample runs a contender on one driver for a fixed time (`SAMPLE`), in chunks of `CHUNK`
//! calls, and divides the time by the calls made. With 2 threads, both start at a barrier and
//! stop at one flag, so they contend for the whole sample; the figure is the time per call seen
//! by each thread (the mean of the two). Each worker thread is pinned to its own CPU, and each
//! round moves the workers' stacks by another half-kilobyte (see `common::with_stack_shift`).
//! Samples are taken round-robin over the contenders, drivers and thread counts (`SAMPLES`
//! rounds, `common::rounds`) so that drift in the machine spreads evenly. The main table and the
//! goals use each figure's median sample; a second table shows the best samples. On one thread,
//! disturbance by other processes on the (shared) machine only adds time, so the best sample is
//! the undisturbed cost; on two threads it can also remove contention (one worker preempted
//! leaves the other alone), so a best sample can flatter a contended breaker, and the median is
//! the fair figure.
//!
//! # How instructions are counted
//!
//! After the samples, when `valgrind` is on the `PATH`, the benchmark runs its own executable
//! again under `valgrind --tool=callgrind` for each contender and driver, one run after another,
//! in the `BENCH_PROFILE` mode below (the contender alone, 1 thread, the measurement's setting),
//! once for N (`CALLGRIND_CALLS`) and once for 2N calls, and reads each run's total of
//! instructions executed from callgrind's output file: `(I(2N) - I(N)) / N` is the instructions
//! per call, everything the two runs share (start, building, warm-up, exit) cancelling out
//! (`common::callgrind`). Without valgrind the benchmark says so in one line and installs
//! nothing; the instruction goals then read "not counted".
//!
//! `BENCH_QUICK=1` makes a quick run for development (3 samples of 50 ms, N = 20,000) and
//! publishes nothing; `BREAKER_BENCH_ONLY=keyed` runs the keyed registry alone and publishes
//! nothing. `BENCH_PROFILE` runs one contender alone, for callgrind or perf: see
//! [`profile`].
//!
//! # How memory is measured
//!
//! [`Counting`] wraps `std::alloc::System` and, while switched on, adds every allocation's
//! requested size to a live-bytes counter and subtracts every free. It is switched on after the
//! keys were generated, so the benchmark's own key strings are not counted; what is counted is
//! everything the registry allocates (its copy of each key, the breaker, the map's entries and
//! tables). The allocator's own per-block overhead is not included; the process's resident-set
//! growth is printed beside it for reference.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use resiliency::breaker;

mod common;
use common::cost::{
    added, clones_of, in_chunks, measure, or_dash, print_table, Contender, Figures, Grid,
    Instructions, Plan, Role,
};
use common::crate_version;
use common::drive::Driver;
use common::outln;
use common::{
    current_thread_runtime, group, load_average, median, pass, plain, plain_boxed, sample_threads,
    work, CallError,
};

/// How long one sample runs each contender (`BENCH_QUICK`: 50 ms).
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the best and the median are reported (`BENCH_QUICK`: 3).
const SAMPLES: usize = 9;
/// N of the instruction counts: callgrind runs each contender for N and 2N calls per driver
/// (`BENCH_QUICK`: 20,000).
const CALLGRIND_CALLS: u64 = 200_000;
/// Goal: the count and the rate rule add at most 1/GOAL_RATIO of the fastest peer's added time.
const GOAL_RATIO: f64 = 5.0;
/// Goal: the count rule with `timeout` adds at most 1/GOAL_TIMEOUT_RATIO of the added time of
/// the fastest peer under `tokio::time::timeout`.
const GOAL_TIMEOUT_RATIO: f64 = 8.0;
/// Goal: added instructions per call of the count rule without a timeout.
const GOAL_COUNT_INSTRUCTIONS: f64 = 55.0;
/// The time limit of the `timeout` variants, ours and the peers'.
const LIMIT: Duration = Duration::from_secs(1);
/// Calls between two looks at the stop flag.
const CHUNK: u64 = 4096;
/// Keys held by the keyed registry.
const KEYS: usize = 1_000_000;
/// Random lookups per keyed round (5 rounds).
const LOOKUPS: usize = 200_000;
/// Goal: ns per lookup of a random existing key among `KEYS` (the benchmark fetching the key
/// included)...
const GOAL_LOOKUP_NS: f64 = 150.0;
/// ... and live bytes per key.
const GOAL_BYTES_PER_KEY: f64 = 256.0;

// ---------------------------------------------------------------------------------------------
// A global allocator that counts live bytes while switched on.

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`; the counters have no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc(layout);
        if !ptr.is_null() && COUNTING.load(Relaxed) {
            LIVE_BYTES.fetch_add(layout.size() as isize, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc_zeroed(layout);
        if !ptr.is_null() && COUNTING.load(Relaxed) {
            LIVE_BYTES.fetch_add(layout.size() as isize, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        if COUNTING.load(Relaxed) {
            LIVE_BYTES.fetch_sub(layout.size() as isize, Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = System.realloc(ptr, layout, new_size);
        if !new.is_null() && COUNTING.load(Relaxed) {
            LIVE_BYTES.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        new
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------------------
// The calls under test.

#[breaker]
async fn count_rule(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[breaker(timeout = "1s")]
async fn count_timeout(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[breaker(failure_rate = 0.5, min_calls = 20)]
async fn rate_rule(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[breaker(failure_rate = 0.5, min_calls = 20, timeout = "1s")]
async fn rate_timeout(x: u64) -> Result<u64, CallError> {
    work(x)
}

/// The shape of every attribute's expansion with no policy in it: the body as an inner `async`
/// block, awaited by the `async fn`. What it adds to the plain call is the cost of that shape.
async fn nested(x: u64) -> Result<u64, CallError> {
    async move { work(x) }.await
}

// ---------------------------------------------------------------------------------------------
// Contenders, in table order (their numbers are `BENCH_PROFILE`'s).

const PLAIN: usize = 0;
const COUNT: usize = 1;
const COUNT_TIMEOUT: usize = 2;
const RATE: usize = 3;
const RATE_TIMEOUT: usize = 4;
const RECLOSER: usize = 5;
const FAILSAFE: usize = 6;
const RECLOSER_TIMEOUT: usize = 7;
const FAILSAFE_TIMEOUT: usize = 8;
const SERVICE_FN: usize = 9;
const RESILIENCE: usize = 11;

fn contenders(lock: &str) -> Vec<Contender> {
    let version = |name: &str| crate_version(lock, name);
    // recloser: `AsyncRecloser` (a clone shares the same `Arc<Recloser>`), default options.
    let recloser = recloser::AsyncRecloser::from(recloser::Recloser::default());
    // failsafe: the futures API (`failsafe::futures::CircuitBreaker::call`), default policy
    // (success rate over a time window, or else consecutive failures). A clone shares the state.
    let failsafe = failsafe::Config::new().build();
    // tower-resilience: its breaker is a tower `Service` middleware, not a function wrapper, so
    // the plain work is a `service_fn` and each call is `ready()` then `call(i)` (a boxed future
    // per call). Clones of the service share one circuit. Default options.
    let resilience = tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .build()
        .expect("default tower-resilience options are valid")
        .layer_fn(tower::service_fn(plain_boxed));
    let all = vec![
        Contender::calls("plain `async fn`", Role::Baseline, PLAIN, (), |_, i| {
            plain(i)
        }),
        Contender::calls(
            "`#[breaker]` count rule (defaults)",
            Role::Ours,
            PLAIN,
            (),
            |_, i| count_rule(i),
        ),
        Contender::calls(
            "`#[breaker(timeout = \"1s\")]` count rule",
            Role::Ours,
            PLAIN,
            (),
            |_, i| count_timeout(i),
        ),
        Contender::calls(
            "`#[breaker(failure_rate = 0.5, min_calls = 20)]`",
            Role::Ours,
            PLAIN,
            (),
            |_, i| rate_rule(i),
        ),
        Contender::calls(
            "`#[breaker(failure_rate = 0.5, min_calls = 20, timeout = \"1s\")]`",
            Role::Ours,
            PLAIN,
            (),
            |_, i| rate_timeout(i),
        ),
        Contender::calls(
            format!("recloser {} (`AsyncRecloser::call`)", version("recloser")),
            Role::Peer,
            PLAIN,
            recloser.clone(),
            |r, i| r.call(plain(i)),
        ),
        Contender::calls(
            format!("failsafe {} (futures `call`)", version("failsafe")),
            Role::Peer,
            PLAIN,
            failsafe.clone(),
            |f, i| failsafe::futures::CircuitBreaker::call(f, plain(i)),
        ),
        Contender::calls(
            format!(
                "recloser {} under `tokio::time::timeout(1s)`",
                version("recloser")
            ),
            Role::Peer,
            PLAIN,
            recloser.clone(),
            |r, i| tokio::time::timeout(LIMIT, r.call(plain(i))),
        ),
        Contender::calls(
            format!(
                "failsafe {} under `tokio::time::timeout(1s)`",
                version("failsafe")
            ),
            Role::Peer,
            PLAIN,
            failsafe.clone(),
            |f, i| {
                tokio::time::timeout(LIMIT, failsafe::futures::CircuitBreaker::call(f, plain(i)))
            },
        ),
        Contender::plain_service(SERVICE_FN),
        Contender::calls(
            "`async fn` awaiting its body as an inner `async` block (no policy)",
            Role::Reference,
            PLAIN,
            (),
            |_, i| nested(i),
        ),
        Contender::requests(
            format!(
                "tower-resilience-circuitbreaker {} (`Service`)",
                version("tower-resilience-circuitbreaker")
            ),
            Role::Peer,
            SERVICE_FN,
            clones_of(resilience),
        ),
    ];
    assert_eq!(all[SERVICE_FN].role, Role::Baseline);
    assert_eq!(all[RESILIENCE].base, SERVICE_FN);
    all
}

/// ns per call of one sample on `threads` threads sharing the contender's breaker, polled by
/// `driver`; `round` picks the stack shift. Each worker enters a current-thread runtime of its
/// own (the timers of the `timeout` variants need its time driver) and calls on its own thread.
fn sample(
    contender: &Contender,
    driver: Driver,
    threads: usize,
    round: usize,
    length: Duration,
) -> (f64, u64) {
    sample_threads(threads, round, length, |timing| {
        let runtime = current_thread_runtime();
        let _context = runtime.enter();
        let mut run = (contender.make)();
        run(driver, CHUNK); // warm up: caches, thread-locals
        timing.timed(CHUNK, || run(driver, CHUNK))
    })
}

/// One call of each contender from this (unpinned) thread, so that every breaker is built here:
/// the runtime sizes a rate window's stripes by the CPUs the building thread may use, which is 1
/// on a pinned worker.
fn build_here(all: &[Contender]) {
    let runtime = current_thread_runtime();
    let _context = runtime.enter();
    for contender in all {
        (contender.make)()(Driver::Inlined, 1);
    }
}

/// Of the `peers`, the one with the lowest added time on driver `d` and thread count `t`: its
/// name (the crate's, and "+ timeout" if under `tokio::time::timeout`) and its added ns.
fn fastest_peer(
    all: &[Contender],
    peers: &[usize],
    ns: &Grid,
    d: usize,
    t: usize,
) -> (String, f64) {
    peers
        .iter()
        .map(|&p| {
            let name = &all[p].name;
            let word = name.split(' ').next().unwrap_or(name);
            let timed = if name.contains("timeout") {
                " + timeout"
            } else {
                ""
            };
            (format!("{word}{timed}"), added(all, ns, p, d, t))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("there are peers")
}

fn closed_path(lock: &str, plan: &Plan) {
    let all = contenders(lock);
    build_here(&all);
    let Figures {
        medians,
        best,
        fewest_calls,
    } = measure(&all, plan.samples, |c, driver, threads, round| {
        sample(c, driver, threads, round, plan.sample)
    });
    let instructions = Instructions::count(&all, plan.callgrind_calls);

    outln!("## Closed-state success path\n");
    outln!(
        "ns per call, median of {} samples of {} ms each (every sample made at least {} calls), \
         with each driver (`inlined`: the future polled in an inlined loop; `polled`: through a \
         non-inlined `poll_in_place(Pin<&mut F>)`, as an executor polls a task; both make the \
         future in place and never copy it) on 1 thread and on 2 OS threads sharing one breaker \
         (time per call as each thread sees it). In parentheses, \"added\": the contender minus \
         the baseline named in \"added vs\", on the same driver and thread count; instructions \
         likewise.\n",
        plan.samples,
        plan.sample.as_millis(),
        group(fewest_calls),
    );
    print_table(&all, &medians, Some(&instructions));
    outln!("\n{}\n", instructions.describe());
    outln!(
        "Best of the same samples (on 1 thread the undisturbed cost; on 2 threads a best sample \
         may be one in which the workers were not both running):\n"
    );
    print_table(&all, &best, None);
    outln!(
        "\nAll contenders: futures made in place and polled to completion on plain OS threads, \
         each inside a current-thread tokio runtime's context (entered, not running: the \
         `timeout` variants make their timer with its time driver, and never wait on it), each \
         worker thread pinned to its own CPU, every breaker built on the unpinned main thread \
         before sampling; default options for every peer. tower-resilience fits as a tower \
         `Service` layer (`ready` + `call`: one boxed future and two `tokio::sync::Mutex` locks \
         per call), not as a function wrapper, so it is compared with the same plain work as a \
         `service_fn` called the same way.\n"
    );
    let sizes: Vec<String> = all
        .iter()
        .map(|c| format!("{} {} B", c.name, c.future_size))
        .collect();
    outln!(
        "Size of the call's future before its first poll (for a service, of the future `call` \
         returns): {}.\n",
        sizes.join(", ")
    );

    outln!(
        "### Goal: our added time is at most 1/{GOAL_RATIO} of the fastest peer's (1/{GOAL_TIMEOUT_RATIO} \
         with `timeout`), on the worst driver (medians)\n"
    );
    outln!(
        "For each rule and thread count, the driver on which our added time is the largest share \
         of the fastest peer's (on that driver): for the rules without `timeout`, of the peers \
         called plainly; with `timeout`, of the peers under `tokio::time::timeout(1s)` (the \
         count rule's goal {GOAL_TIMEOUT_RATIO}x, the rate rule's its own {GOAL_RATIO}x).\n"
    );
    outln!("| rule | threads | worst driver | ours added | fastest peer | its added | ratio | goal | result |");
    outln!("|---|---:|---|---:|---|---:|---:|---:|---|");
    let plain_peers = [RECLOSER, FAILSAFE, RESILIENCE];
    let timed_peers = [RECLOSER_TIMEOUT, FAILSAFE_TIMEOUT];
    for (c, rule, peers, goal) in [
        (COUNT, "count", &plain_peers[..], GOAL_RATIO),
        (RATE, "rate", &plain_peers[..], GOAL_RATIO),
        (
            COUNT_TIMEOUT,
            "count, `timeout`",
            &timed_peers[..],
            GOAL_TIMEOUT_RATIO,
        ),
        (
            RATE_TIMEOUT,
            "rate, `timeout`",
            &timed_peers[..],
            GOAL_RATIO,
        ),
    ] {
        for (t, threads) in [1, 2].into_iter().enumerate() {
            let worst = (0..2)
                .map(|d| {
                    let ours = added(&all, &medians, c, d, t);
                    let (peer, theirs) = fastest_peer(&all, peers, &medians, d, t);
                    let ratio = if ours > 0.0 {
                        theirs / ours
                    } else {
                        f64::INFINITY
                    };
                    (d, ours, peer, theirs, ratio)
                })
                .min_by(|a, b| a.4.total_cmp(&b.4))
                .expect("two drivers");
            let (d, ours, peer, theirs, ratio) = worst;
            outln!(
                "| {rule} | {threads} | {} | {ours:+.1} | {peer} | {theirs:+.1} | {} | >= {goal}x | {} |",
                Driver::ALL[d].name(),
                if ratio.is_finite() { format!("{ratio:.1}x") } else { "∞".into() },
                pass(ours <= theirs / goal)
            );
        }
    }
    outln!();

    outln!("### Goal: added instructions per call of the count rule, on each driver\n");
    outln!(
        "The other rules' figures for reference: what the rate rule's window, and a timeout's \
         deadline and timer check, add to the count rule's path.\n"
    );
    outln!("| contender | inlined | polled | worst | goal | result |");
    outln!("|---|---:|---:|---:|---:|---|");
    for (c, limit) in [
        (COUNT, Some(GOAL_COUNT_INSTRUCTIONS)),
        (COUNT_TIMEOUT, None),
        (RATE, None),
        (RATE_TIMEOUT, None),
    ] {
        let per_driver = [0, 1].map(|d| instructions.added(&all, c, d));
        let worst = match per_driver {
            [Some(a), Some(b)] => Some(a.max(b)),
            _ => None,
        };
        outln!(
            "| {} | {} | {} | {} | {} | {} |",
            all[c].name,
            or_dash(per_driver[0], |n| format!("{n:+.1}")),
            or_dash(per_driver[1], |n| format!("{n:+.1}")),
            or_dash(worst, |n| format!("{n:+.1}")),
            limit.map_or("—".to_string(), |limit| format!("<= {limit}")),
            match (limit, worst) {
                (None, _) => "—",
                (Some(_), None) => "not counted",
                (Some(limit), Some(n)) => pass(n <= limit),
            },
        );
    }
    outln!();
}

// ---------------------------------------------------------------------------------------------
// The keyed registry.

/// A small, fast generator for random indices (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    #[inline(always)]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[inline(always)]
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// ns per load of a dependent random walk over 256 MiB (Sattolo's single cycle): the cost of one
/// cache and TLB miss on this machine, for reading the lookup figures.
fn memory_latency() -> f64 {
    let len = 64 << 20; // u32s
    let mut next: Vec<u32> = (0..len as u32).collect();
    let mut rng = SplitMix(7);
    for i in (1..len).rev() {
        next.swap(i, rng.below(i));
    }
    let steps = 2_000_000;
    let mut at = 0u32;
    let start = Instant::now();
    for _ in 0..steps {
        at = next[at as usize];
    }
    black_box(at);
    start.elapsed().as_nanos() as f64 / steps as f64
}

fn keyed_registry() {
    // The keys, in a shuffled order of insertion, generated before anything is measured.
    let mut rng = SplitMix(0x5EED);
    let mut keys: Vec<String> = (0..KEYS).map(|i| format!("host-{i:06}.example")).collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i + 1));
    }

    let rss_before = resident_bytes();
    let live_before = LIVE_BYTES.load(Relaxed);
    COUNTING.store(true, Relaxed);
    let start = Instant::now();
    let keyed = resiliency::Breaker::builder("bench.hosts")
        .max_keys(KEYS)
        .build_keyed()
        .expect("keyed options are valid");
    for key in &keys {
        drop(black_box(keyed.breaker(key)));
    }
    let insert_ns = start.elapsed().as_nanos() as f64 / KEYS as f64;
    let live_after_insert = LIVE_BYTES.load(Relaxed);
    let rss_after = resident_bytes();
    assert_eq!(keyed.len(), KEYS);

    // Lookups of random existing keys, and the same loop fetching the key alone (the caller's
    // cost of having the key: a random `String` out of a 1M-entry Vec), median of 5 rounds.
    let allocations_before = ALLOCATIONS.load(Relaxed);
    let mut lookup = Vec::new();
    let mut fetch = Vec::new();
    for round in 0..5u64 {
        let mut rng = SplitMix(round);
        let start = Instant::now();
        for _ in 0..LOOKUPS {
            let key = &keys[rng.below(KEYS)];
            black_box(keyed.breaker(black_box(key)));
        }
        lookup.push(start.elapsed().as_nanos() as f64 / LOOKUPS as f64);

        let mut rng = SplitMix(round);
        let start = Instant::now();
        for _ in 0..LOOKUPS {
            let key = &keys[rng.below(KEYS)];
            black_box(black_box(key).bytes().fold(0u8, |a, b| a ^ b));
        }
        fetch.push(start.elapsed().as_nanos() as f64 / LOOKUPS as f64);
    }
    // The same over 1,000 hot keys, which stay in the CPU's caches: the registry's own cost.
    let hot: Vec<&String> = keys.iter().step_by(KEYS / 1000).collect();
    let mut hot_lookup = Vec::new();
    for round in 0..5u64 {
        let mut rng = SplitMix(round);
        let start = Instant::now();
        for _ in 0..LOOKUPS {
            let key = hot[rng.below(hot.len())];
            black_box(keyed.breaker(black_box(key)));
        }
        hot_lookup.push(start.elapsed().as_nanos() as f64 / LOOKUPS as f64);
    }
    let lookup_allocations = ALLOCATIONS.load(Relaxed) - allocations_before;
    let live_after_lookups = LIVE_BYTES.load(Relaxed);
    COUNTING.store(false, Relaxed);
    assert_eq!(
        keyed.len(),
        KEYS,
        "no key may be evicted during the benchmark"
    );

    let lookup_ns = median(&mut lookup);
    let hot_ns = median(&mut hot_lookup);
    let latency_ns = memory_latency();
    let fetch_ns = median(&mut fetch);
    let bytes_per_key = (live_after_insert - live_before) as f64 / KEYS as f64;
    let bytes_after_lookups = (live_after_lookups - live_before) as f64 / KEYS as f64;

    outln!("## Keyed registry: {} live keys\n", group(KEYS as u64));
    outln!(
        "`Breaker::builder(\"bench.hosts\").max_keys({}).build_keyed()`, keys like `{}`, inserted in random order \
         through `keyed.breaker(&key)`; lookups of random existing keys with `keyed.breaker(&key)` \
         (the returned `Arc<Breaker>` dropped), median of 5 rounds of {} lookups.\n",
        KEYS,
        keys[0],
        group(LOOKUPS as u64)
    );
    outln!("| measure | value | goal | result |");
    outln!("|---|---:|---:|---|");
    outln!(
        "| ns per lookup (random existing key) | {lookup_ns:.1} | < {GOAL_LOOKUP_NS} | {} |",
        pass(lookup_ns < GOAL_LOOKUP_NS)
    );
    outln!(
        "| bytes per key (live bytes after inserting / keys) | {bytes_per_key:.1} | < {GOAL_BYTES_PER_KEY} | {} |",
        pass(bytes_per_key < GOAL_BYTES_PER_KEY)
    );
    outln!("\nFor reference:\n");
    outln!("| measure | value |");
    outln!("|---|---:|");
    outln!("| ns per lookup, of which fetching the key from the benchmark's own Vec (same loop, no lookup) | {fetch_ns:.1} |");
    outln!("| ns per lookup of 1,000 hot keys (cache-resident) | {hot_ns:.1} |");
    outln!(
        "| this machine's latency of one dependent random load over 256 MiB | {latency_ns:.1} |"
    );
    outln!("| ns per insert (first `breaker(&key)` of a key) | {insert_ns:.1} |");
    outln!("| bytes per key, live, after the lookups too | {bytes_after_lookups:.1} |");
    if let (Some(before), Some(after)) = (rss_before, rss_after) {
        outln!(
            "| resident-set growth per key while inserting (includes malloc overhead) | {:.1} |",
            (after.saturating_sub(before)) as f64 / KEYS as f64
        );
    }
    outln!(
        "| allocations during {} lookups | {lookup_allocations} |",
        group(10 * LOOKUPS as u64)
    );
    outln!();
}

// ---------------------------------------------------------------------------------------------

/// `BENCH_PROFILE=list` prints the contenders' numbers (table order: 0 = plain, 1 = count rule,
/// 2 = count rule with `timeout`, 3 = rate rule, 4 = rate rule with `timeout`, 5 = recloser,
/// 6 = failsafe, 7 and 8 = the two under `tokio::time::timeout`, 9 = plain `service_fn`,
/// 10 = the nested reference, 11 = tower-resilience). `BENCH_PROFILE=<number>` builds
/// every breaker on this unpinned thread (one call each), then runs that contender alone on
/// `BENCH_DRIVER` (`inlined` or `polled`) for exactly `BENCH_CALLS` calls (default 10M) on each of
/// `BENCH_THREADS` threads (default 1) sharing one breaker, as the measurement does (a
/// current-thread runtime entered per thread), and prints one line: what the instruction counts
/// run under callgrind, and a target for `perf`. `BENCH_PROFILE=keyed` inserts `KEYS` keys and
/// looks `BENCH_CALLS` random ones up.
fn profile(lock: &str, which: &str) {
    if which == "keyed" {
        let calls = std::env::var("BENCH_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1_000_000u64);
        let keys: Vec<String> = (0..KEYS).map(|i| format!("host-{i:06}.example")).collect();
        let keyed = resiliency::Breaker::builder("bench.hosts")
            .max_keys(KEYS)
            .build_keyed()
            .unwrap();
        for key in &keys {
            drop(keyed.breaker(key));
        }
        let mut rng = SplitMix(1);
        for _ in 0..calls {
            black_box(keyed.breaker(&keys[rng.below(KEYS)]));
        }
        return;
    }
    let all = contenders(lock);
    if which != "list" {
        build_here(&all);
    }
    common::cost::profile(&all, which, |contender, driver, calls| {
        let runtime = current_thread_runtime();
        let _context = runtime.enter();
        let mut run = (contender.make)();
        in_chunks(calls, CHUNK, |n| run(driver, n));
    });
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .unwrap_or_default();
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&lock, &which);
    }
    let plan = Plan::from_env(SAMPLES, SAMPLE, CALLGRIND_CALLS);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency breaker benchmark\n");
    outln!(
        "{cores} cores available, `RESILIENCY_DISABLED` {}.\n",
        if resiliency::breaker::disabled() {
            "is set: breakers pass calls through"
        } else {
            "unset"
        }
    );
    let started = Instant::now();
    outln!("Load average at start: {}.\n", load_average());
    // `BREAKER_BENCH_ONLY=keyed`: the keyed registry alone, for development; nothing published.
    let keyed_only = std::env::var("BREAKER_BENCH_ONLY").is_ok_and(|v| v == "keyed");
    if !keyed_only {
        closed_path(&lock, &plan);
    }
    keyed_registry();
    outln!(
        "Whole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    if plan.quick || keyed_only {
        eprintln!("breaker: BENCH_QUICK or BREAKER_BENCH_ONLY run, not published");
    } else {
        common::publish("breaker");
    }
}
