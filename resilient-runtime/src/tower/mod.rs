//! Tower layers over the engines of the attributes (feature `tower`).
//!
//! Docs: TODO

mod breaker;
mod race;
mod too_busy;

/// The error of every layer's service: a [`Rejected`](crate::Rejected) when the policy refused
/// the request, else the inner service's error, boxed as it is (tower's `BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub use breaker::{
    server_errors, AnyError, BreakerLayer, BreakerService, Classify, FailureIf, KeyBy, PerKey,
    ServerErrors, Unkeyed,
};
pub use race::{AttemptRequest, AttemptService, RaceRetryLayer, RaceRetryService, RetryIf};
pub use too_busy::{TooBusyLayer, TooBusyService};

/// The response futures of the layers' services. Code rarely spells them out.
pub mod future {
    pub use super::breaker::BreakerFuture;
    pub use super::race::RaceFuture;
    pub use super::too_busy::TooBusyFuture;
}

/// The authority a request is for: its URI's (`host:port` as written), else its `Host` header,
/// else empty. A key for [`BreakerLayer::key_by`]: one breaker per upstream.
pub fn authority_of<B>(request: &http::Request<B>) -> String {
    if let Some(authority) = request.uri().authority() {
        return authority.as_str().to_owned();
    }
    request
        .headers()
        .get(http::header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
