//! A rate-limited HTTP server offered twice its limit, `#[rate_limit]` against governor:
//! `cargo bench -p resiliency-benches --bench rate_limit_http`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`).
//!
//! # The server
//!
//! An axum server on 127.0.0.1, a current-thread tokio runtime on its own OS thread pinned to
//! CPU 0 (as in too_busy_server: the load generator has the other CPU to itself). Its one limited
//! route, per contender and scenario:
//!
//! * **ours**: an `async fn` under `#[resiliency::rate_limit(rate = .., burst = ..)]` returning
//!   `Result<String, Rejected>`; with the `axum` feature a refusal is a `429 Too Many Requests`
//!   whose `Retry-After` is the refusal's `retry_after()` in whole seconds, rounded up. The route
//!   calls it and notes the refusal in the server's log (below); the body, run only when
//!   admitted, notes the admission.
//! * **governor**: a direct `RateLimiter` (`Quota::per_second(rate).allow_burst(burst)`, its
//!   default quanta clock), used the same way in the handler: `check()`; admitted, the same
//!   answer; refused, a `429` whose `Retry-After` is `NotUntil::wait_time_from(clock.now())` in
//!   whole seconds, rounded up and at least 1 (as ours converts its own).
//!
//! The server keeps a log of its decisions: for each request (numbered by the client in an
//! `x-request` header), whether it was admitted, when (`Instant::now()` right after the decision),
//! and for a refusal the exact wait the limiter reported. An unlimited `/warm` route opens the
//! client's connections before a run, so that warming up takes no permit.
//!
//! # The load
//!
//! Open loop, as in too_busy_auto: a current-thread runtime on its own thread pinned to CPU 1
//! sends request `i` at its scheduled time (Poisson arrivals at the offered rate, exponential gaps
//! from a splitmix64 sequence of a fixed seed, the same for both contenders), each in its own
//! task, over reqwest's HTTP/1 keep-alive pool, whatever happened to earlier requests. Each
//! response's status and `Retry-After` header are kept.
//!
//! Three scenarios, each offered twice its limit, each contender on a fresh server:
//!
//! * `rate = "200/s", burst = 20`, offered 400 requests/s for `RUN` (10 s): the goal's.
//! * `rate = "2/s", burst = 1`, offered 4 requests/s for `SLOW_RUN` (8 s), where the waits (up
//!   to 500 ms) are long enough for `Retry-After` to matter, though always rounded up to 1 s.
//! * `rate = "1/2500ms", burst = 1`, offered 0.8 requests/s for `SLOW_RUN`: waits of up to
//!   2.5 s, so `Retry-After` takes the values 1, 2 and 3 and its rounding is tested.
//!
//! # What is checked
//!
//! * **Accepted** (status 200) against the most the limit allows over the run, `rate x time +
//!   burst`; the goal (200/s scenario): within 1%. (In the slow scenarios a handful of Poisson
//!   arrivals decide the count, and with burst 1 a permit that frees while no request waits is
//!   not kept, so the count stays well below the bound: reported with no goal.) And the bound itself, replayed over the
//!   server's log: no span of time from one admission to a later one holds more admissions than
//!   `span / interval + burst` (with 1 ms of slack for the log's timestamps).
//! * **Retry-After**, for every 429: present and a whole number of seconds, and at least the true
//!   time until a permit frees at the refusal. The truth is computed offline from the server's
//!   log: replaying its admissions through GCRA (the rule both limiters implement: a call is
//!   admitted while the calls admitted so far run at most `(burst - 1) x interval` ahead of now)
//!   gives, at the refusal's time, the wait after which a request sent with nobody else in
//!   between would be admitted. Also how the limiter's own exact wait compares with that truth
//!   (shorter than the truth, by more than 1 ms of log slack, would send a client back too early),
//!   and what share of the refused requests would have found a permit had they come back exactly
//!   `Retry-After` later, given the admissions that did happen meanwhile (the other clients take
//!   the permits that free: at twice the limit, most would be refused again; for information).
//!
//! `BENCH_QUICK=1` runs each scenario for 2 s and publishes nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use governor::clock::Clock as _;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use resiliency::Rejected;

mod common;
use common::open_loop;
use common::outln;
use common::{crate_version, load_average, ms, pass, percentile, Server};

/// How long each run sends requests (`BENCH_QUICK`: 2 s): the 200/s scenario, the slow ones.
const RUN: Duration = Duration::from_secs(10);
const SLOW_RUN: Duration = Duration::from_secs(8);
const QUICK_RUN: Duration = Duration::from_secs(2);
/// A request not answered within this counts as a timeout.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Seed of the Poisson arrivals.
const SEED: u64 = 0x5EED_0429;
/// The goal: accepted within this share of `rate x RUN + burst`.
const GOAL_SHARE: f64 = 0.01;
/// Slack for the server log's timestamps, taken a moment after each decision.
const SLACK: Duration = Duration::from_millis(1);

// ---------------------------------------------------------------------------------------------
// The server's log.

/// One decision of the server's limiter.
#[derive(Copy, Clone, Debug)]
struct Decision {
    id: u64,
    at: Instant,
    /// `None`: admitted; `Some(wait)`: refused, the limiter saying a permit frees in `wait`.
    refused: Option<Duration>,
}

/// The decisions of the run under way (runs are one after another).
static LOG: Mutex<Vec<Decision>> = Mutex::new(Vec::new());

fn note(id: u64, refused: Option<Duration>) {
    let at = Instant::now();
    LOG.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Decision { id, at, refused });
}

/// The request's number, from the `x-request` header.
fn request_id(headers: &HeaderMap) -> u64 {
    headers
        .get("x-request")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX)
}

// ---------------------------------------------------------------------------------------------
// Ours.

#[resiliency::rate_limit(rate = "200/s", burst = 20)]
async fn ours_200(id: u64) -> Result<String, Rejected> {
    note(id, None);
    Ok(format!("request {id}"))
}

#[resiliency::rate_limit(rate = "2/s", burst = 1)]
async fn ours_2(id: u64) -> Result<String, Rejected> {
    note(id, None);
    Ok(format!("request {id}"))
}

#[resiliency::rate_limit(rate = "1/2500ms", burst = 1)]
async fn ours_slowest(id: u64) -> Result<String, Rejected> {
    note(id, None);
    Ok(format!("request {id}"))
}

/// The route: the limited fn, its refusal noted (a `Rejected` is a 429 with `Retry-After`).
async fn route_ours_200(headers: HeaderMap) -> Result<String, Rejected> {
    let id = request_id(&headers);
    let answer = ours_200(id).await;
    if let Err(rejected) = &answer {
        note(id, Some(rejected.retry_after().unwrap_or_default()));
    }
    answer
}

async fn route_ours_2(headers: HeaderMap) -> Result<String, Rejected> {
    let id = request_id(&headers);
    let answer = ours_2(id).await;
    if let Err(rejected) = &answer {
        note(id, Some(rejected.retry_after().unwrap_or_default()));
    }
    answer
}

async fn route_ours_slowest(headers: HeaderMap) -> Result<String, Rejected> {
    let id = request_id(&headers);
    let answer = ours_slowest(id).await;
    if let Err(rejected) = &answer {
        note(id, Some(rejected.retry_after().unwrap_or_default()));
    }
    answer
}

// ---------------------------------------------------------------------------------------------
// governor.

/// `check()`; refused, a 429 with the wait until the next permit as `Retry-After` (whole seconds,
/// rounded up, at least 1).
async fn route_governor(
    State(limiter): State<Arc<DefaultDirectRateLimiter>>,
    headers: HeaderMap,
) -> Response {
    let id = request_id(&headers);
    match limiter.check() {
        Ok(()) => {
            note(id, None);
            format!("request {id}").into_response()
        }
        Err(not_until) => {
            let wait = not_until.wait_time_from(limiter.clock().now());
            note(id, Some(wait));
            let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, seconds.to_string())],
                "Too Many Requests.",
            )
                .into_response()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios and contenders.

#[derive(Copy, Clone, Debug)]
struct Scenario {
    name: &'static str,
    /// The time between two permits (the rate's period over its count), and the burst.
    interval: Duration,
    burst: u32,
    /// Requests offered per second.
    offered: f64,
    /// How long it runs (`BENCH_QUICK`: `QUICK_RUN`).
    length: Duration,
    /// Whether the accepted count's goal applies.
    goal: bool,
    /// Ours: the route with this scenario's `#[rate_limit]`.
    ours: fn() -> Router,
}

const SCENARIOS: [Scenario; 3] = [
    Scenario {
        name: "`rate = \"200/s\", burst = 20`",
        interval: Duration::from_millis(5),
        burst: 20,
        offered: 400.0,
        length: RUN,
        goal: true,
        ours: || Router::new().route("/", get(route_ours_200)),
    },
    Scenario {
        name: "`rate = \"2/s\", burst = 1`",
        interval: Duration::from_millis(500),
        burst: 1,
        offered: 4.0,
        length: SLOW_RUN,
        goal: false,
        ours: || Router::new().route("/", get(route_ours_2)),
    },
    Scenario {
        name: "`rate = \"1/2500ms\", burst = 1`",
        interval: Duration::from_millis(2500),
        burst: 1,
        offered: 0.8,
        length: SLOW_RUN,
        goal: false,
        ours: || Router::new().route("/", get(route_ours_slowest)),
    },
];

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Contender {
    Ours,
    Governor,
}

impl Contender {
    fn name(self, governor: &str) -> String {
        match self {
            Contender::Ours => "`#[rate_limit]`".into(),
            Contender::Governor => format!("governor {governor}"),
        }
    }
}

/// A fresh server with the contender's limited route at `/` and the unlimited `/warm`.
fn start_server(contender: Contender, scenario: Scenario) -> Server {
    Server::start(Some(0), move || async move {
        let limited: Router = match contender {
            Contender::Ours => (scenario.ours)(),
            Contender::Governor => {
                let quota = Quota::with_period(scenario.interval)
                    .expect("a period above zero")
                    .allow_burst(scenario.burst.try_into().expect("a burst above 0"));
                let limiter = Arc::new(RateLimiter::direct(quota));
                Router::new()
                    .route("/", get(route_governor))
                    .with_state(limiter)
            }
        };
        limited.route("/warm", get(|| async { "warm" }))
    })
}

// ---------------------------------------------------------------------------------------------
// The load.

/// splitmix64's mixing function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The offsets from the run's start of Poisson arrivals at `rate` per second, up to `run`.
fn poisson(rate: f64, run: Duration, seed: u64) -> Vec<Duration> {
    let mut state = seed;
    let mut t = 0.0;
    let mut out = Vec::new();
    loop {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let unit = ((mix(state) >> 11) as f64 + 1.0) / (1u64 << 53) as f64; // in (0, 1]
        t += -unit.ln() / rate;
        if t >= run.as_secs_f64() {
            return out;
        }
        out.push(Duration::from_secs_f64(t));
    }
}

/// How one request ended, as the client saw it.
#[derive(Clone, Debug)]
struct Answer {
    id: u64,
    /// The status, or `None` for a timeout or another error.
    status: Option<StatusCode>,
    /// The `Retry-After` header as sent, if any.
    retry_after: Option<String>,
    /// From its scheduled time to the end of its body.
    latency: Duration,
}

async fn request(client: &reqwest::Client, url: &str, id: u64, due: Instant) -> Answer {
    let result = async {
        let response = client
            .get(url)
            .header("x-request", id.to_string())
            .send()
            .await?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap_or("(not text)").to_owned());
        response.bytes().await?;
        Ok::<_, reqwest::Error>((status, retry_after))
    }
    .await;
    let (status, retry_after) = match result {
        Ok((status, retry_after)) => (Some(status), retry_after),
        Err(_) => (None, None),
    };
    Answer {
        id,
        status,
        retry_after,
        latency: due.elapsed(),
    }
}

/// What one run saw: the client's answers (by request number), the server's decisions (in
/// order), how late the sender was at worst.
struct Run {
    answers: Vec<Answer>,
    log: Vec<Decision>,
    send_late_max: Duration,
}

fn run(contender: Contender, scenario: Scenario, length: Duration) -> Run {
    let server = start_server(contender, scenario);
    let url: Arc<str> = format!("{}/", server.url).into();
    let warm_url = format!("{}/warm", server.url);
    let schedule = poisson(scenario.offered, length, SEED);
    let (answers, send_late_max) = std::thread::spawn(move || {
        open_loop::runtime_on(1).block_on(async move {
            let client = open_loop::client(TIMEOUT);
            for _ in 0..8 {
                let _ = client.get(&warm_url).send().await.map(drop);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
            let t0 = Instant::now();
            let mut tasks = tokio::task::JoinSet::new();
            let mut late = Duration::ZERO;
            for (i, offset) in schedule.iter().enumerate() {
                let due = t0 + *offset;
                if Instant::now() < due {
                    tokio::time::sleep_until(due.into()).await;
                }
                late = late.max(due.elapsed());
                let (client, url) = (client.clone(), url.clone());
                tasks.spawn(async move { request(&client, &url, i as u64, due).await });
            }
            let mut answers = Vec::with_capacity(schedule.len());
            while let Some(answer) = tasks.join_next().await {
                answers.push(answer.expect("a request task does not panic"));
            }
            answers.sort_by_key(|a| a.id);
            (answers, late)
        })
    })
    .join()
    .expect("the generator runs");
    drop(server);
    let mut log = std::mem::take(&mut *LOG.lock().unwrap_or_else(|e| e.into_inner()));
    log.sort_by_key(|d| d.at);
    Run {
        answers,
        log,
        send_late_max,
    }
}

// ---------------------------------------------------------------------------------------------
// Figures.

/// GCRA replayed over a run's admissions: the arrival time after each admission.
struct Replay {
    interval: Duration,
    /// How far ahead of now the calls admitted may run, with one more admitted:
    /// `(burst - 1) x interval`.
    ahead: Duration,
    /// `(admitted at, arrival time after it)`, in order.
    after: Vec<(Instant, Instant)>,
}

impl Replay {
    fn new(scenario: Scenario, log: &[Decision]) -> Replay {
        let interval = scenario.interval;
        let mut tat: Option<Instant> = None;
        let after = log
            .iter()
            .filter(|d| d.refused.is_none())
            .map(|d| {
                let next = tat.map_or(d.at, |tat| tat.max(d.at)) + interval;
                tat = Some(next);
                (d.at, next)
            })
            .collect();
        Replay {
            interval,
            ahead: interval * (scenario.burst - 1),
            after,
        }
    }

    /// The arrival time given the admissions before `at`.
    fn tat_before(&self, at: Instant) -> Option<Instant> {
        let n = self.after.partition_point(|(t, _)| *t < at);
        n.checked_sub(1).map(|i| self.after[i].1)
    }

    /// How long after `at` a request, with nobody else in between, is admitted (zero if at once):
    /// given the admissions before `at`.
    fn true_wait(&self, at: Instant) -> Duration {
        self.tat_before(at).map_or(Duration::ZERO, |tat| {
            tat.saturating_duration_since(at + self.ahead)
        })
    }

    /// The largest excess of admissions over the bound: over every pair of admissions `i <= j`,
    /// `(j - i + 1) - ((t_j - t_i + SLACK) / interval + burst)`, at most 0 when the bound held.
    fn worst_excess(&self, burst: u32) -> i64 {
        let times: Vec<Instant> = self.after.iter().map(|(t, _)| *t).collect();
        let mut worst = i64::MIN;
        for i in 0..times.len() {
            // Only the last admission within each span matters; a window of the next few
            // thousand admissions is as far as the bound can be broken by one burst.
            for j in i..times.len().min(i + 4 * burst as usize + 64) {
                let span = times[j] - times[i] + SLACK;
                let most = (span.as_nanos() / self.interval.as_nanos()) as i64 + i64::from(burst);
                worst = worst.max((j - i + 1) as i64 - most);
            }
        }
        worst
    }
}

/// A whole `Retry-After` in seconds, if the header is one.
fn seconds(header: &str) -> Option<u64> {
    header.trim().parse().ok()
}

fn report(scenario: Scenario, runs: &[(Contender, Run)], length: Duration, governor: &str) {
    let most = length.as_secs_f64() / scenario.interval.as_secs_f64() + scenario.burst as f64;
    outln!(
        "### {}: offered {} requests/s for {} s (at most {most:.0} admitted: rate x time + \
         burst)\n",
        scenario.name,
        scenario.offered,
        length.as_secs()
    );
    outln!(
        "| contender | sent | 200 | 429 | other or error | 200 vs rate x time + burst | bound \
         held over every span | p99 latency, 200 | p99 latency, 429 | sender late, max |"
    );
    outln!("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    let mut verdicts = Vec::new();
    for (contender, run) in runs {
        let ok = |s: StatusCode| run.answers.iter().filter(move |a| a.status == Some(s));
        let accepted = ok(StatusCode::OK).count();
        let refused = ok(StatusCode::TOO_MANY_REQUESTS).count();
        let other = run.answers.len() - accepted - refused;
        let latencies = |s: StatusCode| {
            let mut l: Vec<Duration> = ok(s).map(|a| a.latency).collect();
            l.sort();
            percentile(&l, 0.99).map_or("—".into(), ms)
        };
        let replay = Replay::new(scenario, &run.log);
        let excess = replay.worst_excess(scenario.burst);
        let share = accepted as f64 / most - 1.0;
        verdicts.push((contender.name(governor), share));
        outln!(
            "| {} | {} | {accepted} | {refused} | {other} | {:+.2}% | {} | {} | {} | {} |",
            contender.name(governor),
            run.answers.len(),
            share * 100.0,
            if excess <= 0 {
                "yes".to_string()
            } else {
                format!("no: {excess} over")
            },
            latencies(StatusCode::OK),
            latencies(StatusCode::TOO_MANY_REQUESTS),
            ms(run.send_late_max),
        );
    }
    outln!();
    if scenario.goal {
        outln!(
            "Goal: accepted within {:.0}% of rate x time + burst ({most:.0}):\n",
            GOAL_SHARE * 100.0
        );
        outln!("| contender | 200 vs rate x time + burst | result |");
        outln!("|---|---:|---|");
        for (name, share) in &verdicts {
            outln!(
                "| {name} | {:+.2}% | {} |",
                share * 100.0,
                pass(share.abs() <= GOAL_SHARE)
            );
        }
        outln!();
    }

    outln!("Retry-After of the 429s, checked against the server's log:\n");
    outln!(
        "| contender | 429s | without a whole-seconds `Retry-After` | values seen (s) | shorter \
         than the true wait | true wait, max | limiter's exact wait shorter than the true one | \
         limiter's exact wait minus the true one, min / max | admitted had it come back \
         `Retry-After` later |"
    );
    outln!("|---|---:|---:|---|---:|---:|---:|---:|---:|");
    for (contender, run) in runs {
        let replay = Replay::new(scenario, &run.log);
        let decisions: std::collections::HashMap<u64, Decision> =
            run.log.iter().map(|d| (d.id, *d)).collect();
        let (mut refusals, mut bad_header, mut too_short, mut exact_short) = (0, 0, 0, 0);
        let (mut true_max, mut values) = (Duration::ZERO, std::collections::BTreeSet::new());
        let (mut diff_min, mut diff_max) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut would_admit, mut checked) = (0, 0);
        for answer in &run.answers {
            if answer.status != Some(StatusCode::TOO_MANY_REQUESTS) {
                continue;
            }
            refusals += 1;
            let header = answer.retry_after.as_deref().and_then(seconds);
            let Some(decision) = decisions.get(&answer.id) else {
                continue;
            };
            let (Some(exact), at) = (decision.refused, decision.at) else {
                continue;
            };
            let truth = replay.true_wait(at);
            true_max = true_max.max(truth);
            let diff = exact.as_secs_f64() - truth.as_secs_f64();
            diff_min = diff_min.min(diff);
            diff_max = diff_max.max(diff);
            if exact + SLACK < truth {
                exact_short += 1;
            }
            match header {
                None => bad_header += 1,
                Some(secs) => {
                    values.insert(secs);
                    let back = Duration::from_secs(secs);
                    if back + SLACK < truth {
                        too_short += 1;
                    }
                    // Back `Retry-After` later, the admissions meanwhile counted.
                    let again = at + back;
                    if run.log.last().is_some_and(|last| last.at >= again) {
                        checked += 1;
                        let free = replay
                            .tat_before(again)
                            .is_none_or(|tat| tat <= again + replay.ahead);
                        would_admit += usize::from(free);
                    }
                }
            }
        }
        let values: Vec<String> = values.iter().map(u64::to_string).collect();
        let us_signed = |s: f64| {
            if s.is_finite() {
                format!("{:+.1} µs", s * 1e6)
            } else {
                "—".into()
            }
        };
        outln!(
            "| {} | {refusals} | {bad_header} | {} | {too_short} | {} | {exact_short} | {} / {} \
             | {} |",
            contender.name(governor),
            if values.is_empty() {
                "—".into()
            } else {
                values.join(", ")
            },
            ms(true_max),
            us_signed(diff_min),
            us_signed(diff_max),
            if checked == 0 {
                "—".into()
            } else {
                format!("{would_admit} of {checked}")
            },
        );
    }
    outln!();
}

fn main() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .unwrap_or_default();
    let governor = crate_version(&lock, "governor");
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");

    common::raise_open_files();
    outln!("# resiliency `#[rate_limit]` over HTTP\n");
    outln!(
        "{} cores available; load average at start: {}.\n",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_average()
    );
    outln!(
        "An axum server (current-thread runtime, pinned to CPU 0) whose one route is limited by \
         `#[rate_limit]` (a `Result<String, Rejected>` handler: a refusal is a 429 with \
         `Retry-After`) or by governor {governor}'s `RateLimiter::direct` (`check()`, a 429 with \
         `wait_time_from(now)` as `Retry-After`, whole seconds rounded up), offered twice its \
         limit in an open loop (Poisson arrivals, seed {SEED:#x}, sent from CPU 1), a fresh \
         server per run. \"True wait\": from the server's log of its decisions, \
         GCRA replayed over its admissions, the time after a refusal when a request with \
         nobody else in between would be admitted.\n"
    );
    let started = Instant::now();
    for scenario in SCENARIOS {
        let length = if quick { QUICK_RUN } else { scenario.length };
        let runs: Vec<(Contender, Run)> = [Contender::Ours, Contender::Governor]
            .into_iter()
            .map(|contender| (contender, run(contender, scenario, length)))
            .collect();
        report(scenario, &runs, length, &governor);
    }
    outln!(
        "Whole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    if quick {
        eprintln!("rate_limit_http: BENCH_QUICK run, not published");
    } else {
        common::publish("rate_limit_http");
    }
}
