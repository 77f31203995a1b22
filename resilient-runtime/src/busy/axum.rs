//! The `axum` feature: a refused call becomes `503 Service Unavailable` with `Retry-After`.

use axum_core::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};

use super::guard::Refuse;
use crate::Rejected;

/// `503 Service Unavailable`, a `Retry-After` header (the refusal's own hint, else 1 s, in whole
/// seconds, at least 1) and the refusal's message as the body.
impl IntoResponse for Rejected {
    fn into_response(self) -> Response {
        let seconds = self
            .retry_after()
            .map_or(1, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0))
            .max(1);
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, self.to_string()).into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        response
    }
}

impl Refuse for Response {
    fn refused(rejected: Rejected) -> Self {
        rejected.into_response()
    }
}
