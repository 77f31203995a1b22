#![cfg(feature = "metrics")]
//! The `metrics` feature as an operator sees it: `metrics-exporter-prometheus`'s recorder
//! installed as the global one (its own binary: a process has one global recorder), an axum
//! server on 127.0.0.1 serving its rendering at `/metrics`, scraped with reqwest while a breaker
//! fails, opens, and recovers.

use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use resiliency::breaker;

mod support;
use support::{ms, parse_scrape, sample, BoxError, Scrape};

/// Serves `handle`'s rendering at `/metrics` on 127.0.0.1, flushed first so that each scrape is
/// exact; returns the URL.
async fn serve(handle: PrometheusHandle) -> String {
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let handle = handle.clone();
            async move {
                resiliency::metrics::flush();
                handle.render()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn scrape(url: &str) -> Scrape {
    let response = reqwest::get(url).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    parse_scrape(&response.text().await.unwrap())
}

#[breaker(error_threshold = 2, error_timeout = "200ms")]
async fn flaky(fails: bool) -> Result<(), BoxError> {
    if fails {
        Err("down".into())
    } else {
        Ok(())
    }
}

#[tokio::test]
async fn a_scrape_shows_the_breaker_fail_open_and_recover() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).expect("the only recorder of this binary");
    let url = serve(handle).await;
    let name = format!("{}::flaky", module_path!());
    let calls = |s: &Scrape, outcome: &str| {
        sample(
            s,
            "resiliency_breaker_calls_total",
            &[("name", &name), ("outcome", outcome)],
        )
    };
    let state = |s: &Scrape, state: &str| {
        sample(
            s,
            "resiliency_breaker_state",
            &[("name", &name), ("state", state)],
        )
    };

    flaky(false).await.unwrap();
    let before = scrape(&url).await;
    assert_eq!(calls(&before, "success"), Some(1.0));
    assert_eq!(
        calls(&before, "error"),
        Some(0.0),
        "registered with the site, at zero"
    );
    assert_eq!(state(&before, "closed"), Some(1.0));
    assert_eq!(state(&before, "open"), Some(0.0));

    assert!(flaky(true).await.is_err());
    let one_error = scrape(&url).await;
    assert_eq!(calls(&one_error, "error"), Some(1.0));
    assert_eq!(state(&one_error, "closed"), Some(1.0));

    assert!(flaky(true).await.is_err());
    let refused = flaky(false).await.unwrap_err();
    assert!(refused
        .downcast_ref::<resiliency::Rejected>()
        .unwrap()
        .is_circuit_open());
    let open = scrape(&url).await;
    assert_eq!(calls(&open, "error"), Some(2.0));
    assert_eq!(calls(&open, "refused"), Some(1.0));
    assert_eq!(state(&open, "open"), Some(1.0));
    assert_eq!(state(&open, "closed"), Some(0.0));
    let transition = |s: &Scrape, from: &str, to: &str| {
        sample(
            s,
            "resiliency_breaker_transitions_total",
            &[("name", &name), ("from", from), ("to", to)],
        )
    };
    assert_eq!(transition(&open, "closed", "open"), Some(1.0));

    tokio::time::sleep(ms(250)).await;
    flaky(false).await.unwrap();
    let recovered = scrape(&url).await;
    assert_eq!(calls(&recovered, "success"), Some(2.0));
    assert_eq!(state(&recovered, "closed"), Some(1.0));
    assert_eq!(state(&recovered, "open"), Some(0.0));
    assert_eq!(state(&recovered, "half_open"), Some(0.0));
    assert_eq!(transition(&recovered, "open", "half_open"), Some(1.0));
    assert_eq!(transition(&recovered, "half_open", "closed"), Some(1.0));
}
