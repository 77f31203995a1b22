//! One open-loop run of a contender against a fresh server, with the sampler that applies the
//! dependency's schedule; and the unloaded latency of a scenario.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::open_loop::{self, request, Kind, Outcome};
use crate::common::percentile;
use crate::dependency::{self, Dependency};
use crate::scenario::{Phase, Scenario};
use crate::server::{self, AccProbe, App, Contender};

/// A request not answered within this (from when it was scheduled) counts as a timeout: above the
/// longest hold (the Pareto cap, 2 s), so that no unloaded call times out.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(2500);
/// How often the sampler reads the server.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// Healthy requests that measure the unloaded latency, and the lanes they are sent in (each
/// lane one request at a time: at most this many in flight, fewer than any pool's slots).
pub(crate) const UNLOADED_REQUESTS: usize = 200;
pub(crate) const UNLOADED_LANES: usize = 4;
/// The unloaded requests' indices start here, and the warm-up's: apart from the runs' (0, 1,
/// 2, ...).
const UNLOADED_FIRST_INDEX: u64 = 1 << 40;
const WARM_UP_INDEX: u64 = 1 << 41;

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
            LimitSource::Ours(site) => {
                resiliency::too_busy::get(site).and_then(|g| g.in_flight_limit())
            }
            LimitSource::Acc(probe) => Some(probe.limit.load(Relaxed) as u32),
        }
    }
}

/// One reading of the sampler.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Sample {
    pub(crate) at: Duration,
    pub(crate) in_flight: usize,
    pub(crate) limit: Option<u32>,
    /// The gate's slots, if the dependency has a gate.
    pub(crate) slots: Option<u32>,
}

/// What a run is: the contender, its run slot (fresh guards), `fixed`'s limit, and the
/// schedule of arrivals.
pub(crate) struct RunSpec<'a> {
    pub(crate) scenario: &'a Scenario,
    pub(crate) contender: Contender,
    pub(crate) slot: usize,
    pub(crate) fixed_limit: u32,
    pub(crate) schedule: Arc<[Duration]>,
}

/// What one run measured.
pub(crate) struct Run {
    pub(crate) contender: Contender,
    /// By request index: the outcomes of every contender's request `i` are of the same call.
    pub(crate) outcomes: Vec<Outcome>,
    pub(crate) samples: Vec<Sample>,
    /// How late the generator started requests, p99 and max.
    pub(crate) send_late_p99: Duration,
    pub(crate) send_late_max: Duration,
    /// From the run's start until the last request had finished.
    pub(crate) wall: Duration,
    /// tower-acc: whether every update reached one and the same limiter.
    pub(crate) one_limiter: Option<bool>,
    /// `fixed`'s limit in this run.
    pub(crate) fixed_limit: Option<u32>,
}

fn fresh_app(scenario: &Scenario, phase: &Phase) -> Arc<App> {
    Arc::new(App::new(Dependency::new(
        scenario.shape,
        scenario.fail_share,
        phase.slots,
        phase.scale,
    )))
}

/// The indices from `first` on of the calls that do not fail at once.
fn healthy(scenario: &Scenario, first: u64) -> impl Iterator<Item = u64> {
    let fail_share = scenario.fail_share;
    (first..).filter(move |&i| !dependency::fails(fail_share, i))
}

fn url_of(base: &str, i: u64) -> String {
    format!("{base}/?i={i}")
}

/// One open-loop run against a fresh server, its dependency following the scenario's phases.
pub(crate) fn run(spec: RunSpec<'_>) -> Run {
    let RunSpec {
        scenario,
        contender,
        slot,
        fixed_limit,
        schedule,
    } = spec;
    let app = fresh_app(scenario, scenario.first());
    let probe = matches!(contender, Contender::Acc(_)).then(|| Arc::new(AccProbe::default()));
    let limit = match (contender, &probe) {
        (Contender::Fixed, _) => LimitSource::Fixed(fixed_limit),
        (Contender::OursAuto, _) => LimitSource::Ours(server::run_slot(slot).site),
        (Contender::Acc(_), Some(probe)) => LimitSource::Acc(probe.clone()),
        _ => LimitSource::None,
    };
    server::set_fixed_limit(fixed_limit);
    let server = server::start(contender, slot, app.clone(), probe.clone());
    let base: Arc<str> = server.url.clone().into();
    let changes: Vec<Phase> = scenario.phases[1..].to_vec();
    let warm_up_index = healthy(scenario, WARM_UP_INDEX).next().expect("endless");
    let generator = std::thread::spawn(move || {
        open_loop::runtime_on(1).block_on(async move {
            let client = open_loop::client(TIMEOUT);
            let warm: Arc<str> = url_of(&base, warm_up_index).into();
            open_loop::warm_up(&client, &warm).await;
            let sampling = Arc::new(AtomicBool::new(true));
            let t0 = Instant::now();
            let sampler = sample(t0, app, limit, changes, sampling.clone());
            let (outcomes, late) = offer(&client, &base, &schedule, t0).await;
            let wall = t0.elapsed();
            sampling.store(false, Relaxed);
            let samples = sampler.join().expect("the sampler runs");
            (outcomes, samples, late, wall)
        })
    });
    let (outcomes, samples, late, wall) = generator.join().expect("the generator runs");
    drop(server);
    if std::env::var_os("AUTO_BENCH_TRACE").is_some() && contender == Contender::OursAuto {
        // A development aid: ours' limit, calls in flight and slots, every 200 ms.
        for s in samples.iter().step_by(4) {
            eprintln!(
                "{:6.2} s  limit {:?}  in flight {}  slots {:?}",
                s.at.as_secs_f64(),
                s.limit,
                s.in_flight,
                s.slots
            );
        }
    }
    Run {
        contender,
        outcomes,
        samples,
        send_late_p99: percentile(&late, 0.99).unwrap_or_default(),
        send_late_max: late.last().copied().unwrap_or_default(),
        wall,
        one_limiter: probe.map(|p| p.one_limiter()),
        fixed_limit: (contender == Contender::Fixed).then_some(fixed_limit),
    }
}

/// A thread that reads the server every `SAMPLE_EVERY` from `t0` until `sampling` turns false,
/// and applies each phase's state to the dependency as the phase starts.
fn sample(
    t0: Instant,
    app: Arc<App>,
    limit: LimitSource,
    changes: Vec<Phase>,
    sampling: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Sample>> {
    std::thread::spawn(move || {
        let mut samples = Vec::new();
        let mut changes = changes.into_iter().peekable();
        let mut next = t0;
        while sampling.load(Relaxed) {
            let at = next - t0;
            while let Some(phase) = changes.next_if(|p| p.start <= at) {
                app.dependency.set(phase.slots, phase.scale);
            }
            samples.push(Sample {
                at,
                in_flight: app.in_flight.load(Relaxed),
                limit: limit.read(),
                slots: app.dependency.slots(),
            });
            next += SAMPLE_EVERY;
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        samples
    })
}

/// Sends request `i` at `t0 + schedule[i]`, whatever happened to the earlier ones, each in its own
/// task; waits for all of them. Returns the outcomes by index, and how late each was sent (sorted).
async fn offer(
    client: &reqwest::Client,
    base: &str,
    schedule: &[Duration],
    t0: Instant,
) -> (Vec<Outcome>, Vec<Duration>) {
    let mut tasks = tokio::task::JoinSet::new();
    let mut late = Vec::with_capacity(schedule.len());
    for (i, &offset) in schedule.iter().enumerate() {
        let due = t0 + offset;
        if Instant::now() < due {
            tokio::time::sleep_until(due.into()).await;
        }
        late.push(due.elapsed());
        let (client, url) = (client.clone(), url_of(base, i as u64));
        tasks.spawn(async move { (i, request(&client, &url, due, t0).await) });
    }
    let mut outcomes: Vec<Option<Outcome>> = vec![None; schedule.len()];
    while let Some(done) = tasks.join_next().await {
        let (i, outcome) = done.expect("a request task does not panic");
        outcomes[i] = Some(outcome);
    }
    late.sort();
    let outcomes = outcomes
        .into_iter()
        .map(|o| o.expect("every request ended"))
        .collect();
    (outcomes, late)
}

/// A scenario's unloaded latency in one phase's state.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Unloaded {
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) max: Duration,
}

/// `UNLOADED_REQUESTS` healthy requests (indices that do not fail) to a fresh `none` server in
/// `phase`'s state, in `UNLOADED_LANES` lanes of one request at a time, after one warm-up each.
pub(crate) fn unloaded(scenario: &Scenario, phase: &Phase) -> Unloaded {
    let server = server::start(Contender::Unlimited, 0, fresh_app(scenario, phase), None);
    let base = server.url.clone();
    let healthy: Vec<u64> = healthy(scenario, UNLOADED_FIRST_INDEX)
        .take(UNLOADED_REQUESTS)
        .collect();
    let mut latencies = std::thread::spawn(move || {
        open_loop::runtime_on(1).block_on(async move {
            let client = open_loop::client(TIMEOUT);
            let lanes: Vec<_> = (0..UNLOADED_LANES)
                .map(|lane| {
                    let mine: Vec<u64> = healthy
                        .iter()
                        .skip(lane)
                        .step_by(UNLOADED_LANES)
                        .copied()
                        .collect();
                    let (client, base) = (client.clone(), base.clone());
                    tokio::spawn(async move { lane_latencies(&client, &base, &mine).await })
                })
                .collect();
            let mut all = Vec::with_capacity(UNLOADED_REQUESTS);
            for lane in lanes {
                all.extend(lane.await.expect("a lane runs"));
            }
            all
        })
    })
    .join()
    .expect("the unloaded client runs");
    drop(server);
    latencies.sort();
    Unloaded {
        p50: percentile(&latencies, 0.5).expect("requests were made"),
        p99: percentile(&latencies, 0.99).expect("requests were made"),
        max: *latencies.last().expect("requests were made"),
    }
}

/// One request after another to the indices `mine` (after one warm-up that opens the
/// connection); each must be answered 200.
async fn lane_latencies(client: &reqwest::Client, base: &str, mine: &[u64]) -> Vec<Duration> {
    let get = |i: u64| {
        let url = url_of(base, i);
        async move {
            let now = Instant::now();
            let outcome = request(client, &url, now, now).await;
            assert_eq!(
                outcome.kind,
                Kind::Accepted,
                "an unloaded healthy call is answered"
            );
            outcome.latency
        }
    };
    get(mine[0]).await;
    let mut latencies = Vec::with_capacity(mine.len());
    for &i in mine {
        latencies.push(get(i).await);
    }
    latencies
}
