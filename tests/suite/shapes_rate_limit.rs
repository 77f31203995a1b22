//! Shapes `#[rate_limit]` must accept, each in a module of its own, compiled as this test and run
//! on a paused clock (blocking fns on the real one), each with a call admitted and one refused,
//! with its `retry_after`: free fns and methods (`&self`, `&mut self`, a generic impl), generic,
//! borrowed, owned and `impl Trait` arguments, a borrowed answer, error types, `name`, `rate` as a
//! const and an expression, `crate`, `Send` futures, blocking fns, waiting with `max_wait`, and
//! stacking with `#[tracing::instrument]`, `#[breaker]` either way and `#[timeout]` around it.
//! Errors are in `tests/ui/rate_limit/fail`.

use std::time::Duration;

use resiliency::Rejected;

/// A refusal of `#[rate_limit]` whose next permit frees in `retry_after`.
#[track_caller]
fn assert_refused(refused: &Rejected, retry_after: Duration) {
    assert!(refused.is_rate_limited(), "{refused}");
    assert_eq!(refused.retry_after(), Some(retry_after), "{refused}");
}

mod free_fn {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("1/s")]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(1).await.unwrap(), 1);
        let refused = fetch(2).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
        assert!(
            refused.name().ends_with("free_fn::fetch"),
            "{}",
            refused.name()
        );
        // Made again `retry_after` later: admitted.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(fetch(3).await.unwrap(), 3);
    }
}

mod method_ref_self {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    struct Client {
        base: String,
    }

    impl Client {
        #[rate_limit("2/s")]
        async fn get(&self, path: &str) -> Result<String, Rejected> {
            Ok(format!("{}{path}", self.base))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let client = Client {
            base: "http://127.0.0.1".into(),
        };
        // The burst is the rate's number of calls: two at once, then one per 500 ms.
        assert_eq!(client.get("/a").await.unwrap(), "http://127.0.0.1/a");
        assert_eq!(client.get("/b").await.unwrap(), "http://127.0.0.1/b");
        let refused = client.get("/c").await.unwrap_err();
        super::assert_refused(&refused, Duration::from_millis(500));
    }
}

mod method_mut_self {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    struct Counter {
        done: u32,
    }

    impl Counter {
        #[rate_limit("1/s")]
        async fn bump(&mut self) -> Result<u32, Rejected> {
            self.done += 1;
            Ok(self.done)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let mut counter = Counter { done: 0 };
        assert_eq!(counter.bump().await.unwrap(), 1);
        // Refused before its body ran: nothing counted.
        super::assert_refused(&counter.bump().await.unwrap_err(), Duration::from_secs(1));
        assert_eq!(counter.done, 1);
    }
}

mod generic_fn {
    use std::fmt::Display;
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    // One site, one limit, whatever `T` is.
    #[rate_limit("2/s")]
    async fn describe<T: Display>(item: T) -> Result<String, Rejected> {
        Ok(format!("<{item}>"))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(describe(7).await.unwrap(), "<7>");
        assert_eq!(describe("x").await.unwrap(), "<x>");
        let refused = describe('c').await.unwrap_err();
        super::assert_refused(&refused, Duration::from_millis(500));
    }
}

mod borrowed_and_owned_arguments {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    // Neither `Clone` nor `Copy`: moved into the body, dropped with it when it is refused.
    struct Payload {
        bytes: Vec<u8>,
    }

    #[rate_limit("1/s")]
    async fn store(key: &str, payload: Payload, log: &mut Vec<String>) -> Result<usize, Rejected> {
        log.push(key.to_owned());
        Ok(payload.bytes.len())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let mut log = Vec::new();
        let payload = Payload {
            bytes: vec![1, 2, 3],
        };
        assert_eq!(store("a", payload, &mut log).await.unwrap(), 3);
        let payload = Payload { bytes: vec![1] };
        let refused = store("b", payload, &mut log).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
        assert_eq!(log, ["a"]);
    }
}

mod impl_trait_arguments {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("2/s")]
    async fn sum(
        label: impl AsRef<str>,
        items: impl IntoIterator<Item = u64>,
    ) -> Result<String, Rejected> {
        let total: u64 = items.into_iter().sum();
        Ok(format!("{}={total}", label.as_ref()))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(sum("n", vec![1, 2]).await.unwrap(), "n=3");
        assert_eq!(sum(String::from("m"), [4]).await.unwrap(), "m=4");
        let refused = sum("n", 0..3).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_millis(500));
    }
}

mod borrowed_answer {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("1/s")]
    async fn first_word(text: &str) -> Result<&str, Rejected> {
        Ok(text.split(' ').next().unwrap_or(text))
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let text = String::from("hello world");
        assert_eq!(first_word(&text).await.unwrap(), "hello");
        let refused = first_word(&text).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
    }
}

mod boxed_error {
    use std::error::Error;
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("2/s")]
    async fn fetch(id: u64) -> Result<u64, Box<dyn Error + Send + Sync>> {
        if id == 0 {
            return Err("upstream failed".into());
        }
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        // An error of the body took its permit as any call admitted does.
        assert_eq!(fetch(0).await.unwrap_err().to_string(), "upstream failed");
        let refused = fetch(10).await.unwrap_err();
        let refused = refused.downcast_ref::<Rejected>().unwrap();
        super::assert_refused(refused, Duration::from_millis(500));
    }
}

mod anyhow_error {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("2/s")]
    async fn fetch(id: u64) -> anyhow::Result<u64> {
        if id == 0 {
            anyhow::bail!("upstream failed");
        }
        Ok(id)
    }

    #[rate_limit("1/s")]
    async fn fetch_spelt_out(id: u64) -> Result<u64, anyhow::Error> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        assert_eq!(fetch(0).await.unwrap_err().to_string(), "upstream failed");
        let refused = fetch(10).await.unwrap_err();
        let refused = refused.downcast_ref::<Rejected>().unwrap();
        super::assert_refused(refused, Duration::from_millis(500));

        assert_eq!(fetch_spelt_out(10).await.unwrap(), 10);
        let refused = fetch_spelt_out(10).await.unwrap_err();
        let refused = refused.downcast_ref::<Rejected>().unwrap();
        super::assert_refused(refused, Duration::from_secs(1));
    }
}

mod user_enum {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[derive(Debug)]
    enum PriceError {
        NotFound,
        Refused(Rejected),
    }

    impl From<Rejected> for PriceError {
        fn from(r: Rejected) -> Self {
            PriceError::Refused(r)
        }
    }

    #[rate_limit("2/s")]
    async fn price(sku: u64) -> Result<u64, PriceError> {
        if sku == 0 {
            return Err(PriceError::NotFound);
        }
        Ok(sku * 100)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(price(7).await.unwrap(), 700);
        assert!(matches!(price(0).await, Err(PriceError::NotFound)));
        match price(7).await {
            Err(PriceError::Refused(refused)) => {
                super::assert_refused(&refused, Duration::from_millis(500));
            }
            other => panic!("{other:?}"),
        }
    }
}

mod named {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("1/s", name = "shapes_rate_limit.named")]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    // The name first, then the rate, written with its own name.
    #[rate_limit(name = "shapes_rate_limit.named_rate", rate = "1/s")]
    async fn fetch_named_rate(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        let refused = fetch(10).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
        assert_eq!(refused.name(), "shapes_rate_limit.named");
        let limit = resiliency::rate_limit::get("shapes_rate_limit.named").unwrap();
        assert_eq!(limit.rate().to_string(), "1/s");

        assert_eq!(fetch_named_rate(10).await.unwrap(), 10);
        let refused = fetch_named_rate(10).await.unwrap_err();
        assert_eq!(refused.name(), "shapes_rate_limit.named_rate");
    }
}

mod rate_const {
    use std::time::Duration;

    use resiliency::rate_limit::Rate;
    use resiliency::{rate_limit, Rejected};

    const RATE: Rate = Rate::new(4, Duration::from_secs(2));

    #[rate_limit(rate = RATE, burst = 1)]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(1).await.unwrap(), 1);
        // `burst = 1`: every call spaced by the interval, 2 s / 4.
        let refused = fetch(2).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_millis(500));
    }
}

mod rate_expression {
    use std::time::Duration;

    use resiliency::rate_limit::Rate;
    use resiliency::{rate_limit, Rejected};

    #[rate_limit(rate = Rate::per_second(2 * 2), burst = 2)]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(1).await.unwrap(), 1);
        assert_eq!(fetch(2).await.unwrap(), 2);
        let refused = fetch(3).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_millis(250));
    }
}

mod crate_path {
    use std::time::Duration;

    use resiliency::Rejected;

    #[resiliency::rate_limit("1/s", crate = "::resiliency")]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        super::assert_refused(&fetch(10).await.unwrap_err(), Duration::from_secs(1));
    }
}

mod instrument_above {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[tracing::instrument(skip(secret))]
    #[rate_limit("1/s")]
    async fn login(user: &str, secret: String) -> Result<usize, Rejected> {
        tracing::info!("checking");
        Ok(user.len() + secret.len())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(login("ann", "pw".into()).await.unwrap(), 5);
        let refused = login("ann", "pw".into()).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
    }
}

mod instrument_below {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("1/s")]
    #[tracing::instrument(skip(secret))]
    async fn login(user: &str, secret: String) -> Result<usize, Rejected> {
        tracing::info!("checking");
        Ok(user.len() + secret.len())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(login("ann", "pw".into()).await.unwrap(), 5);
        let refused = login("ann", "pw".into()).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
    }
}

mod breaker_above {
    use std::time::Duration;

    use resiliency::{breaker, rate_limit, Rejected};

    // Written `#[breaker]` first, so the breaker is the outer layer: a call the rate limit
    // refuses is an error it counts (here it opens the breaker).
    #[breaker(error_threshold = 1, error_timeout = "30s")]
    #[rate_limit("1/s")]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        super::assert_refused(&fetch(10).await.unwrap_err(), Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(1)).await;
        // A permit is free again, but the breaker opened on the refusal.
        let refused = fetch(10).await.unwrap_err();
        assert!(refused.is_circuit_open(), "{refused}");
    }
}

mod breaker_below {
    use std::time::Duration;

    use resiliency::{breaker, rate_limit, Rejected};

    // Written `#[rate_limit]` first, so the rate limit is the outer layer: a call it refuses
    // never reaches the breaker, which stays closed.
    #[rate_limit("1/s")]
    #[breaker(error_threshold = 1, error_timeout = "30s")]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        super::assert_refused(&fetch(10).await.unwrap_err(), Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(1)).await;
        // error_threshold = 1 would have opened the breaker had it counted the refusal.
        let after = fetch(10).await;
        assert_eq!(after.as_ref().ok(), Some(&10), "{after:?}");
    }
}

mod timeout_above {
    use std::time::Duration;

    use resiliency::{rate_limit, timeout, Rejected};

    // The time limit around the rate limit: a call whose permit frees within `max_wait` but past
    // the time limit's deadline is refused at once, not cut off after waiting.
    #[timeout("300ms")]
    #[rate_limit("1/s", max_wait = "5s")]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(10).await.unwrap(), 10);
        let started = tokio::time::Instant::now();
        let refused = fetch(10).await.unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
        assert_eq!(started.elapsed(), Duration::ZERO);
        // Within the deadline: it waits for its permit. 800 ms on, the permit is 200 ms away.
        tokio::time::advance(Duration::from_millis(800)).await;
        let started = tokio::time::Instant::now();
        assert_eq!(fetch(11).await.unwrap(), 11);
        assert_eq!(started.elapsed(), Duration::from_millis(200));
    }
}

mod max_wait {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    #[rate_limit("1/s", max_wait = "500ms")]
    async fn fetch(id: u64) -> Result<u64, Rejected> {
        Ok(id)
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        assert_eq!(fetch(1).await.unwrap(), 1);
        // The next permit is 1 s away, past `max_wait`: refused at once.
        let started = tokio::time::Instant::now();
        super::assert_refused(&fetch(2).await.unwrap_err(), Duration::from_secs(1));
        assert_eq!(started.elapsed(), Duration::ZERO);
        // 600 ms on, it is 400 ms away: the call waits for it.
        tokio::time::advance(Duration::from_millis(600)).await;
        let started = tokio::time::Instant::now();
        assert_eq!(fetch(3).await.unwrap(), 3);
        assert_eq!(started.elapsed(), Duration::from_millis(400));
    }
}

mod generic_struct_impl {
    use std::fmt::Display;
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    struct Cache<T> {
        items: Vec<T>,
    }

    impl<T: Display + Send + Sync> Cache<T> {
        // One site for every `T`: `Cache<i32>` and `Cache<&str>` share the limit.
        #[rate_limit("2/s")]
        async fn render(&self) -> Result<String, Rejected> {
            let items: Vec<String> = self.items.iter().map(ToString::to_string).collect();
            Ok(items.join(","))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let numbers = Cache { items: vec![1, 2] };
        let words = Cache { items: vec!["a"] };
        assert_eq!(numbers.render().await.unwrap(), "1,2");
        assert_eq!(words.render().await.unwrap(), "a");
        super::assert_refused(
            &numbers.render().await.unwrap_err(),
            Duration::from_millis(500),
        );
        super::assert_refused(
            &words.render().await.unwrap_err(),
            Duration::from_millis(500),
        );
    }
}

mod blocking_fn {
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    struct Ledger {
        pages: Vec<&'static str>,
    }

    #[rate_limit("1/m")]
    fn page(ledger: &Ledger, at: usize) -> Result<&'static str, Rejected> {
        Ok(ledger.pages[at])
    }

    // A plain test: the fn runs on the caller's thread, on the real clock, with no runtime.
    #[test]
    fn runs() {
        let ledger = Ledger {
            pages: vec!["one", "two"],
        };
        assert_eq!(page(&ledger, 0).unwrap(), "one");
        let refused = page(&ledger, 1).unwrap_err();
        assert!(refused.is_rate_limited(), "{refused}");
        // The real clock moved a little since the permit was taken.
        let retry_after = refused.retry_after().unwrap();
        assert!(
            retry_after <= Duration::from_secs(60) && retry_after > Duration::from_secs(59),
            "{retry_after:?}"
        );
    }
}

mod blocking_fn_max_wait {
    use std::time::{Duration, Instant};

    use resiliency::{rate_limit, Rejected};

    // One permit every 200 ms; a call waits up to 100 ms for it, sleeping the thread.
    #[rate_limit("5/s", burst = 1, max_wait = "100ms")]
    fn read(at: u32) -> Result<u32, Rejected> {
        Ok(at)
    }

    #[test]
    fn runs() {
        let started = Instant::now();
        assert_eq!(read(1).unwrap(), 1);
        // The next permit is about 200 ms away, past `max_wait`: refused at once.
        let refused = read(2).unwrap_err();
        assert!(refused.is_rate_limited(), "{refused}");
        let retry_after = refused.retry_after().unwrap();
        assert!(
            retry_after > Duration::from_millis(100) && retry_after <= Duration::from_millis(200),
            "{retry_after:?}"
        );
        // 150 ms on (or more), it is at most 50 ms away: the call sleeps until it frees, and its
        // body runs no sooner than 200 ms after the first call's.
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(read(3).unwrap(), 3);
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
}

mod send_future {
    use std::fmt::Display;
    use std::sync::Arc;
    use std::time::Duration;

    use resiliency::{rate_limit, Rejected};

    fn assert_send<T: Send>(_: &T) {}

    struct Db {
        rows: Vec<u32>,
    }

    impl Db {
        #[rate_limit("1/s", max_wait = "2s")]
        async fn count(self: Arc<Self>, table: String) -> Result<usize, Rejected> {
            Ok(self.rows.len() + table.len())
        }
    }

    #[rate_limit("1/s")]
    async fn describe<T: Display + Send>(item: T) -> Result<String, Rejected> {
        Ok(item.to_string())
    }

    #[tokio::test(start_paused = true)]
    async fn runs() {
        let db = Arc::new(Db { rows: vec![1, 2] });
        let future = Arc::clone(&db).count("users".into());
        assert_send(&future);
        assert_eq!(tokio::spawn(future).await.unwrap().unwrap(), 7);
        // Waits its 1 s in the spawned task, then runs.
        let started = tokio::time::Instant::now();
        let future = Arc::clone(&db).count("users".into());
        assert_eq!(tokio::spawn(future).await.unwrap().unwrap(), 7);
        assert_eq!(started.elapsed(), Duration::from_secs(1));

        let future = describe(5);
        assert_send(&future);
        assert_eq!(tokio::spawn(future).await.unwrap().unwrap(), "5");
        let refused = tokio::spawn(describe(5)).await.unwrap().unwrap_err();
        super::assert_refused(&refused, Duration::from_secs(1));
    }
}
