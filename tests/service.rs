#![cfg(all(feature = "axum", feature = "metrics", feature = "toml"))]
//! The example service (`examples/service`) over real HTTP on 127.0.0.1: its settings from the
//! TOML file and the environment, a change at run time through its `PUT /settings/...` route,
//! and its `/metrics` scraped (Prometheus) as calls fail, open the breaker and recover.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;

#[path = "../examples/service/app.rs"]
#[allow(dead_code)]
mod app;

mod support;
use support::{parse_scrape, Scrape};

/// The value of a series, 0 when the scrape does not have it (yet).
fn sample(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    support::sample(scrape, name, labels).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_takes_its_settings_and_its_metrics_move_as_the_breaker_opens_and_recovers() {
    // The environment overrides the file: `race_retry."*".budget` is 0.2 in the file.
    std::env::set_var("RESILIENCY_RACE_RETRY__BUDGET", "0.3");
    let prometheus = PrometheusBuilder::new().install_recorder().unwrap();
    resiliency::settings::load_toml("examples/service/resiliency.toml").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = Arc::new(app::App {
        upstream: app::Upstream::default(),
        prometheus,
    });
    tokio::spawn(axum::serve(listener, app::router(state)).into_future());
    let client = reqwest::Client::new();
    let get = |path: &str| {
        let request = client.get(format!("{base}{path}"));
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let post = |path: &str| {
        let request = client.post(format!("{base}{path}"));
        async move { assert!(request.send().await.unwrap().status().is_success()) }
    };
    let scrape = || async { parse_scrape(&get("/metrics").await.1) };
    let calls = |s: &Scrape, outcome: &str| {
        sample(
            s,
            "resiliency_breaker_calls_total",
            &[("name", "inventory"), ("outcome", outcome)],
        )
    };
    let state_is = |s: &Scrape, state: &str| {
        sample(
            s,
            "resiliency_breaker_state",
            &[("name", "inventory"), ("state", state)],
        )
    };

    assert_eq!(
        get("/items/7").await,
        (200, "item 7: 70 in stock at 106\n".into())
    );
    let settings = get("/settings").await.1;
    assert!(
        settings.contains("breaker inventory error_threshold = 3 ("),
        "{settings}"
    );
    assert!(
        settings.contains("resiliency.toml:8)"),
        "the file's line: {settings}"
    );
    assert!(
        settings.contains(
            "race_retry service::app::price budget = \"0.3\" (environment variable RESILIENCY_RACE_RETRY__BUDGET)"
        ),
        "the environment over the file: {settings}"
    );
    let s = scrape().await;
    assert_eq!(calls(&s, "success"), 1.0);
    assert_eq!(state_is(&s, "closed"), 1.0);

    // The file says error_threshold = 3 (the attribute 5): the fourth call is refused.
    post("/upstream/fail").await;
    for _ in 0..3 {
        assert_eq!(get("/items/7").await.0, 502);
    }
    assert_eq!(get("/items/7").await.0, 503);
    let s = scrape().await;
    assert_eq!(calls(&s, "error"), 3.0);
    assert_eq!(calls(&s, "refused"), 1.0);
    assert_eq!((state_is(&s, "open"), state_is(&s, "closed")), (1.0, 0.0));
    assert_eq!(
        sample(
            &s,
            "resiliency_breaker_transitions_total",
            &[("name", "inventory"), ("from", "closed"), ("to", "open")]
        ),
        1.0
    );

    // A bad value through the route is refused, naming the site and the setting; a good one
    // applies to the open breaker at once.
    let refused = client
        .put(format!("{base}/settings/breaker/inventory/error_timeout"))
        .body("soon")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 422);
    let why = refused.text().await.unwrap();
    assert!(
        why.starts_with("code: breaker `inventory`, `error_timeout`: "),
        "{why}"
    );
    let changed = client
        .put(format!("{base}/settings/breaker/inventory/error_timeout"))
        .body("200ms")
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status().as_u16(), 200);

    post("/upstream/recover").await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(get("/items/7").await.0, 200, "the probe closes the breaker");
    let s = scrape().await;
    assert_eq!(calls(&s, "success"), 2.0);
    assert_eq!((state_is(&s, "open"), state_is(&s, "closed")), (0.0, 1.0));
    assert_eq!(
        sample(
            &s,
            "resiliency_breaker_transitions_total",
            &[
                ("name", "inventory"),
                ("from", "half_open"),
                ("to", "closed")
            ]
        ),
        1.0
    );
}
