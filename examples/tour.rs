//! A guided tour of `resilient`, against a real HTTP server on 127.0.0.1.
//!
//! ```text
//! cargo run --example tour
//! TOUR_TRACING=1 cargo run --example tour   # also print the library's own `tracing` events
//! ```
//!
//! The tour starts small axum servers on `127.0.0.1:0`, calls them with reqwest through functions
//! annotated with `#[breaker(...)]`, guards server handlers with `#[too_busy(...)]`, makes the
//! servers misbehave or overloads them on purpose, and narrates what the policies do. Every claim it
//! prints is also checked: if the library does not behave as narrated, the tour stops with an error
//! and a nonzero exit status, so it doubles as a smoke test.
//!
//! Sections (each one is an `async fn` called from `main`, with its annotated functions above it):
//!
//! 1. A circuit breaker at work: healthy, flaky, open, half-open, closed again.
//! 2. `capacity`: the open time derived from `timeout`.
//! 3. Keyed breakers: one breaker per host.
//! 4. `#[too_busy]`: a handler sheds load at its entry (in-flight cap, runtime lag) and recovers.
//! 5. `#[race_retry]`: a raced retry overtakes a slow first attempt; fast failures; the deadline.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
// `breaker` is both the attribute and the module (`breaker::get`, `breaker::subscribe`, ...): one
// `use` brings in both. (`use resilient::breaker::{self}` would bring in the module only.)
use resilient::breaker::State;
use resilient::busy::{self, shed_probability, Smoothing};
use resilient::race::{self, Outcome};
use resilient::{breaker, race_retry, too_busy, Rejected};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::var_os("TOUR_TRACING").is_some() {
        tracing_subscriber::fmt().without_time().init();
    }
    ensure!(
        !breaker::disabled(),
        "RESILIENT_DISABLED is set, so every breaker lets calls through; unset it to run the tour"
    );
    println!(
        "resilient tour: circuit breakers and load shedding against real HTTP servers on 127.0.0.1"
    );
    println!(
        "(lines starting with `>>` are state changes reported by resilient::breaker::subscribe)"
    );

    let tour = Tour::new();
    breaker_at_work(&tour).await?;
    capacity(&tour).await?;
    keyed_by_host(&tour).await?;
    too_busy_handlers(&tour).await?;
    raced_retries(&tour).await?;

    println!("\nTour complete: every policy behaved as narrated.");
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
// 4. `#[too_busy]`: load shedding at a handler's entry
// ================================================================================================

/// The error type of the handlers below. `#[too_busy]` refuses a call by returning
/// `Err(AppError::from(rejected))`, and axum turns the error into a response. (A real app's error
/// has more variants; here a refusal is all that can go wrong.)
#[derive(Debug)]
struct AppError(Rejected);

impl From<Rejected> for AppError {
    fn from(rejected: Rejected) -> Self {
        AppError(rejected)
    }
}

/// A refusal is `503 Service Unavailable`, with a `Retry-After` header (the refusal's own hint when
/// it has one, else 1 s) and a body that tells the client only that and when to retry: the
/// refusal's message names the function (and for a breaker its key or host), which is for the
/// server's log. With the `axum` feature, `Rejected` is itself an `IntoResponse` that does exactly
/// this (`resilient::http`), and guarded handlers may also return `impl IntoResponse`; the tour
/// runs without features, so it spells it out.
impl axum::response::IntoResponse for AppError {
    fn into_response(self) -> axum::response::Response {
        let AppError(rejected) = self;
        let seconds = rejected
            .retry_after()
            .map_or(1, |hint| hint.as_secs_f64().ceil() as u64)
            .max(1);
        SERVER_LOG.lock().unwrap().push(rejected.to_string());
        let s = if seconds == 1 { "" } else { "s" };
        (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            [(axum::http::header::RETRY_AFTER, seconds.to_string())],
            format!("Service Unavailable. Retry after {seconds} second{s}.\n"),
        )
            .into_response()
    }
}

/// The servers' log: the full message of every refusal they answered.
static SERVER_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// What the servers logged since the last look.
fn server_log() -> Vec<String> {
    std::mem::take(&mut *SERVER_LOG.lock().unwrap())
}

/// The thumbnail service: how many calls are inside the handler, and a switch the tour flips to let
/// their work finish, so that "two calls in flight" lasts exactly as long as the tour needs.
struct Thumbnails {
    inside: AtomicU64,
    made: AtomicU64,
    finish: tokio::sync::watch::Sender<bool>,
}

/// Renders a thumbnail: two at a time at most; a third concurrent call is refused at the door.
#[too_busy(max_in_flight = 2)]
async fn thumbnail(
    axum::extract::State(work): axum::extract::State<Arc<Thumbnails>>,
) -> Result<String, AppError> {
    work.inside.fetch_add(1, Ordering::SeqCst);
    // The work itself: here, waiting until the tour says it is done.
    let _ = work.finish.subscribe().wait_for(|done| *done).await;
    work.inside.fetch_sub(1, Ordering::SeqCst);
    let n = work.made.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(format!("thumbnail #{n}"))
}

/// The `max_lag` of `search`.
const SEARCH_MAX_LAG: Duration = Duration::from_millis(50);

/// Searches the catalogue: refused while the runtime it runs on lags more than 50ms.
#[too_busy(max_lag = "50ms")]
async fn search() -> Result<String, AppError> {
    Ok("3 results".to_string())
}

/// The culprit of 4.3: CPU-bound work run on the async runtime itself, a common mistake. It
/// computes in `slice`-long stretches and yields between them (as cooperative code should, but far
/// too rarely), until `total` has passed. Returns when it ended.
async fn reindex(total: Duration, slice: Duration) -> Instant {
    let started = Instant::now();
    let mut checksum = 0u64;
    while started.elapsed() < total {
        let stretch = Instant::now();
        while stretch.elapsed() < slice {
            checksum = std::hint::black_box(checksum.wrapping_mul(31).wrapping_add(7));
        }
        tokio::task::yield_now().await;
    }
    Instant::now()
}

async fn too_busy_handlers(tour: &Tour) -> anyhow::Result<()> {
    tour.section("4. `#[too_busy]`: load shedding at a handler's entry");
    println!(
        "The handlers here return Result<String, AppError>. AppError implements From<Rejected>,"
    );
    println!("so the guard can refuse through it, and IntoResponse: a refusal becomes");
    println!("`503 Service Unavailable` with a `Retry-After` header and a body that names nothing");
    println!("inside the server; the reason goes to the server's log.");
    in_flight_cap(tour).await?;
    runtime_lag(tour).await
}

/// The next reply from requests sent concurrently, each tagged with its number; at most 3 s away.
async fn next_reply(
    replies: &mut tokio::sync::mpsc::UnboundedReceiver<(u32, anyhow::Result<Reply>)>,
) -> anyhow::Result<(u32, Reply)> {
    let (i, reply) = tokio::time::timeout(Duration::from_secs(3), replies.recv())
        .await
        .ok()
        .flatten()
        .context("fewer replies than expected within 3s")?;
    Ok((i, reply?))
}

async fn in_flight_cap(tour: &Tour) -> anyhow::Result<()> {
    let (finish, _) = tokio::sync::watch::channel(false);
    let work = Arc::new(Thumbnails {
        inside: AtomicU64::new(0),
        made: AtomicU64::new(0),
        finish,
    });
    let app = axum::Router::new()
        .route("/thumbnail", axum::routing::get(thumbnail))
        .with_state(work.clone());
    let url = format!("http://{}/thumbnail", serve("thumbnails", app).await?);
    println!("\nserver `thumbnails` listens on {url}");
    println!(
        r#"
    #[too_busy(max_in_flight = 2)]
    async fn thumbnail(State(work): State<Arc<Thumbnails>>) -> Result<String, AppError>"#
    );

    tour.step(
        "4.1 `max_in_flight`: five requests at once; two are admitted, three refused at once.",
    );
    println!("    [an admitted call keeps its slot until the tour lets its work finish]");
    let (sink, mut replies) = tokio::sync::mpsc::unbounded_channel();
    for i in 1..=5 {
        let (client, url, sink) = (tour.client.clone(), url.clone(), sink.clone());
        tokio::spawn(async move {
            let _ = sink.send((i, fetch(&client, &url).await));
        });
    }
    drop(sink);
    let mut bodies = Vec::new();
    for _ in 0..3 {
        let (i, reply) = next_reply(&mut replies)
            .await
            .context("expected three immediate refusals (were more than two calls admitted?)")?;
        ensure!(
            reply.status == reqwest::StatusCode::SERVICE_UNAVAILABLE,
            "request {i} got {} while two calls were in flight; expected 503",
            reply.status
        );
        ensure!(
            reply.took < Duration::from_millis(500),
            "a refusal took {:?}; it should be immediate",
            reply.took
        );
        ensure!(
            reply.retry_after.as_deref() == Some("1"),
            "expected `Retry-After: 1`, got {:?}",
            reply.retry_after
        );
        println!(
            "    request {i} -> {} in {} (Retry-After: 1)",
            reply.status,
            millis(reply.took)
        );
        bodies.push(reply.body);
    }
    bodies.dedup();
    ensure!(
        bodies == ["Service Unavailable. Retry after 1 second.\n"],
        "expected one name-free body for all three refusals, got {bodies:?}"
    );
    let mut logged = server_log();
    logged.dedup();
    ensure!(
        logged.len() == 1 && logged[0].contains("in flight"),
        "expected the in-flight cap to refuse all three, logged {logged:?}"
    );
    println!("    each with the body: {}", bodies[0].trim_end());
    println!("    and in the server's log: {}", logged[0]);
    let inside = wait_for(Duration::from_secs(1), || {
        work.inside.load(Ordering::SeqCst) == 2
    })
    .await;
    ensure!(
        inside,
        "expected 2 calls inside `thumbnail`, saw {}",
        work.inside.load(Ordering::SeqCst)
    );
    println!("    Meanwhile 2 calls are inside `thumbnail`, holding both slots. The refused ones");
    println!("    did not wait in a queue, and never entered its body.");

    println!("    [the tour lets the two admitted calls finish]");
    work.finish.send_replace(true);
    for _ in 0..2 {
        let (i, reply) = next_reply(&mut replies)
            .await
            .context("the two admitted calls did not finish")?;
        ensure!(
            reply.status == reqwest::StatusCode::OK,
            "admitted request {i} got {}: {}",
            reply.status,
            reply.body
        );
        println!(
            "    request {i} -> {} in {}: {:?}",
            reply.status,
            millis(reply.took),
            reply.body
        );
    }
    let reply = fetch(&tour.client, &url).await?;
    ensure!(
        reply.status == reqwest::StatusCode::OK,
        "with both slots free, a call got {}: {}",
        reply.status,
        reply.body
    );
    println!(
        "    request 6 -> {} in {}: {:?}   (the slots are free again)",
        reply.status,
        millis(reply.took),
        reply.body
    );
    Ok(())
}

async fn runtime_lag(tour: &Tour) -> anyhow::Result<()> {
    let app = axum::Router::new().route("/search", axum::routing::get(search));
    let server = SingleThreadServer::start("search", app)?;
    let url = server.url("/search");
    println!("\nserver `search` listens on {url}, on a current-thread runtime");
    println!("of its own: one thread does all its work, as in a Node server");
    println!(
        r#"
    #[too_busy(max_lag = "50ms")]
    async fn search() -> Result<String, AppError>"#
    );

    tour.step("4.2 `max_lag`: while the server is idle, its runtime does not lag.");
    for _ in 0..3 {
        let reply = fetch(&tour.client, &url).await?;
        ensure!(
            reply.status == reqwest::StatusCode::OK,
            "the idle server refused a call: {}",
            reply.body
        );
        println!(
            "    call -> {} in {}: {:?}",
            reply.status,
            millis(reply.took),
            reply.body
        );
    }
    let interval = busy::interval();
    println!("    The first guarded call started a lag monitor on the server's runtime: every");
    println!(
        "    {interval:?} (busy::interval()) it sleeps, measures how late it woke, and smooths"
    );
    println!(
        "    the samples. A call is refused with probability (lag - max_lag) / max_lag: never"
    );
    println!("    while the lag is under 50ms, always from 100ms.");
    tokio::time::sleep(3 * interval).await;
    let idle = busy::lag();
    ensure!(
        idle < SEARCH_MAX_LAG,
        "the idle server already lags {idle:?}"
    );
    println!("    busy::lag() -> {}", millis(idle));
    // toobusy-js's `onLag`: the monitor calls it after every sample at or above the threshold.
    let peak = Arc::new(AtomicU64::new(0));
    let seen = peak.clone();
    busy::on_lag(SEARCH_MAX_LAG, move |lag| {
        seen.fetch_max(lag.as_nanos() as u64, Ordering::SeqCst);
    });

    // The monitor samples only between stretches, once per stretch; a 250ms stretch makes it wake
    // 150ms late, more than the 140ms cap (twice the default max_lag), so the lag climbs the same
    // way every run: 47, 78, 98, 112, 122ms, ... and from the 4th sample on every call is refused.
    let (total, slice) = (Duration::from_millis(2500), Duration::from_millis(250));
    tour.step("4.3 A CPU-bound job lands on the server's thread: it computes in 250ms stretches,");
    println!(
        "    yielding between them, for 2.5s. A client calls /search every 50ms meanwhile; each"
    );
    println!("    call waits for the current stretch to end, then the guard looks at the lag.");
    println!("    (+time: when the answer came, from the job's start; lag: busy::lag() just then;");
    println!("    for a refusal, the server's log quotes the lag the guard saw)");
    let started = Instant::now();
    let mut job = server.runtime.spawn(reindex(total, slice));
    let mut ended: Option<Instant> = None;
    let (mut ok_during, mut refused_during) = (0, 0);
    let mut back_after = None;
    let mut ok_in_a_row = 0;
    let mut pace = tokio::time::interval(Duration::from_millis(50));
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while ok_in_a_row < 5 {
        ensure!(
            started.elapsed() < total + Duration::from_secs(2),
            "the server did not recover within 2s of the job's end"
        );
        pace.tick().await;
        let reply = fetch(&tour.client, &url).await?;
        let lag = busy::lag();
        let ok = reply.status == reqwest::StatusCode::OK;
        let reason = server_log().pop().unwrap_or_default();
        ensure!(
            ok || (reply.status == reqwest::StatusCode::SERVICE_UNAVAILABLE
                && reason.contains("runtime lags")),
            "expected 200 or a refusal for lag, got {}: {} (logged: {reason})",
            reply.status,
            reply.body
        );
        let just_ended = ended.is_none() && job.is_finished();
        if just_ended {
            ended = Some((&mut job).await?);
        }
        // Did this answer come after the job had ended?
        match ended.filter(|end| *end <= reply.received) {
            None if ok => ok_during += 1,
            None => refused_during += 1,
            Some(end) => {
                if ok && back_after.is_none() {
                    back_after = Some(reply.received - end);
                }
                ok_in_a_row = if ok { ok_in_a_row + 1 } else { 0 };
            }
        }
        let answer = if ok {
            format!("{:?}", reply.body)
        } else {
            format!("logged: {reason}")
        };
        let line = format!(
            "    +{:>4}ms  {}  lag {:>5}  {answer}",
            (reply.received - started).as_millis(),
            reply.status.as_u16(),
            millis(lag)
        );
        match ended.filter(|_| just_ended) {
            Some(end) => {
                let mark = format!(
                    "    +{:>4}ms  [the job is done: the server's thread is free again]",
                    (end - started).as_millis()
                );
                if end <= reply.received {
                    println!("{mark}\n{line}");
                } else {
                    println!("{line}\n{mark}");
                }
            }
            None => println!("{line}"),
        }
    }
    let back_after = back_after.context("no call succeeded after the job")?;
    let calls = ok_during + refused_during;
    // About 9 calls, the last 5 or more at a lag of 100ms or more; a call that opens a new
    // connection waits two stretches, so leave room for a few of those.
    ensure!(
        refused_during >= 3,
        "expected the lagging server to refuse calls during the job; it refused {refused_during} of {calls}"
    );
    let peak = Duration::from_nanos(peak.load(Ordering::SeqCst));
    println!(
        "    During the job {refused_during} of {calls} calls were refused, each as soon as its"
    );
    println!(
        "    turn came; busy::on_lag({}) saw the lag peak at {}.",
        millis(SEARCH_MAX_LAG),
        millis(peak)
    );

    tour.step("4.4 Recovery: 200s are back as soon as the monitor takes one quiet sample.");
    ensure!(
        back_after < Duration::from_millis(600),
        "200s came back only {back_after:?} after the job ended; expected about one interval \
         ({interval:?})"
    );
    println!(
        "    The first 200 came {} after the job ended, and the next ones all went through.",
        millis(back_after)
    );
    // What quiet samples do to the lag the job left behind, under our rule and toobusy-js's,
    // until the lag no longer refuses anything.
    let recovery = |smoothing: Smoothing| {
        let mut lag = peak;
        let mut steps = Vec::new();
        while shed_probability(lag, SEARCH_MAX_LAG) > 0.0 && steps.len() < 20 {
            lag = smoothing.next(lag, Duration::ZERO, busy::max_lag());
            let share = shed_probability(lag, SEARCH_MAX_LAG) * 100.0;
            steps.push(format!("{} (refuses {share:.0}%)", millis(lag)));
        }
        steps
    };
    let fast = recovery(busy::smoothing());
    let original = recovery(Smoothing::toobusy());
    println!("    Fast recovery (the default, from toobusy-js PR #17): while the lag falls, a new");
    println!("    sample weighs 2/3, so one quiet sample removes two thirds of the lag:");
    println!("      {} -> {}", millis(peak), fast.join(" -> "));
    println!("    toobusy-js's original rule weighs it 1/3 both ways: from the same lag, the idle");
    let longer = original.len().saturating_sub(fast.len()) as u32;
    println!(
        "    server would have kept refusing calls for {longer} intervals ({:?}) longer:",
        longer * interval
    );
    println!("      {} -> {}", millis(peak), original.join(" -> "));
    ensure!(
        fast.len() == 1 && original.len() > 1,
        "expected fast recovery to need one quiet sample and the original rule more"
    );
    Ok(())
}

// ================================================================================================
// 5. `#[race_retry]`: raced retries under one deadline
// ================================================================================================

/// Looks a user up on a replica. A retry does not abort the attempt in flight but races it: the
/// first answer wins, and the other attempts are cancelled before the call returns.
#[race_retry(retries = 2, after = "150ms", total = "1s")]
async fn lookup_user(client: &reqwest::Client, base: &str, id: u64) -> anyhow::Result<String> {
    let response = client.get(format!("{base}/user/{id}")).send().await?;
    Ok(response.error_for_status()?.text().await?)
}

/// What the replica does with the next requests it receives (then it answers in 20 ms).
#[derive(Copy, Clone, Debug)]
enum Plan {
    /// Answer after this long.
    Delay(Duration),
    /// 503 at once.
    Fail,
}

#[derive(Default)]
struct Replica {
    plan: Mutex<std::collections::VecDeque<Plan>>,
    hits: AtomicU64,
}

async fn replica_answer(
    axum::extract::State(replica): axum::extract::State<Arc<Replica>>,
    axum::extract::Path(id): axum::extract::Path<u64>,
) -> (axum::http::StatusCode, String) {
    let n = replica.hits.fetch_add(1, Ordering::SeqCst) + 1;
    let plan = replica.plan.lock().unwrap().pop_front();
    match plan.unwrap_or(Plan::Delay(Duration::from_millis(20))) {
        Plan::Delay(delay) => {
            tokio::time::sleep(delay).await;
            (
                axum::http::StatusCode::OK,
                format!("user {id} (request #{n})"),
            )
        }
        Plan::Fail => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            format!("replica overloaded (request #{n})"),
        ),
    }
}

/// Prints what `race::observe` saw: every attempt, losers included.
fn print_attempts(attempts: &[race::Attempt]) {
    let mut attempts = attempts.to_vec();
    attempts.sort_by_key(|a| a.number);
    for a in &attempts {
        println!(
            "      attempt {}: started at {:>5}, ran {:>6}, {}",
            a.number,
            millis(a.started),
            millis(a.elapsed),
            a.outcome
        );
    }
}

async fn raced_retries(tour: &Tour) -> anyhow::Result<()> {
    tour.section("5. `#[race_retry]`: raced retries under one deadline");
    let replica = Arc::new(Replica::default());
    let app = axum::Router::new()
        .route("/user/{id}", axum::routing::get(replica_answer))
        .with_state(replica.clone());
    let base = format!("http://{}", serve("replica", app).await?);
    println!("server `replica` listens on {base}/user/{{id}}");
    println!(
        r#"
    #[race_retry(retries = 2, after = "150ms", total = "1s")]
    async fn lookup_user(client: &reqwest::Client, base: &str, id: u64) -> anyhow::Result<String>

    Attempt 1 starts at once; attempt k + 1 starts 150ms after attempt k started, or sooner
    when one fails: after a random backoff (below 37.5ms, then below 75ms: a quarter of `after`,
    doubling). The first Ok wins; the others are cancelled before the call returns. A retry
    budget (10% of the calls, plus 10 a second) bounds the extra attempts of all calls."#
    );
    let plan = |steps: &[Plan]| replica.plan.lock().unwrap().extend(steps.iter().copied());

    tour.step("5.1 The replica answers in 20ms: one attempt, nothing raced.");
    let started = Instant::now();
    let (user, attempts) = race::observe(lookup_user(&tour.client, &base, 7)).await;
    let user = user.context("a healthy replica's lookup failed")?;
    println!(
        "    lookup_user(7) -> Ok({user:?}) in {}",
        millis(started.elapsed())
    );
    print_attempts(&attempts);
    ensure!(
        attempts.len() == 1,
        "expected one attempt, saw {}",
        attempts.len()
    );

    tour.step(
        "5.2 The next request hangs for 3s on the replica (a slow disk, a GC pause).\n    \
         The retry at 150ms does not abort it but races it, and overtakes it.",
    );
    plan(&[Plan::Delay(Duration::from_secs(3))]);
    let started = Instant::now();
    let (user, attempts) = race::observe(lookup_user(&tour.client, &base, 8)).await;
    let took = started.elapsed();
    let user = user.context("the raced lookup failed")?;
    println!("    lookup_user(8) -> Ok({user:?}) in {}", millis(took));
    print_attempts(&attempts);
    let outcome = |n: u32| attempts.iter().find(|a| a.number == n).map(|a| a.outcome);
    ensure!(
        outcome(2) == Some(Outcome::Won) && outcome(1) == Some(Outcome::Lost),
        "expected attempt 2 to win and attempt 1 to lose: {attempts:?}"
    );
    ensure!(
        took < Duration::from_millis(600),
        "the raced call took {}",
        millis(took)
    );
    println!(
        "    Attempt 1 was cancelled when attempt 2 won: the caller waited {} instead of 3s.",
        millis(took)
    );

    tour.step(
        "5.3 The next request takes 400ms, the two after it hang: retrying does not abort\n    \
         attempt 1 (perron's fault was to abort it), so it still wins at 400ms.",
    );
    plan(&[
        Plan::Delay(Duration::from_millis(400)),
        Plan::Delay(Duration::from_secs(3)),
        Plan::Delay(Duration::from_secs(3)),
    ]);
    let started = Instant::now();
    let (user, attempts) = race::observe(lookup_user(&tour.client, &base, 11)).await;
    let took = started.elapsed();
    let user = user.context("attempt 1 should have won")?;
    println!("    lookup_user(11) -> Ok({user:?}) in {}", millis(took));
    print_attempts(&attempts);
    let outcome = |n: u32| attempts.iter().find(|a| a.number == n).map(|a| a.outcome);
    ensure!(
        outcome(1) == Some(Outcome::Won)
            && outcome(2) == Some(Outcome::Lost)
            && outcome(3) == Some(Outcome::Lost),
        "expected attempt 1 to win over two lost retries: {attempts:?}"
    );

    tour.step(
        "5.4 The replica fails the next two requests at once: each failure starts the next attempt\n    \
         after a short random backoff, sooner than the staggered start would have (150ms).",
    );
    plan(&[Plan::Fail, Plan::Fail]);
    let started = Instant::now();
    let (user, attempts) = race::observe(lookup_user(&tour.client, &base, 9)).await;
    let took = started.elapsed();
    let user = user.context("the third attempt should have succeeded")?;
    println!("    lookup_user(9) -> Ok({user:?}) in {}", millis(took));
    print_attempts(&attempts);
    ensure!(
        attempts.len() == 3 && took < Duration::from_millis(300),
        "expected three attempts within 300ms, saw {} in {}",
        attempts.len(),
        millis(took)
    );

    tour.step("5.5 Every request hangs: the deadline ends the call at 1s, and all three attempts are cancelled.");
    plan(&[Plan::Delay(Duration::from_secs(3)); 3]);
    let started = Instant::now();
    let (result, attempts) = race::observe(lookup_user(&tour.client, &base, 10)).await;
    let took = started.elapsed();
    let err = result.err().context("a hanging replica answered")?;
    let rejected = err
        .downcast_ref::<Rejected>()
        .context("expected a Rejected")?;
    ensure!(rejected.is_deadline(), "expected the deadline: {err}");
    println!("    lookup_user(10) -> Err({err}) after {}", millis(took));
    print_attempts(&attempts);
    ensure!(
        attempts.iter().all(|a| a.outcome == Outcome::Abandoned) && attempts.len() == 3,
        "expected three abandoned attempts: {attempts:?}"
    );
    ensure!(
        took >= Duration::from_millis(1000) && took < Duration::from_millis(1200),
        "the deadline came at {}",
        millis(took)
    );
    let name = race::names()
        .into_iter()
        .find(|n| n.ends_with("lookup_user"))
        .context("lookup_user is not registered")?;
    let stats = race::stats(name).context("no stats")?;
    println!(
        "    race::stats({name:?}): {} extra attempts, {} calls won by one, {} refused by the \
         budget, {} deadline(s)",
        stats.extra_attempts, stats.won_by_extra, stats.budget_refused, stats.deadlines
    );
    replica.plan.lock().unwrap().clear();
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

/// What a client saw of one GET.
struct Reply {
    status: reqwest::StatusCode,
    retry_after: Option<String>,
    body: String,
    /// From sending the request to the end of the body.
    took: Duration,
    /// When the body had arrived.
    received: Instant,
}

/// GETs `url`, giving up after 5 s.
async fn fetch(client: &reqwest::Client, url: &str) -> anyhow::Result<Reply> {
    let sent = Instant::now();
    let get = async {
        let response = client.get(url).send().await?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await?;
        anyhow::Ok((status, retry_after, body))
    };
    let (status, retry_after, body) = tokio::time::timeout(Duration::from_secs(5), get)
        .await
        .with_context(|| format!("GET {url}: no answer within 5s"))??;
    let received = Instant::now();
    Ok(Reply {
        status,
        retry_after,
        body,
        took: received - sent,
        received,
    })
}

/// Serves `app` on `127.0.0.1:0` on the tour's own runtime; returns its address.
async fn serve(name: &str, app: axum::Router) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .with_context(|| format!("cannot bind server `{name}`"))?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// A real HTTP server on 127.0.0.1 with a current-thread tokio runtime of its own, on its own OS
/// thread: whatever blocks that thread delays everything the server does, so its lag is its own.
/// Dropping it shuts the runtime down.
struct SingleThreadServer {
    addr: SocketAddr,
    /// The server's runtime, to spawn work on it.
    runtime: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SingleThreadServer {
    fn start(name: &str, app: axum::Router) -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .with_context(|| format!("cannot bind server `{name}`"))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let listener = {
            let _entered = handle.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("server `{name}`"))
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::spawn(async move { axum::serve(listener, app).await });
                    let _ = stopped.await;
                });
            })?;
        Ok(SingleThreadServer {
            addr,
            runtime: handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for SingleThreadServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Polls `condition` every few ms until it holds (true) or `limit` has passed (false).
async fn wait_for(limit: Duration, condition: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !condition() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// `12ms`, `0.4ms`: a duration in milliseconds, for narration.
fn millis(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.1}ms")
    } else {
        format!("{ms:.0}ms")
    }
}
