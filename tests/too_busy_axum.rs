//! `#[too_busy]` on axum handlers, over real HTTP on 127.0.0.1 (the `axum` feature): handlers
//! returning `impl IntoResponse`, `Response`, and `Result<String, AppError>`. With one request held
//! in flight, the next is a `503 Service Unavailable` with `Retry-After` and a body that says when
//! to retry and names nothing; once the first is released it returns 200, and so does the next.
#![cfg(feature = "axum")]

use std::time::Duration;

use anyhow::{ensure, Context as _};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use resiliency::{too_busy, Rejected};
use tokio::sync::{mpsc, watch};

/// Lets the test see that a handler is running, and hold it there until the gate opens.
#[derive(Clone)]
struct Gate {
    entered: mpsc::UnboundedSender<()>,
    open: watch::Receiver<bool>,
}

impl Gate {
    async fn pass(&self) {
        let _ = self.entered.send(());
        let mut open = self.open.clone();
        let _ = open.wait_for(|open| *open).await;
    }
}

#[too_busy(max_in_flight = 1)]
async fn impl_handler(State(gate): State<Gate>) -> impl IntoResponse {
    gate.pass().await;
    (StatusCode::OK, "impl IntoResponse: done")
}

#[too_busy(max_in_flight = 1)]
async fn response_handler(State(gate): State<Gate>) -> Response {
    gate.pass().await;
    "Response: done".into_response()
}

/// An application's error: a refusal becomes the crate's 503 (`Rejected: IntoResponse`), marked so
/// that the test sees this mapping was used.
#[derive(Debug)]
enum AppError {
    Busy(Rejected),
    #[allow(dead_code)]
    Internal(String),
}

impl From<Rejected> for AppError {
    fn from(rejected: Rejected) -> Self {
        AppError::Busy(rejected)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            AppError::Busy(rejected) => {
                let mut response = rejected.into_response();
                response
                    .headers_mut()
                    .insert("x-app-error", HeaderValue::from_static("busy"));
                response
            }
            AppError::Internal(message) => {
                (StatusCode::INTERNAL_SERVER_ERROR, message).into_response()
            }
        }
    }
}

#[too_busy(max_in_flight = 1)]
async fn result_handler(State(gate): State<Gate>) -> Result<String, AppError> {
    gate.pass().await;
    Ok("Result: done".to_owned())
}

#[too_busy]
async fn lag_only_handler() -> impl IntoResponse {
    "lag only: done"
}

/// A server on 127.0.0.1:0 with every handler, its address, and the test's ends of the gate.
struct Server {
    base: String,
    entered: mpsc::UnboundedReceiver<()>,
    open: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start() -> anyhow::Result<Server> {
        let (entered_tx, entered) = mpsc::unbounded_channel();
        let (open, open_rx) = watch::channel(false);
        let app = Router::new()
            .route("/impl", get(impl_handler))
            .route("/response", get(response_handler))
            .route("/result", get(result_handler))
            .route("/lag", get(lag_only_handler))
            .with_state(Gate {
                entered: entered_tx,
                open: open_rx,
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Server {
            base,
            entered,
            open,
            task,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const WAIT: Duration = Duration::from_secs(5);

/// Holds one request to `path` in flight, checks that the next is refused with a 503, releases
/// the first and checks that it and a third return 200 with `ok_body`. Returns the refusal.
async fn sheds_while_one_is_in_flight(
    path: &str,
    ok_body: &str,
) -> anyhow::Result<reqwest::Response> {
    let mut server = Server::start().await?;
    let client = reqwest::Client::new();
    let url = format!("{}{path}", server.base);

    let first = tokio::spawn(client.get(&url).send());
    tokio::time::timeout(WAIT, server.entered.recv())
        .await
        .context("the first request never reached the handler")?;

    let refused = tokio::time::timeout(WAIT, client.get(&url).send())
        .await
        .context("the second request was not answered at once")??;
    ensure!(
        refused.status() == StatusCode::SERVICE_UNAVAILABLE,
        "second request: {}",
        refused.status()
    );
    let retry_after = refused
        .headers()
        .get(header::RETRY_AFTER)
        .context("no Retry-After header")?;
    ensure!(retry_after == "1", "Retry-After: {retry_after:?}");

    server.open.send(true)?;
    let first = tokio::time::timeout(WAIT, first)
        .await
        .context("the first request did not finish once released")???;
    ensure!(
        first.status() == StatusCode::OK,
        "first request: {}",
        first.status()
    );
    ensure!(first.text().await? == ok_body);

    let third = client.get(&url).send().await?;
    ensure!(
        third.status() == StatusCode::OK,
        "third request: {}",
        third.status()
    );
    ensure!(third.text().await? == ok_body);
    Ok(refused)
}

/// What an outside client reads in a refusal: the status's meaning and when to retry, no names.
const REFUSED_BODY: &str = "Service Unavailable. Retry after 1 second.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impl_into_response_handler_answers_503_while_busy() -> anyhow::Result<()> {
    let refused = sheds_while_one_is_in_flight("/impl", "impl IntoResponse: done").await?;
    let body = refused.text().await?;
    ensure!(body == REFUSED_BODY, "503 body: {body:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_handler_answers_503_while_busy() -> anyhow::Result<()> {
    let refused = sheds_while_one_is_in_flight("/response", "Response: done").await?;
    let body = refused.text().await?;
    ensure!(body == REFUSED_BODY, "503 body: {body:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_handler_answers_503_through_its_error_type() -> anyhow::Result<()> {
    let refused = sheds_while_one_is_in_flight("/result", "Result: done").await?;
    ensure!(
        refused
            .headers()
            .get("x-app-error")
            .is_some_and(|v| v == "busy"),
        "the refusal did not go through AppError: {:?}",
        refused.headers()
    );
    let body = refused.text().await?;
    ensure!(body == REFUSED_BODY, "503 body: {body:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lag_guarded_handler_answers_normally_on_an_idle_server() -> anyhow::Result<()> {
    let server = Server::start().await?;
    let client = reqwest::Client::new();
    for _ in 0..20 {
        let response = client.get(format!("{}/lag", server.base)).send().await?;
        ensure!(response.status() == StatusCode::OK, "{}", response.status());
        ensure!(response.text().await? == "lag only: done");
    }
    Ok(())
}

/// A dependency with 4 slots, each call holding one for 20 ms (200 calls/s).
static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

#[too_busy(max_in_flight = "auto", auto_min = 2)]
async fn auto_handler() -> impl IntoResponse {
    let _slot = SLOTS.acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    "auto: done"
}

/// `max_in_flight = "auto"` over real HTTP: 48 clients in a closed loop against a dependency
/// that serves 4 at a time. The limit comes down from 20 toward the 4 slots, the
/// requests beyond it are 503s that name nothing inside the service, and the accepted ones wait
/// far less than the 12 services an unlimited queue would make them wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_learns_the_limit_of_a_dependency_over_http() -> anyhow::Result<()> {
    let app = Router::new().route("/auto", get(auto_handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/auto", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let end = tokio::time::Instant::now() + Duration::from_secs(3);
    let clients = (0..48).map(|_| {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move {
            let (mut accepted, mut refused) = (Vec::new(), 0);
            while tokio::time::Instant::now() < end {
                let sent = tokio::time::Instant::now();
                let response = client.get(&url).send().await?;
                match response.status() {
                    StatusCode::OK => accepted.push(sent.elapsed()),
                    StatusCode::SERVICE_UNAVAILABLE => {
                        let body = response.text().await?;
                        ensure!(
                            !body.contains("auto_handler"),
                            "the body names the handler: {body}"
                        );
                        refused += 1;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    other => anyhow::bail!("unexpected status {other}"),
                }
            }
            anyhow::Ok((accepted, refused))
        })
    });
    let (mut accepted, mut refused) = (Vec::new(), 0);
    for client in futures::future::join_all(clients).await {
        let (a, r) = client??;
        accepted.extend(a);
        refused += r;
    }
    server.abort();
    let (_, site) = resiliency::settings::sites()
        .into_iter()
        .find(|(_, name)| name.ends_with("::auto_handler"))
        .context("the handler's site")?;
    let limit = resiliency::too_busy::get(&site)
        .and_then(|guard| guard.in_flight_limit())
        .context("the handler's limit")?;
    accepted.sort();
    let median = accepted[accepted.len() / 2];
    // Below the 20 it started at, within a few holds' worth of queue of the 4 slots (the
    // limit moves in a sawtooth around them).
    ensure!((2..=16).contains(&limit), "limit {limit}");
    ensure!(refused > 0, "nothing refused");
    // 48 in a queue for 4 slots of 20 ms would wait about 240 ms.
    ensure!(
        median < Duration::from_millis(120),
        "accepted median {median:?}, limit {limit}"
    );
    // Goodput: near the dependency's 200 calls/s (3 s).
    ensure!(accepted.len() > 400, "{} accepted", accepted.len());
    Ok(())
}

static UNEVEN_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A dependency with no capacity limit and uneven latency: every third call takes 200 ms, the
/// others 5 ms.
#[too_busy(max_in_flight = "auto")]
async fn uneven_handler() -> impl IntoResponse {
    let n = UNEVEN_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let hold = if n.is_multiple_of(3) { 200 } else { 5 };
    tokio::time::sleep(Duration::from_millis(hold)).await;
    "uneven: done"
}

/// `max_in_flight = "auto"` over real HTTP in front of a dependency that never queues but whose
/// latency is uneven (5 ms or 200 ms): 300 requests a second for 3 s, each sent on schedule
/// whatever happened to the others. Nothing waits, so next to nothing is refused: the limit
/// grows from 20 to what the calls in flight need, and uneven latency is not read as a queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_refuses_next_to_nothing_where_latency_is_uneven_but_nothing_queues(
) -> anyhow::Result<()> {
    let app = Router::new().route("/uneven", get(uneven_handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/uneven", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let start = tokio::time::Instant::now();
    let requests: Vec<_> = (0..900u32)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            let due = start + Duration::from_secs_f64(f64::from(i) / 300.0);
            tokio::spawn(async move {
                tokio::time::sleep_until(due).await;
                anyhow::Ok(client.get(&url).send().await?.status())
            })
        })
        .collect();
    let (mut ok, mut refused) = (0, 0);
    for request in futures::future::join_all(requests).await {
        match request?? {
            StatusCode::OK => ok += 1,
            StatusCode::SERVICE_UNAVAILABLE => refused += 1,
            other => anyhow::bail!("unexpected status {other}"),
        }
    }
    server.abort();
    let (_, site) = resiliency::settings::sites()
        .into_iter()
        .find(|(_, name)| name.ends_with("::uneven_handler"))
        .context("the handler's site")?;
    let limit = resiliency::too_busy::get(&site)
        .and_then(|guard| guard.in_flight_limit())
        .context("the handler's limit")?;
    // About 20 calls in flight on average (300/s x 70 ms), more in bursts.
    ensure!(
        refused * 20 <= ok + refused,
        "{refused} refused of {}, limit {limit}",
        ok + refused
    );
    ensure!(limit >= 20, "limit {limit}");
    Ok(())
}
