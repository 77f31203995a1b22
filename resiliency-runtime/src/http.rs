//! Refusals as HTTP responses (the `axum` feature): what a client needs to know, and nothing
//! that names the service's insides.
//!
//! A [`Rejected`] is a response through [`IntoResponse`]: a refusal (`#[too_busy]`, an open or
//! half-open breaker) is `503 Service Unavailable` with a `Retry-After` header, a rate limit's
//! `429 Too Many Requests` with the time until its permit frees as `Retry-After`; a call that ran
//! out of time (`#[timeout]`, a breaker's `timeout`, a race's `total` or `each`) is `504 Gateway Timeout`. The
//! body says the status's meaning and when to retry, never the names of functions, breakers,
//! keys or hosts: those go to a `tracing` event (target `resiliency::http`, level `debug`) with the
//! full message. [`set_detailed_bodies`] puts the full message in the body too, for services
//! whose clients are your own.
//!
//! Errors that carry a `Rejected` somewhere inside (`anyhow::Error`, `Box<dyn Error>`, an enum
//! that returns it from `source()`) become the same response with [`response_for`]:
//!
//! ```
//! use axum::http::StatusCode;
//! use axum::response::{IntoResponse, Response};
//!
//! /// The usual axum application error: anything that converts into `anyhow::Error`.
//! struct AppError(anyhow::Error);
//!
//! impl<E: Into<anyhow::Error>> From<E> for AppError {
//!     fn from(error: E) -> Self {
//!         AppError(error.into())
//!     }
//! }
//!
//! impl IntoResponse for AppError {
//!     fn into_response(self) -> Response {
//!         // A refusal is a 503 or 504; anything else is this app's own business.
//!         resiliency::http::response_for(&*self.0).unwrap_or_else(|| {
//!             (StatusCode::INTERNAL_SERVER_ERROR, "something went wrong").into_response()
//!         })
//!     }
//! }
//!
//! # let refused = resiliency::Breaker::builder("docs-http").build().unwrap();
//! # refused.force_open();
//! # let rejected = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
//! #     .block_on(refused.call(async { Ok::<(), resiliency::Rejected>(()) })).unwrap_err();
//! let error = AppError::from(anyhow::Error::new(rejected).context("charging the card"));
//! let response = error.into_response();
//! assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
//! assert_eq!(response.headers()["retry-after"], "1");
//! ```

use std::error::Error;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use axum_core::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};

use crate::Rejected;

static DETAILED: AtomicBool = AtomicBool::new(false);

/// Puts a refusal's full message (which names the function, breaker, key or host) in response
/// bodies, after the status line's text. Off by default: turn it on only for services whose
/// clients are your own. Applies process-wide, from the next response on.
pub fn set_detailed_bodies(detailed: bool) {
    DETAILED.store(detailed, Relaxed);
}

/// Whether response bodies carry the full message; see [`set_detailed_bodies`].
pub fn detailed_bodies() -> bool {
    DETAILED.load(Relaxed)
}

/// The response for the [`Rejected`] inside `error` (see [`Rejected::find_in`]), or `None` when
/// `error` holds none.
pub fn response_for(error: &(dyn Error + 'static)) -> Option<Response> {
    Rejected::find_in(error).map(Rejected::to_response)
}

/// With the `anyhow` feature: the response for the [`Rejected`] inside an `anyhow::Error`,
/// however it was made (see [`Rejected::find_in_anyhow`]: a tower layer's boxed error made into
/// one with `anyhow::Error::from_boxed` or `anyhow!`), or `None` when it holds none.
#[cfg(feature = "anyhow")]
#[cfg_attr(docsrs, doc(cfg(feature = "anyhow")))]
pub fn response_for_anyhow(error: &anyhow::Error) -> Option<Response> {
    Rejected::find_in_anyhow(error).map(Rejected::to_response)
}

// The `cfg` on each public impl here repeats the module's: rustdoc marks an impl with its
// feature on the facade's pages, built from this crate's metadata, only from the impl's own.
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
impl Rejected {
    /// This refusal as a response: see the [`http`](crate::http) module.
    pub fn to_response(&self) -> Response {
        let (status, retry_after, body) = self.response_parts();
        tracing::debug!(
            target: "resiliency::http",
            status = status.as_u16(),
            retry_after,
            reason = %self,
            "request refused"
        );
        let mut response = (status, body).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl Rejected {
    /// The status, the `Retry-After` seconds (refusals only) and the body.
    fn response_parts(&self) -> (StatusCode, Option<u64>, String) {
        let timed_out = self.is_timeout() || self.is_deadline();
        let (status, retry_after) = if timed_out {
            (StatusCode::GATEWAY_TIMEOUT, None)
        } else {
            // The refusal's own hint, else 1 s, in whole seconds rounded up, at least 1.
            let seconds = self
                .retry_after()
                .map_or(1, |d| {
                    d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0))
                })
                .max(1);
            let status = if self.is_rate_limited() {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            (status, Some(seconds))
        };
        let reason = if status == StatusCode::TOO_MANY_REQUESTS {
            "Too Many Requests"
        } else {
            "Service Unavailable"
        };
        let mut body = match retry_after {
            Some(1) => format!("{reason}. Retry after 1 second."),
            Some(seconds) => format!("{reason}. Retry after {seconds} seconds."),
            None => "Gateway Timeout. No answer in time.".to_owned(),
        };
        if detailed_bodies() {
            body.push('\n');
            body.push_str(&self.to_string());
        }
        body.push('\n');
        (status, retry_after, body)
    }
}

#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
impl IntoResponse for Rejected {
    fn into_response(self) -> Response {
        self.to_response()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rejected::{BusySignal, Circuit, Reason};

    fn open(retry_in: Duration) -> Rejected {
        Rejected::new(Reason::Open {
            circuit: Circuit {
                name: "payments".into(),
                key: Some("10.0.0.7".into()),
            },
            retry_in,
        })
    }

    #[test]
    fn refusals_are_503_with_retry_after_and_timeouts_504() {
        let busy = Rejected::new(Reason::TooBusy {
            name: "handler",
            signal: BusySignal::InFlight {
                limit: 4,
                auto: false,
            },
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
    fn every_kind_of_refusal_has_a_body_that_names_nothing() {
        let circuit = || Circuit {
            name: "payments".into(),
            key: Some("10.0.0.7".into()),
        };
        let refused = "Service Unavailable. Retry after 1 second.\n";
        let timed_out = "Gateway Timeout. No answer in time.\n";
        let cases = [
            (
                open(Duration::from_millis(29_200)),
                "Service Unavailable. Retry after 30 seconds.\n",
            ),
            (
                Rejected::new(Reason::ForcedOpen { circuit: circuit() }),
                refused,
            ),
            (
                Rejected::new(Reason::ProbesBusy { circuit: circuit() }),
                refused,
            ),
            (
                Rejected::new(Reason::Timeout {
                    circuit: circuit(),
                    after: Duration::from_secs(2),
                }),
                timed_out,
            ),
            (
                Rejected::new(Reason::TooBusy {
                    name: "app::handler",
                    signal: BusySignal::Lag {
                        lag: Duration::from_millis(90),
                        max_lag: Duration::from_millis(70),
                    },
                }),
                refused,
            ),
            (
                Rejected::new(Reason::TooBusy {
                    name: "app::handler",
                    signal: BusySignal::InFlight {
                        limit: 100,
                        auto: true,
                    },
                }),
                refused,
            ),
            (
                Rejected::new(Reason::TooBusy {
                    name: "app::handler",
                    signal: BusySignal::Latency {
                        mean: Duration::from_millis(300),
                        max_latency: Duration::from_millis(200),
                    },
                }),
                refused,
            ),
            (
                Rejected::new(Reason::Deadline {
                    name: "app::lookup",
                    total: Duration::from_millis(450),
                    attempts: 3,
                }),
                timed_out,
            ),
            (
                Rejected::new(Reason::AttemptTimeout {
                    name: "app::lookup",
                    each: Duration::from_millis(150),
                }),
                timed_out,
            ),
        ];
        for (rejected, expected) in cases {
            let (_, _, text) = rejected.response_parts();
            assert_eq!(text, expected, "for {rejected}");
            for name in ["payments", "10.0.0.7", "app::", "handler", "lookup"] {
                assert!(!text.contains(name), "{text:?} names {name}");
            }
        }
    }

    #[test]
    fn a_retry_after_of_centuries_is_the_largest_header_not_an_overflow() {
        assert_eq!(
            open(Duration::from_millis(1500)).into_response().headers()[header::RETRY_AFTER],
            "2"
        );
        let forever = open(Duration::MAX).into_response();
        assert_eq!(forever.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            forever.headers()[header::RETRY_AFTER],
            u64::MAX.to_string().as_str()
        );
    }
}
