//! The example service's application: its routes, its three annotated functions and a fake
//! upstream that can be told to fail. `main.rs` serves it; `tests/service.rs` serves it too and
//! drives it over HTTP.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;
use resiliency::settings::{self, Policy};
use resiliency::{breaker, race_retry, too_busy, Rejected};

/// A dependency of the service, in process: it answers after a short wait, or fails once told to.
#[derive(Default)]
pub struct Upstream {
    failing: AtomicBool,
    calls: AtomicU64,
}

impl Upstream {
    async fn stock(&self, item: u64) -> Result<u64, AppError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(5)).await;
        if self.failing.load(Ordering::Relaxed) {
            Err(AppError::Upstream)
        } else {
            Ok(item * 10)
        }
    }
}

/// The service's error: an upstream failure (502), or a refusal by a policy, which answers as
/// `resiliency::http` makes it (503 with `Retry-After`, or 504), naming nothing inside the service.
#[derive(Debug)]
pub enum AppError {
    Upstream,
    Refused(Rejected),
}

impl From<Rejected> for AppError {
    fn from(rejected: Rejected) -> Self {
        AppError::Refused(rejected)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            AppError::Upstream => (StatusCode::BAD_GATEWAY, "the upstream failed").into_response(),
            AppError::Refused(rejected) => rejected.into_response(),
        }
    }
}

/// The stock of `item`, behind a breaker named `inventory` (its settings come from
/// `resiliency.toml`).
#[breaker(name = "inventory", error_threshold = 5, error_timeout = "10s")]
async fn inventory(upstream: &Upstream, item: u64) -> Result<u64, AppError> {
    upstream.stock(item).await
}

/// The price of `item`: a second attempt races the first if it has not answered in 50 ms.
#[race_retry(retries = 1, after = "50ms", total = "300ms")]
async fn price(item: u64) -> Result<u64, AppError> {
    tokio::time::sleep(Duration::from_millis(2)).await;
    Ok(item + 99)
}

/// The handler: sheds load when the runtime lags.
#[too_busy]
async fn item(State(app): State<Arc<App>>, Path(id): Path<u64>) -> Result<String, AppError> {
    let stock = inventory(&app.upstream, id).await?;
    let price = price(id).await?;
    Ok(format!("item {id}: {stock} in stock at {price}\n"))
}

/// The settings in force at every live site, each with where it comes from, then the overrides
/// that no live site has taken (a site not called yet, or a misspelt name).
async fn show_settings() -> String {
    let mut out = String::new();
    for (policy, site) in settings::sites() {
        for e in settings::effective(policy, &site).unwrap_or_default() {
            if let Some(value) = e.value {
                out += &format!("{policy} {site} {} = {value} ({})\n", e.setting, e.source);
            }
        }
    }
    for (policy, site, setting, source) in settings::unmatched() {
        out += &format!("no live {policy} `{site}` (yet) for {setting} ({source})\n");
    }
    out
}

/// `PUT /settings/{policy}/{site}/{setting}` with the value as the body: a change from code,
/// refused (422, with why) when it breaks a rule; the value in force then stays.
async fn change_setting(
    Path((policy, site, setting)): Path<(String, String, String)>,
    value: String,
) -> (StatusCode, String) {
    let Some(policy) = Policy::from_name(&policy) else {
        return (StatusCode::NOT_FOUND, format!("no policy {policy}\n"));
    };
    match settings::set(policy, &site, &setting, value.trim()) {
        Ok(()) => (StatusCode::OK, "changed\n".to_owned()),
        Err(error) => (StatusCode::UNPROCESSABLE_ENTITY, format!("{error}\n")),
    }
}

/// What the routes share.
pub struct App {
    pub upstream: Upstream,
    pub prometheus: PrometheusHandle,
}

/// The routes: `GET /items/{id}`, `GET /metrics` (Prometheus), `GET /settings`,
/// `PUT /settings/{policy}/{site}/{setting}`, and `POST /upstream/fail` and `/upstream/recover`
/// to make the upstream fail and recover.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/items/{id}", get(item))
        .route(
            "/metrics",
            get(|State(app): State<Arc<App>>| async move {
                // Every count as of now, rather than as of the last export (at most 1 s ago).
                resiliency::metrics::flush();
                app.prometheus.render()
            }),
        )
        .route("/settings", get(show_settings))
        .route("/settings/{policy}/{site}/{setting}", put(change_setting))
        .route(
            "/upstream/fail",
            post(|State(app): State<Arc<App>>| async move {
                app.upstream.failing.store(true, Ordering::Relaxed);
                "the upstream fails now\n"
            }),
        )
        .route(
            "/upstream/recover",
            post(|State(app): State<Arc<App>>| async move {
                app.upstream.failing.store(false, Ordering::Relaxed);
                "the upstream answers again\n"
            }),
        )
        .with_state(app)
}
