//! The server: one handler over the dependency, the seven contenders around it, and tower-acc's
//! limit made readable (`Observed`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::State;
use axum::handler::Handler;
use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::{get, MethodRouter};
use axum::Router;
use tower::{BoxError, ServiceBuilder};
use tower_acc::{Aimd, Algorithm, ConcurrencyLimitLayer, Gradient2, Vegas};

use crate::common::Server;
use crate::dependency::Dependency;

/// One server's state: its dependency, and its handlers in flight.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) dependency: Dependency,
    pub(crate) in_flight: AtomicUsize,
}

impl App {
    pub(crate) fn new(dependency: Dependency) -> App {
        App {
            dependency,
            in_flight: AtomicUsize::new(0),
        }
    }
}

/// Counts a handler in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Relaxed);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The request's index in the run's schedule, from `?i=N` (what its hold and fate are drawn from).
fn index(uri: &Uri) -> u64 {
    uri.query()
        .and_then(|q| q.strip_prefix("i="))
        .and_then(|i| i.parse().ok())
        .unwrap_or(0)
}

/// The work of every handler: a call that fails fails at once (502, before the dependency);
/// the others wait for a slot (where there is a gate) and hold the dependency for their hold.
async fn handle(app: &App, uri: &Uri) -> Result<&'static str, (StatusCode, &'static str)> {
    let _in_flight = InFlight::enter(&app.in_flight);
    let i = index(uri);
    if app.dependency.fails(i) {
        return Err((StatusCode::BAD_GATEWAY, "the dependency failed"));
    }
    let _slot = app.dependency.enter().await;
    tokio::time::sleep(app.dependency.hold(i)).await;
    Ok("done")
}

async fn unlimited(State(app): State<Arc<App>>, uri: Uri) -> impl IntoResponse {
    handle(&app, &uri).await
}

#[resiliency::too_busy]
async fn lag_only(State(app): State<Arc<App>>, uri: Uri) -> impl IntoResponse {
    handle(&app, &uri).await
}

/// Without a capacity limit, `fixed`'s limit is this multiple of the highest in-flight count
/// sampled in the unguarded run (rounded up): what a user sizing from what they saw would pick.
pub(crate) const FIXED_HEADROOM: f64 = 1.5;

/// `fixed`'s limit for the run starting: its guard reads it as its first call builds it.
static FIXED_LIMIT: AtomicU32 = AtomicU32::new(1);

pub(crate) fn set_fixed_limit(limit: u32) {
    FIXED_LIMIT.store(limit, Relaxed);
}

fn fixed_limit() -> u32 {
    FIXED_LIMIT.load(Relaxed)
}

/// The handlers of one run slot (a scenario and load): `ours auto` and `fixed`, each its own
/// guard, so that every run starts from a fresh one.
pub(crate) struct RunSlot {
    ours: MethodRouter<Arc<App>>,
    fixed: MethodRouter<Arc<App>>,
    /// `ours auto`'s guard's name (`resiliency::too_busy::get`).
    pub(crate) site: &'static str,
}

/// Declares `ours auto` (under `#[resiliency::too_busy(<options>)]`) and `fixed` once per run
/// slot, each slot a module of its own; `OURS_AUTO_OPTIONS` is the options as written.
macro_rules! run_slots {
    ($options:tt; $($slot:ident)+) => {
        $(
            mod $slot {
                use super::*;

                #[resiliency::too_busy $options]
                pub(super) async fn ours_auto(
                    State(app): State<Arc<App>>,
                    uri: Uri,
                ) -> impl IntoResponse {
                    handle(&app, &uri).await
                }

                #[resiliency::too_busy(max_in_flight = fixed_limit())]
                pub(super) async fn fixed(State(app): State<Arc<App>>, uri: Uri) -> impl IntoResponse {
                    handle(&app, &uri).await
                }
            }
        )+

        pub(crate) const OURS_AUTO_OPTIONS: &str = stringify!($options);

        /// How many run slots there are.
        pub(crate) const RUN_SLOTS: usize = [$(stringify!($slot)),+].len();

        /// The handlers of run slot `n`.
        pub(crate) fn run_slot(n: usize) -> RunSlot {
            let mut slots = vec![$(RunSlot {
                ours: get($slot::ours_auto),
                fixed: get($slot::fixed),
                site: concat!(module_path!(), "::", stringify!($slot), "::ours_auto"),
            }),+];
            slots.swap_remove(n)
        }
    };
}

#[rustfmt::skip]
run_slots!((max_in_flight = "auto");
    s01 s02 s03 s04 s05 s06 s07 s08 s09 s10 s11 s12 s13 s14 s15 s16
    s17 s18 s19 s20 s21 s22);

/// What tower-acc's algorithm did, as `Observed` records it.
#[derive(Debug, Default)]
pub(crate) struct AccProbe {
    /// `max_concurrency()` after the last update.
    pub(crate) limit: AtomicUsize,
    updates: AtomicU64,
    /// The address of the algorithm the first update reached, and whether another was reached.
    first: AtomicUsize,
    others: AtomicBool,
}

impl AccProbe {
    /// Every update of the run reached one and the same limiter.
    pub(crate) fn one_limiter(&self) -> bool {
        self.updates.load(Relaxed) > 0 && !self.others.load(Relaxed)
    }
}

/// A tower-acc algorithm, unchanged, with its limit recorded after each update.
#[derive(Clone, Debug)]
struct Observed<A> {
    algorithm: A,
    probe: Arc<AccProbe>,
}

impl<A: Algorithm> Algorithm for Observed<A> {
    fn max_concurrency(&self) -> usize {
        self.algorithm.max_concurrency()
    }

    fn update(&mut self, rtt: Duration, num_inflight: usize, is_error: bool, is_canceled: bool) {
        self.algorithm
            .update(rtt, num_inflight, is_error, is_canceled);
        let probe = &self.probe;
        probe.limit.store(self.algorithm.max_concurrency(), Relaxed);
        probe.updates.fetch_add(1, Relaxed);
        let here = self as *const Self as usize;
        if let Err(first) = probe.first.compare_exchange(0, here, Relaxed, Relaxed) {
            if first != here {
                probe.others.store(true, Relaxed);
            }
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Algo {
    Vegas,
    Gradient2,
    Aimd,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Contender {
    Unlimited,
    Fixed,
    LagOnly,
    Acc(Algo),
    OursAuto,
}

pub(crate) const CONTENDERS: [Contender; 7] = [
    Contender::Unlimited,
    Contender::Fixed,
    Contender::LagOnly,
    Contender::Acc(Algo::Vegas),
    Contender::Acc(Algo::Gradient2),
    Contender::Acc(Algo::Aimd),
    Contender::OursAuto,
];

impl Contender {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Contender::Unlimited => "none",
            Contender::Fixed => "fixed",
            Contender::LagOnly => "lag only",
            Contender::Acc(Algo::Vegas) => "tower-acc Vegas",
            Contender::Acc(Algo::Gradient2) => "tower-acc Gradient2",
            Contender::Acc(Algo::Aimd) => "tower-acc AIMD",
            Contender::OursAuto => "ours auto",
        }
    }

    pub(crate) fn setup(self) -> String {
        let acc = |algorithm: &str| {
            format!(
                "tower-acc 0.1.1 `ConcurrencyLimitLayer::new({algorithm}::default())` (its default \
                 classifier: an `Err` is an error, so a 502 response is a success) under tower's \
                 `load_shed`, its error a 503 through axum's `HandleErrorLayer`; one limiter per \
                 server"
            )
        };
        match self {
            Contender::Unlimited => "the handler alone".into(),
            Contender::Fixed => format!(
                "`#[resiliency::too_busy(max_in_flight = fixed_limit())]`, the limit set per run: \
                 the slots of the first phase for a pool; without a capacity limit, \
                 {FIXED_HEADROOM}x the highest in-flight count sampled in the unguarded run's \
                 measured window, rounded up"
            ),
            Contender::LagOnly => "`#[resiliency::too_busy]` (defaults: the runtime's lag)".into(),
            Contender::Acc(Algo::Vegas) => acc("Vegas"),
            Contender::Acc(Algo::Gradient2) => acc("Gradient2"),
            Contender::Acc(Algo::Aimd) => acc("Aimd"),
            Contender::OursAuto => format!(
                "`#[resiliency::too_busy{OURS_AUTO_OPTIONS}]`, a fresh guard per scenario and load"
            ),
        }
    }
}

async fn overloaded(_: BoxError) -> StatusCode {
    StatusCode::SERVICE_UNAVAILABLE
}

/// The handler under tower-acc with `algorithm`, behind `load_shed`: built once, so that every
/// request's clone of it shares the one limiter.
fn acc_router<A>(algorithm: A, probe: Arc<AccProbe>, app: Arc<App>) -> Router
where
    A: Algorithm + Clone + Send + Sync + 'static,
{
    probe.limit.store(algorithm.max_concurrency(), Relaxed);
    let limited = ServiceBuilder::new()
        .layer(HandleErrorLayer::new(overloaded))
        .load_shed()
        .layer(ConcurrencyLimitLayer::new(Observed { algorithm, probe }))
        .service(unlimited.with_state(app));
    Router::new().route_service("/", limited)
}

fn router(
    contender: Contender,
    slot: RunSlot,
    app: Arc<App>,
    probe: Option<Arc<AccProbe>>,
) -> Router {
    let handler = match contender {
        Contender::Unlimited => get(unlimited),
        Contender::Fixed => slot.fixed,
        Contender::LagOnly => get(lag_only),
        Contender::OursAuto => slot.ours,
        Contender::Acc(algo) => {
            let probe = probe.expect("a tower-acc run has a probe");
            return match algo {
                Algo::Vegas => acc_router(Vegas::default(), probe, app),
                Algo::Gradient2 => acc_router(Gradient2::default(), probe, app),
                Algo::Aimd => acc_router(Aimd::default(), probe, app),
            };
        }
    };
    Router::new().route("/", handler).with_state(app)
}

/// A fresh server of `contender` (with the handlers of run slot `slot`) on its own current-thread
/// runtime and thread, pinned to CPU 0.
pub(crate) fn start(
    contender: Contender,
    slot: usize,
    app: Arc<App>,
    probe: Option<Arc<AccProbe>>,
) -> Server {
    Server::start(Some(0), move || async move {
        router(contender, run_slot(slot), app, probe)
    })
}
