//! A guided tour of `resilient`, against a real HTTP server on 127.0.0.1.
//!
//! ```text
//! cargo run --example tour
//! TOUR_TRACING=1 cargo run --example tour   # also print the library's own `tracing` events
//! ```
//!
//! The tour starts small axum servers on `127.0.0.1:0`, calls them with reqwest through functions
//! annotated with `#[breaker(...)]`, makes the servers misbehave on purpose, and narrates what the
//! breaker does. Every claim it prints is also checked: if the library does not behave as narrated,
//! the tour stops with an error and a nonzero exit status, so it doubles as a smoke test.
//!
//! Sections (each one is an `async fn` called from `main`, with its annotated functions above it):
//!
//! 1. A circuit breaker at work: healthy, flaky, open, half-open, closed again.
//! 2. `capacity`: the open time derived from `timeout`.
//! 3. Keyed breakers: one breaker per host.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
// `breaker` is both the attribute and the module (`breaker::get`, `breaker::subscribe`, ...): one
// `use` brings in both. (`use resilient::breaker::{self}` would bring in the module only.)
use resilient::breaker::State;
use resilient::{breaker, Rejected};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::var_os("TOUR_TRACING").is_some() {
        tracing_subscriber::fmt().without_time().init();
    }
    ensure!(
        !breaker::disabled(),
        "RESILIENT_DISABLED is set, so every breaker lets calls through; unset it to run the tour"
    );
    println!("resilient tour: circuit breakers against real HTTP servers on 127.0.0.1");
    println!(
        "(lines starting with `>>` are state changes reported by resilient::breaker::subscribe)"
    );

    let tour = Tour::new();
    breaker_at_work(&tour).await?;
    capacity(&tour).await?;
    keyed_by_host(&tour).await?;
    // Further sections (`#[too_busy]`, `#[race_retry]`) go here: one `async fn` each, defined
    // below the last numbered section and above "The stage".

    println!("\nTour complete: every breaker behaved as narrated.");
    Ok(())
}

// ================================================================================================
// 1. A circuit breaker at work
// ================================================================================================

/// What can go wrong when we ask a server for something.
#[derive(Debug)]
enum FetchError {
    /// The breaker refused the call (open) or abandoned it (timeout).
    Rejected(Rejected),
    /// The request itself failed (connection refused, reset, ...).
    Http(reqwest::Error),
    /// The server answered with an error status.
    Status(reqwest::StatusCode),
}

// `#[breaker]` needs `E: From<Rejected>`: this is how a refused call becomes our error.
impl From<Rejected> for FetchError {
    fn from(rejected: Rejected) -> Self {
        FetchError::Rejected(rejected)
    }
}

impl From<reqwest::Error> for FetchError {
    fn from(error: reqwest::Error) -> Self {
        FetchError::Http(error)
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Rejected(rejected) => rejected.fmt(f),
            FetchError::Http(error) => write!(f, "request failed: {error}"),
            FetchError::Status(status) => write!(f, "server answered {status}"),
        }
    }
}

impl std::error::Error for FetchError {}

impl FetchError {
    fn rejected(&self) -> Option<&Rejected> {
        match self {
            FetchError::Rejected(rejected) => Some(rejected),
            _ => None,
        }
    }
}

/// Asks the inventory service for its stock. Three errors within 10 s open the breaker; it stays
/// open 800 ms after the last error; a call taking longer than 300 ms is abandoned and counts as
/// an error.
#[breaker(
    name = "inventory",
    error_threshold = 3,
    error_window = "10s",
    error_timeout = "800ms",
    timeout = "300ms"
)]
async fn fetch_inventory(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let response = client.get(url).send().await?;
    if !response.status().is_success() {
        return Err(FetchError::Status(response.status()));
    }
    Ok(response.text().await?)
}

async fn breaker_at_work(tour: &Tour) -> anyhow::Result<()> {
    tour.section("1. A circuit breaker at work");
    let server = Upstream::start("inventory", "42 widgets in stock").await?;
    let url = server.url("/stock");
    println!("server `inventory` listens on {url}");
    println!(
        r#"
    #[breaker(name = "inventory", error_threshold = 3, error_window = "10s",
              error_timeout = "800ms", timeout = "300ms")]
    async fn fetch_inventory(client: &reqwest::Client, url: &str) -> Result<String, FetchError>"#
    );
    let call = || fetch_inventory(&tour.client, &url);

    tour.step("1.1 The server is healthy: calls go through and the breaker stays closed.");
    for _ in 0..3 {
        let stock = call().await.context("a healthy call failed")?;
        println!("    call -> Ok({stock:?})");
    }
    // A `#[breaker]` registers its breaker under its name on the first call; from then on code can
    // inspect it (and force it open or closed) through the registry.
    let inventory = breaker::get("inventory").context("`inventory` is not registered")?;
    ensure!(
        inventory.state() == State::Closed,
        "expected a closed breaker"
    );
    println!(
        "    breaker::get(\"inventory\") -> {}; the server has received {} requests",
        inventory.state(),
        server.hits()
    );
    tour.expect_changes(&[])?;

    tour.step("1.2 The server turns flaky: one error, then one timeout. Both count.");
    server.set(Mode::Failing);
    println!("    [server now answers 500]");
    let err = call().await.err().context("expected a 500")?;
    ensure!(
        matches!(err, FetchError::Status(_)),
        "expected a 500, got {err}"
    );
    let errors = inventory.snapshot().recent_errors;
    println!("    call -> Err({err})   (error {errors} of 3)");

    server.set(Mode::Hanging);
    println!("    [server now hangs, far longer than the 300ms timeout]");
    let started = Instant::now();
    let err = call().await.err().context("expected a timeout")?;
    let took = started.elapsed();
    ensure!(
        err.rejected().is_some_and(Rejected::is_timeout),
        "expected a timeout, got {err}"
    );
    ensure!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "the timeout took {took:?}, expected about 300ms"
    );
    let errors = inventory.snapshot().recent_errors;
    println!("    call -> Err({err})   (after {took:.0?}; error {errors} of 3)");
    ensure!(errors == 2, "expected 2 errors in the window, saw {errors}");
    ensure!(
        inventory.state() == State::Closed,
        "expected the breaker to stay closed below the threshold"
    );
    println!(
        "    still {}: it opens at the third error",
        inventory.state()
    );
    tour.expect_changes(&[])?;

    tour.step("1.3 A third error opens it; calls are then refused without reaching the server.");
    server.set(Mode::Failing);
    println!("    [server answers 500 again]");
    let err = call().await.err().context("expected a 500")?;
    ensure!(
        matches!(err, FetchError::Status(_)),
        "expected a 500, got {err}"
    );
    println!("    call -> Err({err})   (error 3 of 3)");
    tour.expect_changes(&["inventory: closed -> open"])?;
    ensure!(inventory.state() == State::Open, "expected an open breaker");
    let hits = server.hits();
    println!("    the server has received {hits} requests so far");
    for _ in 0..3 {
        let started = Instant::now();
        let err = call()
            .await
            .err()
            .context("an open breaker let a call through")?;
        let took = started.elapsed();
        let rejected = err.rejected().context("expected a refusal")?;
        ensure!(
            rejected.is_circuit_open(),
            "expected `circuit open`, got {err}"
        );
        ensure!(
            took < Duration::from_millis(50),
            "a refusal took {took:?}; it should be immediate"
        );
        println!("    call -> refused in {took:.1?}: {rejected}");
    }
    ensure!(
        server.hits() == hits,
        "refused calls reached the server ({} requests, expected {hits})",
        server.hits()
    );
    println!(
        "    the server has still received {hits} requests: refused calls never left the process"
    );

    tour.step("1.4 After error_timeout (800ms from the last error) it lets one probe through.");
    let wait = inventory
        .snapshot()
        .half_opens_in
        .context("expected an open breaker")?;
    println!("    snapshot().half_opens_in = {wait:.0?}; sleeping that long");
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    ensure!(inventory.state() == State::HalfOpen, "expected half-open");
    println!(
        "    state() -> {} (the change is announced when the next call arrives)",
        inventory.state()
    );
    println!("    [the server still answers 500] sending the probe:");
    let err = call().await.err().context("expected the probe to fail")?;
    ensure!(
        matches!(err, FetchError::Status(_)),
        "expected the probe to reach the server, got {err}"
    );
    println!(
        "    probe -> Err({err})   (it reached the server: {} requests)",
        server.hits()
    );
    ensure!(
        server.hits() == hits + 1,
        "expected exactly one probe to reach the server"
    );
    tour.expect_changes(&[
        "inventory: open -> half-open",
        "inventory: half-open -> open",
    ])?;
    let err = call().await.err().context("expected a refusal")?;
    ensure!(
        err.rejected().is_some_and(Rejected::is_circuit_open),
        "expected the failed probe to re-open the breaker, got {err}"
    );
    println!(
        "    a failed probe re-opens it for another {:?}:",
        inventory.error_timeout()
    );
    println!("    call -> refused: {err}");

    tour.step("1.5 The server recovers: the next probe succeeds and closes the breaker.");
    server.set(Mode::Healthy);
    println!("    [server healthy again]");
    let wait = inventory
        .snapshot()
        .half_opens_in
        .context("expected an open breaker")?;
    println!("    sleeping {wait:.0?} until the next probe is allowed");
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    let stock = call().await.context("the probe should have succeeded")?;
    println!("    probe -> Ok({stock:?})");
    tour.expect_changes(&[
        "inventory: open -> half-open",
        "inventory: half-open -> closed",
    ])?;
    for _ in 0..2 {
        let stock = call().await.context("a call after recovery failed")?;
        println!("    call -> Ok({stock:?})");
    }
    ensure!(
        inventory.state() == State::Closed,
        "expected a closed breaker"
    );
    ensure!(
        inventory.snapshot().recent_errors == 0,
        "closing should forget the old errors"
    );
    println!(
        "    {} again, with 0 errors counted; the server has received {} requests in all",
        inventory.state(),
        server.hits()
    );
    Ok(())
}

// ================================================================================================
// 2. `capacity`: the open time derived from `timeout`
// ================================================================================================

/// Asks the pricing service. `capacity = 0.75` with `timeout = "200ms"` sets
/// `error_timeout = 200ms * 0.75 / (1 - 0.75) = 600ms`.
#[breaker(name = "pricing", capacity = 0.75, timeout = "200ms")]
async fn fetch_price(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let response = client.get(url).send().await?;
    if !response.status().is_success() {
        return Err(FetchError::Status(response.status()));
    }
    Ok(response.text().await?)
}

async fn capacity(tour: &Tour) -> anyhow::Result<()> {
    tour.section("2. `capacity`: the open time derived from `timeout`");
    let server = Upstream::start("pricing", "a widget costs 3 EUR").await?;
    server.set(Mode::Hanging);
    let url = server.url("/price");
    println!("server `pricing` listens on {url}, and it is dead: every request hangs");
    println!(
        r#"
    #[breaker(name = "pricing", capacity = 0.75, timeout = "200ms")]
    async fn fetch_price(client: &reqwest::Client, url: &str) -> Result<String, FetchError>"#
    );
    let (timeout, share) = (Duration::from_millis(200), 0.75);
    let expected = breaker::capacity_error_timeout(timeout, share);
    println!(
        "\n    error_timeout = timeout * capacity / (1 - capacity) = {timeout:?} * {share} / {} = {expected:?}",
        1.0 - share
    );
    println!(
        "    A worker that keeps calling a dead server is stuck {timeout:?} in each probe, then"
    );
    println!(
        "    free for {expected:?} while calls are refused at once: free {:.0}% of the time.",
        share * 100.0
    );
    ensure!(
        expected == Duration::from_millis(600),
        "capacity_error_timeout(200ms, 0.75) = {expected:?}, expected 600ms"
    );

    tour.step("2.1 Three callers arrive at once; each gives up after 200ms; that opens it.");
    let call = || fetch_price(&tour.client, &url);
    let started = Instant::now();
    let (a, b, c) = tokio::join!(call(), call(), call());
    let took = started.elapsed();
    for result in [a, b, c] {
        let err = result.err().context("a dead server answered")?;
        ensure!(
            err.rejected().is_some_and(Rejected::is_timeout),
            "expected a timeout, got {err}"
        );
        println!("    call -> Err({err})");
    }
    println!("    (all three took {took:.0?} together)");
    tour.expect_changes(&["pricing: closed -> open"])?;
    let pricing = breaker::get("pricing").context("`pricing` is not registered")?;
    ensure!(
        pricing.error_timeout() == expected,
        "error_timeout is {:?}, expected {expected:?}",
        pricing.error_timeout()
    );
    println!(
        "    breaker::get(\"pricing\").error_timeout() -> {:?}",
        pricing.error_timeout()
    );

    tour.step("2.2 One cycle: 600ms open (refused at once), then one probe that waits 200ms.");
    let hits = server.hits();
    let err = call().await.err().context("expected a refusal")?;
    ensure!(
        err.rejected().is_some_and(Rejected::is_circuit_open),
        "expected a refusal, got {err}"
    );
    println!("    call -> refused: {err}");
    let wait = pricing.snapshot().half_opens_in.context("expected open")?;
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    let started = Instant::now();
    let err = call()
        .await
        .err()
        .context("a dead server answered the probe")?;
    let took = started.elapsed();
    ensure!(
        err.rejected().is_some_and(Rejected::is_timeout),
        "expected the probe to time out, got {err}"
    );
    println!("    probe -> Err({err})   (after {took:.0?})");
    tour.expect_changes(&["pricing: open -> half-open", "pricing: half-open -> open"])?;
    ensure!(
        server.hits() == hits + 1,
        "expected only the probe to reach the server ({} requests, expected {})",
        server.hits(),
        hits + 1
    );
    println!(
        "    the server received only the probe ({} requests in all); open again for {:?}",
        server.hits(),
        pricing.snapshot().open_for
    );
    Ok(())
}

// ================================================================================================
// 3. Keyed breakers: one breaker per host
// ================================================================================================

/// GETs `path` from `host`, with one breaker per host. Returns `anyhow::Result`: `anyhow::Error`
/// already implements `From<Rejected>`, so no error type of our own is needed.
#[breaker(name = "hosts", key = host, error_threshold = 2, error_timeout = "5s", timeout = "500ms")]
async fn fetch_from(client: &reqwest::Client, host: &str, path: &str) -> anyhow::Result<String> {
    let response = client.get(format!("http://{host}{path}")).send().await?;
    Ok(response.error_for_status()?.text().await?)
}

async fn keyed_by_host(tour: &Tour) -> anyhow::Result<()> {
    tour.section("3. Keyed breakers: one breaker per host");
    let alpha = Upstream::start("alpha", "hello from alpha").await?;
    let beta = Upstream::start("beta", "hello from beta").await?;
    let (a, b) = (alpha.host(), beta.host());
    println!("server `alpha` listens on {a}, server `beta` on {b}");
    println!(
        r#"
    #[breaker(name = "hosts", key = host, error_threshold = 2, error_timeout = "5s", timeout = "500ms")]
    async fn fetch_from(client: &reqwest::Client, host: &str, path: &str) -> anyhow::Result<String>"#
    );

    tour.step("3.1 `beta` fails twice: its breaker opens.");
    beta.set(Mode::Failing);
    println!("    [beta now answers 500]");
    for _ in 0..2 {
        let err = fetch_from(&tour.client, &b, "/")
            .await
            .err()
            .context("a failing server answered")?;
        println!("    beta  -> Err({err})");
    }
    tour.expect_changes(&[&format!("hosts [{b}]: closed -> open")])?;

    tour.step("3.2 Calls to `beta` are refused; calls to `alpha` still go through.");
    let beta_hits = beta.hits();
    for _ in 0..2 {
        let text = fetch_from(&tour.client, &a, "/")
            .await
            .context("alpha's call was refused")?;
        println!("    alpha -> Ok({text:?})");
        let err = fetch_from(&tour.client, &b, "/")
            .await
            .err()
            .context("beta's open breaker let a call through")?;
        // With `anyhow`, the refusal is still a `Rejected` underneath.
        let rejected = err
            .downcast_ref::<Rejected>()
            .context("expected a Rejected")?;
        ensure!(rejected.is_circuit_open(), "expected circuit open: {err}");
        ensure!(rejected.key() == Some(&*b), "refused for the wrong key");
        println!("    beta  -> refused: {rejected}");
    }
    ensure!(beta.hits() == beta_hits, "refused calls reached beta");
    ensure!(alpha.hits() == 2, "expected alpha to serve 2 requests");
    println!(
        "    alpha served {} requests; beta still has {} (the refused calls never reached it)",
        alpha.hits(),
        beta.hits()
    );

    let hosts = breaker::get_keyed("hosts").context("`hosts` is not registered")?;
    println!(
        "    breaker::get_keyed(\"hosts\") holds {} keys:",
        hosts.len()
    );
    for (who, host, expected) in [("alpha", &a, State::Closed), ("beta", &b, State::Open)] {
        let state = hosts.get(host).context("a key is missing")?.state();
        ensure!(
            state == expected,
            "{who}'s breaker is {state}, expected {expected}"
        );
        println!("      {host} ({who}): {state}");
    }
    tour.expect_changes(&[])?;
    Ok(())
}

// ================================================================================================
// The stage: test servers, the shared client, narration and checks
// ================================================================================================

/// What the tour shares between sections: one HTTP client, and the state changes reported by
/// `breaker::subscribe` that the sections have not checked yet.
struct Tour {
    client: reqwest::Client,
    changes: Arc<Mutex<Vec<String>>>,
}

impl Tour {
    fn new() -> Self {
        let changes = Arc::new(Mutex::new(Vec::new()));
        let sink = changes.clone();
        // Called on every state change of every breaker, on the path of the call that caused it.
        // It only records the change: the tour prints it right after the call's own result.
        breaker::subscribe(move |change| {
            let who = match &change.key {
                Some(key) => format!("{} [{key}]", change.name),
                None => change.name.to_string(),
            };
            let line = format!("{who}: {} -> {}", change.from, change.to);
            sink.lock().unwrap().push(line);
        });
        Tour {
            client: reqwest::Client::new(),
            changes,
        }
    }

    fn section(&self, title: &str) {
        println!("\n{title}\n{}", "=".repeat(title.len()));
    }

    fn step(&self, text: &str) {
        println!("\n{text}");
    }

    /// Prints the state changes reported since the last call, and checks they are `expected`.
    fn expect_changes(&self, expected: &[&str]) -> anyhow::Result<()> {
        let seen = std::mem::take(&mut *self.changes.lock().unwrap());
        for line in &seen {
            println!("    >> {line}");
        }
        if seen != expected {
            bail!("expected the state changes {expected:?}, but saw {seen:?}");
        }
        Ok(())
    }
}

/// How a test server answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Mode {
    /// 200 with the server's text.
    Healthy = 0,
    /// 500 at once.
    Failing = 1,
    /// No answer for 30 s: longer than any breaker timeout here.
    Hanging = 2,
}

/// A real HTTP server on 127.0.0.1, whose behaviour the tour switches with [`Upstream::set`].
struct Upstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

struct Shared {
    body: &'static str,
    mode: AtomicU8,
    /// Requests received, whatever the answer.
    hits: AtomicU64,
}

impl Upstream {
    async fn start(name: &str, body: &'static str) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            body,
            mode: AtomicU8::new(Mode::Healthy as u8),
            hits: AtomicU64::new(0),
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .with_context(|| format!("cannot bind server `{name}`"))?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Upstream { addr, shared })
    }

    fn set(&self, mode: Mode) {
        self.shared.mode.store(mode as u8, Ordering::SeqCst);
    }

    fn hits(&self) -> u64 {
        self.shared.hits.load(Ordering::SeqCst)
    }

    /// `127.0.0.1:port`
    fn host(&self) -> String {
        self.addr.to_string()
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

async fn answer(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
) -> (axum::http::StatusCode, &'static str) {
    shared.hits.fetch_add(1, Ordering::SeqCst);
    let mode = shared.mode.load(Ordering::SeqCst);
    match mode {
        m if m == Mode::Healthy as u8 => (axum::http::StatusCode::OK, shared.body),
        m if m == Mode::Failing as u8 => (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "something broke",
        ),
        _ => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            (axum::http::StatusCode::OK, "sorry, I was asleep")
        }
    }
}
