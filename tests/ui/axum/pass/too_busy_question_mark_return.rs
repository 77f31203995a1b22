use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use resilient::{too_busy, Rejected};

#[derive(Debug)]
enum AppError {
    Empty,
    NotANumber,
    Busy(Rejected),
}

impl From<Rejected> for AppError {
    fn from(r: Rejected) -> Self {
        AppError::Busy(r)
    }
}

impl From<std::num::ParseIntError> for AppError {
    fn from(_: std::num::ParseIntError) -> Self {
        AppError::NotANumber
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            AppError::Empty | AppError::NotANumber => StatusCode::BAD_REQUEST.into_response(),
            AppError::Busy(r) => r.into_response(),
        }
    }
}

#[too_busy(max_in_flight = 1)]
async fn double(text: String) -> Result<String, AppError> {
    tokio::task::yield_now().await;
    if text.is_empty() {
        return Err(AppError::Empty);
    }
    let n: u32 = text.trim().parse()?;
    if n == 0 {
        return Ok("zero".into());
    }
    Ok((n * 2).to_string())
}

/// `return` inside an `impl IntoResponse` handler returns from the handler's body.
#[too_busy]
async fn greet(name: String) -> impl IntoResponse {
    if name.is_empty() {
        return (StatusCode::BAD_REQUEST, String::from("no name"));
    }
    (StatusCode::OK, format!("hi {name}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let _app: axum::Router = axum::Router::new()
        .route("/double", axum::routing::post(double))
        .route("/greet", axum::routing::post(greet));

    assert_eq!(double("21".into()).await.unwrap(), "42");
    assert_eq!(double("0".into()).await.unwrap(), "zero");
    assert!(matches!(double("".into()).await, Err(AppError::Empty)));
    assert!(matches!(double("x".into()).await, Err(AppError::NotANumber)));

    let (a, b) = tokio::join!(double("1".into()), double("2".into()));
    assert_eq!(a.unwrap(), "2");
    let refused = b.unwrap_err();
    assert!(matches!(&refused, AppError::Busy(r) if r.is_too_busy()));
    let response = refused.into_response();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));

    assert_eq!(greet("".into()).await.into_response().status(), StatusCode::BAD_REQUEST);
    assert_eq!(greet("ann".into()).await.into_response().status(), StatusCode::OK);
}
