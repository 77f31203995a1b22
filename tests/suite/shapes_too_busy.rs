//! Shapes `#[too_busy]` must accept, each in a module of its own, compiled as this test and run:
//! error types, generics, methods, `max_in_flight`, stacking with `#[breaker]` either way. Errors
//! are in `tests/ui/too_busy/fail`; axum handlers in `shapes_axum.rs`.

mod anyhow_result {
    use resiliency::{too_busy, Rejected};

    #[too_busy]
    async fn parse(text: &str) -> anyhow::Result<u32> {
        if text.is_empty() {
            anyhow::bail!("empty");
        }
        Ok(text.parse()?)
    }

    #[too_busy(max_in_flight = 1)]
    async fn exclusive() -> anyhow::Result<()> {
        tokio::task::yield_now().await;
        Ok(())
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(parse("7").await.unwrap(), 7);
        assert_eq!(parse("").await.unwrap_err().to_string(), "empty");
        assert!(parse("x").await.is_err());
        let (a, b) = tokio::join!(exclusive(), exclusive());
        assert!(a.is_ok());
        let refused = b.unwrap_err();
        assert!(refused.downcast_ref::<Rejected>().unwrap().is_too_busy());
    }
}

mod boxed_error {
    use std::error::Error;

    use resiliency::{too_busy, Rejected};

    #[too_busy]
    async fn fetch(ok: bool) -> Result<&'static str, Box<dyn Error + Send + Sync>> {
        if ok {
            Ok("data")
        } else {
            Err("upstream failed".into())
        }
    }

    #[too_busy(max_in_flight = 1)]
    async fn exclusive() -> Result<(), Box<dyn Error + Send + Sync>> {
        tokio::task::yield_now().await;
        Ok(())
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(fetch(true).await.unwrap(), "data");
        assert_eq!(
            fetch(false).await.unwrap_err().to_string(),
            "upstream failed"
        );
        let (a, b) = tokio::join!(exclusive(), exclusive());
        assert!(a.is_ok());
        let refused = b.unwrap_err();
        assert!(refused.downcast_ref::<Rejected>().unwrap().is_too_busy());
    }
}

mod breaker_above {
    use resiliency::{too_busy, Rejected};

    // Written `#[breaker]` first, so the breaker is the outer layer: it sees what the guard returns,
    // and a refusal by the guard is an error like any other (here it opens the breaker).
    #[resiliency::breaker(error_threshold = 1, error_timeout = "30s")]
    #[too_busy(max_in_flight = 1)]
    async fn fetch(n: u32) -> Result<u32, Rejected> {
        tokio::task::yield_now().await;
        Ok(n * 2)
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(fetch(2).await.unwrap(), 4);
        let (a, b) = tokio::join!(fetch(1), fetch(2));
        assert_eq!(a.unwrap(), 2);
        assert!(b.unwrap_err().is_too_busy());
        // The breaker counted the refusal: the next call is refused by the breaker.
        let refused = fetch(3).await.unwrap_err();
        assert!(refused.is_circuit_open(), "{refused}");
    }
}

mod breaker_below {
    use resiliency::{too_busy, Rejected};

    // Written `#[too_busy]` first, so the guard is the outer layer: a call it refuses never reaches
    // the breaker, so load shedding cannot open the circuit.
    #[too_busy(max_in_flight = 1)]
    #[resiliency::breaker(error_threshold = 1, error_timeout = "30s")]
    async fn fetch(n: u32) -> Result<u32, Rejected> {
        tokio::task::yield_now().await;
        Ok(n * 2)
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(fetch(2).await.unwrap(), 4);
        let (a, b) = tokio::join!(fetch(1), fetch(2));
        assert_eq!(a.unwrap(), 2);
        assert!(b.unwrap_err().is_too_busy());
        // error_threshold = 1 would have opened the breaker had it seen the refusal.
        let after = fetch(3).await;
        assert_eq!(after.as_ref().ok(), Some(&6), "{after:?}");
    }
}

mod generic_where {
    use std::fmt::Display;

    use resiliency::{too_busy, Rejected};

    #[too_busy(max_lag = "70ms", max_latency = "1s")]
    async fn describe<T, U>(label: T, items: Vec<U>) -> Result<String, Rejected>
    where
        T: Display + Send,
        U: Display + Send,
    {
        let items: Vec<String> = items.iter().map(ToString::to_string).collect();
        Ok(format!("{label}: {}", items.join(", ")))
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(describe("ids", vec![1, 2]).await.unwrap(), "ids: 1, 2");
        assert_eq!(describe('c', vec!["x"]).await.unwrap(), "c: x");
    }
}

mod max_in_flight {
    use std::time::Duration;

    use resiliency::{too_busy, Rejected, RejectedKind};

    #[too_busy(max_in_flight = 1)]
    async fn slow(ms: u64) -> Result<u64, Rejected> {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ms)
    }

    #[tokio::test]
    async fn runs() {
        let (a, b) = tokio::join!(slow(20), slow(10));
        assert_eq!(a.unwrap(), 20);
        let refused = b.unwrap_err();
        assert!(refused.is_too_busy());
        assert_eq!(refused.kind(), RejectedKind::TooBusy);
        assert!(refused.name().ends_with("slow"), "{}", refused.name());
        assert!(refused.to_string().contains("max_in_flight 1"), "{refused}");
        // The slot is free again once the first call has finished.
        assert_eq!(slow(1).await.unwrap(), 1);
    }
}

mod method_self {
    use resiliency::{too_busy, Rejected};

    struct Client {
        base: String,
    }

    impl Client {
        #[too_busy(max_in_flight = 1)]
        async fn get(&self, path: &str) -> Result<String, Rejected> {
            tokio::task::yield_now().await;
            Ok(format!("{}{path}", self.base))
        }
    }

    #[tokio::test]
    async fn runs() {
        let client = Client {
            base: "http://127.0.0.1".into(),
        };
        assert_eq!(client.get("/a").await.unwrap(), "http://127.0.0.1/a");
        let (a, b) = tokio::join!(client.get("/a"), client.get("/b"));
        assert_eq!(a.unwrap(), "http://127.0.0.1/a");
        assert!(b.unwrap_err().is_too_busy());
    }
}

mod rejected {
    use resiliency::{too_busy, Rejected};

    #[too_busy]
    async fn ping(n: u32) -> Result<u32, Rejected> {
        Ok(n + 1)
    }

    #[tokio::test]
    async fn runs() {
        assert_eq!(ping(1).await.unwrap(), 2);
        assert_eq!(ping(41).await.unwrap(), 42);
    }
}
