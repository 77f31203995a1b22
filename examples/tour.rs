//! A short tour of `resiliency`: every policy at work, in a few seconds.
//!
//! ```text
//! cargo run --example tour
//! ```
//!
//! The "upstreams" of the first sections are async functions that sleep, fail or hang on demand;
//! the last one calls two HTTP servers the tour starts on 127.0.0.1, so nothing leaves the machine.
//! Read it top to bottom: each section shows one attribute and prints what it does.
//! The focused examples (`breaker`, `race_retry`, `too_busy_axum`, `service`) do the same over
//! real HTTP.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resiliency::settings::{self, Policy};
use resiliency::{breaker, race_retry, too_busy, Rejected};

/// One error type for the whole program. Every attribute needs `E: From<Rejected>`: that is how a
/// refused call becomes an `Err` of the function's own type.
#[derive(Debug)]
enum AppError {
    Rejected(Rejected),
    Upstream(&'static str),
}

impl From<Rejected> for AppError {
    fn from(rejected: Rejected) -> Self {
        AppError::Rejected(rejected)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Rejected(rejected) => write!(f, "refused: {rejected}"),
            AppError::Upstream(why) => write!(f, "upstream error: {why}"),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// A pretend upstream: healthy (answers in 5ms), failing (errors at once) or hanging (never answers
// within any timeout used here).
// ------------------------------------------------------------------------------------------------

const HEALTHY: u8 = 0;
const FAILING: u8 = 1;
const HANGING: u8 = 2;

static UPSTREAM: AtomicU8 = AtomicU8::new(HEALTHY);
/// How many requests reached the upstream.
static HITS: AtomicU32 = AtomicU32::new(0);

async fn upstream(what: &str) -> Result<String, AppError> {
    HITS.fetch_add(1, Ordering::SeqCst);
    match UPSTREAM.load(Ordering::SeqCst) {
        HEALTHY => {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(format!("{what}: ok"))
        }
        FAILING => Err(AppError::Upstream("500 Internal Server Error")),
        _ => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(format!("{what}: very late"))
        }
    }
}

fn set_upstream(mode: u8, label: &str) {
    UPSTREAM.store(mode, Ordering::SeqCst);
    println!("  [the upstream is now {label}]");
}

fn show<T: std::fmt::Debug>(label: &str, result: &Result<T, AppError>, took: Duration) {
    match result {
        Ok(value) => println!("  {label} -> Ok({value:?}) in {took:.0?}"),
        Err(error) => println!("  {label} -> Err({error}) in {took:.0?}"),
    }
}

// ------------------------------------------------------------------------------------------------
// 1. #[breaker]
// ------------------------------------------------------------------------------------------------

/// A call taking more than 100ms is abandoned and counts as an error; 3 errors open the breaker.
/// `capacity = 0.75` keeps it open for `100ms * 0.75 / 0.25 = 300ms` after the last error, so a
/// caller stuck on a dead upstream still spends 75% of its time doing something else.
#[breaker(name = "inventory", capacity = 0.75, timeout = "100ms")]
async fn fetch_inventory() -> Result<String, AppError> {
    upstream("inventory").await
}

async fn breaker_tour() {
    println!("\n1. #[breaker(name = \"inventory\", capacity = 0.75, timeout = \"100ms\")]");
    // Every state change of every breaker, printed as it happens.
    breaker::subscribe(|change| println!("  >> {}: {} -> {}", change.name, change.from, change.to));

    let started = Instant::now();
    show("call", &fetch_inventory().await, started.elapsed());
    let inventory = breaker::get("inventory").expect("registered by its first call");
    println!(
        "  breaker::get(\"inventory\"): {}, error_timeout {:?}",
        inventory.state(),
        inventory.error_timeout()
    );

    set_upstream(FAILING, "failing");
    for _ in 0..2 {
        let started = Instant::now();
        show("call", &fetch_inventory().await, started.elapsed());
    }
    set_upstream(HANGING, "hanging");
    let started = Instant::now();
    show("call", &fetch_inventory().await, started.elapsed());
    println!("  (the third error, a timeout, opened the breaker)");

    let hits = HITS.load(Ordering::SeqCst);
    for _ in 0..2 {
        let started = Instant::now();
        show("call", &fetch_inventory().await, started.elapsed());
    }
    let after = HITS.load(Ordering::SeqCst);
    println!("  the upstream had {hits} requests before the refusals and {after} after them");

    let wait = inventory.snapshot().half_opens_in.unwrap_or_default();
    println!("  snapshot().half_opens_in = {wait:.0?}; waiting, then one probe goes through");
    tokio::time::sleep(wait + Duration::from_millis(10)).await;
    println!("  state() = {}", inventory.state());
    set_upstream(HEALTHY, "healthy again");
    let started = Instant::now();
    show("probe", &fetch_inventory().await, started.elapsed());
    println!(
        "  state() = {} (one successful probe closes it)",
        inventory.state()
    );
}

// ------------------------------------------------------------------------------------------------
// 2. #[too_busy]
// ------------------------------------------------------------------------------------------------

/// At most two calls at once; a third is refused at the door, without waiting in a queue.
#[too_busy(max_in_flight = 2)]
async fn render_thumbnail(n: u32) -> Result<String, AppError> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(format!("thumbnail #{n}"))
}

/// Refused while the runtime it runs on lags: with probability `(lag - 50ms) / 50ms`.
#[too_busy(max_lag = "50ms")]
async fn search() -> Result<&'static str, AppError> {
    Ok("3 results")
}

/// A connection pool of 4: each query holds a connection for 20 ms, and waits in line for one.
static POOL: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

/// The right in-flight limit depends on the pool, which the code does not know: learned.
#[too_busy(max_in_flight = "auto")]
async fn query_orders() -> Result<(), AppError> {
    let _connection = POOL.acquire().await.expect("the pool is never closed");
    tokio::time::sleep(Duration::from_millis(20)).await;
    Ok(())
}

/// 32 clients call `query_orders` in a loop for 2 s; every 250 ms, the learned limit and what the
/// admitted calls waited.
async fn auto_limit_tour() {
    println!(
        "\n   #[too_busy(max_in_flight = \"auto\")]: 32 clients, a pool of 4 connections of 20ms"
    );
    let stats = std::sync::Mutex::new((0u32, 0u32, Duration::ZERO));
    let end = Instant::now() + Duration::from_secs(2);
    let client = || async {
        while Instant::now() < end {
            let started = Instant::now();
            let admitted = query_orders().await.is_ok();
            {
                let mut stats = stats.lock().unwrap();
                if admitted {
                    stats.0 += 1;
                    stats.2 += started.elapsed();
                } else {
                    stats.1 += 1;
                }
            }
            if !admitted {
                tokio::time::sleep(Duration::from_millis(5)).await; // refused: back off a little
            }
        }
    };
    let report = async {
        while Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let (admitted, refused, waited) = std::mem::take(&mut *stats.lock().unwrap());
            let limit = resiliency::settings::sites()
                .into_iter()
                .find(|(_, name)| name.ends_with("::query_orders"))
                .and_then(|(_, name)| resiliency::too_busy::get(&name)?.in_flight_limit());
            println!(
                "  limit {:>2}: {admitted:>3} admitted (mean {:>4.0?}), {refused:>3} refused",
                limit.unwrap_or(0),
                waited / admitted.max(1),
            );
        }
    };
    tokio::join!(futures::future::join_all((0..32).map(|_| client())), report);
    println!("  (no limit: 32 queued for 4 connections would wait about 160ms each)");
}

async fn too_busy_tour() {
    println!("\n2. #[too_busy(max_in_flight = 2)]: four calls at once");
    let timed = |n| async move {
        let started = Instant::now();
        (render_thumbnail(n).await, started.elapsed())
    };
    let results = futures::future::join_all((1..=4).map(timed)).await;
    for (n, (result, took)) in (1..).zip(&results) {
        show(&format!("render_thumbnail({n})"), result, *took);
    }

    println!(
        "\n   #[too_busy(max_lag = \"50ms\")]: a CPU-bound job blocks the runtime's only thread"
    );
    println!("   in 200ms stretches for 1.2s; meanwhile search() is called every 20ms");
    for _ in 0..3 {
        let _ = search().await; // the first call starts the lag monitor
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "  idle: too_busy::lag() = {:.1?}",
        resiliency::too_busy::lag()
    );
    let job = tokio::spawn(async {
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(1200) {
            // Stands in for CPU-bound work: the bug this section is about.
            std::thread::sleep(Duration::from_millis(200));
            tokio::task::yield_now().await;
        }
    });
    let (mut ok, mut refused, mut peak) = (0, 0, Duration::ZERO);
    while !job.is_finished() {
        peak = peak.max(resiliency::too_busy::lag());
        match search().await {
            Ok(_) => ok += 1,
            Err(_) => refused += 1,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "  during the job: {ok} calls answered, {refused} refused (too_busy::lag() peaked at {peak:.0?})"
    );
    let ended = Instant::now();
    loop {
        let result = search().await;
        if result.is_ok() {
            println!(
                "  after the job: answered again {:.0?} after it ended",
                ended.elapsed()
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ------------------------------------------------------------------------------------------------
// 3. #[race_retry]
// ------------------------------------------------------------------------------------------------

/// How many of the next replica requests hang for 3s (the others answer in 20ms).
static SLOW_NEXT: AtomicU32 = AtomicU32::new(0);

async fn replica(id: u64) -> Result<String, AppError> {
    let delay = if SLOW_NEXT
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        Duration::from_secs(3)
    } else {
        Duration::from_millis(20)
    };
    tokio::time::sleep(delay).await;
    Ok(format!("user {id}"))
}

/// Attempt 2 starts 150ms after attempt 1 (sooner if one fails), attempt 3 150ms later; the first
/// `Ok` wins and the others are cancelled; at 450ms the whole call ends.
#[race_retry(retries = 2, after = "150ms", total = "450ms")]
async fn lookup_user(id: u64) -> Result<String, AppError> {
    replica(id).await
}

async fn observe_lookup(id: u64) {
    let started = Instant::now();
    let (result, mut attempts) = race_retry::observe(lookup_user(id)).await;
    show(&format!("lookup_user({id})"), &result, started.elapsed());
    attempts.sort_by_key(|a| a.number);
    for a in attempts {
        println!(
            "    attempt {} started at {:>5.0?}, ran {:>5.0?}: {}",
            a.number, a.started, a.elapsed, a.outcome
        );
    }
}

async fn race_retry_tour() {
    println!("\n3. #[race_retry(retries = 2, after = \"150ms\", total = \"450ms\")]");
    println!("  a healthy replica: one attempt");
    observe_lookup(1).await;
    println!("  the first request hangs: the retry at 150ms races it and wins");
    SLOW_NEXT.store(1, Ordering::SeqCst);
    observe_lookup(2).await;
    println!("  every request hangs: the deadline ends the call, all attempts cancelled");
    SLOW_NEXT.store(3, Ordering::SeqCst);
    observe_lookup(3).await;

    // The retry budget (10% of calls plus 10 a second by default) bounds extra attempts.
    let name = race_retry::names()
        .into_iter()
        .find(|n| n.ends_with("lookup_user"))
        .expect("registered by its first call");
    let stats = race_retry::stats(name).expect("stats of a registered fn");
    println!(
        "  race_retry::stats: {} extra attempts, {} calls won by one, {} refused by the budget, {} deadline(s)",
        stats.extra_attempts, stats.won_by_extra, stats.budget_refused, stats.deadlines
    );
}

// ------------------------------------------------------------------------------------------------
// 4. Stacking
// ------------------------------------------------------------------------------------------------

/// The outer attribute wraps the inner one: the breaker guards each raced attempt, and load is
/// shed before anything runs.
#[too_busy(max_in_flight = 8)]
#[race_retry(retries = 1, after = "50ms", total = "200ms")]
#[breaker(name = "profiles", error_threshold = 2, error_timeout = "1s")]
async fn fetch_profile(id: u64) -> Result<String, AppError> {
    upstream(if id.is_multiple_of(2) {
        "profile (even)"
    } else {
        "profile (odd)"
    })
    .await
}

async fn stacking_tour() {
    println!("\n4. #[too_busy] + #[race_retry] + #[breaker] on one fn");
    let started = Instant::now();
    show(
        "fetch_profile(1)",
        &fetch_profile(1).await,
        started.elapsed(),
    );
    set_upstream(FAILING, "failing");
    let started = Instant::now();
    show(
        "fetch_profile(2)",
        &fetch_profile(2).await,
        started.elapsed(),
    );
    println!("  (both attempts failed: two errors opened the breaker)");
    let started = Instant::now();
    let result = fetch_profile(3).await;
    show("fetch_profile(3)", &result, started.elapsed());
    if let Err(AppError::Rejected(rejected)) = &result {
        println!(
            "  circuit open: {}, retry after {:?}",
            rejected.is_circuit_open(),
            rejected.retry_after()
        );
    }
    set_upstream(HEALTHY, "healthy");
}

/// Every setting of an attribute is the default of a named site, overridden at run time from
/// code (here), a configuration file or the environment (`RESILIENCY_BREAKER__PROFILES__...`).
async fn settings_tour() {
    println!("\n5. Settings by name at run time (resiliency::settings)");
    let profiles = resiliency::breaker::get("profiles").expect("called above");
    println!(
        "  profiles is {}, for {:?} after its last error",
        profiles.state(),
        profiles.error_timeout()
    );
    settings::set(Policy::Breaker, "profiles", "error_timeout", "5s").expect("a valid value");
    println!(
        "  set error_timeout = \"5s\": still {}, now for {:?}",
        profiles.state(),
        profiles.error_timeout()
    );
    let refused = settings::set(Policy::Breaker, "profiles", "error_threshold", 0).unwrap_err();
    println!("  set error_threshold = 0: refused, {refused}");
    for e in settings::effective(Policy::Breaker, "profiles").unwrap_or_default() {
        if let Some(value) = e.value {
            println!("  {} = {value} (from {})", e.setting, e.source);
        }
    }
    settings::unset(Policy::Breaker, "profiles", "error_timeout").expect("back to the attribute");
}

// ------------------------------------------------------------------------------------------------
// 6. Fallbacks, and hedging to another replica (HTTP on 127.0.0.1)
// ------------------------------------------------------------------------------------------------

/// Two replicas of one service, each an HTTP server on 127.0.0.1 whose requests take `delay_ms`
/// (one of them slow), changeable while it runs.
struct Replicas {
    client: reqwest::Client,
    bases: Vec<String>,
}

impl Replicas {
    /// Starts replica `name` answering in `delay_ms`; returns its base URL.
    async fn serve(name: &'static str, delay_ms: Arc<AtomicU64>) -> std::io::Result<String> {
        let app = axum::Router::new().route(
            "/user/{id}",
            axum::routing::get(
                move |axum::extract::Path(id): axum::extract::Path<u64>| async move {
                    let delay = delay_ms.load(Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    format!("user {id} from {name}")
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(base)
    }

    /// The fallback: what a refused call returns instead, with the call's arguments and why.
    async fn cached(&self, id: u64, why: Rejected) -> Result<String, AppError> {
        Ok(format!("user {id} from the cache ({why})"))
    }

    /// Attempt `n` goes to replica `n % 2`: the hedge at 100ms goes to the other replica, as "The
    /// Tail at Scale" sends it. When the race's deadline passes, the fallback answers.
    #[race_retry(retries = 1, after = "100ms", total = "400ms", attempt = n, fallback = Self::cached)]
    async fn user(&self, id: u64) -> Result<String, AppError> {
        let base = &self.bases[n as usize % self.bases.len()];
        let response = self
            .client
            .get(format!("{base}/user/{id}"))
            .send()
            .await
            .map_err(|_| AppError::Upstream("no answer"))?;
        response
            .text()
            .await
            .map_err(|_| AppError::Upstream("a broken answer"))
    }
}

async fn replicas_tour() -> std::io::Result<()> {
    println!("\n6. Hedging to another replica, and a fallback (HTTP servers on 127.0.0.1)");
    println!("   #[race_retry(retries = 1, after = \"100ms\", total = \"400ms\", attempt = n, fallback = Self::cached)]");
    let (a_delay, b_delay) = (
        Arc::new(AtomicU64::new(2_000)),
        Arc::new(AtomicU64::new(20)),
    );
    let replicas = Replicas {
        client: reqwest::Client::new(),
        bases: vec![
            Replicas::serve("replica-a", a_delay.clone()).await?,
            Replicas::serve("replica-b", b_delay.clone()).await?,
        ],
    };
    println!("  replica-a takes 2s, replica-b 20ms: attempt 0 goes to a, the hedge at 100ms to b");
    let started = Instant::now();
    let (result, mut attempts) = race_retry::observe(replicas.user(1)).await;
    show("replicas.user(1)", &result, started.elapsed());
    attempts.sort_by_key(|a| a.number);
    for a in attempts {
        println!(
            "    attempt {} (n = {}) started at {:>5.0?}, ran {:>5.0?}: {}",
            a.number,
            a.number - 1,
            a.started,
            a.elapsed,
            a.outcome
        );
    }
    b_delay.store(2_000, Ordering::SeqCst);
    println!("  both replicas take 2s: at 400ms the race is refused, and the fallback answers");
    let started = Instant::now();
    show(
        "replicas.user(2)",
        &replicas.user(2).await,
        started.elapsed(),
    );
    Ok(())
}

// The lag section needs the runtime's only thread to be the one the job blocks.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("resiliency tour (lines starting with >> are breaker state changes)");
    breaker_tour().await;
    too_busy_tour().await;
    auto_limit_tour().await;
    race_retry_tour().await;
    stacking_tour().await;
    settings_tour().await;
    replicas_tour().await.expect("servers on 127.0.0.1");
    println!("\nThat is every policy; the tests in tests/ check each behaviour shown here.");
}
