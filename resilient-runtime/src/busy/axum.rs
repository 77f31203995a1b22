//! The `axum` feature: a refused call becomes `503 Service Unavailable` with `Retry-After`.

use axum_core::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};

use super::guard::Refuse;
use crate::Rejected;

/// A refusal (`#[too_busy]`, an open or busy breaker) is `503 Service Unavailable` with a
/// `Retry-After` header (the refusal's own hint, else 1 s, in whole seconds rounded up, at least
/// 1, at most `u64::MAX`); a call that ran out of time (a breaker's `timeout`, a race's `total` or
/// `each`) is `504 Gateway Timeout`. The body is the message.
impl IntoResponse for Rejected {
    fn into_response(self) -> Response {
        if self.is_timeout() || self.is_deadline() {
            return (StatusCode::GATEWAY_TIMEOUT, self.to_string()).into_response();
        }
        let seconds = self
            .retry_after()
            .map_or(1, |d| {
                d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0))
            })
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rejected::{BusySignal, Circuit, Reason};

    #[test]
    fn refusals_are_503_with_retry_after_and_timeouts_504() {
        let busy = Rejected::new(Reason::TooBusy {
            name: "handler",
            signal: BusySignal::InFlight { limit: 4 },
        })
        .into_response();
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(busy.headers()[header::RETRY_AFTER], "1");

        for timed_out in [
            Reason::Deadline {
                name: "lookup",
                total: Duration::from_millis(450),
                attempts: 3,
            },
            Reason::AttemptTimeout {
                name: "lookup",
                each: Duration::from_millis(150),
            },
        ] {
            let response = Rejected::new(timed_out).into_response();
            assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
            assert!(response.headers().get(header::RETRY_AFTER).is_none());
        }
    }

    #[test]
    fn a_retry_after_of_centuries_is_the_largest_header_not_an_overflow() {
        let open = |retry_in| {
            Rejected::new(Reason::Open {
                circuit: Circuit {
                    name: "payments".into(),
                    key: None,
                },
                retry_in,
            })
            .into_response()
        };
        assert_eq!(
            open(Duration::from_millis(1500)).headers()[header::RETRY_AFTER],
            "2"
        );
        let forever = open(Duration::MAX);
        assert_eq!(forever.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            forever.headers()[header::RETRY_AFTER],
            u64::MAX.to_string().as_str()
        );
    }
}
