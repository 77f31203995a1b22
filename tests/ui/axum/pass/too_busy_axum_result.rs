use axum::http::StatusCode;
use axum::response::IntoResponse;
use resilient::too_busy;

// `axum::response::Result<T>` is `Result<T, ErrorResponse>`, and `ErrorResponse` is
// `From<Rejected>` through `Rejected: IntoResponse` (the `axum` feature).
#[too_busy(max_in_flight = 1)]
async fn item(id: String) -> axum::response::Result<String> {
    tokio::task::yield_now().await;
    if id.is_empty() {
        return Err(StatusCode::NOT_FOUND.into());
    }
    Ok(format!("item {id}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let _app: axum::Router = axum::Router::new().route("/item", axum::routing::post(item));

    assert_eq!(item("1".into()).await.unwrap(), "item 1");
    let missing = item(String::new()).await.into_response();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    let (a, b) = tokio::join!(item("a".into()), item("b".into()));
    assert_eq!(a.unwrap(), "item a");
    let refused = b.into_response();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "1");
}
