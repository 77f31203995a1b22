//! The `axum` feature: a guarded handler that returns a `Response` (or `impl IntoResponse`) is
//! refused with the response of its [`Rejected`] (see [`crate::http`]).

use axum_core::response::Response;

use super::too_busy::Refuse;
use crate::Rejected;

// The `cfg` repeats the module's: rustdoc marks this impl with its feature on the facade's
// pages, built from this crate's metadata, only from the impl's own.
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
impl Refuse for Response {
    fn refused(rejected: Rejected) -> Self {
        rejected.to_response()
    }

    fn failed(&self) -> bool {
        self.status().is_server_error()
    }
}
