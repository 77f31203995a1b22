use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use resilient::too_busy;

#[too_busy(max_in_flight = 1)]
async fn status() -> Response {
    tokio::task::yield_now().await;
    (StatusCode::OK, "up").into_response()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let _app: axum::Router = axum::Router::new().route("/status", axum::routing::get(status));

    assert_eq!(status().await.status(), StatusCode::OK);

    let (a, b) = tokio::join!(status(), status());
    assert_eq!(a.status(), StatusCode::OK);
    assert_eq!(b.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(b.headers().contains_key("retry-after"));
    assert_eq!(b.headers()["retry-after"], "1");
}
