//! `fallback = path` on each attribute: called with the fn's arguments and the reason when the
//! policy refuses the call (or, with `fallback_on = "errors"`, on any `Err`); sync or async;
//! methods, owned and pattern arguments, `count_if` and `retry_if`, blocking fns; the guarded
//! call's own counts untouched; a fallback that panics or is dropped. Bad uses are in
//! `tests/ui/*/fail/fallback_*.rs`.

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;

use resiliency::{breaker, race_retry, too_busy, Rejected};
use support::{ms, secs, BoxError};

/// An upstream's error with no `From<Rejected>`: a fallback for refusals needs none.
#[derive(Debug, PartialEq)]
enum ApiError {
    NotFound,
    Down,
}

impl ApiError {
    fn is_outage(&self) -> bool {
        matches!(self, ApiError::Down)
    }
}

mod free_fns {
    use super::*;

    fn cached(id: u32, _up: bool, why: Rejected) -> Result<String, ApiError> {
        assert!(why.is_circuit_open(), "{why}");
        Ok(format!("cached {id}"))
    }

    #[breaker(name = "fallback-free", error_threshold = 1, error_timeout = "30s", fallback = cached)]
    async fn profile(id: u32, up: bool) -> Result<String, ApiError> {
        if up {
            Ok(format!("fresh {id}"))
        } else {
            Err(ApiError::Down)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_takes_the_fallback_and_errors_go_through() {
        assert_eq!(profile(1, true).await.unwrap(), "fresh 1");
        // The body's error is the caller's, as it is: the fallback covers refusals only.
        assert_eq!(profile(2, false).await.unwrap_err(), ApiError::Down);
        // Now open: the fallback answers, with the call's arguments.
        assert_eq!(profile(3, true).await.unwrap(), "cached 3");
        let breaker = resiliency::breaker::get("fallback-free").unwrap();
        assert_eq!(breaker.state(), resiliency::breaker::State::Open);
    }
}

mod methods {
    use super::*;

    pub(super) struct Directory {
        pub(super) up: bool,
        pub(super) cache: Vec<&'static str>,
        pub(super) fallbacks: AtomicU32,
    }

    impl Directory {
        /// An async fallback, a method: `&self` first, the reason last.
        async fn cached(&self, id: usize, region: &str, why: Rejected) -> Result<String, ApiError> {
            self.fallbacks.fetch_add(1, SeqCst);
            tokio::task::yield_now().await;
            assert!(why.is_circuit_open());
            Ok(format!("{} in {region}", self.cache[id]))
        }

        #[breaker(name = "fallback-method", error_threshold = 1, error_timeout = "30s", fallback = Self::cached)]
        pub(super) async fn lookup(&self, id: usize, region: &str) -> Result<String, ApiError> {
            if self.up {
                Ok(format!("user {id} in {region}"))
            } else {
                Err(ApiError::Down)
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_method_falls_back_to_a_method() {
        let down = Directory {
            up: false,
            cache: vec!["ada", "grace"],
            fallbacks: AtomicU32::new(0),
        };
        assert_eq!(down.lookup(0, "eu").await.unwrap_err(), ApiError::Down);
        assert_eq!(down.lookup(1, "eu").await.unwrap(), "grace in eu");
        assert_eq!(down.fallbacks.load(SeqCst), 1);
    }
}

mod owned_and_patterns {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Query {
        text: String,
    }

    fn stale(query: Query, (page, size): (u32, u32), why: Rejected) -> Result<String, BoxError> {
        assert!(why.is_circuit_open());
        Ok(format!("stale {} {page}/{size}", query.text))
    }

    /// Owned arguments (cloned for the fallback) and a pattern argument (given whole).
    #[breaker(name = "fallback-owned", error_threshold = 1, error_timeout = "30s", fallback = stale)]
    async fn search(query: Query, (page, size): (u32, u32)) -> Result<String, BoxError> {
        if query.text.is_empty() {
            return Err("empty".into());
        }
        Ok(format!("{} {page}/{size}", query.text))
    }

    #[tokio::test(start_paused = true)]
    async fn owned_and_destructured_arguments_reach_the_fallback() {
        let query = Query {
            text: "rust".into(),
        };
        assert_eq!(search(query.clone(), (1, 10)).await.unwrap(), "rust 1/10");
        assert!(search(
            Query {
                text: String::new()
            },
            (1, 10)
        )
        .await
        .is_err());
        assert_eq!(search(query, (2, 20)).await.unwrap(), "stale rust 2/20");
    }
}

mod errors_too {
    use super::*;

    fn default_price(_sku: &str, why: BoxError) -> Result<u32, BoxError> {
        // Refusals reach here as the fn's error type too.
        let refused = Rejected::find_in(&*why).is_some();
        Ok(if refused { 1 } else { 0 })
    }

    #[breaker(name = "fallback-errors", error_threshold = 2, error_timeout = "30s", fallback = default_price, fallback_on = "errors")]
    async fn price(sku: &str) -> Result<u32, BoxError> {
        match sku {
            "ok" => Ok(100),
            _ => Err("no price".into()),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn every_err_takes_the_fallback() {
        assert_eq!(price("ok").await.unwrap(), 100);
        assert_eq!(price("x").await.unwrap(), 0);
        assert_eq!(price("y").await.unwrap(), 0);
        // Two errors counted: open, and the refusal falls back too.
        assert_eq!(price("ok").await.unwrap(), 1);
        let snapshot = resiliency::breaker::get("fallback-errors")
            .unwrap()
            .snapshot();
        assert_eq!(snapshot.state, resiliency::breaker::State::Open);
    }
}

mod count_if_untyped {
    use super::*;

    fn empty(_id: u32, _why: Rejected) -> Result<Vec<u32>, ApiError> {
        Ok(Vec::new())
    }

    /// `count_if` as an untyped closure still learns its type from the body.
    #[breaker(
        name = "fallback-count-if",
        error_threshold = 1,
        error_timeout = "30s",
        count_if = |error| error.is_outage(),
        fallback = empty
    )]
    async fn items(id: u32) -> Result<Vec<u32>, ApiError> {
        match id {
            0 => Err(ApiError::NotFound),
            1 => Err(ApiError::Down),
            n => Ok(vec![n]),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn not_counted_errors_do_not_open() {
        assert_eq!(items(0).await.unwrap_err(), ApiError::NotFound);
        assert_eq!(items(2).await.unwrap(), vec![2]);
        assert_eq!(items(1).await.unwrap_err(), ApiError::Down);
        assert_eq!(items(2).await.unwrap(), Vec::<u32>::new());
    }
}

mod blocking {
    use super::*;

    fn zero(_key: &str, why: Rejected) -> Result<u64, ApiError> {
        assert!(why.is_circuit_open());
        Ok(0)
    }

    #[breaker(name = "fallback-blocking", error_threshold = 1, error_timeout = "30s", fallback = zero)]
    fn read(key: &str) -> Result<u64, ApiError> {
        if key.is_empty() {
            Err(ApiError::Down)
        } else {
            Ok(key.len() as u64)
        }
    }

    #[test]
    fn a_blocking_fn_falls_back_at_once() {
        let _rt = support::current_thread().enter();
        assert_eq!(read("abc").unwrap(), 3);
        assert_eq!(read("").unwrap_err(), ApiError::Down);
        assert_eq!(read("abc").unwrap(), 0);
    }
}

mod too_busy_guard {
    use super::*;

    async fn busy_page(
        path: String,
        _hold: Arc<tokio::sync::Notify>,
        why: Rejected,
    ) -> Result<String, ApiError> {
        assert!(why.is_too_busy());
        Ok(format!("{path}: try later"))
    }

    #[too_busy(name = "fallback-busy", max_in_flight = 1, fallback = busy_page)]
    async fn page(path: String, hold: Arc<tokio::sync::Notify>) -> Result<String, ApiError> {
        hold.notified().await;
        Ok(format!("{path}: ok"))
    }

    #[tokio::test(start_paused = true)]
    async fn a_shed_call_takes_the_fallback() {
        let hold = Arc::new(tokio::sync::Notify::new());
        let first = tokio::spawn(page("/a".into(), hold.clone()));
        tokio::task::yield_now().await;
        // The one slot is taken: the second call is shed, and falls back.
        assert_eq!(
            page("/b".into(), hold.clone()).await.unwrap(),
            "/b: try later"
        );
        hold.notify_one();
        assert_eq!(first.await.unwrap().unwrap(), "/a: ok");
    }
}

mod race {
    use super::*;

    fn last_known(id: u64, _hang: bool, why: Rejected) -> Result<u64, ApiError> {
        assert!(why.is_deadline(), "{why}");
        Ok(id * 10)
    }

    /// Every attempt hangs: the race's deadline is a refusal, and the fallback answers.
    #[race_retry(retries = 1, after = "100ms", total = "300ms", fallback = last_known)]
    async fn lookup(id: u64, hang: bool) -> Result<u64, ApiError> {
        if hang {
            std::future::pending::<()>().await;
        }
        Ok(id)
    }

    fn gave_up(_id: u64, why: Rejected) -> Result<u64, ApiError> {
        assert!(why.is_deadline());
        Ok(0)
    }

    /// `retry_if` judges the attempts' own errors, the fallback the race's refusal.
    #[race_retry(retries = 2, after = "100ms", total = "1s", retry_if = |e| e.is_outage(), fallback = gave_up)]
    async fn flaky(id: u64) -> Result<u64, ApiError> {
        match id {
            0 => Err(ApiError::NotFound),
            _ => Err(ApiError::Down),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_race_deadline_falls_back() {
        assert_eq!(lookup(4, false).await.unwrap(), 4);
        assert_eq!(lookup(4, true).await.unwrap(), 40);
        // Not worth another attempt: the error, not the fallback.
        assert_eq!(flaky(0).await.unwrap_err(), ApiError::NotFound);
        // Worth retrying, each attempt fails: the last error, as without a fallback.
        assert_eq!(flaky(1).await.unwrap_err(), ApiError::Down);
    }
}

mod guarantees {
    use super::*;
    use futures::FutureExt as _;

    fn panics(_n: u32, _why: Rejected) -> Result<u32, ApiError> {
        panic!("the fallback panicked")
    }

    #[breaker(name = "fallback-panics", error_threshold = 1, error_timeout = "30s", fallback = panics)]
    async fn call(n: u32) -> Result<u32, ApiError> {
        if n == 0 {
            Err(ApiError::Down)
        } else {
            Ok(n)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fallback_that_panics_leaves_the_breaker_as_it_was() {
        assert!(call(0).await.is_err());
        let caught = std::panic::AssertUnwindSafe(call(1)).catch_unwind().await;
        assert!(caught.is_err(), "the panic goes to the caller");
        let breaker = resiliency::breaker::get("fallback-panics").unwrap();
        assert_eq!(breaker.state(), resiliency::breaker::State::Open);
        // After error_timeout, a probe is admitted and closes it: nothing was held by the panic.
        tokio::time::advance(secs(31)).await;
        assert_eq!(call(5).await.unwrap(), 5);
        assert_eq!(breaker.state(), resiliency::breaker::State::Closed);
    }

    async fn slow_fallback(_n: u32, _why: Rejected) -> Result<u32, ApiError> {
        tokio::time::sleep(secs(10)).await;
        Ok(0)
    }

    #[breaker(name = "fallback-dropped", error_threshold = 1, error_timeout = "30s", fallback = slow_fallback)]
    async fn dropped(n: u32) -> Result<u32, ApiError> {
        if n == 0 {
            Err(ApiError::Down)
        } else {
            Ok(n)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fallback_dropped_midway_holds_nothing() {
        assert!(dropped(0).await.is_err());
        assert!(tokio::time::timeout(ms(10), dropped(1)).await.is_err());
        tokio::time::advance(secs(31)).await;
        assert_eq!(dropped(2).await.unwrap(), 2);
    }

    /// A runtime without a time driver: a fallback for a refusal still answers.
    #[test]
    fn no_time_driver() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(call_untimed(0).await.is_err());
            assert_eq!(call_untimed(1).await.unwrap(), 99);
        });
    }

    fn ninety_nine(_n: u32, _why: Rejected) -> Result<u32, ApiError> {
        Ok(99)
    }

    #[breaker(name = "fallback-untimed", error_threshold = 1, error_timeout = "30s", fallback = ninety_nine)]
    async fn call_untimed(n: u32) -> Result<u32, ApiError> {
        if n == 0 {
            Err(ApiError::Down)
        } else {
            Ok(n)
        }
    }
}

mod tracing_events {
    use super::*;

    fn quiet(_n: u32, _why: Rejected) -> Result<u32, ApiError> {
        Ok(0)
    }

    #[breaker(name = "fallback-traced", error_threshold = 1, error_timeout = "30s", fallback = quiet)]
    async fn traced(n: u32) -> Result<u32, ApiError> {
        if n == 0 {
            Err(ApiError::Down)
        } else {
            Ok(n)
        }
    }

    #[test]
    fn a_fallback_is_a_tracing_event_of_its_own() {
        let captured = support::Captured::default();
        let rt = support::paused_runtime();
        tracing::subscriber::with_default(captured.subscriber(), || {
            rt.block_on(async {
                assert!(traced(0).await.is_err());
                assert_eq!(traced(1).await.unwrap(), 0);
            })
        });
        let text = captured.text();
        let line = text
            .lines()
            .find(|line| line.contains("resiliency::fallback"))
            .unwrap_or_else(|| panic!("no fallback event in:\n{text}"));
        assert!(line.contains("the call fell back"), "{line}");
        assert!(line.contains("policy=\"breaker\""), "{line}");
        assert!(line.contains("name=\"fallback-traced\""), "{line}");
        assert!(line.contains("cause=\"refused\""), "{line}");
    }
}

mod shapes {
    use super::*;
    use std::fmt::Display;

    /// Stacked: the outer breaker's fallback covers the inner race's refusal as the fn's error.
    fn stale_any(_id: u32, _why: BoxError) -> Result<u32, BoxError> {
        Ok(0)
    }

    #[breaker(name = "fallback-stacked", error_threshold = 5, fallback = stale_any, fallback_on = "errors")]
    #[race_retry(retries = 1, after = "50ms", total = "100ms")]
    async fn stacked(id: u32) -> Result<u32, BoxError> {
        std::future::pending::<()>().await;
        Ok(id)
    }

    /// Generic, with an `impl Trait` argument (cloned for the fallback).
    fn generic_fallback<T: Display + Clone>(
        value: T,
        label: impl Display + Clone,
        _why: Rejected,
    ) -> Result<String, ApiError> {
        Ok(format!("fallback {label}={value}"))
    }

    #[breaker(name = "fallback-generic", error_threshold = 1, error_timeout = "30s", fallback = generic_fallback)]
    async fn generic<T: Display + Clone>(
        value: T,
        label: impl Display + Clone,
    ) -> Result<String, ApiError> {
        if value.to_string().is_empty() {
            return Err(ApiError::Down);
        }
        Ok(format!("{label}={value}"))
    }

    #[derive(Clone)]
    pub(super) struct Service {
        pub(super) name: &'static str,
    }

    impl Service {
        fn offline(self: Arc<Self>, id: u32, why: Rejected) -> Result<String, ApiError> {
            assert!(why.is_deadline());
            Ok(format!("{} offline for {id}", self.name))
        }

        /// An owned `self: Arc<Self>` under `#[race_retry]`, with the attempt number.
        #[race_retry(retries = 1, after = "50ms", total = "200ms", attempt = n, fallback = Self::offline)]
        pub(super) async fn call(self: Arc<Self>, id: u32) -> Result<String, ApiError> {
            if id == 0 {
                std::future::pending::<()>().await;
            }
            Ok(format!("{} answered {id} on attempt {n}", self.name))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn every_shape() {
        assert_eq!(stacked(1).await.unwrap(), 0);
        assert_eq!(generic(5, "n").await.unwrap(), "n=5");
        assert!(generic("", "s").await.is_err());
        assert_eq!(generic(6, "n").await.unwrap(), "fallback n=6");
        let service = Arc::new(Service { name: "svc" });
        assert_eq!(
            service.clone().call(3).await.unwrap(),
            "svc answered 3 on attempt 0"
        );
        assert_eq!(service.call(0).await.unwrap(), "svc offline for 0");
    }
}
