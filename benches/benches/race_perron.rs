//! Perron's case, over real HTTP: `cargo bench -p resiliency-benches --bench race_perron`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`).
//!
//! # The case
//!
//! Zalando's perron client retried a slow request by aborting the attempt in flight at its
//! timeout and sending a new one, so against a service that always answers in 500 ms, attempts
//! cut at 450 ms never succeed: three of them take 1350 ms and the call fails, although the first
//! attempt would have answered 50 ms after it was cut. Racing the retry with the attempt in
//! flight, under one deadline, answers in about 500 ms.
//!
//! # The server
//!
//! An axum server on 127.0.0.1 (plain HTTP/1), a current-thread tokio runtime on its own thread,
//! whose one handler, `GET /{call}`, counts the request for that call id when it starts, sleeps
//! 500 ms (`tokio::time::sleep`), counts it again if it ran to the end, and answers `200 ok`.
//! Every call of every contender has its own id, so the server's counts are per call.
//!
//! # The contenders
//!
//! Each makes `CALLS` (20) calls, `IN_FLIGHT` (5) at a time, with its own reqwest client (no
//! default features: HTTP/1, no TLS, no proxy), on a current-thread tokio runtime on the main
//! thread:
//!
//! * **one attempt** (a reference): the request, with no timeout.
//! * **perron: sequential retries**: up to 3 attempts one after another, each cut by
//!   `tokio::time::timeout(450 ms)` (the attempt's future is dropped, so reqwest drops its
//!   connection).
//! * **`#[race_retry(retries = 2, after = "450ms", total = "1350ms")]`**: the same request in a
//!   raced fn; attempt 2 starts 450 ms after attempt 1 without cutting it, attempt 3 at 900 ms,
//!   the first `Ok` wins and the others are dropped; the call's deadline is 1350 ms. With the
//!   defaults otherwise: a retry budget of 10% of the calls plus a floor of 10 extra attempts a
//!   second (here every call makes one extra attempt, which the floor pays for: the budget's
//!   refusals are printed), and a backoff after a failure (nothing fails here).
//!
//! # What is printed
//!
//! Per contender: successes and failures (and why), latency p50 and max (from the call's start
//! to its output), requests the server received per call, and handlers that ran to the end per
//! call (a request whose client went away may be dropped by the server before its 500 ms). The
//! server's counts are read after every call ended and a further 600 ms, so that every handler
//! still running has ended.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use axum::extract::Path;
use axum::routing::get;
use axum::Router;
use resiliency::Rejected;
use tokio::time::Instant;

mod common;
use common::outln;
use common::{load_average, ms, pass, Server};

/// The server's time per request.
const SERVICE: Duration = Duration::from_millis(500);
/// Perron's timeout per attempt, and its attempts.
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(450);
const ATTEMPTS: usize = 3;
/// Calls per contender, and how many at a time.
const CALLS: usize = 20;
const IN_FLIGHT: usize = 5;
/// The goal: raced calls all succeed, with a median latency within this share over `SERVICE`.
const GOAL_OVER: f64 = 0.10;

// ---------------------------------------------------------------------------------------------
// The server.

const CONTENDERS: usize = 3;
/// Per call id: requests received, and handlers that ran to the end.
static RECEIVED: [AtomicU64; CONTENDERS * CALLS] =
    [const { AtomicU64::new(0) }; CONTENDERS * CALLS];
static FINISHED: [AtomicU64; CONTENDERS * CALLS] =
    [const { AtomicU64::new(0) }; CONTENDERS * CALLS];

async fn handler(Path(call): Path<usize>) -> &'static str {
    RECEIVED[call].fetch_add(1, Relaxed);
    tokio::time::sleep(SERVICE).await;
    FINISHED[call].fetch_add(1, Relaxed);
    "ok"
}

// ---------------------------------------------------------------------------------------------
// The client and the contenders.

/// Why a call failed.
#[derive(Debug)]
enum FetchError {
    Http(reqwest::Error),
    /// Perron's per-attempt timeout.
    AttemptTimeout,
    /// The race's refusal (its deadline).
    Refused(Rejected),
}

impl From<Rejected> for FetchError {
    fn from(rejected: Rejected) -> Self {
        FetchError::Refused(rejected)
    }
}

impl From<reqwest::Error> for FetchError {
    fn from(error: reqwest::Error) -> Self {
        FetchError::Http(error)
    }
}

impl FetchError {
    fn kind(&self) -> &'static str {
        match self {
            FetchError::Http(e) if e.is_connect() => "HTTP error (connect)",
            FetchError::Http(e) if e.is_status() => "HTTP error (status)",
            FetchError::Http(_) => "HTTP error",
            FetchError::AttemptTimeout => "last attempt timed out",
            FetchError::Refused(r) if r.is_deadline() => "deadline (`total`)",
            FetchError::Refused(_) => "refused",
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("the client builds")
}

/// One request: the body of a 200.
async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    Ok(client
        .get(url)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?)
}

/// Perron's retries: each attempt cut at `ATTEMPT_TIMEOUT`, the next sent after it.
async fn sequential(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    let mut last = FetchError::AttemptTimeout;
    for _ in 0..ATTEMPTS {
        match tokio::time::timeout(ATTEMPT_TIMEOUT, fetch(client, url)).await {
            Ok(Ok(body)) => return Ok(body),
            Ok(Err(error)) => last = error,
            Err(_elapsed) => last = FetchError::AttemptTimeout,
        }
    }
    Err(last)
}

#[resiliency::race_retry(retries = 2, after = "450ms", total = "1350ms")]
async fn raced(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
    fetch(client, url).await
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Contender {
    OneAttempt,
    Sequential,
    Raced,
}

const ALL: [Contender; CONTENDERS] = [
    Contender::OneAttempt,
    Contender::Sequential,
    Contender::Raced,
];

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::OneAttempt => "one attempt, no timeout (reference)",
            Contender::Sequential => "perron: 3 sequential attempts, each cut at 450 ms",
            Contender::Raced => {
                "`#[race_retry(retries = 2, after = \"450ms\", total = \"1350ms\")]`"
            }
        }
    }
}

/// One call: its latency and how it ended.
struct Call {
    id: usize,
    latency: Duration,
    outcome: Result<(), &'static str>,
}

/// `CALLS` calls of `contender`, `IN_FLIGHT` at a time.
async fn run(contender: Contender, base_url: &str) -> Vec<Call> {
    let client = client();
    let offset = contender as usize * CALLS;
    let mut calls = Vec::new();
    for batch in (0..CALLS).collect::<Vec<_>>().chunks(IN_FLIGHT) {
        let mut tasks = tokio::task::JoinSet::new();
        for &i in batch {
            let id = offset + i;
            let (client, url) = (client.clone(), format!("{base_url}/{id}"));
            tasks.spawn(async move {
                let start = Instant::now();
                let output = match contender {
                    Contender::OneAttempt => fetch(&client, &url).await,
                    Contender::Sequential => sequential(&client, &url).await,
                    Contender::Raced => raced(&client, &url).await,
                };
                Call {
                    id,
                    latency: start.elapsed(),
                    outcome: output.map(drop).map_err(|e| e.kind()),
                }
            });
        }
        while let Some(call) = tasks.join_next().await {
            calls.push(call.expect("a call does not panic"));
        }
    }
    calls
}

/// What a contender's calls show.
struct Summary {
    ok: usize,
    failures: String,
    p50: Duration,
    max: Duration,
    /// Per call: requests received, handlers that ran to the end (min, mean, max).
    received: (u64, f64, u64),
    finished: (u64, f64, u64),
}

fn summarize(calls: &[Call]) -> Summary {
    let mut latencies: Vec<Duration> = calls.iter().map(|c| c.latency).collect();
    latencies.sort();
    let mut failures: Vec<(&str, usize)> = Vec::new();
    for call in calls {
        if let Err(kind) = call.outcome {
            match failures.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => failures.push((kind, 1)),
            }
        }
    }
    let spread = |counts: &[AtomicU64; CONTENDERS * CALLS]| {
        let per_call: Vec<u64> = calls.iter().map(|c| counts[c.id].load(Relaxed)).collect();
        (
            *per_call.iter().min().unwrap(),
            per_call.iter().sum::<u64>() as f64 / per_call.len() as f64,
            *per_call.iter().max().unwrap(),
        )
    };
    Summary {
        ok: calls.iter().filter(|c| c.outcome.is_ok()).count(),
        failures: if failures.is_empty() {
            "—".into()
        } else {
            failures
                .iter()
                .map(|(kind, n)| format!("{n}: {kind}"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        p50: latencies[(latencies.len() - 1) / 2],
        max: *latencies.last().unwrap(),
        received: spread(&RECEIVED),
        finished: spread(&FINISHED),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let started = std::time::Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `#[race_retry]`: perron's case over HTTP\n");
    outln!(
        "{cores} cores available; load average at start: {}.\n",
        load_average()
    );
    outln!(
        "Server: axum on 127.0.0.1, every request answered after {} ms. Each contender makes {CALLS} \
         calls, {IN_FLIGHT} at a time, with its own reqwest client.\n",
        SERVICE.as_millis()
    );

    let server = Server::start(None, || async {
        Router::new().route("/{call}", get(handler))
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds");
    let mut runs = Vec::new();
    for contender in ALL {
        let t = std::time::Instant::now();
        let calls = runtime.block_on(run(contender, &server.url));
        runs.push((contender, calls, t.elapsed()));
    }
    // Let every handler still running end before its counts are read.
    std::thread::sleep(SERVICE + Duration::from_millis(100));
    drop(server);

    outln!(
        "| contender | succeeded | failed (why) | latency p50 | latency max | requests at the server \
         per call: min / mean / max | handlers that ran to the end per call: min / mean / max | \
         run |"
    );
    outln!("|---|---:|---|---:|---:|---:|---:|---:|");
    let mut summaries = Vec::new();
    for (contender, calls, took) in &runs {
        let s = summarize(calls);
        outln!(
            "| {} | {} / {} | {} | {} | {} | {} / {:.2} / {} | {} / {:.2} / {} | {:.1} s |",
            contender.name(),
            s.ok,
            calls.len(),
            s.failures,
            ms(s.p50),
            ms(s.max),
            s.received.0,
            s.received.1,
            s.received.2,
            s.finished.0,
            s.finished.1,
            s.finished.2,
            took.as_secs_f64(),
        );
        summaries.push((*contender, s));
    }
    if let Some(s) = resiliency::race_retry::names()
        .into_iter()
        .find(|name| name.ends_with("::raced"))
        .and_then(resiliency::race_retry::stats)
    {
        outln!(
            "\n`resiliency::race_retry::stats` of the raced fn: {} extra attempts, {} calls won by an \
             extra attempt, {} refused by the budget, {} deadlines.",
            s.extra_attempts,
            s.won_by_extra,
            s.budget_refused,
            s.deadlines
        );
    }

    let get = |c: Contender| &summaries.iter().find(|s| s.0 == c).unwrap().1;
    let (sequential, raced) = (get(Contender::Sequential), get(Contender::Raced));
    let perron_total = ATTEMPT_TIMEOUT * ATTEMPTS as u32;
    let limit = SERVICE.mul_f64(1.0 + GOAL_OVER);
    outln!("\n### Goal\n");
    outln!("| measure | measured | goal | result |");
    outln!("|---|---:|---:|---|");
    outln!(
        "| raced: calls that succeed | {} / {CALLS} | all | {} |",
        raced.ok,
        pass(raced.ok == CALLS)
    );
    outln!(
        "| raced: latency p50 | {} | < {} (the server's {} ms + {:.0}%) | {} |",
        ms(raced.p50),
        ms(limit),
        SERVICE.as_millis(),
        100.0 * GOAL_OVER,
        pass(raced.p50 < limit)
    );
    outln!(
        "| perron's sequential retries: calls that fail (perron #93) | {} / {CALLS} | all | \
         {} |",
        CALLS - sequential.ok,
        pass(sequential.ok == 0)
    );
    outln!(
        "| perron's sequential retries: latency p50 (perron #93) | {} | >= {} (3 x {} ms) | \
         {} |",
        ms(sequential.p50),
        ms(perron_total),
        ATTEMPT_TIMEOUT.as_millis(),
        pass(sequential.p50 >= perron_total)
    );
    outln!(
        "\nWhole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    common::publish("race_perron");
}
