//! A small HTTP service run as in production: settings from a TOML file and the environment,
//! metrics for Prometheus at `/metrics`.
//!
//! ```text
//! RESILIENCY_TOO_BUSY__MAX_LAG=50ms cargo run --example service --features axum,metrics,toml -- --demo
//! ```
//!
//! With `--demo` it serves on a free port of 127.0.0.1, drives itself for a moment and exits: a
//! call, the upstream failing until the `inventory` breaker opens, a change of `error_timeout`
//! at run time, the recovery, and the series `/metrics` shows for it. Without `--demo` it keeps
//! serving on 127.0.0.1:3000 (or the port in `PORT`); try:
//!
//! ```text
//! curl 127.0.0.1:3000/items/7
//! curl -X POST 127.0.0.1:3000/upstream/fail     # then GET /items/7 a few times: 502, then 503
//! curl 127.0.0.1:3000/settings                   # every setting in force and its source
//! curl -X PUT 127.0.0.1:3000/settings/breaker/inventory/error_timeout -d 1s
//! curl 127.0.0.1:3000/metrics | grep resiliency_
//! ```

mod app;

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The recorder goes in first: each site registers its series when it is set up.
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    resiliency::settings::load_toml("examples/service/resiliency.toml")?;

    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".into());
    let demo = std::env::args().any(|a| a == "--demo");
    let listener =
        tokio::net::TcpListener::bind(format!("127.0.0.1:{}", if demo { "0" } else { &port }))
            .await?;
    let base = format!("http://{}", listener.local_addr()?);
    let app = Arc::new(app::App {
        upstream: app::Upstream::default(),
        prometheus,
    });
    let server = tokio::spawn(axum::serve(listener, app::router(app)).into_future());
    println!("serving on {base}");
    if !demo {
        server.await??;
        return Ok(());
    }

    let client = reqwest::Client::new();
    let get = |path: &'static str| {
        let client = client.clone();
        let base = base.clone();
        async move {
            let response = client.get(format!("{base}{path}")).send().await?;
            let status = response.status();
            let body = response.text().await?;
            match body.trim().lines().count() {
                0 | 1 => println!("GET {path} -> {status} {}", body.trim()),
                _ => println!("GET {path} -> {status}"),
            }
            Ok::<_, reqwest::Error>(body)
        }
    };
    let post = |path: &'static str| {
        let client = client.clone();
        let base = base.clone();
        async move {
            client
                .post(format!("{base}{path}"))
                .send()
                .await
                .map(|_| println!("POST {path}"))
        }
    };
    get("/items/7").await?;
    post("/upstream/fail").await?;
    for _ in 0..4 {
        get("/items/7").await?; // 502 three times (error_threshold = 3 from the file), then 503
    }
    let response = client
        .put(format!("{base}/settings/breaker/inventory/error_timeout"))
        .body("300ms")
        .send()
        .await?;
    println!("PUT error_timeout = 300ms -> {}", response.status());
    post("/upstream/recover").await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    get("/items/7").await?; // the probe: closes the breaker
    println!("\nsettings in force:");
    print!("{}", get("/settings").await?);
    println!("\nthe breaker's series:");
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("resiliency_breaker") && l.contains("inventory"))
    {
        println!("{line}");
    }
    server.abort();
    Ok(())
}
