//! A real server melting, with and without `#[too_busy]`:
//! `cargo bench -p resiliency-benches --bench too_busy_server`.
//!
//! Prints markdown tables of figures measured during the run (nothing here is hard-coded), also
//! written to this benchmark's section of `benches/README.md` (`common::publish`) and
//! writes a plot, `benches/out/too_busy_server.svg`.
//!
//! # The server
//!
//! An axum server on 127.0.0.1 whose one handler burns `WORK` (5 ms) of CPU in a busy loop that
//! checks the clock (no sleep, no yield: the worker is blocked as by real work). Two variants of
//! the same handler, both returning `impl IntoResponse`: plain, and under `#[resiliency::too_busy]`
//! with its defaults (the runtime's lag, `max_lag` 70 ms); a refusal is a `503` with
//! `Retry-After`. Each run gets a fresh server.
//!
//! The server is a **current-thread** tokio runtime on its own OS thread, pinned to one CPU. The
//! machine this was written on has 2 CPUs, and the load generator needs one for itself: a server
//! with 2 workers would burn both and steal the generator's CPU, and the latencies would then
//! measure the generator's starvation. One worker on one CPU and the generator on the other keeps
//! the two apart. It is also the case the lag signal was made for (one event loop, as in Node):
//! every request, the accept loop and the lag monitor wait in the same queue. On a multi-thread
//! runtime each worker gets its own monitor, so the same mechanism applies per worker.
//!
//! So that the unguarded server's lag can be plotted too, each server makes one guarded no-op
//! call at start, which starts the lag monitor on its runtime; the unguarded handler never
//! consults it. The monitor samples every 10 ms (the default interval).
//!
//! # Capacity
//!
//! Measured first, on a plain server: `CAPACITY_CLIENTS` closed-loop clients (each sends its next
//! request when the previous one is answered) keep the worker saturated for `CAPACITY_RUN`;
//! capacity = answered requests per second (about 1 / 5 ms, less the HTTP overhead). The offered
//! loads are 1x, 2x and 5x of that figure.
//!
//! # The load generator
//!
//! **Open loop**: a current-thread runtime on its own thread (pinned to the other CPU) starts
//! request `i` at the scheduled time `t0 + i / rate`, whatever happened to earlier requests, for
//! `RUN` seconds, each in its own task, and measures its latency from that **scheduled** time to
//! the end of the response body. A late sender or a slow connect therefore counts against the
//! server, not in its favour (no coordinated omission); how late the sender itself was is printed
//! as a check that the generator kept up. The client is reqwest over plain HTTP/1 with a
//! connection pool (keep-alive), no limit on connections (a request whose turn comes while all
//! pooled connections are busy opens a new one, as independent users would), and a total
//! timeout of `TIMEOUT` per request; a request that times out is counted apart, as are other
//! errors (refused or reset connections). After `RUN`, the generator waits for every request to
//! finish or time out before the server is stopped.
//!
//! # What is printed
//!
//! Per load and variant: latency p50 and p99 of **accepted** requests (status 200; nearest
//! rank), **goodput** = 200s per second while the load ran (200 responses completed between the
//! run's start and `RUN` later, divided by `RUN`; answers to the backlog after that do not
//! count) and as a share of capacity, the **refusal rate** (503s among the requests sent), errors
//! and timeouts, and how many lag samples the server's monitor took during the run (one per
//! interval, 10 ms, when the runtime keeps up). Then the goal at 5x (guarded
//! accepted p99 under 250 ms and goodput at least 80% of capacity, with the unguarded p99 at
//! least 10 times the guarded), and a timeline of the 5x runs per 500 ms window (by scheduled
//! send time) with the monitor's lag (`resiliency::too_busy::lag()`, read every 100 ms by a sampler
//! thread; the last reading in the window), the refusal rate and the accepted p99: the same data
//! as the plot.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use resiliency::Rejected;

mod common;
use common::open_loop::{self, request, Kind, Outcome};
use common::outln;
use common::svg::{self, Panel};
use common::{load_average, ms_or_dash, pass, percentile, raise_open_files, Server};

/// CPU burnt by one request.
const WORK: Duration = Duration::from_millis(5);
/// How long each run sends requests.
const RUN: Duration = Duration::from_secs(6);
/// A request not answered within this (from when it was sent) counts as a timeout.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Closed-loop clients and duration of the capacity measurement.
const CAPACITY_CLIENTS: usize = 4;
const CAPACITY_RUN: Duration = Duration::from_secs(2);
/// Offered loads, as multiples of the measured capacity.
const LOADS: [f64; 3] = [1.0, 2.0, 5.0];
/// How often the sampler reads `resiliency::too_busy::lag()`, and the plot's window for rates and p99.
const LAG_EVERY: Duration = Duration::from_millis(100);
const WINDOW: Duration = Duration::from_millis(500);
/// The goal at 5x.
const GOAL_P99: Duration = Duration::from_millis(250);
const GOAL_GOODPUT: f64 = 0.8;
const GOAL_RATIO: f64 = 10.0;

// ---------------------------------------------------------------------------------------------
// The server.

/// Busy work for `WORK`: the worker thread is blocked, as by real computation.
fn burn() -> u64 {
    let start = Instant::now();
    let mut spins = 0u64;
    while start.elapsed() < WORK {
        spins = black_box(spins + 1);
    }
    spins
}

async fn plain() -> impl IntoResponse {
    burn();
    "done"
}

#[resiliency::too_busy]
async fn guarded() -> impl IntoResponse {
    burn();
    "done"
}

/// Lag samples taken by monitors so far (an `on_lag` callback at threshold 0 counts them).
static MONITOR_SAMPLES: AtomicU64 = AtomicU64::new(0);

/// Called once when a server starts, so that its runtime has a lag monitor to plot even when the
/// handler is unguarded.
#[resiliency::too_busy]
async fn start_monitor() -> Result<(), Rejected> {
    Ok(())
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Variant {
    Plain,
    Guarded,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Plain => "plain",
            Variant::Guarded => "`#[too_busy]`",
        }
    }
}

/// A fresh server of `variant` on its own current-thread runtime and thread, pinned to CPU 0,
/// with its lag monitor started.
fn start_server(variant: Variant) -> Server {
    Server::start(Some(0), move || async move {
        start_monitor().await.expect("a quiet server admits");
        match variant {
            Variant::Plain => Router::new().route("/", get(plain)),
            Variant::Guarded => Router::new().route("/", get(guarded)),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// The load generator.

/// What one run measured.
struct Run {
    rate: f64,
    outcomes: Vec<Outcome>,
    /// `(time from the run's start, resiliency::too_busy::lag())`, every `LAG_EVERY`.
    lag: Vec<(Duration, Duration)>,
    /// How late the generator started requests, p99 and max.
    send_late_p99: Duration,
    send_late_max: Duration,
    /// From the run's start until the last request had finished.
    wall: Duration,
    /// Lag samples the server's monitor took during `RUN`.
    monitor_samples: u64,
}

fn client() -> reqwest::Client {
    open_loop::client(TIMEOUT)
}

/// A current-thread runtime for the generator, on the calling thread (pinned to CPU 1).
fn client_runtime() -> tokio::runtime::Runtime {
    open_loop::runtime_on(1)
}

/// Requests per second a plain server answers when kept busy by closed-loop clients.
fn measure_capacity() -> f64 {
    let server = start_server(Variant::Plain);
    let url = format!("{}/", server.url);
    std::thread::spawn(move || {
        client_runtime().block_on(async move {
            let client = client();
            let end = Instant::now() + Duration::from_millis(300) + CAPACITY_RUN;
            let measure_from = Instant::now() + Duration::from_millis(300); // warm-up
            let tasks: Vec<_> = (0..CAPACITY_CLIENTS)
                .map(|_| {
                    let (client, url) = (client.clone(), url.clone());
                    tokio::spawn(async move {
                        let mut answered = 0u64;
                        while Instant::now() < end {
                            let response = client.get(&url).send().await.expect("answered");
                            response.bytes().await.expect("a body");
                            if Instant::now() >= measure_from {
                                answered += 1;
                            }
                        }
                        answered
                    })
                })
                .collect();
            let mut answered = 0;
            for task in tasks {
                answered += task.await.unwrap();
            }
            answered as f64 / CAPACITY_RUN.as_secs_f64()
        })
    })
    .join()
    .expect("the capacity client runs")
}

/// One open-loop run of `rate` requests per second against a fresh server of `variant`.
fn run(variant: Variant, rate: f64) -> Run {
    let server = start_server(variant);
    let url: Arc<str> = format!("{}/", server.url).into();
    let generator = std::thread::spawn(move || {
        client_runtime().block_on(async move {
            let client = client();
            open_loop::warm_up(&client, &url).await;

            let sampling = Arc::new(AtomicBool::new(true));
            let samples_before = MONITOR_SAMPLES.load(Relaxed);
            let t0 = Instant::now();
            let sampler = {
                let sampling = sampling.clone();
                std::thread::spawn(move || {
                    let mut lag = Vec::new();
                    let mut next = t0;
                    while sampling.load(Relaxed) {
                        lag.push((next - t0, resiliency::too_busy::lag()));
                        next += LAG_EVERY;
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    }
                    lag
                })
            };
            let period = Duration::from_secs_f64(1.0 / rate);
            let mut tasks = tokio::task::JoinSet::new();
            let mut late = Vec::new();
            for i in 0.. {
                let due = t0 + period * i;
                if due >= t0 + RUN {
                    break;
                }
                if Instant::now() < due {
                    tokio::time::sleep_until(due.into()).await;
                }
                late.push(due.elapsed());
                let (client, url) = (client.clone(), url.clone());
                tasks.spawn(async move { request(&client, &url, due, t0).await });
            }
            tokio::time::sleep_until((t0 + RUN).into()).await;
            let monitor_samples = MONITOR_SAMPLES.load(Relaxed) - samples_before;
            let mut outcomes = open_loop::finish(tasks).await;
            let wall = t0.elapsed();
            sampling.store(false, Relaxed);
            let lag = sampler.join().expect("the sampler runs");
            outcomes.sort_by_key(|o| o.at);
            late.sort();
            Run {
                rate,
                outcomes,
                lag,
                send_late_p99: percentile(&late, 0.99).unwrap_or_default(),
                send_late_max: late.last().copied().unwrap_or_default(),
                wall,
                monitor_samples,
            }
        })
    });
    let run = generator.join().expect("the generator runs");
    drop(server);
    run
}

// ---------------------------------------------------------------------------------------------
// Figures.

/// Figures of a set of outcomes.
struct Stats {
    sent: usize,
    accepted: usize,
    /// Accepted requests whose response completed within `RUN` of the start.
    accepted_in_run: usize,
    refused: usize,
    other: usize,
    timeouts: usize,
    errors: usize,
    p50: Option<Duration>,
    p99: Option<Duration>,
}

fn stats<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Stats {
    let mut accepted = Vec::new();
    let mut s = Stats {
        sent: 0,
        accepted: 0,
        accepted_in_run: 0,
        refused: 0,
        other: 0,
        timeouts: 0,
        errors: 0,
        p50: None,
        p99: None,
    };
    for o in outcomes {
        s.sent += 1;
        match o.kind {
            Kind::Accepted => {
                accepted.push(o.latency);
                if o.at + o.latency <= RUN {
                    s.accepted_in_run += 1;
                }
            }
            Kind::Refused => s.refused += 1,
            Kind::OtherStatus => s.other += 1,
            Kind::Timeout => s.timeouts += 1,
            Kind::Error => s.errors += 1,
        }
    }
    accepted.sort();
    s.accepted = accepted.len();
    s.p50 = percentile(&accepted, 0.5);
    s.p99 = percentile(&accepted, 0.99);
    s
}

/// Per-window figures of a run: `(refusal rate, accepted p99)` of the requests scheduled in each
/// `WINDOW`, and the last lag reading in it.
fn windows(run: &Run) -> Vec<(f64, Option<Duration>, Duration)> {
    let n = (RUN.as_nanos() / WINDOW.as_nanos()) as usize;
    (0..n)
        .map(|w| {
            let (from, to) = (WINDOW * w as u32, WINDOW * (w as u32 + 1));
            let s = stats(run.outcomes.iter().filter(|o| o.at >= from && o.at < to));
            let lag = run
                .lag
                .iter()
                .rfind(|(t, _)| *t < to)
                .map_or(Duration::ZERO, |l| l.1);
            (s.refused as f64 / s.sent.max(1) as f64, s.p99, lag)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The plot: hand-written SVG, three panels over the 5x runs' time.

const PLOT_W: f64 = 760.0;
const PANEL_H: f64 = 170.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 50.0;
const GAP: f64 = 60.0;
const COLORS: [(&str, Variant); 2] = [("#d62728", Variant::Plain), ("#1f77b4", Variant::Guarded)];

fn plot(runs: &[(Variant, &Run)], capacity: f64) -> String {
    let height = TOP + 3.0 * (PANEL_H + GAP) + 10.0;
    let width = LEFT + PLOT_W + 30.0;
    let mut svg = svg::open(width, height);
    svg::title(
        &mut svg,
        LEFT,
        22.0,
        &format!(
            "5 ms CPU handler, 5x capacity ({:.0} req/s offered, capacity {capacity:.0}): plain vs #[too_busy]",
            5.0 * capacity
        ),
    );
    let mut legend_x = LEFT;
    for (color, variant) in COLORS {
        let label = match variant {
            Variant::Plain => "plain",
            Variant::Guarded => "#[too_busy] (defaults)",
        };
        svg::legend(&mut svg, legend_x, 36.0, svg::Stroke::solid(color), label);
        legend_x += 220.0;
    }

    let max_lag_ms = resiliency::too_busy::max_lag().as_secs_f64() * 1e3;
    let lag_top = (2.0 * max_lag_ms * 1.25).max(
        runs.iter()
            .flat_map(|(_, r)| r.lag.iter().map(|l| l.1.as_secs_f64() * 1e3))
            .fold(0.0, f64::max)
            * 1.1,
    );
    let lag_scale = move |v: f64| v / lag_top;
    let lag_ticks: Vec<(f64, String)> = (0..=4)
        .map(|i| lag_top * i as f64 / 4.0)
        .map(|v| (v, format!("{v:.0} ms")))
        .collect();
    let lag_ticks: Vec<(f64, &str)> = lag_ticks.iter().map(|(v, l)| (*v, l.as_str())).collect();
    let lag_panel = Panel {
        left: LEFT,
        top: TOP + 20.0,
        width: PLOT_W,
        height: PANEL_H,
        seconds: RUN.as_secs_f64(),
        title: "Monitor's smoothed lag, resiliency::too_busy::lag(), read every 100 ms",
        scale: &lag_scale,
        ticks: &lag_ticks,
    };
    let refused_scale = |v: f64| v;
    let refused_panel = Panel {
        left: LEFT,
        top: TOP + 20.0 + PANEL_H + GAP,
        width: PLOT_W,
        height: PANEL_H,
        seconds: RUN.as_secs_f64(),
        title: "Refused (503) share of the requests sent, per 500 ms window",
        scale: &refused_scale,
        ticks: &[
            (0.0, "0%"),
            (0.25, "25%"),
            (0.5, "50%"),
            (0.75, "75%"),
            (1.0, "100%"),
        ],
    };
    // Latency on a log scale from 1 ms to 10 s.
    let latency_scale = |v: f64| (v.max(1e-3).log10() + 3.0) / 4.0;
    let latency_panel = Panel {
        left: LEFT,
        top: TOP + 20.0 + 2.0 * (PANEL_H + GAP),
        width: PLOT_W,
        height: PANEL_H,
        seconds: RUN.as_secs_f64(),
        title: "p99 latency of accepted (200) requests, per 500 ms window (log scale; × = no 200 in the window)",
        scale: &latency_scale,
        ticks: &[(1e-3, "1 ms"), (1e-2, "10 ms"), (0.1, "100 ms"), (1.0, "1 s"), (10.0, "10 s")],
    };
    for panel in [&lag_panel, &refused_panel, &latency_panel] {
        panel.frame(&mut svg);
    }
    lag_panel.mark(&mut svg, max_lag_ms, "max_lag");
    lag_panel.mark(&mut svg, 2.0 * max_lag_ms, "2 × max_lag (all refused)");
    latency_panel.mark(&mut svg, GOAL_P99.as_secs_f64(), "goal: 250 ms");
    latency_panel.mark(&mut svg, TIMEOUT.as_secs_f64(), "client timeout");

    let half = WINDOW.as_secs_f64() / 2.0;
    for (color, variant) in COLORS {
        let Some((_, run)) = runs.iter().find(|(v, _)| *v == variant) else {
            continue;
        };
        let lag: Vec<(f64, Option<f64>)> = run
            .lag
            .iter()
            .filter(|(t, _)| *t <= RUN)
            .map(|(t, l)| (t.as_secs_f64(), Some(l.as_secs_f64() * 1e3)))
            .collect();
        lag_panel.line(&mut svg, color, &lag);
        let windows = windows(run);
        let at = |w: usize| w as f64 * WINDOW.as_secs_f64() + half;
        let refused: Vec<_> = windows
            .iter()
            .enumerate()
            .map(|(w, win)| (at(w), Some(win.0)))
            .collect();
        refused_panel.line(&mut svg, color, &refused);
        let p99: Vec<_> = windows
            .iter()
            .enumerate()
            .map(|(w, win)| (at(w), win.1.map(|d| d.as_secs_f64())))
            .collect();
        latency_panel.line(&mut svg, color, &p99);
        for (t, _) in p99.iter().filter(|(_, v)| v.is_none()) {
            let x = latency_panel.x(*t);
            let _ = writeln!(
                svg,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="{color}" font-size="14">×</text>"##,
                latency_panel.top + 14.0
            );
        }
    }
    svg::close(&mut svg);
    svg
}

// ---------------------------------------------------------------------------------------------

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported and ignored.
    let started = Instant::now();
    let open_files = raise_open_files();
    resiliency::too_busy::on_lag(Duration::ZERO, |_| {
        MONITOR_SAMPLES.fetch_add(1, Relaxed);
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    outln!("# resiliency `#[too_busy]`: a real server melting\n");
    outln!(
        "{cores} cores available; open-files limit {open_files}; load average at start: {}.\n",
        load_average()
    );

    // The handler's cost alone, on this thread.
    let spins = burn();
    let capacity = measure_capacity();
    outln!(
        "Handler: {} ms of CPU in a busy loop ({spins} clock checks). Server: axum, one \
         current-thread runtime on CPU 0; load generator on CPU 1. Capacity, measured with \
         {CAPACITY_CLIENTS} closed-loop clients for {} s: **{capacity:.1} req/s** (ideal 1 / {} ms \
         = {:.0}). Each run offers a fixed rate for {} s (open loop, latency from the scheduled \
         send time, client timeout {} s).\n",
        WORK.as_millis(),
        CAPACITY_RUN.as_secs(),
        WORK.as_millis(),
        1.0 / WORK.as_secs_f64(),
        RUN.as_secs(),
        TIMEOUT.as_secs(),
    );

    let mut runs = Vec::new();
    for load in LOADS {
        for variant in [Variant::Plain, Variant::Guarded] {
            let r = run(variant, load * capacity);
            runs.push((load, variant, r));
        }
    }

    outln!(
        "| load | variant | offered req/s | sent | accepted p50 | accepted p99 | goodput (200/s) | \
         refused (503) | errors / timeouts | monitor samples | generator late p99 / max | drained in |"
    );
    outln!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (load, variant, r) in &runs {
        let s = stats(&r.outcomes);
        let goodput = s.accepted_in_run as f64 / RUN.as_secs_f64();
        outln!(
            "| {load}x | {} | {:.0} | {} | {} | {} | {goodput:.1} ({:.0}% of capacity) | {:.1}% | {} / {} | {} | {:.1} / {:.1} ms | {:.1} s |",
            variant.name(),
            r.rate,
            s.sent,
            ms_or_dash(s.p50),
            ms_or_dash(s.p99),
            100.0 * goodput / capacity,
            100.0 * s.refused as f64 / s.sent.max(1) as f64,
            s.errors + s.other,
            s.timeouts,
            r.monitor_samples,
            r.send_late_p99.as_secs_f64() * 1e3,
            r.send_late_max.as_secs_f64() * 1e3,
            r.wall.as_secs_f64(),
        );
    }
    outln!(
        "\n\"monitor samples\": lag samples the server's lag monitor took during the {} s of load \
         ({} if its timer ran on time).",
        RUN.as_secs(),
        RUN.as_millis() / resiliency::too_busy::interval().as_millis().max(1)
    );
    outln!(
        "\"generator late\": how long after its scheduled time the generator started a request \
         (the latencies count it; a few ms means the generator kept up). \"drained in\": from the \
         first scheduled request until the last one finished or timed out.\n"
    );

    // The goal at 5x.
    let at5 = |variant: Variant| {
        runs.iter()
            .find(|(load, v, _)| *load == 5.0 && *v == variant)
            .map(|(_, _, r)| r)
            .expect("the 5x runs were made")
    };
    let (plain5, guarded5) = (at5(Variant::Plain), at5(Variant::Guarded));
    let (sp, sg) = (stats(&plain5.outcomes), stats(&guarded5.outcomes));
    let goodput = sg.accepted_in_run as f64 / RUN.as_secs_f64();
    let ratio = match (sp.p99, sg.p99) {
        (Some(p), Some(g)) => p.as_secs_f64() / g.as_secs_f64(),
        _ => f64::NAN,
    };
    outln!("### Goal at 5x\n");
    outln!("| measure | measured | goal | result |");
    outln!("|---|---:|---:|---|");
    outln!(
        "| guarded accepted p99 | {} | < {} ms | {} |",
        ms_or_dash(sg.p99),
        GOAL_P99.as_millis(),
        pass(sg.p99.is_some_and(|p| p < GOAL_P99))
    );
    outln!(
        "| guarded goodput | {goodput:.1} req/s = {:.0}% of capacity | >= {:.0}% | {} |",
        100.0 * goodput / capacity,
        100.0 * GOAL_GOODPUT,
        pass(goodput >= GOAL_GOODPUT * capacity)
    );
    outln!(
        "| unguarded p99 / guarded p99 | {} / {} = {ratio:.1}x | >= {GOAL_RATIO}x | {} |",
        ms_or_dash(sp.p99),
        ms_or_dash(sg.p99),
        pass(ratio >= GOAL_RATIO)
    );
    outln!(
        "\n(The unguarded p99 counts only requests answered within the {} s client timeout, so it \
         cannot exceed {} s: {} of its {} requests timed out and {} failed otherwise.)\n",
        TIMEOUT.as_secs(),
        TIMEOUT.as_secs(),
        sp.timeouts,
        sp.sent,
        sp.errors + sp.other
    );

    // The timeline of the 5x runs: the plot's data.
    outln!("### Timeline at 5x, per 500 ms window (the plot's data)\n");
    outln!(
        "| window | lag plain | lag guarded | refused guarded | accepted p99 plain | accepted p99 guarded |"
    );
    outln!("|---|---:|---:|---:|---:|---:|");
    let (wp, wg) = (windows(plain5), windows(guarded5));
    for (w, (p, g)) in wp.iter().zip(&wg).enumerate() {
        outln!(
            "| {:.1}–{:.1} s | {:.0} ms | {:.0} ms | {:.0}% | {} | {} |",
            w as f64 * WINDOW.as_secs_f64(),
            (w + 1) as f64 * WINDOW.as_secs_f64(),
            p.2.as_secs_f64() * 1e3,
            g.2.as_secs_f64() * 1e3,
            100.0 * g.0,
            ms_or_dash(p.1),
            ms_or_dash(g.1),
        );
    }

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/out/too_busy_server.svg");
    let svg = plot(
        &[(Variant::Plain, plain5), (Variant::Guarded, guarded5)],
        capacity,
    );
    match std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/out"))
        .and_then(|()| std::fs::write(path, svg))
    {
        Ok(()) => outln!("\nPlot: `benches/out/too_busy_server.svg`."),
        Err(e) => outln!("\nPlot not written ({path}): {e}"),
    }
    outln!(
        "\nWhole run: {:.1} s; load average at the end: {}.",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    common::publish("too_busy_server");
}
