use axum::http::StatusCode;
use axum::response::IntoResponse;
use resilient::too_busy;

#[too_busy(max_in_flight = 1)]
async fn hello(name: String) -> impl IntoResponse {
    tokio::task::yield_now().await;
    (StatusCode::OK, format!("hello {name}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Still a handler that a router accepts.
    let _app: axum::Router = axum::Router::new().route("/hello", axum::routing::post(hello));

    let ok = hello("ann".into()).await.into_response();
    assert_eq!(ok.status(), StatusCode::OK);

    let (a, b) = tokio::join!(hello("a".into()), hello("b".into()));
    let (a, b) = (a.into_response(), b.into_response());
    assert_eq!(a.status(), StatusCode::OK);
    assert_eq!(b.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(b.headers()["retry-after"], "1");
}
