//! `#[too_busy]` on axum handlers (the `axum` feature), each in a module of its own, compiled as
//! this test and run: `impl IntoResponse`, `Response`, `axum::response::Result`, a user error with
//! `?` and `return`. The handler that cannot be one is `tests/ui/axum/fail`.
#![cfg(feature = "axum")]

mod impl_into_response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use resiliency::too_busy;

    #[too_busy(max_in_flight = 1)]
    async fn hello(name: String) -> impl IntoResponse {
        tokio::task::yield_now().await;
        (StatusCode::OK, format!("hello {name}"))
    }

    #[tokio::test]
    async fn runs() {
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
}

mod response {
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use resiliency::too_busy;

    #[too_busy(max_in_flight = 1)]
    async fn status() -> Response {
        tokio::task::yield_now().await;
        (StatusCode::OK, "up").into_response()
    }

    #[tokio::test]
    async fn runs() {
        let _app: axum::Router = axum::Router::new().route("/status", axum::routing::get(status));

        assert_eq!(status().await.status(), StatusCode::OK);

        let (a, b) = tokio::join!(status(), status());
        assert_eq!(a.status(), StatusCode::OK);
        assert_eq!(b.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(b.headers().contains_key("retry-after"));
        assert_eq!(b.headers()["retry-after"], "1");
    }
}

mod result {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use resiliency::too_busy;

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

    #[tokio::test]
    async fn runs() {
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
}

mod question_mark_return {
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use resiliency::{too_busy, Rejected};

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

    #[tokio::test]
    async fn runs() {
        let _app: axum::Router = axum::Router::new()
            .route("/double", axum::routing::post(double))
            .route("/greet", axum::routing::post(greet));

        assert_eq!(double("21".into()).await.unwrap(), "42");
        assert_eq!(double("0".into()).await.unwrap(), "zero");
        assert!(matches!(double("".into()).await, Err(AppError::Empty)));
        assert!(matches!(
            double("x".into()).await,
            Err(AppError::NotANumber)
        ));

        let (a, b) = tokio::join!(double("1".into()), double("2".into()));
        assert_eq!(a.unwrap(), "2");
        let refused = b.unwrap_err();
        assert!(matches!(&refused, AppError::Busy(r) if r.is_too_busy()));
        let response = refused.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(response.headers().contains_key("retry-after"));

        assert_eq!(
            greet("".into()).await.into_response().status(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            greet("ann".into()).await.into_response().status(),
            StatusCode::OK
        );
    }
}
