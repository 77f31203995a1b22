//! The breaker benchmark: `cargo bench -p resilient-benches --bench breaker`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`):
//!
//! 1. **Closed-state success path.** One trivial `async fn` returning `Result<u64, E>` called
//!    plainly, under `#[breaker]` (count rule, default options), under
//!    `#[breaker(failure_rate = 0.5, min_calls = 20)]` (rate rule), and under the peers
//!    `recloser` (`AsyncRecloser::call`), `failsafe` (its futures API, `futures::CircuitBreaker::call`)
//!    and `tower-resilience-circuitbreaker` (a tower `Service` layered around `service_fn`, driven by
//!    `ServiceExt::ready` + `Service::call`), each with its default configuration. Every contender
//!    runs on 1 thread and on 2 OS threads sharing one breaker.
//! 2. **Keyed registry.** A `KeyedBreaker` holding 1,000,000 keys: ns per lookup of a random
//!    existing key, and bytes per key counted by the global allocator below.
//!
//! # How calls are driven
//!
//! Nothing in these calls waits for I/O or a timer (no timeout is configured, the breakers stay
//! closed), so each call's future is polled to completion by [`block_on`], a tiny loop on the
//! calling thread. All contenders go through the same `block_on`, on plain OS threads, with no
//! tokio runtime: that removes scheduler noise and measures only the future and the breaker. Its
//! waker unparks the thread and is made once per chunk of calls, so it costs no call anything;
//! it matters only for tower-resilience, whose `tokio::sync::Mutex` (usable without a runtime)
//! returns `Pending` when contended: the thread then parks until the holder wakes it, as a
//! runtime's worker would. (Busy-polling with a no-op waker instead makes every re-poll take the
//! semaphore's internal lock and slows the holder by orders of magnitude, which says nothing about
//! tower-resilience under a real runtime.)
//!
//! # How time is measured
//!
//! A sample runs a contender for a fixed time (`SAMPLE`), in chunks of `CHUNK` calls, and divides
//! the time by the calls made. With 2 threads, both start at a barrier and stop at one flag, so
//! they contend for the whole sample; the figure is the time per call seen by each thread (the
//! mean of the two). Each worker thread is pinned to its own CPU, and each round moves the
//! workers' stacks by another half-kilobyte (see [`with_stack_shift`]). Samples are taken
//! round-robin over the contenders (`SAMPLES` rounds) so that drift in the machine spreads evenly.
//! The main table and the goal check use each contender's median sample; a second table shows
//! the best samples. On one thread, disturbance by other processes on the (shared) machine only
//! adds time, so the best sample is the undisturbed cost; on two threads it can also remove
//! contention (one worker preempted leaves the other alone), so a best sample can flatter a
//! contended breaker, and the median is the fair figure. "added" is the contender's figure minus
//! the plain call's figure for the same thread count.
//!
//! `BENCH_PROFILE` runs one contender alone, for callgrind or perf: see [`profile`].
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
use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use resilient::breaker;

mod common;
use common::outln;
use common::{
    block_on, group, load_average, median, pin_to_cpu, plain, rounds, sample_threads, thread_waker,
    work, CallError, Rounds,
};

/// How long one sample runs each contender.
const SAMPLE: Duration = Duration::from_millis(150);
/// Rounds of samples; the best and the median are reported.
const SAMPLES: usize = 9;
/// Calls between two looks at the stop flag.
const CHUNK: u64 = 4096;
/// Keys held by the keyed registry.
const KEYS: usize = 1_000_000;
/// Random lookups per keyed round (5 rounds).
const LOOKUPS: usize = 200_000;

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
// The call under test.

#[breaker]
async fn count_rule(x: u64) -> Result<u64, CallError> {
    work(x)
}

#[breaker(failure_rate = 0.5, min_calls = 20)]
async fn rate_rule(x: u64) -> Result<u64, CallError> {
    work(x)
}

// ---------------------------------------------------------------------------------------------
// Contenders.

/// Runs `n` calls; each thread gets its own runner (its own handle to the one shared breaker).
type Runner = Box<dyn FnMut(u64) + Send>;

struct Contender {
    name: String,
    peer: bool,
    make: Box<dyn Fn() -> Runner + Sync>,
}

/// A contender whose calls are `call(i)` for a shared, cloneable handle.
fn contender<H, F, Fut>(name: String, peer: bool, handle: H, call: F) -> Contender
where
    H: Clone + Send + Sync + 'static,
    F: Fn(&H, u64) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future,
{
    Contender {
        name,
        peer,
        make: Box::new(move || {
            let handle = handle.clone();
            Box::new(move |n| {
                let waker = thread_waker();
                for i in 0..n {
                    black_box(block_on(&waker, call(&handle, black_box(i))));
                }
            })
        }),
    }
}

fn contenders(lock: &str) -> Vec<Contender> {
    let version = |name: &str| crate_version(lock, name);
    let mut all = vec![
        contender("plain `async fn`".into(), false, (), |_, i| plain(i)),
        contender(
            "`#[breaker]` count rule (defaults)".into(),
            false,
            (),
            |_, i| count_rule(i),
        ),
        contender(
            "`#[breaker(failure_rate = 0.5, min_calls = 20)]`".into(),
            false,
            (),
            |_, i| rate_rule(i),
        ),
    ];

    // recloser: `AsyncRecloser` (a clone shares the same `Arc<Recloser>`), default options.
    let recloser = recloser::AsyncRecloser::from(recloser::Recloser::default());
    all.push(contender(
        format!("recloser {} (`AsyncRecloser::call`)", version("recloser")),
        true,
        recloser,
        |r, i| r.call(plain(i)),
    ));

    // failsafe: the futures API (`failsafe::futures::CircuitBreaker::call`), default policy
    // (success rate over a time window, or else consecutive failures). A clone shares the state.
    let failsafe = failsafe::Config::new().build();
    all.push(contender(
        format!("failsafe {} (futures `call`)", version("failsafe")),
        true,
        failsafe,
        |f, i| failsafe::futures::CircuitBreaker::call(f, plain(i)),
    ));

    // tower-resilience: its breaker is a tower `Service` middleware, not a function wrapper, so
    // the plain fn is made a `service_fn` and each call is `ready().await` then `call(i).await`
    // (a boxed future per call). Clones of the service share one circuit. Default options.
    let layer = tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .build()
        .expect("default tower-resilience options are valid");
    let service = layer.layer_fn(tower::service_fn(plain));
    all.push(Contender {
        name: format!(
            "tower-resilience-circuitbreaker {} (`Service`)",
            version("tower-resilience-circuitbreaker")
        ),
        peer: true,
        make: Box::new(move || {
            let mut service = service.clone();
            Box::new(move |n| {
                use tower::{Service as _, ServiceExt as _};
                let waker = thread_waker();
                for i in 0..n {
                    let _ = black_box(block_on(&waker, async {
                        let ready = service.ready().await.map_err(drop)?;
                        ready.call(black_box(i)).await.map_err(drop)
                    }));
                }
            })
        }),
    });
    all
}

/// ns per call of one sample on `threads` threads sharing the contender's breaker; `round`
/// picks the stack shift.
fn sample(contender: &Contender, threads: usize, round: usize) -> (f64, u64) {
    sample_threads(threads, round, SAMPLE, |timing| {
        let mut run = (contender.make)();
        run(CHUNK); // warm up: caches, thread-locals
        timing.timed(CHUNK, || run(CHUNK))
    })
}

fn print_table(all: &[Contender], ns: &[[f64; 2]]) {
    let base = ns[0];
    outln!("| contender | 1 thread ns/call | added | 2 threads ns/call | added |");
    outln!("|---|---:|---:|---:|---:|");
    for (c, contender) in all.iter().enumerate() {
        let added = |t: usize| {
            if c == 0 {
                "—".to_string()
            } else {
                format!("{:+.1}", ns[c][t] - base[t])
            }
        };
        outln!(
            "| {} | {:.1} | {} | {:.1} | {} |",
            contender.name,
            ns[c][0],
            added(0),
            ns[c][1],
            added(1)
        );
    }
}

fn closed_path(lock: &str) {
    let all = contenders(lock);
    const THREADS: [usize; 2] = [1, 2];
    // One call each from this (unpinned) thread first, so that every breaker is built here: the
    // runtime sizes a rate window's stripes by the CPUs the building thread may use, which is 1 on
    // a pinned worker.
    for contender in &all {
        (contender.make)()(1);
    }
    let Rounds {
        medians,
        best,
        fewest_calls,
    } = rounds(all.len(), SAMPLES, |c, threads, round| {
        sample(&all[c], threads, round)
    });

    outln!("## Closed-state success path\n");
    outln!(
        "ns per call, median of {SAMPLES} samples of {} ms each (every sample made at least {} calls); \
         \"added\" = contender minus the plain call. 2 threads = 2 OS threads sharing one breaker, \
         time per call as each thread sees it.\n",
        SAMPLE.as_millis(),
        group(fewest_calls),
    );
    print_table(&all, &medians);
    outln!(
        "\nBest of the same samples (on 1 thread the undisturbed cost; on 2 threads a best sample \
         may be one in which the workers were not both running):\n"
    );
    print_table(&all, &best);
    outln!(
        "\nAll contenders: futures polled to completion by one tiny `block_on` on plain OS threads \
         (no tokio runtime), each worker thread pinned to its own CPU, every breaker built on the \
         unpinned main thread before sampling; default options for every peer. tower-resilience \
         fits as a tower `Service` layer (`ready` + `call`: one boxed future and two \
         `tokio::sync::Mutex` locks per call), not as a function wrapper.\n"
    );
    outln!(
        "Size of the call's future before its first poll: plain {} B, count rule {} B, rate rule {} B.\n",
        std::mem::size_of_val(&plain(0)),
        std::mem::size_of_val(&count_rule(0)),
        std::mem::size_of_val(&rate_rule(0)),
    );
    let ns = medians;
    let base = ns[0];

    outln!("### Goal: our added cost <= 1/5 of the fastest peer's added cost (medians)\n");
    outln!("| rule | threads | ours added | fastest peer | its added | limit (1/5) | result |");
    outln!("|---|---:|---:|---|---:|---:|---|");
    for (c, rule) in [(1, "count"), (2, "rate")] {
        for (t, &threads) in THREADS.iter().enumerate() {
            let (peer, peer_added) = all
                .iter()
                .enumerate()
                .filter(|(_, p)| p.peer)
                .map(|(p, contender)| (contender.name.as_str(), ns[p][t] - base[t]))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("there are peers");
            let ours = ns[c][t] - base[t];
            let limit = peer_added / 5.0;
            outln!(
                "| {rule} | {threads} | {ours:+.1} | {} | {peer_added:+.1} | {limit:.1} | {} |",
                peer.split(' ').next().unwrap_or(peer),
                if ours <= limit { "PASS" } else { "MISS" }
            );
        }
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
    let keyed = resilient::Breaker::builder("bench.hosts")
        .build_keyed()
        .expect("default keyed options are valid");
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
        "`Breaker::builder(\"bench.hosts\").build_keyed()`, keys like `{}`, inserted in random order \
         through `keyed.breaker(&key)`; lookups of random existing keys with `keyed.breaker(&key)` \
         (the returned `Arc<Breaker>` dropped), median of 5 rounds of {} lookups.\n",
        keys[0],
        group(LOOKUPS as u64)
    );
    outln!("| measure | value | goal | result |");
    outln!("|---|---:|---:|---|");
    outln!(
        "| ns per lookup (random existing key) | {lookup_ns:.1} | < 100 | {} |",
        if lookup_ns < 100.0 { "PASS" } else { "MISS" }
    );
    outln!(
        "| bytes per key (live bytes after inserting / keys) | {bytes_per_key:.1} | < 256 | {} |",
        if bytes_per_key < 256.0 {
            "PASS"
        } else {
            "MISS"
        }
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

/// The version of `name` in the workspace's Cargo.lock, so the tables say what was measured.
fn crate_version(lock: &str, name: &str) -> String {
    let needle = format!("name = \"{name}\"\nversion = \"");
    lock.find(&needle)
        .and_then(|at| {
            let rest = &lock[at + needle.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// `BENCH_PROFILE=<contender number>` (0 = plain, 1 = count rule, 2 = rate rule, 3.. = peers, in
/// table order) runs just that contender for `BENCH_CALLS` calls (default 1M, rounded up to whole
/// chunks) on each of `BENCH_THREADS` threads (default 1) sharing one breaker, and prints one
/// line: a target for `valgrind --tool=callgrind` or `perf`. `BENCH_PROFILE=keyed` inserts `KEYS`
/// keys and looks `BENCH_CALLS` random ones up.
fn profile(lock: &str, which: &str) {
    let calls = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000u64);
    if which == "keyed" {
        let keys: Vec<String> = (0..KEYS).map(|i| format!("host-{i:06}.example")).collect();
        let keyed = resilient::Breaker::builder("bench.hosts")
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
    let contender = &all[which
        .parse::<usize>()
        .expect("BENCH_PROFILE is a contender number or `keyed`")];
    (contender.make)()(1); // build the breaker on this unpinned thread, as `closed_path` does
    let calls = calls.div_ceil(CHUNK) * CHUNK;
    let threads = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1usize);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..threads {
            scope.spawn(move || {
                pin_to_cpu(worker);
                let mut run = (contender.make)();
                for _ in 0..calls / CHUNK {
                    run(CHUNK);
                }
            });
        }
    });
    eprintln!(
        "{threads} thread(s) x {calls} calls of {}: {:.1} ns per call per thread",
        contender.name,
        start.elapsed().as_nanos() as f64 / calls as f64
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .unwrap_or_default();
    if let Ok(which) = std::env::var("BENCH_PROFILE") {
        return profile(&lock, &which);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resilient breaker benchmark\n");
    outln!(
        "{cores} cores available, `RESILIENT_DISABLED` {}.\n",
        if resilient::breaker::disabled() {
            "is set: breakers pass calls through"
        } else {
            "unset"
        }
    );
    let started = Instant::now();
    outln!("Load average at start: {}.\n", load_average());
    closed_path(&lock);
    keyed_registry();
    outln!(
        "Whole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    common::publish("breaker");
}
