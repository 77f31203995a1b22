//! The `axum` feature: a guarded handler that returns a `Response` (or `impl IntoResponse`) is
//! refused with the response of its [`Rejected`] (see [`crate::http`]).

use axum_core::response::Response;

use super::guard::Refuse;
use crate::Rejected;

impl Refuse for Response {
    fn refused(rejected: Rejected) -> Self {
        rejected.to_response()
    }

    fn failed(&self) -> bool {
        self.status().is_server_error()
    }
}
